package gateway

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/policy"
)

// A hook's tool call becomes its submission field by field, over the
// agent's defaults, with no HTTP body in between.
func TestCallSubmission(t *testing.T) {
	a := &Agent{Agent: config.NewAgent("dev")}
	a.Home = "/home/dev"
	a.Child = &policy.Token{ID: "tok1", Name: "ci"}
	c := hooks.Call{CallID: "s1/t1", SessionID: "s1", Capability: "fs:read", Target: "/etc/hosts", Intent: "Read /etc/hosts",
		Executor: "codex", Summary: "Codex · Read", Args: map[string]any{"path": "/etc/hosts"}, Ask: "two paths", Home: "/home/other"}
	sub, err := callSubmission(a, c, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if sub.CallID != c.CallID || sub.SessionID != c.SessionID || sub.Capability != c.Capability || sub.Target != c.Target ||
		sub.Intent != c.Intent || sub.Executor != c.Executor || sub.Summary != c.Summary || sub.Args["path"] != "/etc/hosts" ||
		sub.Ask != c.Ask || sub.Timeout != 90*time.Second {
		t.Errorf("the call's fields: %+v", sub)
	}
	if sub.Channel != "web" || sub.SenderID != "owner" || sub.Profile.Agent != "dev" || sub.MaxPending != a.MaxPending ||
		sub.TokenID != "tok1" || sub.TokenName != "ci" || len(sub.Notify) != 1 {
		t.Errorf("the agent's defaults: %+v", sub)
	}
	if sub.Profile.Home != "/home/other" || a.Home != "/home/dev" {
		t.Errorf("home %q (agent's %q): the hook's environment replaces it for this call only", sub.Profile.Home, a.Home)
	}

	c.SessionID = "s1\n"
	var fe *policy.FieldError
	if _, err := callSubmission(a, c, time.Second); !errors.As(err, &fe) || fe.Field != "session_id" {
		t.Errorf("a session id with a newline: %v", err)
	}
	c.SessionID = strings.Repeat("s", 1<<10)
	if _, err := callSubmission(a, c, time.Second); !errors.As(err, &fe) || fe.Field != "session_id" {
		t.Errorf("a long session id: %v", err)
	}
}
