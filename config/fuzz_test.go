package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to Load as a config file: it may refuse
// them, but it must not panic, and a refusal must not show a secret.
func FuzzLoad(f *testing.F) {
	if example, err := os.ReadFile("gateway.example.toml"); err == nil {
		f.Add(example)
	}
	f.Add([]byte(valid))
	f.Add([]byte("[[agents]]\nid = \"a\"\n[[agents]]\nx = 1\n[agents.y]\n"))
	f.Add([]byte("[policy]\nrules = [{capability = \"*\", target = \"*\", action = \"approve\"}]\n"))
	f.Add([]byte("[hooks.claude_code.tools]\n\"\" = \"\"\n"))
	f.Add([]byte("[chat]\napprovers = [\"%s\"]\n"))
	f.Add([]byte("x = = \n"))
	dir := f.TempDir()
	home := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.toml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		e := map[string]string{"HOME": home}
		for k, v := range secrets {
			e[k] = v
		}
		cfg, err := load(path, true, env(e))
		if err != nil {
			// A file may spell a secret itself; only values it could not contain count.
			if s := err.Error(); strings.Contains(s, "SECRET-00") && !strings.Contains(string(data), "SECRET-00") {
				t.Errorf("a secret leaked: %s", s)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("Load accepted what Validate refuses: %v", err)
		}
		_ = cfg.Redacted()
	})
}
