package vaglio

import (
	"strconv"

	"github.com/metnos/gateway/internal/jsonw"
)

// The decision log's line is written by hand rather than by json.Marshal:
// reflection over the record cost about a twentieth of a decision. The
// bytes are those json.Marshal writes for logLine, field for field (see
// TestLogLine_SameAsMarshal), so the encoding stays standard JSON.

// appendTo appends the line's JSON object to b.
func (l *logLine) appendTo(b []byte) []byte {
	b = append(b, `{"approved":`...)
	b = strconv.AppendBool(b, l.Approved)
	b = append(b, `,"reason":`...)
	b = jsonw.StringHTML(b, l.Reason)
	b = append(b, `,"ts":`...)
	b = l.TS.appendTo(b)
	b = append(b, `,"judge_kind":`...)
	b = jsonw.StringHTML(b, l.JudgeKind)
	b = append(b, `,"score":`...)
	b = l.Score.appendTo(b)
	b = append(b, `,"blocked_by":`...)
	if l.BlockedBy == nil {
		b = append(b, "null"...)
	} else {
		b = jsonw.StringHTML(b, *l.BlockedBy)
	}
	b = append(b, `,"intent":`...)
	b = jsonw.StringHTML(b, l.Intent)
	b = append(b, `,"executor":`...)
	b = jsonw.StringHTML(b, l.Executor)
	b = append(b, `,"args_keys":`...)
	b = jsonw.StringsHTML(b, l.ArgsKeys)
	b = append(b, `,"context_keys":`...)
	b = jsonw.StringsHTML(b, l.ContextKeys)
	b = append(b, `,"agent":`...)
	b = jsonw.StringHTML(b, l.Agent)
	b = append(b, `,"capability":`...)
	b = jsonw.StringHTML(b, l.Capability)
	b = append(b, `,"arg_key_paths":`...)
	b = jsonw.StringsHTML(b, l.ArgKeyPaths)
	return append(b, '}')
}

// appendTo writes f as MarshalJSON does.
func (f pyFloat) appendTo(b []byte) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, float64(f), 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, '.', '0')
}
