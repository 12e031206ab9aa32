-- Many tickets in one call (docs/queues-and-tickets.md): a backend's bulk
-- load, a lobby's parties.  One statement writes them all, so the ticket
-- triggers validate and claim them in one go on one node (on Citus:
-- mm.create_tickets_on_queue_node, written on the queue's node).

-- Validates a batch of tickets for a queue, in order.  An invalid ticket is
-- reported at its path in the batch: players[3][0].attributes.skill is the
-- skill of the first player of the batch's third ticket.  One
-- subtransaction for the batch; only a failure looks at each ticket.
CREATE FUNCTION mm.validate_tickets(queue text, players jsonb[], now timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	i integer;
	message text;
	detail text;
	hint text;
	code text;
BEGIN
	BEGIN
		PERFORM mm.validate_ticket(validate_tickets.queue, u.p, validate_tickets.now)
		   FROM unnest(validate_tickets.players) WITH ORDINALITY u(p, ord) ORDER BY u.ord;
		RETURN;
	EXCEPTION WHEN invalid_parameter_value OR program_limit_exceeded OR null_value_not_allowed THEN
		NULL;
	END;
	FOR i IN array_lower(validate_tickets.players, 1) .. array_upper(validate_tickets.players, 1) LOOP
		BEGIN
			PERFORM mm.validate_ticket(validate_tickets.queue, validate_tickets.players[i], validate_tickets.now);
		EXCEPTION WHEN invalid_parameter_value OR program_limit_exceeded OR null_value_not_allowed THEN
			GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
									hint = PG_EXCEPTION_HINT, code = RETURNED_SQLSTATE;
			message := CASE WHEN message LIKE 'invalid ticket at players%'
							THEN 'invalid ticket at players[' || i || ']' || substr(message, 26)
							ELSE format('players[%s]: %s', i, message) END;
			-- (an empty DETAIL or HINT would still be printed)
			IF detail <> '' AND hint <> '' THEN
				RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message, DETAIL = detail, HINT = hint;
			ELSIF detail <> '' THEN
				RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message, DETAIL = detail;
			ELSIF hint <> '' THEN
				RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message, HINT = hint;
			END IF;
			RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
		END;
	END LOOP;
END
$$;
COMMENT ON FUNCTION mm.validate_tickets(text, jsonb[], timestamptz) IS
'Internal: validates a batch of tickets for a queue, naming an invalid one by its path in the batch';
REVOKE ALL ON FUNCTION mm.validate_tickets(text, jsonb[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.validate_tickets(text, jsonb[], timestamptz) TO mm_admin;

CREATE FUNCTION mm.create_tickets(queue text, players jsonb[],
								  now timestamptz DEFAULT pg_catalog.now())
RETURNS bigint[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ids bigint[];
	null_at integer;
	repeated_player text;
	repeated_at text;
	first_at text;
BEGIN
	IF create_tickets.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF create_tickets.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF create_tickets.players IS NULL THEN
		RAISE EXCEPTION 'players must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF cardinality(create_tickets.players) = 0 THEN
		RAISE EXCEPTION 'players must hold at least one ticket''s players' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF array_ndims(create_tickets.players) > 1 THEN
		RAISE EXCEPTION 'players must be a one-dimensional array' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF cardinality(create_tickets.players) > 100000 THEN
		RAISE EXCEPTION 'players holds % tickets; at most 100000 in one call', cardinality(create_tickets.players)
			USING ERRCODE = 'program_limit_exceeded',
				  HINT = 'Split the load into several calls (or COPY into mm.tickets on one node).';
	END IF;
	-- the subscript in the argument, whatever its lower bound
	SELECT min(u.ord) + array_lower(create_tickets.players, 1) - 1 INTO null_at
	  FROM unnest(create_tickets.players) WITH ORDINALITY u(players, ord)
	 WHERE u.players IS NULL;
	IF null_at IS NOT NULL THEN
		RAISE EXCEPTION 'players[%] must not be null', null_at USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- A player in two tickets of the batch is named by both places, before
	-- any write (the claims would name tickets that are never written),
	-- once the batch is otherwise valid: an invalid ticket (a player twice
	-- in one ticket, an unknown queue) is reported first.
	WITH batch AS (
		SELECT u.ord + array_lower(create_tickets.players, 1) - 1 AS at, p.ord - 1 AS player_at,
			   p.value ->> 'id' AS player_id
		  FROM unnest(create_tickets.players) WITH ORDINALITY u(players, ord)
		 CROSS JOIN LATERAL jsonb_array_elements(CASE jsonb_typeof(u.players) WHEN 'array' THEN u.players
																			  ELSE '[]' END)
			   WITH ORDINALITY p(value, ord)
		 WHERE jsonb_typeof(p.value) = 'object' AND jsonb_typeof(p.value -> 'id') = 'string'
	)
	SELECT r.player_id, format('players[%s][%s]', r.at, r.player_at),
		   format('players[%s][%s]', r.first_at, r.first_player_at)
	  INTO repeated_player, repeated_at, first_at
	  FROM (SELECT b.*, first_value(b.at) OVER w AS first_at, first_value(b.player_at) OVER w AS first_player_at
			  FROM batch b
			WINDOW w AS (PARTITION BY b.player_id ORDER BY b.at, b.player_at)) r
	 WHERE r.at > r.first_at
	 ORDER BY r.at, r.player_at
	 LIMIT 1;
	IF repeated_player IS NOT NULL THEN
		PERFORM mm.validate_tickets(create_tickets.queue, create_tickets.players, create_tickets.now);
		RAISE EXCEPTION 'player "%" at % is also at %', repeated_player, repeated_at, first_at
			USING ERRCODE = 'unique_violation',
				  HINT = 'A player can be in one searching or proposed ticket at a time.';
	END IF;
	IF mm.tables_are_distributed() THEN
		RETURN mm.create_tickets_on_queue_node(create_tickets.queue, create_tickets.players, create_tickets.now);
	END IF;
	-- one INSERT: the triggers validate every ticket and claim every
	-- player; ids follow the order of players.  An invalid ticket is named
	-- by its place in the batch (validated again, on that path only).
	BEGIN
		WITH inserted AS (
			INSERT INTO mm.tickets (queue, players, created_at)
			SELECT create_tickets.queue, u.players, create_tickets.now
			  FROM unnest(create_tickets.players) WITH ORDINALITY u(players, ord)
			 ORDER BY u.ord
			RETURNING id
		)
		SELECT array_agg(i.id ORDER BY i.id) INTO ids FROM inserted i;
	EXCEPTION WHEN invalid_parameter_value OR program_limit_exceeded THEN
		PERFORM mm.validate_tickets(create_tickets.queue, create_tickets.players, create_tickets.now);
		RAISE;
	END;
	RETURN ids;
END
$$;
COMMENT ON FUNCTION mm.create_tickets(text, jsonb[], timestamptz) IS
'Puts many tickets into one queue in one statement (a bulk load); returns their ids in the order given';
REVOKE ALL ON FUNCTION mm.create_tickets(text, jsonb[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_tickets(text, jsonb[], timestamptz) TO mm_director, mm_admin;
