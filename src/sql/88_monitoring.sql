-- Monitoring (docs/monitoring.md): what Prometheus's postgres_exporter reads
-- through monitoring/queries.yaml.  mm.tick_runs keeps, per queue, the runs
-- of the tick loop (how many, how long, how many failed, when the last one
-- succeeded), written by mm.record_tick; mm.queue_monitoring gives per queue
-- every figure the exporter shows (searching tickets, waits, matches per
-- minute, autofill rate, low-priority pool, the tick runs).  New in 0.4: part
-- of the upgrade as it is (MM_NEW_IN_VERSION).

-- One row per queue, updated in place by each recorded tick: the tick stays
-- one upsert slower, and the table stays as small as the list of queues.
-- The counters only grow (Prometheus counters); a failed tick counts in
-- ticks_total and failures_total.  Sharded by queue on Citus.
CREATE TABLE mm.tick_runs (
	queue text PRIMARY KEY,
	ticks_total bigint NOT NULL DEFAULT 0,
	failures_total bigint NOT NULL DEFAULT 0,
	-- failed ticks since the last one that succeeded
	consecutive_failures integer NOT NULL DEFAULT 0,
	duration_seconds_total float8 NOT NULL DEFAULT 0,
	last_duration_seconds float8,
	last_started_at timestamptz,
	last_success_at timestamptz,
	last_failure_at timestamptz,
	-- the SQLSTATE of the last failure
	last_error_sqlstate text
);
COMMENT ON TABLE mm.tick_runs IS
	'Per queue, the recorded ticks (mm.record_tick): counts, durations, failures, the last success';
GRANT SELECT ON TABLE mm.tick_runs TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.tick_runs TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.tick_runs', '');

