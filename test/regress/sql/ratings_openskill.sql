-- mm.openskill_rate / mm.openskill_predict_win: published values from
-- openskill.js's own tests (Plackett-Luce, default options: mu 25, sigma 25/3,
-- beta 25/6, kappa 1e-4, tau 25/300), properties, and every error path.

-- Compares one call's rows with the published (mu, sigma) per player, to 6
-- decimals; prints the rounded result next to the check.
CREATE FUNCTION pg_temp.os_check(mu float8[], sigma float8[], team int[], rank int[],
								 published float8[])
RETURNS TABLE (player bigint, mu numeric, sigma numeric, matches_published boolean)
LANGUAGE sql IMMUTABLE AS $$
	SELECT r.ord, round(r.mu::numeric, 6), round(r.sigma::numeric, 6),
		   abs(r.mu - published[2 * r.ord - 1]) < 1e-6
		   AND abs(r.sigma - published[2 * r.ord]) < 1e-6
	  FROM mm.openskill_rate(mu, sigma, team, rank) WITH ORDINALITY r(mu, sigma, ord)
	 ORDER BY r.ord
$$;

-- rate.test.ts "keeps rank": 1v1 of new players, player 1 wins.
SELECT * FROM pg_temp.os_check('{25,25}', ARRAY[25/3.0, 25/3.0], '{1,2}', '{1,2}',
	'{27.635389493140497,8.06590141354368,22.364610506859503,8.06590141354368}');
-- "reverses rank": the same game, player 2 wins.
SELECT * FROM pg_temp.os_check('{25,25}', ARRAY[25/3.0, 25/3.0], '{1,2}', '{2,1}',
	'{22.364610506859503,8.06590141354368,27.635389493140497,8.06590141354368}');
-- "rate accepts and runs a placket-luce model by default": 4-player FFA.
SELECT * FROM pg_temp.os_check('{29.182,27.174,16.672,25}', ARRAY[4.782,4.922,6.217,25/3.0],
	'{1,2,3,4}', '{1,2,3,4}',
	'{30.210227447000438,4.765617924939384,27.644725221915632,4.883479590134575,
	  17.4036218889969,6.101259408259549,19.21460876538932,7.854669920480409}');
-- "... by default for teams": 2 v 2, team numbers arbitrary (40 beats 7).
SELECT * FROM pg_temp.os_check('{29.182,27.174,16.672,25}', ARRAY[4.782,4.922,6.217,25/3.0],
	'{40,40,7,7}', '{1,1,2,2}',
	'{29.607340941337068,4.755311788972862,27.624602782532037,4.892807828777459,
	  15.953170429143093,6.125902065139878,23.70858117648013,8.111707446126035}');
-- "accepts teams in rating order": three 2-player teams, ranks 3, 1, 2;
-- players given team by team, team numbers not in rank order.
SELECT * FROM pg_temp.os_check('{29.182,25,27.174,25,16.672,25}',
	ARRAY[4.782,25/3.0,4.922,25/3.0,6.217,25/3.0], '{3,3,1,1,2,2}', '{3,3,1,1,2,2}',
	'{27.857622571955794,4.744504197327133,20.97892943330433,8.129851804000902,
	  27.990904891666695,4.901705733959291,27.341233554297506,8.2314516336455,
	  17.607030910762578,6.141282638892306,26.67983701239816,8.149157818911323}');
-- "allows ties": ranks 1, 2, 2.
SELECT * FROM pg_temp.os_check('{10,5,0}', '{8,10,12}', '{1,2,3}', '{1,2,2}',
	'{11.942996666741225,7.926888197620324,2.9381178546315034,9.653804487570165,
	  -1.4024317012198733,11.323641575516767}');
-- "fixes orders of ties": ranks 2, 4, 2, 1.
SELECT * FROM pg_temp.os_check('{15,20,25,30}', ARRAY[25/3.0,25/3.0,25/3.0,25/3.0],
	'{1,2,3,4}', '{2,4,2,1}',
	'{15.340043358359136,8.213141619804967,18.007678675484204,8.189033933813437,
	  24.25801928251219,8.166918055585525,32.39425868364447,8.247687230833794}');
-- "four-way-tie with newbies": nobody moves, sigma shrinks.
SELECT * FROM pg_temp.os_check('{25,25,25,25}', ARRAY[25/3.0,25/3.0,25/3.0,25/3.0],
	'{1,2,3,4}', '{1,1,1,1}',
	'{25,8.263571791259416,25,8.263571791259416,25,8.263571791259416,25,8.263571791259416}');
