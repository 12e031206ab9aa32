
-- ===================================================================
-- Section: dropping a queue on Citus (docs/scale-out.md)
-- ===================================================================
--
-- The triggers of mm.queues fire on each copy of the reference table on
-- Citus, where they cannot reach the shards: they do nothing there, and
-- mm.drop_queue (80_lifecycle_by_queue.sql) removes the queue's rows itself
-- (mm.delete_queue_rows).

CREATE OR REPLACE FUNCTION mm.queues_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- on Citus this fires on each copy of the reference table (<table>_<shard
	-- id>), where it cannot reach the shards: mm.drop_queue cleans up there
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		RETURN NULL;
	END IF;
	DELETE FROM mm.tickets t USING old_queues q WHERE t.queue = q.name;
	DELETE FROM mm.match_players mp USING old_queues q WHERE mp.queue = q.name;
	DELETE FROM mm.matches m USING old_queues q WHERE m.queue = q.name;
	-- their pg_cron jobs too (mm.schedule_jobs_after_delete unschedules them)
	DELETE FROM mm.schedule_jobs j USING old_queues q WHERE j.queue = q.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete() IS
	'Trigger: deletes the tickets, matches and scheduled jobs of deleted queues';

CREATE OR REPLACE FUNCTION mm.queues_after_delete_unlist() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- on Citus this fires on each copy of the reference table (<table>_<shard
	-- id>), where it cannot reach the shards: mm.drop_queue cleans up there
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		RETURN NULL;
	END IF;
	DELETE FROM mm.ticket_queues q USING old_queues o WHERE q.queue = o.name;
	-- the deleted queues' own tickets are gone (queues_after_delete ran first)
	DELETE FROM mm.ticket_queues q
	 WHERE NOT EXISTS (SELECT FROM mm.tickets_active t WHERE t.id = q.ticket_id);
	UPDATE mm.tickets_active t
	   SET queues = nullif(ARRAY(SELECT u.queue FROM unnest(t.queues) WITH ORDINALITY u(queue, ord)
								  WHERE u.queue NOT IN (SELECT o.name FROM old_queues o)
								  ORDER BY u.ord), '{}')
	 WHERE t.queues && ARRAY(SELECT o.name FROM old_queues o);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete_unlist() IS
	'Trigger: removes deleted queues from the other queues of active tickets';

CREATE OR REPLACE FUNCTION mm.queues_after_delete_rule_stats() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- on Citus this fires on each copy of the reference table (<table>_<shard
	-- id>), where it cannot reach the shards: mm.drop_queue cleans up there
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		RETURN NULL;
	END IF;
	DELETE FROM mm.rule_evaluations e USING old_queues o WHERE e.queue = o.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete_rule_stats() IS
	'Trigger: deletes the rule statistics of deleted queues';
