package hooks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/policyimport"
)

// TestGeminiPolicyFileAgreesWithGemini: a policy file in the shape Gemini
// CLI saves "Always allow" in (~/.gemini/policies/*.toml) is read by the
// pinned Gemini CLI itself, which runs the command it allows headless
// with no --yolo (and, without the file, does not), and `gateway policy
// import --from gemini` of the same file approves that command.
func TestGeminiPolicyFileAgreesWithGemini(t *testing.T) {
	gemini := agenttest.Bin(t, "gemini")
	home := t.TempDir()
	pol := filepath.Join(home, ".gemini", "policies", "mine.toml")
	run := func(withPolicy bool) (ran bool, out string) {
		model := geminiModel(t, "run_shell_command", map[string]any{"command": "touch made-by-gemini", "description": "make a file"})
		proj := filepath.Join(home, "proj")
		if err := os.RemoveAll(proj); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(proj, 0o700); err != nil {
			t.Fatal(err)
		}
		agenttest.WriteFile(t, filepath.Join(home, ".gemini", "settings.json"), `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`)
		os.Remove(pol)
		if withPolicy {
			agenttest.WriteFile(t, pol, "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch made-by-gemini\"\ndecision = \"allow\"\npriority = 100\n")
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "GEMINI_API_KEY=x",
			"GOOGLE_GEMINI_BASE_URL=" + model.URL, "GEMINI_CLI_TRUST_WORKSPACE=true"}
		stdout, stderr, err := agenttest.Run(t, 90*time.Second, proj, env, gemini, "-p", "do the task", "-m", "gemini-2.5-flash")
		_, serr := os.Stat(filepath.Join(proj, "made-by-gemini"))
		return serr == nil, fmt.Sprintf("%v\n%s\n%s", err, stdout, stderr)
	}
	if ran, out := run(false); ran {
		t.Fatalf("headless Gemini CLI ran the command with no policy allowing it: the test proves nothing:\n%s", out)
	}
	if ran, out := run(true); !ran {
		t.Fatalf("Gemini CLI did not run the command its policy allows:\n%s", out)
	}
	proj := filepath.Join(home, "proj")
	res, err := policyimport.Import(policyimport.Gemini, policyimport.Env{Home: home, Cwd: proj}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rules) == 0 || res.Rules[0].Target != "touch made-by-gemini" || res.Rules[0].Action != policy.ActionApprove ||
		res.Rules[0].Capability != "code:exec" || len(res.Skipped) != 0 {
		t.Fatalf("the import of the policy Gemini CLI followed: %+v", res)
	}
}
