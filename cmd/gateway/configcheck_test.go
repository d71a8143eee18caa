package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheck_TimezoneAndLanguage: config check names the time zone it
// will show times in, and refuses an unknown zone or language by its key.
func TestConfigCheck_TimezoneAndLanguage(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": dir, "XDG_STATE_HOME": dir + "/state"}[k] }
	write := func(body string) string {
		p := filepath.Join(dir, "gateway.toml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := runCLI(context.Background(), getenv, "", "config", "check", "--config",
		write("[server]\ntimezone = \"Europe/Rome\"\n[web]\nlanguage = \"it\"\n"))
	if r.code != 0 || !strings.Contains(r.stdout, "time zone Europe/Rome") {
		t.Errorf("good config: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(context.Background(), getenv, "", "config", "check", "--config",
		write("[server]\ntimezone = \"Europe/Atlantis\"\n[telegram]\nlanguage = \"fr\"\n"))
	if r.code == 0 || !strings.Contains(r.stderr, `server.timezone: unknown time zone "Europe/Atlantis"`) ||
		!strings.Contains(r.stderr, `telegram.language: unknown language "fr"`) {
		t.Errorf("bad config: exit %d, stderr %q", r.code, r.stderr)
	}
}
