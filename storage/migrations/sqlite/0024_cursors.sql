-- Positions in the audit chain (its seq) that a leader's loop has handled,
-- by name: how far the grant use counts were added up ("grant_uses"), and
-- which passkey changes each messenger was told of ("passkeys:telegram").
-- The loop moves its cursor in the transaction of what it did, so a crash
-- neither loses nor repeats a step. Also the week of the last grant
-- review pushed ("grant_review", a Unix time).
CREATE TABLE cursors (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
-- The grant use counts were added up in memory until now: counting starts
-- at the chain's head.
INSERT INTO cursors (name, value) SELECT 'grant_uses', seq FROM audit_chain WHERE id = 1;
