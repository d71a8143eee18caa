package vaglio

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The seed's guard lists (Metnos vaglio v1.1 §3), copied verbatim in
// Python's syntax. The tests below translate them independently of
// seedrules.go and check that the guard blocks whatever they match.
var (
	seedPathPatternsPy = []string{
		`(^|/)\.ssh(/|$)`,
		`^/etc/(passwd|shadow|sudoers)`,
		`^/etc/ssh(/|$)`,
		`^/root(/|$)`,
		`^/boot(/|$)`,
		`^/sys(/|$)`,
		`^/proc(/[0-9]|$)`,
		`^/dev/(sd|nvme|mmcblk|loop)`,
		`\.aws/credentials`,
		`\.config/[^/]+/credentials\.env`,
		`\.gnupg(/|$)`,
	}
	seedShellPatternsPy = []string{
		`\brm\s+-rf?\s+/(\s|$)`,
		`\brm\s+-rf?\s+~(\s|$|/)`,
		`\bmkfs\b`,
		`\bdd\s+.*\bof=/dev/`,
		`:\s*\(\s*\)\s*\{\s*:\|:&\s*\}`,
		`\bchmod\s+-?R?\s*0?77[0-9]\s+/`,
	}
	refPath  = translatePy(seedPathPatternsPy)
	refShell = translatePy(seedShellPatternsPy)
	// refDevNull is the one exception: an of=/dev/null that names nothing longer.
	refDevNull = regexp.MustCompile(`of=/dev/null(\z|[^A-Za-z0-9_./\\\-\x{80}-\x{10FFFF}])`)
)

