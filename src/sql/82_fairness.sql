-- ===================================================================
-- Fairness you can prove (docs/fairness.md; C in src/fairness.c)
-- ===================================================================
--
-- mm.match_predictions keeps, for every match of a rated queue, each team's
-- predicted win probability from the ratings the match was formed with
-- (written by the tick, in the transaction that writes the match);
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
	SELECT record_match_predictions.queue, t.match_id, t.team, least(greatest(p.probability, 0), 1), NULL,
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
GRANT EXECUTE ON FUNCTION mm.record_match_predictions(text, timestamptz) TO mm_ticker, mm_admin;

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
-- the naive prediction 0.5, and ten calibration bins over both teams' rows.
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
		RAISE EXCEPTION 'rating pool "%" has no rated queue', prediction_quality.pool
			USING ERRCODE = 'undefined_object',
				  HINT = 'A queue rates into the pool named by its config''s rating.pool, else its own name.';
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
		SELECT (pl.value -> 'latencies' ->> m.region)::float8 AS ms
		  FROM m JOIN mm.match_players mp ON mp.queue = fairness_report.queue AND mp.match_id = m.id
		  JOIN mm.tickets t ON t.queue = fairness_report.queue AND t.id = mp.ticket_id
		 CROSS JOIN LATERAL jsonb_array_elements(t.players) pl
		 WHERE m.region IS NOT NULL AND pl.value ->> 'id' = mp.player_id
		   AND jsonb_typeof(pl.value -> 'latencies' -> m.region) = 'number'
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

