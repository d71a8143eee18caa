-- Web Push (issue 40). The VAPID key pair of the whole gateway (one row,
-- shared by every replica): generated on first start, never logged.
CREATE TABLE push_vapid (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    public_key  TEXT NOT NULL,
    private_key TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
-- A web user's browsers that turned notifications on: the push service's
-- endpoint and the keys payloads are encrypted to (RFC 8291).
CREATE TABLE push_subscriptions (
    id           TEXT PRIMARY KEY,
    web_user     TEXT NOT NULL,
    endpoint     TEXT NOT NULL UNIQUE,
    p256dh       TEXT NOT NULL,
    auth         TEXT NOT NULL,
    device       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_push_at TEXT
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (web_user);
-- What each device was last pushed about a request (its status), so a
-- retried delivery never pushes one device twice.
CREATE TABLE push_sent (
    request_id      TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    status          TEXT NOT NULL,
    sent_at         TEXT NOT NULL,
    PRIMARY KEY (request_id, subscription_id)
);
-- The one-time decision tokens of notification actions (only their
-- SHA-256): bound to a request at one revision, a web user and a
-- decision; spent once (spent_at), refused after expires_at.
CREATE TABLE push_actions (
    hash       TEXT PRIMARY KEY,
    request_id TEXT NOT NULL,
    rev        INTEGER NOT NULL,
    web_user   TEXT NOT NULL,
    decision   TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    spent_at   TEXT
);
CREATE INDEX push_actions_expires ON push_actions (expires_at);
