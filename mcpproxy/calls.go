package mcpproxy

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/policy"
)

// UnknownCapability is what a call of a tool the map does not name is
// asked as when unknown_tool is "ask": a tool of unknown effect is as
// good as running a program, which only a person allows, every time
// (code:exec needs approval at every autonomy level).
const UnknownCapability = "code:exec"

// Limits of what one call puts on its requests.
const (
	// maxSummaryArgs bounds the arguments shown on the card; longer ones
	// are cut with a visible marker.
	maxSummaryArgs = 1500
	// maxArgString bounds each string argument handed to the guard when
	// the arguments are large (a file's content): the guard needs names
	// and paths, and the request body is bounded.
	maxArgString = 2048
	// maxArgsJSON is the size under which the arguments go to the guard
	// whole.
	maxArgsJSON = 32 << 10
)

// refusal is a call the proxy refuses before asking anyone: its text is
// the tool error the model reads.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refusef(format string, args ...any) *refusal {
	return &refusal{"approval gateway: " + fmt.Sprintf(format, args...)}
}

// Requests are the approval requests one tools/call becomes, every one of
// which must be allowed for the call to reach the server: one per target
// the map's arguments hold. tool is the server's description of the tool
// (nil when it did not list it); home is the directory "~" stands for on
// the server's machine ("" leaves "~" to the gateway's policy). A call the
// proxy refuses outright is a *refusal.
func (m Map) Requests(name string, args map[string]any, tool *mcp.Tool, home, sessionID string) ([]client.Req, error) {
	base := client.Req{
		Executor:  "mcp:" + m.Name,
		Summary:   Summary(m.Name, name, tool, args),
		Args:      guardArgs(args),
		SessionID: sessionID,
	}
	t, mapped := m.Tools[name]
	if !mapped {
		switch {
		case tool == nil:
			return nil, refusef("the MCP server %q has no tool %q", m.Name, name)
		case destructive(tool):
			return nil, refusef("the MCP tool %s/%s is not in the gateway's [mcp.servers.tools] and is annotated destructiveHint: denied", m.Name, name)
		case m.UnknownTool != "ask":
			return nil, refusef("the MCP tool %s/%s is not in the gateway's [mcp.servers.tools]; unknown tools are denied by its config", m.Name, name)
		}
		r := base
		r.Capability, r.Target = UnknownCapability, "mcp:"+m.Name+"/"+name
		r.Intent = "MCP tool " + name + " (not in the gateway's tool map)"
		return []client.Req{r}, nil
	}
	c, err := policy.Lookup(t.Capability)
	if err != nil {
		return nil, refusef("the map of %s/%s: %v", m.Name, name, err)
	}
	if len(t.Target) == 0 {
		r := base
		r.Capability, r.Intent = c.Name, name
		return []client.Req{r}, nil
	}
	var out []client.Req
	seen := map[string]bool{}
	for _, arg := range t.Target {
		vals, err := targets(args, arg)
		if err != nil {
			return nil, refusef("%s/%s: %v", m.Name, name, err)
		}
		for _, v := range vals {
			if c.TargetKind == policy.KindPathGlob {
				if v, err = serverPath(v, home); err != nil {
					return nil, refusef("%s/%s: argument %q: %v", m.Name, name, arg, err)
				}
			}
			if seen[v] {
				continue
			}
			seen[v] = true
			r := base
			r.Capability, r.Target, r.Intent = c.Name, v, name+" "+v
			out = append(out, r)
		}
	}
	return out, nil
}

// targets reads the argument that holds a target: a string, or a list of
// strings (read_multiple_files' paths). Missing, empty or anything else
// is refused: a call whose target the gateway cannot read is not asked
// about as if it had none.
func targets(args map[string]any, arg string) ([]string, error) {
	v, ok := args[arg]
	if !ok {
		return nil, fmt.Errorf("argument %q (the target) is missing", arg)
	}
	var out []string
	switch v := v.(type) {
	case string:
		out = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("argument %q: want strings, found %T", arg, e)
			}
			out = append(out, s)
		}
	default:
		return nil, fmt.Errorf("argument %q: want a string or a list of strings, found %T", arg, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("argument %q is empty", arg)
	}
	for _, s := range out {
		if s == "" {
			return nil, fmt.Errorf("argument %q holds an empty target", arg)
		}
	}
	return out, nil
}

// serverPath is a path argument as the server reads it: "~" and "~/…"
// are the server's home (MCP file servers expand it, as
// @modelcontextprotocol/server-filesystem does), other paths must be
// absolute. A relative path is refused: each server resolves it against
// something else (its working directory, its first allowed directory), so
// the gateway cannot know what it names.
func serverPath(p, home string) (string, error) {
	if (p == "~" || strings.HasPrefix(p, "~/")) && home != "" {
		p = home + p[1:]
	}
	if !path.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
		return "", fmt.Errorf("%q is not an absolute path (relative paths are refused: the server resolves them against a directory the gateway cannot see)", p)
	}
	return p, nil
}

// destructive reports whether the server annotates the tool
// destructiveHint (an annotation is the server's word, so it can make a
// tool stricter, never more lenient).
func destructive(t *mcp.Tool) bool {
	return t != nil && t.Annotations != nil && t.Annotations.DestructiveHint != nil && *t.Annotations.DestructiveHint
}

// hints are a tool's annotations in words, for the card.
func hints(t *mcp.Tool) []string {
	if t == nil || t.Annotations == nil {
		return nil
	}
	a := t.Annotations
	var out []string
	if a.ReadOnlyHint {
		out = append(out, "read-only")
	}
	if a.DestructiveHint != nil {
		if *a.DestructiveHint {
			out = append(out, "destructive")
		} else {
			out = append(out, "not destructive")
		}
	}
	if a.IdempotentHint {
		out = append(out, "idempotent")
	}
	if a.OpenWorldHint != nil {
		if *a.OpenWorldHint {
			out = append(out, "open world")
		} else {
			out = append(out, "closed world")
		}
	}
	return out
}

// Summary is the card's line for one tool call: the server, the tool, its
// annotations (the server's own words about it) and its arguments. The
// cards escape it like every string an agent chose.
func Summary(server, tool string, t *mcp.Tool, args map[string]any) string {
	s := fmt.Sprintf("MCP server %s · tool %s", server, tool)
	if h := hints(t); len(h) > 0 {
		s += " (" + strings.Join(h, ", ") + ")"
	}
	b, err := json.Marshal(args)
	if err != nil {
		b = []byte("(arguments not shown: " + err.Error() + ")")
	}
	return s + " · arguments " + cut(string(b), maxSummaryArgs)
}

// cut shortens s to at most n bytes (on a rune boundary) with a visible
// marker saying how long it was.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s… (cut: %d bytes in all)", s[:i], len(s))
}

// guardArgs are the arguments the guard inspects: all of them, unless
// they are large, when each long string is cut (the request body is
// bounded; what is asked about is the target, which is never cut).
func guardArgs(args map[string]any) map[string]any {
	if b, err := json.Marshal(args); err == nil && len(b) <= maxArgsJSON {
		return args
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return cut(v, maxArgString)
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = walk(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				out[k] = walk(e)
			}
			return out
		}
		return v
	}
	out, _ := walk(args).(map[string]any)
	return out
}
