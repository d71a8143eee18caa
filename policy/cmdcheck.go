package policy

import (
	"sort"
	"strings"

	"github.com/metnos/gateway/internal/shell"
)

// approvableCommand reports whether an approve rule's glob may approve a
// command line: one simple command as bash reads it (SingleCommand) that
// takes no risk through its arguments (CommandRisk).
func approvableCommand(cmd string) bool {
	if strings.ContainsAny(cmd, shellControl) {
		return false
	}
	c, ok := shell.Single(cmd, 0)
	if !ok {
		return false
	}
	_, risky := CommandRisk(c.Args)
	return !risky
}

// riskyMatch reports whether a code:exec pattern matches some command
// that takes a risk through its arguments: every wildcard is tried with
// each risky argument the table knows (and each command a wrapper could
// run) put in its place. It returns the command and why.
func riskyMatch(pattern string) (sample, reason string, hit bool) {
	var n Normalizer
	for _, pl := range riskPayloads {
		for _, cand := range instantiate(pattern, pl) {
			if !n.MatchRule(KindExact, pattern, cand) || strings.ContainsAny(cand, shellControl) {
				continue
			}
			c, ok := shell.Single(cand, 0)
			if !ok {
				continue
			}
			if why, risky := CommandRisk(c.Args); risky {
				return cand, why, true
			}
		}
	}
	return "", "", false
}

// instantiate fills a pattern's wildcards: each "*" in turn gets the
// payload (with and without a space either side), the others nothing;
// "?" and a class get a character they match.
func instantiate(pattern, payload string) []string {
	stars := strings.Count(pattern, "*")
	var out []string
	for k := 0; k < max(stars, 1); k++ {
		for _, form := range []string{payload, " " + payload, " " + payload + " ", " x " + payload} {
			var b strings.Builder
			star := 0
			for i := 0; i < len(pattern); i++ {
				switch c := pattern[i]; c {
				case '\\':
					if i+1 < len(pattern) {
						i++
						b.WriteByte(pattern[i])
					}
				case '*':
					if star == k {
						b.WriteString(form)
					}
					star++
				case '?':
					b.WriteByte('x')
				case '[':
					end := strings.IndexByte(pattern[i+1:], ']')
					if end < 0 {
						b.WriteByte(c)
						continue
					}
					class := pattern[i+1 : i+1+end]
					i += 1 + end
					if class != "" && class[0] != '!' && class[0] != '^' {
						b.WriteByte(class[0])
					} else {
						b.WriteByte('x')
					}
				default:
					b.WriteByte(c)
				}
			}
			out = append(out, b.String())
		}
	}
	return out
}

// riskPayloads are the arguments that take a risk, from the table: every
// risky option with a value, every subcommand with its risky options, the
// texts the operand judges read, and commands a wrapper could run.
var riskPayloads = func() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	optForms := func(o opt) []string {
		if o.flag == "-exec" || o.flag == "-execdir" || o.flag == "-ok" || o.flag == "-okdir" {
			return []string{o.flag + " sh -c id {} +"}
		}
		if !o.value {
			return []string{o.flag}
		}
		if strings.HasPrefix(o.flag, "--") || len(o.flag) > 2 {
			return []string{o.flag + "=x", o.flag + " x"}
		}
		return []string{o.flag + " x", o.flag + "x"}
	}
	for _, s := range []string{
		"sh -c id", `'BEGIN{system("id")}'`, `'{print > "x"}'`, "'e id'", "'1w x'", "'s/a/b/e'", "xf x.tar", "cf x.tar .",
		"+!id", "config core.pager x", "run x@latest", "install x@latest", "bash", "FOO=x sh", "find . -delete",
	} {
		add(s)
	}
	names := make([]string, 0, len(programs))
	for name := range programs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := programs[name]
		add(name)
		for _, o := range p.opts {
			for _, f := range optForms(o) {
				add(f)
			}
		}
		subs := make([]string, 0, len(p.subs))
		for sub := range p.subs {
			subs = append(subs, sub)
		}
		sort.Strings(subs)
		for _, sub := range subs {
			for _, o := range p.subs[sub] {
				for _, f := range optForms(o) {
					add(f)
					add(sub + " " + f)
				}
			}
		}
		for sub := range p.subAlways {
			add(sub)
		}
	}
	add("x")
	return append(out, arbitraryCommands...)
}()
