-- Ranked play over the stored ratings: a pool's settings and their errors
-- (mm.configure_rating_pool), imports (mm.set_rating, mm.set_ratings) and
-- first ratings seeded from a ticket attribute, placements, tiers and
-- divisions with demotion protection (mm.rating_standing, moved by
-- mm.report_result), seasons with a soft reset (mm.start_season,
-- mm.season_ratings, mm.season_leaderboard), per role, the player's view
-- (mm.get_player_ratings), the analysts' figures (mm.placement_progress,
-- mm.tier_distribution) and who may call what.  Every time is explicit
-- (2042-03-01).
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\i sql/include/try.sql
SELECT last_value AS ticket_seq_last, is_called AS ticket_seq_called FROM mm.tickets_id_seq \gset
SELECT last_value AS match_seq_last, is_called AS match_seq_called FROM mm.matches_id_seq \gset
SELECT last_value AS history_seq_last, is_called AS history_seq_called FROM mm.rating_history_id_seq \gset

-- ===================================================================
-- The tables: dumped, placed on Citus, readable by whom
-- ===================================================================
SELECT c.relname, c.oid = ANY (e.extconfig) AS dumped, s.placement, s.distribution_column
  FROM pg_class c CROSS JOIN pg_extension e
  LEFT JOIN mm.sharding() s ON s.table_name = c.oid
 WHERE e.extname = 'matchmaking' AND c.relnamespace = 'mm'::regnamespace
   AND c.relname IN ('rating_pools', 'seasons', 'season_ratings')
 ORDER BY c.relname;
SELECT column_name, data_type, is_nullable, column_default
  FROM information_schema.columns
 WHERE table_schema = 'mm' AND table_name = 'ratings' AND ordinal_position > 10
 ORDER BY ordinal_position;
SELECT r.role, has_function_privilege(r.role, 'mm.set_rating(text, text, float8, float8, float8, timestamptz)', 'EXECUTE') AS import,
	   has_function_privilege(r.role, 'mm.start_season(text, text, timestamptz)', 'EXECUTE') AS season,
	   has_function_privilege(r.role, 'mm.configure_rating_pool(text, jsonb, timestamptz)', 'EXECUTE') AS configure,
	   has_function_privilege(r.role, 'mm.get_player_ratings(text)', 'EXECUTE') AS player_view,
	   has_table_privilege(r.role, 'mm.season_leaderboard', 'SELECT') AS seasons_board
  FROM unnest(ARRAY['mm_admin', 'mm_director', 'mm_analyst', 'mm_ticker', 'mm_frontend']) r(role);

-- ===================================================================
-- Settings: every error names its JSON path
-- ===================================================================
SELECT mm.create_queue('rp_duel', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
                                    "rating": {"system": "glicko2", "pool": "rp_ranked"}}');
SELECT s AS settings, pg_temp.try(format('SELECT mm.configure_rating_pool(%L, %L)', 'rp_ranked', s)) AS result
  FROM unnest(ARRAY[
	'[]',
	'{"tier": []}',
	'{"seed": {}}',
	'{"seed": {"attribute": ""}}',
	'{"seed": {"attribute": "skill", "rd": 0}}',
	'{"placement": {"rd": 50}}',
	'{"placement": {"games": 2.5}}',
	'{"placement": {"games": 5, "each_season": "yes"}}',
	'{"tiers": []}',
	'{"tiers": [{"name": "Gold"}]}',
	'{"tiers": [{"name": "Gold", "min": "1500"}]}',
	'{"tiers": [{"name": "Bronze", "min": 0}, {"name": "Bronze", "min": 10}]}',
	'{"tiers": [{"name": "Bronze", "min": 0}, {"name": "Silver", "min": 0}]}',
	'{"tiers": [{"name": "Bronze", "min": 0, "divisions": 11}, {"name": "Silver", "min": 10}]}',
	'{"tiers": [{"name": "Bronze", "min": 0}, {"name": "Silver", "min": 10, "divisions": 2}]}',
	'{"demotion": {"games": 2}}',
	'{"tiers": [{"name": "Bronze", "min": 0}], "demotion": {}}',
	'{"tiers": [{"name": "Bronze", "min": 0}], "demotion": {"margin": -1}}',
	'{"season_reset": {"share": 1.5}}',
	'{"season_reset": {"shares": 0.5}}'
  ]) s;
