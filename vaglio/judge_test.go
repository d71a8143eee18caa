package vaglio

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRuleJudge(t *testing.T) {
	tests := []struct {
		name       string
		req        Request
		want       float64
		wantInWhy  []string
		wantNotWhy []string
	}{
		{name: "base, critical", req: Request{Critical: true, Executor: "x"}, want: 0.70,
			wantNotWhy: []string{"intent", "non-critical", "identifier", "'..'"}},
		{name: "non-critical capability, nothing declared", req: Request{Executor: "x"}, want: 0.70, wantNotWhy: []string{"non-critical"}},
		{name: "non-critical declared by the context", req: Request{Executor: "x", Context: map[string]any{"critical": false}},
			want: 0.75, wantInWhy: []string{"+0.05 non-critical (declared by the context)"}},
		{name: "critical capability declared non-critical", req: Request{Critical: true, Executor: "x", Context: map[string]any{"critical": false}},
			want: 0.70, wantNotWhy: []string{"non-critical"}},
		{name: "critical declared as a string", req: Request{Executor: "x", Context: map[string]any{"critical": "false"}}, want: 0.70},
		// The seed's §4 examples.
		{name: "seed: harmless path, generic intent", req: Request{Capability: "fs:read", Executor: "fs_read", Intent: "read my notes in /tmp/n.txt",
			Target: "/tmp/n.txt", Args: map[string]any{"path": "/tmp/n.txt"}, Context: map[string]any{"mode": "multistep", "step": 1.0}},
			want: 0.80, wantInWhy: []string{"+0.10 intent names the executor"}},
		{name: "seed: suspicious path traversal", req: Request{Capability: "fs:read", Executor: "fs_read", Intent: "look at foo",
			Args: map[string]any{"path": "/tmp/../etc/foo"}}, want: 0.50, wantInWhy: []string{"-0.20 possible path traversal"}},
		// Issue 11: hidden characters.
		{name: "bidi override in the target", req: Request{Critical: true, Target: "cat notes\u202E\u2066hs.txt"},
			want: 0.30, wantInWhy: []string{"-0.40 hidden characters in the target (U+202E, U+2066)"}},
		{name: "zero-width in the intent", req: Request{Critical: true, Intent: "read\u200b the file"},
			want: 0.30, wantInWhy: []string{"-0.40 hidden characters in the intent (U+200B)"}},
		{name: "both, counted once", req: Request{Critical: true, Target: "a\ufeff", Intent: "b\u2060\x1b"},
			want: 0.30, wantInWhy: []string{"in the target and intent (U+FEFF, U+2060, U+001B)"}},
		{name: "tab, newline and CRLF are not hidden", req: Request{Critical: true, Target: "a\tb\nc", Intent: "x\r\ny"}, want: 0.70,
			wantNotWhy: []string{"hidden"}},
		{name: "a lone CR is hidden", req: Request{Critical: true, Intent: "safe\rrm"}, want: 0.30, wantInWhy: []string{"U+000D"}},
		{name: "intent names executor", req: Request{Critical: true, Executor: "fs_read_file", Intent: "Read the invoice FILE"},
			want: 0.80, wantInWhy: []string{"+0.10 intent names the executor"}},
		{name: "token split on colon and dot", req: Request{Critical: true, Executor: "mcp:gmail.send", Intent: "send the reply"},
			want: 0.80, wantInWhy: []string{"+0.10"}},
		{name: "short tokens do not count", req: Request{Critical: true, Executor: "fs_rm", Intent: "fs rm it"}, want: 0.70},
		{name: "traversal in a nested arg", req: Request{Critical: true, Args: map[string]any{"a": []any{map[string]any{"p": "x/../y"}}}},
			want: 0.50, wantInWhy: []string{"-0.20"}},
		{name: "dots without a slash", req: Request{Critical: true, Args: map[string]any{"v": "wait..."}}, want: 0.70},
		{name: "odd top-level key", req: Request{Critical: true, Args: map[string]any{"file-name": "a"}},
			want: 0.60, wantInWhy: []string{"-0.10 arg key is not an identifier"}},
		{name: "odd nested key", req: Request{Critical: true, Args: map[string]any{"ok": map[string]any{"1bad": "a"}}}, want: 0.60},
		{name: "identifier keys", req: Request{Critical: true, Args: map[string]any{"_ok": map[string]any{"A9_b": "a"}}}, want: 0.70},
		{name: "everything", req: Request{Executor: "shell_exec", Intent: "exec a build",
			Args: map[string]any{"../p": "../../x"}, Context: map[string]any{"critical": false}}, want: 0.55},
		{name: "lowest possible", req: Request{Critical: true, Args: map[string]any{"a b": "../x"}}, want: 0.40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := RuleJudge{}.Score(context.Background(), tt.req)
			score, why := j.Score, j.Reason
			if err != nil {
				t.Fatalf("Score() error = %v", err)
			}
			if score != tt.want {
				t.Errorf("Score() = %v, want %v (%s)", score, tt.want, why)
			}
			if !strings.HasPrefix(why, RuleJudgeKind+": base 0.70") {
				t.Errorf("reason %q does not start with the judge and the base", why)
			}
			for _, w := range tt.wantInWhy {
				if !strings.Contains(why, w) {
					t.Errorf("reason %q lacks %q", why, w)
				}
			}
			for _, w := range tt.wantNotWhy {
				if strings.Contains(why, w) {
					t.Errorf("reason %q has %q", why, w)
				}
			}
		})
	}
}

