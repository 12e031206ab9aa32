-- Role queues (issue 20; docs/queues-and-tickets.md, docs/ratings.md,
-- docs/lifecycle.md, docs/metrics.md): the role each player was given and
-- whether it was autofilled (mm.match_players and its archive), the
-- autofill protection per queue and player, per-role rating pools in
-- mm.report_result (which also counts the protection down), the players'
-- roles in mm.get_assignment, per-role waits in mm.queue_statistics and
-- mm.role_stats.

-- The new columns come last, as in the fresh install.  autofilled is filled
-- for the rows already there and only then given its default and NOT NULL:
-- a column added with a default would carry a "missing value" that a fresh
-- install has not (pg_dump --binary-upgrade shows it).
ALTER TABLE mm.match_players ADD COLUMN role text, ADD COLUMN autofilled boolean;
UPDATE mm.match_players SET autofilled = false;
ALTER TABLE mm.match_players ALTER COLUMN autofilled SET DEFAULT false,
	ALTER COLUMN autofilled SET NOT NULL;
COMMENT ON COLUMN mm.match_players.role IS
	'The role the player was given in a role queue; NULL in a queue without roles';
COMMENT ON COLUMN mm.match_players.autofilled IS
	'True when the role was outside the player''s list of roles (autofill)';
ALTER TABLE mm.match_players_archive ADD COLUMN role text, ADD COLUMN autofilled boolean;
UPDATE mm.match_players_archive SET autofilled = false;
ALTER TABLE mm.match_players_archive ALTER COLUMN autofilled SET NOT NULL;

-- Autofill protection (role queues): a player the tick autofilled gets
-- games_left = the queue's autofill.protect_games; the tick never autofills
-- a player whose games_left is above 0, and mm.report_result counts it down
-- for each reported match the player played without being autofilled.
CREATE TABLE mm.autofill_protection (
	queue text NOT NULL,
	player_id text NOT NULL,
	games_left integer NOT NULL
		CONSTRAINT autofill_protection_games_left CHECK (games_left OPERATOR(pg_catalog.>=) 0),
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (queue, player_id)
);
COMMENT ON TABLE mm.autofill_protection IS
	'Per queue and player: how many more reported matches keep a recently autofilled player from being autofilled again';
GRANT SELECT ON TABLE mm.autofill_protection TO mm_director, mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.autofill_protection TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.autofill_protection', '');

-- A deleted queue's autofill protection goes with it (on Citus, where this
-- fires on the reference table's copies, mm.delete_queue_rows does it).
CREATE FUNCTION mm.queues_after_delete_autofill() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		RETURN NULL;
	END IF;
	DELETE FROM mm.autofill_protection a USING old_queues q WHERE a.queue = q.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete_autofill() IS
	'Trigger: deletes the autofill protection of deleted queues';
REVOKE ALL ON FUNCTION mm.queues_after_delete_autofill() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queues_after_delete_autofill() TO mm_admin;
CREATE TRIGGER queues_after_delete_autofill AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_autofill();

-- Per-role rating pools, the queue's roles read from its config.
CREATE FUNCTION mm.config_roles(config jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH sets AS (
		SELECT config -> 'roles' AS s
		UNION ALL
		SELECT t.value -> 'roles'
		  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(config -> 'teams') = 'array'
										 THEN config -> 'teams' ELSE '[]' END) t
	), compositions AS (
		SELECT x.s AS c FROM sets x WHERE jsonb_typeof(x.s) = 'object'
		UNION ALL
		SELECT e.value
		  FROM sets x, jsonb_array_elements(CASE WHEN jsonb_typeof(x.s) = 'array' THEN x.s ELSE '[]' END) e
		 WHERE jsonb_typeof(e.value) = 'object'
	)
	SELECT array_agg(DISTINCT k.key ORDER BY k.key)
	  FROM compositions c, jsonb_object_keys(c.c) k(key)
