package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoad_MCPServers(t *testing.T) {
	e := baseEnv(t)
	e["UPSTREAM_TOKEN"] = "up-SECRET-0099"
	cfg, err := load(writeFile(t, valid+`
[[mcp.servers]]
name = "fs"
command = ["mcp-server-filesystem", "/srv/work"]
[mcp.servers.tools]
read_text_file = { capability = "fs:read", target = "path" }
move_file = { capability = "fs:write", target = ["source", "destination"] }
now = { capability = "time:read" }

[[mcp.servers]]
name = "remote"
url = "http://127.0.0.1:9000/mcp"
token_env = "UPSTREAM_TOKEN"
unknown_tool = "deny"
wait = "2m"
`), true, env(e))
	if err != nil {
		t.Fatal(err)
	}
	fs := cfg.MCP.MCPServerNamed("fs")
	if fs == nil || fs.UnknownTool != "ask" || time.Duration(fs.Wait) != DefaultMCPWait {
		t.Fatalf("fs = %+v", fs)
	}
	want := map[string]MCPTool{
		"read_text_file": {Capability: "fs:read", Target: []string{"path"}},
		"move_file":      {Capability: "fs:write", Target: []string{"source", "destination"}},
		"now":            {Capability: "time:read"},
	}
	if !reflect.DeepEqual(fs.Tools, want) {
		t.Errorf("tools = %+v", fs.Tools)
	}
	r := cfg.MCP.MCPServerNamed("remote")
	if r.Token != "up-SECRET-0099" || r.UnknownTool != "deny" || time.Duration(r.Wait) != 2*time.Minute {
		t.Errorf("remote = %+v", r)
	}
	red := cfg.Redacted()
	if red.MCP.Servers[1].Token == r.Token {
		t.Error("config show would print the upstream token")
	}
	red.MCP.Servers[0].Tools["x"] = MCPTool{}
	if _, ok := fs.Tools["x"]; ok {
		t.Error("Redacted shares the tools map")
	}
	if cfg.MCP.MCPServerNamed("nope") != nil {
		t.Error("found a server never configured")
	}
	got := fs.MCPCommandEnv(env(map[string]string{"PATH": "/bin", "SLACK_BOT_TOKEN": "x", "HOME": "/h"}))
	if !reflect.DeepEqual(got, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("command env = %v", got)
	}
}

func TestLoad_MCPRefused(t *testing.T) {
	for _, c := range []struct{ name, toml, want string }{
		{"bad name", "[[mcp.servers]]\nname = \"a/b\"\n", `mcp.servers[0].name: "a/b"`},
		{"twice", "[[mcp.servers]]\nname = \"a\"\n[[mcp.servers]]\nname = \"a\"\n", `mcp.servers[1].name: "a" is named twice`},
		{"both", "[[mcp.servers]]\nname = \"a\"\ncommand = [\"x\"]\nurl = \"http://h/mcp\"\n", "mcp.servers[0]: command and url both set"},
		{"empty program", "[[mcp.servers]]\nname = \"a\"\ncommand = [\"\"]\n", "mcp.servers[0].command: empty program name"},
		{"bad url", "[[mcp.servers]]\nname = \"a\"\nurl = \"ftp://h\"\n", "mcp.servers[0].url:"},
		{"url credentials", "[[mcp.servers]]\nname = \"a\"\nurl = \"http://u:p@h/mcp\"\n", "mcp.servers[0].url: credentials in the URL"},
		{"empty token", "[[mcp.servers]]\nname = \"a\"\nurl = \"http://h/mcp\"\ntoken_env = \"UNSET_TOKEN\"\n", "mcp.servers[0].token_env: UNSET_TOKEN is empty"},
		{"token for a command", "[[mcp.servers]]\nname = \"a\"\ncommand = [\"x\"]\ntoken_env = \"METNOS_AGENT_TOKEN\"\n", "mcp.servers[0].token_env: only for url"},
		{"env name", "[[mcp.servers]]\nname = \"a\"\nenv = [\"A B\"]\n", "mcp.servers[0].env: not an environment variable name"},
		{"unknown_tool", "[[mcp.servers]]\nname = \"a\"\nunknown_tool = \"allow\"\n", `mcp.servers[0].unknown_tool: unknown answer "allow"`},
		{"wait", "[[mcp.servers]]\nname = \"a\"\nwait = \"0s\"\n", "mcp.servers[0].wait: must be positive"},
		{"capability", "[[mcp.servers]]\nname = \"a\"\n[mcp.servers.tools]\nt = { capability = \"fs:delete\", target = \"p\" }\n", "mcp.servers[0].tools.t.capability:"},
		{"no target", "[[mcp.servers]]\nname = \"a\"\n[mcp.servers.tools]\nt = { capability = \"fs:read\" }\n", "mcp.servers[0].tools.t.target: fs:read needs a target"},
		{"target for none", "[[mcp.servers]]\nname = \"a\"\n[mcp.servers.tools]\nt = { capability = \"time:read\", target = \"p\" }\n", "mcp.servers[0].tools.t.target: time:read takes no target"},
		{"target type", "[[mcp.servers]]\nname = \"a\"\n[mcp.servers.tools]\nt = { capability = \"fs:read\", target = 3 }\n", "target: want an argument name"},
		{"unknown key", "[[mcp.servers]]\nname = \"a\"\ncomand = [\"x\"]\n", "mcp.servers[0].comand: unknown key (did you mean command?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(writeFile(t, valid+c.toml), true, env(baseEnv(t)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}
