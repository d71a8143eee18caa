package hooks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
)

// codexAppTurn runs one turn in Codex's app server (what its IDE
// extension and desktop app drive) with the thread settings given, and
// returns the approval prompts Codex sent its client (each declined, as a
// person saying no would).
func codexAppTurn(t *testing.T, codex, proj string, env []string, thread map[string]any) (prompts []string) {
	t.Helper()
	return codexAppTurnAnswering(t, codex, proj, env, thread, func(string, json.RawMessage) any { return "decline" })
}

// codexAppTurnAnswering is codexAppTurn with each request Codex makes of
// its client answered with the decision answer gives.
func codexAppTurnAnswering(t *testing.T, codex, proj string, env []string, thread map[string]any,
	answer func(method string, params json.RawMessage) any) (prompts []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "app-server")
	cmd.Env, cmd.Dir = env, proj
	reap := agenttest.Contain(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cancel(); cmd.Wait(); reap() }()
	send := func(v any) {
		if _, err := io.WriteString(in, mustJSON(v)+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	// next reads messages until done says stop, answering every request
	// Codex makes of its client.
	next := func(done func(id int, method string, m map[string]json.RawMessage) bool) map[string]json.RawMessage {
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			var id int
			_ = json.Unmarshal(m["id"], &id)
			var method string
			_ = json.Unmarshal(m["method"], &method)
			if m["id"] != nil && method != "" {
				prompts = append(prompts, method)
				send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m["id"]), "result": map[string]any{"decision": answer(method, m["params"])}})
			}
			if done(id, method, m) {
				return m
			}
		}
		t.Fatalf("codex app-server stopped: %v", sc.Err())
		return nil
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"clientInfo": map[string]any{"name": "gateway-test", "version": "1"}}})
	next(func(id int, method string, _ map[string]json.RawMessage) bool { return id == 1 && method == "" })
	send(map[string]any{"jsonrpc": "2.0", "method": "initialized"})
	thread["cwd"] = proj
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "thread/start", "params": thread})
	m := next(func(id int, method string, _ map[string]json.RawMessage) bool { return id == 2 && method == "" })
	var started struct {
		Thread struct{ ID string } `json:"thread"`
	}
	if err := json.Unmarshal(m["result"], &started); err != nil || started.Thread.ID == "" {
		t.Fatalf("thread/start: %s", m["result"])
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "turn/start", "params": map[string]any{"threadId": started.Thread.ID,
		"input": []any{map[string]any{"type": "text", "text": "do the task"}}}})
	next(func(_ int, method string, _ map[string]json.RawMessage) bool { return method == "turn/completed" })
	return prompts
}
