
-- ===================================================================
-- Section: ticket tokens, the secret that reads an assignment
-- (docs/lifecycle.md#assignment, docs/security.md)
-- ===================================================================
--
-- mm.get_assignment(ticket_id) returned the connection and properties (join
-- secrets) of any ticket id to any frontend, and ids are sequential.  Each
-- ticket now has a token, returned when it is created
-- (mm.create_ticket_with_token) and required by the frontend's form of
-- mm.get_assignment; the id-only form is left to mm_director (and mm_admin).
--
-- The token is derived, not stored (src/tickets.c): an HMAC of the ticket id
-- under the extension's secret key, mm.event_key.  A stored random token
-- would be a column to write on every INSERT and COPY, to carry each time
-- the tick or a requeue moves a ticket between partitions, and to hide from
-- the roles that read the tickets (mm_analyst); a derived one costs nothing
-- until it is asked for, follows the ticket's id through a requeue, exists
-- for the tickets created before the upgrade and by INSERT/COPY, and only a
-- role that can read the key (the owner) could compute one.  A new key
-- (docs/events.md) or a restore into a new database (pg_dump leaves the key
-- out) gives every ticket a new token.

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

REVOKE ALL ON FUNCTION mm.create_ticket_with_token(text, jsonb, timestamptz),
	mm.create_ticket_with_token(text[], jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_ticket_with_token(text, jsonb, timestamptz),
	mm.create_ticket_with_token(text[], jsonb, timestamptz) TO mm_frontend;

-- Refuses a token that is not the ticket's: 42501, whether or not the
-- ticket exists (the answer does not tell which ids exist).
CREATE FUNCTION mm.check_ticket_token(ticket_id bigint, token text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF check_ticket_token.ticket_id IS NULL THEN
		RAISE EXCEPTION 'ticket_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF check_ticket_token.token IS NULL THEN
		RAISE EXCEPTION 'token must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT mm.ticket_token_matches(check_ticket_token.ticket_id, check_ticket_token.token) THEN
		RAISE EXCEPTION 'token is not the token of ticket %', check_ticket_token.ticket_id
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Pass the token that mm.create_ticket_with_token returned with the ticket.';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.check_ticket_token(bigint, text) IS
'Internal: refuses (42501) a token that is not the ticket''s, and a NULL id or token (22004)';
REVOKE ALL ON FUNCTION mm.check_ticket_token(bigint, text) FROM PUBLIC;

-- The frontend's form: the token first, then the same row as the id-only
-- form (no row for a ticket that does not exist, or no longer does).
CREATE FUNCTION mm.get_assignment(ticket_id bigint, token text)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.check_ticket_token(get_assignment.ticket_id, get_assignment.token);
	SELECT a.ticket_id, a.ticket_status, a.match_id, a.match_status, a.team, a.connection, a.properties
	  FROM mm.get_assignment(get_assignment.ticket_id) a
$$;
COMMENT ON FUNCTION mm.get_assignment(bigint, text) IS
'For a polling client holding its ticket''s token: the ticket''s status, its match and the match''s status, team, connection and properties; 42501 for a wrong token';
REVOKE ALL ON FUNCTION mm.get_assignment(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.get_assignment(bigint, text) TO mm_frontend, mm_director;

-- The id-only form reads any ticket: the director's (and the admin's).
REVOKE EXECUTE ON FUNCTION mm.get_assignment(bigint) FROM mm_frontend;
COMMENT ON FUNCTION mm.get_assignment(bigint) IS
'For the director: any ticket''s status, its match and the match''s status, team, connection and properties (a frontend passes the ticket''s token)';
