-- The lifecycle by (queue, id) (docs/lifecycle.md): every public lifecycle
-- function gains a form that takes the queue first, whose statements filter
-- on it (on Citus they reach the queue's shard alone, and none joins a table
-- of a queue with one of a player); the id-only forms find the queue with a
-- plain read and call it.  The internal helpers take the queue.

DROP FUNCTION mm.lock_match(bigint, text[], text, timestamptz);
DROP FUNCTION mm.release_match_players(bigint);
DROP FUNCTION mm.cancel_proposed_match(bigint, text, bigint[], timestamptz);
DROP FUNCTION mm.end_tickets(bigint[], text, timestamptz);

CREATE OR REPLACE FUNCTION mm.release_claims(player_ids text[], ticket_ids bigint[])
	RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF coalesce(cardinality(release_claims.player_ids), 0) = 0 THEN
		RETURN;
	END IF;
	DELETE FROM mm.active_players a
	 WHERE a.player_id = ANY (release_claims.player_ids)
	   AND (a.player_id, a.ticket_id) IN (SELECT u.p, u.t FROM unnest(release_claims.player_ids,
																	 release_claims.ticket_ids) u(p, t));
END
$$;
COMMENT ON FUNCTION mm.release_claims(text[], bigint[]) IS
	'Internal: deletes the claims of the given (player, ticket) pairs from mm.active_players';
REVOKE ALL ON FUNCTION mm.release_claims(text[], bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.release_claims(text[], bigint[]) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.end_tickets(queues text[], ticket_ids bigint[], new_status text, ended_at timestamptz)
	RETURNS SETOF bigint
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ended bigint[];
	player_ids text[];
	player_tickets bigint[];
	listed text[];
BEGIN
	WITH moved AS (
		DELETE FROM mm.tickets_active t
		 WHERE t.queue = ANY (end_tickets.queues) AND t.id = ANY (end_tickets.ticket_ids)
		RETURNING t.id, t.queue, t.players, t.created_at, t.queues
	), ins AS (
		INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, queues)
		SELECT m.id, m.queue, m.players, end_tickets.new_status, m.created_at, end_tickets.ended_at, m.queues
		  FROM moved m
		RETURNING id
	)
	SELECT array_agg(i.id ORDER BY i.id) INTO ended FROM ins i;
	IF ended IS NULL THEN
		RETURN;
	END IF;
	SELECT array_agg(p.value ->> 'id' ORDER BY p.value ->> 'id'), array_agg(t.id ORDER BY p.value ->> 'id')
	  INTO player_ids, player_tickets
	  FROM mm.tickets_ended t, jsonb_array_elements(t.players) p
	 WHERE t.queue = ANY (end_tickets.queues) AND t.id = ANY (ended);
	listed := ARRAY(SELECT DISTINCT u.queue FROM mm.tickets_ended t, unnest(t.queues) u(queue)
					 WHERE t.queue = ANY (end_tickets.queues) AND t.id = ANY (ended));
	PERFORM mm.release_claims(player_ids, player_tickets);
	IF cardinality(listed) > 0 THEN
		DELETE FROM mm.ticket_queues o WHERE o.queue = ANY (listed) AND o.ticket_id = ANY (ended);
	END IF;
	RETURN QUERY SELECT u.id FROM unnest(ended) u(id);
END
$$;
COMMENT ON FUNCTION mm.end_tickets(text[], bigint[], text, timestamptz) IS
	'Internal: moves active tickets of the given queues to tickets_ended as cancelled or timed_out and releases their players';
