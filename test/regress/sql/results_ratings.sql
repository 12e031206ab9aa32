-- Results and stored ratings: mm.report_result (Glicko-2, Elo, OpenSkill;
-- teams and free-for-all; ties; leavers; rating boost), mm.decay_ratings,
-- mm.schedule_rating_decay, mm.leaderboard, and who may call them.
SET timezone = 'UTC';

-- Catches an error and shows its SQLSTATE, message and detail on one line,
-- match ids as N (they depend on the regression files run before this one).
CREATE FUNCTION pg_temp.try(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	detail text;
BEGIN
	EXECUTE query;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RETURN regexp_replace(SQLSTATE || ': ' || SQLERRM
						  || CASE WHEN detail <> '' THEN ' (' || detail || ')' ELSE '' END,
						  'match \d+', 'match N', 'g');
END $$;
-- One ticket per player at `at`, a tick one second later; the match's id.
CREATE FUNCTION pg_temp.play(q text, players text[], at timestamptz) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO mm.tickets (queue, players, created_at)
	SELECT q, jsonb_build_array(jsonb_build_object('id', p)), at FROM unnest(players) p;
	PERFORM mm.tick(q, at + '1 second');
	RETURN (SELECT max(m.id) FROM mm.matches m WHERE m.queue = q);
END $$;
-- Who plays on which team.
CREATE FUNCTION pg_temp.lineup(match bigint) RETURNS text LANGUAGE sql AS $$
	SELECT string_agg(coalesce(mp.team || ':', '') || mp.player_id, ' ' ORDER BY mp.team, mp.player_id)
	  FROM mm.match_players mp WHERE mp.match_id = match
$$;
-- A pool's stored ratings, rounded.
CREATE FUNCTION pg_temp.ratings(p text)
RETURNS TABLE (player_id text, rating numeric, rd numeric, volatility numeric, mu numeric, sigma numeric,
			   games integer, wins integer, updated_at timestamptz)
LANGUAGE sql AS $$
	SELECT r.player_id, round(r.rating::numeric, 4), round(r.rd::numeric, 4), round(r.volatility::numeric, 6),
		   round(r.mu::numeric, 4), round(r.sigma::numeric, 4), r.games, r.wins, r.updated_at
	  FROM mm.ratings r WHERE r.pool = p ORDER BY r.player_id
$$;
-- A match's result row, rounded.
CREATE FUNCTION pg_temp.result(match bigint)
RETURNS TABLE (winner_team text, ranks jsonb, predicted_favourite text, probability numeric,
			   duration interval, reported_at timestamptz)
LANGUAGE sql AS $$
	SELECT r.winner_team, r.ranks, r.predicted_favourite, round(r.favourite_win_probability::numeric, 4),
		   r.duration, r.reported_at
	  FROM mm.match_results r WHERE r.match_id = match
$$;

-- ===================================================================
-- Glicko-2, two teams.  Two queues share the pool "rr_ranked".
-- ===================================================================
SELECT mm.create_queue('rr_g2', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                            {"name": "blue", "min": 2, "max": 2}],
                                  "rating": {"system": "glicko2", "pool": "rr_ranked"}}');
SELECT mm.create_queue('rr_g2_other', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                                  {"name": "blue", "min": 2, "max": 2}],
                                        "rating": {"system": "glicko2", "pool": "rr_ranked"}}');
SELECT pg_temp.play('rr_g2', '{r_a,r_b,r_c,r_d}', '2026-01-01 00:00:00') AS m1 \gset
SELECT pg_temp.lineup(:m1);
-- Unrated players start at 1500 / 350 / 0.06; each is one Glicko-2 period
-- against the other team's composite player (mean rating, mean RD).
SELECT player_id, team, rank, round(rating_before::numeric, 4) AS before, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m1, '{"red": 1, "blue": 2}', '2026-01-01 00:20:01');
SELECT * FROM pg_temp.ratings('rr_ranked');
-- the same as Glickman's update of one game against a 1500 / 350 opponent
SELECT round(rating::numeric, 4), round(rd::numeric, 4), round(volatility::numeric, 6)
  FROM mm.glicko2_update(1500, 350, 0.06, '{1500}', '{350}', '{1}');
SELECT round(rating::numeric, 4), round(rd::numeric, 4)
  FROM mm.glicko2_update(1500, 350, 0.06, '{1500}', '{350}', '{0}');
