package config

import (
	"slices"
	"testing"
)

// TestOwnPaths_ShippedUnit: under the shipped unit (DynamicUser, state in
// /var/lib/metnos, config in /etc/metnos) the gateway's own paths take in
// the real directories under /var/lib/private and the config directory
// with the env file of secrets.
func TestOwnPaths_ShippedUnit(t *testing.T) {
	env := map[string]string{"HOME": "/", "XDG_STATE_HOME": "/var/lib"}
	c := Config{File: "/etc/metnos/gateway.toml"}
	c.Storage.Driver = "sqlite"
	c.Storage.Path = "/var/lib/metnos/gateway.db"
	c.Vaglio.LogDir = "/var/log/metnos"
	got := c.OwnPaths(func(k string) string { return env[k] })
	for _, want := range []string{"/var/lib/metnos/gateway.db", "/var/lib/private/metnos/gateway.db",
		"/var/lib/private/metnos/agent-token", "/var/lib/private/metnos", "/etc/metnos", "/etc/metnos/gateway.toml",
		"/var/log/private/metnos"} {
		if !slices.Contains(got, want) {
			t.Errorf("OwnPaths lacks %s: %v", want, got)
		}
	}
	c.File = "/srv/project/gateway.toml"
	if got := c.OwnPaths(func(k string) string { return env[k] }); slices.Contains(got, "/srv/project") {
		t.Errorf("a config file's directory not named metnos is taken whole: %v", got)
	}
}

// TestOwnPaths_FilesBesideTheDatabase: with the database in a directory
// shared with other things (/tmp, left out whole), the gateway's files
// beside it are still each its own: the token files and the listen file
// (an agent that wrote that one would send the owner's next login link
// elsewhere).
func TestOwnPaths_FilesBesideTheDatabase(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	c := Config{File: "/home/u/.config/metnos/gateway.toml"}
	c.Storage.Driver = "sqlite"
	c.Storage.Path = "/tmp/gateway.db"
	got := c.OwnPaths(func(k string) string { return env[k] })
	if slices.Contains(got, "/tmp") {
		t.Errorf("the shared /tmp is taken whole: %v", got)
	}
	for _, want := range []string{"/tmp/gateway.db", "/tmp/" + TokenFileName, "/tmp/" + AdminTokenFileName, "/tmp/" + ListenFileName} {
		if !slices.Contains(got, want) {
			t.Errorf("OwnPaths lacks %s: %v", want, got)
		}
	}
}
