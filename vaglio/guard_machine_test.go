package vaglio

import (
	"context"
	"strings"
	"testing"
)

// TestGuard_MachineThatRunsAgents: the guard's list for a machine that runs
// agents, each in a target, an argument and a shell command.
func TestGuard_MachineThatRunsAgents(t *testing.T) {
	blocked := map[string]string{
		"/dev/vda":               "/dev/<device>",
		"/dev/vda1":              "/dev/<device>",
		"/dev/xvda":              "/dev/<device>",
		"/dev/mapper/root":       "/dev/<device>",
		"/dev/disk/by-uuid/1234": "/dev/<device>",
		"/dev/dm-0":              "/dev/<device>",
		"/dev/mem":               "/dev/<device>",
		"/dev/kmem":              "/dev/<device>",
		"/dev/port":              "/dev/<device>",
		"/dev/m*":                "/dev/",
		"/dev/tcp/evil.com/80":   "/dev/<device>",
		"/proc/kcore":            "/proc/kcore",
		"/proc/sysrq-trigger":    "/proc/sysrq-trigger",
		"/etc/gshadow":           "/etc/gshadow*",
		"/etc/gshadow-":          "/etc/gshadow*",
		"/etc/security/opasswd":  "/etc/security/opasswd",
		"/var/run/secrets/kubernetes.io/serviceaccount/token": "/run/secrets",
		"/run/secrets/kubernetes.io/serviceaccount/token":     "/run/secrets",
		"/run/secrets/db_password":                            "/run/secrets",
		"/etc/ssl/private/server.key":                         "/etc/ssl/private",
		"/etc/ssl/private":                                    "/etc/ssl/private",
		"/etc/pki/tls/private/localhost.key":                  "/etc/pki/tls/private",
		"/home/u/.ss*/id_*":                                   ".ssh",
		"~/.ss?/id_rsa":                                       ".ssh",
	}
	for p, rule := range blocked {
		for _, r := range []Request{
			{Capability: "fs:read", Target: p},
			{Capability: "fs:read", Target: "/tmp/x", Args: map[string]any{"path": p}},
			{Capability: "code:exec", Target: "cat " + p + " | base64"},
			{Capability: "code:exec", Target: "sh -c 'dd if=" + p + " bs=1M'"},
		} {
			b, reason := Guard(r, testHome)
			if !b || !strings.Contains(reason, rule) {
				t.Errorf("%s %q: blocked=%v %q, want rule %s", r.Capability, r.Target, b, reason, rule)
			}
		}
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full", "/dev/tty",
		"/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/3", "/dev/pts/0", "/dev/shm/x", "/dev/std*",
		"/etc/ssl/certs/ca.pem", "/etc/hosts", "/proc/cpuinfo", "/run/user/1000/x"} {
		if b, reason := Guard(Request{Capability: "fs:read", Target: p}, testHome); b {
			t.Errorf("%q blocked: %s", p, reason)
		}
		if b, reason := Guard(Request{Capability: "code:exec", Target: "make test 2>" + p}, testHome); b && strings.HasPrefix(p, "/dev/") {
			t.Errorf("redirect to %q blocked: %s", p, reason)
		}
	}
}

