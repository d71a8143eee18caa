package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// AuditPruned says what PruneAudit removed.
type AuditPruned struct {
	Removed        int    // rows deleted (chained and legacy)
	CheckpointSeq  int64  // the checkpoint's seq: the last chained row removed (0: none)
	CheckpointHash string // its hash
}

// Detail is what the prune row records, so verify can confirm that the
// checkpoint at the head of the chain was left by the prune job.
func (p AuditPruned) Detail() map[string]any {
	d := map[string]any{"audit_deleted": p.Removed}
	if p.CheckpointSeq != 0 {
		d[auditCheckpointSeq] = p.CheckpointSeq
		d[auditCheckpointHash] = p.CheckpointHash
	}
	return d
}

// PruneAudit removes, inside the caller's transaction, the oldest audit
// rows written before before, and leaves a checkpoint row in place of the
// last chained one it removed, holding that row's hash: the rows after it
// still verify. The caller appends its prune row with p.Detail() in the
// same transaction; verify requires it. dry only counts.
func PruneAudit(ctx context.Context, q Querier, before time.Time, dry bool) (AuditPruned, error) {
	var p AuditPruned
	b := FormatTime(before)
	// Rows from before the chain existed (no hash, below the first hashed row).
	const legacy = `FROM audit WHERE seq IS NOT NULL AND hash IS NULL AND at < $1
AND seq < (SELECT COALESCE(MIN(seq), 0) FROM audit WHERE hash IS NOT NULL)`
	var nLegacy int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) `+legacy, b).Scan(&nLegacy); err != nil {
		return p, fmt.Errorf("prune audit: %w", err)
	}
	// Chained rows: the longest run from the start that is all older.
	var k sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT MAX(seq) FROM audit WHERE hash IS NOT NULL AND seq < COALESCE(
(SELECT MIN(seq) FROM audit WHERE hash IS NOT NULL AND at >= $1), (SELECT MAX(seq) FROM audit) + 1)`, b).Scan(&k)
	if err != nil {
		return p, fmt.Errorf("prune audit: %w", err)
	}
	var first int64
	var kAt, kHash, kEvent string
	nChained := 0
	if k.Valid {
		if err := q.QueryRowContext(ctx, `SELECT at, hash, event FROM audit WHERE seq = $1`, k.Int64).Scan(&kAt, &kHash, &kEvent); err != nil {
			return p, fmt.Errorf("prune audit: %w", err)
		}
		if err := q.QueryRowContext(ctx, `SELECT MIN(seq), COUNT(*) FROM audit WHERE hash IS NOT NULL AND seq <= $1`,
			k.Int64).Scan(&first, &nChained); err != nil {
			return p, fmt.Errorf("prune audit: %w", err)
		}
		if k.Int64 == first && kEvent == AuditCheckpoint {
			k.Valid, nChained = false, 0 // only the checkpoint is old: nothing to do
		}
	}
	p.Removed = nLegacy + nChained
	if k.Valid {
		p.CheckpointSeq, p.CheckpointHash = k.Int64, kHash
	}
	if dry || p.Removed == 0 {
		return p, nil
	}
	if _, err := q.ExecContext(ctx, `DELETE `+legacy, b); err != nil {
		return p, fmt.Errorf("prune audit: %w", err)
	}
	if !k.Valid {
		return p, nil
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM audit WHERE seq <= $1`, k.Int64); err != nil {
		return p, fmt.Errorf("prune audit: %w", err)
	}
	detail, _ := json.Marshal(map[string]any{"removed_through": k.Int64, "removed": nChained})
	// The checkpoint keeps the removed row's time, so the next pass, which
	// removes a run of old rows from the start, takes it along.
	if _, err := q.ExecContext(ctx, `INSERT INTO audit (seq, at, actor, event, detail, hash) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.Int64, kAt, "prune", AuditCheckpoint, string(detail), kHash); err != nil {
		return p, fmt.Errorf("prune audit: checkpoint: %w", err)
	}
	return p, nil
}
