-- Session grants (issue 26): a request may name the agent's session (Claude
-- Code's, Codex's, Gemini CLI's session id); "Allow this session" writes a
-- grant that matches only requests of the same agent and session. Ordinary
-- grants have both empty.
ALTER TABLE requests ADD COLUMN session_id TEXT NOT NULL DEFAULT '';
ALTER TABLE grants ADD COLUMN agent TEXT NOT NULL DEFAULT '';
ALTER TABLE grants ADD COLUMN session_id TEXT NOT NULL DEFAULT '';
