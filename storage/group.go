package storage

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// maxGroup bounds how many write functions share one transaction.
const maxGroup = 256

// groupCommit queues the write functions given to GroupTx. The queue is a
// lock-free stack: with a mutex, the writer parked on it whenever a caller
// held it, and then waited behind the callers in the scheduler's queue
// while every queued call waited for it.
type groupCommit struct {
	head    atomic.Pointer[groupOp] // the calls queued, newest first
	running atomic.Bool             // a goroutine is running batches
	// want is how many queued calls the writer waits for (0: it does
	// not wait); the call that makes the queue that long sends on
	// gathered (see gather).
	want     atomic.Int64
	gathered chan struct{}
}

type groupOp struct {
	ctx context.Context
	fn  func(q Querier) error
	// first is the statement a GroupExec call begins with (query empty
	// for GroupTx's); fn runs it, then then.
	first groupFirst
	next  *groupOp // the call queued before this one
	depth int64    // the calls queued with it, it and those before it
	err   error
	done  chan struct{}
}

// groupFirst is the first statement of a GroupExec call and what follows
// it.
type groupFirst struct {
	query string
	args  []any
	then  func(q Querier, affected int64) error
	// audit, instead of then (GroupExecAudit), names the audit row to
	// append after the statement, if any: a follow-up that runs no
	// statement of its own.
	audit func(affected int64) (AuditRecord, bool)
	// pinned: the call was decided on versions (grants, rules), read
	// before it may have started (see Basis); its group's transaction
	// reads the counters and fails it with ErrStaleBasis if they moved.
	pinned   bool
	versions [2]int64
}

