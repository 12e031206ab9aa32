
-- ===================================================================
-- Section: why is my ticket waiting (docs/tick.md, "Rule statistics")
-- ===================================================================

-- The search counts, per rule, the candidate checks that passed and failed;
-- the tick adds them here once per tick of a queue (one statement).
CREATE TABLE mm.rule_evaluations (
	queue text NOT NULL,
	rule text NOT NULL,
	last_tick_at timestamptz NOT NULL,
	last_passed bigint NOT NULL,
	last_failed bigint NOT NULL,
	total_passed bigint NOT NULL,
	total_failed bigint NOT NULL,
	-- the totals count since this time (the first tick counted, or mm.reset_rule_stats)
	counting_since timestamptz NOT NULL,
	PRIMARY KEY (queue, rule)
);
COMMENT ON TABLE mm.rule_evaluations IS
	'Per queue and rule: candidate checks passed and failed in the last tick and since a reset';
SELECT pg_catalog.pg_extension_config_dump('mm.rule_evaluations', '');

-- A dropped queue's counts go with it (a queue created again under the name
-- starts from none).
CREATE FUNCTION mm.queues_after_delete_rule_stats() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.rule_evaluations e USING old_queues o WHERE e.queue = o.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete_rule_stats() IS
	'Trigger: deletes the rule statistics of deleted queues';
REVOKE ALL ON FUNCTION mm.queues_after_delete_rule_stats() FROM PUBLIC;
CREATE TRIGGER queues_after_delete_rule_stats AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_rule_stats();

-- The counts of the queues' current rules.
CREATE VIEW mm.rule_stats AS
SELECT e.queue, e.rule, r.value OPERATOR(pg_catalog.->>) 'type' AS type,
	   e.last_tick_at, e.last_passed, e.last_failed,
	   CASE WHEN e.last_passed OPERATOR(pg_catalog.+) e.last_failed OPERATOR(pg_catalog.>) 0
			THEN pg_catalog.round(e.last_passed::numeric OPERATOR(pg_catalog./)
								  (e.last_passed OPERATOR(pg_catalog.+) e.last_failed), 4) END AS last_pass_rate,
	   e.total_passed, e.total_failed, e.counting_since
  FROM mm.rule_evaluations e
  JOIN mm.queues q ON q.name OPERATOR(pg_catalog.=) e.queue
 CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(q.config OPERATOR(pg_catalog.->) 'rules') r
 WHERE r.value OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) e.rule;
COMMENT ON VIEW mm.rule_stats IS
	'Per queue and rule: how many candidate checks passed and failed in the last tick and since the last reset';

CREATE FUNCTION mm.reset_rule_stats(queue text, now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n integer;
BEGIN
	PERFORM mm.check_now(reset_rule_stats.now);
	IF NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = reset_rule_stats.queue) THEN
		RAISE EXCEPTION 'queue "%" does not exist', reset_rule_stats.queue USING ERRCODE = 'undefined_object';
	END IF;
	UPDATE mm.rule_evaluations e SET total_passed = 0, total_failed = 0, counting_since = reset_rule_stats.now
	 WHERE e.queue = reset_rule_stats.queue;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END
$$;
COMMENT ON FUNCTION mm.reset_rule_stats(text, timestamptz) IS
	'Starts a queue''s rule totals (mm.rule_stats) from zero; returns the rules reset';

CREATE FUNCTION mm.explain_ticket(ticket_id bigint, now timestamptz DEFAULT pg_catalog.now(),
								   queue text DEFAULT NULL)
RETURNS jsonb
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'mm_explain_ticket';
COMMENT ON FUNCTION mm.explain_ticket(bigint, timestamptz, text) IS
	'Why a searching ticket waits in its queue (or in another queue it searches in): each rule''s threshold now and when it widens, how many searching tickets pass it, what blocks the nearest candidates, the estimated wait';

GRANT SELECT ON mm.rule_stats TO mm_analyst;
GRANT EXECUTE ON FUNCTION mm.reset_rule_stats(text, timestamptz) TO mm_admin;
GRANT EXECUTE ON FUNCTION mm.explain_ticket(bigint, timestamptz, text) TO mm_frontend, mm_director, mm_analyst;
