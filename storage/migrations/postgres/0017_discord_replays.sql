-- The interaction ids the Discord adapter has handled, kept past the
-- five-minute window of a signed interaction: one posted again, to this
-- replica or another, or after a restart, is refused. Rows older than the
-- window are deleted by the adapter. Until now they were kept in
-- slack_replays under a "discord|" prefix: those still in the window move
-- here.
CREATE TABLE discord_replays (
    interaction_id TEXT COLLATE "C" PRIMARY KEY,
    seen_at        TEXT COLLATE "C" NOT NULL
);
CREATE INDEX discord_replays_seen ON discord_replays (seen_at);
INSERT INTO discord_replays (interaction_id, seen_at)
    SELECT substr(key, 9), seen_at FROM slack_replays WHERE key LIKE 'discord|%';
DELETE FROM slack_replays WHERE key LIKE 'discord|%';
