package hooks

import "strings"

// AgentConfig is the agent's own configuration that makes the gateway the
// only place that asks, as `gateway hook NAME --print-config` prints it,
// ready to merge into the file Where names: the hooks registered, the
// agent's own prompts off or handed to the gateway. home is the user's
// home directory, for a path the agent needs written out (OpenCode's
// plugin).
type AgentConfig struct {
	Where string // the file to merge it into
	Text  string
}

// ConfigFor is the AgentConfig of the adapter called name.
func ConfigFor(name, home string) (AgentConfig, bool) {
	c, ok := agentConfigs[name]
	c.Text = strings.ReplaceAll(c.Text, "$HOME", home)
	return c, ok
}

// agentConfigs, by adapter name. Each agent's reasons:
//
//   - Claude Code: the hook's allow runs the tool with no prompt of its own.
//   - Codex: PreToolUse may only deny; approval_policy = "never" leaves it
//     the one gate (Codex never prompts; PermissionRequest answers a
//     prompt should a run ask for one), inside Codex's own workspace-write
//     sandbox (writes in the workspace, as `gateway run` allows, which
//     stacks the kernel's on it), its network on: what an approved command
//     reaches is the gateway's to decide (`gateway run`'s egress proxy).
//   - Gemini CLI: tools.allowed turns its confirmation off for the tools the
//     hook gates, and --no-ask makes every ask of the hook a deny, so no
//     call falls through to a prompt that would no longer come.
//   - Copilot CLI: the preToolUse allow skips its prompt.
//   - Qwen Code: approval mode yolo offers every tool with no prompt;
//     PreToolUse gates each call and answers no verdict with a deny.
//   - OpenCode: every permission allow, the plugin the one gate.
//   - Cursor: the hooks' allow skips its prompt; failClosed blocks when the
//     hook cannot run.
var agentConfigs = map[string]AgentConfig{
	"claude-code": {Where: "~/.claude/settings.json", Text: `{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Glob|Grep|WebFetch",
        "hooks": [
          { "type": "command", "command": "gateway hook claude-code", "timeout": 600 }
        ]
      }
    ]
  }
}
`},
	"codex": {Where: "~/.codex/config.toml", Text: `approval_policy = "never"
sandbox_mode = "workspace-write"

[sandbox_workspace_write]
network_access = true

[[hooks.PreToolUse]]
matcher = "Bash|apply_patch|Edit|Write|mcp__.*"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "gateway hook codex"
timeout = 600

[[hooks.PermissionRequest]]
matcher = "Bash|apply_patch|Edit|Write|mcp__.*"
[[hooks.PermissionRequest.hooks]]
type = "command"
command = "gateway hook codex"
timeout = 600
`},
	"gemini": {Where: "~/.gemini/settings.json", Text: `{
  "tools": {
    "allowed": ["run_shell_command", "write_file", "replace", "read_file", "read_many_files", "glob", "search_file_content", "grep_search", "list_directory", "web_fetch"]
  },
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "run_shell_command|write_file|replace|read_file|read_many_files|glob|search_file_content|grep_search|list_directory|web_fetch|mcp_.*",
        "hooks": [
          { "type": "command", "name": "approval-gateway", "command": "gateway hook gemini --no-ask", "timeout": 600000 }
        ]
      }
    ]
  }
}
`},
	"cursor": {Where: "~/.cursor/hooks.json", Text: `{
  "version": 1,
  "hooks": {
    "beforeShellExecution": [{ "command": "gateway hook cursor", "timeout": 600, "failClosed": true }],
    "beforeMCPExecution":   [{ "command": "gateway hook cursor", "timeout": 600, "failClosed": true }],
    "beforeReadFile":       [{ "command": "gateway hook cursor", "timeout": 600, "failClosed": true }]
  }
}
`},
	"copilot": {Where: "~/.copilot/settings.json", Text: `{
  "hooks": {
    "preToolUse": [
      { "type": "command", "bash": "gateway hook copilot", "timeoutSec": 600 }
    ],
    "permissionRequest": [
      { "type": "command", "bash": "gateway hook copilot", "timeoutSec": 600 }
    ]
  }
}
`},
	"qwen": {Where: "~/.qwen/settings.json", Text: `{
  "tools": { "approvalMode": "yolo" },
  "hooks": {
    "PreToolUse": [
      { "matcher": ".*", "hooks": [{ "type": "command", "command": "gateway hook qwen", "timeout": 600 }] }
    ],
    "PermissionRequest": [
      { "matcher": ".*", "hooks": [{ "type": "command", "command": "gateway hook qwen", "timeout": 600 }] }
    ]
  }
}
`},
	"opencode": {Where: "~/.config/opencode/opencode.json", Text: `{
  "plugin": ["file://$HOME/.local/share/gateway/opencode-plugin.js"],
  "permission": { "bash": "allow", "edit": "allow", "webfetch": "allow", "external_directory": "allow" }
}
`},
}
