// Package hooks turns a coding agent's hook event into the approval
// requests the gateway is asked about, and the gateway's answer into the
// JSON the agent reads back: Claude Code here (SPEC §9), and Codex,
// Gemini CLI and Cursor in codex.go, gemini.go and cursor.go (each an
// Adapter). It does no I/O: the `gateway hook NAME` commands and the
// POST /v1/hooks/NAME endpoints do the asking and use this package on
// either side of it.
//
// Claude Code's mapping of tools to capabilities and targets:
//
//	Bash                              code:exec     the command
//	Write, Edit, MultiEdit            fs:write      tool_input.file_path
//	NotebookEdit                      fs:write      tool_input.notebook_path
//	Read                              fs:read       tool_input.file_path
//	Glob                              fs:read       the pattern as written, under path (else cwd)
//	Grep                              fs:read       tool_input.path, else cwd
//	WebFetch                          network:http  the host of tool_input.url
//	any other tool, mcp__server__tool [hooks.claude_code.tools], else unknown_tool
//
// Relative paths are resolved against the event's cwd; every adapter
// passes the whole tool input to the guard and asks a person when two
// path fields disagree (input.go). WebSearch has no
// built-in mapping on purpose: the search runs at the model provider, so
// there is no host the agent chose for network:http to key a grant on; map
// it in the config (to llm:online, say) to route it through the gateway.
//
// An exact entry in [hooks.claude_code.tools] overrides the built-in
// mapping of that tool; an entry with a glob ("mcp__gmail__*") applies
// only to tools that have no built-in mapping and no exact entry.
package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/metnos/gateway/policy"
)

// EventName is the only hook event this package answers.
const EventName = "PreToolUse"

// Executor is the executor name of every request the hook makes, so the
// card, the vaglio log and rules can tell Claude Code's calls apart.
const Executor = "claude-code"

// MaxEventBytes bounds a PreToolUse event. It is far above the API's
// 64 KiB body limit because a Write event carries the whole file it
// writes; only a few small fields of it are kept.
const MaxEventBytes = 8 << 20

// The permission decisions Claude Code understands.
const (
	Allow = "allow" // run the tool without asking
	Deny  = "deny"  // do not run it; the reason is shown to Claude
	Ask   = "ask"   // show the normal local permission prompt
)

// Event is a Claude Code PreToolUse hook input (the JSON on the hook's
// stdin, or the body of an http hook). Unknown fields are ignored: Claude
// Code adds fields over time.
type Event struct {
	SessionID      string         `json:"session_id"`
	TranscriptPath string         `json:"transcript_path,omitempty"`
	Cwd            string         `json:"cwd"`
	PermissionMode string         `json:"permission_mode,omitempty"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name"`
	ToolInput      map[string]any `json:"tool_input"`
	ToolUseID      string         `json:"tool_use_id"`
}

// ErrBadEvent is wrapped by every error about the event itself: not JSON,
// too big, not a PreToolUse event, a tool input without the field its
// mapping needs.
var ErrBadEvent = errors.New("bad PreToolUse event")

// UnknownToolError says a tool has neither a built-in mapping nor an entry
// in its agent's tools map.
type UnknownToolError struct {
	Tool    string
	Section string // the config table to map it in; "" = hooks.claude_code.tools
}

// Error names the tool and where to map it.
func (e *UnknownToolError) Error() string {
	sec := e.Section
	if sec == "" {
		sec = "hooks.claude_code.tools"
	}
	return fmt.Sprintf("tool %s has no capability mapping; add it to [%s]", e.Tool, sec)
}

// ClaudeCode is Claude Code's PreToolUse hook as an Adapter, so the
// command `gateway hook claude-code`, the endpoint POST
// /v1/hooks/claude-code and `gateway mcp`'s approval_prompt take the same
// path as every other agent's hook. Its answer is Output (allow, deny or
// ask: Claude Code's own prompt).
var ClaudeCode = Adapter{
	Name: "claude-code", Label: "Claude Code", Section: "hooks.claude_code",
	Decode: func(raw []byte) (Event, error) { return Decode(bytes.NewReader(raw)) },
	Map: func(ev Event, tools map[string]string) ([]Call, error) {
		c, err := Map(ev, tools)
		if err != nil {
			return nil, err
		}
		return []Call{c}, nil
	},
	Answer:        func(_ Event, v Verdict) Reply { return Reply{Body: Answer(v.Decision, v.Reason)} },
	ConflictIs409: true,
}

