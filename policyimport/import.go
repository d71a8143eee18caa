// Package policyimport reads the permission files coding agents keep
// (Claude Code, Codex, Gemini CLI, Qwen Code, Copilot CLI, OpenCode) and
// turns each entry into the gateway rules that decide the same calls, or
// says why it cannot: an entry is either a rule or a Skipped, never
// dropped. One file per agent format. It checks nothing itself: the
// caller passes every rule through policy.CheckRule, as for a rule
// written by hand.
package policyimport

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metnos/gateway/policy"
)

// Rule is one [[policy.rules]] entry made from an agent's entry.
type Rule struct {
	Capability string
	Target     string
	Action     policy.Action
	Source     string // "FILE:LINE"
	Entry      string // the entry as the agent's file spells it
	// Priority, where the agent weighs entries by one (Gemini CLI's
	// policies): a higher one decides first.
	Priority float64
}

// Skipped is an entry that makes no rule, and why.
type Skipped struct {
	Source string // "FILE:LINE"
	Entry  string
	Why    string
}

// Result is what a format made of its files.
type Result struct {
	Rules   []Rule
	Skipped []Skipped
	Files   []string // the files read, in order
}

// Env is what default locations and relative paths are resolved against.
type Env struct {
	Home   string // the user's home directory
	Cwd    string // the project: where the agent would run
	Getenv func(string) string
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Format is one agent's permission files.
type Format struct {
	Name  string // as --from spells it
	Label string
	// Defaults are the files read when none is named (those missing are
	// passed over).
	Defaults func(Env) []string
	// Parse turns one file into rules, in the order the agent weighs
	// them, and the entries it cannot turn.
	Parse func(env Env, path string, data []byte) (Result, error)
	// LastWins: the agent lets the last matching entry decide (OpenCode);
	// otherwise the most restrictive matching entry decides.
	LastWins bool
}

var formats = []Format{ClaudeCode, Codex, Gemini, Qwen, Copilot, OpenCode}

// Formats lists the agent formats, in documentation order.
func Formats() []Format { return slices.Clone(formats) }

// Named is the format called name.
func Named(name string) (Format, bool) {
	for _, f := range formats {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// Names are the formats' names, "a|b|c".
func Names() string {
	var out []string
	for _, f := range formats {
		out = append(out, f.Name)
	}
	return strings.Join(out, "|")
}

// ErrNoFiles says none of a format's default files exists.
var ErrNoFiles = errors.New("no permission file found")

// Import reads files (the format's defaults when none is named; a named
// file must exist) and returns the rules in the order the gateway must
// hold them to decide as the agent did: the gateway lets the first
// matching rule decide, so the highest priority comes first and, among
// equals, the most restrictive, or, for an agent where the last entry
// wins, the entries in reverse.
func Import(f Format, env Env, files []string) (Result, error) {
	named := len(files) > 0
	if !named {
		files = f.Defaults(env)
	}
	var res Result
	for _, path := range files {
		data, err := os.ReadFile(path)
		if !named && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Result{}, err
		}
		r, err := f.Parse(env, path, data)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", path, err)
		}
		res.Rules = append(res.Rules, r.Rules...)
		res.Skipped = append(res.Skipped, r.Skipped...)
		res.Files = append(res.Files, path)
	}
	if len(res.Files) == 0 {
		return Result{}, fmt.Errorf("%w for %s (looked at %s)", ErrNoFiles, f.Label, strings.Join(files, ", "))
	}
	if f.LastWins {
		slices.Reverse(res.Rules)
	} else {
		slices.SortStableFunc(res.Rules, func(a, b Rule) int {
			if a.Priority != b.Priority {
				return cmp.Compare(b.Priority, a.Priority)
			}
			return severity(b.Action) - severity(a.Action)
		})
	}
	return res, nil
}

func severity(a policy.Action) int {
	switch a {
	case policy.ActionBlock:
		return 3
	case policy.ActionRequireApproval:
		return 2
	}
	return 1
}

// sink collects one file's rules and skipped entries.
type sink struct {
	path string
	res  Result
}

func (s *sink) src(line int) string { return fmt.Sprintf("%s:%d", s.path, line) }

// skip lists an entry that makes no rule.
func (s *sink) skip(line int, entry, why string, args ...any) {
	s.res.Skipped = append(s.res.Skipped, Skipped{Source: s.src(line), Entry: entry, Why: fmt.Sprintf(why, args...)})
}

// rules adds one rule per target, or lists the entry when err says why
// it makes none.
func (s *sink) rules(line int, entry, capability string, action policy.Action, targets []string, err error) {
	s.ranked(line, entry, capability, action, 0, targets, err)
}

// ranked is rules with a priority.
func (s *sink) ranked(line int, entry, capability string, action policy.Action, priority float64, targets []string, err error) {
	if err != nil {
		s.skip(line, entry, "%v", err)
		return
	}
	for _, t := range targets {
		s.res.Rules = append(s.res.Rules, Rule{Capability: capability, Target: t, Action: action, Source: s.src(line), Entry: entry, Priority: priority})
	}
}

// projectRoot is the project a file under DIR/<marker>/ belongs to, or
// "" for a file of the user's own (under the home directory's marker) or
// one elsewhere.
func projectRoot(env Env, path, marker string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	if filepath.Base(dir) != marker {
		return ""
	}
	root := filepath.Dir(dir)
	if env.Home != "" && root == filepath.Clean(env.Home) {
		return ""
	}
	return root
}
