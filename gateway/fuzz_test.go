package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/policy"
)

const fuzzToken = "tok-fuzz-a1-5e4d3c2b1a09"

// fuzzRotate is how many inputs one database takes before the fuzzer
// starts on a fresh one: a ten-minute run submits hundreds of thousands
// of requests, and a growing file would slow every exec down.
const fuzzRotate = 2000

// fuzzGateway is a whole gateway on a temp SQLite file, called through
// its handler (no listener: the fuzzer wants execs, not sockets).
type fuzzGateway struct {
	tb      testing.TB
	dir     string
	sink    *httptest.Server // the only callback_url inputs may reach
	app     *gateway.App
	handler http.Handler
	pending string // a pending request the decision endpoint decides
	runs    int
	gen     int
}

func newFuzzGateway(f *testing.F) *fuzzGateway {
	g := &fuzzGateway{tb: f, dir: f.TempDir()}
	g.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	f.Cleanup(func() {
		g.close()
		g.sink.Close()
	})
	g.open()
	return g
}

func (g *fuzzGateway) open() {
	g.gen++
	cfg := config.Default()
	cfg.Storage.Path = filepath.Join(g.dir, "gateway-"+strconv.Itoa(g.gen)+".db")
	cfg.Vaglio.LogDir = "" // no decision log: the fuzzer would fill the disk
	a := config.NewAgent("a1")
	a.Token, a.Admin, a.Autonomy = fuzzToken, true, policy.Full // Full: every outcome is reachable
	a.Rate, a.RateCount, a.RatePer = "1000000/s", 1000000, time.Second
	cfg.Agents = []config.Agent{a}
	app, err := gateway.NewApp(context.Background(), cfg, gateway.AppOptions{Home: g.dir})
	if err != nil {
		g.tb.Fatalf("NewApp: %v", err)
	}
	g.app, g.handler, g.runs, g.pending = app, app.Server.Handler(), 0, ""
}

func (g *fuzzGateway) close() {
	if g.app == nil {
		return
	}
	path := g.app.Config.Storage.Path
	if err := g.app.Close(); err != nil {
		g.tb.Errorf("Close: %v", err)
	}
	g.app = nil
	for _, suffix := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(path + suffix)
	}
}

// next is the gateway for one input, rotated every fuzzRotate inputs.
func (g *fuzzGateway) next() {
	if g.runs++; g.runs > fuzzRotate {
		g.close()
		g.open()
		g.runs = 1
	}
}

func (g *fuzzGateway) post(path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+fuzzToken)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	g.handler.ServeHTTP(rec, req)
	return rec
}

// pendingID returns a pending request for the decision endpoint, making
// a new one when the last was decided.
func (g *fuzzGateway) pendingID(t *testing.T) string {
	if g.pending != "" {
		if r, err := g.app.Service.Get(context.Background(), g.pending); err == nil && r.Status == approvals.StatusPending {
			return g.pending
		}
	}
	rec := g.post("/v1/requests", []byte(`{"capability":"code:exec","target":"git status","intent":"see what changed","executor":"shell"}`))
	var r approvals.Request
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || rec.Code != http.StatusAccepted || r.Status != approvals.StatusPending {
		t.Fatalf("setup: a code:exec request answered %d %s, want 202 pending", rec.Code, rec.Body)
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
		g.next()
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