// Decode reads one event of at most MaxEventBytes.
func Decode(r io.Reader) (Event, error) {
	var ev Event
	b, err := io.ReadAll(io.LimitReader(r, MaxEventBytes+1))
	if err != nil {
		return ev, fmt.Errorf("%w: read: %v", ErrBadEvent, err)
	}
	if len(b) > MaxEventBytes {
		return ev, fmt.Errorf("%w: over %d bytes", ErrBadEvent, MaxEventBytes)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	if ev.HookEventName != "" && ev.HookEventName != EventName {
		return ev, fmt.Errorf("%w: hook_event_name is %q; only %s is supported", ErrBadEvent, ev.HookEventName, EventName)
	}
	if ev.ToolName == "" {
		return ev, fmt.Errorf("%w: no tool_name", ErrBadEvent)
	}
	return ev, nil
}

// Call is the approval request an event becomes: the fields of a POST
// /v1/requests body that the hook fills.
type Call struct {
	CallID     string // the tool_use_id: asking twice about one tool call finds the same request
	SessionID  string // the agent's session id, for Allow this session
	Capability string
	Target     string
	Intent     string
	Executor   string
	Summary    string
	Args       map[string]any // the fields the guard should see (values never stored)
	// Ask, when set, says why the call needs a person whatever rules and
	// grants say (policy.Input.Ask): its input names two different paths.
	Ask string
	// Home is the agent's home directory, when the event came through
	// `gateway hook` (Local.Apply): it replaces [[agents]] home.
	Home string
}

// Map returns the call to ask the gateway about. tools is
// [hooks.claude_code.tools]. A tool with no mapping gives an
// *UnknownToolError; an input without the field its mapping needs gives an
// error wrapping ErrBadEvent.
func Map(ev Event, tools map[string]string) (Call, error) {
	c, err := mapTool(ev, tools, builtin, "hooks.claude_code.tools")
	if err != nil {
		return Call{}, err
	}
	c.Executor = Executor
	c.Summary = summary("Claude Code", ev)
	c.SessionID = ev.SessionID
	return c, nil
}

// mapTool maps one tool call by an agent's built-in table, then its tools
// map: an exact entry overrides the built-in mapping, a glob applies only
// to tools with neither. section names the tools map in errors.
func mapTool(ev Event, tools map[string]string, table map[string]func(*Call, Event) error, section string) (Call, error) {
	c := Call{CallID: ev.ToolUseID}
	capability, fromConfig := tools[ev.ToolName]
	var err error
	switch {
	case fromConfig:
		err = mapConfigured(&c, ev, capability, section)
	case table[ev.ToolName] != nil:
		err = table[ev.ToolName](&c, ev)
	default:
		capability, fromConfig = globMatch(tools, ev.ToolName)
		if !fromConfig {
			return Call{}, &UnknownToolError{Tool: ev.ToolName, Section: section}
		}
		err = mapConfigured(&c, ev, capability, section)
	}
	if err != nil {
		return Call{}, err
	}
	if c.Intent == "" {
		c.Intent = strings.TrimSpace(ev.ToolName + " " + c.Target)
	}
	return c, nil
}

// summary is the card's summary line: "Claude Code · Bash in /home/you/proj".
func summary(agent string, ev Event) string {
	s := agent + " · " + ev.ToolName
	if ev.Cwd != "" {
		s += " in " + ev.Cwd
	}
	return s
}

// builtin maps the tools SPEC §9 names.
var builtin = map[string]func(*Call, Event) error{
	"Bash": func(c *Call, ev Event) error {
		cmd, err := required(ev, "command")
		if err != nil {
			return err
		}
		c.Capability, c.Target = "code:exec", cmd
		c.Intent = str(ev.ToolInput, "description")
		c.Args = inputArgs(ev.ToolInput)
		return nil
	},
	"Write":        fileTool("fs:write", "file_path"),
	"Edit":         fileTool("fs:write", "file_path"),
	"MultiEdit":    fileTool("fs:write", "file_path"),
	"NotebookEdit": fileTool("fs:write", "notebook_path"),
	"Read":         fileTool("fs:read", "file_path"),
	"Glob": func(c *Call, ev Event) error {
		return globTool(c, ev, "pattern", "path")
	},
	"Grep": func(c *Call, ev Event) error {
		// The pattern is a regular expression, not a path: searching for
		// "\.ssh" reads nothing under .ssh. What is read is the tree
		// under path (its glob in args).
		return dirTool(c, ev, "path")
	},
	"WebFetch": func(c *Call, ev Event) error {
		raw, err := required(ev, "url")
		if err != nil {
			return err
		}
		host := hostOf(raw)
		if host == "" {
			return fmt.Errorf("%w: WebFetch: no host in tool_input.url", ErrBadEvent)
		}
		c.Capability, c.Target = "network:http", host
		c.Intent = "WebFetch " + strip(raw)
		c.Args = webArgs(ev.ToolInput)
		return nil
	},
}

// fileTool maps a tool whose target is a path: the first of fields
// present (then any other path field), asked about when two differ.
func fileTool(capability string, fields ...string) func(*Call, Event) error {
	return func(c *Call, ev Event) error {
		p, ask := pathOf(ev.ToolInput, ev.Cwd, fields...)
		if p == "" {
			return fmt.Errorf("%w: %s: tool_input.%s is missing or empty", ErrBadEvent, ev.ToolName, strings.Join(fields, " / "))
		}
		c.Capability, c.Target, c.Ask = capability, p, ask
		c.Args = inputArgs(ev.ToolInput)
		return nil
	}
}

// dirTool maps a search or listing: fs:read on the directory in fields
// (else any path field, else the working directory).
func dirTool(c *Call, ev Event, fields ...string) error {
	p, ask := pathOf(ev.ToolInput, ev.Cwd, fields...)
	if p == "" {
		p = cleanCwd(ev)
	}
	if p == "" {
		return fmt.Errorf("%w: %s: no path and no cwd", ErrBadEvent, ev.ToolName)
	}
	c.Capability, c.Target, c.Ask = "fs:read", p, ask
	c.Args = inputArgs(ev.ToolInput)
	return nil
}

// globTool maps a glob search: fs:read on the pattern as written, under
// the directory in dirFields (else the working directory).
func globTool(c *Call, ev Event, patternField string, dirFields ...string) error {
	base, ask := pathOf(ev.ToolInput, ev.Cwd, dirFields...)
	if base == "" {
		base = cleanCwd(ev)
	}
	t := globTarget(base, str(ev.ToolInput, patternField))
	if t == "" || t == "." {
		return fmt.Errorf("%w: %s: no path, no absolute pattern and no cwd", ErrBadEvent, ev.ToolName)
	}
	c.Capability, c.Target, c.Ask = "fs:read", t, ask
	c.Args = inputArgs(ev.ToolInput)
	return nil
}

// cleanCwd is the event's working directory, cleaned ("" when none).
func cleanCwd(ev Event) string {
	if ev.Cwd == "" {
		return ""
	}
	return path.Clean(ev.Cwd)
}

// Fields a configured tool's target is taken from, by target kind, first
// present wins (paths: pathFields, asked about when two differ).
var (
	hostFields  = []string{"url", "uri", "host", "hostname", "domain"}
	exactFields = []string{"to", "recipient", "recipients", "channel", "channel_id", "command", "url", "path", "file_path", "query", "id", "name"}
)

// mapConfigured maps a tool named in an agent's tools map. The whole
// tool input goes in args: the gateway cannot know which fields of an MCP
// tool are paths, so the guard looks at all of them.
func mapConfigured(c *Call, ev Event, capability, section string) error {
	cp, err := policy.Lookup(capability)
	if err != nil {
		return fmt.Errorf("%s.%s: %w", section, ev.ToolName, err)
	}
	c.Capability, c.Args = cp.Name, ev.ToolInput
	switch cp.TargetKind {
	case policy.KindNone:
	case policy.KindPathGlob:
		c.Target, c.Ask = pathOf(ev.ToolInput, ev.Cwd)
		if c.Target == "" {
			c.Target = ev.Cwd
		}
	case policy.KindHost:
		c.Target = hostOf(first(ev.ToolInput, hostFields))
		for _, f := range hostFields {
			if h := hostOnly(str(ev.ToolInput, f)); h != "" && h != hostOnly(c.Target) {
				c.Ask = "the tool input names more than one host (" + c.Target + ", " + h + "); the tool may use either, so a person decides"
			}
		}
		if c.Target == "" {
			return fmt.Errorf("%w: %s maps to %s but its input has no %s to take the host from",
				ErrBadEvent, ev.ToolName, cp.Name, strings.Join(hostFields, ", "))
		}
	default:
		c.Target = first(ev.ToolInput, exactFields)
		if c.Target == "" {
			c.Target = ev.ToolName
		}
	}
	if c.Target == "" && cp.TargetKind != policy.KindNone {
		return fmt.Errorf("%w: %s: no target in its input and no cwd", ErrBadEvent, ev.ToolName)
	}
	return nil
}

// globMatch finds the configured glob entry for a tool: the longest
// matching pattern wins, then the first in sorted order.
func globMatch(tools map[string]string, tool string) (string, bool) {
	var pats []string
	for p := range tools {
		if strings.ContainsAny(p, "*?[") {
			if ok, err := path.Match(p, tool); err == nil && ok {
				pats = append(pats, p)
			}
		}
	}
	if len(pats) == 0 {
		return "", false
	}
	sort.Slice(pats, func(i, j int) bool {
		if len(pats[i]) != len(pats[j]) {
			return len(pats[i]) > len(pats[j])
		}
		return pats[i] < pats[j]
	})
	return tools[pats[0]], true
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func required(ev Event, field string) (string, error) {
	s := str(ev.ToolInput, field)
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%w: %s: tool_input.%s is missing or empty", ErrBadEvent, ev.ToolName, field)
	}
	return s, nil
}

// first returns the first of fields that holds a string, or a list of
// strings (joined with ", ").
func first(m map[string]any, fields []string) string {
	for _, f := range fields {
		switch v := m[f].(type) {
		case string:
			if v != "" {
				return v
			}
		case []any:
			var parts []string
			for _, x := range v {
				if s, ok := x.(string); ok && s != "" {
					parts = append(parts, s)
				}
			}
			if len(parts) > 0 {
				return strings.Join(parts, ", ")
			}
		}
	}
	return ""
}

// resolve makes p absolute against cwd and cleans it. "~" paths are left
// for the gateway, which knows what home means.
func resolve(cwd, p string) string {
	switch {
	case p == "":
		return ""
	case path.IsAbs(p), p == "~", strings.HasPrefix(p, "~/"):
		return path.Clean(p)
	case cwd == "":
		return path.Clean(p)
	}
	return path.Join(cwd, p)
}

// hostOf returns the host a URL or host[:port] reaches, read as a browser
// reads it (policy.ParseHost: "http:evil.com" is evil.com, "0x7f.1" is
// 127.0.0.1); "" when it names none.
func hostOf(raw string) string {
	h, err := policy.ParseHost(raw)
	if err != nil {
		return ""
	}
	if h.Port == "" {
		return h.Host
	}
	// The port too (the scheme's when the URL names none): the gateway
	// tells a local dev server (localhost:3000) from itself by it.
	return h.Host + ":" + h.Port
}

// hostOnly is the canonical host a URL reaches, without its port.
func hostOnly(raw string) string {
	h, err := policy.ParseHost(raw)
	if err != nil {
		return ""
	}
	return h.Host
}

// strip drops the query and fragment of a URL (they may hold tokens) so it
// can be shown on a card.
func strip(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return hostOf(raw)
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}
