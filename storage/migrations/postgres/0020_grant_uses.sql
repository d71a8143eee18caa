-- PostgreSQL mirror of migrations/sqlite/0020_grant_uses.sql.
ALTER TABLE grants ADD COLUMN uses BIGINT NOT NULL DEFAULT 0;
