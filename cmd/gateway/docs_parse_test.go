package main

// Reading the documentation for the docs test (docs_test.go): its fenced
// blocks, its paragraphs and their code spans, and the gateway command
// lines they show.

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../.."

// docFile is one Markdown file of the documentation.
type docFile struct {
	path string // relative to the repository: "docs/api.md"
	text string
}

// readDocs reads README.md, SECURITY.md and every docs/*.md.
func readDocs(t *testing.T) []docFile {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	names = append([]string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "SECURITY.md")}, names...)
	var out []docFile
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, n)
		out = append(out, docFile{filepath.ToSlash(rel), string(b)})
	}
	return out
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// block is a fenced code block.
type block struct {
	file   string
	line   int    // of the opening fence
	lang   string // the info string's first word: "toml", "sh", "" …
	marker string // a "<!-- docs-test: … -->" comment just above the fence: "fragment", "skip …"
	text   string
}

// paragraph is a run of non-blank lines outside the fences, joined with
// spaces so that a code span broken across lines reads whole.
type paragraph struct {
	file string
	line int
	text string
}

var (
	fenceRE  = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^\\s`]*)")
	markerRE = regexp.MustCompile(`<!--\s*docs-test:\s*(.*?)\s*-->`)
)

// parse splits a file into its fenced blocks and its paragraphs.
func parse(d docFile) (blocks []block, paras []paragraph) {
	lines := strings.Split(d.text, "\n")
	var cur *block
	var fence string
	var para []string
	paraLine := 0
	flush := func() {
		if len(para) > 0 {
			paras = append(paras, paragraph{d.path, paraLine, strings.Join(para, " ")})
		}
		para = nil
	}
	for i, l := range lines {
		if cur != nil {
			if strings.HasPrefix(strings.TrimSpace(l), fence) {
				blocks = append(blocks, *cur)
				cur = nil
				continue
			}
			cur.text += l + "\n"
			continue
		}
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			flush()
			b := block{file: d.path, line: i + 1, lang: m[3]}
			for j := i - 1; j >= 0 && j >= i-2; j-- {
				if mm := markerRE.FindStringSubmatch(lines[j]); mm != nil {
					b.marker = mm[1]
					break
				}
			}
			cur, fence = &b, m[2]
			continue
		}
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		if len(para) == 0 {
			paraLine = i + 1
		}
		para = append(para, strings.TrimSpace(l))
	}
	flush()
	return blocks, paras
}

// span is an inline code span and the text between it and the span before.
type span struct {
	code string
	gap  string // what stands between the previous span (or the start) and this one
}

var spanRE = regexp.MustCompile("`([^`]+)`")

func spans(text string) []span {
	var out []span
	last := 0
	for _, m := range spanRE.FindAllStringSubmatchIndex(text, -1) {
		// A table cell writes | as \| even inside a code span.
		out = append(out, span{code: strings.ReplaceAll(text[m[2]:m[3]], `\|`, "|"), gap: text[last:m[0]]})
		last = m[1]
	}
	return out
}

// cmdLine is one `gateway …` command line the docs show.
type cmdLine struct {
	where string // file:line
	raw   string
	args  []string // after "gateway", placeholders made concrete
}

// shellLangs are the fence languages whose lines are commands (the empty
// one holds the command line reference of docs/cli.md).
var shellLangs = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true}

// commandLines finds every gateway command line: in shell blocks (a line
// continued with "\", or in a usage block by an indented "[…" or "--…"),
// and in code spans that start with "gateway ".
func commandLines(files []docFile) []cmdLine {
	var out []cmdLine
	for _, f := range files {
		blocks, paras := parse(f)
		for _, b := range blocks {
			if b.lang == "json" || b.lang == "toml" { // an agent's hook settings: "command": "gateway hook …"
				for _, m := range hookCommandRE.FindAllStringSubmatchIndex(b.text, -1) {
					n := b.line + 1 + strings.Count(b.text[:m[0]], "\n")
					out = append(out, commandsIn(b.text[m[2]:m[3]], f.path, n)...)
				}
				continue
			}
			if !shellLangs[b.lang] || strings.HasPrefix(b.marker, "skip") {
				continue
			}
			lines := strings.Split(b.text, "\n")
			for i := 0; i < len(lines); i++ {
				l, n := lines[i], i
				for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
					i++
					l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
				}
				if b.lang == "" { // usage notation: a description follows two or more spaces
					for i+1 < len(lines) && strings.HasPrefix(lines[i+1], " ") &&
						(strings.HasPrefix(strings.TrimSpace(lines[i+1]), "[") || strings.HasPrefix(strings.TrimSpace(lines[i+1]), "--")) {
						i++
						l += " " + strings.TrimSpace(lines[i])
					}
					l = descriptionRE.ReplaceAllStringFunc(l, func(s string) string { return s[:1] })
				}
				out = append(out, commandsIn(l, f.path, b.line+1+n)...)
			}
		}
		for _, p := range paras {
			for _, s := range spans(p.text) {
				if strings.HasPrefix(s.code, "gateway ") || strings.HasPrefix(s.code, "./bin/gateway ") {
					out = append(out, commandsIn(s.code, p.file, p.line)...)
				}
			}
		}
	}
	return out
}

var (
	placeholderRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	descriptionRE = regexp.MustCompile(`\S\s{2,}\S.*$`) // in a usage block, what follows a command
	hookCommandRE = regexp.MustCompile(`"?command"?\s*[:=]\s*"([^"]*)"`)
	altGroupRE    = regexp.MustCompile(`\[[^\[\]|]*\|[^\[\]]*\]`) // an optional group of alternatives
)

// commandsIn reads the gateway commands of one line: its words split as a
// shell would (quotes kept together), cut at a pipe, "&&", ";" or a
// comment; usage notation ([optional], a|b, …, PLACEHOLDER) made concrete.
func commandsIn(line, file string, n int) []cmdLine {
	var out []cmdLine
	line = altGroupRE.ReplaceAllStringFunc(line, func(g string) string { // "[add|update ID|rm ID]" → "add"
		first, _, _ := strings.Cut(strings.Trim(g, "[]"), "|")
		return first
	})
	words := shellWords(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
	for start := 0; start < len(words); {
		end := start
		for end < len(words) && !isStop(words[end]) {
			end++
		}
		seg := words[start:end]
		for len(seg) > 0 && (strings.Contains(seg[0], "=") && !strings.HasPrefix(seg[0], "-") || seg[0] == "sudo" || seg[0] == "exec") {
			seg = seg[1:] // VAR=value gateway …, sudo gateway …
		}
		if len(seg) > 0 && filepath.Base(seg[0]) == "gateway" && !strings.HasPrefix(seg[0], "$") {
			var args []string
			for _, w := range seg[1:] {
				if w = concrete(w); w != "" {
					args = append(args, w)
				}
			}
			// "gateway …" names the program, "gateway ask: denied …" is
			// what a command printed: neither is a command line.
			if len(args) == 0 || args[0] != "x" && !strings.HasSuffix(args[0], ":") {
				out = append(out, cmdLine{where: file + ":" + strconv.Itoa(n), raw: strings.Join(seg, " "), args: args})
			}
		}
		if end < len(words) && strings.HasPrefix(words[end], "#") {
			break
		}
		start = end + 1
	}
	return out
}

func isStop(w string) bool {
	switch w {
	case "&&", "||", "|", ";", ">", ">>", "2>&1", "→", "<":
		return true
	}
	return strings.HasPrefix(w, "#") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, ">")
}

// concrete turns usage notation into a word the command line accepts:
// "[--all]" → "--all", "text|json" → "text", "…" → "x", "N" → "1".
func concrete(w string) string {
	w = strings.Trim(w, "[]")
	if i := strings.Index(w, "|"); i > 0 {
		w = w[:i]
	}
	switch {
	case w == "" || w == "...":
		return ""
	case strings.Contains(w, "…"), strings.HasPrefix(w, "$"):
		return "x"
	case placeholderRE.MatchString(w):
		return "1"
	}
	return w
}

// shellWords splits s into words, keeping quoted text (single or double
// quotes) in one word without its quotes, and a $(…) in one word.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote, depth := false, rune(0), 0
	var prev rune
	for _, r := range s {
		switch {
		case r == '(' && prev == '$' || depth > 0 && r == '(':
			depth++
			cur.WriteRune(r)
		case depth > 0:
			if r == ')' {
				depth--
			}
			cur.WriteRune(r)
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
		prev = r
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
