package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/storage"
)

// TestDocs holds README.md, SECURITY.md and docs/*.md to what the product
// does: their toml passes config check, their command lines parse, their
// make targets, routes and error codes exist, every fuzz target is run and
// documented, the Slack manifest names the commands the code answers, and
// nothing cites what the repository does not hold. A block that is only
// part of a config says so with "<!-- docs-test: fragment -->" on the line
// above it; one that is another program's file, "<!-- docs-test: skip
// (why) -->".
func TestDocs(t *testing.T) {
	files := readDocs(t)
	report := func(name string, problems []string) {
		t.Helper()
		for _, p := range problems {
			t.Errorf("%s: %s", name, p)
		}
	}
	report("toml", checkTOML(files, t.TempDir()))
	report("commands", checkCommands(files))
	report("make", checkMakeTargets(files, readRepoFile(t, "Makefile")))
	report("routes", checkRoutes(files, docsServer(t).Route))
	known, err := sourceErrorCodes(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	report("error codes", checkErrorCodes(files, known))
	tree, err := treeFuzzTargets(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	report("fuzz", checkFuzz(tree, readRepoFile(t, "Makefile"), readRepoFile(t, "docs/fuzzing.md")))
	handled, err := slackSubcommands(readRepoFile(t, "messenger/slack/commands.go"))
	if err != nil {
		t.Fatal(err)
	}
	report("slack", checkSlackHint(readRepoFile(t, "deploy/slack-manifest.yaml"), handled, readRepoFile(t, "docs/slack.md")))
	report("stand-alone", checkStandAlone(files))
	report("index", checkIndexed(files))
	report("schema version", checkSchemaVersion(files, storage.SchemaVersion()))
}

// docsServer is a gateway with every route mounted (Slack's too), on a
// throwaway database, for its Route.
func docsServer(t *testing.T) *gateway.Server {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.toml")
	body := "[storage]\npath = \"" + filepath.Join(dir, "gateway.db") + "\"\n" + fragmentBase + "[vaglio]\nlog_dir = \"" + dir + "\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadWith(path, true, func(k string) string {
		if strings.HasPrefix(k, "DOCS_") {
			return "docs-test-" + strings.ToLower(k)
		}
		return ""
	}, config.LoadOptions{Sections: messenger.Sections(messengerKinds)})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return gatewaytest.New(t, cfg, gateway.AppOptions{Logger: log, Home: dir, Messengers: messengers(cfg, log)}).Server
}

