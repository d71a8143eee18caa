package storage

// BarrierReads counts the reads of the change counters db's read barrier
// ran (PostgreSQL; 0 on SQLite).
func BarrierReads(db *DB) int64 {
	if db.pg == nil {
		return 0
	}
	return db.pg.versions.reads.Load()
}

// LeaseTerm is how long a lease runs past its renewal.
const LeaseTerm = leaseTerm

// LeaseCounters is what a decision on db would take from its lease now:
// ok false when it holds none that runs.
func LeaseCounters(db *DB) (vals [2]int64, ok bool) {
	if db.pg == nil {
		return vals, false
	}
	return db.pg.lease.current()
}
