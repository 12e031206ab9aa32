
-- ===================================================================
-- Section: one ticket in several queues (docs/queues-and-tickets.md)
-- ===================================================================
--
-- A ticket searches in its queue and in the other queues of its `queues`
-- array, each with that queue's config.  It keeps one row in
-- mm.tickets_active, which the tick of whichever queue takes it first locks
-- (FOR UPDATE SKIP LOCKED) and moves, so two queues never both match it.
-- mm.ticket_queues lists the tickets each other queue's tick also reads.

ALTER TABLE mm.tickets ADD COLUMN queues text[];
COMMENT ON COLUMN mm.tickets.queues IS
	'The other queues the ticket also searches in (NULL: only its queue); once matched, its queue is the one that matched it';

CREATE TABLE mm.ticket_queues (
	queue text NOT NULL,
	ticket_id bigint NOT NULL,
	-- the ticket's creation time: a queue's tick reads its extra tickets
	-- oldest first, like its own
	created_at timestamptz NOT NULL,
	PRIMARY KEY (queue, created_at, ticket_id)
);
CREATE INDEX ticket_queues_ticket ON mm.ticket_queues (ticket_id);
COMMENT ON TABLE mm.ticket_queues IS
	'The active tickets that also search in a queue other than their own, one row per (queue, ticket)';
SELECT pg_catalog.pg_extension_config_dump('mm.ticket_queues', '');

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

CREATE TRIGGER tickets_after_insert_queues AFTER INSERT ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_insert_queues();

-- 0.3: an ended ticket leaves the other queues too.
CREATE OR REPLACE FUNCTION mm.end_tickets(ticket_ids bigint[], new_status text, ended_at timestamptz)
	RETURNS SETOF bigint
	LANGUAGE sql
	SET search_path = pg_catalog, pg_temp
	AS $$
	WITH moved AS (
		DELETE FROM mm.tickets_active t WHERE t.id = ANY (end_tickets.ticket_ids)
		RETURNING t.id, t.queue, t.players, t.created_at, t.queues
	), released AS (
		DELETE FROM mm.active_players a
		 USING moved m, jsonb_array_elements(m.players) p
		 WHERE a.player_id = p.value ->> 'id' AND a.ticket_id = m.id
	), unlisted AS (
		DELETE FROM mm.ticket_queues q USING moved m
		 WHERE q.ticket_id = m.id AND m.queues IS NOT NULL
	)
	INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, queues)
	SELECT m.id, m.queue, m.players, end_tickets.new_status, m.created_at, end_tickets.ended_at, m.queues
	  FROM moved m
	RETURNING id
$$;

-- The archive keeps a ticket's other queues too: the column comes after
-- archived_at, so the archiving insert names its columns.
ALTER TABLE mm.tickets_archive ADD COLUMN queues text[];
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
		INSERT INTO mm.tickets_archive (id, queue, players, status, created_at, updated_at, matched_at,
										match_id, team, archived_at, queues)
		SELECT t.id, t.queue, t.players, t.status, t.created_at, t.updated_at, t.matched_at,
			   t.match_id, t.team, now, t.queues
		  FROM mm.tickets_ended t WHERE t.id = ANY (ticket_ids);
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

-- A deleted queue leaves the tickets that also searched in it.
CREATE FUNCTION mm.queues_after_delete_unlist() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
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
CREATE TRIGGER queues_after_delete_unlist AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_unlist();

-- 0.3: deleting or truncating tickets unlists them from the other queues.
CREATE OR REPLACE FUNCTION mm.tickets_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
BEGIN
	DELETE FROM mm.active_players ap USING old_tickets o, jsonb_array_elements(o.players) p
	 WHERE ap.player_id = p.value ->> 'id' AND ap.ticket_id = o.id;
	DELETE FROM mm.ticket_queues q USING old_tickets o
	 WHERE q.ticket_id = o.id AND o.queues IS NOT NULL;
	RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION mm.tickets_after_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.active_players;
	DELETE FROM mm.ticket_queues;
	RETURN NULL;
END
$$;

CREATE FUNCTION mm.create_ticket(queues text[], players jsonb,
								 now timestamptz DEFAULT pg_catalog.now()) RETURNS bigint
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_id bigint;
BEGIN
	IF create_ticket.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF create_ticket.queues IS NULL OR cardinality(create_ticket.queues) = 0 THEN
		RAISE EXCEPTION 'queues must name at least one queue' USING ERRCODE = 'invalid_parameter_value';
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
GRANT EXECUTE ON FUNCTION mm.create_ticket(text[], jsonb, timestamptz) TO mm_frontend;
