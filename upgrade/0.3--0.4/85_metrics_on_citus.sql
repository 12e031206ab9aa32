-- Metrics on Citus (docs/metrics.md, docs/scale-out.md): the functions of
-- 50_metrics.sql that read tables are PL/pgSQL, each one query whose parts
-- are aggregates of their own (no LATERAL reference into a sharded table)
-- and whose joins of a queue's tables name the queue: the Citus coordinator
-- cannot plan a SQL function's query with parameters over sharded tables,
-- and the players of a match meet their tickets by id (a ticket may belong
-- to another queue).  Same signatures, same results on one node; their
-- grants and comments stay (but mm.match_player_values' comment).

CREATE OR REPLACE FUNCTION mm.tickets_searching_at(queues text[], at timestamptz)
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

CREATE OR REPLACE FUNCTION mm.ticket_figures(queue text, time_window interval, now timestamptz)
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
	-- A statement of its own: on Citus the query below may run on the
	-- queue's node, where a function cannot query the shards again.
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

CREATE OR REPLACE FUNCTION mm.match_player_values(match_id bigint, region text, skill_attribute text,
									   OUT team text, OUT skill float8, OUT latency float8)
RETURNS SETOF record
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
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
	SELECT p.team,
		   CASE WHEN jsonb_typeof(tp.attributes -> match_player_values.skill_attribute) = 'number'
				 AND abs((tp.attributes ->> match_player_values.skill_attribute)::numeric) <= 1e12
				THEN round((tp.attributes ->> match_player_values.skill_attribute)::numeric, 12)::float8 END,
		   CASE WHEN jsonb_typeof(tp.latencies -> match_player_values.region) = 'number'
				 AND abs((tp.latencies ->> match_player_values.region)::numeric) <= 1e12
				THEN round((tp.latencies ->> match_player_values.region)::numeric, 12)::float8 END
	  FROM p
	  LEFT JOIN tp ON tp.ticket_id = p.ticket_id AND tp.player_id = p.player_id;
END
$$;

COMMENT ON FUNCTION mm.match_player_values(bigint, text, text) IS
'The players of a match: team, skill attribute and latency to the region';

CREATE OR REPLACE FUNCTION mm.match_details_figures(queues text[], time_window interval, now timestamptz,
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
	tp_skill float8[];
	tp_latencies jsonb[];
BEGIN
	-- The window's matches, their players (same queue: by the match_players
	-- key), then the players' tickets by id (a ticket may belong to another
	-- queue, on Citus one sharded apart), each read through an index into
	-- arrays, so the cost follows the window's matches, not the tables: the
	-- planner then knows how many rows each step has, and joins them by hash
	-- even when the tables' statistics are stale (as right after a bulk load:
	-- guessing one row it looped over them, 12 s for 284 matches).
	-- enable_seqscan off: a table is never scanned for a window, whatever the
	-- statistics guess; plan_cache_mode: every plan sees the arrays' sizes.
	SELECT array_agg(m.id), array_agg(m.queue), array_agg(m.created_at), array_agg(m.region),
		   array_agg(m.quality)
	  INTO w_id, w_queue, w_created, w_region, w_quality
	  FROM mm.matches m
	 WHERE m.queue = ANY (match_details_figures.queues)
	   AND m.created_at > now - time_window AND m.created_at <= now
	   AND mm.metrics_is_match(m.status, m.ready_at, m.acceptance_deadline);
	SELECT array_agg(mp.match_id), array_agg(mp.queue), array_agg(mp.team), array_agg(mp.player_id),
		   array_agg(mp.ticket_id)
	  INTO p_match, p_queue, p_team, p_player, p_ticket
	  FROM mm.match_players mp
	 WHERE mp.match_id = ANY (w_id) AND mp.queue = ANY (match_details_figures.queues);
	-- A skill or latency that is not a number within the tick's range of
	-- ±1e12 (stored before a validation) is missing, and one too small for a
	-- float8 (1e-400) reads as 0, so one stored value cannot make a metric
	-- fail (as mm.match_player_values); a number is read as jsonb's numeric,
	-- not parsed from text.
	SELECT array_agg(x.ticket_id), array_agg(x.player_id),
		   array_agg(CASE WHEN jsonb_typeof(x.attributes -> match_details_figures.skill_attribute) = 'number'
							   AND abs((x.attributes -> match_details_figures.skill_attribute)::numeric) <= 1e12
						  THEN round((x.attributes -> match_details_figures.skill_attribute)::numeric, 12)::float8
					 END),
		   array_agg(x.latencies)
	  INTO tp_ticket, tp_player, tp_skill, tp_latencies
	  FROM mm.ticket_players x
	 WHERE x.ticket_id = ANY (p_ticket);
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
		SELECT p.match_id, p.queue, p.team, tp.skill,
			   CASE WHEN jsonb_typeof(tp.latencies -> w.region) = 'number'
					 AND abs((tp.latencies -> w.region)::numeric) <= 1e12
					THEN round((tp.latencies -> w.region)::numeric, 12)::float8 END AS latency
		  FROM p
		  JOIN w ON w.id = p.match_id AND w.queue = p.queue
		  LEFT JOIN tp ON tp.ticket_id = p.ticket_id AND tp.player_id = p.player_id
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
	SELECT w.id, w.queue, w.created_at, w.region, coalesce(pl.players, 0), coalesce(pl.teams, 0), w.quality,
		   pl.skill_spread, pl.team_skill_gap, pl.latency_avg_ms, pl.worst_latency_ms
	  FROM w
	  LEFT JOIN pl ON pl.match_id = w.id AND pl.queue = w.queue
	 ORDER BY w.created_at, w.id;
