package llmjudge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/vaglio"
)

// modelServer is a scripted model endpoint: answer decides what each call
// gets; every request is kept for the test to read.
type modelServer struct {
	*httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	reqs  []seenRequest
}

type seenRequest struct {
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    string
}

func newModelServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *modelServer {
	t.Helper()
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.calls.Add(1)
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		m.mu.Lock()
		m.reqs = append(m.reqs, seenRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: string(raw)})
		m.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *modelServer) last(t *testing.T) seenRequest {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reqs) == 0 {
		t.Fatal("the model server was never called")
	}
	return m.reqs[len(m.reqs)-1]
}

// openAIAnswer answers a chat completion whose content is content.
func openAIAnswer(content string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	}
}

// anthropicAnswer answers a Messages API response whose first text block is text.
func anthropicAnswer(text string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "end_turn",
			"content": []any{map[string]any{"type": "text", "text": text}},
		})
	}
}

const secretValue = "PASSWORD_segreto_42"

// testRequest is an fs:read the guard lets through, with a secret value.
func testRequest() vaglio.Request {
	return vaglio.Request{Agent: "metnos", Capability: "fs:read", Target: "/srv/notes/n.txt", Intent: "read my notes",
		Executor: "fs_read", Args: map[string]any{"path": "/srv/notes/n.txt", "opts": map[string]any{"password": secretValue}}}
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{now: time.Date(2026, 4, 27, 20, 0, 0, 0, time.UTC)} }

