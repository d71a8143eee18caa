// An agent's `run` table: what `gateway run` adds to the sandbox's
// defaults for it.

package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// AgentRun is agents[].run: added to what `gateway run` enforces by
// default for the agent.
type AgentRun struct {
	// Write lists more directories (or files) the agent may write, besides
	// its workspace, its private TMPDIR and its program's state directories.
	Write []string `toml:"write"`
	// ReadDeny lists more paths the agent may not read, besides the
	// guard's forbidden paths.
	ReadDeny []string `toml:"read_deny"`
	// Network, when set to false, leaves the agent without the egress
	// proxy: it reaches the gateway's API and nothing else. Unset: on.
	Network *bool `toml:"network"`
}

// NetworkOn reports whether the agent gets the egress proxy.
func (r AgentRun) NetworkOn() bool { return r.Network == nil || *r.Network }

// validateAgentRun checks agents[i].run's paths: absolute (or under ~/),
// no wildcards, not the whole file system.
func validateAgentRun(p *problems, key string, r AgentRun) {
	for name, list := range map[string][]string{"write": r.Write, "read_deny": r.ReadDeny} {
		for j, w := range list {
			k := fmt.Sprintf("%s.run.%s[%d]", key, name, j)
			switch {
			case !filepath.IsAbs(w):
				p.add(k, "%q is not an absolute path or one under ~/", w)
			case strings.ContainsAny(w, "*?[{\x00"):
				p.add(k, "%q holds a wildcard or a NUL byte: name paths", w)
			case filepath.Clean(w) == "/":
				p.add(k, "%q is the whole file system", w)
			}
		}
	}
}
