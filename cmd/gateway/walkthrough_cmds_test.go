package main

// The commands of the walkthrough scripts (walkthrough_test.go), beside
// testscript's own:
//
//	page FILE NAME          run the page's shell block NAME, each command's output held to its "# → …" lines
//	page -bg FILE NAME      the same, in the background (a long-poll that waits for a tap)
//	page -wait              wait for the background block and check it
//	page FILE NAME OUT      the page's output block NAME is what the file OUT holds
//	page -some FILE NAME OUT  each line of OUT is one of the block's lines (a block that lists every outcome)
//	block FILE NAME DEST    write the page's block NAME (a config) to DEST, to use it as the page says
//	paste OUT REGEXP        run, in the reader's shell, the line of OUT that REGEXP finds ("paste that export line")
//	sh LINE                 run LINE in the reader's shell, a step the page leaves to the reader
//	serve [ARGS…]           `gateway serve --listen 127.0.0.1:0 ARGS…` (`make run`) in the background, with the
//	                        reader's environment; its first lines in serve.out, its log in serve.log
//	serve -stop             stop it (SIGTERM) and wait
//	display [-re] OLD NEW   show OLD (a literal, or a regexp) as NEW before comparing: a port, a temporary home
//	waitlog REGEXP OUT      wait for serve.log's line that REGEXP finds; the line into OUT
//	lockdb FILE | lockdb -release   hold FILE's SQLite write lock as another process would (BEGIN IMMEDIATE), or let it go
//	tap DECISION [SCOPE]    the owner taps DECISION on the first pending card of the web page, logged in through
//	                        the link serve printed; SCOPE: the Allow always scope picked in the card's list

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/metnos/gateway/messenger/discord/discordtest"
)

type walkKey struct{}

// walk is one script's state.
type walk struct {
	root     string // the repository, absolute
	work     string
	shell    *shell
	displays []display

	bg     chan error // the background page block's result
	bgName string
	bgLog  strings.Builder // what it ran, logged once it is done (ts is not safe across goroutines)

	serve     *exec.Cmd
	serveDone chan struct{}

	web  *http.Client        // the owner's browser, once logged in
	lock *sql.Conn           // another process's hold on the SQLite file (lockdb)
	tg   *tgState            // the Telegram stand-in, once started
	sl   *slackState         // the Slack stand-in, once started
	dc   *discordtest.Server // the Discord stand-in, once started
}

func walkOf(ts *testscript.TestScript) *walk { return ts.Value(walkKey{}).(*walk) }

// goEnv is what the reader's `go run` needs from this machine's Go: its
// caches (the scripts' HOME is new and empty), and no network: the
// toolchain and modules at hand.
var goEnv = sync.OnceValue(func() []string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return nil
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(v) != 3 {
		return nil
	}
	return []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1], "GOPATH=" + v[2], "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=readonly"}
})

func setupWalk(e *testscript.Env, root string) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	home := filepath.Join(e.WorkDir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	e.Setenv("HOME", home)
	e.Setenv("REPO", abs)
	// `make build` puts the binary in ./bin/gateway, where the pages run it.
	gw, err := exec.LookPath("gateway")
	if err != nil {
		return fmt.Errorf("the gateway program testscript installs: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(e.WorkDir, "bin"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(gw, filepath.Join(e.WorkDir, "bin", "gateway")); err != nil {
		return err
	}
	var environ []string
	for _, kv := range e.Vars {
		if k, _, _ := strings.Cut(kv, "="); k == "HOME" {
			continue
		}
		environ = append(environ, kv)
	}
	environ = append(environ, "HOME="+home, "LANG=C.UTF-8")
	environ = append(environ, goEnv()...)
	sh, err := newShell(e.WorkDir, environ)
	if err != nil {
		return err
	}
	w := &walk{root: abs, work: e.WorkDir, shell: sh}
	e.Values[walkKey{}] = w
	e.Defer(w.stopServe)
	return nil
}

func walkCmds(fakes *walkFakes) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"page":     cmdPage,
		"block":    cmdBlock,
		"paste":    cmdPaste,
		"sh":       cmdSh,
		"serve":    cmdServeBG,
		"display":  cmdDisplay,
		"tap":      cmdTap,
		"waitlog":  cmdWaitLog,
		"telegram": cmdTelegram(fakes),
		"tg":       cmdTg,
		"slack":    cmdSlack(fakes),
		"sl":       cmdSl,
		"discord":  cmdDiscord(fakes),
		"dc":       cmdDc,
		"lockdb":   cmdLockDB,
	}
}

