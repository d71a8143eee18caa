package storage_test

import (
	"context"
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestCheckpoints_WALStaysBounded: with SQLite's own checkpoint off, the
// background checkpointer keeps the WAL from growing with what was written
// (40 MiB written over a second and a half leave a smaller WAL), and copies
// every committed page back soon after the writes stop.
func TestCheckpoints_WALStaysBounded(t *testing.T) {
	db := storagetest.Open(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE blobs (id INTEGER PRIMARY KEY, b TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	row := strings.Repeat("x", 8<<10)
	const rounds, perRound = 40, 128 // 40 × 128 × 8 KiB = 40 MiB
	for range rounds {
		err := db.InTx(ctx, func(tx storage.Querier) error {
			for range perRound {
				if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (b) VALUES ($1)`, row); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond)
	}
	st, err := os.Stat(db.Path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() >= 40<<20 {
		t.Fatalf("WAL is %d MiB after 40 MiB written: never started again", st.Size()>>20)
	}
	// And once the writes stop, the checkpointer copies every frame back:
	// the WAL-index's nBackfill (byte 96) reaches mxFrame (byte 16).
	deadline := time.Now().Add(5 * time.Second)
	for {
		shm, err := os.ReadFile(db.Path + "-shm")
		if err != nil {
			t.Fatal(err)
		}
		mx, backfill := binary.NativeEndian.Uint32(shm[16:]), binary.NativeEndian.Uint32(shm[96:])
		if mx > 0 && backfill == mx {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("WAL frames %d, checkpointed %d, 5 s after the last write", mx, backfill)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM blobs`).Scan(&n); err != nil || n != rounds*perRound {
		t.Fatalf("%d rows (%v), want %d", n, err, rounds*perRound)
	}
}
