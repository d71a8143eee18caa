package vaglio

import (
	"strings"
	"testing"
)

// matches walks a path's components through a pattern.
func patternMatches(p ForbiddenPattern, abs string) bool {
	comps := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	if len(comps) < len(p.Elems) || p.Whole && len(comps) != len(p.Elems) {
		return false
	}
	for i, e := range p.Elems {
		if !e.Match(comps[i]) {
			return false
		}
	}
	return true
}

// TestForbiddenPatternsAreTheGuardsList: every path the guard forbids as a
// read target under a home and a gateway's files is matched by one of the
// patterns a sandbox gets, and a path the guard allows by none.
func TestForbiddenPatternsAreTheGuardsList(t *testing.T) {
	home := "/home/Ann"
	own := Own{Paths: []string{"/srv/gw/gateway.db", "/srv/gw/token", "~/.config/metnos/gateway.toml"}}
	pats := ForbiddenPatterns(home, own)
	hit := func(p string) bool {
		for _, pat := range pats {
			if patternMatches(pat, p) {
				return true
			}
		}
		return false
	}
	rules := compileOwn(own, home)
	for _, p := range []string{"/home/Ann/.ssh/id_ed25519", "/home/Ann/.aws/credentials", "/home/Ann/.gnupg",
		"/etc/shadow", "/etc/passwd", "/srv/gw/gateway.db-wal", "/srv/gw/token", "/home/Ann/.config/metnos/gateway.toml",
		"/dev/sda", "/dev/mem", "/root/x"} {
		if _, guard := forbiddenPath(p, rules.matcher); !guard {
			t.Errorf("the guard allows %s; the test's list is wrong", p)
		}
		if !hit(p) {
			t.Errorf("%s: no pattern", p)
		}
	}
	for _, p := range []string{"/home/Ann/src/x.go", "/etc/hosts", "/dev/null", "/dev/urandom", "/usr/bin/env", "/srv/gw/other"} {
		if hit(p) {
			t.Errorf("%s: matched, but the guard allows it", p)
		}
	}
	if got := ForbiddenPatterns("", Own{}); len(got) == 0 {
		t.Fatalf("no home: %d patterns", len(got))
	}
	for _, pat := range ForbiddenPatterns("", Own{}) {
		if pat.Name == ".ssh" {
			t.Fatalf("no home, yet .ssh is placed somewhere: %v", pat.Elems)
		}
	}
}
