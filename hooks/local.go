package hooks

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/user"
	"path"
	"strings"
)

// Local is what `gateway hook` adds to an agent's event on the agent's
// own machine, where the server cannot look: the home directory of the
// agent's environment, and every path target as that machine's file
// system reaches it (links followed). It travels beside the event, under
// LocalKey, so the event itself stays as the agent wrote it. An http hook
// that posts straight to the gateway has none, and is judged on the text
// alone.
type Local struct {
	// Home is $HOME of the hook's environment, the agent's: "~" in its
	// requests stands for it, and a search of it asks.
	Home string `json:"home,omitempty"`
	// Paths maps a path target as the event names it (Call.Target) to the
	// path it reaches, where the two differ.
	Paths map[string]string `json:"paths,omitempty"`
}

// LocalKey is the top-level key of the event object that carries Local.
const LocalKey = "gateway_local"

// maxLinks bounds the links followed for one path, as the kernel's 40.
const maxLinks = 40

// Localize is the event to relay with Local added: the home, and the
// resolution of every fs:* target the built-in mapping finds (the
// server's tools map is not known here; a tool mapped only there is
// judged on its text). raw must be a JSON object; anything else is
// returned as it is.
func Localize(ad Adapter, ev Event, raw []byte, home string) []byte {
	l := Local{Home: home}
	if cs, err := ad.Map(ev, nil); err == nil {
		for _, c := range cs {
			if !strings.HasPrefix(c.Capability, "fs:") {
				continue
			}
			if r := ResolvePath(c.Target, home); r != "" && r != c.Target {
				if l.Paths == nil {
					l.Paths = map[string]string{}
				}
				l.Paths[c.Target] = r
			}
		}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return raw
	}
	b, err := json.Marshal(l)
	if err != nil {
		return raw
	}
	obj[LocalKey] = b
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

// LocalOf reads the Local an event carries; nil when it has none.
func LocalOf(raw []byte) *Local {
	var v struct {
		Local *Local `json:"gateway_local"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v.Local
}

// Apply makes each fs:* call of cs judge the path its target reaches on
// the agent's machine: the target becomes the resolved path (rules,
// grants and the guard see the file really read or written), the text
// stays in the call's args and intent, and the card's summary says that
// one resolves to the other. Every call gets the agent's home.
func (l *Local) Apply(cs []Call) []Call {
	if l == nil {
		return cs
	}
	home := ""
	if path.IsAbs(l.Home) {
		home = path.Clean(l.Home)
	}
	for i := range cs {
		cs[i].Home = home
		if !strings.HasPrefix(cs[i].Capability, "fs:") {
			continue
		}
		r, ok := l.Paths[cs[i].Target]
		if !ok || r == "" || r == cs[i].Target || !path.IsAbs(r) {
			continue
		}
		cs[i].Summary += " · " + cs[i].Target + " resolves to " + path.Clean(r)
		cs[i].Target = path.Clean(r)
	}
	return cs
}

// ResolvePath is the path p reaches on this machine: "~" and "~user"
// expanded (home is "~"), then every component walked as the kernel
// walks it, each link followed, up to the first that does not exist;
// the rest is appended as written. The first component holding a glob
// ends the walk too, so a pattern keeps its wildcards under the real
// directory. "" when p is relative (its directory is not known here) or
// the links loop.
func ResolvePath(p, home string) string {
	p = expandHome(p, home)
	if !path.IsAbs(p) {
		return ""
	}
	rest := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
	cur, links := "/", 0
	for len(rest) > 0 {
		c := rest[0]
		switch {
		case c == "" || c == ".":
			rest = rest[1:]
			continue
		case c == "..":
			cur, rest = path.Dir(cur), rest[1:]
			continue
		case strings.ContainsAny(c, "*?[{"):
			return path.Join(append([]string{cur}, rest...)...)
		}
		next := path.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil { // missing, or not ours to look at: the rest as written
			return path.Join(append([]string{cur}, rest...)...)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur, rest = next, rest[1:]
			continue
		}
		if links++; links > maxLinks {
			return ""
		}
		to, err := os.Readlink(next)
		if err != nil {
			return path.Join(append([]string{cur}, rest...)...)
		}
		if path.IsAbs(to) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(to, "/"), "/"), rest[1:]...)
	}
	return cur
}

// expandHome expands a leading "~" (home) or "~user" (that user's home
// here) as a shell would; anything else is returned as it is.
func expandHome(p, home string) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	name, rest, hasSlash := strings.Cut(p[1:], "/")
	h := home
	if name != "" {
		u, err := user.Lookup(name)
		if err != nil {
			return p
		}
		h = u.HomeDir
	}
	if h == "" {
		return p
	}
	if !hasSlash {
		return h
	}
	return h + "/" + rest
}
