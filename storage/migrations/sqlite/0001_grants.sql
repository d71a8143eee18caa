-- Grants written by "Allow always" (or by an admin): per principal
-- (channel, sender_id), per capability, per target pattern.
CREATE TABLE grants (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    channel       TEXT NOT NULL,
    sender_id     TEXT NOT NULL,
    capability    TEXT NOT NULL,
    target        TEXT NOT NULL,
    -- anchor: the literal part of the target pattern that lookups index on
    -- (see policy.Normalizer.Anchor).
    anchor        TEXT NOT NULL,
    granted_at    TEXT NOT NULL,
    expires_at    TEXT,
    granted_by    TEXT NOT NULL,
    last_used_at  TEXT,
    revoked_at    TEXT,
    revoke_reason TEXT,
    request_id    TEXT
);
-- The exact lookup of a decision: only unrevoked grants are indexed.
CREATE INDEX grants_lookup ON grants (channel, sender_id, capability, anchor) WHERE revoked_at IS NULL;
-- The active scan (listing, prune).
CREATE INDEX grants_active ON grants (revoked_at, expires_at);
CREATE INDEX grants_principal ON grants (channel, sender_id, id);

-- Append-only audit trail: actor, event, ids; never argument values.
CREATE TABLE audit (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    event      TEXT NOT NULL,
    request_id TEXT,
    grant_id   INTEGER,
    detail     TEXT
);
CREATE INDEX audit_request ON audit (request_id);
