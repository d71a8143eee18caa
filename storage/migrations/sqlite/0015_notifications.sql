-- [[policy.notify]]: one row per (request, delivery) to tell that the
-- request was allowed. Written in the transaction of the request's
-- outcome, so nothing is lost; a dispatcher per delivery sends the due
-- rows, retries failures with backoff (next_at, attempts) and deletes a
-- row in the transaction of its "notified" audit row, so nothing is sent
-- twice by a dispatcher that saw it done.
CREATE TABLE notifications (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id  TEXT NOT NULL REFERENCES requests (id) ON DELETE CASCADE,
    delivery    TEXT NOT NULL,           -- log | web | telegram | slack | webhook
    url         TEXT NOT NULL DEFAULT '', -- the webhook's, for "webhook"
    pattern     INTEGER NOT NULL,        -- the [[policy.notify]] that matched first, from 0
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     TEXT NOT NULL,
    last_error  TEXT NOT NULL DEFAULT '',
    UNIQUE (request_id, delivery, url)
);
CREATE INDEX notifications_due ON notifications (delivery, next_at);