SELECT pg_temp.try($$SELECT mm.configure_rating_pool('rp_nowhere', '{}')$$) AS unknown_pool,
	   pg_temp.try($$SELECT mm.configure_rating_pool(NULL, '{}')$$) AS null_pool,
	   pg_temp.try($$SELECT mm.configure_rating_pool('rp_ranked', '{}', 'infinity')$$) AS infinite_now;

-- Bronze [0, 1400) in two divisions, Silver [1400, 1600) in two, Gold from
-- 1600; placed after 2 games or an RD of at most 100; a division is lost
-- after falling 50 below it or 2 games in a row below it; first ratings
-- from the ticket's "skill" with RD 200.
SELECT mm.configure_rating_pool('rp_ranked', '{
	"seed": {"attribute": "skill", "rd": 200},
	"placement": {"games": 2, "rd": 100},
	"tiers": [{"name": "Bronze", "min": 0, "divisions": 2},
	          {"name": "Silver", "min": 1400, "divisions": 2},
	          {"name": "Gold", "min": 1600}],
	"demotion": {"margin": 50, "games": 2},
	"season_reset": {"share": 0.5, "rd": 250}}', '2042-03-01') IS NOT NULL AS configured;

-- ===================================================================
-- The standing rules, one case at a time (mm.rating_standing)
-- ===================================================================
SELECT c.note, s.*
  FROM (VALUES
	('provisional: 1 game of 2, RD 150', 1500::float8, 150::float8, 1, NULL::text, NULL::integer, 0, true),
	('placed by RD 90 after 1 game', 1500, 90, 1, NULL, NULL, 0, true),
	('placed by games, rating 1450', 1450, 150, 2, NULL, NULL, 0, true),
	('below every tier: the lowest division', -20, 90, 5, NULL, NULL, 0, true),
	('promotion at once: Silver 2 to Gold', 1650, 90, 5, 'Silver', 2, 0, true),
	('1480 in Silver 1 (from 1500): held, 1 game below', 1480, 90, 5, 'Silver', 1, 0, true),
	('1480 in Silver 1, the 2nd game below: dropped', 1480, 90, 5, 'Silver', 1, 1, true),
	('1440 in Silver 1: more than 50 below, dropped', 1440, 90, 5, 'Silver', 1, 0, true),
	('1440 in Silver 1 without protection: placed', 1440, 90, 5, 'Silver', 1, 0, false),
	('back above the bound: the count restarts', 1510, 90, 5, 'Silver', 1, 1, true),
	('a division the settings no longer have: placed', 1510, 90, 5, 'Platinum', 1, 0, true)
  ) c(note, value, uncertainty, games, tier, division, below, protect)
 CROSS JOIN LATERAL mm.rating_standing(mm.rating_pool_settings('rp_ranked'), c.value, c.uncertainty, c.games,
									   c.games, c.tier, c.division, c.below, c.protect) s;

-- ===================================================================
-- Seeding and placements through real matches
-- ===================================================================
CREATE FUNCTION pg_temp.play(queue text, winner text, loser text, at timestamptz,
							 winner_skill float8 DEFAULT NULL, loser_skill float8 DEFAULT NULL)
RETURNS TABLE (player_id text, rating_before float8, rating_after float8)
LANGUAGE plpgsql AS $$
DECLARE
	mid bigint;
	winner_team text;
BEGIN
	PERFORM mm.create_ticket(queue, jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('id', winner,
		'attributes', jsonb_strip_nulls(jsonb_build_object('skill', winner_skill))))), at);
	PERFORM mm.create_ticket(queue, jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('id', loser,
		'attributes', jsonb_strip_nulls(jsonb_build_object('skill', loser_skill))))), at);
	PERFORM mm.tick(queue, at + interval '1 second');
	SELECT mp.match_id, mp.team INTO mid, winner_team FROM mm.match_players mp
	 WHERE mp.queue = play.queue AND mp.player_id = winner ORDER BY mp.match_id DESC LIMIT 1;
	RETURN QUERY SELECT r.player_id, round(r.rating_before::numeric, 3)::float8, round(r.rating_after::numeric, 3)::float8
	  FROM mm.report_result(mid, jsonb_build_object(winner_team, 1, CASE winner_team WHEN 'a' THEN 'b' ELSE 'a' END, 2),
							at + interval '10 minutes') r;
