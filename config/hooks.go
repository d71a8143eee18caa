// The [hooks.*] sections: one HookAgent per coding agent whose hooks the
// gateway answers (hooks.Adapters, the one list of them), all with the
// same keys and defaults.

package config

import (
	"maps"
	"reflect"
	"strings"
	"time"

	"github.com/metnos/gateway/hooks"
)

// Hooks are the [hooks.NAME] sections, keyed by adapter name
// ("claude-code", whose table is [hooks.claude_code]): Default makes one
// for every hooks.Adapters(), and Validate refuses a config missing one or
// naming another.
type Hooks map[string]*HookAgent

// HookAgent is one agent's hook section: [hooks.claude_code],
// [hooks.codex], [hooks.gemini], [hooks.cursor], [hooks.copilot],
// [hooks.qwen], [hooks.opencode]. Every section has the same keys and the
// same defaults.
type HookAgent struct {
	// Wait is how long the hook waits for a person before answering "ask";
	// keep it under the agent's own hook timeout.
	Wait Duration `toml:"wait"`
	// UnknownTool is the answer for a tool with no mapping: "ask" or "deny".
	UnknownTool string `toml:"unknown_tool"`
	// Tools maps extra tool names (e.g. "mcp__gmail__send") to capabilities.
	Tools map[string]string `toml:"tools"`
}

// defaultHookAgent is every hook section's default: wait 9 minutes (under
// the 10-minute hook timeout docs/agents.md sets for each agent), unknown
// tools ask, no extra tools.
func defaultHookAgent() *HookAgent {
	return &HookAgent{Wait: Duration(9 * time.Minute), UnknownTool: "ask", Tools: map[string]string{}}
}

// defaultHooks is a default section for every adapter.
func defaultHooks() Hooks {
	out := Hooks{}
	for _, ad := range hooks.Adapters() {
		out[ad.Name] = defaultHookAgent()
	}
	return out
}

// Section is the hook section of an agent by name, or nil.
func (h Hooks) Section(agent string) *HookAgent { return h[agent] }

// hookTable is the key of an adapter's table within [hooks]: "claude_code".
func hookTable(ad hooks.Adapter) string { return strings.TrimPrefix(ad.Section, "hooks.") }

// fileView is [hooks] as the file is decoded into it: a struct with a
// field per adapter, tagged with its table's key, pointing at its section
// in h (nil where h has none).
func (h Hooks) fileView() reflect.Value {
	ads := hooks.Adapters()
	fields := make([]reflect.StructField, len(ads))
	for i, ad := range ads {
		fields[i] = reflect.StructField{Name: "Hook" + strings.ToUpper(hookTable(ad)),
			Type: reflect.TypeOf(&HookAgent{}), Tag: reflect.StructTag(`toml:"` + hookTable(ad) + `"`)}
	}
	v := reflect.New(reflect.StructOf(fields))
	for i, ad := range ads {
		if sec := h[ad.Name]; sec != nil {
			v.Elem().Field(i).Set(reflect.ValueOf(sec))
		}
	}
	return v
}

// redacted is a copy sharing nothing mutable.
func (h Hooks) redacted() Hooks {
	if h == nil {
		return nil
	}
	out := make(Hooks, len(h))
	for name, sec := range h {
		if sec == nil {
			out[name] = nil
			continue
		}
		c := *sec
		if c.Tools != nil {
			c.Tools = maps.Clone(c.Tools)
		}
		out[name] = &c
	}
	return out
}