// TestRuleJudge_ScoreInRange is a property: whatever the args, intent and
// executor, the score stays in [0,1].
func TestRuleJudge_ScoreInRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		r := Request{
			Capability: "fs:read",
			Critical:   rng.IntN(2) == 0,
			Intent:     randString(rng),
			Executor:   randString(rng),
			Args:       randArgs(rng, 3),
		}
		j, err := RuleJudge{}.Score(context.Background(), r)
		score, why := j.Score, j.Reason
		if err != nil || score < 0 || score > 1 || math.IsNaN(score) || why == "" {
			t.Fatalf("case %d: Score() = %v, %q, %v", i, score, why, err)
		}
	}
}

// TestCheck_ScoreInRange is the same property through Check, with a judge
// that answers anything at all, NaN and infinities included.
func TestCheck_ScoreInRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	odd := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.5, 1.5, 0, 1, math.MaxFloat64, -math.SmallestNonzeroFloat64}
	for i := range 2000 {
		s := rng.Float64()*4 - 2
		if rng.IntN(4) == 0 {
			s = odd[rng.IntN(len(odd))]
		}
		v := New(Options{Threshold: DefaultThreshold, Home: testHome, Judge: fixedJudge{score: s}})
		got := v.Check(context.Background(), Request{Capability: "fs:read", Intent: randString(rng), Args: randArgs(rng, 2)})
		if got.Score < 0 || got.Score > 1 || math.IsNaN(got.Score) {
			t.Fatalf("case %d: judge said %v, verdict score %v", i, s, got.Score)
		}
		if got.Approved && got.Score < DefaultThreshold {
			t.Fatalf("case %d: approved with score %v", i, got.Score)
		}
	}
}

type fixedJudge struct{ score float64 }

func (fixedJudge) Kind() string { return "fixed" }
func (j fixedJudge) Score(context.Context, Request) (Judgement, error) {
	return Judgement{Score: j.score, Reason: "fixed"}, nil
}

// randString draws from an alphabet that hits every rule: dots, slashes,
// the executor separators, upper case, spaces and some non-ASCII.
func randString(rng *rand.Rand) string {
	const alphabet = "ab_-.:/ XYé~$*{},9"
	n := rng.IntN(12)
	var b strings.Builder
	for range n {
		b.WriteString(string([]rune(alphabet)[rng.IntN(len([]rune(alphabet)))]))
	}
	return b.String()
}

func randArgs(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range rng.IntN(4) {
		m[randString(rng)] = randValue(rng, depth)
	}
	return m
}

func randValue(rng *rand.Rand, depth int) any {
	kind := rng.IntN(6)
	if depth == 0 {
		kind %= 3
	}
	switch kind {
	case 0:
		return randString(rng)
	case 1:
		return rng.Float64()
	case 2:
		return nil
	case 3:
		return randArgs(rng, depth-1)
	default:
		s := make([]any, rng.IntN(3))
		for i := range s {
			s[i] = randValue(rng, depth-1)
		}
		return s
	}
}

