package config

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/metnos/gateway/policy"
)

// MCP is the [mcp] table: the MCP servers the gateway stands in front of
// (`gateway mcp-proxy --name NAME` on an agent's machine, /mcp/NAME on the
// gateway).
type MCP struct {
	Servers []MCPServer `toml:"servers"` // [[mcp.servers]], in file order
}

// MCPServer is one [[mcp.servers]] entry.
type MCPServer struct {
	// Name is what `gateway mcp-proxy --name` and /mcp/NAME call it.
	Name string `toml:"name"`
	// Command is the server the gateway starts for /mcp/NAME (program and
	// arguments, no shell); URL an upstream streamable-HTTP server instead.
	// Neither: the server is only proxied on agents' machines.
	Command []string `toml:"command"`
	URL     string   `toml:"url"`
	// Env names the gateway's environment variables the command gets,
	// besides PATH, HOME, USER, LANG, LC_ALL, TZ and TMPDIR: the
	// gateway's own secrets never reach it unless named here.
	Env []string `toml:"env"`
	// TokenEnv names the variable holding the bearer token sent to URL,
	// resolved into Token (secret).
	TokenEnv string `toml:"token_env"`
	Token    string `toml:"-"`
	// UnknownTool is the answer for a tool the map does not name: "ask"
	// (a person decides, as code:exec) or "deny". A tool the server
	// annotates destructiveHint is denied either way.
	UnknownTool string `toml:"unknown_tool"`
	// Wait is how long a tool call waits for a person (the request's
	// timeout); keep it under the MCP client's own request timeout.
	Wait Duration `toml:"wait"`
	// Tools maps the server's tool names to what they are asked as.
	Tools map[string]MCPTool `toml:"tools"`
}

// MCPTool is one [mcp.servers.tools] entry.
type MCPTool struct {
	Capability string `toml:"capability"`
	// Target names the arguments that hold what the tool acts on; each
	// (a string, or a list of strings) is its own request. Required
	// unless the capability takes no target.
	Target MCPTargets `toml:"target"`
}

// MCPServerNamed is the [[mcp.servers]] entry of that name, or nil.
func (m MCP) MCPServerNamed(name string) *MCPServer {
	for i := range m.Servers {
		if m.Servers[i].Name == name {
			return &m.Servers[i]
		}
	}
	return nil
}

// DefaultMCPWait is [[mcp.servers]] wait's default.
const DefaultMCPWait = 9 * time.Minute

// MCPTargets are the argument names of a tool's target key, which the file
// writes as one name or a list of them.
type MCPTargets []string

// UnmarshalTOML reads one argument name or a list of them.
func (t *MCPTargets) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*t = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("target: want an argument name or a list of them, got %T in the list", e)
			}
			*t = append(*t, s)
		}
	default:
		return fmt.Errorf("target: want an argument name or a list of them, got %T", v)
	}
	return nil
}

var mcpNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// passedEnv are the variables every command of [[mcp.servers]] gets.
var passedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// MCPCommandEnv is the environment a [[mcp.servers]] command runs with:
// passedEnv and the entry's env names, with their values from getenv
// (unset ones are left out).
func (s MCPServer) MCPCommandEnv(getenv func(string) string) []string {
	var out []string
	for _, k := range append(slices.Clone(passedEnv), s.Env...) {
		if v := getenv(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func (c *Config) validateMCP(p *problems) {
	seen := map[string]bool{}
	for i, s := range c.MCP.Servers {
		key := fmt.Sprintf("mcp.servers[%d]", i)
		switch {
		case !mcpNameRE.MatchString(s.Name):
			p.add(key+".name", "%q: want 1-64 of a-z, 0-9, _, . and -, starting with a letter or digit (it is the path /mcp/NAME)", s.Name)
		case seen[s.Name]:
			p.add(key+".name", "%q is named twice", s.Name)
		}
		seen[s.Name] = true
		if len(s.Command) > 0 && s.URL != "" {
			p.add(key, "command and url both set: the gateway either starts the server or connects to it")
		}
		if len(s.Command) > 0 && strings.TrimSpace(s.Command[0]) == "" {
			p.add(key+".command", "empty program name")
		}
		if s.URL != "" {
			if err := httpURL(s.URL); err != nil {
				p.add(key+".url", "%q: %v", s.URL, err)
			} else if u, _ := url.Parse(s.URL); u.User != nil {
				p.add(key+".url", "credentials in the URL: name the token with token_env instead")
			}
		}
		if s.TokenEnv != "" {
			if s.URL == "" {
				p.add(key+".token_env", "only for url (a command gets its secrets through env)")
			}
			secret(p, key+".token_env", s.TokenEnv, s.Token, true)
		}
		for _, e := range s.Env {
			validEnvName(p, key+".env", e)
		}
		positive(p, key+".wait", s.Wait)
		switch s.UnknownTool {
		case "ask", "deny":
		default:
			p.add(key+".unknown_tool", "unknown answer %q (want ask or deny)", s.UnknownTool)
		}
		names := slices.Collect(maps.Keys(s.Tools))
		sort.Strings(names)
		for _, name := range names {
			validateMCPTool(p, joinKey(key+".tools", name), name, s.Tools[name])
		}
	}
}

func validateMCPTool(p *problems, key, name string, t MCPTool) {
	if strings.TrimSpace(name) == "" {
		p.add(key, "empty tool name")
	}
	c, err := policy.Lookup(t.Capability)
	if err != nil {
		p.wrap(key+".capability", err)
		return
	}
	switch {
	case len(t.Target) == 0 && c.TargetKind != policy.KindNone:
		p.add(key+".target", "%s needs a target: name the argument that holds it (target = \"path\")", c.Name)
	case len(t.Target) > 0 && c.TargetKind == policy.KindNone:
		p.add(key+".target", "%s takes no target", c.Name)
	}
	for _, a := range t.Target {
		if strings.TrimSpace(a) == "" {
			p.add(key+".target", "empty argument name")
		}
	}
}

// redactedMCP is m with every token redacted, sharing nothing mutable.
func redactedMCP(m MCP) MCP {
	if m.Servers == nil {
		return m
	}
	out := MCP{Servers: make([]MCPServer, len(m.Servers))}
	for i, s := range m.Servers {
		s.Token = redact(s.Token)
		s.Command = slices.Clone(s.Command)
		s.Env = slices.Clone(s.Env)
		tools := make(map[string]MCPTool, len(s.Tools))
		for k, t := range s.Tools {
			t.Target = slices.Clone(t.Target)
			tools[k] = t
		}
		s.Tools = tools
		out.Servers[i] = s
	}
	return out
}
