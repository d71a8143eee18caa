package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command is a command line proven to be one simple command.
type Command struct {
	// Dir is DIR of a leading `cd DIR &&` (only with AllowCd), else "".
	Dir string
	// Args are the command's words as it receives them: Args[0] is its
	// name.
	Args []string
	// Heredoc is the body of its one here-document (only with
	// AllowHeredoc); HasHeredoc says there is one.
	Heredoc    string
	HasHeredoc bool
}

// Allow widens what Single accepts.
type Allow uint8

// What Single may accept besides a bare command.
const (
	AllowCd      Allow = 1 << iota // a leading `cd DIR &&`
	AllowHeredoc                   // one here-document (<<, not <<-) on stdin whose body bash does not expand
)

// Single reports whether a command line is, as bash reads it, exactly one
// simple command whose every word is known before it runs: no list, pipe,
// background job, substitution, parameter, glob or brace expansion,
// assignment, redirection, function or compound command, and nothing
// after it, and no word that starts with an unquoted "~" (its value is
// a home directory). That is what an approve rule on code:exec may match, and what
// a shortcut ("this is only a patch") needs before it applies. Anything
// else, or a line the parser refuses, is not single.
func Single(src string, allow Allow) (Command, bool) {
	if args, ok := plainWords(src); ok {
		return Command{Args: args}, true
	}
	f, err := Parse(src)
	if err != nil {
		return Command{}, false
	}
	var c Command
	stmts := f.Stmts
	if len(stmts) != 1 {
		return Command{}, false
	}
	st := stmts[0]
	if allow&AllowCd != 0 {
		if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.AndStmt && plain(st) {
			args, ok := staticCall(b.X)
			if !ok || len(args) != 2 || args[0] != "cd" || len(b.X.Redirs) > 0 {
				return Command{}, false
			}
			c.Dir, st = args[1], b.Y
		}
	}
	if !plain(st) {
		return Command{}, false
	}
	redirs := st.Redirs
	if allow&AllowHeredoc != 0 && len(redirs) == 1 {
		r := redirs[0]
		if r.Op == syntax.Hdoc && r.Hdoc != nil && (r.N == nil || r.N.Value == "0") {
			body := render(r.Hdoc, heredoc)
			if len(body) != 1 || !body[0].static {
				return Command{}, false
			}
			c.Heredoc, c.HasHeredoc, redirs = body[0].text, true, nil
		}
	}
	if len(redirs) > 0 {
		return Command{}, false
	}
	args, ok := staticCall(st)
	if !ok {
		return Command{}, false
	}
	c.Args = args
	return c, true
}

// plainWords reads a line of plain words without the parser: letters,
// digits and _@%+=:,./- separated by single spaces, the first word not a
// reserved word nor an assignment. bash reads such a line as exactly
// those words (the differential test holds it to bash like the rest).
func plainWords(src string) ([]string, bool) {
	if src == "" || len(src) > 256 || src[0] == ' ' || src[len(src)-1] == ' ' {
		return nil, false
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("_@%+=:,./-", c) >= 0:
		case c == ' ' && src[i-1] != ' ':
		default:
			return nil, false
		}
	}
	args := strings.Split(src, " ")
	if reserved[args[0]] || strings.IndexByte(args[0], '=') >= 0 {
		return nil, false
	}
	return args, true
}

// reserved are bash's reserved words that can start a line of plain
// characters.
var reserved = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"case": true, "esac": true, "while": true, "until": true, "for": true, "select": true,
	"in": true, "function": true, "time": true, "coproc": true,
}

// plain reports whether a statement runs in the foreground, unnegated.
func plain(st *syntax.Stmt) bool {
	return !st.Negated && !st.Background && !st.Coprocess && !st.Disown
}

// staticCall is the words of a statement that is one simple command with
// no assignment and only static words.
func staticCall(st *syntax.Stmt) ([]string, bool) {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 || !plain(st) {
		return nil, false
	}
	args := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		if leadingTilde(w) {
			return nil, false
		}
		alts := render(w, unquoted)
		if len(alts) != 1 || !alts[0].static {
			return nil, false
		}
		args = append(args, alts[0].text)
	}
	return args, true
}
