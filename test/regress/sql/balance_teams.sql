-- mm.balance_teams: small worked examples, optimality against a brute-force
-- search in SQL on random small cases, parties, sizes, determinism, the
-- 200-player heuristic and every error path.

-- A helper view of one answer: team sizes and the spread of team totals.
CREATE FUNCTION pg_temp.bt_summary(ratings float8[], teams int[],
								   OUT sizes int[], OUT spread float8)
LANGUAGE sql IMMUTABLE AS $$
	SELECT array_agg(size ORDER BY team), max(total) - min(total)
	  FROM (SELECT t AS team, count(*)::int AS size, sum(r) AS total
			  FROM unnest(ratings, teams) AS u(r, t)
			 GROUP BY t) s
$$;

-- 1..10 into two teams: total 55, so the best spread is 1, five a side.
SELECT mm.balance_teams('{1,2,3,4,5,6,7,8,9,10}') AS teams,
	   (pg_temp.bt_summary('{1,2,3,4,5,6,7,8,9,10}',
						   mm.balance_teams('{1,2,3,4,5,6,7,8,9,10}'))).*;

-- Odd count: sizes differ by one; three teams of 7 players.
SELECT (pg_temp.bt_summary(r, mm.balance_teams(r, 3))).*
  FROM (VALUES ('{10,20,30,40,50,60,70}'::float8[])) v(r);

-- The smaller team may be the stronger one: 5 players, sums not means.
SELECT mm.balance_teams('{100,1,1,1,1}') AS teams,
	   (pg_temp.bt_summary('{100,1,1,1,1}', mm.balance_teams('{100,1,1,1,1}'))).*;

-- Negative and fractional ratings are fine.
SELECT (pg_temp.bt_summary(r, mm.balance_teams(r))).*
  FROM (VALUES ('{-3.5,-1.25,0,2.75,4,-6}'::float8[])) v(r);

-- Parties: players 1 and 2 (party 7) and players 3, 4, 5 (party 9) stay
-- together; 8 players, two teams of four.
SELECT mm.balance_teams('{1500,1400,1300,1200,1100,1000,900,800}', 2,
						'{7,7,9,9,9,1,2,3}') AS teams;
-- A party of three in a 2-team game of 5: the only even split puts it alone.
SELECT mm.balance_teams('{10,10,10,1,1}', 2, '{1,1,1,2,3}') AS teams;
-- Two parties of 3 plus 2 solo players: 4 v 4 means one solo player joins
-- each party (18 v 6).  Three parties of 2 into 2 teams must be 4 v 2.
SELECT mm.balance_teams('{5,5,5,1,1,1,3,3}', 2, '{1,1,1,2,2,2,3,4}') AS teams;
SELECT mm.balance_teams('{9,9,1,1,5,5}', 2, '{1,1,2,2,3,3}') AS teams,
	   (pg_temp.bt_summary('{9,9,1,1,5,5}',
						   mm.balance_teams('{9,9,1,1,5,5}', 2, '{1,1,2,2,3,3}'))).*;
-- NULL parties means everybody solo; party ids are arbitrary integers.
SELECT mm.balance_teams('{4,3,2,1}', 2, NULL) AS solo,
	   mm.balance_teams('{4,3,2,1}', 2, '{-5,2147483647,-5,0}') AS parties;
-- As many teams as players: one each.
SELECT mm.balance_teams('{3,1,2}', 3) AS teams;

-- Deterministic: the same call twice, and the same answer for equal ratings.
SELECT mm.balance_teams(r, 3) = mm.balance_teams(r, 3) AS same_answer,
	   mm.balance_teams(r, 3) AS teams
  FROM (VALUES ('{5,5,5,5,5,5,5,5,5}'::float8[])) v(r);

-- Optimality against brute force.  50 random cases of 2..10 players in 2..4
-- teams, half with parties, some with negative ratings.  The brute force
-- enumerates every assignment (player 1 on team 0, as team numbers are
-- interchangeable; player i >= 2 on digit i-2 of x in base k), keeps those
-- with no split party and no empty team, finds the smallest size difference
-- the parties allow, and the best spread among assignments with that
-- difference.
SELECT setseed(0.3141);
CREATE TEMP TABLE bt_case AS
SELECT c, n, least(n, k) AS k, c % 2 = 0 AS with_parties
  FROM (SELECT c, 2 + floor(random() * 9)::int AS n,
			   2 + floor(random() * 3)::int AS k
		  FROM generate_series(1, 50) c) s;
-- keep the brute force small: 4 teams up to 6 players, 3 teams up to 7
UPDATE bt_case SET n = least(n, CASE k WHEN 4 THEN 6 WHEN 3 THEN 7 ELSE 10 END);
CREATE TEMP TABLE bt_player AS
SELECT c, i,
	   round((CASE WHEN c % 5 = 0 THEN -500 ELSE 1000 END
			  + random() * 1000)::numeric, 1)::float8 AS rating,
	   CASE WHEN with_parties AND random() < 0.6 THEN floor(random() * 4)::int
			ELSE 100 + i END AS party,
	   CASE WHEN i = 1 THEN 0 ELSE power(k, i - 2)::bigint END AS digit
  FROM bt_case, generate_series(1, n) i
 ORDER BY c, i;
