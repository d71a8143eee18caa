-- Rules added at run time (API, CLI, web page, Slack), next to the
-- [[policy.rules]] of the config file. Within an owner ("org" for an
-- unscoped rule, "user" for a scoped one) they are evaluated by position,
-- 1 first, and before the file's rules. Positions are kept dense (1..n)
-- by the store, which renumbers in the same transaction as each change.
CREATE TABLE policy_rules (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    owner      TEXT NOT NULL,
    position   INTEGER NOT NULL,
    capability TEXT NOT NULL,
    target     TEXT NOT NULL,
    action     TEXT NOT NULL,
    sender_id  TEXT NOT NULL DEFAULT '',
    agent      TEXT NOT NULL DEFAULT '',
    channel    TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX policy_rules_order ON policy_rules (owner, position);
-- Bumped by every change to policy_rules, first thing in its transaction
-- (which also serializes rule changes): a decider reads the rules again
-- only when it moved, so a change from any process or replica takes effect
-- on the very next decision.
CREATE TABLE rules_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO rules_version (id, n) VALUES (1, 0);
