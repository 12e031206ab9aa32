-- Ranked play over the stored ratings (docs/ratings.md, "Ranked play"):
-- rating pool settings (mm.configure_rating_pool), imported ratings
-- (mm.set_rating, mm.set_ratings), seasons with a soft reset
-- (mm.start_season, mm.season_ratings, mm.season_leaderboard), placements
-- and visible tiers and divisions with demotion protection
-- (mm.rating_standing, kept in mm.ratings by every writer), a player's view
-- (mm.get_player_ratings) and the analysts' figures (mm.placement_progress,
-- mm.tier_distribution).  The settings table, mm.rating_pools, and the
-- leaderboard are in 70_ratings.sql; mm.report_result seeds first ratings
-- and moves the standing after each game.

-- Seasons per pool: the running one has no end.  A reference table on Citus.
CREATE TABLE mm.seasons (
	pool text NOT NULL,
	name text NOT NULL,
	started_at timestamptz NOT NULL,
	ended_at timestamptz,
	-- the pool's settings when the season started (its reset)
	settings jsonb NOT NULL,
	PRIMARY KEY (pool, name)
);
COMMENT ON TABLE mm.seasons IS 'Per rating pool, its seasons: started by mm.start_season, ended by the next';
GRANT SELECT ON TABLE mm.seasons TO mm_director, mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.seasons TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.seasons', '');

-- Each player's final standing in a closed season (a role pool's rows under
-- its base pool's season).  Sharded by player on Citus.
CREATE TABLE mm.season_ratings (
	player_id text NOT NULL,
	pool text NOT NULL,
	season text NOT NULL,
	rating float8,
	rd float8,
	volatility float8,
	mu float8,
	sigma float8,
	games integer NOT NULL,
	wins integer NOT NULL,
	season_games integer NOT NULL,
	placement_games_left integer NOT NULL,
	tier text,
	division integer,
	tier_progress float8,
	ended_at timestamptz NOT NULL,
	PRIMARY KEY (player_id, pool, season)
);
COMMENT ON TABLE mm.season_ratings IS
	'Each player''s final rating and standing per pool in every closed season';
GRANT SELECT ON TABLE mm.season_ratings TO mm_director, mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.season_ratings TO mm_admin;
CREATE INDEX season_ratings_pool ON mm.season_ratings (pool, season);
SELECT pg_catalog.pg_extension_config_dump('mm.season_ratings', '');

