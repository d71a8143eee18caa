package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/passkeys"
)

// cmdPasskeys lists and removes the web users' passkeys, on the database
// directly (an admin's command: whoever can read the database).
func cmdPasskeys(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("passkeys: missing subcommand (list, remove)")
	}
	if isHelp(args[0]) {
		return helpError{name: "passkeys"}
	}
	switch args[0] {
	case "list":
		return passkeysList(e, args[1:])
	case "remove":
		return passkeysRemove(e, args[1:])
	}
	return usagef("passkeys: unknown subcommand %q (list, remove)", args[0])
}

// passkeysList prints the passkeys in use, one a line: id, user, name,
// when added and last used, credential id.
func passkeysList(e *env, args []string) error {
	fs := flag.NewFlagSet("passkeys list", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	user := fs.String("user", "", "only this web user's")
	if err := parseNoArgs(fs, "passkeys list", args); err != nil {
		return err
	}
	db, err := openDB(e, *cfgPath)
	if err != nil {
		return err
	}
	defer db.Close()
	store := passkeys.New(db, nil)
	var list []passkeys.Passkey
	if *user != "" {
		list, err = store.List(e.ctx, *user)
	} else {
		list, err = store.All(e.ctx)
	}
	if err != nil {
		return err
	}
	for _, p := range list {
		used := "never used"
		if p.LastUsedAt != nil {
			used = "last used " + p.LastUsedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(e.stdout, "%d\t%s\t%s\tadded %s\t%s\t%s\n", p.ID, cards.Safe(p.User), cards.Safe(p.Name),
			p.CreatedAt.UTC().Format(time.RFC3339), used, p.CredentialID)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "No passkeys.")
	}
	return nil
}

// passkeysRemove removes one passkey by its id (from passkeys list), with
// its audit row: it signs nothing more, and its public key stays for
// `gateway audit verify`.
func passkeysRemove(e *env, args []string) error {
	fs := flag.NewFlagSet("passkeys remove", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("passkeys remove: say which passkey, by the ID passkeys list shows")
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id <= 0 {
		return usagef("passkeys remove: %q is not a passkey ID (a number from passkeys list)", pos[0])
	}
	db, err := openDB(e, *cfgPath)
	if err != nil {
		return err
	}
	defer db.Close()
	store := passkeys.New(db, nil)
	all, err := store.All(e.ctx)
	if err != nil {
		return err
	}
	for _, p := range all {
		if p.ID != id {
			continue
		}
		if _, err := store.Remove(e.ctx, p.User, id, "cli"); err != nil && !errors.Is(err, passkeys.ErrNotFound) {
			return err
		}
		fmt.Fprintf(e.stdout, "Removed passkey %d '%s' of %s; the decisions it signed stay verifiable.\n", id,
			cards.Safe(p.Name), cards.Safe(p.User))
		return nil
	}
	return exitError{code: exitFail, msg: fmt.Sprintf("passkeys remove: no passkey %d in use (see passkeys list)", id)}
}
