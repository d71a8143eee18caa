package passkeys

import (
	"context"
	"fmt"

	"github.com/metnos/gateway/storage"
)

// RowCheck is the outcome of checking one passkey-signed audit row again.
type RowCheck struct {
	Row storage.AuditEvent
	Err error // nil: the signature holds
	// Note says what an older row does not prove (NoteV1), when Err is nil.
	Note string
}

// Line is how `gateway audit verify` prints it: "seq N request R:
// passkey signature ok" or "… invalid: <why>".
func (c RowCheck) Line() string {
	if c.Err == nil && c.Note != "" {
		return fmt.Sprintf("seq %d request %s: passkey signature ok (%s)", c.Row.Seq, c.Row.RequestID, c.Note)
	}
	if c.Err == nil {
		return fmt.Sprintf("seq %d request %s: passkey signature ok", c.Row.Seq, c.Row.RequestID)
	}
	return fmt.Sprintf("seq %d request %s: passkey signature invalid: %v", c.Row.Seq, c.Row.RequestID, c.Err)
}

// auditBatch is how many audit rows one query reads.
const auditBatch = 1000

// VerifyAudit checks every passkey-signed row of the audit trail again
// (VerifyRow), offline, independently of the hash chain; f narrows the
// rows (its After and Limit are used for paging).
func (s *Store) VerifyAudit(ctx context.Context, f storage.AuditFilter) ([]RowCheck, error) {
	var out []RowCheck
	f.Limit, f.Newest = auditBatch, false
	for {
		rows, err := s.db.QueryAudit(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("read the audit trail: %w", err)
		}
		for _, r := range rows {
			if Signed(r.Detail) {
				note, err := s.VerifyRow(ctx, r)
				out = append(out, RowCheck{Row: r, Err: err, Note: note})
			}
		}
		if len(rows) < auditBatch {
			return out, nil
		}
		f.After = rows[len(rows)-1].Seq
	}
}
