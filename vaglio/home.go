package vaglio

import (
	"os/user"
	"path"
	"regexp"
	"strings"
)

// userName is what a user name may be (POSIX portable names, as useradd
// accepts them).
var userName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?$`)

// userHome is the home directory of the user a shell word "~name" names,
// from this machine's user database, as bash looks it up (getpwnam); ""
// when there is no such user, and for the "~+" and "~-" forms (the
// working directories), which bash reads from the shell's own state.
// Every path that arrives through `gateway hook` was already expanded on
// the agent's machine; this reads what reaches the guard as text.
func userHome(name string) string {
	if !userName.MatchString(name) {
		return "" // also "~+" and "~-"; and no user database read for text that names no user
	}
	u, err := user.Lookup(name)
	if err != nil || u.HomeDir == "" {
		return ""
	}
	return path.Clean(u.HomeDir)
}

// homes are the home directories a request's "~" may stand for: the
// gateway's own, and the agent's when the request says (Request.Home)
// and it differs ("" otherwise). The guard and MustAsk judge a request
// with each. An array, not a slice: Check runs on every request.
func (v *Vaglio) homes(r Request) [2]string {
	h := strings.TrimSpace(r.Home)
	if h == "" || !path.IsAbs(h) || path.Clean(h) == v.home {
		return [2]string{v.home, ""}
	}
	return [2]string{v.home, path.Clean(h)}
}
