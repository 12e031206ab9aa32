
-- ===================================================================
-- Metrics that tell the truth (docs/metrics.md)
-- ===================================================================
--
-- - The win-rate balance leaves out coin flips: a result whose predicted
--   favourite had a 0.5 chance (equal ratings, as in a new pool) predicted
--   no favourite, so it cannot be "missed"; coin_flip_results counts them.
-- - Leaves and early quits are two figures: `leaves` counts every player
--   who left a reported match (mm.leave_match, at any time), `early_quits`
--   the documented subset who left in its first 20%.
-- - The match figures count the proposals rejected and expired and the
--   matches requeued in the window.
-- - Every non-integer figure is rounded to 3 decimals (the health report's
--   values always were), so 1.533333333333303 shows as 1.533.
-- - mm.rule_stats' pass rate is rounded the same way; what its counts mean
--   is in docs/metrics.md ("Rule statistics").

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

-- The cancelled matches of a queue by the time they were cancelled (a
-- cancelled match is never updated again): the proposals rejected and
-- expired and the matches requeued in a window.  Few rows: only
-- cancellations are indexed.
CREATE INDEX matches_queue_cancelled ON mm.matches (queue, updated_at)
	WHERE status OPERATOR(pg_catalog.=) 'cancelled';

-- The metrics read one queue's window of ended tickets (created, matched,
-- cancelled or timed out) through a (queue, time) index each, so the cost
-- follows the window whatever the statistics say: the BRIN reads every
-- queue's rows of the window, and with statistics taken before a bulk load
-- the planner preferred a scan of the whole primary key.
CREATE INDEX tickets_ended_queue_created ON mm.tickets_ended (queue, created_at);
CREATE INDEX tickets_ended_queue_matched ON mm.tickets_ended (queue, matched_at)
	WHERE matched_at IS NOT NULL;
CREATE INDEX tickets_ended_queue_gone ON mm.tickets_ended (queue, updated_at)
	WHERE status OPERATOR(pg_catalog.=) ANY (ARRAY['cancelled', 'timed_out']);

