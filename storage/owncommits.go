package storage

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
)

// Under a steady stream of decided-now requests every decision found the
// WAL-index header moved (by the group commits of this very process) and
// read the grants and rules counters again. The group commit's writes
// change neither (see GroupTx), so it vouches for its commits: it reads
// the header just before COMMIT, while it holds SQLite's write lock and no
// other connection of any process can commit, and again just after; when
// the change counter in the header (iChange, which every commit and only
// a commit adds one to) moved by exactly one, the commit in between was
// its own, and the pair (before, after) is recorded. A version whose
// snapshot is at "before" may then move to "after" without a query. A
// commit of anyone else (a revoke by `gateway policy revoke`, a grant
// written by this process's InTx) is never recorded, so it breaks every
// chain that would step over it, and the next decision reads the counter.

// ownCommitsKept bounds the chain of recorded commits.
const ownCommitsKept = 16

// ownCommit is one recorded commit of the group writer, in a chain from
// the newest to older ones. The writer adds one node per commit (it used
// to copy a slice of all of them) and cuts the chain past ownCommitsKept;
// a reader walking it as it is cut stops short and fails closed.
type ownCommit struct {
	before, after walHeader
	older         atomic.Pointer[ownCommit]
}

// walChange is the word of the header that holds iChange (byte 8).
const walChange = 2

// headerNow reads the WAL-index header through the DB's own mapping,
// made on first use. ok is false without one (not SQLite, not mapped).
// Like GrantsVersion's, the mapping is pinned: a connection of its own,
// outside the pool, stays open as long as the mapping is used, so SQLite
// never removes the -shm file under it (it does when the last connection
// closes, and the next one makes a new file: a mapping of the old one
// would read a header that never moves again, and a group would take the
// chain's head it carried for current after another process's commit).
func (db *DB) headerNow() (walHeader, bool) {
	if db.Path == "" || db.pg != nil {
		return walHeader{}, false
	}
	w := db.wal.Load()
	if w == nil {
		if w = db.pinWALIndex(); w == nil {
			return walHeader{}, false
		}
		if !db.wal.CompareAndSwap(nil, w) {
			w.close()
			w = db.wal.Load()
		}
	}
	return w.idx.header()
}

// pinnedIndex is a mapping of the -shm file and the connection that keeps
// the file in place while it is mapped.
type pinnedIndex struct {
	idx  *walIndex
	conn driver.Conn
}

// pinWALIndex opens the pinning connection, then maps the file; nil when
// either fails (the caller then asks SQLite).
func (db *DB) pinWALIndex() *pinnedIndex {
	if db.conns == nil {
		return nil
	}
	conn, err := db.conns.Connector.Connect(context.Background())
	if err != nil {
		return nil
	}
	idx := openWALIndex(db.Path)
	if idx == nil {
		conn.Close()
		return nil
	}
	return &pinnedIndex{idx: idx, conn: conn}
}

// close unmaps the file, then lets it go.
func (p *pinnedIndex) close() {
	p.idx.close()
	p.conn.Close()
}

// vouchCommit records the commit between before and after if it was the
// only one (see above).
func (db *DB) vouchCommit(before, after walHeader) {
	if after[walChange] != before[walChange]+1 {
		return
	}
	c := &ownCommit{before: before, after: after}
	c.older.Store(db.own.Load())
	db.own.Store(c)
	n := c
	for i := 1; i < ownCommitsKept && n != nil; i++ {
		n = n.older.Load()
	}
	if n != nil {
		n.older.Store(nil)
	}
}

// vouched says whether the header went from "from" to "to" through
// recorded commits only.
func (db *DB) vouched(from, to walHeader) bool {
	cur := to
	for c := db.own.Load(); c != nil; c = c.older.Load() {
		if c.after == cur {
			cur = c.before
			if cur == from {
				return true
			}
		}
	}
	return false
}

// ownState is the DB's part of the above.
type ownState struct {
	wal atomic.Pointer[pinnedIndex]
	own atomic.Pointer[ownCommit] // the newest recorded commit
}

// groupHead carries the chain's head from one group commit to the next.
// When the WAL-index header at the next group's BEGIN is still the one
// the last group's COMMIT left (no commit of anyone came between, see
// owncommits.go), the head row holds what the cursor held at that commit,
// and no row is unsealed: the group neither reads the head row nor looks
// for unsealed rows. Any other commit changes the header, and the group
// reads both again.
type groupHead struct {
	ok    bool
	after walHeader
	seq   int64
	hash  string
}

// resume loads c from h if the header is still the one h was taken at.
func (h *groupHead) resume(db *DB, c *chainCursor) {
	if !h.ok || c == nil {
		return
	}
	h.ok = false
	if now, ok := db.headerNow(); ok && now == h.after {
		c.seq, c.hash, c.loaded, c.clean = h.seq, h.hash, true, true
	}
}

// keep records the head c left, after the group's commit moved the header
// from before to after and was the only commit in between.
func (h *groupHead) keep(c *chainCursor, before, after walHeader) {
	if c != nil && c.loaded && !c.others && after[walChange] == before[walChange]+1 {
		*h = groupHead{ok: true, after: after, seq: c.seq, hash: c.hash}
	}
}
