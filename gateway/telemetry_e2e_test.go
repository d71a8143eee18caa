package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
	"github.com/metnos/gateway/telemetry"
	"github.com/metnos/gateway/telemetry/otlptest"
)

// The agent's own trace, as it sends it in a W3C traceparent.
const (
	otTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	otSpanID  = "00f067aa0ba902b7"
	// otMarker is in every value the agent sends (target, argument,
	// intent, summary, context): no span, attribute or event may hold it.
	otMarker = "SECRET-MARKER-7f3a9c"
	otToken  = "agent-token-telemetry-0123456"
)

// TestTelemetry_SpanTree runs a gateway that exports to an in-process OTLP
// receiver: an agent asks with its traceparent, a person allows on the
// fake Telegram, the callback is delivered. The request's whole life is
// one trace, the agent's, with the spans in their places; nothing the
// agent sent as a value, and no secret, reaches the collector.
func TestTelemetry_SpanTree(t *testing.T) {
	rcv := otlptest.New()
	defer rcv.Close()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	defer func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	}()
	tel, err := telemetry.New(context.Background(), telemetry.Config{Endpoint: rcv.URL},
		func(string) string { return "" }, log)
	if err != nil || tel == nil {
		t.Fatalf("telemetry.New = %v, %v", tel, err)
	}
	defer tel.Shutdown(context.Background())

	var cbMu sync.Mutex
	var cbParents []string
	called := make(chan struct{}, 8)
	cbs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cbMu.Lock()
		cbParents = append(cbParents, r.Header.Get("traceparent"))
		cbMu.Unlock()
		called <- struct{}{}
	}))
	defer cbs.Close()

	tg := telegramtest.New(t, telegramtest.Options{})
	defer tg.Close()
	a := gatewaytest.Agent("a1", otToken, false)
	a.Notify, a.Callbacks = []string{"telegram"}, []string{"http://127.0.0.1:*/approve"}
	cfg := gatewaytest.Config(t, a)
	if err := cfg.AddSections(telegram.Section); err != nil {
		panic(err)
	}
	*telegram.Of(cfg) = telegram.Config{TokenEnv: "TELEGRAM_BOT_TOKEN", Token: telegramtest.DefaultToken, ChatID: rtChat,
		APIEndpoint: tg.Endpoint(), Chat: messenger.Chat[int64]{Approvers: []int64{rtRoberto.ID}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g := gatewaytest.Start(t, cfg, gateway.AppOptions{Logger: log, Telemetry: tel,
		Messengers: []messenger.Factory{telegram.Factory(telegram.Options{Config: *telegram.Of(cfg), Logger: log,
			Location: time.UTC, PollTimeout: 5 * time.Second, CallTimeout: 2 * time.Second})}})

	body, _ := json.Marshal(map[string]any{
		"capability": "fs:write", "target": "/tmp/deploy-" + otMarker + ".txt", "intent": "deploy " + otMarker,
		"summary": "deploy " + otMarker, "args": map[string]any{"key": otMarker}, "context": map[string]any{"note": otMarker},
		"callback_url": cbs.URL + "/approve",
	})
	req, _ := http.NewRequest("POST", g.URL+"/v1/requests?wait=60s", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+otToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+otTraceID+"-"+otSpanID+"-01")
	answered := make(chan map[string]any, 1)
	go func() {
		var out map[string]any
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
		}
		answered <- out
	}()

	var msg telegramtest.Message
	tg.WaitUntil(t, rtWait, "the card's message", func() bool {
		ms := tg.BotMessages()
		if len(ms) > 0 {
			msg = ms[0]
		}
		return len(ms) > 0 && len(msg.Buttons()) > 0
	})
	tg.PressButton(t, rtRoberto, msg.ChatID, msg.ID, "Allow once")
	select {
	case out := <-answered:
		if out["status"] != "allowed" {
			t.Fatalf("the agent's answer = %v, want allowed", out)
		}
	case <-time.After(rtWait + 20*time.Second):
		t.Fatal("no answer to the agent")
	}
	tg.WaitFor(t, rtWait, "the card's edit", func(c telegramtest.Call) bool { return strings.HasPrefix(c.Method, "edit") })
	select {
	case <-called:
	case <-time.After(rtWait + 20*time.Second):
		t.Fatal("no callback")
	}
	g.Stop() // waits for the callback's end, and the card dispatchers
	if err := tel.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := map[string]otlptest.Span{}
	for _, s := range rcv.Spans() {
		if s.TraceID != otTraceID {
			t.Errorf("span %s is in trace %s, not the agent's", s.Name, s.TraceID)
		}
		if _, dup := spans[s.Name]; dup && s.Name != "card.update" {
			t.Errorf("two spans named %s", s.Name)
		}
		spans[s.Name] = s
	}
	root := spans["request"]
	if root.ParentID != otSpanID || root.Kind != "SPAN_KIND_SERVER" || root.Attrs["gateway.agent"] != "a1" ||
		root.Attrs["gateway.capability"] != "fs:write" || root.Attrs["gateway.request_id"] == "" {
		t.Fatalf("request span = %+v, want a server span under the agent's %s, naming a1, fs:write and the request", root, otSpanID)
	}
	// Each span and its parent.
	for name, parent := range map[string]string{
		"validate": "request", "policy": "request", "store": "request",
		"policy.grants": "policy", "vaglio": "policy",
		"card.post": "request", "card.update": "request", "decision": "request", "wait": "request", "callback": "request",
	} {
		s, ok := spans[name]
		if !ok {
			t.Errorf("no %s span; got %v", name, names(spans))
			continue
		}
		if p := spans[parent]; s.ParentID != p.SpanID {
			t.Errorf("%s's parent is %s, want %s (%s)", name, s.ParentID, parent, p.SpanID)
		}
	}
	if s := spans["vaglio"]; s.Attrs["gateway.judge.kind"] != "rule-based-v1" || s.Attrs["gateway.judge.score"] == "" {
		t.Errorf("vaglio attributes %v, want the rule-based judge's kind and score", s.Attrs)
	}
	if s := spans["card.post"]; s.Attrs["gateway.messenger"] != "telegram" {
		t.Errorf("card.post attributes %v, want messenger telegram", s.Attrs)
	}
	if s := spans["decision"]; s.Attrs["gateway.decision"] != "allow_once" || s.Attrs["gateway.decided_by_channel"] != "telegram" ||
		s.Attrs["gateway.status"] != "allowed" {
		t.Errorf("decision attributes %v", s.Attrs)
	}
	if s := spans["wait"]; s.Attrs["gateway.status"] != "allowed" || !s.Start.Before(spans["decision"].End) {
		t.Errorf("wait span %+v", s)
	}
	layers := map[string]bool{}
	for _, l := range strings.Fields(spans["policy"].Attrs["gateway.layers"]) {
		layer, _, _ := strings.Cut(l, ":")
		layers[layer] = true
	}
	for _, l := range []string{"profile", "table", "rules", "grants", "combine", "vaglio"} {
		if !layers[l] {
			t.Errorf("the policy span's gateway.layers %q does not name layer %s", spans["policy"].Attrs["gateway.layers"], l)
		}
	}
	cbMu.Lock()
	if len(cbParents) != 1 || !strings.Contains(cbParents[0], otTraceID) || !strings.Contains(cbParents[0], spans["callback"].SpanID) {
		t.Errorf("callback traceparents %q, want the callback span's", cbParents)
	}
	cbMu.Unlock()
	for _, secret := range []string{otMarker, otToken, telegramtest.DefaultToken} {
		if rcv.Contains([]byte(secret)) {
			t.Errorf("the collector received %q", secret)
		}
	}
}

func names(m map[string]otlptest.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
