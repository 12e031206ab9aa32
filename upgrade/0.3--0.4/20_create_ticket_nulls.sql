
-- ===================================================================
-- Section: create_ticket refuses NULL arguments itself
-- ===================================================================
--
-- A NULL queue or players reached the table's NOT NULL constraints (23502,
-- naming the partition's column); a NULL among the queues of the
-- several-queues form depended on its position: the first became the
-- ticket's queue (23502), a later one was reported by the trigger at its
-- position in the ticket's `queues` column, one less than in the argument.
-- Both forms now check their arguments first: 22004 naming the argument (and
-- its subscript), as they already did for `now`.  INSERT and COPY keep the
-- table's constraints.  Same signatures, SECURITY DEFINER and grants as 0.3.

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
	-- the first queue is the ticket's own; the triggers check the others
	INSERT INTO mm.tickets (queue, queues, players, created_at)
	VALUES (create_ticket.queues[array_lower(create_ticket.queues, 1)],
			nullif(create_ticket.queues[array_lower(create_ticket.queues, 1) + 1:], '{}'),
			create_ticket.players, create_ticket.now)
	RETURNING id INTO ticket_id;
	RETURN ticket_id;
END
$$;
