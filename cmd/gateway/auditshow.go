package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/storage"
)

// auditShow is `gateway audit show REQUEST_ID`: what became of one
// request, a line per row of its trail, decisions in plain words; a
// decision signed with a passkey names it and says whether its signature
// verifies now, against the stored public key.
func auditShow(e *env, args []string) error {
	fs := flag.NewFlagSet("audit show", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("audit show: give one request id")
	}
	id := pos[0]
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	db, err := storage.OpenConfig(e.ctx, storageConfig(cfg))
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryAudit(e.ctx, storage.AuditFilter{RequestID: id})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("no audit rows for request %s (unknown, or pruned)", cards.Safe(id))
	}
	keys, zone, bad := passkeys.New(db, nil), cfg.Server.Zone(), false
	for _, r := range rows {
		if r.Event != storage.AuditDecision && r.Event != storage.AuditApproval {
			fmt.Fprintln(e.stdout, auditLine(r, zone))
			continue
		}
		line, ok := decisionWords(r, zone)
		if passkeys.Signed(r.Detail) {
			name, _ := r.Detail[passkeys.KeyName].(string)
			line += fmt.Sprintf(" with the passkey '%s'", cards.Safe(name))
			switch note, err := keys.VerifyRow(e.ctx, r); {
			case err != nil:
				line += "; signature INVALID: " + err.Error()
				bad = true
			case note != "":
				line += "; signature verified (" + note + ")"
			default:
				line += "; signature verified"
			}
		}
		if !ok {
			line = auditLine(r, zone) // not a decision this command knows: the raw row
		}
		fmt.Fprintf(e.stdout, "%6d  %s\n", r.Seq, line)
	}
	if bad {
		return exitError{code: exitFail}
	}
	return nil
}

// decisionWords says a decision or approval row as a person would:
// "Allowed once by roberto at 20:04 CET".
func decisionWords(r storage.AuditEvent, zone *time.Location) (string, bool) {
	d, _ := r.Detail["decision"].(string)
	words := map[approvals.Decision]string{approvals.AllowOnce: "Allowed once", approvals.AllowAlways: "Allowed always",
		approvals.AllowFor: "Allowed for a while", approvals.AllowSession: "Allowed for the session", approvals.Deny: "Denied"}
	w, ok := words[approvals.Decision(d)]
	if !ok {
		return "", false
	}
	if r.Event == storage.AuditApproval {
		w += fmt.Sprintf(" (counted %v of %v)", r.Detail["approvals"], r.Detail["quorum"])
	}
	at := r.At.In(zone)
	return fmt.Sprintf("%s by %s at %s on %s", w, cards.Safe(cards.DisplayName(r.Actor)), at.Format("15:04 MST"),
		at.Format(time.DateOnly)), true
}
