-- PostgreSQL mirror of migrations/sqlite/0025_request_traces.sql.
CREATE TABLE request_traces (
    request_id  TEXT PRIMARY KEY REFERENCES requests (id) ON DELETE CASCADE,
    traceparent TEXT NOT NULL
);
