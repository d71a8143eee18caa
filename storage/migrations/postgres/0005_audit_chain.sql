-- The audit trail becomes a hash chain (see storage/audit.go): every row
-- gets a position (seq, contiguous) and hash = sha256(previous hash ‖
-- canonical encoding of the row). Rows written before this migration keep
-- seq = id and no hash: they predate the chain, which starts with a genesis
-- row appended when the database is next opened. agent and capability are
-- copies of the row's detail, indexed for the audit filters.
ALTER TABLE audit ADD COLUMN seq BIGINT;
ALTER TABLE audit ADD COLUMN hash TEXT;
ALTER TABLE audit ADD COLUMN agent TEXT;
ALTER TABLE audit ADD COLUMN capability TEXT;
UPDATE audit SET seq = id;
CREATE UNIQUE INDEX audit_seq ON audit (seq);
-- Rows appended by a transaction not yet committed: sealed at its commit.
CREATE INDEX audit_unsealed ON audit (id) WHERE seq IS NULL;
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_agent ON audit (agent, seq);
-- The head of the chain: the last sealed row. Sealing locks it, so the
-- appends of every process (every replica) form one chain.
CREATE TABLE audit_chain (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_chain (id, seq, hash) SELECT 1, COALESCE(MAX(id), 0), '' FROM audit;
