// How every adapter maps a tool call: by a built-in table, then the
// agent's tools map; the target's fields and how a path, a host or a URL
// is read.

package hooks

import (
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/metnos/gateway/policy"
)

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
