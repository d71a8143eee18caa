package storage

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// blobsDB opens a database with a blobs table and RestartFrames set to
// restart for the test; frames reads the WAL's frame count (mxFrame) from
// the -shm file.
func blobsDB(t *testing.T, restart int) (db *DB, frames func() uint32) {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), RestartFrames(restart))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(context.Background(), `CREATE TABLE blobs (id INTEGER PRIMARY KEY, b TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db, func() uint32 {
		shm, err := os.ReadFile(db.Path + "-shm")
		if err != nil {
			t.Fatal(err)
		}
		return binary.NativeEndian.Uint32(shm[16:])
	}
}

// TestCheckpoints_RestartDespiteReaders: with readers always overlapping
// (as under load), the WAL may not start again on its own; once it is
// past RestartFrames a RESTART checkpoint, which waits for the readers of
// the moment, starts it again, and the WAL's frame count falls back.
//
// A read transaction held open (pin) keeps every checkpoint from copying
// past it while the WAL grows past RestartFrames: without it, a moment in
// which none of the readers held a snapshot (frequent under load) let the
// WAL start again on its own, below RestartFrames, again and again, and
// the test never saw the WAL long enough to test the RESTART.
func TestCheckpoints_RestartDespiteReaders(t *testing.T) {
	ctx := context.Background()
	db, frames := blobsDB(t, 1000)
	insert := func() {
		t.Helper()
		row := strings.Repeat("x", 4<<10)
		if err := db.InTx(ctx, func(tx Querier) error {
			for range 64 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (b) VALUES ($1)`, row); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	insert()
	pin, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pin.Rollback()
	var n int
	if err := pin.QueryRowContext(ctx, `SELECT count(*) FROM blobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 { // readers, overlapping most of the time
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
				if err != nil {
					continue
				}
				var n int
				_ = tx.QueryRowContext(ctx, `SELECT count(*) FROM blobs`).Scan(&n)
				time.Sleep(2 * time.Millisecond)
				_ = tx.Rollback()
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	// Past RestartFrames: each transaction adds at least 64 frames, none
	// of which a checkpoint can copy while the pin holds its snapshot.
	restart := uint32(db.checkpoints.restartFrames)
	for i := 0; frames() <= restart; i++ {
		if i > 2*int(restart)/64 {
			t.Fatalf("the WAL did not grow past %d frames while pinned: %d frames", restart, frames())
		}
		insert()
	}
	most := frames()
	if err := pin.Rollback(); err != nil {
		t.Fatal(err)
	}

	// The next RESTART (within CheckpointEvery) starts the WAL again; the
	// next write then writes it from the top.
	deadline := time.Now().Add(10 * time.Second)
	for {
		insert()
		f := frames()
		if f < most/2 {
			return // started again
		}
		most = max(most, f)
		if time.Now().After(deadline) {
			t.Fatalf("the WAL never started again: %d frames at most, RestartFrames %d", most, restart)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCheckpoints_StartAgainUnderSteadyWrites: group commits back to back
// from several goroutines, with no pause in which a checkpoint could catch
// up on its own: the checkpointer's second pass, which holds the write
// slot, copies the WAL to its end, and SQLite starts it again from the top
// well before it is long enough for a RESTART (turned off here).
func TestCheckpoints_StartAgainUnderSteadyWrites(t *testing.T) {
	ctx := context.Background()
	db, frames := blobsDB(t, 1<<30)
	row := strings.Repeat("x", 2<<10)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := db.GroupTx(ctx, func(tx Querier) error {
					_, err := tx.ExecContext(ctx, `INSERT INTO blobs (b) VALUES ($1)`, row)
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	var most uint32
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f := frames()
		if most > 0 && f < most/2 {
			return // started again
		}
		most = max(most, f)
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("the WAL never started again under steady writes: %d frames at most", most)
}
