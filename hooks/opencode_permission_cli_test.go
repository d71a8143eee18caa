package hooks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
	"github.com/metnos/gateway/policyimport"
)

// TestOpenCodePermissionAgreesWithOpenCode: the pinned OpenCode follows
// the permission block of its opencode.json (a command allowed by the
// last matching pattern runs under `opencode run`; asked about, it does
// not, since `opencode run` refuses every ask), and `gateway policy import
// --from opencode` of the same file approves that command ahead of the
// catch-all it overrides.
func TestOpenCodePermissionAgreesWithOpenCode(t *testing.T) {
	bin := agenttest.Bin(t, "opencode")
	home := t.TempDir()
	cfg := filepath.Join(home, ".config", "opencode")
	run := func(decision string) (ran bool, out string) {
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "bash", Input: map[string]any{"command": "printf opencode-%s ran", "description": "print"}})
		agenttest.WriteFile(t, filepath.Join(cfg, "opencode.json"), `{
  "provider": { "fake": { "npm": "@ai-sdk/openai-compatible", "name": "Fake",
    "options": { "baseURL": "`+m.URL+`/v1", "apiKey": "sk-fake" },
    "models": { "fake-model": { "name": "Fake Model", "tool_call": true } } } },
  "model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled",
  "permission": { "bash": { "*": "deny", "printf opencode-%s ran": "`+decision+`" } }
}
`)
		dir, err := os.MkdirTemp(home, "proj-")
		if err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8",
			"XDG_CONFIG_HOME=" + home + "/.config", "XDG_DATA_HOME=" + home + "/.local/share",
			"XDG_CACHE_HOME=" + home + "/.cache", "XDG_STATE_HOME=" + home + "/.local/state", "OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1"}
		stdout, stderr, err := agenttest.Run(t, 150*time.Second, dir, env, bin, "run", "do the task")
		return m.Saw("opencode-ran"), fmt.Sprintf("%v\n%s\n%s", err, stdout, stderr)
	}
	if ran, out := run("ask"); ran {
		t.Fatalf("opencode run ran a command its permission asks about: the test proves nothing:\n%s", out)
	}
	if ran, out := run("allow"); !ran {
		t.Fatalf("OpenCode did not run the command its permission allows:\n%s", out)
	}
	vars := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, ".config")}
	res, err := policyimport.Import(policyimport.OpenCode, policyimport.Env{Home: home, Cwd: t.TempDir(),
		Getenv: func(k string) string { return vars[k] }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rules {
		got = append(got, r.Capability+" "+r.Target+" "+string(r.Action))
	}
	want := "code:exec printf opencode-%s ran approve\ncode:exec * block"
	if strings.Join(got, "\n") != want || len(res.Skipped) != 0 {
		t.Fatalf("the import of what OpenCode followed:\n%s\nwant:\n%s\nskipped %+v", strings.Join(got, "\n"), want, res.Skipped)
	}
}
