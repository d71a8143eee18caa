package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/metnos/gateway/storage"
)

// TestClose_LeavesNothingRunning: once Close returns, nothing of the
// database writes into its directory any more: the last connection has
// closed, so SQLite has checkpointed and removed the -wal and -shm files.
// (A connection opened for a caller that had waited for one, and one held
// by a statement prepared in the background, once outlived Close; it
// closed later and SQLite removed the WAL then, after `gateway migrate` had
// returned: t.TempDir's cleanup found the directory not empty.)
func TestClose_LeavesNothingRunning(t *testing.T) {
	for i := range 10 {
		path := filepath.Join(t.TempDir(), "gw.db")
		db, err := storage.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(path + suffix); err == nil {
				t.Fatalf("open %d: %s still there after Close (%+v)", i, filepath.Base(path+suffix), db.Stats())
			}
		}
	}
}
