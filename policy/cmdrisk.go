package policy

import (
	"path"
	"slices"
	"strings"
)

// CommandRisk judges one simple command, as bash hands it its words
// (shell.Single's Args), by what the program does with its arguments
// (the table in cmdtable.go): a wrapper is judged by the command it runs,
// an option that runs a program, writes a file or reads a config that
// can run code is a risk, and so is an editor whatever its arguments.
// reason says which program and option, in words; a program the table
// does not know takes no risk here. An approve rule on code:exec never
// approves such a command, and CheckRule refuses a rule that could match
// one.
func CommandRisk(args []string) (reason string, risky bool) {
	return commandRisk(args, 0)
}

// maxWrapDepth bounds wrappers inside wrappers (nice timeout env …).
const maxWrapDepth = 8

func commandRisk(args []string, depth int) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	if depth > maxWrapDepth {
		return "wrappers nested deeper than " + itoa(maxWrapDepth), true
	}
	name, p, ok := lookupProgram(args[0])
	if !ok {
		return "", false
	}
	if p.always != "" {
		return name + ": " + string(p.always), true
	}
	s := scan{p: p, values: map[string][]string{}}
	for i := 1; i < len(args); i++ {
		w := args[i]
		if w == "--" && p.style != exact {
			s.operands = append(s.operands, args[i+1:]...)
			break
		}
		if isOptionWord(w) {
			o, takesNext, hit := s.option(w)
			if hit {
				return strings.Join(slices.DeleteFunc([]string{name, s.sub, o.flag}, func(x string) bool { return x == "" }), " ") +
					": " + string(o.risk), true
			}
			if takesNext && i+1 < len(args) {
				i++
				s.values[o.flag] = append(s.values[o.flag], args[i])
			}
			continue
		}
		if p.wrap != nil {
			return wrapped(name, p, args[i:], depth)
		}
		if s.sub == "" && (p.subs != nil || p.subAlways != nil) {
			s.sub = w
			if r, ok := p.subAlways[w]; ok {
				return name + " " + w + ": " + string(r), true
			}
		}
		s.operands = append(s.operands, w)
	}
	if p.operand != nil {
		if r, why := p.operand(args, s.operands, s.values); r != "" {
			return name + " " + why + ": " + string(r), true
		}
	}
	return "", false
}

// wrapped judges the command a wrapper runs: rest starts at the first
// word after its options.
func wrapped(name string, p program, rest []string, depth int) (string, bool) {
	if name == "env" {
		if strings.Contains(rest[0], "=") {
			return "env " + rest[0][:strings.Index(rest[0], "=")+1] + "…: sets the environment a program loads code from", true
		}
	}
	if p.wrap.positional >= len(rest) {
		return "", false
	}
	inner := rest[p.wrap.positional:]
	// Options after the operands (flock FILE -c CMD).
	s := scan{p: p, values: map[string][]string{}}
	for len(inner) > 0 && isOptionWord(inner[0]) {
		o, takesNext, hit := s.option(inner[0])
		if hit {
			return name + " " + o.flag + ": " + string(o.risk), true
		}
		inner = inner[1:]
		if takesNext && len(inner) > 0 {
			inner = inner[1:]
		}
	}
	if len(inner) == 0 {
		return "", false
	}
	if reason, hit := commandRisk(inner, depth+1); hit {
		return name + " runs " + reason, true // "nice runs sh -c: runs …"
	}
	if p.wrap.feeds {
		if in, _, ok := lookupProgram(inner[0]); ok {
			return name + " runs " + in + " with arguments read from its input, which the rule cannot see", true
		}
	}
	return "", false
}

// lookupProgram finds a program by its name: the base name of a path,
// with a version suffix taken off (python3.12, gawk-5).
func lookupProgram(argv0 string) (string, program, bool) {
	name := path.Base(argv0)
	if p, ok := programs[name]; ok {
		return name, p, true
	}
	trimmed := strings.TrimRight(name, "0123456789.-")
	if p, ok := programs[trimmed]; ok && trimmed != "" {
		return trimmed, p, true
	}
	return name, program{}, false
}

func isOptionWord(w string) bool { return len(w) > 1 && w[0] == '-' }

// scan is the state of reading one command's words.
type scan struct {
	p        program
	sub      string // the subcommand, once an operand named it
	operands []string
	values   map[string][]string // option values, by the table's flag
}

// option matches an option word against the table: a risky option (hit),
// or one that takes its value in the next word (takesNext).
func (s *scan) option(w string) (o opt, takesNext, hit bool) {
	var risky []opt
	if s.sub == "" || s.p.subs == nil {
		risky = s.p.opts
	}
	if s.sub != "" {
		risky = append(risky[:len(risky):len(risky)], s.p.subs[s.sub]...)
	}
	for _, o := range risky {
		if _, ok := matchFlag(s.p.style, w, o.flag, s.p); ok {
			return o, false, true
		}
	}
	for _, v := range s.p.valued {
		if attached, ok := matchFlag(s.p.style, w, v, s.p); ok {
			if attached != "" {
				s.values[v] = append(s.values[v], attached)
				return opt{flag: v}, false, false
			}
			return opt{flag: v}, true, false
		}
	}
	if s.p.wrap != nil {
		for _, v := range s.p.wrap.valued {
			if attached, ok := matchFlag(s.p.style, w, v, s.p); ok {
				return opt{flag: v}, attached == "", false
			}
		}
	}
	return opt{}, false, false
}

// matchFlag reports whether the word w spells the option flag in the
// program's style, and the value attached to it ("" when none).
func matchFlag(style optStyle, w, flag string, p program) (attached string, ok bool) {
	switch style {
	case exact:
		return "", w == flag
	case goFlag:
		name := strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-")
		name, val, _ := strings.Cut(name, "=")
		return val, "-"+name == flag
	case gnu: // below
	}
	if strings.HasPrefix(flag, "--") {
		if !strings.HasPrefix(w, "--") {
			return "", false
		}
		name, val, _ := strings.Cut(w, "=")
		// getopt_long and git take any unambiguous prefix: --outp is
		// --output; an ambiguous one is refused by the program, so
		// reading it as the risky option is safe.
		return val, name == flag || len(name) >= 4 && strings.HasPrefix(flag, name)
	}
	if strings.HasPrefix(w, "--") {
		return "", false
	}
	if len(flag) > 2 {
		name, val, _ := strings.Cut(w, "=")
		return val, name == flag
	}
	// A short option, maybe bundled (-xzf) or with its value attached
	// (-ofile): scan the letters until one that takes a value.
	letter := flag[1]
	for k := 1; k < len(w); k++ {
		if w[k] == letter {
			return w[k+1:], true
		}
		if takesValue(p, w[k]) {
			return "", false
		}
	}
	return "", false
}

// takesValue reports a short option letter that takes a value, so the
// rest of a bundle is that value.
func takesValue(p program, c byte) bool {
	for _, lists := range [][]string{p.valued, wrapValued(p)} {
		for _, v := range lists {
			if len(v) == 2 && v[1] == c {
				return true
			}
		}
	}
	for _, o := range p.opts {
		if o.value && len(o.flag) == 2 && o.flag[1] == c {
			return true
		}
	}
	return false
}

func wrapValued(p program) []string {
	if p.wrap == nil {
		return nil
	}
	return p.wrap.valued
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
