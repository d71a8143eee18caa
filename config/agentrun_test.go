package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad_AgentRun(t *testing.T) {
	e := baseEnv(t)
	cfg, err := load(writeFile(t, valid+`
[agents.run]
write = ["~/.cache/pip", "/srv/data"]
read_deny = ["~/private"]
network = false
`), true, env(e))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Agents[0].Run
	if r.NetworkOn() || len(r.Write) != 2 || r.Write[0] != filepath.Join(e["HOME"], ".cache/pip") || r.ReadDeny[0] != filepath.Join(e["HOME"], "private") {
		t.Fatalf("run = %+v", r)
	}
	cfg, err = load(writeFile(t, valid), true, env(e))
	if err != nil || !cfg.Agents[0].Run.NetworkOn() {
		t.Fatalf("default: network off (%v)", err)
	}
	for _, bad := range []string{`write = ["relative/dir"]`, `read_deny = ["/home/*/x"]`, `write = ["/"]`, `netwrok = true`} {
		_, err := load(writeFile(t, valid+"\n[agents.run]\n"+bad+"\n"), true, env(e))
		if err == nil || !strings.Contains(err.Error(), "agents[0].run") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
