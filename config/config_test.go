package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
)

// env is a fake environment: a map behind the getenv signature.
func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// writeFile puts a config in a temp dir and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Distinctive secret values: none may ever show up in an error or in Redacted.
var secrets = map[string]string{
	"METNOS_AGENT_TOKEN":    "agent-SECRET-0001-0123456789abcdef",
	"OTHER_AGENT_TOKEN":     "agent-SECRET-0002-0123456789abcdef",
	"CHAT_TOKEN":            "chat-SECRET-0003",
	"GATEWAY_ADMIN_TOKEN":   "admin-SECRET-0008-0123456789abcdef",
	"GATEWAY_DATABASE_URL":  "postgres://u:pw-SECRET-0009@db/gw",
	"PG_DSN":                "postgres://u:pw-SECRET-0010@db/gw",
	"NOTIFY_WEBHOOK_SECRET": "hook-SECRET-0011",
}

// baseEnv is HOME plus every secret.
func baseEnv(t *testing.T) map[string]string {
	m := map[string]string{"HOME": t.TempDir()}
	for k, v := range secrets {
		m[k] = v
	}
	return m
}

func TestLoad_DefaultsWithoutFile(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		name string
		path string
	}{
		{"missing default path", filepath.Join(home, "nope", "gateway.toml")},
		{"no path at all", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(tc.path, false, env(map[string]string{"HOME": home}))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := Config{
				Server:  Server{Listen: "127.0.0.1:8080"},
				Storage: Storage{Path: filepath.Join(home, ".local/state/metnos/gateway.db"), Driver: "sqlite"},
				Policy:  Policy{GrantTTL: Duration(2160 * time.Hour), StaleAfter: Duration(2160 * time.Hour)},
				Vaglio: Vaglio{JudgeThreshold: 0.30, LogDir: filepath.Join(home, ".local/share/metnos/vaglio"),
					JudgeKind: JudgeRuleBased, LLM: VaglioLLM{API: "openai", URL: "http://127.0.0.1:11434/v1", Model: "qwen3:8b",
						Timeout: Duration(5 * time.Second), MaxCallsPerDay: 5000, OnFailure: LLMOnFailureAsk}},
				Approvals: Approvals{Timeout: Duration(10 * time.Minute), PruneSchedule: "@hourly", Retention: Duration(8760 * time.Hour),
					AllowFor: []Duration{Duration(time.Hour)}, SessionTTL: Duration(12 * time.Hour)},
				Web: Web{Language: "en", Users: []WebUser{{Name: DefaultWebUser}}},
				Hooks: Hooks{
					"claude-code": hookDefault(), "codex": hookDefault(), "gemini": hookDefault(), "cursor": hookDefault(),
					"copilot": hookDefault(), "qwen": hookDefault(), "opencode": hookDefault(),
				},
				Log:       Log{Level: "info"},
				Telemetry: Telemetry{Protocol: TelemetryHTTP},
				File:      tc.path, // the default path looked for is the gateway's own, even when missing
			}
			if !reflect.DeepEqual(cfg, want) {
				t.Errorf("got  %+v\nwant %+v", cfg, want)
			}
			if len(cfg.Messengers()) != 0 {
				t.Errorf("messengers %v without registering any", cfg.Messengers())
			}
		})
	}
}

func TestDefault_Valid(t *testing.T) {
	cfg := Default()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Default().Validate: %v", err)
	}
	if len(cfg.Agents) != 0 {
		t.Errorf("Default has agents: %v", cfg.Agents)
	}
	// A generated local agent built in code carries its token without a token_env.
	a := NewAgent("local")
	a.Token, a.Admin = "gw_generated-0123456789abcdef", true
	cfg.Agents = append(cfg.Agents, a)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate with a code-built agent: %v", err)
	}
}

func TestLoad_ExplicitMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.toml")
	_, err := Load(path, true, env(map[string]string{"HOME": t.TempDir()}))
	if err == nil {
		t.Fatal("want an error")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %q is not fs.ErrNotExist", err)
	}
	if _, err := Load("", true, nil); err == nil {
		t.Error("explicit empty path accepted")
	}
}