-- "accepts a misordered rank ordering": ranks 2, 1, 4, 3; rank values only
-- order (10, 5, 40, 30 is the same game).
SELECT * FROM pg_temp.os_check('{25,25,25,25}', ARRAY[25/3.0,25/3.0,25/3.0,25/3.0],
	'{1,2,3,4}', '{10,5,40,30}',
	'{26.55291815138952,8.17961798837266,27.795252672501135,8.263571791259416,
	  20.962412806387245,8.084127880168786,24.689416369722096,8.084127880168786}');

-- Called in the select list as well as in FROM.
SELECT round((r).mu::numeric, 6) AS mu, round((r).sigma::numeric, 6) AS sigma
  FROM (SELECT mm.openskill_rate('{25,25}', ARRAY[25/3.0, 25/3.0], '{1,2}', '{1,2}') AS r) s;

-- Properties on a 2 v 1 won by the pair, one of whom is a sure player
-- (sigma 2): every mu of the winners rises and the loser's falls; every
-- sigma shrinks below the sigma after tau; the sure player's mu and sigma
-- move proportionally less than the unsure team-mate's.
SELECT mu[1] > 25 AND mu[2] > 25 AND mu[3] < 25 AS winners_gain,
	   sigma[1] < sqrt(4 + (25/300.0) ^ 2) AND sigma[2] < sqrt(64 + (25/300.0) ^ 2)
	   AND sigma[3] < sqrt(64 + (25/300.0) ^ 2) AS all_sigmas_shrink,
	   mu[1] - 25 < mu[2] - 25 AS sure_player_gains_less,
	   sigma[1] / sqrt(4 + (25/300.0) ^ 2) > sigma[2] / sqrt(64 + (25/300.0) ^ 2)
		 AS sure_player_sigma_shrinks_less
  FROM (SELECT array_agg(mu ORDER BY ord) mu, array_agg(sigma ORDER BY ord) sigma
		  FROM mm.openskill_rate('{25,25,25}', '{2,8,8}', '{1,1,2}', '{1,1,2}')
			   WITH ORDINALITY r(mu, sigma, ord)) s;
-- Huge mu differences do not overflow exp(): a certain result teaches
-- nothing, so mu stays and sigma is the sigma after tau, sqrt(1 + tau^2).
SELECT round(mu::numeric, 6) AS mu, round(sigma::numeric, 6) AS sigma
  FROM mm.openskill_rate('{1e6,0}', '{1,1}', '{1,2}', '{1,2}') WITH ORDINALITY r(mu, sigma, o)
 ORDER BY o;

-- predict_win: published values (predict-win.test.ts).
SELECT array(SELECT round(p::numeric, 6)
			   FROM unnest(mm.openskill_predict_win(
					ARRAY[25,32.444,73.381,25.188], ARRAY[25/3.0,5.123,1.421,6.211],
					'{1,1,2,2}')) p) AS two_teams;
-- published: 0.0008308945674377, 0.9991691054325622
SELECT array(SELECT round(p::numeric, 6)
			   FROM unnest(mm.openskill_predict_win(
					ARRAY[25,32.444,73.381,25.188,32.444,25.188],
					ARRAY[25/3.0,5.123,1.421,6.211,5.123,6.211],
					'{1,1,2,2,3,4}')) p) AS four_teams;
-- published: 0.32579822053781543, 0.49965489287103865, 0.12829642754274315,
-- 0.04625045904840272
SELECT array(SELECT round(p::numeric, 6)
			   FROM unnest(mm.openskill_predict_win(
					'{25.704020819730385,24.94415013523696,29.292922890627658,25.059411748211403,21.598674363731682}',
					'{7.893074938449104,8.156810439252277,8.011452568371537,8.155255551436932,7.891245891696633}',
					'{1,2,3,4,5}')) p) AS five_player_ffa;
-- published: 0.20522540383388552, 0.19504283187751015, 0.25268360117768013,
-- 0.19657935197103676, 0.15046881113988744

-- Ascending team-number order, whatever the input order: team 3 first.
SELECT array(SELECT round(p::numeric, 6) FROM unnest(mm.openskill_predict_win(
		ARRAY[25,25,40,40], ARRAY[5,5,5,5], '{7,7,3,3}')) p) AS by_team_number;