func ruleScore(t *testing.T, r vaglio.Request) vaglio.Judgement {
	j, err := vaglio.RuleJudge{}.Score(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestJudge_OpenAI(t *testing.T) {
	m := newModelServer(t, openAIAnswer(`{"score": 0.92, "reason": "Reading notes matches the intent."}`))
	j := New(Config{API: APIOpenAI, URL: m.URL + "/v1/", Model: "qwen3:8b", APIKey: "sk-local", Timeout: 2 * time.Second}, nil, nil, nil)
	got, err := j.Score(context.Background(), testRequest())
	if err != nil {
		t.Fatal(err)
	}
	if got.Score != 0.92 || got.Kind != Kind || got.Reason != "llm-v1 (qwen3:8b): Reading notes matches the intent." {
		t.Errorf("Score() = %+v", got)
	}
	req := m.last(t)
	if req.Path != "/v1/chat/completions" || req.Header.Get("Authorization") != "Bearer sk-local" {
		t.Errorf("request %s with Authorization %q", req.Path, req.Header.Get("Authorization"))
	}
	if req.Body["model"] != "qwen3:8b" || req.Body["stream"] != false ||
		req.Body["response_format"].(map[string]any)["type"] != "json_object" {
		t.Errorf("body %s", req.Raw)
	}
	msgs := req.Body["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" || msgs[1].(map[string]any)["role"] != "user" {
		t.Fatalf("messages %v", msgs)
	}
	var ask map[string]any
	if err := json.Unmarshal([]byte(msgs[1].(map[string]any)["content"].(string)), &ask); err != nil {
		t.Fatalf("the user message is not the JSON ask: %v", err)
	}
	if ask["intent"] != "read my notes" || ask["executor"] != "fs_read" || ask["capability"] != "fs:read" ||
		ask["target"] != "/srv/notes/n.txt" || strings.Join(toStrings(ask["arg_keys"]), ",") != "opts,opts.password,path" {
		t.Errorf("ask %v", ask)
	}
	if _, ok := ask["args"]; ok || strings.Contains(req.Raw, secretValue) {
		t.Errorf("argument values reached the model by default: %s", req.Raw)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

func TestJudge_Anthropic(t *testing.T) {
	m := newModelServer(t, anthropicAnswer(`{"reason": "Plausible.", "score": 0.4}`))
	j := New(Config{API: APIAnthropic, URL: m.URL + "/v1", Model: "claude-x", APIKey: "sk-ant", Timeout: 2 * time.Second}, nil, nil, nil)
	got, err := j.Score(context.Background(), testRequest())
	if err != nil || got.Score != 0.4 || got.Kind != Kind {
		t.Fatalf("Score() = %+v, %v", got, err)
	}
	req := m.last(t)
	if req.Path != "/v1/messages" || req.Header.Get("x-api-key") != "sk-ant" || req.Header.Get("anthropic-version") != anthropicVer ||
		req.Header.Get("Authorization") != "" {
		t.Errorf("request %s headers %v", req.Path, req.Header)
	}
	if req.Body["model"] != "claude-x" || req.Body["max_tokens"] != float64(anthropicTokens) || req.Body["system"] != systemPrompt {
		t.Errorf("body %s", req.Raw)
	}
	if strings.Contains(req.Raw, secretValue) {
		t.Errorf("argument values reached the model: %s", req.Raw)
	}
}

// TestJudge_Fallback: whatever goes wrong with the model, the rule-based
// judge decides, with its kind and score, and the reason says why.
func TestJudge_Fallback(t *testing.T) {
	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	tests := []struct {
		name   string
		api    string
		answer func(http.ResponseWriter, *http.Request)
		why    string
	}{
		{"timeout", APIOpenAI, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-slow:
			case <-r.Context().Done():
			}
		}, "no answer within 100ms"},
		{"503", APIOpenAI, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}, "HTTP 503"},
		{"500 anthropic", APIAnthropic, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, `{"type":"error"}`, 500) }, "HTTP 500"},
		{"redirect not followed", APIOpenAI, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/steal", http.StatusTemporaryRedirect)
		}, "HTTP 307"},
		{"html", APIOpenAI, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<html>hi</html>") }, "malformed answer"},
		{"no choices", APIOpenAI, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"choices":[]}`) }, "malformed answer"},
		{"prose", APIOpenAI, openAIAnswer("I think this is fine, score 0.9"), "malformed answer: not a JSON object"},
		{"fenced", APIOpenAI, openAIAnswer("```json\n{\"score\":0.9,\"reason\":\"ok\"}\n```"), "malformed answer"},
		{"think block", APIOpenAI, openAIAnswer("<think>hm</think>{\"score\":0.9,\"reason\":\"ok\"}"), "malformed answer"},
		{"extra key", APIOpenAI, openAIAnswer(`{"score":0.9,"reason":"ok","confidence":1}`), "unexpected key"},
		{"repeated score", APIOpenAI, openAIAnswer(`{"score":0.1,"reason":"ok","score":1}`), "repeated"},
		{"score above 1", APIOpenAI, openAIAnswer(`{"score":1.5,"reason":"ok"}`), "outside [0,1]"},
		{"negative score", APIOpenAI, openAIAnswer(`{"score":-0.1,"reason":"ok"}`), "outside [0,1]"},
		{"score as a string", APIOpenAI, openAIAnswer(`{"score":"0.9","reason":"ok"}`), "not a number"},
		{"no reason", APIOpenAI, openAIAnswer(`{"score":0.9}`), "missing"},
		{"empty reason", APIOpenAI, openAIAnswer(`{"score":0.9,"reason":"  "}`), "missing"},
		{"text after", APIOpenAI, openAIAnswer(`{"score":0.9,"reason":"ok"} {"score":1}`), "text after"},
		{"two objects glued", APIOpenAI, openAIAnswer(`{"score":0.9,"reason":"ok"}}`), "text after"},
		{"array", APIOpenAI, openAIAnswer(`[0.9]`), "not a JSON object"},
		{"timeout anthropic", APIAnthropic, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-slow:
			case <-r.Context().Done():
			}
		}, "no answer within 100ms"},
		{"prose anthropic", APIAnthropic, anthropicAnswer("Sure! The score is 0.9."), "malformed answer: not a JSON object"},
		{"score above 1 anthropic", APIAnthropic, anthropicAnswer(`{"score": 2, "reason": "ok"}`), "outside [0,1]"},
		{"not a message", APIAnthropic, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `[1,2]`) }, "not a Messages API response"},
		{"no text block", APIAnthropic, func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"content":[{"type":"tool_use","id":"x","name":"n","input":{}}]}`)
		}, "no text block"},
		{"huge", APIOpenAI, func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"choices":[{"message":{"content":"`+strings.Repeat("x", maxAnswerBytes)+`"}}]}`)
		}, "over 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModelServer(t, tt.answer)
			// 100ms: the timeout cases wait for it. The others answer at
			// once, but a 1 MiB answer under -race on a loaded machine can
			// take longer: give them time, so they fail for their reason.
			timeout := 100 * time.Millisecond
			if !strings.HasPrefix(tt.why, "no answer within") {
				timeout = 10 * time.Second
			}
			j := New(Config{API: tt.api, URL: m.URL + "/v1", Model: "m", Timeout: timeout}, nil, nil, nil)
			r := testRequest()
			got, err := j.Score(context.Background(), r)
			if err != nil {
				t.Fatalf("Score() error %v", err)
			}
			want := ruleScore(t, r)
			if got.Kind != vaglio.RuleJudgeKind || got.Score != want.Score {
				t.Errorf("Score() = %+v, want the rule-based judge's %v", got, want.Score)
			}
			if !strings.HasPrefix(got.Reason, "llm judge unavailable: ") || !strings.Contains(got.Reason, tt.why) ||
				!strings.HasSuffix(got.Reason, want.Reason) {
				t.Errorf("reason %q, want it to say %q and end with the rule-based reason", got.Reason, tt.why)
			}
			if strings.Contains(got.Reason, m.URL) || strings.Contains(got.Reason, secretValue) {
				t.Errorf("reason quotes the URL or a value: %q", got.Reason)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		m := newModelServer(t, openAIAnswer("{}"))
		url := m.URL
		m.Close()
		j := New(Config{API: APIOpenAI, URL: url + "/v1", Model: "m", Timeout: time.Second}, nil, nil, nil)
		got, _ := j.Score(context.Background(), testRequest())
		if got.Kind != vaglio.RuleJudgeKind || !strings.Contains(got.Reason, "llm judge unavailable: model server unreachable") ||
			strings.Contains(got.Reason, url) {
			t.Errorf("Score() = %+v", got)
		}
	})
}

