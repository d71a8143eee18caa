package policyimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
	"github.com/metnos/gateway/policy"
)

// TestClaudeCodeWritesItsSettings: the pinned Claude Code writes the
// permission itself, as it does when a person answers its prompt with
// "yes, and don't ask again": a PermissionRequest hook (standing in for
// that person) allows a Bash call with an addRules update to the
// project's local settings, Claude Code records it in
// .claude/settings.local.json (with a deny and an ask rule, a prefix and
// a domain), and the import of that file gives the same rules.
func TestClaudeCodeWritesItsSettings(t *testing.T) {
	bin := agenttest.Bin(t, "claude")
	model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Bash", Input: map[string]any{
		"command": "touch made-by-claude", "description": "Make a file"}})
	home, proj := t.TempDir(), t.TempDir()
	answer := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow",` +
		`"updatedPermissions":[` +
		`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch made-by-claude"},{"toolName":"Bash","ruleContent":"npm run test:*"},` +
		`{"toolName":"WebFetch","ruleContent":"domain:docs.python.org"}],"behavior":"allow","destination":"localSettings"},` +
		`{"type":"addRules","rules":[{"toolName":"Read","ruleContent":"./.env"}],"behavior":"deny","destination":"localSettings"},` +
		`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"git push:*"}],"behavior":"ask","destination":"localSettings"}` +
		`]}}}`
	script := filepath.Join(home, "person.sh")
	agenttest.WriteFile(t, script, "#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '"+answer+"'\n")
	if err := os.Chmod(script, 0o700); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, filepath.Join(home, ".claude", "settings.json"), `{"hooks": {"PermissionRequest": [
  {"matcher": "Bash", "hooks": [{"type": "command", "command": "`+script+`"}]}]}}`)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}, model.ClaudeEnv()...)
	stdout, stderr, err := agenttest.Run(t, 3*time.Minute, proj, env, bin, "-p", "Do the one step you are asked to do.", "--output-format", "json")
	local := filepath.Join(proj, ".claude", "settings.local.json")
	data, rerr := os.ReadFile(local)
	if rerr != nil {
		t.Fatalf("Claude Code wrote no %s (%v):\n%s\n%s", local, err, stdout, stderr)
	}
	t.Logf("Claude Code wrote:\n%s", data)
	res, err := Import(ClaudeCode, Env{Home: home, Cwd: proj}, []string{local})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rules {
		if !strings.HasPrefix(r.Source, local+":") {
			t.Errorf("rule %+v does not name the file", r)
		}
		got = append(got, r.Capability+" "+r.Target+" "+string(r.Action))
	}
	want := []string{
		"fs:read " + filepath.Join(proj, ".env") + " " + string(policy.ActionBlock),
		"code:exec git push require_approval", "code:exec git push * require_approval",
		"code:exec touch made-by-claude approve", "code:exec npm run test approve", "code:exec npm run test * approve",
		"network:http docs.python.org approve",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(res.Skipped) != 0 {
		t.Fatalf("the import of what Claude Code wrote:\n%s\nwant:\n%s\nskipped: %+v", strings.Join(got, "\n"), strings.Join(want, "\n"), res.Skipped)
	}
}

// TestCopilotWritesItsSettings: the pinned Copilot CLI writes its own
// settings (`copilot config allowedUrls …`, `deniedUrls …`, and `--repo`
// for the repository's file), and the import of its default locations
// gives rules on those hosts, an allowed URL with a path listed rather
// than widened to its host.
func TestCopilotWritesItsSettings(t *testing.T) {
	bin := agenttest.Bin(t, "copilot")
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"COPILOT_HOME": filepath.Join(home, ".copilot")}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "COPILOT_HOME=" + vars["COPILOT_HOME"],
		"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false"}
	for _, args := range [][]string{
		{"allowedUrls", "docs.github.com"}, {"allowedUrls", "*.githubusercontent.com"},
		{"allowedUrls", "https://github.com/org/repo"}, {"deniedUrls", "https://evil.example"},
		{"--repo", "deniedUrls", "bad.example"},
	} {
		if stdout, stderr, err := agenttest.Run(t, 2*time.Minute, proj, env, bin, append([]string{"config"}, args...)...); err != nil {
			t.Fatalf("copilot config %v: %v\n%s\n%s", args, err, stdout, stderr)
		}
	}
	res, err := Import(Copilot, Env{Home: home, Cwd: proj, Getenv: func(k string) string { return vars[k] }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rules {
		got = append(got, r.Capability+" "+r.Target+" "+string(r.Action))
	}
	want := []string{"network:http evil.example block", "network:http bad.example block",
		"network:http docs.github.com approve", "network:http *.githubusercontent.com approve"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Entry, "github.com/org/repo") {
		t.Fatalf("the import of what Copilot CLI wrote (%v):\n%s\nskipped %+v", res.Files, strings.Join(got, "\n"), res.Skipped)
	}
}
