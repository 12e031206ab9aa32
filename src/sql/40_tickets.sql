-- Tickets (src/tickets.c; docs/queues-and-tickets.md, docs/data-model.md):
-- mm.tickets, partitioned into the active and ended tickets; one active
-- ticket per player (mm.active_players, kept by the ticket triggers and
-- mm.claim_players); the other queues a ticket searches in
-- (mm.ticket_queues); the functions a frontend calls (create, cancel,
-- heartbeat, tokens).  A player in a live match is held too: the lifecycle
-- (60_lifecycle.sql) releases them when the match ends.

-- Tickets, partitioned by status: the active partition holds only what the
-- tick reads (searching and proposed tickets), so its cost never grows with
-- history; a ticket moves to the ended partition once, when it ends (the
-- move is a delete plus an insert, the same writes as a ticket history row).
CREATE SEQUENCE mm.tickets_id_seq;
GRANT USAGE ON SEQUENCE mm.tickets_id_seq TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_id_seq', '');

CREATE TABLE mm.tickets (
	id bigint NOT NULL DEFAULT pg_catalog.nextval('mm.tickets_id_seq'::pg_catalog.regclass),
	queue text NOT NULL,
	players jsonb NOT NULL,
	status text NOT NULL DEFAULT 'searching'
		CONSTRAINT tickets_status CHECK (status OPERATOR(pg_catalog.=) ANY (
			ARRAY['searching', 'proposed', 'matched', 'cancelled', 'timed_out'])),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	-- when the status last changed; NULL while the ticket has only searched
	updated_at timestamptz,
	matched_at timestamptz,
	match_id bigint,
	-- the team of the match the ticket plays on (NULL in a free-for-all)
	team text,
	-- the other queues the ticket also searches in, each with that queue's
	-- config (mm.ticket_queues lists it there)
	queues text[],
	-- the last mm.heartbeat; updated in place on the active partition, in no
	-- index, so a beat is a HOT update when the row's page has room
	heartbeat_at timestamptz,
	-- why the tick cancelled the ticket (heartbeat_missed; player_busy on
	-- Citus); NULL for the other ends (mm.cancel_ticket, a rejected
	-- proposal, mm.drop_queue, an UPDATE)
	cancel_reason text,
	CONSTRAINT tickets_match_consistent CHECK (
		status OPERATOR(pg_catalog.<>) ALL (ARRAY['proposed', 'matched']) OR match_id IS NOT NULL)
) PARTITION BY LIST (status);
COMMENT ON TABLE mm.tickets IS 'Every ticket (one player or a party), partitioned into tickets_active and tickets_ended';
COMMENT ON COLUMN mm.tickets.queues IS
	'The other queues the ticket also searches in (NULL: only its queue); once matched, its queue is the one that matched it';
COMMENT ON COLUMN mm.tickets.heartbeat_at IS
	'The ticket''s last mm.heartbeat (NULL: none yet; its creation counts as the first); kept on a ticket cancelled for a missed heartbeat';
COMMENT ON COLUMN mm.tickets.cancel_reason IS
	'Why the tick cancelled the ticket: heartbeat_missed, or player_busy (on Citus, a player another ticket or a live match held); NULL otherwise';
GRANT SELECT ON TABLE mm.tickets TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.tickets TO mm_admin;
ALTER SEQUENCE mm.tickets_id_seq OWNED BY mm.tickets.id;

-- The active partition keeps a fifth of each new page free for the
-- heartbeats: a bulk load fills its pages, and a beat is a HOT update (no
-- index entry, no new page) only when the row's page has room (50,000
-- tickets beaten twice: every update HOT, the partition no larger; without
-- it, none).
CREATE TABLE mm.tickets_active PARTITION OF mm.tickets (PRIMARY KEY (id, queue))
	FOR VALUES IN ('searching', 'proposed')
	WITH (fillfactor = 80);
COMMENT ON TABLE mm.tickets_active IS 'Searching and proposed tickets: the tick''s working set';
GRANT SELECT ON TABLE mm.tickets_active TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.tickets_active TO mm_admin;
-- the tick's read: one queue's tickets, oldest first
CREATE INDEX tickets_active_queue_created ON mm.tickets_active (queue, created_at, id);
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_active', '');

CREATE TABLE mm.tickets_ended PARTITION OF mm.tickets (PRIMARY KEY (id, queue))
	FOR VALUES IN ('matched', 'cancelled', 'timed_out');
COMMENT ON TABLE mm.tickets_ended IS 'Matched, cancelled and timed-out tickets: written once, when the ticket ends';
GRANT SELECT ON TABLE mm.tickets_ended TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.tickets_ended TO mm_admin;
-- The metrics and retention read one queue's window (docs/metrics.md): its
-- tickets created, matched, and cancelled or timed out, each through a
-- (queue, time) index, so the cost follows the window's tickets whatever
-- the statistics say (with statistics taken before a bulk load the planner
-- preferred a scan of the whole primary key).  Every such read names its
-- queue, so no index over every queue's times is kept: a block range index
-- read every queue's rows of the window and cost each matched ticket of a
-- tick an entry.
CREATE INDEX tickets_ended_queue_created ON mm.tickets_ended (queue, created_at);
CREATE INDEX tickets_ended_queue_matched ON mm.tickets_ended (queue, matched_at)
	WHERE matched_at IS NOT NULL;
CREATE INDEX tickets_ended_queue_gone ON mm.tickets_ended (queue, updated_at)
	WHERE status OPERATOR(pg_catalog.=) ANY (ARRAY['cancelled', 'timed_out']);
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_ended', '');

-- One active ticket per player: a player's row lives from the ticket's
-- creation until it leaves the active partition.  The primary key is the
-- guarantee under concurrency.
CREATE TABLE mm.active_players (
	player_id text PRIMARY KEY,
	ticket_id bigint NOT NULL,
	queue text NOT NULL
);
COMMENT ON TABLE mm.active_players IS 'The player of every searching or proposed ticket, one row each: one active ticket per player';
GRANT SELECT ON TABLE mm.active_players TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.active_players TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.active_players', '');

