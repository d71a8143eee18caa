package vaglio

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Judge is the graded half of vaglio: it scores a request in [0,1], higher
// meaning more plausible. It is an interface of two methods so that the
// LLM judge (vaglio/llmjudge) can replace the rule-based one without
// touching Check. A Judge must be safe for concurrent use, and its reason
// and errors must not quote argument values: both end up in the decision
// log.
type Judge interface {
	// Kind names the configured judge (judge_kind), so a log line always
	// says which judge was in charge, even when the guard blocked first.
	Kind() string
	// Score rates r. An error denies the request (vaglio fails closed).
	Score(ctx context.Context, r Request) (Judgement, error)
}

// Judgement is a Judge's answer.
type Judgement struct {
	Score  float64
	Reason string
	// Kind is the judge that gave the score, when it is not the
	// configured one: the LLM judge answers with the rule-based judge's
	// score, and says so here, when the model cannot answer. "" means
	// Judge.Kind().
	Kind string
	// Factors names, machine-readably, what moved the score (the Factor
	// constants), so that a card can say it in a person's words while
	// Reason keeps the judge's own. A judge that cannot tell (a model's
	// free-text answer) leaves it empty.
	Factors []string
	// Unscored, when set, says why the configured judge did not score the
	// request itself (its model was over budget, slow, failing); the
	// score is a fallback's. A request it would have allowed goes to a
	// person instead (Verdict.Unscored).
	Unscored string
}

// The factors rule-based-v1 names (Judgement.Factors, Verdict.Factors).
const (
	FactorIntentNamesExecutor = "intent_names_executor" // raises the score
	FactorNonCritical         = "non_critical"          // raises the score
	FactorPathTraversal       = "path_traversal"        // lowers it: '..' with '/' in an arg
	FactorOddArgKey           = "odd_arg_key"           // lowers it: an arg key that is not an identifier
	FactorHiddenCharacters    = "hidden_characters"     // lowers it: invisible characters in the target or intent
	// FactorJudgeFailed marks a verdict whose judge failed (and so denied).
	FactorJudgeFailed = "judge_failed"
)

// RuleJudgeKind is the judge_kind of RuleJudge. The version is part of the
// name so that logged scores stay comparable when the rules change.
const RuleJudgeKind = "rule-based-v1"

// The weights of rule-based-v1: the seed's (vaglio v1.1 §4, SPEC §4 step
// 6), and the hidden-characters factor of issue 11.
const (
	ruleBase              = 0.70
	ruleIntentNamesExec   = +0.10
	ruleTraversalInArgs   = -0.20
	ruleNonIdentifierKey  = -0.10
	ruleNonCritical       = +0.05
	ruleHiddenChars       = -0.40
	minExecutorTokenRunes = 3
)

// ContextCritical is the key of Request.Context by which a request declares
// itself non-critical ("critical": false), as the seed's context does.
const ContextCritical = "critical"

// RuleJudge is the built-in judge, rule-based-v1 (SPEC §4 step 6). It needs
// no network and no model, so every deployment has a judge from day one; its
// signals are deliberately cheap: does the intent agree with the executor,
// do the args try to climb out of a directory, are the arg keys plain names,
// do the target or the intent hide characters from the person reading them.
//
// The +0.05 non-critical bonus applies, as in the seed, only when the
// request's context declares "critical": false, and here only for a
// capability the registry also calls non-critical (a declaration cannot
// make code:exec look safer). So the seed's examples score as the seed
// says: "read my notes in /tmp/n.txt" with fs_read is 0.80.
//
// Hidden characters (format characters such as the bidi controls and
// zero-width characters, and control characters other than tab and
// newline) in the target or the intent cost 0.40: a card cannot show what
// they do, and a judge_threshold of 0.50 then denies every such request
// while passing every request without them but the one with both a
// traversal and an odd key (0.40). Without them the lowest score is 0.40,
// above DefaultThreshold: on its own the judge grades requests for the
// owner's card rather than refusing them.
type RuleJudge struct{}

// Kind returns RuleJudgeKind.
func (RuleJudge) Kind() string { return RuleJudgeKind }

// Score applies the rules and never fails. The reason lists every
// adjustment that applied.
func (RuleJudge) Score(_ context.Context, r Request) (Judgement, error) {
	var applied uint8 // bit i: ruleNotes.fixed[i] applied
	if intentNamesExecutor(r.Intent, r.Executor) {
		applied |= 1 << 0
	}
	traversal, badKey := r.argSignals()
	if traversal {
		applied |= 1 << 1
	}
	if badKey {
		applied |= 1 << 2
	}
	if declaresNonCritical(r) {
		applied |= 1 << 3
	}
	// The factors of a set are shared, at full capacity: an append copies.
	j := Judgement{Score: ruleNotes.scores[applied], Reason: ruleNotes.reasons[applied], Factors: ruleNotes.factors[applied]}
	if where, runes := hiddenIn(r); where != "" {
		j.Score = ruleScore(ruleNotes.sums[applied] + ruleHiddenChars)
		j.Reason += "; " + fmt.Sprintf(ruleNotes.hiddenChars, where, runes)
		j.Factors = append(j.Factors, FactorHiddenCharacters)
	}
	return j, nil
}

