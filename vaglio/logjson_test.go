package vaglio

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLogLine_SameAsMarshal: the hand-written line is byte for byte what
// json.Marshal writes for the same record, for random records full of the
// characters JSON escapes (controls, quotes, HTML, invalid UTF-8, U+2028).
func TestLogLine_SameAsMarshal(t *testing.T) {
	pieces := []string{"", "a", "ü", "日本", " ", "\"", "\\", "<", ">", "&", "\n", "\r", "\t", "\b", "\f",
		"\x00", "\x1f", "\x7f", "\xff", "\xe2\x80", "\u2028", "\u2029", "\u202e", "\u200b", "\ufeff", "😀", "rm -rf /"}
	str := func(rng *rand.Rand) string {
		var sb strings.Builder
		for range rng.IntN(6) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return sb.String()
	}
	list := func(rng *rand.Rand) []string {
		if rng.IntN(4) == 0 {
			return nil
		}
		out := []string{}
		for range rng.IntN(4) {
			out = append(out, str(rng))
		}
		return out
	}
	floats := []float64{0, 1, 0.5, 0.8, 0.30000000000000004, 1714225863, 1714225863.123456, 1e-7, 123456789012.5}
	rng := rand.New(rand.NewPCG(15, 1))
	for range 5000 {
		l := logLine{
			Approved: rng.IntN(2) == 0, Reason: str(rng), TS: pyFloat(floats[rng.IntN(len(floats))]),
			JudgeKind: str(rng), Score: pyFloat(floats[rng.IntN(len(floats))]), Intent: str(rng),
			Executor: str(rng), ArgsKeys: list(rng), ContextKeys: list(rng), Agent: str(rng),
			Capability: str(rng), ArgKeyPaths: list(rng),
		}
		if rng.IntN(2) == 0 {
			s := str(rng)
			l.BlockedBy = &s
		}
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.appendTo(nil); string(got) != string(want) {
			t.Fatalf("hand-written line differs:\n got %s\nwant %s", got, want)
		}
	}
}
