// The [hooks.*] sections: one HookAgent per coding agent, all with the same
// keys and defaults.

package config

import (
	"time"
)

// Hooks is the [hooks] table: one section per coding agent whose hooks
// the gateway answers.
type Hooks struct {
	ClaudeCode HookAgent `toml:"claude_code"` // [hooks.claude_code]
	Codex      HookAgent `toml:"codex"`       // [hooks.codex]
	Gemini     HookAgent `toml:"gemini"`      // [hooks.gemini]
	Cursor     HookAgent `toml:"cursor"`      // [hooks.cursor]
	Copilot    HookAgent `toml:"copilot"`     // [hooks.copilot]
	Qwen       HookAgent `toml:"qwen"`        // [hooks.qwen]
	OpenCode   HookAgent `toml:"opencode"`    // [hooks.opencode]
}

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
func defaultHookAgent() HookAgent {
	return HookAgent{Wait: Duration(9 * time.Minute), UnknownTool: "ask", Tools: map[string]string{}}
}

// HookSection names one agent's hook section: Agent is the name of
// `gateway hook NAME` and of POST /v1/hooks/NAME, Key the config table.
type HookSection struct {
	Agent, Key string
	Section    *HookAgent
}

// HookSections are every agent's hook section.
func (h *Hooks) HookSections() []HookSection {
	return []HookSection{
		{"claude-code", "hooks.claude_code", &h.ClaudeCode},
		{"codex", "hooks.codex", &h.Codex},
		{"gemini", "hooks.gemini", &h.Gemini},
		{"cursor", "hooks.cursor", &h.Cursor},
		{"copilot", "hooks.copilot", &h.Copilot},
		{"qwen", "hooks.qwen", &h.Qwen},
		{"opencode", "hooks.opencode", &h.OpenCode},
	}
}

// Section is the hook section of an agent by name, or nil.
func (h *Hooks) Section(agent string) *HookAgent {
	for _, s := range h.HookSections() {
		if s.Agent == agent {
			return s.Section
		}
	}
	return nil
}
