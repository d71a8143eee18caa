package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/metnos/gateway/config"
)

// TestLocalAgents: a config with no agents (make run) gets an agent that is
// not admin, for hooks and agents, and separately the CLI's admin
// credential, each token 0600 beside the database and kept across
// restarts; the admin token's file is among the paths the guard keeps
// from agents.
func TestLocalAgents(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Storage.Path = filepath.Join(dir, "state", "gateway.db")
	first := cfg
	local, err := ensureLocalAgents(&first)
	if err != nil || !local.created {
		t.Fatalf("first start: %v %+v", err, local)
	}
	if len(first.Agents) != 2 || first.Agents[0].ID != localAgentID || first.Agents[0].Admin ||
		first.Agents[1].ID != localAdminID || !first.Agents[1].Admin {
		t.Fatalf("agents %+v: want %s (not admin) and %s (admin)", first.Agents, localAgentID, localAdminID)
	}
	if first.Agents[0].Token == first.Agents[1].Token {
		t.Fatal("the agent and the admin share a token")
	}
	for _, p := range []string{local.agentPath, local.adminPath} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v mode %v, want 0600", p, err, st.Mode().Perm())
		}
	}
	again := cfg
	local2, err := ensureLocalAgents(&again)
	if err != nil || local2.created || again.Agents[0].Token != first.Agents[0].Token || again.Agents[1].Token != first.Agents[1].Token {
		t.Fatalf("second start: %v created %v, tokens changed %v", err, local2.created,
			again.Agents[0].Token != first.Agents[0].Token)
	}
	if own := cfg.OwnPaths(func(string) string { return dir }); !slices.Contains(own, local.adminPath) {
		t.Errorf("the gateway's own paths %v leave out %s", own, local.adminPath)
	}
	// A config that names agents gets none.
	named := cfg
	named.Agents = []config.Agent{config.NewAgent("a1")}
	if l, err := ensureLocalAgents(&named); err != nil || l.agentPath != "" || len(named.Agents) != 1 {
		t.Errorf("a config with agents: %v %+v %d agents", err, l, len(named.Agents))
	}
}
