-- What the Slack adapter has handled (a signed body's hash, a click's,
-- command's or event's own ids), kept past Slack's five-minute signature
-- window: a captured request sent again, to this replica or another, or
-- after a restart, is acknowledged and ignored. Rows older than the
-- window are deleted by the adapter.
CREATE TABLE slack_replays (
    key     TEXT COLLATE "C" PRIMARY KEY,
    seen_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX slack_replays_seen ON slack_replays (seen_at);