-- The ticket figures unrounded (the 0.3 mm.ticket_metrics): mm.ticket_metrics
-- rounds them, mm.health_report judges them.
CREATE FUNCTION mm.ticket_figures(queue text, time_window interval, now timestamptz)
RETURNS TABLE (searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT s.n, s.players, s.oldest, w.n, w.average, w.p50, w.p95, w.p99, f.rate, f.n, e.timeouts,
		   e.cancellations
	  FROM mm.metrics_scope(ticket_figures.queue, time_window, now) AS scope(queues)
	 CROSS JOIN LATERAL (
		SELECT count(*) AS n, coalesce(sum(jsonb_array_length(a.players)), 0) AS players,
			   (extract(epoch FROM now) - extract(epoch FROM min(a.created_at)))::float8 AS oldest
		  FROM mm.tickets_searching_at(scope.queues, now) a) s
	 CROSS JOIN LATERAL (
		SELECT count(*) AS n, avg(x.seconds) AS average,
			   percentile_cont(0.5) WITHIN GROUP (ORDER BY x.seconds) AS p50,
			   percentile_cont(0.95) WITHIN GROUP (ORDER BY x.seconds) AS p95,
			   percentile_cont(0.99) WITHIN GROUP (ORDER BY x.seconds) AS p99
		  FROM (SELECT (extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8 AS seconds
				  FROM mm.tickets t
				 WHERE t.queue = ANY (scope.queues)
				   AND t.matched_at > now - time_window AND t.matched_at <= now) x) w
	 CROSS JOIN LATERAL (
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
				 WHERE t.queue = ANY (scope.queues)
				   AND t.created_at > now - time_window AND t.created_at <= now) v
		 WHERE v.in_time
			OR (v.ended AND v.status IN ('matched', 'timed_out'))
			OR (v.ended AND v.status = 'cancelled' AND v.updated_at - v.created_at >= '120 s'::interval)
			OR (NOT v.ended AND now - v.created_at >= '120 s'::interval)) f
	 CROSS JOIN LATERAL (
		SELECT count(*) FILTER (WHERE t.status = 'timed_out') AS timeouts,
			   count(*) FILTER (WHERE t.status = 'cancelled') AS cancellations
		  FROM mm.tickets t
		 WHERE t.queue = ANY (scope.queues) AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at > now - time_window AND t.updated_at <= now) e
$$;
COMMENT ON FUNCTION mm.ticket_figures(text, interval, timestamptz) IS
'Internal: the figures of mm.ticket_metrics unrounded';
REVOKE ALL ON FUNCTION mm.ticket_figures(text, interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_figures(text, interval, timestamptz) TO mm_analyst;

-- Ticket figures of one queue (or all pooled, for NULL), rounded.
CREATE OR REPLACE FUNCTION mm.ticket_metrics(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
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

-- The per match figures unrounded, of the matches of some queues (checked
-- by the caller) formed in the window: the body of the 0.3 mm.match_details.
-- mm.match_details rounds them, mm.match_figures averages them.
CREATE FUNCTION mm.match_details_figures(queues text[], time_window interval, now timestamptz,
										 skill_attribute text)
RETURNS TABLE (match_id bigint, queue_name text, created_at timestamptz, region text, players integer,
			   teams integer, quality float8, skill_spread float8, team_skill_gap float8,
			   latency_avg_ms float8, worst_latency_ms float8)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	-- Per match lookups (LATERAL, by the match_players and tickets primary
	-- keys), so the cost follows the window's matches, not the tables.
	SELECT m.id, m.queue, m.created_at, m.region, pl.players, pl.teams, m.quality,
		   pl.skill_spread, pl.team_skill_gap, pl.latency_avg_ms, pl.worst_latency_ms
	  FROM mm.matches m
	 CROSS JOIN LATERAL (
		-- one row per team (and one for players without a team)
		SELECT coalesce(sum(t.players), 0)::integer AS players,
			   count(*) FILTER (WHERE t.team IS NOT NULL)::integer AS teams,
			   max(t.skill_max) - min(t.skill_min) AS skill_spread,
			   CASE WHEN count(t.skill_avg) FILTER (WHERE t.team IS NOT NULL) >= 2
					THEN max(t.skill_avg) FILTER (WHERE t.team IS NOT NULL)
						 - min(t.skill_avg) FILTER (WHERE t.team IS NOT NULL) END AS team_skill_gap,
			   sum(t.latency_sum) / nullif(sum(t.latency_count), 0) AS latency_avg_ms,
			   max(t.latency_max) AS worst_latency_ms
		  FROM (SELECT x.team, count(*) AS players, avg(x.skill) AS skill_avg,
					   min(x.skill) AS skill_min, max(x.skill) AS skill_max,
					   sum(x.latency) AS latency_sum, count(x.latency) AS latency_count,
					   max(x.latency) AS latency_max
				  FROM mm.match_player_values(m.id, m.region, skill_attribute) x
				 GROUP BY x.team) t) pl
	 WHERE m.queue = ANY (match_details_figures.queues)
	   AND m.created_at > now - time_window AND m.created_at <= now
	 ORDER BY m.created_at, m.id
$$;
COMMENT ON FUNCTION mm.match_details_figures(text[], interval, timestamptz, text) IS
'Internal: the rows of mm.match_details unrounded, for queues already checked';
REVOKE ALL ON FUNCTION mm.match_details_figures(text[], interval, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_details_figures(text[], interval, timestamptz, text) TO mm_analyst;

-- Per match figures, rounded.  The figures are read LATERAL to the checked
-- scope, so the checks run first and always.
CREATE OR REPLACE FUNCTION mm.match_details(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
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

-- The match figures gain columns: drop the view and the functions over them
-- (mm.health_report is replaced below).
DROP VIEW mm.match_stats;
DROP FUNCTION mm.match_stats(interval, timestamptz);
DROP FUNCTION mm.match_metrics(text, interval, timestamptz);

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
--    cancelled.
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
COMMENT ON FUNCTION mm.match_figures(text, interval, timestamptz) IS
'Internal: the figures of mm.match_metrics unrounded';

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

CREATE VIEW mm.match_stats AS
	SELECT * FROM mm.match_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.match_stats IS 'mm.match_stats(time_window) over the last hour';

REVOKE ALL ON FUNCTION mm.match_figures(text, interval, timestamptz),
				   mm.match_metrics(text, interval, timestamptz),
				   mm.match_stats(interval, timestamptz) FROM PUBLIC;
REVOKE ALL ON mm.match_stats FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_figures(text, interval, timestamptz),
					  mm.match_metrics(text, interval, timestamptz),
					  mm.match_stats(interval, timestamptz) TO mm_analyst;
GRANT SELECT ON mm.match_stats TO mm_analyst;

-- The health report judges the figures unrounded, rounded to 3 decimals as
-- shown (the percentages from the unrounded shares); otherwise as in 0.3.
CREATE OR REPLACE FUNCTION mm.health_report(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
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

-- Per minute, rounded (otherwise as in 0.3).
CREATE OR REPLACE FUNCTION mm.queue_stats_by_minute(queue text, from_time timestamptz, to_time timestamptz)
RETURNS TABLE (minute timestamptz, tickets_created bigint, tickets_matched bigint,
			   time_to_match_avg_s float8, time_to_match_p95_s float8, matches bigint,
			   quality_avg float8, timeouts bigint, cancellations bigint, searching_at_end bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	WITH r AS MATERIALIZED (
		SELECT * FROM mm.metrics_minutes(queue_stats_by_minute.queue, from_time, to_time)
	), minutes AS (
		SELECT g AS minute
		  FROM r CROSS JOIN LATERAL generate_series(r.first_minute, r.last_end - '1 minute'::interval,
													'1 minute'::interval) g
	), created AS (
		SELECT date_trunc('minute', t.created_at) AS minute, count(*) AS n
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue
		   AND t.created_at >= r.first_minute AND t.created_at < r.last_end
		 GROUP BY 1
	), matched AS (
		SELECT date_trunc('minute', t.matched_at) AS minute, count(*) AS n,
			   avg((extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8) AS wait_avg,
			   percentile_cont(0.95) WITHIN GROUP (ORDER BY (extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8) AS wait_p95
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue
		   AND t.matched_at >= r.first_minute AND t.matched_at < r.last_end
		 GROUP BY 1
	), formed AS (
		SELECT date_trunc('minute', m.created_at) AS minute, count(*) AS n, avg(m.quality) AS quality
		  FROM r, mm.matches m
		 WHERE m.queue = queue_stats_by_minute.queue
		   AND m.created_at >= r.first_minute AND m.created_at < r.last_end
		 GROUP BY 1
	), ended AS (
		SELECT date_trunc('minute', t.updated_at) AS minute,
			   count(*) FILTER (WHERE t.status = 'timed_out') AS timeouts,
			   count(*) FILTER (WHERE t.status = 'cancelled') AS cancellations
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at >= r.first_minute AND t.updated_at < r.last_end
		 GROUP BY 1
	), alive AS (
		-- tickets searching at the end of some minute of the range: created
		-- before its end, ended (matched, cancelled, timed out) after the first
		-- minute's end or not at all; each read through an index
		SELECT t.created_at, NULL::timestamptz AS ended_at
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('searching', 'proposed')
		   AND t.created_at < r.last_end
		UNION ALL
		SELECT t.created_at, t.matched_at
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.matched_at IS NOT NULL
		   AND t.matched_at >= r.first_minute + '1 minute'::interval AND t.created_at < r.last_end
		UNION ALL
		SELECT t.created_at, t.updated_at
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at >= r.first_minute + '1 minute'::interval AND t.created_at < r.last_end
	), depth_change AS (
		-- +1 in the minute a ticket arrives (or the first minute), -1 in the one it leaves
		SELECT d.minute, sum(d.change) AS change
		  FROM (SELECT greatest(r.first_minute, date_trunc('minute', a.created_at)) AS minute, 1 AS change
				  FROM r, alive a
				UNION ALL
				SELECT date_trunc('minute', a.ended_at), -1
				  FROM r, alive a WHERE a.ended_at < r.last_end) d
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
	 ORDER BY mi.minute
$$;

-- mm.rule_stats: the pass rate rounded like the other figures (3 decimals).
CREATE OR REPLACE VIEW mm.rule_stats AS
SELECT e.queue, e.rule, r.value OPERATOR(pg_catalog.->>) 'type' AS type,
	   e.last_tick_at, e.last_passed, e.last_failed,
	   CASE WHEN e.last_passed OPERATOR(pg_catalog.+) e.last_failed OPERATOR(pg_catalog.>) 0
			THEN pg_catalog.round(e.last_passed::numeric OPERATOR(pg_catalog./)
								  (e.last_passed OPERATOR(pg_catalog.+) e.last_failed), 3) END AS last_pass_rate,
	   e.total_passed, e.total_failed, e.counting_since
  FROM mm.rule_evaluations e
  JOIN mm.queues q ON q.name OPERATOR(pg_catalog.=) e.queue
 CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(q.config OPERATOR(pg_catalog.->) 'rules') r
 WHERE r.value OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) e.rule;
COMMENT ON VIEW mm.rule_stats IS
	'Per queue and rule: the candidates it passed and rejected (docs/metrics.md, "Rule statistics") in the last tick and since the last reset';
