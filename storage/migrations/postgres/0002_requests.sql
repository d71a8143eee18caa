-- PostgreSQL mirror of migrations/sqlite/0002_requests.sql.
-- Approval requests. Argument values are never stored: arg_keys only.
CREATE TABLE requests (
    id           TEXT PRIMARY KEY,
    agent        TEXT NOT NULL,
    call_id      TEXT NOT NULL,
    status       TEXT NOT NULL,
    decision     TEXT,
    outcome      TEXT NOT NULL,
    reason       TEXT NOT NULL,
    blocked_by   TEXT,
    vaglio       TEXT,
    capability   TEXT NOT NULL,
    target       TEXT NOT NULL,
    grant_target TEXT NOT NULL,
    autonomy     TEXT NOT NULL,
    channel      TEXT NOT NULL,
    sender_id    TEXT NOT NULL,
    intent       TEXT NOT NULL,
    executor     TEXT NOT NULL,
    summary      TEXT NOT NULL,
    arg_keys     TEXT NOT NULL,
    trace        TEXT NOT NULL,
    notify       TEXT NOT NULL,
    callback_url TEXT NOT NULL,
    decided_by   TEXT NOT NULL DEFAULT '',
    decided_at   TEXT COLLATE "C",
    created_at   TEXT COLLATE "C" NOT NULL,
    expires_at   TEXT COLLATE "C" NOT NULL,
    grant_id     BIGINT,
    -- when the grant of Allow always ends (a preview while pending)
    grant_expires_at TEXT COLLATE "C",
    note         TEXT NOT NULL DEFAULT ''
);
-- Idempotency: one request per (agent, call_id).
CREATE UNIQUE INDEX requests_call ON requests (agent, call_id);
-- Expiry sweep and pending listings.
CREATE INDEX requests_status ON requests (status, expires_at);
CREATE INDEX requests_decided ON requests (decided_at);

-- One row per (request, messenger): the card's message reference and the
-- status it last showed. A dispatcher drives every row to show its
-- request's status, so a failed send is retried, also after a restart.
CREATE TABLE cards (
    request_id   TEXT NOT NULL REFERENCES requests (id) ON DELETE CASCADE,
    channel      TEXT NOT NULL,
    ref          TEXT,
    shown_status TEXT,
    attempts     INTEGER NOT NULL DEFAULT 0,
    -- bumped when the card is reset for a fresh post (/pending), so a send
    -- in flight does not record its message over the reset
    gen          BIGINT NOT NULL DEFAULT 0,
    next_at      TEXT COLLATE "C" NOT NULL,
    last_error   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (request_id, channel)
);
CREATE INDEX cards_due ON cards (channel, next_at);
CREATE INDEX cards_ref ON cards (channel, ref);
