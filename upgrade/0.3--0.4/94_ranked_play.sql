-- Ranked play and penalties (issue 22; docs/ratings.md "Ranked play",
-- docs/penalties.md): the standing columns of mm.ratings (season games,
-- placement games left, tier, division, progress, games below), the reason
-- of each rating history row, the settings and season of each rating pool,
-- the leaderboard's new columns, mm.report_result seeding first ratings,
-- moving the standing and counting good games; the offences recorded by
-- mm.accept_match (dodge), mm.expire_proposed_matches (acceptance timeout)
-- and mm.leave_match (leave); the cooldown checked by the ticket trigger;
-- mm.match_players.low_priority (and its archive) written by the tick.
-- The new tables and functions are src/sql/65_penalties.sql and
-- src/sql/75_ranked_play.sql, part of this upgrade as they are.

-- New columns come last, as in the fresh install; those NOT NULL with a
-- default are filled first and only then given it (a column added with a
-- default carries a "missing value" a fresh install has not).
ALTER TABLE mm.ratings ADD COLUMN season_games integer, ADD COLUMN placement_games_left integer,
	ADD COLUMN tier text, ADD COLUMN division integer, ADD COLUMN tier_progress float8,
	ADD COLUMN games_below integer;
UPDATE mm.ratings SET season_games = 0, placement_games_left = 0, games_below = 0;
ALTER TABLE mm.ratings ALTER COLUMN season_games SET DEFAULT 0, ALTER COLUMN season_games SET NOT NULL,
	ALTER COLUMN placement_games_left SET DEFAULT 0, ALTER COLUMN placement_games_left SET NOT NULL,
	ALTER COLUMN games_below SET DEFAULT 0, ALTER COLUMN games_below SET NOT NULL;
COMMENT ON COLUMN mm.ratings.placement_games_left IS
	'Placement games the player still has to play in the pool (0: placed; see the pool''s placement settings)';
COMMENT ON COLUMN mm.ratings.tier IS
	'The visible tier over the hidden rating (the pool''s tiers); NULL while provisional or without tiers';

ALTER TABLE mm.rating_history ADD COLUMN reason text;
UPDATE mm.rating_history SET reason = CASE WHEN match_id IS NULL THEN 'decay' ELSE 'match' END;
ALTER TABLE mm.rating_history ALTER COLUMN reason SET DEFAULT 'match', ALTER COLUMN reason SET NOT NULL;
COMMENT ON TABLE mm.rating_history IS
'Every change of a stored rating: one row per player per rated match (match_id), and one per decay step, import, seed or season reset (reason)';

ALTER TABLE mm.match_players ADD COLUMN low_priority boolean;
UPDATE mm.match_players SET low_priority = false;
ALTER TABLE mm.match_players ALTER COLUMN low_priority SET DEFAULT false,
	ALTER COLUMN low_priority SET NOT NULL;
COMMENT ON COLUMN mm.match_players.low_priority IS
	'True when the player''s ticket was in the queue''s low-priority pool (penalties) when the match formed';
ALTER TABLE mm.match_players_archive ADD COLUMN low_priority boolean;
UPDATE mm.match_players_archive SET low_priority = false;
ALTER TABLE mm.match_players_archive ALTER COLUMN low_priority SET DEFAULT false,
	ALTER COLUMN low_priority SET NOT NULL;

-- Ranked play's settings per rating pool (placements, tiers, seeding,
-- season reset: validated by mm.configure_rating_pool, 75_ranked_play.sql)
-- and its current season.  A pool <pool>.<role> without a row of its own
-- uses <pool>'s.  A reference table on Citus.
CREATE TABLE mm.rating_pools (
	pool text PRIMARY KEY,
	settings jsonb NOT NULL DEFAULT '{}',
	-- the season running (mm.start_season), NULL before the first
	season text,
	season_started_at timestamptz,
	updated_at timestamptz NOT NULL
);
COMMENT ON TABLE mm.rating_pools IS
	'Per rating pool: ranked play''s settings (placements, tiers, seeding, season reset) and the season running';
GRANT SELECT ON TABLE mm.rating_pools TO mm_director, mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.rating_pools TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.rating_pools', '');

