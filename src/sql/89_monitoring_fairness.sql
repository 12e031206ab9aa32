-- Monitoring, fairness (docs/monitoring.md): the share of fair matches per
-- queue, read from mm.match_predictions (one row per team of a rated
-- queue's match, src/sql/82_fairness.sql).

-- Per queue, over the two-team matches formed in (now - time_window, now]
-- that have a prediction for both teams: how many, how many were fair (the
-- favourite's predicted win probability within 0.5 +- 0.02, inclusive) and
-- the share.  Queues without such a match are left out.  Its cost follows
-- the window's matches (mm.matches (queue, created_at)).
CREATE FUNCTION mm.fairness_monitoring(time_window interval, now timestamptz DEFAULT pg_catalog.now())
RETURNS TABLE (queue text, rated_matches bigint, fair_matches bigint, fair_share float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	covered text[] := mm.metrics_scope(NULL, fairness_monitoring.time_window, fairness_monitoring.now);
BEGIN
	RETURN QUERY
	SELECT f.queue, count(*), count(*) FILTER (WHERE f.fair),
		   (count(*) FILTER (WHERE f.fair))::float8 / count(*)
	  FROM (SELECT p.queue, p.match_id,
				   max(p.win_probability) BETWEEN 0.48 AND 0.52 AS fair
			  FROM mm.match_predictions p
			 WHERE p.queue = ANY (covered)
			   AND (p.match_id, p.queue) IN (
					SELECT m.id, m.queue FROM mm.matches m
					 WHERE m.queue = ANY (covered)
					   AND m.created_at > fairness_monitoring.now - fairness_monitoring.time_window
					   AND m.created_at <= fairness_monitoring.now)
			 GROUP BY p.queue, p.match_id
			HAVING count(*) = 2) f
	 GROUP BY f.queue
	 ORDER BY f.queue;
END
$$;
COMMENT ON FUNCTION mm.fairness_monitoring(interval, timestamptz) IS
'Per queue, over the two-team matches with predictions formed in (now - time_window, now]: matches, fair matches (favourite within 0.5 +- 0.02), their share';
REVOKE ALL ON FUNCTION mm.fairness_monitoring(interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.fairness_monitoring(interval, timestamptz) TO mm_analyst;

-- What monitoring/queries.yaml reads: the last hour (enough matches for a share).
CREATE VIEW mm.fairness_monitoring AS
	SELECT * FROM mm.fairness_monitoring('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.fairness_monitoring IS 'mm.fairness_monitoring(time_window) over the last hour';
GRANT SELECT ON TABLE mm.fairness_monitoring TO mm_analyst;
