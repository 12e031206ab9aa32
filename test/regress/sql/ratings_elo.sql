-- Elo: mm.elo_expected, mm.elo_update, mm.elo_k_factor.
-- Also checks, for every function of the ratings section, its volatility,
-- strictness, parallel safety and comment.

\i sql/include/try_detail.sql

-- The seed's example: 1500 against 1200.
SELECT round(mm.elo_expected(1500, 1200)::numeric, 4) AS expected_1500,
       round(mm.elo_expected(1200, 1500)::numeric, 4) AS expected_1200,
       mm.elo_expected(1500, 1200) + mm.elo_expected(1200, 1500) AS sum;
-- 1500 wins: 1505 / 1195; 1500 loses: 1473 / 1227 (rounded).
SELECT round(mm.elo_update(1500, 1200, 1)) AS winner, round(mm.elo_update(1200, 1500, 0)) AS loser;
SELECT round(mm.elo_update(1500, 1200, 0)) AS loser, round(mm.elo_update(1200, 1500, 1)) AS winner;
-- unrounded: 1504.83 (K 32 by default, explicit K the same)
SELECT round(mm.elo_update(1500, 1200, 1)::numeric, 2) AS default_k,
       round(mm.elo_update(1500, 1200, 1, 32)::numeric, 2) AS k_32,
       round(mm.elo_update(1500, 1200, 1, 16)::numeric, 2) AS k_16;
-- zero-sum: what one gains the other loses (same K)
SELECT abs((mm.elo_update(1500, 1200, 1) - 1500) - (1200 - mm.elo_update(1200, 1500, 0))) < 1e-9
       AS zero_sum;
-- equal ratings: expected 0.5; a draw changes nothing; K 0 changes nothing
SELECT round(mm.elo_expected(1500, 1500)::numeric, 6) AS even,
       round(mm.elo_update(1500, 1500, 0.5)::numeric, 6) AS draw,
       round(mm.elo_update(1500, 1200, 1, 0)::numeric, 6) AS k_zero;
-- huge differences give the limits 0 and 1, never NaN
SELECT round(mm.elo_expected(1e6, -1e6)::numeric, 6) AS far_above,
       round(mm.elo_expected(-1e6, 1e6)::numeric, 6) AS far_below;

-- K factor: new players first (40 under 30 games, whatever the rating),
-- then 16 above 2400, otherwise 32.
SELECT g, r, mm.elo_k_factor(g, r) AS k
  FROM (VALUES (0, 1500), (29, 2500), (30, 1500), (30, 2400), (30, 2400.5), (1000, 2800))
       AS t(g, r)
 ORDER BY g, r;

-- STRICT: NULL gives NULL.
SELECT mm.elo_expected(NULL, 1200) IS NULL AS a, mm.elo_update(1500, NULL, 1) IS NULL AS b,
       mm.elo_update(1500, 1200, 1, NULL) IS NULL AS c, mm.elo_k_factor(NULL, 1500) IS NULL AS d;

-- Bad input: SQLSTATE, message (naming the argument) and detail.
SELECT n, q AS query, pg_temp.try(q) AS outcome
  FROM (VALUES
	(1, $$SELECT mm.elo_expected('NaN', 1200)$$),
	(2, $$SELECT mm.elo_expected(1500, 'Infinity')$$),
	(3, $$SELECT mm.elo_update('-Infinity', 1200, 1)$$),
	(4, $$SELECT mm.elo_update(1500, 'NaN', 1)$$),
	(5, $$SELECT mm.elo_update(1500, 1200, 1.5)$$),
	(6, $$SELECT mm.elo_update(1500, 1200, -0.1)$$),
	(7, $$SELECT mm.elo_update(1500, 1200, 'NaN')$$),
	(8, $$SELECT mm.elo_update(1500, 1200, 1, -1)$$),
	(9, $$SELECT mm.elo_update(1500, 1200, 1, 'Infinity')$$),
	(10, $$SELECT mm.elo_update(1.7e308, 1.7e308, 1, 1e308)$$),
	(11, $$SELECT mm.elo_k_factor(-1, 1500)$$),
	(12, $$SELECT mm.elo_k_factor(10, 'NaN')$$)
  ) AS t(n, q)
 ORDER BY n;

-- Every function of the ratings section: IMMUTABLE, PARALLEL SAFE, STRICT
-- except the ones that handle NULL themselves (smurf_score: NULL
-- headshot_rate; the internal-state aggregate's support functions), and
-- commented.
SELECT p.proname, p.pronargs AS nargs, p.prokind AS kind, p.provolatile AS volatile,
       p.proisstrict AS strict, p.proparallel AS parallel,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
  FROM pg_proc p
 WHERE p.pronamespace = 'mm'::regnamespace
   AND p.proname ~ '^(elo_|glicko2|team_rating|win_probability|smurf_score|rating_boost)'
 ORDER BY p.proname, p.pronargs;
