-- PostgreSQL mirror of migrations/sqlite/0007_routes.sql.
-- Routes, quorum, escalation and reminders (issue 12). What a request's
-- route said is stored with the request, so a restart or a config change
-- does not change who may decide it.
ALTER TABLE requests ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
-- JSON list of "channel:user" (empty: each channel's own approvers)
ALTER TABLE requests ADD COLUMN approvers TEXT NOT NULL DEFAULT '[]';
-- JSON list of the counted approvals {by, approver, decision, channel, at}
ALTER TABLE requests ADD COLUMN approvals TEXT NOT NULL DEFAULT '[]';
-- bumped by every change a card shows besides the status (an approval, an
-- escalation); approvals are counted with UPDATE … WHERE rev = <read>
ALTER TABLE requests ADD COLUMN rev BIGINT NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN escalate_after_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN escalate_to TEXT NOT NULL DEFAULT '[]';
-- due times, NULL when none is due (also once the request is finished)
ALTER TABLE requests ADD COLUMN escalate_at TEXT COLLATE "C";
ALTER TABLE requests ADD COLUMN escalated_at TEXT COLLATE "C";
ALTER TABLE requests ADD COLUMN remind_every_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN remind_at TEXT COLLATE "C";
CREATE INDEX requests_escalate_at ON requests (escalate_at) WHERE escalate_at IS NOT NULL;
CREATE INDEX requests_remind_at ON requests (remind_at) WHERE remind_at IS NOT NULL;
