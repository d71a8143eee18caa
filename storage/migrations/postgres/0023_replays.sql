-- What each messenger adapter has handled (a signed body's hash, a
-- click's, command's, event's or interaction's own id), kept past the
-- platform's signature window: a captured request sent again, to this
-- replica or another, or after a restart, is acknowledged and ignored.
-- One table for every messenger, keyed by its name; rows older than the
-- window are deleted by the adapter. The rows of slack_replays and
-- discord_replays move here.
CREATE TABLE replays (
    messenger TEXT COLLATE "C" NOT NULL,
    key       TEXT COLLATE "C" NOT NULL,
    seen_at   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (messenger, key)
);
CREATE INDEX replays_seen ON replays (messenger, seen_at);
INSERT INTO replays (messenger, key, seen_at) SELECT 'slack', key, seen_at FROM slack_replays;
INSERT INTO replays (messenger, key, seen_at) SELECT 'discord', interaction_id, seen_at FROM discord_replays;
DROP TABLE slack_replays;
DROP TABLE discord_replays;
