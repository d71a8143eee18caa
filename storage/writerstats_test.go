package storage_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
)

// TestWriterStats_CountsGroupsAndCheckpoints: every call given to the
// group writer is counted once, in groups no more numerous than the calls,
// with the time they took; and the checkpointer's hold of the write slot,
// which every write waits behind, is counted too.
func TestWriterStats_CountsGroupsAndCheckpoints(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "w.db"), storage.CheckpointEvery(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE rows (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	before := db.WriterStats()
	const callers, each = 8, 25
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				if err := db.GroupExec(ctx, nil, `INSERT INTO rows (v) VALUES ($1)`, []any{"x"}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	s := db.WriterStats()
	if got := s.Calls - before.Calls; got != callers*each {
		t.Errorf("%d calls counted, want %d", got, callers*each)
	}
	if g := s.Groups - before.Groups; g == 0 || g > callers*each {
		t.Errorf("%d groups for %d calls", g, callers*each)
	}
	if s.Busy <= before.Busy {
		t.Errorf("busy time did not grow: %v → %v", before.Busy, s.Busy)
	}
	// The checkpointer's second pass runs once a round finds frames to
	// copy; keep writing until one has held the slot.
	deadline := time.Now().Add(10 * time.Second)
	for db.WriterStats().CheckpointHold == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint held the write slot in 10 s of writes")
		}
		if err := db.GroupExec(ctx, nil, `INSERT INTO rows (v) VALUES ($1)`, []any{"y"}, nil); err != nil {
			t.Fatal(err)
		}
	}
}
