package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
)

// The official MCP Inspector's CLI mode (the pinned
// @modelcontextprotocol/inspector) against `gateway mcp` over stdio and
// against the gateway's /mcp over streamable HTTP.

// inspector runs `mcp-inspector --cli` with args and decodes the JSON it
// prints into out. It must exit 0 unless failing is set (it exits 5 for
// a tool result with isError).
func inspector(t *testing.T, g *agenttest.Gateway, out any, failing bool, args ...string) {
	t.Helper()
	bin := agenttest.Bin(t, "mcp-inspector")
	stdout, stderr, err := agenttest.Run(t, time.Minute, t.TempDir(), g.Env(t.TempDir()), bin, append([]string{"--cli"}, args...)...)
	if (err != nil) != failing {
		t.Fatalf("mcp-inspector %v: exit %v\nstdout %s\nstderr %s", args, err, stdout, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		t.Fatalf("mcp-inspector %v printed %q: %v", args, stdout, err)
	}
}

type toolList struct {
	Tools []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"inputSchema"`
	} `json:"tools"`
}

type toolResult struct {
	Content []struct {
		Type, Text string
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// transports are the two ways in: each turns the Inspector's method
// arguments into its whole command line.
func transports(g *agenttest.Gateway) map[string]func(method ...string) []string {
	return map[string]func(...string) []string{
		"stdio": func(method ...string) []string {
			args := append([]string{"-e", "GATEWAY_URL=" + g.URL, "-e", "GATEWAY_TOKEN=" + agenttest.AgentToken}, method...)
			return append(args, "--", g.Bin, "mcp")
		},
		"http": func(method ...string) []string {
			args := []string{g.URL + "/mcp", "--transport", "http", "--header", "Authorization: Bearer " + agenttest.AgentToken}
			return append(args, method...)
		},
	}
}

// callTool is the method arguments of a tools/call.
func callTool(tool string, args ...string) []string {
	out := []string{"--method", "tools/call", "--tool-name", tool}
	for _, a := range args {
		out = append(out, "--tool-arg", a)
	}
	return out
}

func TestInspector(t *testing.T) {
	agenttest.Bin(t, "mcp-inspector") // skip (or fail) before building anything
	g := agenttest.StartGateway(t, "")
	for name, way := range transports(g) {
		t.Run(name, func(t *testing.T) {
			var list toolList
			inspector(t, g, &list, false, way("--method", "tools/list")...)
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
				if tool.InputSchema["type"] != "object" {
					t.Errorf("%s: input schema %v", tool.Name, tool.InputSchema)
				}
			}
			if strings.Join(names, ",") != "approval_prompt,check,request_approval" {
				t.Fatalf("tools %v", names)
			}

			var res toolResult
			inspector(t, g, &res, false, way(callTool("request_approval", "capability=llm:local", "intent=summarise the notes", "call_id=insp-"+name)...)...)
			if res.IsError || res.StructuredContent["status"] != "allowed" || res.StructuredContent["call_id"] != "insp-"+name ||
				!strings.Contains(res.text(), `"status":"allowed"`) {
				t.Fatalf("request_approval: %+v", res)
			}

			res = toolResult{}
			inspector(t, g, &res, false, way(callTool("check", "capability=fs:write", "target=/srv/app/config.yml")...)...)
			if res.IsError || res.StructuredContent["outcome"] != "approval_required" {
				t.Fatalf("check: %+v", res)
			}

			res = toolResult{}
			inspector(t, g, &res, false, way(callTool("approval_prompt", "tool_name=Read", `input={"file_path":"/home/x/.ssh/id_rsa"}`, "tool_use_id=toolu_insp_"+name)...)...)
			var ans struct{ Behavior, Message string }
			if err := json.Unmarshal([]byte(res.text()), &ans); err != nil || ans.Behavior != "deny" || !strings.Contains(ans.Message, "forbidden path .ssh") {
				t.Fatalf("approval_prompt: %+v (%v)", res, err)
			}

			res = toolResult{}
			inspector(t, g, &res, true, way(callTool("request_approval", "capability=fs:nope")...)...)
			if !res.IsError || !strings.Contains(res.text(), "capability") {
				t.Fatalf("bad capability: %+v", res)
			}
		})
	}
}

// TestInspector_HTTPNeedsToken: /mcp refuses a caller without an agent's
// token.
func TestInspector_HTTPNeedsToken(t *testing.T) {
	agenttest.Bin(t, "mcp-inspector") // skip (or fail) before building anything
	g := agenttest.StartGateway(t, "")
	bin := agenttest.Bin(t, "mcp-inspector")
	stdout, _, err := agenttest.Run(t, time.Minute, t.TempDir(), g.Env(t.TempDir()), bin, "--cli", g.URL+"/mcp",
		"--transport", "http", "--header", "Authorization: Bearer not-a-token", "--method", "tools/list")
	if err == nil || strings.Contains(stdout, "approval_prompt") {
		t.Fatalf("listed the tools with a bad token: %s", stdout)
	}
}
