package policy

import "strings"

// wildcard is a glob where '*' matches any run of bytes (including '/') and
// '?' exactly one byte. It runs in O(len(p)*len(s)) at worst, with no
// backtracking blow-up on hostile patterns.
func wildcard(p, s string) bool {
	if strings.IndexByte(p, '?') < 0 {
		return starMatch(p, s)
	}
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

// starMatch is wildcard for a pattern with no '?': the text before the
// first '*' must start s, the text after the last must end it, and each
// run between two stars must occur in order in between. Taking each run
// at its first occurrence leaves the most room for the runs after it, so
// no other placement can match where this one fails.
func starMatch(p, s string) bool {
	i := strings.IndexByte(p, '*')
	if i < 0 {
		return p == s
	}
	if !strings.HasPrefix(s, p[:i]) {
		return false
	}
	s, p = s[i:], p[i+1:]
	for {
		i = strings.IndexByte(p, '*')
		if i < 0 {
			return strings.HasSuffix(s, p)
		}
		j := strings.Index(s, p[:i])
		if j < 0 {
			return false
		}
		s, p = s[j+i:], p[i+1:]
	}
}
