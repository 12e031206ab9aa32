-- Smurf detection and placement: mm.smurf_score and mm.rating_boost.

\i sql/include/try_detail.sql

-- Points, over the reference maximum: 30 for the new-account group under 25
-- games, and always 25 for the outliers and 20 for the learning curve (75
-- under 25 games, else 45).  Missing evidence earns nothing but stays in the
-- maximum: an unknown (NULL) headshot rate, fewer than 5 recent ratings.
--   new account, under 25 games (30): win rate > 0.70: 20, MVP rate > 0.40: 10
--   outlier (25): KDA > 3.5: 15, headshots > 0.60: 10
--   no learning curve (20): at least 5 recent ratings, CV < 0.05 with < 20 games: 20
-- "flat" ratings have CV 0.0007, "rising" ones CV 0.2.
SELECT n, note, round(mm.smurf_score(g, w, k, m, r, h)::numeric, 4) AS score,
       round(mm.smurf_score(g, w, k, m, r, h)::numeric, 10) = round(expected, 10) AS as_expected
  FROM (VALUES
	(1, 'everything, headshots known: 75 / 75', 10, 0.8, 4.0, 0.5,
	    '{1500,1501,1502,1500,1499}'::float8[], 0.7, 1.0),
	(2, 'everything, headshots unknown: 65 / 75', 10, 0.8, 4.0, 0.5,
	    '{1500,1501,1502,1500,1499}', NULL, 65 / 75.0),
	(3, 'new, wins only, short history: 20 / 75', 10, 0.8, 2.0, 0.3, '{1500,1600}', NULL, 20 / 75.0),
	(4, 'new, MVP and KDA, rising: 25 / 75', 10, 0.5, 4.0, 0.5,
	    '{1000,1200,1400,1600,1800}', NULL, 25 / 75.0),
	(5, 'same with headshots 0.3: 25 / 75', 10, 0.5, 4.0, 0.5,
	    '{1000,1200,1400,1600,1800}', 0.3, 25 / 75.0),
	(6, 'veteran, high KDA only: 15 / 45', 100, 0.9, 4.0, 0.9, '{}', NULL, 15 / 45.0),
	(7, 'veteran, ordinary: 0 / 45', 100, 0.5, 2.0, 0.1, '{}', NULL, 0.0),
	(8, 'veteran, headshots 0.61, flat: 10 / 45', 100, 0.5, 1.0, 0.1,
	    '{1500,1501,1502,1500,1499}', 0.61, 10 / 45.0),
	(9, 'limits are exclusive: 0 / 75', 24, 0.70, 3.5, 0.40,
	    '{1500,1501,1502,1500,1499}', 0.60, 0.0),
	(10, '25 games is no longer new: 0 / 45', 25, 0.9, 1.0, 0.9, '{}', NULL, 0.0),
	(11, 'flat with 19 games: 20 / 75', 19, 0.5, 1.0, 0.1,
	    '{1500,1501,1502,1500,1499}', NULL, 20 / 75.0),
	(12, 'flat with 20 games: 0 / 75', 20, 0.5, 1.0, 0.1,
	    '{1500,1501,1502,1500,1499}', NULL, 0.0),
	(13, 'four ratings do not count: 0 / 75', 10, 0.5, 1.0, 0.1, '{1500,1500,1500,1500}', NULL, 0.0),
	(14, 'flat around 0 (CV undefined) is not flat: 0 / 75', 10, 0.5, 1.0, 0.1,
	    '{0,0,0,0,0}', NULL, 0.0),
	(15, '30-game veteran, KDA 4, no history: 15 / 45', 30, 0.5, 4.0, 0.1, '{}', NULL, 15 / 45.0),
	(16, 'same with headshots 0.7: 25 / 45', 30, 0.5, 4.0, 0.1, '{}', 0.7, 25 / 45.0),
	(17, 'four flat ratings, 19 games: 0 / 75', 19, 0.5, 1.0, 0.1, '{1500,1500,1500,1500}', NULL, 0.0),
	(18, 'flat at the top of the range (the sums overflowed): 20 / 75', 10, 0.5, 1.0, 0.1,
	    '{1e308,1e308,1e308,1e308,1e308}', NULL, 20 / 75.0)
  ) AS t(n, note, g, w, k, m, r, h, expected)
 ORDER BY n;
