// Package sandbox runs a program under the kernel's sandbox: a Landlock
// domain built from the guard's forbidden paths (reads), the agent's write
// roots (writes), and a network namespace whose only ways out are an
// egress proxy and the gateway's API, both served by the parent.
package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metnos/gateway/vaglio"
)

// Grant is one path the child may reach: for reading (and executing), or
// for reading and writing.
type Grant struct {
	Path  string `json:"path"`
	Dir   bool   `json:"dir"`
	Write bool   `json:"write,omitempty"`
	// Device is a terminal or other safe device: ioctl is allowed on it.
	Device bool `json:"device,omitempty"`
}

// Rules are the paths of one child's Landlock domain.
type Rules struct {
	Grants []Grant
	// Denied are the existing paths left out because they are forbidden,
	// each with the rule that forbids it (for --print and the start line).
	Denied []Denied
	// WriteRoots are the directories (and files) the child may write.
	WriteRoots []string
}

// Denied is one forbidden path found on the machine.
type Denied struct {
	Path, Rule string
}

// Pattern is a forbidden path: one matcher per component from the root.
type Pattern struct {
	name  string
	elems []func(string) bool
	whole bool
}

func (p Pattern) rest(n int) Pattern {
	return Pattern{name: p.name, elems: p.elems[n:], whole: p.whole}
}

// kernelHeld are the forbidden trees the kernel holds by other means than
// a path rule, granted whole: a process's entries in /proc are its own, and
// another process's environment, memory and descriptors need ptrace access,
// which Landlock refuses outside the child's domain and the user namespace
// refuses outside it. A path rule could not hold /proc anyway: the entries
// of processes started later do not exist when the rules are built.
var kernelHeld = []string{"/proc"}

// deviceWrites are the devices a program writes without harm (its
// terminal, the null device, shared memory).
var deviceWrites = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/shm"}

// Patterns converts the guard's forbidden paths, with the absolute paths of
// an agent's read_deny, into the sandbox's patterns.
func Patterns(forbidden []vaglio.ForbiddenPattern, readDeny []string) ([]Pattern, error) {
	var out []Pattern
	for _, f := range forbidden {
		p := Pattern{name: f.Name, whole: f.Whole}
		for _, e := range f.Elems {
			p.elems = append(p.elems, e.Match)
		}
		if len(p.elems) > 0 && slices.ContainsFunc(kernelHeld, func(k string) bool { return p.elems[0](strings.TrimPrefix(k, "/")) }) {
			continue
		}
		out = append(out, p)
	}
	for _, d := range readDeny {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("read_deny %q is not an absolute path", d)
		}
		d = filepath.Clean(d)
		if d == "/" {
			return nil, errors.New("read_deny \"/\" would deny everything")
		}
		p := Pattern{name: d}
		for _, c := range strings.Split(strings.TrimPrefix(d, "/"), "/") {
			p.elems = append(p.elems, func(name string) bool { return name == c })
		}
		out = append(out, p)
	}
	return out, nil
}

// Build computes the grants: everything under / for reading but the
// forbidden paths, and the write roots for writing. Landlock grants and
// cannot subtract, so each directory on the way to a forbidden path is not
// granted itself: each of its entries is, but the forbidden one (and so an
// entry created there later is not granted at all). A symbolic link is
// never granted by its name: what it points at is judged where it lives.
func Build(pats []Pattern, home string, writeRoots []string) (Rules, error) {
	b := &builder{}
	roots, err := b.checkRoots(pats, home, writeRoots)
	if err != nil {
		return Rules{}, err
	}
	b.walk("/", pats, false)
	for _, r := range roots {
		b.root(r, pats)
	}
	for _, d := range deviceWrites {
		if st, err := os.Stat(d); err == nil && !b.forbidden(pats, d) {
			b.rules.Grants = append(b.rules.Grants, Grant{Path: d, Dir: st.IsDir(), Write: true, Device: st.Mode()&fs.ModeDevice != 0 || d == "/dev/pts"})
		}
	}
	b.rules.WriteRoots = roots
	return b.rules, nil
}

type builder struct{ rules Rules }

// checkRoots refuses a write root that is, or holds, what an agent must
// never write: the root, the home directory or one above it (the shell's
// start-up files, the agents' hook files), or a forbidden path.
func (b *builder) checkRoots(pats []Pattern, home string, roots []string) ([]string, error) {
	var out []string
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("write root %q is not an absolute path", r)
		}
		r = filepath.Clean(r)
		if home != "" {
			h := filepath.Clean(home)
			if r == h || r == "/" || strings.HasPrefix(h, r+"/") {
				return nil, fmt.Errorf("write root %s holds the home directory (its start-up files, the agents' hook files): name a directory under it", r)
			}
		}
		if r == "/" {
			return nil, errors.New("write root / holds everything")
		}
		if rule, under := insideForbidden(pats, r); under {
			return nil, fmt.Errorf("write root %s is a forbidden path (%s)", r, rule)
		}
		if _, err := os.Stat(r); err != nil {
			return nil, fmt.Errorf("write root: %w", err)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// insideForbidden reports a path that is a forbidden path or under one.
func insideForbidden(pats []Pattern, p string) (string, bool) {
	comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, pat := range pats {
		if len(comps) < len(pat.elems) || pat.whole && len(comps) > len(pat.elems) {
			continue
		}
		if matchesPrefix(pat, comps[:len(pat.elems)]) {
			return pat.name, true
		}
	}
	return "", false
}

// forbidden reports whether the path p itself is forbidden.
func (b *builder) forbidden(pats []Pattern, p string) bool {
	_, hit := insideForbidden(pats, p)
	return hit
}

func matchesPrefix(pat Pattern, comps []string) bool {
	for i, c := range comps {
		if !pat.elems[i](c) {
			return false
		}
	}
	return true
}

// root grants a write root: whole, or split like a read tree when a
// forbidden path may lie under it.
func (b *builder) root(r string, pats []Pattern) {
	comps := strings.Split(strings.TrimPrefix(r, "/"), "/")
	var under []Pattern
	for _, p := range pats {
		if len(p.elems) > len(comps) && matchesPrefix(p, comps) {
			under = append(under, p.rest(len(comps)))
		}
	}
	st, err := os.Lstat(r)
	if err != nil {
		return
	}
	if len(under) == 0 || !st.IsDir() {
		b.rules.Grants = append(b.rules.Grants, Grant{Path: r, Dir: st.IsDir(), Write: true})
		return
	}
	b.walk(r, under, true)
}

// walk grants the entries of dir for the patterns that continue in it.
func (b *builder) walk(dir string, pats []Pattern, write bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return // unreadable: nothing under it is granted
	}
	for _, e := range ents {
		full := filepath.Join(dir, e.Name())
		var deeper []Pattern
		rule := ""
		for _, p := range pats {
			if !p.elems[0](e.Name()) {
				continue
			}
			switch {
			case len(p.elems) > 1:
				deeper = append(deeper, p.rest(1))
			case p.whole:
				deeper = append(deeper, Pattern{name: p.name, elems: []func(string) bool{func(string) bool { return false }}})
			default:
				rule = p.name
			}
		}
		if rule != "" {
			if !write {
				b.rules.Denied = append(b.rules.Denied, Denied{Path: full, Rule: rule})
			}
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if len(deeper) > 0 && e.IsDir() {
			b.walk(full, deeper, write)
			continue
		}
		b.rules.Grants = append(b.rules.Grants, Grant{Path: full, Dir: e.IsDir(), Write: write})
	}
}
