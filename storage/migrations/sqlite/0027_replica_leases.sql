-- PostgreSQL only (replica leases, see migrations/postgres/0027): one
-- SQLite file has one process that decides, whose freshness costs no
-- query. The number is kept so both engines' versions stay the same.
SELECT 1;
