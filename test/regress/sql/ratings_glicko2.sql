-- Glicko-2: mm.glicko2_update, the aggregate mm.glicko2_period (also under
-- parallel workers) and mm.glicko2_decay.

\i sql/include/try_detail.sql

-- Glickman's worked example ("Example of the Glicko-2 system"): 1500/200/0.06
-- beats 1400/30, loses to 1550/100 and to 1700/300, tau 0.5.  The paper gives
-- r' = 1464.06, RD' = 151.52, sigma' = 0.05999; it rounds mu' to -0.2069
-- before converting back, while the exact value is 1464.0507, so the rating is
-- checked on the paper's Glicko-2 scale (mu', phi') and to the paper's 0.01.
SELECT round(rating::numeric, 4) AS rating, round(rd::numeric, 4) AS rd,
       round(volatility::numeric, 6) AS volatility,
       round(((rating - 1500) / 173.7178)::numeric, 4) AS mu,
       round((rd / 173.7178)::numeric, 4) AS phi,
       abs(rating - 1464.06) < 0.01 AS rating_as_paper,
       round(rd::numeric, 2) = 151.52 AS rd_as_paper,
       trunc(volatility::numeric, 5) = 0.05999 AS volatility_as_paper
  FROM mm.glicko2_update(1500, 200, 0.06, ARRAY[1400, 1550, 1700], ARRAY[30, 100, 300],
                         ARRAY[1, 0, 0]);
-- tau is the default 0.5; other values move the volatility, not much here
SELECT tau, round(rating::numeric, 4) AS rating, round(rd::numeric, 4) AS rd,
       round(volatility::numeric, 6) AS volatility
  FROM unnest(ARRAY[0.3, 0.5, 1.2]) AS tau,
       mm.glicko2_update(1500, 200, 0.06, ARRAY[1400, 1550, 1700], ARRAY[30, 100, 300],
                         ARRAY[1, 0, 0], tau)
 ORDER BY tau;
-- The game order does not matter.
SELECT round(a.rating::numeric, 8) = round(b.rating::numeric, 8) AND
       round(a.rd::numeric, 8) = round(b.rd::numeric, 8) AS order_independent
  FROM mm.glicko2_update(1500, 200, 0.06, ARRAY[1400, 1550, 1700], ARRAY[30, 100, 300],
                         ARRAY[1, 0, 0]) a,
       mm.glicko2_update(1500, 200, 0.06, ARRAY[1700, 1400, 1550], ARRAY[300, 30, 100],
                         ARRAY[0, 1, 0]) b;
-- A period without games: rating and volatility stay, RD grows to
-- sqrt(200^2 + (0.06 * 173.7178)^2) = 200.2714.
SELECT round(rating::numeric, 4) AS rating, round(rd::numeric, 4) AS rd,
       round(volatility::numeric, 6) AS volatility
  FROM mm.glicko2_update(1500, 200, 0.06, '{}', '{}', '{}');
-- Wins raise, losses lower, a draw against an equal opponent changes almost
-- nothing; every result has a smaller RD than before.
SELECT s AS score, round(rating::numeric, 2) AS rating, round(rd::numeric, 2) AS rd,
       round(volatility::numeric, 6) AS volatility
  FROM unnest(ARRAY[0, 0.5, 1]) AS s,
       mm.glicko2_update(1500, 100, 0.06, ARRAY[1500], ARRAY[100], ARRAY[s])
 ORDER BY s;

-- STRICT: NULL gives NULL.
SELECT mm.glicko2_update(NULL, 200, 0.06, '{}', '{}', '{}') IS NULL AS a,
       mm.glicko2_update(1500, 200, 0.06, NULL, '{}', '{}') IS NULL AS b,
       mm.glicko2_update(1500, 200, 0.06, '{}', '{}', '{}', NULL) IS NULL AS c,
       mm.glicko2_decay(1500, 200, NULL) IS NULL AS d;

-- glicko2_decay: one period by default (the same as a period without games),
-- 0 periods change nothing, RD stops at 350, an RD above 350 stays.
SELECT round((d).rating::numeric, 4) AS rating, round((d).rd::numeric, 4) AS rd,
       round((d).volatility::numeric, 6) AS volatility
  FROM (SELECT mm.glicko2_decay(1500, 200, 0.06) AS d) s;
