package cards

import (
	"fmt"
	"slices"
	"strings"

	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/vaglio"
)

// VaglioWords is the vaglio line of a card in a person's words: what the
// score means ("✓ in line with the intent (0.80)", "⚠ unusual: path goes
// up a directory (0.50)"), from the verdict's machine-readable factors.
// The judge's exact reason stays in the API and on the web page.
func VaglioWords(v vaglio.Verdict, l locale.Locale) string {
	score := fmt.Sprintf(" (%.2f)", v.Score)
	has := func(f string) bool { return slices.Contains(v.Factors, f) }
	switch {
	case v.BlockedBy == vaglio.BlockedByGuard:
		return "⛔ " + l.T("vaglio.guard")
	case has(vaglio.FactorJudgeFailed):
		return "⛔ " + l.T("vaglio.judge_failed")
	}
	var concerns []string
	if has(vaglio.FactorHiddenCharacters) {
		concerns = append(concerns, l.T("vaglio.hidden_characters"))
	}
	if has(vaglio.FactorPathTraversal) {
		concerns = append(concerns, l.T("vaglio.path_traversal"))
	}
	if has(vaglio.FactorOddArgKey) {
		concerns = append(concerns, l.T("vaglio.odd_arg_key"))
	}
	why := strings.Join(concerns, ", ")
	switch {
	case v.BlockedBy == vaglio.BlockedByJudge && why != "":
		return "⛔ " + l.T("vaglio.refused_because", why) + score
	case v.BlockedBy == vaglio.BlockedByJudge:
		return "⛔ " + l.T("vaglio.refused") + score
	case why != "":
		return "⚠ " + l.T("vaglio.unusual_because", why) + score
	case has(vaglio.FactorIntentNamesExecutor):
		return "✓ " + l.T("vaglio.in_line") + score
	case v.JudgeKind == vaglio.RuleJudgeKind:
		// The rule judge names everything it saw: nothing, here.
		return "✓ " + l.T("vaglio.nothing_unusual") + score
	case v.Score >= 0.70: // a judge that names no factors: its score alone
		return "✓ " + l.T("vaglio.plausible") + score
	case v.Score >= 0.50:
		return "⚠ " + l.T("vaglio.unusual") + score
	}
	return "⚠ " + l.T("vaglio.doubtful") + score
}