// ruleScore is a sum of rule-based-v1's weights as a score: rounded to
// the hundredth, so that float noise (0.7+0.1+0.05 = 0.8500000000000001)
// does not move it past a threshold of exactly 0.85, and clamped.
func ruleScore(sum float64) float64 { return clampScore(math.Round(sum*100) / 100) }

// ruleNotes are rule-based-v1's notes, written once. A reason is the
// judge's kind and the notes that applied, in this order: the base, the
// fixed notes, then hidden characters; reasons holds the reason for every
// set of fixed notes (bit i for fixed[i]).
var ruleNotes = func() (n struct {
	fixed       [4]string
	reasons     [16]string
	sums        [16]float64 // the weights of a set, added in the notes' order
	scores      [16]float64 // ruleScore of sums
	factors     [16][]string
	hiddenChars string // a format: where, which runes
	// approved is Check's reason for each set's reason and score.
	approved map[string]approvedText
}) {
	base := fmt.Sprintf("base %.2f", ruleBase)
	n.fixed = [4]string{
		fmt.Sprintf("%+.2f intent names the executor", ruleIntentNamesExec),
		fmt.Sprintf("%+.2f possible path traversal ('..' with '/' in an arg)", ruleTraversalInArgs),
		fmt.Sprintf("%+.2f arg key is not an identifier", ruleNonIdentifierKey),
		fmt.Sprintf("%+.2f non-critical (declared by the context)", ruleNonCritical),
	}
	weights := [4]float64{ruleIntentNamesExec, ruleTraversalInArgs, ruleNonIdentifierKey, ruleNonCritical}
	names := [4]string{FactorIntentNamesExecutor, FactorPathTraversal, FactorOddArgKey, FactorNonCritical}
	for set := range n.reasons {
		notes := []string{base}
		sum, factors := ruleBase, []string{}
		for i, note := range n.fixed {
			if set&(1<<i) != 0 {
				notes = append(notes, note)
				sum += weights[i]
				factors = append(factors, names[i])
			}
		}
		n.reasons[set] = RuleJudgeKind + ": " + strings.Join(notes, "; ")
		n.sums[set], n.scores[set], n.factors[set] = sum, ruleScore(sum), slices.Clip(factors)
	}
	n.approved = map[string]approvedText{}
	for set, reason := range n.reasons {
		n.approved[reason] = approvedText{n.scores[set], writeApproved(n.scores[set], reason)}
	}
	n.hiddenChars = fmt.Sprintf("%+.2f hidden characters in the %%s (%%s)", ruleHiddenChars)
	return n
}()

// approvedText is an approved verdict's reason, for the score it says.
type approvedText struct {
	score float64
	text  string
}

// RuleCap is what rule-based-v1's fixed negative signals (path
// traversal, an odd arg key, hidden characters) say of r, for another
// judge to apply on top of its own score: the base score with those
// signals alone (no bonus the agent's own words could earn), the factors
// that fired (none: no cap), and a reason naming them.
func RuleCap(r Request) (limit float64, factors []string, reason string) {
	limit = ruleBase
	var notes []string
	traversal, badKey := r.argSignals()
	if traversal {
		limit += ruleTraversalInArgs
		factors, notes = append(factors, FactorPathTraversal), append(notes, "possible path traversal")
	}
	if badKey {
		limit += ruleNonIdentifierKey
		factors, notes = append(factors, FactorOddArgKey), append(notes, "arg key is not an identifier")
	}
	if where, runes := hiddenIn(r); where != "" {
		limit += ruleHiddenChars
		factors, notes = append(factors, FactorHiddenCharacters), append(notes, fmt.Sprintf("hidden characters in the %s (%s)", where, runes))
	}
	if len(factors) == 0 {
		return 1, nil, ""
	}
	return clampScore(math.Round(limit*100) / 100), factors, RuleJudgeKind + " (" + strings.Join(notes, "; ") + ")"
}

// argSignals says whether an arg value looks like path traversal ('..'
// with '/') and whether an arg key is not an identifier.
func argSignals(args map[string]any) (traversal, badKey bool) {
	// Flat args (keys to strings, numbers, booleans), the common case,
	// need no walk; the signals do not depend on the order.
	for k, x := range args {
		badKey = badKey || !isIdentifier(k)
		switch x := x.(type) {
		case string:
			traversal = traversal || (strings.Contains(x, "..") && strings.Contains(x, "/"))
		case nil, float64, bool:
		default:
			return walkArgSignals(args)
		}
	}
	return traversal, badKey
}

// argFacts are argSignals of a request's args, gathered on another walk
// of them (the guard's), from the keys and the strings it finds, not a
// list's items joined; set says they were.
type argFacts struct{ traversal, badKey, set bool }

// add reads one string of the walk.
func (f *argFacts) add(e argEvent) {
	if e.isKey {
		f.badKey = f.badKey || !isIdentifier(e.s)
	} else {
		f.traversal = f.traversal || (strings.Contains(e.s, "..") && strings.Contains(e.s, "/"))
	}
}