END
$$;
-- rp_p1 says skill 1700, rp_p2 says nothing: rp_p1 starts at 1700 (RD 200),
-- rp_p2 at the default 1500 (RD 350)
SELECT * FROM pg_temp.play('rp_duel', 'rp_p1', 'rp_p2', '2042-03-01 10:00', 1700, NULL);
SELECT player_id, reason, match_id IS NOT NULL AS by_match, round(rating_before::numeric, 3) AS before,
	   round(rating_after::numeric, 3) AS after, round(rd_after::numeric, 3) AS rd_after
  FROM mm.rating_history WHERE pool = 'rp_ranked' ORDER BY id;
-- a second game does not seed again: the ticket's skill is ignored
SELECT * FROM pg_temp.play('rp_duel', 'rp_p1', 'rp_p2', '2042-03-01 11:00', 100, 100);
SELECT count(*) FILTER (WHERE reason = 'seed') AS seeds FROM mm.rating_history WHERE pool = 'rp_ranked';
-- both placed after 2 games; the leaderboard ranks them with their tiers
SELECT player_id, rank, provisional, placement_games_left, tier, division, round(tier_progress::numeric, 3) AS progress,
	   games, season_games
  FROM mm.leaderboard WHERE pool = 'rp_ranked' ORDER BY player_id;
-- a newcomer is provisional: listed without a rank, the placed ones ranked
-- among themselves
SELECT * FROM pg_temp.play('rp_duel', 'rp_p3', 'rp_p4', '2042-03-01 12:00');
SELECT player_id, rank, provisional, placement_games_left, tier
  FROM mm.leaderboard WHERE pool = 'rp_ranked' ORDER BY rank NULLS LAST, player_id;
SELECT * FROM mm.placement_progress WHERE pool = 'rp_ranked';
-- highest tier first (tier_index: the position in the settings' tiers,
-- 1 = Bronze), division 1 first; the view's own order
SELECT tier_index, tier, division, players, round(share::numeric, 3) AS share
  FROM mm.tier_distribution WHERE pool = 'rp_ranked';

-- Demotion protection through reports: rp_p1 is imported at 1505 (Silver
-- 1, from 1500), then loses twice to rp_p5: the first game below holds the
-- division (within 50 of it), the second drops it (2 games in a row).
SELECT mm.set_rating('rp_p1', 'rp_ranked', 1505, 100, 0.06, '2042-03-01 13:00');
SELECT mm.set_rating('rp_p5', 'rp_ranked', 1505, 100, 0.06, '2042-03-01 13:00');
SELECT player_id, round(rating) AS rating, tier, division, games_below FROM mm.ratings
 WHERE pool = 'rp_ranked' AND player_id IN ('rp_p1', 'rp_p5') ORDER BY player_id;
SELECT * FROM pg_temp.play('rp_duel', 'rp_p5', 'rp_p1', '2042-03-01 14:00');
SELECT player_id, round(rating) AS rating, tier, division, games_below FROM mm.ratings
 WHERE pool = 'rp_ranked' AND player_id = 'rp_p1';
SELECT * FROM pg_temp.play('rp_duel', 'rp_p5', 'rp_p1', '2042-03-01 15:00');
SELECT player_id, round(rating) AS rating, tier, division, games_below FROM mm.ratings
 WHERE pool = 'rp_ranked' AND player_id = 'rp_p1';
-- changing the settings places everyone anew (no protection): without
-- tiers nobody has one
SELECT mm.configure_rating_pool('rp_ranked', mm.rating_pool_settings('rp_ranked') - 'tiers' - 'demotion',
								'2042-03-01 15:30') IS NOT NULL AS configured;
