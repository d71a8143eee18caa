-- Every audit row paid for an entry in audit_at (its time), and no query
-- used it: a time filter walks the chain in seq order, which is the order
-- the rows were written in, and the other filters have an index of their
-- own (audit_request, audit_agent). Each decided-now request writes an
-- audit row, so the index cost every one of them a page write.
DROP INDEX audit_at;
