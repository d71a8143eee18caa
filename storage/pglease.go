// Freshness on PostgreSQL without a read per decision: a replica holds a
// lease on the change counters it knows, and every writer of grants or
// rules waits until each replica whose lease runs has installed its change
// (see docs/replicas.md, "Freshness", and pgacks.go for the writers).

package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The lease's timing. A replica renews its row every leaseRenew, setting
// it to run leaseTerm past the database's now(); it trusts its lease
// locally until leaseTerm − leaseMargin past the moment it sent the
// statement before the one that answered (see pgLease.hold), by its own
// monotonic clock. leaseMargin covers the drift between that clock and
// the database server's.
const (
	leaseTerm   = 2 * time.Second
	leaseRenew  = 500 * time.Millisecond
	leaseMargin = 200 * time.Millisecond
)

// leaseChannel is the NOTIFY channel of the counters' triggers (migration
// 0027); the payload is the schema whose counters moved.
const leaseChannel = "gateway_counters"

// renewLease writes this replica's row: its lease runs leaseTerm past
// now(), and it acknowledges the counters it installed ($3, $4); and reads
// the counters, with the statement's snapshot. Nothing it writes ever goes
// back (GREATEST), whatever the clocks or the order of two statements.
const renewLease = `INSERT INTO replica_leases AS l (id, expires_at, grants_acked, rules_acked)
VALUES ($1, now() + $2 * interval '1 millisecond', $3, $4)
ON CONFLICT (id) DO UPDATE SET expires_at = GREATEST(l.expires_at, EXCLUDED.expires_at),
  grants_acked = GREATEST(l.grants_acked, EXCLUDED.grants_acked),
  rules_acked = GREATEST(l.rules_acked, EXCLUDED.rules_acked)
RETURNING (SELECT n FROM grants_version WHERE id = 1), (SELECT n FROM ` + RulesVersionTable + ` WHERE id = 1)`

// dropStaleLeases removes the rows of replicas gone for a while (killed,
// or stopped without a clean end): a row whose lease ran out binds no
// writer, and this keeps the table to the replicas of the last minutes.
const dropStaleLeases = `DELETE FROM replica_leases WHERE expires_at < now() - interval '10 minutes'`

// dropLease ends this replica's lease at a clean stop.
const dropLease = `DELETE FROM replica_leases WHERE id = $1`

// pgLease is a replica's lease: the counters it installed and until when
// (monotonic) it may decide on them without reading them. HoldLease and
// this replica's writers (install) write it under mu; decisions read it
// with one atomic load.
type pgLease struct {
	state atomic.Pointer[leaseState] // nil: no lease (fail closed)

	mu      sync.Mutex    // held by the writers of state
	changed chan struct{} // closed at each change of held, then replaced
	held    bool
	// floor is the counters of this replica's own changes (install): a
	// lease granted later on counters read before such a change committed
	// still answers them, since the writer did not wait for this
	// replica's acknowledgement.
	floor [2]int64
}

// leaseState is what a decision reads in one load: the counters (by
// pgCounters) and the moment the lease stops vouching for them.
type leaseState struct {
	vals  [2]int64
	until time.Time
}

// current answers the counters while the lease runs: ok false when there
// is no lease or it ran out. The clock is read after the state, so a
// state installed before a decision started is judged at a moment after
// it started.
func (l *pgLease) current() (vals [2]int64, ok bool) {
	s := l.state.Load()
	if s == nil || !time.Now().Before(s.until) {
		return vals, false
	}
	return s.vals, true
}

