-- Citus's hot paths reach only the shards they need (issue 29;
-- docs/scale-out.md): a match event of a known queue reads the match by
-- (queue, id), on the queue's shard, and the lifecycle's calls by queue
-- use it.  mm.create_ticket's path on the shards is
-- src/sql/95_scale_out.sql, part of this upgrade as it is
-- (70_tickets_on_citus.sql calls it).

CREATE FUNCTION mm.notify_match_event(event text, queue text, match_id bigint, details jsonb)
RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'mm_notify_queue_match_event';
COMMENT ON FUNCTION mm.notify_match_event(text, text, bigint, jsonb) IS
'Internal: queues a signed match event of a queue''s match (read by queue and id) on mm_events, sent at commit';
REVOKE ALL ON FUNCTION mm.notify_match_event(text, text, bigint, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.notify_match_event(text, text, bigint, jsonb) TO mm_admin;

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
	PERFORM mm.notify_match_event('match_cancelled', cancel_proposed_match.queue, cancel_proposed_match.match_id,
		jsonb_build_object('reason', cancel_proposed_match.reason,
						   'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', to_jsonb(cancelled)));
END
$$;

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
	PERFORM mm.notify_match_event('match_ready', m.queue, m.id, '{}');
	RETURN 'ready';
END
$$;

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
	PERFORM mm.notify_match_event('match_assigned', m.queue, m.id, '{}');
END
$$;

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
	PERFORM mm.notify_match_event('match_cancelled', m.queue, m.id,
		jsonb_build_object('reason', requeue_match.reason, 'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', '[]'::jsonb));
	RETURN requeued;
END
$$;

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
	PERFORM mm.notify_match_event('match_completed', m.queue, m.id, '{}');
END
$$;

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
	PERFORM mm.notify_match_event('backfill_requested', m.queue, m.id,
		jsonb_build_object('request_id', request_id, 'open_slots', slots));
	RETURN request_id;
END
$$;

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
	PERFORM mm.notify_match_event('backfill_cancelled', cancel_backfill.queue, cancel_backfill.match_id,
		jsonb_build_object('request_id', request_id));
	RETURN true;
END
$$;

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
	per_role boolean;
	leavers_lose boolean;
	boost_on boolean;
	free_for_all boolean;
	some_without_team boolean;
	-- per player, in player_id order
	ids text[];
	teams text[];
	roles text[];
	-- the pool each player is rated in
	pools text[];
	-- the players who were not autofilled in the match
	counted_ids text[];
	player_index integer;
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
	-- ranked play: each player's ticket, whether they stayed to the end,
	-- their pool's settings, a first rating seeded from the ticket, the
	-- players whose rating row this report created, their standing
	ticket_ids bigint[];
	stayed boolean[];
	pool_list text[];
	pool_settings jsonb[];
	settings jsonb[];
	ticket_list bigint[];
	ticket_players jsonb[];
	seeds float8[];
	seed_rds float8[];
	created text[];
	old_tier text[];
	old_division integer[];
	old_below integer[];
	old_season_games integer[];
	new_left integer[];
	new_tier text[];
	new_division integer[];
	new_progress float8[];
	new_below integer[];
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
		   bool_and(mp.team IS NULL), bool_or(mp.team IS NULL),
		   array_agg(mp.role ORDER BY mp.player_id),
		   coalesce(array_agg(mp.player_id ORDER BY mp.player_id) FILTER (WHERE NOT mp.autofilled), '{}'),
		   array_agg(mp.ticket_id ORDER BY mp.player_id), array_agg(mp.left_at IS NULL ORDER BY mp.player_id)
	  INTO ids, teams, sides, scored_loss, free_for_all, some_without_team, roles, counted_ids,
		   ticket_ids, stayed
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
	-- per role: the pool of the role each player played (a configured pool
	-- name has no '.', so <pool>.<role> never names another queue's pool)
	per_role := mm.rating_option(config, 'per_role');
	pools := ARRAY(SELECT CASE WHEN per_role AND u.role IS NOT NULL THEN pool_name || '.' || u.role
							   ELSE pool_name END
					 FROM unnest(roles) WITH ORDINALITY u(role, i) ORDER BY u.i);
	leavers_lose := mm.rating_option(config, 'leavers_lose');
	boost_on := mm.rating_option(config, 'boost');
	IF rating_system NOT IN ('glicko2', 'elo', 'openskill') OR side_count < 2 THEN
		rating_system := NULL;
	END IF;
	IF NOT leavers_lose THEN
		scored_loss := array_fill(false, ARRAY[cardinality(ids)]);
	END IF;

	IF rating_system IS NOT NULL THEN
		-- each player's pool settings (ranked play: seeding, placements,
		-- tiers), looked up once per pool
		pool_list := ARRAY(SELECT DISTINCT p FROM unnest(pools) p);
		pool_settings := ARRAY(SELECT mm.rating_pool_settings(p) FROM unnest(pool_list) WITH ORDINALITY u(p, i)
								ORDER BY u.i);
		settings := ARRAY(SELECT pool_settings[array_position(pool_list, u.pool)]
							FROM unnest(pools) WITH ORDINALITY u(pool, i) ORDER BY u.i);
		-- a pool that seeds first ratings from a ticket attribute: each
		-- player's value in their ticket (read first: the tickets of the
		-- match's queue, on Citus on its shard), NULL when absent or not a number
		IF EXISTS (SELECT FROM unnest(settings) x WHERE x ? 'seed') THEN
			SELECT array_agg(t.id), array_agg(t.players) INTO ticket_list, ticket_players
			  FROM mm.tickets t WHERE t.queue = m.queue AND t.id = ANY (ticket_ids);
			SELECT array_agg(mm.attribute_number(tp.value -> 'attributes', u.cfg #>> '{seed,attribute}', -1e9, 1e9)
							 ORDER BY u.i),
				   array_agg((u.cfg #>> '{seed,rd}')::float8 ORDER BY u.i)
			  INTO seeds, seed_rds
			  FROM unnest(ids, ticket_ids, settings) WITH ORDINALITY u(id, ticket, cfg, i)
			  LEFT JOIN LATERAL (SELECT e.value
								   FROM unnest(ticket_list, ticket_players) tl(id, players),
										jsonb_array_elements(tl.players) e
								  WHERE tl.id = u.ticket AND e.value ->> 'id' = u.id AND u.cfg ? 'seed'
								  LIMIT 1) tp ON true;
		ELSE
			seeds := array_fill(NULL::float8, ARRAY[cardinality(ids)]);
			seed_rds := seeds;
		END IF;
		-- unrated players start at the system's defaults, or at their seed
		WITH made AS (
			INSERT INTO mm.ratings AS r (player_id, pool, rating, rd, volatility, mu, sigma, games, wins, updated_at,
										 placement_games_left)
			SELECT u.id, u.pool,
				   CASE WHEN rating_system IN ('glicko2', 'elo') THEN coalesce(u.seed, 1500) END,
				   CASE WHEN rating_system = 'glicko2' THEN coalesce(CASE WHEN u.seed IS NOT NULL THEN u.seed_rd END, 350) END,
				   CASE WHEN rating_system = 'glicko2' THEN 0.06 END,
				   CASE WHEN rating_system = 'openskill' THEN coalesce(u.seed, 25) END,
				   CASE WHEN rating_system = 'openskill'
						THEN coalesce(CASE WHEN u.seed IS NOT NULL THEN u.seed_rd END, 25 / 3.0) END,
				   0, 0, report_result.now,
				   coalesce((u.cfg #>> '{placement,games}')::integer, 0)
			  FROM unnest(ids, pools, seeds, seed_rds, settings) u(id, pool, seed, seed_rd, cfg)
			 ORDER BY u.id
			ON CONFLICT ON CONSTRAINT ratings_pkey DO NOTHING
			RETURNING r.player_id
		)
		SELECT coalesce(array_agg(made.player_id), '{}') INTO created FROM made;
		-- a seeded first rating is recorded as such, before the match's change
		INSERT INTO mm.rating_history (player_id, pool, match_id, rating_after, rd_after, mu_after, sigma_after,
									   volatility_after, created_at, reason)
		SELECT u.id, u.pool, NULL,
			   CASE WHEN rating_system IN ('glicko2', 'elo') THEN u.seed END,
			   CASE WHEN rating_system = 'glicko2' THEN coalesce(u.seed_rd, 350) END,
			   CASE WHEN rating_system = 'openskill' THEN u.seed END,
			   CASE WHEN rating_system = 'openskill' THEN coalesce(u.seed_rd, 25 / 3.0) END,
			   CASE WHEN rating_system = 'glicko2' THEN 0.06 END,
			   report_result.now, 'seed'
		  FROM unnest(ids, pools, seeds, seed_rds) u(id, pool, seed, seed_rd)
		 WHERE u.seed IS NOT NULL AND u.id = ANY (created);
		-- lock the rows in player order (as mm.decay_ratings does), one
		-- player at a time (on Citus each on its player's shard)
		FOR player_index IN 1 .. cardinality(ids) LOOP
			PERFORM FROM mm.ratings rt
			 WHERE rt.player_id = ids[player_index] AND rt.pool = pools[player_index] FOR UPDATE;
		END LOOP;
		SELECT array_agg(r.rating ORDER BY u.i), array_agg(r.rd ORDER BY u.i),
			   array_agg(r.volatility ORDER BY u.i), array_agg(r.mu ORDER BY u.i),
			   array_agg(r.sigma ORDER BY u.i), array_agg(r.games ORDER BY u.i),
			   array_agg(r.tier ORDER BY u.i), array_agg(r.division ORDER BY u.i),
			   array_agg(r.games_below ORDER BY u.i), array_agg(r.season_games ORDER BY u.i)
		  INTO old_rating, old_rd, old_volatility, old_mu, old_sigma, games,
			   old_tier, old_division, old_below, old_season_games
		  FROM unnest(ids, pools) WITH ORDINALITY u(id, pool, i)
		  JOIN mm.ratings r ON r.player_id = u.id AND r.pool = u.pool;
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
				  FROM unnest(ids, games, pools) WITH ORDINALITY u(id, g, pool, i)
				  JOIN mm.ratings rt ON rt.pool = u.pool AND rt.player_id = u.id
				  LEFT JOIN mm.players pl ON pl.id = u.id
				 CROSS JOIN LATERAL (
					SELECT coalesce(array_agg(x.v ORDER BY x.created_at, x.id), '{}') AS recent
					  FROM (SELECT coalesce(rh.rating_after, rh.mu_after) AS v, rh.created_at, rh.id
							  FROM mm.rating_history rh
							 WHERE rh.player_id = u.id AND rh.pool = u.pool AND rh.match_id IS NOT NULL
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
		-- the standing after this game: placement games left, and the tier
		-- moved by the pool's rules (promotion at once, demotion protected)
		SELECT array_agg(s.placement_games_left ORDER BY u.i), array_agg(s.tier ORDER BY u.i),
			   array_agg(s.division ORDER BY u.i), array_agg(s.tier_progress ORDER BY u.i),
			   array_agg(s.games_below ORDER BY u.i)
		  INTO new_left, new_tier, new_division, new_progress, new_below
		  FROM unnest(settings, new_rating, new_rd, new_mu, new_sigma, games, old_season_games, old_tier,
					  old_division, old_below)
			   WITH ORDINALITY u(cfg, rating, rd, mu, sigma, g, sg, tier, division, below, i)
		 CROSS JOIN LATERAL mm.rating_standing(u.cfg, CASE rating_system WHEN 'openskill' THEN u.mu ELSE u.rating END,
											   CASE rating_system WHEN 'openskill' THEN u.sigma ELSE u.rd END,
											   u.g + 1, u.sg + 1, u.tier, u.division, u.below, true) s;
		UPDATE mm.ratings r
		   SET rating = u.rating, rd = u.rd, volatility = u.volatility, mu = u.mu, sigma = u.sigma,
			   games = r.games + 1, wins = r.wins + u.win, updated_at = report_result.now,
			   season_games = r.season_games + 1, placement_games_left = u.placement_left, tier = u.tier,
			   division = u.division, tier_progress = u.progress, games_below = u.below
		  FROM unnest(ids, pools, new_rating, new_rd, new_volatility, new_mu, new_sigma, win_counts,
					  new_left, new_tier, new_division, new_progress, new_below)
			   u(id, pool, rating, rd, volatility, mu, sigma, win, placement_left, tier, division, progress, below)
		 WHERE r.pool = u.pool AND r.player_id = u.id;
		INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
									   mu_before, mu_after, sigma_before, sigma_after,
									   volatility_before, volatility_after, created_at, reason)
		SELECT u.id, u.pool, m.id, u.rating_before, u.rating_after, u.rd_before, u.rd_after,
			   u.mu_before, u.mu_after, u.sigma_before, u.sigma_after, u.volatility_before, u.volatility_after,
			   report_result.now, 'match'
		  FROM unnest(ids, pools, old_rating, new_rating, old_rd, new_rd, old_mu, new_mu, old_sigma, new_sigma,
					  old_volatility, new_volatility)
			   u(id, pool, rating_before, rating_after, rd_before, rd_after, mu_before, mu_after, sigma_before,
				 sigma_after, volatility_before, volatility_after);
	END IF;

	INSERT INTO mm.match_results (match_id, queue, winner_team, ranks, predicted_favourite,
								  favourite_win_probability, duration, reported_at)
	VALUES (m.id, m.queue, winner, report_result.ranks, favourite, favourite_probability,
			report_result.now - m.created_at, report_result.now);

	-- completed, players released, match_completed; then the result's event
	PERFORM mm.complete_match(m.queue, m.id, report_result.now);

	-- Autofill protection: a match played in a role of one's list counts
	-- one game off (never below 0).  The rows locked in player order first,
	-- so two reports sharing players wait for each other without deadlock;
	-- the update re-checks games_left on a row another report changed.
	IF cardinality(counted_ids) > 0 THEN
		PERFORM FROM mm.autofill_protection a
		 WHERE a.queue = m.queue AND a.player_id = ANY (counted_ids) AND a.games_left > 0
		 ORDER BY a.player_id
		   FOR UPDATE;
		UPDATE mm.autofill_protection a
		   SET games_left = a.games_left - 1, updated_at = report_result.now
		 WHERE a.queue = m.queue AND a.player_id = ANY (counted_ids) AND a.games_left > 0;
	END IF;

	-- penalties: a match played to the end is a good game for each player
	-- who stayed (low-priority games worked off, offences forgiven)
	IF config ? 'penalties' THEN
		PERFORM mm.count_good_games(m.queue, ARRAY(SELECT u.id FROM unnest(ids, stayed) u(id, stayed) WHERE u.stayed),
									report_result.now);
	END IF;

	event_details := jsonb_build_object('winner', winner, 'ranks', report_result.ranks);
	IF length(event_details::text) > 6000 THEN
		-- a big free-for-all: the compact form (the ranks are in mm.match_results)
		event_details := jsonb_build_object('winner', winner, 'truncated', true);
	END IF;
	PERFORM mm.notify_match_event('match_result', m.queue, m.id, event_details);

	RETURN QUERY
	SELECT u.id, u.team, u.rank,
		   CASE rating_system WHEN 'openskill' THEN u.mu_before ELSE u.rating_before END,
		   CASE rating_system WHEN 'openskill' THEN u.mu_after ELSE u.rating_after END
	  FROM unnest(ids, teams, player_ranks, old_rating, new_rating, old_mu, new_mu)
		   WITH ORDINALITY u(id, team, rank, rating_before, rating_after, mu_before, mu_after, i)
	 ORDER BY u.i;
END
$$;