-- parties that leave fewer groups than teams are an error case, tested below
DELETE FROM bt_case c
 WHERE (SELECT count(DISTINCT party) FROM bt_player p WHERE p.c = c.c) < c.k;
SELECT k AS teams, count(*) AS cases, min(n) AS min_players, max(n) AS max_players,
	   count(*) FILTER (WHERE EXISTS (SELECT 1 FROM bt_player p WHERE p.c = bt_case.c
									 GROUP BY party HAVING count(*) > 1)) AS with_a_party,
	   sum(power(k, n - 1)) AS assignments
  FROM bt_case GROUP BY k ORDER BY k;

SET work_mem = '64MB';
CREATE TEMP TABLE bt_brute AS
WITH placed AS MATERIALIZED (
	SELECT cs.c, x,
		   CASE WHEN p.i = 1 THEN 0 ELSE (x / p.digit) % cs.k END AS team,
		   p.rating, p.party
	  FROM bt_case cs
	  JOIN bt_player p ON p.c = cs.c,
		   generate_series(0, power(cs.k, cs.n - 1)::bigint - 1) x
), split AS (
	SELECT DISTINCT c, x FROM placed
	 GROUP BY c, x, party HAVING min(team) <> max(team)
), per_team AS (
	SELECT c, x, team, count(*) AS size, sum(rating) AS total
	  FROM placed GROUP BY c, x, team
), per_assignment AS (
	SELECT t.c, t.x, max(size) - min(size) AS size_diff,
		   max(total) - min(total) AS spread
	  FROM per_team t
	  JOIN bt_case cs ON cs.c = t.c
	 WHERE NOT EXISTS (SELECT 1 FROM split s WHERE s.c = t.c AND s.x = t.x)
	 GROUP BY t.c, t.x, cs.k
	HAVING count(*) = cs.k
), ranked AS (
	SELECT c, size_diff, spread,
		   min(size_diff) OVER (PARTITION BY c) AS best_size_diff
	  FROM per_assignment
)
SELECT c, min(spread) AS best_spread, min(best_size_diff) AS best_size_diff
  FROM ranked
 WHERE size_diff = best_size_diff
 GROUP BY c;
RESET work_mem;

CREATE TEMP TABLE bt_answer AS
SELECT c, ratings, parties,
	   mm.balance_teams(ratings, k, CASE WHEN with_parties THEN parties END) AS teams
  FROM bt_case cs,
	   LATERAL (SELECT array_agg(rating ORDER BY i) AS ratings,
					   array_agg(party ORDER BY i) AS parties
				  FROM bt_player p WHERE p.c = cs.c) a;

-- Every case: the function's spread equals the brute-force optimum, its
-- size difference is the smallest possible, no party is split, every team
-- number is in 1..k and used.
SELECT count(*) AS cases,
	   count(*) FILTER (WHERE abs(s.spread - b.best_spread) < 1e-6) AS optimal_spread,
	   count(*) FILTER (WHERE s.sizes_diff = b.best_size_diff) AS optimal_sizes,
	   count(*) FILTER (WHERE split.parties_split = 0) AS no_party_split,
	   count(*) FILTER (WHERE s.teams_used = cs.k AND s.lo = 1 AND s.hi = cs.k) AS numbering_ok
  FROM bt_answer a
  JOIN bt_case cs USING (c)
  JOIN bt_brute b USING (c),
	   LATERAL (SELECT max(size) - min(size) AS sizes_diff,
					   max(total) - min(total) AS spread,
					   count(*) AS teams_used, min(team) AS lo, max(team) AS hi
				  FROM (SELECT t AS team, count(*) AS size, sum(r) AS total
						  FROM unnest(a.ratings, a.teams) u(r, t) GROUP BY t) x) s,
	   LATERAL (SELECT count(*) AS parties_split
				  FROM (SELECT 1 FROM unnest(a.parties, a.teams) u(p, t)
						 WHERE cs.with_parties
						 GROUP BY p HAVING count(DISTINCT t) > 1) y) split;
-- Any case that is not optimal (none expected).
SELECT a.c, a.teams, b.best_spread
  FROM bt_answer a JOIN bt_brute b USING (c)
 WHERE abs((pg_temp.bt_summary(a.ratings, a.teams)).spread - b.best_spread) >= 1e-6
 ORDER BY a.c;

-- 16 players (the largest exact case) into 2 and 4 teams: 1..16 sums to 136,
-- so spread 0 is reachable in both.
SELECT (pg_temp.bt_summary(r, mm.balance_teams(r, 2))).*,
	   (pg_temp.bt_summary(r, mm.balance_teams(r, 4))).* AS four
  FROM (SELECT array_agg(g::float8 ORDER BY g) r FROM generate_series(1, 16) g) v;