$$;
COMMENT ON FUNCTION mm.config_roles(jsonb) IS
'Internal: the roles a queue config names (teams[i].roles, a free-for-all''s roles), sorted; NULL without roles';
REVOKE ALL ON FUNCTION mm.config_roles(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.config_roles(jsonb) TO mm_analyst, mm_admin;

CREATE OR REPLACE FUNCTION mm.rating_pool_exists(pool text)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN EXISTS (SELECT 1 FROM mm.ratings r WHERE r.pool = rating_pool_exists.pool)
		OR EXISTS (SELECT 1 FROM mm.queues q
					WHERE q.config ? 'rating'
					  AND coalesce(q.config #>> '{rating,pool}', q.name) = rating_pool_exists.pool)
		OR EXISTS (SELECT 1 FROM mm.queues q
					WHERE q.config ? 'rating' AND mm.rating_option(q.config, 'per_role')
					  AND rating_pool_exists.pool = ANY (
						  SELECT coalesce(q.config #>> '{rating,pool}', q.name) || '.' || r.role
							FROM unnest(mm.config_roles(q.config)) r(role)));
END
$$;
COMMENT ON FUNCTION mm.rating_pool_exists(text) IS
'Internal: true when a queue rates into the pool or a player has a rating in it';
REVOKE ALL ON FUNCTION mm.rating_pool_exists(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.rating_pool_exists(text) TO mm_admin;

-- mm.report_result: per-role pools, the autofill protection counted down.
CREATE OR REPLACE FUNCTION mm.report_result(queue text, match_id bigint, ranks jsonb, now timestamptz)
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
	per_role boolean;
	leavers_lose boolean;
	boost_on boolean;
	free_for_all boolean;
	some_without_team boolean;
	-- per player, in player_id order
	ids text[];
	teams text[];
	roles text[];
	-- the pool each player is rated in
	pools text[];
	-- the players who were not autofilled in the match
	counted_ids text[];
	player_index integer;
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
	IF report_result.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF report_result.match_id IS NULL THEN
		RAISE EXCEPTION 'match_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF report_result.ranks IS NULL THEN
		RAISE EXCEPTION 'ranks must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(report_result.now);

	-- The match first: a concurrent report waits here, then sees it completed.
	SELECT * INTO m FROM mm.matches mt
	 WHERE mt.queue = report_result.queue AND mt.id = report_result.match_id FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'match % does not exist in queue "%"', report_result.match_id, report_result.queue
			USING ERRCODE = 'undefined_object';
	END IF;
	IF EXISTS (SELECT FROM mm.match_results r WHERE r.queue = m.queue AND r.match_id = m.id) THEN
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
		   bool_and(mp.team IS NULL), bool_or(mp.team IS NULL),
		   array_agg(mp.role ORDER BY mp.player_id),
		   coalesce(array_agg(mp.player_id ORDER BY mp.player_id) FILTER (WHERE NOT mp.autofilled), '{}')
	  INTO ids, teams, sides, scored_loss, free_for_all, some_without_team, roles, counted_ids
	  FROM mm.match_players mp WHERE mp.queue = m.queue AND mp.match_id = m.id;
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
	-- per role: the pool of the role each player played (a configured pool
	-- name has no '.', so <pool>.<role> never names another queue's pool)
	per_role := mm.rating_option(config, 'per_role');
	pools := ARRAY(SELECT CASE WHEN per_role AND u.role IS NOT NULL THEN pool_name || '.' || u.role
							   ELSE pool_name END
					 FROM unnest(roles) WITH ORDINALITY u(role, i) ORDER BY u.i);
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
		SELECT u.id, u.pool,
			   CASE WHEN rating_system IN ('glicko2', 'elo') THEN 1500 END,
			   CASE WHEN rating_system = 'glicko2' THEN 350 END,
			   CASE WHEN rating_system = 'glicko2' THEN 0.06 END,
			   CASE WHEN rating_system = 'openskill' THEN 25 END,
			   CASE WHEN rating_system = 'openskill' THEN 25 / 3.0 END,
			   0, 0, report_result.now
		  FROM unnest(ids, pools) u(id, pool)
		 ORDER BY u.id
		ON CONFLICT ON CONSTRAINT ratings_pkey DO NOTHING;
		-- lock the rows in player order (as mm.decay_ratings does), one
		-- player at a time (on Citus each on its player's shard)
		FOR player_index IN 1 .. cardinality(ids) LOOP
			PERFORM FROM mm.ratings rt
			 WHERE rt.player_id = ids[player_index] AND rt.pool = pools[player_index] FOR UPDATE;
		END LOOP;
		SELECT array_agg(r.rating ORDER BY u.i), array_agg(r.rd ORDER BY u.i),
			   array_agg(r.volatility ORDER BY u.i), array_agg(r.mu ORDER BY u.i),
			   array_agg(r.sigma ORDER BY u.i), array_agg(r.games ORDER BY u.i)
		  INTO old_rating, old_rd, old_volatility, old_mu, old_sigma, games
		  FROM unnest(ids, pools) WITH ORDINALITY u(id, pool, i)
		  JOIN mm.ratings r ON r.player_id = u.id AND r.pool = u.pool;
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
				  FROM unnest(ids, games, pools) WITH ORDINALITY u(id, g, pool, i)
				  JOIN mm.ratings rt ON rt.pool = u.pool AND rt.player_id = u.id
				  LEFT JOIN mm.players pl ON pl.id = u.id
				 CROSS JOIN LATERAL (
					SELECT coalesce(array_agg(x.v ORDER BY x.created_at, x.id), '{}') AS recent
					  FROM (SELECT coalesce(rh.rating_after, rh.mu_after) AS v, rh.created_at, rh.id
							  FROM mm.rating_history rh
							 WHERE rh.player_id = u.id AND rh.pool = u.pool AND rh.match_id IS NOT NULL
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
		  FROM unnest(ids, pools, new_rating, new_rd, new_volatility, new_mu, new_sigma, win_counts)
			   u(id, pool, rating, rd, volatility, mu, sigma, win)
		 WHERE r.pool = u.pool AND r.player_id = u.id;
		INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
									   mu_before, mu_after, sigma_before, sigma_after,
									   volatility_before, volatility_after, created_at)
		SELECT u.id, u.pool, m.id, u.rating_before, u.rating_after, u.rd_before, u.rd_after,
			   u.mu_before, u.mu_after, u.sigma_before, u.sigma_after, u.volatility_before, u.volatility_after,
			   report_result.now
		  FROM unnest(ids, pools, old_rating, new_rating, old_rd, new_rd, old_mu, new_mu, old_sigma, new_sigma,
					  old_volatility, new_volatility)
			   u(id, pool, rating_before, rating_after, rd_before, rd_after, mu_before, mu_after, sigma_before,
				 sigma_after, volatility_before, volatility_after);
	END IF;

	INSERT INTO mm.match_results (match_id, queue, winner_team, ranks, predicted_favourite,
								  favourite_win_probability, duration, reported_at)
	VALUES (m.id, m.queue, winner, report_result.ranks, favourite, favourite_probability,
			report_result.now - m.created_at, report_result.now);

	-- completed, players released, match_completed; then the result's event
	PERFORM mm.complete_match(m.queue, m.id, report_result.now);

	-- Autofill protection: a match played in a role of one's list counts
	-- one game off (never below 0).  The rows locked in player order first,
	-- so two reports sharing players wait for each other without deadlock;
	-- the update re-checks games_left on a row another report changed.
	IF cardinality(counted_ids) > 0 THEN
		PERFORM FROM mm.autofill_protection a
		 WHERE a.queue = m.queue AND a.player_id = ANY (counted_ids) AND a.games_left > 0
		 ORDER BY a.player_id
		   FOR UPDATE;
		UPDATE mm.autofill_protection a
		   SET games_left = a.games_left - 1, updated_at = report_result.now
		 WHERE a.queue = m.queue AND a.player_id = ANY (counted_ids) AND a.games_left > 0;
	END IF;

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
COMMENT ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz) IS
'Reports the ranks of a ready or assigned match (by team, or by player in a free-for-all): completes it, writes mm.match_results and updates every player''s stored rating in the queue''s pool (per role: the pool of the role played); returns each player''s rating before and after';
REVOKE ALL ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz) TO mm_director, mm_admin;
COMMENT ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) IS
'Reports the ranks of a ready or assigned match (by team, or by player in a free-for-all): completes it, writes mm.match_results and updates every player''s stored rating in the queue''s pool (per role: the pool of the role played); returns each player''s rating before and after';

-- The players' roles in a ticket's assignment: a new output column, so the
-- functions are dropped and created again (the id-only forms call the
-- others by name: all go, then come back in order).
DROP FUNCTION mm.get_assignment(text, bigint, text);
DROP FUNCTION mm.get_assignment(bigint, text);
DROP FUNCTION mm.get_assignment(bigint);
DROP FUNCTION mm.get_assignment(text, bigint);
DROP FUNCTION mm.ticket_assignment(text, bigint);
CREATE FUNCTION mm.ticket_assignment(wanted_queue text, wanted_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t record;
	m_id bigint;
	m_queue text;
	m_status text;
	m_connection text;
	m_properties jsonb;
	m_roles jsonb;
BEGIN
	IF wanted_queue IS NULL OR wanted_id IS NULL THEN
		RETURN;
	END IF;
	SELECT x.id, x.status, x.match_id, x.team, x.queue, x.queues INTO t
	  FROM mm.tickets x WHERE x.queue = wanted_queue AND x.id = wanted_id;
	IF NOT FOUND THEN
		-- a ticket of several queues that another of them matched (a plain
		-- read; on Citus it visits every shard)
		SELECT x.id, x.status, x.match_id, x.team, x.queue, x.queues INTO t
		  FROM mm.tickets_ended x WHERE x.id = wanted_id AND wanted_queue = ANY (x.queues);
		IF NOT FOUND THEN
			RETURN;
		END IF;
	END IF;
	IF t.match_id IS NOT NULL THEN
		SELECT x.id, x.queue, x.status, x.connection, x.properties
		  INTO m_id, m_queue, m_status, m_connection, m_properties
		  FROM mm.matches x
		 WHERE x.queue = ANY (array_prepend(t.queue, coalesce(t.queues, '{}'))) AND x.id = t.match_id;
		IF m_id IS NOT NULL THEN
			SELECT jsonb_object_agg(mp.player_id, mp.role) FILTER (WHERE mp.role IS NOT NULL) INTO m_roles
			  FROM mm.match_players mp
			 WHERE mp.queue = m_queue AND mp.match_id = m_id AND mp.ticket_id = t.id;
		END IF;
	END IF;
	RETURN QUERY SELECT t.id, t.status, m_id, m_status, t.team, m_connection, m_properties, m_roles;
END
$$;
COMMENT ON FUNCTION mm.ticket_assignment(text, bigint) IS
'Internal: a ticket''s assignment by (queue, id), read on the queue''s shard; no row for a ticket not in the queue';
REVOKE ALL ON FUNCTION mm.ticket_assignment(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_assignment(text, bigint) TO mm_admin;

CREATE FUNCTION mm.get_assignment(queue text, ticket_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.check_queue_arg(get_assignment.queue);
	SELECT a.* FROM mm.ticket_assignment(get_assignment.queue, get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(text, bigint) IS
'For the director: a ticket''s status by (queue, id), its match and the match''s status, team, connection, properties and its players'' roles; no row for a ticket not in the queue';
REVOKE ALL ON FUNCTION mm.get_assignment(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(text, bigint) TO mm_director, mm_admin;

CREATE FUNCTION mm.get_assignment(ticket_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
LANGUAGE sql STABLE STRICT
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT a.* FROM mm.ticket_assignment(mm.ticket_queue(get_assignment.ticket_id), get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(bigint) IS
'For the director: any ticket''s status, its match and the match''s status, team, connection, properties and its players'' roles (a frontend passes the ticket''s token)';
-- The id-only form reads any ticket: the director's (and the admin's).
REVOKE ALL ON FUNCTION mm.get_assignment(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(bigint) TO mm_director, mm_admin;

CREATE FUNCTION mm.get_assignment(ticket_id bigint, token text)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.check_ticket_token(get_assignment.ticket_id, get_assignment.token);
	SELECT a.* FROM mm.get_assignment(get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(bigint, text) IS
'For a polling client holding its ticket''s token: the ticket''s status, its match and the match''s status, team, connection, properties and its players'' roles; 42501 for a wrong token';
REVOKE ALL ON FUNCTION mm.get_assignment(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(bigint, text) TO mm_frontend, mm_director;

CREATE FUNCTION mm.get_assignment(queue text, ticket_id bigint, token text)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.check_queue_arg(get_assignment.queue);
	SELECT mm.check_ticket_token(get_assignment.ticket_id, get_assignment.token);
	SELECT a.* FROM mm.ticket_assignment(get_assignment.queue, get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(text, bigint, text) IS
'For a polling client holding its ticket''s token: the ticket''s status by (queue, id), its match and the match''s status, team, connection, properties and its players'' roles; 42501 for a wrong token';
REVOKE ALL ON FUNCTION mm.get_assignment(text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(text, bigint, text) TO mm_frontend, mm_director;

-- Retention archives the new columns (named: they follow archived_at).
CREATE OR REPLACE FUNCTION mm.purge_finished(older_than interval, batch_size integer DEFAULT 10000,
								  archive boolean DEFAULT false, now timestamptz DEFAULT now(),
								  OUT matches_purged bigint, OUT tickets_purged bigint)
RETURNS record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cutoff timestamptz;
	match_ids bigint[];
	ticket_ids bigint[];
	matches_left bigint;
	tickets_left bigint;
	q text;
	n bigint;
BEGIN
	IF older_than IS NULL THEN
		RAISE EXCEPTION 'older_than must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF older_than < '0'::interval THEN
		RAISE EXCEPTION 'older_than must not be negative: %', older_than USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF batch_size IS NULL OR archive IS NULL OR now IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN batch_size IS NULL THEN 'batch_size' WHEN archive IS NULL THEN 'archive' ELSE 'now' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF batch_size < 1 OR batch_size > 1000000 THEN
		RAISE EXCEPTION 'batch_size must be between 1 and 1000000: %', batch_size
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF now IN ('infinity', '-infinity') THEN
		RAISE EXCEPTION 'now must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	BEGIN
		cutoff := now - older_than;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'older_than reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'now - older_than is out of range.';
	END;

	-- the oldest finished matches, queue by queue (the indexes lead with
	-- queue), then the oldest ended tickets the same way: batch_size of each
	-- at most.  Every statement names its queue, so that on Citus each runs
	-- on the queue's shards.
	matches_purged := 0;
	tickets_purged := 0;
	matches_left := batch_size;
	tickets_left := batch_size;
	FOR q IN SELECT name FROM mm.queues ORDER BY name LOOP
		EXIT WHEN matches_left <= 0 AND tickets_left <= 0;
		match_ids := ARRAY(
			SELECT m.id FROM mm.matches m
			 WHERE m.queue = q AND m.status IN ('completed', 'cancelled') AND m.updated_at < cutoff
			 ORDER BY m.updated_at, m.id
			 LIMIT greatest(matches_left, 0)
			   FOR UPDATE SKIP LOCKED);
		matches_left := matches_left - cardinality(match_ids);
		ticket_ids := ARRAY(
			SELECT t.id FROM mm.tickets t
			 WHERE t.queue = q AND t.status IN ('cancelled', 'timed_out') AND t.updated_at < cutoff
			 ORDER BY t.updated_at, t.id
			 LIMIT greatest(tickets_left, 0)
			   FOR UPDATE SKIP LOCKED);
		tickets_left := tickets_left - cardinality(ticket_ids);
		CONTINUE WHEN cardinality(match_ids) = 0 AND cardinality(ticket_ids) = 0;
		-- a purged match takes its ended tickets along (a matched ticket
		-- needs its match; it ended under the match's queue), found through
		-- its players; a ticket back in the active partition (searching
		-- again) stays
		ticket_ids := ticket_ids || ARRAY(
			SELECT t.id FROM mm.tickets_ended t
			 WHERE t.queue = q
			   AND t.id IN (SELECT mp.ticket_id FROM mm.match_players mp
							 WHERE mp.queue = q AND mp.match_id = ANY (match_ids))
			   AND t.match_id = ANY (match_ids) AND t.id <> ALL (ticket_ids)
			 ORDER BY t.id FOR UPDATE);

		IF archive THEN
			INSERT INTO mm.matches_archive (id, queue, status, created_at, updated_at, region, quality,
											rule_steps, connection, properties, acceptance_deadline,
											cancel_reason, archived_at, ready_at)
			SELECT m.id, m.queue, m.status, m.created_at, m.updated_at, m.region, m.quality,
				   m.rule_steps, m.connection, m.properties, m.acceptance_deadline,
				   m.cancel_reason, now, m.ready_at
			  FROM mm.matches m WHERE m.queue = q AND m.id = ANY (match_ids);
			INSERT INTO mm.match_players_archive (match_id, queue, player_id, ticket_id, team, accepted, left_at,
												  archived_at, role, autofilled)
			SELECT mp.match_id, mp.queue, mp.player_id, mp.ticket_id, mp.team, mp.accepted, mp.left_at,
				   now, mp.role, mp.autofilled
			  FROM mm.match_players mp WHERE mp.queue = q AND mp.match_id = ANY (match_ids);
			INSERT INTO mm.match_results_archive
				SELECT r.*, now FROM mm.match_results r WHERE r.queue = q AND r.match_id = ANY (match_ids);
			INSERT INTO mm.tickets_archive (id, queue, players, status, created_at, updated_at, matched_at,
											match_id, team, archived_at, queues, heartbeat_at, cancel_reason)
			SELECT t.id, t.queue, t.players, t.status, t.created_at, t.updated_at, t.matched_at,
				   t.match_id, t.team, now, t.queues, t.heartbeat_at, t.cancel_reason
			  FROM mm.tickets_ended t WHERE t.queue = q AND t.id = ANY (ticket_ids);
		END IF;

		-- match_results go by ON DELETE CASCADE; match players are deleted here
		DELETE FROM mm.match_players mp WHERE mp.queue = q AND mp.match_id = ANY (match_ids);
		DELETE FROM mm.tickets_ended t WHERE t.queue = q AND t.id = ANY (ticket_ids);
		GET DIAGNOSTICS n = ROW_COUNT;
		tickets_purged := tickets_purged + n;
		DELETE FROM mm.matches m WHERE m.queue = q AND m.id = ANY (match_ids);
		GET DIAGNOSTICS n = ROW_COUNT;
		matches_purged := matches_purged + n;
	END LOOP;
END;
$$;
COMMENT ON FUNCTION mm.purge_finished(interval, integer, boolean, timestamptz) IS
'One retention batch: deletes or archives finished matches and tickets last changed before now - older_than';
REVOKE ALL ON FUNCTION mm.purge_finished(interval, integer, boolean, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.purge_finished(interval, integer, boolean, timestamptz) TO mm_admin;

-- Per-role waits: a new output column of mm.queue_statistics.
DROP FUNCTION mm.queue_statistics(text, timestamptz);
CREATE FUNCTION mm.queue_statistics(queue text, now timestamptz DEFAULT now())
RETURNS TABLE (players_searching bigint, estimated_wait_s float8, roles jsonb)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
SET enable_seqscan = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
	covered text[] := mm.metrics_scope(queue_statistics.queue, '15 minutes', queue_statistics.now, true);
	show_player_count boolean;
	show_time_to_match boolean;
	queue_roles text[];
	role_waits jsonb;
	t_id bigint[];
	t_match bigint[];
	t_wait float8[];
	p_match bigint[];
	p_ticket bigint[];
	p_role text[];
BEGIN
	SELECT coalesce((q.config #>> '{statistics,show_player_count}')::boolean, false),
		   coalesce((q.config #>> '{statistics,show_time_to_match}')::boolean, false),
		   mm.config_roles(q.config)
	  INTO show_player_count, show_time_to_match, queue_roles
	  FROM mm.queues q
	 WHERE q.name = ANY (covered);
	IF show_player_count THEN
		SELECT coalesce(sum(jsonb_array_length(a.players)), 0) INTO players_searching
		  FROM mm.tickets_searching_at(covered, queue_statistics.now) a;
	END IF;
	IF show_time_to_match THEN
		SELECT round(percentile_cont(0.5) WITHIN GROUP (
					 ORDER BY (extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8))
		  INTO estimated_wait_s
		  FROM mm.tickets t
		 WHERE t.queue = queue_statistics.queue
		   AND t.matched_at > queue_statistics.now - '15 minutes'::interval
		   AND t.matched_at <= queue_statistics.now;
	END IF;
	IF show_time_to_match AND queue_roles IS NOT NULL THEN
		-- the same tickets, one row per player with the role they got (in
		-- the match that matched the ticket); the tickets and the players
		-- read through an index into arrays, so that the join knows its sizes
		-- (as mm.match_details_figures)
		SELECT array_agg(t.id), array_agg(t.match_id),
			   array_agg((extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8)
		  INTO t_id, t_match, t_wait
		  FROM mm.tickets t
		 WHERE t.queue = queue_statistics.queue
		   AND t.matched_at > queue_statistics.now - '15 minutes'::interval
		   AND t.matched_at <= queue_statistics.now;
		SELECT array_agg(mp.match_id), array_agg(mp.ticket_id), array_agg(mp.role)
		  INTO p_match, p_ticket, p_role
		  FROM mm.match_players mp
		 WHERE mp.match_id = ANY (t_match) AND mp.queue = queue_statistics.queue
		   AND mp.role IS NOT NULL AND NOT mp.autofilled;
		SELECT jsonb_object_agg(w.role, jsonb_build_object('estimated_wait_seconds', w.wait,
														   'players_matched', w.n))
		  INTO role_waits
		  FROM (SELECT mp.role, count(*) AS n,
					   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t.wait)) AS wait
				  FROM unnest(t_id, t_match, t_wait) AS t(id, match_id, wait)
				  JOIN unnest(p_match, p_ticket, p_role) AS mp(match_id, ticket_id, role)
					ON mp.match_id = t.match_id AND mp.ticket_id = t.id
				 GROUP BY mp.role) w;
		-- every role of the queue, the ones nobody got too
		SELECT jsonb_object_agg(r.role, coalesce(role_waits -> r.role,
												 '{"estimated_wait_seconds": null, "players_matched": 0}'))
		  INTO roles
		  FROM unnest(queue_roles) r(role);
	END IF;
	RETURN NEXT;
END
$$;
COMMENT ON FUNCTION mm.queue_statistics(text, timestamptz) IS
'What players may see about a queue: searching players and estimated wait (per role in a role queue), as the queue''s statistics flags allow';
REVOKE ALL ON FUNCTION mm.queue_statistics(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queue_statistics(text, timestamptz) TO mm_analyst, mm_admin;

-- Per queue and role, over the matches formed in (now - time_window, now]
-- (the view mm.role_stats is the last hour): the players given the role,
-- the share of them on their first choice (the first of the player's
-- "roles" in the ticket; no list, or "fill" first, accepts any role, so it
-- counts as a first choice; a player whose ticket is gone is left out of
-- the share), the share autofilled, and their average wait (ticket created
-- to matched, for the tickets matched into that match).  Players without a
-- role (queues without roles) are not counted.  Rounded to 3 decimals.
CREATE FUNCTION mm.role_stats(time_window interval, now timestamptz DEFAULT now())
RETURNS TABLE (queue text, role text, players bigint, first_choice_share float8,
			   autofill_rate float8, avg_wait_seconds float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
SET enable_seqscan = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
	covered text[] := mm.metrics_scope(NULL, role_stats.time_window, role_stats.now);
	w_id bigint[];
	w_queue text[];
	p_queue text[];
	p_match bigint[];
	p_player text[];
	p_ticket bigint[];
	p_role text[];
	p_autofilled boolean[];
	tp_id bigint[];
	tp_match bigint[];
	tp_created timestamptz[];
	tp_matched timestamptz[];
	tp_player text[];
	tp_wanted jsonb[];
BEGIN
	-- the window's matches, their players with a role (same queue: by the
	-- match_players key), then the players' tickets by id (a ticket may
	-- belong to another queue, on Citus one sharded apart); each step read
	-- through an index into arrays, so that the joins below know their sizes
	-- (as mm.match_details_figures)
	SELECT array_agg(m.id), array_agg(m.queue) INTO w_id, w_queue
	  FROM mm.matches m
	 WHERE m.queue = ANY (covered)
	   AND m.created_at > role_stats.now - role_stats.time_window AND m.created_at <= role_stats.now;
	SELECT array_agg(mp.queue), array_agg(mp.match_id), array_agg(mp.player_id), array_agg(mp.ticket_id),
		   array_agg(mp.role), array_agg(mp.autofilled)
	  INTO p_queue, p_match, p_player, p_ticket, p_role, p_autofilled
	  FROM mm.match_players mp
	 WHERE mp.match_id = ANY (w_id) AND mp.queue = ANY (covered) AND mp.role IS NOT NULL;
	SELECT array_agg(t.id), array_agg(t.match_id), array_agg(t.created_at), array_agg(t.matched_at),
		   array_agg(e.value ->> 'id'), array_agg(e.value -> 'roles')
	  INTO tp_id, tp_match, tp_created, tp_matched, tp_player, tp_wanted
	  FROM mm.tickets t, jsonb_array_elements(t.players) e
	 WHERE t.id = ANY (p_ticket);
	RETURN QUERY
	WITH w AS (
		SELECT * FROM unnest(w_id, w_queue) AS w(id, queue)
	), p AS (
		SELECT * FROM unnest(p_queue, p_match, p_player, p_ticket, p_role, p_autofilled)
			AS p(queue, match_id, player_id, ticket_id, role, autofilled)
		 WHERE (p.match_id, p.queue) IN (SELECT w.id, w.queue FROM w)
	), tp AS (
		SELECT * FROM unnest(tp_id, tp_match, tp_created, tp_matched, tp_player, tp_wanted)
			AS tp(id, match_id, created_at, matched_at, player_id, wanted)
	), v AS (
		SELECT p.queue, p.role, p.autofilled,
			   CASE WHEN tp.id IS NULL THEN NULL
					WHEN jsonb_typeof(tp.wanted) IS DISTINCT FROM 'array'
						 OR jsonb_array_length(tp.wanted) = 0 THEN true
					ELSE tp.wanted ->> 0 IN ('fill', p.role) END AS first_choice,
			   CASE WHEN tp.match_id = p.match_id
					THEN (extract(epoch FROM tp.matched_at) - extract(epoch FROM tp.created_at))::float8
			   END AS wait
		  FROM p
		  LEFT JOIN tp ON tp.id = p.ticket_id AND tp.player_id = p.player_id
	)
	SELECT v.queue, v.role, count(*),
		   mm.metrics_round(avg(v.first_choice::integer::float8)),
		   mm.metrics_round(avg(v.autofilled::integer::float8)),
		   mm.metrics_round(avg(v.wait))
	  FROM v
	 GROUP BY v.queue, v.role
	 ORDER BY v.queue, v.role;
END
$$;
COMMENT ON FUNCTION mm.role_stats(interval, timestamptz) IS
'Per queue and role, over the matches formed in the window: players given the role, share on their first choice, share autofilled, average wait';
REVOKE ALL ON FUNCTION mm.role_stats(interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.role_stats(interval, timestamptz) TO mm_analyst;

CREATE VIEW mm.role_stats AS
	SELECT * FROM mm.role_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.role_stats IS 'mm.role_stats(time_window) over the last hour';
GRANT SELECT ON TABLE mm.role_stats TO mm_analyst;