func TestLoad_ExampleFile(t *testing.T) {
	e := baseEnv(t)
	cfg, err := Load("gateway.example.toml", true, env(e))
	if err != nil {
		t.Fatalf("example does not load: %v", err)
	}
	home := e["HOME"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", cfg.Server.Listen, "127.0.0.1:8080"},
		{"storage.path", cfg.Storage.Path, filepath.Join(home, ".local/state/metnos/gateway.db")},
		{"storage.driver", cfg.Storage.Driver, "sqlite"},
		{"grant_ttl", cfg.Policy.GrantTTL, Duration(2160 * time.Hour)},
		{"rules", len(cfg.Policy.Rules), 3},
		{"scoped rule", cfg.Policy.Rules[2], Rule{Capability: "fs:read", Target: "~/notes/**", Action: "approve", SenderID: "roberto", Agent: "metnos", Channel: "telegram"}},
		{"judge", cfg.Vaglio.JudgeThreshold, 0.30},
		{"log_dir", cfg.Vaglio.LogDir, filepath.Join(home, ".local/share/metnos/vaglio")},
		{"agents", len(cfg.Agents), 1},
		{"agent token", cfg.Agents[0].Token, secrets["METNOS_AGENT_TOKEN"]},
		{"agent autonomy", cfg.Agents[0].Autonomy, policy.Supervised},
		{"agent mode", cfg.Agents[0].Mode, policy.ModeAsk},
		{"agent rate", [2]any{cfg.Agents[0].RateCount, cfg.Agents[0].RatePer}, [2]any{60, time.Minute}},
		{"agent deny", cfg.Agents[0].DenyCapabilities, []string{"mail:send"}},
		{"agent permits", [2]bool{cfg.Agents[0].Profile().Permits("fs:read"), cfg.Agents[0].Profile().Permits("mail:send")}, [2]bool{true, false}},
		{"route approvers", cfg.Approvals.Routes[0].Approvers, []string{"web:owner", "web:ops"}},
		{"messengers", cfg.Messengers(), []string(nil)},
		{"hook tools", cfg.Hooks["claude-code"].Tools, map[string]string{"mcp__gmail__send": "mail:send"}},
		{"hook wait", cfg.Hooks["claude-code"].Wait, Duration(9 * time.Minute)},
		{"codex tools", cfg.Hooks["codex"].Tools, map[string]string{"mcp__gmail__send": "mail:send"}},
		{"gemini tools", cfg.Hooks["gemini"].Tools, map[string]string{"mcp_gmail_send": "mail:send"}},
		{"cursor tools", cfg.Hooks["cursor"].Tools, map[string]string{"MCP:gmail:send": "mail:send"}},
		{"copilot wait", cfg.Hooks["copilot"].Wait, Duration(9 * time.Minute)},
		{"qwen wait", cfg.Hooks["qwen"].Wait, Duration(9 * time.Minute)},
		{"opencode wait", cfg.Hooks["opencode"].Wait, Duration(9 * time.Minute)},
		{"cursor wait", cfg.Hooks["cursor"].Wait, Duration(9 * time.Minute)},
		{"log level", cfg.Log.Level, "info"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
}

// TestLoad_ExampleCoversEveryKey makes sure the example names every key the
// loader knows, so it stays the complete reference.
func TestLoad_ExampleCoversEveryKey(t *testing.T) {
	data, err := os.ReadFile("gateway.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for parent, names := range knownKeys(new(Config).fileView().Type()) {
		for _, name := range names {
			want = append(want, strings.TrimPrefix(parent+"."+name, "."))
		}
	}
	if len(want) < 40 {
		t.Fatalf("only %d known keys: %v", len(want), want)
	}
	text := string(data)
	for _, key := range want {
		last := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(text, "\n"+last+" =") && !strings.Contains(text, "["+key) {
			t.Errorf("example does not show %s", key)
		}
	}
}

// valid is a small complete config the bad cases below break one key at a time.
const valid = `
[[agents]]
id = "metnos"
token_env = "METNOS_AGENT_TOKEN"
notify = ["web", "chat"]

[chat]
token_env = "CHAT_TOKEN"
approvers = ["u1"]
`

func TestLoad_Valid(t *testing.T) {
	if _, err := load(writeFile(t, valid), true, env(baseEnv(t))); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
}

func TestLoad_Refused(t *testing.T) {
	tests := []struct {
		name  string
		toml  string
		unset []string // environment variables to clear
		want  []string // each must appear in the error
	}{
		{"syntax error has its line", "[server]\nlisten = \"x\"\nport = = 3\n", nil,
			[]string{"line 3, column", "syntax error"}},
		{"type mismatch names key", "[server]\nlisten = 12\n", nil,
			[]string{"server.listen: line 2: incompatible types"}},
		{"bad duration", "[policy]\ngrant_ttl = \"10x\"\n", nil,
			[]string{`policy.grant_ttl: bad duration "10x"`}},
		{"zero duration", "[policy]\nstale_after = \"0s\"\n", nil,
			[]string{"policy.stale_after: must be positive"}},
		{"timeout out of range", "[approvals]\ntimeout = \"2s\"\n", nil,
			[]string{"approvals.timeout:"}},
		{"bad retention", "[approvals]\nretention = \"1y\"\n", nil,
			[]string{`approvals.retention: bad duration "1y"`}},
		{"bad hook wait", "[hooks.claude_code]\nwait = \"soon\"\n", nil,
			[]string{`hooks.claude_code.wait: bad duration "soon"`}},
		{"bad cron", "[approvals]\nprune_schedule = \"every hour\"\n", nil,
			[]string{`approvals.prune_schedule: bad cron spec "every hour"`}},
		{"bad digest", "[approvals]\ndigest = \"at six\"\n", nil,
			[]string{`approvals.digest: bad cron spec "at six"`}},
		{"digest without a messenger", "[approvals]\ndigest = \"0 18 * * *\"\n", nil,
			[]string{"approvals.digest: no messenger to post the digest on"}},
		{"bad listen", "[server]\nlisten = \"localhost\"\n", nil,
			[]string{"server.listen:"}},
		{"unknown time zone", "[server]\ntimezone = \"Europe/Atlantis\"\n", nil,
			[]string{"server.timezone: unknown time zone \"Europe/Atlantis\""}},
		{"time zone as a path", "[server]\ntimezone = \"/etc/localtime\"\n", nil,
			[]string{"server.timezone: unknown time zone"}},
		{"unknown language", "[web]\nlanguage = \"fr\"\n", nil,
			[]string{"web.language: unknown language \"fr\" (want en or it)"}},
		{"bad driver", "[storage]\ndriver = \"mysql\"\n", nil,
			[]string{`storage.driver: unknown driver "mysql"`}},
		{"postgres without dsn", "[storage]\ndriver = \"postgres\"\n", []string{"GATEWAY_DATABASE_URL"},
			[]string{"storage.dsn_env: required"}},
		{"empty dsn var", "[storage]\ndriver = \"postgres\"\ndsn_env = \"EMPTY_DSN\"\n", nil,
			[]string{"storage.dsn_env: EMPTY_DSN is empty"}},
		{"judge out of range", "[vaglio]\njudge_threshold = 1.5\n", nil,
			[]string{"vaglio.judge_threshold:"}},
		{"judge NaN", "[vaglio]\njudge_threshold = nan\n", nil,
			[]string{"vaglio.judge_threshold:"}},

		{"rule bad action", "[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"*\"\naction = \"approve\"\n" +
			"[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"*\"\naction = \"block\"\n" +
			"[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"*\"\naction = \"alow\"\n", nil,
			[]string{`policy.rules[2].action: unknown action "alow" (want approve, require_approval or block)`}},
		{"rule missing action", "[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"*\"\n", nil,
			[]string{"policy.rules[0].action: required"}},
		{"rule unknown capability", "[[policy.rules]]\ncapability = \"fs:wirte\"\ntarget = \"*\"\naction = \"block\"\n", nil,
			[]string{`policy.rules[0].capability: unknown capability "fs:wirte"`}},
		{"rule unknown prefix", "[[policy.rules]]\ncapability = \"disk:*\"\ntarget = \"*\"\naction = \"block\"\n", nil,
			[]string{`policy.rules[0].capability: unknown capability "disk:*"`}},
		{"rule missing capability", "[[policy.rules]]\ntarget = \"*\"\naction = \"block\"\n", nil,
			[]string{"policy.rules[0].capability: required"}},
		{"rule missing target", "[[policy.rules]]\ncapability = \"fs:read\"\naction = \"block\"\n", nil,
			[]string{"policy.rules[0].target: required"}},
		{"rule bad glob", "[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"/a/[b\"\naction = \"block\"\n", nil,
			[]string{"policy.rules[0].target: bad glob"}},
		{"rule unknown agent", "[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"*\"\naction = \"block\"\nagent = \"nobody\"\n", nil,
			[]string{`policy.rules[0].agent: no agent "nobody"`}},
		{"approve * on code:exec", "[[policy.rules]]\ncapability = \"code:exec\"\ntarget = \"*\"\naction = \"approve\"\n", nil,
			[]string{"policy.rules[0].target:", "code:exec"}},
		{"approve ** on mail:send", "[[policy.rules]]\ncapability = \"mail:send\"\ntarget = \"**\"\naction = \"approve\"\n", nil,
			[]string{"policy.rules[0].target:", "mail:send"}},
		{"approve * via *", "[[policy.rules]]\ncapability = \"*\"\ntarget = \"*\"\naction = \"approve\"\n", nil,
			[]string{"policy.rules[0].target:", "code:exec"}},
		{"approve * via code:*", "[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"*\"\naction = \"approve\"\n" +
			"[[policy.rules]]\ncapability = \"code:*\"\ntarget = \"*\"\naction = \"approve\"\n", nil,
			[]string{"policy.rules[1].target:", "code:exec"}},
		{"approve * via mail:*", "[[policy.rules]]\ncapability = \"mail:*\"\ntarget = \"*\"\naction = \"approve\"\n", nil,
			[]string{"policy.rules[0].target:", "mail:send"}},

		{"agent relative workspace", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nworkspace = [\"~/src\", \"src/app\", \"/srv/*\", \"/\"]\n", nil,
			[]string{`agents[0].workspace[1]: "src/app" is not an absolute directory`, `agents[0].workspace[2]: "/srv/*" holds a wildcard`,
				`agents[0].workspace[3]: "/" is the whole file system`}},
		{"agent relative home", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nhome = \"home/a\"\n", nil,
			[]string{`agents[0].home: "home/a" is not an absolute directory`}},
		{"agent missing id", "[[agents]]\ntoken_env = \"METNOS_AGENT_TOKEN\"\n", nil,
			[]string{"agents[0].id: required"}},
		{"agent bad id", "[[agents]]\nid = \"Big Agent\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n", nil,
			[]string{`agents[0].id: bad id "Big Agent"`}},
		{"agent duplicate id", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n[[agents]]\nid = \"a\"\ntoken_env = \"OTHER_AGENT_TOKEN\"\n", nil,
			[]string{`agents[1].id: "a" is already agents[0].id`}},
		{"agent shared token", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n[[agents]]\nid = \"b\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n", nil,
			[]string{"agents[1].token_env: same token as agents[0]"}},
		{"agent missing token_env", "[[agents]]\nid = \"a\"\n", nil,
			[]string{"agents[0].token_env: required"}},
		{"agent empty token", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n", []string{"METNOS_AGENT_TOKEN"},
			[]string{"agents[0].token_env: METNOS_AGENT_TOKEN is empty"}},
		{"agent bad autonomy", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nautonomy = \"God\"\n", nil,
			[]string{`agents[0].autonomy: unknown autonomy level "God"`}},
		{"notify bad delivery", "[[policy.notify]]\ncapability = \"code:exec\"\ntarget = \"git push*\"\ndeliveries = [\"log\", \"email\", \"log\"]\n", nil,
			[]string{`policy.notify[0].deliveries[1]: unknown delivery "email"`, `policy.notify[0].deliveries[2]: "log" is listed twice`}},
		{"notify no deliveries", "[[policy.notify]]\ncapability = \"fs:wirte\"\ntarget = \"\"\n", nil,
			[]string{"policy.notify[0].deliveries: required", "policy.notify[0].capability:", "policy.notify[0].target: required"}},
		{"notify webhook without url and key", "[[policy.notify]]\ncapability = \"*\"\ntarget = \"*\"\ndeliveries = [\"webhook\"]\n", nil,
			[]string{"policy.notify[0].webhook_url: required with the webhook delivery", "policy.notify[0].webhook_secret_env: required"}},
		{"notify webhook bad url", "[[policy.notify]]\ncapability = \"*\"\ntarget = \"*\"\ndeliveries = [\"webhook\"]\nwebhook_url = \"ftp://u:p@x/\"\nwebhook_secret_env = \"NOTIFY_WEBHOOK_SECRET\"\n", nil,
			[]string{"policy.notify[0].webhook_url: want an http(s) URL without user info"}},
		{"notify webhook empty key", "[[policy.notify]]\ncapability = \"*\"\ntarget = \"*\"\ndeliveries = [\"webhook\"]\nwebhook_url = \"http://127.0.0.1:9/h\"\nwebhook_secret_env = \"NOTIFY_WEBHOOK_SECRET\"\n", []string{"NOTIFY_WEBHOOK_SECRET"},
			[]string{"policy.notify[0].webhook_secret_env: NOTIFY_WEBHOOK_SECRET is empty"}},
		{"notify url without webhook", "[[policy.notify]]\ncapability = \"*\"\ntarget = \"*\"\ndeliveries = [\"log\"]\nwebhook_url = \"http://127.0.0.1:9/h\"\n", nil,
			[]string{`policy.notify[0].webhook_url: set, but deliveries has no "webhook"`}},
		{"notify messenger not configured", "[[policy.notify]]\ncapability = \"*\"\ntarget = \"*\"\ndeliveries = [\"chat\", \"room\"]\nagent = \"ghost\"\nnotifi = 1\n", nil,
			[]string{"policy.notify[0].deliveries[0]: chat is not configured", "policy.notify[0].deliveries[1]: room is not configured",
				`policy.notify[0].agent: no agent "ghost"`, "policy.notify[0].notifi: unknown key"}},
		{"agent bad mode", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nmode = \"dangerous\"\n", nil,
			[]string{`agents[0].mode: unknown mode "dangerous" (want "ask" or "restrict")`}},
		{"agent bad rate", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nrate = \"0/m\"\n", nil,
			[]string{`agents[0].rate: bad rate "0/m"`}},
		{"agent rate unit", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nrate = \"5/d\"\n", nil,
			[]string{`agents[0].rate: bad rate "5/d"`}},
		{"agent bad notify", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nnotify = [\"web\", \"email\"]\n", nil,
			[]string{`agents[0].notify[1]: unknown channel "email"`}},
		{"agent notify unconfigured", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nnotify = [\"room\"]\n", nil,
			[]string{"agents[0].notify[0]: room is not configured (set room.token_env)"}},
		{"agent empty channel", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nchannel = \"\"\n", nil,
			[]string{"agents[0].channel: required"}},
		{"agent bad deny", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\ndeny_capabilities = [\"fs:read\", \"fs:wirte\"]\n", nil,
			[]string{`agents[0].deny_capabilities[1]: unknown capability "fs:wirte"`}},
		{"agent bad allow", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nallow_capabilities = [\"fs:*\"]\n", nil,
			[]string{`agents[0].allow_capabilities[0]: unknown capability "fs:*"`}},

		{"web admin token empty", "[web]\nadmin_token_env = \"GATEWAY_ADMIN_TOKEN\"\n", []string{"GATEWAY_ADMIN_TOKEN"},
			[]string{"web.admin_token_env: GATEWAY_ADMIN_TOKEN is empty"}},

		{"web public_url not a URL", "[web]\npublic_url = \"gw.example.com\"\n", nil, []string{"web.public_url:"}},
		{"web public_url with a query", "[web]\npublic_url = \"https://gw.example.com/?x=1\"\n", nil, []string{"web.public_url:"}},

		{"hooks bad unknown_tool", "[hooks.claude_code]\nunknown_tool = \"allow\"\n", nil,
			[]string{`hooks.claude_code.unknown_tool: unknown answer "allow"`}},
		{"hooks bad capability", "[hooks.claude_code.tools]\nmcp__gmail__send = \"mail:sned\"\n", nil,
			[]string{`hooks.claude_code.tools.mcp__gmail__send: unknown capability "mail:sned"`}},
		{"codex bad unknown_tool", "[hooks.codex]\nunknown_tool = \"allow\"\n", nil,
			[]string{`hooks.codex.unknown_tool: unknown answer "allow"`}},
		{"gemini bad wait", "[hooks.gemini]\nwait = \"0s\"\n", nil,
			[]string{`hooks.gemini.wait`}},
		{"cursor bad capability", "[hooks.cursor.tools]\n\"MCP:x:y\" = \"fs:wirte\"\n", nil,
			[]string{`hooks.cursor.tools."MCP:x:y": unknown capability "fs:wirte"`}},
		{"log bad format", "[log]\nformat = \"xml\"\n", nil,
			[]string{`log.format: unknown format "xml"`}},
		{"log bad level", "[log]\nlevel = \"loud\"\n", nil,
			[]string{`log.level: unknown level "loud"`}},
		{"telemetry endpoint not http", "[telemetry]\notlp_endpoint = \"grpc://127.0.0.1:4317\"\n", nil,
			[]string{`telemetry.otlp_endpoint: "grpc://127.0.0.1:4317": want an http or https URL`}},
		{"telemetry endpoint with credentials", "[telemetry]\notlp_endpoint = \"https://user:hunter2@otlp.example.com\"\n", nil,
			[]string{"telemetry.otlp_endpoint: holds credentials; give the collector's key in OTEL_EXPORTER_OTLP_HEADERS"}},
		{"telemetry endpoint with a query", "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/?x=1\"\n", nil,
			[]string{"telemetry.otlp_endpoint", "no query or fragment"}},
		{"telemetry bad protocol", "[telemetry]\nprotocol = \"http/json\"\n", nil,
			[]string{`telemetry.protocol: unknown protocol "http/json" (want http/protobuf or grpc)`}},
		{"telemetry typo", "[telemetry]\notlp_endpont = \"http://127.0.0.1:4318\"\n", nil,
			[]string{`telemetry.otlp_endpont: unknown key`}},
		{"env name holding a secret", "[web]\nadmin_token_env = \"hunter2 is my password\"\n", nil,
			[]string{"web.admin_token_env: not an environment variable name"}},
		{"problems reported together", "[policy]\ngrant_ttl = \"10x\"\n[approvals]\nprune_schedule = \"nope\"\n", nil,
			[]string{"2 problems", "policy.grant_ttl", "approvals.prune_schedule"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := baseEnv(t)
			for _, k := range tc.unset {
				delete(e, k)
			}
			path := writeFile(t, tc.toml)
			cfg, err := load(path, true, env(e))
			if err == nil {
				t.Fatalf("accepted: %+v", cfg.Redacted())
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q:\n%s", w, msg)
				}
			}
			if !strings.Contains(msg, path) {
				t.Errorf("error does not name the file %s:\n%s", path, msg)
			}
			assertNoSecret(t, msg)
		})
	}
}

func TestLoad_RejectsCapabilityErrorsWithSentinel(t *testing.T) {
	path := writeFile(t, "[[policy.rules]]\ncapability = \"fs:wirte\"\ntarget = \"*\"\naction = \"block\"\n")
	_, err := Load(path, true, env(baseEnv(t)))
	if !errors.Is(err, policy.ErrUnknownCapability) {
		t.Errorf("errors.Is(%v, ErrUnknownCapability) = false", err)
	}
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "policy.rules[0].capability" {
		t.Errorf("errors.As KeyError: %+v", ke)
	}
}

func TestLoad_UnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want []string
		not  []string
	}{
		{"top-level table", "[sever]\nlisten = \"x\"\n", []string{"sever: unknown key (did you mean server?)"}, []string{"sever.listen"}},
		{"top-level key", "debug = true\n", []string{"debug: unknown key"}, []string{"did you mean"}},
		{"nested key", "[server]\nlisen = \"x\"\n", []string{"server.lisen: unknown key (did you mean listen?)"}, nil},
		{"deep key", "[hooks.claude_code]\nwiat = \"1m\"\n", []string{"hooks.claude_code.wiat: unknown key (did you mean wait?)"}, nil},
		{"deep key codex", "[hooks.codex]\nunknown_tools = \"ask\"\n", []string{"hooks.codex.unknown_tools: unknown key"}, nil},
		{"array element", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n[[agents]]\nid = \"b\"\ntoken_env = \"OTHER_AGENT_TOKEN\"\nautonmy = \"Full\"\n",
			[]string{"agents[1].autonmy: unknown key (did you mean autonomy?)"}, []string{"agents[0].autonmy"}},
		{"rule element", "[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"*\"\naction = \"block\"\nsender = \"x\"\n",
			[]string{"policy.rules[0].sender: unknown key"}, nil},
		{"inline table element", "[policy]\nrules = [{capability = \"fs:read\", target = \"*\", action = \"block\", agnet = \"x\"}]\n",
			[]string{"policy.rules[0].agnet: unknown key"}, nil},
		{"secret in file", "[chat]\ntoken = \"chat-SECRET-0003\"\n",
			[]string{"chat.token: unknown key (secrets are never read from the file"}, nil},
		{"many unknown keys are capped", strings.Repeat("[[agents]]\nid = \"a\"\nx = 1\n", 200),
			[]string{"agents[0].x: unknown key\n", "agents[19].x: unknown key\n", "agents.x (and 180 more): unknown key", "(and "}, []string{"agents[20].x", "did you mean"}},
		{"quoted key", "[server]\n\"my key\" = 1\n", []string{`server."my key": unknown key`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(writeFile(t, tc.toml), true, env(baseEnv(t)))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%s", w, err)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error contains %q:\n%s", n, err)
				}
			}
			assertNoSecret(t, err.Error())
		})
	}
}

func TestLoad_Env(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "METNOS_GRANTS_DB beats storage.path", toml: "[storage]\npath = \"/from/file.db\"\n",
			env: map[string]string{"METNOS_GRANTS_DB": "/from/env.db"},
			check: func(t *testing.T, c Config) {
				if c.Storage.Path != "/from/env.db" {
					t.Errorf("path %q", c.Storage.Path)
				}
			}},
		{name: "relative storage.path is read from the file's directory", toml: "[storage]\npath = \"data/gw.db\"\n",
			check: func(t *testing.T, c Config) {
				if !filepath.IsAbs(c.Storage.Path) || !strings.HasSuffix(c.Storage.Path, "/data/gw.db") {
					t.Errorf("path %q", c.Storage.Path)
				}
			}},
		{name: "METNOS_JUDGE_THRESHOLD beats the file", toml: "[vaglio]\njudge_threshold = 0.5\n",
			env: map[string]string{"METNOS_JUDGE_THRESHOLD": "0.42"},
			check: func(t *testing.T, c Config) {
				if c.Vaglio.JudgeThreshold != 0.42 {
					t.Errorf("threshold %v", c.Vaglio.JudgeThreshold)
				}
			}},
		{name: "bad METNOS_JUDGE_THRESHOLD", env: map[string]string{"METNOS_JUDGE_THRESHOLD": "high"},
			wantErr: `METNOS_JUDGE_THRESHOLD: bad number "high"`},
		{name: "METNOS_JUDGE_THRESHOLD out of range", env: map[string]string{"METNOS_JUDGE_THRESHOLD": "2"},
			wantErr: "METNOS_JUDGE_THRESHOLD: 2 is out of range"},
		{name: "GATEWAY_LISTEN", toml: "[server]\nlisten = \"127.0.0.1:1\"\n",
			env: map[string]string{"GATEWAY_LISTEN": "127.0.0.1:0"},
			check: func(t *testing.T, c Config) {
				if c.Server.Listen != "127.0.0.1:0" {
					t.Errorf("listen %q", c.Server.Listen)
				}
			}},
		{name: "GATEWAY_DATABASE_URL is the DSN", toml: "[storage]\ndriver = \"postgres\"\n",
			env: map[string]string{"GATEWAY_DATABASE_URL": secrets["GATEWAY_DATABASE_URL"]},
			check: func(t *testing.T, c Config) {
				if c.Storage.DSN != secrets["GATEWAY_DATABASE_URL"] {
					t.Error("DSN not from GATEWAY_DATABASE_URL")
				}
			}},
		{name: "storage.dsn_env beats GATEWAY_DATABASE_URL", toml: "[storage]\ndriver = \"postgres\"\ndsn_env = \"PG_DSN\"\n",
			env: map[string]string{"GATEWAY_DATABASE_URL": secrets["GATEWAY_DATABASE_URL"], "PG_DSN": secrets["PG_DSN"]},
			check: func(t *testing.T, c Config) {
				if c.Storage.DSN != secrets["PG_DSN"] {
					t.Error("DSN not from PG_DSN")
				}
			}},
		{name: "XDG dirs", env: map[string]string{"XDG_STATE_HOME": "/xdg/state", "XDG_DATA_HOME": "/xdg/data"},
			check: func(t *testing.T, c Config) {
				if c.Storage.Path != "/xdg/state/metnos/gateway.db" || c.Vaglio.LogDir != "/xdg/data/metnos/vaglio" {
					t.Errorf("paths %q %q", c.Storage.Path, c.Vaglio.LogDir)
				}
			}},
		{name: "no HOME leaves ~ and is refused", env: map[string]string{"HOME": ""},
			wantErr: "storage.path: cannot expand"},
		{name: "days in durations", toml: "[policy]\ngrant_ttl = \"30d\"\n",
			check: func(t *testing.T, c Config) {
				if time.Duration(c.Policy.GrantTTL) != 30*24*time.Hour {
					t.Errorf("grant_ttl %v", c.Policy.GrantTTL)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{"HOME": t.TempDir()}
			for k, v := range tc.env {
				e[k] = v
			}
			cfg, err := load(writeFile(t, tc.toml), true, env(e))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				assertNoSecret(t, err.Error())
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tc.check(t, cfg)
		})
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in    string
		n     int
		per   time.Duration
		wrong bool
	}{
		{"60/m", 60, time.Minute, false},
		{"1/s", 1, time.Second, false},
		{"1000/h", 1000, time.Hour, false},
		{"0/m", 0, 0, true},
		{"-1/m", 0, 0, true},
		{"+5/m", 0, 0, true},
		{"60", 0, 0, true},
		{"60/min", 0, 0, true},
		{"", 0, 0, true},
		{"99999999999999999999/s", 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			n, per, err := ParseRate(tc.in)
			if (err != nil) != tc.wrong || n != tc.n || per != tc.per {
				t.Errorf("ParseRate(%q) = %d, %v, %v", tc.in, n, per, err)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in    string
		want  time.Duration
		wrong bool
	}{
		{"90s", 90 * time.Second, false},
		{"2160h", 2160 * time.Hour, false},
		{"1h30m", 90 * time.Minute, false},
		{"90d", 2160 * time.Hour, false},
		{"1.5d", 0, true},
		{"d", 0, true},
		{"10x", 0, true},
		{"99999999999d", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if (err != nil) != tc.wrong || got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		got  func(getenv func(string) string) string
		want string
	}{
		{"DefaultPath GATEWAY_CONFIG", map[string]string{"HOME": "/h", "GATEWAY_CONFIG": "~/gw.toml"}, DefaultPath, "/h/gw.toml"},
		{"DefaultPath XDG", map[string]string{"HOME": "/h", "XDG_CONFIG_HOME": "/x"}, DefaultPath, "/x/metnos/gateway.toml"},
		{"DefaultPath relative XDG ignored", map[string]string{"HOME": "/h", "XDG_CONFIG_HOME": "rel"}, DefaultPath, "/h/.config/metnos/gateway.toml"},
		{"DefaultPath home", map[string]string{"HOME": "/h"}, DefaultPath, "/h/.config/metnos/gateway.toml"},
		{"StateDir XDG", map[string]string{"HOME": "/h", "XDG_STATE_HOME": "/s"}, StateDir, "/s/metnos"},
		{"StateDir home", map[string]string{"HOME": "/h"}, StateDir, "/h/.local/state/metnos"},
		{"ExpandHome tilde", map[string]string{"HOME": "/h"}, func(g func(string) string) string { return ExpandHome("~", g) }, "/h"},
		{"ExpandHome tilde slash", map[string]string{"HOME": "/h"}, func(g func(string) string) string { return ExpandHome("~/a/b", g) }, "/h/a/b"},
		{"ExpandHome other user", map[string]string{"HOME": "/h"}, func(g func(string) string) string { return ExpandHome("~bob/a", g) }, "~bob/a"},
		{"ExpandHome absolute", map[string]string{"HOME": "/h"}, func(g func(string) string) string { return ExpandHome("/a/~", g) }, "/a/~"},
		{"ExpandHome no HOME", map[string]string{}, func(g func(string) string) string { return ExpandHome("~/a", g) }, "~/a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.got(env(tc.env)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLocate(t *testing.T) {
	tests := []struct {
		name         string
		flag         string
		env          map[string]string
		want         string
		wantExplicit bool
	}{
		{"flag", "/etc/gw.toml", map[string]string{"HOME": "/h", "GATEWAY_CONFIG": "/other.toml"}, "/etc/gw.toml", true},
		{"env", "", map[string]string{"HOME": "/h", "GATEWAY_CONFIG": "/other.toml"}, "/other.toml", true},
		{"default", "", map[string]string{"HOME": "/h"}, "/h/.config/metnos/gateway.toml", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, explicit := Locate(tc.flag, env(tc.env))
			if got != tc.want || explicit != tc.wantExplicit {
				t.Errorf("Locate = %q, %v", got, explicit)
			}
		})
	}
}

// assertNoSecret fails if any of the test secrets shows up in s.
func assertNoSecret(t *testing.T, s string) {
	t.Helper()
	for name, v := range secrets {
		if strings.Contains(s, v) {
			t.Errorf("the value of %s leaked into:\n%s", name, s)
		}
	}
	if strings.Contains(s, "SECRET-00") {
		t.Errorf("a secret leaked into:\n%s", s)
	}
}

func TestRedacted_HidesEverySecret(t *testing.T) {
	e := baseEnv(t)
	body := valid + `
[storage]
dsn_env = "PG_DSN"
[web]
admin_token_env = "GATEWAY_ADMIN_TOKEN"
`
	cfg, err := load(writeFile(t, body), true, env(e))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	// Every secret was resolved, so the test below means something.
	for _, got := range []string{cfg.Agents[0].Token, chatOf(cfg).Token, cfg.Web.AdminToken, cfg.Storage.DSN} {
		if !strings.Contains(got, "SECRET-00") {
			t.Fatalf("a secret was not resolved: %q", got)
		}
	}
	r := cfg.Redacted()
	assertNoSecret(t, fmt.Sprintf("%+v", r))
	assertNoSecret(t, fmt.Sprintf("%#v", r))
	if chatOf(r).Token != "[redacted]" || r.Agents[0].Token != "[redacted]" {
		t.Errorf("not marked redacted: %+v", r)
	}
	if cfg.Agents[0].Token != secrets["METNOS_AGENT_TOKEN"] {
		t.Error("Redacted changed the original")
	}

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	log.Info("loaded", "config", cfg, "agent", cfg.Agents[0])
	log = slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("loaded", "config", cfg, "agent", cfg.Agents[0])
	assertNoSecret(t, buf.String())
	if !strings.Contains(buf.String(), "metnos") {
		t.Errorf("log lost the agent id: %s", buf.String())
	}
}

// TestLoad_ErrorsNeverShowSecrets breaks configs in ways that touch each
// secret and checks no error text carries a value.
func TestLoad_ErrorsNeverShowSecrets(t *testing.T) {
	bodies := []string{
		"[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n[[agents]]\nid = \"b\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n",
		"[chat]\ntoken_env = \"CHAT_TOKEN\"\n",
		"[storage]\ndriver = \"postgres\"\ndsn_env = \"PG_DSN\"\n[server]\nlisten = \"bad\"\n",
		"[web]\nadmin_token_env = \"GATEWAY_ADMIN_TOKEN\"\n[log]\nlevel = \"x\"\n",
		"[web]\nadmin_token_env = \"admin-SECRET-0008\"\n",
		"[chat]\ntoken_env = \"chat-SECRET-0003\"\n",
	}
	for i, body := range bodies {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := baseEnv(t)
			e["METNOS_JUDGE_THRESHOLD"] = "x"
			_, err := load(writeFile(t, body), true, env(e))
			if err == nil {
				t.Fatal("accepted")
			}
			assertNoSecret(t, err.Error())
		})
	}
}

func TestValidate_FillsRate(t *testing.T) {
	cfg := Default()
	a := NewAgent("x")
	a.Token, a.Rate, a.RateCount, a.RatePer = "tok-x-0123456789abcdef01", "5/s", 0, 0
	cfg.Agents = []Agent{a}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Agents[0].RateCount != 5 || cfg.Agents[0].RatePer != time.Second {
		t.Errorf("rate %d/%v", cfg.Agents[0].RateCount, cfg.Agents[0].RatePer)
	}
}

func TestLoad_Timezone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.toml")
	if err := os.WriteFile(path, []byte("[server]\ntimezone = \"Europe/Rome\"\n[web]\nlanguage = \"it\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, true, env(map[string]string{"HOME": dir}))
	if err != nil {
		t.Fatal(err)
	}
	if z := cfg.Server.Zone(); z.String() != "Europe/Rome" {
		t.Errorf("zone %v", z)
	}
	if cfg.Web.Language != "it" {
		t.Errorf("language %q", cfg.Web.Language)
	}
	if z := (Server{}).Zone(); z != time.Local {
		t.Errorf("default zone %v, want the machine's", z)
	}
}

// TestLoad_VaglioLLM: [vaglio.llm] is read, METNOS_JUDGE_KIND overrides
// judge_kind, the key comes only from the environment, and every bad value
// is refused naming its key.
func TestLoad_VaglioLLM(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "g.toml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `[vaglio]
judge_kind = "llm-v1"
[vaglio.llm]
api = "anthropic"
url = "https://api.anthropic.com/v1"
model = "claude-sonnet"
api_key_env = "JUDGE_KEY"
timeout = "2s"
max_calls_per_day = 10
max_calls_per_day_total = 50
on_failure = "rule-based"
send_arg_values = true
`
	cfg, err := Load(write(good), true, env(map[string]string{"HOME": dir, "JUDGE_KEY": "sk-test"}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := VaglioLLM{API: "anthropic", URL: "https://api.anthropic.com/v1", Model: "claude-sonnet", APIKeyEnv: "JUDGE_KEY",
		APIKey: "sk-test", Timeout: Duration(2 * time.Second), MaxCallsPerDay: 10, MaxCallsPerDayTotal: 50, OnFailure: LLMOnFailureRuleBased,
		SendArgValues: true}
	if cfg.Vaglio.JudgeKind != JudgeLLM || cfg.Vaglio.LLM != want {
		t.Errorf("vaglio = %+v", cfg.Vaglio)
	}
	cfg, err = Load(write(`[vaglio]
judge_kind = "llm-v1"
`), true, env(map[string]string{"HOME": dir, EnvJudgeKind: "rule-based-v1"}))
	if err != nil || cfg.Vaglio.JudgeKind != JudgeRuleBased {
		t.Errorf("METNOS_JUDGE_KIND did not override: %v %+v", err, cfg.Vaglio)
	}
	cfg, err = Load("", false, env(map[string]string{"HOME": dir, EnvJudgeKind: "llm-v1"}))
	if err != nil || cfg.Vaglio.JudgeKind != JudgeLLM || cfg.Vaglio.LLM.URL != "http://127.0.0.1:11434/v1" {
		t.Errorf("METNOS_JUDGE_KIND=llm-v1 with the defaults: %v %+v", err, cfg.Vaglio)
	}
	for _, tc := range []struct {
		name, body string
		vars       map[string]string
		key        string
	}{
		{"bad kind", "[vaglio]\njudge_kind = \"llm\"\n", nil, "vaglio.judge_kind"},
		{"bad env kind", "", map[string]string{EnvJudgeKind: "gpt"}, EnvJudgeKind},
		{"bad api", "[vaglio]\njudge_kind = \"llm-v1\"\n[vaglio.llm]\napi = \"gemini\"\n", nil, "vaglio.llm.api"},
		{"bad url", "[vaglio]\njudge_kind = \"llm-v1\"\n[vaglio.llm]\nurl = \"127.0.0.1:11434\"\n", nil, "vaglio.llm.url"},
		{"no model", "[vaglio]\njudge_kind = \"llm-v1\"\n[vaglio.llm]\nmodel = \"\"\n", nil, "vaglio.llm.model"},
		{"zero timeout", "[vaglio]\njudge_kind = \"llm-v1\"\n[vaglio.llm]\ntimeout = \"0s\"\n", nil, "vaglio.llm.timeout"},
		{"negative budget", "[vaglio]\njudge_kind = \"llm-v1\"\n[vaglio.llm]\nmax_calls_per_day = -1\n", nil, "vaglio.llm.max_calls_per_day"},
		{"negative total", "[vaglio]\njudge_kind = \"llm-v1\"\n[vaglio.llm]\nmax_calls_per_day_total = -1\n", nil, "vaglio.llm.max_calls_per_day_total"},
		{"bad on_failure", "[vaglio]\njudge_kind = \"llm-v1\"\n[vaglio.llm]\non_failure = \"allow\"\n", nil, "vaglio.llm.on_failure"},
		{"empty key", "[vaglio]\njudge_kind = \"llm-v1\"\n[vaglio.llm]\napi_key_env = \"JUDGE_KEY\"\n", nil, "vaglio.llm.api_key_env"},
		{"unknown key", "[vaglio.llm]\nkey = \"sk-in-the-file\"\n", nil, "vaglio.llm.key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"HOME": dir}
			for k, v := range tc.vars {
				vars[k] = v
			}
			_, err := Load(write(tc.body), true, env(vars))
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("Load() = %v, want an error naming %s", err, tc.key)
			}
			if err != nil && strings.Contains(err.Error(), "sk-in-the-file") {
				t.Errorf("error quotes a value: %v", err)
			}
		})
	}
}

// TestLoadWith_SkipAgentTokens: the database-only load neither reads nor
// requires the agents' token variables, still checks their names, and
// leaves every other check as strict; plain Load still names the empty one.
func TestLoadWith_SkipAgentTokens(t *testing.T) {
	body := "[[agents]]\nid = \"a1\"\ntoken_env = \"A1_TOKEN\"\n[[agents]]\nid = \"a2\"\ntoken_env = \"A2_TOKEN\"\n"
	path := writeFile(t, body)
	getenv := env(map[string]string{"A2_TOKEN": "a2-SECRET-0123456789abcdef01", "HOME": t.TempDir()})
	cfg, err := LoadWith(path, true, getenv, LoadOptions{SkipAgentTokens: true})
	if err != nil {
		t.Fatalf("skip agent tokens: %v", err)
	}
	for _, a := range cfg.Agents {
		if a.Token != "" {
			t.Errorf("agent %s: token %q resolved, want none read", a.ID, a.Token)
		}
	}
	if _, err := Load(path, true, getenv); err == nil || !strings.Contains(err.Error(), "agents[0].token_env: A1_TOKEN is empty") {
		t.Errorf("Load: %v, want agents[0].token_env: A1_TOKEN is empty", err)
	}
	bad := writeFile(t, "[[agents]]\nid = \"a1\"\ntoken_env = \"not a name\"\n[policy]\ngrant_ttl = \"10x\"\n")
	_, err = LoadWith(bad, true, getenv, LoadOptions{SkipAgentTokens: true})
	if err == nil || !strings.Contains(err.Error(), "agents[0].token_env: not an environment variable name") ||
		!strings.Contains(err.Error(), "policy.grant_ttl") {
		t.Errorf("bad name with skip: %v, want the name and policy.grant_ttl refused", err)
	}
	missing := writeFile(t, "[[agents]]\nid = \"a1\"\n")
	if _, err := LoadWith(missing, true, getenv, LoadOptions{SkipAgentTokens: true}); err == nil ||
		!strings.Contains(err.Error(), "agents[0].token_env: required") {
		t.Errorf("no token_env with skip: %v, want required", err)
	}
}

// TestValidate_ShortTokens: config check refuses agent and admin tokens
// shorter than MinTokenLen, naming the key and never the token.
func TestValidate_ShortTokens(t *testing.T) {
	cfg := Default()
	a := NewAgent("x")
	a.Token = "short-agent-token"
	cfg.Agents = []Agent{a}
	cfg.Web.AdminToken = "short-admin"
	err := cfg.Validate()
	if err == nil {
		t.Fatal("short tokens accepted")
	}
	for _, want := range []string{"agents[0].token_env: the token is 17 characters; want at least 24", "web.admin_token_env: the token is 11 characters"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "short-") {
		t.Errorf("error shows a token: %v", err)
	}
}

func hookDefault() *HookAgent {
	return &HookAgent{Wait: Duration(9 * time.Minute), UnknownTool: "ask", Tools: map[string]string{}}
}
