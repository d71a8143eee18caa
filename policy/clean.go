package policy

// isClean reports a path that path.Clean returns as it is, most targets
// and stored patterns, which then need no cleaning: not empty, no empty,
// "." or ".." element, no trailing slash (a leading one is the root).
func isClean(p string) bool {
	if p == "" {
		return false
	}
	start := 0 // of the element
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch e := p[start:i]; {
		case e == "." || e == "..":
			return false
		case e == "" && (start != 0 || i == len(p)):
			return false // "a//b", "a/", "/"
		}
		start = i + 1
	}
	return true
}
