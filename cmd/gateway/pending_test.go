package main

import (
	"context"
	"strings"
	"testing"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
)

// TestPendingDecide: `gateway pending` lists what waits, with ids, for an
// admin; `gateway decide ID allow_once|deny` decides as that admin, with
// the admin API's checks: not for a non-admin token, not twice, never an
// allow on a step-up route, never Allow always.
func TestPendingDecide(t *testing.T) {
	g := startLive(t, func(c *config.Config) {
		c.Web.Users = []config.WebUser{{Name: "owner"}}
		c.Approvals.Routes = []config.Route{{Capability: "code:exec", Approvers: []string{"web:owner", "agent:admin"},
			StepUp: config.StepUpPasskey, Quorum: 1}}
	})
	agent := client.New(g.URL, liveAgentToken)
	ask := func(capability, target string) client.Request {
		t.Helper()
		r, err := agent.Request(context.Background(), client.Req{Capability: capability, Target: target, Intent: "work",
			Executor: "tool"}, 0)
		if err != nil || r.Status != client.StatusPending {
			t.Fatalf("ask: %v %+v", err, r)
		}
		return r
	}
	w, x := ask("fs:write", "/srv/app/report.txt"), ask("code:exec", "make deploy")
	admin := agentEnv(t, g.URL, "GATEWAY_TOKEN", liveAdminToken)

	r := runCLI(context.Background(), admin, "", "pending")
	if r.code != exitOK || !strings.Contains(r.stdout, w.ID+"  a1  fs:write  /srv/app/report.txt  expires in ") ||
		!strings.Contains(r.stdout, x.ID+"  a1  code:exec  make deploy") || !strings.Contains(r.stdout, "step-up") {
		t.Fatalf("pending: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(context.Background(), agentEnv(t, g.URL), "", "pending"); r.code != exitFail || !strings.Contains(r.stderr, "forbidden") {
		t.Fatalf("pending with a non-admin token: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(context.Background(), admin, "", "decide", w.ID, "allow_always"); r.code != exitUsage {
		t.Fatalf("decide allow_always: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(context.Background(), agentEnv(t, g.URL), "", "decide", w.ID, "allow_once"); r.code != exitFail {
		t.Fatalf("decide with a non-admin token: exit %d %q", r.code, r.stderr)
	}
	r = runCLI(context.Background(), admin, "", "decide", w.ID, "allow_once")
	if r.code != exitOK || !strings.Contains(r.stdout, w.ID+" allowed (decided by api:admin)") {
		t.Fatalf("decide: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(context.Background(), admin, "", "decide", w.ID, "deny"); r.code != exitFail || !strings.Contains(r.stderr, "already") {
		t.Fatalf("decide twice: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(context.Background(), admin, "", "decide", x.ID, "allow_once"); r.code != exitFail {
		t.Fatalf("decide allow_once on a step-up route: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if got, _ := agent.Get(context.Background(), x.ID, 0); got.Status != client.StatusPending {
		t.Fatalf("the step-up request after the CLI's allow: %s", got.Status)
	}
	r = runCLI(context.Background(), admin, "", "pending", "--json")
	if r.code != exitOK || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, `"id":"`+x.ID+`"`) {
		t.Fatalf("pending --json: %q", r.stdout)
	}
}