-- winner, the prediction from the ratings before (equal: 0.5, the first
-- name), duration from the match's creation
SELECT * FROM pg_temp.result(:m1);
-- the match is completed and its players may search again
SELECT status, updated_at FROM mm.matches WHERE id = :m1;
SELECT count(*) AS still_claimed FROM mm.active_players WHERE player_id IN ('r_a', 'r_b', 'r_c', 'r_d');

-- A second report of the same match is refused and changes nothing.
SELECT pg_temp.try(format($$SELECT mm.report_result(%s, '{"red": 2, "blue": 1}', '2026-01-01 00:30:00')$$, :m1));
SELECT count(*) AS history_rows FROM mm.rating_history WHERE match_id = :m1;
SELECT * FROM pg_temp.ratings('rr_ranked');
SELECT * FROM pg_temp.result(:m1);

-- Second game, in the other queue of the pool, with the two winners apart
-- and two new players: each player's update is glicko2_update against the
-- opposing composite, recomputed here from the ratings before.
SELECT pg_temp.play('rr_g2_other', '{r_a,r_c,r_e,r_f}', '2026-01-01 01:00:00') AS m2 \gset
SELECT pg_temp.lineup(:m2);
CREATE TEMP TABLE before_m2 AS
	SELECT mp.player_id, mp.team, r.rating, r.rd, r.volatility
	  FROM mm.match_players mp
	  LEFT JOIN mm.ratings r ON r.player_id = mp.player_id AND r.pool = 'rr_ranked'
	 WHERE mp.match_id = :m2;
-- the predicted favourite and its probability: mm.win_probability of the teams
SELECT t.team, round(mm.win_probability(t.r, o.r)::numeric, 4) AS win_probability
  FROM (SELECT team, array_agg(coalesce(rating, 1500)) r FROM before_m2 GROUP BY team) t
  JOIN (SELECT team, array_agg(coalesce(rating, 1500)) r FROM before_m2 GROUP BY team) o ON o.team <> t.team
 ORDER BY t.team;
SELECT player_id, team, rank, round(rating_before::numeric, 4) AS before, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m2, '{"blue": 1, "red": 2}', '2026-01-01 01:30:01');
SELECT * FROM pg_temp.result(:m2);
SELECT b.player_id,
       abs(r.rating - g.rating) < 1e-9 AND abs(r.rd - g.rd) < 1e-9 AND abs(r.volatility - g.volatility) < 1e-12
       AS composite_opponent
  FROM before_m2 b
  JOIN mm.ratings r ON r.player_id = b.player_id AND r.pool = 'rr_ranked'
 CROSS JOIN LATERAL (
	SELECT avg(coalesce(o.rating, 1500)) AS rating, avg(coalesce(o.rd, 350)) AS rd
	  FROM before_m2 o WHERE o.team <> b.team) opp
 CROSS JOIN LATERAL mm.glicko2_update(coalesce(b.rating, 1500), coalesce(b.rd, 350), coalesce(b.volatility, 0.06),
									  ARRAY[opp.rating], ARRAY[opp.rd],
									  ARRAY[CASE WHEN b.team = 'blue' THEN 1 ELSE 0 END]::float8[]) g
 ORDER BY b.player_id;

-- A tie: every player scores 0.5; no winner, no win counted.
SELECT pg_temp.play('rr_g2', '{r_a,r_b,r_e,r_f}', '2026-01-01 02:00:00') AS m3 \gset
SELECT pg_temp.lineup(:m3);
SELECT player_id, team, rank, round(rating_before::numeric, 4) AS before, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m3, '{"red": 1, "blue": 1}', '2026-01-01 02:10:01');
SELECT * FROM pg_temp.result(:m3);
SELECT player_id, games, wins FROM pg_temp.ratings('rr_ranked');

