-- A call_id is an idempotency key of its caller: the agent's own token or
-- one child token. Scoped to the agent alone, a child token that replayed
-- its parent's call_id got the parent's request back (decided under the
-- parent's wider profile, a person's Allow once spent twice). The agent's
-- own requests have no token_id ('' here).
DROP INDEX requests_call;
CREATE UNIQUE INDEX requests_call ON requests (agent, COALESCE(token_id, ''), call_id);
