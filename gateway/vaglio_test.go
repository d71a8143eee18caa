package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/vaglio/llmjudge"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
)

// TestAPI_Check_SeedGuard is the table of issue 16, posted to /v1/check at
// autonomy Full: every row is something the vaglio seed's guard blocks.
func TestAPI_Check_SeedGuard(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock(), mutate: func(cfg *config.Config) {
		cfg.Agents[1].Autonomy = policy.Full
	}})
	rows := []struct {
		name string
		body jsonBody
	}{
		{"command list", jsonBody{"capability": "code:exec", "target": "run the cleanup", "args": map[string]any{"command": []any{"rm", "-rf", "/"}}}},
		{"shell_exec executor", jsonBody{"capability": "fs:write", "target": "/tmp/out.txt", "executor": "shell_exec", "args": map[string]any{"command": "rm -rf /"}}},
		{"rm -rf ~/Documents", jsonBody{"capability": "code:exec", "target": "rm -rf ~/Documents"}},
		{"rm -r ~/", jsonBody{"capability": "code:exec", "target": "rm -r ~/"}},
		{"chmod 777 /srv/app", jsonBody{"capability": "code:exec", "target": "chmod 777 /srv/app"}},
		{"chmod -R 0777 /etc", jsonBody{"capability": "code:exec", "target": "chmod -R 0777 /etc"}},
		{"/etc/shadow.old", jsonBody{"capability": "fs:read", "target": "/etc/shadow.old"}},
		{"/etc/passwd.bak", jsonBody{"capability": "fs:read", "target": "/etc/passwd.bak"}},
		{"~/.aws/credentials.bak", jsonBody{"capability": "fs:read", "target": "~/.aws/credentials.bak"}},
		{"/proc", jsonBody{"capability": "fs:read", "target": "/proc"}},
		{"/proc/1abc", jsonBody{"capability": "fs:read", "target": "/proc/1abc"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			row.body["autonomy"] = "Full"
			var ans struct {
				Outcome   string  `json:"outcome"`
				Autonomy  string  `json:"autonomy"`
				BlockedBy *string `json:"blocked_by"`
			}
			r := g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, row.body)
			decodeInto(t, string(r.Body), &ans)
			if ans.Outcome != "denied" || ans.Autonomy != "Full" || ans.BlockedBy == nil || *ans.BlockedBy != "guard" {
				t.Errorf("check = %s, want denied by the guard at Full", r.Body)
			}
		})
	}
}

type checkVaglio struct {
	Outcome   string  `json:"outcome"`
	BlockedBy *string `json:"blocked_by"`
	Vaglio    struct {
		Approved  bool    `json:"approved"`
		Score     float64 `json:"score"`
		Reason    string  `json:"reason"`
		JudgeKind string  `json:"judge_kind"`
	} `json:"vaglio"`
	Trace []struct {
		Layer  string `json:"layer"`
		Detail string `json:"detail"`
	} `json:"trace"`
}

// TestAPI_Check_SeedScores: the seed's §4 example scores 0.80 as the seed
// says; the +0.05 comes only when the request's context declares
// "critical": false.
func TestAPI_Check_SeedScores(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock(), mutate: func(cfg *config.Config) {
		cfg.Agents[1].Autonomy = policy.Full
	}})
	body := func(ctx map[string]any) jsonBody {
		b := jsonBody{"capability": "fs:read", "target": "/tmp/n.txt", "autonomy": "Full", "intent": "read my notes in /tmp/n.txt",
			"executor": "fs_read", "args": map[string]any{"path": "/tmp/n.txt"}}
		if ctx != nil {
			b["context"] = ctx
		}
		return b
	}
	for _, tc := range []struct {
		name string
		ctx  map[string]any
		want float64
	}{
		{"no context", nil, 0.80},
		{"the seed's context", map[string]any{"mode": "multistep", "step": 1}, 0.80},
		{"declared non-critical", map[string]any{"critical": false}, 0.85},
	} {
		var ans checkVaglio
		decodeInto(t, string(g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, body(tc.ctx)).Body), &ans)
		if ans.Outcome != "allowed" || ans.Vaglio.Score != tc.want || !strings.HasPrefix(ans.Vaglio.Reason, "approved: score ") {
			t.Errorf("%s: %+v, want allowed with score %.2f", tc.name, ans, tc.want)
		}
	}
}

