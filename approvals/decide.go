package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	countApproval = `UPDATE requests SET approvals = $1, rev = rev + 1
	WHERE id = $2 AND status = 'pending' AND rev = $3`
	selectDueRequests = `SELECT ` + requestColumns + ` FROM requests
	WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT 500`
	anyDueRequest = `SELECT EXISTS (SELECT 1 FROM requests WHERE status = 'pending' AND expires_at <= $1)`
	updateNote    = `UPDATE requests SET note = $1 WHERE id = $2`
)

// Decide records a person's decision. Only the request's approvers may
// decide (its route's, else the channel's own: ErrNotApprover). With a
// quorum of one the first decision wins: a later one gets an
// *AlreadyDecidedError naming who decided. With a larger quorum each
// distinct approver's allow is counted once (again: *AlreadyCountedError)
// and the request stays pending, the returned request showing the
// progress, until the quorum is reached; any deny denies at once. The
// decision that finishes the request writes its grant (Allow always, only
// when every counted allow was Allow always) in the same transaction.
func (s *Service) Decide(ctx context.Context, id string, d Decision, by Actor) (Request, error) {
	return s.DecideChoice(ctx, id, Choice{Decision: d}, by)
}

// maxCountAttempts bounds the recounts of one approval under contention.
const maxCountAttempts = 50

// countTx counts approval a on the pending request r, conditionally on r
// being unchanged since it was read (rev): false means someone else
// changed it first and the caller must read it again. On success r holds
// the new approvals, the request's cards are due for an edit (the
// progress), and the approval has its audit row.
func (s *Service) countTx(ctx context.Context, tx storage.Querier, r *Request, a Approval, now time.Time) (bool, error) {
	next := append(append([]Approval(nil), r.Approvals...), a)
	js, _ := json.Marshal(next)
	res, err := tx.ExecContext(ctx, countApproval, string(js), r.ID, r.Rev)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	r.Approvals, r.Rev = next, r.Rev+1
	if _, err := tx.ExecContext(ctx, resetCards,
		storage.FormatTime(now), r.ID); err != nil {
		return false, err
	}
	detail := map[string]any{"decision": string(a.Decision), "approver": a.Approver,
		"channel": a.Channel, "approvals": r.AllowCount(), "quorum": r.Quorum, "capability": r.Capability}
	maps.Copy(detail, grantDetail(*r, a))
	if a.proof.Valid() {
		maps.Copy(detail, a.proof.AuditDetail())
	}
	err = storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: a.By, Event: storage.AuditApproval,
		RequestID: r.ID, Detail: detail})
	return err == nil, err
}

// decideTx finishes the pending request r with the decision of a (for a
// quorum, what every counted approval agreed on: quorumApproval): Allow
// always and Allow for write their grant, on the chosen scope, granted by
// every approver counted.
func (s *Service) decideTx(ctx context.Context, tx storage.Querier, r *Request, a Approval, now time.Time) error {
	d := a.Decision
	status := StatusAllowed
	if d == Deny {
		status = StatusDenied
	}
	if d == Deny || max(r.Quorum, 1) <= 1 {
		r.Approvals = append(r.Approvals, a)
	} // else countTx already added a
	if d.WritesGrant() {
		target, ttl, session := a.Scope, s.opts.GrantTTL, policy.Session{}
		switch d {
		case AllowFor:
			target = r.GrantTarget
			var err error
			if ttl, err = ParseWhile(a.For); err != nil {
				return err
			}
		case AllowSession:
			target, ttl, session = r.GrantTarget, s.opts.SessionTTL, policy.Session{Agent: r.Agent, ID: r.SessionID}
		}
		// The grant is the request's agent's, unless the approver chose
		// every agent; a guarded route's carries the route when the request
		// was decided the route's way.
		agent, route := grantAgent(*r, d, a.EveryAgent), s.routeKey(*r)
		if agent == passkeys.AnyAgent {
			agent = ""
		}
		g, err := s.grants.RecordTx(ctx, tx, policy.NewGrant{
			Principal:  policy.Principal{Channel: r.Channel, SenderID: r.SenderID},
			Capability: r.Capability, Target: target, GrantedBy: grantedBy(r.Approvals), TTL: ttl,
			RequestID: r.ID, Agent: agent, Session: session, Route: route,
		})
		if err != nil {
			return err
		}
		r.GrantID, r.GrantExpiresAt = &g.ID, g.ExpiresAt
	}
	extra := grantDetail(*r, a)
	if extra == nil {
		extra = map[string]any{}
	}
	if r.Quorum > 1 {
		extra["approvals"], extra["quorum"] = r.AllowCount(), r.Quorum
	} else if a.proof.Valid() {
		maps.Copy(extra, a.proof.AuditDetail()) // with a quorum, each approval's row carries its own
	}
	return s.finishTx(ctx, tx, r, status, &d, a.By, now, storage.AuditDecision, extra)
}

// grantedBy names every approver whose allow wrote a grant.
func grantedBy(as []Approval) string {
	var names []string
	for _, a := range as {
		if a.Decision != Deny {
			names = append(names, a.By)
		}
	}
	return strings.Join(names, ", ")
}

