-- Metrics (docs/metrics.md): views and functions for analysts.  The one
-- headline match quality is mm.matches.quality, the tick's; beside it the
-- plain figures skill_spread, team_skill_gap and worst_latency_ms.
--
-- - The metrics that read tables are PL/pgSQL, each a query or two after
--   its argument checks (mm.metrics_scope, mm.metrics_minutes and
--   mm.metrics_check_target), written to Citus rules 3 and 5 to 7
--   (HACKING.md) so that Citus gives one node's answers.  The functions that
--   only call them (the rounding wrappers, the per queue forms, the health
--   report) stay LANGUAGE sql.
-- - The *_figures functions compute unrounded; the public functions round
--   every non-integer figure to 3 decimals (mm.metrics_round), so
--   1.533333333333303 shows as 1.533; mm.health_report judges unrounded.
-- - The win-rate balance leaves out coin flips: a result whose predicted
--   favourite had a 0.5 chance (equal ratings, as in a new pool) predicted
--   no favourite, so it cannot be "missed"; coin_flip_results counts them.
-- - Leaves and early quits are two figures: `leaves` counts every player
--   who left a reported match (mm.leave_match, at any time), `early_quits`
--   the documented subset who left in its first 20%.
-- - The match figures count the proposals rejected and expired, the
--   matches requeued and the live matches expired in the window.
-- - The metrics are not SECURITY DEFINER: they read as the caller, so the
--   role needs SELECT on the tables they read (mm_analyst, mm_admin).  The
--   argument-check helpers run as part of the metrics, so the same roles may
--   call them.
-- mm.rule_stats and mm.explain_ticket are in 50_tick.sql.