SELECT count(*) FILTER (WHERE tier IS NOT NULL) AS with_tier FROM mm.ratings WHERE pool = 'rp_ranked';
SELECT mm.configure_rating_pool('rp_ranked', mm.rating_pool_settings('rp_ranked') || '{
	"tiers": [{"name": "Bronze", "min": 0, "divisions": 2}, {"name": "Silver", "min": 1400, "divisions": 2},
	          {"name": "Gold", "min": 1600}],
	"demotion": {"margin": 50, "games": 2}}', '2042-03-01 15:31') IS NOT NULL AS configured;

-- ===================================================================
-- Imports: mm.set_rating and mm.set_ratings
-- ===================================================================
SELECT mm.set_ratings('rp_ranked', ARRAY['rp_i1', 'rp_i2', 'rp_i3'], ARRAY[1350, 1450, 1700]::float8[],
					  ARRAY[80, NULL, 300]::float8[], NULL, '2042-03-01 16:00') AS imported;
SELECT player_id, rating, rd, volatility, games, placement_games_left, tier, division
  FROM mm.ratings WHERE pool = 'rp_ranked' AND player_id LIKE 'rp\_i%' ORDER BY player_id;
SELECT player_id, reason, rating_before, rating_after, rd_before, rd_after
  FROM mm.rating_history WHERE pool = 'rp_ranked' AND player_id IN ('rp_i1', 'rp_p5') ORDER BY id;
-- importing over an existing rating keeps games and wins
SELECT mm.set_rating('rp_p2', 'rp_ranked', 1550, NULL, NULL, '2042-03-01 16:30');
SELECT player_id, rating, round(rd::numeric, 3) AS rd, games, wins FROM mm.ratings
 WHERE pool = 'rp_ranked' AND player_id = 'rp_p2';
SELECT mm.create_queue('rp_elo', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
                                   "rating": {"system": "elo", "pool": "rp_elo"}}');
SELECT mm.create_queue('rp_os', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
                                  "rating": {"system": "openskill", "pool": "rp_os"}}');
SELECT mm.set_rating('rp_e1', 'rp_elo', 1620);
SELECT mm.set_rating('rp_o1', 'rp_os', 31, 4);
SELECT player_id, pool, rating, rd, volatility, mu, sigma FROM mm.ratings
 WHERE player_id IN ('rp_e1', 'rp_o1') ORDER BY player_id;
SELECT c AS call, pg_temp.try(c) AS result
  FROM unnest(ARRAY[
	$$SELECT mm.set_rating(NULL, 'rp_ranked', 1500)$$,
	$$SELECT mm.set_rating('x', 'rp_ranked', NULL)$$,
	$$SELECT mm.set_rating('x', NULL, 1500)$$,
	$$SELECT mm.set_rating('x', 'rp_nowhere', 1500)$$,
	$$SELECT mm.set_rating('x', 'rp_ranked', 'NaN')$$,
	$$SELECT mm.set_rating('x', 'rp_ranked', 2e9)$$,
	$$SELECT mm.set_rating('x', 'rp_ranked', 1500, 0)$$,
	$$SELECT mm.set_rating('x', 'rp_ranked', 1500, 'Infinity')$$,
	$$SELECT mm.set_rating('x', 'rp_ranked', 1500, 100, -0.1)$$,
	$$SELECT mm.set_rating('x', 'rp_elo', 1500, 100)$$,
	$$SELECT mm.set_rating('x', 'rp_os', 25, 8, 0.06)$$,
	$$SELECT mm.set_rating('x', 'rp_ranked', 1500, 100, 0.06, '-infinity')$$,
	$$SELECT mm.set_ratings('rp_ranked', ARRAY['a', 'b'], ARRAY[1500]::float8[])$$,
	$$SELECT mm.set_ratings('rp_ranked', ARRAY['a', NULL], ARRAY[1500, 1500]::float8[])$$,
	$$SELECT mm.set_ratings('rp_ranked', ARRAY['a', 'b', 'a'], ARRAY[1, 2, 3]::float8[])$$,
	$$SELECT mm.set_ratings('rp_ranked', ARRAY['a', 'b'], ARRAY[1500, 1500]::float8[], ARRAY[100, -5]::float8[])$$,
	$$SELECT mm.set_ratings('rp_ranked', ARRAY[['a'], ['b']], ARRAY[1500, 1500]::float8[])$$
  ]) c;
