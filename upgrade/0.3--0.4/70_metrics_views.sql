-- Metrics that tell the truth (45_metrics.sql): mm.match_stats over its
-- re-created function, and mm.rule_stats rounded like the other figures.

CREATE VIEW mm.match_stats AS
	SELECT * FROM mm.match_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.match_stats IS 'mm.match_stats(time_window) over the last hour';

REVOKE ALL ON mm.match_stats FROM PUBLIC;
GRANT SELECT ON mm.match_stats TO mm_analyst;

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