-- The core of mm.replay_ratings (src/fairness.c): the results as player
-- rows in replay order (a match's rows together, in player order), each
-- row's side name (team, or the player in a free-for-all), its side's rank
-- and whether it is a leaver scored as a loss; per replayed match its id,
-- side 1's prediction and outcome, per player the state after.
CREATE FUNCTION mm.replay_ratings_core(system text, tau float8, k float8, initial_rating float8,
									   initial_rd float8, initial_volatility float8, match_ids bigint[],
									   player_ids text[], side_names text[], ranks integer[], losses integer[],
									   OUT replayed_ids bigint[], OUT predictions float8[], OUT outcomes float8[],
									   OUT players text[], OUT ratings float8[], OUT rds float8[],
									   OUT games integer[])
RETURNS record
AS 'MODULE_PATHNAME', 'mm_replay_ratings_core'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.replay_ratings_core(text, float8, float8, float8, float8, float8, bigint[], text[], text[],
										   integer[], integer[]) IS
'Internal: the Elo or Glicko-2 replay of mm.replay_ratings over player rows (k <= 0: mm.elo_k_factor)';
REVOKE ALL ON FUNCTION mm.replay_ratings_core(text, float8, float8, float8, float8, float8, bigint[], text[], text[],
											  integer[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_ratings_core(text, float8, float8, float8, float8, float8, bigint[], text[], text[],
												 integer[], integer[]) TO mm_analyst, mm_admin;

-- What-if for rating settings: the pool's results reported in [from_time,
-- to_time) replayed in order (reported_at, match id) with the
-- settings, every player starting at the settings' initial values, beside
-- what the live ratings did on the same results.  settings:
--   system              "elo" or "glicko2" (required)
--   k                   Elo: a fixed K (default: mm.elo_k_factor's schedule)
--   tau                 Glicko-2: the system constant (default 0.5)
--   initial_rating      default 1500
--   initial_rd          Glicko-2: default 350
--   initial_volatility  Glicko-2: default 0.06
--   output_ratings      true: each player's replayed rating in the output
-- Reads only: runs in a read-only transaction and on a standby.
CREATE FUNCTION mm.replay_ratings(pool text, settings jsonb, from_time timestamptz, to_time timestamptz)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- the results are sorted in memory: 100,000 results need about 30 MB
SET work_mem = '64MB'
AS $$
#variable_conflict error
DECLARE
	known text[] := ARRAY['initial_rating', 'initial_rd', 'initial_volatility', 'k', 'output_ratings', 'system',
						  'tau'];
	setting_key text;
	setting_value jsonb;
	rating_system text;
	tau float8 := 0.5;
	k float8 := 0;
	initial_rating float8 := 1500;
	initial_rd float8 := 350;
	initial_volatility float8 := 0.06;
	output_ratings boolean := false;
	pq record;
	row_matches bigint[];
	row_players text[];
	row_sides text[];
	row_ranks integer[];
	row_losses integer[];
	replayed record;
	live jsonb;
	replay jsonb;
	compared jsonb;
	tiers jsonb;
	result jsonb;
BEGIN
	PERFORM mm.check_window('pool', replay_ratings.pool, from_time, to_time);
	IF settings IS NULL THEN
		RAISE EXCEPTION 'settings must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF jsonb_typeof(settings) <> 'object' THEN
		RAISE EXCEPTION 'settings must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'For example {"system": "glicko2", "tau": 0.5}.';
	END IF;
	rating_system := settings ->> 'system';
	IF NOT settings ? 'system' OR jsonb_typeof(settings -> 'system') <> 'string' THEN
		RAISE EXCEPTION 'settings.system is required: "elo" or "glicko2"' USING ERRCODE = 'invalid_parameter_value';
	ELSIF rating_system = 'openskill' THEN
		RAISE EXCEPTION 'settings.system: a replay of OpenSkill is not supported'
			USING ERRCODE = 'feature_not_supported', HINT = 'Replay an Elo or Glicko-2 pool.';
	ELSIF rating_system NOT IN ('elo', 'glicko2') THEN
		RAISE EXCEPTION 'settings.system must be "elo" or "glicko2"'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('Got %s.', left(settings ->> 'system', 100));
	END IF;
	FOR setting_key, setting_value IN SELECT e.key, e.value FROM jsonb_each(settings) e ORDER BY e.key LOOP
		IF NOT setting_key = ANY (known) THEN
			RAISE EXCEPTION 'settings.% is not a rating setting', setting_key
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = 'The settings: ' || array_to_string(known, ', ') || '.';
		ELSIF setting_key = 'system' THEN
			CONTINUE;
		ELSIF setting_key = 'output_ratings' THEN
			IF jsonb_typeof(setting_value) <> 'boolean' THEN
				RAISE EXCEPTION 'settings.output_ratings must be true or false' USING ERRCODE = 'invalid_parameter_value';
			END IF;
			output_ratings := setting_value::text::boolean;
		ELSIF (setting_key IN ('k') AND rating_system <> 'elo')
			  OR (setting_key IN ('tau', 'initial_rd', 'initial_volatility') AND rating_system <> 'glicko2') THEN
			RAISE EXCEPTION 'settings.% is not a setting of %', setting_key, rating_system
				USING ERRCODE = 'invalid_parameter_value';
		ELSIF jsonb_typeof(setting_value) <> 'number'
			  OR (setting_key <> 'initial_rating' AND setting_value::text::numeric <= 0)
			  OR abs(setting_value::text::numeric) > 1e9 THEN
			RAISE EXCEPTION 'settings.% must be a number%', setting_key,
				CASE WHEN setting_key = 'initial_rating' THEN '' ELSE ' above 0' END
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Got %s.', left(setting_value::text, 100));
		END IF;
	END LOOP;
	tau := coalesce((settings ->> 'tau')::float8, tau);
	k := coalesce((settings ->> 'k')::float8, k);
	initial_rating := coalesce((settings ->> 'initial_rating')::float8, initial_rating);
	initial_rd := coalesce((settings ->> 'initial_rd')::float8, initial_rd);
	initial_volatility := coalesce((settings ->> 'initial_volatility')::float8, initial_volatility);

	pq := mm.pool_queues(replay_ratings.pool);
	IF cardinality(pq.queues) = 0 THEN
		RAISE EXCEPTION 'rating pool "%" has no rated queue', replay_ratings.pool
			USING ERRCODE = 'undefined_object',
				  HINT = 'A queue rates into the pool named by its config''s rating.pool, else its own name.';
	END IF;
	IF pq.per_role THEN
		RAISE EXCEPTION 'rating pool "%" is rated per role: a replay of per-role pools is not supported',
			replay_ratings.pool
			USING ERRCODE = 'feature_not_supported';
	END IF;

	-- The results in replay order (match ids are unique over queues), one
	-- row per player; the C core puts a match's rows in player order (as
	-- mm.report_result reads them), numbers players and sides and replays.
	SELECT coalesce(array_agg(x.match_id), '{}'), coalesce(array_agg(x.player_id), '{}'),
		   coalesce(array_agg(x.side_name), '{}'), coalesce(array_agg(x.rank), '{}'),
		   coalesce(array_agg(x.loss), '{}')
	  INTO row_matches, row_players, row_sides, row_ranks, row_losses
	  FROM (SELECT r.match_id, mp.player_id, coalesce(mp.team, mp.player_id) AS side_name,
				   coalesce(CASE WHEN jsonb_typeof(r.ranks -> coalesce(mp.team, mp.player_id)) = 'number'
								 THEN (r.ranks ->> coalesce(mp.team, mp.player_id))::numeric::int END, 0) AS rank,
				   (mp.left_at IS NOT NULL AND r.queue = ANY (pq.leavers_lose))::int AS loss
			  FROM mm.match_results r
			  JOIN mm.match_players mp ON mp.queue = r.queue AND mp.match_id = r.match_id
			 WHERE r.queue = ANY (pq.queues) AND r.reported_at >= from_time AND r.reported_at < to_time
			   AND jsonb_typeof(r.ranks) = 'object'
			 ORDER BY r.reported_at, r.match_id) x;

	replayed := mm.replay_ratings_core(rating_system, tau, k, initial_rating, initial_rd, initial_volatility,
									   row_matches, row_players, row_sides, row_ranks, row_losses);

	SELECT mm.prediction_figures(coalesce(array_agg(x.p ORDER BY x.queue, x.match_id), '{}'),
								 coalesce(array_agg(x.y ORDER BY x.queue, x.match_id), '{}'))
	  INTO live
	  FROM mm.pool_predictions(replay_ratings.pool, pq.queues, from_time, to_time) x;
	replay := mm.prediction_figures(replayed.predictions, replayed.outcomes);

	-- The replayed ratings beside the live ones after each player's last
	-- result of the window, and the tiers both give (the pool's tiers,
	-- without placements or demotion protection).
	tiers := mm.rating_pool_settings(replay_ratings.pool);
	tiers := CASE WHEN tiers ? 'tiers' THEN jsonb_build_object('tiers', tiers -> 'tiers') END;
	WITH live_after AS (
		SELECT DISTINCT ON (rh.player_id) rh.player_id, coalesce(rh.rating_after, rh.mu_after) AS rating,
			   coalesce(rh.rd_after, rh.sigma_after) AS rd
		  FROM mm.rating_history rh
		 WHERE rh.pool = replay_ratings.pool AND rh.reason = 'match'
		   AND rh.created_at >= from_time AND rh.created_at < to_time
		 ORDER BY rh.player_id, rh.created_at DESC, rh.id DESC
	), pairs AS (
		SELECT u.id, u.rating, u.rd, u.games, l.rating AS live_rating, l.rd AS live_rd
		  FROM unnest(replayed.players, replayed.ratings, replayed.rds, replayed.games) u(id, rating, rd, games)
		  LEFT JOIN live_after l ON l.player_id = u.id
	)
	SELECT jsonb_build_object(
		'players', count(*),
		'compared', count(p.live_rating),
		'max_rating_difference', max(abs(p.rating - p.live_rating)),
		'mean_abs_rating_difference', avg(abs(p.rating - p.live_rating)),
		'tier_changes', CASE WHEN tiers IS NOT NULL THEN
			count(*) FILTER (WHERE p.live_rating IS NOT NULL
							   AND (mm.rating_standing(tiers, p.rating, p.rd, 0, 0, NULL, NULL, 0, false)).tier
								   IS DISTINCT FROM
								   (mm.rating_standing(tiers, p.live_rating, p.live_rd, 0, 0, NULL, NULL, 0, false)).tier)
			END)
		   || CASE WHEN output_ratings THEN
				  jsonb_build_object('player_ratings',
									 coalesce(jsonb_object_agg(p.id, jsonb_build_object('rating', p.rating, 'rd',
																CASE WHEN rating_system = 'glicko2' THEN p.rd END,
																'games', p.games)), '{}'))
			  ELSE '{}' END
	  INTO compared
	  FROM pairs p;

	result := jsonb_build_object(
		'pool', replay_ratings.pool, 'from_time', from_time, 'to_time', to_time,
		'settings', jsonb_strip_nulls(jsonb_build_object(
			'system', rating_system,
			'k', CASE WHEN rating_system = 'elo' AND k > 0 THEN to_jsonb(k) WHEN rating_system = 'elo' THEN '"schedule"' END,
			'tau', CASE WHEN rating_system = 'glicko2' THEN tau END,
			'initial_rating', initial_rating,
			'initial_rd', CASE WHEN rating_system = 'glicko2' THEN initial_rd END,
			'initial_volatility', CASE WHEN rating_system = 'glicko2' THEN initial_volatility END)),
		'results', cardinality(replayed.replayed_ids),
		'live', live,
		'replay', replay,
		'ratings', compared);
	RETURN result;
END
$$;
COMMENT ON FUNCTION mm.replay_ratings(text, jsonb, timestamptz, timestamptz) IS
'What-if for rating settings: the pool''s results reported in [from_time, to_time) replayed in order with settings (Elo or Glicko-2), the figures of mm.prediction_quality for the live predictions and the replay''s side by side, and how far the replayed ratings and tiers land from the live ones; reads only';
REVOKE ALL ON FUNCTION mm.replay_ratings(text, jsonb, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_ratings(text, jsonb, timestamptz, timestamptz) TO mm_analyst, mm_admin;
