package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/metnos/gateway/config"
)

// browser is a client with its own cookies.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// open GETs u and returns the status and the path it ended at.
func open(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Request.URL.Path
}

// TestLogin_LinksAndLogoutAll drives the real binary: a first start prints
// a one-time login link (last line of its banner) that opens a session
// once; `gateway login` prints another (its last line), with the server
// running, on the port the server runs on; `gateway logout --all` ends
// them all; a start after a login prints no link.
func TestLogin_LinksAndLogoutAll(t *testing.T) {
	bin := gatewayBinary(t)
	dir := t.TempDir()
	cfgPath := childConfig(t, dir)
	c := startChild(t, bin, cfgPath, dir)
	if c.LoginLink == "" {
		t.Fatalf("a first start printed no login link")
	}
	owner := browser(t)
	if status, at := open(t, owner, c.LoginLink); status != http.StatusOK || at != "/" {
		t.Fatalf("serve's login link: %d at %s", status, at)
	}
	if status, at := open(t, browser(t), c.LoginLink); status != http.StatusForbidden {
		t.Errorf("serve's login link used twice: %d at %s, want 403", status, at)
	}
	getenv := func(k string) string {
		return map[string]string{"HOME": dir, "CHILD_AGENT_TOKEN": childAgentToken, "CHILD_ADMIN_TOKEN": childAdminToken}[k]
	}
	r := runCLI(context.Background(), getenv, "", "login", "--config", cfgPath)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	link := lines[len(lines)-1]
	if r.code != 0 || !strings.HasSuffix(r.stdout, link+"\n") || !strings.HasPrefix(link, "http://localhost:") {
		t.Fatalf("gateway login: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// The config listens on port 0: the link names the port the running
	// server got, and opens a session there.
	second := browser(t)
	page := strings.Replace(c.URL, "127.0.0.1", "localhost", 1)
	if !strings.HasPrefix(link, page+"/login/") {
		t.Fatalf("gateway login's link %s is not on the running server, %s", link, page)
	}
	if status, at := open(t, second, link); status != http.StatusOK || at != "/" {
		t.Fatalf("gateway login's link: %d at %s", status, at)
	}
	if r := runCLI(context.Background(), getenv, "", "login", "--config", cfgPath, "--user", "nobody"); r.code != exitUsage ||
		!strings.Contains(r.stderr, `no web user "nobody"`) || !strings.Contains(r.stderr, "owner") {
		t.Errorf("login --user nobody: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(context.Background(), getenv, "", "logout", "--all", "--config", cfgPath)
	if r.code != 0 || !strings.Contains(r.stdout, "Ended 2 web sessions") {
		t.Fatalf("logout --all: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, b := range []*http.Client{owner, second} {
		if _, at := open(t, b, page+"/"); at != "/login" {
			t.Errorf("after logout --all, / ends at %s, want /login", at)
		}
	}
	if code, _ := c.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	// Stopped, the server no longer says where it runs: a link names the
	// configured address again.
	if _, err := os.Stat(filepath.Join(dir, config.ListenFileName)); !os.IsNotExist(err) {
		t.Errorf("the listen file after a stop: %v", err)
	}
	if r := runCLI(context.Background(), getenv, "", "login", "--config", cfgPath); r.code != 0 || !strings.Contains(r.stdout, "http://localhost:8080/login/") {
		t.Errorf("gateway login with no server: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	again := startChild(t, bin, cfgPath, dir)
	if again.LoginLink != "" {
		t.Errorf("a start after a login printed a link: %s", again.LoginLink)
	}
	_ = os.Remove(cfgPath)
}
