package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/locale"
)

// cmdPending is `gateway pending`: what waits for a person, one line
// each with its id, for an admin without a phone at hand. It asks the
// running gateway with an admin agent's token (GATEWAY_URL, GATEWAY_TOKEN).
func cmdPending(e *env, args []string) error {
	fs := flag.NewFlagSet("pending", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	asJSON := fs.Bool("json", false, "one JSON request object per line")
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL)")
	tokenFlag := fs.String("token", "", "an admin agent's token (default $GATEWAY_TOKEN)")
	if err := parseNoArgs(fs, "pending", args); err != nil {
		return err
	}
	c, err := agentClientOrConfig(e, *cfgPath, *urlFlag, *tokenFlag)
	if err != nil {
		return err
	}
	list, more, err := c.Pending(e.ctx)
	if err != nil {
		return decideFailed("pending", err)
	}
	l := locale.New(locale.English, time.Local, time.Now)
	for _, r := range list {
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Fprintf(e.stdout, "%s\n", b)
			continue
		}
		target, _ := cards.CutIn(cards.SafeIn(r.Target, l), 80, l)
		line := fmt.Sprintf("%s  %s  %s  %s  %s", r.ID, cards.SafeIn(r.Agent, l), r.Capability, target, l.Expires(r.ExpiresAt))
		if r.Quorum > 1 {
			line += fmt.Sprintf("  (%d of %d allows)", len(r.Approvals), r.Quorum)
		}
		if r.StepUp != "" {
			line += "  (step-up: decide on the web page)"
		}
		fmt.Fprintln(e.stdout, line)
	}
	if more > 0 && !*asJSON {
		fmt.Fprintf(e.stdout, "… and %d more\n", more)
	}
	return nil
}

// cmdDecide is `gateway decide ID allow_once|deny`: an admin's decision
// through the admin API, with its checks (an allow on a step-up route
// needs the web page's passkey and is refused here).
func cmdDecide(e *env, args []string) error {
	fs := flag.NewFlagSet("decide", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL)")
	tokenFlag := fs.String("token", "", "an admin agent's token (default $GATEWAY_TOKEN)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("decide: want ID and allow_once or deny (gateway decide r2… allow_once)")
	}
	id, decision := pos[0], pos[1]
	if decision != "allow_once" && decision != "deny" {
		return usagef("decide: %q is not allow_once or deny (Allow always is decided on the web page or a card)", decision)
	}
	c, err := agentClientOrConfig(e, *cfgPath, *urlFlag, *tokenFlag)
	if err != nil {
		return err
	}
	r, err := c.Decide(e.ctx, id, decision)
	if err != nil {
		return decideFailed("decide", err)
	}
	fmt.Fprintf(e.stdout, "%s %s (decided by %s)\n", r.ID, r.Status, r.DecidedBy)
	return nil
}

// decideFailed is the CLI face of pending's and decide's errors: exit 1
// when the gateway refused the decision (already decided, not an admin,
// a step-up), exit 2 when it could not be asked.
func decideFailed(cmd string, err error) error {
	var ae *client.APIError
	if errors.As(err, &ae) && (ae.StatusCode == http.StatusConflict || ae.StatusCode == http.StatusForbidden) {
		return exitError{exitFail, fmt.Sprintf("gateway %s: %s (%s)", cmd, ae.Message, ae.Code)}
	}
	return askFailed(err)
}