// translatePy rewrites Python re syntax into RE2 with Python's meaning:
// \s is CPython's Unicode whitespace, $ also matches before a final newline.
// (\b is left as is: see the proof in seedrules.go.)
func translatePy(patterns []string) []*regexp.Regexp {
	const space = "[\t\n\v\f\r\x1c\x1d\x1e\x1f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
	var out []*regexp.Regexp
	for _, p := range patterns {
		p = strings.ReplaceAll(p, `\s`, space)
		p = strings.ReplaceAll(p, `$`, `(?:\n?\z)`)
		out = append(out, regexp.MustCompile(p))
	}
	return out
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// expandUserPy is os.path.expanduser for the current user.
func expandUserPy(s string) string {
	if s == "~" || strings.HasPrefix(s, "~/") {
		return testHome + s[1:]
	}
	return s
}

// seedBlocksPath and seedBlocksShell are the seed's two checks on one string.
func seedBlocksPath(s string) bool { return anyMatch(refPath, expandUserPy(s)) }

func seedBlocksShell(s string) bool {
	if !anyMatch(refShell, s) {
		return false
	}
	// dd … of=/dev/null is the one allowed exception.
	t := refDevNull.ReplaceAllString(s, "of=/xxx/null$1")
	return anyMatch(refShell, t)
}

// TestGuard_SeedTable is the seed's guard, pattern by pattern, with strings
// the seed's regexes block, the rows of issue 16 and the seed's own tests
// (§8), through the guard.
func TestGuard_SeedTable(t *testing.T) {
	type row struct {
		name string
		req  Request
		want bool
	}
	var rows []row
	paths := map[string][]string{
		`(^|/)\.ssh(/|$)`:                 {"~/.ssh/id_rsa", ".ssh", "/srv/x/.ssh", "a/.ssh/config"},
		`^/etc/(passwd|shadow|sudoers)`:   {"/etc/passwd", "/etc/shadow.old", "/etc/passwd.bak", "/etc/sudoers.d/x", "/etc/passwdfoo"},
		`^/etc/ssh(/|$)`:                  {"/etc/ssh", "/etc/ssh/sshd_config", "/etc/ssh\n"},
		`^/root(/|$)`:                     {"/root", "/root/.bashrc", "/root/../tmp"},
		`^/boot(/|$)`:                     {"/boot", "/boot/grub/grub.cfg"},
		`^/sys(/|$)`:                      {"/sys", "/sys/kernel/x"},
		`^/proc(/[0-9]|$)`:                {"/proc", "/proc/1abc", "/proc/1/environ"},
		`^/dev/(sd|nvme|mmcblk|loop)`:     {"/dev/sda1", "/dev/nvme0n1", "/dev/mmcblk0p1", "/dev/loop0", "/dev/sdx"},
		`\.aws/credentials`:               {"~/.aws/credentials", "~/.aws/credentials.bak", "/x/prod.aws/credentials"},
		`\.config/[^/]+/credentials\.env`: {"~/.config/metnos/credentials.env", "/tmp/.config/x/credentials.env.old"},
		`\.gnupg(/|$)`:                    {"~/.gnupg", "~/.gnupg/pubring.kbx", "/x/old.gnupg"},
	}
	for _, p := range seedPathPatternsPy {
		ex := paths[p]
		if len(ex) == 0 {
			t.Fatalf("no example for %s", p)
		}
		for _, s := range ex {
			if !seedBlocksPath(s) {
				t.Fatalf("example %q does not match the seed's %s", s, p)
			}
			rows = append(rows,
				row{"path " + p + " target " + s, Request{Capability: "fs:read", Target: s}, true},
				row{"path " + p + " arg " + s, Request{Capability: "fs:read", Target: "/tmp/x", Args: map[string]any{"glob": s}}, true},
			)
		}
	}
	shells := map[string][]string{
		`\brm\s+-rf?\s+/(\s|$)`:          {"rm -rf /", "rm -r /", "rm -rf / --no-preserve-root", "echo; rm -rf /\n", "x'rm -rf /"},
		`\brm\s+-rf?\s+~(\s|$|/)`:        {"rm -rf ~", "rm -r ~/", "rm -rf ~/Documents", "rm -rf ~ /tmp"},
		`\bmkfs\b`:                       {"mkfs /dev/sdb", "mkfs.ext4 x", "grep mkfs notes.txt", "sudo mkfs -t ext4 disk.img"},
		`\bdd\s+.*\bof=/dev/`:            {"dd if=/dev/zero of=/dev/sda", "dd if=x.img of=/dev/disk2 bs=4M", "dd if=a of=/dev/stdout", "dd of=/dev/null of=/dev/sda"},
		`:\s*\(\s*\)\s*\{\s*:\|:&\s*\}`:  {":(){ :|:& };:", ": ( ) { :|:& }"},
		`\bchmod\s+-?R?\s*0?77[0-9]\s+/`: {"chmod 777 /srv/app", "chmod -R 0777 /etc", "chmod 775 /var/www", "chmod -R777 /x", "chmod R 770 /x"},
	}
	for _, p := range seedShellPatternsPy {
		ex := shells[p]
		if len(ex) == 0 {
			t.Fatalf("no example for %s", p)
		}
		for _, s := range ex {
			if !seedBlocksShell(s) {
				t.Fatalf("example %q does not match the seed's %s", s, p)
			}
			rows = append(rows,
				row{"shell " + p + " code:exec " + s, Request{Capability: "code:exec", Target: "run it", Args: map[string]any{"command": s}}, true},
				row{"shell " + p + " shell_exec " + s, Request{Capability: "llm:local", Executor: "shell_exec", Args: map[string]any{"cmd": s}}, true},
				row{"shell " + p + " list " + s, Request{Capability: "code:exec", Target: "run it",
					Args: map[string]any{"command": toAnyList(strings.Split(s, " "))}}, true},
			)
		}
	}
	rows = append(rows,
		// Issue 16, as posted to /v1/check at autonomy Full.
		row{"issue: command list", Request{Capability: "code:exec", Target: "run the cleanup", Args: map[string]any{"command": []any{"rm", "-rf", "/"}}}, true},
		row{"issue: shell_exec under another capability", Request{Capability: "fs:write", Executor: "shell_exec", Target: "/tmp/x", Args: map[string]any{"command": "rm -rf /"}}, true},
		row{"issue: rm -rf ~/Documents", Request{Capability: "code:exec", Target: "rm -rf ~/Documents"}, true},
		row{"issue: rm -r ~/", Request{Capability: "code:exec", Target: "rm -r ~/"}, true},
		row{"issue: chmod 777 /srv/app", Request{Capability: "code:exec", Target: "chmod 777 /srv/app"}, true},
		row{"issue: chmod -R 0777 /etc", Request{Capability: "code:exec", Target: "chmod -R 0777 /etc"}, true},
		row{"issue: /etc/shadow.old", Request{Capability: "fs:read", Target: "/etc/shadow.old"}, true},
		row{"issue: /etc/passwd.bak", Request{Capability: "fs:read", Target: "/etc/passwd.bak"}, true},
		row{"issue: credentials.bak", Request{Capability: "fs:read", Target: "~/.aws/credentials.bak"}, true},
		row{"issue: /proc", Request{Capability: "fs:read", Target: "/proc"}, true},
		row{"issue: /proc/1abc", Request{Capability: "fs:read", Target: "/proc/1abc"}, true},
		// Extras the guard keeps beyond the seed.
		row{"extra: quoted", Request{Capability: "code:exec", Target: `cat /etc/pa"ss"wd`}, true},
		row{"extra: $HOME", Request{Capability: "code:exec", Target: "rm -rf $HOME/src"}, true},
		row{"extra: sudo --recursive", Request{Capability: "code:exec", Target: "sudo rm --recursive --force /"}, true},
		row{"extra: structured in a cleaned path", Request{Capability: "code:exec", Target: "cat /tmp/../etc/shadow.old"}, true},
		// The seed's tests (§8).
		row{"seed: approva_path_innocuo", Request{Capability: "fs:read", Executor: "fs_read", Args: map[string]any{"path": "/tmp/x"}}, false},
		row{"seed: guard_blocca_ssh", Request{Capability: "fs:read", Executor: "fs_read", Args: map[string]any{"path": "~/.ssh/id_rsa"}}, true},
		row{"seed: guard_blocca_etc_passwd", Request{Capability: "fs:read", Executor: "fs_read", Args: map[string]any{"path": "/etc/passwd"}}, true},
		row{"seed: guard_blocca_credentials_user", Request{Capability: "fs:read", Executor: "fs_read", Args: map[string]any{"path": "~/.config/metnos/credentials.env"}}, true},
		row{"seed: guard_blocca_rm_rf_root", Request{Executor: "shell_exec", Args: map[string]any{"command": "rm -rf /"}}, true},
		row{"seed: guard_blocca_fork_bomb", Request{Executor: "shell_exec", Args: map[string]any{"command": ":(){ :|:& };:"}}, true},
		row{"seed: guard_lascia_passare_shell_innocua", Request{Executor: "shell_exec", Args: map[string]any{"command": "ls -la /tmp"}}, false},
		// The one exception.
		row{"exception: dd of=/dev/null", Request{Capability: "code:exec", Target: "dd if=disk.img of=/dev/null bs=1M"}, false},
		row{"exception: dd of=/dev/null as a list", Request{Executor: "shell_exec", Args: map[string]any{"command": []any{"dd", "if=disk.img", "of=/dev/null"}}}, false},
	)
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			blocked, reason := Guard(tt.req, testHome)
			if blocked != tt.want {
				t.Fatalf("Guard() = %v (%q), want %v", blocked, reason, tt.want)
			}
			if blocked && !strings.HasPrefix(reason, "guard: ") {
				t.Errorf("reason %q", reason)
			}
		})
	}
}

func toAnyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// requireSeedParity fails t if s is something the seed's guard blocks and
// the guard does not, in any of the places the seed looks at.
func requireSeedParity(t *testing.T, s string) {
	t.Helper()
	if seedBlocksPath(s) {
		for _, r := range []Request{
			{Capability: "fs:read", Target: s},
			{Capability: "fs:read", Args: map[string]any{"path": s}},
			{Capability: "fs:read", Args: map[string]any{"opts": []any{map[string]any{"p": s}}}},
			{Capability: "code:exec", Args: map[string]any{"command": s}},
		} {
			if blocked, _ := Guard(r, testHome); !blocked {
				t.Fatalf("the seed blocks path %q, the guard does not (%+v)", s, r)
			}
		}
	}
	if seedBlocksShell(s) {
		for _, r := range []Request{
			{Capability: "code:exec", Target: s},
			{Capability: "code:exec", Args: map[string]any{"command": s}},
			{Capability: "network:http", Executor: "shell_exec", Args: map[string]any{"cmd": s}},
			{Executor: "shell_exec", Args: map[string]any{"command": toAnyList(strings.Split(s, " "))}},
		} {
			if blocked, _ := Guard(r, testHome); !blocked {
				t.Fatalf("the seed blocks command %q, the guard does not (%+v)", s, r)
			}
		}
	}
}

type seedCorpusLine struct {
	S     string `json:"s"`
	Path  bool   `json:"path"`
	Shell bool   `json:"shell"`
}

