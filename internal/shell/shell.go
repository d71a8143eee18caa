// Package shell reads a command line the way bash will run it, with the
// parser behind shfmt (mvdan.cc/sh/v3/syntax), for the two questions the
// gateway asks of a shell command: which words, paths and redirection
// targets does it name (Words, for the guard), and is it provably one
// plain command (Single, for an approve rule or an agent's shortcut such
// as Codex's apply_patch heredoc). A command the parser refuses proves
// nothing: callers ask about it as code:exec on the whole text.
package shell

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Kind says where a word stands in a command line.
type Kind uint8

// The kinds of word.
const (
	Arg      Kind = iota // an argument (also the words of [[ ]], for, case, ${x:-word})
	Name                 // a simple command's name: its first word
	Assign               // an assignment's value: a=VALUE, export a=VALUE, a=(V1 V2)
	Redirect             // a redirection's target: > FILE, < FILE, 2>&1
	Heredoc              // a here-document's body, or a here-string (<<< WORD)
)

func (k Kind) String() string {
	return [...]string{"arg", "name", "assign", "redirect", "heredoc"}[k]
}

// Word is one word of a command line as bash hands it to the command,
// after brace expansion and quote removal. A word with a part known only
// when it runs ($x, $(cmd), `cmd`, an unquoted glob, {1..9}) is not
// Static: its Text is then a path.Match pattern of what it may be, with
// "*" for each run-time part and a backslash before each quoted * ? [ \
// (bash's glob syntax: [!x] and [^x] both negate).
type Word struct {
	Kind   Kind
	Text   string
	Static bool
	// Tilde says Text starts with an unquoted "~" that bash replaces by
	// a home directory (left for the caller, who knows whose).
	Tilde bool
	// Depth is 0 for the command line itself, 1 for a word of a script
	// it runs (a `bash -c` string, an eval, a here-document read as a
	// script), and so on.
	Depth int
}

// Matches reports whether s is a value the word may take: equal to Text
// when the word is Static, matched by it as a pattern when it is not (a
// "*" there may stand for a run-time value, so it matches any string,
// "/" included; and an unquoted glob that matches no file is passed as
// written, so the pattern read as plain text matches too). A leading "~" (Tilde) stands for home.
func (w Word) Matches(s, home string) bool {
	t := w.Text
	if w.Tilde {
		t = expandTilde(t, home, w.Static)
	}
	if w.Static || unescape(t) == s {
		return t == s || !w.Static // a glob that matches no file is passed as written
	}
	re, err := regexp.Compile(patternRegexp(t))
	return err == nil && re.MatchString(s)
}

