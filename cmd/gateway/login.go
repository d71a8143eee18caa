package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/sessions"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/web"
)

// cmdLogin prints a one-time login link for a web user, as the last line
// of its output: it writes the link's hash to the database, so it works
// with or without a running server (and with any replica). The link
// names web.public_url, else the port the server on this machine runs on
// (listenfile.go), else server.listen's.
func cmdLogin(e *env, args []string) error {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	user := fs.String("user", "", "the web user to log in ([[web.users]]; default "+config.DefaultWebUser+")")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := noPositional("login", pos); err != nil {
		return err
	}
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	name, err := webUser(cfg, *user)
	if err != nil {
		return err
	}
	db, err := storage.OpenConfig(e.ctx, storageConfig(cfg))
	if err != nil {
		return err
	}
	defer db.Close()
	served, err := servedConfig(cfg)
	if err != nil {
		return err
	}
	link, exp, err := loginLink(e, db, gateway.LinkBase(served), name)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "One-time login link for %s (open it once, before %s):\n%s\n", name,
		exp.In(cfg.Server.Zone()).Format("15:04 MST"), link)
	return nil
}

// loginLink makes a login link for user at base.
func loginLink(e *env, db *storage.DB, base, user string) (string, time.Time, error) {
	tok, exp, err := sessions.New(db, time.Now, nil).NewLink(e.ctx, user)
	if err != nil {
		return "", time.Time{}, err
	}
	return base + web.LoginPath(tok), exp, nil
}

// webUser is the user --user names, or the default one, which must exist.
func webUser(cfg config.Config, name string) (string, error) {
	var names []string
	for _, u := range cfg.Web.Users {
		names = append(names, u.Name)
	}
	switch {
	case name == "" && cfg.Web.WebUser(config.DefaultWebUser):
		return config.DefaultWebUser, nil
	case name == "":
		return "", usagef("login: there is no web user %q; name one with --user (the users: %s)", config.DefaultWebUser, strings.Join(names, ", "))
	case !cfg.Web.WebUser(name):
		return "", usagef("login: --user: no web user %q in [[web.users]] (the users: %s)", name, strings.Join(names, ", "))
	}
	return name, nil
}

// cmdLogout ends web sessions: --all every one, --user NAME one user's
// (on every replica; each browser must log in again with a new link).
// Either also removes the passkeys of those users, unless
// --keep-passkeys: whoever held a session could have added one, and it
// would sign them straight back in.
func cmdLogout(e *env, args []string) error {
	fs := flag.NewFlagSet("logout", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	all := fs.Bool("all", false, "end every web session")
	user := fs.String("user", "", "end the web sessions of one user (configured or not)")
	keep := fs.Bool("keep-passkeys", false, "keep the passkeys of the users logged out (else they are removed)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := noPositional("logout", pos); err != nil {
		return err
	}
	if *all == (*user != "") {
		return usagef("logout: say --all (every web session ends) or --user NAME (one user's); log out of one browser with its Log out button")
	}
	db, err := openDB(e, *cfgPath)
	if err != nil {
		return err
	}
	defer db.Close()
	store := sessions.New(db, time.Now, nil)
	var n int
	if *all {
		n, err = store.EndAll(e.ctx)
	} else {
		n, err = store.EndUser(e.ctx, *user)
	}
	if err != nil {
		return err
	}
	who := "every web user"
	if !*all {
		who = *user
	}
	if err := storage.AppendAudit(e.ctx, db, storage.AuditEvent{At: time.Now(), Actor: "cli", Event: storage.AuditSessionsEnded,
		Detail: map[string]any{"web_user": *user, "sessions": n, "keep_passkeys": *keep}}); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Ended %d web sessions of %s; their unused login links no longer work.\n", n, who)
	if *keep {
		return nil
	}
	removed, err := passkeys.New(db, nil).RemoveAll(e.ctx, *user, "cli", "logout")
	if err != nil {
		return err
	}
	for _, p := range removed {
		fmt.Fprintf(e.stdout, "Removed passkey %d '%s' of %s.\n", p.ID, cards.Safe(p.Name), cards.Safe(p.User))
	}
	fmt.Fprintf(e.stdout, "Removed %d passkeys: each user adds theirs again after opening a new login link (gateway login).\n", len(removed))
	return nil
}