func readSeedCorpus(t testing.TB) []seedCorpusLine {
	f, err := os.Open("testdata/seed_python.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []seedCorpusLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l seedCorpusLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestSeedReference_AgreesWithPython checks the translation the property
// tests rely on against CPython itself: testdata/seed_python.jsonl holds
// strings with what CPython's re said about them under the seed's regexes
// (made by testdata/seedcorpus.py). Whatever CPython matches, the
// translation matches; it matches more only through RE2's ASCII \b next to
// a non-ASCII letter (mkfsé is one word to Python, mkfs and é to RE2).
func TestSeedReference_AgreesWithPython(t *testing.T) {
	lines := readSeedCorpus(t)
	if len(lines) < 1000 {
		t.Fatalf("corpus has %d lines", len(lines))
	}
	for _, l := range lines {
		if got := seedBlocksPath(l.S); got != l.Path {
			t.Errorf("path %q: translation says %v, CPython %v", l.S, got, l.Path)
		}
		got := anyMatch(refShell, l.S)
		if l.Shell && !got {
			t.Errorf("shell %q: CPython matches, the translation does not", l.S)
		}
		if got && !l.Shell && !hasNonASCII(l.S) {
			t.Errorf("shell %q: the translation matches, CPython does not", l.S)
		}
	}
}

func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}

// TestGuard_SeedCorpus: every string of the CPython corpus that the seed
// blocks, the guard blocks.
func TestGuard_SeedCorpus(t *testing.T) {
	for _, l := range readSeedCorpus(t) {
		requireSeedParity(t, l.S)
	}
}

// seedPieces build random strings that often come near the seed's patterns.
var seedPieces = []string{
	"/", "/", "/", "~", "~/", ".", "..", "ssh", ".ssh", "etc", "/etc/", "passwd", "shadow", "sudoers",
	"root", "/root", "boot", "sys", "proc", "/proc", "/proc/", "1", "dev", "/dev/", "sd", "nvme", "mmcblk",
	"loop", ".aws", "credentials", ".config", "credentials.env", ".gnupg", "rm", "rm ", "-rf", "-r", "-f",
	" ", " ", " ", "\t", "\n", "\v", "\f", "\x1c", "\u0085", "\u00a0", "\u2003", "\u200b", "mkfs", "dd",
	"dd ", "of=", "of=/dev/", "null", "sda", ":", "(", ")", "{", "}", "|", "&", ";", ":|:&", "chmod",
	"chmod ", "-R", "R", "0", "777", "775", "x", "é", "_", "9", `"`, "'", `\`, "$HOME", "*", "-", "=",
}

// TestGuard_SeedProperty is the property of issue 16: for random strings,
// whatever the seed's regex list matches, the guard blocks.
func TestGuard_SeedProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 3))
	n := 6000
	if testing.Short() {
		n = 2000
	}
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(10) {
			b.WriteString(seedPieces[rng.IntN(len(seedPieces))])
		}
		requireSeedParity(t, b.String())
	}
}

// FuzzGuardSeed is the same property under the fuzzer.
func FuzzGuardSeed(f *testing.F) {
	for _, l := range readSeedCorpus(f)[:200] {
		f.Add(l.S)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) { // the seed's strings are Python str
			requireSeedParity(t, s)
		}
	})
}

// TestSeedPathLiterals: the literal prefilter never hides a match of the
// seed's path regexes (it only spares the search where none can match).
func TestSeedPathLiterals(t *testing.T) {
	check := func(s string) {
		if seedPathAny.MatchString(s) && !mayMatchSeedPath(s) {
			t.Errorf("%q matches a seed path regex but holds none of seedPathLiterals", s)
		}
	}
	for _, l := range readSeedCorpus(t) {
		check(l.S)
	}
	rng := rand.New(rand.NewPCG(16, 4))
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(10) {
			b.WriteString(seedPieces[rng.IntN(len(seedPieces))])
		}
		check(b.String())
	}
}

// TestSeedPathLiterals_NotWords: every literal holds a '.' or a '/', so
// no plain word holds one (guardRun.check passes plain words on it).
func TestSeedPathLiterals_NotWords(t *testing.T) {
	for _, lit := range seedPathLiterals {
		if !strings.ContainsAny(lit, "./") {
			t.Errorf("seed path literal %q has neither '.' nor '/'", lit)
		}
	}
}

// TestMayMatchSeedPath_AnyLiteral: the pre-test says yes exactly when s
// contains one of the seed's path literals, read byte by byte (a short
// string) or through IndexByte (a longer one).
func TestMayMatchSeedPath_AnyLiteral(t *testing.T) {
	pieces := append([]string{"a", "/", ".", "x/", "e", "tc", "ss", "h"}, seedPathLiterals...)
	r := rand.New(rand.NewPCG(39, 5))
	long := 0
	for range 50_000 {
		var b strings.Builder
		for range r.IntN(24) {
			p := pieces[r.IntN(len(pieces))]
			if r.IntN(3) == 0 && len(p) > 1 {
				p = p[:len(p)-1] // a literal cut short
			}
			b.WriteString(p)
		}
		s := b.String()
		want := slices.ContainsFunc(seedPathLiterals, func(lit string) bool { return strings.Contains(s, lit) })
		if got := mayMatchSeedPath(s); got != want {
			t.Fatalf("mayMatchSeedPath(%q) = %v, want %v", s, got, want)
		}
		if len(s) > shortSeedScan {
			long++
		}
	}
	if long < 5_000 || long > 45_000 {
		t.Fatalf("%d of 50,000 strings longer than %d bytes: both readings need many", long, shortSeedScan)
	}
}
