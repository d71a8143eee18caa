package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/metnos/gateway/client"
)

// postAgentHook posts one raw event to POST /v1/hooks/NAME and returns the
// answer's JSON object.
func postAgentHook(t *testing.T, url, name string, event map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(event)
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/hooks/"+name, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+hookAgentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	return out
}

func copilotPre(session, tool string, args map[string]any) map[string]any {
	return map[string]any{"sessionId": session, "timestamp": 1, "cwd": "/home/r/proj", "toolName": tool, "toolArgs": args}
}

func copilotPerm(session, tool string, input map[string]any) map[string]any {
	return map[string]any{"hookName": "permissionRequest", "sessionId": session, "timestamp": 2, "cwd": "/home/r/proj",
		"toolName": tool, "toolInput": input, "permissionSuggestions": []any{}}
}

// TestCopilotHook_OneCallOneDecision: Copilot CLI's permissionRequest for
// the write its preToolUse asked about is answered from that request,
// with no second card; it is used once, only for the same session and
// path, and a denied first event is never turned into an allow.
func TestCopilotHook_OneCallOneDecision(t *testing.T) {
	g := startHookGateway(t, nil)
	ev := g.events(t)

	// Allowed once by a person: the follow-up is allowed without a card.
	done := make(chan map[string]any, 1)
	go func() {
		done <- postAgentHook(t, g.url, "copilot", copilotPre("s1", "create", map[string]any{"path": "a.txt", "file_text": "x"}))
	}()
	e := hookRequired(t, ev)
	if e.Capability != "fs:write" || e.Target != "/home/r/proj/a.txt" {
		t.Fatalf("asked about %s %s", e.Capability, e.Target)
	}
	if _, err := g.admin.Decide(t.Context(), e.ID, client.AllowOnce); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got["permissionDecision"] != "allow" {
		t.Fatalf("preToolUse answer %v", got)
	}
	perm := copilotPerm("s1", "edit", map[string]any{"file_path": "/home/r/proj/a.txt", "diff": "+x"})
	if got := postAgentHook(t, g.url, "copilot", perm); got["behavior"] != "allow" {
		t.Fatalf("permissionRequest answer %v, want allow from the first request", got)
	}

	// Used once: the same permissionRequest again is a request of its own.
	go func() { done <- postAgentHook(t, g.url, "copilot", perm) }()
	e2 := hookRequired(t, ev)
	if e2.ID == e.ID {
		t.Fatal("the same request again")
	}
	if _, err := g.admin.Decide(t.Context(), e2.ID, client.Deny); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got["behavior"] != "deny" {
		t.Fatalf("second permissionRequest answer %v", got)
	}

	// Denied first: the follow-up is denied too, never asked again.
	go func() {
		done <- postAgentHook(t, g.url, "copilot", copilotPre("s2", "create", map[string]any{"path": "b.txt"}))
	}()
	e3 := hookRequired(t, ev)
	if _, err := g.admin.Decide(t.Context(), e3.ID, client.Deny); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got["permissionDecision"] != "deny" {
		t.Fatalf("preToolUse answer %v", got)
	}
	if got := postAgentHook(t, g.url, "copilot", copilotPerm("s2", "edit", map[string]any{"file_path": "/home/r/proj/b.txt"})); got["behavior"] != "deny" {
		t.Fatalf("permissionRequest after a deny: %v", got)
	}

	// Another session, or another path, is not the same call.
	go func() {
		done <- postAgentHook(t, g.url, "copilot", copilotPre("s3", "create", map[string]any{"path": "c.txt"}))
	}()
	e4 := hookRequired(t, ev)
	if _, err := g.admin.Decide(t.Context(), e4.ID, client.AllowOnce); err != nil {
		t.Fatal(err)
	}
	<-done
	for _, p := range []map[string]any{
		copilotPerm("s4", "edit", map[string]any{"file_path": "/home/r/proj/c.txt"}),
		copilotPerm("s3", "edit", map[string]any{"file_path": "/home/r/proj/other.txt"}),
	} {
		go func() { done <- postAgentHook(t, g.url, "copilot", p) }()
		e5 := hookRequired(t, ev)
		if _, err := g.admin.Decide(t.Context(), e5.ID, client.Deny); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got["behavior"] != "deny" {
			t.Fatalf("unpaired permissionRequest %v: %v", p, got)
		}
	}
}

// TestCopilotHook_NeverAsk: what would be ask (unknown tool, a bad event)
// is a deny Copilot obeys, in both events' shapes.
func TestCopilotHook_NeverAsk(t *testing.T) {
	g := startHookGateway(t, nil)
	if got := postAgentHook(t, g.url, "copilot", copilotPre("s", "sql", map[string]any{"query": "x"})); got["permissionDecision"] != "deny" {
		t.Fatalf("unknown tool: %v", got)
	}
	if got := postAgentHook(t, g.url, "copilot", copilotPerm("s", "bash", map[string]any{})); got["behavior"] != "deny" {
		t.Fatalf("bad event: %v", got)
	}
}

// TestQwenHook_OneCallOneDecision: Qwen Code's PreToolUse after the
// PermissionRequest of the same call is answered from its request.
func TestQwenHook_OneCallOneDecision(t *testing.T) {
	g := startHookGateway(t, nil)
	ev := g.events(t)
	event := func(name string) map[string]any {
		return map[string]any{"session_id": "q1", "cwd": "/home/r/proj", "hook_event_name": name, "permission_mode": "default",
			"tool_name": "write_file", "tool_input": map[string]any{"file_path": "/home/r/proj/n.txt", "content": "x"}}
	}
	done := make(chan map[string]any, 1)
	go func() { done <- postAgentHook(t, g.url, "qwen", event("PermissionRequest")) }()
	e := hookRequired(t, ev)
	if _, err := g.admin.Decide(t.Context(), e.ID, client.AllowOnce); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if d, _ := got["hookSpecificOutput"].(map[string]any)["decision"].(map[string]any); d["behavior"] != "allow" {
		t.Fatalf("PermissionRequest answer %v", got)
	}
	pre := event("PreToolUse")
	pre["tool_use_id"] = "toolu_9"
	got = postAgentHook(t, g.url, "qwen", pre)
	if h, _ := got["hookSpecificOutput"].(map[string]any); h["permissionDecision"] != "allow" {
		t.Fatalf("PreToolUse answer %v, want allow from the PermissionRequest's request", got)
	}
}
