package hooks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
)

// The real agent programs run with exactly what `gateway hook NAME
// --print-config` prints, merged into their offline set-up, and with no
// flag of their own that skips their prompts (no --yolo, no
// --approval-mode, no --allow-all-tools): a command the gateway approves
// runs. Headless, nobody could answer a prompt of the agent's own, so the
// command running is the proof that no second prompt stood in its way.

// printedConfig is `gateway hook name --print-config` for home.
func printedConfig(t *testing.T, g *agenttest.Gateway, name, home string) string {
	t.Helper()
	cmd := exec.Command(g.Bin, "hook", name, "--print-config")
	cmd.Env = []string{"HOME=" + home}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gateway hook %s --print-config: %v", name, err)
	}
	return string(out)
}

// mergeJSON merges the printed settings into base, object by object.
func mergeJSON(t *testing.T, base, printed string) string {
	t.Helper()
	var a, b map[string]any
	if err := json.Unmarshal([]byte(base), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(printed), &b); err != nil {
		t.Fatalf("the printed settings are not JSON: %v\n%s", err, printed)
	}
	var merge func(dst, src map[string]any)
	merge = func(dst, src map[string]any) {
		for k, v := range src {
			d, dok := dst[k].(map[string]any)
			s, sok := v.(map[string]any)
			if dok && sok {
				merge(d, s)
				continue
			}
			dst[k] = v
		}
	}
	merge(a, b)
	out, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestPrintConfig_ClaudeCode(t *testing.T) {
	agenttest.Bin(t, "claude")
	g := agenttest.StartGateway(t, approveTouch)
	model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Bash", Input: map[string]any{
		"command": "touch made-by-claude", "description": "Make a file"}})
	c := agenttest.NewClaude(t, g, model, "")
	agenttest.WriteFile(t, filepath.Join(c.Home, ".claude", "settings.json"), printedConfig(t, g, "claude-code", c.Home))
	res := c.Run(t)
	if _, err := os.Stat(filepath.Join(c.Cwd, "made-by-claude")); err != nil || len(res.PermissionDenials) != 0 {
		t.Fatalf("the approved command did not run: %+v", res)
	}
}

