package main

import (
	"flag"
	"fmt"
	"strings"
)

// helpError is --help (or -h) on a command: run prints the command's lines
// of the usage and its flags on stdout and exits 0.
type helpError struct {
	name  string        // the command's path: "policy rules add"
	flags *flag.FlagSet // nil for a group of subcommands ("policy")
}

func (e helpError) Error() string { return "help requested" }

// isHelp reports whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// text is the help: the usage lines of the command (those of the nearest
// enclosing command when it has none of its own), then its flags.
func (e helpError) text() string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	b.WriteString(usageOf(e.name))
	if e.flags != nil && hasFlags(e.flags) {
		b.WriteString("\nFlags:\n")
		e.flags.VisitAll(func(f *flag.Flag) {
			name, text := flag.UnquoteUsage(f)
			arg := " " + strings.ToUpper(name)
			switch {
			case name == "":
				arg = ""
			case name == "value": // the one Var kind: durationValue
				arg = " DURATION"
			}
			fmt.Fprintf(&b, "  --%s%s\n        %s", f.Name, arg, text)
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				fmt.Fprintf(&b, " (default %s)", f.DefValue)
			}
			b.WriteString("\n")
		})
	}
	return b.String()
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// usageOf returns the lines of usage that describe the command name (each
// with its continuation lines), trying "policy rules" when "policy rules
// add" has no line of its own.
func usageOf(name string) string {
	for words := strings.Fields(name); len(words) > 0; words = words[:len(words)-1] {
		if s := usageLines(strings.Join(words, " ")); s != "" {
			return s
		}
	}
	return usage
}

func usageLines(name string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(usage, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "gateway "):
			rest := strings.TrimPrefix(t, "gateway ")
			in = rest == name || strings.HasPrefix(rest, name+" ") || strings.HasPrefix(rest, name+"|")
		case t == "" || !strings.HasPrefix(line, "  "):
			in = false
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