func cmdPage(ts *testscript.TestScript, neg bool, args []string) {
	w := walkOf(ts)
	if len(args) == 1 && args[0] == "-wait" {
		if w.bg == nil {
			ts.Fatalf("page -wait: no page block runs in the background")
		}
		err := <-w.bg
		w.bg = nil
		ts.Logf("%s", w.bgLog.String())
		w.bgLog.Reset()
		expectPage(ts, neg, w.bgName, err)
		return
	}
	bg := len(args) > 0 && args[0] == "-bg"
	some := len(args) > 0 && args[0] == "-some"
	if bg || some {
		args = args[1:]
	}
	if some && len(args) != 3 {
		ts.Fatalf("usage: page -some FILE NAME OUT")
	}
	if len(args) != 2 && !(len(args) == 3 && !bg) {
		ts.Fatalf("usage: page [-bg] FILE NAME | page FILE NAME OUT | page -wait")
	}
	if w.bg != nil {
		ts.Fatalf("page: %s still runs in the background (page -wait first)", w.bgName)
	}
	b, err := readPageBlock(w.root, args[0], args[1])
	if err != nil {
		ts.Fatalf("%v", err)
	}
	name := args[0] + "#" + args[1]
	if len(args) == 3 {
		check := checkOutputBlock
		if some {
			check = checkOutputLines
		}
		expectPage(ts, neg, name, check(w, b, ts.ReadFile(args[2])))
		return
	}
	if !shellLangs[b.lang] {
		ts.Fatalf("page %s: a %q block is not commands; give the file it shows (page FILE NAME OUT)", name, b.lang)
	}
	if bg {
		w.bg, w.bgName = make(chan error, 1), name
		logf := func(format string, a ...any) { fmt.Fprintf(&w.bgLog, format+"\n", a...) }
		go func() { w.bg <- runPageBlock(logf, w, b) }()
		return
	}
	expectPage(ts, neg, name, runPageBlock(ts.Logf, w, b))
}

func expectPage(ts *testscript.TestScript, neg bool, name string, err error) {
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s: %v", name, err)
	case err == nil && neg:
		ts.Fatalf("%s: ran as the page shows, unexpectedly", name)
	case err != nil:
		ts.Logf("%s: %v (as expected)", name, err)
	}
}

// runPageBlock runs the block's commands in the reader's shell; the first
// that fails, or prints other than the page shows, ends it.
func runPageBlock(logf func(string, ...any), w *walk, b pageBlock) error {
	ss, err := steps(b)
	if err != nil {
		return err
	}
	for _, s := range ss {
		out, err := w.shell.run(context.Background(), s.stmt)
		logf("%s:%d $ %s\n%s", b.file, s.line, s.src, out)
		if err != nil && !s.checked {
			return fmt.Errorf("%s:%d: `%s` failed (%v); it printed:\n%s", b.file, s.line, s.src, err, indent(out))
		}
		if s.checked && !shownMatches(s.shown, applyDisplays(w.displays, out)) {
			return fmt.Errorf("%s:%d: `%s` prints other than the page shows:\n%s", b.file, s.line, s.src, diffLines(s.shown, applyDisplays(w.displays, out)))
		}
	}
	return nil
}

func checkOutputBlock(w *walk, b pageBlock, printed string) error {
	got := applyDisplays(w.displays, printed)
	if !shownMatches(b.text, got) {
		return fmt.Errorf("%s:%d: block %q is not what the product printed:\n%s", b.file, b.line, b.name, diffLines(b.text, got))
	}
	return nil
}

// checkOutputLines holds each line printed to one of the block's lines.
func checkOutputLines(w *walk, b pageBlock, printed string) error {
	for _, l := range strings.Split(strings.TrimRight(applyDisplays(w.displays, printed), "\n"), "\n") {
		found := false
		for _, shown := range strings.Split(strings.TrimRight(b.text, "\n"), "\n") {
			if shownMatches(shown, l) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s:%d: block %q shows no line like what the product printed:\n%s", b.file, b.line, b.name, diffLines(b.text, l))
		}
	}
	return nil
}

func cmdWaitLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitlog REGEXP OUT")
	}
	re, err := regexp.Compile(args[0])
	ts.Check(err)
	line := waitFor(ts, func() (string, bool) {
		b, _ := os.ReadFile(ts.MkAbs("serve.log"))
		for _, l := range strings.Split(string(b), "\n") {
			if re.MatchString(l) {
				return l, true
			}
		}
		return "", false
	}, "line "+args[0]+" in serve.log")
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(line+"\n"), 0o600))
}

func cmdLockDB(ts *testscript.TestScript, neg bool, args []string) {
	w := walkOf(ts)
	if neg || len(args) != 1 {
		ts.Fatalf("usage: lockdb FILE | lockdb -release")
	}
	if args[0] == "-release" {
		if w.lock == nil {
			ts.Fatalf("lockdb -release: no lock held")
		}
		_, err := w.lock.ExecContext(context.Background(), "ROLLBACK")
		ts.Check(err)
		ts.Check(w.lock.Close())
		w.lock = nil
		return
	}
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(args[0])+"?_pragma=busy_timeout(10000)")
	ts.Check(err)
	ts.Defer(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	ts.Check(err)
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	ts.Check(err)
	w.lock = conn
	ts.Defer(func() { conn.Close() })
}

func cmdBlock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: block FILE NAME DEST")
	}
	b, err := readPageBlock(walkOf(ts).root, args[0], args[1])
	if err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(b.text), 0o600))
}

func cmdPaste(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: paste FILE REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	for _, l := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if re.MatchString(l) {
			runHidden(ts, strings.TrimSpace(l))
			return
		}
	}
	ts.Fatalf("paste: no line of %s matches %s", args[0], args[1])
}

func cmdSh(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: sh LINE")
	}
	runHidden(ts, strings.Join(args, " "))
}

func runHidden(ts *testscript.TestScript, line string) {
	out, err := walkOf(ts).shell.runLine(context.Background(), line)
	ts.Logf("(reader) $ %s\n%s", line, out)
	if err != nil {
		ts.Fatalf("`%s`: %v", line, err)
	}
}

func cmdDisplay(ts *testscript.TestScript, neg bool, args []string) {
	w := walkOf(ts)
	if len(args) == 3 && args[0] == "-re" {
		re, err := regexp.Compile(args[1])
		ts.Check(err)
		w.displays = append(w.displays, display{re: re, new: args[2]})
		return
	}
	if neg || len(args) != 2 || args[0] == "" {
		ts.Fatalf("usage: display [-re] OLD NEW")
	}
	w.displays = append(w.displays, display{old: args[0], new: args[1]})
}

// serveReady is the last line `gateway serve` prints once it listens.
var serveReady = regexp.MustCompile(`^(https?://\S+/login/\S+|Log in to the web page with a link from .*)$`)

func cmdServeBG(ts *testscript.TestScript, neg bool, args []string) {
	w := walkOf(ts)
	if len(args) == 1 && args[0] == "-stop" {
		w.stopServe()
		return
	}
	if w.serve != nil {
		ts.Fatalf("serve: the gateway already runs (serve -stop first)")
	}
	gw := filepath.Join(w.work, "bin", "gateway")
	cmd := exec.Command(gw, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = w.work
	cmd.Env = w.shell.environ()
	logf, err := os.Create(filepath.Join(w.work, "serve.log"))
	ts.Check(err)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	ts.Check(err)
	ts.Check(cmd.Start())
	w.serve, w.serveDone = cmd, make(chan struct{})
	lines := make(chan string)
	go func() {
		defer close(w.serveDone)
		defer logf.Close()
		readLines(stdout, lines)
		_ = cmd.Wait()
	}()
	var first strings.Builder
	timeout := time.After(stepTimeout)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				<-w.serveDone
				w.serve = nil
				log, _ := os.ReadFile(filepath.Join(w.work, "serve.log"))
				ts.Fatalf("gateway serve exited before it was ready:\n%s%s", first.String(), log)
			}
			first.WriteString(l + "\n")
			if !serveReady.MatchString(l) {
				continue
			}
			ts.Check(os.WriteFile(filepath.Join(w.work, "serve.out"), []byte(first.String()), 0o600))
			m := regexp.MustCompile(`listening on http://127\.0\.0\.1:(\d+)`).FindStringSubmatch(first.String())
			if m == nil {
				ts.Fatalf("serve: no address in\n%s", first.String())
			}
			ts.Setenv("PORT", m[1])
			runHidden(ts, "export PORT="+m[1]) // for a script's own curl; no page uses it
			go func() {                        // the rest, unread, must not block the gateway
				for range lines {
				}
			}()
			return
		case <-timeout:
			ts.Fatalf("gateway serve printed no login line in %s:\n%s", stepTimeout, first.String())
		}
	}
}

