-- Ranked play and penalties (issue 22; docs/ratings.md "Ranked play",
-- docs/penalties.md): the standing columns of mm.ratings (season games,
-- placement games left, tier, division, progress, games below), the reason
-- of each rating history row, the settings and season of each rating pool,
-- the leaderboard's new columns, mm.report_result seeding first ratings,
-- moving the standing and counting good games; the offences recorded by
-- mm.accept_match (dodge), mm.expire_proposed_matches (acceptance timeout)
-- and mm.leave_match (leave); the cooldown checked by the ticket trigger;
-- mm.match_players.low_priority (and its archive) written by the tick.
-- The new tables and functions are src/sql/65_penalties.sql and
-- src/sql/75_ranked_play.sql, part of this upgrade as they are.

-- New columns come last, as in the fresh install; those NOT NULL with a
-- default are filled first and only then given it (a column added with a
-- default carries a "missing value" a fresh install has not).
ALTER TABLE mm.ratings ADD COLUMN season_games integer, ADD COLUMN placement_games_left integer,
	ADD COLUMN tier text, ADD COLUMN division integer, ADD COLUMN tier_progress float8,
	ADD COLUMN games_below integer;
UPDATE mm.ratings SET season_games = 0, placement_games_left = 0, games_below = 0;
ALTER TABLE mm.ratings ALTER COLUMN season_games SET DEFAULT 0, ALTER COLUMN season_games SET NOT NULL,
	ALTER COLUMN placement_games_left SET DEFAULT 0, ALTER COLUMN placement_games_left SET NOT NULL,
	ALTER COLUMN games_below SET DEFAULT 0, ALTER COLUMN games_below SET NOT NULL;
COMMENT ON COLUMN mm.ratings.placement_games_left IS
	'Placement games the player still has to play in the pool (0: placed; see the pool''s placement settings)';
COMMENT ON COLUMN mm.ratings.tier IS
	'The visible tier over the hidden rating (the pool''s tiers); NULL while provisional or without tiers';

ALTER TABLE mm.rating_history ADD COLUMN reason text;
UPDATE mm.rating_history SET reason = CASE WHEN match_id IS NULL THEN 'decay' ELSE 'match' END;
ALTER TABLE mm.rating_history ALTER COLUMN reason SET DEFAULT 'match', ALTER COLUMN reason SET NOT NULL;
COMMENT ON TABLE mm.rating_history IS
'Every change of a stored rating: one row per player per rated match (match_id), and one per decay step, import, seed or season reset (reason)';

ALTER TABLE mm.match_players ADD COLUMN low_priority boolean;
UPDATE mm.match_players SET low_priority = false;
ALTER TABLE mm.match_players ALTER COLUMN low_priority SET DEFAULT false,
	ALTER COLUMN low_priority SET NOT NULL;
COMMENT ON COLUMN mm.match_players.low_priority IS
	'True when the player''s ticket was in the queue''s low-priority pool (penalties) when the match formed';
ALTER TABLE mm.match_players_archive ADD COLUMN low_priority boolean;
UPDATE mm.match_players_archive SET low_priority = false;
ALTER TABLE mm.match_players_archive ALTER COLUMN low_priority SET DEFAULT false,
	ALTER COLUMN low_priority SET NOT NULL;

-- Ranked play's settings per rating pool (placements, tiers, seeding,
-- season reset: validated by mm.configure_rating_pool, 75_ranked_play.sql)
-- and its current season.  A pool <pool>.<role> without a row of its own
-- uses <pool>'s.  A reference table on Citus.
CREATE TABLE mm.rating_pools (
	pool text PRIMARY KEY,
	settings jsonb NOT NULL DEFAULT '{}',
	-- the season running (mm.start_season), NULL before the first
	season text,
	season_started_at timestamptz,
	updated_at timestamptz NOT NULL
);
COMMENT ON TABLE mm.rating_pools IS
	'Per rating pool: ranked play''s settings (placements, tiers, seeding, season reset) and the season running';
GRANT SELECT ON TABLE mm.rating_pools TO mm_director, mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.rating_pools TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.rating_pools', '');
