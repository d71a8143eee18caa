package gateway

import (
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/vaglio"
	"github.com/metnos/gateway/vaglio/llmjudge"
)

// NewJudge builds the judge vaglio.judge_kind names: nil (vaglio's
// rule-based default) or the LLM judge of [vaglio.llm], which falls back
// to the rule-based judge whenever the model cannot answer (and, unless
// on_failure = "rule-based", sends what would be allowed to a person).
func NewJudge(v config.Vaglio, now func() time.Time) vaglio.Judge {
	if v.JudgeKind != config.JudgeLLM {
		return nil
	}
	return llmjudge.New(llmjudge.Config{
		API: v.LLM.API, URL: v.LLM.URL, Model: v.LLM.Model, APIKey: v.LLM.APIKey, Timeout: time.Duration(v.LLM.Timeout),
		MaxCallsPerDay: v.LLM.MaxCallsPerDay, MaxCallsTotal: v.LLM.MaxCallsPerDayTotal, SendArgValues: v.LLM.SendArgValues,
		RuleBasedOnFailure: v.LLM.OnFailure == config.LLMOnFailureRuleBased,
	}, nil, vaglio.RuleJudge{}, now)
}