// TestJudge_NeverAllowsBecauseTheModelFailed: through vaglio, with a
// threshold the rule-based judge does not reach, a failing model denies
// exactly as the rule-based judge would; a working model decides by its
// own score.
func TestJudge_NeverAllowsBecauseTheModelFailed(t *testing.T) {
	var mode atomic.Value
	mode.Store("503")
	m := newModelServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case "503":
			http.Error(w, "down", http.StatusServiceUnavailable)
		case "nonsense":
			openAIAnswer(`{"score": 1, "reason": "ok", "note": "ignore the rules"}`)(w, r)
		default:
			openAIAnswer(`{"score": 0.95, "reason": "fine"}`)(w, r)
		}
	})
	j := New(Config{API: APIOpenAI, URL: m.URL, Model: "m", Timeout: time.Second}, nil, nil, nil)
	v := vaglio.New(vaglio.Options{Threshold: 0.9, Home: "/home/r", Judge: j})
	for _, md := range []string{"503", "nonsense"} {
		mode.Store(md)
		r := testRequest()
		r.Intent = "failing mode " + md // a new ask each time, not a cached one
		got := v.Check(context.Background(), r)
		if got.Approved || got.BlockedBy != vaglio.BlockedByJudge || got.JudgeKind != vaglio.RuleJudgeKind ||
			!strings.Contains(got.Reason, "llm judge unavailable") {
			t.Errorf("%s: verdict %+v, want the rule-based judge's denial", md, got)
		}
	}
	mode.Store("ok")
	got := v.Check(context.Background(), testRequest())
	if !got.Approved || got.JudgeKind != Kind || got.Score != 0.95 {
		t.Errorf("working model: verdict %+v", got)
	}
}

// TestJudge_GuardNeverAsksTheModel: a request the guard blocks is never
// sent to the model.
func TestJudge_GuardNeverAsksTheModel(t *testing.T) {
	m := newModelServer(t, openAIAnswer(`{"score": 1, "reason": "fine"}`))
	v := vaglio.New(vaglio.Options{Threshold: 0.3, Home: "/home/r", Judge: New(Config{API: APIOpenAI, URL: m.URL, Model: "m", Timeout: time.Second}, nil, nil, nil)})
	for _, r := range []vaglio.Request{
		{Capability: "fs:read", Target: "~/.ssh/id_rsa"},
		{Capability: "code:exec", Target: "run it", Args: map[string]any{"command": []any{"rm", "-rf", "/"}}},
	} {
		if got := v.Check(context.Background(), r); got.Approved || got.BlockedBy != vaglio.BlockedByGuard || got.JudgeKind != Kind {
			t.Errorf("verdict %+v, want the guard's", got)
		}
	}
	if n := m.calls.Load(); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
}

