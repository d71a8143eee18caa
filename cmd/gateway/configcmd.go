package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

func cmdConfig(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("config: missing subcommand (check, example)")
	}
	sub, rest := args[0], args[1:]
	switch {
	case isHelp(sub):
		return helpError{name: "config"}
	case sub != "check" && sub != "example":
		return usagef("config: unknown subcommand %q (check, example)", sub)
	}
	fs := flag.NewFlagSet("config "+sub, flag.ContinueOnError)
	cfgPath := configFlag(fs)
	pos, err := parseFlags(fs, rest)
	if err := noPositional("config "+sub, pos); err != nil {
		return err
	}
	if err != nil {
		return err // --help, after the positionals are checked
	}
	switch sub {
	case "example":
		_, err := fmt.Fprint(e.stdout, config.ExampleWith(messenger.Sections(messengerKinds)...))
		return err
	case "check":
		path, explicit := config.Locate(*cfgPath, e.getenv)
		cfg, err := loadConfig(e, *cfgPath)
		if err != nil {
			return err
		}
		src := "defaults (no config file at " + path + ")"
		if explicit || fileExists(path) {
			src = path
		}
		zone := cfg.Server.Timezone
		if zone == "" {
			zone = "this machine's (" + time.Now().Format("MST") + ")"
		}
		var chats strings.Builder
		for _, name := range cfg.Messengers() {
			fmt.Fprintf(&chats, "%s %s, ", name, onOff(cfg.MessengerEnabled(name)))
		}
		fmt.Fprintf(e.stdout, "ok: %s: %d agent(s), %d rule(s), %sdatabase %s, time zone %s\n", src,
			len(cfg.Agents), len(cfg.Policy.Rules), chats.String(), cfg.Storage.Driver, zone)
		checkAuthority(e.stdout, cfg)
		return nil
	}
	return usagef("config: unknown subcommand %q (check, example)", sub)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