// TestAPI_Check_HiddenCharacters: hidden characters in the target or the
// intent lower the judge's score, named in its reason and the trace, so a
// judge_threshold of 0.50 denies them (issue 11, "the judge notices").
func TestAPI_Check_HiddenCharacters(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock(), mutate: func(cfg *config.Config) {
		cfg.Agents[1].Autonomy = policy.Full
		cfg.Vaglio.JudgeThreshold = 0.50
	}})
	var ans checkVaglio
	plain := jsonBody{"capability": "fs:read", "target": "/srv/notes/hs.txt", "autonomy": "Full", "intent": "read the notes"}
	decodeInto(t, string(g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, plain).Body), &ans)
	if ans.Outcome != "allowed" {
		t.Fatalf("plain request: %+v", ans)
	}
	for _, b := range []jsonBody{
		{"capability": "fs:read", "target": "/srv/notes/cat notes\u202e\u2066hs.txt", "autonomy": "Full", "intent": "read the notes"},
		{"capability": "fs:read", "target": "/srv/notes/hs.txt", "autonomy": "Full", "intent": "read the\u200b notes"},
	} {
		var ans checkVaglio
		decodeInto(t, string(g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, b).Body), &ans)
		traced := false
		for _, s := range ans.Trace {
			traced = traced || (s.Layer == "vaglio" && strings.Contains(s.Detail, "hidden characters"))
		}
		if ans.Outcome != "denied" || ans.BlockedBy == nil || *ans.BlockedBy != "judge" ||
			!strings.Contains(ans.Vaglio.Reason, "-0.40 hidden characters in the") || !traced {
			t.Errorf("hidden characters: %+v, want denied by the judge, named in the reason and the trace", ans)
		}
	}
}

// TestAPI_Check_LLMJudge: with vaglio.judge_kind = "llm-v1" the model of
// [vaglio.llm] scores what the guard lets through; when it fails, the
// rule-based judge's score is shown and a person decides (on_failure =
// "ask", the default).
func TestAPI_Check_LLMJudge(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"{\"score\": 0.91, \"reason\": \"Reading notes fits.\"}"}}]}`)
	}))
	t.Cleanup(model.Close)
	g := startE2E(t, e2eOptions{clock: newTestClock(), mutate: func(cfg *config.Config) {
		cfg.Agents[1].Autonomy = policy.Full
		cfg.Vaglio.JudgeKind = config.JudgeLLM
		cfg.Vaglio.LLM.URL = model.URL + "/v1"
		cfg.Vaglio.LLM.Timeout = config.Duration(2 * time.Second)
	}})
	body := jsonBody{"capability": "fs:read", "target": "/srv/notes/n.txt", "autonomy": "Full", "intent": "read my notes", "executor": "fs_read"}
	var ans checkVaglio
	decodeInto(t, string(g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, body).Body), &ans)
	if ans.Outcome != "allowed" || ans.Vaglio.JudgeKind != "llm-v1" || ans.Vaglio.Score != 0.91 {
		t.Errorf("with the model: %+v", ans)
	}
	fail.Store(true)
	body["intent"] = "read my notes again"
	decodeInto(t, string(g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, body).Body), &ans)
	if ans.Outcome != "approval_required" || ans.Vaglio.JudgeKind != "rule-based-v1" || ans.Vaglio.Score != 0.8 ||
		!strings.Contains(ans.Vaglio.Reason, "llm judge unavailable: HTTP 503") {
		t.Errorf("model down (on_failure = ask): %+v", ans)
	}
	body["target"] = "/etc/shadow.old"
	decodeInto(t, string(g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, body).Body), &ans)
	if ans.Outcome != "denied" || ans.BlockedBy == nil || *ans.BlockedBy != "guard" {
		t.Errorf("guard: %+v", ans)
	}
}

// TestAPI_Requests_LLMJudgeRepeatAsksNoModel: with the LLM judge, a
// repeated call_id returns the earlier request without a second model call
// (the call_id is looked up before the request is decided), also once the
// judge's own cache of identical asks has expired.
func TestAPI_Requests_LLMJudgeRepeatAsksNoModel(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	var calls atomic.Int64
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"{\"score\": 0.91, \"reason\": \"Reading notes fits.\"}"}}]}`)
	}))
	t.Cleanup(model.Close)
	g := startE2E(t, e2eOptions{clock: clock, mutate: func(cfg *config.Config) {
		cfg.Agents[1].Autonomy = policy.Full
		cfg.Vaglio.JudgeKind = config.JudgeLLM
		cfg.Vaglio.LLM.URL = model.URL + "/v1"
		cfg.Vaglio.LLM.Timeout = config.Duration(2 * time.Second)
	}})
	body := jsonBody{"call_id": "llm-once", "capability": "fs:read", "target": "/srv/notes/n.txt", "autonomy": "Full",
		"intent": "read my notes", "executor": "fs_read"}
	first := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, body).request(t)
	if calls.Load() != 1 {
		t.Fatalf("%d model calls for the first request, want 1", calls.Load())
	}
	for range 3 {
		clock.Add(llmjudge.CacheTTL + time.Second)
		if again := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, body).request(t); again.ID != first.ID {
			t.Fatalf("repeat gave %s, want %s", again.ID, first.ID)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("%d model calls after three repeats, want still 1", calls.Load())
	}
}