func TestPrintConfig_Codex(t *testing.T) {
	codex := agenttest.Bin(t, "codex")
	g := agenttest.StartGateway(t, "[[policy.rules]]\ncapability = \"code:exec\"\ntarget = \"touch made-by-codex\"\naction = \"approve\"\n")
	model := codexModel(t, "touch made-by-codex")
	home := t.TempDir()
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	printed := printedConfig(t, g, "codex", home)
	top, tables, ok := strings.Cut(printed, "\n[")
	if !ok {
		t.Fatalf("no tables in the printed config:\n%s", printed)
	}
	cfgPath := filepath.Join(home, ".codex", "config.toml")
	agenttest.WriteFile(t, cfgPath, fmt.Sprintf("model_provider = \"standin\"\nmodel = \"gpt-5.1-codex\"\n%s\n[%s\n"+
		"[model_providers.standin]\nname = \"stand-in\"\nbase_url = \"%s/v1\"\nwire_api = \"responses\"\nenv_key = \"STANDIN_API_KEY\"\n",
		top, tables, model.URL))
	env := g.Env(home, "CODEX_HOME="+filepath.Join(home, ".codex"), "STANDIN_API_KEY=x",
		"PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	codexTrustHooks(t, codex, env, proj, cfgPath)
	stdout, stderr, err := agenttest.Run(t, 90*time.Second, proj, env, codex, "exec", "--skip-git-repo-check", "do the task")
	if _, serr := os.Stat(filepath.Join(proj, "made-by-codex")); serr != nil {
		t.Fatalf("the approved command did not run (%v):\n%s\n%s", err, stdout, stderr)
	}
}

func TestPrintConfig_Gemini(t *testing.T) {
	gemini := agenttest.Bin(t, "gemini")
	g := agenttest.StartGateway(t, "[[policy.rules]]\ncapability = \"code:exec\"\ntarget = \"touch made-by-gemini\"\naction = \"approve\"\n")
	run := func(t *testing.T, drop string) (ran bool, out string) {
		model := geminiModel(t, "run_shell_command", map[string]any{"command": "touch made-by-gemini", "description": "make a file"})
		home := t.TempDir()
		proj := filepath.Join(home, "proj")
		if err := os.MkdirAll(proj, 0o700); err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, filepath.Join(home, ".gemini", "settings.json"),
			mergeJSON(t, `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`, without(t, printedConfig(t, g, "gemini", home), drop)))
		env := g.Env(home, "GEMINI_API_KEY=x", "GOOGLE_GEMINI_BASE_URL="+model.URL, "GEMINI_CLI_TRUST_WORKSPACE=true",
			"PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		stdout, stderr, err := agenttest.Run(t, 90*time.Second, proj, env, gemini, "-p", "do the task", "-m", "gemini-2.5-flash")
		_, serr := os.Stat(filepath.Join(proj, "made-by-gemini"))
		return serr == nil, fmt.Sprintf("%v\n%s\n%s", err, stdout, stderr)
	}
	if ran, out := run(t, ""); !ran {
		t.Fatalf("the approved command did not run: %s", out)
	}
	// The control: without the printed tools.allowed, Gemini CLI's own
	// confirmation stands after the gateway's allow, and headless nobody
	// gives it.
	if ran, out := run(t, "tools"); ran {
		t.Fatalf("the command ran with Gemini CLI's confirmation on: the test proves nothing: %s", out)
	}
}

// without is the printed JSON settings less the top-level key drop.
func without(t *testing.T, printed, drop string) string {
	t.Helper()
	if drop == "" {
		return printed
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(printed), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m[drop]; !ok {
		t.Fatalf("the printed settings have no %q", drop)
	}
	delete(m, drop)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// chatShell is a stand-in model asking for the command the chat agents'
// gateway approves.
func chatShell(t *testing.T, tool string) *agenttest.Chat {
	return agenttest.NewChat(t, agenttest.ToolCall{Name: tool, Input: map[string]any{"command": "printf gateway-%s approved", "description": "print"}})
}

func TestPrintConfig_Qwen(t *testing.T) {
	qwen := agenttest.Bin(t, "qwen")
	g := chatAgentGateway(t, "hooks.qwen")
	run := func(t *testing.T, drop string) (*agenttest.Chat, string) {
		m := chatShell(t, "run_shell_command")
		home := t.TempDir()
		base := strings.Replace(qwenSettings(`{}`), `"hooks": {}`, `"x": {}`, 1)
		agenttest.WriteFile(t, filepath.Join(home, ".qwen", "settings.json"),
			mergeJSON(t, base, without(t, printedConfig(t, g, "qwen", home), drop)))
		env := g.Env(home, "OPENAI_BASE_URL="+m.URL+"/v1", "OPENAI_API_KEY=x", "OPENAI_MODEL=fake-model",
			"QWEN_CODE_SUPPRESS_YOLO_WARNING=1", "PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		stdout, stderr, err := agenttest.Run(t, 120*time.Second, home, env, qwen, "-p", "do the task")
		return m, fmt.Sprintf("%v\n%s\n%s", err, stdout, stderr)
	}
	if m, out := run(t, ""); !m.Saw("gateway-approved") {
		t.Fatalf("the approved command did not run: %s", out)
	}
	// The control: without the printed approval mode, headless Qwen Code
	// does not run the shell tool at all.
	if m, out := run(t, "tools"); m.Saw("gateway-approved") {
		t.Fatalf("the command ran in Qwen Code's default mode: the test proves nothing: %s", out)
	}
}

func TestPrintConfig_Copilot(t *testing.T) {
	bin := agenttest.Bin(t, "copilot")
	g := chatAgentGateway(t, "hooks.copilot")
	m := chatShell(t, "bash")
	home := t.TempDir()
	agenttest.WriteFile(t, filepath.Join(home, ".copilot", "settings.json"), printedConfig(t, g, "copilot", home))
	dir, err := os.MkdirTemp(home, "proj-")
	if err != nil {
		t.Fatal(err)
	}
	env := g.Env(home, "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL="+m.URL+"/v1",
		"COPILOT_PROVIDER_API_KEY=x", "COPILOT_MODEL=fake-model", "COPILOT_AUTO_UPDATE=false",
		"COPILOT_HOME="+filepath.Join(home, ".copilot"),
		"PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	stdout, stderr, err := agenttest.Run(t, 120*time.Second, dir, env, bin, "-p", "do the task")
	if !m.Saw("gateway-approved") {
		t.Fatalf("the approved command did not run (%v):\n%s\n%s", err, stdout, stderr)
	}
}

func TestPrintConfig_OpenCode(t *testing.T) {
	bin := agenttest.Bin(t, "opencode")
	g := chatAgentGateway(t, "hooks.opencode")
	m := chatShell(t, "bash")
	home := t.TempDir()
	plugin, err := exec.Command(g.Bin, "hook", "opencode", "--plugin").Output()
	if err != nil {
		t.Fatalf("gateway hook opencode --plugin: %v", err)
	}
	agenttest.WriteFile(t, filepath.Join(home, ".local", "share", "gateway", "opencode-plugin.js"), string(plugin))
	cfg := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(cfg, "node_modules"), 0o700); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, filepath.Join(cfg, "package-lock.json"),
		`{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}`+"\n")
	agenttest.WriteFile(t, filepath.Join(cfg, "opencode.json"), mergeJSON(t, `{
  "provider": { "fake": { "npm": "@ai-sdk/openai-compatible", "name": "Fake",
    "options": { "baseURL": "`+m.URL+`/v1", "apiKey": "sk-fake" },
    "models": { "fake-model": { "name": "Fake Model", "tool_call": true } } } },
  "model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled"
}`, printedConfig(t, g, "opencode", home)))
	dir, err := os.MkdirTemp(home, "proj-")
	if err != nil {
		t.Fatal(err)
	}
	env := g.Env(home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_DATA_HOME="+home+"/.local/share",
		"XDG_CACHE_HOME="+home+"/.cache", "XDG_STATE_HOME="+home+"/.local/state", "OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1")
	stdout, stderr, err := agenttest.Run(t, 150*time.Second, dir, env, bin, "run", "do the task")
	if !m.Saw("gateway-approved") {
		t.Fatalf("the approved command did not run (%v):\n%s\n%s", err, stdout, stderr)
	}
}
