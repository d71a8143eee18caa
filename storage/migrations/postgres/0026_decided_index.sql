-- The listing of finished requests, newest decision first, walked
-- requests_decided, which held every request: each request decided on
-- arrival, the common case, paid for an entry in it. Those are decided at
-- the instant they are created (decided_at = created_at, the same text),
-- so the listing finds them, in the same order, through requests_created;
-- this index keeps only the requests decided at another time (by a
-- person, a quorum, expiry or cancellation), and the listing merges the
-- two (approvals.selectRecent).
DROP INDEX requests_decided;
CREATE INDEX requests_decided ON requests (decided_at) WHERE decided_at != created_at;
