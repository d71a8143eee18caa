// Decisions checked at commit on PostgreSQL: a decided-now request may be
// decided on the latest read of the change counters, without waiting for
// one that started after it, when its group's transaction reads the
// counters again and commits it only if they did not move (see
// docs/replicas.md, "Freshness").

package storage

import (
	"errors"
	"sync"
)

// ErrStaleBasis fails a call whose decision was made on change counters
// that moved before its group's transaction read them: its work is not
// kept, and it must be decided again, behind the read barrier.
var ErrStaleBasis = errors.New("storage: grants or rules changed since the counters the decision was made on; decide it again")

// Basis records what a decision was made on when it may take the latest
// read of the change counters instead of waiting for one that started
// after it (ArrivedOn). The zero Basis is ready; one Basis serves one
// decision. On SQLite, and for a decision that asked no counter, it stays
// unused: the decision needs no check. A decision made on a pinned Basis
// is kept only by a transaction that reads the same counters after the
// decision started (GroupExec, GroupExecAudit): every change committed
// before the decision started is then counted in them, so equal counters
// prove the decision saw every such change.
type Basis struct {
	mu    sync.Mutex
	p     *pgVersions // whose counters it took, once taken
	vals  [2]int64    // by pgCounters, when pinned
	state basisState
}

type basisState uint8

const (
	basisUnused basisState = iota // no counter asked yet
	basisPinned                   // vals, from a read that may predate the decision: to check
	basisFresh                    // the read barrier or the lease answered: nothing to check
	basisMixed                    // counters of two databases were asked: it cannot be checked
)

// take answers counter i from the latest read that succeeded, and pins
// the decision to that read: every counter the decision asks comes from
// it. It answers nothing (ok false: the caller waits behind the barrier)
// for a nil Basis, before any read succeeded, after the barrier answered
// the decision once (a decision on counters of two moments would be
// checked against neither), and for a second database's counters.
func (b *Basis) take(p *pgVersions, i int) (n int64, ok bool) {
	if b == nil {
		return 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == basisUnused:
		p.mu.Lock()
		last, closed := p.last, p.closed
		p.mu.Unlock()
		b.p = p
		if last == nil || closed {
			b.state = basisFresh
			return 0, false
		}
		b.vals, b.state = last.vals, basisPinned
		return b.vals[i], true
	case b.p != p:
		if b.state == basisPinned {
			b.state = basisMixed
		}
		return 0, false
	case b.state == basisPinned:
		return b.vals[i], true
	default:
		return 0, false
	}
}

// fresh marks a decision answered by the lease (which vouches for its
// counters as a read after the decision started would): it needs no check
// at commit. It says no for a Basis pinned to a read already, which stays
// pinned, and is checked. A nil Basis is always fresh.
func (b *Basis) fresh(p *pgVersions) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case basisUnused:
		b.p, b.state = p, basisFresh
		return true
	case basisFresh:
		return true
	default:
		return false
	}
}

// pinnedOn says whether a decision made on b must be checked, and
// against which counters: ok true and vals when b is pinned to db's read.
// A Basis that cannot be checked against db (pinned to another database's
// counters, or to two) gives ErrStaleBasis: the decision is made again.
func (b *Basis) pinnedOn(db *DB) (vals [2]int64, ok bool, err error) {
	if b == nil {
		return vals, false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == basisMixed, b.state == basisPinned && (db.pg == nil || b.p != &db.pg.versions):
		return vals, false, ErrStaleBasis
	case b.state == basisPinned:
		return b.vals, true, nil
	default:
		return vals, false, nil
	}
}

// Pinned says whether a decision made on b rests on a read of the
// counters that may predate it, and so is kept only if its transaction
// finds them unchanged.
func (b *Basis) Pinned() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == basisPinned || b.state == basisMixed
}

// markStale fails, with ErrStaleBasis, the live calls of batch whose
// decision was pinned to counters other than now (read in the group's
// transaction, after every call of it was decided). It says whether any
// was.
func markStale(batch []*groupOp, errs []error, now [2]int64) bool {
	stale := false
	for i, op := range batch {
		if errs[i] == nil && op.first.pinned && op.first.versions != now {
			errs[i] = ErrStaleBasis
			stale = true
		}
	}
	return stale
}

// anyPinned says whether a live call of batch was decided on a pinned
// Basis, so that its transaction must read the counters.
func anyPinned(batch []*groupOp, errs []error) bool {
	for i, op := range batch {
		if errs[i] == nil && op.first.pinned {
			return true
		}
	}
	return false
}
