package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/policy"
)

const fuzzToken = "tok-fuzz-a1-5e4d3c2b1a09"

// fuzzRotate is how many inputs one database takes before the fuzzer
// starts on a fresh one: a ten-minute run submits hundreds of thousands
// of requests, and a growing file would slow every exec down.
const fuzzRotate = 2000

// fuzzGateway is a whole gateway (gatewaytest.Fuzz), called through its
// handler, with the sink inputs' callback URLs may reach.
type fuzzGateway struct {
	*gatewaytest.Fuzz
	sink    *httptest.Server // the only callback_url inputs may reach
	agent   *client.Client
	pending string // a pending request the decision endpoint decides
}

func newFuzzGateway(f *testing.F) *fuzzGateway {
	g := &fuzzGateway{}
	g.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	f.Cleanup(g.sink.Close)
	g.Fuzz = gatewaytest.NewFuzz(f, fuzzRotate, func(_ testing.TB, cfg config.Config) (config.Config, gateway.AppOptions) {
		a := config.NewAgent("a1")
		a.Token, a.Admin, a.Autonomy = fuzzToken, true, policy.Full // Full: every outcome is reachable
		a.Rate, a.RateCount, a.RatePer = "1000000/s", 1000000, time.Second
		cfg.Agents = []config.Agent{a}
		return cfg, gateway.AppOptions{}
	})
	g.agent = g.Client(fuzzToken)
	return g
}

// next readies the gateway for one input.
func (g *fuzzGateway) next(t *testing.T) {
	if g.Next(t) {
		g.pending = ""
	}
}

// post sends body as it is: the fuzzed bytes are the wire itself.
func (g *fuzzGateway) post(path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+fuzzToken)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	g.Handler.ServeHTTP(rec, req)
	return rec
}

// pendingID returns a pending request for the decision endpoint, making
// a new one when the last was decided.
func (g *fuzzGateway) pendingID(t *testing.T) string {
	ctx := context.Background()
	if g.pending != "" {
		if r, err := g.App.Service.Get(ctx, g.pending); err == nil && r.Status == approvals.StatusPending {
			return g.pending
		}
	}
	r, err := g.agent.Request(ctx, client.Req{Capability: "code:exec", Target: "git status", Intent: "see what changed", Executor: "shell"}, 0)
	if err != nil || r.Status != client.StatusPending {
		t.Fatalf("setup: a code:exec request: %v, status %q, want pending", err, r.Status)
	}
	g.pending = r.ID
	return r.ID
}

// fuzzFields is what the fuzzer's body says, read with the same decoder
// rules as the server (encoding/json, case-insensitive names, last
// duplicate wins), for the properties that depend on it.
type fuzzFields struct {
	CallID      string `json:"call_id"`
	Capability  string `json:"capability"`
	Autonomy    string `json:"autonomy"`
	CallbackURL string `json:"callback_url"`
}

// reachesOut reports whether the server would accept cb as a callback URL
// that points somewhere other than the sink: a fuzzed body must not make
// the test POST to hosts on the network or to other services on this one.
func (g *fuzzGateway) reachesOut(cb string) bool {
	if cb == "" {
		return false
	}
	u, err := url.Parse(cb)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // refused with 400 before anything is stored
	}
	sink, _ := url.Parse(g.sink.URL)
	return u.Scheme != sink.Scheme || u.Host != sink.Host
}

