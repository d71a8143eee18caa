-- PostgreSQL mirror of migrations/sqlite/0016_passkeys.sql.
CREATE TABLE passkeys (
    id            BIGSERIAL PRIMARY KEY,
    web_user      TEXT NOT NULL,
    user_handle   TEXT NOT NULL,
    credential_id TEXT COLLATE "C" NOT NULL UNIQUE,
    public_key    TEXT NOT NULL,
    sign_count    BIGINT NOT NULL DEFAULT 0,
    credential    TEXT NOT NULL,
    name          TEXT NOT NULL,
    created_at    TEXT COLLATE "C" NOT NULL,
    last_used_at  TEXT COLLATE "C",
    removed_at    TEXT COLLATE "C"
);
CREATE INDEX passkeys_user ON passkeys (web_user);
CREATE TABLE passkey_ceremonies (
    id           TEXT COLLATE "C" PRIMARY KEY,
    purpose      TEXT NOT NULL,
    web_user     TEXT NOT NULL DEFAULT '',
    request_id   TEXT NOT NULL DEFAULT '',
    choice       TEXT NOT NULL DEFAULT '',
    content      TEXT NOT NULL DEFAULT '',
    nonce        TEXT NOT NULL DEFAULT '',
    session_data TEXT NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL,
    expires_at   TEXT COLLATE "C" NOT NULL,
    used_at      TEXT COLLATE "C"
);
ALTER TABLE requests ADD COLUMN step_up TEXT NOT NULL DEFAULT '';
