package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/storage"
)

// The admins' messengers are told of every passkey added or removed,
// wherever it happened (the web page, `gateway passkeys remove`,
// `gateway logout`): the leader reads the passkey rows of the audit chain
// after each messenger's cursor ("passkeys:<messenger>") and posts each
// as a bulletin, moving the cursor past it once it was posted. Nothing is
// lost across a restart or a change of leader; a shutdown lets a post that
// began finish and move its cursor, and only a crash between a post and
// its cursor's move posts that one again. A messenger that fails is
// retried with backoff (its retry-after honoured) and holds back only its
// own bulletins.
const (
	// bulletinEvery is how often a messenger's loop looks for new rows.
	bulletinEvery = 2 * time.Second
	bulletinBatch = 20
)

// passkeyCursor is the cursor of a messenger's passkey bulletins.
func passkeyCursor(messenger string) string { return "passkeys:" + messenger }

// runBulletins runs one loop per messenger that can post bulletins, until
// ctx ends (the leader's).
func (a *App) runBulletins(ctx context.Context) {
	done := make(chan struct{})
	n := 0
	for _, m := range a.Messengers {
		bs, ok := m.(approvals.BulletinSender)
		if !ok {
			continue
		}
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			a.bulletinLoop(ctx, m.Name(), bs)
		}()
	}
	for range n {
		<-done
	}
}

func (a *App) bulletinLoop(ctx context.Context, name string, bs approvals.BulletinSender) {
	repeat(ctx, a.log, bulletinEvery, func(ctx context.Context) error { return a.passkeyBulletins(ctx, name, bs) },
		func(err error) time.Duration {
			var ra approvals.RetryAfterError
			if errors.As(err, &ra) {
				return ra.RetryAfter()
			}
			return 0
		}, "passkey bulletin failed; will retry", "messenger", name)
}

// passkeyBulletins posts, on one messenger, the passkey rows after its
// cursor. A messenger seen for the first time starts a day back, as the
// web page's notices do: older changes are not replayed to it.
func (a *App) passkeyBulletins(ctx context.Context, name string, bs approvals.BulletinSender) error {
	cursor := passkeyCursor(name)
	at, set, err := storage.Cursor(ctx, a.DB, cursor)
	if err != nil {
		return err
	}
	head, err := a.DB.AuditHead(ctx)
	if err != nil {
		return err
	}
	if !set {
		day, err := a.DB.QueryAudit(ctx, storage.AuditFilter{Since: a.Server.now().Add(-24 * time.Hour), Limit: 1})
		if err != nil {
			return err
		}
		start := head
		if len(day) > 0 {
			start = min(head, day[0].Seq-1)
		}
		return ignoreMoved(storage.MoveCursor(ctx, a.DB, cursor, 0, start))
	}
	rows, err := a.DB.AuditAfter(ctx, at, bulletinBatch, storage.AuditPasskeyAdded, storage.AuditPasskeyRemoved)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if ctx.Err() != nil {
			return nil // shutting down: no new post begins
		}
		// A post that began finishes, and its cursor moves, even when
		// shutdown begins meanwhile: cut short, the messenger may have
		// posted it already and the next leader would post it again.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), digestTimeout)
		err := bs.SendBulletin(sctx, passkeyBulletin(r))
		cancel()
		if err != nil {
			return fmt.Errorf("post passkey row %d: %w", r.Seq, err)
		}
		a.log.Info("passkey bulletin posted", "messenger", name, "seq", r.Seq, "event", r.Event)
		if err := storage.MoveCursor(context.WithoutCancel(ctx), a.DB, cursor, at, r.Seq); err != nil {
			return ignoreMoved(err)
		}
		at = r.Seq
	}
	if len(rows) < bulletinBatch && head > at {
		// Nothing else up to the head: the next look starts there.
		return ignoreMoved(storage.MoveCursor(ctx, a.DB, cursor, at, head))
	}
	return nil
}

// ignoreMoved: a cursor another leader moved meanwhile is its work, done.
func ignoreMoved(err error) error {
	if errors.Is(err, storage.ErrCursorMoved) {
		return nil
	}
	return err
}

// passkeyBulletin is the bulletin of a passkey_added or passkey_removed
// audit row (passkeys.Passkey's audit detail).
func passkeyBulletin(r storage.AuditEvent) approvals.Bulletin {
	str := func(k string) string { s, _ := r.Detail[k].(string); return s }
	if r.Event == storage.AuditPasskeyAdded {
		return approvals.Bulletin{Key: "bulletin.passkey_added", Args: []string{str("passkey"), str("web_user"), str("how")}}
	}
	return approvals.Bulletin{Key: "bulletin.passkey_removed",
		Args: []string{str("passkey"), str("web_user"), r.Actor, str("how")}}
}
