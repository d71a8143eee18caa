package policy

// wildcard is a glob where '*' matches any run of bytes (including '/') and
// '?' exactly one byte. It runs in O(len(p)*len(s)) at worst, with no
// backtracking blow-up on hostile patterns.
func wildcard(p, s string) bool {
	px, sx := 0, 0
	nextP, nextS := -1, -1
	for px < len(p) || sx < len(s) {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				nextP, nextS = px, sx+1
				px++
				continue
			case '?':
				if sx < len(s) {
					px++
					sx++
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if nextS > 0 && nextS <= len(s) {
			px, sx = nextP, nextS
			continue
		}
		return false
	}
	return true
}
