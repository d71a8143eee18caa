package policy

import (
	"slices"
	"testing"
)

func TestScopes(t *testing.T) {
	n := Normalizer{Home: "/home/u"}
	cases := []struct {
		name            string
		kind            TargetKind
		target, suggest string
		want            []string
	}{
		{"file", KindPathGlob, "/a/inv/04.pdf", "", []string{"/a/inv/04.pdf", "/a/inv/*.pdf", "/a/inv/*"}},
		{"home file", KindPathGlob, "~/inv/../inv/x.txt", "", []string{"/home/u/inv/x.txt", "/home/u/inv/*.txt", "/home/u/inv/*"}},
		{"suggestion kept", KindPathGlob, "/a/inv/04.pdf", "/a/inv/0*.pdf", []string{"/a/inv/04.pdf", "/a/inv/0*.pdf", "/a/inv/*.pdf", "/a/inv/*"}},
		{"too wide suggestion dropped", KindPathGlob, "/a/inv/04.pdf", "/a/**", []string{"/a/inv/04.pdf", "/a/inv/*.pdf", "/a/inv/*"}},
		{"no extension", KindPathGlob, "/a/inv/Makefile", "", []string{"/a/inv/Makefile", "/a/inv/*"}},
		{"dotfile", KindPathGlob, "/a/inv/.env", "", []string{"/a/inv/.env", "/a/inv/*"}},
		{"root file", KindPathGlob, "/x.txt", "", []string{"/x.txt"}},
		{"meta in target: granted as that text only", KindPathGlob, "/a/[x]/f.txt", "", []string{`/a/\[x\]/f.txt`}},
		{"relative", KindPathGlob, "a/f.txt", "", []string{"a/f.txt"}},
		{"host", KindHost, "https://API.example.com/x", "", []string{"api.example.com", "*.example.com"}},
		{"two labels", KindHost, "example.com", "", []string{"example.com"}},
		{"deep host", KindHost, "a.b.example.com", "*.example.com", []string{"a.b.example.com", "*.b.example.com", "*.example.com"}},
		{"ip", KindHost, "10.0.0.1", "", []string{"10.0.0.1"}},
		{"exact", KindExact, "npm test", "npm *", []string{"npm test"}},
		{"none", KindNone, "", "", []string{"*"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := n.Scopes(c.kind, c.target, c.suggest)
			if !slices.Equal(got, c.want) {
				t.Fatalf("Scopes(%q, %q) = %q, want %q", c.target, c.suggest, got, c.want)
			}
			for _, s := range got[1:] { // the first is the target as it is (it may hold glob characters)
				if g, ok := n.GrantTarget(c.kind, c.target, s); !ok || g != s {
					t.Errorf("scope %q is wider than Allow always may grant", s)
				}
				if !n.MatchGrant(c.kind, s, c.target) {
					t.Errorf("scope %q does not cover %q", s, c.target)
				}
			}
		})
	}
}