func readLines(r io.Reader, out chan<- string) {
	defer close(out)
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for {
		n, err := r.Read(tmp)
		buf = append(buf, tmp[:n]...)
		for {
			i := strings.IndexByte(string(buf), '\n')
			if i < 0 {
				break
			}
			out <- string(buf[:i])
			buf = buf[i+1:]
		}
		if err != nil {
			if len(buf) > 0 {
				out <- string(buf)
			}
			return
		}
	}
}

// stopServe ends the gateway as Ctrl-C would and waits for it.
func (w *walk) stopServe() {
	if w.serve == nil {
		return
	}
	_ = w.serve.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.serveDone:
	case <-time.After(stepTimeout):
		_ = w.serve.Process.Kill()
		<-w.serveDone
	}
	w.serve = nil
	w.web = nil
}

var (
	decideFormRE = regexp.MustCompile(`(?s)<form method="post" action="/web/decide"[^>]*>(.*?)</form>`)
	hiddenRE     = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
	selectedRE   = regexp.MustCompile(`<select name="([^"]+)"[^>]*>(?s:.*?)<option value="([^"]*)" selected>`)
	walkLoginRE  = regexp.MustCompile(`(?m)^(https?://\S+/login/\S+)$`)
)

// cmdTap is the owner at the web page: the first pending card's button
// DECISION pressed, the form sent as the browser sends it.
func cmdTap(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 && len(args) != 2 {
		ts.Fatalf("usage: tap DECISION [SCOPE]")
	}
	w := walkOf(ts)
	if w.web == nil {
		m := walkLoginRE.FindStringSubmatch(ts.ReadFile("serve.out"))
		if m == nil {
			ts.Fatalf("tap: serve.out has no login link")
		}
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: stepTimeout}
		resp, err := c.Get(m[1])
		ts.Check(err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			ts.Fatalf("tap: the login link answered %s", resp.Status)
		}
		w.web = c
	}
	base := "http://localhost:" + ts.Getenv("PORT")
	// The card appears when the agent's request arrives: look again until
	// it is there.
	deadline := time.Now().Add(stepTimeout)
	for {
		page, err := getText(w.web, base+"/")
		ts.Check(err)
		for _, f := range decideFormRE.FindAllStringSubmatch(page, -1) {
			form := url.Values{}
			for _, h := range hiddenRE.FindAllStringSubmatch(f[1], -1) {
				form.Set(h[1], h[2])
			}
			if form.Get("decision") != args[0] {
				continue
			}
			if s := selectedRE.FindStringSubmatch(f[1]); s != nil {
				form.Set(s[1], s[2])
			}
			if len(args) == 2 {
				o := regexp.MustCompile(`<option value="([^"]*)"[^>]*>` + regexp.QuoteMeta(html.EscapeString(args[1])) + `</option>`).FindStringSubmatch(f[1])
				if o == nil {
					ts.Fatalf("tap: the card offers no scope %q:\n%s", args[1], f[1])
				}
				form.Set("scope_index", o[1])
			}
			resp, err := w.web.PostForm(base+"/web/decide", form)
			ts.Check(err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			failed := resp.StatusCode != http.StatusOK || strings.Contains(string(body), `class="flash err"`)
			if failed != neg {
				ts.Fatalf("tap %s on %s: %s\n%s", args[0], form.Get("id"), resp.Status, body)
			}
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("tap: no pending card with %s on the web page in %s", args[0], stepTimeout)
		}
		time.Sleep(20 * time.Millisecond) // polling for a condition, bounded by the deadline
	}
}

func getText(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(u + ": " + resp.Status)
	}
	return string(b), nil
}
