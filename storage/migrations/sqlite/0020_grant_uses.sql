-- How many decisions each grant allowed (issue 40, the grant ledger),
-- added up off the decision's path by policy.UseCounter.
ALTER TABLE grants ADD COLUMN uses INTEGER NOT NULL DEFAULT 0;
