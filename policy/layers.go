package policy

import "strings"

// layersOf is a decision's trace as its span says it: each layer that
// spoke and its word, in order ("profile table:approval_required
// rules combine:approval_required vaglio:allowed"), never a step's
// detail, which may quote the target.
func layersOf(trace []Step) string {
	var b strings.Builder
	b.Grow(24 * len(trace))
	for i, s := range trace {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.Layer)
		if s.Outcome != "" {
			b.WriteByte(':')
			b.WriteString(string(s.Outcome))
		}
	}
	return b.String()
}