-- ===================================================================
-- Refused reports: bad arguments, bad ranks (the path names the key),
-- matches that are not live.  None of them changes anything.
-- ===================================================================
SELECT pg_temp.play('rr_g2', '{r_g,r_h,r_i,r_j}', '2026-01-01 03:00:00') AS m4 \gset
SELECT n, q AS ranks, pg_temp.try(format('SELECT mm.report_result(%s, %L, %L)', :m4, q, '2026-01-01 03:10:00'))
  FROM (VALUES
	(1, '[1, 2]'),
	(2, '1'),
	(3, '{"red": 1}'),
	(4, '{"red": 1, "blue": 2, "green": 3}'),
	(5, '{"red": 0, "blue": 1}'),
	(6, '{"red": -1, "blue": 1}'),
	(7, '{"red": 1.5, "blue": 1}'),
	(8, '{"red": "1", "blue": 2}'),
	(9, '{"red": true, "blue": 2}'),
	(10, '{"red": null, "blue": 2}'),
	(11, '{"red": 1, "blue": 2147483648}'),
	(12, '{"red": 1, "blue": 1e10}'),
	(13, '{"red": 1, "blue": 2, "a.b": 3}'),
	(14, '{}')
  ) AS t(n, q)
 ORDER BY n;
SELECT n, pg_temp.try(q)
  FROM (VALUES
	(1, format($$SELECT mm.report_result(NULL, '{"red": 1, "blue": 2}', '2026-01-01 03:10:00')$$)),
	(2, format($$SELECT mm.report_result(%s, NULL, '2026-01-01 03:10:00')$$, :m4)),
	(3, format($$SELECT mm.report_result(%s, '{"red": 1, "blue": 2}', NULL)$$, :m4)),
	(4, format($$SELECT mm.report_result(%s, '{"red": 1, "blue": 2}', 'infinity')$$, :m4)),
	(5, format($$SELECT mm.report_result(%s, '{"red": 1, "blue": 2}', '2026-01-01 02:59:00')$$, :m4)),
	(6, $$SELECT mm.report_result(999999, '{"red": 1, "blue": 2}', '2026-01-01 03:10:00')$$)
  ) AS t(n, q)
 ORDER BY n;
SELECT count(*) AS results, (SELECT count(*) FROM mm.rating_history WHERE match_id = :m4) AS history_rows,
       (SELECT status FROM mm.matches WHERE id = :m4)
  FROM mm.match_results WHERE match_id = :m4;
-- rank 7.0 is the integer 7; only the order of ranks counts (3 beats 7)
SELECT player_id, rank FROM mm.report_result(:m4, '{"red": 3, "blue": 7.0}', '2026-01-01 03:10:00');
SELECT winner_team, ranks FROM pg_temp.result(:m4);
-- a cancelled match
SELECT pg_temp.play('rr_g2', '{r_k,r_l,r_m,r_n}', '2026-01-01 04:00:00') AS m5 \gset
UPDATE mm.matches SET status = 'cancelled' WHERE id = :m5;
SELECT pg_temp.try(format($$SELECT mm.report_result(%s, '{"red": 1, "blue": 2}', '2026-01-01 04:10:00')$$, :m5));
UPDATE mm.matches SET status = 'ready' WHERE id = :m5;
-- an assigned match can get a result, a proposed one cannot
UPDATE mm.matches SET status = 'proposed' WHERE id = :m5;
SELECT pg_temp.try(format($$SELECT mm.report_result(%s, '{"red": 1, "blue": 2}', '2026-01-01 04:10:00')$$, :m5));
UPDATE mm.matches SET status = 'assigned' WHERE id = :m5;
SELECT count(*) AS players FROM mm.report_result(:m5, '{"red": 1, "blue": 2}', '2026-01-01 04:10:00');

-- ===================================================================
-- Elo: team Elo, K = mm.elo_k_factor per player (40 under 30 games).
-- ===================================================================
SELECT mm.create_queue('rr_elo', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                             {"name": "blue", "min": 2, "max": 2}],
                                   "rating": {"system": "elo"}}');
SELECT pg_temp.play('rr_elo', '{r_e1,r_e2,r_e3,r_e4}', '2026-01-02 00:00:00') AS m6 \gset
SELECT pg_temp.lineup(:m6);
-- equal teams: expected 0.5, so +-20; the pool is the queue's name
SELECT player_id, team, rank, round(rating_before::numeric, 4) AS before, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m6, '{"red": 1, "blue": 2}', '2026-01-02 00:10:01');
SELECT * FROM pg_temp.ratings('rr_elo');
SELECT * FROM pg_temp.result(:m6);
-- mixed teams: rating + K * (score - elo_expected(team mean, opposing mean))
SELECT pg_temp.play('rr_elo', '{r_e1,r_e3,r_e5,r_e6}', '2026-01-02 01:00:00') AS m7 \gset
SELECT pg_temp.lineup(:m7);
CREATE TEMP TABLE before_m7 AS
	SELECT mp.player_id, mp.team, coalesce(r.rating, 1500) AS rating, coalesce(r.games, 0) AS games
	  FROM mm.match_players mp
	  LEFT JOIN mm.ratings r ON r.player_id = mp.player_id AND r.pool = 'rr_elo'
	 WHERE mp.match_id = :m7;
