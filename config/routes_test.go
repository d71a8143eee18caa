package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// routeBase is valid plus an admin agent, for the route cases.
const routeBase = valid + `
[[agents]]
id = "ops"
token_env = "OTHER_AGENT_TOKEN"
admin = true
`

func TestLoad_Routes(t *testing.T) {
	src := routeBase + `
[[approvals.routes]]
capability = "mail:send"
agent = "metnos"
critical = true
notify = ["chat", "web"]
approvers = ["chat:u5", "chat:u6", "chat:g-ops", "web:owner", "agent:ops"]
quorum = 2
escalate_after = "5m"
escalate_to = ["chat"]
remind_every = "10m"

[[approvals.routes]]
capability = "fs:*"
step_up = "passkey"
`
	cfg, err := load(writeFile(t, src), true, env(baseEnv(t)))
	if err != nil {
		t.Fatalf("valid routes refused: %v", err)
	}
	yes := true
	want := []Route{
		{Capability: "mail:send", Agent: "metnos", Critical: &yes, Notify: []string{"chat", "web"},
			Approvers: []string{"chat:u5", "chat:u6", "chat:g-ops", "web:owner", "agent:ops"},
			Quorum:    2, EscalateAfter: Duration(5 * time.Minute), EscalateTo: []string{"chat"}, RemindEvery: Duration(10 * time.Minute)},
		{Capability: "fs:*", Quorum: 1, StepUp: StepUpPasskey},
	}
	if !reflect.DeepEqual(cfg.Approvals.Routes, want) {
		t.Errorf("routes:\n got %+v\nwant %+v", cfg.Approvals.Routes, want)
	}
	red := cfg.Redacted()
	red.Approvals.Routes[0].Approvers[0] = "changed"
	if cfg.Approvals.Routes[0].Approvers[0] != "chat:u5" {
		t.Error("Redacted shares the routes' slices")
	}
}

func TestLoad_RoutesRefused(t *testing.T) {
	route := func(body string) string { return routeBase + "\n[[approvals.routes]]\n" + body }
	tests := []struct {
		name string
		toml string
		want string
	}{
		{"unknown key", route("capability = \"*\"\nqourum = 2\n"), `approvals.routes[0].qourum: unknown key (did you mean quorum?)`},
		{"no capability", route("quorum = 1\n"), "approvals.routes[0].capability: required"},
		{"unknown capability", route("capability = \"mail:sned\"\n"), `approvals.routes[0].capability: unknown capability "mail:sned"`},
		{"unknown agent", route("capability = \"*\"\nagent = \"nobody\"\n"), `approvals.routes[0].agent: no agent "nobody"`},
		{"bad notify", route("capability = \"*\"\nnotify = [\"matrix\"]\n"), `approvals.routes[0].notify[0]: unknown channel "matrix"`},
		{"twice notify", route("capability = \"*\"\nnotify = [\"web\", \"web\"]\n"), `approvals.routes[0].notify[1]: "web" is listed twice`},
		{"approver no channel", route("capability = \"*\"\napprovers = [\"roberto\"]\n"), `approvals.routes[0].approvers[0]: "roberto" is not "channel:user"`},
		{"approver unknown channel", route("capability = \"*\"\napprovers = [\"matrix:1\"]\n"), `approvals.routes[0].approvers[0]: unknown channel "matrix"`},
		{"room not configured", route("capability = \"*\"\nnotify = [\"room\"]\n"), `approvals.routes[0].notify[0]: room is not configured (set room.token_env)`},
		{"approver bad chat id", route("capability = \"*\"\napprovers = [\"chat:Roberto\"]\n"), `approvals.routes[0].approvers[0]: bad chat user "Roberto"`},
		{"approver unknown channel lists them", route("capability = \"*\"\napprovers = [\"matrix:1\"]\n"), `(want chat, room, web or agent)`},
		{"notify unknown channel lists them", route("capability = \"*\"\nnotify = [\"matrix\"]\n"), `(want web, chat or room)`},
		{"approver not channel:user lists them", route("capability = \"*\"\napprovers = [\"roberto\"]\n"), `(e.g. "chat:u1", "room:u1", "web:owner", "agent:ops")`},
		{"group lifts the count", route("capability = \"*\"\napprovers = [\"chat:u1\"]\nquorum = 2\n"), "approvals.routes[0].quorum: 2 can never be reached"},
		{"digest without a messenger", "[approvals]\ndigest = \"0 18 * * *\"\n", "approvals.digest: no messenger to post the digest on (configure [chat] or [room])"},
		{"approver non-admin agent", route("capability = \"*\"\napprovers = [\"agent:metnos\"]\n"), `approvals.routes[0].approvers[0]: agent "metnos" is not an admin agent`},
		{"approver unknown agent", route("capability = \"*\"\napprovers = [\"agent:ghost\"]\n"), `approvals.routes[0].approvers[0]: no agent "ghost"`},
		{"approver twice", route("capability = \"*\"\napprovers = [\"web:owner\", \"web:owner\"]\n"), `approvals.routes[0].approvers[1]: "web:owner" is listed twice`},
		{"quorum zero", route("capability = \"*\"\nquorum = 0\n"), "approvals.routes[0].quorum: must be at least 1"},
		{"quorum unreachable", route("capability = \"*\"\napprovers = [\"web:owner\"]\nquorum = 2\n"), "approvals.routes[0].quorum: 2 can never be reached"},
		{"escalate too soon", route("capability = \"*\"\nescalate_after = \"500ms\"\nescalate_to = [\"chat\"]\n"), "approvals.routes[0].escalate_after: must be at least 1s"},
		{"escalate nowhere", route("capability = \"*\"\nescalate_after = \"5m\"\n"), "approvals.routes[0].escalate_to: required when escalate_after is set"},
		{"escalate_to without after", route("capability = \"*\"\nescalate_to = [\"chat\"]\n"), "approvals.routes[0].escalate_after: must be at least 1s"},
		{"escalate bad duration", route("capability = \"*\"\nescalate_after = \"soon\"\nescalate_to = [\"chat\"]\n"), `approvals.routes[0].escalate_after: bad duration "soon"`},
		{"remind too often", route("capability = \"*\"\nremind_every = \"10ms\"\n"), "approvals.routes[0].remind_every: must be at least 1s"},
		{"step_up unknown", route("capability = \"*\"\nstep_up = \"yubikey\"\n"), `approvals.routes[0].step_up: unknown value "yubikey"`},
		{"step_up no web approver", route("capability = \"*\"\nstep_up = \"passkey\"\napprovers = [\"chat:u5\", \"chat:u6\"]\n"),
			`approvals.routes[0].step_up: "passkey" needs a web user among the approvers`},
		{"step_up quorum beyond web", route("capability = \"*\"\nstep_up = \"passkey\"\nquorum = 2\napprovers = [\"chat:u5\", \"web:owner\"]\n"),
			`approvals.routes[0].step_up: "passkey" with quorum 2 needs 2 web users among the approvers, only 1 listed`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(writeFile(t, tc.toml), true, env(baseEnv(t)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	t.Run("room approver without room", func(t *testing.T) {
		src := "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"room:u1\"]\nnotify = [\"chat\"]\n"
		_, err := load(writeFile(t, src), true, env(baseEnv(t)))
		for _, want := range []string{"approvals.routes[0].approvers[0]: room is not configured", "approvals.routes[0].notify[0]: chat is not configured"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want %q", err, want)
			}
		}
	})
}
