package vaglio

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Judge is the graded half of vaglio: it scores a request in [0,1], higher
// meaning more plausible. It is an interface of two methods so that an LLM
// judge can replace the rule-based one without touching Check. A Judge must
// be safe for concurrent use, and its reason and errors must not quote
// argument values: both end up in the decision log.
type Judge interface {
	// Kind names the judge in every verdict and log line (judge_kind), so a
	// score can always be traced to the judge that gave it.
	Kind() string
	// Score rates r. An error denies the request (vaglio fails closed).
	Score(ctx context.Context, r Request) (score float64, reason string, err error)
}

// RuleJudgeKind is the judge_kind of RuleJudge. The version is part of the
// name so that logged scores stay comparable when the rules change.
const RuleJudgeKind = "rule-based-v1"

// The weights of rule-based-v1, from SPEC §4 step 6.
const (
	ruleBase              = 0.70
	ruleIntentNamesExec   = +0.10
	ruleTraversalInArgs   = -0.20
	ruleNonIdentifierKey  = -0.10
	ruleNonCritical       = +0.05
	minExecutorTokenRunes = 3
)

// RuleJudge is the built-in judge, rule-based-v1 (SPEC §4 step 6). It needs
// no network and no model, so every deployment has a judge from day one; its
// signals are deliberately cheap: does the intent agree with the executor,
// do the args try to climb out of a directory, are the arg keys plain names.
//
// With these weights its lowest possible score is 0.40 (a critical
// capability, traversal and an odd key), above DefaultThreshold: on its own
// it grades requests for the owner's card rather than refusing them; a
// higher threshold or another Judge makes it refuse.
type RuleJudge struct{}

// Kind returns RuleJudgeKind.
func (RuleJudge) Kind() string { return RuleJudgeKind }

// Score applies the rules and never fails. The reason lists every
// adjustment that applied, and the resulting score.
func (RuleJudge) Score(_ context.Context, r Request) (float64, string, error) {
	score := ruleBase
	notes := []string{fmt.Sprintf("base %.2f", ruleBase)}

	if intentNamesExecutor(r.Intent, r.Executor) {
		score += ruleIntentNamesExec
		notes = append(notes, fmt.Sprintf("%+.2f intent names the executor", ruleIntentNamesExec))
	}
	traversal, badKey := false, false
	walkArgs(r.Args, func(e argEvent) bool {
		if e.isKey {
			badKey = badKey || !isIdentifier(e.s)
		} else {
			traversal = traversal || (strings.Contains(e.s, "..") && strings.Contains(e.s, "/"))
		}
		return !(traversal && badKey)
	})
	if traversal {
		score += ruleTraversalInArgs
		notes = append(notes, fmt.Sprintf("%+.2f '..' with '/' in an arg", ruleTraversalInArgs))
	}
	if badKey {
		score += ruleNonIdentifierKey
		notes = append(notes, fmt.Sprintf("%+.2f arg key is not an identifier", ruleNonIdentifierKey))
	}
	if !r.Critical {
		score += ruleNonCritical
		notes = append(notes, fmt.Sprintf("%+.2f non-critical capability", ruleNonCritical))
	}
	// Round away float noise (0.7+0.1+0.05 = 0.8500000000000001) so that a
	// threshold of exactly 0.85 means what it says.
	score = clampScore(math.Round(score*100) / 100)
	return score, fmt.Sprintf("%s: %s = %.2f", RuleJudgeKind, strings.Join(notes, "; "), score), nil
}

// intentNamesExecutor reports whether the intent mentions, case-insensitively,
// a part of at least three characters of the executor's name split on
// _ - . : ("fs_read_file" is named by "read the invoice file").
func intentNamesExecutor(intent, executor string) bool {
	intent = strings.ToLower(intent)
	for _, tok := range strings.FieldsFunc(executor, func(r rune) bool { return strings.ContainsRune("_-.:", r) }) {
		if utf8.RuneCountInString(tok) >= minExecutorTokenRunes && strings.Contains(intent, strings.ToLower(tok)) {
			return true
		}
	}
	return false
}

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
