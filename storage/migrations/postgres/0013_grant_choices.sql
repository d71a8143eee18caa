-- PostgreSQL mirror of migrations/sqlite/0013_grant_choices.sql.
-- Fewer taps (issue 26): what a pending request's card offers besides
-- Allow once, fixed when the request is created, so a tap is checked
-- against what that card showed. JSON lists of strings.
-- scopes: what Allow always may grant, narrowest first.
ALTER TABLE requests ADD COLUMN scopes TEXT NOT NULL DEFAULT '[]';
-- allow_for: the whiles of the Allow for buttons ("1h").
ALTER TABLE requests ADD COLUMN allow_for TEXT NOT NULL DEFAULT '[]';
