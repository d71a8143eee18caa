package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/metnos/gateway/config"
)

// checkAuthority prints, for `gateway config check`, who may change what:
// each web user's role, the admin agents, whether policy changes need a
// passkey, and the guarded routes each approve rule of the file cannot
// lift.
func checkAuthority(w io.Writer, cfg config.Config) {
	var users []string
	for _, u := range cfg.Web.Users {
		users = append(users, u.Name+" ("+cfg.Web.RoleOf(u.Name)+")")
	}
	fmt.Fprintf(w, "web users: %s\n", strings.Join(users, ", "))
	var admins []string
	for _, a := range cfg.Agents {
		if a.Admin {
			admins = append(admins, a.ID)
		}
	}
	if len(admins) > 0 {
		fmt.Fprintf(w, "admin agents (an admin's powers, never over their own requests): %s\n", strings.Join(admins, ", "))
	}
	for _, name := range cfg.Messengers() {
		// A messenger whose chat decides more than its approvers do says
		// who (Telegram: who revokes grants).
		if a, ok := cfg.Messenger(name).(interface{ Authority() string }); ok && cfg.MessengerEnabled(name) {
			fmt.Fprintf(w, "%s: %s\n", name, a.Authority())
		}
	}
	if cfg.Web.PolicyPasskey() {
		fmt.Fprintln(w, "policy changes on the page need an admin's passkey; the admin agents cannot add approve rules or grants")
	}
	for i, rt := range cfg.Approvals.Routes {
		if g := rt.Guard(i + 1); g != nil {
			fmt.Fprintf(w, "guarded: %s (only its own decisions' grants lift its requests)\n", g.Label)
		}
	}
	for _, r := range cfg.PolicyRules() {
		for _, line := range config.NotLifted(cfg.RuleGuards(r)) {
			fmt.Fprintf(w, "rule %s (approve %s %q) %s\n", r.Label(), r.Capability, r.Target, line)
		}
	}
}
