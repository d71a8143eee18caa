package mcpproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks/agenttest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	agenttest.Cleanup()
	os.Exit(code)
}

// The MCP proxy in front of the real @modelcontextprotocol/server-filesystem
// (pinned in .ci/agents), driven by the real MCP Inspector's CLI, in both
// forms docs/mcp-proxy.md gives: `gateway mcp-proxy --name fs -- …` on
// stdio, and /mcp/fs where the gateway starts the server itself.

type toolList struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (l toolList) names() []string {
	var out []string
	for _, t := range l.Tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

type toolResult struct {
	Content []struct {
		Type, Text string
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// fsConfig is the [[mcp.servers]] entry of the test: the server the
// gateway starts for /mcp/fs serves root; reads under root/work are
// allowed by a rule, and a block rule on code:exec (what unmapped tools
// are asked as) hides every tool the map does not name.
func fsConfig(server, root string) string {
	return fmt.Sprintf(`
[[mcp.servers]]
name = "fs"
command = [%q, %q]
unknown_tool = "ask"
wait = "1m"

[mcp.servers.tools]
read_text_file = { capability = "fs:read", target = "path" }
read_multiple_files = { capability = "fs:read", target = "paths" }
list_directory = { capability = "fs:read", target = "path" }
write_file = { capability = "fs:write", target = "path" }

[[policy.rules]]
capability = "fs:read"
target = %q
action = "approve"

[[policy.rules]]
capability = "code:exec"
target = "*"
action = "block"
`, server, root, root+"/work/**")
}

func TestInspector_FilesystemServer(t *testing.T) {
	inspector := agenttest.Bin(t, "mcp-inspector") // skip (or fail) before building anything
	server := agenttest.Bin(t, "mcp-server-filesystem")
	root := t.TempDir() // the server's HOME and its one allowed directory
	must(t, os.MkdirAll(filepath.Join(root, "work"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "work", "notes.txt"), []byte("the notes of the day"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, ".ssh", "id_rsa"), []byte("PRIVATE-KEY-never-shown"), 0o600))
	g := agenttest.StartGateway(t, fsConfig(server, root))

	// ways are the two forms, each without and with the blocked tools.
	ways := map[string]func(all bool, method ...string) []string{
		"stdio": func(all bool, method ...string) []string {
			args := append([]string{"-e", "GATEWAY_URL=" + g.URL, "-e", "GATEWAY_TOKEN=" + agenttest.AgentToken, "-e", "HOME=" + root}, method...)
			args = append(args, "--", g.Bin, "mcp-proxy", "--name", "fs")
			if all {
				args = append(args, "--include-blocked")
			}
			return append(args, "--", server, root)
		},
		"http": func(all bool, method ...string) []string {
			u := g.URL + "/mcp/fs"
			if all {
				u += "?include_blocked=true"
			}
			args := []string{u, "--transport", "http", "--header", "Authorization: Bearer " + agenttest.AgentToken}
			return append(args, method...)
		},
	}
	run := func(t *testing.T, out any, failing bool, args ...string) {
		t.Helper()
		stdout, stderr, err := agenttest.Run(t, 2*time.Minute, t.TempDir(), g.Env(root), inspector, append([]string{"--cli"}, args...)...)
		if (err != nil) != failing {
			t.Fatalf("mcp-inspector %v: exit %v\nstdout %s\nstderr %s", args, err, stdout, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), out); err != nil {
			t.Fatalf("mcp-inspector %v printed %q (stderr %s): %v", args, stdout, stderr, err)
		}
	}
	call := func(tool string, args ...string) []string {
		out := []string{"--method", "tools/call", "--tool-name", tool}
		for _, a := range args {
			out = append(out, "--tool-arg", a)
		}
		return out
	}

	for _, name := range []string{"stdio", "http"} {
		way := func(method ...string) []string { return ways[name](false, method...) }
		wayAll := func(method ...string) []string { return ways[name](true, method...) }
		t.Run(name, func(t *testing.T) {
			var list toolList
			run(t, &list, false, way("--method", "tools/list")...)
			want := []string{"list_directory", "read_multiple_files", "read_text_file", "write_file"}
			if got := list.names(); !slices.Equal(got, want) {
				t.Fatalf("tools/list = %v, want only the mapped ones %v (code:exec is blocked)", got, want)
			}

			var res toolResult
			run(t, &res, false, way(call("read_text_file", "path="+filepath.Join(root, "work", "notes.txt"))...)...)
			if res.IsError || res.text() != "the notes of the day" {
				t.Fatalf("allowed read: %+v", res)
			}

			for _, key := range []string{"~/.ssh/id_rsa", filepath.Join(root, ".ssh", "id_rsa")} {
				if name == "http" && strings.HasPrefix(key, "~") {
					continue // the gateway's HOME is not root
				}
				res = toolResult{}
				run(t, &res, true, way(call("read_text_file", "path="+key)...)...)
				if !res.IsError || !strings.Contains(res.text(), "forbidden path .ssh") || strings.Contains(res.text(), "PRIVATE-KEY") {
					t.Fatalf("read of %s: %+v", key, res)
				}
			}

			// --include-blocked / ?include_blocked=true show every tool...
			var all toolList
			run(t, &all, false, wayAll("--method", "tools/list")...)
			if len(all.Tools) <= len(want) || !slices.Contains(all.names(), "move_file") {
				t.Fatalf("include_blocked listed %v", all.names())
			}
			// ...but a tool the list left out is refused when called anyway.
			res = toolResult{}
			run(t, &res, true, wayAll(call("move_file", "source="+filepath.Join(root, "work", "notes.txt"), "destination="+filepath.Join(root, "moved.txt"))...)...)
			if !res.IsError || !strings.Contains(res.text(), "destructiveHint") {
				t.Fatalf("move_file: %+v", res)
			}
			if _, err := os.Stat(filepath.Join(root, "work", "notes.txt")); err != nil {
				t.Fatalf("the file was moved: %v", err)
			}

			// A write waits for a person: Allow once lets it happen...
			target := filepath.Join(root, "work", "from-"+name+".txt")
			decided := g.DecideNext(time.Minute, "allow_once")
			res = toolResult{}
			run(t, &res, false, way(call("write_file", "path="+target, "content=written after approval")...)...)
			ev := <-decided
			if ev.ID == "" || ev.Capability != "fs:write" || ev.Target != target {
				t.Fatalf("the write did not wait for a person: %+v", ev)
			}
			got, err := client.New(g.URL, agenttest.AgentToken).Get(context.Background(), ev.ID, 0)
			must(t, err)
			checkCard(t, got)
			if b, err := os.ReadFile(target); res.IsError || err != nil || string(b) != "written after approval" {
				t.Fatalf("allowed write: %+v, file %q %v", res, b, err)
			}

			// ...and Deny stops it.
			denied := filepath.Join(root, "work", "denied-"+name+".txt")
			decided = g.DecideNext(time.Minute, "deny")
			res = toolResult{}
			run(t, &res, true, way(call("write_file", "path="+denied, "content=never")...)...)
			if ev := <-decided; ev.ID == "" || !res.IsError || !strings.Contains(res.text(), "denied") {
				t.Fatalf("denied write: %+v (event %+v)", res, ev)
			}
			if _, err := os.Stat(denied); !os.IsNotExist(err) {
				t.Fatalf("a denied write happened: %v", err)
			}
		})
	}
}

// checkCard: what the person saw names the server, the tool, its
// annotations and its arguments.
func checkCard(t *testing.T, r client.Request) {
	t.Helper()
	for _, want := range []string{"MCP server fs", "tool write_file", "destructive", `"content":"written after approval"`} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("card summary %q lacks %q", r.Summary, want)
		}
	}
	if r.Executor != "mcp:fs" {
		t.Errorf("executor %q", r.Executor)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