-- a refused import changes nothing
SELECT count(*) AS rows_for_x FROM mm.ratings WHERE player_id IN ('x', 'a', 'b');

-- ===================================================================
-- Seasons: the running one closes, every rating is softly reset
-- ===================================================================
SELECT pg_temp.try($$SELECT mm.start_season('rp_nowhere', 'S1')$$) AS unknown_pool,
	   pg_temp.try($$SELECT mm.start_season('rp_ranked', '')$$) AS empty_name,
	   pg_temp.try($$SELECT mm.start_season('rp_ranked', NULL)$$) AS null_name;
SELECT avg(rating) AS mean_before FROM mm.ratings WHERE pool = 'rp_ranked' \gset
CREATE TEMP TABLE before_s1 AS SELECT * FROM mm.ratings WHERE pool = 'rp_ranked';
-- the first season: nothing to close yet; a rating imported or seeded
-- before it is kept as it was (rp_p1, rp_p2, rp_p5, rp_i1..3), every other
-- one goes halfway to the mean (of all of them), RD at least 250; every
-- season's count starts at 0
SELECT mm.start_season('rp_ranked', 'Season 1', '2042-04-01') AS reset;
SELECT r.player_id, h.player_id IS NULL AND r.rating = b.rating AND r.rd = b.rd AND r.volatility = b.volatility AS kept,
	   abs(r.rating - (:mean_before + (b.rating - :mean_before) * 0.5)) < 1e-9 AS halfway,
	   r.rd = greatest(b.rd, 250) AS rd_raised, r.season_games = 0 AS season_games_zero
  FROM mm.ratings r JOIN before_s1 b USING (player_id, pool)
  LEFT JOIN mm.rating_history h ON h.player_id = r.player_id AND h.pool = r.pool AND h.reason = 'season_reset'
 WHERE r.pool = 'rp_ranked'
 ORDER BY r.player_id;
SELECT pool, name, started_at, ended_at FROM mm.seasons WHERE pool = 'rp_ranked';
SELECT count(*) AS archived FROM mm.season_ratings WHERE pool = 'rp_ranked';
SELECT DISTINCT season FROM mm.leaderboard WHERE pool = 'rp_ranked';
-- a game in Season 1, then Season 2 closes it: the final standings kept
SELECT * FROM pg_temp.play('rp_duel', 'rp_p5', 'rp_p2', '2042-04-02 10:00');
CREATE TEMP TABLE before_s2 AS SELECT * FROM mm.ratings WHERE pool = 'rp_ranked';
-- no import since Season 1 started: every rating is reset
SELECT mm.start_season('rp_ranked', 'Season 2', '2042-05-01') AS reset, count(*) AS players
  FROM mm.ratings WHERE pool = 'rp_ranked';
SELECT pool, name, started_at, ended_at FROM mm.seasons WHERE pool = 'rp_ranked' ORDER BY started_at;
SELECT count(*) AS archived,
	   bool_and(s.rating = b.rating AND s.rd = b.rd AND s.games = b.games AND s.season_games = b.season_games
				AND s.tier IS NOT DISTINCT FROM b.tier AND s.division IS NOT DISTINCT FROM b.division) AS as_they_were
  FROM mm.season_ratings s JOIN before_s2 b USING (player_id, pool)
 WHERE s.pool = 'rp_ranked' AND s.season = 'Season 1';
SELECT season, player_id, rank, provisional, season_games, tier, division
  FROM mm.season_leaderboard WHERE pool = 'rp_ranked' AND season = 'Season 1' ORDER BY rank NULLS LAST, player_id;
SELECT pg_temp.try($$SELECT mm.start_season('rp_ranked', 'Season 2', '2042-05-02')$$) AS again,
	   pg_temp.try($$SELECT mm.start_season('rp_ranked', 'Season 0', '2042-04-15')$$) AS before_running;

-- Placements each season: a reset sends everyone back to placements
SELECT mm.configure_rating_pool('rp_ranked', jsonb_set(mm.rating_pool_settings('rp_ranked'),
								'{placement}', '{"games": 3, "each_season": true}'), '2042-05-02') IS NOT NULL AS configured;
