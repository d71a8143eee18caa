-- PostgreSQL mirror of migrations/sqlite/0019_web_push.sql.
CREATE TABLE push_vapid (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    public_key  TEXT NOT NULL,
    private_key TEXT NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL
);
CREATE TABLE push_subscriptions (
    id           TEXT COLLATE "C" PRIMARY KEY,
    web_user     TEXT NOT NULL,
    endpoint     TEXT COLLATE "C" NOT NULL UNIQUE,
    p256dh       TEXT NOT NULL,
    auth         TEXT NOT NULL,
    device       TEXT NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL,
    last_push_at TEXT COLLATE "C"
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (web_user);
CREATE TABLE push_sent (
    request_id      TEXT COLLATE "C" NOT NULL,
    subscription_id TEXT COLLATE "C" NOT NULL,
    status          TEXT NOT NULL,
    sent_at         TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (request_id, subscription_id)
);
CREATE TABLE push_actions (
    hash       TEXT COLLATE "C" PRIMARY KEY,
    request_id TEXT COLLATE "C" NOT NULL,
    rev        BIGINT NOT NULL,
    web_user   TEXT NOT NULL,
    decision   TEXT NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    spent_at   TEXT COLLATE "C"
);
CREATE INDEX push_actions_expires ON push_actions (expires_at);
