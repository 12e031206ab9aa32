-- Fairness you can prove: the prediction kept with each rated match
-- (mm.match_predictions, Elo, Glicko-2, OpenSkill; none for an unrated
-- queue), mm.report_result's per-team scores, mm.prediction_quality,
-- mm.fairness_report and mm.replay_ratings.  Every figure is checked against
-- a computation in this file that does not use the extension's code
-- (numeric SQL from the stored ratings and results), or by hand.
SET timezone = 'UTC';
-- the id sequences as this file found them, restored at its end, so that
-- the files after it (which print ids) do not depend on it
SELECT nextval('mm.tickets_id_seq') AS fa_next_ticket, nextval('mm.matches_id_seq') AS fa_next_match \gset
\i sql/include/try.sql

-- One ticket per player (latency to eu as given) at `at`, a tick one
-- second later; the match's id.
CREATE FUNCTION pg_temp.play(q text, players text[], pings int[], at timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO mm.tickets (queue, players, created_at)
	SELECT q, jsonb_build_array(jsonb_build_object('id', u.p, 'latencies', jsonb_build_object('eu', u.ms))), at
	  FROM unnest(players, pings) u(p, ms);
	PERFORM mm.tick(q, at + '1 second');
	RETURN (SELECT max(m.id) FROM mm.matches m WHERE m.queue = q);
END $$;
-- A report's figures one per line, numbers rounded to 6 places.
CREATE FUNCTION pg_temp.figures(j jsonb) RETURNS TABLE (figure text, value text) LANGUAGE sql AS $$
	WITH RECURSIVE f(path, v) AS (
		SELECT e.key, e.value FROM jsonb_each(j) e
		UNION ALL
		SELECT f.path || '.' || e.key, e.value FROM f, jsonb_each(f.v) e WHERE jsonb_typeof(f.v) = 'object'
	)
	SELECT f.path, CASE WHEN jsonb_typeof(f.v) = 'number' THEN round(f.v::text::numeric, 6)::text ELSE f.v::text END
	  FROM f WHERE jsonb_typeof(f.v) <> 'object' AND f.path NOT IN ('from_time', 'to_time') ORDER BY 1
$$;
-- Reports the match won by the team of `winner` (NULL: a tie) at `at`.
CREATE FUNCTION pg_temp.won(match bigint, winner text, at timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM mm.report_result(match, (SELECT jsonb_object_agg(t.team,
									   CASE WHEN winner IS NULL OR t.team = (SELECT mp.team FROM mm.match_players mp
																			WHERE mp.match_id = match AND mp.player_id = winner)
											THEN 1 ELSE 2 END)
									  FROM (SELECT DISTINCT mp.team FROM mm.match_players mp WHERE mp.match_id = match) t),
							 at);
END $$;

-- ===================================================================
-- 1. The prediction kept with the match
-- ===================================================================
SELECT mm.create_queue('fa_elo', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "rules": [{"name": "ping", "type": "latency", "max_ms": 200}],
  "rating": {"system": "elo", "pool": "fa_elo"}}');
SELECT mm.create_queue('fa_g2', '{"teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "rating": {"system": "glicko2", "pool": "fa_g2"}}');
SELECT mm.create_queue('fa_os', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "rating": {"system": "openskill", "pool": "fa_os"}}');
SELECT mm.create_queue('fa_plain', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}');

-- Elo: imported ratings, so the predictions differ from a coin flip.
SELECT count(*) FROM (SELECT mm.set_rating(p, 'fa_elo', r, NULL, NULL, '2030-01-01 00:00:00')
						FROM (VALUES ('e1', 1700), ('e2', 1500), ('e3', 1450), ('e4', 1300)) v(p, r)) s;
SELECT pg_temp.play('fa_elo', '{e1,e2}', '{20,40}', '2030-01-01 01:00:00') AS m1 \gset
SELECT pg_temp.won(:m1, 'e1', '2030-01-01 01:10:00');
SELECT pg_temp.play('fa_elo', '{e3,e4}', '{30,90}', '2030-01-01 01:20:00') AS m2 \gset
SELECT pg_temp.won(:m2, 'e4', '2030-01-01 01:30:00');
SELECT pg_temp.play('fa_elo', '{e1,e4}', '{25,35}', '2030-01-01 01:40:00') AS m3 \gset
SELECT pg_temp.won(:m3, 'e1', '2030-01-01 01:50:00');
SELECT pg_temp.play('fa_elo', '{e2,e3}', '{10,150}', '2030-01-01 02:00:00') AS m4 \gset
SELECT pg_temp.won(:m4, NULL, '2030-01-01 02:10:00');
SELECT pg_temp.play('fa_elo', '{e2,e4}', '{15,45}', '2030-01-01 02:20:00') AS m5 \gset
SELECT pg_temp.won(:m5, 'e4', '2030-01-01 02:30:00');
-- one row per team, team numbers from the config (red 1, blue 2), written
-- at the match's creation
SELECT p.match_id - :m1 AS match, p.team, p.team_name, p.pool, p.system, p.draw_probability,
	   p.created_at = m.created_at AS with_match
  FROM mm.match_predictions p JOIN mm.matches m ON m.queue = p.queue AND m.id = p.match_id
 WHERE p.queue = 'fa_elo' ORDER BY 1, 2;
-- Each team's probability against the Elo expectation worked out from
-- the ratings before the game (mm.rating_history), in numeric: equal to
-- 1e-12, and the two teams' add up to 1.
SELECT p.match_id - :m1 AS match, p.team_name, round(p.win_probability::numeric, 6) AS p,
	   abs(p.win_probability::numeric
		   - 1 / (1 + power(10::numeric, ((o.rating_before - s.rating_before) / 400)::numeric))) < 1e-12 AS agrees,
	   p.team_rating = s.rating_before AS team_rating, p.rating_min = s.rating_before AND p.rating_max = s.rating_before AS range
  FROM mm.match_predictions p
  JOIN mm.match_players mps ON mps.queue = p.queue AND mps.match_id = p.match_id AND mps.team = p.team_name
  JOIN mm.match_players mpo ON mpo.queue = p.queue AND mpo.match_id = p.match_id AND mpo.team <> p.team_name
  JOIN mm.rating_history s ON s.match_id = p.match_id AND s.player_id = mps.player_id
  JOIN mm.rating_history o ON o.match_id = p.match_id AND o.player_id = mpo.player_id
 WHERE p.queue = 'fa_elo' ORDER BY 1, 2;
SELECT match_id - :m1 AS match, abs(sum(win_probability) - 1) < 1e-15 AS sums_to_1
  FROM mm.match_predictions WHERE queue = 'fa_elo' GROUP BY match_id ORDER BY 1;

-- Glicko-2, 2v2 (a party of two in the second match): the teams' mean
-- rating and mean RD before the game in Glickman's expectation,
-- 1 / (1 + 10^(-g(sqrt(RD_a^2 + RD_b^2)) (r_a - r_b) / 400)), g(x) =
-- 1 / sqrt(1 + 3 q^2 x^2 / pi^2), q = ln 10 / 400.
SELECT pg_temp.play('fa_g2', '{g1,g2,g3,g4}', '{1,1,1,1}', '2030-01-02 01:00:00') AS g1 \gset
SELECT pg_temp.won(:g1, 'g1', '2030-01-02 01:10:00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('fa_g2', '[{"id": "g1"}, {"id": "g2"}]', '2030-01-02 01:20:00'),
  ('fa_g2', '[{"id": "g3"}]', '2030-01-02 01:20:00'), ('fa_g2', '[{"id": "g4"}]', '2030-01-02 01:20:00');
SELECT mm.tick('fa_g2', '2030-01-02 01:20:01');
SELECT max(id) AS g2 FROM mm.matches WHERE queue = 'fa_g2' \gset
SELECT pg_temp.won(:g2, 'g3', '2030-01-02 01:30:00');
SELECT pg_temp.play('fa_g2', '{g1,g2,g3,g4}', '{1,1,1,1}', '2030-01-02 02:00:00') AS g3 \gset
SELECT pg_temp.won(:g3, 'g2', '2030-01-02 02:10:00');
WITH team AS (
	SELECT mp.match_id, mp.team, avg(h.rating_before::numeric) AS r, avg(h.rd_before::numeric) AS rd,
		   min(h.rating_before) AS lo, max(h.rating_before) AS hi
	  FROM mm.match_players mp JOIN mm.rating_history h ON h.match_id = mp.match_id AND h.player_id = mp.player_id
	 WHERE mp.queue = 'fa_g2' GROUP BY mp.match_id, mp.team
), expected AS (
	SELECT a.match_id, a.team, a.lo, a.hi, a.r,
		   1 / (1 + power(10::numeric, -(1 / sqrt(1 + 3 * (ln(10::numeric) / 400) ^ 2 * (a.rd ^ 2 + b.rd ^ 2) / pi()::numeric ^ 2))
									 * (a.r - b.r) / 400)) AS e
	  FROM team a JOIN team b ON b.match_id = a.match_id AND b.team <> a.team
)
SELECT p.match_id - :g1 AS match, p.team_name, round(p.win_probability::numeric, 6) AS p,
	   abs(p.win_probability::numeric - e.e) < 1e-6 AS agrees,
	   abs(p.team_rating::numeric - e.r) < 1e-9 AS team_rating, p.rating_min = e.lo AND p.rating_max = e.hi AS range
  FROM mm.match_predictions p JOIN expected e ON e.match_id = p.match_id AND e.team = p.team_name
 WHERE p.queue = 'fa_g2' ORDER BY 1, 2;

-- OpenSkill: openskill_predict_win of the mu and sigma before the game.
SELECT pg_temp.play('fa_os', '{o1,o2}', '{1,1}', '2030-01-03 01:00:00') AS o1 \gset
SELECT pg_temp.won(:o1, 'o1', '2030-01-03 01:10:00');
SELECT pg_temp.play('fa_os', '{o1,o2}', '{1,1}', '2030-01-03 01:20:00') AS o2 \gset
SELECT pg_temp.won(:o2, 'o1', '2030-01-03 01:30:00');
SELECT p.match_id - :o1 AS match, p.team_name, round(p.win_probability::numeric, 6) AS p,
	   p.win_probability = (mm.openskill_predict_win(ARRAY[s.mu_before, o.mu_before], ARRAY[s.sigma_before, o.sigma_before],
													'{1,2}'))[1] AS agrees
  FROM mm.match_predictions p
  JOIN mm.match_players mps ON mps.queue = p.queue AND mps.match_id = p.match_id AND mps.team = p.team_name
  JOIN mm.match_players mpo ON mpo.queue = p.queue AND mpo.match_id = p.match_id AND mpo.team <> p.team_name
  JOIN mm.rating_history s ON s.match_id = p.match_id AND s.player_id = mps.player_id
  JOIN mm.rating_history o ON o.match_id = p.match_id AND o.player_id = mpo.player_id
 WHERE p.queue = 'fa_os' ORDER BY 1, 2;

-- OpenSkill also predicts a draw: the same for every team of the match,
-- openskill_predict_draw of the ratings before the game.  Elo and Glicko-2
-- have none.
SELECT p.match_id - :o1 AS match, p.team_name, round(p.draw_probability::numeric, 6) AS draw,
	   abs(p.draw_probability - mm.openskill_predict_draw(ARRAY[s.mu_before, o.mu_before], ARRAY[s.sigma_before, o.sigma_before],
														 '{1,2}')) < 1e-15 AS agrees
  FROM mm.match_predictions p
  JOIN mm.match_players mps ON mps.queue = p.queue AND mps.match_id = p.match_id AND mps.team = p.team_name
  JOIN mm.match_players mpo ON mpo.queue = p.queue AND mpo.match_id = p.match_id AND mpo.team <> p.team_name
  JOIN mm.rating_history s ON s.match_id = p.match_id AND s.player_id = mps.player_id
  JOIN mm.rating_history o ON o.match_id = p.match_id AND o.player_id = mpo.player_id
 WHERE p.queue = 'fa_os' ORDER BY 1, 2;
SELECT p.system, count(*) AS teams, count(p.draw_probability) AS with_draw
  FROM mm.match_predictions p WHERE p.queue IN ('fa_elo', 'fa_g2', 'fa_os') GROUP BY 1 ORDER BY 1;
-- predictDraw against the published values of the OpenSkill manual
-- (openskill.me): two players at 35 (sigma 1 and 1.1) draw with
-- 0.4868868769871696; a team of two against three, all at 35 and sigma 1,
-- with 0.0002807397636509501.
SELECT round(mm.openskill_predict_draw('{35,35}', '{1,1.1}', '{1,2}')::numeric, 12) AS one_on_one,
	   round(0.4868868769871696, 12) AS published,
	   round(mm.openskill_predict_draw('{35,35,35,35,35}', '{1,1,1,1,1}', '{1,1,2,2,2}')::numeric, 15) AS two_on_three,
	   round(0.0002807397636509501, 15) AS published_2;

-- An unrated queue keeps no prediction.
SELECT pg_temp.play('fa_plain', '{u1,u2}', '{1,1}', '2030-01-04 01:00:00') IS NOT NULL AS formed;
SELECT count(*) AS unrated_predictions FROM mm.match_predictions WHERE queue = 'fa_plain';
-- A prediction is not written twice for a match.
SELECT mm.record_match_predictions('fa_elo', m.created_at) AS again FROM mm.matches m WHERE m.id = :m1;

-- ===================================================================
-- 2. Per-team scores with a result
-- ===================================================================
SELECT pg_temp.play('fa_elo', '{e1,e3}', '{20,30}', '2030-01-01 03:00:00') AS m6 \gset
SELECT regexp_replace(pg_temp.try(format($$SELECT * FROM mm.report_result(%s, '{"red": 1, "blue": 2}', '2030-01-01 03:10:00', %L)$$, :m6, s)), 'match \d+', 'match N')
  FROM unnest(ARRAY['[1, 2]', '{"red": 3}', '{"red": 3, "green": 1}', '{"red": "3", "blue": 1}']) s;
SELECT count(*) AS reported FROM mm.report_result(:m6, '{"red": 1, "blue": 2}', '2030-01-01 03:10:00',
												  '{"red": 16, "blue": 3}');
SELECT scores FROM mm.match_scores WHERE match_id = :m6;
-- without scores (the 4-argument and the named forms) nothing is kept
SELECT pg_temp.play('fa_elo', '{e2,e4}', '{20,30}', '2030-01-01 03:20:00') AS m7 \gset
SELECT count(*) FROM mm.report_result('fa_elo', :m7, '{"red": 2, "blue": 1}', '2030-01-01 03:30:00');
SELECT count(*) AS scores_of_m7 FROM mm.match_scores WHERE match_id = :m7;
SELECT pg_temp.play('fa_elo', '{e1,e2}', '{20,30}', '2030-01-01 03:40:00') AS m8 \gset
SELECT count(*) FROM mm.report_result(match_id => :m8, ranks => '{"red": 2, "blue": 1}',
									  now => '2030-01-01 03:50:00', scores => '{"red": 9, "blue": 10}');
-- a second report fails as a whole: the first one's scores stay
SELECT regexp_replace(pg_temp.try(format($$SELECT * FROM mm.report_result(%s, '{"red": 1, "blue": 2}', '2030-01-01 03:55:00', '{"red": 1, "blue": 0}')$$, :m8)), 'match \d+', 'match N');
SELECT count(*) AS scores_of_m8 FROM mm.match_scores WHERE match_id = :m8;

-- ===================================================================
-- 3. Calibration: mm.prediction_quality
-- ===================================================================
-- Recomputed here in numeric from the stored predictions and results:
-- team 1's (red's) probability p and outcome y (1, 0.5, 0).
CREATE TEMP TABLE games AS
SELECT p.match_id, p.win_probability::numeric AS p,
	   CASE WHEN (r.ranks ->> 'red')::int < (r.ranks ->> 'blue')::int THEN 1
			WHEN (r.ranks ->> 'red')::int = (r.ranks ->> 'blue')::int THEN 0.5 ELSE 0 END::numeric AS y
  FROM mm.match_predictions p JOIN mm.match_results r ON r.queue = p.queue AND r.match_id = p.match_id
 WHERE p.queue = 'fa_elo' AND p.team = 1;
SELECT count(*) AS games, count(*) FILTER (WHERE y = 0.5) AS ties FROM games;
WITH q AS (SELECT mm.prediction_quality('fa_elo', '2030-01-01', '2030-01-02') AS j),
	 ref AS (
	SELECT -avg(y * log(greatest(least(p, 0.99), 0.01)) + (1 - y) * log(1 - greatest(least(p, 0.99), 0.01))) AS deviance,
		   avg((p - y) ^ 2) AS brier, -avg(y * ln(p) + (1 - y) * ln(1 - p)) AS log_loss,
		   avg(((p > 0.5) = (y = 1))::int) FILTER (WHERE y <> 0.5 AND p <> 0.5) AS accuracy,
		   avg((0.5 - y) ^ 2) AS baseline_brier
	  FROM games)
SELECT (q.j ->> 'matches')::int AS matches, (q.j ->> 'ties')::int AS ties, (q.j ->> 'decided')::int AS decided,
	   round((q.j ->> 'deviance')::numeric, 6) AS deviance, abs((q.j ->> 'deviance')::numeric - ref.deviance) < 1e-12 AS deviance_ok,
	   abs((q.j ->> 'brier')::numeric - ref.brier) < 1e-12 AS brier_ok,
	   abs((q.j ->> 'log_loss')::numeric - ref.log_loss) < 1e-12 AS log_loss_ok,
	   abs((q.j ->> 'accuracy')::numeric - ref.accuracy) < 1e-12 AS accuracy_ok, round(ref.accuracy, 4) AS accuracy,
	   abs((q.j #>> '{baseline,deviance}')::numeric - log(2::numeric)) < 1e-12 AS baseline_deviance_ok,
	   abs((q.j #>> '{baseline,brier}')::numeric - ref.baseline_brier) < 1e-12 AS baseline_brier_ok,
	   abs((q.j #>> '{baseline,log_loss}')::numeric - ln(2::numeric)) < 1e-12 AS baseline_log_loss_ok
  FROM q, ref;
-- the bins: both teams' rows, tenths of the predicted probability
WITH q AS (SELECT mm.prediction_quality('fa_elo', '2030-01-01', '2030-01-02') AS j),
	 rows AS (SELECT p, y FROM games UNION ALL SELECT 1 - p, 1 - y FROM games),
	 ref AS (SELECT least(floor(p * 10), 9) / 10 AS lo, count(*) AS n, avg(p) AS predicted, avg(y) AS actual
			   FROM rows GROUP BY 1)
SELECT (b ->> 'from')::numeric AS "from", (b ->> 'to')::numeric AS "to", (b ->> 'teams')::int AS teams,
	   round((b ->> 'predicted')::numeric, 4) AS predicted, round((b ->> 'actual')::numeric, 4) AS actual,
	   ref.n = (b ->> 'teams')::int AND abs(ref.predicted - (b ->> 'predicted')::numeric) < 1e-12
	   AND abs(ref.actual - (b ->> 'actual')::numeric) < 1e-12 AS agrees
  FROM q, jsonb_array_elements(q.j -> 'bins') b LEFT JOIN ref ON ref.lo = (b ->> 'from')::numeric ORDER BY 1;
-- A hand example: team 1 won both games, predicted at 0.995 (clamped to
-- 0.99 for the deviance) and at 0.3 (a miss).
SELECT round((j ->> 'deviance')::numeric, 9) AS deviance,
	   round(-(log(0.99) + log(0.3)) / 2, 9) AS by_hand,
	   (j ->> 'accuracy')::numeric AS accuracy, (j ->> 'brier')::numeric AS brier
  FROM mm.prediction_figures('{0.995, 0.3}', '{1, 1}') j;
-- an empty window, and the errors
SELECT mm.prediction_quality('fa_elo', '2031-01-01', '2031-01-02') - 'from_time' - 'to_time';
SELECT pg_temp.try(s) FROM unnest(ARRAY[
	$$SELECT mm.prediction_quality(NULL, '2030-01-01', '2030-01-02')$$,
	$$SELECT mm.prediction_quality('fa_elo', NULL, '2030-01-02')$$,
	$$SELECT mm.prediction_quality('fa_elo', '2030-01-02', '2030-01-01')$$,
	$$SELECT mm.prediction_quality('fa_elo', '-infinity', '2030-01-01')$$,
	$$SELECT mm.prediction_quality('no_such_pool', '2030-01-01', '2030-01-02')$$]) s;

-- ===================================================================
-- 4. The scorecard: mm.fairness_report
-- ===================================================================
-- Hand-made: four matches of a queue (roles written as a role queue would), their predictions and
-- players (tickets give parties and latencies), two results with scores.
SELECT mm.create_queue('fa_card', '{"teams": [{"name": "red", "min": 1, "max": 3}, {"name": "blue", "min": 1, "max": 3}],
  "rules": [{"name": "ping", "type": "latency", "max_ms": 300}]}');
CREATE TEMP TABLE card_tickets AS
WITH t AS (
	INSERT INTO mm.tickets (queue, players, created_at)
	SELECT 'fa_card', v.players::jsonb, '2030-02-01 00:00:00' FROM (VALUES
		('a', '[{"id": "c1", "latencies": {"eu": 10}}, {"id": "c2", "latencies": {"eu": 20}}]'),
		('b', '[{"id": "c3", "latencies": {"eu": 30}}]'), ('c', '[{"id": "c4", "latencies": {"eu": 40}}]'),
		('d', '[{"id": "c5", "latencies": {"eu": 50}}]'), ('e', '[{"id": "c6", "latencies": {"eu": 60}}]'),
		('f', '[{"id": "c7", "latencies": {"eu": 70}}]'), ('g', '[{"id": "c8", "latencies": {"eu": 80}}]'),
		('h', '[{"id": "c9", "latencies": {"eu": 90}}, {"id": "c10", "latencies": {"eu": 100}}, {"id": "c11", "latencies": {"eu": 110}}]'),
		('i', '[{"id": "c12", "latencies": {"us": 5}}]')) v(label, players)
	RETURNING id, players)
SELECT t.id, t.players ->> 0 AS first FROM t;
SELECT count(*) FROM card_tickets;
CREATE TEMP TABLE card_matches (label text, id bigint);
WITH m AS (
	INSERT INTO mm.matches (queue, status, created_at, updated_at, region, quality)
	SELECT 'fa_card', 'ready', v.at::timestamptz, v.at::timestamptz, 'eu', 1
	  FROM (VALUES ('M1', '2030-02-01 00:01:00'), ('M2', '2030-02-01 00:02:00'), ('M3', '2030-02-01 00:03:00'),
				   ('M4', '2030-02-01 00:04:00'), ('OUT', '2030-02-02 00:00:00')) v(label, at)
	RETURNING id, created_at)
INSERT INTO card_matches SELECT 'M' || row_number() OVER (ORDER BY m.created_at), m.id FROM m;
UPDATE card_matches SET label = 'OUT' WHERE label = 'M5';
-- the players: (match, player, the ticket of its first player, team, role, autofilled)
INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team, role, autofilled)
SELECT cm.id, 'fa_card', v.player, (SELECT t.id FROM card_tickets t WHERE t.first::jsonb ->> 'id' = v.ticket_of),
	   v.team, v.role, v.autofilled
  FROM (VALUES
	-- M1: a party of two (c1, c2) against two solos: imbalanced
	('M1', 'c1', 'c1', 'red', 'tank', false), ('M1', 'c2', 'c1', 'red', 'dps', true),
	('M1', 'c3', 'c3', 'blue', 'tank', false), ('M1', 'c4', 'c4', 'blue', 'dps', false),
	-- M2: all solos: balanced
	('M2', 'c5', 'c5', 'red', 'tank', false), ('M2', 'c6', 'c6', 'red', 'dps', false),
	('M2', 'c7', 'c7', 'blue', 'tank', true), ('M2', 'c8', 'c8', 'blue', 'dps', false),
	-- M3: a party of three (c9, c10, c11) on a 3v3 against three solos
	('M3', 'c9', 'c9', 'red', 'tank', false), ('M3', 'c10', 'c9', 'red', 'dps', false),
	('M3', 'c11', 'c9', 'red', 'dps', true),
	('M3', 'c3', 'c3', 'blue', 'tank', false), ('M3', 'c4', 'c4', 'blue', 'dps', false),
	('M3', 'c5', 'c5', 'blue', 'dps', false),
	-- M4: one player without a latency to eu (c12): left out of the p95
	('M4', 'c12', 'c12', 'red', 'tank', false), ('M4', 'c6', 'c6', 'blue', 'tank', false),
	-- OUT: after the window
	('OUT', 'c7', 'c7', 'red', 'tank', true), ('OUT', 'c8', 'c8', 'blue', 'tank', true)) v(label, player, ticket_of, team, role, autofilled)
  JOIN card_matches cm ON cm.label = v.label;
-- predictions: M1 51/49 (within 2 and 5), M2 54/46 (within 5), M3 70/30,
-- M4 52/48 (exactly 2 points off: within), OUT 50/50
INSERT INTO mm.match_predictions (queue, match_id, team, win_probability, pool, team_name, system, team_rating,
								  rating_min, rating_max, created_at)
SELECT 'fa_card', cm.id, v.team, v.p, 'fa_card', CASE v.team WHEN 1 THEN 'red' ELSE 'blue' END, 'elo', v.r, v.lo, v.hi,
	   '2030-02-01 00:00:00'
  FROM (VALUES ('M1', 1, 0.51, 1510, 1400, 1620), ('M1', 2, 0.49, 1490, 1450, 1530),
			   ('M2', 1, 0.54, 1600, 1550, 1650), ('M2', 2, 0.46, 1570, 1500, 1640),
			   ('M3', 1, 0.70, 1800, 1700, 1900), ('M3', 2, 0.30, 1650, 1600, 1700),
			   ('M4', 1, 0.52, 1500, 1500, 1500), ('M4', 2, 0.48, 1486, 1486, 1486),
			   ('OUT', 1, 0.5, 1000, 1000, 1000), ('OUT', 2, 0.5, 9000, 9000, 9000)) v(label, team, p, r, lo, hi)
  JOIN card_matches cm ON cm.label = v.label;
INSERT INTO mm.match_results (match_id, queue, winner_team, ranks, reported_at)
SELECT cm.id, 'fa_card', 'red', '{"red": 1, "blue": 2}', '2030-02-01 01:00:00' FROM card_matches cm WHERE cm.label IN ('M1', 'M2');
INSERT INTO mm.match_scores (queue, match_id, scores)
SELECT 'fa_card', cm.id, CASE cm.label WHEN 'M1' THEN '{"red": 13, "blue": 2}' ELSE '{"red": 13, "blue": 11}' END::jsonb
  FROM card_matches cm WHERE cm.label IN ('M1', 'M2');
-- By hand: 4 matches in the window, all predicted.  fair_2: M1, M4 = 0.5;
-- fair_5: M1, M2, M4 = 0.75.  Gaps 20, 30, 150, 14: p50 25, p90 114,
-- p99 146.4 (linear between the sorted values).  Spreads 220, 150, 300,
-- 14: p50 185, p90 276, p99 297.6.  Premade imbalance: M1 (2 vs 1), M3
-- (3 vs 1), not M2 (1 vs 1), M4 (1 vs 1) = 0.5.  Autofill: tank 1 of 8,
-- dps 2 of 8 (c2, c11; c7 is a tank).  Latencies to eu of the 15 players who
-- have one: 10 ... 110 (c3..c6 twice): p95 over the 15 sorted values.
-- Lopsided at margin 5: M1 (lead 11), not M2 (lead 2) = 0.5.
SELECT * FROM pg_temp.figures(mm.fairness_report('fa_card', '2030-02-01', '2030-02-02', 5));
-- the same figures recomputed from the rows
WITH m AS (SELECT id FROM card_matches WHERE label <> 'OUT'),
	 lat AS (SELECT (pl.value -> 'latencies' ->> 'eu')::numeric AS ms
			   FROM m JOIN mm.match_players mp ON mp.match_id = m.id
			   JOIN mm.tickets t ON t.id = mp.ticket_id, jsonb_array_elements(t.players) pl
			  WHERE pl.value ->> 'id' = mp.player_id AND pl.value -> 'latencies' ? 'eu'),
	 ranked AS (SELECT ms, row_number() OVER (ORDER BY ms) AS i, count(*) OVER () AS n FROM lat)
SELECT (SELECT count(*) FROM lat) AS latencies,
	   -- percentile_cont: the value at (n - 1) * 0.95, linear between neighbours
	   (SELECT a.ms + ((b.n - 1) * 0.95 - floor((b.n - 1) * 0.95)) * (b.ms - a.ms)
		  FROM ranked a JOIN ranked b ON b.i = a.i + 1 WHERE a.i = floor((a.n - 1) * 0.95) + 1) AS p95_by_hand,
	   round((mm.fairness_report('fa_card', '2030-02-01', '2030-02-02') ->> 'latency_p95_ms')::numeric, 6) AS p95,
	   mm.fairness_report('fa_card', '2030-02-01', '2030-02-02') -> 'lopsided' AS lopsided_without_margin;
-- an unrated queue: no predictions, so no shares
SELECT j -> 'matches' AS matches, j -> 'predicted' AS predicted, j -> 'fair_2' AS fair_2
  FROM mm.fairness_report('fa_plain', '2030-01-04', '2030-01-05') j;
SELECT pg_temp.try(s) FROM unnest(ARRAY[
	$$SELECT mm.fairness_report(NULL, '2030-01-01', '2030-01-02')$$,
	$$SELECT mm.fairness_report('fa_card', '2030-01-02', '2030-01-02')$$,
	$$SELECT mm.fairness_report('fa_card', '2030-01-01', '2030-01-02', -1)$$,
	$$SELECT mm.fairness_report('fa_card', '2030-01-01', '2030-01-02', 'NaN')$$,
	$$SELECT mm.fairness_report('no_such_queue', '2030-01-01', '2030-01-02')$$]) s;

-- ===================================================================
-- 5. What-if: mm.replay_ratings
-- ===================================================================
-- The live settings reproduce the live ratings: fa_g2 (Glicko-2 from the
-- defaults, no import) and an Elo pool played from the defaults.
SELECT mm.create_queue('fa_elo2', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "rating": {"system": "elo", "pool": "fa_elo2"}}');
SELECT pg_temp.won(pg_temp.play('fa_elo2', ARRAY[a, b], '{1,1}', at), w, at + '10 minutes')
  FROM (VALUES ('x1', 'x2', 'x1', '2030-03-01 01:00:00'::timestamptz), ('x3', 'x4', 'x4', '2030-03-01 01:20:00'),
			   ('x1', 'x3', 'x3', '2030-03-01 01:40:00'), ('x2', 'x4', NULL, '2030-03-01 02:00:00'),
			   ('x1', 'x4', 'x1', '2030-03-01 02:20:00'), ('x2', 'x3', 'x2', '2030-03-01 02:40:00')) v(a, b, w, at);
BEGIN READ ONLY;
SELECT j -> 'results' AS results, j -> 'settings' AS settings, j -> 'ratings' AS ratings,
	   j #> '{replay,deviance}' = j #> '{live,deviance}' AS same_deviance
  FROM mm.replay_ratings('fa_elo2', '{"system": "elo"}', '2030-03-01', '2030-03-02') j;
SELECT j -> 'results' AS results, j -> 'settings' AS settings, j -> 'ratings' AS ratings,
	   j #> '{replay,deviance}' = j #> '{live,deviance}' AS same_deviance
  FROM mm.replay_ratings('fa_g2', '{"system": "glicko2"}', '2030-01-02', '2030-01-03') j;
-- the replayed ratings, player by player, against mm.ratings
SELECT r.player_id, (x.value ->> 'rating')::float8 = r.rating AS rating, (x.value ->> 'rd')::float8 = r.rd AS rd,
	   (x.value ->> 'games')::int = r.games AS games
  FROM mm.replay_ratings('fa_g2', '{"system": "glicko2", "output_ratings": true}', '2030-01-02', '2030-01-03') j,
	   jsonb_each(j #> '{ratings,player_ratings}') x JOIN mm.ratings r ON r.player_id = x.key AND r.pool = 'fa_g2'
 ORDER BY 1;
COMMIT;
-- Other settings: a fixed K of 10 moves every rating less; worked out by
-- hand for the first game (1500 against 1500, won): 1500 + 10 * 0.5 = 1505.
SELECT j #> '{ratings,player_ratings,x1,rating}' AS x1, j #> '{ratings,player_ratings,x2}' AS x2,
	   (j #>> '{ratings,max_rating_difference}')::float8 > 0 AS differs, j #> '{replay,matches}' AS matches
  FROM mm.replay_ratings('fa_elo2', '{"system": "elo", "k": 10, "output_ratings": true}', '2030-03-01', '2030-03-01 01:15') j;
-- The replay's own predictions against the same computation as section 3:
-- the first game is 50/50, so its deviance is log10(2).
SELECT round((j #>> '{replay,deviance}')::numeric, 9) AS deviance, round(log(2::numeric), 9) AS log10_2
  FROM mm.replay_ratings('fa_elo2', '{"system": "elo"}', '2030-03-01', '2030-03-01 01:15') j;
-- Elo from imported ratings differs from a replay from the defaults
SELECT (j #>> '{ratings,max_rating_difference}')::float8 > 100 AS imports_not_replayed
  FROM mm.replay_ratings('fa_elo', '{"system": "elo"}', '2030-01-01', '2030-01-02') j;
-- The live ratings and those of a replay with K = 100
SELECT r.player_id, round(r.rating::numeric, 4) AS live,
	   round((j #>> ARRAY['ratings', 'player_ratings', r.player_id, 'rating'])::numeric, 4) AS k_100
  FROM mm.ratings r, mm.replay_ratings('fa_elo2', '{"system": "elo", "k": 100, "output_ratings": true}', '2030-03-01', '2030-03-02') j
 WHERE r.pool = 'fa_elo2' ORDER BY 1;
-- Tiers: fa_elo2 with tiers at 1510: x2 would change tier under K = 100
SELECT mm.configure_rating_pool('fa_elo2', '{"tiers": [{"name": "Low", "min": 0}, {"name": "High", "min": 1510}]}');
SELECT j #> '{ratings,tier_changes}' AS live_settings,
	   (SELECT k #> '{ratings,tier_changes}'
		  FROM mm.replay_ratings('fa_elo2', '{"system": "elo", "k": 100}', '2030-03-01', '2030-03-02') k) AS k_100
  FROM mm.replay_ratings('fa_elo2', '{"system": "elo"}', '2030-03-01', '2030-03-02') j;
-- The same call twice gives the same output (deterministic), also with
-- every setting.
SELECT mm.replay_ratings('fa_elo2', '{"system": "glicko2", "rating_period": "30 minutes", "output_ratings": true}',
						 '2030-03-01', '2030-03-02')
	   = mm.replay_ratings('fa_elo2', '{"system": "glicko2", "rating_period": "30 minutes", "output_ratings": true}',
						   '2030-03-01', '2030-03-02') AS deterministic;

-- An Elo K schedule: K 40 for a player's first game, 10 after.  By hand:
-- x1 beat x2 (1500 each): 1520 / 1480; x3 lost to x4: 1480 / 1520; x1
-- (1520, one game) lost to x3 (1480, one game): K 10, expected
-- 1 / (1 + 10^(-40/400)), so x1 = 1520 - 10 * E.
SELECT j #> '{settings,k_schedule}' AS schedule,
	   round((j #>> '{ratings,player_ratings,x1,rating}')::numeric, 9) AS x1,
	   round(1520 - 10 / (1 + power(10::numeric, -40 / 400.0)), 9) AS x1_by_hand,
	   round((j #>> '{ratings,player_ratings,x4,rating}')::numeric, 9) AS x4
  FROM mm.replay_ratings('fa_elo2', '{"system": "elo", "k_schedule": [{"games": 1, "k": 40}, {"k": 10}], "output_ratings": true}',
						 '2030-03-01', '2030-03-01 01:55') j;

-- Glicko-2 rating periods: with one period of a day every player is rated
-- once on all their games against the others' ratings at its start (1500,
-- RD 350): mm.glicko2_update over the results, by SQL.
WITH games AS (
	SELECT mp.player_id, 1500::float8 AS opp, 350::float8 AS opp_rd,
		   CASE WHEN (r.ranks ->> mp.team)::int < (r.ranks ->> o.team)::int THEN 1
				WHEN (r.ranks ->> mp.team)::int = (r.ranks ->> o.team)::int THEN 0.5 ELSE 0 END::float8 AS score
	  FROM mm.match_results r
	  JOIN mm.match_players mp ON mp.match_id = r.match_id
	  JOIN mm.match_players o ON o.match_id = r.match_id AND o.team <> mp.team
	 WHERE r.queue = 'fa_elo2'
), expected AS (
	SELECT g.player_id, mm.glicko2_update(1500, 350, 0.06, array_agg(g.opp), array_agg(g.opp_rd), array_agg(g.score)) AS u
	  FROM games g GROUP BY g.player_id
)
SELECT e.player_id, round((e.u).rating::numeric, 6) AS by_sql,
	   abs((j #>> ARRAY['ratings', 'player_ratings', e.player_id, 'rating'])::float8 - (e.u).rating) < 1e-9 AS rating,
	   abs((j #>> ARRAY['ratings', 'player_ratings', e.player_id, 'rd'])::float8 - (e.u).rd) < 1e-9 AS rd
  FROM expected e,
	   mm.replay_ratings('fa_elo2', '{"system": "glicko2", "rating_period": "1 day", "output_ratings": true}',
						 '2030-03-01', '2030-03-02') j
 ORDER BY 1;
-- Periods of an hour: x2 plays at 01:00 and 02:00 only (reported 01:10,
-- 02:10, 02:50): RD grows in the periods it sits out; the first period's
-- predictions are all 0.5 (everyone at the initial values).
SELECT j #> '{settings,rating_period}' AS period, j #> '{replay,matches}' AS matches,
	   (j #>> '{ratings,player_ratings,x2,rd}')::float8 <
	   (k #>> '{ratings,player_ratings,x2,rd}')::float8 AS fewer_idle_periods_less_rd
  FROM mm.replay_ratings('fa_elo2', '{"system": "glicko2", "rating_period": "1 day", "output_ratings": true}',
						 '2030-03-01', '2030-03-02') j,
	   mm.replay_ratings('fa_elo2', '{"system": "glicko2", "rating_period": "10 minutes", "output_ratings": true}',
						 '2030-03-01', '2030-03-02') k;

-- A season reset with share 1 and target 1500 before the fourth result
-- (02:10) puts everyone back at 1500: the last three results then rate as
-- a replay of [02:00, 03:00) alone does (K 40 throughout: under 30 games).
SELECT j #> '{settings,season_resets}' AS resets,
	   (SELECT bool_and(abs((j #>> ARRAY['ratings', 'player_ratings', p, 'rating'])::float8
							- (k #>> ARRAY['ratings', 'player_ratings', p, 'rating'])::float8) < 1e-9)
		  FROM unnest('{x1,x2,x3,x4}'::text[]) p) AS same_as_fresh_start
  FROM mm.replay_ratings('fa_elo2', '{"system": "elo", "season_resets": [{"at": "2030-03-01 02:00+00", "share": 1, "target": 1500}],
								   "output_ratings": true}', '2030-03-01', '2030-03-02') j,
	   mm.replay_ratings('fa_elo2', '{"system": "elo", "output_ratings": true}', '2030-03-01 02:00', '2030-03-02') k;

-- Seeds: a window that starts mid-history, each player seeded with their
-- live rating before their first result of the window, reproduces the
-- live ratings exactly; from the initial values it does not.
SELECT (j #>> '{ratings,max_rating_difference}')::float8 AS seeded_difference,
	   (k #>> '{ratings,max_rating_difference}')::float8 > 1 AS unseeded_differs
  FROM mm.replay_ratings('fa_elo2', '{"system": "elo", "seed": "live"}', '2030-03-01 02:00', '2030-03-02') j,
	   mm.replay_ratings('fa_elo2', '{"system": "elo"}', '2030-03-01 02:00', '2030-03-02') k;

-- OpenSkill: a 2v2 pool played from the defaults, a season started
-- halfway (mm.start_season: toward the mean by half, sigma toward 25/3).
-- The replay of the live settings (with the live seasons) gives the live
-- mu and sigma: exactly before the reset, and within 1e-12 after it (the
-- pool's mean sums in another order).
SELECT mm.create_queue('fa_os2', '{"teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "rating": {"system": "openskill", "pool": "fa_os2"}}');
SELECT pg_temp.won(pg_temp.play('fa_os2', p, '{1,1,1,1}', at), w, at + '10 minutes')
  FROM (VALUES ('{s1,s2,s3,s4}'::text[], 's1', '2030-05-01 01:00:00'::timestamptz),
			   ('{s1,s3,s5,s6}', 's5', '2030-05-01 01:20:00'), ('{s2,s4,s5,s6}', NULL, '2030-05-01 01:40:00')) v(p, w, at);
BEGIN READ ONLY;
SELECT j -> 'results' AS results, j -> 'settings' AS settings, j #> '{ratings,max_rating_difference}' AS difference,
	   j #> '{replay,deviance}' = j #> '{live,deviance}' AS same_deviance
  FROM mm.replay_ratings('fa_os2', '{"system": "openskill"}', '2030-05-01', '2030-05-02') j;
SELECT r.player_id, (x.value ->> 'rating')::float8 = r.mu AS mu, (x.value ->> 'rd')::float8 = r.sigma AS sigma,
	   (x.value ->> 'games')::int = r.games AS games
  FROM mm.replay_ratings('fa_os2', '{"system": "openskill", "output_ratings": true}', '2030-05-01', '2030-05-02') j,
	   jsonb_each(j #> '{ratings,player_ratings}') x JOIN mm.ratings r ON r.player_id = x.key AND r.pool = 'fa_os2'
 ORDER BY 1;
COMMIT;
SELECT mm.start_season('fa_os2', 'second', '2030-05-01 02:00:00');
SELECT pg_temp.won(pg_temp.play('fa_os2', p, '{1,1,1,1}', at), w, at + '10 minutes')
  FROM (VALUES ('{s1,s2,s5,s6}'::text[], 's2', '2030-05-01 02:20:00'::timestamptz),
			   ('{s3,s4,s5,s6}', 's3', '2030-05-01 02:40:00')) v(p, w, at);
SELECT r.player_id, abs((x.value ->> 'rating')::float8 - r.mu) < 1e-12 AS mu,
	   abs((x.value ->> 'rd')::float8 - r.sigma) < 1e-12 AS sigma,
	   (y.value ->> 'rating')::float8 <> r.mu AS differs_without_reset
  FROM mm.replay_ratings('fa_os2', '{"system": "openskill", "season_resets": "live", "output_ratings": true}',
						 '2030-05-01', '2030-05-02') j
 CROSS JOIN mm.replay_ratings('fa_os2', '{"system": "openskill", "output_ratings": true}', '2030-05-01', '2030-05-02') k
 CROSS JOIN LATERAL jsonb_each(j #> '{ratings,player_ratings}') x
  JOIN LATERAL jsonb_each(k #> '{ratings,player_ratings}') y ON y.key = x.key
  JOIN mm.ratings r ON r.player_id = x.key AND r.pool = 'fa_os2'
 ORDER BY 1;
SELECT j #> '{settings,season_resets}' AS live_resets
  FROM mm.replay_ratings('fa_os2', '{"system": "openskill", "season_resets": "live"}', '2030-05-01', '2030-05-02') j;
-- Other OpenSkill settings: a larger beta moves mu less after the first
-- game.  By hand, 2v2 of four players at (25, 25/3), tau added (s'^2 =
-- (25/3)^2 + (25/300)^2): c = sqrt(2 (2 s'^2 + beta^2)), the winning team
-- moves by 2 s'^2 / c * 1/2, each player by half of that: s'^2 / (2c).
SELECT round((j #>> '{ratings,player_ratings,s1,rating}')::numeric - 25, 9) AS s1_move,
	   round(((25 / 3.0) ^ 2 + (25 / 300.0) ^ 2)
			 / (2 * sqrt(2 * (2 * ((25 / 3.0) ^ 2 + (25 / 300.0) ^ 2) + (25 / 6.0) ^ 2))), 9) AS by_hand,
	   (k #>> '{ratings,player_ratings,s1,rating}')::float8 - 25 <
	   (j #>> '{ratings,player_ratings,s1,rating}')::float8 - 25 AS beta_10_moves_less
  FROM mm.replay_ratings('fa_os2', '{"system": "openskill", "output_ratings": true}', '2030-05-01', '2030-05-01 01:15') j,
	   mm.replay_ratings('fa_os2', '{"system": "openskill", "beta": 10, "output_ratings": true}', '2030-05-01', '2030-05-01 01:15') k;

-- OpenSkill with leavers scored as a loss: a player who left the winning
-- team takes a second run with their side last, as mm.report_result does.
SELECT mm.create_queue('fa_osl', '{"teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "rating": {"system": "openskill", "pool": "fa_osl", "leavers_lose": true}}');
SELECT pg_temp.play('fa_osl', '{l1,l2,l3,l4}', '{1,1,1,1}', '2030-05-02 01:00:00') AS l1 \gset
SELECT mm.leave_match('fa_osl', :l1, 'l1', '2030-05-02 01:05:00');
SELECT pg_temp.won(:l1, 'l1', '2030-05-02 01:10:00');
SELECT pg_temp.won(pg_temp.play('fa_osl', '{l1,l2,l3,l4}', '{1,1,1,1}', '2030-05-02 01:20:00'), 'l3', '2030-05-02 01:30:00');
SELECT r.player_id, (x.value ->> 'rating')::float8 = r.mu AS mu, (x.value ->> 'rd')::float8 = r.sigma AS sigma,
	   r.player_id = 'l1' AND r.wins = 0 AS leaver_lost
  FROM mm.replay_ratings('fa_osl', '{"system": "openskill", "output_ratings": true}', '2030-05-02', '2030-05-03') j,
	   jsonb_each(j #> '{ratings,player_ratings}') x JOIN mm.ratings r ON r.player_id = x.key AND r.pool = 'fa_osl'
 ORDER BY 1;

-- A per-role pool (Glicko-2, tank and dps, 2v2): the predictions from the
-- role pools' ratings, their calibration under the pool's name, and the
-- replay of every role pool reproducing the live ratings of each.
SELECT mm.create_queue('fa_role', '{"teams": [
	{"name": "red", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
	{"name": "blue", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
	"rating": {"system": "glicko2", "pool": "fa_role", "per_role": true}}');
CREATE FUNCTION pg_temp.play_roles(players text[], roles text[], at timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO mm.tickets (queue, players, created_at)
	SELECT 'fa_role', jsonb_build_array(jsonb_build_object('id', u.p, 'roles', jsonb_build_array(u.r))), at
	  FROM unnest(players, roles) u(p, r);
	PERFORM mm.tick('fa_role', at + '1 second');
	RETURN (SELECT max(m.id) FROM mm.matches m WHERE m.queue = 'fa_role');
END $$;
-- r1 imported as a strong tank: the predictions leave 50 %, and a replay
-- reproduces the live ratings when seeded from them ("seed": "live")
SELECT mm.set_rating('r1', 'fa_role.tank', 1800, 120, NULL, '2030-06-01 00:00:00');
SELECT pg_temp.won(pg_temp.play_roles(p, r, at), w, at + '10 minutes')
  FROM (VALUES ('{r1,r2,r3,r4}'::text[], '{tank,tank,dps,dps}'::text[], 'r1', '2030-06-01 01:00:00'::timestamptz),
			   ('{r1,r2,r3,r4}', '{dps,dps,tank,tank}', 'r3', '2030-06-01 01:20:00'),
			   ('{r1,r2,r3,r4}', '{tank,dps,tank,dps}', 'r2', '2030-06-01 01:40:00')) v(p, r, w, at);
SELECT j -> 'matches' AS matches, j -> 'decided' AS decided,
	   round((j ->> 'deviance')::numeric, 9) = round((SELECT -avg(y::numeric * log(least(greatest(p, 0.01), 0.99)::numeric)
														   + (1 - y::numeric) * log(1 - least(greatest(p, 0.01), 0.99)::numeric))
													  FROM mm.pool_predictions('fa_role', '{fa_role}', '2030-06-01', '2030-06-02')), 9)
		   AS deviance_by_sql
  FROM mm.prediction_quality('fa_role', '2030-06-01', '2030-06-02') j;
SELECT count(DISTINCT pool) AS role_pools, count(*) AS ratings FROM mm.ratings WHERE pool LIKE 'fa_role.%';
-- each stored prediction from the ratings of the role pools played, just
-- before the game (the history's rating_before and rd_before per team,
-- Glickman's expected outcome in numeric SQL, within 1e-6: the extension
-- uses Glickman's 173.7178 for 400 / ln 10)
WITH team AS (
	SELECT mp.match_id, mp.team, avg(h.rating_before)::numeric AS r, avg(h.rd_before)::numeric AS rd,
		   string_agg(h.pool, ',' ORDER BY h.pool) AS pools
	  FROM mm.match_players mp JOIN mm.rating_history h ON h.match_id = mp.match_id AND h.player_id = mp.player_id
	 WHERE mp.queue = 'fa_role' GROUP BY mp.match_id, mp.team
)
SELECT p.match_id - (SELECT min(m.id) FROM mm.matches m WHERE m.queue = 'fa_role') AS match, p.team_name, a.pools,
	   round(p.win_probability::numeric, 6) AS p,
	   abs(p.win_probability::numeric
		   - 1 / (1 + power(10::numeric, -(1 / sqrt(1 + 3 * (ln(10::numeric) / 400) ^ 2 * (a.rd ^ 2 + b.rd ^ 2) / pi()::numeric ^ 2))
										 * (a.r - b.r) / 400))) < 1e-6 AS agrees
  FROM mm.match_predictions p
  JOIN team a ON a.match_id = p.match_id AND a.team = p.team_name
  JOIN team b ON b.match_id = p.match_id AND b.team <> p.team_name
 WHERE p.queue = 'fa_role' ORDER BY 1, 2;

BEGIN READ ONLY;
SELECT j -> 'pools' AS pools, j -> 'results' AS results, j #> '{ratings,players}' AS players,
	   j #> '{ratings,max_rating_difference}' AS difference,
	   round((k #>> '{ratings,max_rating_difference}')::numeric, 3) AS unseeded_difference
  FROM mm.replay_ratings('fa_role', '{"system": "glicko2", "seed": "live"}', '2030-06-01', '2030-06-02') j,
	   mm.replay_ratings('fa_role', '{"system": "glicko2"}', '2030-06-01', '2030-06-02') k;
SELECT r.pool, r.player_id, (x.value ->> 'rating')::float8 = r.rating AS rating, (x.value ->> 'rd')::float8 = r.rd AS rd
  FROM mm.replay_ratings('fa_role', '{"system": "glicko2", "seed": "live", "output_ratings": true}', '2030-06-01', '2030-06-02') j,
	   jsonb_each(j #> '{ratings,player_ratings}') x
  JOIN mm.ratings r ON r.pool || ':' || r.player_id = x.key
 ORDER BY 1, 2;
COMMIT;
-- a role pool's own name: refused, the hint names the pool
DO $$
BEGIN
	PERFORM mm.replay_ratings('fa_role.tank', '{"system": "glicko2"}', '2030-06-01', '2030-06-02');
EXCEPTION WHEN undefined_object THEN
	DECLARE
		hint text;
	BEGIN
		GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
		RAISE NOTICE 'replay_ratings: % (%)', SQLERRM, hint;
	END;
END $$;
DO $$
BEGIN
	PERFORM mm.prediction_quality('fa_role.tank', '2030-06-01', '2030-06-02');
EXCEPTION WHEN undefined_object THEN
	DECLARE
		hint text;
	BEGIN
		GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
		RAISE NOTICE 'prediction_quality: % (%)', SQLERRM, hint;
	END;
END $$;

-- the errors, each naming its setting
SELECT pg_temp.try(format('SELECT mm.replay_ratings(%L, %L, %L, %L)', p, s, f, t)) FROM (VALUES
	('fa_elo2', NULL, '2030-03-01', '2030-03-02'),
	('fa_elo2', '[]', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "trueskill"}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "openskill", "model": "thurstone_mosteller_full"}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "openskill", "model": 3}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "openskill", "k": 10}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "openskill", "beta": -1}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "rating_period": "1 day"}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "k": 10, "k_schedule": [{"k": 20}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "k_schedule": {"k": 20}}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "k_schedule": [{"games": 5, "k": 40}, {"games": 5, "k": 20}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "k_schedule": [{"games": 5, "k": 40}, {"games": 2.5, "k": 20}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "k_schedule": [{"k": 40}, {"games": 9, "k": 20}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "k_schedule": [{"games": 5, "k": 0}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "k_schedule": [{"games": 5, "kk": 1}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "glicko2", "rating_period": "soon"}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "glicko2", "rating_period": "-1 day"}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "glicko2", "rating_period": 3600}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "seed": "table"}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "season_resets": "yearly"}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "season_resets": [{"share": 1}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "season_resets": [{"at": "someday"}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "season_resets": [{"at": "2030-03-01 02:00+00", "share": 2}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "season_resets": [{"at": "2030-03-01 02:00+00", "when": 1}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "season_resets": [{"at": "2030-03-01 02:00+00"}, {"at": "2030-03-01 01:00+00"}]}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "glicko2", "initial_volatility": 0}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "kk": 1}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "tau": 1}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "glicko2", "k": 1}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "glicko2", "tau": 0}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "glicko2", "tau": "big"}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo", "output_ratings": 1}', '2030-03-01', '2030-03-02'),
	('fa_elo2', '{"system": "elo"}', '2030-03-02', '2030-03-01'),
	('nobody', '{"system": "elo"}', '2030-03-01', '2030-03-02')) v(p, s, f, t);

-- ===================================================================
-- The table: pg_dump, Citus placement
-- ===================================================================
SELECT c.relname, c.oid = ANY (e.extconfig) AS dumped
  FROM pg_extension e, pg_class c
 WHERE e.extname = 'matchmaking' AND c.oid IN ('mm.match_predictions'::regclass, 'mm.match_scores'::regclass) ORDER BY 1;
SELECT table_name, placement, distribution_column FROM mm.sharding()
 WHERE table_name IN ('mm.match_predictions'::regclass, 'mm.match_scores'::regclass) ORDER BY 1;

SELECT mm.drop_queue(q, force => true) FROM unnest('{fa_elo,fa_elo2,fa_g2,fa_os,fa_os2,fa_osl,fa_role,fa_plain,fa_card}'::text[]) q;
-- the file's ratings, history and seasons go too: with the id sequences
-- restored, a later file's matches take the ids this file's history names
WITH h AS (DELETE FROM mm.rating_history WHERE pool LIKE 'fa\_%' RETURNING 1),
	 r AS (DELETE FROM mm.ratings WHERE pool LIKE 'fa\_%' RETURNING 1)
SELECT (SELECT count(*) FROM h) > 0 AS history_removed, (SELECT count(*) FROM r) > 0 AS ratings_removed;
DELETE FROM mm.season_ratings WHERE pool LIKE 'fa\_%';
DELETE FROM mm.seasons WHERE pool LIKE 'fa\_%';
DELETE FROM mm.rating_pools WHERE pool LIKE 'fa\_%';
SELECT setval('mm.tickets_id_seq', :fa_next_ticket, false) > 0 AS tickets_seq_restored,
	   setval('mm.matches_id_seq', :fa_next_match, false) > 0 AS matches_seq_restored;