REVOKE ALL ON FUNCTION mm.end_tickets(text[], bigint[], text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.end_tickets(text[], bigint[], text, timestamptz) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.release_match_players(queue text, match_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	player_ids text[];
	ticket_ids bigint[];
BEGIN
	SELECT array_agg(mp.player_id ORDER BY mp.player_id), array_agg(mp.ticket_id ORDER BY mp.player_id)
	  INTO player_ids, ticket_ids
	  FROM mm.match_players mp
	 WHERE mp.queue = release_match_players.queue AND mp.match_id = release_match_players.match_id;
	PERFORM mm.release_claims(player_ids, ticket_ids);
END
$$;
COMMENT ON FUNCTION mm.release_match_players(text, bigint) IS
'Internal: releases the players of an ended match so they may search again';
REVOKE ALL ON FUNCTION mm.release_match_players(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.release_match_players(text, bigint) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.lock_match(queue text, match_id bigint, allowed text[], action text,
							  now timestamptz DEFAULT NULL)
RETURNS mm.matches
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
BEGIN
	IF lock_match.match_id IS NULL THEN
		RAISE EXCEPTION 'match_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	SELECT * INTO m FROM mm.matches x
	 WHERE x.queue = lock_match.queue AND x.id = lock_match.match_id
	   FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'match % does not exist in queue "%"', lock_match.match_id, lock_match.queue
			USING ERRCODE = 'undefined_object';
	END IF;
	IF NOT m.status = ANY (allowed) THEN
		RAISE EXCEPTION 'cannot % match %: it is %', action, m.id, m.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('Only a match that is %s can be %s.',
								array_to_string(allowed, ' or '),
								CASE action WHEN 'leave' THEN 'left'
											WHEN 'complete' THEN 'completed'
											WHEN 'requeue' THEN 'requeued'
											ELSE action || 'ed' END);
	END IF;
	IF lock_match.now < m.created_at THEN
		RAISE EXCEPTION 'now (%) is before match % was formed (%)', lock_match.now, m.id, m.created_at
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN m;
END
$$;
COMMENT ON FUNCTION mm.lock_match(text, bigint, text[], text, timestamptz) IS
'Internal: locks a match row of a queue for a lifecycle step, refusing a missing match, one in another status, or a now before it was formed';
REVOKE ALL ON FUNCTION mm.lock_match(text, bigint, text[], text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.lock_match(text, bigint, text[], text, timestamptz) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.match_queue(match_id bigint)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN (SELECT m.queue FROM mm.matches m WHERE m.id = match_queue.match_id);
END
$$;
COMMENT ON FUNCTION mm.match_queue(bigint) IS
'Internal: the queue of a match (NULL when it does not exist), for the lifecycle functions called by id alone';
REVOKE ALL ON FUNCTION mm.match_queue(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_queue(bigint) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.check_queue_arg(queue text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF check_queue_arg.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.check_queue_arg(text) IS 'Internal: refuses a NULL queue (22004)';
REVOKE ALL ON FUNCTION mm.check_queue_arg(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.check_queue_arg(text) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.match_ticket_queues(queue text)
RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	others bigint[];
BEGIN
	others := ARRAY(SELECT o.ticket_id FROM mm.ticket_queues o WHERE o.queue = match_ticket_queues.queue);
	IF cardinality(others) = 0 THEN
		RETURN ARRAY[match_ticket_queues.queue];
	END IF;
	-- a plain read by id (on Citus it visits every shard, for such tickets only)
	RETURN ARRAY[match_ticket_queues.queue]
		|| ARRAY(SELECT DISTINCT t.queue FROM mm.tickets_active t
				  WHERE t.id = ANY (others) AND t.queue <> match_ticket_queues.queue
				  ORDER BY t.queue);
END
$$;
COMMENT ON FUNCTION mm.match_ticket_queues(text) IS
'Internal: the queues whose active tickets a proposed match of the queue may hold (the queue and those of its tickets from other queues)';
REVOKE ALL ON FUNCTION mm.match_ticket_queues(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.match_ticket_queues(text) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.cancel_proposed_match(queue text, match_id bigint, reason text, cancel_tickets bigint[],
										 now timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	requeued bigint[];
	cancelled bigint[];
	ticket_queues text[] := mm.match_ticket_queues(cancel_proposed_match.queue);
BEGIN
	UPDATE mm.matches x SET status = 'cancelled', cancel_reason = cancel_proposed_match.reason,
		   updated_at = cancel_proposed_match.now
	 WHERE x.queue = cancel_proposed_match.queue AND x.id = cancel_proposed_match.match_id;
	-- the ids first: a function called in a query of a sharded table would
	-- run on the shard (Citus refuses the nested distributed queries)
	cancelled := ARRAY(SELECT t.id FROM mm.tickets_active t
						WHERE t.queue = ANY (ticket_queues)
						  AND t.match_id = cancel_proposed_match.match_id
						  AND t.id = ANY (cancel_tickets));
	SELECT coalesce(array_agg(e ORDER BY e), '{}') INTO cancelled
	  FROM mm.end_tickets(ticket_queues, cancelled, 'cancelled', cancel_proposed_match.now) e;
	WITH back AS (
		UPDATE mm.tickets_active t
		   SET status = 'searching', match_id = NULL, team = NULL, updated_at = cancel_proposed_match.now
		 WHERE t.queue = ANY (ticket_queues)
		   AND t.match_id = cancel_proposed_match.match_id AND t.status = 'proposed'
		RETURNING t.id)
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO requeued FROM back;
	PERFORM mm.notify_match_event('match_cancelled', cancel_proposed_match.match_id,
		jsonb_build_object('reason', cancel_proposed_match.reason,
						   'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', to_jsonb(cancelled)));
END
$$;
COMMENT ON FUNCTION mm.cancel_proposed_match(text, bigint, text, bigint[], timestamptz) IS
'Internal: cancels a proposed match of a queue; the given tickets end as cancelled, the others search again with their age';
REVOKE ALL ON FUNCTION mm.cancel_proposed_match(text, bigint, text, bigint[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cancel_proposed_match(text, bigint, text, bigint[], timestamptz) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.raise_missing_without_queue(kind text, id bigint, queue text, message text)
	RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF raise_missing_without_queue.message
	   = format('%s %s does not exist in queue "%s"', raise_missing_without_queue.kind,
				raise_missing_without_queue.id, raise_missing_without_queue.queue) THEN
		RAISE EXCEPTION '% % does not exist', raise_missing_without_queue.kind, raise_missing_without_queue.id
			USING ERRCODE = 'undefined_object';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.raise_missing_without_queue(text, bigint, text, text) IS
	'Internal: an id-only lifecycle form''s "does not exist" error, raised from the form by queue''s';
REVOKE ALL ON FUNCTION mm.raise_missing_without_queue(text, bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.raise_missing_without_queue(text, bigint, text, text) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.ticket_queue(ticket_id bigint)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN (SELECT t.queue FROM mm.tickets t WHERE t.id = ticket_queue.ticket_id);
END
$$;
COMMENT ON FUNCTION mm.ticket_queue(bigint) IS
'Internal: the queue of a ticket (NULL when it does not exist), for the ticket functions called by id alone';
REVOKE ALL ON FUNCTION mm.ticket_queue(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_queue(bigint) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.claim_is_live(player_id text, ticket_id bigint)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ticket_queue text;
	ticket_match bigint;
BEGIN
	-- plain reads by id (on Citus they visit every shard), then the match
	-- on its queue's shard; SELECT 1: Citus cannot plan a multi-shard
	-- EXISTS without a column
	IF EXISTS (SELECT 1 FROM mm.tickets_active t WHERE t.id = claim_is_live.ticket_id) THEN
		RETURN true;
	END IF;
	SELECT t.queue, t.match_id INTO ticket_queue, ticket_match
	  FROM mm.tickets_ended t WHERE t.id = claim_is_live.ticket_id AND t.match_id IS NOT NULL;
	IF NOT FOUND THEN
		RETURN false;
	END IF;
	RETURN EXISTS (SELECT 1 FROM mm.matches m
					 JOIN mm.match_players mp ON mp.queue = m.queue AND mp.match_id = m.id
						  AND mp.player_id = claim_is_live.player_id
					WHERE m.queue = ticket_queue AND m.id = ticket_match
					  AND m.status IN ('proposed', 'ready', 'assigned')
					  AND mp.left_at IS NULL);
END
$$;
COMMENT ON FUNCTION mm.claim_is_live(text, bigint) IS
'Internal: whether a player''s claim still holds (its ticket is active, or in a live match the player has not left)';
REVOKE ALL ON FUNCTION mm.claim_is_live(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.claim_is_live(text, bigint) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.tickets_after_update() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	final record;
	left_match record;
	m mm.matches;
BEGIN
	-- on Citus this fires on a shard (<table>_<shard id>), which cannot reach
	-- the players' claims: tickets go through mm.create_ticket there
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		PERFORM mm.refuse_ticket_write_on_shard(TG_OP);
	END IF;
	-- a matched ticket's status is final: it sits in its match's players
	SELECT o.id, n.status INTO final
	  FROM old_tickets o JOIN new_tickets n ON n.id = o.id
	 WHERE o.status = 'matched' AND n.status <> 'matched'
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'ticket % is matched: its status cannot become %', final.id, final.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'A matched ticket ends with its match.';
	END IF;
	DELETE FROM mm.active_players ap
	 USING old_tickets o JOIN new_tickets n ON n.id = o.id, jsonb_array_elements(o.players) p
	 WHERE ap.player_id = p.value ->> 'id' AND ap.ticket_id = o.id
	   AND o.status IN ('searching', 'proposed') AND n.status NOT IN ('searching', 'proposed');
	PERFORM mm.claim_players(array_agg(n.id ORDER BY n.id), array_agg(n.queue ORDER BY n.id),
							 array_agg(n.players ORDER BY n.id))
	  FROM old_tickets o JOIN new_tickets n ON n.id = o.id
	 WHERE o.status NOT IN ('searching', 'proposed') AND n.status IN ('searching', 'proposed')
	HAVING count(*) > 0;
	FOR left_match IN
		SELECT o.match_id, array_agg(DISTINCT o.id) AS ticket_ids,
			   array_agg(DISTINCT q.queue) AS queues
		  FROM old_tickets o JOIN new_tickets n ON n.id = o.id,
			   unnest(array_prepend(o.queue, coalesce(o.queues, '{}'))) q(queue)
		 WHERE o.status = 'proposed' AND n.status IN ('searching', 'cancelled', 'timed_out')
		   AND o.match_id IS NOT NULL
		 GROUP BY o.match_id ORDER BY o.match_id
	LOOP
		UPDATE mm.tickets_active t SET match_id = NULL, team = NULL
		 WHERE t.queue = ANY (left_match.queues) AND t.id = ANY (left_match.ticket_ids);
		UPDATE mm.tickets_ended t SET match_id = NULL, team = NULL
		 WHERE t.queue = ANY (left_match.queues) AND t.id = ANY (left_match.ticket_ids);
		-- the match is in one of the tickets' queues
		SELECT * INTO m FROM mm.matches x
		 WHERE x.queue = ANY (left_match.queues) AND x.id = left_match.match_id FOR UPDATE;
		IF m.status = 'proposed' THEN
			PERFORM mm.cancel_proposed_match(m.queue, m.id, 'ticket_cancelled', '{}', greatest(now(), m.created_at));
		END IF;
	END LOOP;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_update() IS
	'Trigger: releases or claims players when an UPDATE moves tickets out of or into searching/proposed';
REVOKE ALL ON FUNCTION mm.tickets_after_update() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_after_update() TO mm_admin;

CREATE OR REPLACE FUNCTION mm.cancel_ticket(queue text, ticket_id bigint) RETURNS boolean
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_status text;
	ticket_match bigint;
	ticket_queues text[];
	m mm.matches;
	cancelled_at timestamptz;
	offenders text[];
BEGIN
	IF cancel_ticket.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF cancel_ticket.ticket_id IS NULL THEN
		RAISE EXCEPTION 'ticket_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- a proposed ticket's match is in its queue or one of its other queues
	SELECT t.match_id, array_prepend(t.queue, coalesce(t.queues, '{}')) INTO ticket_match, ticket_queues
	  FROM mm.tickets_active t
	 WHERE t.queue = cancel_ticket.queue AND t.id = cancel_ticket.ticket_id AND t.status = 'proposed';
	IF ticket_match IS NOT NULL THEN
		SELECT * INTO m FROM mm.matches x
		 WHERE x.queue = ANY (ticket_queues) AND x.id = ticket_match FOR UPDATE;
	END IF;
	-- waits for a tick that holds the ticket; if the tick ended it, the
	-- active row is gone and the ended one tells the outcome
	SELECT t.status, t.match_id, array_prepend(t.queue, coalesce(t.queues, '{}'))
	  INTO ticket_status, ticket_match, ticket_queues
	  FROM mm.tickets_active t WHERE t.queue = cancel_ticket.queue AND t.id = cancel_ticket.ticket_id
	   FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM FROM mm.tickets_ended t WHERE t.queue = cancel_ticket.queue AND t.id = cancel_ticket.ticket_id;
		IF NOT FOUND THEN
			-- a ticket of several queues that another of them matched (a
			-- plain read; on Citus it visits every shard)
			PERFORM 1 FROM mm.tickets_ended t
			 WHERE t.id = cancel_ticket.ticket_id AND cancel_ticket.queue = ANY (t.queues);
		END IF;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ticket % does not exist in queue "%"', cancel_ticket.ticket_id, cancel_ticket.queue
				USING ERRCODE = 'undefined_object';
		END IF;
		RETURN false;
	END IF;

	IF ticket_status = 'proposed' THEN
		IF m.id IS DISTINCT FROM ticket_match THEN
			-- proposed since the first look (a tick in between): lock its match
			-- now; nothing else can change the ticket while it is locked
			SELECT * INTO m FROM mm.matches x
			 WHERE x.queue = ANY (ticket_queues) AND x.id = ticket_match FOR UPDATE;
		END IF;
		cancelled_at := greatest(now(), m.created_at);
		offenders := ARRAY(SELECT mp.player_id FROM mm.match_players mp
							WHERE mp.queue = m.queue AND mp.match_id = m.id
							  AND mp.ticket_id = cancel_ticket.ticket_id
							  AND (cancelled_at <= m.acceptance_deadline OR mp.accepted IS NULL));
		PERFORM mm.cancel_proposed_match(m.queue, m.id, 'ticket_cancelled', ARRAY[cancel_ticket.ticket_id],
										 cancelled_at);
		-- what mm.accept_match(..., false) records, or past the deadline
		-- (where it refuses an answer) what the tick would have
		PERFORM mm.record_offences(m.queue, offenders,
			CASE WHEN cancelled_at <= m.acceptance_deadline THEN 'dodge' ELSE 'acceptance_timeout' END,
			m.id, cancelled_at);
	ELSE
		PERFORM mm.end_tickets(ARRAY[cancel_ticket.queue], ARRAY[cancel_ticket.ticket_id], 'cancelled', now());
	END IF;
	-- signed, delivered at commit only
	PERFORM mm.notify_ticket_event('ticket_cancelled', cancel_ticket.queue, ARRAY[cancel_ticket.ticket_id]);
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.cancel_ticket(text, bigint) IS
	'Cancels a searching or proposed ticket of a queue (true; a proposed one rejects its match, a dodge for the penalties), or returns false when it was no longer active; NOTIFYs mm_events';
REVOKE ALL ON FUNCTION mm.cancel_ticket(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cancel_ticket(text, bigint) TO mm_frontend, mm_admin;

CREATE OR REPLACE FUNCTION mm.cancel_ticket(ticket_id bigint) RETURNS boolean
	LANGUAGE plpgsql STRICT
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	q text := coalesce(mm.ticket_queue(cancel_ticket.ticket_id), '');
BEGIN
	RETURN mm.cancel_ticket(q, cancel_ticket.ticket_id);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without a queue
	PERFORM mm.raise_missing_without_queue('ticket', cancel_ticket.ticket_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.cancel_ticket(bigint) IS
	'Cancels a searching or proposed ticket (true; a proposed one rejects its match, a dodge for the penalties), or returns false when it was no longer active; NOTIFYs mm_events';
REVOKE ALL ON FUNCTION mm.cancel_ticket(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cancel_ticket(bigint) TO mm_frontend, mm_admin;

CREATE OR REPLACE FUNCTION mm.heartbeat(queue text, ticket_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ticket_status text;
BEGIN
	IF heartbeat.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF heartbeat.ticket_id IS NULL THEN
		RAISE EXCEPTION 'ticket_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF heartbeat.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(heartbeat.now) THEN
		RAISE EXCEPTION 'now must be a finite time, not %', heartbeat.now
			USING ERRCODE = 'datetime_field_overflow';
	END IF;
	-- twice at most: a ticket requeued (moved back to the active partition)
	-- between the update and the look at its status is beaten there
	FOR attempt IN 1 .. 2 LOOP
		UPDATE mm.tickets_active t SET heartbeat_at = GREATEST(t.heartbeat_at, heartbeat.now)
		 WHERE t.queue = heartbeat.queue AND t.id = heartbeat.ticket_id;
		IF FOUND THEN
			RETURN true;
		END IF;
		SELECT t.status INTO ticket_status FROM mm.tickets t
		 WHERE t.queue = heartbeat.queue AND t.id = heartbeat.ticket_id;
		IF NOT FOUND THEN
			-- a ticket of several queues that another of them matched (a
			-- plain read; on Citus it visits every shard)
			SELECT t.status INTO ticket_status FROM mm.tickets_ended t
			 WHERE t.id = heartbeat.ticket_id AND heartbeat.queue = ANY (t.queues);
		END IF;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ticket % does not exist in queue "%"', heartbeat.ticket_id, heartbeat.queue
				USING ERRCODE = 'undefined_object';
		END IF;
		IF ticket_status NOT IN ('searching', 'proposed') THEN
			RETURN false;
		END IF;
	END LOOP;
	-- active at the last look after moving in and out of the active
	-- partition twice: the next beat lands
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.heartbeat(text, bigint, timestamptz) IS
'Keeps a searching or proposed ticket of a queue alive in a queue with heartbeat_timeout_seconds (true); false once the ticket ended';
REVOKE ALL ON FUNCTION mm.heartbeat(text, bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.heartbeat(text, bigint, timestamptz) TO mm_frontend;

CREATE OR REPLACE FUNCTION mm.heartbeat(ticket_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.ticket_queue(heartbeat.ticket_id), '');
BEGIN
	RETURN mm.heartbeat(q, heartbeat.ticket_id, heartbeat.now);
EXCEPTION WHEN undefined_object THEN
	-- missing (after the checks of now): the error without a queue
	PERFORM mm.raise_missing_without_queue('ticket', heartbeat.ticket_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.heartbeat(bigint, timestamptz) IS
'Keeps a searching or proposed ticket alive in a queue with heartbeat_timeout_seconds (true); false once the ticket ended';
REVOKE ALL ON FUNCTION mm.heartbeat(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.heartbeat(bigint, timestamptz) TO mm_frontend;

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
COMMENT ON FUNCTION mm.drop_queue(text, boolean) IS
	'Drops a queue with its tickets and matches; refused while tickets are active unless force cancels them';
REVOKE ALL ON FUNCTION mm.drop_queue(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.drop_queue(text, boolean) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.accept_match(queue text, match_id bigint, player_id text, accept boolean,
								now timestamptz DEFAULT pg_catalog.now())
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	answer boolean;
	player_ticket bigint;
	moved bigint[];
	listed text[];
	ticket_queues text[];
BEGIN
	PERFORM mm.check_queue_arg(accept_match.queue);
	PERFORM mm.check_now(accept_match.now);
	IF accept_match.player_id IS NULL OR accept_match.accept IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN accept_match.player_id IS NULL
												  THEN 'player_id' ELSE 'accept' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	m := mm.lock_match(accept_match.queue, accept_match.match_id, ARRAY['proposed', 'ready', 'assigned', 'completed', 'cancelled'],
					   'answer', accept_match.now);
	SELECT mp.accepted, mp.ticket_id INTO answer, player_ticket
	  FROM mm.match_players mp
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = accept_match.player_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'player "%" is not in match %', accept_match.player_id, m.id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF m.status <> 'proposed' THEN
		-- the same answer again is harmless: it returns the outcome
		IF answer IS NOT DISTINCT FROM accept_match.accept THEN
			RETURN m.status;
		END IF;
		RAISE EXCEPTION 'match % is %, no longer waiting for answers', m.id, m.status
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	IF accept_match.now > m.acceptance_deadline THEN
		RAISE EXCEPTION 'the answer came after match %''s acceptance deadline', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('The deadline was %s; the answer came at %s.',
								  m.acceptance_deadline, accept_match.now);
	END IF;
	IF answer IS NOT NULL THEN
		IF answer = accept_match.accept THEN
			RETURN m.status;
		END IF;
		RAISE EXCEPTION 'player "%" already answered match % (%)', accept_match.player_id, m.id,
			  CASE WHEN answer THEN 'accepted' ELSE 'rejected' END
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;

	UPDATE mm.match_players mp SET accepted = accept_match.accept
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = accept_match.player_id;

	IF NOT accept_match.accept THEN
		-- the rejecting player's ticket (the whole party) is cancelled
		PERFORM mm.cancel_proposed_match(m.queue, m.id, 'rejected', ARRAY[player_ticket], accept_match.now);
		RETURN 'cancelled';
	END IF;

	IF EXISTS (SELECT FROM mm.match_players mp
				WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.accepted IS NOT TRUE) THEN
		RETURN 'proposed';
	END IF;

	-- everyone accepted: the tickets end as matched (under the match's
	-- queue, for a ticket of several queues), the players stay claimed by
	-- the live match
	UPDATE mm.matches x SET status = 'ready', updated_at = accept_match.now WHERE x.queue = m.queue AND x.id = m.id;
	ticket_queues := mm.match_ticket_queues(m.queue);
	WITH gone AS (
		DELETE FROM mm.tickets_active t WHERE t.queue = ANY (ticket_queues) AND t.match_id = m.id
		RETURNING t.*
	), ended AS (
		INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, matched_at,
									  match_id, team, queues)
		SELECT g.id, m.queue, g.players, 'matched', g.created_at, accept_match.now, accept_match.now,
			   g.match_id, g.team,
			   CASE WHEN g.queue = m.queue THEN g.queues
					ELSE array_append(array_remove(g.queues, m.queue), g.queue) END
		  FROM gone g
		RETURNING id, queues
	)
	SELECT array_agg(e.id), array_agg(DISTINCT u.queue) FILTER (WHERE u.queue IS NOT NULL)
	  INTO moved, listed
	  FROM ended e LEFT JOIN LATERAL unnest(e.queues) u(queue) ON true;
	-- the tickets of several queues leave the other queues' lists
	IF listed IS NOT NULL THEN
		DELETE FROM mm.ticket_queues o
		 WHERE o.queue = ANY (listed || m.queue) AND o.ticket_id = ANY (moved);
	END IF;
	PERFORM mm.notify_match_event('match_ready', m.id, '{}');
	RETURN 'ready';
END
$$;
COMMENT ON FUNCTION mm.accept_match(text, bigint, text, boolean, timestamptz) IS
'A player''s answer to a proposed match; returns the match status: proposed (waiting), ready (all accepted) or cancelled (rejected)';
REVOKE ALL ON FUNCTION mm.accept_match(text, bigint, text, boolean, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.accept_match(text, bigint, text, boolean, timestamptz) TO mm_frontend, mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.accept_match(match_id bigint, player_id text, accept boolean,
								now timestamptz DEFAULT pg_catalog.now())
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue(accept_match.match_id), '');
BEGIN
	RETURN mm.accept_match(q, accept_match.match_id, accept_match.player_id, accept_match.accept, accept_match.now);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without
	-- a queue, after the checks of the other arguments
	PERFORM mm.raise_missing_without_queue('match', accept_match.match_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.accept_match(bigint, text, boolean, timestamptz) IS
'A player''s answer to a proposed match; returns the match status: proposed (waiting), ready (all accepted) or cancelled (rejected)';
REVOKE ALL ON FUNCTION mm.accept_match(bigint, text, boolean, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.accept_match(bigint, text, boolean, timestamptz) TO mm_frontend, mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.expire_proposed_matches(queue text, now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	expired integer := 0;
	m record;
	due bigint[];
	due_queues text[];
	silent bigint[];
BEGIN
	-- a match being answered right now is left for the next tick
	IF expire_proposed_matches.queue IS NULL THEN
		SELECT coalesce(array_agg(x.id ORDER BY x.acceptance_deadline, x.id), '{}'),
			   coalesce(array_agg(x.queue ORDER BY x.acceptance_deadline, x.id), '{}')
		  INTO due, due_queues
		  FROM (SELECT x.id, x.queue, x.acceptance_deadline FROM mm.matches x
				 WHERE x.status = 'proposed' AND x.acceptance_deadline < expire_proposed_matches.now
				 FOR UPDATE SKIP LOCKED) x;
	ELSE
		due := ARRAY(SELECT x.id FROM mm.matches x
					  WHERE x.queue = expire_proposed_matches.queue AND x.status = 'proposed'
						AND x.acceptance_deadline < expire_proposed_matches.now
					  ORDER BY x.acceptance_deadline, x.id
					  FOR UPDATE SKIP LOCKED);
		due_queues := array_fill(expire_proposed_matches.queue, ARRAY[cardinality(due)]);
	END IF;
	FOR m IN SELECT u.id, u.queue FROM unnest(due, due_queues) WITH ORDINALITY AS u(id, queue, ord)
			  ORDER BY u.ord LOOP
		-- the tickets with a player who did not answer are cancelled (read
		-- first: not a function call inside a query of a sharded table)
		silent := ARRAY(SELECT DISTINCT mp.ticket_id FROM mm.match_players mp
						 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.accepted IS NOT TRUE);
		PERFORM mm.cancel_proposed_match(m.queue, m.id, 'acceptance_timeout', silent,
			expire_proposed_matches.now);
		expired := expired + 1;
	END LOOP;
	RETURN expired;
END
$$;
COMMENT ON FUNCTION mm.expire_proposed_matches(text, timestamptz) IS
'Internal (the tick): cancels proposed matches of a queue (every queue for NULL) past their acceptance deadline; tickets that accepted search again';
REVOKE ALL ON FUNCTION mm.expire_proposed_matches(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.expire_proposed_matches(text, timestamptz) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.assign(queue text, match_id bigint, connection text, properties jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
BEGIN
	PERFORM mm.check_queue_arg(assign.queue);
	IF assign.connection IS NULL OR assign.connection = '' THEN
		RAISE EXCEPTION 'connection must not be empty' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF length(assign.connection) > 1024 THEN
		RAISE EXCEPTION 'connection is longer than 1024 characters' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF assign.properties IS NULL OR jsonb_typeof(assign.properties) <> 'object' THEN
		RAISE EXCEPTION 'properties must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF octet_length(assign.properties::text) > 4096 THEN
		RAISE EXCEPTION 'properties are larger than 4096 bytes'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Keep large data in your own tables.';
	END IF;
	m := mm.lock_match(assign.queue, assign.match_id, ARRAY['ready'], 'assign');
	UPDATE mm.matches x SET status = 'assigned', connection = assign.connection,
		   properties = assign.properties, updated_at = pg_catalog.now()
	 WHERE x.queue = m.queue AND x.id = m.id;
	-- any role may LISTEN: the join data stays out of the event, a player's
	-- backend reads it with mm.get_assignment (the ticket's token)
	PERFORM mm.notify_match_event('match_assigned', m.id, '{}');
END
$$;
COMMENT ON FUNCTION mm.assign(text, bigint, text, jsonb) IS
'Hands a ready match its game server: status assigned, event match_assigned (without the connection: mm.get_assignment has it)';
REVOKE ALL ON FUNCTION mm.assign(text, bigint, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.assign(text, bigint, text, jsonb) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.assign(match_id bigint, connection text, properties jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue(assign.match_id), '');
BEGIN
	PERFORM mm.assign(q, assign.match_id, assign.connection, assign.properties);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without
	-- a queue, after the checks of the other arguments
	PERFORM mm.raise_missing_without_queue('match', assign.match_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.assign(bigint, text, jsonb) IS
'Hands a ready match its game server: status assigned, event match_assigned (without the connection: mm.get_assignment has it)';
REVOKE ALL ON FUNCTION mm.assign(bigint, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.assign(bigint, text, jsonb) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.ticket_assignment(wanted_queue text, wanted_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t record;
	m_id bigint;
	m_status text;
	m_connection text;
	m_properties jsonb;
BEGIN
	IF wanted_queue IS NULL OR wanted_id IS NULL THEN
		RETURN;
	END IF;
	SELECT x.id, x.status, x.match_id, x.team, x.queue, x.queues INTO t
	  FROM mm.tickets x WHERE x.queue = wanted_queue AND x.id = wanted_id;
	IF NOT FOUND THEN
		-- a ticket of several queues that another of them matched (a plain
		-- read; on Citus it visits every shard)
		SELECT x.id, x.status, x.match_id, x.team, x.queue, x.queues INTO t
		  FROM mm.tickets_ended x WHERE x.id = wanted_id AND wanted_queue = ANY (x.queues);
		IF NOT FOUND THEN
			RETURN;
		END IF;
	END IF;
	IF t.match_id IS NOT NULL THEN
		SELECT x.id, x.status, x.connection, x.properties INTO m_id, m_status, m_connection, m_properties
		  FROM mm.matches x
		 WHERE x.queue = ANY (array_prepend(t.queue, coalesce(t.queues, '{}'))) AND x.id = t.match_id;
	END IF;
	RETURN QUERY SELECT t.id, t.status, m_id, m_status, t.team, m_connection, m_properties;
END
$$;
COMMENT ON FUNCTION mm.ticket_assignment(text, bigint) IS
'Internal: a ticket''s assignment by (queue, id), read on the queue''s shard; no row for a ticket not in the queue';
REVOKE ALL ON FUNCTION mm.ticket_assignment(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_assignment(text, bigint) TO mm_admin;

CREATE OR REPLACE FUNCTION mm.get_assignment(queue text, ticket_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.check_queue_arg(get_assignment.queue);
	SELECT a.* FROM mm.ticket_assignment(get_assignment.queue, get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(text, bigint) IS
'For the director: a ticket''s status by (queue, id), its match and the match''s status, team, connection and properties; no row for a ticket not in the queue';
REVOKE ALL ON FUNCTION mm.get_assignment(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(text, bigint) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.get_assignment(ticket_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb)
LANGUAGE sql STABLE STRICT
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT a.* FROM mm.ticket_assignment(mm.ticket_queue(get_assignment.ticket_id), get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(bigint) IS
'For the director: any ticket''s status, its match and the match''s status, team, connection and properties (a frontend passes the ticket''s token)';
-- The id-only form reads any ticket: the director's (and the admin's).
REVOKE ALL ON FUNCTION mm.get_assignment(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(bigint) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.requeue_match(queue text, match_id bigint, reason text,
								 now timestamptz DEFAULT pg_catalog.now())
RETURNS bigint[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	candidates bigint[];
	requeued bigint[];
	player_ids text[];
	player_tickets bigint[];
	candidate_players text[];
	candidate_tickets bigint[];
	stale_players text[];
	stale_tickets bigint[];
	held_players text[];
	held_tickets bigint[];
BEGIN
	PERFORM mm.check_queue_arg(requeue_match.queue);
	PERFORM mm.check_now(requeue_match.now);
	IF requeue_match.reason IS NULL OR requeue_match.reason = '' OR length(requeue_match.reason) > 256 THEN
		RAISE EXCEPTION 'reason must be 1 to 256 characters' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the reasons the extension itself cancels with: a requeue is counted
	-- apart from them (mm.match_stats' matches_requeued)
	IF requeue_match.reason IN ('rejected', 'acceptance_timeout', 'ticket_cancelled', 'queue_dropped', 'expired') THEN
		RAISE EXCEPTION 'reason "%" is one the extension cancels matches with', requeue_match.reason
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Name why the director requeues the match, e.g. server_crashed.';
	END IF;
	m := mm.lock_match(requeue_match.queue, requeue_match.match_id, ARRAY['proposed', 'ready', 'assigned'], 'requeue',
					   requeue_match.now);
	IF m.status = 'proposed' THEN
		-- nobody is cancelled: every ticket searches again (a proposed
		-- ticket is active and holds its players)
		PERFORM mm.cancel_proposed_match(m.queue, m.id, requeue_match.reason, '{}', requeue_match.now);
		SELECT coalesce(array_agg(DISTINCT mp.ticket_id ORDER BY mp.ticket_id), '{}') INTO requeued
		  FROM mm.match_players mp WHERE mp.queue = m.queue AND mp.match_id = m.id;
		RETURN requeued;
	END IF;

	UPDATE mm.matches x SET status = 'cancelled', cancel_reason = requeue_match.reason,
		   updated_at = requeue_match.now
	 WHERE x.queue = m.queue AND x.id = m.id;
	UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = requeue_match.now
	 WHERE b.queue = m.queue AND b.match_id = m.id AND b.status = 'open';

	-- the tickets that may search again: matched here, no player left
	SELECT coalesce(array_agg(t.id ORDER BY t.id), '{}') INTO candidates
	  FROM mm.tickets_ended t
	 WHERE t.queue = m.queue AND t.match_id = m.id AND t.status = 'matched'
	   AND NOT EXISTS (SELECT FROM mm.match_players mp
						WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.ticket_id = t.id
						  AND mp.left_at IS NOT NULL);
	-- the match's players and their tickets, read from the queue's shard:
	-- the claims are written by player below
	SELECT coalesce(array_agg(mp.player_id ORDER BY mp.player_id), '{}'),
		   coalesce(array_agg(mp.ticket_id ORDER BY mp.player_id), '{}')
	  INTO player_ids, player_tickets
	  FROM mm.match_players mp
	 WHERE mp.queue = m.queue AND mp.match_id = m.id;
	SELECT coalesce(array_agg(u.p ORDER BY u.p), '{}'), coalesce(array_agg(u.t ORDER BY u.p), '{}')
	  INTO candidate_players, candidate_tickets
	  FROM unnest(player_ids, player_tickets) u(p, t)
	 WHERE u.t = ANY (candidates);
	-- their players: a claim by another ticket that holds nothing any more
	-- goes (the match is cancelled now, so a claim by this match's own
	-- tickets is kept by the ticket test), then the unclaimed are claimed
	SELECT coalesce(array_agg(a.player_id), '{}'), coalesce(array_agg(a.ticket_id), '{}')
	  INTO held_players, held_tickets
	  FROM mm.active_players a
	 WHERE a.player_id = ANY (candidate_players);
	SELECT coalesce(array_agg(h.p ORDER BY h.p), '{}'), coalesce(array_agg(h.t ORDER BY h.p), '{}')
	  INTO stale_players, stale_tickets
	  FROM unnest(held_players, held_tickets) h(p, t)
	  JOIN unnest(candidate_players, candidate_tickets) u(p, t) ON u.p = h.p AND u.t <> h.t
	 WHERE NOT mm.claim_is_live(h.p, h.t);
	PERFORM mm.release_claims(stale_players, stale_tickets);
	INSERT INTO mm.active_players (player_id, ticket_id, queue)
	SELECT u.p, u.t, m.queue
	  FROM unnest(candidate_players, candidate_tickets) u(p, t)
	 ORDER BY u.p
	ON CONFLICT (player_id) DO NOTHING;
	-- a ticket goes back only when it holds all of its players
	SELECT coalesce(array_agg(a.player_id), '{}'), coalesce(array_agg(a.ticket_id), '{}')
	  INTO held_players, held_tickets
	  FROM mm.active_players a
	 WHERE a.player_id = ANY (candidate_players);
	SELECT coalesce(array_agg(c.id ORDER BY c.id), '{}') INTO candidates
	  FROM unnest(candidates) c(id)
	 WHERE NOT EXISTS (SELECT FROM unnest(candidate_players, candidate_tickets) u(p, t)
						WHERE u.t = c.id
						  AND NOT EXISTS (SELECT FROM unnest(held_players, held_tickets) h(p, t)
										   WHERE h.p = u.p AND h.t = c.id));

	-- they go back to searching with their id and creation time (their
	-- priority)
	WITH back AS (
		DELETE FROM mm.tickets_ended t
		 WHERE t.queue = m.queue AND t.id = ANY (candidates)
		RETURNING t.*
	), ins AS (
		INSERT INTO mm.tickets_active (id, queue, players, status, created_at, updated_at, queues)
		SELECT b.id, b.queue, b.players, 'searching', b.created_at, requeue_match.now, b.queues FROM back b
		RETURNING id, created_at, queues
	), listed AS (
		-- a ticket of several queues searches in all of them again
		INSERT INTO mm.ticket_queues (queue, ticket_id, created_at)
		SELECT u.queue, i.id, i.created_at FROM ins i, unnest(i.queues) u(queue)
		 WHERE EXISTS (SELECT FROM mm.queues q WHERE q.name = u.queue)
	)
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO requeued FROM ins;
	-- their players stay claimed, by the same tickets, now searching; the
	-- players of tickets that stay ended are released
	SELECT coalesce(array_agg(u.p ORDER BY u.p), '{}'), coalesce(array_agg(u.t ORDER BY u.p), '{}')
	  INTO stale_players, stale_tickets
	  FROM unnest(player_ids, player_tickets) u(p, t)
	 WHERE NOT u.t = ANY (requeued);
	PERFORM mm.release_claims(stale_players, stale_tickets);
	PERFORM mm.notify_match_event('match_cancelled', m.id,
		jsonb_build_object('reason', requeue_match.reason, 'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', '[]'::jsonb));
	RETURN requeued;
END
$$;
COMMENT ON FUNCTION mm.requeue_match(text, bigint, text, timestamptz) IS
'Cancels a live match whose allocation failed; its tickets search again with their original age and hold their players (a ticket with a player who left, or who holds another ticket, stays ended); returns their ids';
REVOKE ALL ON FUNCTION mm.requeue_match(text, bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.requeue_match(text, bigint, text, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.requeue_match(match_id bigint, reason text,
								 now timestamptz DEFAULT pg_catalog.now())
RETURNS bigint[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue(requeue_match.match_id), '');
BEGIN
	RETURN mm.requeue_match(q, requeue_match.match_id, requeue_match.reason, requeue_match.now);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without
	-- a queue, after the checks of the other arguments
	PERFORM mm.raise_missing_without_queue('match', requeue_match.match_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.requeue_match(bigint, text, timestamptz) IS
'Cancels a live match whose allocation failed; its tickets search again with their original age and hold their players (a ticket with a player who left, or who holds another ticket, stays ended); returns their ids';
REVOKE ALL ON FUNCTION mm.requeue_match(bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.requeue_match(bigint, text, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.complete_match(queue text, match_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
BEGIN
	PERFORM mm.check_queue_arg(complete_match.queue);
	PERFORM mm.check_now(complete_match.now);
	m := mm.lock_match(complete_match.queue, complete_match.match_id, ARRAY['ready', 'assigned'], 'complete', complete_match.now);
	UPDATE mm.matches x SET status = 'completed', updated_at = complete_match.now WHERE x.queue = m.queue AND x.id = m.id;
	UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = complete_match.now
	 WHERE b.queue = m.queue AND b.match_id = m.id AND b.status = 'open';
	PERFORM mm.release_match_players(m.queue, m.id);
	PERFORM mm.notify_match_event('match_completed', m.id, '{}');
END
$$;
COMMENT ON FUNCTION mm.complete_match(text, bigint, timestamptz) IS
'Ends a played match (ready or assigned): status completed, its players may search again';
REVOKE ALL ON FUNCTION mm.complete_match(text, bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.complete_match(text, bigint, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.complete_match(match_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue(complete_match.match_id), '');
BEGIN
	PERFORM mm.complete_match(q, complete_match.match_id, complete_match.now);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without
	-- a queue, after the checks of the other arguments
	PERFORM mm.raise_missing_without_queue('match', complete_match.match_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.complete_match(bigint, timestamptz) IS
'Ends a played match (ready or assigned): status completed, its players may search again';
REVOKE ALL ON FUNCTION mm.complete_match(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.complete_match(bigint, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.leave_match(queue text, match_id bigint, player_id text,
							   now timestamptz DEFAULT pg_catalog.now())
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	left_already timestamptz;
	player_ticket bigint;
	player_team text;
	request_id bigint;
	slots jsonb;
BEGIN
	PERFORM mm.check_queue_arg(leave_match.queue);
	PERFORM mm.check_now(leave_match.now);
	IF leave_match.player_id IS NULL THEN
		RAISE EXCEPTION 'player_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	m := mm.lock_match(leave_match.queue, leave_match.match_id, ARRAY['ready', 'assigned'], 'leave', leave_match.now);
	SELECT mp.left_at, mp.ticket_id, mp.team INTO left_already, player_ticket, player_team
	  FROM mm.match_players mp
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = leave_match.player_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'player "%" is not in match %', leave_match.player_id, m.id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF left_already IS NOT NULL THEN
		RETURN;
	END IF;
	UPDATE mm.match_players mp SET left_at = leave_match.now
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = leave_match.player_id;
	DELETE FROM mm.active_players a
	 WHERE a.player_id = leave_match.player_id AND a.ticket_id = player_ticket;
	PERFORM mm.notify_match_event('player_left', m.id,
		jsonb_build_object('player_id', leave_match.player_id));
	IF (SELECT coalesce(q.config -> 'auto_backfill' = 'true', false) FROM mm.queues q WHERE q.name = m.queue) THEN
		-- an open request gains the leaver's slot (its team's, or a
		-- free-for-all's "players"); without one, a request is opened
		UPDATE mm.backfill_requests b
		   SET open_slots = jsonb_set(b.open_slots, ARRAY[coalesce(player_team, 'players')],
									  to_jsonb(coalesce((b.open_slots ->> coalesce(player_team, 'players'))::integer, 0) + 1)),
			   updated_at = leave_match.now
		 WHERE b.queue = m.queue AND b.match_id = m.id AND b.status = 'open'
		RETURNING b.id, b.open_slots INTO request_id, slots;
		IF request_id IS NOT NULL THEN
			PERFORM mm.notify_match_event('backfill_requested', m.id,
				jsonb_build_object('request_id', request_id, 'open_slots', slots));
		ELSE
			BEGIN
				PERFORM mm.request_backfill(m.queue, m.id, NULL, leave_match.now);
			EXCEPTION WHEN invalid_parameter_value THEN
				-- "no open slot to fill": the queue's config shrank since the
				-- match formed and leaves no room; the player leaves all the same
				NULL;
			END;
		END IF;
	END IF;
END
$$;
COMMENT ON FUNCTION mm.leave_match(text, bigint, text, timestamptz) IS
'Records a player who left a running match (early quit) and releases them; requests backfill when the queue says auto_backfill';
REVOKE ALL ON FUNCTION mm.leave_match(text, bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.leave_match(text, bigint, text, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.leave_match(match_id bigint, player_id text,
							   now timestamptz DEFAULT pg_catalog.now())
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue(leave_match.match_id), '');
BEGIN
	PERFORM mm.leave_match(q, leave_match.match_id, leave_match.player_id, leave_match.now);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without
	-- a queue, after the checks of the other arguments
	PERFORM mm.raise_missing_without_queue('match', leave_match.match_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.leave_match(bigint, text, timestamptz) IS
'Records a player who left a running match (early quit) and releases them; requests backfill when the queue says auto_backfill';
REVOKE ALL ON FUNCTION mm.leave_match(bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.leave_match(bigint, text, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.request_backfill(queue text, match_id bigint, open_slots jsonb DEFAULT NULL,
									now timestamptz DEFAULT pg_catalog.now())
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	config jsonb;
	slots jsonb := '{}';
	team jsonb;
	team_name text;
	team_max integer;
	present integer;
	match_max integer;
	match_present integer;
	wanted jsonb;
	total integer := 0;
	request_id bigint;
BEGIN
	PERFORM mm.check_queue_arg(request_backfill.queue);
	PERFORM mm.check_now(request_backfill.now);
	m := mm.lock_match(request_backfill.queue, request_backfill.match_id, ARRAY['ready', 'assigned'], 'backfill', request_backfill.now);
	IF EXISTS (SELECT FROM mm.backfill_requests b WHERE b.queue = m.queue AND b.match_id = m.id AND b.status = 'open') THEN
		RAISE EXCEPTION 'match % already has an open backfill request', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Cancel it first with mm.cancel_backfill.';
	END IF;
	SELECT q.config INTO config FROM mm.queues q WHERE q.name = m.queue;
	IF request_backfill.open_slots IS NOT NULL AND jsonb_typeof(request_backfill.open_slots) <> 'object' THEN
		RAISE EXCEPTION 'open_slots must be a JSON object of slots per team'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	IF config ? 'teams' THEN
		-- the match never grows past match_size.max: the default fills the
		-- teams in order up to it, and more slots than it leaves are refused
		match_max := (mm.validate_queue_config(config) #>> '{match_size,max}')::integer;
		SELECT count(*) INTO match_present FROM mm.match_players mp
		 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.left_at IS NULL;
		FOR team IN SELECT value FROM jsonb_array_elements(config -> 'teams') LOOP
			team_name := team ->> 'name';
			team_max := (team ->> 'max')::integer;
			SELECT count(*) INTO present FROM mm.match_players mp
			 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.team = team_name AND mp.left_at IS NULL;
			wanted := coalesce(request_backfill.open_slots -> team_name,
							   CASE WHEN request_backfill.open_slots IS NULL
									THEN to_jsonb(greatest(least(team_max - present, match_max - match_present - total), 0))
									ELSE '0' END);
			IF jsonb_typeof(wanted) <> 'number' OR wanted::numeric <> trunc(wanted::numeric)
			   OR wanted::numeric < 0 OR wanted::numeric > greatest(team_max - present, 0) THEN
				RAISE EXCEPTION 'open_slots.% must be a whole number from 0 to %', team_name,
					greatest(team_max - present, 0)
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('Team %s has %s of at most %s players.', team_name, present, team_max);
			END IF;
			slots := slots || jsonb_build_object(team_name, wanted::integer);
			total := total + wanted::integer;
		END LOOP;
		IF total > match_max - match_present THEN
			RAISE EXCEPTION 'open_slots ask for % players, more than the % the match has room for', total,
				greatest(match_max - match_present, 0)
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The match has %s of at most %s players (match_size.max).', match_present, match_max);
		END IF;
		SELECT k INTO team_name FROM jsonb_object_keys(coalesce(request_backfill.open_slots, '{}')) k
		 WHERE NOT slots ? k LIMIT 1;
		IF team_name IS NOT NULL THEN
			RAISE EXCEPTION 'open_slots.% is not a team of queue "%"', team_name, m.queue
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
	ELSE
		-- a free-for-all: {"players": n}
		team_max := coalesce((config #>> '{match_size,max}')::integer, (config ->> 'match_size')::integer);
		SELECT count(*) INTO present FROM mm.match_players mp
		 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.left_at IS NULL;
		wanted := coalesce(request_backfill.open_slots -> 'players', to_jsonb(greatest(team_max - present, 0)));
		IF jsonb_typeof(wanted) <> 'number' OR wanted::numeric <> trunc(wanted::numeric)
		   OR wanted::numeric < 0 OR wanted::numeric > greatest(team_max - present, 0) THEN
			RAISE EXCEPTION 'open_slots.players must be a whole number from 0 to %', greatest(team_max - present, 0)
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		SELECT k INTO team_name FROM jsonb_object_keys(coalesce(request_backfill.open_slots, '{}')) k
		 WHERE k <> 'players' LIMIT 1;
		IF team_name IS NOT NULL THEN
			RAISE EXCEPTION 'open_slots.% is not allowed in a free-for-all (use "players")', team_name
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		slots := jsonb_build_object('players', wanted::integer);
		total := wanted::integer;
	END IF;
	IF total = 0 THEN
		RAISE EXCEPTION 'match % has no open slot to fill', m.id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	INSERT INTO mm.backfill_requests (match_id, queue, open_slots, created_at)
	VALUES (m.id, m.queue, slots, request_backfill.now)
	RETURNING id INTO request_id;
	PERFORM mm.notify_match_event('backfill_requested', m.id,
		jsonb_build_object('request_id', request_id, 'open_slots', slots));
	RETURN request_id;
END
$$;
COMMENT ON FUNCTION mm.request_backfill(text, bigint, jsonb, timestamptz) IS
'Asks the tick to fill open slots of a running match (default: each team up to its max); returns the request id';
REVOKE ALL ON FUNCTION mm.request_backfill(text, bigint, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.request_backfill(text, bigint, jsonb, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.request_backfill(match_id bigint, open_slots jsonb DEFAULT NULL,
									now timestamptz DEFAULT pg_catalog.now())
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue(request_backfill.match_id), '');
BEGIN
	RETURN mm.request_backfill(q, request_backfill.match_id, request_backfill.open_slots, request_backfill.now);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without
	-- a queue, after the checks of the other arguments
	PERFORM mm.raise_missing_without_queue('match', request_backfill.match_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.request_backfill(bigint, jsonb, timestamptz) IS
'Asks the tick to fill open slots of a running match (default: each team up to its max); returns the request id';
REVOKE ALL ON FUNCTION mm.request_backfill(bigint, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.request_backfill(bigint, jsonb, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.cancel_backfill(queue text, match_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	request_id bigint;
BEGIN
	PERFORM mm.check_queue_arg(cancel_backfill.queue);
	PERFORM mm.check_now(cancel_backfill.now);
	PERFORM mm.lock_match(cancel_backfill.queue, cancel_backfill.match_id,
						  ARRAY['proposed', 'ready', 'assigned', 'completed', 'cancelled'], 'backfill');
	UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = cancel_backfill.now
	 WHERE b.queue = cancel_backfill.queue AND b.match_id = cancel_backfill.match_id AND b.status = 'open'
	RETURNING b.id INTO request_id;
	IF request_id IS NULL THEN
		RETURN false;
	END IF;
	PERFORM mm.notify_match_event('backfill_cancelled', cancel_backfill.match_id,
		jsonb_build_object('request_id', request_id));
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.cancel_backfill(text, bigint, timestamptz) IS
'Cancels a match''s open backfill request (true), or returns false when it had none';
REVOKE ALL ON FUNCTION mm.cancel_backfill(text, bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cancel_backfill(text, bigint, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.cancel_backfill(match_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue(cancel_backfill.match_id), '');
BEGIN
	RETURN mm.cancel_backfill(q, cancel_backfill.match_id, cancel_backfill.now);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without
	-- a queue, after the checks of the other arguments
	PERFORM mm.raise_missing_without_queue('match', cancel_backfill.match_id, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.cancel_backfill(bigint, timestamptz) IS
'Cancels a match''s open backfill request (true), or returns false when it had none';
REVOKE ALL ON FUNCTION mm.cancel_backfill(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cancel_backfill(bigint, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.get_assignment(ticket_id bigint, token text)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.check_ticket_token(get_assignment.ticket_id, get_assignment.token);
	SELECT a.* FROM mm.get_assignment(get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(bigint, text) IS
'For a polling client holding its ticket''s token: the ticket''s status, its match and the match''s status, team, connection and properties; 42501 for a wrong token';
REVOKE ALL ON FUNCTION mm.get_assignment(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(bigint, text) TO mm_frontend, mm_director;

CREATE OR REPLACE FUNCTION mm.get_assignment(queue text, ticket_id bigint, token text)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.check_queue_arg(get_assignment.queue);
	SELECT mm.check_ticket_token(get_assignment.ticket_id, get_assignment.token);
	SELECT a.* FROM mm.ticket_assignment(get_assignment.queue, get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(text, bigint, text) IS
'For a polling client holding its ticket''s token: the ticket''s status by (queue, id), its match and the match''s status, team, connection and properties; 42501 for a wrong token';
REVOKE ALL ON FUNCTION mm.get_assignment(text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(text, bigint, text) TO mm_frontend, mm_director;

CREATE OR REPLACE FUNCTION mm.report_result(queue text, match_id bigint, ranks jsonb, now timestamptz)
RETURNS TABLE (player_id text, team text, rank integer, rating_before float8, rating_after float8)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	m mm.matches;
	config jsonb;
	rating_system text;
	pool_name text;
	leavers_lose boolean;
	boost_on boolean;
	free_for_all boolean;
	some_without_team boolean;
	-- per player, in player_id order
	ids text[];
	teams text[];
	sides text[];
	player_ranks integer[];
	dense_ranks integer[];
	side_numbers integer[];
	scored_loss boolean[];
	old_rating float8[];
	old_rd float8[];
	old_volatility float8[];
	old_mu float8[];
	old_sigma float8[];
	cur_rating float8[];
	cur_rd float8[];
	cur_volatility float8[];
	cur_mu float8[];
	cur_sigma float8[];
	new_rating float8[];
	new_rd float8[];
	new_volatility float8[];
	new_mu float8[];
	new_sigma float8[];
	games integer[];
	boosts float8[];
	win_counts integer[];
	-- per side, in side order
	side_list text[];
	side_ranks integer[];
	side_rating float8[];
	side_rd float8[];
	side_count integer;
	best_rank integer;
	winner text;
	favourite text;
	favourite_probability float8;
	probabilities float8[];
	rank_key text;
	rank_value jsonb;
	missing text;
	leaver_side text;
	leaver_ranks integer[];
	leaver_mu float8[];
	leaver_sigma float8[];
	event_details jsonb;
BEGIN
	IF report_result.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF report_result.match_id IS NULL THEN
		RAISE EXCEPTION 'match_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF report_result.ranks IS NULL THEN
		RAISE EXCEPTION 'ranks must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(report_result.now);

	-- The match first: a concurrent report waits here, then sees it completed.
	SELECT * INTO m FROM mm.matches mt
	 WHERE mt.queue = report_result.queue AND mt.id = report_result.match_id FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'match % does not exist in queue "%"', report_result.match_id, report_result.queue
			USING ERRCODE = 'undefined_object';
	END IF;
	IF EXISTS (SELECT FROM mm.match_results r WHERE r.queue = m.queue AND r.match_id = m.id) THEN
		RAISE EXCEPTION 'match % already has a result', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'A match gets one result; the first report stands.';
	END IF;
	IF m.status NOT IN ('ready', 'assigned') THEN
		RAISE EXCEPTION 'cannot report a result for match %: it is %', m.id, m.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Only a ready or assigned match can get a result.';
	END IF;
	IF report_result.now < m.created_at THEN
		RAISE EXCEPTION 'now (%) is before match % was created (%)', report_result.now, m.id, m.created_at
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	-- The players and their sides: teams, or the players themselves in a
	-- free-for-all (a match whose players have no team).
	SELECT array_agg(mp.player_id ORDER BY mp.player_id),
		   array_agg(mp.team ORDER BY mp.player_id),
		   array_agg(coalesce(mp.team, mp.player_id) ORDER BY mp.player_id),
		   array_agg(mp.left_at IS NOT NULL ORDER BY mp.player_id),
		   bool_and(mp.team IS NULL), bool_or(mp.team IS NULL)
	  INTO ids, teams, sides, scored_loss, free_for_all, some_without_team
	  FROM mm.match_players mp WHERE mp.queue = m.queue AND mp.match_id = m.id;
	IF ids IS NULL THEN
		RAISE EXCEPTION 'match % has no players', m.id USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	IF NOT free_for_all AND some_without_team THEN
		RAISE EXCEPTION 'match % has players with and without a team', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	side_list := ARRAY(SELECT DISTINCT s FROM unnest(sides) s ORDER BY s);
	side_count := cardinality(side_list);

	-- ranks: one positive integer per side, nothing else.
	IF jsonb_typeof(report_result.ranks) <> 'object' THEN
		RAISE EXCEPTION 'ranks must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = CASE WHEN free_for_all
								THEN 'Give each player of the free-for-all a rank, e.g. {"p1": 1, "p2": 2}.'
								ELSE 'Give each team a rank, e.g. {"red": 1, "blue": 2}.' END;
	END IF;
	FOR rank_key, rank_value IN SELECT e.key, e.value FROM jsonb_each(report_result.ranks) e ORDER BY e.key
	LOOP
		IF NOT rank_key = ANY (side_list) THEN
			RAISE EXCEPTION '% is not a % of match %', mm.ranks_path(rank_key),
				CASE WHEN free_for_all THEN 'player' ELSE 'team' END, m.id
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The %s of match %s: %s.',
									  CASE WHEN free_for_all THEN 'players' ELSE 'teams' END, m.id,
									  array_to_string(side_list, ', '));
		END IF;
		IF NOT (CASE WHEN jsonb_typeof(rank_value) = 'number'
					 THEN rank_value::text::numeric = trunc(rank_value::text::numeric)
						  AND rank_value::text::numeric BETWEEN 1 AND 2147483647
					 ELSE false END) THEN
			RAISE EXCEPTION '% must be a positive integer', mm.ranks_path(rank_key)
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Got %s.', left(rank_value::text, 100)),
					  HINT = 'Rank 1 is the best; equal ranks are a tie.';
		END IF;
	END LOOP;
	SELECT min(s) INTO missing FROM unnest(side_list) s WHERE NOT report_result.ranks ? s;
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION '% is missing', mm.ranks_path(missing)
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Every %s of match %s needs a rank: %s.',
								  CASE WHEN free_for_all THEN 'player' ELSE 'team' END, m.id,
								  array_to_string(side_list, ', '));
	END IF;

	side_ranks := ARRAY(SELECT (report_result.ranks ->> s)::numeric::integer FROM unnest(side_list) WITH ORDINALITY u(s, i)
						 ORDER BY u.i);
	player_ranks := ARRAY(SELECT (report_result.ranks ->> s)::numeric::integer FROM unnest(sides) WITH ORDINALITY u(s, i)
						   ORDER BY u.i);
	side_numbers := ARRAY(SELECT array_position(side_list, s) FROM unnest(sides) WITH ORDINALITY u(s, i)
						   ORDER BY u.i);
	-- the winner: the side with the best rank, when no other side shares it
	best_rank := (SELECT min(r) FROM unnest(side_ranks) r);
	IF (SELECT count(*) FROM unnest(side_ranks) r WHERE r = best_rank) = 1 THEN
		winner := side_list[array_position(side_ranks, best_rank)];
	END IF;

	-- The queue's rating system and pool (the pool defaults to the queue's name).
	SELECT q.config INTO config FROM mm.queues q WHERE q.name = m.queue;
	rating_system := config #>> '{rating,system}';
	pool_name := coalesce(config #>> '{rating,pool}', m.queue);
	leavers_lose := mm.rating_option(config, 'leavers_lose');
	boost_on := mm.rating_option(config, 'boost');
	IF rating_system NOT IN ('glicko2', 'elo', 'openskill') OR side_count < 2 THEN
		rating_system := NULL;
	END IF;
	IF NOT leavers_lose THEN
		scored_loss := array_fill(false, ARRAY[cardinality(ids)]);
	END IF;

	IF rating_system IS NOT NULL THEN
		-- unrated players start at the system's defaults
		INSERT INTO mm.ratings AS r (player_id, pool, rating, rd, volatility, mu, sigma, games, wins, updated_at)
		SELECT u.id, pool_name,
			   CASE WHEN rating_system IN ('glicko2', 'elo') THEN 1500 END,
			   CASE WHEN rating_system = 'glicko2' THEN 350 END,
			   CASE WHEN rating_system = 'glicko2' THEN 0.06 END,
			   CASE WHEN rating_system = 'openskill' THEN 25 END,
			   CASE WHEN rating_system = 'openskill' THEN 25 / 3.0 END,
			   0, 0, report_result.now
		  FROM unnest(ids) u(id)
		 ORDER BY u.id
		ON CONFLICT ON CONSTRAINT ratings_pkey DO NOTHING;
		-- lock the rows in player order (as mm.decay_ratings does), one
		-- player at a time (on Citus each on its player's shard)
		FOREACH rank_key IN ARRAY ids LOOP
			PERFORM FROM mm.ratings rt WHERE rt.player_id = rank_key AND rt.pool = pool_name FOR UPDATE;
		END LOOP;
		SELECT array_agg(r.rating ORDER BY r.player_id), array_agg(r.rd ORDER BY r.player_id),
			   array_agg(r.volatility ORDER BY r.player_id), array_agg(r.mu ORDER BY r.player_id),
			   array_agg(r.sigma ORDER BY r.player_id), array_agg(r.games ORDER BY r.player_id)
		  INTO old_rating, old_rd, old_volatility, old_mu, old_sigma, games
		  FROM mm.ratings r
		 WHERE r.pool = pool_name AND r.player_id = ANY (ids);
		-- a row another system wrote in the same pool lacks fields: defaults
		cur_rating := ARRAY(SELECT coalesce(x, 1500) FROM unnest(old_rating) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_rd := ARRAY(SELECT coalesce(x, 350) FROM unnest(old_rd) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_volatility := ARRAY(SELECT coalesce(x, 0.06) FROM unnest(old_volatility) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_mu := ARRAY(SELECT coalesce(x, 25) FROM unnest(old_mu) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_sigma := ARRAY(SELECT coalesce(x, 25 / 3.0) FROM unnest(old_sigma) WITH ORDINALITY u(x, i) ORDER BY u.i);
		new_rating := old_rating;
		new_rd := old_rd;
		new_volatility := old_volatility;
		new_mu := old_mu;
		new_sigma := old_sigma;

		-- The rating boost (placement, smurf suspicion) multiplies each
		-- player's change.  Suspicion: mm.smurf_score from the pool's games and
		-- wins, the last 10 ratings, and avg_kda, mvp_rate, headshot_rate in
		-- mm.players.attributes (no suspicion without avg_kda and mvp_rate).
		IF boost_on THEN
			boosts := ARRAY(
				SELECT mm.rating_boost(coalesce(mm.smurf_score(
						   u.g, CASE WHEN u.g > 0 THEN least(rt.wins::float8 / u.g, 1) ELSE 0 END,
						   mm.attribute_number(pl.attributes, 'avg_kda', 0, 1e6),
						   mm.attribute_number(pl.attributes, 'mvp_rate', 0, 1),
						   h.recent,
						   mm.attribute_number(pl.attributes, 'headshot_rate', 0, 1)), 0), u.g)
				  FROM unnest(ids, games) WITH ORDINALITY u(id, g, i)
				  JOIN mm.ratings rt ON rt.pool = pool_name AND rt.player_id = u.id
				  LEFT JOIN mm.players pl ON pl.id = u.id
				 CROSS JOIN LATERAL (
					SELECT coalesce(array_agg(x.v ORDER BY x.created_at, x.id), '{}') AS recent
					  FROM (SELECT coalesce(rh.rating_after, rh.mu_after) AS v, rh.created_at, rh.id
							  FROM mm.rating_history rh
							 WHERE rh.player_id = u.id AND rh.pool = pool_name AND rh.match_id IS NOT NULL
							 ORDER BY rh.created_at DESC, rh.id DESC LIMIT 10) x
					 WHERE x.v IS NOT NULL) h
				 ORDER BY u.i);
		ELSE
			boosts := array_fill(1.0::float8, ARRAY[cardinality(ids)]);
		END IF;

		-- Each side's strength before the game: the mean rating (Glicko-2 and
		-- Elo), and for Glicko-2 the mean RD.
		SELECT array_agg(s.rating ORDER BY s.side), array_agg(s.rd ORDER BY s.side)
		  INTO side_rating, side_rd
		  FROM (SELECT x.side, mm.team_rating(x.rating, 1) AS rating, avg(x.rd) AS rd
				  FROM unnest(sides, cur_rating, cur_rd) x(side, rating, rd)
				 GROUP BY x.side) s;

		-- The prediction, from the ratings before the update.
		IF rating_system = 'openskill' THEN
			probabilities := mm.openskill_predict_win(cur_mu, cur_sigma, side_numbers);
		ELSE
			-- each side's mean of mm.win_probability against every other side
			-- over the n(n-1)/2 pairs (the two-side case is win_probability)
			probabilities := ARRAY(
				SELECT sum(mm.win_probability(a.r, b.r)) / (side_count * (side_count - 1) / 2.0)
				  FROM (SELECT x.side, array_agg(x.rating) AS r FROM unnest(sides, cur_rating) x(side, rating)
						 GROUP BY x.side) a
				  JOIN (SELECT x.side, array_agg(x.rating) AS r FROM unnest(sides, cur_rating) x(side, rating)
						 GROUP BY x.side) b ON a.side <> b.side
				 GROUP BY a.side ORDER BY a.side);
		END IF;
		SELECT p.side, least(greatest(p.probability, 0), 1) INTO favourite, favourite_probability
		  FROM unnest(side_list, probabilities) p(side, probability)
		 ORDER BY p.probability DESC, p.side LIMIT 1;

		IF rating_system = 'glicko2' THEN
			-- One rating period per game: a player against the composite
			-- player of every opposing side (1 for a better rank, 0.5 for a
			-- tie, 0 for a worse one; a leaver scored as a loss gets 0 against
			-- every side).
			SELECT array_agg(p.rating + p.boost * ((g.u).rating - p.rating) ORDER BY p.i),
				   array_agg((g.u).rd ORDER BY p.i), array_agg((g.u).volatility ORDER BY p.i)
			  INTO new_rating, new_rd, new_volatility
			  FROM unnest(sides, player_ranks, scored_loss, cur_rating, cur_rd, cur_volatility, boosts)
				   WITH ORDINALITY p(side, rank, loss, rating, rd, volatility, boost, i)
			 CROSS JOIN LATERAL (
				SELECT mm.glicko2_update(p.rating, p.rd, p.volatility,
										 array_agg(o.rating ORDER BY o.side), array_agg(o.rd ORDER BY o.side),
										 array_agg(CASE WHEN p.loss THEN 0 WHEN p.rank < o.rank THEN 1
														WHEN p.rank = o.rank THEN 0.5 ELSE 0 END::float8
												   ORDER BY o.side)) AS u
				  FROM unnest(side_list, side_ranks, side_rating, side_rd) o(side, rank, rating, rd)
				 WHERE o.side <> p.side) g;
		ELSIF rating_system = 'elo' THEN
			-- Team Elo: the side's mean against each opposing side's mean,
			-- K of the player (mm.elo_k_factor), averaged over the opponents.
			SELECT array_agg(p.rating + p.boost * mm.elo_k_factor(p.games, p.rating) * d.change ORDER BY p.i)
			  INTO new_rating
			  FROM unnest(sides, player_ranks, scored_loss, cur_rating, games, boosts)
				   WITH ORDINALITY p(side, rank, loss, rating, games, boost, i)
			 CROSS JOIN LATERAL (
				SELECT avg(CASE WHEN p.loss THEN 0 WHEN p.rank < o.rank THEN 1
								WHEN p.rank = o.rank THEN 0.5 ELSE 0 END
						   - mm.elo_expected(side_rating[array_position(side_list, p.side)], o.rating)) AS change
				  FROM unnest(side_list, side_ranks, side_rating) o(side, rank, rating)
				 WHERE o.side <> p.side) d;
		ELSE
			-- OpenSkill over the whole match; only the order of the ranks counts.
			dense_ranks := ARRAY(SELECT (SELECT count(DISTINCT r2) FROM unnest(side_ranks) r2 WHERE r2 <= u.r)::integer
								   FROM unnest(player_ranks) WITH ORDINALITY u(r, i) ORDER BY u.i);
			SELECT array_agg(r.mu ORDER BY r.i), array_agg(r.sigma ORDER BY r.i) INTO new_mu, new_sigma
			  FROM mm.openskill_rate(cur_mu, cur_sigma, side_numbers, dense_ranks) WITH ORDINALITY r(mu, sigma, i);
			-- A leaver scored as a loss: its side ranked below every other in a
			-- second run, of which only the leavers of that side keep the result.
			FOR leaver_side IN SELECT DISTINCT x.side FROM unnest(sides, scored_loss) x(side, loss)
								WHERE x.loss ORDER BY x.side
			LOOP
				leaver_ranks := ARRAY(SELECT CASE WHEN x.side = leaver_side THEN side_count + 1 ELSE x.r END
										FROM unnest(sides, dense_ranks) WITH ORDINALITY x(side, r, i) ORDER BY x.i);
				SELECT array_agg(r.mu ORDER BY r.i), array_agg(r.sigma ORDER BY r.i) INTO leaver_mu, leaver_sigma
				  FROM mm.openskill_rate(cur_mu, cur_sigma, side_numbers, leaver_ranks)
					   WITH ORDINALITY r(mu, sigma, i);
				SELECT array_agg(CASE WHEN x.side = leaver_side AND x.loss THEN x.lmu ELSE x.mu END ORDER BY x.i),
					   array_agg(CASE WHEN x.side = leaver_side AND x.loss THEN x.lsigma ELSE x.sigma END ORDER BY x.i)
				  INTO new_mu, new_sigma
				  FROM unnest(sides, scored_loss, new_mu, new_sigma, leaver_mu, leaver_sigma)
					   WITH ORDINALITY x(side, loss, mu, sigma, lmu, lsigma, i);
			END LOOP;
			new_mu := ARRAY(SELECT x.mu + x.boost * (x.new_mu - x.mu)
							  FROM unnest(cur_mu, new_mu, boosts) WITH ORDINALITY x(mu, new_mu, boost, i)
							 ORDER BY x.i);
		END IF;

		win_counts := ARRAY(SELECT (x.side IS NOT DISTINCT FROM winner AND NOT x.loss)::integer
							  FROM unnest(sides, scored_loss) WITH ORDINALITY x(side, loss, i) ORDER BY x.i);
		UPDATE mm.ratings r
		   SET rating = u.rating, rd = u.rd, volatility = u.volatility, mu = u.mu, sigma = u.sigma,
			   games = r.games + 1, wins = r.wins + u.win, updated_at = report_result.now
		  FROM unnest(ids, new_rating, new_rd, new_volatility, new_mu, new_sigma, win_counts)
			   u(id, rating, rd, volatility, mu, sigma, win)
		 WHERE r.pool = pool_name AND r.player_id = u.id;
		INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
									   mu_before, mu_after, sigma_before, sigma_after,
									   volatility_before, volatility_after, created_at)
		SELECT u.id, pool_name, m.id, u.rating_before, u.rating_after, u.rd_before, u.rd_after,
			   u.mu_before, u.mu_after, u.sigma_before, u.sigma_after, u.volatility_before, u.volatility_after,
			   report_result.now
		  FROM unnest(ids, old_rating, new_rating, old_rd, new_rd, old_mu, new_mu, old_sigma, new_sigma,
					  old_volatility, new_volatility)
			   u(id, rating_before, rating_after, rd_before, rd_after, mu_before, mu_after, sigma_before,
				 sigma_after, volatility_before, volatility_after);
	END IF;

	INSERT INTO mm.match_results (match_id, queue, winner_team, ranks, predicted_favourite,
								  favourite_win_probability, duration, reported_at)
	VALUES (m.id, m.queue, winner, report_result.ranks, favourite, favourite_probability,
			report_result.now - m.created_at, report_result.now);

	-- completed, players released, match_completed; then the result's event
	PERFORM mm.complete_match(m.queue, m.id, report_result.now);
	event_details := jsonb_build_object('winner', winner, 'ranks', report_result.ranks);
	IF length(event_details::text) > 6000 THEN
		-- a big free-for-all: the compact form (the ranks are in mm.match_results)
		event_details := jsonb_build_object('winner', winner, 'truncated', true);
	END IF;
	PERFORM mm.notify_match_event('match_result', m.id, event_details);

	RETURN QUERY
	SELECT u.id, u.team, u.rank,
		   CASE rating_system WHEN 'openskill' THEN u.mu_before ELSE u.rating_before END,
		   CASE rating_system WHEN 'openskill' THEN u.mu_after ELSE u.rating_after END
	  FROM unnest(ids, teams, player_ranks, old_rating, new_rating, old_mu, new_mu)
		   WITH ORDINALITY u(id, team, rank, rating_before, rating_after, mu_before, mu_after, i)
	 ORDER BY u.i;
END
$$;
COMMENT ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz) IS
'Reports the ranks of a ready or assigned match (by team, or by player in a free-for-all): completes it, writes mm.match_results and updates every player''s stored rating in the queue''s pool; returns each player''s rating before and after';
REVOKE ALL ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.report_result(text, bigint, jsonb, timestamptz) TO mm_director, mm_admin;

CREATE OR REPLACE FUNCTION mm.report_result(match_id bigint, ranks jsonb,
								 now timestamptz DEFAULT pg_catalog.now())
RETURNS TABLE (player_id text, team text, rank integer, rating_before float8, rating_after float8)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := coalesce(mm.match_queue($1), '');
BEGIN
	RETURN QUERY SELECT * FROM mm.report_result(q, $1, $2, $3);
EXCEPTION WHEN undefined_object THEN
	-- missing (or gone while waiting for its lock): the error without
	-- a queue, after the checks of the other arguments
	PERFORM mm.raise_missing_without_queue('match', $1, q, SQLERRM);
	RAISE;
END
$$;
COMMENT ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) IS
'Reports the ranks of a ready or assigned match (by team, or by player in a free-for-all): completes it, writes mm.match_results and updates every player''s stored rating in the queue''s pool; returns each player''s rating before and after';
REVOKE ALL ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) TO mm_director, mm_admin;
