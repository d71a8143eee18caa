package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// helpPaths is every command and subcommand of the command line.
var helpPaths = []string{
	"serve", "policy", "policy registry", "policy table", "policy check", "policy grants", "policy grant",
	"policy revoke", "policy rules", "policy rules add", "policy rules update", "policy rules rm", "policy test", "policy simulate", "policy suggest", "policy import", "prune",
	"audit", "audit verify", "ask", "hook", "hook claude-code", "hook codex", "hook gemini", "hook cursor",
	"mcp", "mcp-proxy", "config", "config check", "config example", "migrate", "version", "login", "logout",
	"passkeys", "passkeys list", "passkeys remove", "run",
	"pending", "decide",
}

var helpFlagRE = regexp.MustCompile(`(?m)^  --([a-z-]+)`)

// TestHelp_EveryCommand: `gateway <command> --help` (and -h) prints the
// command's usage lines and its flags on stdout and exits 0, and every
// flag it has is in `gateway --help` on the command's own lines.
func TestHelp_EveryCommand(t *testing.T) {
	covered := map[string]bool{}
	for _, p := range helpPaths {
		covered[strings.Fields(p)[0]] = true
		for _, h := range []string{"--help", "-h"} {
			r := runCLI(context.Background(), func(string) string { return "" }, "", append(strings.Fields(p), h)...)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage:\n") || !strings.Contains(r.stdout, "gateway "+p) && !strings.Contains(r.stdout, "gateway "+strings.Fields(p)[0]) || r.stderr != "" {
				t.Errorf("gateway %s %s: exit %d, stdout %q, stderr %q", p, h, r.code, r.stdout, r.stderr)
				continue
			}
			lines := usageOf(p)
			for _, m := range helpFlagRE.FindAllStringSubmatch(r.stdout, -1) {
				if flag := "--" + m[1]; flag != "--config" && !strings.Contains(lines, flag) {
					t.Errorf("gateway %s has %s, which gateway --help does not show on its lines:\n%s", p, flag, lines)
				}
			}
		}
	}
	for name := range commands() {
		if !covered[name] {
			t.Errorf("command %s has no entry in helpPaths", name)
		}
	}
	r := runCLI(context.Background(), func(string) string { return "" }, "", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Every command takes --config FILE") {
		t.Errorf("gateway --help: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestHelp_RefusesWhatItDoesNotKnow: --help does not hide a wrong
// command, subcommand or flag: they still exit 2 naming it.
func TestHelp_RefusesWhatItDoesNotKnow(t *testing.T) {
	for _, args := range [][]string{
		{"frobnicate", "--help"}, {"config", "show", "--help"}, {"policy", "bogus", "--help"},
		{"policy", "rules", "bogus", "--help"}, {"hook", "claud-code", "--help"}, {"audit", "bogus", "--help"},
		{"serve", "--lisen", "x", "--help"}, {"policy", "rules", "rm", "1", "2", "--help"},
	} {
		r := runCLI(context.Background(), func(string) string { return "" }, "", args...)
		if r.code != exitUsage || r.stdout != "" || r.stderr == "" {
			t.Errorf("gateway %s: exit %d, stdout %q, stderr %q; want exit 2 and a line naming it", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
}