// run runs the statement and then through q.
func (f *groupFirst) run(q Querier) error {
	res, err := q.ExecContext(context.Background(), f.query, f.args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	return f.follow(q, n)
}

// follow runs then, or appends audit's row, after the statement affected
// n rows.
func (f *groupFirst) follow(q Querier, n int64) error {
	if f.audit != nil {
		if rec, ok := f.audit(n); ok {
			return AppendPrepared(context.Background(), q, rec)
		}
		return nil
	}
	if f.then == nil {
		return nil
	}
	return f.then(q, n)
}

// GroupTx runs fn in a write transaction, as InTx does, but shares that
// transaction with the other GroupTx calls that arrive while the one before
// is committing (group commit): one BEGIN and one COMMIT, and one write of
// each changed page, for the whole group. A fn that fails is rolled back
// alone and the others go on;
// GroupTx returns only after the transaction holding fn's work committed
// (nil) or did not (an error, and none of fn's work is kept). fn runs on
// another goroutine than the caller's and must not call InTx or GroupTx. It
// may run twice (when another call of its group fails, see commitGroup), so
// it must change nothing but through tx, and set its results afresh. fn
// must not change grants or run-time rules: the group's commits are
// trusted to leave their version counters alone (see owncommits.go; test
// builds check it, see checkGroupVersions). The audit rows it appends
// through q are chained at once: a group that follows the writer's own
// commit does not look for unsealed rows (see groupHead).
// A call whose ctx ends before its turn comes is not run.
func (db *DB) GroupTx(ctx context.Context, fn func(q Querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.enqueue(&groupOp{ctx: ctx, fn: fn, done: make(chan struct{})})
}

// GroupExec is GroupTx for a call whose work begins with one statement:
// query runs with args, then then(q, n), n the rows it affected, in the
// same transaction (then may be nil). On PostgreSQL the first statements
// of a group's calls are sent together with its BEGIN, one round trip
// for the group instead of one each (see tryGroupPG); each then runs
// after all of them, before the functions given to GroupTx, and is bound
// as GroupTx's fn is. The statement runs under no caller's context, as
// the group's own statements do. The call's work was decided on b (nil:
// on nothing that needs a check): when b is pinned, the transaction reads
// the change counters and the call fails with ErrStaleBasis, its work not
// kept, if they are not the ones b was decided on.
func (db *DB) GroupExec(ctx context.Context, b *Basis, query string, args []any, then func(q Querier, affected int64) error) error {
	return db.groupExec(ctx, b, groupFirst{query: query, args: args, then: then})
}

// groupExec queues the call that begins with f, decided on b.
func (db *DB) groupExec(ctx context.Context, b *Basis, f groupFirst) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	vals, pinned, err := b.pinnedOn(db)
	if err != nil {
		return err
	}
	f.pinned, f.versions = pinned, vals
	op := &groupOp{ctx: ctx, first: f, done: make(chan struct{})}
	op.fn = op.first.run
	return db.enqueue(op)
}

// GroupExecAudit is GroupExec for a call whose follow-up is at most an
// audit row: audit(n), n the rows the statement affected, names the row
// and whether to append it. Such a follow-up runs no statement, so on
// PostgreSQL a group made only of these calls locks the chain's head in
// the batch of its inserts, right after them, and commits in two round
// trips (see tryGroupPG). b is as for GroupExec.
func (db *DB) GroupExecAudit(ctx context.Context, b *Basis, query string, args []any, audit func(affected int64) (AuditRecord, bool)) error {
	return db.groupExec(ctx, b, groupFirst{query: query, args: args, audit: audit})
}

// enqueue queues op (on its queue, see queueOf), runs the queue when no
// writer does, and waits for op's answer.
func (db *DB) enqueue(op *groupOp) error {
	g := db.queueOf(op)
	g.push(op)
	if g.running.CompareAndSwap(false, true) {
		// The caller that found no writer commits what is queued itself
		// (no goroutine to wake when the gateway is quiet); what queues
		// meanwhile goes to a writer of its own, so this caller is
		// answered at once.
		db.runBatches(g)
		if g.resume() {
			go db.writeLoop(g)
		}
	}
	<-op.done
	return op.err
}

// push queues op and, when the writer waits for a queue as long as the
// one op makes (see gather), wakes it.
func (g *groupCommit) push(op *groupOp) {
	for {
		op.next = g.head.Load()
		op.depth = depthOf(op.next) + 1
		if g.head.CompareAndSwap(op.next, op) {
			break
		}
	}
	if w := g.want.Load(); w > 0 && op.depth >= w && g.want.CompareAndSwap(w, 0) {
		g.gathered <- struct{}{} // once: want is 0 now
	}
}

// resume is called by the writer that found the queue empty: it stops,
// unless a call queued just as it stopped (then it goes on: true).
func (g *groupCommit) resume() bool {
	g.running.Store(false)
	return g.head.Load() != nil && g.running.CompareAndSwap(false, true)
}

// runBatches commits what is queued on g, oldest first, maxGroup calls
// per transaction, and answers each call. It returns how many calls the
// last transaction held and how long it took.
func (db *DB) runBatches(g *groupCommit) (last int, took time.Duration) {
	var batch []*groupOp
	for op := g.head.Swap(nil); op != nil; op = op.next {
		batch = append(batch, op)
	}
	slices.Reverse(batch)
	for len(batch) > 0 {
		n := min(len(batch), maxGroup)
		start := time.Now()
		errs := db.commitGroup(batch[:n])
		last, took = n, time.Since(start)
		db.writerStats.group(n)
		for i, op := range batch[:n] {
			op.err = errs[i]
			close(op.done)
		}
		batch = batch[n:]
	}
	return last, took
}

// writeLoop commits batches until none is queued. One goroutine runs them
// back to back: handing each batch to a new goroutine put the writer
// behind the callers it had just woken, in the scheduler's queue.
func (db *DB) writeLoop(g *groupCommit) {
	var t *time.Timer
	for {
		n, took := db.runBatches(g)
		// Let the handlers that are ready to run queue their calls before
		// the next group is taken: under load a group grew from about 4
		// calls to about 5 (one commit's fixed cost shared by more), and
		// with nothing else to run this returns at once.
		runtime.Gosched()
		if n > 1 && db.pg == nil {
			if t == nil {
				t = time.NewTimer(time.Hour)
				t.Stop()
			}
			start := time.Now()
			g.gather(int64(n), min(gatherFor*took, maxGather), t)
			since(&db.writerStats.gather, start)
		}
		if g.head.Load() == nil && !g.resume() {
			return
		}
	}
}

// gatherFor is how long gather waits, in commits as long as the last;
// maxGather bounds it. With one commit's time, groups of 64 clients
// through HTTP grew from about 4 calls to about 7, with two to 13–30
// (four gave no more).
const (
	gatherFor = 2
	maxGather = 2 * time.Millisecond
)

// gather waits, after a group of n calls, until as many calls are queued
// again, or for d, whichever comes first. On SQLite
// every commit writes a page of each table and index it touched (eleven
// for a decided-now request: its row, its audit row, their indexes, the
// chain's head), however few rows it holds, and writing them is most of a
// small group's cost; the handlers that make the next calls run on the
// same cores as the writer, so without the wait a loaded gateway's groups
// stayed at the few calls that queued during one commit. The n callers
// just answered are the likeliest to call again; the wait ends as soon as
// n calls are queued, and never lasts longer than twice the commit before
// it (bounded by maxGather), so a lone caller or a slowing load waits at
// most two commits' time. It does not wait after a group of one (no sign of
// concurrent callers), and PostgreSQL's writer does not call it: there the
// calls queue while the writer waits for the server.
func (g *groupCommit) gather(n int64, d time.Duration, t *time.Timer) {
	if depthOf(g.head.Load()) >= n {
		return
	}
	if g.gathered == nil {
		g.gathered = make(chan struct{}, 1)
	}
	g.want.Store(n)
	if depthOf(g.head.Load()) >= n && g.want.CompareAndSwap(n, 0) {
		return // queued as want was set, before any caller saw it
	}
	t.Reset(d)
	select {
	case <-g.gathered:
		t.Stop()
	case <-t.C:
		if !g.want.CompareAndSwap(n, 0) {
			<-g.gathered // a caller took want just now and is sending
		}
	}
}

// depthOf is how many calls are queued, op the newest.
func depthOf(op *groupOp) int64 {
	if op == nil {
		return 0
	}
	return op.depth
}

// commitGroup runs batch in one transaction and says how each call in it
// ended: nil when its work committed. The calls run one after the other,
// without savepoints: failures are rare, and a savepoint per call cost two
// statements and a copy of every page it changed. When a call fails (and
// it is not alone), the transaction is rolled back and the batch runs again
// with each call in its own savepoint, so the failing one is rolled back
// alone and the others still commit.
func (db *DB) commitGroup(batch []*groupOp) []error {
	errs := make([]error, len(batch))
	live := 0
	for i, op := range batch {
		if errs[i] = op.ctx.Err(); errs[i] == nil {
			live++
		}
	}
	if live == 0 {
		return errs
	}
	// The group's own context: it must not end with any one caller's. It
	// cannot be cancelled at all: every statement run under a context that
	// can costs a watcher goroutine, and the waits are bounded already (the
	// write slot by writeWait, another process's lock by busy_timeout).
	ctx := context.Background()
	start := time.Now()
	unlock, err := db.lockWrite(ctx)
	since(&db.writerStats.slotWait, start)
	if err != nil {
		return failAll(errs, err)
	}
	defer unlock()
	defer since(&db.writerStats.busy, time.Now())
	try := db.tryGroup
	if db.pg != nil {
		try = db.tryGroupPG
	}
	if failed := try(ctx, batch, errs, false); failed != nil {
		if live == 1 {
			return failAll(errs, failed) // alone in its transaction: nothing else to keep
		}
		db.tryGroup(ctx, batch, errs, true)
	}
	return errs
}

// tryGroup runs the live calls of batch (errs[i] == nil) in one
// transaction and commits; it fills in errs. With savepoints each call
// runs in its own, and one that fails is rolled back alone. Without, the
// first call that fails stops it: everything is rolled back, errs are left
// as they were, and that call's error is returned.
func (db *DB) tryGroup(ctx context.Context, batch []*groupOp, errs []error, savepoints bool) (failed error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		failAll(errs, err)
		return nil
	}
	defer tx.Rollback()
	cursor, endCursor := db.openCursor(tx)
	defer endCursor()
	db.groupHead.resume(db, cursor)
	q := db.tx(tx) // fn's Querier, and the savepoint statements, prepared once
	var versions [2]int64
	if checkGroups() || anyPinned(batch, errs) {
		if versions, err = groupVersions(ctx, q); err != nil {
			failAll(errs, fmt.Errorf("group commit: %w", err))
			return nil
		}
		// Read after every call of the batch was decided: a call decided
		// on other counters is not run (ErrStaleBasis).
		markStale(batch, errs, versions)
	}
	ran := make([]error, len(batch))
	for i, op := range batch {
		if errs[i] != nil {
			continue
		}
		if !savepoints {
			if err := op.fn(q); err != nil {
				return err
			}
			continue
		}
		if _, err := q.ExecContext(ctx, `SAVEPOINT group_op`); err != nil {
			failAll(errs, fmt.Errorf("group commit: %w", err))
			return nil
		}
		var saved chainCursor
		if cursor != nil {
			saved = *cursor
		}
		mark := q.pga.mark()
		if ran[i] = op.fn(q); ran[i] != nil {
			if _, err := q.ExecContext(ctx, `ROLLBACK TO SAVEPOINT group_op`); err != nil {
				failAll(errs, fmt.Errorf("group commit: %w", err))
				return nil
			}
			if cursor != nil {
				*cursor = saved // the chain rows fn appended are gone with it
			}
			q.pga.rollback(mark) // and so are the rows kept for the commit
		}
		if _, err := q.ExecContext(ctx, `RELEASE SAVEPOINT group_op`); err != nil {
			failAll(errs, fmt.Errorf("group commit: %w", err))
			return nil
		}
	}
	if checkGroups() {
		if err := policyUnchanged(ctx, q, versions, savepoints); err != nil {
			failAll(errs, err)
			return nil
		}
	}
	// The group's audit rows join the hash chain as it commits (as in InTx).
	err = db.sealAudit(ctx, q)
	if err != nil {
		err = fmt.Errorf("group commit: %w", err)
	} else {
		before, ok := db.headerNow() // no one else can commit now: we hold the write lock
		if err = tx.Commit(); err == nil && ok {
			if after, ok := db.headerNow(); ok {
				db.groupHead.keep(cursor, before, after)
				db.vouchCommit(before, after)
			}
		}
	}
	for i := range errs {
		switch {
		case errs[i] != nil:
		case ran[i] != nil:
			errs[i] = ran[i] // rolled back to its savepoint
		default:
			errs[i] = err // nil when the commit went through
		}
	}
	return nil
}

