-- PostgreSQL mirror of migrations/sqlite/0015_notifications.sql.
CREATE TABLE notifications (
    id          BIGSERIAL PRIMARY KEY,
    request_id  TEXT NOT NULL REFERENCES requests (id) ON DELETE CASCADE,
    delivery    TEXT NOT NULL,
    url         TEXT NOT NULL DEFAULT '',
    pattern     INTEGER NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     TEXT COLLATE "C" NOT NULL,
    last_error  TEXT NOT NULL DEFAULT '',
    UNIQUE (request_id, delivery, url)
);
CREATE INDEX notifications_due ON notifications (delivery, next_at);
