package hooks_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/policyimport"
)

// TestQwenPermissionsAgreeWithQwen: the pinned Qwen Code follows
// permissions.allow of its settings (in its SDK mode, stream-json, with
// the default approval mode, a command in permissions.allow runs and one
// in permissions.deny does not), and `gateway policy import --from qwen`
// of the same file approves, and blocks, the same command. (With neither
// entry Qwen Code asks its SDK client about the command and waits; that
// run is left out, as only a timeout would end it.)
func TestQwenPermissionsAgreeWithQwen(t *testing.T) {
	qwen := agenttest.Bin(t, "qwen")
	home := t.TempDir()
	settings := filepath.Join(home, ".qwen", "settings.json")
	run := func(list string) (ran bool, out string) {
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "run_shell_command", Input: map[string]any{"command": "touch made-by-qwen", "description": "make a file"}})
		agenttest.WriteFile(t, settings, strings.Replace(qwenSettings(`{}`), `"hooks": {}`,
			`"permissions": {"`+list+`": ["Bash(touch made-by-qwen)"]}`, 1))
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "OPENAI_BASE_URL=" + m.URL + "/v1",
			"OPENAI_API_KEY=x", "OPENAI_MODEL=fake-model"}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, qwen, "--input-format", "stream-json", "--output-format", "stream-json", "--approval-mode", "default")
		cmd.Dir, cmd.Env = home, env
		cmd.Stdin = strings.NewReader(`{"type":"user","message":{"role":"user","content":"do the task"}}` + "\n")
		cmd.WaitDelay = 5 * time.Second
		reap := agenttest.Contain(cmd)
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		reap()
		_, serr := os.Stat(filepath.Join(home, "made-by-qwen"))
		os.Remove(filepath.Join(home, "made-by-qwen"))
		return serr == nil, fmt.Sprintf("%v\n%s", err, b.String())
	}
	for _, tc := range []struct {
		list   string
		ran    bool
		action policy.Action
	}{{"deny", false, policy.ActionBlock}, {"allow", true, policy.ActionApprove}} {
		if ran, out := run(tc.list); ran != tc.ran {
			t.Fatalf("permissions.%s: the command ran = %v:\n%s", tc.list, ran, out)
		}
		res, err := policyimport.Import(policyimport.Qwen, policyimport.Env{Home: home, Cwd: t.TempDir()}, []string{settings})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rules) != 1 || res.Rules[0].Capability != "code:exec" || res.Rules[0].Target != "touch made-by-qwen" ||
			res.Rules[0].Action != tc.action || len(res.Skipped) != 0 {
			t.Fatalf("the import of the permissions.%s Qwen Code followed: %+v", tc.list, res)
		}
	}
}
