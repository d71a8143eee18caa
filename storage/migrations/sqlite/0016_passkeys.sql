-- Passkeys and step-up (issue 25). A web user's passkeys: the COSE public
-- key stays after a removal (removed_at), so the audit rows it signed can
-- be verified forever. sign_count only moves forward (a clone gives it
-- away). A ceremony is one WebAuthn challenge, spent once (used_at).
CREATE TABLE passkeys (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    web_user      TEXT NOT NULL,
    user_handle   TEXT NOT NULL,
    credential_id TEXT NOT NULL UNIQUE,
    public_key    TEXT NOT NULL,
    sign_count    INTEGER NOT NULL DEFAULT 0,
    credential    TEXT NOT NULL,
    name          TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    last_used_at  TEXT,
    removed_at    TEXT
);
CREATE INDEX passkeys_user ON passkeys (web_user);
CREATE TABLE passkey_ceremonies (
    id           TEXT PRIMARY KEY,
    purpose      TEXT NOT NULL,
    web_user     TEXT NOT NULL DEFAULT '',
    request_id   TEXT NOT NULL DEFAULT '',
    choice       TEXT NOT NULL DEFAULT '',
    content      TEXT NOT NULL DEFAULT '',
    nonce        TEXT NOT NULL DEFAULT '',
    session_data TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used_at      TEXT
);
-- What a request's route asked for an allow: "" (a tap) or "passkey".
ALTER TABLE requests ADD COLUMN step_up TEXT NOT NULL DEFAULT '';
