package agenttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ClaudeResult is what `claude -p --output-format json` prints.
type ClaudeResult struct {
	Result            string            `json:"result"`
	IsError           bool              `json:"is_error"`
	PermissionDenials []json.RawMessage `json:"permission_denials"`
}

// Claude is one Claude Code session of the pinned CLI: a HOME of its own
// (~/.claude/settings.json as the test writes it), a project directory,
// the gateway binary on PATH as `gateway`, and an environment that reaches
// the gateway (GATEWAY_URL, GATEWAY_TOKEN) and the scripted model, and
// nothing else.
type Claude struct {
	Home, Cwd string
	Env       []string
	bin       string
}

// NewClaude prepares a session; settings, if not "", is written to
// ~/.claude/settings.json.
func NewClaude(t testing.TB, g *Gateway, model *Anthropic, settings string) *Claude {
	t.Helper()
	bin := Bin(t, "claude")
	home, cwd, pathDir := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Symlink(g.Bin, filepath.Join(pathDir, "gateway")); err != nil {
		t.Fatal(err)
	}
	if settings != "" {
		WriteFile(t, filepath.Join(home, ".claude", "settings.json"), settings)
	}
	env := g.Env(home, model.ClaudeEnv()...)
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + pathDir + string(os.PathListSeparator) + p
		}
	}
	return &Claude{Home: home, Cwd: cwd, Env: env, bin: bin}
}

// WriteFile writes content to path (0600), making its directories.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Run runs `claude -p <prompt> --output-format json args…` and parses its
// answer.
func (c *Claude) Run(t testing.TB, args ...string) ClaudeResult {
	t.Helper()
	res, err := c.Try(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Try is Run for a goroutine other than the test's: it returns the error.
func (c *Claude) Try(t testing.TB, args ...string) (ClaudeResult, error) {
	args = append([]string{"-p", "Do the one step you are asked to do.", "--output-format", "json"}, args...)
	stdout, stderr, err := Run(t, 3*time.Minute, c.Cwd, c.Env, c.bin, args...)
	var res ClaudeResult
	if jerr := json.Unmarshal([]byte(stdout), &res); jerr != nil {
		return res, fmt.Errorf("claude: %v; stdout %q; stderr %q", err, stdout, stderr)
	}
	return res, nil
}

// SSHKeySecret is the content of the key SSHKey writes.
const SSHKeySecret = "-----BEGIN OPENSSH PRIVATE KEY----- agenttest-secret-6f1d"

// SSHKey writes home/.ssh/id_rsa holding SSHKeySecret and returns its path.
func SSHKey(t testing.TB, home string) string {
	t.Helper()
	key := filepath.Join(home, ".ssh", "id_rsa")
	WriteFile(t, key, SSHKeySecret+"\n")
	return key
}

// WriteDecidedBy runs the session (args…), waits until the gateway holds
// an fs:write request on path for a person, checks nothing was written
// yet, decides it, and returns the session's result.
func WriteDecidedBy(t testing.TB, g *Gateway, c *Claude, path, decision string, args ...string) ClaudeResult {
	t.Helper()
	type ran struct {
		res ClaudeResult
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := c.Try(t, args...)
		done <- ran{res, err}
	}()
	e := g.NextPending(t, 2*time.Minute)
	if e.Capability != "fs:write" || e.Target != path || !strings.HasSuffix(e.CallID, "_scripted") {
		t.Fatalf("asked about %s %s (call_id %q), want fs:write %s with the tool call's id", e.Capability, e.Target, e.CallID, path)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("written before anyone decided")
	}
	g.Decide(t, e.ID, decision)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.res
}