SELECT player_id, team, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m7, '{"red": 2, "blue": 1}', '2026-01-02 01:10:01');
SELECT b.player_id,
       abs(r.rating - (b.rating + mm.elo_k_factor(b.games, b.rating)
                       * (CASE WHEN b.team = 'blue' THEN 1 ELSE 0 END
                          - mm.elo_expected(own.mean, opp.mean)))) < 1e-9 AS team_elo
  FROM before_m7 b
  JOIN mm.ratings r ON r.player_id = b.player_id AND r.pool = 'rr_elo'
 CROSS JOIN LATERAL (SELECT avg(x.rating) AS mean FROM before_m7 x WHERE x.team = b.team) own
 CROSS JOIN LATERAL (SELECT avg(x.rating) AS mean FROM before_m7 x WHERE x.team <> b.team) opp
 ORDER BY b.player_id;
SELECT * FROM pg_temp.result(:m7);

-- Elo free-for-all: each player against every other, the changes averaged
-- over the opponents; r_p2 and r_p3 tie.
SELECT mm.create_queue('rr_elo_ffa', '{"match_size": {"min": 3, "max": 3}, "rating": {"system": "elo", "pool": "rr_elo_ffa"}}');
SELECT pg_temp.play('rr_elo_ffa', '{r_p1,r_p2,r_p3}', '2026-01-02 02:00:00') AS m8 \gset
SELECT pg_temp.lineup(:m8);
SELECT player_id, team, rank, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m8, '{"r_p1": 1, "r_p2": 2, "r_p3": 2}', '2026-01-02 02:10:01');
SELECT * FROM pg_temp.result(:m8);

-- ===================================================================
-- OpenSkill: free-for-all with ties, by player id.
-- ===================================================================
SELECT mm.create_queue('rr_os', '{"match_size": {"min": 4, "max": 4}, "rating": {"system": "openskill", "pool": "rr_skill"}}');
SELECT pg_temp.play('rr_os', '{r_o1,r_o2,r_o3,"r_o 4"}', '2026-01-03 00:00:00') AS m9 \gset
SELECT pg_temp.lineup(:m9);
SELECT pg_temp.try(format($$SELECT mm.report_result(%s, '{"r_o1": 1, "r_o2": 2, "r_o3": 3}', '2026-01-03 00:10:00')$$, :m9));
SELECT pg_temp.try(format($$SELECT mm.report_result(%s, '{"r_o1": 1, "r_o2": 2, "r_o3": 3, "r_o 4": 3, "r_o5": 4}', '2026-01-03 00:10:00')$$, :m9));
SELECT player_id, team, rank, round(rating_before::numeric, 4) AS mu_before, round(rating_after::numeric, 4) AS mu_after
  FROM mm.report_result(:m9, '{"r_o1": 2, "r_o2": 1, "r_o3": 3, "r_o 4": 3}', '2026-01-03 00:10:01');
SELECT * FROM pg_temp.ratings('rr_skill');
-- the same as mm.openskill_rate over the match (players in id order)
SELECT round(mu::numeric, 4) AS mu, round(sigma::numeric, 4) AS sigma
  FROM mm.openskill_rate('{25,25,25,25}', array_fill(25 / 3.0::float8, ARRAY[4]), '{1,2,3,4}', '{3,2,1,3}');
-- prediction: mm.openskill_predict_win, all equal
SELECT * FROM pg_temp.result(:m9);

-- ===================================================================
-- Leavers scored as a loss, and the rating boost.  The queue config's
-- "rating" object takes "leavers_lose" and "boost" (booleans, default
-- false); until the config parser accepts them, this test writes them with
-- the validation trigger off.
-- ===================================================================
SELECT mm.create_queue('rr_leave', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                               {"name": "blue", "min": 2, "max": 2}],
                                     "rating": {"system": "glicko2", "pool": "rr_leavers"}}');
