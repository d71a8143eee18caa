package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwn_AgentsCannotTouchTheGateway: the running gateway's database (and
// -wal, -shm), token file and decision logs are forbidden paths for every
// agent, at Full, in targets, args and shell commands; and a network:http
// request for the gateway's own address is denied by the guard, however
// loopback is spelled. Another port on loopback is another program.
func TestOwn_AgentsCannotTouchTheGateway(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{})
	u, _ := url.Parse(g.URL)
	port := u.Port()
	check := func(body jsonBody) (outcome, by, reason string) {
		t.Helper()
		body["autonomy"] = "Full"
		r := g.want(t, http.StatusOK, "POST", "/v1/check", tokAdmin, body)
		var ans struct {
			Outcome   string  `json:"outcome"`
			Reason    string  `json:"reason"`
			BlockedBy *string `json:"blocked_by"`
		}
		if err := json.Unmarshal(r.Body, &ans); err != nil {
			t.Fatal(err)
		}
		if ans.BlockedBy != nil {
			by = *ans.BlockedBy
		}
		return ans.Outcome, by, ans.Reason
	}
	dir := filepath.Dir(g.Path)
	for _, body := range []jsonBody{
		{"capability": "fs:read", "target": g.Path},
		{"capability": "fs:read", "target": g.Path + "-wal"},
		{"capability": "fs:write", "target": g.Path + "-shm"},
		{"capability": "fs:read", "target": filepath.Join(dir, "agent-token")},
		{"capability": "fs:read", "target": filepath.Join(dir, "vaglio", "2026-11.jsonl")},
		{"capability": "fs:read", "target": "/tmp/notes.txt", "args": jsonBody{"file_path": g.Path}},
		{"capability": "code:exec", "target": "sqlite3 " + g.Path + " 'select * from grants'"},
		{"capability": "network:http", "target": g.URL + "/v1/grants"},
		{"capability": "network:http", "target": "http://0x7f.1:" + port + "/v1/grants"},
		{"capability": "network:http", "target": "http:localhost:" + port},
		{"capability": "network:http", "target": "[::ffff:127.0.0.1]:" + port},
		{"capability": "network:http", "target": "2130706433:" + port},
		{"capability": "network:http", "target": "localhost"},
	} {
		if outcome, by, reason := check(body); outcome != "denied" || by != "guard" || !strings.Contains(reason, "gateway") {
			t.Errorf("%v: %s by %q (%s), want denied by the guard naming the gateway", body, outcome, by, reason)
		}
	}
	if outcome, by, reason := check(jsonBody{"capability": "network:http", "target": "http://127.0.0.1:1/"}); outcome == "denied" {
		t.Errorf("another port on loopback: %s by %s (%s)", outcome, by, reason)
	}
}
