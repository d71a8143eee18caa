package policy

import "github.com/metnos/gateway/internal/jsonw"

// AppendJSON appends s as encoding/json writes it (see internal/jsonw).
func (s Step) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	b = jsonw.Key(b, "layer", true)
	b = jsonw.String(b, s.Layer)
	if s.Outcome != "" {
		b = jsonw.Key(b, "outcome", false)
		b = jsonw.String(b, string(s.Outcome))
	}
	b = jsonw.Key(b, "detail", false)
	b = jsonw.String(b, s.Detail)
	return append(b, '}')
}

// AppendTraceJSON appends a trace as a JSON array (null when nil).
func AppendTraceJSON(b []byte, trace []Step) []byte {
	if trace == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range trace {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.AppendJSON(b)
	}
	return append(b, ']')
}