SELECT mm.create_queue('rr_leave_os', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                                  {"name": "blue", "min": 2, "max": 2}],
                                        "rating": {"system": "openskill", "pool": "rr_leavers_os"}}');
SELECT pg_temp.play('rr_leave', '{r_l1,r_l2,r_l3,r_l4}', '2026-01-04 00:00:00') AS m10 \gset
SELECT pg_temp.play('rr_leave', '{r_l5,r_l6,r_l7,r_l8}', '2026-01-04 00:00:00') AS m11 \gset
SELECT pg_temp.play('rr_leave_os', '{r_s1,r_s2,r_s3,r_s4}', '2026-01-04 00:00:00') AS m12 \gset
SELECT pg_temp.lineup(:m10), pg_temp.lineup(:m11), pg_temp.lineup(:m12);
-- one player of the winning team left each match
UPDATE mm.match_players SET left_at = '2026-01-04 00:05:00'
 WHERE (match_id, player_id) IN ((:m10, 'r_l1'), (:m11, 'r_l5'), (:m12, 'r_s1'));
-- without leavers_lose a leaver shares the team's result
SELECT player_id, team, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m10, '{"red": 1, "blue": 2}', '2026-01-04 00:10:01');
ALTER TABLE mm.queues DISABLE TRIGGER queues_validate;
UPDATE mm.queues SET config = jsonb_set(config, '{rating,leavers_lose}', 'true')
 WHERE name IN ('rr_leave', 'rr_leave_os');
ALTER TABLE mm.queues ENABLE TRIGGER queues_validate;
-- with it, the leaver (r_l5 on red) loses against blue; its teammate wins
SELECT player_id, team, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m11, '{"red": 1, "blue": 2}', '2026-01-04 00:10:01');
SELECT player_id, round(rating::numeric, 4) AS rating, round(rd::numeric, 4) AS rd
  FROM mm.glicko2_update(1500, 350, 0.06, '{1500}', '{350}', '{0}'), (VALUES ('as a loss')) v(player_id);
SELECT player_id, games, wins FROM pg_temp.ratings('rr_leavers');
-- OpenSkill: the leaver (r_s1) takes its row of a second run where its team
-- ranks last; the other players keep the reported game
SELECT player_id, team, round(rating_after::numeric, 4) AS mu_after
  FROM mm.report_result(:m12, '{"red": 1, "blue": 2}', '2026-01-04 00:10:01');
SELECT round(mu::numeric, 4) AS mu FROM mm.openskill_rate('{25,25,25,25}', array_fill(25 / 3.0::float8, ARRAY[4]),
                                                         '{1,1,2,2}', '{1,1,2,2}');
SELECT round(mu::numeric, 4) AS mu FROM mm.openskill_rate('{25,25,25,25}', array_fill(25 / 3.0::float8, ARRAY[4]),
                                                         '{1,1,2,2}', '{3,3,2,2}');
SELECT player_id, round(sigma::numeric, 4) AS sigma, games, wins FROM pg_temp.ratings('rr_leavers_os');

-- Rating boost: mm.rating_boost multiplies each change.  r_b1 is new (2.0 in
-- its placement games); r_smurf has won its 8 games with flat ratings and
-- strong stats (mm.smurf_score 1, boost 4.0); the others are settled (1.0).
SELECT mm.create_queue('rr_boost', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                               {"name": "blue", "min": 2, "max": 2}],
                                     "rating": {"system": "glicko2", "pool": "rr_boosted"}}');
INSERT INTO mm.ratings (player_id, pool, rating, rd, volatility, games, wins, updated_at) VALUES
	('r_smurf', 'rr_boosted', 1500, 100, 0.06, 8, 8, '2026-01-05 00:00:00'),
	('r_b2', 'rr_boosted', 1500, 100, 0.06, 50, 25, '2026-01-05 00:00:00'),
	('r_b3', 'rr_boosted', 1500, 100, 0.06, 50, 25, '2026-01-05 00:00:00');
INSERT INTO mm.rating_history (player_id, pool, match_id, rating_after, created_at)
SELECT 'r_smurf', 'rr_boosted', -i, 1500 + i, '2026-01-04 00:00:00'::timestamptz + i * '1 hour'::interval
  FROM generate_series(1, 5) i;