-- The value a player's true skill is very likely above: Glicko-2 rating -
-- 2 RD, Elo the rating, OpenSkill mu - 3 sigma (the leaderboards rank by
-- it).  No SET clause, so that it is inlined.
CREATE FUNCTION mm.conservative_rating(rating float8, rd float8, mu float8, sigma float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
	SELECT CASE WHEN rating IS NOT NULL
				THEN rating OPERATOR(pg_catalog.-)
					 (2::pg_catalog.float8 OPERATOR(pg_catalog.*) coalesce(rd, 0::pg_catalog.float8))
				ELSE mu OPERATOR(pg_catalog.-) (3::pg_catalog.float8 OPERATOR(pg_catalog.*) sigma)
		   END
$$;
COMMENT ON FUNCTION mm.conservative_rating(float8, float8, float8, float8) IS
'Internal: the conservative rating the leaderboards rank by (Glicko-2 rating - 2 RD, Elo rating, OpenSkill mu - 3 sigma)';
REVOKE ALL ON FUNCTION mm.conservative_rating(float8, float8, float8, float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.conservative_rating(float8, float8, float8, float8) TO mm_analyst, mm_admin;

-- Per pool, every rated player by a conservative rating, the value the
-- player is very likely above: Glicko-2 rating - 2 RD, Elo the rating,
-- OpenSkill mu - 3 sigma.  Equal values share a rank.  A provisional
-- player (placement games left) is listed without a rank: the placed
-- players are ranked among themselves.  The season is the pool's running
-- one (a role pool's: its base pool's).  Analysts read it; a frontend does
-- not (it would show every player's rating).
CREATE OR REPLACE VIEW mm.leaderboard AS
SELECT s.pool, s.player_id, s.system, s.conservative_rating,
	   CASE WHEN NOT s.provisional
			THEN pg_catalog.rank() OVER (PARTITION BY s.pool, s.provisional
										 ORDER BY s.conservative_rating DESC NULLS LAST) END AS rank,
	   s.rating, s.rd, s.mu, s.sigma, s.games, s.wins, s.updated_at,
	   s.provisional, s.placement_games_left, s.tier, s.division, s.tier_progress, s.season, s.season_games
  FROM (SELECT r.pool, r.player_id, r.rating, r.rd, r.mu, r.sigma, r.games, r.wins, r.updated_at,
			   r.placement_games_left OPERATOR(pg_catalog.>) 0 AS provisional, r.placement_games_left,
			   r.tier, r.division, r.tier_progress, r.season_games,
			   coalesce(own.season, base.season) AS season,
			   CASE WHEN r.rating IS NOT NULL AND r.rd IS NOT NULL THEN 'glicko2'
					WHEN r.rating IS NOT NULL THEN 'elo'
					WHEN r.mu IS NOT NULL AND r.sigma IS NOT NULL THEN 'openskill' END AS system,
			   mm.conservative_rating(r.rating, r.rd, r.mu, r.sigma) AS conservative_rating
		  FROM mm.ratings r
		  LEFT JOIN mm.rating_pools own ON own.pool OPERATOR(pg_catalog.=) r.pool
		  LEFT JOIN mm.rating_pools base
				 ON base.pool OPERATOR(pg_catalog.=) pg_catalog.split_part(r.pool, '.', 1)) s;
COMMENT ON VIEW mm.leaderboard IS
'Per rating pool, every rated player by conservative rating (Glicko-2 rating - 2 RD, Elo rating, OpenSkill mu - 3 sigma), with rank among the placed players (ties share), games, wins, placement, tier, division and progress';

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
	-- ranked play: each player's ticket, whether they stayed to the end,
	-- their pool's settings, a first rating seeded from the ticket, the
	-- players whose rating row this report created, their standing
	ticket_ids bigint[];
	stayed boolean[];
	pool_list text[];
	pool_settings jsonb[];
	settings jsonb[];
	ticket_list bigint[];
	ticket_players jsonb[];
	seeds float8[];
	seed_rds float8[];
	created text[];
	old_tier text[];
	old_division integer[];
	old_below integer[];
	old_season_games integer[];
	new_left integer[];
	new_tier text[];
	new_division integer[];
	new_progress float8[];
	new_below integer[];
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
		   coalesce(array_agg(mp.player_id ORDER BY mp.player_id) FILTER (WHERE NOT mp.autofilled), '{}'),
		   array_agg(mp.ticket_id ORDER BY mp.player_id), array_agg(mp.left_at IS NULL ORDER BY mp.player_id)
	  INTO ids, teams, sides, scored_loss, free_for_all, some_without_team, roles, counted_ids,
		   ticket_ids, stayed
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
		-- each player's pool settings (ranked play: seeding, placements,
		-- tiers), looked up once per pool
		pool_list := ARRAY(SELECT DISTINCT p FROM unnest(pools) p);
		pool_settings := ARRAY(SELECT mm.rating_pool_settings(p) FROM unnest(pool_list) WITH ORDINALITY u(p, i)
								ORDER BY u.i);
		settings := ARRAY(SELECT pool_settings[array_position(pool_list, u.pool)]
							FROM unnest(pools) WITH ORDINALITY u(pool, i) ORDER BY u.i);
		-- a pool that seeds first ratings from a ticket attribute: each
		-- player's value in their ticket (read first: the tickets of the
		-- match's queue, on Citus on its shard), NULL when absent or not a number
		IF EXISTS (SELECT FROM unnest(settings) x WHERE x ? 'seed') THEN
			SELECT array_agg(t.id), array_agg(t.players) INTO ticket_list, ticket_players
			  FROM mm.tickets t WHERE t.queue = m.queue AND t.id = ANY (ticket_ids);
			SELECT array_agg(mm.attribute_number(tp.value -> 'attributes', u.cfg #>> '{seed,attribute}', -1e9, 1e9)
							 ORDER BY u.i),
				   array_agg((u.cfg #>> '{seed,rd}')::float8 ORDER BY u.i)
			  INTO seeds, seed_rds
			  FROM unnest(ids, ticket_ids, settings) WITH ORDINALITY u(id, ticket, cfg, i)
			  LEFT JOIN LATERAL (SELECT e.value
								   FROM unnest(ticket_list, ticket_players) tl(id, players),
										jsonb_array_elements(tl.players) e
								  WHERE tl.id = u.ticket AND e.value ->> 'id' = u.id AND u.cfg ? 'seed'
								  LIMIT 1) tp ON true;
		ELSE
			seeds := array_fill(NULL::float8, ARRAY[cardinality(ids)]);
			seed_rds := seeds;
		END IF;
		-- unrated players start at the system's defaults, or at their seed
		WITH made AS (
			INSERT INTO mm.ratings AS r (player_id, pool, rating, rd, volatility, mu, sigma, games, wins, updated_at,
										 placement_games_left)
			SELECT u.id, u.pool,
				   CASE WHEN rating_system IN ('glicko2', 'elo') THEN coalesce(u.seed, 1500) END,
				   CASE WHEN rating_system = 'glicko2' THEN coalesce(CASE WHEN u.seed IS NOT NULL THEN u.seed_rd END, 350) END,
				   CASE WHEN rating_system = 'glicko2' THEN 0.06 END,
				   CASE WHEN rating_system = 'openskill' THEN coalesce(u.seed, 25) END,
				   CASE WHEN rating_system = 'openskill'
						THEN coalesce(CASE WHEN u.seed IS NOT NULL THEN u.seed_rd END, 25 / 3.0) END,
				   0, 0, report_result.now,
				   coalesce((u.cfg #>> '{placement,games}')::integer, 0)
			  FROM unnest(ids, pools, seeds, seed_rds, settings) u(id, pool, seed, seed_rd, cfg)
			 ORDER BY u.id
			ON CONFLICT ON CONSTRAINT ratings_pkey DO NOTHING
			RETURNING r.player_id
		)
		SELECT coalesce(array_agg(made.player_id), '{}') INTO created FROM made;
		-- a seeded first rating is recorded as such, before the match's change
		INSERT INTO mm.rating_history (player_id, pool, match_id, rating_after, rd_after, mu_after, sigma_after,
									   volatility_after, created_at, reason)
		SELECT u.id, u.pool, NULL,
			   CASE WHEN rating_system IN ('glicko2', 'elo') THEN u.seed END,
			   CASE WHEN rating_system = 'glicko2' THEN coalesce(u.seed_rd, 350) END,
			   CASE WHEN rating_system = 'openskill' THEN u.seed END,
			   CASE WHEN rating_system = 'openskill' THEN coalesce(u.seed_rd, 25 / 3.0) END,
			   CASE WHEN rating_system = 'glicko2' THEN 0.06 END,
			   report_result.now, 'seed'
		  FROM unnest(ids, pools, seeds, seed_rds) u(id, pool, seed, seed_rd)
		 WHERE u.seed IS NOT NULL AND u.id = ANY (created);
		-- lock the rows in player order (as mm.decay_ratings does), one
		-- player at a time (on Citus each on its player's shard)
		FOR player_index IN 1 .. cardinality(ids) LOOP
			PERFORM FROM mm.ratings rt
			 WHERE rt.player_id = ids[player_index] AND rt.pool = pools[player_index] FOR UPDATE;
		END LOOP;
		SELECT array_agg(r.rating ORDER BY u.i), array_agg(r.rd ORDER BY u.i),
			   array_agg(r.volatility ORDER BY u.i), array_agg(r.mu ORDER BY u.i),
			   array_agg(r.sigma ORDER BY u.i), array_agg(r.games ORDER BY u.i),
			   array_agg(r.tier ORDER BY u.i), array_agg(r.division ORDER BY u.i),
			   array_agg(r.games_below ORDER BY u.i), array_agg(r.season_games ORDER BY u.i)
		  INTO old_rating, old_rd, old_volatility, old_mu, old_sigma, games,
			   old_tier, old_division, old_below, old_season_games
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
		-- the standing after this game: placement games left, and the tier
		-- moved by the pool's rules (promotion at once, demotion protected)
		SELECT array_agg(s.placement_games_left ORDER BY u.i), array_agg(s.tier ORDER BY u.i),
			   array_agg(s.division ORDER BY u.i), array_agg(s.tier_progress ORDER BY u.i),
			   array_agg(s.games_below ORDER BY u.i)
		  INTO new_left, new_tier, new_division, new_progress, new_below
		  FROM unnest(settings, new_rating, new_rd, new_mu, new_sigma, games, old_season_games, old_tier,
					  old_division, old_below)
			   WITH ORDINALITY u(cfg, rating, rd, mu, sigma, g, sg, tier, division, below, i)
		 CROSS JOIN LATERAL mm.rating_standing(u.cfg, CASE rating_system WHEN 'openskill' THEN u.mu ELSE u.rating END,
											   CASE rating_system WHEN 'openskill' THEN u.sigma ELSE u.rd END,
											   u.g + 1, u.sg + 1, u.tier, u.division, u.below, true) s;
		UPDATE mm.ratings r
		   SET rating = u.rating, rd = u.rd, volatility = u.volatility, mu = u.mu, sigma = u.sigma,
			   games = r.games + 1, wins = r.wins + u.win, updated_at = report_result.now,
			   season_games = r.season_games + 1, placement_games_left = u.placement_left, tier = u.tier,
			   division = u.division, tier_progress = u.progress, games_below = u.below
		  FROM unnest(ids, pools, new_rating, new_rd, new_volatility, new_mu, new_sigma, win_counts,
					  new_left, new_tier, new_division, new_progress, new_below)
			   u(id, pool, rating, rd, volatility, mu, sigma, win, placement_left, tier, division, progress, below)
		 WHERE r.pool = u.pool AND r.player_id = u.id;
		INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
									   mu_before, mu_after, sigma_before, sigma_after,
									   volatility_before, volatility_after, created_at, reason)
		SELECT u.id, u.pool, m.id, u.rating_before, u.rating_after, u.rd_before, u.rd_after,
			   u.mu_before, u.mu_after, u.sigma_before, u.sigma_after, u.volatility_before, u.volatility_after,
			   report_result.now, 'match'
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

	-- penalties: a match played to the end is a good game for each player
	-- who stayed (low-priority games worked off, offences forgiven)
	IF config ? 'penalties' THEN
		PERFORM mm.count_good_games(m.queue, ARRAY(SELECT u.id FROM unnest(ids, stayed) u(id, stayed) WHERE u.stayed),
									report_result.now);
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

CREATE OR REPLACE FUNCTION mm.decay_ratings(pool text, idle interval, now timestamptz DEFAULT pg_catalog.now())
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

	-- the idle players locked in player order, as mm.report_result locks
	-- them; on Citus, which cannot lock across shards in one order, the
	-- update below skips a rating that changed since it was read
	IF NOT mm.tables_are_distributed() THEN
		PERFORM FROM mm.ratings r
		 WHERE r.pool = decay_ratings.pool AND r.updated_at <= since
		 ORDER BY r.player_id
		   FOR UPDATE;
	END IF;
	WITH idle_players AS (
		SELECT r.player_id, r.rating, r.rd, r.volatility, r.sigma, r.updated_at,
			   -- at least one: selected by calendar time, counted in seconds
			   -- (a month is 30 days there, and February has fewer)
			   greatest(least(floor(extract(epoch FROM decay_ratings.now - r.updated_at) / idle_seconds),
							  1000000), 1)::integer AS periods
		  FROM mm.ratings r
		 WHERE r.pool = decay_ratings.pool AND r.updated_at <= since
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
		 WHERE r.pool = decay_ratings.pool AND r.player_id = d.player_id AND r.updated_at = d.updated_at
		   AND (d.new_rd IS DISTINCT FROM d.rd OR d.new_sigma IS DISTINCT FROM d.sigma)
		RETURNING r.player_id, r.rating, r.mu, r.volatility, d.rd AS rd_before, r.rd AS rd_after,
				  d.sigma AS sigma_before, r.sigma AS sigma_after
	)
	INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
								   mu_before, mu_after, sigma_before, sigma_after,
								   volatility_before, volatility_after, created_at, reason)
	SELECT u.player_id, decay_ratings.pool, NULL, u.rating, u.rating, u.rd_before, u.rd_after,
		   u.mu, u.mu, u.sigma_before, u.sigma_after, u.volatility, u.volatility, decay_ratings.now, 'decay'
	  FROM updated u;
	GET DIAGNOSTICS changed = ROW_COUNT;
	RETURN changed;
END
$$;

CREATE OR REPLACE FUNCTION mm.accept_match(queue text, match_id bigint, player_id text, accept boolean,
								now timestamptz DEFAULT pg_catalog.now())
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	answer boolean;
	player_ticket bigint;
	moved bigint[];
	listed text[];
	ticket_queues text[];
BEGIN
	PERFORM mm.check_queue_arg(accept_match.queue);
	PERFORM mm.check_now(accept_match.now);
	IF accept_match.player_id IS NULL OR accept_match.accept IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN accept_match.player_id IS NULL
												  THEN 'player_id' ELSE 'accept' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	m := mm.lock_match(accept_match.queue, accept_match.match_id, ARRAY['proposed', 'ready', 'assigned', 'completed', 'cancelled'],
					   'answer', accept_match.now);
	SELECT mp.accepted, mp.ticket_id INTO answer, player_ticket
	  FROM mm.match_players mp
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = accept_match.player_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'player "%" is not in match %', accept_match.player_id, m.id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF m.status <> 'proposed' THEN
		-- the same answer again is harmless: it returns the outcome
		IF answer IS NOT DISTINCT FROM accept_match.accept THEN
			RETURN m.status;
		END IF;
		RAISE EXCEPTION 'match % is %, no longer waiting for answers', m.id, m.status
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	IF accept_match.now > m.acceptance_deadline THEN
		RAISE EXCEPTION 'the answer came after match %''s acceptance deadline', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('The deadline was %s; the answer came at %s.',
								  m.acceptance_deadline, accept_match.now);
	END IF;
	IF answer IS NOT NULL THEN
		IF answer = accept_match.accept THEN
			RETURN m.status;
		END IF;
		RAISE EXCEPTION 'player "%" already answered match % (%)', accept_match.player_id, m.id,
			  CASE WHEN answer THEN 'accepted' ELSE 'rejected' END
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;

	UPDATE mm.match_players mp SET accepted = accept_match.accept
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = accept_match.player_id;

	IF NOT accept_match.accept THEN
		-- the rejecting player's ticket (the whole party) is cancelled; the
		-- player, and only the player, has dodged (penalties, 65_penalties.sql)
		PERFORM mm.cancel_proposed_match(m.queue, m.id, 'rejected', ARRAY[player_ticket], accept_match.now);
		PERFORM mm.record_offences(m.queue, ARRAY[accept_match.player_id], 'dodge', m.id, accept_match.now);
		RETURN 'cancelled';
	END IF;

	IF EXISTS (SELECT FROM mm.match_players mp
				WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.accepted IS NOT TRUE) THEN
		RETURN 'proposed';
	END IF;

	-- everyone accepted: the tickets end as matched (under the match's
	-- queue, for a ticket of several queues), the players stay claimed by
	-- the live match
	UPDATE mm.matches x SET status = 'ready', updated_at = accept_match.now WHERE x.queue = m.queue AND x.id = m.id;
	ticket_queues := mm.match_ticket_queues(m.queue);
	WITH gone AS (
		DELETE FROM mm.tickets_active t WHERE t.queue = ANY (ticket_queues) AND t.match_id = m.id
		RETURNING t.*
	), ended AS (
		INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, matched_at,
									  match_id, team, queues)
		SELECT g.id, m.queue, g.players, 'matched', g.created_at, accept_match.now, accept_match.now,
			   g.match_id, g.team,
			   CASE WHEN g.queue = m.queue THEN g.queues
					ELSE array_append(array_remove(g.queues, m.queue), g.queue) END
		  FROM gone g
		RETURNING id, queues
	)
	SELECT array_agg(e.id), array_agg(DISTINCT u.queue) FILTER (WHERE u.queue IS NOT NULL)
	  INTO moved, listed
	  FROM ended e LEFT JOIN LATERAL unnest(e.queues) u(queue) ON true;
	-- the tickets of several queues leave the other queues' lists
	IF listed IS NOT NULL THEN
		DELETE FROM mm.ticket_queues o
		 WHERE o.queue = ANY (listed || m.queue) AND o.ticket_id = ANY (moved);
	END IF;
	PERFORM mm.notify_match_event('match_ready', m.id, '{}');
	RETURN 'ready';
END
$$;

CREATE OR REPLACE FUNCTION mm.expire_proposed_matches(queue text, now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	expired integer := 0;
	m record;
	due bigint[];
	due_queues text[];
	silent bigint[];
	silent_players text[];
BEGIN
	-- a match being answered right now is left for the next tick
	IF expire_proposed_matches.queue IS NULL THEN
		SELECT coalesce(array_agg(x.id ORDER BY x.acceptance_deadline, x.id), '{}'),
			   coalesce(array_agg(x.queue ORDER BY x.acceptance_deadline, x.id), '{}')
		  INTO due, due_queues
		  FROM (SELECT x.id, x.queue, x.acceptance_deadline FROM mm.matches x
				 WHERE x.status = 'proposed' AND x.acceptance_deadline < expire_proposed_matches.now
				 FOR UPDATE SKIP LOCKED) x;
	ELSE
		due := ARRAY(SELECT x.id FROM mm.matches x
					  WHERE x.queue = expire_proposed_matches.queue AND x.status = 'proposed'
						AND x.acceptance_deadline < expire_proposed_matches.now
					  ORDER BY x.acceptance_deadline, x.id
					  FOR UPDATE SKIP LOCKED);
		due_queues := array_fill(expire_proposed_matches.queue, ARRAY[cardinality(due)]);
	END IF;
	FOR m IN SELECT u.id, u.queue FROM unnest(due, due_queues) WITH ORDINALITY AS u(id, queue, ord)
			  ORDER BY u.ord LOOP
		-- the tickets with a player who did not answer are cancelled (read
		-- first: not a function call inside a query of a sharded table)
		silent := ARRAY(SELECT DISTINCT mp.ticket_id FROM mm.match_players mp
						 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.accepted IS NOT TRUE);
		silent_players := ARRAY(SELECT mp.player_id FROM mm.match_players mp
								 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.accepted IS NULL);
		PERFORM mm.cancel_proposed_match(m.queue, m.id, 'acceptance_timeout', silent,
			expire_proposed_matches.now);
		-- the players who never answered let it time out (penalties)
		PERFORM mm.record_offences(m.queue, silent_players, 'acceptance_timeout', m.id,
			expire_proposed_matches.now);
		expired := expired + 1;
	END LOOP;
	RETURN expired;
END
$$;

CREATE OR REPLACE FUNCTION mm.leave_match(queue text, match_id bigint, player_id text,
							   now timestamptz DEFAULT pg_catalog.now())
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	left_already timestamptz;
	player_ticket bigint;
	player_team text;
	request_id bigint;
	slots jsonb;
BEGIN
	PERFORM mm.check_queue_arg(leave_match.queue);
	PERFORM mm.check_now(leave_match.now);
	IF leave_match.player_id IS NULL THEN
		RAISE EXCEPTION 'player_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	m := mm.lock_match(leave_match.queue, leave_match.match_id, ARRAY['ready', 'assigned'], 'leave', leave_match.now);
	SELECT mp.left_at, mp.ticket_id, mp.team INTO left_already, player_ticket, player_team
	  FROM mm.match_players mp
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = leave_match.player_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'player "%" is not in match %', leave_match.player_id, m.id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF left_already IS NOT NULL THEN
		RETURN;
	END IF;
	UPDATE mm.match_players mp SET left_at = leave_match.now
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = leave_match.player_id;
	DELETE FROM mm.active_players a
	 WHERE a.player_id = leave_match.player_id AND a.ticket_id = player_ticket;
	PERFORM mm.notify_match_event('player_left', m.id,
		jsonb_build_object('player_id', leave_match.player_id));
	-- leaving a live match early is an offence (penalties)
	PERFORM mm.record_offences(m.queue, ARRAY[leave_match.player_id], 'leave', m.id, leave_match.now);
	IF (SELECT coalesce(q.config -> 'auto_backfill' = 'true', false) FROM mm.queues q WHERE q.name = m.queue) THEN
		-- an open request gains the leaver's slot (its team's, or a
		-- free-for-all's "players"); without one, a request is opened
		UPDATE mm.backfill_requests b
		   SET open_slots = jsonb_set(b.open_slots, ARRAY[coalesce(player_team, 'players')],
									  to_jsonb(coalesce((b.open_slots ->> coalesce(player_team, 'players'))::integer, 0) + 1)),
			   updated_at = leave_match.now
		 WHERE b.queue = m.queue AND b.match_id = m.id AND b.status = 'open'
		RETURNING b.id, b.open_slots INTO request_id, slots;
		IF request_id IS NOT NULL THEN
			PERFORM mm.notify_match_event('backfill_requested', m.id,
				jsonb_build_object('request_id', request_id, 'open_slots', slots));
		ELSE
			BEGIN
				PERFORM mm.request_backfill(m.queue, m.id, NULL, leave_match.now);
			EXCEPTION WHEN invalid_parameter_value THEN
				-- "no open slot to fill": the queue's config shrank since the
				-- match formed and leaves no room; the player leaves all the same
				NULL;
			END;
		END IF;
	END IF;
END
$$;

CREATE OR REPLACE FUNCTION mm.tickets_after_insert() RETURNS trigger
	LANGUAGE plpgsql
	-- the inserting role needs no privilege on mm.queues (a row lock) or
	-- mm.active_players: this trigger only checks and claims what it inserted
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	bad record;
BEGIN
	-- on Citus this fires on a shard (<table>_<shard id>), which cannot reach
	-- the players' claims: tickets go through mm.create_ticket there
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		PERFORM mm.refuse_ticket_write_on_shard(TG_OP);
	END IF;
	-- ids come from mm.tickets_id_seq: an explicit one must be one it has
	-- handed out (an id ahead of it would collide with a later default) and
	-- not an ended ticket's (the partitions' primary keys are separate)
	SELECT n.id, n.status, n.match_id IS NOT NULL AS has_match,
		   n.status = 'searching' AND n.match_id IS NULL AND n.matched_at IS NULL
		   AND n.updated_at IS NULL AND n.team IS NULL AS fresh,
		   n.id > (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
					 FROM mm.tickets_id_seq) AS ahead INTO bad
	  FROM new_tickets n
	 WHERE n.status <> 'searching' OR n.match_id IS NOT NULL OR n.matched_at IS NOT NULL
		OR n.updated_at IS NOT NULL OR n.team IS NOT NULL
		OR n.id > (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
					 FROM mm.tickets_id_seq)
		OR (n.id <= (SELECT max(e.id) FROM mm.tickets_ended e)
			AND EXISTS (SELECT FROM mm.tickets_ended e WHERE e.id = n.id))
	 LIMIT 1;
	IF FOUND AND bad.fresh AND bad.ahead THEN
		RAISE EXCEPTION 'ticket id % was not drawn from mm.tickets_id_seq', bad.id
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Leave id to its default.';
	ELSIF FOUND AND bad.fresh THEN
		RAISE EXCEPTION 'ticket id % is already used', bad.id
			USING ERRCODE = 'unique_violation',
				  HINT = 'Leave id to its default (mm.tickets_id_seq).';
	ELSIF FOUND THEN
		RAISE EXCEPTION 'a new ticket must start searching, without a match'
			USING ERRCODE = 'check_violation',
				  DETAIL = format('Ticket %s was inserted with status %s%s.', bad.id, bad.status,
								  CASE WHEN bad.has_match THEN ' and a match' ELSE '' END),
				  HINT = 'Insert only queue, players and optionally created_at; the tick sets the rest.';
	END IF;
	-- KEY SHARE on the queues: mm.drop_queue (FOR UPDATE) waits for this
	-- insert, or this insert for the drop, whose queue is then gone
	PERFORM FROM mm.queues q WHERE q.name IN (SELECT n.queue FROM new_tickets n) FOR KEY SHARE OF q;
	-- in the order the rows came: the first invalid one is reported
	PERFORM mm.validate_ticket(n.queue, n.players, n.created_at) FROM new_tickets n;
	-- an explicit id an active ticket of another queue holds (the key holds
	-- the queue): ids drawn from the sequence are above every older one, so
	-- only the active ids from the lowest new one up can repeat; planned
	-- with that id (EXECUTE), an index range scan over about the new rows
	EXECUTE 'SELECT pg_catalog.min(d.id) AS id FROM (SELECT a.id FROM mm.tickets_active a'
			' WHERE a.id OPERATOR(pg_catalog.>=) $1 GROUP BY a.id'
			' HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1) d'
		INTO bad USING (SELECT pg_catalog.min(n.id) FROM new_tickets n);
	IF bad.id IS NOT NULL THEN
		RAISE EXCEPTION 'ticket id % is already used', bad.id
			USING ERRCODE = 'unique_violation',
				  HINT = 'Leave id to its default (mm.tickets_id_seq).';
	END IF;
	-- one active ticket per player: a plain insert, in player order, so that
	-- two statements claiming the same players in different orders queue up
	-- on the first one they share instead of deadlocking; the rare refusal
	-- is explained by claim_players, which tries again and names the holder
	BEGIN
		INSERT INTO mm.active_players (player_id, ticket_id, queue)
		SELECT p.value ->> 'id', n.id, n.queue
		  FROM new_tickets n, jsonb_array_elements(n.players) p
		 ORDER BY 1;
	EXCEPTION WHEN unique_violation THEN
		PERFORM mm.claim_players(array_agg(n.id ORDER BY n.id), array_agg(n.queue ORDER BY n.id),
								 array_agg(n.players ORDER BY n.id))
		  FROM new_tickets n;
	END;
	-- a player cooling down after an offence may not queue (penalties):
	-- checked after the claim, which waited for a concurrent offence
	-- releasing the same player, so this later statement sees its cooldown
	PERFORM mm.refuse_cooled_down_players(array_agg(p.value ->> 'id'), array_agg(q.queue), array_agg(n.created_at))
	  FROM new_tickets n, jsonb_array_elements(n.players) p,
		   unnest(array_prepend(n.queue, coalesce(n.queues, '{}'))) q(queue)
	 WHERE EXISTS (SELECT 1 FROM mm.player_penalties pp
					WHERE pp.cooldown_until > (SELECT min(n2.created_at) FROM new_tickets n2));
	RETURN NULL;
END
$$;

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
												  archived_at, role, autofilled, low_priority)
			SELECT mp.match_id, mp.queue, mp.player_id, mp.ticket_id, mp.team, mp.accepted, mp.left_at,
				   now, mp.role, mp.autofilled, mp.low_priority
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