// withFacts is r with the facts the guard gathered of its args.
func (r Request) withFacts(f argFacts) Request {
	r.facts = f
	return r
}

// argSignals is argSignals(r.Args), from the guard's facts when Check
// gathered them.
func (r Request) argSignals() (traversal, badKey bool) {
	if r.facts.set {
		return r.facts.traversal, r.facts.badKey
	}
	return argSignals(r.Args)
}

// walkArgSignals is argSignals for args of any shape.
func walkArgSignals(args map[string]any) (traversal, badKey bool) {
	var v argSignalVisitor
	v.w.visitor = &v
	v.w.run(args)
	return v.facts.traversal, v.facts.badKey
}

type argSignalVisitor struct {
	w     argWalker
	facts argFacts
}

func (v *argSignalVisitor) visit(e argEvent) bool {
	v.facts.add(e)
	return !(v.facts.traversal && v.facts.badKey)
}

// declaresNonCritical reports a request whose context says "critical":
// false for a capability that is not critical.
func declaresNonCritical(r Request) bool {
	c, ok := r.Context[ContextCritical].(bool)
	return ok && !c && !r.Critical
}

// hiddenIn names where r's target and intent hide characters ("target",
// "intent", "target and intent") and which ones, as U+XXXX, at most four.
func hiddenIn(r Request) (where, runes string) {
	if plainText(r.Target) && plainText(r.Intent) {
		return "", ""
	}
	var places []string
	var seen []rune
	for _, f := range []struct{ name, s string }{{"target", r.Target}, {"intent", r.Intent}} {
		found := false
		for i, c := range f.s {
			if !IsHidden(c) || (c == '\r' && strings.HasPrefix(f.s[i+1:], "\n")) {
				continue
			}
			found = true
			if len(seen) < 4 && !slices.Contains(seen, c) {
				seen = append(seen, c)
			}
		}
		if found {
			places = append(places, f.name)
		}
	}
	if len(places) == 0 {
		return "", ""
	}
	codes := make([]string, len(seen))
	for i, c := range seen {
		codes[i] = fmt.Sprintf("U+%04X", c)
	}
	return strings.Join(places, " and "), strings.Join(codes, ", ")
}

// plainText reports a string of printable ASCII, tabs and newlines only:
// nothing in it is hidden.
func plainText(s string) bool {
	// Eight bytes at a time: a word of printable ASCII (0x20-0x7e) is
	// passed whole; any other word is read byte by byte, where a tab or
	// a newline passes.
	const ones, highs, spaces = 0x0101010101010101, 0x8080808080808080, 0x2020202020202020
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// No byte has its high bit; then adding 1 to each carries into
		// no other and sets the high bit of 0x7f alone, and subtracting
		// 0x20 from each with its high bit set borrows from no other and
		// clears the high bit of those below 0x20 alone.
		if x&highs == 0 && (x+ones)&highs == 0 && ^((x|highs)-spaces)&highs == 0 {
			continue
		}
		if !plainBytes(s[i : i+8]) {
			return false
		}
	}
	return plainBytes(s[i:])
}

// plainBytes is plainText, one byte after the other.
func plainBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t' && c != '\n') || c >= 0x7f {
			return false
		}
	}
	return true
}

// IsHidden reports a character a person cannot see for what it is: a
// format character (Unicode Cf: the bidi controls U+202A–U+202E and
// U+2066–U+2069, the zero-width U+200B–U+200F, U+2060, U+FEFF, …) or a
// control character other than tab and newline.
func IsHidden(c rune) bool {
	if c == '\t' || c == '\n' {
		return false
	}
	if c < utf8.RuneSelf { // ASCII has controls but no format characters
		return c < 0x20 || c == 0x7f
	}
	return unicode.IsControl(c) || unicode.Is(unicode.Cf, c)
}

// intentNamesExecutor reports whether the intent mentions, case-insensitively,
// a part of at least three characters of the executor's name split on
// _ - . : ("fs_read_file" is named by "read the invoice file").
func intentNamesExecutor(intent, executor string) bool {
	intent = strings.ToLower(intent)
	// The separators are ASCII, and no byte of a multi-byte UTF-8
	// sequence is, so the executor is split byte by byte.
	for start, i := 0, 0; i <= len(executor); i++ {
		if i < len(executor) && !isExecutorSep(executor[i]) {
			continue
		}
		if tok := executor[start:i]; utf8.RuneCountInString(tok) >= minExecutorTokenRunes && strings.Contains(intent, strings.ToLower(tok)) {
			return true
		}
		start = i + 1
	}
	return false
}

// isExecutorSep reports the bytes an executor's name is split at.
func isExecutorSep(c byte) bool { return c == '_' || c == '-' || c == '.' || c == ':' }

// isIdentifier reports ^[A-Za-z_][A-Za-z0-9_]*$.
func isIdentifier(s string) bool {
	if s == "" || ('0' <= s[0] && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

// clampScore keeps a score in [0,1]; NaN becomes 0, the closed side.
func clampScore(s float64) float64 {
	switch {
	case math.IsNaN(s) || s < 0:
		return 0
	case s > 1:
		return 1
	}
	return s
}
