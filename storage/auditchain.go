package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
)

// The audit trail is a hash chain. Every row has a position, seq (1, 2, 3 …
// with no gap), and
//
//	hash = hex(sha256(previous row's hash as 32 bytes ‖ canonical encoding of this row))
//
// where the canonical encoding is the netstrings ("<length>:<bytes>,") of
// at, actor, event, request_id, grant_id (decimal, "" when none) and detail
// (the stored JSON text, "" when none), as they are stored and as
// `gateway audit --format jsonl` prints them, so anyone can recompute the
// chain from an export. The first row of the chain is a genesis row
// (previous hash: 32 zero bytes) or, once the prune job has removed older
// rows, a checkpoint row that holds the hash of the last removed row.
//
// Appends from every transaction, process and replica join one chain: a
// row is inserted without seq and hash, and the transaction seals its rows
// just before it commits (DB.InTx): it locks the chain's head row
// (audit_chain, FOR UPDATE on PostgreSQL; SQLite admits one writer
// anyway), numbers and hashes its rows after the head and moves the head.
// Taking the head last, after every other lock of the transaction, means
// it cannot deadlock against a transaction that waits for a row this one
// holds; holding it until commit means rows commit in seq order, so a
// reader that polls seq > last never skips one.
//
// On SQLite, whose one writer holds the whole database from BEGIN, a row
// appended through InTx or GroupTx is numbered and hashed at once (one
// insert, no rewrite at commit): the same chain, at half the cost. On
// PostgreSQL such a row is kept in memory until the commit and inserted
// then, numbered and hashed, with the transaction's other rows and the
// head's move in one statement (see pgaudit.go): a group commit's rows
// cost one round trip together.

