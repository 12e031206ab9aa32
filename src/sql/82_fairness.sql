-- ===================================================================
-- Fairness you can prove (docs/fairness.md; C in src/fairness.c)
-- ===================================================================
--
-- mm.match_predictions keeps, for every match of a rated queue, each team's
-- predicted win probability from the ratings the match was formed with
-- (written by the tick, in the transaction that writes the match), and
-- for OpenSkill the chance of a draw;
-- mm.match_scores keeps the per-team scores a result may carry.
-- mm.prediction_quality scores the predictions against the results,
-- mm.fairness_report is a queue's scorecard, and mm.replay_ratings replays
-- the recorded results of a pool with candidate rating settings.  The three
-- only read: they run in a read-only transaction and on a standby.  New in
-- 0.4: part of the upgrade as it is.

-- One row per team of a rated queue's match.  team is the team's position
-- in the queue config's "teams" (1 = the first); team_name is its name in
-- mm.match_players.team.  The ratings are those the prediction used (Elo,
-- Glicko-2: rating; OpenSkill: mu): the team's mean and its players' lowest
-- and highest, for the scorecard's rating gap and skill spread.
CREATE TABLE mm.match_predictions (
	queue text NOT NULL,
	match_id bigint NOT NULL,
	team int NOT NULL,
	win_probability float8 NOT NULL
		CONSTRAINT match_predictions_probability CHECK (
			win_probability OPERATOR(pg_catalog.>=) 0 AND win_probability OPERATOR(pg_catalog.<=) 1),
	-- NULL: the pool's system gives no draw probability
	draw_probability float8
		CONSTRAINT match_predictions_draw CHECK (
			draw_probability OPERATOR(pg_catalog.>=) 0 AND draw_probability OPERATOR(pg_catalog.<=) 1),
	pool text NOT NULL,
	team_name text NOT NULL,
	system text NOT NULL,
	team_rating float8,
	rating_min float8,
	rating_max float8,
	created_at timestamptz NOT NULL,
	CONSTRAINT match_predictions_pkey PRIMARY KEY (queue, match_id, team),
	-- the prediction goes with its match (retention, mm.forget_player keep it)
	CONSTRAINT match_predictions_match_fkey FOREIGN KEY (match_id, queue)
		REFERENCES mm.matches (id, queue) ON DELETE CASCADE
);
COMMENT ON TABLE mm.match_predictions IS
'Each team''s predicted win probability when a rated queue''s match was formed, from the ratings used to form it (docs/fairness.md)';
GRANT SELECT ON TABLE mm.match_predictions TO mm_director, mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.match_predictions TO mm_admin;
CREATE INDEX match_predictions_pool_match ON mm.match_predictions (pool, match_id);
SELECT pg_catalog.pg_extension_config_dump('mm.match_predictions', '');

-- The per-team scores of a result (mm.report_result's scores): what the
-- scorecard's lopsided results read.  With the result it belongs to.
CREATE TABLE mm.match_scores (
	queue text NOT NULL,
	match_id bigint NOT NULL,
	-- {"team name": score, ...}, one number per team
	scores jsonb NOT NULL
		CONSTRAINT match_scores_object CHECK (
			pg_catalog.jsonb_typeof(scores) OPERATOR(pg_catalog.=) 'object'),
	CONSTRAINT match_scores_pkey PRIMARY KEY (queue, match_id),
	CONSTRAINT match_scores_result_fkey FOREIGN KEY (match_id, queue)
		REFERENCES mm.match_results (match_id, queue) ON DELETE CASCADE
);
COMMENT ON TABLE mm.match_scores IS
'The per-team scores a result was reported with (mm.report_result''s scores)';
GRANT SELECT ON TABLE mm.match_scores TO mm_director, mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.match_scores TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.match_scores', '');

-- The Glicko expectation of a against b, both deviations combined
-- (Glickman's predicted outcome): 1 / (1 + 10^(-g(sqrt(rd_a^2 + rd_b^2))
-- (rating_a - rating_b) / 400)).
CREATE FUNCTION mm.glicko_expected(rating_a float8, rd_a float8, rating_b float8, rd_b float8)
RETURNS float8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT 1 / (1 + exp(-(1 / sqrt(1 + 3 * ((rd_a ^ 2 + rd_b ^ 2) / 173.7178 ^ 2) / pi() ^ 2))
						 * (rating_a - rating_b) / 173.7178))
$$;
COMMENT ON FUNCTION mm.glicko_expected(float8, float8, float8, float8) IS
'Glicko expected score of a (rating_a, rd_a) against b (rating_b, rd_b), both deviations combined';
GRANT EXECUTE ON FUNCTION mm.glicko_expected(float8, float8, float8, float8) TO mm_admin;

-- OpenSkill's chance of a draw (openskill's predictDraw; C in
-- src/ratings_openskill.c beside predict_win): declared here, where the
-- predictions use it.  Elo and Glicko-2 predict no draw.
CREATE FUNCTION mm.openskill_predict_draw(mu float8[], sigma float8[], team int[])
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_openskill_predict_draw'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.openskill_predict_draw(float8[], float8[], integer[]) IS
'OpenSkill chance that a game of these teams ends in a draw (predictDraw: the draw margin of all the players, the mean over the pairs of teams)';
GRANT EXECUTE ON FUNCTION mm.openskill_predict_draw(float8[], float8[], integer[]) TO mm_admin;

