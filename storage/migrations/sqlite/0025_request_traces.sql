-- The W3C traceparent of a traced request (telemetry on, the request
-- sampled), kept while it waits so that the spans of its later life (its
-- cards, the decision, the wait, the callback) join its trace on whichever
-- replica makes them. Untraced requests have no row: with telemetry off
-- nothing is written here.
CREATE TABLE request_traces (
    request_id  TEXT PRIMARY KEY REFERENCES requests (id) ON DELETE CASCADE,
    traceparent TEXT NOT NULL
);