-- A pool's settings: its own, else its base pool's (<pool> for
-- <pool>.<role>), else none.  PL/pgSQL: Citus rule 5.
CREATE FUNCTION mm.rating_pool_settings(pool text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN coalesce((SELECT p.settings FROM mm.rating_pools p WHERE p.pool = rating_pool_settings.pool),
					(SELECT p.settings FROM mm.rating_pools p
					  WHERE p.pool = split_part(rating_pool_settings.pool, '.', 1)),
					'{}'::jsonb);
END
$$;
COMMENT ON FUNCTION mm.rating_pool_settings(text) IS
'Internal: a rating pool''s ranked-play settings (a role pool''s: its base pool''s unless it has its own)';
REVOKE ALL ON FUNCTION mm.rating_pool_settings(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.rating_pool_settings(text) TO mm_director, mm_admin, mm_analyst;

-- The rating system of a pool: that of the first queue (by name) rating
-- into it or into its base pool; else that of its stored rows.
CREATE FUNCTION mm.rating_pool_system(pool text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	found_system text;
BEGIN
	SELECT q.config #>> '{rating,system}' INTO found_system
	  FROM mm.queues q
	 WHERE q.config ? 'rating'
	   AND coalesce(q.config #>> '{rating,pool}', q.name) = split_part(rating_pool_system.pool, '.', 1)
	 ORDER BY q.name LIMIT 1;
	IF found_system IS NULL THEN
		SELECT CASE WHEN r.rd IS NOT NULL THEN 'glicko2' WHEN r.rating IS NOT NULL THEN 'elo'
					WHEN r.mu IS NOT NULL THEN 'openskill' END INTO found_system
		  FROM mm.ratings r WHERE r.pool = rating_pool_system.pool LIMIT 1;
	END IF;
	RETURN found_system;
END
$$;
COMMENT ON FUNCTION mm.rating_pool_system(text) IS
'Internal: the rating system of a pool (glicko2, elo, openskill), from the queues rating into it';
REVOKE ALL ON FUNCTION mm.rating_pool_system(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.rating_pool_system(text) TO mm_admin;

-- Raises the error of an invalid settings value at a path.
CREATE FUNCTION mm.raise_pool_settings_error(path text, problem text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'invalid rating pool settings at %: %', path, problem
		USING ERRCODE = 'invalid_parameter_value',
			  HINT = 'See docs/ratings.md, "Ranked play", for the settings.';
END
$$;
COMMENT ON FUNCTION mm.raise_pool_settings_error(text, text) IS
'Internal: the 22023 error of an invalid rating pool settings value, naming its JSON path';
REVOKE ALL ON FUNCTION mm.raise_pool_settings_error(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.raise_pool_settings_error(text, text) TO mm_admin;

-- A number of the settings at path within [low, high] (integer: whole),
-- or an error naming the path.
CREATE FUNCTION mm.pool_settings_number(value jsonb, path text, low float8, high float8,
										whole boolean DEFAULT false)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n numeric;
BEGIN
	IF jsonb_typeof(value) IS DISTINCT FROM 'number' THEN
		PERFORM mm.raise_pool_settings_error(path, format('must be %s', CASE WHEN whole THEN 'an integer' ELSE 'a number' END));
	END IF;
	n := value::text::numeric;
	IF n < low::numeric OR n > high::numeric OR (whole AND n <> trunc(n)) THEN
		PERFORM mm.raise_pool_settings_error(path,
			format('must be %s from %s to %s', CASE WHEN whole THEN 'an integer' ELSE 'a number' END, low, high));
	END IF;
	RETURN n::float8;
END
$$;
COMMENT ON FUNCTION mm.pool_settings_number(jsonb, text, float8, float8, boolean) IS
'Internal: a number of the rating pool settings within its range, or an error naming its path';
REVOKE ALL ON FUNCTION mm.pool_settings_number(jsonb, text, float8, float8, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.pool_settings_number(jsonb, text, float8, float8, boolean) TO mm_admin;

-- Refuses keys of an object outside allowed, naming the first.
CREATE FUNCTION mm.pool_settings_keys(value jsonb, path text, allowed text[], required text[] DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	k text;
BEGIN
	IF jsonb_typeof(value) IS DISTINCT FROM 'object' THEN
		PERFORM mm.raise_pool_settings_error(path, 'must be an object');
	END IF;
	SELECT min(e) INTO k FROM jsonb_object_keys(value) e WHERE NOT e = ANY (allowed);
	IF k IS NOT NULL THEN
		PERFORM mm.raise_pool_settings_error(CASE WHEN path = 'settings' THEN k ELSE path || '.' || k END,
			format('is not a known key (known: %s)', array_to_string(allowed, ', ')));
	END IF;
	SELECT min(e) INTO k FROM unnest(required) e WHERE NOT value ? e;
	IF k IS NOT NULL THEN
		PERFORM mm.raise_pool_settings_error(CASE WHEN path = 'settings' THEN k ELSE path || '.' || k END, 'is required');
	END IF;
END
$$;
COMMENT ON FUNCTION mm.pool_settings_keys(jsonb, text, text[], text[]) IS
'Internal: refuses unknown or missing keys of a rating pool settings object, naming the path';
REVOKE ALL ON FUNCTION mm.pool_settings_keys(jsonb, text, text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.pool_settings_keys(jsonb, text, text[], text[]) TO mm_admin;

-- Checks a pool's settings; errors name the JSON path (tiers[2].min).
CREATE FUNCTION mm.check_rating_pool_settings(settings jsonb)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v jsonb;
	t jsonb;
	i integer;
	previous_min float8;
	tier_min float8;
	names text[] := '{}';
	tier_name text;
BEGIN
	PERFORM mm.pool_settings_keys(settings, 'settings',
								  ARRAY['seed', 'placement', 'tiers', 'demotion', 'season_reset']);
	IF settings ? 'seed' THEN
		v := settings -> 'seed';
		PERFORM mm.pool_settings_keys(v, 'seed', ARRAY['attribute', 'rd'], ARRAY['attribute']);
		IF jsonb_typeof(v -> 'attribute') IS DISTINCT FROM 'string'
		   OR length(v ->> 'attribute') NOT BETWEEN 1 AND 64 THEN
			PERFORM mm.raise_pool_settings_error('seed.attribute', 'must be a ticket attribute name of 1 to 64 characters');
		END IF;
		IF v ? 'rd' THEN
			PERFORM mm.pool_settings_number(v -> 'rd', 'seed.rd', 0.001, 1e6);
		END IF;
	END IF;
	IF settings ? 'placement' THEN
		v := settings -> 'placement';
		PERFORM mm.pool_settings_keys(v, 'placement', ARRAY['games', 'rd', 'each_season'], ARRAY['games']);
		PERFORM mm.pool_settings_number(v -> 'games', 'placement.games', 1, 1000, true);
		IF v ? 'rd' THEN
			PERFORM mm.pool_settings_number(v -> 'rd', 'placement.rd', 0.001, 1e6);
		END IF;
		IF v ? 'each_season' AND jsonb_typeof(v -> 'each_season') IS DISTINCT FROM 'boolean' THEN
			PERFORM mm.raise_pool_settings_error('placement.each_season', 'must be true or false');
		END IF;
	END IF;
	IF settings ? 'tiers' THEN
		v := settings -> 'tiers';
		IF jsonb_typeof(v) IS DISTINCT FROM 'array' OR jsonb_array_length(v) NOT BETWEEN 1 AND 50 THEN
			PERFORM mm.raise_pool_settings_error('tiers', 'must be an array of 1 to 50 tiers, lowest first');
		END IF;
		FOR i IN 0 .. jsonb_array_length(v) - 1 LOOP
			t := v -> i;
			PERFORM mm.pool_settings_keys(t, format('tiers[%s]', i), ARRAY['name', 'min', 'divisions'],
										  ARRAY['name', 'min']);
			tier_name := t ->> 'name';
			IF jsonb_typeof(t -> 'name') IS DISTINCT FROM 'string' OR length(tier_name) NOT BETWEEN 1 AND 64 THEN
				PERFORM mm.raise_pool_settings_error(format('tiers[%s].name', i), 'must be a name of 1 to 64 characters');
			END IF;
			IF tier_name = ANY (names) THEN
				PERFORM mm.raise_pool_settings_error(format('tiers[%s].name', i), format('repeats "%s"', tier_name));
			END IF;
			names := names || tier_name;
			tier_min := mm.pool_settings_number(t -> 'min', format('tiers[%s].min', i), -1e9, 1e9);
			IF previous_min IS NOT NULL AND tier_min <= previous_min THEN
				PERFORM mm.raise_pool_settings_error(format('tiers[%s].min', i),
					format('must be above tiers[%s].min (%s): tiers go from the lowest to the highest', i - 1, previous_min));
			END IF;
			previous_min := tier_min;
			IF t ? 'divisions' THEN
				PERFORM mm.pool_settings_number(t -> 'divisions', format('tiers[%s].divisions', i), 1, 10, true);
				IF i = jsonb_array_length(v) - 1 AND (t ->> 'divisions')::integer > 1 THEN
					PERFORM mm.raise_pool_settings_error(format('tiers[%s].divisions', i),
						'the highest tier has no upper bound to divide: it has one division');
				END IF;
			END IF;
		END LOOP;
	END IF;
	IF settings ? 'demotion' THEN
		IF NOT settings ? 'tiers' THEN
			PERFORM mm.raise_pool_settings_error('demotion', 'needs tiers');
		END IF;
		v := settings -> 'demotion';
		PERFORM mm.pool_settings_keys(v, 'demotion', ARRAY['margin', 'games']);
		IF v = '{}' THEN
			PERFORM mm.raise_pool_settings_error('demotion', 'needs margin or games (or both)');
		END IF;
		IF v ? 'margin' THEN
			PERFORM mm.pool_settings_number(v -> 'margin', 'demotion.margin', 0, 1e6);
		END IF;
		IF v ? 'games' THEN
			PERFORM mm.pool_settings_number(v -> 'games', 'demotion.games', 1, 1000, true);
		END IF;
	END IF;
	IF settings ? 'season_reset' THEN
		v := settings -> 'season_reset';
		PERFORM mm.pool_settings_keys(v, 'season_reset', ARRAY['share', 'rd', 'target']);
		IF v ? 'share' THEN
			PERFORM mm.pool_settings_number(v -> 'share', 'season_reset.share', 0, 1);
		END IF;
		IF v ? 'rd' THEN
			PERFORM mm.pool_settings_number(v -> 'rd', 'season_reset.rd', 0.001, 1e6);
		END IF;
		IF v ? 'target' THEN
			PERFORM mm.pool_settings_number(v -> 'target', 'season_reset.target', -1e9, 1e9);
		END IF;
	END IF;
END
$$;
COMMENT ON FUNCTION mm.check_rating_pool_settings(jsonb) IS
'Internal: checks a rating pool''s ranked-play settings; an error names the JSON path';
REVOKE ALL ON FUNCTION mm.check_rating_pool_settings(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.check_rating_pool_settings(jsonb) TO mm_admin;

-- A player's standing in a pool from its rating: placement games left and
-- the tier, division and progress shown.  value is the hidden rating
-- (Glicko-2, Elo: rating; OpenSkill: mu), uncertainty its RD (OpenSkill:
-- sigma); games counts the pool's games (placement.each_season: this
-- season's).  A provisional player has no tier.  Divisions split a tier's
-- range [min, next tier's min) evenly; division 1 is the highest.  With
-- protect (after a game), a player rises at once but drops below the
-- current division only after falling more than demotion.margin below its
-- lower bound, or after demotion.games games in a row below it; without
-- protect (an import, a season reset) the player is placed where the
-- rating is.  Below the lowest tier's min is the lowest division.
CREATE FUNCTION mm.rating_standing(settings jsonb, value float8, uncertainty float8, games integer,
								   season_games integer, current_tier text, current_division integer,
								   current_games_below integer, protect boolean,
								   OUT placement_games_left integer, OUT tier text, OUT division integer,
								   OUT tier_progress float8, OUT games_below integer)
RETURNS record
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	placement jsonb := settings -> 'placement';
	tiers jsonb := settings -> 'tiers';
	played integer;
	lowers float8[] := '{}';
	uppers float8[] := '{}';
	rung_tier text[] := '{}';
	rung_division integer[] := '{}';
	n integer;
	lo float8;
	hi float8;
	target integer := 1;
	cur integer;
	margin float8 := (settings #>> '{demotion,margin}')::float8;
	limit_games integer := (settings #>> '{demotion,games}')::integer;
BEGIN
	games_below := 0;
	placement_games_left := 0;
	IF placement IS NOT NULL THEN
		played := CASE WHEN (placement ->> 'each_season')::boolean THEN season_games ELSE rating_standing.games END;
		IF coalesce(played, 0) < (placement ->> 'games')::integer
		   AND NOT coalesce(uncertainty <= (placement ->> 'rd')::float8, false) THEN
			placement_games_left := (placement ->> 'games')::integer - coalesce(played, 0);
			RETURN;
		END IF;
	END IF;
	IF tiers IS NULL OR value IS NULL THEN
		RETURN;
	END IF;
	-- the divisions, lowest first
	FOR i IN 0 .. jsonb_array_length(tiers) - 1 LOOP
		n := coalesce((tiers -> i ->> 'divisions')::integer, 1);
		lo := (tiers -> i ->> 'min')::float8;
		hi := (tiers -> (i + 1) ->> 'min')::float8;
		FOR j IN 0 .. n - 1 LOOP
			lowers := lowers || coalesce(lo + j * (hi - lo) / n, lo);
			uppers := uppers || CASE WHEN hi IS NULL THEN NULL ELSE lo + (j + 1) * (hi - lo) / n END;
			rung_tier := rung_tier || (tiers -> i ->> 'name');
			rung_division := rung_division || (n - j);
		END LOOP;
	END LOOP;
	FOR k IN 1 .. cardinality(lowers) LOOP
		IF value >= lowers[k] THEN
			target := k;
		END IF;
		IF rung_tier[k] = current_tier AND rung_division[k] = current_division THEN
			cur := k;
		END IF;
	END LOOP;
	IF protect AND cur IS NOT NULL AND target < cur AND (margin IS NOT NULL OR limit_games IS NOT NULL) THEN
		-- below the current division: held there unless too far or too long
		IF NOT (margin IS NOT NULL AND value < lowers[cur] - margin)
		   AND NOT (limit_games IS NOT NULL AND coalesce(current_games_below, 0) + 1 >= limit_games) THEN
			target := cur;
			games_below := coalesce(current_games_below, 0) + 1;
		END IF;
	END IF;
	tier := rung_tier[target];
	division := rung_division[target];
	IF uppers[target] IS NOT NULL THEN
		tier_progress := least(greatest((value - lowers[target]) / (uppers[target] - lowers[target]), 0), 1);
	END IF;
END
$$;
COMMENT ON FUNCTION mm.rating_standing(jsonb, float8, float8, integer, integer, text, integer, integer, boolean) IS
'Internal: placement games left and the tier, division and progress shown for a rating under a pool''s settings (with demotion protection when protect)';
REVOKE ALL ON FUNCTION mm.rating_standing(jsonb, float8, float8, integer, integer, text, integer, integer, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.rating_standing(jsonb, float8, float8, integer, integer, text, integer, integer, boolean)
	TO mm_director, mm_admin, mm_analyst;

-- Places every player of the pools (a pool and its role pools) where the
-- settings say, without protection: after the settings change.
CREATE FUNCTION mm.place_pool_players(pools text[])
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	changed integer;
	pool_list text[];
	settings_list jsonb[];
	ids text[];
	pool_of text[];
	placement_left integer[];
	tiers text[];
	divisions integer[];
	progress float8[];
BEGIN
	pool_list := ARRAY(SELECT DISTINCT r.pool FROM mm.ratings r WHERE r.pool = ANY (place_pool_players.pools));
	settings_list := ARRAY(SELECT mm.rating_pool_settings(p) FROM unnest(pool_list) WITH ORDINALITY u(p, i) ORDER BY u.i);
	-- each player's standing, computed once (a function in FROM), then
	-- written by player (Citus rule 9)
	SELECT array_agg(x.player_id), array_agg(x.pool), array_agg(st.placement_games_left), array_agg(st.tier),
		   array_agg(st.division), array_agg(st.tier_progress)
	  INTO ids, pool_of, placement_left, tiers, divisions, progress
	  FROM (SELECT r.player_id, r.pool, coalesce(r.rating, r.mu) AS value, coalesce(r.rd, r.sigma) AS uncertainty,
				   r.games, r.season_games
			  FROM mm.ratings r WHERE r.pool = ANY (pool_list)) x
	  JOIN unnest(pool_list, settings_list) c(pool, cfg) ON c.pool = x.pool
	 CROSS JOIN LATERAL mm.rating_standing(c.cfg, x.value, x.uncertainty, x.games, x.season_games,
										   NULL, NULL, 0, false) st;
	UPDATE mm.ratings r
	   SET placement_games_left = u.placement_left, tier = u.tier, division = u.division,
		   tier_progress = u.progress, games_below = 0
	  FROM unnest(ids, pool_of, placement_left, tiers, divisions, progress)
		   u(id, pool, placement_left, tier, division, progress)
	 WHERE r.player_id = u.id AND r.pool = u.pool;
	GET DIAGNOSTICS changed = ROW_COUNT;
	RETURN changed;
END
$$;
COMMENT ON FUNCTION mm.place_pool_players(text[]) IS
'Internal: recomputes the placement and tier of every player of the pools from their ratings (after a settings change)';
REVOKE ALL ON FUNCTION mm.place_pool_players(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.place_pool_players(text[]) TO mm_admin;

-- The pools a pool name covers: itself and its role pools (<pool>.<role>),
-- those with ratings and those a queue rates into.
CREATE FUNCTION mm.pool_and_role_pools(pool text)
RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN ARRAY(SELECT DISTINCT r.pool FROM mm.ratings r
				  WHERE r.pool = pool_and_role_pools.pool
					 OR (strpos(pool_and_role_pools.pool, '.') = 0
						 AND left(r.pool, length(pool_and_role_pools.pool) + 1) = pool_and_role_pools.pool || '.')
				 UNION
				 SELECT pool_and_role_pools.pool
				 ORDER BY 1);
END
$$;
COMMENT ON FUNCTION mm.pool_and_role_pools(text) IS
'Internal: a rating pool and its role pools (<pool>.<role>)';
REVOKE ALL ON FUNCTION mm.pool_and_role_pools(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.pool_and_role_pools(text) TO mm_admin;

-- Sets a pool's ranked-play settings (replacing the previous ones) and
-- places every player of the pool and its role pools under them.  Returns
-- the settings.  The pool must exist (a queue rates into it, or a player
-- has a rating in it).
CREATE FUNCTION mm.configure_rating_pool(pool text, settings jsonb, now timestamptz DEFAULT pg_catalog.now())
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF configure_rating_pool.pool IS NULL OR configure_rating_pool.settings IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN configure_rating_pool.pool IS NULL THEN 'pool' ELSE 'settings' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(configure_rating_pool.now);
	IF NOT mm.rating_pool_exists(configure_rating_pool.pool) THEN
		RAISE EXCEPTION 'rating pool "%" does not exist', configure_rating_pool.pool
			USING ERRCODE = 'undefined_object',
				  DETAIL = 'No queue rates into it and no player has a rating in it.',
				  HINT = 'Name the pool in a queue''s "rating" first.';
	END IF;
	PERFORM mm.check_rating_pool_settings(configure_rating_pool.settings);
	INSERT INTO mm.rating_pools AS p (pool, settings, updated_at)
	VALUES (configure_rating_pool.pool, configure_rating_pool.settings, configure_rating_pool.now)
	ON CONFLICT ON CONSTRAINT rating_pools_pkey DO UPDATE
	   SET settings = excluded.settings, updated_at = excluded.updated_at;
	PERFORM mm.place_pool_players(mm.pool_and_role_pools(configure_rating_pool.pool));
	RETURN configure_rating_pool.settings;
END
$$;
COMMENT ON FUNCTION mm.configure_rating_pool(text, jsonb, timestamptz) IS
'Sets a rating pool''s ranked-play settings (seed, placement, tiers, demotion, season_reset) and places its players under them';
REVOKE ALL ON FUNCTION mm.configure_rating_pool(text, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.configure_rating_pool(text, jsonb, timestamptz) TO mm_admin;

-- mm.set_ratings's checks of its arrays, each error naming the element
-- (player_ids[3]): apart, so that the import reads as check, read, compute,
-- write.  Called by mm.set_ratings alone (as its owner): granted to no one.
CREATE FUNCTION mm.set_ratings_check(pool text, rating_system text, n integer, player_ids text[],
									 ratings float8[], rds float8[], volatilities float8[])
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	bad integer;
	dup text;
BEGIN
	IF n > 1000000 THEN
		RAISE EXCEPTION 'player_ids has too many elements' USING ERRCODE = 'program_limit_exceeded',
			DETAIL = format('Got %s; import at most 1000000 ratings per call.', n);
	END IF;
	IF array_ndims(set_ratings_check.player_ids) > 1 OR array_ndims(set_ratings_check.ratings) > 1
	   OR array_ndims(set_ratings_check.rds) > 1 OR array_ndims(set_ratings_check.volatilities) > 1 THEN
		RAISE EXCEPTION 'player_ids, ratings, rds and volatilities must be one-dimensional arrays'
			USING ERRCODE = 'array_subscript_error';
	END IF;
	IF coalesce(cardinality(set_ratings_check.ratings), 0) <> n
	   OR (set_ratings_check.rds IS NOT NULL AND cardinality(set_ratings_check.rds) <> n)
	   OR (set_ratings_check.volatilities IS NOT NULL AND cardinality(set_ratings_check.volatilities) <> n) THEN
		RAISE EXCEPTION 'player_ids, ratings, rds and volatilities must have the same length'
			USING ERRCODE = 'array_subscript_error';
	END IF;
	SELECT u.i INTO bad FROM unnest(set_ratings_check.player_ids) WITH ORDINALITY u(id, i)
	 WHERE u.id IS NULL OR u.id = '' ORDER BY u.i LIMIT 1;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'player_ids[%] must be a player id, not %', bad,
			CASE WHEN set_ratings_check.player_ids[bad] IS NULL THEN 'NULL' ELSE 'empty' END
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT u.i, u.id INTO bad, dup
	  FROM (SELECT x.id, x.i, row_number() OVER (PARTITION BY x.id ORDER BY x.i) AS k
			  FROM unnest(set_ratings_check.player_ids) WITH ORDINALITY x(id, i)) u
	 WHERE u.k > 1 ORDER BY u.i LIMIT 1;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'player_ids[%] repeats "%"', bad, dup USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT u.i INTO bad FROM unnest(set_ratings_check.ratings) WITH ORDINALITY u(v, i)
	 WHERE u.v IS NULL OR u.v IN ('NaN', 'Infinity', '-Infinity') OR abs(u.v) > 1e9 ORDER BY u.i LIMIT 1;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'ratings[%] must be a finite number from -1e9 to 1e9', bad
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('Got %s.', coalesce(set_ratings_check.ratings[bad]::text, 'NULL'));
	END IF;
	IF rating_system = 'elo' AND (EXISTS (SELECT FROM unnest(set_ratings_check.rds) x WHERE x IS NOT NULL)
								  OR EXISTS (SELECT FROM unnest(set_ratings_check.volatilities) x WHERE x IS NOT NULL)) THEN
		RAISE EXCEPTION 'rating pool "%" uses Elo, which has no rd or volatility', set_ratings_check.pool
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass NULL for rds and volatilities.';
	END IF;
	IF rating_system = 'openskill' AND EXISTS (SELECT FROM unnest(set_ratings_check.volatilities) x WHERE x IS NOT NULL) THEN
		RAISE EXCEPTION 'rating pool "%" uses OpenSkill, which has no volatility', set_ratings_check.pool
			USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass the ratings as mu and the rds as sigma.';
	END IF;
	SELECT u.i INTO bad FROM unnest(set_ratings_check.rds) WITH ORDINALITY u(v, i)
	 WHERE u.v IS NOT NULL AND (u.v IN ('NaN', 'Infinity', '-Infinity') OR u.v <= 0 OR u.v > 1e6) ORDER BY u.i LIMIT 1;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'rds[%] must be greater than 0 and at most 1e6', bad
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('Got %s.', set_ratings_check.rds[bad]);
	END IF;
	SELECT u.i INTO bad FROM unnest(set_ratings_check.volatilities) WITH ORDINALITY u(v, i)
	 WHERE u.v IS NOT NULL AND (u.v IN ('NaN', 'Infinity', '-Infinity') OR u.v <= 0 OR u.v > 10) ORDER BY u.i LIMIT 1;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'volatilities[%] must be greater than 0 and at most 10', bad
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('Got %s.', set_ratings_check.volatilities[bad]);
	END IF;
END
$$;
COMMENT ON FUNCTION mm.set_ratings_check(text, text, integer, text[], float8[], float8[], float8[]) IS
'Internal (mm.set_ratings): refuses arrays that are not one finite rating (and rd, volatility) per distinct player id';
REVOKE ALL ON FUNCTION mm.set_ratings_check(text, text, integer, text[], float8[], float8[], float8[]) FROM PUBLIC;

-- Imports ratings into a pool: one row per player (rating, rd, volatility;
-- NULL rd or volatility: the player's current one, else the system's
-- default).  Glicko-2 takes all three, Elo the rating alone, OpenSkill the
-- rating as mu and rd as sigma.  Each change is a mm.rating_history row
-- with reason 'import'; the player is placed where the new rating is
-- (placement: an RD at or under placement.rd places at once).  games and
-- wins stay.  Rows are written in player order.
CREATE FUNCTION mm.set_ratings(pool text, player_ids text[], ratings float8[], rds float8[] DEFAULT NULL,
							   volatilities float8[] DEFAULT NULL, now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
#variable_conflict error
DECLARE
	rating_system text;
	n integer;
	cfg jsonb;
	-- per player, in input order: the values before and after, the standing
	a_id text[];
	a_old_rating float8[];
	a_new_rating float8[];
	a_old_rd float8[];
	a_new_rd float8[];
	a_old_mu float8[];
	a_new_mu float8[];
	a_old_sigma float8[];
	a_new_sigma float8[];
	a_old_vol float8[];
	a_new_vol float8[];
	a_pgl integer[];
	a_tier text[];
	a_division integer[];
	a_progress float8[];
	a_games integer[];
	a_season_games integer[];
BEGIN
	IF set_ratings.pool IS NULL OR set_ratings.player_ids IS NULL OR set_ratings.ratings IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN set_ratings.pool IS NULL THEN 'pool' WHEN set_ratings.player_ids IS NULL THEN 'player_ids'
				 ELSE 'ratings' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(set_ratings.now);
	rating_system := mm.rating_pool_system(set_ratings.pool);
	IF rating_system IS NULL OR NOT mm.rating_pool_exists(set_ratings.pool) THEN
		RAISE EXCEPTION 'rating pool "%" does not exist', set_ratings.pool
			USING ERRCODE = 'undefined_object',
				  DETAIL = 'No queue rates into it, so its rating system is unknown.',
				  HINT = 'Name the pool in a queue''s "rating" first.';
	END IF;
	n := coalesce(cardinality(set_ratings.player_ids), 0);
	PERFORM mm.set_ratings_check(set_ratings.pool, rating_system, n, set_ratings.player_ids, set_ratings.ratings,
								 set_ratings.rds, set_ratings.volatilities);
	cfg := mm.rating_pool_settings(set_ratings.pool);

	-- the players' current rows locked in player order (as mm.report_result)
	IF NOT mm.tables_are_distributed() THEN
		PERFORM FROM mm.ratings r
		 WHERE r.pool = set_ratings.pool AND r.player_id = ANY (set_ratings.player_ids)
		 ORDER BY r.player_id FOR UPDATE;
	END IF;
	-- read first into arrays, computed, then written (Citus rule 9)
	-- the players' current rows, read first
	SELECT array_agg(o.rating ORDER BY u.i), array_agg(o.rd ORDER BY u.i), array_agg(o.volatility ORDER BY u.i),
		   array_agg(o.mu ORDER BY u.i), array_agg(o.sigma ORDER BY u.i),
		   array_agg(coalesce(o.games, 0) ORDER BY u.i), array_agg(coalesce(o.season_games, 0) ORDER BY u.i)
	  INTO a_old_rating, a_old_rd, a_old_vol, a_old_mu, a_old_sigma, a_games, a_season_games
	  FROM unnest(set_ratings.player_ids) WITH ORDINALITY u(id, i)
	  LEFT JOIN mm.ratings o ON o.pool = set_ratings.pool AND o.player_id = u.id;
	-- the new values and the standing they give (a function in FROM: once
	-- per player), from the arrays alone
	SELECT array_agg(x.new_rating ORDER BY x.i), array_agg(x.new_rd ORDER BY x.i),
		   array_agg(x.new_volatility ORDER BY x.i), array_agg(x.new_mu ORDER BY x.i),
		   array_agg(x.new_sigma ORDER BY x.i), array_agg(st.placement_games_left ORDER BY x.i),
		   array_agg(st.tier ORDER BY x.i), array_agg(st.division ORDER BY x.i), array_agg(st.tier_progress ORDER BY x.i)
	  INTO a_new_rating, a_new_rd, a_new_vol, a_new_mu, a_new_sigma, a_pgl, a_tier, a_division, a_progress
	  FROM (SELECT u.i, u.rating, u.games, u.season_games,
				   CASE WHEN rating_system IN ('glicko2', 'elo') THEN u.rating END AS new_rating,
				   CASE WHEN rating_system = 'glicko2' THEN coalesce(u.rd, u.old_rd, 350) END AS new_rd,
				   CASE WHEN rating_system = 'glicko2' THEN coalesce(u.volatility, u.old_volatility, 0.06) END
					   AS new_volatility,
				   CASE WHEN rating_system = 'openskill' THEN u.rating END AS new_mu,
				   CASE WHEN rating_system = 'openskill' THEN coalesce(u.rd, u.old_sigma, 25 / 3.0) END AS new_sigma
			  FROM ROWS FROM (unnest(set_ratings.ratings), unnest(set_ratings.rds), unnest(set_ratings.volatilities),
							  unnest(a_old_rd), unnest(a_old_vol), unnest(a_old_sigma), unnest(a_games),
							  unnest(a_season_games)) WITH ORDINALITY
				   u(rating, rd, volatility, old_rd, old_volatility, old_sigma, games, season_games, i)) x
	 CROSS JOIN LATERAL mm.rating_standing(cfg, x.rating, coalesce(x.new_rd, x.new_sigma), x.games, x.season_games,
										   NULL, NULL, 0, false) st;
	a_id := set_ratings.player_ids;
	INSERT INTO mm.ratings AS r (player_id, pool, rating, rd, volatility, mu, sigma, games, wins, updated_at,
								 placement_games_left, tier, division, tier_progress, games_below)
	SELECT u.id, set_ratings.pool, u.rating, u.rd, u.volatility, u.mu, u.sigma, 0, 0, set_ratings.now,
		   u.pgl, u.tier, u.division, u.progress, 0
	  FROM unnest(a_id, a_new_rating, a_new_rd, a_new_vol, a_new_mu, a_new_sigma, a_pgl, a_tier, a_division, a_progress)
		   u(id, rating, rd, volatility, mu, sigma, pgl, tier, division, progress)
	 ORDER BY u.id
	ON CONFLICT ON CONSTRAINT ratings_pkey DO UPDATE
	   SET rating = excluded.rating, rd = excluded.rd, volatility = excluded.volatility, mu = excluded.mu,
		   sigma = excluded.sigma, updated_at = excluded.updated_at,
		   placement_games_left = excluded.placement_games_left, tier = excluded.tier,
		   division = excluded.division, tier_progress = excluded.tier_progress, games_below = 0;
	INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
								   mu_before, mu_after, sigma_before, sigma_after, volatility_before,
								   volatility_after, created_at, reason)
	SELECT u.id, set_ratings.pool, NULL, u.old_rating, u.new_rating, u.old_rd, u.new_rd, u.old_mu, u.new_mu,
		   u.old_sigma, u.new_sigma, u.old_vol, u.new_vol, set_ratings.now, 'import'
	  FROM unnest(a_id, a_old_rating, a_new_rating, a_old_rd, a_new_rd, a_old_mu, a_new_mu, a_old_sigma, a_new_sigma,
				  a_old_vol, a_new_vol)
		   u(id, old_rating, new_rating, old_rd, new_rd, old_mu, new_mu, old_sigma, new_sigma, old_vol, new_vol);
	RETURN n;
END
$$;
COMMENT ON FUNCTION mm.set_ratings(text, text[], float8[], float8[], float8[], timestamptz) IS
'Imports ratings into a pool (one per player; OpenSkill: rating as mu, rd as sigma), each recorded in mm.rating_history as an import; returns how many';
REVOKE ALL ON FUNCTION mm.set_ratings(text, text[], float8[], float8[], float8[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.set_ratings(text, text[], float8[], float8[], float8[], timestamptz) TO mm_admin;

-- One player's import: mm.set_ratings with one row.
CREATE FUNCTION mm.set_rating(player_id text, pool text, rating float8, rd float8 DEFAULT NULL,
							  volatility float8 DEFAULT NULL, now timestamptz DEFAULT pg_catalog.now())
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	detail text;
BEGIN
	IF set_rating.player_id IS NULL THEN
		RAISE EXCEPTION 'player_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF set_rating.rating IS NULL THEN
		RAISE EXCEPTION 'rating must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	BEGIN
		PERFORM mm.set_ratings(set_rating.pool, ARRAY[set_rating.player_id], ARRAY[set_rating.rating],
							   ARRAY[set_rating.rd], ARRAY[set_rating.volatility], set_rating.now);
	EXCEPTION WHEN invalid_parameter_value THEN
		-- the one row's errors name the argument, not an element
		GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
		RAISE EXCEPTION '%', regexp_replace(regexp_replace(SQLERRM, '^(rating|rd|volatilit)(s|ies)\[1\]', '\1'),
											'^volatilit\M', 'volatility')
			USING ERRCODE = 'invalid_parameter_value', DETAIL = coalesce(detail, '');
	END;
END
$$;
COMMENT ON FUNCTION mm.set_rating(text, text, float8, float8, float8, timestamptz) IS
'Imports one player''s rating into a pool (OpenSkill: rating as mu, rd as sigma), recorded in mm.rating_history as an import';
REVOKE ALL ON FUNCTION mm.set_rating(text, text, float8, float8, float8, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.set_rating(text, text, float8, float8, float8, timestamptz) TO mm_admin;

-- Starts a season of a pool (and of its role pools): the running season
-- closes (each player's final rating and standing kept in
-- mm.season_ratings), then every rating gets a soft reset: pulled toward
-- the pool's mean (season_reset.target, else the mean of the pool's
-- ratings) by season_reset.share (default 0.5), its uncertainty raised to
-- at least season_reset.rd (Glicko-2 RD, default 250; OpenSkill sigma: the
-- same share of the way back to 25/3), the season's games set to 0, and
-- the player placed anew (placement.each_season: placements again).  One
-- mm.rating_history row per player reset (reason season_reset).  A rating
-- imported or seeded after the running season started (before the first
-- season: at any time) is kept as it is: it is already this season's
-- estimate, and a reset would throw an import away (RD back to 250,
-- provisional again); it only starts the season's count.  Returns the
-- number of ratings reset.  Rows are locked in player order, as
-- mm.report_result locks them: a result reported meanwhile counts wholly
-- in the old season or wholly in the new one.
CREATE FUNCTION mm.start_season(pool text, name text, now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	pools text[];
	running text;
	running_started timestamptz;
	cfg jsonb;
	share float8;
	reset_rd float8;
	target float8;
	changed integer;
BEGIN
	IF start_season.pool IS NULL OR start_season.name IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN start_season.pool IS NULL THEN 'pool' ELSE 'name' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(start_season.now);
	IF length(start_season.name) NOT BETWEEN 1 AND 64 THEN
		RAISE EXCEPTION 'name must have 1 to 64 characters' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT mm.rating_pool_exists(start_season.pool) THEN
		RAISE EXCEPTION 'rating pool "%" does not exist', start_season.pool
			USING ERRCODE = 'undefined_object',
				  DETAIL = 'No queue rates into it and no player has a rating in it.';
	END IF;
	-- one season start of a pool at a time
	INSERT INTO mm.rating_pools (pool, updated_at) VALUES (start_season.pool, start_season.now)
	ON CONFLICT DO NOTHING;
	SELECT p.season, p.season_started_at, p.settings INTO running, running_started, cfg
	  FROM mm.rating_pools p WHERE p.pool = start_season.pool FOR UPDATE;
	IF EXISTS (SELECT 1 FROM mm.seasons s WHERE s.pool = start_season.pool AND s.name = start_season.name) THEN
		RAISE EXCEPTION 'season "%" of rating pool "%" already exists', start_season.name, start_season.pool
			USING ERRCODE = 'unique_violation';
	END IF;
	IF EXISTS (SELECT 1 FROM mm.seasons s WHERE s.pool = start_season.pool AND s.started_at > start_season.now) THEN
		RAISE EXCEPTION 'now (%) is before the start of the running season of rating pool "%"',
			start_season.now, start_season.pool USING ERRCODE = 'invalid_parameter_value';
	END IF;
	share := coalesce((cfg #>> '{season_reset,share}')::float8, 0.5);
	reset_rd := coalesce((cfg #>> '{season_reset,rd}')::float8, 250);
	target := (cfg #>> '{season_reset,target}')::float8;
	pools := mm.pool_and_role_pools(start_season.pool);

	-- the ratings locked in player order (on Citus the update below locks
	-- them as it goes: Citus rule 8)
	IF NOT mm.tables_are_distributed() THEN
		PERFORM FROM mm.ratings r WHERE r.pool = ANY (pools) ORDER BY r.player_id, r.pool FOR UPDATE;
	END IF;
	IF running IS NOT NULL THEN
		INSERT INTO mm.season_ratings (player_id, pool, season, rating, rd, volatility, mu, sigma, games, wins,
									   season_games, placement_games_left, tier, division, tier_progress, ended_at)
		SELECT r.player_id, r.pool, running, r.rating, r.rd, r.volatility, r.mu, r.sigma, r.games, r.wins,
			   r.season_games, r.placement_games_left, r.tier, r.division, r.tier_progress, start_season.now
		  FROM mm.ratings r WHERE r.pool = ANY (pools);
		UPDATE mm.seasons s SET ended_at = start_season.now WHERE s.pool = start_season.pool AND s.ended_at IS NULL;
	END IF;
	INSERT INTO mm.seasons (pool, name, started_at, settings)
	VALUES (start_season.pool, start_season.name, start_season.now, cfg);
	UPDATE mm.rating_pools p SET season = start_season.name, season_started_at = start_season.now,
		   updated_at = start_season.now
	 WHERE p.pool = start_season.pool;

	-- the soft reset, per pool toward its mean; the values before are read
	-- first and handed through (Citus rule 9).
	-- A rating imported or seeded in the running season (before the first:
	-- ever) is kept; the mean counts it.
	WITH old AS (
		SELECT r.player_id, r.pool, r.rating, r.rd, r.mu, r.sigma,
			   EXISTS (SELECT FROM mm.rating_history h
						WHERE h.player_id = r.player_id AND h.pool = r.pool AND h.reason IN ('import', 'seed')
						  AND (running_started IS NULL OR h.created_at > running_started)) AS kept
		  FROM mm.ratings r WHERE r.pool = ANY (pools)
	), means AS (
		SELECT o.pool, coalesce(target, avg(o.rating)) AS mean_rating, coalesce(target, avg(o.mu)) AS mean_mu
		  FROM old o GROUP BY o.pool
	), reset AS (
		UPDATE mm.ratings r
		   SET rating = CASE WHEN o.kept THEN r.rating
							 WHEN r.rating IS NOT NULL THEN m.mean_rating + (r.rating - m.mean_rating) * (1 - share) END,
			   rd = CASE WHEN o.kept THEN r.rd
						 WHEN r.rd IS NOT NULL THEN least(greatest(r.rd, reset_rd), greatest(r.rd, 350)) END,
			   mu = CASE WHEN o.kept THEN r.mu
						 WHEN r.mu IS NOT NULL THEN m.mean_mu + (r.mu - m.mean_mu) * (1 - share) END,
			   sigma = CASE WHEN o.kept THEN r.sigma
							WHEN r.sigma IS NOT NULL THEN r.sigma + (greatest(25 / 3.0 - r.sigma, 0)) * share END,
			   season_games = 0, games_below = 0, updated_at = start_season.now
		  FROM means m, old o
		 WHERE r.pool = m.pool AND o.pool = r.pool AND o.player_id = r.player_id
		RETURNING r.player_id, r.pool, o.kept, o.rating AS rating_before, r.rating, o.rd AS rd_before, r.rd,
				  r.volatility, o.mu AS mu_before, r.mu, o.sigma AS sigma_before, r.sigma
	)
	INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
								   mu_before, mu_after, sigma_before, sigma_after, volatility_before,
								   volatility_after, created_at, reason)
	SELECT x.player_id, x.pool, NULL, x.rating_before, x.rating, x.rd_before, x.rd, x.mu_before, x.mu,
		   x.sigma_before, x.sigma, x.volatility, x.volatility, start_season.now, 'season_reset'
	  FROM reset x WHERE NOT x.kept;
	GET DIAGNOSTICS changed = ROW_COUNT;
	-- placed anew under the settings (placements again with each_season)
	PERFORM mm.place_pool_players(pools);
	RETURN changed;
END
$$;
COMMENT ON FUNCTION mm.start_season(text, text, timestamptz) IS
'Closes the running season of a rating pool (and its role pools), keeping each player''s final standing, and starts the named one with a soft reset of every rating not imported or seeded during the closing season; returns how many were reset';
REVOKE ALL ON FUNCTION mm.start_season(text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.start_season(text, text, timestamptz) TO mm_admin;

-- The closed seasons' leaderboards: each player's final standing per pool
-- and season, ranked among the placed players by conservative rating.
CREATE VIEW mm.season_leaderboard AS
SELECT s.pool, s.season, s.player_id, s.conservative_rating,
	   CASE WHEN s.placement_games_left OPERATOR(pg_catalog.=) 0
			THEN pg_catalog.rank() OVER (PARTITION BY s.pool, s.season,
											s.placement_games_left OPERATOR(pg_catalog.=) 0
										 ORDER BY s.conservative_rating DESC NULLS LAST) END AS rank,
	   s.rating, s.rd, s.mu, s.sigma, s.games, s.wins, s.season_games,
	   s.placement_games_left OPERATOR(pg_catalog.>) 0 AS provisional, s.tier, s.division, s.tier_progress,
	   s.ended_at
  FROM (SELECT r.*,
			   mm.conservative_rating(r.rating, r.rd, r.mu, r.sigma) AS conservative_rating
		  FROM mm.season_ratings r) s;
COMMENT ON VIEW mm.season_leaderboard IS
'Per rating pool and closed season, each player''s final standing, ranked among the placed players by conservative rating';
GRANT SELECT ON TABLE mm.season_leaderboard TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.season_leaderboard TO mm_admin;

-- A player's view: per pool, the rating, whether still in placements (and
-- how many games are left), the tier, division and progress shown, and the
-- season.  For the game backend (mm_director): one player's rows only.
CREATE FUNCTION mm.get_player_ratings(player_id text)
RETURNS TABLE (pool text, season text, rating float8, rd float8, mu float8, sigma float8, games integer,
			   wins integer, season_games integer, provisional boolean, placement_games_left integer,
			   tier text, division integer, tier_progress float8)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF get_player_ratings.player_id IS NULL THEN
		RAISE EXCEPTION 'player_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	RETURN QUERY
	SELECT r.pool, coalesce((SELECT p.season FROM mm.rating_pools p WHERE p.pool = r.pool),
							(SELECT p.season FROM mm.rating_pools p WHERE p.pool = split_part(r.pool, '.', 1))),
		   r.rating, r.rd, r.mu, r.sigma, r.games, r.wins, r.season_games, r.placement_games_left > 0,
		   r.placement_games_left, r.tier, r.division, r.tier_progress
	  FROM mm.ratings r
	 WHERE r.player_id = get_player_ratings.player_id
	 ORDER BY r.pool;
END
$$;
COMMENT ON FUNCTION mm.get_player_ratings(text) IS
'A player''s ratings per pool with placement, tier, division, progress and season: what a game shows the player';
REVOKE ALL ON FUNCTION mm.get_player_ratings(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_player_ratings(text) TO mm_director, mm_admin, mm_analyst;

-- Placement progress per pool: players placed and provisional, and the
-- provisional players' games left (on average and in all).
CREATE VIEW mm.placement_progress AS
SELECT r.pool, pg_catalog.count(*) AS players,
	   pg_catalog.count(*) FILTER (WHERE r.placement_games_left OPERATOR(pg_catalog.=) 0) AS placed,
	   pg_catalog.count(*) FILTER (WHERE r.placement_games_left OPERATOR(pg_catalog.>) 0) AS provisional,
	   CAST(pg_catalog.avg(r.placement_games_left) FILTER (WHERE r.placement_games_left OPERATOR(pg_catalog.>) 0)
			AS pg_catalog.float8) AS avg_games_left,
	   pg_catalog.sum(r.placement_games_left) AS games_left
  FROM mm.ratings r
 GROUP BY r.pool;
COMMENT ON VIEW mm.placement_progress IS
'Per rating pool: players, placed, provisional, and the provisional players'' placement games left';
GRANT SELECT ON TABLE mm.placement_progress TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.placement_progress TO mm_admin;

-- Tier distribution per pool: the placed players per tier and division,
-- and their share of the pool's placed players; each tier with its
-- position in the pool's settings (tier_index, 1 = the lowest), highest
-- tier and division first.
CREATE VIEW mm.tier_distribution AS
SELECT d.pool, t.tier_index, d.tier, d.division, d.players,
	   d.players::pg_catalog.float8 OPERATOR(pg_catalog./)
		   pg_catalog.sum(d.players) OVER (PARTITION BY d.pool) AS share
  FROM (SELECT r.pool, r.tier, r.division, pg_catalog.count(*) AS players
		  FROM mm.ratings r
		 WHERE r.tier IS NOT NULL
		 GROUP BY r.pool, r.tier, r.division) d
  LEFT JOIN LATERAL (
		SELECT CAST(e.i AS integer) AS tier_index
		  FROM pg_catalog.jsonb_array_elements(mm.rating_pool_settings(d.pool) OPERATOR(pg_catalog.->) 'tiers')
			   WITH ORDINALITY e(v, i)
		 WHERE e.v OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) d.tier) t ON true
 ORDER BY d.pool, t.tier_index DESC NULLS LAST, d.division;
COMMENT ON VIEW mm.tier_distribution IS
'Per rating pool, tier (with its position in the settings, 1 = lowest) and division, highest first: the placed players shown there and their share of the pool';
GRANT SELECT ON TABLE mm.tier_distribution TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.tier_distribution TO mm_admin;