// Cancel withdraws a pending request on behalf of its agent.
func (s *Service) Cancel(ctx context.Context, id, agent, tokenID string) (Request, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	var r Request
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		var err error
		if r, err = getRequest(ctx, tx, id); err != nil {
			return err
		}
		if r.Status.Finished() {
			return &AlreadyDecidedError{Request: r}
		}
		var extra map[string]any
		if tokenID != "" {
			extra = map[string]any{"token_id": tokenID} // on whose behalf: a child token
		}
		return s.finishTx(ctx, tx, &r, StatusCancelled, nil, "agent:"+agent, now, storage.AuditCancelled, extra)
	})
	if err != nil {
		return Request{}, fmt.Errorf("cancel request %s: %w", id, err)
	}
	s.finished(r)
	return r, nil
}

const finishRequest = `UPDATE requests SET status = $1, decision = $2, decided_by = $3, decided_at = $4, grant_id = $5,
grant_expires_at = COALESCE($7, grant_expires_at), approvals = COALESCE($8, approvals), rev = rev + 1,
escalate_at = NULL, remind_at = NULL WHERE id = $6 AND status = 'pending'`

// finishTx moves a pending request to a final status inside tx, with its
// audit row, and marks its cards for an edit. Zero rows changed means
// another writer finished it first.
func (s *Service) finishTx(ctx context.Context, tx storage.Querier, r *Request, st Status, d *Decision, by string,
	now time.Time, event string, extra map[string]any) error {
	var approvals any
	if d != nil {
		js, _ := json.Marshal(nonNilApprovals(r.Approvals))
		approvals = string(js)
	}
	res, err := tx.ExecContext(ctx, finishRequest, string(st), nullDecision(d), by, storage.FormatTime(now),
		nullInt(r.GrantID), r.ID, grantExpiry(r), approvals)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return err
		}
		cur, err := getRequest(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		return &AlreadyDecidedError{Request: cur}
	}
	if _, err := tx.ExecContext(ctx, resetCards,
		storage.FormatTime(now), r.ID); err != nil {
		return err
	}
	detail := map[string]any{"status": string(st), "agent": r.Agent, "capability": r.Capability}
	if d != nil {
		detail["decision"] = string(*d)
	}
	if r.GrantID != nil {
		detail["grant_id"] = *r.GrantID
	}
	for k, v := range extra {
		detail[k] = v
	}
	if err := storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: by, Event: event, RequestID: r.ID,
		Detail: detail}); err != nil {
		return err
	}
	// Replicas on the same database wake their waiters when this commits.
	if err := s.db.Notify(ctx, tx, noticeRequest+r.ID); err != nil {
		return err
	}
	r.Status, r.Decision, r.DecidedBy, r.DecidedAt = st, d, by, &now
	r.Rev++
	return nil
}

// progressed tells SSE streams and the card dispatchers that an approval
// was counted on r.
func (s *Service) progressed(r Request) {
	s.hub.publish(Event{Kind: EventProgress, Request: r})
	s.wakeAll(r.Notify)
}

// finished tells everyone who waits that r is final.
func (s *Service) finished(r Request) {
	s.opts.Observer.Decided(r.Status, r.DecidedAt.Sub(r.CreatedAt))
	s.hub.publish(Event{Kind: EventResolved, Request: r})
	s.wakeAll(r.Notify)
	s.callbacks.send(r, s.traceWait(r))
}

// ExpireDue expires every pending request whose time is up and returns how
// many. Run at start-up (for requests that expired while the gateway was
// down) and every second after.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	// A read first: most sweeps find nothing due, and then take no write
	// slot and begin no transaction (the one below lists the due again).
	var overdue bool
	if err := s.db.QueryRowContext(ctx, anyDueRequest, storage.FormatTime(now)).Scan(&overdue); err != nil {
		return 0, fmt.Errorf("expire: %w", err)
	}
	if !overdue {
		return 0, nil
	}
	var done []Request
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		due, err := listRequests(ctx, tx, selectDueRequests, storage.FormatTime(now))
		if err != nil {
			return err
		}
		for _, r := range due {
			err := s.finishTx(ctx, tx, &r, StatusExpired, nil, "timeout", now, storage.AuditExpired, nil)
			var already *AlreadyDecidedError
			if errors.As(err, &already) {
				continue // another replica's sweep, or a decision, finished it first
			}
			if err != nil {
				return err
			}
			done = append(done, r)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expire: %w", err)
	}
	for _, r := range done {
		s.finished(r)
	}
	return len(done), nil
}

// SetNote attaches the owner's note to a request decided less than
// NoteWindow ago.
func (s *Service) SetNote(ctx context.Context, id, note string, by Actor) (Request, error) {
	now := s.now().UTC()
	var r Request
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		var err error
		if r, err = getRequest(ctx, tx, id); err != nil {
			return err
		}
		if r.DecidedAt == nil || now.Sub(*r.DecidedAt) > NoteWindow {
			return fmt.Errorf("%w: note: only within %s of the decision", ErrInvalid, NoteWindow)
		}
		if _, err := tx.ExecContext(ctx, updateNote, note, id); err != nil {
			return err
		}
		r.Note = note
		return storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: by.String(), Event: storage.AuditNote,
			RequestID: id})
	})
	if err != nil {
		return Request{}, fmt.Errorf("note on request %s: %w", id, err)
	}
	return r, nil
}

// grantExpiry is the expiry of the grant an Allow always just wrote (nil
// for other decisions: the stored preview stays).
func grantExpiry(r *Request) any {
	if r.GrantID == nil {
		return nil
	}
	return nullTime(r.GrantExpiresAt)
}
