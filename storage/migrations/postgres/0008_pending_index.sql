-- The expiry sweep, the pending listing and its count ask only for
-- pending requests (status = 'pending', written as a literal so the
-- planner can use this index). Indexing every request by status made each
-- request decided on arrival, the common case, pay for an index entry
-- nothing reads; a partial index holds the pending ones alone.
DROP INDEX requests_status;
CREATE INDEX requests_pending ON requests (expires_at) WHERE status = 'pending';
