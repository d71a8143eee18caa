package vaglio

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
)

// CapabilityCodeExec is the capability whose target and args are shell
// commands, and so the only one the shell rules of the guard apply to.
const CapabilityCodeExec = "code:exec"

// ExecutorShellExec is the executor whose args are shell commands whatever
// the capability (the seed runs its shell check for executor shell_exec or
// capability code:exec).
const ExecutorShellExec = "shell_exec"

// isShellRequest reports whether the shell rules of the guard apply to r.
func isShellRequest(r Request) bool {
	return r.Capability == CapabilityCodeExec || strings.EqualFold(strings.TrimSpace(r.Executor), ExecutorShellExec)
}

// Guard is the binary half of vaglio: it refuses a request that names a
// forbidden path in its target or in any string of its args (keys too,
// however deeply nested), or, for code:exec or the shell_exec executor, a
// destructive shell command in any of them; a list in args (such as
// "command": ["rm", "-rf", "/"]) is also read as one command, its items
// joined with spaces. home is what "~" and $HOME stand for ("" leaves them
// as they are; the path rules still catch ~/.ssh through the .ssh
// component).
//
// The check is lexical, on purpose: it runs before anything touches the
// disk, so it cleans paths (.., //, ~, $HOME, shell quotes, {a,b} braces,
// globs such as /etc/pass*) but cannot see symlinks: `gateway hook`
// resolves them on the agent's machine and the target it judges is then
// the resolved path (hooks.Local). Matching is
// case-insensitive because macOS file systems are. A relative path that
// climbs with leading ".." is checked as if it reached the root, since the
// working directory is unknown. Behind these structured rules the seed's
// own regexes run on every raw string (seedrules.go), so nothing the seed
// blocks passes here; the one exception is dd of=/dev/null.
//
// reason names the rule that matched and where (target, args.a.b[2]),
// never the matched string, so it is safe to log and to show on a card.
func Guard(r Request, home string) (blocked bool, reason string) {
	blocked, reason, _ = guard(r, cleanHome(home), nil, false)
	return blocked, reason
}

// cleanHome is home as guard takes it: path.Clean'ed, "" left as it is.
func cleanHome(home string) string {
	if home == "" {
		return ""
	}
	return path.Clean(home)
}

// guard is Guard with the gateway's own files and addresses (nil: none),
// home cleaned (cleanHome). With gather, and when it does not block,
// facts are argSignals of r's args, read on the same walk.
func guard(r Request, home string, own *ownRules, gather bool) (blocked bool, reason string, facts argFacts) {
	if own != nil {
		if reason, hit := own.reachesGateway(r); hit {
			return true, reason, argFacts{}
		}
	}
	g := guardRuns.Get().(*guardRun)
	defer func() {
		*g = guardRun{} // nothing of this request stays in the pool
		guardRuns.Put(g)
	}()
	*g = guardRun{home: home, paths: forbiddenMatcher, shell: isShellRequest(r), gather: gather}
	if own != nil {
		g.paths = own.matcher
	}
	if reason, hit := g.check(r.Target); hit {
		return true, reason("target"), argFacts{}
	}
	g.clean[0], g.nclean = r.Target, 1
	g.w.joinLists = g.shell
	g.w.visitor = g
	if g.w.run(r.Args); g.blocked {
		return true, g.reason, argFacts{}
	}
	if g.w.tooDeep {
		return true, fmt.Sprintf("guard: args nested deeper than %d levels, not all inspected", maxArgDepth), argFacts{}
	}
	if gather {
		facts = g.facts
		facts.set = true
	}
	return false, "", facts
}

// guardRuns are guardRuns to reuse: one is the size of a small request,
// and every decision needs one.
var guardRuns = sync.Pool{New: func() any { return new(guardRun) }}

// guardRun is one request's guard: what it checks strings against, and
// what it found.
type guardRun struct {
	home  string
	paths *pathMatcher
	shell bool
	w     argWalker
	// clean holds strings already found clean: check is a function of the
	// string alone, so one seen again (an args path repeating the target)
	// needs no second look.
	clean   [4]string
	nclean  int
	blocked bool
	reason  string
	// gather says to read argSignals of the args into facts.
	gather bool
	facts  argFacts
}

// check finds what s holds; the reason, naming where s is, is spelt out
// only on a hit.
func (g *guardRun) check(s string) (reason func(where string) string, hit bool) {
	command := func(rule string) func(string) string {
		return func(where string) string { return fmt.Sprintf("guard: dangerous shell command %q in %s", rule, where) }
	}
	forbidden := func(rule string) func(string) string {
		return func(where string) string { return fmt.Sprintf("guard: forbidden path %s in %s", rule, where) }
	}
	if !g.shell && g.paths.wordSafe && plainWord(s) {
		// One plain word: no path rule matches it (wordSafe), and every
		// seed path regex needs a '.' or a '/' (seedPathLiterals).
		return nil, false
	}
	// Shell rules first: for rm -rf /* they name the command, which
	// says more than the path rule /root that the glob also matches.
	if g.shell {
		if rule, hit := dangerousCommandIn(s, g.home); hit {
			return command(rule), true
		}
		if rule, hit := seedShellIn(s); hit {
			return command(rule), true
		}
	}
	if rule, hit := forbiddenPathIn(s, g.home, g.paths); hit {
		return forbidden(rule), true
	}
	if g.shell {
		// bash's own reading: every word, redirection target and
		// here-document, also inside substitutions and bash -c.
		if rule, hit := forbiddenPathInWords(s, g.home, g.paths); hit {
			return forbidden(rule), true
		}
	}
	if rule, hit := seedPathIn(s, g.home); hit {
		return forbidden(rule), true
	}
	return nil, false
}

// visit checks one string of args.
func (g *guardRun) visit(e argEvent) bool {
	if g.gather && !e.isList {
		g.facts.add(e) // every string, also one found clean before
	}
	if slices.Contains(g.clean[:g.nclean], e.s) {
		return true
	}
	why, hit := g.check(e.s)
	if !hit {
		if g.nclean < len(g.clean) {
			g.clean[g.nclean], g.nclean = e.s, g.nclean+1
		}
		return true
	}
	where := g.w.loc()
	switch {
	case e.isKey:
		where = "a key of " + strings.TrimSuffix(where, "."+e.s)
	case e.isList:
		where += " (items joined)"
	}
	g.blocked, g.reason = true, why(where)
	return false
}
