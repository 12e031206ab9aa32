
-- ===================================================================
-- Section: tickets on Citus (docs/scale-out.md)
-- ===================================================================
--
-- mm.create_ticket writes through mm.create_ticket_on_shards once
-- mm.distribute sharded the tables (95_scale_out.sql of the source tree,
-- which this upgrade includes as it is); the ticket triggers refuse plain
-- writes on a shard, where they could not claim the players (the update
-- trigger is in 80_lifecycle_by_queue.sql, which changes it again).

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
	-- on Citus this fires on a shard (<table>_<shard id>), which cannot reach
	-- the players' claims: tickets go through mm.create_ticket there
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


CREATE OR REPLACE FUNCTION mm.tickets_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
BEGIN
	-- on Citus this fires on a shard (<table>_<shard id>), which cannot reach
	-- the players' claims: tickets go through mm.create_ticket there
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

CREATE OR REPLACE FUNCTION mm.tickets_after_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- on Citus this fires on a shard (<table>_<shard id>), which cannot reach
	-- the players' claims: tickets go through mm.create_ticket there
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		PERFORM mm.refuse_ticket_write_on_shard(TG_OP);
	END IF;
	DELETE FROM mm.active_players;
	DELETE FROM mm.ticket_queues;
	RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION mm.create_ticket(queue text, players jsonb,
								 now timestamptz DEFAULT pg_catalog.now()) RETURNS bigint
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_id bigint;
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
	IF mm.tables_are_distributed() THEN
		RETURN mm.create_ticket_on_shards(create_ticket.queue, NULL, create_ticket.players,
										  create_ticket.now);
	END IF;
	-- the trigger validates and claims the players, as for a plain INSERT
	INSERT INTO mm.tickets (queue, players, created_at)
	VALUES (create_ticket.queue, create_ticket.players, create_ticket.now)
	RETURNING id INTO ticket_id;
	RETURN ticket_id;
END
$$;

CREATE OR REPLACE FUNCTION mm.create_ticket(queues text[], players jsonb,
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
