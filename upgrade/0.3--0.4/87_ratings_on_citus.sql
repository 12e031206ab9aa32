
-- ===================================================================
-- Section: rating decay on Citus (docs/scale-out.md)
-- ===================================================================
--
-- The pool's idle players are locked in player order on one node only;
-- on Citus, which cannot lock across shards in one order, the update skips
-- a rating that changed since it was read.  mm.rating_pool_exists is
-- PL/pgSQL, which Citus can plan.

CREATE OR REPLACE FUNCTION mm.rating_pool_exists(pool text)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN EXISTS (SELECT 1 FROM mm.ratings r WHERE r.pool = rating_pool_exists.pool)
		OR EXISTS (SELECT 1 FROM mm.queues q
					WHERE q.config ? 'rating'
					  AND coalesce(q.config #>> '{rating,pool}', q.name) = rating_pool_exists.pool);
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
								   volatility_before, volatility_after, created_at)
	SELECT u.player_id, decay_ratings.pool, NULL, u.rating, u.rating, u.rd_before, u.rd_after,
		   u.mu, u.mu, u.sigma_before, u.sigma_after, u.volatility, u.volatility, decay_ratings.now
	  FROM updated u;
	GET DIAGNOSTICS changed = ROW_COUNT;
	RETURN changed;
END
$$;
