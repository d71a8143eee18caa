-- PostgreSQL mirror of migrations/sqlite/0006_agent_tokens.sql: child
-- tokens, stored hashed, with the path of their ancestors; and the token a
-- request came with.
CREATE TABLE agent_tokens (
    id           TEXT COLLATE "C" PRIMARY KEY,
    hash         TEXT NOT NULL UNIQUE,
    agent        TEXT NOT NULL,
    parent_id    TEXT COLLATE "C",
    path         TEXT COLLATE "C" NOT NULL,
    name         TEXT NOT NULL DEFAULT '',
    profile      TEXT NOT NULL,
    max_requests INTEGER,
    used         INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT COLLATE "C" NOT NULL,
    expires_at   TEXT COLLATE "C" NOT NULL,
    revoked_at   TEXT COLLATE "C",
    created_by   TEXT NOT NULL
);
CREATE INDEX agent_tokens_parent ON agent_tokens (parent_id);
CREATE INDEX agent_tokens_path ON agent_tokens (agent, path text_pattern_ops);
ALTER TABLE requests ADD COLUMN token_id TEXT;
ALTER TABLE requests ADD COLUMN token_name TEXT NOT NULL DEFAULT '';
