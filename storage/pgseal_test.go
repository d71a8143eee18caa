package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestAudit_UnsealedRowsSealedFirst: on PostgreSQL a committed audit row
// left unsealed (written without the chain, as rows from before it were)
// is sealed by the next commit that appends, before that commit's own
// rows, by a group commit and by InTx alike (the sealing statement with
// the unsealed rows' update, where the usual one has none), and the chain
// verifies.
func TestAudit_UnsealedRowsSealedFirst(t *testing.T) {
	if storagetest.Dialect() != storage.Postgres {
		t.Skip("SQLite's group commit seals its own rows only; the PostgreSQL run covers this")
	}
	db := storagetest.Open(t)
	ctx := context.Background()
	appendN(t, db, 2, time.Now())
	before := verify(t, db).Rows
	unsealed := func(actor string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `INSERT INTO audit (at, actor, event) VALUES ($1, $2, $3)`,
			storage.FormatTime(time.Now()), actor, storage.AuditNote); err != nil {
			t.Fatal(err)
		}
	}
	seqOf := func(actor string) int64 {
		t.Helper()
		var seq *int64
		if err := db.QueryRowContext(ctx, `SELECT seq FROM audit WHERE actor = $1`, actor).Scan(&seq); err != nil {
			t.Fatal(err)
		}
		if seq == nil {
			t.Fatalf("the row of %s is still unsealed", actor)
		}
		return *seq
	}

	unsealed("legacy:1")
	err := db.GroupExecAudit(ctx, nil, `SELECT 1`, nil, func(int64) (storage.AuditRecord, bool) {
		rec, err := storage.PrepareAudit(storage.AuditEvent{Actor: "group", Event: storage.AuditNote})
		if err != nil {
			t.Error(err)
		}
		return rec, true
	})
	if err != nil {
		t.Fatal(err)
	}
	if l, g := seqOf("legacy:1"), seqOf("group"); l >= g {
		t.Errorf("group commit: the unsealed row got seq %d, the group's own %d; want it first", l, g)
	}

	unsealed("legacy:2")
	if err := storage.AppendAudit(ctx, db, storage.AuditEvent{Actor: "intx", Event: storage.AuditNote}); err != nil {
		t.Fatal(err)
	}
	if l, g := seqOf("legacy:2"), seqOf("intx"); l >= g {
		t.Errorf("InTx: the unsealed row got seq %d, the transaction's own %d; want it first", l, g)
	}
	wantIntact(t, db, before+4)
}
