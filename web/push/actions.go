package push

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/sessions"
	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	insertAction = `INSERT INTO push_actions (hash, request_id, rev, web_user, decision, expires_at)
	VALUES ($1, $2, $3, $4, $5, $6)`
	// spendAction checks and spends a token in one statement: of two
	// posts of the same token (a replay, two replicas) one gets the row.
	spendAction = `UPDATE push_actions SET spent_at = $1 WHERE hash = $2 AND spent_at IS NULL AND expires_at > $1
	RETURNING request_id, rev, web_user, decision`
	// spendSiblings spends the other tokens of the same notification: one
	// action decides, the other is then worthless.
	spendSiblings = `UPDATE push_actions SET spent_at = $1 WHERE request_id = $2 AND web_user = $3 AND spent_at IS NULL`
	pruneActions  = `DELETE FROM push_actions WHERE expires_at < $1`
)

// ActionTTL bounds how long a notification's action token works: long
// enough to reach a phone in a pocket, short enough that a notification
// left on a lock screen does not keep a decision open. A request that
// expires sooner bounds it too.
const ActionTTL = 15 * time.Minute

// ErrActionRefused is a token that is unknown, already spent or expired;
// ErrActionStale one whose request changed after the push (decided
// elsewhere, escalated, another approval counted). Either decides nothing.
var (
	ErrActionRefused = errors.New("this notification's action is no longer valid; open the request instead")
	ErrActionStale   = errors.New("the request changed since this notification; open it to decide")
)

// Action is what a spent token allows: one decision on one request at
// one revision, by one web user.
type Action struct {
	RequestID string
	Rev       int64
	User      string
	Decision  approvals.Decision
}

// Actions issues and spends the one-time tokens. Only a token's SHA-256
// is stored: a copy of the database decides nothing.
type Actions struct {
	db  *storage.DB
	now func() time.Time
}

// NewActions returns the tokens' store over db.
func NewActions(db *storage.DB, now func() time.Time) *Actions {
	if now == nil {
		now = time.Now
	}
	return &Actions{db: db, now: now}
}

// Issue makes a token for decision d on r by user, valid for ActionTTL or
// until r expires, whichever is sooner. Only allow_once and deny are ever
// issued, and none for a request whose route asks for a step-up.
func (a *Actions) Issue(ctx context.Context, r approvals.Request, user string, d approvals.Decision) (string, error) {
	if d != approvals.AllowOnce && d != approvals.Deny {
		return "", fmt.Errorf("push: no action token for %s", d)
	}
	if r.StepUp != "" {
		return "", fmt.Errorf("push: no action token for a step-up request")
	}
	now := a.now()
	exp := now.Add(ActionTTL)
	if r.ExpiresAt.Before(exp) {
		exp = r.ExpiresAt
	}
	tok := sessions.RandomToken()
	if _, err := a.db.ExecContext(ctx, insertAction, sessions.HashOf(tok), r.ID, r.Rev, user, string(d),
		storage.FormatTime(exp)); err != nil {
		return "", fmt.Errorf("push: issue an action token: %w", err)
	}
	return tok, nil
}

// Spend checks a token and spends it (and its sibling of the same
// notification): a second post of it is refused.
func (a *Actions) Spend(ctx context.Context, tok string) (Action, error) {
	if tok == "" || len(tok) > 100 {
		return Action{}, ErrActionRefused
	}
	now := storage.FormatTime(a.now())
	var act Action
	var d string
	err := a.db.InTx(ctx, func(q storage.Querier) error {
		if err := q.QueryRowContext(ctx, spendAction, now, sessions.HashOf(tok)).Scan(&act.RequestID, &act.Rev, &act.User, &d); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, spendSiblings, now, act.RequestID, act.User)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Action{}, ErrActionRefused
	}
	if err != nil {
		return Action{}, fmt.Errorf("push: spend an action token: %w", err)
	}
	act.Decision = approvals.Decision(d)
	return act, nil
}

// Prune deletes the tokens that expired more than a day ago.
func (a *Actions) Prune(ctx context.Context) {
	_, _ = a.db.ExecContext(ctx, pruneActions, storage.FormatTime(a.now().Add(-24*time.Hour)))
}
