
-- ===================================================================
-- Section: dropping a queue on Citus (docs/scale-out.md)
-- ===================================================================
--
-- The triggers of mm.queues fire on each copy of the reference table on
-- Citus, where they cannot reach the shards: they do nothing there, and
-- mm.drop_queue removes the queue's rows itself (mm.delete_queue_rows).
-- Its statements name the queues they reach.

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

CREATE OR REPLACE FUNCTION mm.drop_queue(name text, force boolean DEFAULT false) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	active_count bigint;
	cancelled_ids bigint[];
	proposed_match record;
	other_queues text[];
	match_queues text[];
	proposing bigint[];
BEGIN
	IF drop_queue.name IS NULL THEN
		RAISE EXCEPTION 'queue name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- FOR UPDATE also blocks new tickets (their validation locks the row FOR KEY SHARE)
	PERFORM FROM mm.queues q WHERE q.name = drop_queue.name FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', drop_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;
	-- and waits for the running ticks of the other queues its tickets search
	-- in (a tick holds its queue FOR SHARE): one of them may be proposing one
	-- of its tickets, and the statements below must see that match
	other_queues := ARRAY(SELECT DISTINCT u.queue FROM mm.tickets_active t, unnest(t.queues) u(queue)
						   WHERE t.queue = drop_queue.name);
	PERFORM FROM mm.queues q WHERE q.name = ANY (other_queues) ORDER BY q.name FOR UPDATE;

	-- a proposed match of the queue may hold tickets of other queues (and
	-- the queue's tickets may be proposed in other queues' matches)
	-- (the queues these tickets and matches can be in: this one, the other
	-- queues of its tickets, and the queues of the tickets that also search
	-- in it; on Citus, those of one shard)
	proposing := ARRAY(SELECT m.id FROM mm.matches m
						WHERE m.queue = drop_queue.name AND m.status = 'proposed');
	match_queues := drop_queue.name || other_queues
					|| ARRAY(SELECT DISTINCT t.queue FROM mm.tickets_active t
							  WHERE t.id IN (SELECT l.ticket_id FROM mm.ticket_queues l
											  WHERE l.queue = drop_queue.name));
	SELECT count(*) INTO active_count FROM mm.tickets_active t
	 WHERE t.queue = ANY (match_queues)
	   AND (t.queue = drop_queue.name OR t.match_id = ANY (proposing));
	IF active_count > 0 THEN
		IF NOT coalesce(drop_queue.force, false) THEN
			RAISE EXCEPTION 'queue "%" still has active tickets', drop_queue.name
				USING ERRCODE = 'object_in_use',
					  DETAIL = format('%s searching or proposed ticket(s) block dropping the queue.',
									  active_count),
					  HINT = 'Cancel them first, or call mm.drop_queue(name, force => true) to cancel them.';
		END IF;
		-- the proposed matches the queue takes part in are cancelled first:
		-- the queue's tickets in them are cancelled, the others search again
		-- in their own queues (none is left proposed in a match that goes
		-- away, no match goes on without its tickets)
		proposing := proposing || ARRAY(SELECT t.match_id FROM mm.tickets_active t
										 WHERE t.queue = drop_queue.name AND t.status = 'proposed');
		FOR proposed_match IN
			SELECT m.id, m.queue FROM mm.matches m
			 WHERE m.queue = ANY (match_queues) AND m.status = 'proposed' AND m.id = ANY (proposing)
			 ORDER BY m.id FOR UPDATE
		LOOP
			cancelled_ids := ARRAY(SELECT t.id FROM mm.tickets_active t
									WHERE t.queue = drop_queue.name AND t.match_id = proposed_match.id);
			PERFORM mm.cancel_proposed_match(proposed_match.queue, proposed_match.id, 'queue_dropped',
											 cancelled_ids, now());
		END LOOP;
		-- cancel them all in one statement (the queue row lock keeps new
		-- tickets out; a ticket locked by a tick is waited for), then tell
		-- every client in ticket_cancelled events split under 8000 bytes
		cancelled_ids := ARRAY(SELECT t.id FROM mm.tickets_active t
								WHERE t.queue = drop_queue.name
								ORDER BY t.id FOR UPDATE);
		SELECT array_agg(c.id ORDER BY c.id) INTO cancelled_ids
		  FROM mm.end_tickets(ARRAY[drop_queue.name], cancelled_ids, 'cancelled', now()) AS c(id);
		IF cancelled_ids IS NOT NULL THEN
			PERFORM mm.notify_ticket_event('ticket_cancelled', drop_queue.name, cancelled_ids);
		END IF;
	END IF;

	-- tickets, matches and everything hanging off them go with the queue
	-- (mm.queues_after_delete; on Citus, where that trigger cannot reach the
	-- shards, mm.delete_queue_rows does it first)
	IF mm.tables_are_distributed() THEN
		PERFORM mm.delete_queue_rows(drop_queue.name);
	END IF;
	DELETE FROM mm.queues q WHERE q.name = drop_queue.name;
END
$$;
