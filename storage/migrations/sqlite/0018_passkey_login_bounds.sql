-- Sign-ins with a passkey begin without a login: each begin stores a
-- challenge. source is the address it came from, so the live ones can be
-- counted per source and in all (passkeys.MaxLoginsPerSource,
-- passkeys.MaxLogins); the index serves both counts and the deletion of
-- expired challenges.
ALTER TABLE passkey_ceremonies ADD COLUMN source TEXT NOT NULL DEFAULT '';
CREATE INDEX passkey_ceremonies_live ON passkey_ceremonies (purpose, source, expires_at);
CREATE INDEX passkey_ceremonies_expires ON passkey_ceremonies (expires_at);