-- Records one tick of a queue, as the code that calls mm.tick sees it: when
-- it started and ended, and the SQLSTATE it failed with (NULL: it
-- succeeded).  The caller records a failure after catching it (a failed
-- tick's own writes are rolled back).  Returns false, recording nothing,
-- for a queue that no longer exists.  SECURITY DEFINER: the ticker writes
-- its own figures and nothing else.
CREATE FUNCTION mm.record_tick(queue text, started_at timestamptz, finished_at timestamptz,
							   error_sqlstate text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	failed constant integer := CASE WHEN error_sqlstate IS NULL THEN 0 ELSE 1 END;
	seconds float8;
BEGIN
	IF queue IS NULL OR started_at IS NULL OR finished_at IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN queue IS NULL THEN 'queue' WHEN started_at IS NULL THEN 'started_at' ELSE 'finished_at' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(started_at) OR NOT isfinite(finished_at) THEN
		RAISE EXCEPTION 'started_at and finished_at must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF finished_at < started_at THEN
		RAISE EXCEPTION 'finished_at must not be before started_at'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('started_at is %s, finished_at %s.', started_at, finished_at);
	END IF;
	IF error_sqlstate !~ '^[0-9A-Z]{5}$' THEN
		RAISE EXCEPTION 'error_sqlstate must be a SQLSTATE of five digits or upper-case letters'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = format('Got %L.', error_sqlstate);
	END IF;
	IF NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = record_tick.queue) THEN
		RETURN false;
	END IF;
	seconds := extract(epoch FROM finished_at) - extract(epoch FROM started_at);
	INSERT INTO mm.tick_runs AS r (queue, ticks_total, failures_total, consecutive_failures,
								   duration_seconds_total, last_duration_seconds, last_started_at,
								   last_success_at, last_failure_at, last_error_sqlstate)
	VALUES (queue, 1, failed, failed, seconds, seconds, started_at,
			CASE WHEN failed = 0 THEN finished_at END, CASE WHEN failed = 1 THEN finished_at END,
			error_sqlstate)
	ON CONFLICT ON CONSTRAINT tick_runs_pkey DO UPDATE
	   SET ticks_total = r.ticks_total + 1,
		   failures_total = r.failures_total + failed,
		   consecutive_failures = CASE WHEN failed = 0 THEN 0 ELSE r.consecutive_failures + 1 END,
		   duration_seconds_total = r.duration_seconds_total + seconds,
		   last_duration_seconds = seconds,
		   last_started_at = EXCLUDED.last_started_at,
		   last_success_at = coalesce(EXCLUDED.last_success_at, r.last_success_at),
		   last_failure_at = coalesce(EXCLUDED.last_failure_at, r.last_failure_at),
		   last_error_sqlstate = coalesce(EXCLUDED.last_error_sqlstate, r.last_error_sqlstate);
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.record_tick(text, timestamptz, timestamptz, text) IS
'Records one tick of a queue (start, end, the SQLSTATE it failed with or NULL) in mm.tick_runs; false for a queue that does not exist';
REVOKE ALL ON FUNCTION mm.record_tick(text, timestamptz, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.record_tick(text, timestamptz, timestamptz, text) TO mm_ticker;

-- A deleted queue's tick runs go with it (on Citus, where this fires on
-- the reference table's copies, the rows stay until the queue's name is
-- used again; mm.queue_monitoring shows only existing queues).
CREATE FUNCTION mm.queues_after_delete_tick_runs() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		RETURN NULL;
	END IF;
	DELETE FROM mm.tick_runs r USING old_queues o WHERE r.queue = o.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete_tick_runs() IS
	'Trigger: deletes the tick runs of deleted queues';
REVOKE ALL ON FUNCTION mm.queues_after_delete_tick_runs() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queues_after_delete_tick_runs() TO mm_admin;
CREATE TRIGGER queues_after_delete_tick_runs AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_tick_runs();

-- Per queue, what an operator watches, over (now - time_window, now]:
-- the tickets and players searching at now, the wait (created to matched)
-- p50 and p95 of the tickets matched in the window, the matches formed per
-- minute, the share of the role players of the window's matches who were
-- autofilled (NULL without roles), the players owing low-priority games,
-- and the queue's row of mm.tick_runs (NULL figures: never recorded).
-- Unrounded: Prometheus keeps float8.  Its cost follows the window's rows:
-- each part reads an index on (queue, time), and the low-priority pool its
-- partial index.  Each part is an aggregate of its
-- own, joined on the queue (the metrics' rule for Citus, 80_metrics.sql).
CREATE FUNCTION mm.queue_monitoring(time_window interval, now timestamptz DEFAULT pg_catalog.now())
RETURNS TABLE (queue text, searching_tickets bigint, searching_players bigint,
			   wait_p50_seconds float8, wait_p95_seconds float8, tickets_matched bigint,
			   matches_per_minute float8, autofill_rate float8, low_priority_players bigint,
			   ticks_total bigint, tick_failures_total bigint, tick_consecutive_failures integer,
			   tick_duration_seconds_total float8, last_tick_duration_seconds float8,
			   last_tick_success_timestamp_seconds float8, seconds_since_last_tick_success float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	covered text[] := mm.metrics_scope(NULL, queue_monitoring.time_window, queue_monitoring.now);
	since constant timestamptz := queue_monitoring.now - queue_monitoring.time_window;
	minutes constant float8 := extract(epoch FROM queue_monitoring.time_window) / 60;
BEGIN
	RETURN QUERY
	SELECT q.name, coalesce(s.tickets, 0), coalesce(s.players, 0), w.p50, w.p95, coalesce(w.n, 0),
		   coalesce(m.n, 0) / minutes, a.rate, coalesce(l.n, 0),
		   r.ticks_total, r.failures_total, r.consecutive_failures, r.duration_seconds_total,
		   r.last_duration_seconds, extract(epoch FROM r.last_success_at)::float8,
		   (extract(epoch FROM queue_monitoring.now) - extract(epoch FROM r.last_success_at))::float8
	  FROM unnest(covered) AS q(name)
	  LEFT JOIN (
		-- searching at now (mm.tickets_searching_at's three parts, by queue)
		SELECT x.queue, count(*) AS tickets, sum(jsonb_array_length(x.players)) AS players
		  FROM (SELECT t.queue, t.players FROM mm.tickets t
				 WHERE t.queue = ANY (covered) AND t.status IN ('searching', 'proposed')
				   AND t.created_at <= queue_monitoring.now
				UNION ALL
				SELECT t.queue, t.players FROM mm.tickets t
				 WHERE t.queue = ANY (covered) AND t.matched_at > queue_monitoring.now
				   AND t.created_at <= queue_monitoring.now
				UNION ALL
				SELECT t.queue, t.players FROM mm.tickets t
				 WHERE t.queue = ANY (covered) AND t.status IN ('cancelled', 'timed_out')
				   AND t.updated_at > queue_monitoring.now AND t.created_at <= queue_monitoring.now) x
		 GROUP BY x.queue) s ON s.queue = q.name
	  LEFT JOIN (
		SELECT t.queue, count(*) AS n,
			   percentile_cont(0.5) WITHIN GROUP (ORDER BY (extract(epoch FROM t.matched_at)
															  - extract(epoch FROM t.created_at))::float8) AS p50,
			   percentile_cont(0.95) WITHIN GROUP (ORDER BY (extract(epoch FROM t.matched_at)
															  - extract(epoch FROM t.created_at))::float8) AS p95
		  FROM mm.tickets t
		 WHERE t.queue = ANY (covered)
		   AND t.matched_at > since AND t.matched_at <= queue_monitoring.now
		 GROUP BY t.queue) w ON w.queue = q.name
	  LEFT JOIN (
		SELECT mt.queue, count(*) AS n
		  FROM mm.matches mt
		 WHERE mt.queue = ANY (covered)
		   AND mt.created_at > since AND mt.created_at <= queue_monitoring.now
		 GROUP BY mt.queue) m ON m.queue = q.name
	  LEFT JOIN (
		SELECT mp.queue, avg(mp.autofilled::integer::float8) AS rate
		  FROM mm.match_players mp
		 WHERE mp.queue = ANY (covered) AND mp.role IS NOT NULL
		   AND (mp.match_id, mp.queue) IN (
				SELECT mt.id, mt.queue FROM mm.matches mt
				 WHERE mt.queue = ANY (covered)
				   AND mt.created_at > since AND mt.created_at <= queue_monitoring.now)
		 GROUP BY mp.queue) a ON a.queue = q.name
	  LEFT JOIN (
		SELECT p.queue, count(*) AS n
		  FROM mm.player_penalties p
		 WHERE p.queue = ANY (covered) AND p.low_priority_games > 0
		 GROUP BY p.queue) l ON l.queue = q.name
	  LEFT JOIN (
		SELECT tr.* FROM mm.tick_runs tr WHERE tr.queue = ANY (covered)) r ON r.queue = q.name
	 ORDER BY q.name;
END
$$;
COMMENT ON FUNCTION mm.queue_monitoring(interval, timestamptz) IS
'Per queue, over (now - time_window, now]: searching tickets and players, wait p50/p95, matches per minute, autofill rate, low-priority players, and the recorded tick runs';
REVOKE ALL ON FUNCTION mm.queue_monitoring(interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queue_monitoring(interval, timestamptz) TO mm_analyst;

-- What monitoring/queries.yaml reads: the last 5 minutes.
CREATE VIEW mm.queue_monitoring AS
	SELECT * FROM mm.queue_monitoring('5 minutes'::interval, pg_catalog.now());
COMMENT ON VIEW mm.queue_monitoring IS 'mm.queue_monitoring(time_window) over the last 5 minutes';
GRANT SELECT ON TABLE mm.queue_monitoring TO mm_analyst;