SELECT periods, round(rd::numeric, 4) AS rd
  FROM unnest(ARRAY[0, 1, 10, 100, 1000, 2147483647]) AS periods,
       mm.glicko2_decay(1500, 200, 0.06, periods)
 ORDER BY periods;
SELECT round(rd::numeric, 4) AS near_cap FROM mm.glicko2_decay(1500, 340, 0.06, 10);
SELECT round(rd::numeric, 4) AS capped FROM mm.glicko2_decay(1500, 340, 0.06, 100);
SELECT round(rd::numeric, 4) AS above_cap_unchanged FROM mm.glicko2_decay(1500, 400, 0.06, 5);
-- even a volatility whose square overflows only reaches the cap
SELECT round(rd::numeric, 4) AS extreme_volatility FROM mm.glicko2_decay(1500, 200, 1e300, 10);

-- The aggregate over one player's games equals glicko2_update.
SELECT round(rating::numeric, 4) AS rating, round(rd::numeric, 4) AS rd,
       round(volatility::numeric, 6) AS volatility
  FROM (SELECT (mm.glicko2_period(1500, 200, 0.06, o, d, s)).*
          FROM (VALUES (1400, 30, 1), (1550, 100, 0), (1700, 300, 0)) AS g(o, d, s)) p;

-- NULL rows: a row with a NULL player column is skipped (as in any strict
-- aggregate); a row whose three game columns are NULL is the player without a
-- game (a LEFT JOIN), so a player with no games gets the idle period; a group
-- without any player row gives NULL.
SELECT player, round((r).rating::numeric, 4) AS rating, round((r).rd::numeric, 4) AS rd,
       round((r).volatility::numeric, 6) AS volatility
  FROM (SELECT player, mm.glicko2_period(rating, rd, vol, o, d, s) AS r
          FROM (VALUES ('a', 1500, 200, 0.06, 1400, 30, 1), ('a', 1500, 200, 0.06, 1550, 100, 0),
                       ('a', 1500, 200, 0.06, 1700, 300, 0), ('a', NULL, 200, 0.06, 1400, 30, 1),
                       ('b', 1500, 200, 0.06, NULL, NULL, NULL),
                       ('c', NULL, NULL, NULL, 1400, 30, 1))
               AS g(player, rating, rd, vol, o, d, s)
         GROUP BY player) q
 ORDER BY player;
-- no rows at all
SELECT mm.glicko2_period(1500, 200, 0.06, 1400, 30, 1) IS NULL AS no_rows
  FROM (SELECT 1 WHERE false) AS nothing;
-- tau as a seventh argument
SELECT round(volatility::numeric, 6) AS volatility_tau_1_2
  FROM (SELECT (mm.glicko2_period(1500, 200, 0.06, o, d, s, 1.2)).*
          FROM (VALUES (1400, 30, 1), (1550, 100, 0), (1700, 300, 0)) AS g(o, d, s)) p;

-- Property: the aggregate equals glicko2_update over the same games, for 300
-- random players and 6000 random games (a player with no game gets the idle
-- period through the LEFT JOIN).  Not a temporary table: the parallel test
-- below needs workers to read it.
SELECT setseed(0.42);
CREATE TABLE ratings_glicko2_players AS
SELECT i AS player, 1000 + random() * 1000 AS rating, 30 + random() * 320 AS rd,
       0.03 + random() * 0.06 AS volatility
  FROM generate_series(1, 300) AS i;
CREATE TABLE ratings_glicko2_games AS
SELECT g AS game, 1 + floor(random() * 290)::int AS player,
       800 + random() * 1400 AS opponent_rating, 30 + random() * 320 AS opponent_rd,
       floor(random() * 3) / 2 AS score
  FROM generate_series(1, 6000) AS g;
ANALYZE ratings_glicko2_players, ratings_glicko2_games;
CREATE TEMP TABLE ratings_glicko2_by_update AS
SELECT p.player, (mm.glicko2_update(p.rating, p.rd, p.volatility,
         coalesce(array_agg(g.opponent_rating ORDER BY g.game) FILTER (WHERE g.game IS NOT NULL), '{}'),
         coalesce(array_agg(g.opponent_rd ORDER BY g.game) FILTER (WHERE g.game IS NOT NULL), '{}'),
         coalesce(array_agg(g.score ORDER BY g.game) FILTER (WHERE g.game IS NOT NULL), '{}'))).*
  FROM ratings_glicko2_players p LEFT JOIN ratings_glicko2_games g USING (player)
 GROUP BY p.player, p.rating, p.rd, p.volatility;