-- The players of every ticket, one row each, read from the tickets' players
-- (for queries; one active ticket per player is kept by mm.active_players).
CREATE VIEW mm.ticket_players AS
SELECT t.id AS ticket_id,
	   p.value OPERATOR(pg_catalog.->>) 'id' AS player_id,
	   t.queue,
	   coalesce(p.value OPERATOR(pg_catalog.->) 'attributes', '{}') AS attributes,
	   coalesce(p.value OPERATOR(pg_catalog.->) 'latencies', '{}') AS latencies,
	   t.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed']) AS active
  FROM mm.tickets t CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(t.players) p;
COMMENT ON VIEW mm.ticket_players IS 'The players of every ticket with their attributes and latencies, one row each';
GRANT SELECT ON TABLE mm.ticket_players TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.ticket_players TO mm_admin;

-- One ticket in several queues: a ticket searches in its queue and in the
-- other queues of its `queues` array, each with that queue's config.  It
-- keeps one row in mm.tickets_active, which the tick of whichever queue takes
-- it first locks (FOR UPDATE SKIP LOCKED) and moves, so two queues never
-- both match it.  mm.ticket_queues lists the tickets each other queue's tick
-- also reads.
CREATE TABLE mm.ticket_queues (
	queue text NOT NULL,
	ticket_id bigint NOT NULL,
	-- the ticket's creation time: a queue's tick reads its extra tickets
	-- oldest first, like its own
	created_at timestamptz NOT NULL,
	PRIMARY KEY (queue, created_at, ticket_id)
);
COMMENT ON TABLE mm.ticket_queues IS
	'The active tickets that also search in a queue other than their own, one row per (queue, ticket)';
GRANT SELECT ON TABLE mm.ticket_queues TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.ticket_queues TO mm_admin;
CREATE INDEX ticket_queues_ticket ON mm.ticket_queues (ticket_id);
SELECT pg_catalog.pg_extension_config_dump('mm.ticket_queues', '');

CREATE FUNCTION mm.validate_ticket(queue text, players jsonb, created_at timestamptz)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'mm_validate_ticket'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION mm.validate_ticket(text, jsonb, timestamptz) IS
	'Checks a new ticket''s players against its queue''s config (errors name the JSON path); returns the player count';
REVOKE ALL ON FUNCTION mm.validate_ticket(text, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.validate_ticket(text, jsonb, timestamptz) TO mm_admin;

-- Takes one active ticket per player for the given (ticket, queue, players)
-- rows: one set-based insert into mm.active_players; a player who already
-- holds an active ticket (also one committed concurrently, or one earlier in
-- the same statement) or is in a live match is refused with 23505, naming
-- the ticket or match that holds the player.  A claim that holds nothing any
-- more (mm.claim_is_live) is dropped on the way.
CREATE FUNCTION mm.claim_players(ticket_ids bigint[], queues text[], players jsonb[])
	RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	-- the row estimate of jsonb_array_elements (100 per ticket) would
	-- otherwise make a bulk load pay for JIT compilation
	SET jit = off
	AS $$
DECLARE
	dup_player text;
	holder_ticket bigint;
	holder_is_new boolean;
	repeating_ticket bigint;
	holder_status text;
	live record;
BEGIN
	-- a plain insert in player order (no deadlock with a concurrent claim of
	-- the same players): the primary key refuses a taken player (waiting for
	-- a concurrent claim to commit or roll back), and the rare refusal is
	-- explained afterwards
	FOR attempt IN 1 .. 2 LOOP
		BEGIN
			INSERT INTO mm.active_players (player_id, ticket_id, queue)
			SELECT p.value ->> 'id', u.ticket_id, u.queue
			  FROM ROWS FROM (unnest(claim_players.ticket_ids), unnest(claim_players.queues),
							  unnest(claim_players.players)) AS u(ticket_id, queue, players),
				   jsonb_array_elements(u.players) p
			 ORDER BY 1;
			RETURN;
		EXCEPTION WHEN unique_violation THEN
			NULL;
		END;
		-- A claim whose ticket is neither active nor in a live match (its
		-- partition written directly, a match ended without releasing it)
		-- is stale: drop it and try once more.  Only in READ COMMITTED,
		-- where a fresh snapshot sees the holder's commit that the refusal
		-- waited for.
		EXIT WHEN attempt = 2 OR current_setting('transaction_isolation') <> 'read committed';
		DELETE FROM mm.active_players a
		 USING unnest(claim_players.players) AS u(players), jsonb_array_elements(u.players) p
		 WHERE a.player_id = p.value ->> 'id'
		   AND NOT mm.claim_is_live(a.player_id, a.ticket_id);
		EXIT WHEN NOT FOUND;
	END LOOP;

	-- the first player, in ticket order, that is taken or repeated (the
	-- repeats by a window over the players: a look back per player was
	-- quadratic in a large COPY)
	WITH new_players AS (
		SELECT u.ticket_id, p.value ->> 'id' AS player_id, u.ticket_ord, p.ord
		  FROM ROWS FROM (unnest(claim_players.ticket_ids), unnest(claim_players.players))
			   WITH ORDINALITY AS u(ticket_id, players, ticket_ord),
			   jsonb_array_elements(u.players) WITH ORDINALITY p(value, ord)
	), ranked AS (
		SELECT np.player_id, np.ticket_id, np.ticket_ord, np.ord,
			   first_value(np.ticket_id) OVER w AS first_ticket, row_number() OVER w AS nth
		  FROM new_players np
		WINDOW w AS (PARTITION BY np.player_id ORDER BY np.ticket_ord, np.ord)
	)
	SELECT r.player_id, coalesce(ap.ticket_id, r.first_ticket), ap.ticket_id IS NULL, r.ticket_id
	  INTO dup_player, holder_ticket, holder_is_new, repeating_ticket
	  FROM ranked r
	  -- a look-up of the key per player (a join could read every claim)
	  LEFT JOIN LATERAL (SELECT a.ticket_id FROM mm.active_players a
						  WHERE a.player_id = r.player_id LIMIT 1) ap ON true
	 WHERE ap.ticket_id IS NOT NULL OR r.nth > 1
	 ORDER BY r.ticket_ord, r.ord
	 LIMIT 1;
	IF holder_is_new THEN
		-- repeated within the statement's own tickets (an INSERT's, or those
		-- an UPDATE sets searching again), none of which is written
		RAISE EXCEPTION 'player "%" is in two tickets of the same statement', dup_player
			USING ERRCODE = 'unique_violation',
				  DETAIL = CASE WHEN holder_ticket = repeating_ticket
								THEN format('Ticket %s names the player twice; the statement wrote nothing.', holder_ticket)
								ELSE format('Tickets %s and %s both hold the player; the statement wrote neither.',
											holder_ticket, repeating_ticket) END,
				  HINT = 'A player can be in one searching or proposed ticket at a time.';
	END IF;
	SELECT * INTO live FROM mm.player_live_match(dup_player);
	IF live.match_id IS NOT NULL THEN
		RAISE EXCEPTION 'player "%" is in match %, which is %', dup_player, live.match_id, live.status
			USING ERRCODE = 'unique_violation',
				  DETAIL = format('Ticket %s brought the player into the match.', holder_ticket),
				  HINT = 'A player in a live match cannot search until the match is completed or cancelled, or the player leaves it (mm.leave_match).';
	END IF;
	SELECT t.status INTO holder_status FROM mm.tickets_active t WHERE t.id = holder_ticket;
	IF holder_status IS NULL THEN
		RAISE EXCEPTION 'player "%" already has an active ticket', coalesce(dup_player, '?')
			USING ERRCODE = 'unique_violation';
	END IF;
	RAISE EXCEPTION 'player "%" already has an active ticket', dup_player
		USING ERRCODE = 'unique_violation',
			  DETAIL = format('Ticket %s holds the player and is %s.', holder_ticket, holder_status),
			  HINT = 'A player can be in one searching or proposed ticket at a time; cancel that ticket first.';
