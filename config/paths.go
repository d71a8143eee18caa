// Where things are: the config file found, the state directory, ~
// expanded, and the gateway's own files (OwnPaths) the guard forbids.

package config

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultPath is where the config file is looked for when --config is not
// given: $GATEWAY_CONFIG, else $XDG_CONFIG_HOME/metnos/gateway.toml, else
// ~/.config/metnos/gateway.toml. A nil getenv means os.Getenv.
func DefaultPath(getenv func(string) string) string {
	getenv = orEnv(getenv)
	if p := getenv("GATEWAY_CONFIG"); p != "" {
		return ExpandHome(p, getenv)
	}
	return filepath.Join(xdgDir(getenv, "XDG_CONFIG_HOME", ".config"), "metnos", "gateway.toml")
}

// Locate picks the config file for a command: the --config flag value when
// given, else $GATEWAY_CONFIG (both explicit: the file must exist), else the
// default path (missing means defaults). Pass the result to Load.
func Locate(flag string, getenv func(string) string) (path string, explicit bool) {
	getenv = orEnv(getenv)
	switch {
	case flag != "":
		return ExpandHome(flag, getenv), true
	case getenv("GATEWAY_CONFIG") != "":
		return DefaultPath(getenv), true
	}
	return DefaultPath(getenv), false
}

// StateDir is where the database and the generated local agent token live:
// $XDG_STATE_HOME/metnos, else ~/.local/state/metnos. A nil getenv means os.Getenv.
func StateDir(getenv func(string) string) string {
	return filepath.Join(xdgDir(orEnv(getenv), "XDG_STATE_HOME", ".local/state"), "metnos")
}

// ExpandHome replaces a leading "~" or "~/" with $HOME. Other paths, "~user"
// forms, and every path when HOME is empty, are returned unchanged (Validate
// then refuses a storage or log path still starting with "~").
func ExpandHome(p string, getenv func(string) string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home := orEnv(getenv)("HOME")
	if home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}

// xdgDir returns $name when it is absolute (the XDG spec says to ignore
// relative values), else ~/fallback.
func xdgDir(getenv func(string) string, name, fallback string) string {
	if v := getenv(name); filepath.IsAbs(v) {
		return v
	}
	return ExpandHome("~/"+fallback, getenv)
}

// OwnPaths are the gateway's own files and directories, forbidden to every
// agent (vaglio.Own): the SQLite database (its -wal, -shm and -journal
// too), the generated token file beside it, the config file, the state
// directory, the directory that holds the database and the decision-log
// directory. A directory shared with other things (/, /tmp, the home
// directory or one above it) is left out; the files in it are still
// listed. A nil getenv means os.Getenv.
func (c Config) OwnPaths(getenv func(string) string) []string {
	getenv = orEnv(getenv)
	home := getenv("HOME")
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	addDir := func(d string) {
		if d != "" && filepath.IsAbs(d) && !sharedDir(filepath.Clean(d), home) {
			add(d)
		}
	}
	if c.Storage.Driver == "" || c.Storage.Driver == "sqlite" {
		add(c.Storage.Path)
		add(filepath.Join(filepath.Dir(c.Storage.Path), TokenFileName))
		add(filepath.Join(filepath.Dir(c.Storage.Path), AdminTokenFileName))
		add(filepath.Join(filepath.Dir(c.Storage.Path), ListenFileName))
		addDir(filepath.Dir(c.Storage.Path))
	}
	add(c.File)
	if filepath.Base(filepath.Dir(c.File)) == "metnos" {
		addDir(filepath.Dir(c.File)) // the env file of secrets beside it
	}
	addDir(StateDir(getenv))
	addDir(c.Vaglio.LogDir)
	// Under systemd's DynamicUser, /var/lib/metnos is a link to
	// /var/lib/private/metnos (the same for /var/log and /var/cache): the
	// real path is the gateway's too.
	for _, p := range out {
		for _, top := range []string{"/var/lib/", "/var/log/", "/var/cache/"} {
			if rest, ok := strings.CutPrefix(p, top); ok && !strings.HasPrefix(rest, "private/") {
				out = append(out, top+"private/"+rest)
			}
		}
	}
	return out
}

// TokenFileName is the file beside the database that holds the generated
// local agent's token.
const TokenFileName = "agent-token"

// AdminTokenFileName is the file beside the database that holds the
// generated local admin agent's token: the CLI's admin credential.
const AdminTokenFileName = "admin-token"

// ListenFileName is the file beside the database where a running server
// says the address it listens on (gateway login links there).
const ListenFileName = "listen"

// sharedDir reports a directory that holds far more than the gateway's
// files: protecting it whole would forbid agents the machine.
func sharedDir(d, home string) bool {
	if strings.Count(d, "/") <= 1 {
		return true // /, /tmp, /srv, /home
	}
	switch d {
	case "/var/tmp", "/var/lib", "/var/log", "/usr/local", "/usr/share", "/run/user", filepath.Clean(os.TempDir()):
		return true
	}
	if home != "" {
		h := filepath.Clean(home)
		return d == h || strings.HasPrefix(h, d+"/")
	}
	return false
}
