-- Child tokens (AINL's restrictive-only capability grant): an agent, or a
-- child token, makes a narrower token for a sub-agent. The plain token is
-- never stored, only its SHA-256. path lists the token's ancestors and
-- itself, root first ("/tabc/tdef/"), so a revoke reaches every descendant
-- in one statement and an authentication checks every ancestor in one.
CREATE TABLE agent_tokens (
    id           TEXT PRIMARY KEY,
    hash         TEXT NOT NULL UNIQUE,
    agent        TEXT NOT NULL,
    parent_id    TEXT,
    path         TEXT NOT NULL,
    name         TEXT NOT NULL DEFAULT '',
    profile      TEXT NOT NULL,
    max_requests INTEGER,
    used         INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    revoked_at   TEXT,
    created_by   TEXT NOT NULL
);
CREATE INDEX agent_tokens_parent ON agent_tokens (parent_id);
CREATE INDEX agent_tokens_path ON agent_tokens (agent, path);
-- The child token a request came with (NULL: the agent's own token), and
-- its name for the card's Agent line.
ALTER TABLE requests ADD COLUMN token_id TEXT;
ALTER TABLE requests ADD COLUMN token_name TEXT NOT NULL DEFAULT '';
