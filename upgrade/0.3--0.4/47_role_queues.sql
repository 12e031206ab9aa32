-- Role queues (issue 20; docs/queues-and-tickets.md, docs/ratings.md,
-- docs/lifecycle.md, docs/metrics.md): the role each player was given and
-- whether it was autofilled (mm.match_players and its archive), the
-- autofill protection per queue and player, per-role rating pools in
-- mm.report_result (which also counts the protection down), the players'
-- roles in mm.get_assignment, per-role waits in mm.queue_statistics and
-- mm.role_stats.

-- The new columns come last, as in the fresh install.  autofilled is filled
-- for the rows already there and only then given its default and NOT NULL:
-- a column added with a default would carry a "missing value" that a fresh
-- install has not (pg_dump --binary-upgrade shows it).
ALTER TABLE mm.match_players ADD COLUMN role text, ADD COLUMN autofilled boolean;
UPDATE mm.match_players SET autofilled = false;
ALTER TABLE mm.match_players ALTER COLUMN autofilled SET DEFAULT false,
	ALTER COLUMN autofilled SET NOT NULL;
COMMENT ON COLUMN mm.match_players.role IS
	'The role the player was given in a role queue; NULL in a queue without roles';
COMMENT ON COLUMN mm.match_players.autofilled IS
	'True when the role was outside the player''s list of roles (autofill)';
ALTER TABLE mm.match_players_archive ADD COLUMN role text, ADD COLUMN autofilled boolean;
UPDATE mm.match_players_archive SET autofilled = false;
ALTER TABLE mm.match_players_archive ALTER COLUMN autofilled SET NOT NULL;

-- Autofill protection (role queues): a player the tick autofilled gets
-- games_left = the queue's autofill.protect_games; the tick never autofills
-- a player whose games_left is above 0, and mm.report_result counts it down
-- for each reported match the player played without being autofilled.
CREATE TABLE mm.autofill_protection (
	queue text NOT NULL,
	player_id text NOT NULL,
	games_left integer NOT NULL
		CONSTRAINT autofill_protection_games_left CHECK (games_left OPERATOR(pg_catalog.>=) 0),
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (queue, player_id)
);
COMMENT ON TABLE mm.autofill_protection IS
	'Per queue and player: how many more reported matches keep a recently autofilled player from being autofilled again';
GRANT SELECT ON TABLE mm.autofill_protection TO mm_director, mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.autofill_protection TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.autofill_protection', '');