END
$$;
COMMENT ON FUNCTION mm.claim_players(bigint[], text[], jsonb[]) IS
	'Internal: records the players of new active tickets in mm.active_players; one active ticket per player';
REVOKE ALL ON FUNCTION mm.claim_players(bigint[], text[], jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.claim_players(bigint[], text[], jsonb[]) TO mm_admin;

-- Once per statement (one INSERT, a multi-row INSERT or a COPY into
-- mm.tickets): validates every new ticket and claims its players.  pg_dump's
-- restore writes the partitions directly, which fires neither: the dump
-- carries mm.active_players itself.
CREATE FUNCTION mm.tickets_after_insert() RETURNS trigger
	LANGUAGE plpgsql
	-- the inserting role needs no privilege on mm.queues (a row lock) or
	-- mm.active_players: this trigger only checks and claims what it inserted
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	-- Every table is read here by key.  A session keeps its plans: one made
	-- while a table was small, or before its first ANALYZE (a bulk load),
	-- must still read the index once the table has grown, so no plan of the
	-- trigger (nor of the functions it calls) may scan a whole table.
	SET enable_seqscan = off
	AS $$
DECLARE
	bad record;
BEGIN
	-- a shard on Citus: the plain write is refused (Citus rule 12)
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		PERFORM mm.refuse_ticket_write_on_shard(TG_OP);
	END IF;
	-- ids come from mm.tickets_id_seq: an explicit one must be one it has
	-- handed out (an id ahead of it would collide with a later default) and
	-- not an ended ticket's (the partitions' primary keys are separate)
	SELECT n.id, n.status, n.match_id IS NOT NULL AS has_match,
		   n.status = 'searching' AND n.match_id IS NULL AND n.matched_at IS NULL
		   AND n.updated_at IS NULL AND n.team IS NULL AS fresh,
		   n.id > (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
					 FROM mm.tickets_id_seq) AS ahead INTO bad
	  FROM new_tickets n
	 WHERE n.status <> 'searching' OR n.match_id IS NOT NULL OR n.matched_at IS NOT NULL
		OR n.updated_at IS NOT NULL OR n.team IS NOT NULL
		OR n.id > (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
					 FROM mm.tickets_id_seq)
		OR (n.id <= (SELECT max(e.id) FROM mm.tickets_ended e)
			AND EXISTS (SELECT FROM mm.tickets_ended e WHERE e.id = n.id))
	 LIMIT 1;
	IF FOUND AND bad.fresh AND bad.ahead THEN
		RAISE EXCEPTION 'ticket id % was not drawn from mm.tickets_id_seq', bad.id
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Leave id to its default.';
	ELSIF FOUND AND bad.fresh THEN
		RAISE EXCEPTION 'ticket id % is already used', bad.id
			USING ERRCODE = 'unique_violation',
				  HINT = 'Leave id to its default (mm.tickets_id_seq).';
	ELSIF FOUND THEN
		RAISE EXCEPTION 'a new ticket must start searching, without a match'
			USING ERRCODE = 'check_violation',
				  DETAIL = format('Ticket %s was inserted with status %s%s.', bad.id, bad.status,
								  CASE WHEN bad.has_match THEN ' and a match' ELSE '' END),
				  HINT = 'Insert only queue, players and optionally created_at; the tick sets the rest.';
	END IF;
	-- KEY SHARE on the queues: mm.drop_queue (FOR UPDATE) waits for this
	-- insert, or this insert for the drop, whose queue is then gone
	PERFORM FROM mm.queues q WHERE q.name IN (SELECT n.queue FROM new_tickets n) FOR KEY SHARE OF q;
	-- in the order the rows came: the first invalid one is reported
	PERFORM mm.validate_ticket(n.queue, n.players, n.created_at) FROM new_tickets n;
	-- One statement (each costs more to start than a row costs to check):
	-- one active ticket per player, an insert in player order, so that two
	-- statements claiming the same players in different orders queue up on
	-- the first one they share instead of deadlocking; an explicit id an
	-- active ticket of another queue holds (the key holds the queue), each
	-- new id looked up in the active partition's key; the first creation
	-- time, for the cooldowns.
	WITH claimed AS (
		INSERT INTO mm.active_players (player_id, ticket_id, queue)
		SELECT p.value ->> 'id', n.id, n.queue
		  FROM new_tickets n, jsonb_array_elements(n.players) p
		 ORDER BY 1
		ON CONFLICT DO NOTHING
		RETURNING player_id)
	SELECT (SELECT coalesce(array_agg(c.player_id), '{}') FROM claimed c) AS claimed_players,
		   (SELECT count(*) FROM new_tickets n, jsonb_array_elements(n.players) p) AS players,
		   -- (LATERAL ... LIMIT 1: a probe of the key per new id; as a semi
		   -- join a batch's check read every active ticket)
		   (SELECT min(n.id) FROM new_tickets n
			 CROSS JOIN LATERAL (SELECT FROM mm.tickets_active a
								  WHERE a.id = n.id AND a.queue <> n.queue LIMIT 1) held) AS used_id,
		   (SELECT min(n.created_at) FROM new_tickets n) AS first_created
	  INTO bad;
	IF bad.used_id IS NOT NULL THEN
		RAISE EXCEPTION 'ticket id % is already used', bad.used_id
			USING ERRCODE = 'unique_violation',
				  HINT = 'Leave id to its default (mm.tickets_id_seq).';
	END IF;
	-- A player it could not claim (taken, or twice in the statement) is
	-- rare: the claims are undone and claim_players, which tries again and
	-- names the holder, explains the refusal (no subtransaction on the
	-- common path).
	IF cardinality(bad.claimed_players) < bad.players THEN
		-- the claims this statement made, by their keys (a join could read
		-- every claim; matching the new ids with = ANY read them all once
		-- per claim: minutes for a COPY of 100,000 tickets)
		DELETE FROM mm.active_players a WHERE a.player_id = ANY (bad.claimed_players);
		PERFORM mm.claim_players(array_agg(n.id ORDER BY n.id), array_agg(n.queue ORDER BY n.id),
								 array_agg(n.players ORDER BY n.id))
		  FROM new_tickets n;
	END IF;
	-- a player cooling down after an offence may not queue (penalties):
	-- checked after the claim, which waited for a concurrent offence
	-- releasing the same player, so this later statement sees its cooldown
	IF EXISTS (SELECT FROM mm.player_penalties pp WHERE pp.cooldown_until > bad.first_created) THEN
		PERFORM mm.refuse_cooled_down_players(array_agg(p.value ->> 'id'), array_agg(q.queue), array_agg(n.created_at))
		  FROM new_tickets n, jsonb_array_elements(n.players) p,
			   unnest(array_prepend(n.queue, coalesce(n.queues, '{}'))) q(queue);
	END IF;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_insert() IS
	'Trigger: validates the inserted tickets and claims their players (one active ticket per player)';
REVOKE ALL ON FUNCTION mm.tickets_after_insert() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_after_insert() TO mm_admin;
CREATE TRIGGER tickets_after_insert AFTER INSERT ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_insert();

-- Keeps mm.active_players in step with a status written by UPDATE (the tick
-- and the ticket functions move tickets themselves and keep it in step):
-- a ticket leaving searching/proposed releases its players, one entering
-- them claims its players again.  A proposed ticket moved out of its match
-- by hand (cancelled, timed out, searching again) rejects the match, as
-- mm.cancel_ticket does, and keeps no match.
CREATE FUNCTION mm.tickets_after_update() RETURNS trigger
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
	-- a shard on Citus: the plain write is refused (Citus rule 12)
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
			   coalesce(array_agg(DISTINCT o.id) FILTER (WHERE n.status IN ('cancelled', 'timed_out')), '{}')
				   AS ended_ids,
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
			-- the tickets this UPDATE ended are the event's cancelled ones
			PERFORM mm.cancel_proposed_match(m.queue, m.id, 'ticket_cancelled', left_match.ended_ids,
											 greatest(now(), m.created_at));
		END IF;
	END LOOP;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_update() IS
	'Trigger: releases or claims players when an UPDATE moves tickets out of or into searching/proposed';
REVOKE ALL ON FUNCTION mm.tickets_after_update() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_after_update() TO mm_admin;
CREATE TRIGGER tickets_after_update AFTER UPDATE ON mm.tickets
	REFERENCING OLD TABLE AS old_tickets NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_update();

-- Deleting tickets releases their players and unlists them from the other
-- queues.
CREATE FUNCTION mm.tickets_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
BEGIN
	-- a shard on Citus: the plain write is refused (Citus rule 12)
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		PERFORM mm.refuse_ticket_write_on_shard(TG_OP);
	END IF;
	DELETE FROM mm.active_players ap USING old_tickets o, jsonb_array_elements(o.players) p
	 WHERE ap.player_id = p.value ->> 'id' AND ap.ticket_id = o.id;
	DELETE FROM mm.ticket_queues q USING old_tickets o
	 WHERE q.ticket_id = o.id AND o.queues IS NOT NULL;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_delete() IS
	'Trigger: releases the players of deleted tickets';
REVOKE ALL ON FUNCTION mm.tickets_after_delete() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_after_delete() TO mm_admin;
CREATE TRIGGER tickets_after_delete AFTER DELETE ON mm.tickets
	REFERENCING OLD TABLE AS old_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_delete();

-- TRUNCATE of the tickets (or of their active partition) releases every
-- player and empties the other queues' lists.
CREATE FUNCTION mm.tickets_after_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- a shard on Citus: the plain write is refused (Citus rule 12)
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		PERFORM mm.refuse_ticket_write_on_shard(TG_OP);
	END IF;
	DELETE FROM mm.active_players;
	DELETE FROM mm.ticket_queues;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_truncate() IS
	'Trigger: releases every player when the active tickets are truncated';
REVOKE ALL ON FUNCTION mm.tickets_after_truncate() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_after_truncate() TO mm_admin;
CREATE TRIGGER tickets_after_truncate AFTER TRUNCATE ON mm.tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_truncate();
CREATE TRIGGER tickets_active_after_truncate AFTER TRUNCATE ON mm.tickets_active
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_truncate();

-- A ticket's id, queue and players are fixed once it exists; the one
-- change let through is mm.forget_player's: players anonymised in place.
CREATE FUNCTION mm.tickets_refuse_change() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF OLD.id = NEW.id AND OLD.queue = NEW.queue
	   AND mm.ticket_players_anonymised(OLD.players, NEW.players) THEN
		RETURN NEW;
	END IF;
	RAISE EXCEPTION 'the queue and players of ticket % cannot be changed', OLD.id
		USING ERRCODE = 'feature_not_supported',
			  HINT = 'Cancel the ticket and create a new one.';
END
$$;
COMMENT ON FUNCTION mm.tickets_refuse_change() IS
	'Trigger: refuses changes to a ticket''s id, queue or players';
REVOKE ALL ON FUNCTION mm.tickets_refuse_change() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_refuse_change() TO mm_admin;
CREATE TRIGGER tickets_refuse_change BEFORE UPDATE OF id, queue, players ON mm.tickets
	FOR EACH ROW
	WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.queue IS DISTINCT FROM NEW.queue
		  OR OLD.players IS DISTINCT FROM NEW.players)
	EXECUTE FUNCTION mm.tickets_refuse_change();