-- an import during Season 2 is kept by Season 3's start (still in
-- placements: these settings place by games alone); the others are reset
SELECT mm.set_rating('rp_i4', 'rp_ranked', 1800, 60, 0.06, '2042-05-15');
SELECT mm.start_season('rp_ranked', 'Season 3', '2042-06-01') AS reset;
SELECT count(*) AS players, count(*) FILTER (WHERE placement_games_left = 3 AND tier IS NULL) AS in_placements
  FROM mm.ratings WHERE pool = 'rp_ranked';
SELECT r.player_id, round(r.rating::numeric, 6) AS rating, r.rd, r.season_games,
	   (SELECT count(*) FROM mm.rating_history h
		 WHERE h.player_id = r.player_id AND h.pool = r.pool AND h.reason = 'season_reset') AS resets
  FROM mm.ratings r WHERE r.pool = 'rp_ranked' AND r.player_id IN ('rp_i4', 'rp_i1') ORDER BY r.player_id;
SELECT * FROM pg_temp.play('rp_duel', 'rp_p5', 'rp_p2', '2042-06-02 10:00');
SELECT player_id, season_games, placement_games_left FROM mm.ratings
 WHERE pool = 'rp_ranked' AND player_id IN ('rp_p5', 'rp_p2') ORDER BY player_id;
SELECT * FROM mm.get_player_ratings('rp_p5');
SELECT pg_temp.try($$SELECT * FROM mm.get_player_ratings(NULL)$$) AS null_player;

-- OpenSkill: the first season keeps the imports; the second moves mu
-- halfway to the mean, sigma halfway back to 25/3
SELECT mm.set_rating('rp_o2', 'rp_os', 21, 2);
SELECT mm.start_season('rp_os', 'S1', '2042-06-01') AS reset;
SELECT mm.start_season('rp_os', 'S2', '2042-07-01') AS reset;
SELECT player_id, mu, round(sigma::numeric, 6) AS sigma FROM mm.ratings WHERE pool = 'rp_os' ORDER BY player_id;