-- Equal teams: equal shares, for 2, 3 and 5 teams.
SELECT array(SELECT round(p::numeric, 6) FROM unnest(mm.openskill_predict_win(
			'{30,20,30,20}', '{4,6,4,6}', '{1,1,2,2}')) p) AS two_equal,
	   array(SELECT round(p::numeric, 6) FROM unnest(mm.openskill_predict_win(
			'{25,25,25}', '{8,8,8}', '{1,2,3}')) p) AS three_equal,
	   array(SELECT round(p::numeric, 6) FROM unnest(mm.openskill_predict_win(
			'{25,25,25,25,25}', '{8,8,8,8,8}', '{1,2,3,4,5}')) p) AS five_equal;
-- Sums to 1 on 200 random games of 2..8 teams and 2..32 players.
SELECT setseed(0.27);
CREATE TEMP TABLE os_game AS
SELECT g, array_agg(15 + random() * 20 ORDER BY i) AS mu,
	   array_agg(1 + random() * 8 ORDER BY i) AS sigma,
	   array_agg(i % (2 + g % 7) ORDER BY i) AS team
  FROM generate_series(1, 200) g, generate_series(1, 2 + g % 7 + g % 25) i
 GROUP BY g;
SELECT count(*) AS games,
	   count(*) FILTER (WHERE abs(total - 1) < 1e-12) AS sums_to_one,
	   count(*) FILTER (WHERE lowest > 0 AND highest < 1) AS strictly_between
  FROM (SELECT g, sum(p) AS total, min(p) AS lowest, max(p) AS highest
		  FROM os_game, unnest(mm.openskill_predict_win(mu, sigma, team)) p
		 GROUP BY g) s;
-- openskill_rate on the same games (rank = team number): one row per player,
-- finite, sigma positive and not above sigma after tau.
SELECT count(*) AS players,
	   count(*) FILTER (WHERE r.new_sigma > 0
						AND r.new_sigma <= sqrt(s.sigma ^ 2 + (25/300.0) ^ 2)) AS sigma_ok,
	   count(*) FILTER (WHERE r.new_mu BETWEEN -1000 AND 1000) AS mu_finite
  FROM os_game,
	   LATERAL mm.openskill_rate(mu, sigma, team, team) WITH ORDINALITY r(new_mu, new_sigma, ord),
	   LATERAL (SELECT os_game.sigma[r.ord::int] AS sigma) s;
DROP TABLE os_game;

-- NULL arguments: STRICT.
SELECT count(*) AS null_rows FROM mm.openskill_rate(NULL, '{1,1}', '{1,2}', '{1,2}');
SELECT mm.openskill_predict_win('{25,25}', '{8,8}', NULL) IS NULL AS null_result;

-- Bad input.
SELECT * FROM mm.openskill_rate('{25,NaN}', '{8,8}', '{1,2}', '{1,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{8,Infinity}', '{1,2}', '{1,2}');
SELECT * FROM mm.openskill_rate('{-Infinity,25}', '{8,8}', '{1,2}', '{1,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{8,0}', '{1,2}', '{1,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{-1,8}', '{1,2}', '{1,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{8,8,8}', '{1,2}', '{1,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{8,8}', '{1,2,3}', '{1,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{8,8}', '{1,2}', '{1}');
SELECT * FROM mm.openskill_rate('{25,NULL}', '{8,8}', '{1,2}', '{1,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{8,8}', '{1,NULL}', '{1,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{8,8}', '{1,2}', '{NULL,2}');
SELECT * FROM mm.openskill_rate('{{25,25},{25,25}}', '{8,8,8,8}', '{1,1,2,2}', '{1,1,2,2}');
SELECT * FROM mm.openskill_rate('{25,25}', '{8,8}', '{1,1}', '{1,1}');
SELECT * FROM mm.openskill_rate('{}', '{}', '{}', '{}');
SELECT * FROM mm.openskill_rate('{25,25,25}', '{8,8,8}', '{1,1,2}', '{1,2,2}');
SELECT * FROM mm.openskill_rate('{1e308,1e308,0}', '{8,8,8}', '{1,1,2}', '{1,1,2}');
SELECT * FROM mm.openskill_rate(array_fill(25.0::float8, ARRAY[10001]),
								array_fill(8.0::float8, ARRAY[10001]),
								array_fill(1, ARRAY[10001]), array_fill(1, ARRAY[10001]));
SELECT mm.openskill_predict_win('{25,NaN}', '{8,8}', '{1,2}');
SELECT mm.openskill_predict_win('{25,25}', '{8,0}', '{1,2}');
SELECT mm.openskill_predict_win('{25,25}', '{8,8}', '{1,2,3}');
SELECT mm.openskill_predict_win('{25,25}', '{8,8}', '{5,5}');
SELECT mm.openskill_predict_win('{25,25}', '{8,8}', '{{1,2}}');