CREATE TEMP TABLE ratings_glicko2_by_period AS
SELECT p.player, (mm.glicko2_period(p.rating, p.rd, p.volatility,
                                    g.opponent_rating, g.opponent_rd, g.score)).*
  FROM ratings_glicko2_players p LEFT JOIN ratings_glicko2_games g USING (player)
 GROUP BY p.player;
SELECT count(*) AS players,
       count(*) FILTER (WHERE u.rating = p0.rating AND u.rd > p0.rd) AS players_without_games,
       max(abs(u.rating - a.rating)) < 1e-6 AS rating_equal,
       max(abs(u.rd - a.rd)) < 1e-6 AS rd_equal,
       max(abs(u.volatility - a.volatility)) < 1e-9 AS volatility_equal
  FROM ratings_glicko2_by_update u
  JOIN ratings_glicko2_by_period a USING (player)
  JOIN ratings_glicko2_players p0 USING (player);

-- The same aggregate under forced parallelism.  Leader participation is off,
-- so the rows are aggregated by the workers and their partial states really
-- go through serialize, deserialize and combine.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF)
SELECT p.player, mm.glicko2_period(p.rating, p.rd, p.volatility,
                                   g.opponent_rating, g.opponent_rd, g.score)
  FROM ratings_glicko2_players p LEFT JOIN ratings_glicko2_games g USING (player)
 GROUP BY p.player;
