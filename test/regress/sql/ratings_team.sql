-- Teams: the aggregate mm.team_rating (weighted mean) and mm.win_probability.

\i sql/include/try_detail.sql

-- Weighted mean per team: red (1500 x1 + 1800 x2) / 3 = 1700; blue equal
-- weights = plain mean 1450; gold has a NULL rating and a NULL weight row,
-- both skipped (2000); grey has only weight 0, so no mean (NULL, like avg()
-- over no rows).
SELECT team, round(mm.team_rating(rating, weight)::numeric, 6) AS rating
  FROM (VALUES ('red', 1500, 1), ('red', 1800, 2),
               ('blue', 1400, 1), ('blue', 1500, 1),
               ('gold', 2000, 0.5), ('gold', NULL, 1), ('gold', 1000, NULL),
               ('grey', 1700, 0))
       AS m(team, rating, weight)
 GROUP BY team
 ORDER BY team;
-- no rows: NULL
SELECT mm.team_rating(1500, 1) IS NULL AS no_rows FROM (SELECT 1 WHERE false) AS nothing;
-- the same as avg() with weight 1, over many rows
SELECT round(mm.team_rating(x, 1)::numeric, 9) = round(avg(x)::numeric, 9) AS equals_avg
  FROM generate_series(1, 10000) AS x;

-- Under forced parallelism the partial sums combine to the same means.
SELECT setseed(0.7);
CREATE TABLE ratings_team_members AS
SELECT i % 50 AS team, 1000 + random() * 1000 AS rating, random() * 3 AS weight
  FROM generate_series(1, 5000) AS i;
ANALYZE ratings_team_members;
CREATE TEMP TABLE ratings_team_serial AS
SELECT team, mm.team_rating(rating, weight) AS rating FROM ratings_team_members GROUP BY team;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF)
SELECT team, mm.team_rating(rating, weight) FROM ratings_team_members GROUP BY team;
CREATE TEMP TABLE ratings_team_parallel AS
SELECT team, mm.team_rating(rating, weight) AS rating FROM ratings_team_members GROUP BY team;
RESET ALL;
SELECT count(*) AS teams, max(abs(s.rating - p.rating)) < 1e-9 AS equal
  FROM ratings_team_serial s JOIN ratings_team_parallel p USING (team);
-- and they are the weighted means computed in plain SQL
SELECT count(*) AS teams_off_by_more_than_1e9
  FROM ratings_team_serial s
 WHERE abs(s.rating - (SELECT sum(rating * weight) / sum(weight)
                         FROM ratings_team_members m WHERE m.team = s.team)) > 1e-9;
DROP TABLE ratings_team_members;

-- win_probability: Elo between the mean ratings, 1550 against 1350.
SELECT round(mm.win_probability('{1500,1600}', '{1400,1300}')::numeric, 6) AS p,
       mm.win_probability('{1500,1600}', '{1400,1300}') = mm.elo_expected(1550, 1350) AS is_elo_of_means;
-- The two sides' probabilities sum to 1; equal teams 0.5; sizes may differ.
SELECT round((mm.win_probability('{1500,1600,1700}', '{1650}')
               + mm.win_probability('{1650}', '{1500,1600,1700}'))::numeric, 9) AS sum,
       round(mm.win_probability('{1500,1600,1700}', '{1600}')::numeric, 6) AS even,
       round(mm.win_probability('{2000}', '{1000,1000,1000,1000,1000}')::numeric, 6) AS one_vs_five;
-- Property over random teams: the two directions always sum to 1.
SELECT setseed(0.3);
SELECT count(*) AS cases,
       count(*) FILTER (WHERE abs(mm.win_probability(a, b) + mm.win_probability(b, a) - 1) > 1e-12)
         AS not_summing_to_1
  FROM generate_series(1, 200) AS i,
       LATERAL (SELECT array_agg(1000 + random() * 1000) AS a FROM generate_series(1, 1 + i % 5)) AS ta,
       LATERAL (SELECT array_agg(1000 + random() * 1000) AS b FROM generate_series(1, 1 + i % 3)) AS tb;

-- STRICT: NULL gives NULL.
SELECT mm.win_probability(NULL, '{1500}') IS NULL AS a, mm.win_probability('{1500}', NULL) IS NULL AS b;

-- Bad input: SQLSTATE, message (naming the argument) and detail.
SELECT n, q AS query, pg_temp.try(q) AS outcome
  FROM (VALUES
	(1, $$SELECT mm.team_rating(r, 1) FROM (VALUES (1500), ('NaN'::float8)) v(r)$$),
	(2, $$SELECT mm.team_rating(r, 1) FROM (VALUES ('-Infinity'::float8)) v(r)$$),
	(3, $$SELECT mm.team_rating(1500, w) FROM (VALUES (1), (-1)) v(w)$$),
	(4, $$SELECT mm.team_rating(1500, 'Infinity')$$),
	(5, $$SELECT mm.team_rating(1500, 'NaN')$$),
	(6, $$SELECT mm.team_rating(r, 10) FROM (VALUES (1e308), (1e308)) v(r)$$),
	(7, $$SELECT mm.team_rating_final('{1,2,3}')$$),
	(8, $$SELECT mm.win_probability('{}', '{1500}')$$),
	(9, $$SELECT mm.win_probability('{1500}', '{}')$$),
	(10, $$SELECT mm.win_probability('{1500,NULL}', '{1500}')$$),
	(11, $$SELECT mm.win_probability('{1500}', '{{1500,1600}}')$$),
	(12, $$SELECT mm.win_probability('{1500,NaN}', '{1500}')$$),
	(13, $$SELECT mm.win_probability('{1500}', '{Infinity}')$$),
	(14, $$SELECT mm.win_probability(array_fill(1500::float8, ARRAY[10001]), '{1500}')$$),
	(15, $$SELECT mm.win_probability('{1e308,1e308}', '{1500}')$$)
  ) AS t(n, q)
 ORDER BY n;
