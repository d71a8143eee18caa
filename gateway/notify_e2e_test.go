package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

const hookSecret = "hook-secret-for-notify"

// hookServer is a webhook receiver: it records every POST it accepts, and
// can hold them (a gate) or refuse them (an outage).
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	sigs   []string
	gate   chan struct{} // closed: answer; open: hold every POST
	down   bool          // answer 503
	got    chan struct{}
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{gate: make(chan struct{}), got: make(chan struct{}, 64)}
	close(h.gate)
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		gate, down := h.gate, h.down
		h.mu.Unlock()
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		if down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.sigs = append(h.sigs, r.Header.Get(approvals.SignatureHeader))
		h.mu.Unlock()
		h.got <- struct{}{}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) hold() {
	h.mu.Lock()
	h.gate = make(chan struct{})
	h.mu.Unlock()
}

func (h *hookServer) release() {
	h.mu.Lock()
	close(h.gate)
	h.mu.Unlock()
}

func (h *hookServer) setDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

func (h *hookServer) received() ([][]byte, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.bodies...), append([]string(nil), h.sigs...)
}

// waitHooks waits until n webhook bodies arrived.
func (h *hookServer) waitHooks(t *testing.T, n int) [][]byte {
	t.Helper()
	deadline := time.After(rtWait + 20*time.Second)
	for {
		if b, _ := h.received(); len(b) >= n {
			return b
		}
		select {
		case <-h.got:
		case <-deadline:
			b, _ := h.received()
			t.Fatalf("%d webhook posts, want %d", len(b), n)
		}
	}
}

// newNotifyGW is a gateway whose agent a1 may run `git push origin main` and `git push origin ?` (`git push *` would approve `git push --exec=…`) and `git status` by rule and is
// told of every `git push*` on every delivery.
func newNotifyGW(t *testing.T, hook *hookServer) *routesGW {
	return newChatGW(t, func(cfg *config.Config) {
		cfg.Policy.Rules = []config.Rule{{Capability: "code:exec", Target: "git push origin main", Action: "approve"}, {Capability: "code:exec", Target: "git push origin ?", Action: "approve"},
			{Capability: "code:exec", Target: "git status", Action: "approve"}}
		cfg.Policy.Notify = []config.Notify{{NotifyPattern: policy.NotifyPattern{Capability: "code:exec", Target: "git push*",
			Deliveries: []string{"log", "web", "telegram", "slack", "webhook"}, WebhookURL: hook.URL + "/notify"},
			WebhookSecretEnv: "NOTIFY_HOOK_SECRET", WebhookSecret: hookSecret}}
	})
}

// askNow posts a request as a1 and returns the answer.
func (g *routesGW) askNow(capability, target string) approvals.Request {
	g.t.Helper()
	st, b := g.call("POST", "/v1/requests?wait=60s", rtAgentToken, map[string]any{
		"capability": capability, "target": target, "intent": "push", "call_id": "sess-1/" + target})
	var r approvals.Request
	if err := json.Unmarshal(b, &r); err != nil || st >= 300 {
		g.t.Fatalf("ask %s %q: %d %s", capability, target, st, b)
	}
	return r
}

// tgNotifications are the bot's messages that name target.
func (g *routesGW) tgNotifications(target string) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range g.tg.BotMessages() {
		if strings.Contains(m.Text, target) {
			out = append(out, m)
		}
	}
	return out
}

func (g *routesGW) slackNotifications(target string) []slacktest.Call {
	var out []slacktest.Call
	for _, c := range g.sl.History() {
		if c.Method == "chat.postMessage" && strings.Contains(c.Form.Get("text"), target) {
			out = append(out, c)
		}
	}
	return out
}

func (g *routesGW) notifiedRows(t *testing.T) map[string]int {
	t.Helper()
	rows, err := g.app.Service.DB().QueryContext(context.Background(),
		`SELECT detail FROM audit WHERE event = $1`, storage.AuditNotified)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var detail string
		if err := rows.Scan(&detail); err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		_ = json.Unmarshal([]byte(detail), &d)
		out[d["delivery"].(string)]++
	}
	return out
}