-- The heuristic above 16 players: 200 players with ratings 1..200 (total
-- 20100), two and three teams; sizes within one.  Two teams reach the
-- optimum 0; with three the swaps stop at a local optimum of 2 (6700, 6701,
-- 6699: no single swap between the outer teams moves exactly 1), where the
-- optimum is 0: the heuristic is not exact.
SELECT (pg_temp.bt_summary(r, mm.balance_teams(r, 2))).*,
	   (pg_temp.bt_summary(r, mm.balance_teams(r, 3))).*
  FROM (SELECT array_agg(g::float8 ORDER BY g) r FROM generate_series(1, 200) g) v;
-- 200 players with 40 parties of 3 and 80 solo players into 8 teams: sizes
-- exactly 25, no party split, and the same answer twice.
WITH v AS (
	SELECT array_agg(1000 + (g * 7919) % 997 ORDER BY g)::float8[] AS r,
		   array_agg(CASE WHEN g <= 120 THEN (g - 1) / 3 ELSE 1000 + g END ORDER BY g) AS p
	  FROM generate_series(1, 200) g
)
SELECT (pg_temp.bt_summary(r, mm.balance_teams(r, 8, p))).sizes,
	   (SELECT count(*) FROM (SELECT 1 FROM unnest(p, mm.balance_teams(r, 8, p)) u(pp, t)
							   GROUP BY pp HAVING count(DISTINCT t) > 1) s) AS parties_split,
	   mm.balance_teams(r, 8, p) = mm.balance_teams(r, 8, p) AS deterministic,
	   (pg_temp.bt_summary(r, mm.balance_teams(r, 8, p))).spread
		 < 0.01 * (SELECT sum(x) / 8 FROM unnest(r) x) AS spread_below_1pct
  FROM v;
-- 17 players: the heuristic path, still sizes 9 and 8.
SELECT (pg_temp.bt_summary(r, mm.balance_teams(r))).sizes
  FROM (SELECT array_agg(g::float8 ORDER BY g) r FROM generate_series(1, 17) g) v;

-- NULL arguments: NULL ratings or team_count give NULL.
SELECT mm.balance_teams(NULL) IS NULL AS null_ratings,
	   mm.balance_teams('{1,2}', NULL) IS NULL AS null_team_count;

-- Bad input.
SELECT mm.balance_teams('{1,NaN,3}');
SELECT mm.balance_teams('{1,2,Infinity}');
SELECT mm.balance_teams('{-Infinity,2}');
SELECT mm.balance_teams('{1,NULL,3}');
SELECT mm.balance_teams('{{1,2},{3,4}}');
SELECT mm.balance_teams('{}');
SELECT mm.balance_teams('{1,2,3}', 1);
SELECT mm.balance_teams('{1,2,3}', -2);
SELECT mm.balance_teams('{1,2,3}', 4);
SELECT mm.balance_teams('{1,2,3}', 2, '{1,2}');
SELECT mm.balance_teams('{1,2,3}', 2, '{1,2,3,4}');
SELECT mm.balance_teams('{1,2,3}', 2, '{1,NULL,3}');
SELECT mm.balance_teams('{1,2,3,4}', 2, '{{1,2},{3,4}}');
SELECT mm.balance_teams('{1,2,3}', 2, '{}');
-- parties leaving fewer groups than teams
SELECT mm.balance_teams('{1,2,3}', 2, '{5,5,5}');
SELECT mm.balance_teams('{1,2,3,4,5,6}', 3, '{1,1,1,2,2,2}');
-- 201 players
SELECT mm.balance_teams(array_fill(1.0::float8, ARRAY[201]));
-- finite ratings whose sum overflows: refused (the teams' totals could not be compared)
SELECT mm.balance_teams('{1e308,1e308,-1e308,-1e308,1,2,3}'::float8[], 2);

DROP TABLE bt_case, bt_player, bt_brute, bt_answer;

-- many parties of one size into teams they cannot fill evenly: the sizes
-- are as even as the parties allow (the search for them tried every order
-- of the parties and gave up, reporting too few groups)
SELECT array_agg(c ORDER BY c) AS team_sizes
  FROM (SELECT count(*) c FROM unnest(mm.balance_teams(array(SELECT 1::float8 FROM generate_series(1, 50)), 3,
                                                       array(SELECT (i / 3)::int FROM generate_series(1, 50) i))) t
         GROUP BY t) x;
SELECT min(c) AS smallest, max(c) AS largest, count(*) AS teams
  FROM (SELECT count(*) c FROM unnest(mm.balance_teams(array(SELECT (i * 7 % 13)::float8 FROM generate_series(1, 200) i), 50,
                                                       array(SELECT (i / 3)::int FROM generate_series(1, 200) i))) t
         GROUP BY t) x;
