-- Replays (suggestions, POST /v1/policy/simulate) read the newest requests
-- of a window, and a window's person-denied ones: by creation time.
CREATE INDEX requests_created ON requests (created_at);
