package cards_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/vaglio"
)

type failingJudge struct{}

func (failingJudge) Kind() string { return "llm-v1" }
func (failingJudge) Score(context.Context, vaglio.Request) (vaglio.Judgement, error) {
	return vaglio.Judgement{}, errors.New("model down")
}

// TestVaglioWords: the card's vaglio line says what the real judge's
// verdict means, in both languages, never the judge's own jargon.
func TestVaglioWords(t *testing.T) {
	ctx := context.Background()
	rules := vaglio.New(vaglio.Options{Threshold: 0.30, Home: "/home/u"})
	strict := vaglio.New(vaglio.Options{Threshold: 0.50, Home: "/home/u"})
	failing := vaglio.New(vaglio.Options{Threshold: 0.30, Home: "/home/u", Judge: failingJudge{}})
	read := func(intent string, args map[string]any) vaglio.Request {
		return vaglio.Request{Agent: "a1", Capability: "fs:read", Target: "/tmp/notes.txt", Intent: intent,
			Executor: "fs_read", Args: args}
	}
	cases := []struct {
		name    string
		verdict vaglio.Verdict
		en, it  string
	}{
		{"in line", rules.Check(ctx, read("read my notes", nil)),
			"✓ in line with the intent (0.80)", "✓ in linea con l'intento (0.80)"},
		{"nothing unusual", rules.Check(ctx, read("tidy up", nil)),
			"✓ nothing unusual (0.70)", "✓ nulla di insolito (0.70)"},
		{"traversal", rules.Check(ctx, read("tidy up", map[string]any{"path": "../notes.txt"})),
			"⚠ unusual: path goes up a directory (0.50)", "⚠ insolita: un percorso risale di una cartella (0.50)"},
		{"odd key and traversal", rules.Check(ctx, read("tidy up", map[string]any{"my-path": "../x/y"})),
			"⚠ unusual: path goes up a directory, an argument has an odd name (0.40)",
			"⚠ insolita: un percorso risale di una cartella, un argomento ha un nome strano (0.40)"},
		{"hidden characters", rules.Check(ctx, read("read my notes\u202e", nil)),
			"⚠ unusual: hidden characters in the request (0.40)", "⚠ insolita: caratteri nascosti nella richiesta (0.40)"},
		{"refused", strict.Check(ctx, read("read my notes\u202e", nil)),
			"⛔ refused: hidden characters in the request (0.40)", "⛔ rifiutata: caratteri nascosti nella richiesta (0.40)"},
		{"guard", rules.Check(ctx, vaglio.Request{Capability: "fs:read", Target: "/etc/shadow"}),
			"⛔ blocked by the guard", "⛔ bloccata dalla guardia"},
		{"judge failed", failing.Check(ctx, read("read my notes", nil)),
			"⛔ the judge could not answer, so denied", "⛔ il giudice non ha potuto rispondere, quindi negata"},
		{"a judge without factors, high", vaglio.Verdict{Approved: true, JudgeKind: "llm-v1", Score: 0.9},
			"✓ plausible (0.90)", "✓ plausibile (0.90)"},
		{"a judge without factors, middling", vaglio.Verdict{Approved: true, JudgeKind: "llm-v1", Score: 0.55},
			"⚠ unusual (0.55)", "⚠ insolita (0.55)"},
		{"a judge without factors, low", vaglio.Verdict{Approved: true, JudgeKind: "llm-v1", Score: 0.35},
			"⚠ doubtful (0.35)", "⚠ dubbia (0.35)"},
	}
	en := locale.New(locale.English, time.UTC, nil)
	it := locale.New(locale.Italian, time.UTC, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := cards.VaglioWords(tc.verdict, en); got != tc.en {
				t.Errorf("en: got %q, want %q (verdict %+v)", got, tc.en, tc.verdict)
			}
			if got := cards.VaglioWords(tc.verdict, it); got != tc.it {
				t.Errorf("it: got %q, want %q", got, tc.it)
			}
		})
	}
}
