-- Guarded routes (issue 38): a grant written by a decision on a route with
-- quorum > 1 or step_up carries that route's key (config.Route's, "2:…"),
-- and only such a grant lifts that route's requests; every other grant has
-- route ''. The agent column (0014) now also holds the agent an ordinary
-- grant was asked for ('' = every agent of the principal, seed 000's meaning).
ALTER TABLE grants ADD COLUMN route TEXT NOT NULL DEFAULT '';
