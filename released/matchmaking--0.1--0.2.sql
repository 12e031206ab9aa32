/* matchmaking--0.1--0.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION matchmaking UPDATE TO '0.2'" to load this file. \quit

-- 0.2 moves tickets into a table partitioned by status (tickets_active,
-- tickets_ended), replaces ticket_players by active_players, drops the
-- foreign keys the tick paid for on every row, adds the lifecycle tables
-- and registers every user table with pg_dump.  Searching tickets keep
-- searching with their age; matches, results and history are kept.

DROP TRIGGER tickets_validate ON mm.tickets;
DROP TRIGGER tickets_after_insert ON mm.tickets;
DROP TRIGGER tickets_after_update ON mm.tickets;
DROP TRIGGER tickets_refuse_change ON mm.tickets;
DROP FUNCTION mm.tickets_validate();

-- ---------------------------------------------------------------------
-- Matches: no foreign key to queues (drop_queue deletes them), lifecycle columns.
-- ---------------------------------------------------------------------
ALTER TABLE mm.matches DROP CONSTRAINT matches_queue_fkey;
ALTER TABLE mm.matches ADD COLUMN acceptance_deadline timestamptz;
ALTER TABLE mm.matches ADD COLUMN cancel_reason text;

ALTER TABLE mm.match_players DROP CONSTRAINT match_players_match_id_fkey;
DROP INDEX mm.match_players_ticket_once;

COMMENT ON TABLE mm.players IS 'Server-side player attributes (trusted: clients cannot write them); tickets do not need a row here';

-- ---------------------------------------------------------------------
-- Tickets: 0.1's table becomes the partitioned mm.tickets.
-- ---------------------------------------------------------------------
ALTER TABLE mm.tickets RENAME TO tickets_01;
ALTER SEQUENCE mm.tickets_id_seq RENAME TO tickets_01_id_seq;
ALTER TABLE mm.ticket_players RENAME TO ticket_players_01;

CREATE SEQUENCE mm.tickets_id_seq;
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
	CONSTRAINT tickets_match_consistent CHECK (
		status OPERATOR(pg_catalog.<>) ALL (ARRAY['proposed', 'matched']) OR match_id IS NOT NULL)
) PARTITION BY LIST (status);
ALTER SEQUENCE mm.tickets_id_seq OWNED BY mm.tickets.id;
COMMENT ON TABLE mm.tickets IS 'Every ticket (one player or a party), partitioned into tickets_active and tickets_ended';

CREATE TABLE mm.tickets_active PARTITION OF mm.tickets
	FOR VALUES IN ('searching', 'proposed');
ALTER TABLE mm.tickets_active ADD PRIMARY KEY (id);
CREATE INDEX tickets_active_queue_created ON mm.tickets_active (queue, created_at, id);
COMMENT ON TABLE mm.tickets_active IS 'Searching and proposed tickets: the tick''s working set';

CREATE TABLE mm.tickets_ended PARTITION OF mm.tickets
	FOR VALUES IN ('matched', 'cancelled', 'timed_out');
ALTER TABLE mm.tickets_ended ADD PRIMARY KEY (id);
CREATE INDEX tickets_ended_times ON mm.tickets_ended USING brin (created_at, updated_at, matched_at);
COMMENT ON TABLE mm.tickets_ended IS 'Matched, cancelled and timed-out tickets: written once, when the ticket ends';

CREATE TABLE mm.active_players (
	player_id text PRIMARY KEY,
	ticket_id bigint NOT NULL,
	queue text NOT NULL
);
COMMENT ON TABLE mm.active_players IS 'The player of every searching or proposed ticket, one row each: one active ticket per player';

-- The rows, written into the partitions directly (the parent's statement
-- triggers would validate against today's configs and re-claim players).
-- A searching ticket's updated_at was its created_at in 0.1: NULL now.
INSERT INTO mm.tickets_active (id, queue, players, status, created_at, updated_at, matched_at, match_id, team)
SELECT t.id, t.queue, t.players, t.status, t.created_at,
	   CASE WHEN t.status OPERATOR(pg_catalog.=) 'searching' THEN NULL ELSE t.updated_at END,
	   t.matched_at, t.match_id,
	   (SELECT mp.team FROM mm.match_players mp
		 WHERE mp.ticket_id OPERATOR(pg_catalog.=) t.id AND mp.match_id OPERATOR(pg_catalog.=) t.match_id
		 LIMIT 1)
  FROM mm.tickets_01 t
 WHERE t.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed']);
INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, matched_at, match_id, team)
SELECT t.id, t.queue, t.players, t.status, t.created_at, t.updated_at, t.matched_at, t.match_id,
	   (SELECT mp.team FROM mm.match_players mp
		 WHERE mp.ticket_id OPERATOR(pg_catalog.=) t.id AND mp.match_id OPERATOR(pg_catalog.=) t.match_id
		 LIMIT 1)
  FROM mm.tickets_01 t
 WHERE t.status OPERATOR(pg_catalog.<>) ALL (ARRAY['searching', 'proposed']);
INSERT INTO mm.active_players (player_id, ticket_id, queue)
SELECT tp.player_id, tp.ticket_id, tp.queue FROM mm.ticket_players_01 tp WHERE tp.active;
SELECT pg_catalog.setval('mm.tickets_id_seq',
	   GREATEST(pg_catalog.nextval('mm.tickets_01_id_seq'::pg_catalog.regclass),
						   (SELECT pg_catalog.max(id) OPERATOR(pg_catalog.+) 1 FROM mm.tickets_01)),
	   false);


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

-- ---------------------------------------------------------------------
-- Functions (after the tables: SQL functions are checked against them).
-- ---------------------------------------------------------------------
-- Deleting a queue deletes its tickets and matches (and, through their
-- keys, results and backfill requests): the tick's tables carry no foreign
-- key to mm.queues, whose checks would cost a lookup per written row.
CREATE FUNCTION mm.queues_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.tickets t USING old_queues q WHERE t.queue = q.name;
	DELETE FROM mm.match_players mp USING old_queues q WHERE mp.queue = q.name;
	DELETE FROM mm.matches m USING old_queues q WHERE m.queue = q.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete() IS
	'Trigger: deletes the tickets and matches of deleted queues';

CREATE TRIGGER queues_after_delete AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete();

CREATE OR REPLACE FUNCTION mm.validate_ticket(queue text, players jsonb, created_at timestamptz)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'mm_validate_ticket'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION mm.validate_ticket(text, jsonb, timestamptz) IS
	'Checks a new ticket''s players against its queue''s config (errors name the JSON path); returns the player count';

CREATE OR REPLACE FUNCTION mm.claim_players(ticket_ids bigint[], queues text[], players jsonb[])
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
	holder_status text;
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
		-- A claim whose ticket is gone (its partition written or truncated
		-- directly) is stale: drop it and try once more.  Only in READ
		-- COMMITTED, where a fresh snapshot sees the holder's commit that the
		-- refusal waited for.
		EXIT WHEN attempt = 2 OR current_setting('transaction_isolation') <> 'read committed';
		DELETE FROM mm.active_players a
		 USING unnest(claim_players.players) AS u(players), jsonb_array_elements(u.players) p
		 WHERE a.player_id = p.value ->> 'id'
		   AND NOT EXISTS (SELECT FROM mm.tickets_active t WHERE t.id = a.ticket_id);
		EXIT WHEN NOT FOUND;
	END LOOP;

	-- the first player, in ticket order, that is taken or repeated
	WITH new_players AS (
		SELECT u.ticket_id, p.value ->> 'id' AS player_id, u.ticket_ord, p.ord
		  FROM ROWS FROM (unnest(claim_players.ticket_ids), unnest(claim_players.players))
			   WITH ORDINALITY AS u(ticket_id, players, ticket_ord),
			   jsonb_array_elements(u.players) WITH ORDINALITY p(value, ord)
	)
	SELECT h.player_id, h.holder INTO dup_player, holder_ticket
	  FROM (SELECT np.player_id, np.ticket_ord, np.ord,
				   coalesce((SELECT ap.ticket_id FROM mm.active_players ap
							  WHERE ap.player_id = np.player_id),
							(SELECT e.ticket_id FROM new_players e
							  WHERE e.player_id = np.player_id
								AND (e.ticket_ord, e.ord) < (np.ticket_ord, np.ord)
							  ORDER BY e.ticket_ord, e.ord LIMIT 1)) AS holder
			  FROM new_players np) h
	 WHERE h.holder IS NOT NULL
	 ORDER BY h.ticket_ord, h.ord
	 LIMIT 1;
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

CREATE OR REPLACE FUNCTION mm.tickets_after_insert() RETURNS trigger
	LANGUAGE plpgsql
	-- the inserting role needs no privilege on mm.queues (a row lock) or
	-- mm.active_players: this trigger only checks and claims what it inserted
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	bad record;
BEGIN
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
	-- one active ticket per player: a plain insert, in player order, so that
	-- two statements claiming the same players in different orders queue up
	-- on the first one they share instead of deadlocking; the rare refusal
	-- is explained by claim_players, which tries again and names the holder
	BEGIN
		INSERT INTO mm.active_players (player_id, ticket_id, queue)
		SELECT p.value ->> 'id', n.id, n.queue
		  FROM new_tickets n, jsonb_array_elements(n.players) p
		 ORDER BY 1;
	EXCEPTION WHEN unique_violation THEN
		PERFORM mm.claim_players(array_agg(n.id ORDER BY n.id), array_agg(n.queue ORDER BY n.id),
								 array_agg(n.players ORDER BY n.id))
		  FROM new_tickets n;
	END;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_insert() IS
	'Trigger: validates the inserted tickets and claims their players (one active ticket per player)';

CREATE OR REPLACE FUNCTION mm.tickets_after_update() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	final record;
BEGIN
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
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_update() IS
	'Trigger: releases or claims players when an UPDATE moves tickets out of or into searching/proposed';

CREATE OR REPLACE FUNCTION mm.tickets_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
BEGIN
	DELETE FROM mm.active_players ap USING old_tickets o, jsonb_array_elements(o.players) p
	 WHERE ap.player_id = p.value ->> 'id' AND ap.ticket_id = o.id;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_delete() IS
	'Trigger: releases the players of deleted tickets';

-- TRUNCATE of the tickets (or of their active partition) releases every player.
CREATE FUNCTION mm.tickets_after_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.active_players;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_truncate() IS
	'Trigger: releases every player when the active tickets are truncated';

CREATE OR REPLACE FUNCTION mm.tickets_refuse_change() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	RAISE EXCEPTION 'the queue and players of ticket % cannot be changed', OLD.id
		USING ERRCODE = 'feature_not_supported',
			  HINT = 'Cancel the ticket and create a new one.';
END
$$;
COMMENT ON FUNCTION mm.tickets_refuse_change() IS
	'Trigger: refuses changes to a ticket''s id, queue or players';

CREATE OR REPLACE FUNCTION mm.end_tickets(ticket_ids bigint[], new_status text, ended_at timestamptz)
	RETURNS SETOF bigint
	LANGUAGE sql
	SET search_path = pg_catalog, pg_temp
	AS $$
	WITH moved AS (
		DELETE FROM mm.tickets_active t WHERE t.id = ANY (end_tickets.ticket_ids)
		RETURNING t.id, t.queue, t.players, t.created_at
	), released AS (
		DELETE FROM mm.active_players a
		 USING moved m, jsonb_array_elements(m.players) p
		 WHERE a.player_id = p.value ->> 'id' AND a.ticket_id = m.id
	)
	INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at)
	SELECT m.id, m.queue, m.players, end_tickets.new_status, m.created_at, end_tickets.ended_at
	  FROM moved m
	RETURNING id
$$;
COMMENT ON FUNCTION mm.end_tickets(bigint[], text, timestamptz) IS
	'Internal: moves active tickets to tickets_ended as cancelled or timed_out and releases their players';

CREATE OR REPLACE FUNCTION mm.create_ticket(queue text, players jsonb,
								 now timestamptz DEFAULT pg_catalog.now()) RETURNS bigint
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_id bigint;
BEGIN
	IF create_ticket.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- the trigger validates and claims the players, as for a plain INSERT
	INSERT INTO mm.tickets (queue, players, created_at)
	VALUES (create_ticket.queue, create_ticket.players, create_ticket.now)
	RETURNING id INTO ticket_id;
	RETURN ticket_id;
END
$$;
COMMENT ON FUNCTION mm.create_ticket(text, jsonb, timestamptz) IS
	'Puts a ticket (one player or a party) into a queue; returns its id. Same as INSERT INTO mm.tickets';

CREATE OR REPLACE FUNCTION mm.cancel_ticket(ticket_id bigint) RETURNS boolean
	LANGUAGE plpgsql STRICT
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_status text;
	ticket_queue text;
BEGIN
	-- waits for a tick that holds the ticket; if the tick ended it, the
	-- active row is gone and the ended one tells the outcome
	SELECT t.status, t.queue INTO ticket_status, ticket_queue
	  FROM mm.tickets_active t WHERE t.id = cancel_ticket.ticket_id
	   FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM FROM mm.tickets_ended t WHERE t.id = cancel_ticket.ticket_id;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ticket % does not exist', cancel_ticket.ticket_id
				USING ERRCODE = 'undefined_object';
		END IF;
		RETURN false;
	END IF;

	PERFORM mm.end_tickets(ARRAY[cancel_ticket.ticket_id], 'cancelled', now());
	-- signed, delivered at commit only
	PERFORM mm.notify_ticket_event('ticket_cancelled', ticket_queue, ARRAY[cancel_ticket.ticket_id]);
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.cancel_ticket(bigint) IS
	'Cancels a searching or proposed ticket (true), or returns false when it was no longer active; NOTIFYs mm_events';

CREATE OR REPLACE FUNCTION mm.drop_queue(name text, force boolean DEFAULT false) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	active_count bigint;
	cancelled_ids bigint[];
BEGIN
	-- FOR UPDATE also blocks new tickets (their validation locks the row FOR KEY SHARE)
	PERFORM FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) drop_queue.name FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', drop_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;

	SELECT pg_catalog.count(*) INTO active_count FROM mm.tickets t
	 WHERE t.queue OPERATOR(pg_catalog.=) drop_queue.name
	   AND t.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed']);
	IF active_count OPERATOR(pg_catalog.>) 0 THEN
		IF NOT coalesce(drop_queue.force, false) THEN
			RAISE EXCEPTION 'queue "%" still has active tickets', drop_queue.name
				USING ERRCODE = 'object_in_use',
					  DETAIL = pg_catalog.format('%s searching or proposed ticket(s) block dropping the queue.',
												 active_count),
					  HINT = 'Cancel them first, or call mm.drop_queue(name, force => true) to cancel them.';
		END IF;
		-- cancel them all in one statement (the queue row lock keeps new
		-- tickets out; a ticket locked by a tick is waited for), then tell
		-- every client in ticket_cancelled events split under 8000 bytes
		SELECT pg_catalog.array_agg(c.id ORDER BY c.id) INTO cancelled_ids
		  FROM mm.end_tickets(ARRAY(SELECT t.id FROM mm.tickets_active t
									 WHERE t.queue OPERATOR(pg_catalog.=) drop_queue.name
									 ORDER BY t.id FOR UPDATE),
							  'cancelled', pg_catalog.now()) AS c(id);
		IF cancelled_ids IS NOT NULL THEN
			PERFORM mm.notify_ticket_event('ticket_cancelled', drop_queue.name, cancelled_ids);
		END IF;
	END IF;

	-- tickets, matches and everything hanging off them go with the queue
	-- (mm.queues_after_delete)
	DELETE FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) drop_queue.name;
END
$$;
COMMENT ON FUNCTION mm.drop_queue(text, boolean) IS
	'Drops a queue with its tickets and matches; refused while tickets are active unless force cancels them';

CREATE OR REPLACE FUNCTION mm.purge_finished(older_than interval, batch_size integer DEFAULT 10000,
								  archive boolean DEFAULT false, now timestamptz DEFAULT now(),
								  OUT matches_purged bigint, OUT tickets_purged bigint)
RETURNS record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cutoff timestamptz;
	match_ids bigint[];
	ticket_ids bigint[];
	q text;
	n bigint;
BEGIN
	IF older_than IS NULL THEN
		RAISE EXCEPTION 'older_than must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF older_than < '0'::interval THEN
		RAISE EXCEPTION 'older_than must not be negative: %', older_than USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF batch_size IS NULL OR archive IS NULL OR now IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN batch_size IS NULL THEN 'batch_size' WHEN archive IS NULL THEN 'archive' ELSE 'now' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF batch_size < 1 OR batch_size > 1000000 THEN
		RAISE EXCEPTION 'batch_size must be between 1 and 1000000: %', batch_size
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF now IN ('infinity', '-infinity') THEN
		RAISE EXCEPTION 'now must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	BEGIN
		cutoff := now - older_than;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'older_than reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'now - older_than is out of range.';
	END;

	-- the oldest finished matches, queue by queue (the indexes lead with queue)
	match_ids := '{}';
	FOR q IN SELECT name FROM mm.queues ORDER BY name LOOP
		EXIT WHEN cardinality(match_ids) >= batch_size;
		match_ids := match_ids || ARRAY(
			SELECT m.id FROM mm.matches m
			 WHERE m.queue = q AND m.status IN ('completed', 'cancelled') AND m.updated_at < cutoff
			 ORDER BY m.updated_at, m.id
			 LIMIT batch_size - cardinality(match_ids)
			   FOR UPDATE SKIP LOCKED);
	END LOOP;
	ticket_ids := '{}';
	FOR q IN SELECT name FROM mm.queues ORDER BY name LOOP
		EXIT WHEN cardinality(ticket_ids) >= batch_size;
		ticket_ids := ticket_ids || ARRAY(
			SELECT t.id FROM mm.tickets t
			 WHERE t.queue = q AND t.status IN ('cancelled', 'timed_out') AND t.updated_at < cutoff
			 ORDER BY t.updated_at, t.id
			 LIMIT batch_size - cardinality(ticket_ids)
			   FOR UPDATE SKIP LOCKED);
	END LOOP;
	-- a purged match takes its ended tickets along (a matched ticket needs
	-- its match), found through its players; a ticket back in the active
	-- partition (searching again) stays
	ticket_ids := ticket_ids || ARRAY(
		SELECT t.id FROM mm.tickets_ended t
		 WHERE t.id IN (SELECT mp.ticket_id FROM mm.match_players mp WHERE mp.match_id = ANY (match_ids))
		   AND t.match_id = ANY (match_ids) AND t.id <> ALL (ticket_ids)
		 ORDER BY t.id FOR UPDATE);

	IF archive THEN
		INSERT INTO mm.matches_archive SELECT m.*, now FROM mm.matches m WHERE m.id = ANY (match_ids);
		INSERT INTO mm.match_players_archive
			SELECT mp.*, now FROM mm.match_players mp WHERE mp.match_id = ANY (match_ids);
		INSERT INTO mm.match_results_archive
			SELECT r.*, now FROM mm.match_results r WHERE r.match_id = ANY (match_ids);
		INSERT INTO mm.tickets_archive SELECT t.*, now FROM mm.tickets_ended t WHERE t.id = ANY (ticket_ids);
	END IF;

	-- match_results go by ON DELETE CASCADE; match players are deleted here
	DELETE FROM mm.match_players mp WHERE mp.match_id = ANY (match_ids);
	DELETE FROM mm.tickets_ended t WHERE t.id = ANY (ticket_ids);
	GET DIAGNOSTICS n = ROW_COUNT;
	tickets_purged := n;
	DELETE FROM mm.matches m WHERE m.id = ANY (match_ids);
	GET DIAGNOSTICS n = ROW_COUNT;
	matches_purged := n;
END;
$$;
COMMENT ON FUNCTION mm.purge_finished(interval, integer, boolean, timestamptz) IS
'One retention batch: deletes or archives finished matches and tickets last changed before now - older_than';

CREATE OR REPLACE FUNCTION mm.match_player_values(match_id bigint, region text, skill_attribute text,
									   OUT team text, OUT skill float8, OUT latency float8)
RETURNS SETOF record
LANGUAGE sql STABLE PARALLEL SAFE
-- no SET clause, so that it is inlined into its caller's query: hence the
-- schema-qualified operators
AS $$
	SELECT mp.team,
		   CASE WHEN pg_catalog.jsonb_typeof(tp.attributes OPERATOR(pg_catalog.->) skill_attribute)
					 OPERATOR(pg_catalog.=) 'number'
				THEN CAST(tp.attributes OPERATOR(pg_catalog.->>) skill_attribute AS pg_catalog.float8) END,
		   CASE WHEN pg_catalog.jsonb_typeof(tp.latencies OPERATOR(pg_catalog.->) region)
					 OPERATOR(pg_catalog.=) 'number'
				THEN CAST(tp.latencies OPERATOR(pg_catalog.->>) region AS pg_catalog.float8) END
	  FROM mm.match_players mp
	  LEFT JOIN mm.ticket_players tp ON tp.ticket_id OPERATOR(pg_catalog.=) mp.ticket_id
									AND tp.player_id OPERATOR(pg_catalog.=) mp.player_id
	 WHERE mp.match_id OPERATOR(pg_catalog.=) match_player_values.match_id
$$;
COMMENT ON FUNCTION mm.match_player_values(bigint, text, text) IS
'The players of a match: team, skill attribute and latency to the region (used by mm.match_details)';

CREATE OR REPLACE FUNCTION mm.match_details(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now(), skill_attribute text DEFAULT 'skill')
RETURNS TABLE (match_id bigint, queue_name text, created_at timestamptz, region text, players integer,
			   teams integer, quality float8, seed_quality float8, team_skill_gap float8,
			   latency_avg_ms float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	queues text[];
BEGIN
	PERFORM mm.metrics_check_window(time_window, now);
	IF skill_attribute IS NULL THEN
		RAISE EXCEPTION 'skill_attribute must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	queues := mm.metrics_queues(queue);
	-- Per match lookups (LATERAL, by the match_players and tickets
	-- primary keys), so the cost follows the window's matches, not the tables.
	RETURN QUERY
	WITH m AS (
		SELECT mt.id, mt.queue, mt.created_at, mt.region, mt.quality
		  FROM mm.matches mt
		 WHERE mt.queue = ANY (queues) AND mt.created_at > now - time_window AND mt.created_at <= now
	), per_match AS (
		SELECT m.*, pl.players, pl.latency, pl.skill_sum, pl.skill_count,
			   pl.teams, pl.teams_with_skill, pl.skill_gap
		  FROM m
		 CROSS JOIN LATERAL (
			-- one row per team (and one for players without a team)
			SELECT coalesce(sum(t.players), 0)::integer AS players,
				   sum(t.latency_sum) / nullif(sum(t.latency_count), 0) AS latency,
				   sum(t.skill_sum) AS skill_sum, sum(t.skill_count) AS skill_count,
				   count(*) FILTER (WHERE t.team IS NOT NULL)::integer AS teams,
				   count(t.skill) FILTER (WHERE t.team IS NOT NULL) AS teams_with_skill,
				   max(t.skill) FILTER (WHERE t.team IS NOT NULL)
				   - min(t.skill) FILTER (WHERE t.team IS NOT NULL) AS skill_gap
			  FROM (SELECT x.team, count(*) AS players, avg(x.skill) AS skill,
						   sum(x.skill) AS skill_sum, count(x.skill) AS skill_count,
						   sum(x.latency) AS latency_sum, count(x.latency) AS latency_count
					  FROM mm.match_player_values(m.id, m.region, skill_attribute) x
					 GROUP BY x.team) t) pl
	), with_global AS (
		-- the queue's average skill over every player of its matches in the window
		SELECT pm.*, sum(pm.skill_sum) OVER (PARTITION BY pm.queue)
					 / nullif(sum(pm.skill_count) OVER (PARTITION BY pm.queue), 0) AS global_skill
		  FROM per_match pm
	)
	SELECT g.id, g.queue, g.created_at, g.region, g.players, g.teams, g.quality,
		   CASE WHEN g.teams_with_skill >= 2 AND g.global_skill > 0
				THEN 1 - g.skill_gap / g.global_skill END,
		   CASE WHEN g.teams_with_skill >= 2 THEN g.skill_gap END,
		   g.latency
	  FROM with_global g
	 ORDER BY g.created_at, g.id;
END;
$$;
COMMENT ON FUNCTION mm.match_details(text, interval, timestamptz, text) IS
'Per match formed in the window: players, teams, stored quality, the seed''s skill quality score, average latency';

CREATE OR REPLACE FUNCTION mm.ticket_metrics(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								  now timestamptz DEFAULT now())
RETURNS TABLE (searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	queues text[];
	since timestamptz;
	fill_within constant interval := '120 seconds';
BEGIN
	PERFORM mm.metrics_check_window(time_window, now);
	queues := mm.metrics_queues(queue);
	since := now - time_window;

	SELECT count(*), coalesce(sum(jsonb_array_length(t.players)), 0),
		   extract(epoch FROM now - min(t.created_at))::float8
	  INTO searching_tickets, searching_players, oldest_wait_s
	  FROM mm.tickets t
	 WHERE t.queue = ANY (queues) AND t.status = 'searching' AND t.created_at <= now;

	SELECT count(*), avg(w.seconds), percentile_cont(0.5) WITHIN GROUP (ORDER BY w.seconds),
		   percentile_cont(0.95) WITHIN GROUP (ORDER BY w.seconds),
		   percentile_cont(0.99) WITHIN GROUP (ORDER BY w.seconds)
	  INTO tickets_matched, time_to_match_avg_s, time_to_match_p50_s, time_to_match_p95_s,
		   time_to_match_p99_s
	  FROM (SELECT extract(epoch FROM t.matched_at - t.created_at)::float8 AS seconds
			  FROM mm.tickets t
			 WHERE t.queue = ANY (queues) AND t.matched_at > since AND t.matched_at <= now) w;

	-- The window's tickets whose 120 s verdict is in: matched in time, or
	-- timed out, or older than 120 s; a cancellation within 120 s was the
	-- player's choice and is left out, and so is a ticket still younger.
	SELECT count(*) FILTER (WHERE f.in_time)::float8 / nullif(count(*), 0), count(*)
	  INTO fill_rate, fill_rate_tickets
	  FROM (SELECT coalesce(t.matched_at <= now AND t.matched_at - t.created_at <= fill_within, false) AS in_time,
				   t.status, t.created_at, t.updated_at
			  FROM mm.tickets t
			 WHERE t.queue = ANY (queues) AND t.created_at > since AND t.created_at <= now) f
	 WHERE f.in_time
		OR f.status = 'timed_out'
		OR (f.status = 'cancelled' AND f.updated_at - f.created_at >= fill_within)
		OR (f.status <> 'cancelled' AND now - f.created_at >= fill_within);

	SELECT count(*) FILTER (WHERE t.status = 'timed_out'), count(*) FILTER (WHERE t.status = 'cancelled')
	  INTO timeouts, cancellations
	  FROM mm.tickets t
	 WHERE t.queue = ANY (queues) AND t.status IN ('cancelled', 'timed_out')
	   AND t.updated_at > since AND t.updated_at <= now;

	RETURN NEXT;
END;
$$;
COMMENT ON FUNCTION mm.ticket_metrics(text, interval, timestamptz) IS
'Ticket figures of a queue (all queues pooled for NULL) over (now - time_window, now]: searching, time to match, fill rate, timeouts';

CREATE OR REPLACE FUNCTION mm.queue_statistics(queue text, now timestamptz DEFAULT now())
RETURNS TABLE (players_searching bigint, estimated_wait_s float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	config jsonb;
	show_player_count boolean;
	show_time_to_match boolean;
BEGIN
	IF queue_statistics.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.metrics_check_window('15 minutes', now);
	SELECT q.config INTO config FROM mm.queues q WHERE q.name = queue_statistics.queue;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue_statistics.queue USING ERRCODE = 'undefined_object';
	END IF;
	show_player_count := coalesce((config #>> '{statistics,show_player_count}')::boolean, false);
	show_time_to_match := coalesce((config #>> '{statistics,show_time_to_match}')::boolean, false);

	players_searching := NULL;
	estimated_wait_s := NULL;
	IF show_player_count THEN
		SELECT coalesce(sum(jsonb_array_length(t.players)), 0) INTO players_searching
		  FROM mm.tickets t
		 WHERE t.queue = queue_statistics.queue AND t.status = 'searching' AND t.created_at <= now;
	END IF;
	IF show_time_to_match THEN
		SELECT round(percentile_cont(0.5) WITHIN GROUP (
					 ORDER BY extract(epoch FROM t.matched_at - t.created_at)::float8))
		  INTO estimated_wait_s
		  FROM mm.tickets t
		 WHERE t.queue = queue_statistics.queue
		   AND t.matched_at > now - '15 minutes'::interval AND t.matched_at <= now;
	END IF;
	RETURN NEXT;
END;
$$;
COMMENT ON FUNCTION mm.queue_statistics(text, timestamptz) IS
'What players may see about a queue: searching players and estimated wait, as the queue''s statistics flags allow';

CREATE OR REPLACE FUNCTION mm.queue_stats_by_minute(queue text, from_time timestamptz, to_time timestamptz)
RETURNS TABLE (minute timestamptz, tickets_created bigint, tickets_matched bigint,
			   time_to_match_avg_s float8, time_to_match_p95_s float8, matches bigint,
			   quality_avg float8, timeouts bigint, cancellations bigint, searching_at_end bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	first_minute timestamptz;
	last_end timestamptz;
BEGIN
	IF queue IS NULL OR from_time IS NULL OR to_time IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN queue IS NULL THEN 'queue' WHEN from_time IS NULL THEN 'from_time' ELSE 'to_time' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(from_time) OR NOT isfinite(to_time) THEN
		RAISE EXCEPTION 'from_time and to_time must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF to_time <= from_time THEN
		RAISE EXCEPTION 'to_time must be after from_time' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- in seconds: to_time - from_time as an interval overflows for far-apart times
	IF extract(epoch FROM to_time) - extract(epoch FROM from_time) > 7 * 86400 THEN
		RAISE EXCEPTION 'from_time and to_time must be at most 7 days apart'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Use mm.queue_stats(time_window, now) for longer spans.';
	END IF;
	PERFORM mm.metrics_queues(queue);
	first_minute := date_trunc('minute', from_time);
	-- the end of the last minute that starts before to_time
	last_end := date_trunc('minute', to_time - '1 microsecond'::interval) + '1 minute'::interval;

	RETURN QUERY
	WITH minutes AS (
		SELECT g AS minute FROM generate_series(first_minute, last_end - '1 minute'::interval,
												'1 minute'::interval) g
	), created AS (
		SELECT date_trunc('minute', t.created_at) AS minute, count(*) AS n
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue
		   AND t.created_at >= first_minute AND t.created_at < last_end
		 GROUP BY 1
	), matched AS (
		SELECT date_trunc('minute', t.matched_at) AS minute, count(*) AS n,
			   avg(extract(epoch FROM t.matched_at - t.created_at)::float8) AS wait_avg,
			   percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM t.matched_at - t.created_at)::float8) AS wait_p95
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue
		   AND t.matched_at >= first_minute AND t.matched_at < last_end
		 GROUP BY 1
	), formed AS (
		SELECT date_trunc('minute', m.created_at) AS minute, count(*) AS n, avg(m.quality) AS quality
		  FROM mm.matches m
		 WHERE m.queue = queue_stats_by_minute.queue
		   AND m.created_at >= first_minute AND m.created_at < last_end
		 GROUP BY 1
	), ended AS (
		SELECT date_trunc('minute', t.updated_at) AS minute,
			   count(*) FILTER (WHERE t.status = 'timed_out') AS timeouts,
			   count(*) FILTER (WHERE t.status = 'cancelled') AS cancellations
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at >= first_minute AND t.updated_at < last_end
		 GROUP BY 1
	), alive AS (
		-- tickets searching at the end of some minute of the range: created
		-- before its end, ended (matched, cancelled, timed out) after the first
		-- minute's end or not at all; each read through an index
		SELECT t.created_at, NULL::timestamptz AS ended_at
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status = 'searching' AND t.created_at < last_end
		UNION ALL
		SELECT t.created_at, t.matched_at
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.matched_at IS NOT NULL
		   AND t.matched_at >= first_minute + '1 minute'::interval AND t.created_at < last_end
		UNION ALL
		SELECT t.created_at, t.updated_at
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at >= first_minute + '1 minute'::interval AND t.created_at < last_end
	), depth_change AS (
		-- +1 in the minute a ticket arrives (or the first minute), -1 in the one it leaves
		SELECT d.minute, sum(d.change) AS change
		  FROM (SELECT greatest(first_minute, date_trunc('minute', a.created_at)) AS minute, 1 AS change
				  FROM alive a
				UNION ALL
				SELECT date_trunc('minute', a.ended_at), -1
				  FROM alive a WHERE a.ended_at < last_end) d
		 GROUP BY d.minute
	)
	SELECT mi.minute, coalesce(c.n, 0), coalesce(ma.n, 0), ma.wait_avg, ma.wait_p95,
		   coalesce(f.n, 0), f.quality, coalesce(e.timeouts, 0), coalesce(e.cancellations, 0),
		   (sum(coalesce(dc.change, 0)) OVER (ORDER BY mi.minute))::bigint
	  FROM minutes mi
	  LEFT JOIN created c ON c.minute = mi.minute
	  LEFT JOIN matched ma ON ma.minute = mi.minute
	  LEFT JOIN formed f ON f.minute = mi.minute
	  LEFT JOIN ended e ON e.minute = mi.minute
	  LEFT JOIN depth_change dc ON dc.minute = mi.minute
	 ORDER BY mi.minute;
END;
$$;
COMMENT ON FUNCTION mm.queue_stats_by_minute(text, timestamptz, timestamptz) IS
'Per minute of a queue, for dashboards: tickets created and matched, time to match, matches, quality, timeouts, cancellations, queue depth';

CREATE OR REPLACE FUNCTION mm.metrics_check_window(time_window interval, now timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF time_window IS NULL THEN
		RAISE EXCEPTION 'time_window must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF time_window <= '0'::interval THEN
		RAISE EXCEPTION 'time_window must be positive: %', time_window USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF now IN ('infinity', '-infinity') THEN
		RAISE EXCEPTION 'now must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the window's start must be a timestamp
	BEGIN
		PERFORM now - time_window;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'time_window reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'now - time_window is out of range.';
	END;
END;
$$;
COMMENT ON FUNCTION mm.metrics_check_window(interval, timestamptz) IS
'Raises an error unless time_window is positive, now finite and now - time_window a timestamp (shared by the metrics functions)';

CREATE TRIGGER tickets_after_insert AFTER INSERT ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_insert();
CREATE TRIGGER tickets_after_update AFTER UPDATE ON mm.tickets
	REFERENCING OLD TABLE AS old_tickets NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_update();
CREATE TRIGGER tickets_after_delete AFTER DELETE ON mm.tickets
	REFERENCING OLD TABLE AS old_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_delete();
CREATE TRIGGER tickets_after_truncate AFTER TRUNCATE ON mm.tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_truncate();
CREATE TRIGGER tickets_active_after_truncate AFTER TRUNCATE ON mm.tickets_active
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_truncate();
REVOKE ALL ON FUNCTION mm.tickets_after_insert() FROM PUBLIC;
REVOKE ALL ON FUNCTION mm.tickets_after_update() FROM PUBLIC;
REVOKE ALL ON FUNCTION mm.tickets_after_delete() FROM PUBLIC;
REVOKE ALL ON FUNCTION mm.tickets_after_truncate() FROM PUBLIC;
CREATE TRIGGER tickets_refuse_change BEFORE UPDATE OF id, queue, players ON mm.tickets
	FOR EACH ROW
	WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.queue IS DISTINCT FROM NEW.queue
		  OR OLD.players IS DISTINCT FROM NEW.players)
	EXECUTE FUNCTION mm.tickets_refuse_change();

-- ---------------------------------------------------------------------
-- Lifecycle tables (filled by later versions' functions).
-- ---------------------------------------------------------------------
-- Backfill: open slots of a running match that the tick fills from searching
-- tickets before it forms new matches.  At most one open request per match.
CREATE TABLE mm.backfill_requests (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	match_id bigint NOT NULL REFERENCES mm.matches (id) ON DELETE CASCADE,
	queue text NOT NULL,
	-- {"team name": slots, ...}
	open_slots jsonb NOT NULL,
	status text NOT NULL DEFAULT 'open'
		CONSTRAINT backfill_requests_status CHECK (status OPERATOR(pg_catalog.=) ANY (
			ARRAY['open', 'filled', 'cancelled'])),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	updated_at timestamptz
);
CREATE UNIQUE INDEX backfill_requests_one_open ON mm.backfill_requests (match_id)
	WHERE status OPERATOR(pg_catalog.=) 'open';
CREATE INDEX backfill_requests_queue_open ON mm.backfill_requests (queue, created_at)
	WHERE status OPERATOR(pg_catalog.=) 'open';
COMMENT ON TABLE mm.backfill_requests IS 'Requests to fill open slots of running matches';

-- Stored ratings per rating pool (several queues may share a pool).
CREATE TABLE mm.ratings (
	player_id text NOT NULL,
	pool text NOT NULL,
	rating float8,
	rd float8,
	volatility float8,
	mu float8,
	sigma float8,
	games integer NOT NULL DEFAULT 0,
	wins integer NOT NULL DEFAULT 0,
	updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	PRIMARY KEY (player_id, pool)
);
COMMENT ON TABLE mm.ratings IS 'Each player''s stored rating per rating pool';

CREATE TABLE mm.rating_history (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	player_id text NOT NULL,
	pool text NOT NULL,
	match_id bigint,
	rating_before float8,
	rating_after float8,
	rd_before float8,
	rd_after float8,
	mu_before float8,
	mu_after float8,
	sigma_before float8,
	sigma_after float8,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX rating_history_player ON mm.rating_history (player_id, pool, created_at);
COMMENT ON TABLE mm.rating_history IS 'Every change of a stored rating, with the match that caused it';

-- ---------------------------------------------------------------------
-- Archives: rebuilt with the live tables' 0.2 columns (the tickets' players
-- are in tickets_archive.players, so ticket_players_archive goes).
-- ---------------------------------------------------------------------
ALTER TABLE mm.matches_archive RENAME TO matches_archive_01;
ALTER INDEX mm.matches_archive_queue_created RENAME TO matches_archive_01_queue_created;
CREATE TABLE mm.matches_archive (LIKE mm.matches);
ALTER TABLE mm.matches_archive ADD COLUMN archived_at timestamptz NOT NULL;
CREATE INDEX matches_archive_queue_created ON mm.matches_archive (queue, created_at);
INSERT INTO mm.matches_archive (id, queue, status, created_at, updated_at, region, quality, rule_steps,
								connection, properties, archived_at)
SELECT id, queue, status, created_at, updated_at, region, quality, rule_steps, connection, properties,
	   archived_at
  FROM mm.matches_archive_01;
COMMENT ON TABLE mm.matches_archive IS 'Finished matches moved out by mm.purge_finished(archive => true)';

ALTER TABLE mm.tickets_archive RENAME TO tickets_archive_01;
ALTER INDEX mm.tickets_archive_queue_created RENAME TO tickets_archive_01_queue_created;
CREATE TABLE mm.tickets_archive (LIKE mm.tickets);
ALTER TABLE mm.tickets_archive ADD COLUMN archived_at timestamptz NOT NULL;
CREATE INDEX tickets_archive_queue_created ON mm.tickets_archive (queue, created_at);
INSERT INTO mm.tickets_archive (id, queue, players, status, created_at, updated_at,
								matched_at, match_id, team, archived_at)
SELECT t.id, t.queue, t.players, t.status, t.created_at, t.updated_at, t.matched_at, t.match_id,
	   (SELECT mp.team FROM mm.match_players_archive mp
		 WHERE mp.ticket_id OPERATOR(pg_catalog.=) t.id AND mp.match_id OPERATOR(pg_catalog.=) t.match_id
		 LIMIT 1),
	   t.archived_at
  FROM mm.tickets_archive_01 t;
COMMENT ON TABLE mm.tickets_archive IS 'Finished tickets moved out by mm.purge_finished(archive => true)';

-- pg_dump keeps user data only for tables registered here (and sequences).
SELECT pg_catalog.pg_extension_config_dump('mm.queues', '');
SELECT pg_catalog.pg_extension_config_dump('mm.players', '');
SELECT pg_catalog.pg_extension_config_dump('mm.matches', '');
SELECT pg_catalog.pg_extension_config_dump('mm.matches_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_active', '');
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_ended', '');
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('mm.active_players', '');
SELECT pg_catalog.pg_extension_config_dump('mm.match_players', '');
SELECT pg_catalog.pg_extension_config_dump('mm.match_results', '');
SELECT pg_catalog.pg_extension_config_dump('mm.backfill_requests', '');
SELECT pg_catalog.pg_extension_config_dump('mm.backfill_requests_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('mm.ratings', '');
SELECT pg_catalog.pg_extension_config_dump('mm.rating_history', '');
SELECT pg_catalog.pg_extension_config_dump('mm.rating_history_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('mm.matches_archive', '');
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_archive', '');

-- ---------------------------------------------------------------------
-- Signed events.
-- ---------------------------------------------------------------------
-- The secret that signs every mm_events payload (src/event_signing.c): 32
-- random bytes made at install.  Readable by no role but the extension's
-- owner; the extension reads it internally to sign and to verify.  Not in
-- pg_dump's output: a restored database makes its own key.
CREATE TABLE mm.event_key (
	id integer PRIMARY KEY DEFAULT 1 CONSTRAINT event_key_single_row CHECK (id OPERATOR(pg_catalog.=) 1),
	key bytea NOT NULL
		CONSTRAINT event_key_length CHECK (pg_catalog.length(key) OPERATOR(pg_catalog.>=) 16
										   AND pg_catalog.length(key) OPERATOR(pg_catalog.<=) 256),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
INSERT INTO mm.event_key (key)
SELECT pg_catalog.decode(pg_catalog.replace(
		   CAST(pg_catalog.gen_random_uuid() AS text) OPERATOR(pg_catalog.||)
		   CAST(pg_catalog.gen_random_uuid() AS text), '-', ''), 'hex');
REVOKE ALL ON mm.event_key FROM PUBLIC;
COMMENT ON TABLE mm.event_key IS 'The HMAC-SHA256 key that signs every mm_events payload; secret';

CREATE FUNCTION mm.verify_event(payload text)
RETURNS boolean
LANGUAGE C STABLE STRICT
AS 'MODULE_PATHNAME', 'mm_verify_event';
COMMENT ON FUNCTION mm.verify_event(text) IS
'True when an mm_events payload carries this database''s signature ("sig"), so the extension sent it unchanged';

COMMENT ON FUNCTION mm.notify_ticket_event(text, text, bigint[]) IS
'Queues signed ticket_cancelled or ticket_timed_out events for tickets in that state, split under 8000 bytes; sent at commit';

-- ---------------------------------------------------------------------
-- 0.1's tables go, their privileges passed on.
-- ---------------------------------------------------------------------
-- Privileges granted on 0.1's tables carry over to the tables that replace
-- them (and inserting tickets needs the new id sequence).
DO $$
DECLARE
	g record;
	target text;
BEGIN
	FOR g IN
		SELECT c.relname::text AS old_name, a.grantee, a.privilege_type, a.is_grantable
		  FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
		 WHERE c.relnamespace OPERATOR(pg_catalog.=) CAST('mm' AS pg_catalog.regnamespace)
		   AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['tickets_01', 'ticket_players_01',
										'matches_archive_01', 'tickets_archive_01']::name[])
		   AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
	LOOP
		FOREACH target IN ARRAY CASE g.old_name
			WHEN 'tickets_01' THEN ARRAY['mm.tickets', 'mm.tickets_active', 'mm.tickets_ended']
			WHEN 'ticket_players_01' THEN ARRAY['mm.ticket_players', 'mm.active_players']
			WHEN 'matches_archive_01' THEN ARRAY['mm.matches_archive']
			ELSE ARRAY['mm.tickets_archive'] END
		LOOP
			EXECUTE pg_catalog.format('GRANT %s ON %s TO %s%s', g.privilege_type, target,
				CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END,
				CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		IF g.old_name OPERATOR(pg_catalog.=) 'tickets_01'
		   AND g.privilege_type OPERATOR(pg_catalog.=) 'INSERT' THEN
			EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE mm.tickets_id_seq TO %s',
				CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END);
		END IF;
	END LOOP;
END
$$;

DROP TABLE mm.ticket_players_01;
DROP TABLE mm.tickets_01;
-- leaving the extension first removes each from pg_dump's list of config tables
ALTER EXTENSION matchmaking DROP TABLE mm.matches_archive_01;
DROP TABLE mm.matches_archive_01;
ALTER EXTENSION matchmaking DROP TABLE mm.tickets_archive_01;
DROP TABLE mm.tickets_archive_01;
ALTER EXTENSION matchmaking DROP TABLE mm.ticket_players_archive;
DROP TABLE mm.ticket_players_archive;
