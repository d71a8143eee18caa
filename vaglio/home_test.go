package vaglio

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// tildeWords are shell words with a tilde where bash expands it (at the
// start, after = and : in an assignment or a word shaped like one) and
// where it does not.
var tildeWords = []string{
	"~", "~/x", "~root", "~root/.bash_history", "~root/", "X=~root/.bashrc", "X=a:~root/.ssh:b", "PATH=~/bin:~root/bin",
	"a+=~root/.profile", "--key=~root/.bashrc", "x:~root/y", "~nosuchuser37/x", "~+/x", "~-/x", "~root:x",
	"X=~root:~/.ssh", "1X=~root/x",
}

// TestTilde_AgainstBash: every tilde bash expands in a word, the guard
// reads as expanded too: a word whose expansion names a forbidden path
// (~root is /root) is refused whatever its spelling.
func TestTilde_AgainstBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	const home = "/home/agent"
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `printf '%s\n' `+strings.Join(tildeWords, " "))
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	expanded := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(expanded) != len(tildeWords) {
		t.Fatalf("bash printed %d words for %d: %q", len(expanded), len(tildeWords), expanded)
	}
	if userHome("root") == "" {
		t.Skip("no user root on this machine")
	}
	v := New(Options{Home: home})
	for i, w := range tildeWords {
		e := expanded[i]
		asBash := v.Check(context.Background(), Request{Capability: "code:exec", Target: "cat " + e})
		asWritten := v.Check(context.Background(), Request{Capability: "code:exec", Target: "cat " + w})
		if asBash.BlockedBy == BlockedByGuard && asWritten.BlockedBy != BlockedByGuard {
			t.Errorf("%q: bash reads %q, which the guard refuses (%s), but not as written", w, e, asBash.Reason)
		}
		if e != w && strings.Contains(e, "/root") && asWritten.BlockedBy != BlockedByGuard {
			t.Errorf("%q: bash reads %q; the guard lets it through", w, e)
		}
	}
}

// TestExpandTilde: a path target's leading tilde, as bash reads it.
func TestExpandTilde(t *testing.T) {
	root := userHome("root")
	if root == "" {
		t.Skip("no user root on this machine")
	}
	cases := []struct{ in, want string }{
		{"~", "/home/a"},
		{"~/x", "/home/a/x"},
		{"~root", root},
		{"~root/.ssh/id_rsa", root + "/.ssh/id_rsa"},
		{"~nosuchuser37/x", "~nosuchuser37/x"},
		{"~+/x", "~+/x"},
		{"~-", "~-"},
		{"x/~root", "x/~root"},
	}
	for _, tc := range cases {
		if got := expandTilde(tc.in, "/home/a"); got != tc.want {
			t.Errorf("expandTilde(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMustAsk_AgentHome: a search of the agent's home asks, where the
// gateway runs under another home (the shipped unit's DynamicUser), and
// "~" is read as the agent's home too.
func TestMustAsk_AgentHome(t *testing.T) {
	v := New(Options{Home: "/var/lib/gateway"})
	cases := []struct {
		name, capability, target, home string
		ask                            bool
	}{
		{"the agent's home", "fs:read", "/home/agent", "/home/agent", true},
		{"above it", "fs:read", "/home", "/home/agent", true},
		{"a project in it", "fs:read", "/home/agent/src/app", "/home/agent", false},
		{"no agent home known", "fs:read", "/home/agent", "", false},
		{"the gateway's own home still", "fs:read", "/var/lib", "/home/agent", true},
		{"~ under the agent's home: a persistence point", "fs:write", "~/.bashrc", "/home/agent", true},
		{"a relative home is ignored", "fs:read", "/home/agent", "home/agent", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, _ := v.MustAsk(Request{Capability: tc.capability, Target: tc.target, Home: tc.home})
			if (reason != "") != tc.ask {
				t.Fatalf("MustAsk = %q, want ask %v", reason, tc.ask)
			}
		})
	}
	// The guard reads ~ as the agent's home too: its own files there.
	got := v.Check(context.Background(), Request{Capability: "fs:read", Target: "/home/agent/.ssh/id_rsa", Home: "/home/agent"})
	if got.BlockedBy != BlockedByGuard {
		t.Fatalf("%+v", got)
	}
}

// TestCheck_HomeCleanedOnce: a Vaglio whose home is not clean (a trailing
// slash, a "..") guards as Guard does with that home, which cleans it on
// every call: Check takes the home New cleaned once.
func TestCheck_HomeCleanedOnce(t *testing.T) {
	for _, home := range []string{"/home/r/", "/home/x/../r", "/home//r/.", "/home/r"} {
		v := New(Options{Threshold: DefaultThreshold, Home: home})
		for _, r := range []Request{
			{Capability: "fs:read", Target: "~/.ssh/id_rsa"},
			{Capability: "fs:read", Target: "$HOME/.aws/credentials"},
			{Capability: "fs:read", Target: "/home/r/docs/a.txt", Args: map[string]any{"path": "~/.gnupg/x"}},
			{Capability: "fs:read", Target: "/home/r/docs/a.txt", Args: map[string]any{"path": "/home/r/docs/a.txt"}},
			{Capability: "code:exec", Target: "cat ~/.ssh/id_rsa"},
			{Capability: "code:exec", Target: "rm -rf ~"},
			{Capability: "code:exec", Target: "ls ~/docs"},
		} {
			wantBlocked, wantReason := Guard(r, home)
			got := v.Check(context.Background(), r)
			if gotBlocked := got.BlockedBy == BlockedByGuard; gotBlocked != wantBlocked || gotBlocked && got.Reason != wantReason {
				t.Errorf("home %q, %s %q: Check %v %q; Guard %v %q", home, r.Capability, r.Target,
					gotBlocked, got.Reason, wantBlocked, wantReason)
			}
		}
	}
}
