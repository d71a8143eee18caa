package main

// The walkthroughs: every page that shows a command and its result is
// followed literally, as a newcomer would, by a script in
// testdata/walkthroughs (github.com/rogpeppe/go-internal/testscript). The
// page is the script's source: a block the page marks
// "<!-- walkthrough: NAME -->" is run from the page itself (`page FILE
// NAME`), each command in one shell session with the real curl, jq and
// gateway, and what it prints is held to the "# → …" lines the page
// shows after it; an output block the page marks is held to what the
// product printed. The script adds what the page leaves to the reader
// (starting the gateway, a tap on the web page, a stand-in for Telegram)
// and nothing else. A page and its behaviour therefore cannot drift
// apart: change either and the script fails; TestWalkthroughsCatchDrift
// plants such a change and sees it fail.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the scripts run the gateway as a program of its own
// (`gateway`, and `./bin/gateway` as the pages write it after `make
// build`): the test binary, copied under that name by testscript.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"gateway": main})
}

// TestWalkthroughs runs every script of testdata/walkthroughs.
func TestWalkthroughs(t *testing.T) {
	needPrograms(t, "curl", "jq")
	testscript.Run(t, walkthroughParams(t, repoRoot))
}

// needPrograms fails the test when a program the pages tell the reader
// to use is missing (.ci/run installs them).
func needPrograms(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Fatalf("the walkthroughs run the pages' commands, which need %s: install it (apt-get install %s)", n, n)
		}
	}
}

func walkthroughParams(t *testing.T, root string) testscript.Params {
	return testscript.Params{
		Dir:                 "testdata/walkthroughs",
		RequireExplicitExec: true,
		Setup:               func(e *testscript.Env) error { return setupWalk(e, root) },
		Cmds:                walkCmds(&walkFakes{t: t}),
	}
}

// TestWalkthroughsMarkedBlocksRun: every block a page marks is run by
// some script, so that a marker is never a silent promise.
func TestWalkthroughsMarkedBlocksRun(t *testing.T) {
	scripts, err := filepath.Glob("testdata/walkthroughs/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	used := map[string]bool{}
	for _, l := range strings.Split(all.String(), "\n") {
		f := strings.Fields(l)
		for len(f) > 0 && (f[0] == "!" || strings.HasPrefix(f[0], "[")) {
			f = f[1:]
		}
		if len(f) < 3 || (f[0] != "page" && f[0] != "block") {
			continue
		}
		args := f[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "-") {
			args = args[1:]
		}
		if len(args) >= 2 {
			used[args[0]+"#"+args[1]] = true
		}
	}
	var missing []string
	for _, d := range readDocs(t) {
		blocks, err := pageBlocks(d.path, d.text)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, b := range blocks {
			if !used[b.file+"#"+b.name] {
				missing = append(missing, b.file+"#"+b.name)
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s is marked as a walkthrough block but no script in testdata/walkthroughs runs it", m)
	}
}

// TestWalkthroughsCatchDrift is the test of the test: the README tour,
// run over a copy of the pages in which one printed value is changed,
// fails and shows the planted value (TestWalkthroughs runs it unchanged).
func TestWalkthroughsCatchDrift(t *testing.T) {
	needPrograms(t, "curl", "jq")
	readme := readRepoFile(t, "README.md")
	for _, c := range []struct{ name, from, to string }{
		{"a reason a command prints", `"reason":"allowed by grant #1 (/tmp/*.txt)"`, `"reason":"allowed by grant #2 (/tmp/*.txt)"`},
		{"a line the server prints", "Web page: http://localhost:8080/", "Web page: http://localhost:8080/web"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(readme, c.from) {
				t.Fatalf("README.md no longer shows %s: plant another value", c.from)
			}
			planted := strings.Replace(readme, c.from, c.to, 1)
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "README.md"), []byte(planted), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{"docs", "examples"} {
				abs, _ := filepath.Abs(filepath.Join(repoRoot, d))
				if err := os.Symlink(abs, filepath.Join(root, d)); err != nil {
					t.Fatal(err)
				}
			}
			p := walkthroughParams(t, root)
			p.Dir, p.Files = "", []string{"testdata/walkthroughs/readme-tour.txtar"}
			rt := &recordT{}
			testscript.RunT(rt, p)
			switch {
			case !rt.failed:
				t.Fatalf("the tour passes with %s changed to %s", c.from, c.to)
			case !strings.Contains(rt.log.String(), c.to):
				t.Errorf("the failure does not show the planted %s:\n%s", c.to, rt.log.String())
			}
		})
	}
}

// recordT runs scripts as testing.T would and records whether they
// failed, without failing the test that runs them.
type recordT struct {
	mu     sync.Mutex
	failed bool
	log    strings.Builder
}

func (r *recordT) Skip(a ...any) { r.Log(a...); runtime.Goexit() }
func (r *recordT) Fatal(a ...any) {
	r.Log(a...)
	r.FailNow()
}
func (r *recordT) Parallel() {}
func (r *recordT) Log(a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(&r.log, a...)
}
func (r *recordT) FailNow() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recordT) Run(_ string, f func(testscript.T)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}
func (r *recordT) Verbose() bool { return false }
