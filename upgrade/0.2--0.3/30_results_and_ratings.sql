
-- ===================================================================
-- Section: results and stored ratings (docs/ratings.md)
-- ===================================================================
--
-- mm.report_result ends a played match with its ranks, writes mm.match_results
-- and, in the same transaction, updates the stored rating of every player in
-- the queue's rating pool (Glicko-2, Elo or OpenSkill), one mm.rating_history
-- row each.  mm.decay_ratings grows the uncertainty of idle players;
-- mm.leaderboard ranks a pool by a conservative rating.

-- Glicko-2 volatility changes with every game: keep it in the history too.
ALTER TABLE mm.rating_history
	ADD COLUMN volatility_before float8,
	ADD COLUMN volatility_after float8;
-- A match changes a player's rating once: the guarantee under concurrency,
-- beside the lock report_result takes on the match.
CREATE UNIQUE INDEX rating_history_match_player ON mm.rating_history (match_id, player_id)
	WHERE match_id IS NOT NULL;
COMMENT ON TABLE mm.rating_history IS
'Every change of a stored rating: one row per player per rated match (match_id), and one per decay step (match_id NULL)';

-- How a rank key is named in an error: ranks.red, or ranks["a.b"] for a key
-- that is not a plain word (the queue config's paths do the same).
CREATE FUNCTION mm.ranks_path(key text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN key ~ '^[A-Za-z0-9_-]+$' THEN 'ranks.' || key
				ELSE 'ranks[' || to_json(key)::text || ']' END
$$;
COMMENT ON FUNCTION mm.ranks_path(text) IS
'Internal: the path of a rank key in error messages (ranks.red, ranks["a b"])';
REVOKE ALL ON FUNCTION mm.ranks_path(text) FROM PUBLIC;

-- A numeric player attribute in [low, high], or NULL when it is absent, not a
-- number or out of range (attributes are free-form JSON).
CREATE FUNCTION mm.attribute_number(attributes jsonb, key text, low float8, high float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	-- rounded first: a number too small for a float8 (1e-400) reads as 0
	SELECT CASE WHEN jsonb_typeof(attributes -> key) = 'number'
				THEN CASE WHEN (attributes ->> key)::numeric BETWEEN low::numeric AND high::numeric
						  THEN round((attributes ->> key)::numeric, 15)::float8 END END
$$;
COMMENT ON FUNCTION mm.attribute_number(jsonb, text, float8, float8) IS
'Internal: a numeric attribute within [low, high], else NULL';
REVOKE ALL ON FUNCTION mm.attribute_number(jsonb, text, float8, float8) FROM PUBLIC;

-- A boolean in the queue config's "rating" object, false when absent.
CREATE FUNCTION mm.rating_option(config jsonb, key text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(CASE WHEN jsonb_typeof(config -> 'rating' -> key) = 'boolean'
						 THEN (config -> 'rating' ->> key)::boolean END, false)
$$;
COMMENT ON FUNCTION mm.rating_option(jsonb, text) IS
'Internal: a boolean option of a queue config''s rating object (boost, leavers_lose), false when absent';
REVOKE ALL ON FUNCTION mm.rating_option(jsonb, text) FROM PUBLIC;

-- Reports the outcome of a ready or assigned match.  See docs/ratings.md for
-- the methods; in short, per side (a team, or a player in a free-for-all):
--   glicko2    each player is one Glicko-2 period against every opposing
--              side's composite player (mean rating, mean RD): Williams's
--              "composite opponent" method
--   elo        team Elo: the side's mean rating against each opposing side's,
--              K = mm.elo_k_factor of the player, averaged over the opponents
--   openskill  mm.openskill_rate over the whole match
-- Concurrency: the match row is locked first, so a second report waits and
-- then finds the match completed; rating rows are locked in player order.
CREATE FUNCTION mm.report_result(match_id bigint, ranks jsonb,
								 now timestamptz DEFAULT pg_catalog.now())
RETURNS TABLE (player_id text, team text, rank integer, rating_before float8, rating_after float8)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	m mm.matches;
	config jsonb;
	rating_system text;
	pool_name text;
	leavers_lose boolean;
	boost_on boolean;
	free_for_all boolean;
	some_without_team boolean;
	-- per player, in player_id order
	ids text[];
	teams text[];
	sides text[];
	player_ranks integer[];
	dense_ranks integer[];
	side_numbers integer[];
	scored_loss boolean[];
	old_rating float8[];
	old_rd float8[];
	old_volatility float8[];
	old_mu float8[];
	old_sigma float8[];
	cur_rating float8[];
	cur_rd float8[];
	cur_volatility float8[];
	cur_mu float8[];
	cur_sigma float8[];
	new_rating float8[];
	new_rd float8[];
	new_volatility float8[];
	new_mu float8[];
	new_sigma float8[];
	games integer[];
	boosts float8[];
	win_counts integer[];
	-- per side, in side order
	side_list text[];
	side_ranks integer[];
	side_rating float8[];
	side_rd float8[];
	side_count integer;
	best_rank integer;
	winner text;
	favourite text;
	favourite_probability float8;
	probabilities float8[];
	rank_key text;
	rank_value jsonb;
	missing text;
	leaver_side text;
	leaver_ranks integer[];
	leaver_mu float8[];
	leaver_sigma float8[];
	event_details jsonb;
BEGIN
	IF report_result.match_id IS NULL THEN
		RAISE EXCEPTION 'match_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF report_result.ranks IS NULL THEN
		RAISE EXCEPTION 'ranks must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(report_result.now);

	-- The match first: a concurrent report waits here, then sees it completed.
	SELECT * INTO m FROM mm.matches mt WHERE mt.id = report_result.match_id FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'match % does not exist', report_result.match_id
			USING ERRCODE = 'undefined_object';
	END IF;
	IF EXISTS (SELECT FROM mm.match_results r WHERE r.match_id = m.id) THEN
		RAISE EXCEPTION 'match % already has a result', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'A match gets one result; the first report stands.';
	END IF;
	IF m.status NOT IN ('ready', 'assigned') THEN
		RAISE EXCEPTION 'cannot report a result for match %: it is %', m.id, m.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Only a ready or assigned match can get a result.';
	END IF;
	IF report_result.now < m.created_at THEN
		RAISE EXCEPTION 'now (%) is before match % was created (%)', report_result.now, m.id, m.created_at
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	-- The players and their sides: teams, or the players themselves in a
	-- free-for-all (a match whose players have no team).
	SELECT array_agg(mp.player_id ORDER BY mp.player_id),
		   array_agg(mp.team ORDER BY mp.player_id),
		   array_agg(coalesce(mp.team, mp.player_id) ORDER BY mp.player_id),
		   array_agg(mp.left_at IS NOT NULL ORDER BY mp.player_id),
		   bool_and(mp.team IS NULL), bool_or(mp.team IS NULL)
	  INTO ids, teams, sides, scored_loss, free_for_all, some_without_team
	  FROM mm.match_players mp WHERE mp.match_id = m.id;
	IF ids IS NULL THEN
		RAISE EXCEPTION 'match % has no players', m.id USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	IF NOT free_for_all AND some_without_team THEN
		RAISE EXCEPTION 'match % has players with and without a team', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	side_list := ARRAY(SELECT DISTINCT s FROM unnest(sides) s ORDER BY s);
	side_count := cardinality(side_list);

	-- ranks: one positive integer per side, nothing else.
	IF jsonb_typeof(report_result.ranks) <> 'object' THEN
		RAISE EXCEPTION 'ranks must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = CASE WHEN free_for_all
								THEN 'Give each player of the free-for-all a rank, e.g. {"p1": 1, "p2": 2}.'
								ELSE 'Give each team a rank, e.g. {"red": 1, "blue": 2}.' END;
	END IF;
	FOR rank_key, rank_value IN SELECT e.key, e.value FROM jsonb_each(report_result.ranks) e ORDER BY e.key
	LOOP
		IF NOT rank_key = ANY (side_list) THEN
			RAISE EXCEPTION '% is not a % of match %', mm.ranks_path(rank_key),
				CASE WHEN free_for_all THEN 'player' ELSE 'team' END, m.id
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The %s of match %s: %s.',
									  CASE WHEN free_for_all THEN 'players' ELSE 'teams' END, m.id,
									  array_to_string(side_list, ', '));
		END IF;
		IF NOT (CASE WHEN jsonb_typeof(rank_value) = 'number'
					 THEN rank_value::text::numeric = trunc(rank_value::text::numeric)
						  AND rank_value::text::numeric BETWEEN 1 AND 2147483647
					 ELSE false END) THEN
			RAISE EXCEPTION '% must be a positive integer', mm.ranks_path(rank_key)
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Got %s.', left(rank_value::text, 100)),
					  HINT = 'Rank 1 is the best; equal ranks are a tie.';
		END IF;
	END LOOP;
	SELECT min(s) INTO missing FROM unnest(side_list) s WHERE NOT report_result.ranks ? s;
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION '% is missing', mm.ranks_path(missing)
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Every %s of match %s needs a rank: %s.',
								  CASE WHEN free_for_all THEN 'player' ELSE 'team' END, m.id,
								  array_to_string(side_list, ', '));
	END IF;

	side_ranks := ARRAY(SELECT (report_result.ranks ->> s)::numeric::integer FROM unnest(side_list) WITH ORDINALITY u(s, i)
						 ORDER BY u.i);
	player_ranks := ARRAY(SELECT (report_result.ranks ->> s)::numeric::integer FROM unnest(sides) WITH ORDINALITY u(s, i)
						   ORDER BY u.i);
	side_numbers := ARRAY(SELECT array_position(side_list, s) FROM unnest(sides) WITH ORDINALITY u(s, i)
						   ORDER BY u.i);
	-- the winner: the side with the best rank, when no other side shares it
	best_rank := (SELECT min(r) FROM unnest(side_ranks) r);
	IF (SELECT count(*) FROM unnest(side_ranks) r WHERE r = best_rank) = 1 THEN
		winner := side_list[array_position(side_ranks, best_rank)];
	END IF;

	-- The queue's rating system and pool (the pool defaults to the queue's name).
	SELECT q.config INTO config FROM mm.queues q WHERE q.name = m.queue;
	rating_system := config #>> '{rating,system}';
	pool_name := coalesce(config #>> '{rating,pool}', m.queue);
	leavers_lose := mm.rating_option(config, 'leavers_lose');
	boost_on := mm.rating_option(config, 'boost');
	IF rating_system NOT IN ('glicko2', 'elo', 'openskill') OR side_count < 2 THEN
		rating_system := NULL;
	END IF;
	IF NOT leavers_lose THEN
		scored_loss := array_fill(false, ARRAY[cardinality(ids)]);
	END IF;

	IF rating_system IS NOT NULL THEN
		-- unrated players start at the system's defaults
		INSERT INTO mm.ratings AS r (player_id, pool, rating, rd, volatility, mu, sigma, games, wins, updated_at)
		SELECT u.id, pool_name,
			   CASE WHEN rating_system IN ('glicko2', 'elo') THEN 1500 END,
			   CASE WHEN rating_system = 'glicko2' THEN 350 END,
			   CASE WHEN rating_system = 'glicko2' THEN 0.06 END,
			   CASE WHEN rating_system = 'openskill' THEN 25 END,
			   CASE WHEN rating_system = 'openskill' THEN 25 / 3.0 END,
			   0, 0, report_result.now
		  FROM unnest(ids) u(id)
		 ORDER BY u.id
		ON CONFLICT ON CONSTRAINT ratings_pkey DO NOTHING;
		-- lock the rows in player order (as mm.decay_ratings does)
		SELECT array_agg(r.rating ORDER BY r.player_id), array_agg(r.rd ORDER BY r.player_id),
			   array_agg(r.volatility ORDER BY r.player_id), array_agg(r.mu ORDER BY r.player_id),
			   array_agg(r.sigma ORDER BY r.player_id), array_agg(r.games ORDER BY r.player_id)
		  INTO old_rating, old_rd, old_volatility, old_mu, old_sigma, games
		  FROM (SELECT rt.* FROM mm.ratings rt
				 WHERE rt.pool = pool_name AND rt.player_id = ANY (ids)
				 ORDER BY rt.player_id FOR UPDATE) r;
		-- a row another system wrote in the same pool lacks fields: defaults
		cur_rating := ARRAY(SELECT coalesce(x, 1500) FROM unnest(old_rating) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_rd := ARRAY(SELECT coalesce(x, 350) FROM unnest(old_rd) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_volatility := ARRAY(SELECT coalesce(x, 0.06) FROM unnest(old_volatility) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_mu := ARRAY(SELECT coalesce(x, 25) FROM unnest(old_mu) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_sigma := ARRAY(SELECT coalesce(x, 25 / 3.0) FROM unnest(old_sigma) WITH ORDINALITY u(x, i) ORDER BY u.i);
		new_rating := old_rating;
		new_rd := old_rd;
		new_volatility := old_volatility;
		new_mu := old_mu;
		new_sigma := old_sigma;

		-- The rating boost (placement, smurf suspicion) multiplies each
		-- player's change.  Suspicion: mm.smurf_score from the pool's games and
		-- wins, the last 10 ratings, and avg_kda, mvp_rate, headshot_rate in
		-- mm.players.attributes (no suspicion without avg_kda and mvp_rate).
		IF boost_on THEN
			boosts := ARRAY(
				SELECT mm.rating_boost(coalesce(mm.smurf_score(
						   u.g, CASE WHEN u.g > 0 THEN least(rt.wins::float8 / u.g, 1) ELSE 0 END,
						   mm.attribute_number(pl.attributes, 'avg_kda', 0, 1e6),
						   mm.attribute_number(pl.attributes, 'mvp_rate', 0, 1),
						   h.recent,
						   mm.attribute_number(pl.attributes, 'headshot_rate', 0, 1)), 0), u.g)
				  FROM unnest(ids, games) WITH ORDINALITY u(id, g, i)
				  JOIN mm.ratings rt ON rt.pool = pool_name AND rt.player_id = u.id
				  LEFT JOIN mm.players pl ON pl.id = u.id
				 CROSS JOIN LATERAL (
					SELECT coalesce(array_agg(x.v ORDER BY x.created_at, x.id), '{}') AS recent
					  FROM (SELECT coalesce(rh.rating_after, rh.mu_after) AS v, rh.created_at, rh.id
							  FROM mm.rating_history rh
							 WHERE rh.player_id = u.id AND rh.pool = pool_name AND rh.match_id IS NOT NULL
							 ORDER BY rh.created_at DESC, rh.id DESC LIMIT 10) x
					 WHERE x.v IS NOT NULL) h
				 ORDER BY u.i);
		ELSE
			boosts := array_fill(1.0::float8, ARRAY[cardinality(ids)]);
		END IF;

		-- Each side's strength before the game: the mean rating (Glicko-2 and
		-- Elo), and for Glicko-2 the mean RD.
		SELECT array_agg(s.rating ORDER BY s.side), array_agg(s.rd ORDER BY s.side)
		  INTO side_rating, side_rd
		  FROM (SELECT x.side, mm.team_rating(x.rating, 1) AS rating, avg(x.rd) AS rd
				  FROM unnest(sides, cur_rating, cur_rd) x(side, rating, rd)
				 GROUP BY x.side) s;

		-- The prediction, from the ratings before the update.
		IF rating_system = 'openskill' THEN
			probabilities := mm.openskill_predict_win(cur_mu, cur_sigma, side_numbers);
		ELSE
			-- each side's mean of mm.win_probability against every other side
			-- over the n(n-1)/2 pairs (the two-side case is win_probability)
			probabilities := ARRAY(
				SELECT sum(mm.win_probability(a.r, b.r)) / (side_count * (side_count - 1) / 2.0)
				  FROM (SELECT x.side, array_agg(x.rating) AS r FROM unnest(sides, cur_rating) x(side, rating)
						 GROUP BY x.side) a
				  JOIN (SELECT x.side, array_agg(x.rating) AS r FROM unnest(sides, cur_rating) x(side, rating)
						 GROUP BY x.side) b ON a.side <> b.side
				 GROUP BY a.side ORDER BY a.side);
		END IF;
		SELECT p.side, least(greatest(p.probability, 0), 1) INTO favourite, favourite_probability
		  FROM unnest(side_list, probabilities) p(side, probability)
		 ORDER BY p.probability DESC, p.side LIMIT 1;

		IF rating_system = 'glicko2' THEN
			-- One rating period per game: a player against the composite
			-- player of every opposing side (1 for a better rank, 0.5 for a
			-- tie, 0 for a worse one; a leaver scored as a loss gets 0 against
			-- every side).
			SELECT array_agg(p.rating + p.boost * ((g.u).rating - p.rating) ORDER BY p.i),
				   array_agg((g.u).rd ORDER BY p.i), array_agg((g.u).volatility ORDER BY p.i)
			  INTO new_rating, new_rd, new_volatility
			  FROM unnest(sides, player_ranks, scored_loss, cur_rating, cur_rd, cur_volatility, boosts)
				   WITH ORDINALITY p(side, rank, loss, rating, rd, volatility, boost, i)
			 CROSS JOIN LATERAL (
				SELECT mm.glicko2_update(p.rating, p.rd, p.volatility,
										 array_agg(o.rating ORDER BY o.side), array_agg(o.rd ORDER BY o.side),
										 array_agg(CASE WHEN p.loss THEN 0 WHEN p.rank < o.rank THEN 1
														WHEN p.rank = o.rank THEN 0.5 ELSE 0 END::float8
												   ORDER BY o.side)) AS u
				  FROM unnest(side_list, side_ranks, side_rating, side_rd) o(side, rank, rating, rd)
				 WHERE o.side <> p.side) g;
		ELSIF rating_system = 'elo' THEN
			-- Team Elo: the side's mean against each opposing side's mean,
			-- K of the player (mm.elo_k_factor), averaged over the opponents.
			SELECT array_agg(p.rating + p.boost * mm.elo_k_factor(p.games, p.rating) * d.change ORDER BY p.i)
			  INTO new_rating
			  FROM unnest(sides, player_ranks, scored_loss, cur_rating, games, boosts)
				   WITH ORDINALITY p(side, rank, loss, rating, games, boost, i)
			 CROSS JOIN LATERAL (
				SELECT avg(CASE WHEN p.loss THEN 0 WHEN p.rank < o.rank THEN 1
								WHEN p.rank = o.rank THEN 0.5 ELSE 0 END
						   - mm.elo_expected(side_rating[array_position(side_list, p.side)], o.rating)) AS change
				  FROM unnest(side_list, side_ranks, side_rating) o(side, rank, rating)
				 WHERE o.side <> p.side) d;
		ELSE
			-- OpenSkill over the whole match; only the order of the ranks counts.
			dense_ranks := ARRAY(SELECT (SELECT count(DISTINCT r2) FROM unnest(side_ranks) r2 WHERE r2 <= u.r)::integer
								   FROM unnest(player_ranks) WITH ORDINALITY u(r, i) ORDER BY u.i);
			SELECT array_agg(r.mu ORDER BY r.i), array_agg(r.sigma ORDER BY r.i) INTO new_mu, new_sigma
			  FROM mm.openskill_rate(cur_mu, cur_sigma, side_numbers, dense_ranks) WITH ORDINALITY r(mu, sigma, i);
			-- A leaver scored as a loss: its side ranked below every other in a
			-- second run, of which only the leavers of that side keep the result.
			FOR leaver_side IN SELECT DISTINCT x.side FROM unnest(sides, scored_loss) x(side, loss)
								WHERE x.loss ORDER BY x.side
			LOOP
				leaver_ranks := ARRAY(SELECT CASE WHEN x.side = leaver_side THEN side_count + 1 ELSE x.r END
										FROM unnest(sides, dense_ranks) WITH ORDINALITY x(side, r, i) ORDER BY x.i);
				SELECT array_agg(r.mu ORDER BY r.i), array_agg(r.sigma ORDER BY r.i) INTO leaver_mu, leaver_sigma
				  FROM mm.openskill_rate(cur_mu, cur_sigma, side_numbers, leaver_ranks)
					   WITH ORDINALITY r(mu, sigma, i);
				SELECT array_agg(CASE WHEN x.side = leaver_side AND x.loss THEN x.lmu ELSE x.mu END ORDER BY x.i),
					   array_agg(CASE WHEN x.side = leaver_side AND x.loss THEN x.lsigma ELSE x.sigma END ORDER BY x.i)
				  INTO new_mu, new_sigma
				  FROM unnest(sides, scored_loss, new_mu, new_sigma, leaver_mu, leaver_sigma)
					   WITH ORDINALITY x(side, loss, mu, sigma, lmu, lsigma, i);
			END LOOP;
			new_mu := ARRAY(SELECT x.mu + x.boost * (x.new_mu - x.mu)
							  FROM unnest(cur_mu, new_mu, boosts) WITH ORDINALITY x(mu, new_mu, boost, i)
							 ORDER BY x.i);
		END IF;

		win_counts := ARRAY(SELECT (x.side IS NOT DISTINCT FROM winner AND NOT x.loss)::integer
							  FROM unnest(sides, scored_loss) WITH ORDINALITY x(side, loss, i) ORDER BY x.i);
		UPDATE mm.ratings r
		   SET rating = u.rating, rd = u.rd, volatility = u.volatility, mu = u.mu, sigma = u.sigma,
			   games = r.games + 1, wins = r.wins + u.win, updated_at = report_result.now
		  FROM unnest(ids, new_rating, new_rd, new_volatility, new_mu, new_sigma, win_counts)
			   u(id, rating, rd, volatility, mu, sigma, win)
		 WHERE r.pool = pool_name AND r.player_id = u.id;
		INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
									   mu_before, mu_after, sigma_before, sigma_after,
									   volatility_before, volatility_after, created_at)
		SELECT u.id, pool_name, m.id, u.rating_before, u.rating_after, u.rd_before, u.rd_after,
			   u.mu_before, u.mu_after, u.sigma_before, u.sigma_after, u.volatility_before, u.volatility_after,
			   report_result.now
		  FROM unnest(ids, old_rating, new_rating, old_rd, new_rd, old_mu, new_mu, old_sigma, new_sigma,
					  old_volatility, new_volatility)
			   u(id, rating_before, rating_after, rd_before, rd_after, mu_before, mu_after, sigma_before,
				 sigma_after, volatility_before, volatility_after);
	END IF;

	INSERT INTO mm.match_results (match_id, queue, winner_team, ranks, predicted_favourite,
								  favourite_win_probability, duration, reported_at)
	VALUES (m.id, m.queue, winner, report_result.ranks, favourite, favourite_probability,
			report_result.now - m.created_at, report_result.now);

	-- completed, players released, match_completed; then the result's event
	PERFORM mm.complete_match(m.id, report_result.now);
	event_details := jsonb_build_object('winner', winner, 'ranks', report_result.ranks);
	IF length(event_details::text) > 6000 THEN
		-- a big free-for-all: the compact form (the ranks are in mm.match_results)
		event_details := jsonb_build_object('winner', winner, 'truncated', true);
	END IF;
	PERFORM mm.notify_match_event('match_result', m.id, event_details);

	RETURN QUERY
	SELECT u.id, u.team, u.rank,
		   CASE rating_system WHEN 'openskill' THEN u.mu_before ELSE u.rating_before END,
		   CASE rating_system WHEN 'openskill' THEN u.mu_after ELSE u.rating_after END
	  FROM unnest(ids, teams, player_ranks, old_rating, new_rating, old_mu, new_mu)
		   WITH ORDINALITY u(id, team, rank, rating_before, rating_after, mu_before, mu_after, i)
	 ORDER BY u.i;
END
$$;
COMMENT ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) IS
'Reports the ranks of a ready or assigned match (by team, or by player in a free-for-all): completes it, writes mm.match_results and updates every player''s stored rating in the queue''s pool; returns each player''s rating before and after';
REVOKE ALL ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) TO mm_director;

-- Whether a rating pool exists: a queue rates into it, or a player has a
-- rating in it.
CREATE FUNCTION mm.rating_pool_exists(pool text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT EXISTS (SELECT FROM mm.ratings r WHERE r.pool = rating_pool_exists.pool)
		OR EXISTS (SELECT FROM mm.queues q
					WHERE q.config ? 'rating'
					  AND coalesce(q.config #>> '{rating,pool}', q.name) = rating_pool_exists.pool)
$$;
COMMENT ON FUNCTION mm.rating_pool_exists(text) IS
'Internal: true when a queue rates into the pool or a player has a rating in it';
REVOKE ALL ON FUNCTION mm.rating_pool_exists(text) FROM PUBLIC;

-- Grows the uncertainty of idle players: every rating whose last change is
-- at least `idle` before now gets one rating period without games per whole
-- `idle` elapsed: Glicko-2 RD through mm.glicko2_decay (capped at 350),
-- OpenSkill sigma by its per-game dynamics tau = 25/300 per period,
-- sqrt(sigma^2 + periods * tau^2), capped at 25/3.  Elo has nothing to grow.
CREATE FUNCTION mm.decay_ratings(pool text, idle interval, now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	idle_seconds float8;
	since timestamptz;
	changed integer;
BEGIN
	IF decay_ratings.pool IS NULL THEN
		RAISE EXCEPTION 'pool must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF decay_ratings.idle IS NULL THEN
		RAISE EXCEPTION 'idle must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(decay_ratings.now);
	idle_seconds := extract(epoch FROM decay_ratings.idle);
	IF idle_seconds <= 0 THEN
		RAISE EXCEPTION 'idle must be positive: %', decay_ratings.idle USING ERRCODE = 'invalid_parameter_value';
	END IF;
	BEGIN
		since := decay_ratings.now - decay_ratings.idle;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'idle reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'now - idle is out of range.';
	END;
	IF NOT mm.rating_pool_exists(decay_ratings.pool) THEN
		RAISE EXCEPTION 'rating pool "%" does not exist', decay_ratings.pool
			USING ERRCODE = 'undefined_object',
				  DETAIL = 'No queue rates into it and no player has a rating in it.';
	END IF;

	WITH idle_players AS (
		-- locked in player order, as mm.report_result locks them
		SELECT r.player_id, r.rating, r.rd, r.volatility, r.sigma,
			   -- at least one: selected by calendar time, counted in seconds
			   -- (a month is 30 days there, and February has fewer)
			   greatest(least(floor(extract(epoch FROM decay_ratings.now - r.updated_at) / idle_seconds),
							  1000000), 1)::integer AS periods
		  FROM mm.ratings r
		 WHERE r.pool = decay_ratings.pool AND r.updated_at <= since
		 ORDER BY r.player_id
		   FOR UPDATE
	), decayed AS (
		SELECT i.*,
			   CASE WHEN i.rd IS NOT NULL
					THEN (mm.glicko2_decay(coalesce(i.rating, 1500), i.rd, coalesce(i.volatility, 0.06),
										   i.periods)).rd END AS new_rd,
			   CASE WHEN i.sigma IS NOT NULL
					THEN greatest(i.sigma, least(sqrt(i.sigma * i.sigma + i.periods * (25 / 300.0) ^ 2),
												 25 / 3.0)) END AS new_sigma
		  FROM idle_players i
	), updated AS (
		UPDATE mm.ratings r
		   SET rd = d.new_rd, sigma = d.new_sigma, updated_at = decay_ratings.now
		  FROM decayed d
		 WHERE r.pool = decay_ratings.pool AND r.player_id = d.player_id
		   AND (d.new_rd IS DISTINCT FROM d.rd OR d.new_sigma IS DISTINCT FROM d.sigma)
		RETURNING r.player_id, r.rating, r.mu, r.volatility, d.rd AS rd_before, r.rd AS rd_after,
				  d.sigma AS sigma_before, r.sigma AS sigma_after
	)
	INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
								   mu_before, mu_after, sigma_before, sigma_after,
								   volatility_before, volatility_after, created_at)
	SELECT u.player_id, decay_ratings.pool, NULL, u.rating, u.rating, u.rd_before, u.rd_after,
		   u.mu, u.mu, u.sigma_before, u.sigma_after, u.volatility, u.volatility, decay_ratings.now
	  FROM updated u;
	GET DIAGNOSTICS changed = ROW_COUNT;
	RETURN changed;
END
$$;
COMMENT ON FUNCTION mm.decay_ratings(text, interval, timestamptz) IS
'Grows the Glicko-2 RD or OpenSkill sigma of the pool''s players idle for at least idle (one period per whole idle); returns how many ratings changed';
REVOKE ALL ON FUNCTION mm.decay_ratings(text, interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.decay_ratings(text, interval, timestamptz) TO mm_admin;

-- Makes pg_cron run mm.decay_ratings(pool, idle) every `every` (job
-- "mm_rating_decay:<pool>"; scheduling again replaces it).
CREATE FUNCTION mm.schedule_rating_decay(pool text, idle interval, every interval DEFAULT '1 day')
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	plan record;
BEGIN
	IF schedule_rating_decay.pool IS NULL OR schedule_rating_decay.idle IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN schedule_rating_decay.pool IS NULL THEN 'pool' ELSE 'idle' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF extract(epoch FROM schedule_rating_decay.idle) <= 0 THEN
		RAISE EXCEPTION 'idle must be positive: %', schedule_rating_decay.idle
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT * INTO plan FROM mm.schedule_plan(schedule_rating_decay.every);
	IF plan.mode <> 'cron' THEN
		RAISE EXCEPTION 'every must be at least 1 minute for the rating decay job: %', schedule_rating_decay.every
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT mm.rating_pool_exists(schedule_rating_decay.pool) THEN
		RAISE EXCEPTION 'rating pool "%" does not exist', schedule_rating_decay.pool
			USING ERRCODE = 'undefined_object',
				  DETAIL = 'No queue rates into it and no player has a rating in it.';
	END IF;
	PERFORM mm.require_pg_cron();
	RETURN mm.cron_job_upsert('mm_rating_decay:' || schedule_rating_decay.pool, plan.cron_schedule,
							  format('SELECT mm.decay_ratings(%L, %L::interval)',
									 schedule_rating_decay.pool, schedule_rating_decay.idle));
END
$$;
COMMENT ON FUNCTION mm.schedule_rating_decay(text, interval, interval) IS
'Makes pg_cron run mm.decay_ratings(pool, idle) every interval (at least 1 minute); returns the pg_cron job id';
REVOKE ALL ON FUNCTION mm.schedule_rating_decay(text, interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule_rating_decay(text, interval, interval) TO mm_admin;

CREATE FUNCTION mm.unschedule_rating_decay(pool text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF unschedule_rating_decay.pool IS NULL THEN
		RAISE EXCEPTION 'pool must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.require_pg_cron();
	RETURN mm.cron_job_remove('mm_rating_decay:' || unschedule_rating_decay.pool);
END
$$;
COMMENT ON FUNCTION mm.unschedule_rating_decay(text) IS
'Stops the pool''s rating decay job; returns false when there was none';
REVOKE ALL ON FUNCTION mm.unschedule_rating_decay(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.unschedule_rating_decay(text) TO mm_admin;

-- Per pool, every rated player by a conservative rating, the value the
-- player is very likely above: Glicko-2 rating - 2 RD, Elo the rating,
-- OpenSkill mu - 3 sigma.  Equal values share a rank.  Analysts read it; a
-- frontend does not (it would show every player's rating).
CREATE VIEW mm.leaderboard AS
SELECT s.pool, s.player_id, s.system, s.conservative_rating,
	   pg_catalog.rank() OVER (PARTITION BY s.pool ORDER BY s.conservative_rating DESC NULLS LAST) AS rank,
	   s.rating, s.rd, s.mu, s.sigma, s.games, s.wins, s.updated_at
  FROM (SELECT r.pool, r.player_id, r.rating, r.rd, r.mu, r.sigma, r.games, r.wins, r.updated_at,
			   CASE WHEN r.rating IS NOT NULL AND r.rd IS NOT NULL THEN 'glicko2'
					WHEN r.rating IS NOT NULL THEN 'elo'
					WHEN r.mu IS NOT NULL AND r.sigma IS NOT NULL THEN 'openskill' END AS system,
			   CASE WHEN r.rating IS NOT NULL
					THEN r.rating OPERATOR(pg_catalog.-)
						 (2::pg_catalog.float8 OPERATOR(pg_catalog.*) coalesce(r.rd, 0::pg_catalog.float8))
					ELSE r.mu OPERATOR(pg_catalog.-) (3::pg_catalog.float8 OPERATOR(pg_catalog.*) r.sigma)
			   END AS conservative_rating
		  FROM mm.ratings r) s;
COMMENT ON VIEW mm.leaderboard IS
'Per rating pool, every rated player by conservative rating (Glicko-2 rating - 2 RD, Elo rating, OpenSkill mu - 3 sigma), with rank (ties share), games and wins';
GRANT SELECT ON mm.leaderboard TO mm_analyst;
GRANT SELECT ON mm.ratings, mm.rating_history TO mm_analyst;

-- The reference maximum now always counts the outlier and learning-curve
-- points (src/ratings_smurf.c).
COMMENT ON FUNCTION mm.smurf_score(integer, float8, float8, float8, float8[], float8) IS
'Smurf suspicion in [0, 1]: suspicion points over the reference maximum (75 under 25 games, else 45: new account 30, outlier performance 25, no learning curve 20)';
