package approvals

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	selectIdleGrants = `SELECT id FROM grants WHERE revoked_at IS NULL
	AND (expires_at IS NULL OR expires_at > $1) AND COALESCE(last_used_at, granted_at) < $2 ORDER BY id`
	selectExpiredGrants = `SELECT id FROM grants WHERE revoked_at IS NULL
	AND expires_at IS NOT NULL AND expires_at <= $1 ORDER BY id`
	countPrunableRequests  = `SELECT COUNT(*) FROM requests WHERE status != 'pending' AND COALESCE(decided_at, created_at) < $1`
	countPrunableGrants    = `SELECT COUNT(*) FROM grants WHERE revoked_at IS NOT NULL AND revoked_at < $1`
	deletePrunableRequests = `DELETE FROM requests WHERE status != 'pending'
	AND COALESCE(decided_at, created_at) < $1`
	deletePrunableGrants = `DELETE FROM grants WHERE revoked_at IS NOT NULL AND revoked_at < $1`
)

// PruneReport says what one prune pass did (or, dry, would do).
type PruneReport struct {
	DryRun          bool    `json:"dry_run"`
	StaleRevoked    []int64 `json:"stale_revoked"`
	ExpiredMarked   []int64 `json:"expired_marked"`
	RequestsDeleted int     `json:"requests_deleted"`
	GrantsDeleted   int     `json:"grants_deleted"`
	// AuditDeleted counts audit rows older than Retention removed; a
	// checkpoint row keeps the chain verifiable (storage.PruneAudit).
	AuditDeleted int `json:"audit_deleted"`
}

func ids(ctx context.Context, q storage.Querier, query string, args ...any) ([]int64, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Prune runs one pass of SPEC §5's prune job in one transaction: revokes
// grants unused for StaleAfter (reason "stale"), marks expired grants
// (reason "expired"), and deletes finished requests and revoked or expired
// grants older than Retention. Audit rows older than Retention are removed
// too, leaving a checkpoint that keeps the hash chain verifiable.
func (s *Service) Prune(ctx context.Context, dryRun bool) (PruneReport, error) {
	now := s.now().UTC()
	rep := PruneReport{DryRun: dryRun}
	nowS := storage.FormatTime(now)
	staleS := storage.FormatTime(now.Add(-s.opts.StaleAfter))
	keepS := storage.FormatTime(now.Add(-s.opts.Retention))
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		var err error
		if s.opts.StaleAfter > 0 {
			rep.StaleRevoked, err = ids(ctx, tx, selectIdleGrants, nowS, staleS)
			if err != nil {
				return err
			}
		}
		if rep.ExpiredMarked, err = ids(ctx, tx, selectExpiredGrants, nowS); err != nil {
			return err
		}
		countReq := countPrunableRequests
		countGrants := countPrunableGrants
		if s.opts.Retention > 0 {
			if err := tx.QueryRowContext(ctx, countReq, keepS).Scan(&rep.RequestsDeleted); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, countGrants, keepS).Scan(&rep.GrantsDeleted); err != nil {
				return err
			}
		}
		var audit storage.AuditPruned
		if s.opts.Retention > 0 {
			if audit, err = storage.PruneAudit(ctx, tx, now.Add(-s.opts.Retention), dryRun); err != nil {
				return err
			}
			rep.AuditDeleted = audit.Removed
		}
		if dryRun {
			return nil
		}
		for _, id := range rep.StaleRevoked {
			if _, err := s.grants.RevokeTx(ctx, tx, id, "stale", "prune"); err != nil {
				return err
			}
		}
		for _, id := range rep.ExpiredMarked {
			if _, err := s.grants.RevokeTx(ctx, tx, id, "expired", "prune"); err != nil {
				return err
			}
		}
		if s.opts.Retention > 0 {
			if _, err := tx.ExecContext(ctx, deletePrunableRequests, keepS); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, deletePrunableGrants, keepS); err != nil {
				return err
			}
		}
		detail := audit.Detail()
		for k, v := range map[string]any{"stale_revoked": len(rep.StaleRevoked), "expired_marked": len(rep.ExpiredMarked),
			"requests_deleted": rep.RequestsDeleted, "grants_deleted": rep.GrantsDeleted} {
			detail[k] = v
		}
		return storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: "prune", Event: storage.AuditPrune,
			Detail: detail})
	})
	if err != nil {
		return PruneReport{}, fmt.Errorf("prune: %w", err)
	}
	return rep, nil
}

// Job is one more task of the leader's scheduler ([approvals] digest):
// Run on Spec, a robfig/cron standard spec.
type Job struct {
	Name, Spec string
	Run        func(ctx context.Context)
}

// StartScheduler runs Prune once now and then on the prune spec, and
// every job on its own, all on one robfig/cron scheduler reading specs in
// loc (the server's time zone; nil: the machine's). Panics in a job are
// recovered and overlapping runs of one job skipped. The returned stop
// waits for running jobs to finish.
func (s *Service) StartScheduler(ctx context.Context, prune string, loc *time.Location, jobs ...Job) (stop func(), err error) {
	if loc == nil {
		loc = time.Local
	}
	logger := cronLogger{s.log}
	c := cron.New(cron.WithChain(cron.Recover(logger), cron.SkipIfStillRunning(logger)), cron.WithLogger(logger),
		cron.WithLocation(loc))
	job := func() {
		began := time.Now()
		rep, err := s.Prune(ctx, false)
		if err != nil {
			s.noteDB(ctx, began, err, "prune")
			return
		}
		s.log.Info("prune", "stale_revoked", len(rep.StaleRevoked), "expired_marked", len(rep.ExpiredMarked),
			"requests_deleted", rep.RequestsDeleted, "grants_deleted", rep.GrantsDeleted, "audit_deleted", rep.AuditDeleted)
	}
	if _, err := c.AddFunc(prune, job); err != nil {
		return nil, fmt.Errorf("prune schedule %q: %w", prune, err)
	}
	for _, j := range jobs {
		if _, err := c.AddFunc(j.Spec, func() { j.Run(ctx) }); err != nil {
			return nil, fmt.Errorf("%s schedule %q: %w", j.Name, j.Spec, err)
		}
	}
	c.Start()
	var first sync.WaitGroup
	first.Add(1)
	go func() { defer first.Done(); job() }()
	return func() { <-c.Stop().Done(); first.Wait() }, nil
}

// cronLogger adapts slog to cron.Logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "err", err)...)
}
