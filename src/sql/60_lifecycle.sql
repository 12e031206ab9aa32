-- The match lifecycle (docs/lifecycle.md): acceptance, assignment, requeue,
-- completion, leavers, backfill requests.
--
-- proposed --accept all--> ready --assign--> assigned --complete/result--> completed
--    |                       |                   |
--    +--reject/timeout--+    +------requeue / cancel------+--> cancelled
--
-- A match is live while proposed, ready or assigned.  Its players stay
-- claimed in mm.active_players (by the ticket that brought them) until it
-- ends or they leave it, so a player in a live match cannot search again.
-- A live match expires after the queue's live_match_timeout_seconds,
-- counted from mm.matches.ready_at (the tick cancels it as expired).
-- mm.report_result, which also ends a match, is in 70_ratings.sql.

-- Every step has two forms: by (queue, id), the one Citus routes (Citus
-- rules 2 and 3), and by id alone, which finds the match's queue and calls
-- the first (Citus rule 4).

-- Releases the claims a match's tickets hold (the match ended; on Citus
-- left to the queue's tick: mm.release_queue_claims).
CREATE FUNCTION mm.release_match_players(queue text, match_id bigint)
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
	PERFORM mm.release_queue_claims(release_match_players.queue, player_ids, ticket_ids);
END
$$;
COMMENT ON FUNCTION mm.release_match_players(text, bigint) IS
'Internal: releases the players of an ended match so they may search again';
REVOKE ALL ON FUNCTION mm.release_match_players(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.release_match_players(text, bigint) TO mm_admin;

-- Locks a match of a queue for a lifecycle step and returns it; errors for
-- a match missing from the queue, one not in an allowed status, or a step
-- dated before the match was formed (now, when given).  Read by key
-- (src/match_lock.c), on the queue's shards on its Citus node.
CREATE FUNCTION mm.lock_match(queue text, match_id bigint, allowed text[], action text,
							  now timestamptz DEFAULT NULL)
RETURNS mm.matches
AS 'MODULE_PATHNAME', 'mm_lock_match'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION mm.lock_match(text, bigint, text[], text, timestamptz) IS
'Internal: locks a match row of a queue for a lifecycle step, refusing a missing match, one in another status, or a now before it was formed';
REVOKE ALL ON FUNCTION mm.lock_match(text, bigint, text[], text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.lock_match(text, bigint, text[], text, timestamptz) TO mm_admin;

-- The queue of a match, for the id-only forms (Citus rule 4): a plain
-- read, no lock.  NULL for a missing match.
CREATE FUNCTION mm.match_queue(match_id bigint)
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

-- Refuses a NULL queue in the (queue, id) forms.
CREATE FUNCTION mm.check_queue_arg(queue text)
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

-- The queues whose active tickets a proposed match of a queue may hold:
-- the queue, and the own queues of the tickets that also search in it
-- (mm.ticket_queues; on Citus these share the queue's shard).
CREATE FUNCTION mm.match_ticket_queues(queue text)
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
	-- a plain read by id, for such tickets only (Citus rule 4)
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

CREATE FUNCTION mm.check_now(now timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF check_now.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(check_now.now) THEN
		RAISE EXCEPTION 'now must be a finite time, not %', check_now.now
			USING ERRCODE = 'datetime_field_overflow';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.check_now(timestamptz) IS 'Internal: refuses a NULL or infinite now';
REVOKE ALL ON FUNCTION mm.check_now(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.check_now(timestamptz) TO mm_admin;

-- Cancels a proposed match of a queue: the tickets in cancel_tickets end
-- as cancelled (their players released); every other ticket of the match
-- searches again with its original creation time.
CREATE FUNCTION mm.cancel_proposed_match(queue text, match_id bigint, reason text, cancel_tickets bigint[],
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
	-- the ids first (Citus rule 6)
	cancelled := ARRAY(SELECT t.id FROM mm.tickets_active t
						WHERE t.queue = ANY (ticket_queues)
						  AND t.match_id = cancel_proposed_match.match_id
						  AND t.id = ANY (cancel_tickets));
	SELECT coalesce(array_agg(e ORDER BY e), '{}') INTO cancelled
	  FROM mm.end_tickets(ticket_queues, cancelled, 'cancelled', cancel_proposed_match.now) e;
	-- those an UPDATE by hand already ended (mm.tickets_after_update) are
	-- listed too
	IF cardinality(cancelled) < cardinality(cancel_tickets) THEN
		cancelled := ARRAY(SELECT DISTINCT u.id
							 FROM unnest(cancelled || ARRAY(
									  SELECT t.id FROM mm.tickets_ended t
									   WHERE t.queue = ANY (ticket_queues) AND t.id = ANY (cancel_tickets)
										 AND t.status IN ('cancelled', 'timed_out'))) u(id)
							ORDER BY u.id);
	END IF;
	WITH back AS (
		UPDATE mm.tickets_active t
		   SET status = 'searching', match_id = NULL, team = NULL, updated_at = cancel_proposed_match.now
		 WHERE t.queue = ANY (ticket_queues)
		   AND t.match_id = cancel_proposed_match.match_id AND t.status = 'proposed'
		RETURNING t.id)
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO requeued FROM back;
	PERFORM mm.notify_match_event('match_cancelled', cancel_proposed_match.queue, cancel_proposed_match.match_id,
		jsonb_build_object('reason', cancel_proposed_match.reason,
						   'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', to_jsonb(cancelled)));
END
$$;
COMMENT ON FUNCTION mm.cancel_proposed_match(text, bigint, text, bigint[], timestamptz) IS
'Internal: cancels a proposed match of a queue; the given tickets end as cancelled, the others search again with their age';
REVOKE ALL ON FUNCTION mm.cancel_proposed_match(text, bigint, text, bigint[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cancel_proposed_match(text, bigint, text, bigint[], timestamptz) TO mm_admin;

CREATE FUNCTION mm.accept_match(queue text, match_id bigint, player_id text, accept boolean,
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
	home_queue text;
	gone_rows jsonb;
	ended record;
	moved bigint[] := '{}';
	listed text[] := '{}';
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
	-- the same answer again is harmless, also past the deadline (a retry)
	IF answer = accept_match.accept THEN
		RETURN m.status;
	END IF;
	IF accept_match.now > m.acceptance_deadline THEN
		RAISE EXCEPTION 'the answer came after match %''s acceptance deadline', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('The deadline was %s; the answer came at %s.',
								  m.acceptance_deadline, accept_match.now);
	END IF;
	IF answer IS NOT NULL THEN
		RAISE EXCEPTION 'player "%" already answered match % (%)', accept_match.player_id, m.id,
			  CASE WHEN answer THEN 'accepted' ELSE 'rejected' END
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;

	UPDATE mm.match_players mp SET accepted = accept_match.accept
	 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.player_id = accept_match.player_id;

	IF NOT accept_match.accept THEN
		-- the rejecting player's ticket (the whole party) is cancelled; the
		-- player, and only the player, has dodged (penalties, 65_penalties.sql)
		PERFORM mm.cancel_proposed_match(m.queue, m.id, 'rejected', ARRAY[player_ticket], accept_match.now);
		PERFORM mm.record_offences(m.queue, ARRAY[accept_match.player_id], 'dodge', m.id, accept_match.now);
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
	-- Queue by queue (a ticket of several queues lives under its own), the
	-- deleted rows handed to the insert as JSON, as mm.end_tickets does: on
	-- Citus each statement runs on one shard.
	FOREACH home_queue IN ARRAY mm.match_ticket_queues(m.queue) LOOP
		WITH gone AS (
			DELETE FROM mm.tickets_active t WHERE t.queue = home_queue AND t.match_id = m.id
			RETURNING t.id, t.players, t.created_at, t.team, t.queues
		)
		SELECT jsonb_agg(to_jsonb(g)) INTO gone_rows FROM gone g;
		CONTINUE WHEN gone_rows IS NULL;
		FOR ended IN
			INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, matched_at,
										  match_id, team, queues)
			SELECT r.id, m.queue, r.players, 'matched', r.created_at, accept_match.now, accept_match.now,
				   m.id, r.team,
				   CASE WHEN home_queue = m.queue THEN r.queues
						ELSE array_append(array_remove(r.queues, m.queue), home_queue) END
			  FROM jsonb_to_recordset(gone_rows) AS r(id bigint, players jsonb, created_at timestamptz,
													 team text, queues text[])
			RETURNING id, queues
		LOOP
			moved := moved || ended.id;
			listed := listed || coalesce(ended.queues, '{}');
		END LOOP;
	END LOOP;
	-- the tickets of several queues leave the other queues' lists
	IF cardinality(listed) > 0 THEN
		DELETE FROM mm.ticket_queues o
		 WHERE o.queue = ANY (ARRAY(SELECT DISTINCT u.queue FROM unnest(listed) u(queue)) || m.queue)
		   AND o.ticket_id = ANY (moved);
	END IF;
	PERFORM mm.notify_match_event('match_ready', m.queue, m.id, '{}');
	RETURN 'ready';
END
$$;
COMMENT ON FUNCTION mm.accept_match(text, bigint, text, boolean, timestamptz) IS
'A player''s answer to a proposed match; returns the match status: proposed (waiting), ready (all accepted) or cancelled (rejected)';
REVOKE ALL ON FUNCTION mm.accept_match(text, bigint, text, boolean, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.accept_match(text, bigint, text, boolean, timestamptz) TO mm_frontend, mm_director, mm_admin;

-- By id alone: the match's queue found by a plain read.
CREATE FUNCTION mm.accept_match(match_id bigint, player_id text, accept boolean,
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

-- Called by the tick before it searches: for its queue, or for every queue
-- (queue NULL) once at the start of mm.tick(NULL), so a tick of many queues
-- does not probe mm.matches once per queue while it fills it.
CREATE FUNCTION mm.expire_proposed_matches(queue text, now timestamptz)
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
	silent_players text[];
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
		silent_players := ARRAY(SELECT mp.player_id FROM mm.match_players mp
								 WHERE mp.queue = m.queue AND mp.match_id = m.id AND mp.accepted IS NULL);
		PERFORM mm.cancel_proposed_match(m.queue, m.id, 'acceptance_timeout', silent,
			expire_proposed_matches.now);
		-- the players who never answered let it time out (penalties)
		PERFORM mm.record_offences(m.queue, silent_players, 'acceptance_timeout', m.id,
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

CREATE FUNCTION mm.assign(queue text, match_id bigint, connection text, properties jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
BEGIN
	PERFORM mm.check_queue_arg(assign.queue);
	IF assign.connection IS NULL OR assign.properties IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN assign.connection IS NULL THEN 'connection' ELSE 'properties' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF assign.connection = '' THEN
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
	PERFORM mm.notify_match_event('match_assigned', m.queue, m.id, '{}');
END
$$;
COMMENT ON FUNCTION mm.assign(text, bigint, text, jsonb) IS
'Hands a ready match its game server: status assigned, event match_assigned (without the connection: mm.get_assignment has it)';
REVOKE ALL ON FUNCTION mm.assign(text, bigint, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.assign(text, bigint, text, jsonb) TO mm_director, mm_admin;

-- By id alone: the match's queue found by a plain read.
CREATE FUNCTION mm.assign(match_id bigint, connection text, properties jsonb DEFAULT '{}')
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

-- A ticket's assignment by (queue, id).  The ticket's queue is its own, or
-- for a ticket of several queues one of them (once matched, the queue that
-- matched it is its own); its match is in one of them.  roles: the role of
-- each of the ticket's players in the match ({"p1": "tank"}), NULL in a match
-- without roles.  Its reads are by key (src/ticket_assignment.c), on the
-- queue's shards on its Citus node.
CREATE FUNCTION mm.ticket_assignment(wanted_queue text, wanted_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
AS 'MODULE_PATHNAME', 'mm_ticket_assignment'
LANGUAGE C STABLE STRICT
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION mm.ticket_assignment(text, bigint) IS
'Internal: a ticket''s assignment by (queue, id), read on the queue''s shard; no row for a ticket not in the queue';
REVOKE ALL ON FUNCTION mm.ticket_assignment(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_assignment(text, bigint) TO mm_admin;

-- The director's forms.  Every form of mm.get_assignment is polled for
-- every waiting ticket: C (src/ticket_assignment.c), so that a call plans
-- nothing.  By (queue, id): a NULL queue is refused (22004), a NULL id has
-- no row.
CREATE FUNCTION mm.get_assignment(queue text, ticket_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
AS 'MODULE_PATHNAME', 'mm_get_assignment'
LANGUAGE C STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION mm.get_assignment(text, bigint) IS
'For the director: a ticket''s status by (queue, id), its match and the match''s status, team, connection, properties and its players'' roles; no row for a ticket not in the queue';
REVOKE ALL ON FUNCTION mm.get_assignment(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(text, bigint) TO mm_director, mm_admin;

CREATE FUNCTION mm.get_assignment(ticket_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
AS 'MODULE_PATHNAME', 'mm_get_assignment_by_id'
LANGUAGE C STABLE STRICT
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION mm.get_assignment(bigint) IS
'For the director: any ticket''s status, its match and the match''s status, team, connection, properties and its players'' roles (a frontend passes the ticket''s token)';
-- The id-only form reads any ticket: the director's (and the admin's).
REVOKE ALL ON FUNCTION mm.get_assignment(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(bigint) TO mm_director, mm_admin;

-- Requeue holds the players it puts back to searching.  A ticket goes back
-- only when every one of its players is held by it: normally they already
-- are (the claim of the live match), an unclaimed one (in a match formed by
-- 0.1 or 0.2 that the upgrade could not claim for them) is claimed now.  A
-- ticket with a player who left, or whom another active ticket or live match
-- holds meanwhile, stays ended, and its other players are released.  The
-- claims are taken in player order under the primary key, like
-- mm.claim_players, so a concurrent mm.create_ticket for the same player
-- either waits and is refused, or wins and the requeue leaves that ticket
-- ended.
CREATE FUNCTION mm.requeue_match(queue text, match_id bigint, reason text,
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
	back_rows jsonb;
BEGIN
	PERFORM mm.check_queue_arg(requeue_match.queue);
	PERFORM mm.check_now(requeue_match.now);
	IF requeue_match.reason IS NULL THEN
		RAISE EXCEPTION 'reason must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF requeue_match.reason = '' OR length(requeue_match.reason) > 256 THEN
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
	-- (the claims by other tickets first, OFFSET 0 keeping the planner from
	-- testing every claim: mm.claim_is_live reads a ticket by id, on Citus
	-- every shard)
	SELECT coalesce(array_agg(o.p ORDER BY o.p), '{}'), coalesce(array_agg(o.t ORDER BY o.p), '{}')
	  INTO stale_players, stale_tickets
	  FROM (SELECT h.p, h.t
			  FROM unnest(held_players, held_tickets) h(p, t)
			  JOIN unnest(candidate_players, candidate_tickets) u(p, t) ON u.p = h.p AND u.t <> h.t
			OFFSET 0) o
	 WHERE NOT mm.claim_is_live(o.p, o.t);
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
	-- priority); the deleted rows handed to the inserts as JSON, as
	-- mm.end_tickets does, so that on Citus each statement runs on the
	-- shards it writes
	WITH back AS (
		DELETE FROM mm.tickets_ended t
		 WHERE t.queue = m.queue AND t.id = ANY (candidates)
		RETURNING t.id, t.players, t.created_at, t.queues
	)
	SELECT coalesce(jsonb_agg(to_jsonb(b)), '[]') INTO back_rows FROM back b;
	INSERT INTO mm.tickets_active (id, queue, players, status, created_at, updated_at, queues)
	SELECT r.id, m.queue, r.players, 'searching', r.created_at, requeue_match.now, r.queues
	  FROM jsonb_to_recordset(back_rows) AS r(id bigint, players jsonb, created_at timestamptz, queues text[]);
	-- a ticket of several queues searches in all of them again
	INSERT INTO mm.ticket_queues (queue, ticket_id, created_at)
	SELECT u.queue, r.id, r.created_at
	  FROM jsonb_to_recordset(back_rows) AS r(id bigint, created_at timestamptz, queues text[]),
		   unnest(r.queues) u(queue)
	 WHERE EXISTS (SELECT FROM mm.queues q WHERE q.name = u.queue);
	requeued := ARRAY(SELECT (x ->> 'id')::bigint FROM jsonb_array_elements(back_rows) x ORDER BY 1);
	-- their players stay claimed, by the same tickets, now searching; the
	-- players of tickets that stay ended are released
	SELECT coalesce(array_agg(u.p ORDER BY u.p), '{}'), coalesce(array_agg(u.t ORDER BY u.p), '{}')
	  INTO stale_players, stale_tickets
	  FROM unnest(player_ids, player_tickets) u(p, t)
	 WHERE NOT u.t = ANY (requeued);
	PERFORM mm.release_claims(stale_players, stale_tickets);
	PERFORM mm.notify_match_event('match_cancelled', m.queue, m.id,
		jsonb_build_object('reason', requeue_match.reason, 'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', '[]'::jsonb));
	RETURN requeued;
END
$$;
COMMENT ON FUNCTION mm.requeue_match(text, bigint, text, timestamptz) IS
'Cancels a live match whose allocation failed; its tickets search again with their original age and hold their players (a ticket with a player who left, or who holds another ticket, stays ended); returns their ids';
REVOKE ALL ON FUNCTION mm.requeue_match(text, bigint, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.requeue_match(text, bigint, text, timestamptz) TO mm_director, mm_admin;

-- By id alone: the match's queue found by a plain read.
CREATE FUNCTION mm.requeue_match(match_id bigint, reason text,
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

CREATE FUNCTION mm.complete_match(queue text, match_id bigint, now timestamptz DEFAULT pg_catalog.now())
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
	PERFORM mm.notify_match_event('match_completed', m.queue, m.id, '{}');
END
$$;
COMMENT ON FUNCTION mm.complete_match(text, bigint, timestamptz) IS
'Ends a played match (ready or assigned): status completed, its players may search again';
REVOKE ALL ON FUNCTION mm.complete_match(text, bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.complete_match(text, bigint, timestamptz) TO mm_director, mm_admin;

-- By id alone: the match's queue found by a plain read.
CREATE FUNCTION mm.complete_match(match_id bigint, now timestamptz DEFAULT pg_catalog.now())
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

CREATE FUNCTION mm.leave_match(queue text, match_id bigint, player_id text,
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
	PERFORM mm.release_queue_claims(m.queue, ARRAY[leave_match.player_id], ARRAY[player_ticket]);
	PERFORM mm.notify_match_event('player_left', m.queue, m.id,
		jsonb_build_object('player_id', leave_match.player_id));
	-- leaving a live match early is an offence (penalties)
	PERFORM mm.record_offences(m.queue, ARRAY[leave_match.player_id], 'leave', m.id, leave_match.now);
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
			PERFORM mm.notify_match_event('backfill_requested', m.queue, m.id,
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

-- By id alone: the match's queue found by a plain read.
CREATE FUNCTION mm.leave_match(match_id bigint, player_id text,
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

-- Backfill: open slots of a running match, served by the tick before it
-- forms new matches (src/tick.c).  The request carries the match's current
-- players: those of mm.match_players who have not left.
CREATE FUNCTION mm.request_backfill(queue text, match_id bigint, open_slots jsonb DEFAULT NULL,
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
	PERFORM mm.notify_match_event('backfill_requested', m.queue, m.id,
		jsonb_build_object('request_id', request_id, 'open_slots', slots));
	RETURN request_id;
END
$$;
COMMENT ON FUNCTION mm.request_backfill(text, bigint, jsonb, timestamptz) IS
'Asks the tick to fill open slots of a running match (default: each team up to its max); returns the request id';
REVOKE ALL ON FUNCTION mm.request_backfill(text, bigint, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.request_backfill(text, bigint, jsonb, timestamptz) TO mm_director, mm_admin;

-- By id alone: the match's queue found by a plain read.
CREATE FUNCTION mm.request_backfill(match_id bigint, open_slots jsonb DEFAULT NULL,
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

CREATE FUNCTION mm.cancel_backfill(queue text, match_id bigint, now timestamptz DEFAULT pg_catalog.now())
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
						  ARRAY['proposed', 'ready', 'assigned', 'completed', 'cancelled'], 'backfill',
						  cancel_backfill.now);
	UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = cancel_backfill.now
	 WHERE b.queue = cancel_backfill.queue AND b.match_id = cancel_backfill.match_id AND b.status = 'open'
	RETURNING b.id INTO request_id;
	IF request_id IS NULL THEN
		RETURN false;
	END IF;
	PERFORM mm.notify_match_event('backfill_cancelled', cancel_backfill.queue, cancel_backfill.match_id,
		jsonb_build_object('request_id', request_id));
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.cancel_backfill(text, bigint, timestamptz) IS
'Cancels a match''s open backfill request (true), or returns false when it had none';
REVOKE ALL ON FUNCTION mm.cancel_backfill(text, bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cancel_backfill(text, bigint, timestamptz) TO mm_director, mm_admin;

-- By id alone: the match's queue found by a plain read.
CREATE FUNCTION mm.cancel_backfill(match_id bigint, now timestamptz DEFAULT pg_catalog.now())
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

-- The frontend's forms: the token first, then the same row as the form
-- without a token (no row for a ticket that does not exist, or no longer
-- does).
CREATE FUNCTION mm.get_assignment(ticket_id bigint, token text)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
AS 'MODULE_PATHNAME', 'mm_get_assignment_with_token'
LANGUAGE C STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION mm.get_assignment(bigint, text) IS
'For a polling client holding its ticket''s token: the ticket''s status, its match and the match''s status, team, connection, properties and its players'' roles; 42501 for a wrong token';
REVOKE ALL ON FUNCTION mm.get_assignment(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(bigint, text) TO mm_frontend, mm_director;

CREATE FUNCTION mm.get_assignment(queue text, ticket_id bigint, token text)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb, roles jsonb)
AS 'MODULE_PATHNAME', 'mm_get_assignment_in_queue_with_token'
LANGUAGE C STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION mm.get_assignment(text, bigint, text) IS
'For a polling client holding its ticket''s token: the ticket''s status by (queue, id), its match and the match''s status, team, connection, properties and its players'' roles; 42501 for a wrong token';
REVOKE ALL ON FUNCTION mm.get_assignment(text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(text, bigint, text) TO mm_frontend, mm_director;