// unescape is a pattern read as a plain string: bash passes an unquoted
// glob that matches no file as it was written.
func unescape(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// patternRegexp is a Text pattern as an anchored regular expression.
func patternRegexp(p string) string {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '\\':
			if i+1 < len(p) {
				i++
				b.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		case '[':
			end := strings.IndexByte(p[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := p[i+1 : i+1+end]
			i += 1 + end
			neg := strings.HasPrefix(class, "^") || strings.HasPrefix(class, "!")
			if neg {
				class = class[1:]
			}
			b.WriteString("[")
			if neg {
				b.WriteString("^")
			}
			b.WriteString(strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, `^`, `\^`).Replace(class))
			b.WriteString("]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`)$`)
	return b.String()
}

// expandTilde replaces a leading "~" or "~/" by home; "~user" may be any
// home, so it becomes "*" (a pattern).
func expandTilde(t, home string, static bool) string {
	if !static {
		home = escapeGlob(home)
	}
	switch {
	case t == "~":
		return home
	case strings.HasPrefix(t, "~/"):
		return home + t[1:]
	}
	return t
}

// ErrParse is wrapped by every error about a command line bash would not
// run, or that the parser cannot read the way bash does.
var ErrParse = errors.New("shell: cannot parse the command line")

// maxDepth bounds how deep scripts within scripts are read (a `bash -c`
// string holding an eval holding …); deeper strings stay words.
const maxDepth = 4

// maxAlternatives bounds brace expansion: a word with more alternatives
// becomes one pattern.
const maxAlternatives = 64

// Parse reads a command line as bash does (the LangBash variant).
func Parse(src string) (*syntax.File, error) {
	if strings.ContainsRune(src, 0) {
		return nil, fmt.Errorf("%w: a NUL byte (bash stops reading there)", ErrParse)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParse, err)
	}
	return f, nil
}

// Words lists every word of a command line: command names, arguments,
// assignment values, redirection targets, here-document bodies, those
// inside substitutions, and, read again as scripts, every argument or
// body that parses as one (so `bash -c 'cat /etc/shadow'`, `sudo sh -c …`
// and `eval …` show the words they run). It lists more than bash may
// use, never less; the differential test in this package holds it to
// what bash runs. An error (wrapping ErrParse) means the line, or a
// string in it that bash may run as a script, did not parse (the words
// found are returned with it): the list may be short, so check the whole
// text as well.
func Words(src string) ([]Word, error) {
	f, err := Parse(src)
	if err != nil {
		return nil, err
	}
	w := walker{scripts: map[*syntax.Word]bool{}}
	w.file(f, 0)
	return w.words, w.err
}

// Strings is Words' texts, for a caller that checks each against a list
// of forbidden paths (a non-static word's text is a pattern).
func Strings(src string) ([]string, error) {
	ws, err := Words(src)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Text
	}
	return out, nil
}

type walker struct {
	words   []Word
	scripts map[*syntax.Word]bool // words bash runs as scripts: bash -c WORD, bash <<WORD
	err     error                 // the first of those that did not parse
}

// nested reads a string the line may run as a script. A string known to
// be one (script) that does not parse makes the list short: say so.
func (w *walker) nested(src string, depth int, script bool) {
	sf, err := Parse(src)
	if err != nil {
		if script && w.err == nil {
			w.err = fmt.Errorf("a script it runs: %w", err)
		}
		return
	}
	w.file(sf, depth)
}

// staticText is a word's value when it is one static word, else "".
func staticText(w *syntax.Word) string {
	alts := render(w, unquoted)
	if len(alts) != 1 || !alts[0].static {
		return ""
	}
	return alts[0].text
}

// dynamicScript notes that the line runs a script known only when it
// runs (eval "$x", bash -c "$(…)"): the list may be short.
func (w *walker) dynamicScript() {
	if w.err == nil {
		w.err = fmt.Errorf("%w: a script it runs is known only at run time", ErrParse)
	}
}

// markScripts notes the words of a simple command that a shell runs as
// a script: the string after -c of sh, bash, … (also behind a wrapper:
// sudo sh -c, env bash -c), and a here-document or here-string fed to a
// shell that has no script to run.
func (w *walker) markScripts(st *syntax.Stmt) {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return
	}
	stdinScript := false
	for i := 0; i < len(call.Args); i++ {
		if !shells[path.Base(staticText(call.Args[i]))] {
			continue
		}
		stdinScript = i == 0
		for j := i + 1; j < len(call.Args); j++ {
			a := staticText(call.Args[j])
			if a == "" || a[0] != '-' && a[0] != '+' {
				stdinScript = false
				break
			}
			if len(a) > 1 && a[1] != '-' && strings.Contains(a, "c") && j+1 < len(call.Args) {
				w.scripts[call.Args[j+1]] = true
				stdinScript = false
				break
			}
		}
	}
	if !stdinScript {
		return
	}
	for _, r := range st.Redirs {
		switch {
		case r.Hdoc != nil:
			w.scripts[r.Hdoc] = true
		case r.Op == syntax.WordHdoc:
			w.scripts[r.Word] = true
		}
	}
}

// shells are the programs whose -c string, or whose stdin, is a script.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "rbash": true}

func (w *walker) file(f *syntax.File, depth int) {
	kinds := map[*syntax.Word]Kind{}
	skip := map[*syntax.Word]bool{}
	hereString := map[*syntax.Word]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			w.markScripts(n)
			for _, r := range n.Redirs {
				if r.Hdoc != nil {
					skip[r.Word] = true // the delimiter
					kinds[r.Hdoc] = Heredoc
				} else if r.Word != nil {
					kinds[r.Word] = Redirect
					if r.Op == syntax.WordHdoc {
						kinds[r.Word], hereString[r.Word] = Heredoc, true
					}
				}
			}
		case *syntax.CallExpr:
			for i, a := range n.Args {
				if i == 0 {
					kinds[a] = Name
				}
			}
			for _, as := range n.Assigns {
				if as.Value != nil {
					kinds[as.Value] = Assign
				}
			}
			w.evalArgs(n, depth)
		case *syntax.DeclClause:
			for _, as := range n.Args {
				if as.Value != nil {
					kinds[as.Value] = Assign
				}
			}
		case *syntax.Word:
			if skip[n] {
				return false
			}
			k := kinds[n]
			ctx := unquoted
			if k == Heredoc && !hereString[n] {
				ctx = heredoc
			}
			tilde := ctx == unquoted && leadingTilde(n)
			for _, a := range render(n, ctx) {
				w.words = append(w.words, Word{Kind: k, Text: a.text, Static: a.static, Tilde: tilde, Depth: depth})
				// A string that parses as a script may be run as one
				// (bash -c, sudo sh -c, ssh host, a here-document fed to
				// a shell): read it, so its words are listed too.
				switch {
				case !a.static && w.scripts[n]:
					w.dynamicScript()
				case a.static && depth < maxDepth && looksLikeScript(a.text):
					w.nested(a.text, depth+1, w.scripts[n])
				}
			}
		}
		return true
	})
}

// evalArgs reads `eval a b c` as the script "a b c", the way eval does.
func (w *walker) evalArgs(c *syntax.CallExpr, depth int) {
	i := 0
	for i < len(c.Args) && (staticText(c.Args[i]) == "command" || staticText(c.Args[i]) == "builtin") {
		i++ // command eval …, builtin eval …
	}
	if i+1 >= len(c.Args) || staticText(c.Args[i]) != "eval" || depth >= maxDepth {
		return
	}
	var parts []string
	for _, a := range c.Args[i+1:] {
		alts := render(a, unquoted)
		if len(alts) != 1 || !alts[0].static {
			w.dynamicScript()
			return
		}
		parts = append(parts, alts[0].text)
	}
	w.nested(strings.Join(parts, " "), depth+1, true)
}

// leadingTilde reports whether a word starts with an unquoted "~".
func leadingTilde(w *syntax.Word) bool {
	l, ok := w.Parts[0].(*syntax.Lit)
	return ok && strings.HasPrefix(l.Value, "~")
}

// looksLikeScript reports whether a string holds more than one word or
// any shell syntax, so reading it as a script can show something new.
func looksLikeScript(s string) bool {
	return strings.ContainsAny(s, " \t\n;&|<>()$`'\"\\")
}