// TestPersistencePoint: where a write makes code run later asks every
// time; ordinary files do not.
func TestPersistencePoint(t *testing.T) {
	for _, p := range []string{
		"~/.bashrc", "/home/u/.bashrc", "/home/u/.bash_profile", "~/.profile", "~/.zshrc", "~/.zshenv", "~/.bash*",
		"~/.config/fish/config.fish", "~/.config/autostart/x.desktop", "~/.config/systemd/user/x.service",
		"~/.ssh/authorized_keys", "~/.ssh/authorized_keys2", "~/.gitconfig",
		"/etc/crontab", "/etc/cron.d/job", "/etc/cron.daily/x", "/var/spool/cron/crontabs/u",
		"/etc/systemd/system/x.service", "/usr/lib/systemd/system/x.service", "/lib/systemd/system/x.service",
		"/etc/profile", "/etc/profile.d/x.sh", "/etc/bash.bashrc", "/etc/ld.so.preload", "/etc/ld.so.conf.d/x.conf",
		"/etc/rc.local", "/etc/init.d/x", "/etc/environment",
		"/home/u/src/app/.git/hooks/pre-commit", "/home/u/src/app/.git/config", ".git/hooks/post-checkout",
		"../../.git/config", "/home/u/src/app/.GIT/Hooks/x",
	} {
		if _, hit := PersistencePoint(p); !hit {
			t.Errorf("PersistencePoint(%q) = false", p)
		}
	}
	for _, p := range []string{"/home/u/notes.txt", "/home/u/.bashrc.d.txt/x", "/home/u/src/app/main.go",
		"/home/u/src/app/.git/HEAD", "/home/u/profile.txt", "/etc/hosts", "/home/u/.config/app.toml", "/home/u/src/git/config"} {
		if rule, hit := PersistencePoint(p); hit {
			t.Errorf("PersistencePoint(%q) = %s", p, rule)
		}
	}
}

// TestMustAsk: fs:write on a persistence point always asks; a search or
// listing whose tree holds a forbidden path asks; ordinary files do not.
func TestMustAsk(t *testing.T) {
	v := New(Options{Home: testHome, Own: Own{Paths: []string{"/srv/gw/gateway.db"}}})
	cases := []struct {
		capability, target string
		ask, always        bool
	}{
		{"fs:write", "~/.bashrc", true, true},
		{"fs:write", "/srv/app/.git/hooks/pre-push", true, true},
		{"fs:read", "~/.bashrc", true, false}, // the home holds ~/.ssh? no: ~/.bashrc is a file below it
		{"fs:read", "/etc", true, false},
		{"fs:read", "/etc/", true, false},
		{"fs:read", "/", true, false},
		{"fs:read", "/home", true, false},
		{"fs:read", testHome, true, false},
		{"fs:read", "~", true, false},
		{"fs:read", "/home/roberto/**/id_*", true, false},
		{"fs:read", "/*/shadow", true, false},
		{"fs:read", "/dev", true, false},
		{"fs:read", "/srv", true, false},
		{"fs:read", "/srv/gw", true, false},
		{"fs:read", ".", true, false},
		{"fs:read", "/etc/hosts", false, false},
		{"fs:read", "/home/roberto/src/app", false, false},
		{"fs:read", "/home/roberto/src/**/*.go", false, false},
		{"fs:write", "/home/roberto/src/app/main.go", false, false},
		{"fs:read", "src/main.go", false, false},
		{"network:http", "/etc", false, false},
	}
	for _, tc := range cases {
		reason, always := v.MustAsk(Request{Capability: tc.capability, Target: tc.target})
		if tc.target == "~/.bashrc" && tc.capability == "fs:read" {
			continue // a file: the lexical check cannot tell it from a directory, either answer is fine
		}
		if (reason != "") != tc.ask || always != tc.always {
			t.Errorf("MustAsk(%s %q) = %q, %v; want ask=%v always=%v", tc.capability, tc.target, reason, always, tc.ask, tc.always)
		}
	}
}

