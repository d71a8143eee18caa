// Freshness on PostgreSQL: the change counters read for all decisions at
// once, behind a read barrier (see docs/replicas.md, "Freshness").

package storage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCounters are the change counters a PostgreSQL DB reads in one query,
// in this order. A version source over another table reads its own.
var pgCounters = []string{"grants_version", RulesVersionTable}

// pgCountersQuery reads every counter of pgCounters in one round trip.
const pgCountersQuery = `SELECT (SELECT n FROM grants_version WHERE id = 1), (SELECT n FROM ` + RulesVersionTable + ` WHERE id = 1)`

// pgReadTimeout bounds one read of the counters; its waiters fail then
// (closed: a decision without a fresh version is an error, never a guess).
const pgReadTimeout = 5 * time.Second

// pgVersions is the read barrier of a PostgreSQL DB. A decision must see
// every change whose commit returned before it started, on any replica,
// so it needs a read of the counters that started after it arrived. At
// most one read is in flight; whoever arrives meanwhile waits for the
// next, which starts as soon as the one in flight ends and serves them
// all. A read that started after a caller arrived serves it as well as
// one of its own would: under load, one round trip per read time serves
// every decision, instead of one per decision.
type pgVersions struct {
	db *DB
	// query reads the counters into r; nil: the database (read). Tests
	// put their own.
	query func(ctx context.Context, r *pgRead) error

	mu      sync.Mutex
	last    *pgRead // the latest read that succeeded
	running *pgRead // the read in flight, if any
	next    *pgRead // the read the callers who came during running wait for
	conn    *pgx.Conn
	closed  bool

	reads atomic.Int64 // the reads run, for tests and figures
}

// pgRead is one read of the counters.
type pgRead struct {
	started time.Time // taken before the query was sent
	done    chan struct{}
	vals    [2]int64 // by pgCounters
	err     error
}

// counter returns the value of table as of a read that started after
// arrival, waiting for one if needed; with a Basis that takes the latest
// read instead (see Basis.take), that read's. While this replica holds
// its lease (see pglease.go) it answers from the lease, with no read:
// every change whose commit returned before now is installed in it.
func (p *pgVersions) counter(ctx context.Context, i int, arrival time.Time, b *Basis) (int64, error) {
	if vals, ok := p.leased(b); ok {
		return vals[i], nil
	}
	if n, ok := b.take(p, i); ok {
		return n, nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, fmt.Errorf("grants version: database closed")
	}
	if l := p.last; l != nil && l.started.After(arrival) {
		p.mu.Unlock()
		return l.vals[i], nil
	}
	r := p.running
	if r == nil || !r.started.After(arrival) {
		// The read in flight (if any) started too early for this caller:
		// the next one serves it.
		if p.next == nil {
			p.next = &pgRead{done: make(chan struct{})}
		}
		r = p.next
		if p.running == nil {
			p.startLocked()
		}
	}
	p.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return 0, fmt.Errorf("grants version: %w", ctx.Err())
	}
	if r.err != nil {
		return 0, r.err
	}
	return r.vals[i], nil
}

// leased answers the counters from this replica's lease, when it runs
// and b (if any) was not pinned to a read already: a decision is made on
// counters of one kind, checked at commit or not.
func (p *pgVersions) leased(b *Basis) (vals [2]int64, ok bool) {
	if p.db == nil || p.db.pg == nil {
		return vals, false
	}
	if vals, ok = p.db.pg.lease.current(); !ok {
		return vals, false
	}
	return vals, b.fresh(p)
}

// startLocked makes next the read in flight and runs it. p.mu is held.
func (p *pgVersions) startLocked() {
	r := p.next
	p.next, p.running = nil, r
	r.started = time.Now()
	go p.run(r)
}

// run reads the counters on the barrier's own session, then starts the
// next read if callers came meanwhile.
func (p *pgVersions) run(r *pgRead) {
	p.reads.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), pgReadTimeout)
	defer cancel()
	if p.query != nil {
		r.err = p.query(ctx, r)
	} else {
		r.err = p.read(ctx, r)
	}
	p.mu.Lock()
	p.running = nil
	if r.err == nil {
		p.last = r
	}
	if p.next != nil && !p.closed {
		p.startLocked()
	}
	p.mu.Unlock()
	close(r.done)
}

// read runs the query; a failed session is dropped, and the next read
// opens another. Only run calls it, one at a time, so conn needs no lock
// beyond the one Close takes.
func (p *pgVersions) read(ctx context.Context, r *pgRead) error {
	p.mu.Lock()
	conn, closed := p.conn, p.closed
	p.mu.Unlock()
	if closed {
		return fmt.Errorf("grants version: database closed")
	}
	if conn == nil {
		c, err := p.db.pg.connect(ctx)
		if err != nil {
			return fmt.Errorf("grants version: %w", err)
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			closeSession(c)
			return fmt.Errorf("grants version: database closed")
		}
		p.conn, conn = c, c
		p.mu.Unlock()
	}
	if err := conn.QueryRow(ctx, pgCountersQuery).Scan(&r.vals[0], &r.vals[1]); err != nil {
		p.mu.Lock()
		if p.conn == conn {
			p.conn = nil
		}
		p.mu.Unlock()
		closeSession(conn)
		return fmt.Errorf("grants version: %w", err)
	}
	return nil
}

// close ends the session; reads after it fail.
func (p *pgVersions) close() {
	p.mu.Lock()
	p.closed = true
	running, next, conn := p.running, p.next, p.conn
	p.conn, p.next = nil, nil
	p.mu.Unlock()
	if next != nil {
		next.err = fmt.Errorf("grants version: database closed")
		close(next.done)
	}
	if running != nil {
		<-running.done
	}
	if conn != nil {
		closeSession(conn)
	}
}

// arrivalKey is the context key of Arrived.
type arrivalKey struct{}

// Arrived records in ctx when a decision started, so that the version
// sources it asks (the rules' and the grants') may answer it from one
// read that started after that, rather than one each after each question.
func Arrived(ctx context.Context, t time.Time) context.Context {
	return ArrivedOn(ctx, t, nil)
}

// ArrivedOn is Arrived for a decision that may be made on the latest read
// of the counters instead of one that started after t, recording what it
// was made on in b (see Basis); b nil: it may not.
func ArrivedOn(ctx context.Context, t time.Time, b *Basis) context.Context {
	return &arrivedCtx{Context: ctx, t: t, basis: b}
}

// arrivedCtx is what Arrived returns: one allocation per decision, where
// context.WithValue makes two (its own, and the time's to hold it as an
// interface value).
type arrivedCtx struct {
	context.Context
	t     time.Time
	basis *Basis
}

// Value answers arrivalKey with itself, which an interface value holds
// without an allocation of its own.
func (c *arrivedCtx) Value(key any) any {
	if _, ok := key.(arrivalKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// arrival is when the decision of ctx started (see Arrived), or now, and
// the Basis it records what it was decided on in, if any.
func arrival(ctx context.Context) (time.Time, *Basis) {
	if a, ok := ctx.Value(arrivalKey{}).(*arrivedCtx); ok {
		return a.t, a.basis
	}
	return time.Now(), nil
}
