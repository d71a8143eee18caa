-- Leases of the replicas that decide on change counters they already know
-- (see docs/replicas.md, "Freshness"). Each live replica keeps a row: until
-- when its lease runs by the database's clock, and the counters it has
-- installed locally and acknowledged. A writer of grants or rules waits,
-- after its commit, until every row whose lease runs has acknowledged its
-- counters, or its lease has run out. A time here is the server's own
-- clock (timestamptz, compared with now()): this table is PostgreSQL's
-- alone, and no time in it is ever read back as a date.
CREATE TABLE replica_leases (
    id           TEXT PRIMARY KEY,
    expires_at   TIMESTAMPTZ NOT NULL,
    grants_acked BIGINT NOT NULL,
    rules_acked  BIGINT NOT NULL
);
-- Every bump of a counter, by the gateway or by raw SQL on grants (whose
-- triggers bump grants_version), tells the replicas' lease sessions at
-- commit; the payload is the schema, so gateways in two schemas of one
-- database skip each other's. PostgreSQL sends one notice per transaction
-- for equal payloads, however many rows changed.
CREATE FUNCTION counters_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gateway_counters', TG_TABLE_SCHEMA);
    PERFORM set_config('gateway.counters_bumped', 'on', true);
    RETURN NULL;
END
$$;
CREATE TRIGGER grants_version_notify AFTER UPDATE ON grants_version
FOR EACH STATEMENT EXECUTE FUNCTION counters_notify();
CREATE TRIGGER rules_version_notify AFTER UPDATE ON rules_version
FOR EACH STATEMENT EXECUTE FUNCTION counters_notify();