// TestGuard_OwnFiles: the gateway's database (and -wal, -shm), config,
// token file, state and log directories are forbidden to every agent, in
// targets, args and shell commands; what lies beside them is not.
func TestGuard_OwnFiles(t *testing.T) {
	v := New(Options{Home: testHome, Own: Own{Paths: []string{
		"/srv/gw/gateway.db", "/srv/gw/agent-token", "/etc/metnos/gateway.toml",
		testHome + "/.local/state/metnos", "~/.local/share/metnos/vaglio",
	}}})
	for _, p := range []string{
		"/srv/gw/gateway.db", "/srv/gw/gateway.db-wal", "/srv/gw/gateway.db-shm", "/srv/gw/agent-token",
		"/srv/gw/./gateway.db", "/srv/x/../gw/gateway.db", "/SRV/gw/gateway.db", "/srv/gw/gateway.d?",
		"/etc/metnos/gateway.toml", "~/.local/state/metnos/agent-token", "$HOME/.local/state/metnos/gateway.db",
		"/home/roberto/.local/share/metnos/vaglio/2026-11.jsonl",
	} {
		for _, r := range []Request{
			{Capability: "fs:read", Target: p},
			{Capability: "fs:write", Target: "/tmp/x", Args: map[string]any{"file_path": p}},
			{Capability: "code:exec", Target: "cat " + p},
			{Capability: "code:exec", Target: "sqlite3 '" + p + "' 'select * from grants'"},
		} {
			if vd := v.Check(context.Background(), r); vd.Approved || !strings.Contains(vd.Reason, "gateway's own") {
				t.Errorf("%s %q: %+v, want blocked as the gateway's own", r.Capability, r.Target, vd)
			}
		}
	}
	// (/etc/metnos is the shipped unit's config directory, the gateway's whole.)
	for _, p := range []string{"/srv/gw2/gateway.db", "/srv/other.db", "/etc/other/gateway.toml"} {
		if vd := v.Check(context.Background(), Request{Capability: "fs:read", Target: p, Intent: "read the file"}); strings.Contains(vd.Reason, "gateway's own") {
			t.Errorf("%q: %s", p, vd.Reason)
		}
	}
}

// TestGuard_GatewayIsNotATarget: network:http to the gateway's own
// address is denied, whatever the spelling of loopback; another port or
// host is not.
func TestGuard_GatewayIsNotATarget(t *testing.T) {
	v := New(Options{Home: testHome, Own: Own{Endpoints: []Endpoint{{Host: "localhost", Port: "8080"}, {Host: "gw.example.com"}}}})
	check := func(host, port string) bool {
		vd := v.Check(context.Background(), Request{Capability: "network:http", Target: host, Host: host, Port: port})
		return !vd.Approved && strings.Contains(vd.Reason, "gateway itself")
	}
	for _, h := range []string{"127.0.0.1", "127.0.0.2", "localhost", "a.localhost", "[::1]", "0.0.0.0", "[::]"} {
		if !check(h, "8080") || !check(h, "") {
			t.Errorf("%s:8080 (or no port) not denied", h)
		}
		if check(h, "3000") {
			t.Errorf("%s:3000 denied: another program on loopback", h)
		}
	}
	if !check("gw.example.com", "443") || !check("gw.example.com", "") {
		t.Error("the public URL's host is not denied")
	}
	if check("example.com", "8080") {
		t.Error("another host denied")
	}
}

// TestGuard_ShellWords: inside shell commands, the guard reads the words
// bash runs (internal/shell): here-documents, substitutions, bash -c and
// eval strings, words built at run time.
func TestGuard_ShellWords(t *testing.T) {
	v := New(Options{Home: testHome, Own: Own{Paths: []string{testHome + "/.local/state/metnos"}}})
	for _, cmd := range []string{
		"bash <<'EOF'\ncat /etc/gsha''dow\nEOF",
		"eval 'cat /dev/m''em'",
		`bash -c "cat \"$HOME\"/.local/state/metnos/agent-token"`,
		"cat \"$(printf /proc)\"/kcore",
		"cp x ~/.local/state/metnos/gateway.db",
		"echo key >> /var/run/secrets/kubernetes.io/serviceaccount/token",
		"dd if=/dev/vda of=disk.img",
	} {
		vd := v.Check(context.Background(), Request{Capability: "code:exec", Target: cmd})
		if vd.Approved || vd.BlockedBy != BlockedByGuard {
			t.Errorf("%q: %+v, want blocked by the guard", cmd, vd)
		}
	}
	for _, cmd := range []string{"go test ./... 2>/dev/null", "cat /etc/hosts > /dev/stdout", "ls -la /tmp"} {
		if vd := v.Check(context.Background(), Request{Capability: "code:exec", Target: cmd, Intent: "run the tests", Executor: "shell"}); vd.BlockedBy == BlockedByGuard {
			t.Errorf("%q blocked: %s", cmd, vd.Reason)
		}
	}
}
