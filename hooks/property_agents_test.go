package hooks_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/vaglio"
)

// TestProperty_ReadAsTheAgentsRead: random adapter inputs shaped the way
// the agents' own parsers read them differently from a naive reading.
//
//   - Indented patch headers: indenting any header of a random patch with
//     white space Codex trims changes none of the files asked about.
//   - Quoted URLs: a prompt piece "https://good.example<q>@evilN.example/…"
//     (q a quote, a bracket, any sign a pattern might stop at) is evilN
//     to Gemini CLI: the mapping names it, or refuses the call.
//   - Symlinked paths: a tool call on a path through random links on a
//     real file system asks about the path the kernel reaches, and the
//     guard refuses every one that reaches the fake ~/.ssh.
func TestProperty_ReadAsTheAgentsRead(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 3))

	t.Run("indented headers", func(t *testing.T) {
		for i := range 500 {
			patch := randomPatch(r)
			lines := strings.Split(patch, "\n")
			for j, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "*** ") && r.IntN(2) == 0 {
					lines[j] = codexSpaces[r.IntN(len(codexSpaces))] + pickOf(r, "", " ", "\t") + l
				}
			}
			indented := strings.Join(lines, "\n")
			plain, errPlain := patchTargets(t, patch)
			got, errIndented := patchTargets(t, indented)
			if (errPlain == nil) != (errIndented == nil) || !slices.Equal(plain, got) {
				t.Fatalf("patch %d: %q asks about %q (%v), indented %q asks about %q (%v)", i, patch, plain, errPlain, indented, got, errIndented)
			}
		}
	})

	t.Run("quoted URLs", func(t *testing.T) {
		quotes := []string{"'", `"`, "<", ">", "(", ")", "[", "]", "`", "{", "}", "|", "^", ";", ",", "!", "$", "&", "*", "+", "="}
		refused := 0
		for i := range 1000 {
			evil := fmt.Sprintf("evil%d.example", i)
			piece := pickOf(r, "https", "http", "HTTPS") + "://" + pickOf(r, "docs.python.org", "good.example", "a.b") +
				quotes[r.IntN(len(quotes))] + pickOf(r, "", quotes[r.IntN(len(quotes))]) + "@" + evil + pickOf(r, "", "/", "/?q=SECRET", ":8443/x")
			prompt := pickOf(r, "", "read ", "compare https://a.example and ") + piece + pickOf(r, "", " now", "\u3000then", ")")
			hosts, err := webFetchHosts(prompt)
			if err != nil {
				refused++
				continue
			}
			if !slices.Contains(hosts, evil) {
				t.Fatalf("prompt %q: asks about %q, Gemini CLI fetches %s", prompt, hosts, evil)
			}
		}
		if refused > 100 {
			t.Fatalf("%d of 1000 refused: the generator misses", refused)
		}
	})

	t.Run("symlinked paths", func(t *testing.T) {
		m := newFakeMachine(t)
		// Random links in the project, to the key, to ~/.ssh, to each other.
		var names []string
		for i := range 12 {
			name := fmt.Sprintf("l%d", i)
			var to string
			switch r.IntN(4) {
			case 0:
				to = filepath.Join(m.home, ".ssh")
			case 1:
				to = "../../.ssh/id_rsa"
			case 2:
				to = "sub"
			default:
				if len(names) > 0 {
					to = names[r.IntN(len(names))]
				} else {
					to = "main.go"
				}
			}
			if err := os.Symlink(to, filepath.Join(m.proj, name)); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		tools := []struct{ adapter, tool, field string }{
			{"claude-code", "Read", "file_path"}, {"claude-code", "Write", "file_path"}, {"claude-code", "Grep", "path"},
			{"gemini", "read_file", "file_path"}, {"gemini", "list_directory", "dir_path"}, {"cursor", "Read", "file_path"},
		}
		blocked := 0
		for i := range 600 {
			tl := tools[r.IntN(len(tools))]
			p := names[r.IntN(len(names))]
			for range r.IntN(3) {
				p = filepath.Join(p, pickOf(r, "id_rsa", "x", "..", names[r.IntN(len(names))]))
			}
			if r.IntN(2) == 0 {
				p = filepath.Join(m.proj, p)
			}
			input := map[string]any{tl.field: p, "pattern": "x", "content": "y"}
			ad := adapterNamed(t, tl.adapter)
			raw := rawEvent(tl.adapter, tl.tool, m.proj, input)
			ev, err := ad.Decode([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			relay := []byte(raw)
			if ad.Relay != nil {
				relay = ad.Relay(relay)
			}
			sent := hooks.Localize(ad, ev, relay, m.home)
			sev, err := ad.Decode(sent)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := ad.Map(sev, nil)
			if err != nil {
				continue
			}
			texts := make([]string, len(plain))
			for j, c := range plain {
				texts[j] = c.Target
			}
			cs := hooks.LocalOf(sent).Apply(plain)
			for j, c := range cs {
				want := kernelPath(texts[j])
				if want == "" {
					continue // a loop: the text alone is judged
				}
				if c.Target != want {
					t.Fatalf("case %d: %s %s %q: asks about %q, the kernel reaches %q", i, tl.adapter, tl.tool, p, c.Target, want)
				}
				if strings.HasPrefix(want+"/", filepath.Join(m.home, ".ssh")+"/") {
					hit, _ := vaglio.Guard(vaglio.Request{Capability: c.Capability, Target: c.Target, Args: c.Args}, m.home)
					if !hit {
						t.Fatalf("case %d: %q reaches %q, the guard lets it through", i, p, want)
					}
					blocked++
				}
			}
		}
		if blocked < 100 {
			t.Fatalf("only %d of 600 reached ~/.ssh: the generator misses", blocked)
		}
	})
}

// patchTargets are the targets of an apply_patch call with patch.
func patchTargets(t *testing.T, patch string) ([]string, error) {
	ev, err := hooks.Codex.Decode([]byte(codexEvent("PreToolUse", "apply_patch", map[string]any{"command": patch})))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := hooks.Codex.Map(ev, nil)
	var out []string
	for _, c := range cs {
		out = append(out, c.Target)
	}
	return out, err
}

// kernelPath is the path p reaches: its deepest existing ancestor with
// every link followed (filepath.EvalSymlinks), then the rest as written;
// "" when a link loops.
func kernelPath(p string) string {
	rest := ""
	for q := p; ; q = filepath.Dir(q) {
		if real, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(real, rest)
		} else if !os.IsNotExist(err) {
			return ""
		}
		if q == "/" {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
	}
}

func pickOf(r *rand.Rand, xs ...string) string { return xs[r.IntN(len(xs))] }
