package main

// The reader's terminal of the walkthroughs (walkthrough_test.go): a page's
// shell block run statement by statement in one shell session
// (mvdan.cc/sh/v3, the real programs on PATH: curl, jq, the gateway), each
// statement's output held to the "# → …" lines the page prints after it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// shownMark starts a line (or ends a command line) that shows what the
// command before it prints.
const shownMark = "# → "

// step is one statement of a page's shell block and what the page says it
// prints ("" and !checked: the page shows nothing, the command must only
// succeed).
type step struct {
	line    int // in the page
	src     string
	stmt    *syntax.Stmt
	shown   string
	checked bool
}

// steps splits a shell block into its statements and their shown output.
func steps(b pageBlock) ([]step, error) {
	f, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(b.text), b.file)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %s block %q does not parse: %v", b.file, b.line, b.lang, b.name, err)
	}
	var out []step
	for _, s := range f.Stmts {
		start, end := s.Pos().Offset(), s.End().Offset()
		out = append(out, step{line: b.line + int(s.Pos().Line()) - 1, src: b.text[start:end], stmt: s})
	}
	lines := strings.Split(b.text, "\n")
	for i, l := range lines {
		k := strings.Index(l, shownMark)
		if k < 0 {
			if strings.TrimSpace(l) == strings.TrimSpace(shownMark) && strings.HasPrefix(strings.TrimSpace(l), "#") {
				k = strings.Index(l, "#")
			} else {
				continue
			}
		}
		text := ""
		if k+len(shownMark) <= len(l) {
			text = l[k+len(shownMark):]
		}
		// The statement this line belongs to: the one it ends, or the
		// last one before it.
		at := -1
		for j, s := range out {
			if int(s.stmt.Pos().Line()) <= i+1 {
				at = j
			}
		}
		if at < 0 {
			return nil, fmt.Errorf("%s:%d: %q shows output before any command", b.file, b.line+i, shownMark)
		}
		if out[at].checked {
			out[at].shown += "\n" + text
		} else {
			out[at].shown, out[at].checked = text, true
		}
	}
	return out, nil
}

// shell is the reader's terminal: one session whose exports and working
// directory carry over from block to block.
type shell struct {
	mu     sync.Mutex
	runner *interp.Runner
	out    *swapWriter
	base   []string
}

type swapWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *swapWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

func (s *swapWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func newShell(dir string, environ []string) (*shell, error) {
	sw := &swapWriter{}
	r, err := interp.New(interp.Dir(dir), interp.Env(expand.ListEnviron(environ...)), interp.StdIO(strings.NewReader(""), sw, sw))
	if err != nil {
		return nil, err
	}
	return &shell{runner: r, out: sw, base: environ}, nil
}

// stepTimeout bounds one command of a page: a long-poll that waits for a
// tap the script never makes fails the walkthrough instead of hanging it.
const stepTimeout = 60 * time.Second

// run runs one statement; out is what it printed, stdout and stderr as a
// terminal shows them.
func (sh *shell) run(ctx context.Context, s *syntax.Stmt) (out string, err error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var b lockedBuffer
	sh.out.set(&b)
	defer sh.out.set(nil)
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	err = sh.runner.Run(ctx, s)
	var st interp.ExitStatus
	if errors.As(err, &st) {
		err = fmt.Errorf("exit status %d", int(st))
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer in %s", stepTimeout)
	}
	return b.String(), err
}

// runLine runs a line that is not on a page (a hidden step of a script).
func (sh *shell) runLine(ctx context.Context, line string) (string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		return "", err
	}
	var all strings.Builder
	for _, s := range f.Stmts {
		out, err := sh.run(ctx, s)
		all.WriteString(out)
		if err != nil {
			return all.String(), err
		}
	}
	return all.String(), nil
}

// environ is the session's environment now: what it started with and
// what it exported since, for the programs a script starts beside it
// (the gateway of `make run` sees what the reader's terminal has).
func (sh *shell) environ() []string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	vars := map[string]string{}
	var order []string
	for _, kv := range sh.base {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for k, v := range sh.runner.Vars {
		if !v.Exported {
			continue
		}
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v.String()
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// env is one variable of the session's environment now ("" if unset).
func (sh *shell) env(name string) string {
	for _, kv := range sh.environ() {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	return ""
}