-- Records the predictions of the queue's matches created at now that have
-- none (the tick calls it after writing the matches of a rated queue; a
-- match function's matches are written the same way).  Only matches whose
-- players all sit on the queue's teams, two teams or more: a free-for-all
-- has no team to predict.  Unrated players count at the system's defaults.
-- Returns the rows written.
CREATE FUNCTION mm.record_match_predictions(queue text, now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	config jsonb;
	rating_system text;
	pool_name text;
	per_role boolean;
	match_ids bigint[];
	player_ids text[];
	team_names text[];
	player_pools text[];
	rated_ids text[];
	rated_pools text[];
	rated_rating float8[];
	rated_rd float8[];
	rated_mu float8[];
	rated_sigma float8[];
	written integer;
BEGIN
	SELECT q.config INTO config FROM mm.queues q WHERE q.name = record_match_predictions.queue;
	rating_system := config #>> '{rating,system}';
	IF rating_system IS NULL OR rating_system NOT IN ('elo', 'glicko2', 'openskill') THEN
		RETURN 0;
	END IF;
	pool_name := coalesce(config #>> '{rating,pool}', record_match_predictions.queue);
	per_role := mm.rating_option(config, 'per_role');

	-- The players of the new matches, then their ratings: two queries, as
	-- the matches and the ratings are sharded apart on Citus (by queue and
	-- by player).
	SELECT array_agg(mp.match_id ORDER BY mp.match_id, mp.player_id), array_agg(mp.player_id ORDER BY mp.match_id, mp.player_id),
		   array_agg(mp.team ORDER BY mp.match_id, mp.player_id),
		   array_agg(CASE WHEN per_role AND mp.role IS NOT NULL THEN pool_name || '.' || mp.role ELSE pool_name END
					 ORDER BY mp.match_id, mp.player_id)
	  INTO match_ids, player_ids, team_names, player_pools
	  FROM mm.matches m
	  JOIN mm.match_players mp ON mp.queue = m.queue AND mp.match_id = m.id
	 WHERE m.queue = record_match_predictions.queue AND m.created_at = record_match_predictions.now
	   AND NOT EXISTS (SELECT FROM mm.match_predictions x WHERE x.queue = m.queue AND x.match_id = m.id);
	IF match_ids IS NULL THEN
		RETURN 0;
	END IF;
	SELECT array_agg(r.player_id), array_agg(r.pool), array_agg(r.rating), array_agg(r.rd), array_agg(r.mu),
		   array_agg(r.sigma)
	  INTO rated_ids, rated_pools, rated_rating, rated_rd, rated_mu, rated_sigma
	  FROM mm.ratings r
	 WHERE r.player_id = ANY (player_ids) AND r.pool = ANY (ARRAY(SELECT DISTINCT p FROM unnest(player_pools) p));

	WITH team_numbers AS (
		SELECT t.value ->> 'name' AS name, t.ordinality::int AS number
		  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(config -> 'teams') = 'array'
										 THEN config -> 'teams' ELSE '[]' END) WITH ORDINALITY t
	), rated AS (
		SELECT * FROM unnest(rated_ids, rated_pools, rated_rating, rated_rd, rated_mu, rated_sigma)
					  r(player_id, pool, rating, rd, mu, sigma)
	), players AS (
		SELECT u.match_id, tn.number AS team, u.team_name,
			   coalesce(r.rating, 1500) AS rating, coalesce(r.rd, 350) AS rd,
			   coalesce(r.mu, 25) AS mu, coalesce(r.sigma, 25 / 3.0) AS sigma
		  FROM unnest(match_ids, player_ids, team_names, player_pools) u(match_id, player_id, team_name, pool)
		  LEFT JOIN team_numbers tn ON tn.name = u.team_name
		  LEFT JOIN rated r ON r.player_id = u.player_id AND r.pool = u.pool
	), eligible AS (
		SELECT p.match_id FROM players p GROUP BY p.match_id
		HAVING bool_and(p.team IS NOT NULL) AND count(DISTINCT p.team) >= 2
	), teams AS (
		SELECT p.match_id, p.team, min(p.team_name) AS team_name,
			   array_agg(CASE WHEN rating_system = 'openskill' THEN p.mu ELSE p.rating END) AS ratings,
			   avg(CASE WHEN rating_system = 'openskill' THEN p.mu ELSE p.rating END) AS mean,
			   avg(p.rd) AS rd, count(*) OVER (PARTITION BY p.match_id) AS team_count,
			   dense_rank() OVER (PARTITION BY p.match_id ORDER BY p.team) AS side
		  FROM players p JOIN eligible e ON e.match_id = p.match_id
		 GROUP BY p.match_id, p.team
	), openskill AS (
		SELECT p.match_id, w.probability, w.side::int AS side
		  FROM (SELECT p.match_id, array_agg(p.mu ORDER BY p.team) AS mu,
					   array_agg(p.sigma ORDER BY p.team) AS sigma,
					   array_agg(t.side::int ORDER BY p.team) AS sides
				  FROM players p JOIN teams t ON t.match_id = p.match_id AND t.team = p.team
				 WHERE rating_system = 'openskill'
				 GROUP BY p.match_id) p
		 CROSS JOIN LATERAL unnest(mm.openskill_predict_win(p.mu, p.sigma, p.sides))
			   WITH ORDINALITY w(probability, side)
	), openskill_draw AS (
		SELECT p.match_id, mm.openskill_predict_draw(array_agg(p.mu ORDER BY p.team), array_agg(p.sigma ORDER BY p.team),
													 array_agg(t.side::int ORDER BY p.team)) AS draw
		  FROM players p JOIN teams t ON t.match_id = p.match_id AND t.team = p.team
		 WHERE rating_system = 'openskill'
		 GROUP BY p.match_id
	), probabilities AS (
		SELECT a.match_id, a.team,
			   CASE WHEN rating_system = 'openskill'
					THEN (SELECT o.probability FROM openskill o WHERE o.match_id = a.match_id AND o.side = a.side)
					-- the mean over the team's pairs, as mm.report_result predicts
					ELSE (SELECT sum(CASE WHEN rating_system = 'glicko2'
										  THEN mm.glicko_expected(a.mean, a.rd, b.mean, b.rd)
										  ELSE mm.win_probability(a.ratings, b.ratings) END)
								 / (a.team_count - 1)
							FROM teams b WHERE b.match_id = a.match_id AND b.team <> a.team) END AS probability
		  FROM teams a
	)
	INSERT INTO mm.match_predictions (queue, match_id, team, win_probability, draw_probability, pool, team_name,
									  system, team_rating, rating_min, rating_max, created_at)
	SELECT record_match_predictions.queue, t.match_id, t.team, least(greatest(p.probability, 0), 1),
		   (SELECT least(greatest(d.draw, 0), 1) FROM openskill_draw d WHERE d.match_id = t.match_id),
		   pool_name, t.team_name, rating_system,
		   t.mean, (SELECT min(x) FROM unnest(t.ratings) x),
		   (SELECT max(x) FROM unnest(t.ratings) x), record_match_predictions.now
	  FROM teams t JOIN probabilities p ON p.match_id = t.match_id AND p.team = t.team
	 ORDER BY t.match_id, t.team;
	GET DIAGNOSTICS written = ROW_COUNT;
	RETURN written;
END
$$;
COMMENT ON FUNCTION mm.record_match_predictions(text, timestamptz) IS
'Internal: records each team''s predicted win probability for the queue''s matches created at now (the tick calls it for rated queues)';
REVOKE ALL ON FUNCTION mm.record_match_predictions(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.record_match_predictions(text, timestamptz) TO mm_admin;

-- mm.report_result with each team's score: checked against the match's
-- teams, then the result reported as without it, then the scores kept in
-- mm.match_scores (all in one transaction).  Scores are per team: a
-- free-for-all takes none.
CREATE FUNCTION mm.report_result(queue text, match_id bigint, ranks jsonb, now timestamptz, scores jsonb)
RETURNS TABLE (player_id text, team text, rank integer, rating_before float8, rating_after float8)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	team_list text[];
	free_for_all boolean;
	score_key text;
	score_value jsonb;
	missing text;
BEGIN
	IF report_result.scores IS NULL THEN
		RETURN QUERY SELECT * FROM mm.report_result($1, $2, $3, $4);
		RETURN;
	END IF;
	IF jsonb_typeof(report_result.scores) <> 'object' THEN
		RAISE EXCEPTION 'scores must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'Give each team a score, e.g. {"red": 25, "blue": 18}.';
	END IF;
	SELECT array_agg(DISTINCT mp.team ORDER BY mp.team), bool_or(mp.team IS NULL)
	  INTO team_list, free_for_all
	  FROM mm.match_players mp WHERE mp.queue = report_result.queue AND mp.match_id = report_result.match_id;
	IF team_list IS NOT NULL AND free_for_all THEN
		RAISE EXCEPTION 'scores are per team: match % has players without a team', report_result.match_id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF team_list IS NOT NULL THEN
		FOR score_key, score_value IN SELECT e.key, e.value FROM jsonb_each(report_result.scores) e ORDER BY e.key
		LOOP
			IF NOT score_key = ANY (team_list) THEN
				RAISE EXCEPTION 'scores.% is not a team of match %', score_key, report_result.match_id
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('The teams of match %s: %s.', report_result.match_id,
										  array_to_string(team_list, ', '));
			END IF;
			IF jsonb_typeof(score_value) <> 'number' THEN
				RAISE EXCEPTION 'scores.% must be a number', score_key
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('Got %s.', left(score_value::text, 100));
			END IF;
			-- kept as jsonb, read as float8 by the reports: a number float8
			-- cannot hold would make every report of the window fail
			IF abs((score_value #>> '{}')::numeric) > 1e308
			   OR ((score_value #>> '{}')::numeric <> 0 AND abs((score_value #>> '{}')::numeric) < 1e-307) THEN
				RAISE EXCEPTION 'scores.% is out of range', score_key
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('A score is 0 or between 1e-307 and 1e308 in size; got %s.',
										  left(score_value::text, 100));
			END IF;
		END LOOP;
		SELECT min(t) INTO missing FROM unnest(team_list) t WHERE NOT report_result.scores ? t;
		IF missing IS NOT NULL THEN
			RAISE EXCEPTION 'scores.% is missing', missing
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Every team of match %s needs a score: %s.', report_result.match_id,
									  array_to_string(team_list, ', '));
		END IF;
	END IF;
	-- the result itself checks the match, the ranks and the state
	RETURN QUERY SELECT * FROM mm.report_result($1, $2, $3, $4);
	INSERT INTO mm.match_scores (queue, match_id, scores)
	VALUES (report_result.queue, report_result.match_id, report_result.scores);
END
$$;
COMMENT ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz, jsonb) IS
'Reports the ranks of a ready or assigned match as mm.report_result(queue, match_id, ranks, now) does, and keeps each team''s score (scores: {"team": number, ...}; NULL: none) for mm.fairness_report';
REVOKE ALL ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz, jsonb) TO mm_director, mm_admin;

-- By id alone, with scores.
CREATE FUNCTION mm.report_result(match_id bigint, ranks jsonb, now timestamptz, scores jsonb)
RETURNS TABLE (player_id text, team text, rank integer, rating_before float8, rating_after float8)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue($1), '');
BEGIN
	RETURN QUERY SELECT * FROM mm.report_result(q, $1, $2, $3, $4);
EXCEPTION WHEN undefined_object THEN
	PERFORM mm.raise_missing_without_queue('match', $1, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.report_result(bigint, jsonb, timestamptz, jsonb) IS
'Reports the ranks of a ready or assigned match by id, with each team''s score (see mm.report_result(text, bigint, jsonb, timestamptz, jsonb))';
REVOKE ALL ON FUNCTION mm.report_result(bigint, jsonb, timestamptz, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.report_result(bigint, jsonb, timestamptz, jsonb) TO mm_director, mm_admin;

-- The figures of predictions p (team 1's win probability, one per
-- two-team game) against outcomes y (1 won, 0.5 tie, 0 lost): binomial
-- deviance (log10, p clamped to [0.01, 0.99]: the Kaggle chess rating
-- contest's and liglicko2's), Brier score, log loss (natural log, p
-- clamped to [1e-15, 1 - 1e-15]), accuracy (the favourite won, over the
-- games with a favourite and a winner; ties counted apart), each beside
-- the naive prediction 0.5, and the calibration bins (ten of 0.1, the empty
-- ones left out) over both teams' rows.
CREATE FUNCTION mm.prediction_figures(p float8[], y float8[])
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH g AS (
		SELECT u.p, u.y, least(greatest(u.p, 0.01), 0.99) AS pc, least(greatest(u.p, 1e-15), 1 - 1e-15) AS pe
		  FROM unnest(p, y) u(p, y) WHERE u.p IS NOT NULL AND u.y IS NOT NULL
	), teams AS (
		SELECT g.p, g.y FROM g UNION ALL SELECT 1 - g.p, 1 - g.y FROM g
	), bins AS (
		SELECT least(floor(t.p * 10), 9)::int AS b, count(*) AS n, avg(t.p) AS predicted, avg(t.y) AS actual
		  FROM teams t GROUP BY 1
	)
	SELECT jsonb_build_object(
		'matches', count(*),
		'ties', count(*) FILTER (WHERE g.y = 0.5),
		-- log(float8) is log10 (a numeric logarithm would cost 100 times more)
		'deviance', -avg(g.y * log(g.pc) + (1 - g.y) * log(1 - g.pc)),
		'brier', avg((g.p - g.y) ^ 2),
		'log_loss', -avg(g.y * ln(g.pe) + (1 - g.y) * ln(1 - g.pe)),
		'accuracy', (avg(((g.p > 0.5) = (g.y = 1))::int) FILTER (WHERE g.y <> 0.5 AND g.p <> 0.5))::float8,
		'decided', count(*) FILTER (WHERE g.y <> 0.5 AND g.p <> 0.5),
		'baseline', jsonb_build_object(
			'deviance', CASE WHEN count(*) > 0 THEN log(2::float8) END,
			'brier', avg((0.5 - g.y) ^ 2),
			'log_loss', CASE WHEN count(*) > 0 THEN ln(2::float8) END,
			'accuracy', CASE WHEN count(*) > 0 THEN 0.5 END),
		'bins', coalesce((SELECT jsonb_agg(jsonb_build_object(
									'from', round(b.b / 10.0, 1), 'to', round((b.b + 1) / 10.0, 1), 'teams', b.n,
									'predicted', b.predicted, 'actual', b.actual) ORDER BY b.b)
							FROM bins b), '[]'))
	  FROM g
$$;
COMMENT ON FUNCTION mm.prediction_figures(float8[], float8[]) IS
'The calibration figures of two-team predictions p against outcomes y (1, 0.5, 0): deviance, Brier, log loss, accuracy, the 0.5 baseline, ten bins';
GRANT EXECUTE ON FUNCTION mm.prediction_figures(float8[], float8[]) TO mm_admin;

-- The queues rating into a pool (a queue's pool is its rating.pool, else
-- its name) and whether any rates per role.
CREATE FUNCTION mm.pool_queues(pool text, OUT queues text[], OUT per_role boolean, OUT systems text[],
							   OUT leavers_lose text[])
RETURNS record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(array_agg(q.name ORDER BY q.name), '{}'), coalesce(bool_or(q.config #>> '{rating,per_role}' = 'true'), false),
		   coalesce(array_agg(DISTINCT q.config #>> '{rating,system}'), '{}'),
		   coalesce(array_agg(q.name ORDER BY q.name) FILTER (WHERE q.config #>> '{rating,leavers_lose}' = 'true'), '{}')
	  FROM mm.queues q
	 WHERE coalesce(q.config #>> '{rating,pool}', q.name) = $1
	   AND q.config #>> '{rating,system}' IN ('elo', 'glicko2', 'openskill')
$$;
COMMENT ON FUNCTION mm.pool_queues(text) IS
'Internal: the rated queues of a rating pool, whether one rates per role, their systems and the queues whose leavers lose';
REVOKE ALL ON FUNCTION mm.pool_queues(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.pool_queues(text) TO mm_analyst, mm_admin;

-- The checks the three reports share: names and a window.
CREATE FUNCTION mm.check_window(name_argument text, name text, from_time timestamptz, to_time timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF name IS NULL THEN
		RAISE EXCEPTION '% must not be null', name_argument USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF from_time IS NULL OR to_time IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN from_time IS NULL THEN 'from_time' ELSE 'to_time' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(from_time) OR NOT isfinite(to_time) THEN
		RAISE EXCEPTION '% must be finite', CASE WHEN NOT isfinite(from_time) THEN 'from_time' ELSE 'to_time' END
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF to_time <= from_time THEN
		RAISE EXCEPTION 'to_time (%) must be after from_time (%)', to_time, from_time
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.check_window(text, text, timestamptz, timestamptz) IS
'Internal: refuses a NULL name, a NULL or infinite bound and an empty window [from_time, to_time)';
REVOKE ALL ON FUNCTION mm.check_window(text, text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.check_window(text, text, timestamptz, timestamptz) TO mm_analyst, mm_admin;

-- Two-team results of the pool's queues reported in [from_time, to_time)
-- that have a stored prediction: team 1's prediction and outcome.
CREATE FUNCTION mm.pool_predictions(pool text, queues text[], from_time timestamptz, to_time timestamptz,
									OUT match_id bigint, OUT queue text, OUT p float8, OUT y float8)
RETURNS SETOF record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT r.match_id, r.queue, a.win_probability,
		   CASE WHEN (r.ranks ->> a.team_name)::numeric < (r.ranks ->> b.team_name)::numeric THEN 1
				WHEN (r.ranks ->> a.team_name)::numeric = (r.ranks ->> b.team_name)::numeric THEN 0.5
				ELSE 0 END::float8
	  FROM mm.match_results r
	  JOIN mm.match_predictions a ON a.queue = r.queue AND a.match_id = r.match_id AND a.pool = $1
	  JOIN mm.match_predictions b ON b.queue = r.queue AND b.match_id = r.match_id AND b.team > a.team
	 WHERE r.queue = ANY ($2) AND r.reported_at >= $3 AND r.reported_at < $4
	   AND r.ranks ? a.team_name AND r.ranks ? b.team_name
	   -- exactly two teams: a the first, b the second
	   AND NOT EXISTS (SELECT FROM mm.match_predictions c
						WHERE c.queue = r.queue AND c.match_id = r.match_id AND c.team NOT IN (a.team, b.team))
$$;
COMMENT ON FUNCTION mm.pool_predictions(text, text[], timestamptz, timestamptz) IS
'Internal: the two-team results of a pool''s queues in [from_time, to_time) with a stored prediction: team 1''s win probability and its outcome (1, 0.5, 0)';
REVOKE ALL ON FUNCTION mm.pool_predictions(text, text[], timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.pool_predictions(text, text[], timestamptz, timestamptz) TO mm_analyst, mm_admin;

-- How well a pool's stored predictions foretold its results reported in
-- [from_time, to_time): see mm.prediction_figures.  Two-team matches.
CREATE FUNCTION mm.prediction_quality(pool text, from_time timestamptz, to_time timestamptz)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	figures jsonb;
	queues text[];
BEGIN
	PERFORM mm.check_window('pool', prediction_quality.pool, from_time, to_time);
	queues := (mm.pool_queues(prediction_quality.pool)).queues;
	IF cardinality(queues) = 0 THEN
		-- a role pool's matches are predicted, and scored, under its pool
		RAISE EXCEPTION 'rating pool "%" has no rated queue', prediction_quality.pool
			USING ERRCODE = 'undefined_object',
				  HINT = CASE WHEN position('.' IN prediction_quality.pool) > 0
							  THEN format('A role pool''s matches are scored under their pool: ask for "%s".',
										  split_part(prediction_quality.pool, '.', 1))
							  ELSE 'A queue rates into the pool named by its config''s rating.pool, else its own name.' END;
	END IF;
	SELECT mm.prediction_figures(coalesce(array_agg(x.p ORDER BY x.queue, x.match_id), '{}'),
								 coalesce(array_agg(x.y ORDER BY x.queue, x.match_id), '{}'))
	  INTO figures
	  FROM mm.pool_predictions(prediction_quality.pool, queues, from_time, to_time) x;
	RETURN jsonb_build_object('pool', prediction_quality.pool, 'from_time', from_time, 'to_time', to_time) || figures;
END
$$;
COMMENT ON FUNCTION mm.prediction_quality(text, timestamptz, timestamptz) IS
'How well the pool''s predictions kept with its matches foretold the results reported in [from_time, to_time): deviance, Brier, log loss, accuracy, each beside the 0.5 baseline, and calibration bins';
REVOKE ALL ON FUNCTION mm.prediction_quality(text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.prediction_quality(text, timestamptz, timestamptz) TO mm_analyst, mm_admin;

-- A queue's fairness scorecard over the matches formed in [from_time,
-- to_time): see docs/fairness.md for each figure and its anchor.
-- lopsided_margin: a result whose winner's score is more than this above
-- the next team's is lopsided (NULL: not counted).
CREATE FUNCTION mm.fairness_report(queue text, from_time timestamptz, to_time timestamptz,
								   lopsided_margin float8 DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	report jsonb;
BEGIN
	PERFORM mm.check_window('queue', fairness_report.queue, from_time, to_time);
	IF lopsided_margin IS NOT NULL AND NOT (lopsided_margin >= 0 AND lopsided_margin < 'Infinity'::float8) THEN
		RAISE EXCEPTION 'lopsided_margin must be a finite number, 0 or more'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('Got %s.', lopsided_margin);
	END IF;
	IF NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = fairness_report.queue) THEN
		RAISE EXCEPTION 'queue "%" does not exist', fairness_report.queue USING ERRCODE = 'undefined_object';
	END IF;

	WITH m AS (
		SELECT mt.id, mt.region FROM mm.matches mt
		 WHERE mt.queue = fairness_report.queue AND mt.created_at >= from_time AND mt.created_at < to_time
	), predicted AS (
		-- per predicted match: the largest distance of a team's chance
		-- from an even one (1 / teams), the gap between the strongest and
		-- the weakest team, the spread from the lowest to the highest player
		SELECT mp.match_id, max(abs(mp.win_probability - 1.0 / x.teams)) AS off_even,
			   max(mp.team_rating) - min(mp.team_rating) AS gap,
			   max(mp.rating_max) - min(mp.rating_min) AS spread
		  FROM m JOIN mm.match_predictions mp ON mp.queue = fairness_report.queue AND mp.match_id = m.id
		 CROSS JOIN LATERAL (SELECT count(*) AS teams FROM mm.match_predictions c
							  WHERE c.queue = mp.queue AND c.match_id = mp.match_id) x
		 GROUP BY mp.match_id
	), parties AS (
		-- per team of a match: its largest party (players of one ticket)
		SELECT s.match_id, s.team, max(s.size) AS largest
		  FROM (SELECT mp.match_id, mp.team, count(*) AS size
				  FROM m JOIN mm.match_players mp ON mp.queue = fairness_report.queue AND mp.match_id = m.id
				 WHERE mp.team IS NOT NULL
				 GROUP BY mp.match_id, mp.team, mp.ticket_id) s
		 GROUP BY s.match_id, s.team
	), premade AS (
		SELECT p.match_id,
			   (max(p.largest) >= 2 AND min(p.largest) = 1) OR max(p.largest) - min(p.largest) >= 2 AS imbalanced
		  FROM parties p GROUP BY p.match_id HAVING count(*) >= 2
	), autofill AS (
		SELECT mp.role, count(*) AS players, avg(mp.autofilled::int)::float8 AS rate
		  FROM m JOIN mm.match_players mp ON mp.queue = fairness_report.queue AND mp.match_id = m.id
		 WHERE mp.role IS NOT NULL
		 GROUP BY mp.role
	), latency AS (
		-- each matched player's latency to the match's region, from the ticket
		-- (as the metrics read it)
		SELECT mm.metrics_number(pl.value -> 'latencies' -> m.region) AS ms
		  FROM m JOIN mm.match_players mp ON mp.queue = fairness_report.queue AND mp.match_id = m.id
		  JOIN mm.tickets t ON t.queue = fairness_report.queue AND t.id = mp.ticket_id
		 CROSS JOIN LATERAL jsonb_array_elements(t.players) pl
		 WHERE m.region IS NOT NULL AND pl.value ->> 'id' = mp.player_id
		   AND mm.metrics_number(pl.value -> 'latencies' -> m.region) IS NOT NULL
	), scored AS (
		-- the winner's lead over the next team
		SELECT s.match_id,
			   (SELECT max(e.value::text::float8) - (SELECT e2.value::text::float8
														FROM jsonb_each(s.scores) e2
													   ORDER BY e2.value::text::float8 DESC OFFSET 1 LIMIT 1)
				  FROM jsonb_each(s.scores) e) AS lead
		  FROM m JOIN mm.match_scores s ON s.queue = fairness_report.queue AND s.match_id = m.id
	)
	SELECT jsonb_build_object(
		'queue', fairness_report.queue, 'from_time', from_time, 'to_time', to_time,
		'matches', (SELECT count(*) FROM m),
		'predicted', (SELECT count(*) FROM predicted),
		'fair_2', (SELECT avg((p.off_even <= 0.02 + 1e-12)::int)::float8 FROM predicted p),
		'fair_5', (SELECT avg((p.off_even <= 0.05 + 1e-12)::int)::float8 FROM predicted p),
		'rating_gap', (SELECT jsonb_build_object(
							'p50', percentile_cont(0.5) WITHIN GROUP (ORDER BY p.gap),
							'p90', percentile_cont(0.9) WITHIN GROUP (ORDER BY p.gap),
							'p99', percentile_cont(0.99) WITHIN GROUP (ORDER BY p.gap))
						 FROM predicted p),
		'skill_spread', (SELECT jsonb_build_object(
							'p50', percentile_cont(0.5) WITHIN GROUP (ORDER BY p.spread),
							'p90', percentile_cont(0.9) WITHIN GROUP (ORDER BY p.spread),
							'p99', percentile_cont(0.99) WITHIN GROUP (ORDER BY p.spread))
						   FROM predicted p),
		'premade_imbalance', (SELECT avg(p.imbalanced::int)::float8 FROM premade p),
		'autofill', coalesce((SELECT jsonb_object_agg(a.role, jsonb_build_object('players', a.players, 'rate', a.rate))
								FROM autofill a), '{}'),
		'latency_p95_ms', (SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY l.ms) FROM latency l),
		'scored_results', (SELECT count(*) FROM scored),
		'lopsided', CASE WHEN lopsided_margin IS NOT NULL
						 THEN (SELECT avg((s.lead > lopsided_margin)::int)::float8 FROM scored s) END)
	  INTO report;
	RETURN report;
END
$$;
COMMENT ON FUNCTION mm.fairness_report(text, timestamptz, timestamptz, float8) IS
'A queue''s fairness scorecard over the matches formed in [from_time, to_time): shares within 50 +- 2 and +- 5 %, rating gap and skill spread p50/p90/p99, premade imbalance, autofill per role, latency p95, lopsided results (lopsided_margin)';
REVOKE ALL ON FUNCTION mm.fairness_report(text, timestamptz, timestamptz, float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.fairness_report(text, timestamptz, timestamptz, float8) TO mm_analyst, mm_admin;

-- The core of mm.replay_ratings (src/replay_ratings.c): the settings
-- (tau: Glicko-2's system constant or OpenSkill's; initial_rating and
-- initial_rd: OpenSkill's mu and sigma; k <= 0: the K schedule k_games /
-- k_values, else mm.elo_k_factor), the season resets (share, RD, target;
-- NaN: the pool's mean), then the results as player rows in replay order (a
-- match's rows together), each row's side name (team, or the player in a
-- free-for-all), its side's rank and whether it is a leaver scored as a
-- loss; the optional per-row arrays (empty: none): the rating period
-- (Glicko-2), the resets due before the row, the pool's number, the
-- player's seed (NaN: none).  Out: per replayed match its id, side 1's
-- prediction and outcome, per player the state after.
CREATE FUNCTION mm.replay_ratings_core(system text, tau float8, k float8, initial_rating float8,
									   initial_rd float8, initial_volatility float8, beta float8,
									   k_games integer[], k_values float8[], reset_share float8[],
									   reset_rd float8[], reset_target float8[], match_ids bigint[],
									   player_ids text[], side_names text[], ranks integer[], losses integer[],
									   periods bigint[], resets integer[], pools integer[],
									   seed_ratings float8[], seed_rds float8[], seed_volatilities float8[],
									   OUT replayed_ids bigint[], OUT predictions float8[], OUT outcomes float8[],
									   OUT players text[], OUT ratings float8[], OUT rds float8[],
									   OUT games integer[])
RETURNS record
AS 'MODULE_PATHNAME', 'mm_replay_ratings_core'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.replay_ratings_core(text, float8, float8, float8, float8, float8, float8, integer[], float8[],
										   float8[], float8[], float8[], bigint[], text[], text[], integer[], integer[],
										   bigint[], integer[], integer[], float8[], float8[], float8[]) IS
'Internal: the Elo, Glicko-2 or OpenSkill replay of mm.replay_ratings over player rows';
REVOKE ALL ON FUNCTION mm.replay_ratings_core(text, float8, float8, float8, float8, float8, float8, integer[], float8[],
											  float8[], float8[], float8[], bigint[], text[], text[], integer[],
											  integer[], bigint[], integer[], integer[], float8[], float8[], float8[])
	FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_ratings_core(text, float8, float8, float8, float8, float8, float8, integer[],
												 float8[], float8[], float8[], float8[], bigint[], text[], text[],
												 integer[], integer[], bigint[], integer[], integer[], float8[],
												 float8[], float8[])
	TO mm_analyst, mm_admin;

-- The 22023 error of a replay setting, naming its JSON path.
CREATE FUNCTION mm.raise_replay_setting_error(path text, problem text, detail text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'settings.% %', path, problem
		USING ERRCODE = 'invalid_parameter_value', DETAIL = coalesce(detail, ''),
			  HINT = 'See docs/fairness.md, "mm.replay_ratings", for the settings.';
END
$$;
COMMENT ON FUNCTION mm.raise_replay_setting_error(text, text, text) IS
'Internal: the 22023 error of an invalid mm.replay_ratings setting, naming its JSON path';
REVOKE ALL ON FUNCTION mm.raise_replay_setting_error(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.raise_replay_setting_error(text, text, text) TO mm_analyst, mm_admin;

-- A number of the settings at path within [low, high] (above low when
-- low_open; whole: an integer), or the error naming the path.
CREATE FUNCTION mm.replay_setting_number(value jsonb, path text, low float8, high float8,
										 low_open boolean DEFAULT false, whole boolean DEFAULT false)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n numeric;
BEGIN
	IF jsonb_typeof(value) IS DISTINCT FROM 'number' THEN
		PERFORM mm.raise_replay_setting_error(path, format('must be %s', CASE WHEN whole THEN 'an integer' ELSE 'a number' END),
											  format('Got %s.', left(coalesce(value::text, 'nothing'), 100)));
	END IF;
	n := value::text::numeric;
	IF n > high::numeric OR n < low::numeric OR (low_open AND n = low::numeric) OR (whole AND n <> trunc(n)) THEN
		PERFORM mm.raise_replay_setting_error(path,
			format(CASE WHEN low_open THEN 'must be %s above %s and at most %s' ELSE 'must be %s from %s to %s' END,
				   CASE WHEN whole THEN 'an integer' ELSE 'a number' END, low, high),
			format('Got %s.', left(value::text, 100)));
	END IF;
	RETURN n::float8;
END
$$;
COMMENT ON FUNCTION mm.replay_setting_number(jsonb, text, float8, float8, boolean, boolean) IS
'Internal: a number of mm.replay_ratings'' settings within its range, or an error naming its path';
REVOKE ALL ON FUNCTION mm.replay_setting_number(jsonb, text, float8, float8, boolean, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_setting_number(jsonb, text, float8, float8, boolean, boolean)
	TO mm_analyst, mm_admin;

-- A time of the settings at path: an interval above zero (a rating
-- period) or, with point, a finite timestamp; else the error naming it.
CREATE FUNCTION mm.replay_setting_time(value jsonb, path text, point boolean,
									   OUT span interval, OUT at timestamptz)
RETURNS record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF jsonb_typeof(value) IS DISTINCT FROM 'string' THEN
		PERFORM mm.raise_replay_setting_error(path,
			CASE WHEN point THEN 'must be a timestamp, e.g. "2030-01-01 00:00+00"' ELSE 'must be an interval, e.g. "1 day"' END);
	END IF;
	BEGIN
		IF point THEN
			at := (value #>> '{}')::timestamptz;
		ELSE
			span := (value #>> '{}')::interval;
		END IF;
	EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow
				   OR invalid_parameter_value THEN
		PERFORM mm.raise_replay_setting_error(path,
			CASE WHEN point THEN 'must be a timestamp' ELSE 'must be an interval' END,
			format('Got %s.', left(value::text, 100)));
	END;
	IF (point AND NOT isfinite(at)) OR (NOT point AND NOT span > interval '0') THEN
		PERFORM mm.raise_replay_setting_error(path, CASE WHEN point THEN 'must be finite' ELSE 'must be above zero' END,
											  format('Got %s.', left(value::text, 100)));
	END IF;
END
$$;
COMMENT ON FUNCTION mm.replay_setting_time(jsonb, text, boolean) IS
'Internal: an interval above zero or (point) a finite timestamp of mm.replay_ratings'' settings, or an error naming its path';
REVOKE ALL ON FUNCTION mm.replay_setting_time(jsonb, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_setting_time(jsonb, text, boolean) TO mm_analyst, mm_admin;

-- Step 1 of mm.replay_ratings: the settings checked (every error names
-- its JSON path) and completed with the system's defaults, as one object
-- the other steps read (k_schedule as k_games / k_values; the resets as
-- reset_at / reset_share / reset_rd / reset_target, "live" read from
-- mm.seasons of the window).
CREATE FUNCTION mm.replay_rating_settings(pool text, settings jsonb, from_time timestamptz, to_time timestamptz)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	systems constant jsonb := '{"elo": ["k", "k_schedule"],
								"glicko2": ["tau", "initial_rd", "initial_volatility", "rating_period"],
								"openskill": ["model", "beta", "tau", "initial_rd"]}';
	common constant text[] := ARRAY['initial_rating', 'output_ratings', 'season_resets', 'seed', 'system'];
	rating_system text;
	setting_key text;
	entry jsonb;
	pool_reset jsonb;
	resets jsonb := '[]';
	result jsonb;
BEGIN
	IF settings IS NULL THEN
		RAISE EXCEPTION 'settings must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF jsonb_typeof(settings) <> 'object' THEN
		RAISE EXCEPTION 'settings must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'For example {"system": "glicko2", "tau": 0.5}.';
	END IF;
	rating_system := settings ->> 'system';
	IF jsonb_typeof(settings -> 'system') IS DISTINCT FROM 'string' OR NOT systems ? rating_system THEN
		PERFORM mm.raise_replay_setting_error('system', 'must be "elo", "glicko2" or "openskill"',
											  format('Got %s.', left(coalesce((settings -> 'system')::text, 'nothing'), 100)));
	END IF;
	FOR setting_key IN SELECT e FROM jsonb_object_keys(settings) e ORDER BY e LOOP
		IF NOT (setting_key = ANY (common) OR systems -> rating_system ? setting_key) THEN
			PERFORM mm.raise_replay_setting_error(setting_key,
				CASE WHEN EXISTS (SELECT FROM jsonb_each(systems) x WHERE x.value ? setting_key)
					 THEN format('is not a setting of %s', rating_system) ELSE 'is not a rating setting' END,
				format('The settings of %s: %s.', rating_system,
					   array_to_string(common || ARRAY(SELECT jsonb_array_elements_text(systems -> rating_system)), ', ')));
		END IF;
	END LOOP;
	IF settings ? 'output_ratings' AND jsonb_typeof(settings -> 'output_ratings') <> 'boolean' THEN
		PERFORM mm.raise_replay_setting_error('output_ratings', 'must be true or false');
	END IF;
	IF settings ? 'model' AND settings -> 'model' <> '"plackett_luce"' THEN
		IF jsonb_typeof(settings -> 'model') = 'string'
		   AND settings ->> 'model' IN ('bradley_terry_full', 'bradley_terry_part', 'thurstone_mosteller_full',
										'thurstone_mosteller_part') THEN
			RAISE EXCEPTION 'settings.model: OpenSkill''s % model is not supported', settings ->> 'model'
				USING ERRCODE = 'feature_not_supported', HINT = 'The live OpenSkill is "plackett_luce".';
		END IF;
		PERFORM mm.raise_replay_setting_error('model', 'must be "plackett_luce"',
											  format('Got %s.', left((settings -> 'model')::text, 100)));
	END IF;
	IF settings ? 'seed' AND settings -> 'seed' NOT IN ('"initial"', '"live"') THEN
		PERFORM mm.raise_replay_setting_error('seed', 'must be "initial" or "live"',
											  format('Got %s.', left((settings -> 'seed')::text, 100)));
	END IF;

	result := jsonb_build_object(
		'system', rating_system,
		'initial_rating', CASE WHEN settings ? 'initial_rating'
							   THEN mm.replay_setting_number(settings -> 'initial_rating', 'initial_rating', -1e9, 1e9)
							   WHEN rating_system = 'openskill' THEN 25 ELSE 1500 END,
		'initial_rd', CASE WHEN settings ? 'initial_rd'
						   THEN mm.replay_setting_number(settings -> 'initial_rd', 'initial_rd', 0, 1e6, true)
						   WHEN rating_system = 'openskill' THEN 25 / 3.0::float8 ELSE 350 END,
		'initial_volatility', CASE WHEN settings ? 'initial_volatility'
								   THEN mm.replay_setting_number(settings -> 'initial_volatility', 'initial_volatility',
																 0, 10, true)
								   ELSE 0.06 END,
		'tau', CASE WHEN settings ? 'tau' THEN mm.replay_setting_number(settings -> 'tau', 'tau', 0, 1e6, true)
					WHEN rating_system = 'openskill' THEN 25 / 300.0::float8 ELSE 0.5 END,
		'beta', CASE WHEN settings ? 'beta' THEN mm.replay_setting_number(settings -> 'beta', 'beta', 0, 1e6, true)
					 ELSE 25 / 6.0::float8 END,
		'k', CASE WHEN settings ? 'k' THEN mm.replay_setting_number(settings -> 'k', 'k', 0, 1e6, true) END,
		'rating_period', CASE WHEN settings ? 'rating_period'
							  THEN to_jsonb((mm.replay_setting_time(settings -> 'rating_period', 'rating_period', false)).span) END,
		'seed', coalesce(settings ->> 'seed', 'initial'),
		'output_ratings', coalesce((settings ->> 'output_ratings')::boolean, false));
	IF settings ? 'k' AND settings ? 'k_schedule' THEN
		PERFORM mm.raise_replay_setting_error('k_schedule', 'and settings.k exclude each other');
	END IF;
	result := result || mm.replay_k_schedule(settings -> 'k_schedule');

	-- the season resets: the pool's own ("live") or listed, each taking the
	-- pool's season_reset settings where it gives none
	pool_reset := coalesce(mm.rating_pool_settings(pool) -> 'season_reset', '{}');
	IF settings -> 'season_resets' = '"live"' THEN
		SELECT coalesce(jsonb_agg(jsonb_build_object('at', s.started_at) || coalesce(s.settings -> 'season_reset', '{}')
								  ORDER BY s.started_at), '[]')
		  INTO resets
		  FROM mm.seasons s
		 WHERE s.pool = replay_rating_settings.pool AND s.started_at >= from_time AND s.started_at < to_time;
	ELSIF settings ? 'season_resets' THEN
		IF jsonb_typeof(settings -> 'season_resets') <> 'array' OR jsonb_array_length(settings -> 'season_resets') > 1000 THEN
			PERFORM mm.raise_replay_setting_error('season_resets', 'must be "live" or an array of at most 1000 resets');
		END IF;
		FOR i IN 0 .. jsonb_array_length(settings -> 'season_resets') - 1 LOOP
			entry := settings -> 'season_resets' -> i;
			IF jsonb_typeof(entry) IS DISTINCT FROM 'object' OR NOT entry ? 'at' THEN
				PERFORM mm.raise_replay_setting_error(format('season_resets[%s]', i), 'must be an object with "at"',
													  'For example {"at": "2030-01-01 00:00+00", "share": 0.5}.');
			END IF;
			SELECT min(e) INTO setting_key FROM jsonb_object_keys(entry) e WHERE e NOT IN ('at', 'share', 'rd', 'target');
			IF setting_key IS NOT NULL THEN
				PERFORM mm.raise_replay_setting_error(format('season_resets[%s].%s', i, setting_key),
													  'is not a reset setting (at, share, rd, target)');
			END IF;
			resets := resets || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
				'at', (mm.replay_setting_time(entry -> 'at', format('season_resets[%s].at', i), true)).at,
				'share', CASE WHEN entry ? 'share' THEN mm.replay_setting_number(entry -> 'share', format('season_resets[%s].share', i), 0, 1) END,
				'rd', CASE WHEN entry ? 'rd' THEN mm.replay_setting_number(entry -> 'rd', format('season_resets[%s].rd', i), 0, 1e6, true) END,
				'target', CASE WHEN entry ? 'target' THEN mm.replay_setting_number(entry -> 'target', format('season_resets[%s].target', i), -1e9, 1e9) END)));
			IF i > 0 AND (resets -> i ->> 'at')::timestamptz < (resets -> (i - 1) ->> 'at')::timestamptz THEN
				PERFORM mm.raise_replay_setting_error(format('season_resets[%s].at', i), 'must not be before the reset before it');
			END IF;
		END LOOP;
	END IF;
	RETURN result || jsonb_build_object(
		'season_resets', resets,
		'reset_at', (SELECT coalesce(jsonb_agg(x -> 'at'), '[]') FROM jsonb_array_elements(resets) x),
		'reset_share', (SELECT coalesce(jsonb_agg(coalesce(x -> 'share', pool_reset -> 'share', '0.5')), '[]')
						  FROM jsonb_array_elements(resets) x),
		'reset_rd', (SELECT coalesce(jsonb_agg(coalesce(x -> 'rd', pool_reset -> 'rd', '250')), '[]')
					   FROM jsonb_array_elements(resets) x),
		'reset_target', (SELECT coalesce(jsonb_agg(coalesce(x -> 'target', pool_reset -> 'target', '"NaN"')), '[]')
						   FROM jsonb_array_elements(resets) x));
END
$$;
COMMENT ON FUNCTION mm.replay_rating_settings(text, jsonb, timestamptz, timestamptz) IS
'Internal: mm.replay_ratings'' settings checked (errors name the JSON path) and completed with the defaults';
REVOKE ALL ON FUNCTION mm.replay_rating_settings(text, jsonb, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_rating_settings(text, jsonb, timestamptz, timestamptz) TO mm_analyst, mm_admin;

-- The Elo K schedule: [{"games": 30, "k": 40}, ..., {"k": 20}], games
-- rising; a player's K is that of the first entry whose games are above
-- the games they have played (an entry without games: every player), else
-- the last entry's.  As {"k_games": [...], "k_values": [...]}.
CREATE FUNCTION mm.replay_k_schedule(schedule jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	entry jsonb;
	extra text;
	games integer[] := '{}';
	k_values float8[] := '{}';
BEGIN
	IF schedule IS NULL THEN
		RETURN '{"k_games": [], "k_values": []}';
	END IF;
	IF jsonb_typeof(schedule) <> 'array' OR jsonb_array_length(schedule) NOT BETWEEN 1 AND 100 THEN
		PERFORM mm.raise_replay_setting_error('k_schedule', 'must be an array of 1 to 100 steps',
											  'For example [{"games": 30, "k": 40}, {"k": 20}].');
	END IF;
	FOR i IN 0 .. jsonb_array_length(schedule) - 1 LOOP
		entry := schedule -> i;
		IF jsonb_typeof(entry) IS DISTINCT FROM 'object' OR NOT entry ? 'k' THEN
			PERFORM mm.raise_replay_setting_error(format('k_schedule[%s]', i), 'must be an object with "k"');
		END IF;
		SELECT min(e) INTO extra FROM jsonb_object_keys(entry) e WHERE e NOT IN ('games', 'k');
		IF extra IS NOT NULL THEN
			PERFORM mm.raise_replay_setting_error(format('k_schedule[%s].%s', i, extra), 'is not a step setting (games, k)');
		END IF;
		IF NOT entry ? 'games' AND i < jsonb_array_length(schedule) - 1 THEN
			PERFORM mm.raise_replay_setting_error(format('k_schedule[%s].games', i), 'is required but in the last step');
		END IF;
		games := games || CASE WHEN entry ? 'games'
							   THEN mm.replay_setting_number(entry -> 'games', format('k_schedule[%s].games', i), 1,
															 1e6, false, true)::integer
							   ELSE 2147483647 END;
		IF i > 0 AND games[i + 1] <= games[i] THEN
			PERFORM mm.raise_replay_setting_error(format('k_schedule[%s].games', i), 'must be above the step before',
												  format('Got %s after %s.', games[i + 1], games[i]));
		END IF;
		k_values := k_values || mm.replay_setting_number(entry -> 'k', format('k_schedule[%s].k', i), 0, 1e6, true);
	END LOOP;
	RETURN jsonb_build_object('k_games', to_jsonb(games), 'k_values', to_jsonb(k_values));
END
$$;
COMMENT ON FUNCTION mm.replay_k_schedule(jsonb) IS
'Internal: an Elo K schedule of mm.replay_ratings'' settings checked, as k_games / k_values arrays';
REVOKE ALL ON FUNCTION mm.replay_k_schedule(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_k_schedule(jsonb) TO mm_analyst, mm_admin;

-- Step 2 of mm.replay_ratings: the pool's results reported in [from_time,
-- to_time) in replay order (reported_at, match id: ids are unique over
-- queues), one row per player, with what the core reads beside: the side
-- name and rank, a leaver scored as a loss (the queue's leavers_lose), the
-- rating identity (player id, unit separator, the pool rated in: for the
-- per_role queues <pool>.<role>), the pool's number in pool_names, the
-- rating period (Glicko-2), the season resets due (reset_at), and with
-- seed_live the player's live rating before each result (the core keeps a
-- player's first).  Sorted once: the aggregates keep the subquery's order.
CREATE FUNCTION mm.replay_rating_rows(pool text, queues text[], leavers_lose text[], per_role_queues text[],
									  pool_names text[], rating_period interval, reset_at timestamptz[],
									  seed_live boolean, openskill boolean, from_time timestamptz,
									  to_time timestamptz,
									  OUT match_ids bigint[], OUT player_keys text[], OUT side_names text[],
									  OUT ranks integer[], OUT losses integer[], OUT periods bigint[],
									  OUT resets integer[], OUT pool_numbers integer[],
									  OUT seed_ratings float8[], OUT seed_rds float8[], OUT seed_volatilities float8[])
RETURNS record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(array_agg(x.match_id), '{}'), coalesce(array_agg(x.player_id || E'\x1f' || x.rated_in), '{}'),
		   coalesce(array_agg(x.side_name), '{}'), coalesce(array_agg(x.rank), '{}'), coalesce(array_agg(x.loss), '{}'),
		   coalesce(array_agg(x.period) FILTER (WHERE rating_period IS NOT NULL), '{}'),
		   coalesce(array_agg(x.due) FILTER (WHERE cardinality(reset_at) > 0), '{}'),
		   coalesce(array_agg(array_position(pool_names, x.rated_in)) FILTER (WHERE cardinality(pool_names) > 1), '{}'),
		   coalesce(array_agg(coalesce(x.seed_rating, 'NaN')) FILTER (WHERE seed_live), '{}'),
		   coalesce(array_agg(coalesce(x.seed_rd, 'NaN')) FILTER (WHERE seed_live), '{}'),
		   coalesce(array_agg(coalesce(x.seed_volatility, 'NaN')) FILTER (WHERE seed_live), '{}')
	  FROM (SELECT r.match_id, mp.player_id, coalesce(mp.team, mp.player_id) AS side_name,
				   coalesce(CASE WHEN jsonb_typeof(r.ranks -> coalesce(mp.team, mp.player_id)) = 'number'
								 THEN (r.ranks ->> coalesce(mp.team, mp.player_id))::numeric::int END, 0) AS rank,
				   (mp.left_at IS NOT NULL AND r.queue = ANY (leavers_lose))::int AS loss,
				   CASE WHEN mp.role IS NOT NULL AND r.queue = ANY (per_role_queues) THEN $1 || '.' || mp.role
						ELSE $1 END AS rated_in,
				   CASE WHEN rating_period IS NOT NULL
						THEN floor(extract(epoch FROM r.reported_at - from_time) / extract(epoch FROM rating_period))::bigint
						END AS period,
				   CASE WHEN cardinality(reset_at) > 0
						THEN (SELECT count(*)::int FROM unnest(reset_at) a WHERE a <= r.reported_at) END AS due,
				   h.seed_rating, h.seed_rd, h.seed_volatility
			  FROM mm.match_results r
			  JOIN mm.match_players mp ON mp.queue = r.queue AND mp.match_id = r.match_id
			  LEFT JOIN LATERAL (
				SELECT CASE WHEN openskill THEN rh.mu_before ELSE rh.rating_before END AS seed_rating,
					   CASE WHEN openskill THEN rh.sigma_before ELSE rh.rd_before END AS seed_rd,
					   rh.volatility_before AS seed_volatility
				  FROM mm.rating_history rh
				 WHERE seed_live AND rh.match_id = r.match_id AND rh.player_id = mp.player_id) h ON true
			 WHERE r.queue = ANY (queues) AND r.reported_at >= from_time AND r.reported_at < to_time
			   AND jsonb_typeof(r.ranks) = 'object'
			 ORDER BY r.reported_at, r.match_id) x
$$;
COMMENT ON FUNCTION mm.replay_rating_rows(text, text[], text[], text[], text[], interval, timestamptz[], boolean, boolean,
										  timestamptz, timestamptz) IS
'Internal: the player rows of a pool''s results in [from_time, to_time) in replay order, for mm.replay_ratings';
REVOKE ALL ON FUNCTION mm.replay_rating_rows(text, text[], text[], text[], text[], interval, timestamptz[], boolean,
											 boolean, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_rating_rows(text, text[], text[], text[], text[], interval, timestamptz[], boolean,
												boolean, timestamptz, timestamptz)
	TO mm_analyst, mm_admin;

-- Step 3 of mm.replay_ratings: the replayed ratings beside the live ones
-- after each player's last result of the window (per rated pool), and the
-- tiers both give (each pool's tiers, without placements or demotion
-- protection).  player_keys: player id, unit separator, pool.
CREATE FUNCTION mm.replay_rating_comparison(player_keys text[], ratings float8[], rds float8[], games integer[],
											pool_names text[], from_time timestamptz, to_time timestamptz,
											settings jsonb)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH live_after AS (
		SELECT DISTINCT ON (rh.player_id, rh.pool) rh.player_id, rh.pool,
			   coalesce(rh.rating_after, rh.mu_after) AS rating, coalesce(rh.rd_after, rh.sigma_after) AS rd
		  FROM mm.rating_history rh
		 WHERE rh.pool = ANY (pool_names) AND rh.reason = 'match'
		   AND rh.created_at >= from_time AND rh.created_at < to_time
		 ORDER BY rh.player_id, rh.pool, rh.created_at DESC, rh.id DESC
	), tiers AS (
		SELECT p.name, CASE WHEN s ? 'tiers' THEN jsonb_build_object('tiers', s -> 'tiers') END AS tiers
		  FROM unnest(pool_names) p(name), mm.rating_pool_settings(p.name) s
	), pairs AS (
		SELECT split_part(u.key, E'\x1f', 1) AS id, split_part(u.key, E'\x1f', 2) AS pool, u.rating, u.rd, u.games,
			   l.rating AS live_rating, l.rd AS live_rd, t.tiers
		  FROM unnest(player_keys, ratings, rds, games) u(key, rating, rd, games)
		  LEFT JOIN live_after l ON l.player_id = split_part(u.key, E'\x1f', 1) AND l.pool = split_part(u.key, E'\x1f', 2)
		  LEFT JOIN tiers t ON t.name = split_part(u.key, E'\x1f', 2)
	)
	SELECT jsonb_build_object(
		'players', count(*),
		'compared', count(p.live_rating),
		'max_rating_difference', max(abs(p.rating - p.live_rating)),
		'mean_abs_rating_difference', avg(abs(p.rating - p.live_rating)),
		'tier_changes', CASE WHEN bool_or(p.tiers IS NOT NULL) THEN
			count(*) FILTER (WHERE p.live_rating IS NOT NULL AND p.tiers IS NOT NULL
							   AND (mm.rating_standing(p.tiers, p.rating, p.rd, 0, 0, NULL, NULL, 0, false)).tier
								   IS DISTINCT FROM
								   (mm.rating_standing(p.tiers, p.live_rating, p.live_rd, 0, 0, NULL, NULL, 0, false)).tier)
			END)
		   || CASE WHEN (settings ->> 'output_ratings')::boolean THEN
				  jsonb_build_object('player_ratings', coalesce(jsonb_object_agg(
					  -- a per-role pool's players by pool
					  CASE WHEN cardinality(pool_names) > 1 OR position('.' IN p.pool) > 0
						   THEN p.pool || ':' || p.id ELSE p.id END,
					  jsonb_build_object('rating', p.rating,
										 'rd', CASE WHEN settings ->> 'system' <> 'elo' THEN p.rd END,
										 'games', p.games)), '{}'))
			  ELSE '{}' END
	  FROM pairs p
$$;
COMMENT ON FUNCTION mm.replay_rating_comparison(text[], float8[], float8[], integer[], text[], timestamptz, timestamptz,
												jsonb) IS
'Internal: a rating replay''s ratings and tiers beside the live ones, for mm.replay_ratings';
REVOKE ALL ON FUNCTION mm.replay_rating_comparison(text[], float8[], float8[], integer[], text[], timestamptz,
												   timestamptz, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_rating_comparison(text[], float8[], float8[], integer[], text[], timestamptz,
													  timestamptz, jsonb) TO mm_analyst, mm_admin;

-- What-if for rating settings: the pool's results reported in [from_time,
-- to_time) replayed in order with the settings (docs/fairness.md lists
-- them: system, Elo K or its schedule, Glicko-2 tau, initial RD and
-- volatility, rating period, OpenSkill model, beta and tau, the initial
-- rating, seeds, season resets, output_ratings), beside what the live
-- ratings did on the same results.  A per-role pool replays all its role
-- pools.  Reads only: runs in a read-only transaction and on a standby.
CREATE FUNCTION mm.replay_ratings(pool text, settings jsonb, from_time timestamptz, to_time timestamptz)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- the results are sorted in memory: 100,000 results need about 30 MB
SET work_mem = '64MB'
AS $$
#variable_conflict error
DECLARE
	pq record;
	s jsonb;
	x record;
	replayed record;
	live jsonb;
	per_role_queues text[];
	pool_names text[];
BEGIN
	PERFORM mm.check_window('pool', replay_ratings.pool, from_time, to_time);
	pq := mm.pool_queues(replay_ratings.pool);
	IF cardinality(pq.queues) = 0 THEN
		RAISE EXCEPTION 'rating pool "%" has no rated queue', replay_ratings.pool
			USING ERRCODE = 'undefined_object',
				  HINT = CASE WHEN position('.' IN replay_ratings.pool) > 0
							  THEN format('A role pool is replayed with the others of its pool: replay "%s".',
										  split_part(replay_ratings.pool, '.', 1))
							  ELSE 'A queue rates into the pool named by its config''s rating.pool, else its own name.' END;
	END IF;
	s := mm.replay_rating_settings(replay_ratings.pool, settings, from_time, to_time);
	-- the pools rated: the pool, or a per-role pool's role pools played
	per_role_queues := ARRAY(SELECT q.name FROM mm.queues q
							  WHERE q.name = ANY (pq.queues) AND q.config #>> '{rating,per_role}' = 'true');
	pool_names := CASE WHEN cardinality(per_role_queues) = 0 THEN ARRAY[replay_ratings.pool] ELSE
		ARRAY(SELECT DISTINCT CASE WHEN mp.role IS NOT NULL AND r.queue = ANY (per_role_queues)
								   THEN replay_ratings.pool || '.' || mp.role ELSE replay_ratings.pool END
				FROM mm.match_results r JOIN mm.match_players mp ON mp.queue = r.queue AND mp.match_id = r.match_id
			   WHERE r.queue = ANY (pq.queues) AND r.reported_at >= from_time AND r.reported_at < to_time
			   ORDER BY 1) END;
	x := mm.replay_rating_rows(replay_ratings.pool, pq.queues, pq.leavers_lose, per_role_queues, pool_names,
							   (s ->> 'rating_period')::interval,
							   ARRAY(SELECT e::timestamptz FROM jsonb_array_elements_text(s -> 'reset_at') e),
							   s ->> 'seed' = 'live', s ->> 'system' = 'openskill', from_time, to_time);
	replayed := mm.replay_ratings_core(
		s ->> 'system', (s ->> 'tau')::float8, coalesce((s ->> 'k')::float8, 0), (s ->> 'initial_rating')::float8,
		(s ->> 'initial_rd')::float8, (s ->> 'initial_volatility')::float8, (s ->> 'beta')::float8,
		ARRAY(SELECT e::int FROM jsonb_array_elements_text(s -> 'k_games') e),
		ARRAY(SELECT e::float8 FROM jsonb_array_elements_text(s -> 'k_values') e),
		ARRAY(SELECT e::float8 FROM jsonb_array_elements_text(s -> 'reset_share') e),
		ARRAY(SELECT e::float8 FROM jsonb_array_elements_text(s -> 'reset_rd') e),
		ARRAY(SELECT e::float8 FROM jsonb_array_elements_text(s -> 'reset_target') e),
		x.match_ids, x.player_keys, x.side_names, x.ranks, x.losses, x.periods, x.resets, x.pool_numbers,
		x.seed_ratings, x.seed_rds, x.seed_volatilities);

	SELECT mm.prediction_figures(coalesce(array_agg(p.p ORDER BY p.queue, p.match_id), '{}'),
								 coalesce(array_agg(p.y ORDER BY p.queue, p.match_id), '{}'))
	  INTO live
	  FROM mm.pool_predictions(replay_ratings.pool, pq.queues, from_time, to_time) p;

	RETURN jsonb_build_object(
		'pool', replay_ratings.pool, 'from_time', from_time, 'to_time', to_time,
		'settings', jsonb_strip_nulls(jsonb_build_object(
			'system', s -> 'system',
			'k', CASE WHEN s ->> 'system' <> 'elo' THEN NULL WHEN s ? 'k' AND s -> 'k' <> 'null' THEN s -> 'k'
					  WHEN jsonb_array_length(s -> 'k_values') > 0 THEN '"k_schedule"' ELSE '"schedule"' END,
			'k_schedule', CASE WHEN jsonb_array_length(s -> 'k_values') > 0 THEN
				(SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
							'games', CASE WHEN g.games::int < 2147483647 THEN g.games::int END, 'k', v.k::float8))
							ORDER BY g.i)
				   FROM jsonb_array_elements_text(s -> 'k_games') WITH ORDINALITY g(games, i)
				   JOIN jsonb_array_elements_text(s -> 'k_values') WITH ORDINALITY v(k, j) ON v.j = g.i) END,
			'model', CASE WHEN s ->> 'system' = 'openskill' THEN 'plackett_luce' END,
			'beta', CASE WHEN s ->> 'system' = 'openskill' THEN s -> 'beta' END,
			'tau', CASE WHEN s ->> 'system' <> 'elo' THEN s -> 'tau' END,
			'initial_rating', s -> 'initial_rating',
			'initial_rd', CASE WHEN s ->> 'system' <> 'elo' THEN s -> 'initial_rd' END,
			'initial_volatility', CASE WHEN s ->> 'system' = 'glicko2' THEN s -> 'initial_volatility' END,
			'rating_period', s -> 'rating_period',
			'seed', s -> 'seed',
			'season_resets', CASE WHEN jsonb_array_length(s -> 'season_resets') > 0 THEN
				(SELECT jsonb_agg(jsonb_build_object('at', a.at, 'share', sh.v::float8, 'rd', rd.v::float8,
													 'target', CASE WHEN t.v <> 'NaN' THEN t.v::float8 END) ORDER BY a.i)
				   FROM jsonb_array_elements_text(s -> 'reset_at') WITH ORDINALITY a(at, i)
				   JOIN jsonb_array_elements_text(s -> 'reset_share') WITH ORDINALITY sh(v, i) ON sh.i = a.i
				   JOIN jsonb_array_elements_text(s -> 'reset_rd') WITH ORDINALITY rd(v, i) ON rd.i = a.i
				   JOIN jsonb_array_elements_text(s -> 'reset_target') WITH ORDINALITY t(v, i) ON t.i = a.i) END)),
		'pools', to_jsonb(pool_names),
		'results', cardinality(replayed.replayed_ids),
		'live', live,
		'replay', mm.prediction_figures(replayed.predictions, replayed.outcomes),
		'ratings', mm.replay_rating_comparison(replayed.players, replayed.ratings, replayed.rds, replayed.games,
											   pool_names, from_time, to_time, s));
END
$$;
COMMENT ON FUNCTION mm.replay_ratings(text, jsonb, timestamptz, timestamptz) IS
'What-if for rating settings: the pool''s results reported in [from_time, to_time) replayed in order with settings (Elo, Glicko-2 or OpenSkill; per-role pools with all their role pools), the figures of mm.prediction_quality for the live predictions and the replay''s side by side, and how far the replayed ratings and tiers land from the live ones; reads only';
REVOKE ALL ON FUNCTION mm.replay_ratings(text, jsonb, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_ratings(text, jsonb, timestamptz, timestamptz) TO mm_analyst, mm_admin;
