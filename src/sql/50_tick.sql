-- The tick (src/tick.c, src/match_search.c, src/rules.c; docs/tick.md):
-- mm.tick forms the matches of a queue (and expires its proposals, live
-- matches and silent tickets, fills backfill requests, announces what it
-- did); what the last tick of the session did; the rule statistics and
-- mm.explain_ticket, which tell why a ticket waits.

-- The tick writes what its callers may not (tickets, matches, rule
-- statistics) and signs its events (the key is read by the extension itself,
-- whoever calls): it runs as the extension's owner, so mm_ticker needs no
-- privilege on any table.  What it runs is fixed by the queue's config,
-- which only mm_admin writes; the caller chooses the queue and the time
-- (`now`).  A queue's match function runs as the role that named it, never
-- as the ticker or the owner (mm.queues.match_function_role).
CREATE FUNCTION mm.tick(queue text DEFAULT NULL,
						now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE C VOLATILE CALLED ON NULL INPUT
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'mm_tick';
COMMENT ON FUNCTION mm.tick(text, timestamptz) IS
'Forms matches in a queue (all queues when NULL) as of now; returns the number of matches formed';
REVOKE ALL ON FUNCTION mm.tick(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tick(text, timestamptz) TO mm_admin, mm_ticker;

CREATE FUNCTION mm.last_tick_stats(
	OUT queue text,
	OUT locked_out boolean,
	OUT tickets_loaded integer,
	OUT tickets_timed_out integer,
	OUT matches integer,
	OUT players_matched integer,
	OUT load_ms float8,
	OUT compute_ms float8,
	OUT write_ms float8,
	OUT memory_bytes bigint)
RETURNS SETOF record
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'mm_last_tick_stats';
COMMENT ON FUNCTION mm.last_tick_stats() IS
'Per queue, what the last mm.tick() of this session did: tickets, matches, phase timings and peak memory';
REVOKE ALL ON FUNCTION mm.last_tick_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.last_tick_stats() TO mm_admin, mm_ticker;

-- Custom match functions (src/match_function.c; docs/match-functions.md): a
-- queue's config may name "match_function": "schema.function", a function
-- (queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb that
-- proposes the queue's matches; the C evaluator checks the proposals and
-- commits the best non-overlapping ones.  Only mm_admin writes queues.
CREATE FUNCTION mm.match_function_stats()
RETURNS TABLE (queue text, proposals integer, accepted integer, rejected_malformed integer,
			   rejected_stale integer, rejected_teams integer, rejected_rules integer,
			   rejected_overlap integer)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'mm_match_function_stats';
COMMENT ON FUNCTION mm.match_function_stats() IS
'Per queue with a match function, what this session''s last mm.tick() got: proposals, accepted, and rejected by reason';
REVOKE ALL ON FUNCTION mm.match_function_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_function_stats() TO mm_admin, mm_analyst;


-- Why is my ticket waiting (docs/tick.md, "Rule statistics"): the search
-- counts, per rule, the candidate checks that passed and failed;
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
GRANT SELECT ON TABLE mm.rule_evaluations TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.rule_evaluations TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.rule_evaluations', '');

-- A dropped queue's counts go with it (a queue created again under the name
-- starts from none).
CREATE FUNCTION mm.queues_after_delete_rule_stats() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- a copy of the reference table on Citus: nothing to do (Citus rule 12)
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		RETURN NULL;
	END IF;
	DELETE FROM mm.rule_evaluations e USING old_queues o WHERE e.queue = o.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete_rule_stats() IS
	'Trigger: deletes the rule statistics of deleted queues';
REVOKE ALL ON FUNCTION mm.queues_after_delete_rule_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queues_after_delete_rule_stats() TO mm_admin;
CREATE TRIGGER queues_after_delete_rule_stats AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_rule_stats();

-- The counts of the queues' current rules; the pass rate is rounded like the
-- other figures (3 decimals).
CREATE VIEW mm.rule_stats AS
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
GRANT SELECT ON TABLE mm.rule_stats TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.rule_stats TO mm_admin;

CREATE FUNCTION mm.reset_rule_stats(queue text, now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n integer;
BEGIN
	IF reset_rule_stats.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
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
REVOKE ALL ON FUNCTION mm.reset_rule_stats(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.reset_rule_stats(text, timestamptz) TO mm_admin;

CREATE FUNCTION mm.explain_ticket(ticket_id bigint, now timestamptz DEFAULT pg_catalog.now(),
								   queue text DEFAULT NULL)
RETURNS jsonb
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'mm_explain_ticket';
COMMENT ON FUNCTION mm.explain_ticket(bigint, timestamptz, text) IS
	'Why a searching ticket waits in its queue (or in another queue it searches in): each rule''s threshold now and when it widens, how many searching tickets pass it, what blocks the nearest candidates, the estimated wait';
REVOKE ALL ON FUNCTION mm.explain_ticket(bigint, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.explain_ticket(bigint, timestamptz, text) TO mm_frontend, mm_director, mm_analyst, mm_admin;
