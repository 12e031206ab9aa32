
-- ===================================================================
-- Section: queue functions in one style
-- ===================================================================
--
-- The install script's style: a function that sets its search_path writes
-- plain operators and functions; only what runs without one (views, index
-- predicates, constraints, DO blocks) qualifies them.  These two 0.2
-- functions qualified both; same behaviour.

CREATE OR REPLACE FUNCTION mm.alter_queue(name text, config jsonb) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF alter_queue.name IS NULL THEN
		RAISE EXCEPTION 'queue name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	UPDATE mm.queues q SET config = alter_queue.config
	 WHERE q.name = alter_queue.name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', alter_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;
END
$$;
CREATE OR REPLACE FUNCTION mm.drop_queue(name text, force boolean DEFAULT false) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	active_count bigint;
	cancelled_ids bigint[];
	proposed_match bigint;
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
	PERFORM FROM mm.queues q
	 WHERE q.name IN (SELECT l.queue FROM mm.ticket_queues l
					   JOIN mm.tickets_active t ON t.id = l.ticket_id
					  WHERE t.queue = drop_queue.name)
	 ORDER BY q.name FOR UPDATE;

	-- a proposed match of the queue may hold tickets of other queues (and
	-- the queue's tickets may be proposed in other queues' matches)
	SELECT count(*) INTO active_count FROM mm.tickets_active t
	 WHERE t.queue = drop_queue.name
		OR t.match_id IN (SELECT m.id FROM mm.matches m
						   WHERE m.queue = drop_queue.name AND m.status = 'proposed');
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
		FOR proposed_match IN
			SELECT m.id FROM mm.matches m
			 WHERE m.status = 'proposed'
			   AND (m.queue = drop_queue.name
					OR m.id IN (SELECT t.match_id FROM mm.tickets_active t
								 WHERE t.queue = drop_queue.name AND t.status = 'proposed'))
			 ORDER BY m.id FOR UPDATE
		LOOP
			PERFORM mm.cancel_proposed_match(proposed_match, 'queue_dropped',
				ARRAY(SELECT t.id FROM mm.tickets_active t
					   WHERE t.match_id = proposed_match AND t.queue = drop_queue.name),
				now());
		END LOOP;
		-- cancel them all in one statement (the queue row lock keeps new
		-- tickets out; a ticket locked by a tick is waited for), then tell
		-- every client in ticket_cancelled events split under 8000 bytes
		SELECT array_agg(c.id ORDER BY c.id) INTO cancelled_ids
		  FROM mm.end_tickets(ARRAY(SELECT t.id FROM mm.tickets_active t
									 WHERE t.queue = drop_queue.name
									 ORDER BY t.id FOR UPDATE),
							  'cancelled', now()) AS c(id);
		IF cancelled_ids IS NOT NULL THEN
			PERFORM mm.notify_ticket_event('ticket_cancelled', drop_queue.name, cancelled_ids);
		END IF;
	END IF;

	-- tickets, matches and everything hanging off them go with the queue
	-- (mm.queues_after_delete)
	DELETE FROM mm.queues q WHERE q.name = drop_queue.name;
END
$$;