// checkShape asserts what every answer owes: no 5xx, and an error body in
// the API's one shape.
func checkShape(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s answered %d: %s", what, rec.Code, rec.Body)
	}
	if rec.Code >= 200 && rec.Code < 300 {
		return
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s answered %d with Content-Type %q", what, rec.Code, ct)
	}
	var e struct {
		Error *struct {
			Code    *string `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || e.Error.Code == nil ||
		*e.Error.Code == "" || e.Error.Message == nil || *e.Error.Message == "" {
		t.Fatalf("%s answered %d with a body not of the error shape (%v): %s", what, rec.Code, err, rec.Body)
	}
}

// checkTable asserts that nothing the autonomy table denies at the
// effective level comes back allowed.
func checkTable(t *testing.T, what, capability string, level policy.Level, outcome policy.Outcome, status approvals.Status) {
	t.Helper()
	c, err := policy.Lookup(capability)
	if err != nil {
		t.Fatalf("%s accepted an unknown capability %q", what, capability)
	}
	if level < policy.ReadOnly || level > policy.Full {
		t.Fatalf("%s answered with autonomy %d", what, int(level))
	}
	if policy.TableOutcome(level, c) == policy.Denied && (outcome == policy.Allowed || status == approvals.StatusAllowed) {
		t.Fatalf("%s: %s is table-denied at %s, but the answer is outcome %q status %q", what, c.Name, level, outcome, status)
	}
}

// FuzzRequestBody posts arbitrary bytes as the body of POST /v1/requests,
// POST /v1/check and POST /v1/requests/{id}/decision to the real handler:
// never a 5xx (a panic is one: the middleware answers it 500), every
// refusal in the error shape, and nothing table-denied comes back allowed.
func FuzzRequestBody(f *testing.F) {
	g := newFuzzGateway(f)
	sink := g.sink.URL + "/cb"
	for _, s := range []string{
		`{"capability":"fs:read","target":"~/notes/todo.md","intent":"read my notes","executor":"notes"}`,
		`{"capability":"fs:write","target":"/tmp/report.pdf","autonomy":"ReadOnly","intent":"write the report"}`,
		`{"capability":"fs:write","target":"/tmp/x","autonomy":"supervised","call_id":"c1","summary":"s","args":{"path":"/tmp/x","n":[1,{"a":null}]}}`,
		`{"capability":"code:exec","target":"rm -rf ~","autonomy":"full","executor":"shell","intent":"clean up"}`,
		`{"capability":"network:http","target":"https://API.example.com:8443/v1?q=1","grant_target":"*.example.com"}`,
		`{"capability":"llm:local","target":"","autonomy":"read_only"}`,
		`{"capability":"llm:online","target":"","channel":"telegram","sender_id":"42"}`,
		`{"capability":"mail:send","target":"boss@example.com","timeout_s":0.5}`,
		`{"capability":"channel:out","target":"#general","callback_url":"` + sink + `"}`,
		`{"capability":"time:read","target":"","callback_url":"` + sink + `","call_id":"cb-1"}`,
		`{"capability":"fs:read","target":"/a/../../etc/shadow","grant_target":"/a/*"}`,
		`{"capability":"fs:read","target":"/etc/password.txt"}`,
		`{"capability":"calendar:read","target":"work","autonomy":"Level(7)"}`,
		`{"capability":"fs:wirte","target":"/tmp/x"}`,
		`{"capability":"fs:read","target":"/tmp/x","timeout_s":-1}`,
		`{"capability":"fs:read","target":"/tmp/x","timeout_s":1e308}`,
		`{"capability":"fs:read","target":"/tmp/x","channel":"web"}`,
		`{"capability":"fs:read","target":"/tmp/x","callback_url":"ftp://example.com/"}`,
		`{"capability":"fs:read","target":"/tmp/x","callback_url":"http://%zz"}`,
		`{"capability":"fs:read","target":"/tmp/\u0000x"}`,
		`{"capability":"fs:read","target":"/tmp/x","nope":1}`,
		`{"capability":1,"target":"/tmp/x"}`,
		`{"capability":"fs:read","target":"/tmp/x","args":[]}`,
		`{"capability":"fs:read","target":"/tmp/x"} {}`,
		`{"CAPABILITY":"fs:read","Target":"/tmp/y","capability":"fs:write"}`,
		`{"decision":"allow_once"}`,
		`{"decision":"allow_always"}`,
		`{"decision":"deny"}`,
		`{"decision":"maybe"}`,
		`{"decision":null}`,
		`{"capability":"fs:read","target":"` + strings.Repeat("a", policy.MaxTargetBytes+1) + `"}`,
		`{"call_id":"` + strings.Repeat("c", approvals.MaxCallIDBytes+1) + `","capability":"time:read"}`,
		`{`, `}`, `[]`, `null`, `"x"`, `0`, ``, ` `, "\xff\xfe", `{"a":` + strings.Repeat("[", 10000),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		g.next(t)
		var in fuzzFields
		_ = json.Unmarshal(body, &in)
		if g.reachesOut(in.CallbackURL) {
			t.Skip("callback_url outside the test")
		}

		rec := g.post("/v1/requests", body)
		checkShape(t, "POST /v1/requests", rec)
		if rec.Code == http.StatusOK || rec.Code == http.StatusAccepted {
			var r approvals.Request
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
				t.Fatalf("POST /v1/requests answered %d with a body that is not a request: %v", rec.Code, err)
			}
			checkTable(t, "POST /v1/requests", r.Capability, r.Autonomy, r.Outcome, r.Status)
			if r.Status.Finished() != (rec.Code == http.StatusOK) {
				t.Fatalf("POST /v1/requests answered %d for a request %s", rec.Code, r.Status)
			}
			if l, err := policy.ParseLevel(in.Autonomy); err == nil && in.CallID == "" && r.Autonomy > l {
				t.Fatalf("asked for %s, got effective autonomy %s", l, r.Autonomy)
			}
		}

		rec = g.post("/v1/check", body)
		checkShape(t, "POST /v1/check", rec)
		if rec.Code == http.StatusOK {
			var ans struct {
				Outcome  policy.Outcome `json:"outcome"`
				Autonomy policy.Level   `json:"autonomy"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
				t.Fatalf("POST /v1/check answered 200 with %s: %v", rec.Body, err)
			}
			checkTable(t, "POST /v1/check", in.Capability, ans.Autonomy, ans.Outcome, "")
		}

		id := g.pendingID(t)
		rec = g.post("/v1/requests/"+id+"/decision", body)
		checkShape(t, "POST /v1/requests/{id}/decision", rec)
		if rec.Code == http.StatusOK {
			var r approvals.Request
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.ID != id || !r.Status.Finished() {
				t.Fatalf("the decision answered 200 with %s (%v)", rec.Body, err)
			}
			checkTable(t, "POST /v1/requests/{id}/decision", r.Capability, r.Autonomy, r.Outcome, r.Status)
		}
	})
}
