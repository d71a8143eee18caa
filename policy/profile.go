package policy

import (
	"path"
	"slices"
	"strings"
)

// Profile is an agent's restrictive profile: a ceiling level and optional
// capability allow/deny lists. A request can narrow it, never widen it.
type Profile struct {
	Agent   string
	Ceiling Level
	Allow   []string // empty = every capability (unless AllowNone)
	Deny    []string
	// AllowNone means an allow list narrowed to nothing: a child token whose
	// allow list shared nothing with its parent's may use no capability.
	AllowNone bool
	// Targets limits, per capability, the targets a request may name (a
	// child token's targets); a capability absent from it is not limited.
	Targets map[string][]string
	// Token names the child token the request came with ("" for the
	// agent's own token): for traces.
	Token string
	// Mode is the agent's: in ModeRestrict what a person would be asked
	// about is denied at once ("" = ModeAsk).
	Mode Mode
	// Workspace lists the directories the agent works in (the agent's
	// workspace key; "~" allowed). When set, an fs:* request outside them
	// asks a person where the table would allow it.
	Workspace []string
	// Home is the agent's home directory when known ([[agents]] home, or
	// the environment of the hook that asked), else "": vaglio then reads
	// "~" and judges searches of a home with it as well as with the
	// gateway's own.
	Home string
}

// InWorkspace reports whether an fs:* target lies in the profile's
// workspace (always, when none is set), "~" read as the agent's home when
// the profile knows it. A glob is inside when the part
// before its first wildcard is; a relative path, whose directory is
// unknown, is not.
func (p Profile) InWorkspace(n Normalizer, target string) bool {
	if len(p.Workspace) == 0 {
		return true
	}
	if p.Home != "" {
		n.Home = p.Home // "~" in the workspace and the target is the agent's
	}
	t := n.cleanPath(target)
	if i := strings.IndexAny(t, "*?[{"); i >= 0 {
		t = path.Dir(t[:i] + "x")
	}
	if !strings.HasPrefix(t, "/") {
		return false
	}
	for _, w := range p.Workspace {
		w = n.cleanPath(w)
		if t == w || strings.HasPrefix(t, w+"/") || w == "/" {
			return true
		}
	}
	return false
}

// Permits reports whether the profile lets a capability through at all
// (its allow and deny lists), before the table, rules and targets.
func (p Profile) Permits(name string) bool {
	if p.AllowNone || slices.Contains(p.Deny, name) {
		return false
	}
	return len(p.Allow) == 0 || slices.Contains(p.Allow, name)
}

// PermitsTarget reports whether the profile's targets (a child token's)
// let a request name target for capability c. Patterns match as rules do;
// for code:exec a command that is not one plain command (see
// SingleCommand) must equal a pattern exactly, so "git *" never covers "git log; rm -rf ~".
func (p Profile) PermitsTarget(n Normalizer, c Capability, target string) bool {
	pats, limited := p.Targets[c.Name]
	if !limited {
		return true
	}
	for _, pat := range pats {
		if c.Name == "code:exec" && !SingleCommand(target) {
			if pat == target {
				return true
			}
			continue
		}
		if n.MatchRule(c.TargetKind, pat, target) {
			return true
		}
	}
	return false
}