-- Workers Launched, read from EXPLAIN ANALYZE (JSON, so nothing else varies).
CREATE FUNCTION pg_temp.workers_launched(query text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || query INTO plan;
	RETURN (SELECT max((m.value->>'Workers Launched')::int)
	          FROM jsonb_path_query(plan::jsonb, 'strict $.**') AS m(value)
	         WHERE jsonb_typeof(m.value) = 'object' AND m.value ? 'Workers Launched');
END $$;
SELECT pg_temp.workers_launched($$
	SELECT p.player, mm.glicko2_period(p.rating, p.rd, p.volatility,
	                                   g.opponent_rating, g.opponent_rd, g.score)
	  FROM ratings_glicko2_players p LEFT JOIN ratings_glicko2_games g USING (player)
	 GROUP BY p.player$$) > 0 AS workers_launched;
CREATE TEMP TABLE ratings_glicko2_parallel AS
SELECT p.player, (mm.glicko2_period(p.rating, p.rd, p.volatility,
                                    g.opponent_rating, g.opponent_rd, g.score)).*
  FROM ratings_glicko2_players p LEFT JOIN ratings_glicko2_games g USING (player)
 GROUP BY p.player;
RESET ALL;
SELECT count(*) AS players,
       max(abs(u.rating - a.rating)) < 1e-6 AS rating_equal,
       max(abs(u.rd - a.rd)) < 1e-6 AS rd_equal,
       max(abs(u.volatility - a.volatility)) < 1e-9 AS volatility_equal
  FROM ratings_glicko2_by_update u
  JOIN ratings_glicko2_parallel a USING (player);
DROP TABLE ratings_glicko2_players, ratings_glicko2_games;

-- Bad input: SQLSTATE, message (naming the argument) and detail.
SELECT n, q AS query, pg_temp.try(q) AS outcome
  FROM (VALUES
	(1, $$SELECT mm.glicko2_update('NaN', 200, 0.06, '{}', '{}', '{}')$$),
	(2, $$SELECT mm.glicko2_update('Infinity', 200, 0.06, '{}', '{}', '{}')$$),
	(3, $$SELECT mm.glicko2_update(1500, 0, 0.06, '{}', '{}', '{}')$$),
	(4, $$SELECT mm.glicko2_update(1500, -10, 0.06, '{}', '{}', '{}')$$),
	(5, $$SELECT mm.glicko2_update(1500, 'Infinity', 0.06, '{}', '{}', '{}')$$),
	(6, $$SELECT mm.glicko2_update(1500, 200, 0, '{}', '{}', '{}')$$),
	(7, $$SELECT mm.glicko2_update(1500, 200, 'NaN', '{}', '{}', '{}')$$),
	(8, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{}', '{}', '{}', 0)$$),
	(9, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{}', '{}', '{}', -0.5)$$),
	(10, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{}', '{}', '{}', 'NaN')$$),
	(11, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,NaN}', '{30,30}', '{1,0}')$$),
	(12, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,-Infinity}', '{30,30}', '{1,0}')$$),
	(13, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30,0}', '{1,0}')$$),
	(14, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30,Infinity}', '{1,0}')$$),
	(15, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30,30}', '{1,1.5}')$$),
	(16, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30,30}', '{-0.5,1}')$$),
	(17, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30,30}', '{1,NaN}')$$),
	(18, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30}', '{1,0}')$$),
	(19, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30,30}', '{1}')$$),
	(20, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,NULL}', '{30,30}', '{1,0}')$$),
	(21, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30,NULL}', '{1,0}')$$),
	(22, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{1400,1500}', '{30,30}', '{NULL,0}')$$),
	(23, $$SELECT mm.glicko2_update(1500, 200, 0.06, '{{1400},{1500}}', '{30,30}', '{1,0}')$$),
	(24, $$SELECT mm.glicko2_update(1500, 200, 0.06, array_fill(1400::float8, ARRAY[10001]),
	                                array_fill(30::float8, ARRAY[10001]), array_fill(1::float8, ARRAY[10001]))$$),
	(25, $$SELECT mm.glicko2_update(1e300, 50, 0.06, '{-1e300}', '{50}', '{1}')$$),
	(26, $$SELECT mm.glicko2_decay('NaN', 200, 0.06)$$),
	(27, $$SELECT mm.glicko2_decay(1500, 0, 0.06)$$),
	(28, $$SELECT mm.glicko2_decay(1500, 200, -0.06)$$),
	(29, $$SELECT mm.glicko2_decay(1500, 200, 0.06, -1)$$)
  ) AS t(n, q)
 ORDER BY n;
-- The largest allowed arrays work.
SELECT round(rating::numeric, 2) AS rating_after_10000_wins
  FROM mm.glicko2_update(1500, 200, 0.06, array_fill(1400::float8, ARRAY[10000]),
                         array_fill(30::float8, ARRAY[10000]), array_fill(1::float8, ARRAY[10000]));

-- Bad input to the aggregate.
SELECT n, q AS query, pg_temp.try(q) AS outcome
  FROM (VALUES
	(1, $$SELECT mm.glicko2_period(r, 200, 0.06, 1400, 30, 1) FROM (VALUES (1500), (1510)) v(r)$$),
	(2, $$SELECT mm.glicko2_period(1500, rd, 0.06, 1400, 30, 1) FROM (VALUES (200), (201)) v(rd)$$),
	(3, $$SELECT mm.glicko2_period(1500, 200, 0.06, 1400, 30, 1, t) FROM (VALUES (0.5), (0.6)) v(t)$$),
	(4, $$SELECT mm.glicko2_period(1500, 200, 0.06, 1400, NULL, 1)$$),
	(5, $$SELECT mm.glicko2_period(1500, 200, 0.06, NULL, 30, NULL)$$),
	(6, $$SELECT mm.glicko2_period(1500, 200, 0.06, 1400, 30, 'NaN')$$),
	(7, $$SELECT mm.glicko2_period(1500, 200, 0.06, 1400, 30, 2)$$),
	(8, $$SELECT mm.glicko2_period(1500, 200, 0.06, 'Infinity', 30, 1)$$),
	(9, $$SELECT mm.glicko2_period(1500, 200, 0.06, 1400, 0, 1)$$),
	(10, $$SELECT mm.glicko2_period(1500, 0, 0.06, 1400, 30, 1)$$),
	(11, $$SELECT mm.glicko2_period(1500, 200, 0, 1400, 30, 1)$$),
	(12, $$SELECT mm.glicko2_period('NaN', 200, 0.06, 1400, 30, 1)$$),
	(13, $$SELECT mm.glicko2_period(1500, 200, 0.06, 1400, 30, 1, 0)$$),
	(14, $$SELECT mm.glicko2_period(1e300, 50, 0.06, -1e300, 50, 1)$$)
  ) AS t(n, q)
 ORDER BY n;
-- A volatility far below any real one (its square underflows a double) is
-- still a volatility: the same rating as with 1e-150, and it stays tiny.
SELECT round(a.rating::numeric, 6) = round(b.rating::numeric, 6) AS same_rating,
       a.volatility > 0 AND a.volatility < 1e-160 AS tiny_volatility
  FROM mm.glicko2_update(1500, 200, 1e-170, '{1500}', '{350}', '{1}') a,
       mm.glicko2_update(1500, 200, 1e-150, '{1500}', '{350}', '{1}') b;
