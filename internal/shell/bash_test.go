package shell

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The differential test: bash runs a script whose commands are stubs on
// PATH that record their argv and stdin; every word bash handed to a
// stub must be one Words listed, and a script Single accepts must run
// exactly that one command with exactly those words and that body.

// stubs are the commands a generated script may run; each records itself.
var stubs = []string{"a", "b", "c", "git", "apply_patch"}

type bashRun struct {
	bin, home, trace string
	bash             string
}

// newBash prepares a PATH of stubs (and bash, sh as real bash, so `bash -c`
// and `sh -c` strings run too).
func newBash(tb testing.TB) *bashRun {
	tb.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		tb.Skip("no bash on this machine")
	}
	dir := tb.TempDir()
	r := &bashRun{bin: filepath.Join(dir, "bin"), home: filepath.Join(dir, "home"), trace: filepath.Join(dir, "trace"), bash: bash}
	for _, d := range []string{r.bin, r.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	// One write per record (O_APPEND): background jobs' stubs run at the
	// same time and must not interleave. bash -c returns only when every
	// process holding its stdout has exited, background jobs included.
	stub := "#!" + bash + "\n" +
		`IFS= read -r -d '' body` + "\n" +
		`rec=$(printf '%s\037' "${0##*/}" "$@"; printf '\035%s\036' "$body"; printf x)` + "\n" +
		`printf '%s' "${rec%x}" >> "$TRACE"` + "\n"
	for _, s := range stubs {
		if err := os.WriteFile(filepath.Join(r.bin, s), []byte(stub), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for _, s := range []string{"bash", "sh"} {
		if err := os.Symlink(bash, filepath.Join(r.bin, s)); err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

// call is one command a stub recorded.
type call struct {
	argv  []string
	stdin string
}

// run runs script with bash -c in a fresh empty directory and returns
// what the stubs recorded.
func (r *bashRun) run(tb testing.TB, script string) []call {
	tb.Helper()
	cwd, err := os.MkdirTemp(filepath.Dir(r.bin), "cwd")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(cwd)
	os.Remove(r.trace)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bash, "-c", script)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + r.bin, "HOME=" + r.home, "TRACE=" + r.trace, "LC_ALL=C"}
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
	_ = cmd.Run() // a failing script still ran what it ran
	if ctx.Err() != nil {
		tb.Fatalf("bash did not finish: %q", script)
	}
	b, err := os.ReadFile(r.trace)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	var out []call
	for _, rec := range strings.Split(string(b), "\x1e") {
		if rec == "" {
			continue
		}
		args, stdin, _ := strings.Cut(rec, "\x1d")
		argv := strings.Split(strings.TrimSuffix(args, "\x1f"), "\x1f")
		out = append(out, call{argv: argv, stdin: stdin})
	}
	return out
}

// check holds Words and Single to what bash ran.
func (r *bashRun) check(t testing.TB, script string) {
	t.Helper()
	ran := r.run(t, script)
	words, err := Words(script)
	for _, c := range ran {
		if err != nil {
			break // the list may be short, and says so: callers check the whole text
		}
		for _, a := range c.argv {
			if !slices.ContainsFunc(words, func(w Word) bool { return w.Matches(a, r.home) }) {
				t.Fatalf("bash ran %q with the word %q, which Words does not list\nscript: %q\nwords: %+v", c.argv, a, script, words)
			}
		}
	}
	one, ok := Single(script, AllowCd|AllowHeredoc)
	if !ok {
		return
	}
	if !slices.Contains(stubs, one.Args[0]) {
		return // bash, sh, eval: one command, which runs others (listed by Words)
	}
	if len(ran) > 1 {
		t.Fatalf("Single said one command %q, bash ran %d: %q\nscript: %q", one.Args, len(ran), ran, script)
	}
	if len(ran) == 0 {
		if one.Dir == "" {
			t.Fatalf("Single said %q runs, bash ran nothing\nscript: %q", one.Args, script)
		}
		return // cd DIR failed: nothing ran
	}
	want := append([]string(nil), one.Args...)
	want[0] = filepath.Base(want[0])
	if !slices.Equal(ran[0].argv, want) {
		t.Fatalf("Single said %q, bash ran %q\nscript: %q", want, ran[0].argv, script)
	}
	if one.HasHeredoc && ran[0].stdin != one.Heredoc {
		t.Fatalf("Single said the body is %q, the command read %q\nscript: %q", one.Heredoc, ran[0].stdin, script)
	}
}

// handWritten are the lines the gateway has been attacked with, and their
// family.
var handWritten = []string{
	"git status",
	"git status --short",
	"git status; a x",
	"git status && a x",
	"git status || a x",
	"git status | a x",
	"git status & a x",
	"git status\na x",
	"git status $(a x)",
	"git status `a x`",
	"git status \"$(a x)\"",
	"git status <(a x)",
	"git status >(a x)",
	"git status > out",
	"v=$(a x) git status",
	"git status {,;a\\ x}",
	"git stat{us,x}",
	"git 'status'",
	"git \"status\" \\--short",
	"git status $'--sh\\x6frt'",
	"bash -c 'a /etc/shadow'",
	"sh -c \"b 'x y'\"",
	"bash -lc 'c z'",
	"eval 'a q'",
	"eval a '$(b w)'",
	"bash <<'EOF'\na heredoc\nEOF",
	"bash <<< 'b herestring'",
	"a <<EOF\n$(b inbody)\nEOF",
	"a <<'EOF'\n$(b inbody)\nEOF",
	"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x\n+y\n*** End Patch\nEOF",
	"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x\n+y\n*** End Patch\nEOF\na run after\nEOF",
	"apply_patch <<'EOF'\n*** Begin Patch\nEOF\n\na after\n*** End Patch\nEOF\n",
	"cd /tmp && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x\n+y\n*** End Patch\nEOF",
	"cd /tmp && apply_patch <<'EOF' && a more\n*** Begin Patch\nEOF",
	"apply_patch <<EOF\n$(a subst)\nEOF",
	"apply_patch <<-'EOF'\n\t*** Begin Patch\n\tEOF",
	"apply_patch <<'EOF' <<'EOG'\nx\nEOF\ny\nEOG",
	"apply_patch <<'EOF' > out\nx\nEOF",
	"apply_patch <<'EOF'\nx\nEOF\r\na cr\nEOF",
	"apply_patch <<'E F'\nx\nE F\na spaced\nE F",
	"apply_patch <<\"EOF\"\nx\nEOF",
	"apply_patch <<E\\OF\nx\nEOF",
	"a ~/x ~ '~'/y",
	"a x\\\ny",
	"a [ab] [!c] *.none ? '[' [",
	"for i in w1 w2; do a $i; done",
	"if a; then b y; fi",
	"( a sub ) && { b grp; }",
	"a ${v:-dflt} ${v:+alt}",
	"f() { a infn; }; f",
	"[[ -f /etc/shadow ]] && a x",
	"a $((1+2)) $[3]",
	"time a timed",
	"! a neg",
	"a x #comment b y",
	"declare v=$(a decl); b $v",
	"export v=1; a",
	"coproc a cop",
	"case x in x) a incase;; esac",
	"a {1..3}",
	"a $\"tr\"",
	"a \"\\$x\" \"\\q\" '\\z'",
	"sudo sh -c 'a as root'",
	"env bash -c \"b 'in env'\"",
}

func TestBashDifferential_HandWritten(t *testing.T) {
	r := newBash(t)
	for _, s := range handWritten {
		r.check(t, s)
	}
}

func TestBashDifferential_Generated(t *testing.T) {
	r := newBash(t)
	rng := rand.New(rand.NewSource(23))
	n := 300
	if testing.Short() {
		n = 60
	}
	for range n {
		r.check(t, genScript(rng, 0))
	}
}

func FuzzBashDifferential(f *testing.F) {
	for _, s := range handWritten {
		f.Add(s)
	}
	rng := rand.New(rand.NewSource(1))
	for range 50 {
		f.Add(genScript(rng, 0))
	}
	r := newBash(f)
	f.Fuzz(func(t *testing.T, script string) {
		if len(script) > 2000 || strings.ContainsAny(script, "\x1d\x1e\x1f") {
			return
		}
		// A script that may not end (a loop, a read from a terminal, a
		// fork) is not what the test is about.
		for _, w := range []string{"while", "until", "read", "wait", "sleep", "yes", "exec", ":(", "select", "fg", "suspend", "kill", "trap", "enable", "ulimit", "alias", "PATH", "TRACE", "shopt", "set"} {
			if strings.Contains(script, w) {
				return
			}
		}
		r.check(t, script)
	})
}

// genScript builds a random script from shell fragments.
func genScript(rng *rand.Rand, depth int) string {
	n := 1 + rng.Intn(3)
	var b strings.Builder
	prev := ""
	for i := range n {
		if i > 0 {
			if strings.Contains(prev, "<<") {
				b.WriteString("\n") // a here-document's delimiter ends its line
			} else {
				b.WriteString([]string{"; ", " && ", " || ", " | ", "\n", " & "}[rng.Intn(6)])
			}
		}
		prev = genCommand(rng, depth)
		b.WriteString(prev)
	}
	return b.String()
}

var genWords = []string{
	"x", "'y z'", `"q $v"`, `$'z\x41'`, `p\ q`, "{m,n}o", "~/h", "'~'/t", "*.none", "--opt=v",
	`"a\"b"`, `\$HOME`, "${v:-dflt}", "$v", `"dq\\bs"`, "[ab]", "r\\\ns", "$((1+2))", `"$(b k)"`, "`c l`",
	"/etc/shadow", `"/etc/"sha'dow'`, "$'\\x2fetc'", "{,a}", "'\"'", `"'"`, "#h", "x#y",
}

func genCommand(rng *rand.Rand, depth int) string {
	name := stubs[rng.Intn(len(stubs)-1)]
	words := []string{name}
	for range rng.Intn(4) {
		words = append(words, genWords[rng.Intn(len(genWords))])
	}
	cmd := strings.Join(words, " ")
	if rng.Intn(5) == 0 {
		cmd = "v=" + genWords[rng.Intn(len(genWords))] + " " + cmd
	}
	if rng.Intn(6) == 0 {
		cmd += []string{" > out", " 2>&1", " < /dev/null", " <<< 'hs x'", " >> out2"}[rng.Intn(5)]
	}
	if depth >= 2 {
		return cmd
	}
	inner := func() string { return genScript(rng, depth+1) }
	switch rng.Intn(14) {
	case 0:
		return "bash -c " + quote(inner())
	case 1:
		return "sh -c " + quote(inner()) + " arg0 x"
	case 2:
		return "eval " + quote(inner())
	case 3:
		return name + " \"$(" + inner() + ")\""
	case 4:
		return "( " + inner() + " )"
	case 5:
		return "{ " + inner() + "\n}"
	case 6:
		d := []string{"EOF", "'EOF'", `"EOF"`, "E"}[rng.Intn(4)]
		delim := strings.Trim(d, `'"`)
		body := "*** Begin Patch\n*** Add File: f\n+" + genWords[rng.Intn(len(genWords))] + "\n*** End Patch"
		s := "apply_patch <<" + d + "\n" + body + "\n" + delim
		if rng.Intn(2) == 0 {
			s += "\n" + inner() + "\n" + delim
		}
		return s
	case 7:
		return "bash <<'EOF'\n" + inner() + "\nEOF\n"
	case 8:
		return fmt.Sprintf("for i in %s %s; do %s $i; done", genWords[rng.Intn(len(genWords))], genWords[rng.Intn(len(genWords))], name)
	case 9:
		return "if " + inner() + "; then " + inner() + "; fi"
	}
	return cmd
}

// quote single-quotes s for bash.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