const insertAuditChained = `INSERT INTO audit (at, actor, event, request_id, grant_id, detail, agent, capability, seq, hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// appendChained inserts a row already numbered and hashed after the
// chain's head, and moves the head: what sealAudit does at commit, done at
// once where no other writer can come between (SQLite). Within a
// transaction begun by InTx or GroupTx the head is read once and written
// back once, by sealAudit (see chainCursor); elsewhere it is read and
// written on every row.
func appendChained(ctx context.Context, q txQuerier, e AuditEvent, detail []byte, agent, capability string) error {
	c := q.db.cursor.Load()
	if c == nil || c.tx != q.tx {
		c = &chainCursor{tx: q.tx} // this row's alone: written back below
	}
	if !c.loaded {
		seq, prev, err := q.db.lockHead(ctx, q)
		if err != nil {
			return err
		}
		c.seq, c.hash, c.loaded = seq, prev, true
	}
	at := FormatTime(e.At)
	grant := ""
	if e.GrantID != 0 {
		grant = strconv.FormatInt(e.GrantID, 10)
	}
	hash, err := rowHash(c.hash, at, e.Actor, e.Event, e.RequestID, grant, detail)
	if err != nil {
		return err
	}
	seq := c.seq + 1
	if _, err := q.ExecContext(ctx, insertAuditChained, at, e.Actor, e.Event, nullString(e.RequestID), nullInt(e.GrantID),
		nullBytes(detail), nullString(agent), nullString(capability), seq, hash); err != nil {
		return err
	}
	c.seq, c.hash, c.dirty = seq, hash, true
	if q.db.cursor.Load() != c {
		return c.flush(ctx, q)
	}
	return nil
}

// chainCursor is the audit chain's head as the open SQLite write
// transaction tx has moved it. The rows appended in tx are numbered and
// hashed at once (appendChained), but the head row (audit_chain) is read at
// the first of them and written back once, when sealAudit runs just before
// the commit: two statements per transaction instead of two per row. It
// lives in DB.cursor while InTx or GroupTx hold the write slot; a savepoint
// rolled back restores the copy taken when it began.
type chainCursor struct {
	tx     *sql.Tx
	loaded bool // seq and hash are the head's (read from its row, or known: see groupHead)
	dirty  bool // seq and hash moved since
	seq    int64
	hash   string
	// clean says no committed row is left unsealed: the last commit was
	// the group writer's own, whose seal left none (see groupHead).
	clean bool
	// others says sealAudit sealed rows appended outside the cursor, and
	// moved the head past it.
	others bool
	// stmts are the cached statements bound to tx (see txQuerier.bound).
	stmts map[*sql.Stmt]*sql.Stmt
}

// flush writes the cursor back to the head row, when it moved.
func (c *chainCursor) flush(ctx context.Context, q Querier) error {
	if !c.dirty {
		return nil
	}
	if _, err := q.ExecContext(ctx, moveHead, c.seq, c.hash); err != nil {
		return err
	}
	c.dirty = false
	return nil
}

// openCursor starts the chain cursor of tx, a SQLite write transaction of
// InTx or GroupTx (which hold the write slot); the returned function ends
// it, whether tx committed or not.
func (db *DB) openCursor(tx *sql.Tx) (c *chainCursor, end func()) {
	if db.writeLock == nil {
		return nil, func() {}
	}
	c = &chainCursor{tx: tx}
	db.cursor.Store(c)
	return c, func() { db.cursor.CompareAndSwap(c, nil) }
}

// canonical is the encoding of a row the hash covers (see the top of this
// file): netstrings of the stored texts.
func canonical(at, actor, event, requestID, grantID, detail string) []byte {
	fields := [...]string{at, actor, event, requestID, grantID, detail}
	n := 0
	for _, f := range fields {
		n += len(f) + 12 // its length in digits (at most 10), ':' and ','
	}
	b := make([]byte, 0, n)
	for _, f := range fields {
		b = appendNetstring(b, f)
	}
	return b
}

// appendNetstring appends f to b as a netstring ("<length>:<bytes>,").
func appendNetstring[T string | []byte](b []byte, f T) []byte {
	b = strconv.AppendInt(b, int64(len(f)), 10)
	b = append(b, ':')
	b = append(b, f...)
	return append(b, ',')
}

// chainHash is the hash of a row whose predecessor's hash is prev ("" for
// the genesis row: 32 zero bytes).
func chainHash(prev string, canon []byte) (string, error) {
	b := make([]byte, sha256.Size, sha256.Size+len(canon))
	return hashAfter(prev, append(b, canon...))
}

// rowHash is chainHash(prev, canonical(at, actor, event, requestID,
// grantID, detail)) in one buffer: the group writer hashes every row it
// appends while it holds the write lock.
func rowHash(prev, at, actor, event, requestID, grantID string, detail []byte) (string, error) {
	fields := [...]string{at, actor, event, requestID, grantID}
	n := sha256.Size + len(detail) + 12
	for _, f := range fields {
		n += len(f) + 12 // as in canonical
	}
	b := make([]byte, sha256.Size, n)
	for _, f := range fields {
		b = appendNetstring(b, f)
	}
	return hashAfter(prev, appendNetstring(b, detail))
}

// hashAfter hashes b, whose first sha256.Size bytes are zero and stand for
// the predecessor's hash, prev (they stay zero when prev is "": the genesis
// row), and the rest is the row's canonical encoding; the hash in hex.
func hashAfter(prev string, b []byte) (string, error) {
	if prev != "" && !decodeHash(b[:sha256.Size], prev) {
		return "", fmt.Errorf("audit chain: malformed hash %q", prev)
	}
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:]), nil
}

// decodeHash decodes the hex s into dst, false unless s is exactly
// len(dst) bytes in hex (either case), as hex.DecodeString and a length
// check would say, without copying s.
func decodeHash(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (e *AuditEvent) canonical() []byte {
	return canonical(e.at, e.Actor, e.Event, e.RequestID, e.grant, e.detail)
}

const (
	selectUnsealed = `SELECT id, at, actor, event, COALESCE(request_id, ''), grant_id, COALESCE(detail, '')