-- The metrics' rounding: 3 decimals, NULL stays NULL (NaN and the
-- infinities too).  No SET clause, so that it is inlined.
CREATE FUNCTION mm.metrics_round(value float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
	SELECT CAST(pg_catalog.round(CAST(value AS pg_catalog.numeric), 3) AS pg_catalog.float8)
$$;
COMMENT ON FUNCTION mm.metrics_round(float8) IS
'Internal: a metric''s figure rounded to 3 decimals';
REVOKE ALL ON FUNCTION mm.metrics_round(float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.metrics_round(float8) TO mm_analyst;

-- A player's skill or latency as the metrics read it from a ticket: a jsonb
-- number within the tick's range of ±1e12, rounded at 12 decimals so that
-- one too small for a float8 (1e-400) reads as 0; anything else (a string, a
-- number beyond the range stored before a validation) is missing, so one
-- stored value cannot make a metric fail.  No SET clause, so that it is
-- inlined.
CREATE FUNCTION mm.metrics_number(value jsonb)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
	SELECT CASE WHEN pg_catalog.jsonb_typeof(value) OPERATOR(pg_catalog.=) 'number'
				 AND pg_catalog.abs(CAST(value AS pg_catalog.numeric)) OPERATOR(pg_catalog.<=) 1e12
				THEN CAST(pg_catalog.round(CAST(value AS pg_catalog.numeric), 12) AS pg_catalog.float8) END
$$;
COMMENT ON FUNCTION mm.metrics_number(jsonb) IS
'Internal: a skill or latency of a ticket as the metrics read it (a number within ±1e12, else NULL)';
REVOKE ALL ON FUNCTION mm.metrics_number(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.metrics_number(jsonb) TO mm_analyst, mm_admin;

-- What the metrics count as a match: one formed and not cancelled while
-- proposed, that is a match every player accepted or any match of a queue
-- without acceptance (a live match requeued or expired later stays one).
-- A proposal cancelled before every player accepted it (rejected, expired,
-- a ticket cancelled) is counted apart (proposals_cancelled), and one still
-- waiting for answers is neither yet.  No SET clause, so that it is inlined.
CREATE FUNCTION mm.metrics_is_match(status text, ready_at timestamptz, acceptance_deadline timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
	SELECT status OPERATOR(pg_catalog.<>) 'proposed'
		   AND NOT (status OPERATOR(pg_catalog.=) 'cancelled' AND ready_at IS NULL
					AND acceptance_deadline IS NOT NULL)
$$;
COMMENT ON FUNCTION mm.metrics_is_match(text, timestamptz, timestamptz) IS
'Internal: whether a match counts as one in the metrics (formed, not cancelled while proposed)';
REVOKE ALL ON FUNCTION mm.metrics_is_match(text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.metrics_is_match(text, timestamptz, timestamptz) TO mm_analyst;

-- The argument checks of every metrics function over a time window, in one
-- place: a positive time_window ending at a finite `now` whose start is a
-- timestamp, a skill_attribute that is not NULL, and the queue, which must
-- exist (NULL: every queue, unless queue_required).  Returns the queues
-- covered, sorted: an array, so the queries use the (queue, ...) indexes.
CREATE FUNCTION mm.metrics_scope(queue text, time_window interval, now timestamptz,
								 queue_required boolean DEFAULT false,
								 skill_attribute text DEFAULT 'skill')
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
	IF queue IS NULL AND queue_required THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF time_window IS NULL THEN
		RAISE EXCEPTION 'time_window must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF time_window <= '0'::interval THEN
		RAISE EXCEPTION 'time_window must be positive: %', time_window USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(now) THEN
		RAISE EXCEPTION 'now must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the window's start must be a timestamp, and before now at this date
	-- (an interval compares a month as 30 days: '1 mon -29 days' is
	-- positive, yet ends a day after now in March)
	BEGIN
		IF now - time_window >= now THEN
			RAISE EXCEPTION 'time_window must be positive: %', time_window
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('now - time_window is %s, not before now.', now - time_window);
		END IF;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'now minus the time window reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'now - time_window is out of range.';
	END;
	IF skill_attribute IS NULL THEN
		RAISE EXCEPTION 'skill_attribute must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- a dotted attribute path, as a rule's attribute
	IF skill_attribute !~ '^[^.]{1,64}(\.[^.]{1,64}){0,7}$' THEN
		RAISE EXCEPTION 'skill_attribute must be a dotted attribute path, e.g. "skill" or "stats.skill": "%"',
			left(skill_attribute, 100)
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF queue IS NULL THEN
		RETURN ARRAY(SELECT q.name FROM mm.queues q ORDER BY q.name);
	END IF;
	IF NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = queue) THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue USING ERRCODE = 'undefined_object';
	END IF;
	RETURN ARRAY[queue];
END;
$$;
COMMENT ON FUNCTION mm.metrics_scope(text, interval, timestamptz, boolean, text) IS
'Checks the arguments of a metrics function (window, now, queue, skill attribute) and returns the queues it covers: the given one, or all for NULL';
REVOKE ALL ON FUNCTION mm.metrics_scope(text, interval, timestamptz, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.metrics_scope(text, interval, timestamptz, boolean, text) TO mm_analyst, mm_admin;

-- The argument checks of mm.queue_stats_by_minute: a queue, a finite
-- from_time before a finite to_time, at most 7 days apart; the queue is
-- checked by mm.metrics_scope like every other metric's.  Returns the
-- first minute and the end of the last minute that starts before to_time.
CREATE FUNCTION mm.metrics_minutes(queue text, from_time timestamptz, to_time timestamptz,
								   OUT first_minute timestamptz, OUT last_end timestamptz)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
	IF queue IS NULL OR from_time IS NULL OR to_time IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN queue IS NULL THEN 'queue' WHEN from_time IS NULL THEN 'from_time' ELSE 'to_time' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(from_time) OR NOT isfinite(to_time) THEN
		RAISE EXCEPTION 'from_time and to_time must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF to_time <= from_time THEN
		RAISE EXCEPTION 'to_time must be after from_time' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- in seconds: to_time - from_time as an interval overflows for far-apart times
	IF extract(epoch FROM to_time) - extract(epoch FROM from_time) > 7 * 86400 THEN
		RAISE EXCEPTION 'from_time and to_time must be at most 7 days apart'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Use mm.queue_stats(time_window, now) for longer spans.';
	END IF;
	-- the queue: the same checks as every metrics function (a window ending at to_time)
	PERFORM mm.metrics_scope(queue, to_time - from_time, to_time, true);
	first_minute := date_trunc('minute', from_time);
	BEGIN
		last_end := date_trunc('minute', to_time - '1 microsecond'::interval) + '1 minute'::interval;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'to_time is in the last minute of the timestamp range'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The end of its minute is out of range.';
	END;
END;
$$;
COMMENT ON FUNCTION mm.metrics_minutes(text, timestamptz, timestamptz) IS
'Checks the arguments of mm.queue_stats_by_minute and returns its first minute and the end of its last';
REVOKE ALL ON FUNCTION mm.metrics_minutes(text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.metrics_minutes(text, timestamptz, timestamptz) TO mm_analyst, mm_admin;

-- A target of mm.health_report: NULL (no target) or a finite number from 0
-- up to upper (no upper bound for NULL); returns it.
CREATE FUNCTION mm.metrics_check_target(name text, target float8, upper float8 DEFAULT NULL)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF target IS NOT NULL
	   AND NOT (target >= 0 AND target < 'Infinity'::float8 AND (upper IS NULL OR target <= upper)) THEN
		RAISE EXCEPTION '% must be %', name,
			CASE WHEN upper IS NULL THEN 'a finite number of at least 0'
				 ELSE pg_catalog.format('between 0 and %s', upper) END
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = pg_catalog.format('Got %s.', target),
				  HINT = 'NULL leaves the figure without a target.';
	END IF;
	RETURN target;
END;
$$;
COMMENT ON FUNCTION mm.metrics_check_target(text, float8, float8) IS
'Checks a target of mm.health_report: NULL, or finite from 0 up to upper (NULL: no upper bound)';
REVOKE ALL ON FUNCTION mm.metrics_check_target(text, float8, float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.metrics_check_target(text, float8, float8) TO mm_analyst, mm_admin;

-- The tickets of some queues that were searching at a time: created by then
-- and still searching (or proposed: an accepted ticket is matched when the
-- last answer comes), or ended (matched, cancelled, timed out) after it, so
-- that a past now sees the queue as it was.  Each part is read through an
-- index: the ended ones by their queue and end, a range closed by
-- 'infinity' so that the planner takes it over (queue, created_at) even
-- without statistics (two open ranges look alike to it, and the created
-- one reads the queue's whole history).
CREATE FUNCTION mm.tickets_searching_at(queues text[], at timestamptz)
RETURNS TABLE (players jsonb, created_at timestamptz)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN QUERY
	SELECT t.players, t.created_at FROM mm.tickets t
	 WHERE t.queue = ANY (tickets_searching_at.queues) AND t.status IN ('searching', 'proposed')
	   AND t.created_at <= tickets_searching_at.at
	UNION ALL
	SELECT t.players, t.created_at FROM mm.tickets t
	 WHERE t.queue = ANY (tickets_searching_at.queues)
	   AND t.matched_at > tickets_searching_at.at AND t.matched_at < 'infinity'
	   AND t.created_at <= tickets_searching_at.at
	UNION ALL
	SELECT t.players, t.created_at FROM mm.tickets t
	 WHERE t.queue = ANY (tickets_searching_at.queues) AND t.status IN ('cancelled', 'timed_out')
	   AND t.updated_at > tickets_searching_at.at AND t.updated_at < 'infinity'
	   AND t.created_at <= tickets_searching_at.at;
END
$$;
COMMENT ON FUNCTION mm.tickets_searching_at(text[], timestamptz) IS
'Internal: the tickets of the queues that were searching at a time (created by then, not ended by then)';
REVOKE ALL ON FUNCTION mm.tickets_searching_at(text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_searching_at(text[], timestamptz) TO mm_analyst, mm_admin;

-- Ticket figures of one queue (or all queues pooled, for NULL) over the
-- time_window (now - time_window, now]: who is searching at `now`, time to
-- match of the tickets matched in the window, the share of the window's
-- tickets matched within 120 s, timeouts and cancellations in the window.
-- Unrounded: mm.ticket_metrics rounds them, mm.health_report judges them.
CREATE FUNCTION mm.ticket_figures(queue text, time_window interval, now timestamptz)
RETURNS TABLE (searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	covered text[] := mm.metrics_scope(ticket_figures.queue, ticket_figures.time_window, ticket_figures.now);
BEGIN
	-- A statement of its own (Citus rule 6).
	SELECT count(*), coalesce(sum(jsonb_array_length(a.players)), 0),
		   (extract(epoch FROM now) - extract(epoch FROM min(a.created_at)))::float8
	  INTO searching_tickets, searching_players, oldest_wait_s
	  FROM mm.tickets_searching_at(covered, now) a;
	-- each part an aggregate of its own (no LATERAL reference into a sharded table)
	RETURN QUERY
	SELECT searching_tickets, searching_players, oldest_wait_s, w.n, w.average, w.p50, w.p95, w.p99,
		   f.rate, f.n, e.timeouts, e.cancellations
	  FROM (
		SELECT count(*) AS n, avg(x.seconds) AS average,
			   percentile_cont(0.5) WITHIN GROUP (ORDER BY x.seconds) AS p50,
			   percentile_cont(0.95) WITHIN GROUP (ORDER BY x.seconds) AS p95,
			   percentile_cont(0.99) WITHIN GROUP (ORDER BY x.seconds) AS p99
		  FROM (SELECT (extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8 AS seconds
				  FROM mm.tickets t
				 WHERE t.queue = ANY (covered)
				   AND t.matched_at > now - time_window AND t.matched_at <= now) x) w
	 CROSS JOIN (
		-- The window's tickets whose 120 s verdict was in at now: matched in
		-- time, or timed out, or older than 120 s; a cancellation within 120 s
		-- was the player's choice and is left out, and so is a ticket still
		-- younger.  What happened after now does not count.
		SELECT count(*) FILTER (WHERE v.in_time)::float8 / nullif(count(*), 0) AS rate, count(*) AS n
		  FROM (SELECT coalesce(t.matched_at <= now AND t.matched_at - t.created_at <= '120 s'::interval,
								false) AS in_time,
					   coalesce(CASE t.status WHEN 'matched' THEN t.matched_at
											  WHEN 'cancelled' THEN t.updated_at
											  WHEN 'timed_out' THEN t.updated_at END <= now,
								false) AS ended,
					   t.status, t.created_at, t.updated_at
				  FROM mm.tickets t
				 WHERE t.queue = ANY (covered)
				   AND t.created_at > now - time_window AND t.created_at <= now) v
		 WHERE v.in_time
			OR (v.ended AND v.status IN ('matched', 'timed_out'))
			OR (v.ended AND v.status = 'cancelled' AND v.updated_at - v.created_at >= '120 s'::interval)
			OR (NOT v.ended AND now - v.created_at >= '120 s'::interval)) f
	 CROSS JOIN (
		SELECT count(*) FILTER (WHERE t.status = 'timed_out') AS timeouts,
			   count(*) FILTER (WHERE t.status = 'cancelled') AS cancellations
		  FROM mm.tickets t
		 WHERE t.queue = ANY (covered) AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at > now - time_window AND t.updated_at <= now) e;
END
$$;
COMMENT ON FUNCTION mm.ticket_figures(text, interval, timestamptz) IS
'Internal: the figures of mm.ticket_metrics unrounded';
REVOKE ALL ON FUNCTION mm.ticket_figures(text, interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_figures(text, interval, timestamptz) TO mm_analyst;

-- Ticket figures of one queue (or all pooled, for NULL), rounded
-- (mm.ticket_figures).
CREATE FUNCTION mm.ticket_metrics(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								  now timestamptz DEFAULT now())
RETURNS TABLE (searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT f.searching_tickets, f.searching_players, mm.metrics_round(f.oldest_wait_s), f.tickets_matched,
		   mm.metrics_round(f.time_to_match_avg_s), mm.metrics_round(f.time_to_match_p50_s),
		   mm.metrics_round(f.time_to_match_p95_s), mm.metrics_round(f.time_to_match_p99_s),
		   mm.metrics_round(f.fill_rate), f.fill_rate_tickets, f.timeouts, f.cancellations
	  FROM mm.ticket_figures(ticket_metrics.queue, time_window, now) f
$$;
COMMENT ON FUNCTION mm.ticket_metrics(text, interval, timestamptz) IS
'Ticket figures of a queue (all queues pooled for NULL) over (now - time_window, now]: searching, time to match, fill rate, timeouts';
REVOKE ALL ON FUNCTION mm.ticket_metrics(text, interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_metrics(text, interval, timestamptz) TO mm_analyst, mm_admin;

-- Per queue ticket figures over a time_window (the view mm.queue_stats is the last hour).
CREATE FUNCTION mm.queue_stats(time_window interval, now timestamptz DEFAULT now())
RETURNS TABLE (queue text, searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT q.name, m.*
	  FROM mm.metrics_scope(NULL, time_window, now) AS scope(queues)
	 CROSS JOIN LATERAL unnest(scope.queues) AS q(name)
	 CROSS JOIN LATERAL mm.ticket_metrics(q.name, time_window, now) AS m
	 ORDER BY q.name
$$;
COMMENT ON FUNCTION mm.queue_stats(interval, timestamptz) IS
'Per queue: searching tickets and players, oldest wait, time to match avg/p50/p95/p99, fill rate within 120 s, timeouts, cancellations';
REVOKE ALL ON FUNCTION mm.queue_stats(interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queue_stats(interval, timestamptz) TO mm_analyst, mm_admin;

CREATE VIEW mm.queue_stats AS
	SELECT * FROM mm.queue_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.queue_stats IS 'mm.queue_stats(time_window) over the last hour';
GRANT SELECT ON TABLE mm.queue_stats TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.queue_stats TO mm_admin;

-- The players of a match: team, skill attribute and latency to the region,
-- read by mm.metrics_number (as mm.match_details_figures reads them for
-- many matches).
CREATE FUNCTION mm.match_player_values(match_id bigint, region text, skill_attribute text,
									   OUT team text, OUT skill float8, OUT latency float8)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	-- a dotted path, as the rules' attributes ("stats.skill")
	skill_path text[] := string_to_array(match_player_values.skill_attribute, '.');
BEGIN
	-- the players first, then their tickets by id: a ticket may belong to
	-- another queue (on Citus, one sharded apart from the match's players)
	RETURN QUERY
	WITH p AS (
		SELECT mp.team, mp.player_id, mp.ticket_id
		  FROM mm.match_players mp
		 WHERE mp.match_id = match_player_values.match_id
	), tp AS (
		SELECT x.ticket_id, x.player_id, x.attributes, x.latencies
		  FROM mm.ticket_players x
		 WHERE x.ticket_id IN (SELECT p.ticket_id FROM p)
	)
	SELECT p.team, mm.metrics_number(tp.attributes #> skill_path),
		   mm.metrics_number(tp.latencies -> match_player_values.region)
	  FROM p
	  LEFT JOIN tp ON tp.ticket_id = p.ticket_id AND tp.player_id = p.player_id;
END
$$;
COMMENT ON FUNCTION mm.match_player_values(bigint, text, text) IS
'The players of a match: team, skill attribute and latency to the region';
REVOKE ALL ON FUNCTION mm.match_player_values(bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_player_values(bigint, text, text) TO mm_analyst, mm_admin;

-- The window (from_time, to_time] of the matches of some queues, cut into
-- consecutive parts of about 2,560 players each (a match counts as its
-- queue's match_size.max: 256 matches of a 5v5 queue, 1,280 of a 1v1): the
-- ends of the parts, ascending, the last one to_time (a smaller window is
-- one part).  The metrics that read a window's players work through it part
-- by part (mm.match_details_figures, mm.role_stats_players,
-- mm.low_priority_players), so that every step's rows (sorts, hash tables,
-- arrays) stay the size of one part, within the CPU's caches, and the cost
-- grows with the matches and no faster (one step over all the players of
-- 3,000 5v5 matches took 12 times as long as over 300).
CREATE FUNCTION mm.metrics_parts(queues text[], from_time timestamptz, to_time timestamptz)
RETURNS timestamptz[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
SET enable_seqscan = off
AS $$
DECLARE
	m_created timestamptz[];
	m_queue text[];
	q_name text[];
	q_players integer[];
	ends timestamptz[];
BEGIN
	SELECT array_agg(m.created_at), array_agg(m.queue) INTO m_created, m_queue
	  FROM mm.matches m
	 WHERE m.queue = ANY (metrics_parts.queues)
	   AND m.created_at > metrics_parts.from_time AND m.created_at <= metrics_parts.to_time;
	SELECT array_agg(q.name), array_agg(greatest(coalesce((q.config #>> '{match_size,max}')::integer, 2), 1))
	  INTO q_name, q_players
	  FROM mm.queues q
	 WHERE q.name = ANY (metrics_parts.queues);
	-- each part's last time (sorted here: on Citus the rows come from
	-- several shards), but the last part's; the matches of one time stay in
	-- one part
	SELECT array_agg(DISTINCT p.last_at) INTO ends
	  FROM (SELECT c.part, max(c.at) AS last_at, max(c.part) OVER () AS last_part
			  FROM (SELECT x.at, (sum(coalesce(w.players, 2)) OVER (ORDER BY x.at, x.n) - 1) / 2560 AS part
					  FROM unnest(m_created, m_queue) WITH ORDINALITY AS x(at, queue, n)
					  LEFT JOIN unnest(q_name, q_players) AS w(queue, players) ON w.queue = x.queue) c
			 GROUP BY c.part) p
	 WHERE p.part < p.last_part AND p.last_at < metrics_parts.to_time;
	RETURN coalesce(ends, '{}') || metrics_parts.to_time;
END
$$;
COMMENT ON FUNCTION mm.metrics_parts(text[], timestamptz, timestamptz) IS
'Internal: the ends of the parts of about 2,560 players that a metric reads a window of matches in';
REVOKE ALL ON FUNCTION mm.metrics_parts(text[], timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.metrics_parts(text[], timestamptz, timestamptz) TO mm_analyst, mm_admin;

-- The per match figures unrounded, of the matches of some queues (checked
-- by the caller) formed in the window: the tick's quality (the headline),
-- the skill spread (highest minus lowest player skill), the team skill gap
-- (highest minus lowest team average skill), and the players' latency to
-- the match's region, average and worst.  Skill is a numeric ticket
-- attribute (skill_attribute).  A proposal cancelled before every player
-- accepted it is no match (mm.metrics_is_match).  mm.match_details rounds
-- them, mm.match_figures averages them.  Ordered by created_at, id.
CREATE FUNCTION mm.match_details_figures(queues text[], time_window interval, now timestamptz,
										 skill_attribute text)
RETURNS TABLE (match_id bigint, queue_name text, created_at timestamptz, region text, players integer,
			   teams integer, quality float8, skill_spread float8, team_skill_gap float8,
			   latency_avg_ms float8, worst_latency_ms float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
SET enable_seqscan = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
	part_start timestamptz := now - time_window;
	part_end timestamptz;
	-- a dotted path, as the rules' attributes ("stats.skill")
	skill_path text[] := string_to_array(match_details_figures.skill_attribute, '.');
	w_id bigint[];
	w_queue text[];
	w_created timestamptz[];
	w_region text[];
	w_quality float8[];
	p_match bigint[];
	p_queue text[];
	p_team text[];
	p_player text[];
	p_ticket bigint[];
	tp_ticket bigint[];
	tp_player text[];
	tp_skill jsonb[];
	tp_latencies jsonb[];
	missing bigint[];
	x_ticket bigint[];
	x_player text[];
	x_skill jsonb[];
	x_latencies jsonb[];
BEGIN
	-- Part by part (mm.metrics_parts): the part's matches, their players
	-- (same queue: by the match_players key), then the players' tickets,
	-- each read through an index into arrays, so the cost follows the
	-- window's matches, not the tables: the planner then knows how many rows
	-- each step has even when the tables' statistics are stale (as right
	-- after a bulk load: guessing one row it looped over them, 12 s for 284
	-- matches).  enable_seqscan off: a table is never scanned for a window,
	-- whatever the statistics guess; plan_cache_mode: every plan sees the
	-- arrays' sizes.
	FOREACH part_end IN ARRAY mm.metrics_parts(match_details_figures.queues, part_start, now) LOOP
		SELECT array_agg(m.id), array_agg(m.queue), array_agg(m.created_at), array_agg(m.region),
			   array_agg(m.quality)
		  INTO w_id, w_queue, w_created, w_region, w_quality
		  FROM mm.matches m
		 WHERE m.queue = ANY (match_details_figures.queues)
		   AND m.created_at > part_start AND m.created_at <= part_end
		   AND mm.metrics_is_match(m.status, m.ready_at, m.acceptance_deadline);
		IF w_id IS NOT NULL THEN
			SELECT array_agg(mp.match_id), array_agg(mp.queue), array_agg(mp.team), array_agg(mp.player_id),
				   array_agg(mp.ticket_id)
			  INTO p_match, p_queue, p_team, p_player, p_ticket
			  FROM mm.match_players mp
			 WHERE mp.match_id = ANY ((SELECT w_id)::bigint[]) AND mp.queue = ANY (match_details_figures.queues);
			-- The tickets matched in the part, a range of (queue, matched_at):
			-- the tickets of its matches but those matched later (an acceptance
			-- after the part's end) or apart (another queue's, a proposal's
			-- ticket matched elsewhere), which are then read by id.  A range
			-- costs a third of reading each ticket by id.  The ids come through
			-- a sub-select, so the planner does not estimate each of them (a
			-- constant array: 68 ms of planning for 25,000 tickets with
			-- statistics, more than reading them).
			SELECT array_agg(t.id), array_agg(e.value ->> 'id'),
				   array_agg(e.value -> 'attributes' #> skill_path),
				   array_agg(e.value -> 'latencies')
			  INTO tp_ticket, tp_player, tp_skill, tp_latencies
			  FROM mm.tickets t, jsonb_array_elements(t.players) e
			 WHERE t.queue = ANY (match_details_figures.queues) AND t.status = 'matched'
			   AND t.matched_at > part_start AND t.matched_at <= part_end;
			SELECT array_agg(u.id) INTO missing
			  FROM unnest(p_ticket) u(id)
			 WHERE NOT EXISTS (SELECT FROM unnest(tp_ticket) f(id) WHERE f.id = u.id);
			IF missing IS NOT NULL THEN
				SELECT array_agg(t.id), array_agg(e.value ->> 'id'),
					   array_agg(e.value -> 'attributes' #> skill_path),
					   array_agg(e.value -> 'latencies')
				  INTO x_ticket, x_player, x_skill, x_latencies
				  FROM mm.tickets t, jsonb_array_elements(t.players) e
				 WHERE t.id = ANY ((SELECT missing)::bigint[]);
				tp_ticket := tp_ticket || x_ticket;
				tp_player := tp_player || x_player;
				tp_skill := tp_skill || x_skill;
				tp_latencies := tp_latencies || x_latencies;
			END IF;
			-- skills and latencies read by mm.metrics_number
			RETURN QUERY
			WITH w AS (
				SELECT * FROM unnest(w_id, w_queue, w_created, w_region, w_quality)
					AS w(id, queue, created_at, region, quality)
			), p AS (
				SELECT * FROM unnest(p_match, p_queue, p_team, p_player, p_ticket)
					AS p(match_id, queue, team, player_id, ticket_id)
			), tp AS (
				SELECT * FROM unnest(tp_ticket, tp_player, tp_skill, tp_latencies)
					AS tp(ticket_id, player_id, skill, latencies)
			), v AS (
				-- one row per player: team, skill and latency to the match's region
				SELECT p.match_id, p.queue, p.team,
					   mm.metrics_number(tp.skill) AS skill, mm.metrics_number(l.latency) AS latency
				  FROM p
				  JOIN w ON w.id = p.match_id AND w.queue = p.queue
				  LEFT JOIN tp ON tp.ticket_id = p.ticket_id AND tp.player_id = p.player_id
				 CROSS JOIN LATERAL (SELECT tp.latencies -> w.region AS latency) l
				OFFSET 0	-- the values worked out once a player, not once per aggregate that reads them
			), t AS (
				-- one row per team (and one for players without a team)
				SELECT v.match_id, v.queue, v.team, count(*) AS players, avg(v.skill) AS skill_avg,
					   min(v.skill) AS skill_min, max(v.skill) AS skill_max,
					   sum(v.latency) AS latency_sum, count(v.latency) AS latency_count,
					   max(v.latency) AS latency_max
				  FROM v
				 GROUP BY v.match_id, v.queue, v.team
			), pl AS (
				SELECT t.match_id, t.queue,
					   sum(t.players)::integer AS players,
					   count(*) FILTER (WHERE t.team IS NOT NULL)::integer AS teams,
					   max(t.skill_max) - min(t.skill_min) AS skill_spread,
					   CASE WHEN count(t.skill_avg) FILTER (WHERE t.team IS NOT NULL) >= 2
							THEN max(t.skill_avg) FILTER (WHERE t.team IS NOT NULL)
								 - min(t.skill_avg) FILTER (WHERE t.team IS NOT NULL) END AS team_skill_gap,
					   sum(t.latency_sum) / nullif(sum(t.latency_count), 0) AS latency_avg_ms,
					   max(t.latency_max) AS worst_latency_ms
				  FROM t
				 GROUP BY t.match_id, t.queue
			)
			-- a match without players: 0 players, 0 teams, no figures
			SELECT w.id, w.queue, w.created_at, w.region, coalesce(pl.players, 0), coalesce(pl.teams, 0),
				   w.quality, pl.skill_spread, pl.team_skill_gap, pl.latency_avg_ms, pl.worst_latency_ms
			  FROM w
			  LEFT JOIN pl ON pl.match_id = w.id AND pl.queue = w.queue
			 ORDER BY w.created_at, w.id;
		END IF;
		part_start := part_end;
	END LOOP;
END
$$;
COMMENT ON FUNCTION mm.match_details_figures(text[], interval, timestamptz, text) IS
'Internal: the rows of mm.match_details unrounded, for queues already checked';
REVOKE ALL ON FUNCTION mm.match_details_figures(text[], interval, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_details_figures(text[], interval, timestamptz, text) TO mm_analyst;

-- Per match figures, rounded.  The figures are read LATERAL to the checked
-- scope, so the checks run first and always.
CREATE FUNCTION mm.match_details(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now(), skill_attribute text DEFAULT 'skill')
RETURNS TABLE (match_id bigint, queue_name text, created_at timestamptz, region text, players integer,
			   teams integer, quality float8, skill_spread float8, team_skill_gap float8,
			   latency_avg_ms float8, worst_latency_ms float8)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT d.match_id, d.queue_name, d.created_at, d.region, d.players, d.teams, mm.metrics_round(d.quality),
		   mm.metrics_round(d.skill_spread), mm.metrics_round(d.team_skill_gap),
		   mm.metrics_round(d.latency_avg_ms), mm.metrics_round(d.worst_latency_ms)
	  FROM mm.metrics_scope(match_details.queue, time_window, now, false, skill_attribute) AS scope(queues)
	 CROSS JOIN LATERAL mm.match_details_figures(scope.queues, time_window, now, skill_attribute) d
	 ORDER BY d.created_at, d.match_id
$$;
COMMENT ON FUNCTION mm.match_details(text, interval, timestamptz, text) IS
'Per match formed in the window: players, teams, match quality, skill spread, team skill gap, average and worst latency';
REVOKE ALL ON FUNCTION mm.match_details(text, interval, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_details(text, interval, timestamptz, text) TO mm_analyst, mm_admin;

-- Match and outcome figures of one queue (or all pooled, for NULL), over
-- (now - time_window, now]:
--  - the averages of mm.match_details over the matches formed;
--  - from the results reported: how often the predicted favourite won
--    against its average predicted chance, over the results with a winner
--    and a favourite; a prediction of 0.5 (a coin flip, equal ratings) names
--    no favourite and is left out, counted in coin_flip_results;
--  - of the players of the reported matches, those who left (leaves: any
--    time) and, of the matches with a duration, those who left in the first
--    20% (early quits; start: the match's created_at);
--  - the proposals rejected (a player said no) and expired (the acceptance
--    deadline passed), the matches requeued (mm.requeue_match) and the live
--    matches expired (live_match_timeout_seconds), by when they were
--    cancelled;
--  - the proposals formed in the window and cancelled before every player
--    accepted (proposals_cancelled), which are no matches: `matches` and
--    the averages are over the matches formed and not cancelled while
--    proposed (mm.metrics_is_match).
-- (mm.match_figures: unrounded, for mm.match_metrics to round and
-- mm.health_report to judge.)
CREATE FUNCTION mm.match_figures(queue text, time_window interval, now timestamptz)
RETURNS TABLE (matches bigint, players_per_match float8, quality_avg float8, skill_spread_avg float8,
			   team_skill_gap_avg float8, latency_avg_ms float8, worst_latency_avg_ms float8,
			   results bigint, favourite_win_rate float8, favourite_predicted_rate float8,
			   win_rate_balance_points float8, early_quits bigint, early_quit_rate float8,
			   coin_flip_results bigint, leaves bigint, leave_rate float8,
			   proposals_rejected bigint, proposals_expired bigint, matches_requeued bigint,
			   matches_expired bigint, proposals_cancelled bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
SET enable_seqscan = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
	covered text[] := mm.metrics_scope(match_figures.queue, match_figures.time_window, match_figures.now);
	r_match bigint[];
	r_queue text[];
	r_duration interval[];
	m_id bigint[];
	m_queue text[];
	m_created timestamptz[];
	g_match bigint[];
	g_queue text[];
	g_left timestamptz[];
	g_players bigint[];
BEGIN
	-- the matches' own figures unrounded (match_details rounds them); a
	-- statement of its own (Citus rule 6)
	SELECT count(*), avg(x.players::float8), avg(x.quality), avg(x.skill_spread), avg(x.team_skill_gap),
		   avg(x.latency_avg_ms), avg(x.worst_latency_ms)
	  INTO matches, players_per_match, quality_avg, skill_spread_avg, team_skill_gap_avg,
		   latency_avg_ms, worst_latency_avg_ms
	  FROM mm.match_details_figures(covered, time_window, now, 'skill') x;
	-- the reported matches, their matches and players, each read through an
	-- index into arrays, so that their join knows its sizes (as
	-- mm.match_details_figures)
	SELECT array_agg(r.match_id), array_agg(r.queue), array_agg(r.duration)
	  INTO r_match, r_queue, r_duration
	  FROM mm.match_results r
	 WHERE r.queue = ANY (covered)
	   AND r.reported_at > now - time_window AND r.reported_at <= now;
	-- by id alone, so that only the primary key serves it (with the queue,
	-- (queue, created_at) looked as cheap without statistics and read the
	-- queue's history); the join below pairs them with their results' queue
	SELECT array_agg(m.id), array_agg(m.queue), array_agg(m.created_at) INTO m_id, m_queue, m_created
	  FROM mm.matches m
	 WHERE m.id = ANY ((SELECT r_match)::bigint[]);
	-- their players in one read, counted per match and time left (NULL:
	-- stayed), so that each leaver's time is a row of its own
	SELECT array_agg(g.match_id), array_agg(g.queue), array_agg(g.left_at), array_agg(g.players)
	  INTO g_match, g_queue, g_left, g_players
	  FROM (SELECT mp.match_id, mp.queue, mp.left_at, count(*) AS players
			  FROM mm.match_players mp
			 WHERE mp.match_id = ANY ((SELECT r_match)::bigint[]) AND mp.queue = ANY (covered)
			 GROUP BY mp.match_id, mp.queue, mp.left_at) g;
	-- per result, its match's players (a result, its match and the players
	-- share the queue); a statement of its own, over the arrays only (on
	-- Citus, beside the shards' subqueries below, the arrays' columns came
	-- out of order)
	SELECT coalesce(sum(q.early) FILTER (WHERE q.duration IS NOT NULL), 0)::bigint,
		   (sum(q.early) FILTER (WHERE q.duration IS NOT NULL))::float8
			   / nullif(sum(q.players) FILTER (WHERE q.duration IS NOT NULL), 0),
		   coalesce(sum(q.gone), 0)::bigint,
		   sum(q.gone)::float8 / nullif(sum(q.players), 0)
	  INTO early_quits, early_quit_rate, leaves, leave_rate
	  FROM (SELECT r.duration, coalesce(sum(g.players), 0)::bigint AS players,
				   coalesce(sum(g.players) FILTER (WHERE g.left_at IS NOT NULL), 0)::bigint AS gone,
				   coalesce(sum(g.players) FILTER (WHERE extract(epoch FROM g.left_at)
														 - extract(epoch FROM m.created_at)
													   < 0.2 * extract(epoch FROM r.duration)), 0)::bigint
					   AS early
			  FROM unnest(r_match, r_queue, r_duration) AS r(match_id, queue, duration)
			  LEFT JOIN (unnest(m_id, m_queue, m_created) AS m(id, queue, created_at)
						 JOIN unnest(g_match, g_queue, g_left, g_players) AS g(match_id, queue, left_at, players)
						   ON g.match_id = m.id AND g.queue = m.queue)
					 ON m.id = r.match_id AND m.queue = r.queue
			 GROUP BY r.match_id, r.queue, r.duration) q;
	-- each part an aggregate of its own (no LATERAL reference into a sharded table)
	RETURN QUERY
	SELECT matches, players_per_match, quality_avg, skill_spread_avg, team_skill_gap_avg, latency_avg_ms,
		   worst_latency_avg_ms, o.results, o.won, o.predicted, 100 * abs(o.won - o.predicted),
		   early_quits, early_quit_rate, o.coin_flips, leaves, leave_rate,
		   c.rejected, c.expired, c.requeued, c.live_expired, d.cancelled
	  FROM (
		SELECT count(*) AS results,
			   avg((w.winner = w.predicted_favourite)::integer::float8)
				   FILTER (WHERE w.predicted AND NOT w.coin_flip) AS won,
			   avg(w.favourite_win_probability) FILTER (WHERE w.predicted AND NOT w.coin_flip) AS predicted,
			   count(*) FILTER (WHERE w.predicted AND w.coin_flip) AS coin_flips
		  FROM (SELECT v.winner, v.predicted_favourite, v.favourite_win_probability,
					   v.predicted_favourite IS NOT NULL AND v.winner IS NOT NULL AS predicted,
					   coalesce(abs(v.favourite_win_probability - 0.5) <= 1e-9, false) AS coin_flip
				  -- the ranks read only where there is no winner_team (a call of
				  -- mm.result_winner costs more than the rest of a result's work)
				  FROM (SELECT coalesce(r.winner_team, mm.result_winner(NULL, r.ranks)) AS winner,
							   r.predicted_favourite, r.favourite_win_probability
						  FROM mm.match_results r
						 WHERE r.queue = ANY (covered)
						   AND r.reported_at > now - time_window AND r.reported_at <= now
						OFFSET 0) v) w) o	-- OFFSET 0: the winner is worked out once per result
	 CROSS JOIN (
		-- cancel_reason: rejected and acceptance_timeout for a proposal, the
		-- director's own reason for a requeue; the tick's and the queue's own
		-- (ticket_cancelled, queue_dropped, expired) are neither
		SELECT count(*) FILTER (WHERE m.cancel_reason = 'rejected') AS rejected,
			   count(*) FILTER (WHERE m.cancel_reason = 'acceptance_timeout') AS expired,
			   count(*) FILTER (WHERE m.cancel_reason NOT IN ('rejected', 'acceptance_timeout',
															  'ticket_cancelled', 'queue_dropped',
															  'expired')) AS requeued,
			   count(*) FILTER (WHERE m.cancel_reason = 'expired') AS live_expired
		  FROM mm.matches m
		 WHERE m.queue = ANY (covered) AND m.status = 'cancelled'
		   AND m.updated_at > now - time_window AND m.updated_at <= now) c
	 CROSS JOIN (
		-- the proposals formed in the window and cancelled before every
		-- player accepted (no match: mm.metrics_is_match); a filter, not a
		-- condition, so that (queue, created_at) serves it and not the index
		-- of every cancelled match of the queue
		SELECT count(*) FILTER (WHERE m.status = 'cancelled' AND m.ready_at IS NULL
								  AND m.acceptance_deadline IS NOT NULL) AS cancelled
		  FROM mm.matches m
		 WHERE m.queue = ANY (covered)
		   AND m.created_at > now - time_window AND m.created_at <= now) d;
END
$$;
COMMENT ON FUNCTION mm.match_figures(text, interval, timestamptz) IS
'Internal: the figures of mm.match_metrics unrounded';
REVOKE ALL ON FUNCTION mm.match_figures(text, interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_figures(text, interval, timestamptz) TO mm_analyst;

CREATE FUNCTION mm.match_metrics(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now())
RETURNS TABLE (matches bigint, players_per_match float8, quality_avg float8, skill_spread_avg float8,
			   team_skill_gap_avg float8, latency_avg_ms float8, worst_latency_avg_ms float8,
			   results bigint, favourite_win_rate float8, favourite_predicted_rate float8,
			   win_rate_balance_points float8, early_quits bigint, early_quit_rate float8,
			   coin_flip_results bigint, leaves bigint, leave_rate float8,
			   proposals_rejected bigint, proposals_expired bigint, matches_requeued bigint,
			   matches_expired bigint, proposals_cancelled bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT f.matches, mm.metrics_round(f.players_per_match), mm.metrics_round(f.quality_avg),
		   mm.metrics_round(f.skill_spread_avg), mm.metrics_round(f.team_skill_gap_avg),
		   mm.metrics_round(f.latency_avg_ms), mm.metrics_round(f.worst_latency_avg_ms),
		   f.results, mm.metrics_round(f.favourite_win_rate), mm.metrics_round(f.favourite_predicted_rate),
		   mm.metrics_round(f.win_rate_balance_points), f.early_quits, mm.metrics_round(f.early_quit_rate),
		   f.coin_flip_results, f.leaves, mm.metrics_round(f.leave_rate),
		   f.proposals_rejected, f.proposals_expired, f.matches_requeued, f.matches_expired,
		   f.proposals_cancelled
	  FROM mm.match_figures(match_metrics.queue, time_window, now) f
$$;
COMMENT ON FUNCTION mm.match_metrics(text, interval, timestamptz) IS
'Match figures of a queue (all pooled for NULL): match quality, skill spread, team skill gap, latency, players per match, win-rate balance (coin flips apart), leaves and early quits, proposals rejected and expired, matches requeued, live matches expired, proposals cancelled (no matches)';
REVOKE ALL ON FUNCTION mm.match_metrics(text, interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_metrics(text, interval, timestamptz) TO mm_analyst;

-- Per queue match figures over a time_window (the view mm.match_stats is the last hour).
CREATE FUNCTION mm.match_stats(time_window interval, now timestamptz DEFAULT now())
RETURNS TABLE (queue text, matches bigint, players_per_match float8, quality_avg float8,
			   skill_spread_avg float8, team_skill_gap_avg float8, latency_avg_ms float8,
			   worst_latency_avg_ms float8, results bigint, favourite_win_rate float8,
			   favourite_predicted_rate float8, win_rate_balance_points float8, early_quits bigint,
			   early_quit_rate float8, coin_flip_results bigint, leaves bigint, leave_rate float8,
			   proposals_rejected bigint, proposals_expired bigint, matches_requeued bigint,
			   matches_expired bigint, proposals_cancelled bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT q.name, m.*
	  FROM mm.metrics_scope(NULL, time_window, now) AS scope(queues)
	 CROSS JOIN LATERAL unnest(scope.queues) AS q(name)
	 CROSS JOIN LATERAL mm.match_metrics(q.name, time_window, now) AS m
	 ORDER BY q.name
$$;
COMMENT ON FUNCTION mm.match_stats(interval, timestamptz) IS
'Per queue: matches, players per match, match quality, skill spread, team skill gap, latency, win-rate balance (coin flips apart), leaves and early quits, proposals rejected and expired, matches requeued, live matches expired, proposals cancelled (no matches)';
REVOKE ALL ON FUNCTION mm.match_stats(interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_stats(interval, timestamptz) TO mm_analyst;

CREATE VIEW mm.match_stats AS
	SELECT * FROM mm.match_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.match_stats IS 'mm.match_stats(time_window) over the last hour';
GRANT SELECT ON TABLE mm.match_stats TO mm_analyst;

-- One row per minute [minute, minute + 1 min) from from_time's minute up to
-- to_time, for dashboards: tickets created and matched, time to match of the
-- tickets matched in that minute, matches formed (mm.metrics_is_match) and
-- their quality, timeouts, cancellations, and the tickets still searching at
-- the end of the minute; rounded like every figure.
CREATE FUNCTION mm.queue_stats_by_minute(queue text, from_time timestamptz, to_time timestamptz)
RETURNS TABLE (minute timestamptz, tickets_created bigint, tickets_matched bigint,
			   time_to_match_avg_s float8, time_to_match_p95_s float8, matches bigint,
			   quality_avg float8, timeouts bigint, cancellations bigint, searching_at_end bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	first_minute timestamptz;
	last_end timestamptz;
BEGIN
	SELECT r.first_minute, r.last_end INTO first_minute, last_end
	  FROM mm.metrics_minutes(queue_stats_by_minute.queue, from_time, to_time) r;
	RETURN QUERY
		WITH minutes AS (
			SELECT g AS minute
			  FROM generate_series(first_minute, last_end - '1 minute'::interval, '1 minute'::interval) g
		), created AS (
			SELECT date_trunc('minute', t.created_at) AS minute, count(*) AS n
			  FROM mm.tickets t
			 WHERE t.queue = queue_stats_by_minute.queue
			   AND t.created_at >= first_minute AND t.created_at < last_end
			 GROUP BY 1
		), done AS (
			-- The tickets matched from the first minute on, and those cancelled
			-- or timed out: each read once, for both the minute they ended in
			-- and the depth (a ticket that ended after a minute's end was
			-- searching then); each through an index on its end, a range closed
			-- by 'infinity' so that the planner takes it over (queue,
			-- created_at) even without statistics (as mm.tickets_searching_at)
			SELECT true AS matched, t.status, t.created_at, t.matched_at AS ended_at
			  FROM mm.tickets t
			 WHERE t.queue = queue_stats_by_minute.queue
			   AND t.matched_at >= first_minute AND t.matched_at < 'infinity'
			UNION ALL
			SELECT false, t.status, t.created_at, t.updated_at
			  FROM mm.tickets t
			 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
			   AND t.updated_at >= first_minute AND t.updated_at < 'infinity'
		), matched AS (
			SELECT date_trunc('minute', d.ended_at) AS minute, count(*) AS n,
				   avg((extract(epoch FROM d.ended_at) - extract(epoch FROM d.created_at))::float8) AS wait_avg,
				   percentile_cont(0.95) WITHIN GROUP (ORDER BY (extract(epoch FROM d.ended_at) - extract(epoch FROM d.created_at))::float8) AS wait_p95
			  FROM done d
			 WHERE d.matched AND d.ended_at < last_end
			 GROUP BY 1
		), formed AS (
			SELECT date_trunc('minute', m.created_at) AS minute, count(*) AS n, avg(m.quality) AS quality
			  FROM mm.matches m
			 WHERE m.queue = queue_stats_by_minute.queue
			   AND m.created_at >= first_minute AND m.created_at < last_end
			   AND mm.metrics_is_match(m.status, m.ready_at, m.acceptance_deadline)
			 GROUP BY 1
		), ended AS (
			SELECT date_trunc('minute', d.ended_at) AS minute,
				   count(*) FILTER (WHERE d.status = 'timed_out') AS timeouts,
				   count(*) FILTER (WHERE d.status = 'cancelled') AS cancellations
			  FROM done d
			 WHERE NOT d.matched AND d.ended_at < last_end
			 GROUP BY 1
		), depth_change AS (
			-- tickets searching at the end of some minute of the range: created
			-- before its end, ended after the first minute's end or not at all;
			-- +1 in the minute a ticket arrives (or the first minute), -1 in the
			-- one it leaves
			SELECT c.minute, sum(c.change) AS change
			  FROM (SELECT greatest(first_minute, date_trunc('minute', t.created_at)) AS minute, 1 AS change
					  FROM mm.tickets t
					 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('searching', 'proposed')
					   AND t.created_at < last_end
					UNION ALL
					SELECT greatest(first_minute, date_trunc('minute', d.created_at)), 1
					  FROM done d
					 WHERE d.ended_at >= first_minute + '1 minute'::interval AND d.created_at < last_end
					UNION ALL
					SELECT date_trunc('minute', d.ended_at), -1
					  FROM done d
					 WHERE d.ended_at >= first_minute + '1 minute'::interval AND d.created_at < last_end
					   AND d.ended_at < last_end) c
			 GROUP BY c.minute
		)
		SELECT mi.minute, coalesce(c.n, 0), coalesce(ma.n, 0), mm.metrics_round(ma.wait_avg),
			   mm.metrics_round(ma.wait_p95), coalesce(f.n, 0), mm.metrics_round(f.quality),
			   coalesce(e.timeouts, 0), coalesce(e.cancellations, 0),
			   (sum(coalesce(dc.change, 0)) OVER (ORDER BY mi.minute))::bigint
		  FROM minutes mi
		  LEFT JOIN created c ON c.minute = mi.minute
		  LEFT JOIN matched ma ON ma.minute = mi.minute
		  LEFT JOIN formed f ON f.minute = mi.minute
		  LEFT JOIN ended e ON e.minute = mi.minute
		  LEFT JOIN depth_change dc ON dc.minute = mi.minute
		 ORDER BY mi.minute;
END
$$;
COMMENT ON FUNCTION mm.queue_stats_by_minute(text, timestamptz, timestamptz) IS
'Per minute of a queue, for dashboards: tickets created and matched, time to match, matches, match quality, timeouts, cancellations, queue depth';
REVOKE ALL ON FUNCTION mm.queue_stats_by_minute(text, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queue_stats_by_minute(text, timestamptz, timestamptz) TO mm_analyst, mm_admin;

-- What players may see about a queue: the searching players (when the
-- queue's statistics.show_player_count is true) and an estimated wait for a
-- new ticket (when statistics.show_time_to_match is true): the median time to
-- match of the tickets matched in the last 15 minutes, in whole seconds; in
-- a role queue also per role (roles), the median of the players who got that
-- role from their list (not autofilled) and how many they were:
-- {"tank": {"estimated_wait_seconds": 12, "players_matched": 40}, ...}, every
-- role of the config (a role nobody got: null and 0).
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
		 WHERE mp.match_id = ANY ((SELECT t_match)::bigint[]) AND mp.queue = queue_statistics.queue
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

-- The players given a role in the matches of some queues (checked by the
-- caller) formed in (from_time, to_time], one row each: the queue, the
-- role, whether it was autofilled, whether it was the player's first choice
-- (the first of the player's "roles" in the ticket; no list, or "fill"
-- first, accepts any role; NULL when the ticket is gone) and the wait
-- (ticket created to matched, for a ticket matched into that match).  Read
-- part by part (mm.metrics_parts), for mm.role_stats to aggregate.
CREATE FUNCTION mm.role_stats_players(queues text[], from_time timestamptz, to_time timestamptz)
RETURNS TABLE (queue text, role text, autofilled boolean, first_choice boolean, wait float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
SET enable_seqscan = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
	part_start timestamptz := from_time;
	part_end timestamptz;
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
	missing bigint[];
	x_id bigint[];
	x_match bigint[];
	x_created timestamptz[];
	x_matched timestamptz[];
	x_player text[];
	x_wanted jsonb[];
BEGIN
	-- the part's matches, their players with a role (same queue: by the
	-- match_players key), then the players' tickets: those matched in the
	-- part by a range of (queue, matched_at), the others (matched later or
	-- elsewhere, cancelled, another queue's: on Citus one sharded apart) by
	-- id; each step read through an index into arrays, so that the joins
	-- below know their sizes (as mm.match_details_figures)
	FOREACH part_end IN ARRAY mm.metrics_parts(role_stats_players.queues, part_start, to_time) LOOP
		SELECT array_agg(m.id), array_agg(m.queue) INTO w_id, w_queue
		  FROM mm.matches m
		 WHERE m.queue = ANY (role_stats_players.queues)
		   AND m.created_at > part_start AND m.created_at <= part_end;
		IF w_id IS NOT NULL THEN
			SELECT array_agg(mp.queue), array_agg(mp.match_id), array_agg(mp.player_id), array_agg(mp.ticket_id),
				   array_agg(mp.role), array_agg(mp.autofilled)
			  INTO p_queue, p_match, p_player, p_ticket, p_role, p_autofilled
			  FROM mm.match_players mp
			 WHERE mp.match_id = ANY ((SELECT w_id)::bigint[]) AND mp.queue = ANY (role_stats_players.queues)
			   AND mp.role IS NOT NULL;
			SELECT array_agg(t.id), array_agg(t.match_id), array_agg(t.created_at), array_agg(t.matched_at),
				   array_agg(e.value ->> 'id'), array_agg(e.value -> 'roles')
			  INTO tp_id, tp_match, tp_created, tp_matched, tp_player, tp_wanted
			  FROM mm.tickets t, jsonb_array_elements(t.players) e
			 WHERE t.queue = ANY (role_stats_players.queues) AND t.status = 'matched'
			   AND t.matched_at > part_start AND t.matched_at <= part_end;
			SELECT array_agg(u.id) INTO missing
			  FROM unnest(p_ticket) u(id)
			 WHERE NOT EXISTS (SELECT FROM unnest(tp_id) f(id) WHERE f.id = u.id);
			IF missing IS NOT NULL THEN
				SELECT array_agg(t.id), array_agg(t.match_id), array_agg(t.created_at), array_agg(t.matched_at),
					   array_agg(e.value ->> 'id'), array_agg(e.value -> 'roles')
				  INTO x_id, x_match, x_created, x_matched, x_player, x_wanted
				  FROM mm.tickets t, jsonb_array_elements(t.players) e
				 WHERE t.id = ANY ((SELECT missing)::bigint[]);	-- a sub-select: as in mm.match_details_figures
				tp_id := tp_id || x_id;
				tp_match := tp_match || x_match;
				tp_created := tp_created || x_created;
				tp_matched := tp_matched || x_matched;
				tp_player := tp_player || x_player;
				tp_wanted := tp_wanted || x_wanted;
			END IF;
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
			)
			SELECT p.queue, p.role, p.autofilled,
				   CASE WHEN tp.id IS NULL THEN NULL
						WHEN jsonb_typeof(tp.wanted) IS DISTINCT FROM 'array'
							 OR jsonb_array_length(tp.wanted) = 0 THEN true
						ELSE tp.wanted ->> 0 IN ('fill', p.role) END,
				   CASE WHEN tp.match_id = p.match_id
						THEN (extract(epoch FROM tp.matched_at) - extract(epoch FROM tp.created_at))::float8
				   END
			  FROM p
			  LEFT JOIN tp ON tp.id = p.ticket_id AND tp.player_id = p.player_id;
		END IF;
		part_start := part_end;
	END LOOP;
END
$$;
COMMENT ON FUNCTION mm.role_stats_players(text[], timestamptz, timestamptz) IS
'Internal: the players given a role in the matches formed in a window, for mm.role_stats';
REVOKE ALL ON FUNCTION mm.role_stats_players(text[], timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.role_stats_players(text[], timestamptz, timestamptz) TO mm_analyst;

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
AS $$
DECLARE
	covered text[] := mm.metrics_scope(NULL, role_stats.time_window, role_stats.now);
BEGIN
	-- the players read part by part, then aggregated: a few groups, by hash
	RETURN QUERY
	SELECT v.queue, v.role, count(*),
		   mm.metrics_round(avg(v.first_choice::integer::float8)),
		   mm.metrics_round(avg(v.autofilled::integer::float8)),
		   mm.metrics_round(avg(v.wait))
	  FROM mm.role_stats_players(covered, role_stats.now - role_stats.time_window, role_stats.now) v
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

-- The analysts' report: one row per figure with what it measures, its value
-- (rounded to 3 decimals), the target and whether it is met.  The targets
-- are arguments (NULL: no target); meets_target is NULL when the figure has
-- no data or no target.  Targets are inclusive: "at least" (>=) for the
-- match quality and the share matched within 2 minutes, "at most" (<=) for
-- the others.  It judges the figures unrounded (mm.ticket_figures,
-- mm.match_figures), rounded to 3 decimals as shown (the percentages from
-- the unrounded shares).
CREATE FUNCTION mm.health_report(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now(),
								 min_quality float8 DEFAULT 0.5,
								 max_time_to_match_p95_s float8 DEFAULT 60,
								 min_matched_within_2_min_pct float8 DEFAULT 95,
								 max_latency_avg_ms float8 DEFAULT 60,
								 max_early_quit_pct float8 DEFAULT 5,
								 max_win_rate_gap_points float8 DEFAULT 5)
RETURNS TABLE (metric text, measures text, value numeric, target text, meets_target boolean)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT r.metric, r.measures, round(r.value::numeric, 3),
		   r.op || ' ' || r.bound::text,
		   -- judged on the value shown: 0.4996 shows as 0.500 and meets ">= 0.5"
		   CASE r.op WHEN '>=' THEN round(r.value::numeric, 3) >= r.bound
					 WHEN '<=' THEN round(r.value::numeric, 3) <= r.bound END
	  FROM mm.ticket_figures(health_report.queue, time_window, now) t
	 CROSS JOIN mm.match_figures(health_report.queue, time_window, now) m
	 CROSS JOIN LATERAL (VALUES
		(1, 'match quality', 'the tick''s match quality (0..1), average over the matches formed',
		 m.quality_avg, '>=', mm.metrics_check_target('min_quality', min_quality, 1)),
		(2, 'time to match p95 (s)', '95th percentile of created-to-matched time of the tickets matched',
		 t.time_to_match_p95_s, '<=',
		 mm.metrics_check_target('max_time_to_match_p95_s', max_time_to_match_p95_s)),
		(3, 'matched within 2 minutes (%)', 'share of the tickets created that were matched within 120 s',
		 100 * t.fill_rate, '>=',
		 mm.metrics_check_target('min_matched_within_2_min_pct', min_matched_within_2_min_pct, 100)),
		(4, 'average latency (ms)', 'players'' latency to their match''s region, average over the matches',
		 m.latency_avg_ms, '<=', mm.metrics_check_target('max_latency_avg_ms', max_latency_avg_ms)),
		(5, 'early quits (%)', 'share of the players of reported matches who left in the first 20% of the match',
		 100 * m.early_quit_rate, '<=', mm.metrics_check_target('max_early_quit_pct', max_early_quit_pct, 100)),
		(6, 'win-rate balance (points)', 'gap between how often the predicted favourite won and its predicted chance (coin flips left out)',
		 m.win_rate_balance_points, '<=',
		 mm.metrics_check_target('max_win_rate_gap_points', max_win_rate_gap_points, 100)),
		(7, 'skill spread', 'highest minus lowest player skill in a match, average over the matches',
		 m.skill_spread_avg, NULL, NULL),
		(8, 'team skill gap', 'highest minus lowest team average skill in a match, average over the matches',
		 m.team_skill_gap_avg, NULL, NULL),
		(9, 'worst latency (ms)', 'highest player latency to the match''s region, average over the matches',
		 m.worst_latency_avg_ms, NULL, NULL),
		(10, 'matches formed', 'matches formed in the window, not counting proposals cancelled before every player accepted',
		 m.matches::float8, NULL, NULL),
		(11, 'tickets matched', 'tickets matched in the window', t.tickets_matched::float8, NULL, NULL),
		(12, 'time to match average (s)', 'average created-to-matched time of the tickets matched',
		 t.time_to_match_avg_s, NULL, NULL),
		(13, 'players searching', 'players in searching tickets at now', t.searching_players::float8, NULL, NULL),
		(14, 'timeouts', 'tickets timed out in the window', t.timeouts::float8, NULL, NULL),
		(15, 'cancellations', 'tickets cancelled in the window', t.cancellations::float8, NULL, NULL),
		(16, 'results reported', 'match results reported in the window', m.results::float8, NULL, NULL),
		(17, 'proposals cancelled', 'proposals formed in the window and cancelled before every player accepted (no matches)',
		 m.proposals_cancelled::float8, NULL, NULL))
		AS r (n, metric, measures, value, op, bound)
	 ORDER BY r.n
$$;
COMMENT ON FUNCTION mm.health_report(text, interval, timestamptz, float8, float8, float8, float8, float8, float8) IS
'The analysts'' report: each matchmaking health figure, what it measures, its target (arguments with defaults) and whether it is met';
REVOKE ALL ON FUNCTION mm.health_report(text, interval, timestamptz, float8, float8, float8, float8, float8, float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.health_report(text, interval, timestamptz, float8, float8, float8, float8, float8, float8) TO mm_analyst, mm_admin;