// TestRuleJudge_Factors: every adjustment the reason lists is also named
// machine-readably, for the card's plain words.
func TestRuleJudge_Factors(t *testing.T) {
	j, err := RuleJudge{}.Score(context.Background(), Request{Capability: "fs:read", Intent: "read the notes\u200b",
		Executor: "fs_read", Args: map[string]any{"my-path": "../x/y"}, Context: map[string]any{ContextCritical: false}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{FactorIntentNamesExecutor, FactorPathTraversal, FactorOddArgKey, FactorNonCritical, FactorHiddenCharacters}
	if !slices.Equal(j.Factors, want) {
		t.Errorf("factors %v, want %v (reason %q)", j.Factors, want, j.Reason)
	}
	v := New(Options{}).Check(context.Background(), Request{Capability: "fs:read", Executor: "x", Args: map[string]any{"p": "../a/b"}})
	if !slices.Equal(v.Factors, []string{FactorPathTraversal}) {
		t.Errorf("verdict factors %v", v.Factors)
	}
}

// TestIntentNamesExecutor_Fields: splitting the executor byte by byte
// gives what splitting it rune by rune at _ - . : gives, invalid UTF-8
// and multi-byte runes included.
func TestIntentNamesExecutor_Fields(t *testing.T) {
	ref := func(intent, executor string) bool {
		intent = strings.ToLower(intent)
		for tok := range strings.FieldsFuncSeq(executor, func(r rune) bool { return strings.ContainsRune("_-.:", r) }) {
			if utf8.RuneCountInString(tok) >= minExecutorTokenRunes && strings.Contains(intent, strings.ToLower(tok)) {
				return true
			}
		}
		return false
	}
	pieces := []string{"_", "-", ".", ":", "::", "re", "ad", "read", "File", "fi", "é", "ÉT", "\xff", "\xc3", "日本", "x"}
	r := rand.New(rand.NewPCG(39, 6))
	draw := func(n int) string {
		var b strings.Builder
		for range r.IntN(n) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	hits := 0
	for range 50_000 {
		intent, executor := draw(10), draw(6)
		want := ref(intent, executor)
		if got := intentNamesExecutor(intent, executor); got != want {
			t.Fatalf("intentNamesExecutor(%q, %q) = %v, want %v", intent, executor, got, want)
		}
		if want {
			hits++
		}
	}
	if hits < 1000 {
		t.Fatalf("only %d of 50,000 draws named the executor", hits)
	}
}

// TestPlainText_Words: reading eight bytes at a time says what reading
// byte by byte says, for every byte value at every place of a string
// and with the string starting at every offset (so each place falls in
// every lane of a word, and in the tail).
func TestPlainText_Words(t *testing.T) {
	base := []byte("Read the notes, then 0x7e ~ ok.")
	for pos := range base {
		for v := range 256 {
			b := slices.Clone(base)
			b[pos] = byte(v)
			for start := 0; start <= pos; start++ {
				s := string(b[start:])
				if got, want := plainText(s), plainBytes(s); got != want {
					t.Fatalf("plainText(%q) = %v, byte by byte %v", s, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(39, 7))
	alphabet := []byte{0x00, '\t', '\n', '\r', 0x1f, ' ', 'a', '~', 0x7f, 0x80, 0xc3, 0xa9, 0xff}
	for range 100_000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		if got, want := plainText(string(b)), plainBytes(string(b)); got != want {
			t.Fatalf("plainText(%q) = %v, byte by byte %v", b, got, want)
		}
	}
}

// TestGuardFacts_ArgSignals: what the guard's walk gathers for the judge
// is argSignals of the same args, for args of every shape (nested maps
// and lists, odd keys, traversals in lists), on a plain and a shell
// request (whose walk also reads lists joined).
func TestGuardFacts_ArgSignals(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 9))
	keys := []string{"path", "a_b", "_x", "9lives", "has space", "ok", "k-1", "é", ""}
	strs := []string{"a", "..", "/", "x/../y", "../z", "docs/a", `..\b`, "utf-8", "日本/.."}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := r.IntN(10); {
		case k < 5 || depth > 3:
			return strs[r.IntN(len(strs))]
		case k == 5:
			return float64(r.IntN(100))
		case k == 6:
			return nil
		case k == 7:
			m := map[string]any{}
			for range r.IntN(3) {
				m[keys[r.IntN(len(keys))]] = value(depth + 1)
			}
			return m
		default:
			l := make([]any, r.IntN(3))
			for i := range l {
				l[i] = value(depth + 1)
			}
			return l
		}
	}
	gathered := 0
	for range 20_000 {
		args := map[string]any{}
		for range r.IntN(4) {
			args[keys[r.IntN(len(keys))]] = value(0)
		}
		traversal, badKey := argSignals(args)
		for _, capability := range []string{"fs:read", CapabilityCodeExec} {
			req := Request{Capability: capability, Target: "notes.txt", Args: args}
			blocked, _, facts := guard(req, testHome, testOwn, true)
			if blocked {
				continue
			}
			gathered++
			if !facts.set || facts.traversal != traversal || facts.badKey != badKey {
				t.Fatalf("%s %v: the guard gathered %+v, argSignals says traversal %v, bad key %v",
					capability, args, facts, traversal, badKey)
			}
		}
	}
	if gathered < 20_000 {
		t.Fatalf("only %d of 40,000 walks not blocked", gathered)
	}
}