FROM audit WHERE seq IS NULL ORDER BY id`
	selectHead       = `SELECT seq, hash FROM audit_chain WHERE id = 1`
	sealRow          = `UPDATE audit SET seq = $1, hash = $2 WHERE id = $3`
	moveHead         = `UPDATE audit_chain SET seq = $1, hash = $2 WHERE id = 1`
	selectHeadLocked = selectHead + ` FOR UPDATE`
)

// lockHead reads the chain's head, locking it until tx ends on PostgreSQL
// (SQLite's write transaction holds the whole database already).
func (db *DB) lockHead(ctx context.Context, q Querier) (seq int64, hash string, err error) {
	query := selectHead
	if db.Dialect == Postgres {
		query = selectHeadLocked
	}
	err = q.QueryRowContext(ctx, query).Scan(&seq, &hash)
	return seq, hash, err
}

// sealAudit numbers and hashes the rows appended in tx (and any committed
// row left unsealed), after the chain's head. DB.InTx calls it just before
// every commit.
func (db *DB) sealAudit(ctx context.Context, q txQuerier) error {
	if q.pga != nil && len(q.pga.rows) > 0 {
		return db.sealPG(ctx, q)
	}
	tx := q.tx
	c := db.cursor.Load()
	if c != nil && c.tx == tx {
		// The rows appended in tx are sealed already; move the head past
		// them first, so the rows sealed below follow them.
		if err := c.flush(ctx, q); err != nil {
			return fmt.Errorf("audit chain head: %w", err)
		}
		if c.clean {
			return nil // and no committed row is unsealed (see groupHead)
		}
	}
	pending, err := scanUnsealed(ctx, q)
	if err != nil || len(pending) == 0 {
		return err
	}
	if c != nil && c.tx == tx {
		c.others = true
	}
	seq, prev, err := db.lockHead(ctx, q)
	if err != nil {
		return fmt.Errorf("audit chain head: %w", err)
	}
	if db.Dialect == Postgres {
		// Read again under the lock: another replica may have sealed a
		// committed row we saw unsealed.
		if pending, err = scanUnsealed(ctx, q); err != nil {
			return err
		}
	}
	for i := range pending {
		e := &pending[i]
		seq++
		if prev, err = chainHash(prev, e.canonical()); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, sealRow, seq, prev, e.ID); err != nil {
			return fmt.Errorf("seal audit row: %w", err)
		}
	}
	if _, err := q.ExecContext(ctx, moveHead, seq, prev); err != nil {
		return fmt.Errorf("audit chain head: %w", err)
	}
	return nil
}

func scanUnsealed(ctx context.Context, q Querier) ([]AuditEvent, error) {
	rows, err := q.QueryContext(ctx, selectUnsealed)
	if err != nil {
		return nil, fmt.Errorf("seal audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		var e AuditEvent
		var grant sql.NullInt64
		if err := rows.Scan(&e.ID, &e.at, &e.Actor, &e.Event, &e.RequestID, &grant, &e.detail); err != nil {
			return nil, fmt.Errorf("seal audit: %w", err)
		}
		if grant.Valid {
			e.grant = strconv.FormatInt(grant.Int64, 10)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ensureGenesis starts the chain with its genesis row when nothing was ever
// sealed: on a new database and on one migrated from before the chain
// (whose older rows it counts as legacy_rows).
func (db *DB) ensureGenesis(ctx context.Context) error {
	return db.InTx(ctx, func(q Querier) error {
		seq, hash, err := db.lockHead(ctx, q)
		if err != nil {
			return err
		}
		if hash != "" {
			return nil
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit WHERE seq IS NOT NULL AND hash IS NULL`).Scan(&n); err != nil {
			return err
		}
		detail := map[string]any{"schema": SchemaVersion()}
		if n > 0 {
			detail["legacy_rows"] = n
			detail["legacy_last_seq"] = seq
		}
		return AppendAudit(ctx, q, AuditEvent{Actor: "gateway", Event: AuditGenesis, Detail: detail})
	})
}