-- ===================================================================
-- Per role: the role pools follow their base pool's settings and seasons
-- ===================================================================
SELECT mm.create_queue('rp_roles', '{"teams": [{"name": "a", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
                                               {"name": "b", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
                                     "rating": {"system": "glicko2", "pool": "rp_role", "per_role": true}}');
SELECT mm.configure_rating_pool('rp_role', '{"placement": {"games": 1},
	"tiers": [{"name": "Low", "min": 0}, {"name": "High", "min": 1500}]}', '2042-03-01') IS NOT NULL AS configured;
SELECT count(mm.create_ticket('rp_roles', jsonb_build_array(jsonb_build_object('id', p, 'roles', jsonb_build_array(r))),
							  '2042-03-02 10:00')) AS tickets
  FROM (VALUES ('rp_t1', 'tank'), ('rp_t2', 'tank'), ('rp_d1', 'dps'), ('rp_d2', 'dps')) v(p, r);
SELECT mm.tick('rp_roles', '2042-03-02 10:00:01') AS formed;
SELECT count(*) AS rated FROM mm.report_result(
	(SELECT max(match_id) FROM mm.match_players WHERE queue = 'rp_roles'),
	jsonb_build_object((SELECT team FROM mm.match_players WHERE queue = 'rp_roles' AND player_id = 'rp_t1'
						ORDER BY match_id DESC LIMIT 1), 1,
					   (SELECT team FROM mm.match_players WHERE queue = 'rp_roles' AND player_id = 'rp_t2'
						ORDER BY match_id DESC LIMIT 1), 2),
	'2042-03-02 10:30');
SELECT pool, player_id, placement_games_left, tier FROM mm.ratings WHERE pool LIKE 'rp\_role%' ORDER BY pool, player_id;
SELECT mm.start_season('rp_role', 'Role season 1', '2042-04-01') AS reset;
SELECT DISTINCT pool, season FROM mm.leaderboard WHERE pool LIKE 'rp\_role%' ORDER BY pool;
SELECT pool, count(*) FROM mm.rating_history WHERE pool LIKE 'rp\_role%' AND reason = 'season_reset'
 GROUP BY pool ORDER BY pool;

-- ===================================================================
-- The season recipe of docs/ratings.md ("A season, step by step"), its
-- statements verbatim (at the clock's time), on legacy ratings: the import
-- survives the first season start and the leaderboard shows it
-- ===================================================================
SELECT mm.create_queue('rp_recipe', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
                                      "rating": {"system": "glicko2", "pool": "ranked"}}');
CREATE TEMP TABLE legacy_mmr (player_id text, mmr float8, uncertainty float8);
INSERT INTO legacy_mmr VALUES ('rp_l1', 2150, 60), ('rp_l2', 1720, 60), ('rp_l3', 1450, 75), ('rp_l4', 1500, 200);

-- 1. the pool's rules (once; again whenever they change)
SELECT mm.configure_rating_pool('ranked', '{
  "seed":         {"attribute": "skill", "rd": 200},
  "placement":    {"games": 5, "rd": 80, "each_season": true},
  "tiers":        [{"name": "Bronze",   "min": 0,    "divisions": 4},
                   {"name": "Silver",   "min": 1400, "divisions": 4},
                   {"name": "Gold",     "min": 1600, "divisions": 4},
                   {"name": "Platinum", "min": 1800, "divisions": 4},
                   {"name": "Master",   "min": 2000}],
  "demotion":     {"margin": 25, "games": 3},
  "season_reset": {"share": 0.5, "rd": 250}}');

-- 2. the ratings the game already has (bulk; see "Imports")
SELECT mm.set_ratings('ranked', array_agg(player_id), array_agg(mmr), array_agg(uncertainty))
  FROM legacy_mmr;

-- 3. the first season (the imported ratings are kept as they are)
SELECT mm.start_season('ranked', '2027 Season 1');

SELECT player_id, tier, division, tier_progress, rank
  FROM mm.leaderboard WHERE pool = 'ranked' AND NOT provisional ORDER BY rank LIMIT 100;

-- the imported values are kept (rp_l4, RD 200 over placement.rd 80, plays
-- its placements)
SELECT l.player_id, r.rating = l.mmr AND r.rd = l.uncertainty AS imported_kept, r.placement_games_left
  FROM legacy_mmr l JOIN mm.ratings r ON r.player_id = l.player_id AND r.pool = 'ranked'
 ORDER BY l.player_id;

-- 4. three months later: Season 1's final standings are kept, every rating is softly reset
SELECT mm.start_season('ranked', '2027 Season 2');
SELECT player_id, tier, division, rank
  FROM mm.season_leaderboard WHERE pool = 'ranked' AND season = '2027 Season 1' ORDER BY rank;
SELECT count(*) AS players, count(*) FILTER (WHERE rd >= 250 AND placement_games_left = 5) AS reset_to_placements
  FROM mm.ratings WHERE pool = 'ranked';

-- ===================================================================
-- Clean up
-- ===================================================================
SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['rp_duel', 'rp_elo', 'rp_os', 'rp_roles', 'rp_recipe']) q;
DELETE FROM mm.season_ratings WHERE pool LIKE 'rp\_%' OR pool = 'ranked';
DELETE FROM mm.seasons WHERE pool LIKE 'rp\_%' OR pool = 'ranked';
DELETE FROM mm.rating_pools WHERE pool LIKE 'rp\_%' OR pool = 'ranked';
DELETE FROM mm.rating_history WHERE pool LIKE 'rp\_%' OR pool = 'ranked';
DELETE FROM mm.ratings WHERE pool LIKE 'rp\_%' OR pool = 'ranked';
DROP TABLE before_s1, before_s2, legacy_mmr;
SELECT setval('mm.tickets_id_seq', :ticket_seq_last, :'ticket_seq_called') > 0 AS sequence_restored,
	   setval('mm.matches_id_seq', :match_seq_last, :'match_seq_called') > 0 AS match_sequence_restored,
	   setval('mm.rating_history_id_seq', :history_seq_last, :'history_seq_called') > 0 AS history_sequence_restored;