// TestDocsCatchPlantedErrors: each check fails on a doc with one error of
// its kind, and passes the same doc written right.
func TestDocsCatchPlantedErrors(t *testing.T) {
	doc := func(text string) []docFile { return []docFile{{"docs/planted.md", text}} }
	fence := "```"
	expect := func(t *testing.T, what string, problems []string, want bool) {
		t.Helper()
		if got := len(problems) > 0; got != want {
			t.Errorf("%s: problems %q, want some: %v", what, problems, want)
		}
	}

	t.Run("toml", func(t *testing.T) {
		dir := t.TempDir()
		expect(t, "a wrong key", checkTOML(doc(fence+"toml\n[server]\nlisten_addr = \"127.0.0.1:8080\"\n"+fence+"\n"), dir), true)
		expect(t, "a right key", checkTOML(doc(fence+"toml\n[server]\nlisten = \"127.0.0.1:8080\"\n"+fence+"\n"), dir), false)
		route := "[[approvals.routes]]\ncapability = \"mail:send\"\nnotify = [\"telegram\"]\n"
		expect(t, "a fragment checked whole", checkTOML(doc(fence+"toml\n"+route+fence+"\n"), dir), true)
		expect(t, "a marked fragment", checkTOML(doc("<!-- docs-test: fragment -->\n"+fence+"toml\n"+route+fence+"\n"), dir), false)
		expect(t, "a marked fragment with a wrong key",
			checkTOML(doc("<!-- docs-test: fragment -->\n"+fence+"toml\n"+route+"quorom = 2\n"+fence+"\n"), dir), true)
		expect(t, "a bad duration", checkTOML(doc(fence+"toml\n[policy]\ngrant_ttl = \"90 days\"\n"+fence+"\n"), dir), true)
	})
	t.Run("commands", func(t *testing.T) {
		expect(t, "an unknown flag", checkCommands(doc(fence+"sh\ngateway serve --listen 127.0.0.1:8081 --lisen x\n"+fence+"\n")), true)
		expect(t, "an unknown subcommand", checkCommands(doc("Run `gateway config show` to see it.\n")), true)
		expect(t, "an unknown command", checkCommands(doc(fence+"sh\n./bin/gateway frobnicate\n"+fence+"\n")), true)
		expect(t, "a flag of another command", checkCommands(doc("`gateway policy grants --json`\n")), true)
		expect(t, "a wrong hook in an agent's settings", checkCommands(doc(fence+"json\n{\"type\": \"command\", \"command\": \"GATEWAY_TOKEN=$(cat ~/t) gateway hook claud-code\"}\n"+fence+"\n")), true)
		expect(t, "a wrong hook in a skipped toml", checkCommands(doc("<!-- docs-test: skip (Codex's) -->\n"+fence+"toml\ncommand = \"gateway hook codex --no-asks\"\n"+fence+"\n")), true)
		if n := len(commandLines(doc(fence + "json\n{\"command\": \"GATEWAY_TOKEN=$(cat ~/t) gateway hook claude-code\"}\n" + fence + "\n"))); n != 1 {
			t.Errorf("a hook command in JSON: %d command lines found, want 1", n)
		}
		expect(t, "right lines", checkCommands(doc(fence+"sh\n./bin/gateway policy grant --channel web --sender owner \\\n  --capability fs:read --target '/tmp/*' --ttl 90d   # a grant\n"+
			"gateway ask --capability fs:write --target /tmp/x --intent \"write it\" --json && echo ok\n"+fence+"\n"+
			fence+"\ngateway audit [--since 24h|TIME] [--limit N] [--format text|jsonl|csv]    the trail\ngateway policy registry | table\n"+fence+"\n"+
			"Use `gateway hook codex|gemini|cursor [--no-ask]` or `gateway serve --log-format json`.\n")), false)
	})
	t.Run("make", func(t *testing.T) {
		mk := readRepoFile(t, "Makefile")
		expect(t, "a missing target", checkMakeTargets(doc("Run `make soak-all`.\n"), mk), true)
		expect(t, "real targets", checkMakeTargets(doc("Run `make soak`, then\n"+fence+"sh\nmake fuzz FUZZTIME=10m\n"+fence+"\n"), mk), false)
	})
	t.Run("routes", func(t *testing.T) {
		route := docsServer(t).Route
		expect(t, "a missing route", checkRoutes(doc("`GET /v1/requestz`\n"), route), true)
		expect(t, "a wrong method", checkRoutes(doc("`PUT /v1/requests/{id}`\n"), route), true)
		expect(t, "a missing path after a comma", checkRoutes(doc("`GET /healthz`, `/livez`\n"), route), true)
		expect(t, "a curl to a missing route", checkRoutes(doc(fence+"sh\ncurl -s $GATEWAY_URL/v1/grantz -d '{}'\n"+fence+"\n"), route), true)
		expect(t, "real routes", checkRoutes(doc("`GET /v1/requests/{id}[?wait=30s]`; `GET`, `POST /v1/policy/rules`; `GET /healthz`, `/readyz`; `POST /slack/commands`\n\n"+
			fence+"sh\ncurl -s -H \"Authorization: Bearer $GATEWAY_TOKEN\" \"$GATEWAY_URL/v1/requests?wait=2m\" \\\n  -d '{}'\n"+fence+"\n"), route), false)
	})
	t.Run("error codes", func(t *testing.T) {
		known, err := sourceErrorCodes(repoRoot)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "an unknown code after a status", checkErrorCodes(doc("it answers 409 `already_approved`\n"), known), true)
		expect(t, "an unknown invalid_ code", checkErrorCodes(doc("refused (`invalid_colour`)\n"), known), true)
		expect(t, "an unknown code in a list", checkErrorCodes(doc("codes (`invalid_target`, `out_of_cheese`, …)\n"), known), true)
		expect(t, "an unknown code in JSON", checkErrorCodes(doc(fence+"json\n{\"error\":{\"code\":\"nope_nope\"}}\n"+fence+"\n"), known), true)
		expect(t, "real codes", checkErrorCodes(doc("409 `rule_from_config`, 403 `token_exhausted`, (`invalid_target`, `unknown_field`, `rate_limited`, `already_decided`, …), `invalid_ttl`\n"), known), false)
	})
	t.Run("fuzz", func(t *testing.T) {
		tree := []fuzzTarget{{"./policy", "FuzzMatchGrant"}, {"./cards", "FuzzDisplay"}}
		mk := "FUZZ_TARGETS := \\\n\t./policy:FuzzMatchGrant \\\n\t./cards:FuzzDisplay\nFUZZTIME ?= 30s\n"
		md := "`FuzzMatchGrant` and `FuzzDisplay`"
		expect(t, "all listed", checkFuzz(tree, mk, md), false)
		expect(t, "a target not in make fuzz", checkFuzz(tree, strings.Replace(mk, " \\\n\t./cards:FuzzDisplay", "", 1), md), true)
		expect(t, "a target in the wrong package", checkFuzz(tree, strings.Replace(mk, "./cards:FuzzDisplay", "./gateway:FuzzDisplay", 1), md), true)
		expect(t, "a target not in docs/fuzzing.md", checkFuzz(tree, mk, "`FuzzMatchGrant`"), true)
		expect(t, "a listed target that is gone", checkFuzz(tree[:1], mk, md), true)
	})
	t.Run("slack", func(t *testing.T) {
		handled := []string{"audit", "grants", "help", "pending", "revoke", "rules"}
		md := "/approvals pending, /approvals grants, /approvals revoke, /approvals rules, /approvals audit, /approvals help"
		good := "usage_hint: pending | grants [sender] | revoke ID | rules [rm ID] | audit [request id | @user | agent] | help\n"
		expect(t, "all named", checkSlackHint(good, handled, md), false)
		expect(t, "a subcommand missing from the hint", checkSlackHint("usage_hint: pending | grants [sender] | revoke ID | help\n", handled, md), true)
		expect(t, "a subcommand missing from docs/slack.md", checkSlackHint(good, handled, strings.Replace(md, "/approvals audit", "", 1)), true)
		src := "package slack\nfunc (m *M) handleCommand() {\n\tswitch sub {\n\tcase \"\", \"help\":\n\tcase \"pending\":\n\tcase \"audit\":\n\t}\n}\n"
		got, err := slackSubcommands(src)
		if err != nil || strings.Join(got, " ") != "audit help pending" {
			t.Errorf("slackSubcommands = %v, %v", got, err)
		}
	})
	t.Run("schema version", func(t *testing.T) {
		expect(t, "an old version", checkSchemaVersion(doc(`# {"driver":"sqlite","schema_version":3}`), 10), true)
		expect(t, "this version", checkSchemaVersion(doc(`# {"driver":"sqlite","schema_version":10}`), 10), false)
	})
	t.Run("index", func(t *testing.T) {
		readme := docFile{"README.md", "| [docs/api.md](docs/api.md) | the API |\n"}
		expect(t, "a page the README does not link", checkIndexed([]docFile{readme, {"docs/api.md", ""}, {"docs/new.md", ""}}), true)
		expect(t, "every page linked", checkIndexed([]docFile{readme, {"docs/api.md", ""}}), false)
	})
	t.Run("stand-alone", func(t *testing.T) {
		expect(t, "a SPEC section", checkStandAlone(doc("as SPEC §4 says\n")), true)
		expect(t, "a shared path", checkStandAlone(doc("run ../shared/bench/run.sh\n")), true)
		expect(t, "plain", checkStandAlone(doc("see docs/policy.md\n")), false)
	})
}
