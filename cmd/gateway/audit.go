package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/storage"
)

// auditPoll is how often `gateway audit --follow` asks the database for
// rows committed since the last it printed: a decision made anywhere, on
// any replica, shows within it.
const auditPoll = 250 * time.Millisecond

// auditBatch is how many rows one query reads.
const auditBatch = 1000

// cmdAudit lists the audit trail, oldest first, straight from the database
// (with or without a running server), or verifies its hash chain.
func cmdAudit(e *env, args []string) error {
	if len(args) > 0 && args[0] == "verify" {
		return auditVerify(e, args[1:])
	}
	if len(args) > 0 && args[0] == "show" {
		return auditShow(e, args[1:])
	}
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	since := fs.String("since", "", "rows at or after: a duration back from now (24h) or a time (RFC 3339 or 2006-01-02)")
	until := fs.String("until", "", "rows before: a duration back from now or a time")
	agent := fs.String("agent", "", "rows about this agent")
	request := fs.String("request", "", "rows of this request id")
	event := fs.String("event", "", "rows of this event (outcome, decision, grant_written, …)")
	actor := fs.String("actor", "", "rows whose actor contains this (an id or a name)")
	capability := fs.String("capability", "", "rows about this capability")
	after := fs.Int64("after", 0, "rows after this seq")
	limit := fs.Int("limit", 0, "at most this many rows (the first ones; 0 = all)")
	format := fs.String("format", "text", "text, jsonl or csv")
	follow := fs.Bool("follow", false, "keep printing rows as they are committed, until interrupted")
	cursor := fs.String("cursor", "", "a file keeping the last seq printed: start after it, update it as rows are printed")
	err := parseNoArgs(fs, "audit", args)
	if err != nil {
		return err
	}
	now := time.Now()
	f := storage.AuditFilter{Agent: *agent, RequestID: *request, Event: *event, Actor: *actor, Capability: *capability,
		After: *after}
	if f.Since, err = parseWhen("since", *since, now); err != nil {
		return err
	}
	if f.Until, err = parseWhen("until", *until, now); err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit: must be 0 or more")
	}
	if *after < 0 {
		return usagef("--after: must be 0 or more")
	}
	w, err := newAuditWriter(e.stdout, *format)
	if err != nil {
		return err
	}
	if *cursor != "" {
		b, err := os.ReadFile(*cursor)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return fmt.Errorf("--cursor: %w", err)
		default:
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				return usagef("--cursor: %s does not hold a seq", *cursor)
			}
			f.After = max(f.After, n)
		}
	}
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	w.zone = cfg.Server.Zone() // the text format is for people: their zone; jsonl and csv stay UTC
	db, err := storage.OpenConfig(e.ctx, storageConfig(cfg))
	if err != nil {
		return err
	}
	defer db.Close()
	remaining := *limit // of the first listing; 0 = no limit
	if *follow && *limit > 0 {
		// Like tail -n N -f: the last N rows, then the new ones.
		last := f
		last.Limit, last.Newest = *limit, true
		rows, err := db.QueryAudit(e.ctx, last)
		if err != nil {
			return err
		}
		if err := printAudit(w, rows, &f, *cursor); err != nil {
			return err
		}
		if len(rows) == 0 {
			// Nothing matched yet: only rows from now on.
			if f.After, err = db.AuditHead(e.ctx); err != nil {
				return err
			}
		}
		remaining = 0
	}
	for {
		page := f
		page.Limit = auditBatch
		if remaining > 0 {
			page.Limit = min(auditBatch, remaining)
		}
		rows, err := db.QueryAudit(e.ctx, page)
		if err != nil {
			if e.ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := printAudit(w, rows, &f, *cursor); err != nil {
			return err
		}
		if remaining > 0 {
			if remaining -= len(rows); remaining == 0 {
				return nil
			}
		}
		if len(rows) == page.Limit {
			continue
		}
		if !*follow {
			return nil
		}
		t := time.NewTimer(auditPoll)
		select {
		case <-e.ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// printAudit writes rows, moves f past them and records the cursor.
func printAudit(w *auditWriter, rows []storage.AuditEvent, f *storage.AuditFilter, cursor string) error {
	for _, r := range rows {
		if err := w.write(r); err != nil {
			return err
		}
		f.After = r.Seq
	}
	if err := w.flush(); err != nil {
		return err
	}
	if len(rows) > 0 && cursor != "" {
		return writeCursor(cursor, f.After)
	}
	return nil
}

// writeCursor replaces the cursor file atomically.
func writeCursor(path string, seq int64) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(seq, 10)+"\n"), 0o600); err != nil {
		return fmt.Errorf("--cursor: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("--cursor: %w", err)
	}
	return nil
}

// parseWhen reads --since / --until (storage.ParseAuditTime).
func parseWhen(name, s string, now time.Time) (time.Time, error) {
	t, err := storage.ParseAuditTime(s, now)
	if err != nil {
		return time.Time{}, usagef("--%s: %v", name, err)
	}
	return t, nil
}

// auditWriter prints rows in one format.
type auditWriter struct {
	format string
	zone   *time.Location // of the text format's times (server.timezone)
	buf    *bufio.Writer
	csv    *csv.Writer
}

func newAuditWriter(w io.Writer, format string) (*auditWriter, error) {
	a := &auditWriter{format: format, buf: bufio.NewWriter(w)}
	switch format {
	case "text", "jsonl":
	case "csv":
		a.csv = csv.NewWriter(a.buf)
		if err := a.csv.Write([]string{"seq", "at", "actor", "event", "request_id", "grant_id", "detail", "hash"}); err != nil {
			return nil, err
		}
	default:
		return nil, usagef("--format: %q (text, jsonl or csv)", format)
	}
	return a, nil
}

func (a *auditWriter) write(r storage.AuditEvent) error {
	switch a.format {
	case "jsonl":
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b = append(b, '\n')
		_, err = a.buf.Write(b)
		return err
	case "csv":
		grant := ""
		if r.GrantID != 0 {
			grant = strconv.FormatInt(r.GrantID, 10)
		}
		return a.csv.Write([]string{strconv.FormatInt(r.Seq, 10), r.AtText(), csvCell(r.Actor), csvCell(r.Event),
			csvCell(r.RequestID), grant, csvCell(r.DetailJSON()), r.Hash})
	}
	_, err := fmt.Fprintln(a.buf, auditLine(r, a.zone))
	return err
}

// csvCell neutralises a cell a spreadsheet would read as a formula: one
// starting with =, +, -, @, a tab or a carriage return gets a leading '
// (OWASP's advice), which spreadsheets show as text. An actor is a
// person's display name, free text a chat member chooses.
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func (a *auditWriter) flush() error {
	if a.csv != nil {
		a.csv.Flush()
		if err := a.csv.Error(); err != nil {
			return err
		}
	}
	return a.buf.Flush()
}

// auditLine is a row for a person: seq, time (in zone, with its
// abbreviation), event, actor, ids, detail.
func auditLine(r storage.AuditEvent, zone *time.Location) string {
	if zone == nil {
		zone = time.UTC
	}
	var b strings.Builder
	// Agent and person text (targets, names) shows as on the cards: hidden
	// characters as ⟦U+…⟧. jsonl and csv stay exact: the chain is
	// recomputed from them.
	fmt.Fprintf(&b, "%6d  %s  %-13s  %s", r.Seq, r.At.In(zone).Format("2006-01-02 15:04:05 MST"), r.Event, cards.Safe(r.Actor))
	if r.RequestID != "" {
		fmt.Fprintf(&b, "  request=%s", r.RequestID)
	}
	if r.GrantID != 0 {
		fmt.Fprintf(&b, "  grant=%d", r.GrantID)
	}
	keys := make([]string, 0, len(r.Detail))
	for k := range r.Detail {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := r.Detail[k]
		var s string
		if str, ok := v.(string); ok {
			s = cards.Safe(str)
			if s == "" || strings.ContainsAny(s, " \t\"=") {
				s = strconv.Quote(s)
			}
		} else {
			j, _ := json.Marshal(v)
			s = cards.Safe(string(j))
		}
		fmt.Fprintf(&b, "  %s=%s", cards.Safe(k), s)
	}
	return b.String()
}

// auditVerify recomputes the chain: "ok: N rows, chain intact" (exit 0) or
// the first row changed, inserted or removed (exit 1).
func auditVerify(e *env, args []string) error {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	expect := fs.String("expect", "", "SEQ:HASH of a row kept outside the database (the last line of an earlier verify)")
	if err := parseNoArgs(fs, "audit verify", args); err != nil {
		return err
	}
	var anchor *storage.AuditAnchor
	if *expect != "" {
		seq, hash, ok := strings.Cut(*expect, ":")
		n, err := strconv.ParseInt(seq, 10, 64)
		if !ok || err != nil || n <= 0 || len(hash) != 64 {
			return usagef("--expect: %q is not SEQ:HASH (a seq and a 64-digit sha256)", *expect)
		}
		anchor = &storage.AuditAnchor{Seq: n, Hash: strings.ToLower(hash)}
	}
	db, err := openDB(e, *cfgPath)
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := db.VerifyAudit(e.ctx, anchor)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, v.Summary())
	// Passkey-signed rows are checked again on their own, chain or not:
	// each signature against the public key it names.
	checks, err := passkeys.New(db, nil).VerifyAudit(e.ctx, storage.AuditFilter{})
	if err != nil {
		return err
	}
	bad := 0
	for _, c := range checks {
		fmt.Fprintln(e.stdout, c.Line())
		if c.Err != nil {
			bad++
		}
	}
	if !v.OK || bad > 0 {
		if bad > 0 {
			fmt.Fprintf(e.stdout, "%d of %d passkey signatures invalid\n", bad, len(checks))
		}
		return exitError{code: exitFail}
	}
	if v.LastSeq != 0 {
		fmt.Fprintf(e.stdout, "last row: %d:%s\n", v.LastSeq, v.LastHash)
	}
	return nil
}