END
$$;

CREATE OR REPLACE FUNCTION mm.match_figures(queue text, time_window interval, now timestamptz)
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
	g_players bigint[];
	l_match bigint[];
	l_queue text[];
	l_left timestamptz[];
BEGIN
	-- the matches' own figures unrounded (match_details rounds them); a
	-- statement of its own: on Citus the query below may run on the queue's
	-- node, where a function cannot query the shards again
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
	 WHERE m.id = ANY (r_match);
	-- their players counted per match, and those who left one row each
	SELECT array_agg(g.match_id), array_agg(g.queue), array_agg(g.players) INTO g_match, g_queue, g_players
	  FROM (SELECT mp.match_id, mp.queue, count(*) AS players
			  FROM mm.match_players mp
			 WHERE mp.match_id = ANY (r_match) AND mp.queue = ANY (covered)
			 GROUP BY mp.match_id, mp.queue) g;
	SELECT array_agg(mp.match_id), array_agg(mp.queue), array_agg(mp.left_at) INTO l_match, l_queue, l_left
	  FROM mm.match_players mp
	 WHERE mp.match_id = ANY (r_match) AND mp.queue = ANY (covered) AND mp.left_at IS NOT NULL;
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
	  FROM (SELECT r.duration, coalesce(g.players, 0) AS players, count(l.left_at) AS gone,
				   count(*) FILTER (WHERE extract(epoch FROM l.left_at) - extract(epoch FROM m.created_at)
									   < 0.2 * extract(epoch FROM r.duration)) AS early
			  FROM unnest(r_match, r_queue, r_duration) AS r(match_id, queue, duration)
			  LEFT JOIN (unnest(m_id, m_queue, m_created) AS m(id, queue, created_at)
						 JOIN unnest(g_match, g_queue, g_players) AS g(match_id, queue, players)
						   ON g.match_id = m.id AND g.queue = m.queue)
					 ON m.id = r.match_id AND m.queue = r.queue
			  LEFT JOIN unnest(l_match, l_queue, l_left) AS l(match_id, queue, left_at)
					 ON l.match_id = m.id AND l.queue = m.queue
			 GROUP BY r.match_id, r.queue, r.duration, g.players) q;
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
				  FROM (SELECT mm.result_winner(r.winner_team, r.ranks) AS winner, r.predicted_favourite,
							   r.favourite_win_probability
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

CREATE OR REPLACE FUNCTION mm.queue_stats_by_minute(queue text, from_time timestamptz, to_time timestamptz)
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
		), matched AS (
			SELECT date_trunc('minute', t.matched_at) AS minute, count(*) AS n,
				   avg((extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8) AS wait_avg,
				   percentile_cont(0.95) WITHIN GROUP (ORDER BY (extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8) AS wait_p95
			  FROM mm.tickets t
			 WHERE t.queue = queue_stats_by_minute.queue
			   AND t.matched_at >= first_minute AND t.matched_at < last_end
			 GROUP BY 1
		), formed AS (
			SELECT date_trunc('minute', m.created_at) AS minute, count(*) AS n, avg(m.quality) AS quality
			  FROM mm.matches m
			 WHERE m.queue = queue_stats_by_minute.queue
			   AND m.created_at >= first_minute AND m.created_at < last_end
			   AND mm.metrics_is_match(m.status, m.ready_at, m.acceptance_deadline)
			 GROUP BY 1
		), ended AS (
			SELECT date_trunc('minute', t.updated_at) AS minute,
				   count(*) FILTER (WHERE t.status = 'timed_out') AS timeouts,
				   count(*) FILTER (WHERE t.status = 'cancelled') AS cancellations
			  FROM mm.tickets t
			 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
			   AND t.updated_at >= first_minute AND t.updated_at < last_end
			 GROUP BY 1
		), alive AS (
			-- tickets searching at the end of some minute of the range: created
			-- before its end, ended (matched, cancelled, timed out) after the first
			-- minute's end or not at all; each read through an index (the ended
			-- ones by their end, a range closed by 'infinity' as in
			-- mm.tickets_searching_at)
			SELECT t.created_at, NULL::timestamptz AS ended_at
			  FROM mm.tickets t
			 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('searching', 'proposed')
			   AND t.created_at < last_end
			UNION ALL
			SELECT t.created_at, t.matched_at
			  FROM mm.tickets t
			 WHERE t.queue = queue_stats_by_minute.queue AND t.matched_at IS NOT NULL
			   AND t.matched_at >= first_minute + '1 minute'::interval AND t.matched_at < 'infinity'
			   AND t.created_at < last_end
			UNION ALL
			SELECT t.created_at, t.updated_at
			  FROM mm.tickets t
			 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
			   AND t.updated_at >= first_minute + '1 minute'::interval AND t.updated_at < 'infinity'
			   AND t.created_at < last_end
		), depth_change AS (
			-- +1 in the minute a ticket arrives (or the first minute), -1 in the one it leaves
			SELECT d.minute, sum(d.change) AS change
			  FROM (SELECT greatest(first_minute, date_trunc('minute', a.created_at)) AS minute, 1 AS change
					  FROM alive a
					UNION ALL
					SELECT date_trunc('minute', a.ended_at), -1
					  FROM alive a WHERE a.ended_at < last_end) d
			 GROUP BY d.minute
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

CREATE OR REPLACE FUNCTION mm.queue_statistics(queue text, now timestamptz DEFAULT now())
RETURNS TABLE (players_searching bigint, estimated_wait_s float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	covered text[] := mm.metrics_scope(queue_statistics.queue, '15 minutes', queue_statistics.now, true);
	show_player_count boolean;
	show_time_to_match boolean;
BEGIN
	SELECT coalesce((q.config #>> '{statistics,show_player_count}')::boolean, false),
		   coalesce((q.config #>> '{statistics,show_time_to_match}')::boolean, false)
	  INTO show_player_count, show_time_to_match
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
	RETURN NEXT;
END
$$;
