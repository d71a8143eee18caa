// The state each known agent program keeps in the home directory: the
// places it must write to work at all, granted to it and to no other.

package sandbox

import (
	"path/filepath"
	"strings"
)

// stateDirs are, per agent program (its file name), the directories and
// files under the home it writes: sessions, history, caches, its own
// settings. Another agent's are never granted, so one agent cannot change
// the hooks or settings of another. docs/run.md gives the reason for each.
var stateDirs = map[string][]string{
	"claude":   {".claude", ".claude.json", ".cache/claude-cli-nodejs"},
	"codex":    {".codex"},
	"gemini":   {".gemini"},
	"qwen":     {".qwen"},
	"copilot":  {".copilot"},
	"opencode": {".local/share/opencode", ".local/state/opencode", ".cache/opencode"},
}

// StateFiles are the entries of stateDirs that are files, not directories.
var stateFiles = map[string]bool{".claude.json": true}

// AgentState returns the state paths of the program argv0 under home
// (none for a program that is not a known agent), each with whether it is
// a directory.
func AgentState(argv0, home string) (paths []string, dirs []bool) {
	if home == "" {
		return nil, nil
	}
	for _, rel := range stateDirs[strings.TrimSuffix(filepath.Base(argv0), ".js")] {
		paths = append(paths, filepath.Join(home, rel))
		dirs = append(dirs, !stateFiles[rel])
	}
	return paths, dirs
}