// set installs s (nil: no lease) and tells the watchers when held
// changed. s's counters grow to those install took (see floor).
func (l *pgLease) set(s *leaseState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s != nil {
		s.vals = maxVals(s.vals, l.floor)
	}
	l.state.Store(s)
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	if held := s != nil; held != l.held {
		l.held = held
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// install raises the lease's counters to vals: this replica's own change,
// committed, is installed before its writer returns, without waiting for
// the notice, in the lease it holds now and in any it holds later.
func (l *pgLease) install(vals [2]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.floor = maxVals(l.floor, vals)
	if old := l.state.Load(); old != nil && maxVals(old.vals, vals) != old.vals {
		l.state.Store(&leaseState{vals: maxVals(old.vals, vals), until: old.until})
	}
}

// maxVals is the larger of each pair of counters.
func maxVals(a, b [2]int64) [2]int64 {
	return [2]int64{max(a[0], b[0]), max(a[1], b[1])}
}

// LeaseHeld says whether this replica holds a lease on the change
// counters (see HoldLease), and gives a channel closed at the next change
// of that. On SQLite it is always false.
func (db *DB) LeaseHeld() (held bool, changed <-chan struct{}) {
	if db.pg == nil {
		return false, make(chan struct{})
	}
	l := &db.pg.lease
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	_, ok := l.current()
	return l.held && ok, l.changed
}

// HoldLease keeps this replica's lease until ctx ends (gateway serve runs
// it on every replica): on a dedicated session it listens for the
// counters' notices and renews its row every leaseRenew, installing the
// counters each renewal reads and acknowledging them in the next one. It
// reconnects after a failure; from the failure until the new session's
// second renewal there is no lease, and decisions read the counters
// behind the read barrier. On SQLite it returns at once.
func (db *DB) HoldLease(ctx context.Context, log *slog.Logger) error {
	if db.pg == nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &db.pg.lease
	defer l.set(nil)
	fails := 0
	for ctx.Err() == nil {
		began := time.Now()
		held, err := db.holdLeaseOnce(ctx)
		l.set(nil)
		if ctx.Err() != nil {
			break
		}
		if held {
			fails = 0
			began = time.Now()
		}
		fails++
		if !db.Outage.Failed(log, "replica lease", began, err) && (fails == 1 || fails%30 == 0) {
			log.Warn("replica lease: session lost; decisions read the counters until it is back", "attempt", fails, "err", err)
		}
		sleepCtx(ctx, min(time.Duration(fails)*200*time.Millisecond, 5*time.Second))
	}
	return nil
}

// errLeaseEnded ends a session whose lease was given up (ctx ended).
var errLeaseEnded = errors.New("replica lease: ended")

// holdLeaseOnce runs one session: it says whether it ever held the lease.
// Any error of the session ends the lease at once and is returned.
func (db *DB) holdLeaseOnce(ctx context.Context) (held bool, err error) {
	conn, err := db.pg.connect(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		// No lease from the moment the session fails or stops, before the
		// wait for the server to close it.
		db.pg.lease.set(nil)
		if ctx.Err() != nil {
			// A clean stop: writers need not wait for this lease to run
			// out, since it was dropped locally first.
			dctx, cancel := context.WithTimeout(context.Background(), pgPingTimeout)
			_, _ = conn.Exec(dctx, dropLease, db.pg.origin)
			cancel()
		}
		closeSession(conn)
	}()
	// A lease must not be lost with the server's crash after it was seen:
	// its rows are durable before they are visible, whatever the server's
	// or the role's default.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+leaseChannel); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, dropStaleLeases); err != nil {
		return false, err
	}
	h := leaseHolder{db: db, conn: conn}
	for {
		if err := h.renew(ctx); err != nil {
			return held, err
		}
		held = held || db.pg.lease.state.Load() != nil
		if h.installed != h.acked {
			continue // acknowledge what was just installed, at once
		}
		if err := h.wait(ctx); err != nil {
			return held, err
		}
	}
}

// leaseHolder is one session of HoldLease.
type leaseHolder struct {
	db        *DB
	conn      *pgx.Conn
	installed [2]int64  // the counters installed locally (they only grow)
	acked     [2]int64  // the counters the last renewal acknowledged
	prevSent  time.Time // when the previous renewal on this session was sent; zero: none
	until     time.Time
}

// renew runs one renewal and installs what it read. The counters it
// reads come from its statement's snapshot, which may predate the
// statement's own commit, but not the previous statement's: that one
// committed before this one was sent. So the lease it grants is the one
// the previous renewal wrote (prevSent + leaseTerm − leaseMargin): any
// writer whose check ran after that commit waits for this replica's
// acknowledgement, and any whose commit came before this snapshot is in
// the counters read. The first renewal of a session grants nothing.
func (h *leaseHolder) renew(ctx context.Context) error {
	sent := time.Now()
	rctx, cancel := context.WithTimeout(ctx, leaseTerm)
	defer cancel()
	ack := h.installed
	var got [2]int64
	if err := h.conn.QueryRow(rctx, renewLease, h.db.pg.origin, leaseTerm.Milliseconds(), ack[0], ack[1]).Scan(&got[0], &got[1]); err != nil {
		return fmt.Errorf("replica lease: renew: %w", err)
	}
	h.acked = ack
	for i := range got {
		h.installed[i] = max(h.installed[i], got[i])
	}
	if !h.prevSent.IsZero() {
		h.until = later(h.until, h.prevSent.Add(leaseTerm-leaseMargin))
	}
	h.prevSent = sent
	if !h.until.IsZero() {
		h.db.pg.lease.set(&leaseState{vals: h.installed, until: h.until})
	}
	return nil
}

// wait waits for a notice of this schema's counters, or for the next
// renewal's time. Notices of another schema are skipped.
func (h *leaseHolder) wait(ctx context.Context) error {
	next := h.prevSent.Add(leaseRenew)
	for {
		wctx, cancel := context.WithDeadline(ctx, next)
		n, err := h.conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return errLeaseEnded
		case err != nil && wctx.Err() != nil && !h.conn.IsClosed():
			return nil // the renewal's time
		case err != nil:
			return fmt.Errorf("replica lease: listen: %w", err)
		case n.Channel == leaseChannel && n.Payload == h.db.pg.schema:
			// The counters moved: whatever else is buffered is answered
			// by the same renewal.
			h.drain()
			return nil
		}
	}
}

// drain drops the notices already received.
func (h *leaseHolder) drain() {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		if n, _ := h.conn.WaitForNotification(done); n == nil {
			return
		}
	}
}

// later is the later of two moments.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
