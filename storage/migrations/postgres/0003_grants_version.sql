-- PostgreSQL mirror of migrations/sqlite/0003_grants_version.sql: a counter
-- bumped by every change that can alter which grant matches a request, so
-- a cache of grants (policy.GrantCache) can tell with one read whether any
-- replica changed grants since it filled. last_used_at is not among the
-- columns: touching a grant changes nothing a lookup sees.
CREATE TABLE grants_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  BIGINT NOT NULL
);
INSERT INTO grants_version (id, n) VALUES (1, 0);
CREATE FUNCTION grants_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE grants_version SET n = n + 1 WHERE id = 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER grants_version_insert AFTER INSERT ON grants
FOR EACH ROW EXECUTE FUNCTION grants_version_bump();
CREATE TRIGGER grants_version_delete AFTER DELETE ON grants
FOR EACH ROW EXECUTE FUNCTION grants_version_bump();
CREATE TRIGGER grants_version_update
AFTER UPDATE OF channel, sender_id, capability, target, anchor, expires_at, revoked_at ON grants
FOR EACH ROW EXECUTE FUNCTION grants_version_bump();
