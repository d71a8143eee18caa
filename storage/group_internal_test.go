package storage

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestGroupHead_CarriedOnlyAcrossOwnCommits: a group commit that follows
// the writer's own commit starts with the chain's head known (no read of
// the head row); after any other commit (an InTx of this process, a write
// of another handle on the file) it reads the head again, and the chain
// verifies whole at the end.
func TestGroupHead_CarriedOnlyAcrossOwnCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	group := func(step string) (known bool) {
		t.Helper()
		err := db.GroupTx(ctx, func(tx Querier) error {
			c := db.cursor.Load()
			known = c != nil && c.tx == tx.(txQuerier).tx && c.loaded
			return AppendAudit(ctx, tx, AuditEvent{Actor: "group", Event: "note", Detail: map[string]any{"step": step}})
		})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return known
	}
	inTx := func(on *DB, actor string) {
		t.Helper()
		if err := on.InTx(ctx, func(tx Querier) error {
			return AppendAudit(ctx, tx, AuditEvent{Actor: actor, Event: "note"})
		}); err != nil {
			t.Fatal(err)
		}
	}
	group("first")
	if !group("after own") {
		t.Error("a group after the writer's own commit read the head again")
	}
	inTx(db, "intx")
	if group("after InTx") {
		t.Error("a group after an InTx commit trusted the head it had carried")
	}
	if !group("after own again") {
		t.Error("the head was not carried again")
	}
	inTx(other, "other handle")
	if group("after the other handle") {
		t.Error("a group after another handle's commit trusted the head it had carried")
	}
	group("last")
	v, err := db.VerifyAudit(ctx, nil)
	if err != nil || !v.OK {
		t.Fatalf("chain: %+v, %v", v, err)
	}
	if v.Rows != 1+8 { // genesis, six groups, two InTx
		t.Fatalf("chain has %d rows, want 9", v.Rows)
	}
}

// TestVouched_ChainOfOwnCommits: a header moves without a query only
// through the last ownCommitsKept recorded commits, each one's "after"
// the next one's "before"; a commit not recorded (anyone else's) breaks
// the chain, and so does a counter that moved by more than one.
func TestVouched_ChainOfOwnCommits(t *testing.T) {
	db := &DB{}
	h := func(n uint32) walHeader {
		var w walHeader
		w[walChange] = n
		w[4] = n * 7 // mxFrame, so headers differ beyond the counter
		return w
	}
	for i := range uint32(20) {
		db.vouchCommit(h(i), h(i+1))
	}
	for _, c := range []struct {
		from, to uint32
		want     bool
	}{
		{19, 20, true}, {10, 20, true}, {4, 20, true}, // the last 16 commits
		{3, 20, false}, {0, 20, false}, // older ones were let go
		{4, 12, true}, {20, 19, false}, {20, 20, false},
	} {
		if got := db.vouched(h(c.from), h(c.to)); got != c.want {
			t.Errorf("vouched(%d, %d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	db.vouchCommit(h(21), h(22)) // 20 → 21 was someone else's
	db.vouchCommit(h(22), h(24)) // the counter moved by two: not recorded
	if db.vouched(h(20), h(22)) || db.vouched(h(22), h(24)) {
		t.Error("a chain stepped over a commit that was not recorded")
	}
	if !db.vouched(h(21), h(22)) {
		t.Error("the recorded commit after the gap is not vouched for")
	}
}

// TestHeaderNow_PinnedWhileThePoolEmpties: the mapping the group head
// trusts keeps a connection of its own, so it keeps reading the live
// WAL-index when every connection of the pool closes (then, without the
// pin, SQLite removes the -shm file and the next connection makes a new
// one: the mapping would read a header that never moves again, and a
// group would carry the chain's head over another process's commit).
func TestHeaderNow_PinnedWhileThePoolEmpties(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func() {
		t.Helper()
		if err := db.GroupTx(ctx, func(q Querier) error {
			return AppendAudit(ctx, q, AuditEvent{Actor: "test", Event: "note"})
		}); err != nil {
			t.Fatal(err)
		}
	}
	write() // maps the -shm file
	before, ok := db.headerNow()
	if !ok {
		t.Skip("no WAL-index mapping on this platform")
	}
	db.stopCheckpoints() // it holds a connection now and then
	// Every connection of the pool closes: the idle ones now, one that a
	// statement prepared in the background still holds when it is put back.
	db.DB.SetMaxIdleConns(0)
	for deadline := time.Now().Add(10 * time.Second); db.DB.Stats().OpenConnections != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections of the pool still open after 10 s", db.DB.Stats().OpenConnections)
		}
		time.Sleep(time.Millisecond)
	}
	db.DB.SetMaxIdleConns(maxConns())
	write()
	after, ok := db.headerNow()
	if !ok || after == before {
		t.Fatalf("the header did not move with a commit after the pool emptied (ok %v): the mapping is stale", ok)
	}
}

// TestGather_WokenByTheCallThatMakesTheGroup: the writer's wait for as
// many calls as its last group held ends when the call that makes the
// queue that long is queued (the wait is an hour otherwise), at once when
// the queue is that long already, and after its time when no call comes;
// no wake-up is left over for the next wait.
func TestGather_WokenByTheCallThatMakesTheGroup(t *testing.T) {
	var g groupCommit
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	ended := make(chan struct{})
	g.push(&groupOp{})
	go func() {
		g.gather(3, time.Hour, timer)
		close(ended)
	}()
	for g.want.Load() == 0 {
		runtime.Gosched() // until the writer waits
	}
	g.push(&groupOp{})
	select {
	case <-ended:
		t.Fatal("the wait ended with 2 calls queued of 3")
	default:
	}
	g.push(&groupOp{})
	<-ended
	if w := g.want.Load(); w != 0 {
		t.Errorf("want = %d after the wait, want 0", w)
	}
	g.gather(3, time.Hour, timer) // 3 queued: returns at once

	g.head.Store(nil)
	g.gather(2, time.Millisecond, timer) // no call comes
	if w := g.want.Load(); w != 0 {
		t.Errorf("want = %d after a wait that timed out, want 0", w)
	}
	g.push(&groupOp{})
	g.push(&groupOp{})
	if len(g.gathered) != 0 {
		t.Error("calls queued after a wait that timed out left a wake-up for the next")
	}
	if d := depthOf(g.head.Load()); d != 2 {
		t.Errorf("depth %d, want 2", d)
	}
}
