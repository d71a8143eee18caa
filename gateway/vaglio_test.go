package gateway_test

import (
	"net/http"
	"testing"

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