-- (r_b3's numbers are too small for a float8: they read as 0, and do not
-- stop the report)
INSERT INTO mm.players (id, attributes) VALUES
	('r_smurf', '{"avg_kda": 5.2, "mvp_rate": 0.6, "headshot_rate": 0.7}'),
	('r_b2', '{"avg_kda": "high", "mvp_rate": 7}'),
	('r_b3', '{"avg_kda": 1e-400, "mvp_rate": 1e-400, "headshot_rate": 1e-400}');
SELECT round(mm.smurf_score(8, 1.0, 5.2, 0.6, '{1501,1502,1503,1504,1505}', 0.7)::numeric, 4) AS smurf,
       mm.rating_boost(1.0, 8) AS smurf_boost, mm.rating_boost(0, 0) AS new_boost, mm.rating_boost(0, 50) AS settled;
SELECT pg_temp.play('rr_boost', '{r_smurf,r_b1,r_b2,r_b3}', '2026-01-05 01:00:00') AS m13 \gset
ALTER TABLE mm.queues DISABLE TRIGGER queues_validate;
UPDATE mm.queues SET config = jsonb_set(config, '{rating,boost}', 'true') WHERE name = 'rr_boost';
ALTER TABLE mm.queues ENABLE TRIGGER queues_validate;
SELECT pg_temp.lineup(:m13);
CREATE TEMP TABLE before_m13 AS
	SELECT mp.player_id, mp.team, coalesce(r.rating, 1500) AS rating, coalesce(r.rd, 350) AS rd,
		   coalesce(r.volatility, 0.06) AS volatility
	  FROM mm.match_players mp
	  LEFT JOIN mm.ratings r ON r.player_id = mp.player_id AND r.pool = 'rr_boosted'
	 WHERE mp.match_id = :m13;
SELECT player_id, team, round(rating_after::numeric, 4) AS after
  FROM mm.report_result(:m13, '{"red": 1, "blue": 2}', '2026-01-05 01:10:01');
-- change = boost x the plain Glicko-2 change; RD and volatility as usual
SELECT b.player_id, round(((r.rating - b.rating) / (g.rating - b.rating))::numeric, 6) AS boost,
       abs(r.rd - g.rd) < 1e-9 AS plain_rd
  FROM before_m13 b
  JOIN mm.ratings r ON r.player_id = b.player_id AND r.pool = 'rr_boosted'
 CROSS JOIN LATERAL (
	SELECT avg(o.rating) AS rating, avg(o.rd) AS rd FROM before_m13 o WHERE o.team <> b.team) opp
 CROSS JOIN LATERAL mm.glicko2_update(b.rating, b.rd, b.volatility, ARRAY[opp.rating], ARRAY[opp.rd],
									  ARRAY[CASE WHEN b.team = 'red' THEN 1 ELSE 0 END]::float8[]) g
 ORDER BY b.player_id;

-- A queue without a rating system: the result is kept, no rating changes.
SELECT mm.create_queue('rr_plain', '{"match_size": {"min": 2, "max": 2}}');
SELECT pg_temp.play('rr_plain', '{r_u1,r_u2}', '2026-01-06 00:00:00') AS m14 \gset
SELECT * FROM mm.report_result(:m14, '{"r_u1": 1, "r_u2": 2}', '2026-01-06 00:10:01');
SELECT * FROM pg_temp.result(:m14);
SELECT count(*) AS ratings FROM mm.ratings WHERE player_id IN ('r_u1', 'r_u2');

-- Exactly one history row per player per rated match, and one result per
-- match: no more, no fewer.
SELECT m.queue, count(DISTINCT m.id) AS matches,
       count(mp.player_id) AS players,
       (SELECT count(*) FROM mm.rating_history h JOIN mm.matches x ON x.id = h.match_id WHERE x.queue = m.queue) AS history_rows
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE m.status = 'completed' AND m.queue LIKE 'rr\_%'
 GROUP BY m.queue ORDER BY m.queue;
SELECT h.match_id, h.player_id, count(*) FROM mm.rating_history h
 WHERE h.match_id > 0 AND h.pool LIKE 'rr\_%' GROUP BY 1, 2 HAVING count(*) <> 1;
SELECT count(*) AS completed_without_result
  FROM mm.matches m WHERE m.status = 'completed' AND m.queue LIKE 'rr\_%'
   AND NOT EXISTS (SELECT FROM mm.match_results r WHERE r.match_id = m.id);