func (g *routesGW) queuedNotifications(t *testing.T) int {
	t.Helper()
	var n int
	if err := g.app.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM notifications`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNotify_GitPush: an allowed `git push` that matches a notify pattern
// is answered while Telegram hangs and the webhook holds (the decision
// never waits on a delivery); then a plain message reaches Telegram and
// Slack, a signed webhook carries the payload, the admin stream gets
// command_notification, the log a line, and the audit a notified row per
// delivery. What matches no pattern, or is not allowed, tells nobody.
func TestNotify_GitPush(t *testing.T) {
	hook := newHookServer(t)
	g := newNotifyGW(t, hook)
	events := g.sseEvents()
	g.tg.Inject("sendMessage", telegramtest.Fault{Hang: true})
	hook.hold()

	const push = "git push origin main"
	r := g.askNow("code:exec", push)
	if r.Status != approvals.StatusAllowed || r.Reason != "approved by rule #1" {
		t.Fatalf("answer: %s (%s)", r.Status, r.Reason)
	}
	// The answer is here; neither delivery can have been made yet.
	if b, _ := hook.received(); len(b) != 0 || len(g.tgNotifications(push)) != 0 {
		t.Fatalf("a delivery was made before the answer")
	}
	if st := g.askNow("code:exec", "git status").Status; st != approvals.StatusAllowed {
		t.Fatalf("git status: %s", st)
	}
	if st, b := g.call("POST", "/v1/requests", rtAgentToken, map[string]any{"capability": "code:exec",
		"target": "make push"}); st != http.StatusAccepted {
		t.Fatalf("make push: %d %s", st, b)
	}

	g.tg.ClearFaults()
	hook.release()
	bodies := hook.waitHooks(t, 1)
	_, sigs := hook.received()
	if !approvals.VerifySignature([]byte(hookSecret), bodies[0], sigs[0]) {
		t.Errorf("webhook signature %q does not verify", sigs[0])
	}
	var got map[string]any
	if err := json.Unmarshal(bodies[0], &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"event": "command_notification", "request_id": r.ID, "agent": "a1", "capability": "code:exec",
		"target": push, "outcome": "allowed", "reason": "approved by rule #1", "session_id": "sess-1"}
	if len(got) != len(want) {
		t.Errorf("webhook payload %v, want exactly %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("webhook %s = %v, want %v", k, got[k], v)
		}
	}

	g.tg.WaitUntil(t, rtWait+10*time.Second, "the telegram notification", func() bool { return len(g.tgNotifications(push)) > 0 })
	m := g.tgNotifications(push)[0]
	if m.Keyboard != nil && len(m.Buttons()) > 0 || m.ReplyTo != 0 {
		t.Errorf("the notification has buttons or replies: %+v", m)
	}
	wantIn(t, "telegram notification", m.Text, "🔔 a1 ran code:exec "+push+" · approved by rule #1 · ")
	wantIn(t, "telegram notification HTML", m.HTML, "<code>"+push+"</code>")

	var ev [2]string
	for ev[0] != approvals.EventNotification {
		select {
		case ev = <-events:
		case <-time.After(rtWait):
			t.Fatal("no command_notification on the admin stream")
		}
	}
	wantIn(t, "SSE data", ev[1], `"request_id":"`+r.ID+`"`)

	deadline := time.Now().Add(rtWait)
	for g.queuedNotifications(t) > 0 || len(g.slackNotifications(push)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still queued: %d; slack posts %d", g.queuedNotifications(t), len(g.slackNotifications(push)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	sl := g.slackNotifications(push)[0]
	if sl.Form.Get("blocks") != "" {
		t.Errorf("the Slack notification has blocks: %s", sl.Form.Get("blocks"))
	}
	wantIn(t, "slack notification", sl.Form.Get("text"), "a1 ran code:exec "+push)
	if rows := g.notifiedRows(t); len(rows) != 5 || rows["telegram"] != 1 || rows["webhook"] != 1 || rows["slack"] != 1 ||
		rows["web"] != 1 || rows["log"] != 1 {
		t.Errorf("notified audit rows: %v", rows)
	}
	g.logMu.Lock()
	logs := g.logs.String()
	g.logMu.Unlock()
	wantIn(t, "log", logs, "msg=command_notification request_id="+r.ID)
	// Only the push was told, once each.
	if b, _ := hook.received(); len(b) != 1 || len(g.tgNotifications("git status")) != 0 || len(g.tgNotifications(push)) != 1 {
		t.Errorf("webhooks %d, telegram status %d, push %d", len(b), len(g.tgNotifications("git status")), len(g.tgNotifications(push)))
	}
}

// TestNotify_OutageDelaysNothingLosesNothing: with Telegram and the
// webhook down, allowed pushes are answered at once; their notifications
// wait, survive a restart, and arrive once each when both come back.
func TestNotify_OutageDelaysNothingLosesNothing(t *testing.T) {
	hook := newHookServer(t)
	hook.setDown(true)
	g := newNotifyGW(t, hook)
	g.tg.Inject("sendMessage", telegramtest.Fault{Status: 502})
	var ids []string
	for _, target := range []string{"git push origin a", "git push origin b", "git push origin c"} {
		r := g.askNow("code:exec", target)
		if r.Status != approvals.StatusAllowed {
			t.Fatalf("%s: %s", target, r.Status)
		}
		ids = append(ids, r.ID)
	}
	// The failures were seen (and retried) before the restart.
	g.tg.WaitFor(t, rtWait, "a failed notification", func(c telegramtest.Call) bool {
		return c.Method == "sendMessage" && c.Status == 502
	})
	g.restart()
	if r := g.askNow("code:exec", "git push origin d"); r.Status != approvals.StatusAllowed {
		t.Fatalf("after restart: %s", r.Status)
	} else {
		ids = append(ids, r.ID)
	}
	g.tg.ClearFaults()
	hook.setDown(false)
	bodies := hook.waitHooks(t, 4)
	seen := map[string]int{}
	for _, b := range bodies {
		var p approvals.NotificationBody
		_ = json.Unmarshal(b, &p)
		seen[p.RequestID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("request %s: %d webhook posts, want 1 (%v)", id, seen[id], seen)
		}
	}
	g.tg.WaitUntil(t, rtWait+10*time.Second, "every telegram notification", func() bool {
		return len(g.tgNotifications("git push origin")) >= 4
	})
	deadline := time.Now().Add(rtWait)
	for g.queuedNotifications(t) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still queued: %d", g.queuedNotifications(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, target := range []string{"a", "b", "c", "d"} {
		if n := len(g.tgNotifications("git push origin " + target)); n != 1 {
			t.Errorf("push %s: %d telegram messages, want 1", target, n)
		}
	}
	if rows := g.notifiedRows(t); rows["telegram"] != 4 || rows["webhook"] != 4 || rows["log"] != 4 {
		t.Errorf("notified audit rows: %v", rows)
	}
}