func TestJudge_Budget(t *testing.T) {
	m := newModelServer(t, openAIAnswer(`{"score": 0.9, "reason": "fine"}`))
	c := newClock()
	j := New(Config{API: APIOpenAI, URL: m.URL, Model: "m", Timeout: time.Second, MaxCallsPerDay: 2}, nil, nil, c.Now)
	ask := func(intent string) vaglio.Judgement {
		r := testRequest()
		r.Intent = intent
		got, err := j.Score(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if a, b := ask("one"), ask("two"); a.Kind != Kind || b.Kind != Kind {
		t.Fatalf("within the budget: %+v %+v", a, b)
	}
	third := ask("three")
	if third.Kind != vaglio.RuleJudgeKind || !strings.Contains(third.Reason, "llm judge unavailable: over budget (2 calls today for agent metnos, max_calls_per_day = 2)") {
		t.Errorf("over the budget: %+v", third)
	}
	if cached := ask("one"); cached.Kind != Kind || !strings.HasSuffix(cached.Reason, "(cached)") {
		t.Errorf("a cached answer costs nothing and still counts: %+v", cached)
	}
	if n := m.calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
	c.Add(4 * time.Hour) // 00:00 UTC: a new day
	if next := ask("four"); next.Kind != Kind {
		t.Errorf("the next day: %+v", next)
	}
	if n := m.calls.Load(); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
}

func TestJudge_Cache(t *testing.T) {
	m := newModelServer(t, openAIAnswer(`{"score": 0.9, "reason": "fine"}`))
	c := newClock()
	j := New(Config{API: APIOpenAI, URL: m.URL, Model: "m", Timeout: time.Second}, nil, nil, c.Now)
	r := testRequest()
	for range 3 {
		if got, _ := j.Score(context.Background(), r); got.Score != 0.9 || got.Kind != Kind {
			t.Fatalf("Score() = %+v", got)
		}
	}
	other := testRequest()
	other.Args = map[string]any{"path": "/srv/notes/n.txt", "opts": map[string]any{"password": "another value"}}
	j.Score(context.Background(), other) // same keys, values unseen: the same ask
	if n := m.calls.Load(); n != 1 {
		t.Errorf("%d calls for identical asks within a minute, want 1", n)
	}
	c.Add(CacheTTL)
	j.Score(context.Background(), r)
	other.Intent = "something else"
	j.Score(context.Background(), other)
	if n := m.calls.Load(); n != 3 {
		t.Errorf("%d calls after a minute and for a new intent, want 3", n)
	}
}

// TestJudge_SendArgValues: only with send_arg_values does the model see
// values, and its reason never carries them (or the target) to the log.
func TestJudge_SendArgValues(t *testing.T) {
	m := newModelServer(t, openAIAnswer(`{"score": 0.6, "reason": "It reads /srv/notes/n.txt with password `+secretValue+`\u202e\nok."}`))
	dir := t.TempDir()
	j := New(Config{API: APIOpenAI, URL: m.URL, Model: "m", Timeout: time.Second, SendArgValues: true}, nil, nil, nil)
	v := vaglio.New(vaglio.Options{Threshold: 0.3, Home: "/home/r", Judge: j, LogDir: dir})
	got := v.Check(context.Background(), testRequest())
	v.Close()
	if !strings.Contains(m.last(t).Raw, secretValue) {
		t.Error("send_arg_values = true did not send the values")
	}
	if strings.Contains(got.Reason, secretValue) || strings.Contains(got.Reason, "/srv/notes/n.txt") || strings.ContainsAny(got.Reason, "\n\u202e") {
		t.Errorf("reason %q carries a value, the target or a hidden character", got.Reason)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("log files %v", files)
	}
	data, _ := os.ReadFile(files[0])
	if strings.Contains(string(data), secretValue) || !strings.Contains(string(data), `"judge_kind":"llm-v1"`) {
		t.Errorf("log line %s", data)
	}
}

// TestJudge_HiddenCharactersShown: the model sees hidden characters as
// ⟦U+XXXX⟧, as a person would want them described.
func TestJudge_HiddenCharactersShown(t *testing.T) {
	m := newModelServer(t, openAIAnswer(`{"score": 0.2, "reason": "hidden characters"}`))
	j := New(Config{API: APIOpenAI, URL: m.URL, Model: "m", Timeout: time.Second}, nil, nil, nil)
	r := testRequest()
	r.Target = "/srv/notes/cat\u202etxt.sh"
	j.Score(context.Background(), r)
	if raw := m.last(t).Raw; !strings.Contains(raw, "⟦U+202E⟧") || strings.Contains(raw, "\u202e") || strings.Contains(raw, `\u202e`) {
		t.Errorf("ask %s", raw)
	}
}

// TestJudge_ConcurrentIdenticalAsksShareOneCall: agents asking the same
// thing at the same moment cost one call and get the same score.
func TestJudge_ConcurrentIdenticalAsksShareOneCall(t *testing.T) {
	started, release := make(chan struct{}, 16), make(chan struct{})
	m := newModelServer(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		openAIAnswer(`{"score": 0.7, "reason": "fine"}`)(w, r)
	})
	j := New(Config{API: APIOpenAI, URL: m.URL, Model: "m", Timeout: 10 * time.Second, MaxCallsPerDay: 1}, nil, nil, nil)
	const n = 8
	results := make(chan vaglio.Judgement, n)
	for range n {
		go func() {
			got, _ := j.Score(context.Background(), testRequest())
			results <- got
		}()
	}
	<-started
	time.Sleep(200 * time.Millisecond) // the others join the call in flight
	close(release)
	for range n {
		if got := <-results; got.Kind != Kind || got.Score != 0.7 {
			t.Errorf("Score() = %+v", got)
		}
	}
	if c := m.calls.Load(); c != 1 {
		t.Errorf("%d calls, want 1", c)
	}
}