-- Releases the claims of (player, ticket) pairs: one delete of the
-- players' table, by player (Citus rule 3).
CREATE FUNCTION mm.release_claims(player_ids text[], ticket_ids bigint[])
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

-- Releases the claims of (player, ticket) pairs ended in a queue: on one
-- node at once (mm.release_claims); on Citus the pairs go to the queue's
-- mm.pending_releases, on the queue's shard, and its tick drops the claims
-- (a call that ends a ticket or a match stays on the queue's node).
CREATE FUNCTION mm.release_queue_claims(queue text, player_ids text[], ticket_ids bigint[])
	RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF coalesce(cardinality(release_queue_claims.player_ids), 0) = 0 THEN
		RETURN;
	END IF;
	IF NOT mm.tables_are_distributed() THEN
		PERFORM mm.release_claims(release_queue_claims.player_ids, release_queue_claims.ticket_ids);
		RETURN;
	END IF;
	-- on the queue's node, into its shard by name (a kept plan);
	IF mm.release_claims_on_queue_node(release_queue_claims.queue, release_queue_claims.player_ids,
									   release_queue_claims.ticket_ids) THEN
		RETURN;
	END IF;
	-- elsewhere, one multi-row INSERT of literals (%L), which Citus routes
	-- to the queue's shard: an INSERT ... SELECT (... ON CONFLICT) went
	-- through an intermediate result, 1.4 ms a call
	EXECUTE 'INSERT INTO mm.pending_releases (queue, player_id, ticket_id) VALUES '
		|| (SELECT string_agg(pg_catalog.format('(%L, %L, %s)', release_queue_claims.queue, u.p, u.t), ', ')
			  FROM unnest(release_queue_claims.player_ids, release_queue_claims.ticket_ids) u(p, t))
		|| ' ON CONFLICT DO NOTHING';
END
$$;
COMMENT ON FUNCTION mm.release_queue_claims(text, text[], bigint[]) IS
	'Internal: releases the claims of (player, ticket) pairs ended in a queue (on Citus, left to the queue''s tick)';
REVOKE ALL ON FUNCTION mm.release_queue_claims(text, text[], bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.release_queue_claims(text, text[], bigint[]) TO mm_admin;

-- Ends active tickets (cancelled or timed out): each moves from
-- tickets_active to tickets_ended, a delete and an insert, its players are
-- released (mm.release_queue_claims) and it leaves the other queues.
-- Returns the ids of the tickets it ended.  The tickets are named with
-- their queues.  In C (src/ticket_end.c): two statements per queue, the
-- deleted rows handed to the insert as JSON, on the queue's shards by name
-- on its Citus node (one statement whose insert read the delete's rows, a
-- CTE, went through Citus to every node and committed on all of them).
CREATE FUNCTION mm.end_tickets(queues text[], ticket_ids bigint[], new_status text, ended_at timestamptz)
	RETURNS SETOF bigint
	AS 'MODULE_PATHNAME', 'mm_end_tickets'
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	SET citus.enable_manual_changes_to_shards = on;
COMMENT ON FUNCTION mm.end_tickets(text[], bigint[], text, timestamptz) IS
	'Internal: moves active tickets of the given queues to tickets_ended as cancelled or timed_out and releases their players';
REVOKE ALL ON FUNCTION mm.end_tickets(text[], bigint[], text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.end_tickets(text[], bigint[], text, timestamptz) TO mm_admin;

-- mm_frontend creates and cancels tickets through functions only: they run
-- as the extension's owner, so the role needs no privilege on the tables
-- (the validation and claim triggers run as the owner too).  Both forms of
-- mm.create_ticket check their arguments first: a NULL is 22004 naming the
-- argument (and its subscript).  INSERT and COPY keep the table's
-- constraints.
CREATE FUNCTION mm.create_ticket(queue text, players jsonb,
								 now timestamptz DEFAULT pg_catalog.now()) RETURNS bigint
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	-- as in tickets_after_insert: no kept plan may scan a table that grew
	SET enable_seqscan = off
	SET jit = off
	AS $$
DECLARE
	new_id bigint;
	n_players integer;
	checked record;
BEGIN
	IF create_ticket.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF create_ticket.players IS NULL THEN
		RAISE EXCEPTION 'players must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF create_ticket.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- without Citus, no call of the guard (a function with its own settings)
	IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL AND mm.tables_are_distributed() THEN
		RETURN mm.create_ticket_on_queue_node(create_ticket.queue, create_ticket.players, create_ticket.now);
	END IF;
	-- The work of the insert triggers (tickets_after_insert) for one ticket
	-- of one queue, in fewer statements: the row goes straight into the
	-- active partition, which fires no statement trigger of mm.tickets (the
	-- triggers cost about half of a call).  Same checks, same errors, in
	-- the trigger's order but for the id: the sequence's next, which can
	-- only collide after a setval back (with an ended ticket, or an active
	-- one of another queue), checked first.
	new_id := nextval('mm.tickets_id_seq');
	-- KEY SHARE on the queue: mm.drop_queue (FOR UPDATE) waits for this
	-- insert, or this insert for the drop, whose queue is then gone
	SELECT EXISTS (SELECT FROM mm.tickets_ended e WHERE e.id = new_id)
		   OR EXISTS (SELECT FROM mm.tickets_active a WHERE a.id = new_id AND a.queue <> create_ticket.queue) AS used
	  INTO checked
	  FROM mm.queues q WHERE q.name = create_ticket.queue FOR KEY SHARE OF q;
	IF checked.used THEN
		RAISE EXCEPTION 'ticket id % is already used', new_id
			USING ERRCODE = 'unique_violation',
				  HINT = 'Leave id to its default (mm.tickets_id_seq).';
	END IF;
	n_players := mm.validate_ticket(create_ticket.queue, create_ticket.players, create_ticket.now);
	INSERT INTO mm.tickets_active (id, queue, players, status, created_at)
	VALUES (new_id, create_ticket.queue, create_ticket.players, 'searching', create_ticket.now);
	-- one active ticket per player, in player order (see tickets_after_insert)
	WITH claimed AS (
		INSERT INTO mm.active_players (player_id, ticket_id, queue)
		SELECT p.value ->> 'id', new_id, create_ticket.queue
		  FROM jsonb_array_elements(create_ticket.players) p
		 ORDER BY 1
		ON CONFLICT DO NOTHING
		RETURNING 1)
	SELECT count(*) AS claimed INTO checked FROM claimed;
	IF checked.claimed < n_players THEN
		-- by the players' keys (a join could read every claim)
		DELETE FROM mm.active_players a
		 WHERE a.player_id = ANY (ARRAY(SELECT p.value ->> 'id'
										  FROM jsonb_array_elements(create_ticket.players) p))
		   AND a.ticket_id = new_id;
		PERFORM mm.claim_players(ARRAY[new_id], ARRAY[create_ticket.queue], ARRAY[create_ticket.players]);
	END IF;
	-- a player cooling down may not queue: after the claim (see
	-- tickets_after_insert)
	IF EXISTS (SELECT FROM mm.player_penalties pp WHERE pp.cooldown_until > create_ticket.now) THEN
		PERFORM mm.refuse_cooled_down_players(array_agg(p.value ->> 'id'), array_agg(create_ticket.queue),
											  array_agg(create_ticket.now))
		  FROM jsonb_array_elements(create_ticket.players) p;
	END IF;
	RETURN new_id;
END
$$;
COMMENT ON FUNCTION mm.create_ticket(text, jsonb, timestamptz) IS
	'Puts a ticket (one player or a party) into a queue; returns its id. Same as INSERT INTO mm.tickets';
REVOKE ALL ON FUNCTION mm.create_ticket(text, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_ticket(text, jsonb, timestamptz) TO mm_frontend, mm_admin;

-- The id-only forms of the lifecycle call the form by queue with the queue
-- they found.  Its "does not exist in queue" (the id is missing, or its row
-- went while the call waited for its lock) is reported as the id-only forms
-- always did, without a queue: called in their handler, it raises that and
-- returns for any other error (which the handler raises again).
CREATE FUNCTION mm.raise_missing_without_queue(kind text, id bigint, queue text, message text)
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

-- The queue of a ticket, for the id-only forms (Citus rule 4): a plain
-- read, no lock.  NULL for a missing ticket.
CREATE FUNCTION mm.ticket_queue(ticket_id bigint)
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

-- A proposed ticket that is cancelled rejects its match, as its player's
-- "no" would: the match is cancelled and its other tickets search again,
-- and in a queue with penalties its players have dodged (after the
-- acceptance deadline, those who had not answered let it time out), or
-- cancelling would be a dodge without a penalty.  The match is locked
-- before the ticket, in the order of mm.accept_match, also when a tick
-- proposes the ticket while the cancel waits for it: the cancel then lets
-- the ticket go (the lock was taken in a subtransaction) and locks the new
-- match first, or an answer to that match, holding it and waiting for the
-- ticket, would deadlock with the cancel
-- (test/isolation/specs/cancel_proposed_race.spec).
CREATE FUNCTION mm.cancel_ticket(queue text, ticket_id bigint) RETURNS boolean
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_found boolean;
	ticket_status text;
	ticket_match bigint;
	ticket_queues text[];
	now_match bigint;
	now_queues text[];
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
	LOOP
		IF ticket_match IS NOT NULL THEN
			-- (none: a dropped queue took it, and the ticket, with it)
			SELECT * INTO m FROM mm.matches x
			 WHERE x.queue = ANY (ticket_queues) AND x.id = ticket_match FOR UPDATE;
		END IF;
		-- waits for a tick that holds the ticket; if the tick ended it, the
		-- active row is gone and the ended one tells the outcome
		BEGIN
			SELECT t.status, t.match_id, array_prepend(t.queue, coalesce(t.queues, '{}'))
			  INTO ticket_status, now_match, now_queues
			  FROM mm.tickets_active t WHERE t.queue = cancel_ticket.queue AND t.id = cancel_ticket.ticket_id
			   FOR UPDATE;
			ticket_found := FOUND;
			IF ticket_found AND ticket_status = 'proposed' AND now_match IS DISTINCT FROM m.id THEN
				IF now_match = ticket_match THEN
					-- locked, and not there: only a match deleted by hand
					RAISE EXCEPTION 'match % of proposed ticket % does not exist', now_match,
						cancel_ticket.ticket_id USING ERRCODE = 'undefined_object';
				END IF;
				-- proposed since the first look: let the ticket go (a private
				-- code, caught just below) and lock its match first
				RAISE EXCEPTION USING ERRCODE = 'MMRLK';
			END IF;
		EXCEPTION WHEN SQLSTATE 'MMRLK' THEN
			ticket_match := now_match;
			ticket_queues := now_queues;
			CONTINUE;
		END;
		EXIT;
	END LOOP;
	IF NOT ticket_found THEN
		PERFORM FROM mm.tickets_ended t WHERE t.queue = cancel_ticket.queue AND t.id = cancel_ticket.ticket_id;
		IF NOT FOUND THEN
			-- a ticket of several queues that another of them matched (a
			-- plain read: Citus rule 4)
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

-- By id alone: the ticket's queue found by a plain read (Citus rule 4).
CREATE FUNCTION mm.cancel_ticket(ticket_id bigint) RETURNS boolean
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

-- A claim is stale when its ticket is neither active nor in a live match
-- that the player has not left.
CREATE FUNCTION mm.claim_is_live(player_id text, ticket_id bigint)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ticket_queue text;
	ticket_match bigint;
BEGIN
	-- plain reads by id (Citus rule 4), then the match on its queue's
	-- shard; SELECT 1: Citus rule 7
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

-- The live match a player is in, if any (for the refusal of a new ticket).
CREATE FUNCTION mm.player_live_match(player_id text, OUT match_id bigint, OUT status text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT m.id, m.status
	  FROM mm.active_players a
	  JOIN mm.tickets_ended t ON t.id = a.ticket_id
	  JOIN mm.matches m ON m.id = t.match_id
	  JOIN mm.match_players mp ON mp.match_id = m.id AND mp.player_id = a.player_id
	 WHERE a.player_id = player_live_match.player_id
	   AND m.status IN ('proposed', 'ready', 'assigned')
	   AND mp.left_at IS NULL
$$;
COMMENT ON FUNCTION mm.player_live_match(text) IS
'Internal: the live match (proposed, ready or assigned, not left) that holds a player, if any';
REVOKE ALL ON FUNCTION mm.player_live_match(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.player_live_match(text) TO mm_admin;

-- Once per INSERT/COPY statement, after tickets_after_insert (triggers fire
-- in name order): checks the tickets' other queues, validates the players
-- against each of those queues' configs and lists the tickets there.
CREATE FUNCTION mm.tickets_after_insert_queues() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	bad record;
BEGIN
	IF NOT EXISTS (SELECT FROM new_tickets n WHERE n.queues IS NOT NULL) THEN
		RETURN NULL;
	END IF;
	SELECT n.id, u.queue, u.ord, cardinality(n.queues) AS n_queues,
		   CASE WHEN cardinality(n.queues) = 0 THEN 'must not be empty (leave queues NULL)'
				WHEN cardinality(n.queues) > 16 THEN 'has more than 16 queues'
				WHEN array_ndims(n.queues) > 1 THEN 'must be a one-dimensional array'
				WHEN u.queue IS NULL THEN 'must not be null'
				WHEN u.queue = n.queue THEN 'repeats the ticket''s queue'
				WHEN u.ord > (SELECT min(v.ord) FROM unnest(n.queues) WITH ORDINALITY v(queue, ord)
							   WHERE v.queue = u.queue) THEN 'is listed twice'
				WHEN NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = u.queue) THEN 'does not exist'
		   END AS problem
	  INTO bad
	  FROM new_tickets n
	  LEFT JOIN LATERAL unnest(n.queues) WITH ORDINALITY AS u(queue, ord) ON true
	 WHERE n.queues IS NOT NULL
	   AND (cardinality(n.queues) = 0 OR cardinality(n.queues) > 16 OR array_ndims(n.queues) > 1
			OR u.queue IS NULL OR u.queue = n.queue
			OR u.ord > (SELECT min(v.ord) FROM unnest(n.queues) WITH ORDINALITY v(queue, ord)
						 WHERE v.queue = u.queue)
			OR NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = u.queue))
	 ORDER BY n.id, u.ord
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'invalid ticket at queues%: %',
			  CASE WHEN bad.ord IS NULL OR bad.problem LIKE 'has more%' OR bad.problem LIKE 'must be a one%'
						OR bad.n_queues = 0
				   THEN '' ELSE '[' || bad.ord || ']' END,
			  CASE WHEN bad.problem = 'does not exist' THEN format('queue "%s" does not exist', bad.queue)
				   WHEN bad.queue IS NULL OR bad.problem LIKE 'has more%' OR bad.problem LIKE 'must be a one%'
					 OR bad.n_queues = 0 THEN bad.problem
				   ELSE format('"%s" %s', bad.queue, bad.problem) END
			USING ERRCODE = CASE WHEN bad.problem = 'does not exist' THEN 'undefined_object'
								 ELSE 'invalid_parameter_value' END,
				  DETAIL = format('Ticket %s.', bad.id);
	END IF;
	-- the same lock as on the ticket's own queue: a drop waits for this insert
	PERFORM FROM mm.queues q
	 WHERE q.name IN (SELECT u.queue FROM new_tickets n, unnest(n.queues) u(queue))
	   FOR KEY SHARE OF q;
	-- each queue's config validates the players (party sizes, attributes)
	PERFORM mm.validate_ticket(u.queue, n.players, n.created_at)
	   FROM new_tickets n, unnest(n.queues) WITH ORDINALITY u(queue, ord)
	  ORDER BY n.id, u.ord;
	INSERT INTO mm.ticket_queues (queue, ticket_id, created_at)
	SELECT u.queue, n.id, n.created_at FROM new_tickets n, unnest(n.queues) u(queue);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_insert_queues() IS
	'Trigger: checks the other queues of inserted tickets, validates the players there and lists the tickets in mm.ticket_queues';
REVOKE ALL ON FUNCTION mm.tickets_after_insert_queues() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_after_insert_queues() TO mm_admin;
CREATE TRIGGER tickets_after_insert_queues AFTER INSERT ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_insert_queues();

-- A deleted queue leaves the tickets that also searched in it.
CREATE FUNCTION mm.queues_after_delete_unlist() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- a copy of the reference table on Citus: nothing to do (Citus rule 12)
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
REVOKE ALL ON FUNCTION mm.queues_after_delete_unlist() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queues_after_delete_unlist() TO mm_admin;
CREATE TRIGGER queues_after_delete_unlist AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_unlist();

-- A ticket in several queues at once: the first queue is its own, the others
-- go into its `queues` column; the first queue that matches it wins.
CREATE FUNCTION mm.create_ticket(queues text[], players jsonb,
								 now timestamptz DEFAULT pg_catalog.now()) RETURNS bigint
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_id bigint;
	null_at integer;
BEGIN
	IF create_ticket.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF create_ticket.queues IS NULL OR cardinality(create_ticket.queues) = 0 THEN
		RAISE EXCEPTION 'queues must name at least one queue' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF array_ndims(create_ticket.queues) > 1 THEN
		RAISE EXCEPTION 'queues must be a one-dimensional array' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the subscript in the argument, whatever its lower bound
	SELECT min(u.ord) + array_lower(create_ticket.queues, 1) - 1 INTO null_at
	  FROM unnest(create_ticket.queues) WITH ORDINALITY u(queue, ord)
	 WHERE u.queue IS NULL;
	IF null_at IS NOT NULL THEN
		RAISE EXCEPTION 'queues[%] must not be null', null_at USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF create_ticket.players IS NULL THEN
		RAISE EXCEPTION 'players must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF mm.tables_are_distributed() THEN
		RETURN mm.create_ticket_on_shards(create_ticket.queues[array_lower(create_ticket.queues, 1)],
			nullif(create_ticket.queues[array_lower(create_ticket.queues, 1) + 1:], '{}'),
			create_ticket.players, create_ticket.now);
	END IF;
	-- the first queue is the ticket's own; the triggers check the others
	INSERT INTO mm.tickets (queue, queues, players, created_at)
	VALUES (create_ticket.queues[array_lower(create_ticket.queues, 1)],
			nullif(create_ticket.queues[array_lower(create_ticket.queues, 1) + 1:], '{}'),
			create_ticket.players, create_ticket.now)
	RETURNING id INTO ticket_id;
	RETURN ticket_id;
END
$$;
COMMENT ON FUNCTION mm.create_ticket(text[], jsonb, timestamptz) IS
	'Puts a ticket into several queues at once: the first queue that matches it wins; returns its id';
REVOKE ALL ON FUNCTION mm.create_ticket(text[], jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_ticket(text[], jsonb, timestamptz) TO mm_frontend, mm_admin;

-- Ticket tokens, the secret that reads an assignment
-- (docs/lifecycle.md#assignment, docs/security.md).  Ticket ids are
-- sequential, so an id alone does not let a frontend read an assignment:
-- each ticket has a token, returned when it is created
-- (mm.create_ticket_with_token) and required by the frontend's form of
-- mm.get_assignment (60_lifecycle.sql); the id-only form is mm_director's
-- (and mm_admin's).
--
-- The token is derived, not stored (src/ticket_assignment.c): an HMAC of
-- the ticket id under the extension's secret key, mm.event_key.  A stored
-- random token would be a column to write on every INSERT and COPY, to
-- carry each time the tick or a requeue moves a ticket between partitions,
-- and to hide from the roles that read the tickets (mm_analyst); a derived
-- one costs nothing until it is asked for, follows the ticket's id through a
-- requeue, exists for the tickets created by INSERT/COPY and by earlier
-- versions, and only a role that can read the key (the owner) could compute
-- one.  A new key (docs/events.md) or a restore into a new database
-- (pg_dump leaves the key out) gives every ticket a new token.

-- The token of a ticket id: for mm_director, which hands out the tokens of
-- tickets loaded by INSERT or COPY, and for the creation functions below.
CREATE FUNCTION mm.ticket_token(ticket_id bigint)
RETURNS text
LANGUAGE C STABLE STRICT
AS 'MODULE_PATHNAME', 'mm_ticket_token';
COMMENT ON FUNCTION mm.ticket_token(bigint) IS
'The token of a ticket (32 hex digits), which mm.get_assignment(ticket_id, token) requires; derived from the id and the event key';
REVOKE ALL ON FUNCTION mm.ticket_token(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_token(bigint) TO mm_director;

CREATE FUNCTION mm.ticket_token_matches(ticket_id bigint, token text)
RETURNS boolean
LANGUAGE C STABLE STRICT
AS 'MODULE_PATHNAME', 'mm_ticket_token_matches';
COMMENT ON FUNCTION mm.ticket_token_matches(bigint, text) IS
'Internal: whether a token is the ticket''s, compared in constant time';
REVOKE ALL ON FUNCTION mm.ticket_token_matches(bigint, text) FROM PUBLIC;

-- Creating a ticket and getting its token: the same as mm.create_ticket
-- (same checks, errors and triggers), which keeps returning the id alone.
CREATE FUNCTION mm.create_ticket_with_token(queue text, players jsonb,
											now timestamptz DEFAULT pg_catalog.now(),
											OUT ticket_id bigint, OUT token text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	create_ticket_with_token.ticket_id := mm.create_ticket(create_ticket_with_token.queue,
		create_ticket_with_token.players, create_ticket_with_token.now);
	create_ticket_with_token.token := mm.ticket_token(create_ticket_with_token.ticket_id);
END
$$;
COMMENT ON FUNCTION mm.create_ticket_with_token(text, jsonb, timestamptz) IS
'mm.create_ticket, returning the ticket''s id and its token (the secret that reads its assignment)';
REVOKE ALL ON FUNCTION mm.create_ticket_with_token(text, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_ticket_with_token(text, jsonb, timestamptz) TO mm_frontend;

CREATE FUNCTION mm.create_ticket_with_token(queues text[], players jsonb,
											now timestamptz DEFAULT pg_catalog.now(),
											OUT ticket_id bigint, OUT token text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	create_ticket_with_token.ticket_id := mm.create_ticket(create_ticket_with_token.queues,
		create_ticket_with_token.players, create_ticket_with_token.now);
	create_ticket_with_token.token := mm.ticket_token(create_ticket_with_token.ticket_id);
END
$$;
COMMENT ON FUNCTION mm.create_ticket_with_token(text[], jsonb, timestamptz) IS
'mm.create_ticket for several queues, returning the ticket''s id and its token (the secret that reads its assignment)';
REVOKE ALL ON FUNCTION mm.create_ticket_with_token(text[], jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_ticket_with_token(text[], jsonb, timestamptz) TO mm_frontend;

-- A client's sign of life for its ticket: one update of the active ticket by
-- its primary key, no event.  True while the ticket is searching or proposed
-- (a proposed ticket's beat is kept for when it searches again); false once
-- it ended (matched, cancelled, timed out): the client stops beating and
-- reads the outcome.  A beat waits for a tick that holds the ticket, and
-- then sees its outcome.  Beats never move heartbeat_at back.  C
-- (src/ticket_heartbeat.c): on the queue's Citus node it names the queue's
-- shard, as the tick does.
CREATE FUNCTION mm.heartbeat(queue text, ticket_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS boolean
AS 'MODULE_PATHNAME', 'mm_heartbeat'
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION mm.heartbeat(text, bigint, timestamptz) IS
'Keeps a searching or proposed ticket of a queue alive in a queue with heartbeat_timeout_seconds (true); false once the ticket ended';
REVOKE ALL ON FUNCTION mm.heartbeat(text, bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.heartbeat(text, bigint, timestamptz) TO mm_frontend;

-- By id alone: the ticket's queue found by a plain read.
CREATE FUNCTION mm.heartbeat(ticket_id bigint, now timestamptz DEFAULT pg_catalog.now())
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