-- ===================================================================
-- Decay: one rating period without games per whole `idle` since the last
-- change.  Glicko-2 RD through mm.glicko2_decay, OpenSkill sigma by
-- tau = 25/300 per period (capped at 25/3), Elo nothing.
-- ===================================================================
CREATE TEMP TABLE before_decay AS SELECT * FROM mm.ratings WHERE pool IN ('rr_ranked', 'rr_skill');
SELECT mm.decay_ratings('rr_ranked', '7 days', '2026-01-15 02:10:01');
-- r_a to r_f last changed at least 14 days before (2 periods), r_g to r_n a
-- little less (1)
SELECT b.player_id, b.updated_at AS last_change, p.periods, round(b.rd::numeric, 4) AS rd_before,
       round(r.rd::numeric, 4) AS rd_after, round(x.rd::numeric, 4) AS glicko2_decay,
       r.rating = b.rating AND r.volatility = b.volatility AS same_rating, r.updated_at
  FROM before_decay b
  JOIN mm.ratings r USING (player_id, pool)
 CROSS JOIN LATERAL (SELECT floor(extract(epoch FROM '2026-01-15 02:10:01'::timestamptz - b.updated_at)
								  / (7 * 86400))::integer AS periods) p
 CROSS JOIN LATERAL mm.glicko2_decay(b.rating, b.rd, b.volatility, p.periods) x
 WHERE b.pool = 'rr_ranked' ORDER BY b.player_id;
-- one history row each, without a match
SELECT h.player_id, round(h.rd_before::numeric, 4) AS rd_before, round(h.rd_after::numeric, 4) AS rd_after,
       h.rating_before = h.rating_after AS same_rating, h.created_at
  FROM mm.rating_history h
 WHERE h.pool = 'rr_ranked' AND h.match_id IS NULL ORDER BY h.player_id;
-- nothing left to decay right after; a later call counts from the decay
SELECT mm.decay_ratings('rr_ranked', '7 days', '2026-01-15 02:10:01');
SELECT mm.decay_ratings('rr_ranked', '7 days', '2026-01-22 02:10:01');
-- OpenSkill: 10 whole days, sigma grows to sqrt(sigma^2 + 10 tau^2)
SELECT mm.decay_ratings('rr_skill', '1 day', '2026-01-13 00:10:01');
SELECT b.player_id, round(b.sigma::numeric, 4) AS sigma_before, round(r.sigma::numeric, 4) AS sigma_after,
       abs(r.sigma - sqrt(b.sigma ^ 2 + 10 * (25 / 300.0) ^ 2)) < 1e-12 AS as_expected, r.mu = b.mu AS same_mu
  FROM before_decay b JOIN mm.ratings r USING (player_id, pool)
 WHERE b.pool = 'rr_skill' ORDER BY b.player_id;