-- Leaving headshot_rate out is the same as passing NULL.
SELECT mm.smurf_score(10, 0.8, 2.0, 0.3, '{1500,1600}')
     = mm.smurf_score(10, 0.8, 2.0, 0.3, '{1500,1600}', NULL) AS default_is_null;
-- NULL: smurf_score is not STRICT (a NULL headshot_rate is "unknown": no
-- points, still in the maximum), but a NULL in any other argument gives NULL,
-- as STRICT would.
SELECT mm.smurf_score(NULL, 0.8, 2.0, 0.3, '{}') IS NULL AS a,
       mm.smurf_score(10, NULL, 2.0, 0.3, '{}') IS NULL AS b,
       mm.smurf_score(10, 0.8, NULL, 0.3, '{}') IS NULL AS c,
       mm.smurf_score(10, 0.8, 2.0, NULL, '{}') IS NULL AS d,
       mm.smurf_score(10, 0.8, 2.0, 0.3, NULL) IS NULL AS e,
       mm.smurf_score(10, 0.8, 2.0, 0.3, NULL, 0.7) IS NULL AS f;
-- Property: always in [0, 1] over a grid of inputs.
SELECT count(*) AS cases, min(s) >= 0 AND max(s) <= 1 AS in_range, count(DISTINCT s) > 10 AS varied
  FROM (SELECT mm.smurf_score(g, w, k, m, r, h) AS s
          FROM unnest(ARRAY[0, 19, 24, 100]) AS g, unnest(ARRAY[0, 0.71, 1]) AS w,
               unnest(ARRAY[0, 3.6]) AS k, unnest(ARRAY[0, 0.41]) AS m,
               unnest(ARRAY['{}', '{1500,1500,1500,1500,1500}', '{1,2,3,4,5}']::text[]) AS r_text,
               LATERAL (SELECT r_text::float8[] AS r) AS r,
               unnest(ARRAY[NULL, 0, 0.61]) AS h) AS grid;

-- rating_boost: 4.0 above confidence 0.8, 2.5 above 0.6, 2.0 during the first
-- 10 games, otherwise 1.0 (limits exclusive).
SELECT c AS confidence, g AS games_played, mm.rating_boost(c, g) AS boost
  FROM (VALUES (0.9, 100), (0.8, 100), (0.7, 100), (0.6, 100), (0.6, 9), (0.0, 0),
               (0.0, 10), (1.0, 0))
       AS t(c, g)
 ORDER BY c DESC, g;
SELECT mm.rating_boost(NULL, 5) IS NULL AS a, mm.rating_boost(0.5, NULL) IS NULL AS b;

-- Bad input: SQLSTATE, message (naming the argument) and detail.
SELECT n, q AS query, pg_temp.try(q) AS outcome
  FROM (VALUES
	(1, $$SELECT mm.smurf_score(-1, 0.5, 1, 0.1, '{}')$$),
	(2, $$SELECT mm.smurf_score(10, 1.1, 1, 0.1, '{}')$$),
	(3, $$SELECT mm.smurf_score(10, 'NaN', 1, 0.1, '{}')$$),
	(4, $$SELECT mm.smurf_score(10, 0.5, -1, 0.1, '{}')$$),
	(5, $$SELECT mm.smurf_score(10, 0.5, 'Infinity', 0.1, '{}')$$),
	(6, $$SELECT mm.smurf_score(10, 0.5, 1, -0.1, '{}')$$),
	(7, $$SELECT mm.smurf_score(10, 0.5, 1, 0.1, '{}', 1.5)$$),
	(8, $$SELECT mm.smurf_score(10, 0.5, 1, 0.1, '{}', 'NaN')$$),
	(9, $$SELECT mm.smurf_score(10, 0.5, 1, 0.1, '{1500,NULL,1500,1500,1500}')$$),
	(10, $$SELECT mm.smurf_score(10, 0.5, 1, 0.1, '{{1500,1500},{1500,1500}}')$$),
	(11, $$SELECT mm.smurf_score(10, 0.5, 1, 0.1, '{1500,NaN,1500,1500,1500}')$$),
	(12, $$SELECT mm.smurf_score(10, 0.5, 1, 0.1, array_fill(1500::float8, ARRAY[10001]))$$),
	(13, $$SELECT mm.rating_boost(1.5, 10)$$),
	(14, $$SELECT mm.rating_boost(-0.1, 10)$$),
	(15, $$SELECT mm.rating_boost('NaN', 10)$$),
	(16, $$SELECT mm.rating_boost(0.5, -1)$$)
  ) AS t(n, q)
 ORDER BY n;
