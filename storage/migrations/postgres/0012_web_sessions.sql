-- Web page logins (issue 24): every session starts from a one-time login
-- link printed by `gateway serve` or `gateway login`. Only hashes of the
-- link and session tokens are stored; a link is used once (used_at), a
-- session ends at expires_at or when ended_at is set (logout,
-- `gateway logout --all`), on every replica at once.
CREATE TABLE web_login_links (
    hash       TEXT COLLATE "C" PRIMARY KEY,
    web_user   TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    used_at    TEXT COLLATE "C"
);
CREATE TABLE web_sessions (
    hash       TEXT COLLATE "C" PRIMARY KEY,
    web_user   TEXT NOT NULL,
    via        TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    ended_at   TEXT COLLATE "C"
);