-- ... and never past 25/3
SELECT mm.decay_ratings('rr_skill', '1 day', '2036-01-13 00:10:01');
SELECT DISTINCT round(sigma::numeric, 10) = round(25 / 3.0, 10) AS capped FROM mm.ratings WHERE pool = 'rr_skill';
-- Elo has nothing to decay
SELECT mm.decay_ratings('rr_elo', '1 day', '2026-02-01');
-- a calendar month shorter than 30 days is one period (it was none)
INSERT INTO mm.ratings (player_id, pool, rating, rd, volatility, games, wins, updated_at)
VALUES ('r_feb', 'rr_month', 1500, 100, 0.06, 1, 0, '2026-02-01 00:00:00+00');
SELECT mm.decay_ratings('rr_month', '1 month', '2026-03-01 00:00:00+00') AS decayed;
SELECT round(rd::numeric, 4) AS rd FROM mm.ratings WHERE player_id = 'r_feb' AND pool = 'rr_month';
-- RD never grows past 350
SELECT mm.decay_ratings('rr_ranked', '1 day', '2036-01-01');
SELECT max(rd) FROM mm.ratings WHERE pool = 'rr_ranked';
SELECT mm.decay_ratings('rr_ranked', '1 day', '2036-01-02');
SELECT n, pg_temp.try(q)
  FROM (VALUES
	(1, $$SELECT mm.decay_ratings('nope', '1 day', '2026-02-01')$$),
	(2, $$SELECT mm.decay_ratings(NULL, '1 day', '2026-02-01')$$),
	(3, $$SELECT mm.decay_ratings('rr_ranked', NULL, '2026-02-01')$$),
	(4, $$SELECT mm.decay_ratings('rr_ranked', '0', '2026-02-01')$$),
	(5, $$SELECT mm.decay_ratings('rr_ranked', '-1 day', '2026-02-01')$$),
	(6, $$SELECT mm.decay_ratings('rr_ranked', '1 day', NULL)$$),
	(7, $$SELECT mm.decay_ratings('rr_ranked', '1 day', '-infinity')$$),
	(8, $$SELECT mm.decay_ratings('rr_ranked', '300000 years', '2026-02-01')$$),
	(9, $$SELECT mm.schedule_rating_decay('rr_ranked', '7 days')$$),
	(10, $$SELECT mm.schedule_rating_decay('rr_ranked', '7 days', '30 seconds')$$),
	(11, $$SELECT mm.schedule_rating_decay('rr_ranked', '7 days', '7 minutes')$$),
	(12, $$SELECT mm.schedule_rating_decay('nope', '7 days')$$),
	(13, $$SELECT mm.schedule_rating_decay('rr_ranked', '0')$$),
	(14, $$SELECT mm.schedule_rating_decay(NULL, '7 days')$$),
	(15, $$SELECT mm.unschedule_rating_decay('rr_ranked')$$)
  ) AS t(n, q)
 ORDER BY n;

-- ===================================================================
-- Leaderboard: conservative rating (Glicko-2 rating - 2 RD, Elo rating,
-- OpenSkill mu - 3 sigma); equal values share a rank.
-- ===================================================================
SELECT pool, player_id, system, round(conservative_rating::numeric, 4) AS conservative, rank, games, wins
  FROM mm.leaderboard WHERE pool IN ('rr_elo', 'rr_skill', 'rr_leavers')
 ORDER BY pool, rank, player_id;

-- ===================================================================
-- Who may do what: a director reports results, an analyst reads the
-- leaderboard, an admin decays; a frontend does none of these.
-- ===================================================================
SELECT pg_temp.play('rr_g2', '{r_w1,r_w2,r_w3,r_w4}', '2026-01-07 00:00:00') AS m15 \gset
SET ROLE mm_frontend;
SELECT pg_temp.try(format($$SELECT mm.report_result(%s, '{"red": 1, "blue": 2}', '2026-01-07 00:10:00')$$, :m15));
SELECT pg_temp.try('SELECT count(*) FROM mm.leaderboard');
SELECT pg_temp.try('SELECT count(*) FROM mm.ratings');
SELECT pg_temp.try($$SELECT mm.decay_ratings('rr_ranked', '1 day', '2036-02-01')$$);
RESET ROLE;
SET ROLE mm_analyst;
SELECT pg_temp.try('SELECT count(*) FROM mm.leaderboard');
SELECT pg_temp.try(format($$SELECT mm.report_result(%s, '{"red": 1, "blue": 2}', '2026-01-07 00:10:00')$$, :m15));
SELECT pg_temp.try($$SELECT mm.decay_ratings('rr_ranked', '1 day', '2036-02-01')$$);
RESET ROLE;
SET ROLE mm_director;
SELECT pg_temp.try('SELECT count(*) FROM mm.leaderboard');
SELECT count(*) AS rated FROM mm.report_result(:m15, '{"red": 1, "blue": 2}', '2026-01-07 00:10:00');
RESET ROLE;
SET ROLE mm_admin;
SELECT mm.decay_ratings('rr_ranked', '1 day', '2036-02-01');
SELECT count(*) > 0 AS admin_reads FROM mm.leaderboard;
RESET ROLE;

-- Clean up for the regression files that follow: the queues (with their
-- tickets, matches and results), the pools' ratings and history, the players.
SELECT count(*) AS queues_dropped
  FROM (SELECT mm.drop_queue(q.name, true) FROM mm.queues q WHERE q.name LIKE 'rr\_%') d;
DELETE FROM mm.rating_history WHERE pool LIKE 'rr\_%';
DELETE FROM mm.ratings WHERE pool LIKE 'rr\_%';
DELETE FROM mm.players WHERE id LIKE 'r\_%';