// failAll gives err to every call of a batch that had no error yet.
func failAll(errs []error, err error) []error {
	for i := range errs {
		if errs[i] == nil {
			errs[i] = err
		}
	}
	return errs
}

// ErrGroupChangedPolicy fails a group whose functions changed grants or
// run-time rules (test builds only, see checkGroups).
var ErrGroupChangedPolicy = errors.New("storage: a GroupTx function changed grants or rules, which the group's commits are trusted not to (use InTx)")

// checkGroups says whether GroupTx checks that its functions leave the
// grants and rules counters alone: in test binaries, where a function
// that breaks the rule (a revoke in a group commit would be hidden from
// the grant cache, see owncommits.go) then fails every test that runs it;
// not while benchmarking, whose figures must be the production path's,
// and not in the gateway itself, where the check would cost two reads per
// group.
// A test binary is told by the flags its testing package registers
// (test.v, test.bench), so the gateway does not link that package.
var checkGroups = sync.OnceValue(func() bool {
	if flag.Lookup("test.v") == nil {
		return false
	}
	bench := flag.Lookup("test.bench")
	return bench == nil || bench.Value.String() == ""
})

// policyUnchanged fails a group whose grants or rules changed since its
// calls were decided (versions, read when it began). On PostgreSQL another
// replica's commit moves the counters mid-transaction too: there only a
// move by the group's own transaction fails it (see pgOwnChange), except
// with savepoints, whose subtransactions write under ids of their own.
func policyUnchanged(ctx context.Context, q txQuerier, versions [2]int64, savepoints bool) error {
	now, err := groupVersions(ctx, q)
	if err == nil && now != versions && q.db.pg != nil && !savepoints {
		var own bool
		if err = q.QueryRowContext(ctx, pgOwnChange).Scan(&own); err == nil && !own {
			return nil
		}
	}
	if err == nil && now != versions {
		err = fmt.Errorf("%w: grants_version %d → %d, rules_version %d → %d",
			ErrGroupChangedPolicy, versions[0], now[0], versions[1], now[1])
	}
	return err
}

// groupVersions reads the grants and rules counters.
func groupVersions(ctx context.Context, q Querier) (v [2]int64, err error) {
	err = q.QueryRowContext(ctx, `SELECT (SELECT n FROM grants_version WHERE id = 1), (SELECT n FROM `+
		RulesVersionTable+` WHERE id = 1)`).Scan(&v[0], &v[1])
	if err != nil {
		return v, fmt.Errorf("group commit: check the grants and rules counters: %w", err)
	}
	return v, nil
}
