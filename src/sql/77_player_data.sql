-- A player's data on request (docs/players-data.md): mm.export_player, every
-- row of every table about one player as one JSON document, and
-- mm.forget_player, which deletes the player's current state (trusted
-- attributes, ratings, penalties, autofill protection) and anonymises the
-- history (tickets, match players, results, rating and penalty history,
-- season archives) under one random pseudonym per call, so that other
-- players' matches keep their sizes and every count stays the same.  Both
-- work on one node and on Citus (Citus rule 11).

-- A ticket's player anonymised: the pseudonym as id, the role preferences
-- kept (role queue figures count them), attributes, latencies and any other
-- key dropped.
CREATE FUNCTION mm.anonymised_ticket_player(player jsonb, pseudonym text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT jsonb_build_object('id', pseudonym)
		   || CASE WHEN player ? 'roles' THEN jsonb_build_object('roles', player -> 'roles') ELSE '{}' END
$$;
COMMENT ON FUNCTION mm.anonymised_ticket_player(jsonb, text) IS
'Internal: a ticket''s player anonymised by mm.forget_player (the pseudonym as id, the roles kept)';
REVOKE ALL ON FUNCTION mm.anonymised_ticket_player(jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.anonymised_ticket_player(jsonb, text) TO mm_admin;

-- A ticket's players with one player anonymised (the others as they are).
CREATE FUNCTION mm.forget_in_ticket_players(players jsonb, player_id text, pseudonym text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(jsonb_agg(CASE WHEN p.value ->> 'id' = player_id
								   THEN mm.anonymised_ticket_player(p.value, pseudonym) ELSE p.value END
							  ORDER BY p.n), '[]')
	  FROM jsonb_array_elements(players) WITH ORDINALITY p(value, n)
$$;
COMMENT ON FUNCTION mm.forget_in_ticket_players(jsonb, text, text) IS
'Internal: a ticket''s players with one player anonymised under a pseudonym';
REVOKE ALL ON FUNCTION mm.forget_in_ticket_players(jsonb, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.forget_in_ticket_players(jsonb, text, text) TO mm_admin;

-- Whether new_players is old_players with players anonymised and nothing
-- else changed: the one change of a ticket's players mm.tickets_refuse_change
-- lets through.
CREATE FUNCTION mm.ticket_players_anonymised(old_players jsonb, new_players jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT jsonb_typeof(old_players) = 'array' AND jsonb_typeof(new_players) = 'array'
	   AND jsonb_array_length(old_players) = jsonb_array_length(new_players)
	   AND NOT EXISTS (
			SELECT FROM jsonb_array_elements(old_players) WITH ORDINALITY o(value, n)
			  JOIN jsonb_array_elements(new_players) WITH ORDINALITY x(value, n) ON x.n = o.n
			 WHERE x.value <> o.value
			   AND NOT (x.value ->> 'id' ~ '^forgotten-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
						AND x.value = mm.anonymised_ticket_player(o.value, x.value ->> 'id')))
$$;
COMMENT ON FUNCTION mm.ticket_players_anonymised(jsonb, jsonb) IS
'Internal: whether a ticket''s new players are its old ones with players anonymised by mm.forget_player, nothing else changed';
REVOKE ALL ON FUNCTION mm.ticket_players_anonymised(jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.ticket_players_anonymised(jsonb, jsonb) TO mm_admin;

-- Refuses a NULL or empty player id.
CREATE FUNCTION mm.check_player_id(player_id text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF check_player_id.player_id IS NULL THEN
		RAISE EXCEPTION 'player_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF check_player_id.player_id = '' THEN
		RAISE EXCEPTION 'player_id must not be empty' USING ERRCODE = 'invalid_parameter_value';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.check_player_id(text) IS
'Internal: refuses a NULL (22004) or empty (22023) player id';
REVOKE ALL ON FUNCTION mm.check_player_id(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.check_player_id(text) TO mm_admin;

-- The rows of a table whose column equals a value, each as JSON, in the
-- order of order_by (columns of the table, comma-separated), as an array.
-- The table and columns come from the callers' fixed lists, quoted; the
-- value is a parameter.
CREATE FUNCTION mm.player_rows(tbl regclass, col text, value text, order_by text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rows jsonb;
BEGIN
	EXECUTE format('SELECT to_jsonb(ARRAY(SELECT to_jsonb(x) FROM %s x WHERE x.%I = $1 ORDER BY %s))',
				   tbl, col, (SELECT string_agg(format('x.%I', c), ', ')
								FROM unnest(string_to_array(order_by, ',')) c))
		INTO rows USING value;
	RETURN rows;
END
$$;
COMMENT ON FUNCTION mm.player_rows(regclass, text, text, text) IS
'Internal: the rows of a table where a column equals a value, as a JSON array in order';
REVOKE ALL ON FUNCTION mm.player_rows(regclass, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.player_rows(regclass, text, text, text) TO mm_admin;

-- A ticket row (as JSON) as exported for one player: the player's own
-- entry of its players (a party's other members are not the player's
-- data) and the party's size.
CREATE FUNCTION mm.exported_ticket(ticket jsonb, player_id text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT (ticket - 'players')
		   || jsonb_build_object('players', coalesce((SELECT jsonb_agg(p.value ORDER BY p.n)
														FROM jsonb_array_elements(ticket -> 'players') WITH ORDINALITY p(value, n)
													   WHERE p.value ->> 'id' = player_id), '[]'),
								 'party_size', jsonb_array_length(ticket -> 'players'))
$$;
COMMENT ON FUNCTION mm.exported_ticket(jsonb, text) IS
'Internal: a ticket as mm.export_player shows it to one player (that player''s entry only, and the party size)';
REVOKE ALL ON FUNCTION mm.exported_ticket(jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.exported_ticket(jsonb, text) TO mm_admin;

-- Everything the extension holds about one player, as one JSON object: a
-- key per table with the player's rows (a ticket with the player's own
-- entry of its players only), and the matches the player played in
-- (mm.matches, mm.match_results and their archives).
CREATE FUNCTION mm.export_player(player_id text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	result jsonb;
	match_ids bigint[];
	match_queues text[];
	player_filter jsonb;
BEGIN
	PERFORM mm.check_player_id(export_player.player_id);
	player_filter := jsonb_build_array(jsonb_build_object('id', export_player.player_id));
	SELECT coalesce(array_agg(m.match_id), '{}'), coalesce(array_agg(m.queue), '{}') INTO match_ids, match_queues
	  FROM (SELECT mp.match_id, mp.queue FROM mm.match_players mp WHERE mp.player_id = export_player.player_id
			UNION
			SELECT mp.match_id, mp.queue FROM mm.match_players_archive mp
			 WHERE mp.player_id = export_player.player_id) m;
	result := jsonb_build_object(
		'player_id', export_player.player_id,
		'players', mm.player_rows('mm.players', 'id', export_player.player_id, 'id'),
		'active_players', mm.player_rows('mm.active_players', 'player_id', export_player.player_id, 'player_id'),
		'tickets', to_jsonb(ARRAY(
			SELECT mm.exported_ticket(to_jsonb(t), export_player.player_id) FROM mm.tickets t
			 WHERE t.players @> player_filter ORDER BY t.id)),
		'tickets_archive', to_jsonb(ARRAY(
			SELECT mm.exported_ticket(to_jsonb(t), export_player.player_id) FROM mm.tickets_archive t
			 WHERE t.players @> player_filter ORDER BY t.id)),
		'match_players', mm.player_rows('mm.match_players', 'player_id', export_player.player_id, 'match_id,queue'),
		'match_players_archive', mm.player_rows('mm.match_players_archive', 'player_id', export_player.player_id,
												 'match_id,queue'),
		'matches', to_jsonb(ARRAY(
			SELECT to_jsonb(m) FROM mm.matches m
			 WHERE m.queue = ANY (match_queues) AND m.id = ANY (match_ids) ORDER BY m.id)),
		'matches_archive', to_jsonb(ARRAY(
			SELECT to_jsonb(m) FROM mm.matches_archive m
			 WHERE m.queue = ANY (match_queues) AND m.id = ANY (match_ids) ORDER BY m.id)),
		'match_results', to_jsonb(ARRAY(
			SELECT to_jsonb(r) FROM mm.match_results r
			 WHERE r.queue = ANY (match_queues) AND r.match_id = ANY (match_ids) ORDER BY r.match_id)),
		'match_results_archive', to_jsonb(ARRAY(
			SELECT to_jsonb(r) FROM mm.match_results_archive r
			 WHERE r.queue = ANY (match_queues) AND r.match_id = ANY (match_ids) ORDER BY r.match_id)),
		'autofill_protection', mm.player_rows('mm.autofill_protection', 'player_id', export_player.player_id, 'queue'),
		'ratings', mm.player_rows('mm.ratings', 'player_id', export_player.player_id, 'pool'),
		'rating_history', mm.player_rows('mm.rating_history', 'player_id', export_player.player_id, 'id'),
		'season_ratings', mm.player_rows('mm.season_ratings', 'player_id', export_player.player_id, 'pool,season'),
		'player_penalties', mm.player_rows('mm.player_penalties', 'player_id', export_player.player_id, 'queue'),
		'penalty_history', mm.player_rows('mm.penalty_history', 'player_id', export_player.player_id, 'id'));
	RETURN result;
END
$$;
COMMENT ON FUNCTION mm.export_player(text) IS
'Everything the extension holds about one player (a data subject''s access request): a key per table with the player''s rows, and the player''s matches';
REVOKE ALL ON FUNCTION mm.export_player(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.export_player(text) TO mm_admin;

-- Moves a player's rows of a table sharded by player to another player id:
-- a copy under the new id, then the old rows deleted (Citus rule 11).
-- Returns how many rows moved.
CREATE FUNCTION mm.move_player_rows(tbl regclass, col text, old_id text, new_id text)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cols text;
	vals text;
	moved integer;
BEGIN
	SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum),
		   string_agg(CASE WHEN a.attname = move_player_rows.col THEN '$2' ELSE 'x.' || quote_ident(a.attname) END,
					  ', ' ORDER BY a.attnum)
	  INTO cols, vals
	  FROM pg_attribute a
	 WHERE a.attrelid = move_player_rows.tbl AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
	EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM %s x WHERE x.%I = $1', tbl, cols, vals, tbl, col)
		USING old_id, new_id;
	GET DIAGNOSTICS moved = ROW_COUNT;
	EXECUTE format('DELETE FROM %s x WHERE x.%I = $1', tbl, col) USING old_id;
	RETURN moved;
END
$$;
COMMENT ON FUNCTION mm.move_player_rows(regclass, text, text, text) IS
'Internal: moves a player''s rows of a table to another player id (a copy, then a delete: works on a Citus distribution column)';
REVOKE ALL ON FUNCTION mm.move_player_rows(regclass, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.move_player_rows(regclass, text, text, text) TO mm_admin;

-- A JSON document with every string equal to old_value, and every object
-- key, replaced by new_value, the rest as it was: the player's id in a
-- match's properties or a free-for-all's ranks, compared whole (a text
-- replace would also rename another id that merely contains it).
CREATE FUNCTION mm.replace_json_string(document jsonb, old_value text, new_value text)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN CASE jsonb_typeof(document)
		WHEN 'string' THEN CASE WHEN document #>> '{}' = old_value THEN to_jsonb(new_value) ELSE document END
		WHEN 'object' THEN (SELECT coalesce(jsonb_object_agg(CASE WHEN e.key = old_value THEN new_value ELSE e.key END,
															  mm.replace_json_string(e.value, old_value, new_value)),
											 '{}')
							  FROM jsonb_each(document) e)
		WHEN 'array' THEN (SELECT coalesce(jsonb_agg(mm.replace_json_string(e.value, old_value, new_value)
													 ORDER BY e.n), '[]')
							 FROM jsonb_array_elements(document) WITH ORDINALITY e(value, n))
		ELSE document END;
END
$$;
COMMENT ON FUNCTION mm.replace_json_string(jsonb, text, text) IS
'Internal (mm.forget_player): a JSON document with every string and key equal to old_value replaced by new_value';
REVOKE ALL ON FUNCTION mm.replace_json_string(jsonb, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replace_json_string(jsonb, text, text) TO mm_admin;

-- Forgets a player (a data subject's erasure request).  Refused while the
-- player searches or plays (held in mm.active_players, or in a live match
-- even after leaving it).  The player is held for the call (a claim in
-- mm.active_players, so no ticket for the player can be created meanwhile).
-- Deleted: the current state (mm.players, mm.ratings,
-- mm.player_penalties, mm.autofill_protection).  Anonymised under
-- 'forgotten-' and a random uuid, one per call and kept nowhere: the
-- player's entry of every ticket (id only, roles kept; attributes and
-- latencies gone), match players, a free-for-all's ranks, winner and
-- favourite, the matches' properties (as a JSON string), rating history,
-- season archives and penalty history; the archives too.  Returns the rows
-- deleted and anonymised per table.
CREATE FUNCTION mm.forget_player(player_id text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	pseudonym text;
	claim record;
	live record;
	id_json text;
	player_filter jsonb;
	match_ids bigint[];
	match_queues text[];
	n integer;
	deleted jsonb := '{}';
	anonymised jsonb := '{}';
BEGIN
	PERFORM mm.check_player_id(forget_player.player_id);
	-- hold the player: a ticket created meanwhile waits for this claim
	INSERT INTO mm.active_players AS ap (player_id, ticket_id, queue)
	VALUES (forget_player.player_id, 0, '')
	ON CONFLICT ON CONSTRAINT active_players_pkey DO NOTHING;
	-- (on Citus, a claim whose release is left to its queue's tick is taken)
	IF NOT FOUND AND NOT mm.take_over_stale_claim(forget_player.player_id, 0, '') THEN
		SELECT ap.ticket_id, ap.queue INTO claim FROM mm.active_players ap
		 WHERE ap.player_id = forget_player.player_id;
		RAISE EXCEPTION 'player "%" is searching or in a live match', forget_player.player_id
			USING ERRCODE = 'object_in_use',
				  DETAIL = format('Ticket %s in queue "%s" holds the player.', claim.ticket_id, claim.queue),
				  HINT = 'Cancel the ticket (mm.cancel_ticket), or wait until the match ends, then forget the player.';
	END IF;
	-- on Citus, a ticket whose tick has not claimed the player yet (none on
	-- one node; a read of every queue's shard, docs/scale-out.md)
	SELECT c.ticket_id, c.queue INTO claim FROM mm.pending_claims c
	 WHERE c.player_id = forget_player.player_id ORDER BY c.ticket_id LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'player "%" is searching or in a live match', forget_player.player_id
			USING ERRCODE = 'object_in_use',
				  DETAIL = format('Ticket %s in queue "%s" holds the player.', claim.ticket_id, claim.queue),
				  HINT = 'Cancel the ticket (mm.cancel_ticket), or wait until the match ends, then forget the player.';
	END IF;
	SELECT mp.match_id, mp.queue, m.status INTO live
	  FROM mm.match_players mp JOIN mm.matches m ON m.queue = mp.queue AND m.id = mp.match_id
	 WHERE mp.player_id = forget_player.player_id AND m.status IN ('proposed', 'ready', 'assigned')
	 ORDER BY mp.match_id LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'player "%" is in a live match', forget_player.player_id
			USING ERRCODE = 'object_in_use',
				  DETAIL = format('Match %s of queue "%s" is %s.', live.match_id, live.queue, live.status),
				  HINT = 'Forget the player once the match is completed or cancelled (and its result reported).';
	END IF;

	pseudonym := 'forgotten-' || gen_random_uuid();
	id_json := to_jsonb(forget_player.player_id)::text;
	player_filter := jsonb_build_array(jsonb_build_object('id', forget_player.player_id));
	SELECT coalesce(array_agg(m.match_id), '{}'), coalesce(array_agg(m.queue), '{}') INTO match_ids, match_queues
	  FROM (SELECT mp.match_id, mp.queue FROM mm.match_players mp WHERE mp.player_id = forget_player.player_id
			UNION
			SELECT mp.match_id, mp.queue FROM mm.match_players_archive mp
			 WHERE mp.player_id = forget_player.player_id) m;

	-- the current state: deleted
	DELETE FROM mm.players p WHERE p.id = forget_player.player_id;
	GET DIAGNOSTICS n = ROW_COUNT;
	deleted := deleted || jsonb_build_object('players', n);
	DELETE FROM mm.ratings r WHERE r.player_id = forget_player.player_id;
	GET DIAGNOSTICS n = ROW_COUNT;
	deleted := deleted || jsonb_build_object('ratings', n);
	DELETE FROM mm.player_penalties p WHERE p.player_id = forget_player.player_id;
	GET DIAGNOSTICS n = ROW_COUNT;
	deleted := deleted || jsonb_build_object('player_penalties', n);
	DELETE FROM mm.autofill_protection a WHERE a.player_id = forget_player.player_id;
	GET DIAGNOSTICS n = ROW_COUNT;
	deleted := deleted || jsonb_build_object('autofill_protection', n);

	-- the history: anonymised.  Tickets on their partitions (the parent's
	-- statement triggers are for live tickets; mm.tickets_refuse_change lets
	-- this one change of the players through)
	UPDATE mm.tickets_ended t
	   SET players = mm.forget_in_ticket_players(t.players, forget_player.player_id, pseudonym)
	 WHERE t.players @> player_filter;
	GET DIAGNOSTICS n = ROW_COUNT;
	anonymised := anonymised || jsonb_build_object('tickets', n);
	UPDATE mm.tickets_archive t
	   SET players = mm.forget_in_ticket_players(t.players, forget_player.player_id, pseudonym)
	 WHERE t.players @> player_filter;
	GET DIAGNOSTICS n = ROW_COUNT;
	anonymised := anonymised || jsonb_build_object('tickets_archive', n);
	UPDATE mm.match_players mp SET player_id = pseudonym WHERE mp.player_id = forget_player.player_id;
	GET DIAGNOSTICS n = ROW_COUNT;
	anonymised := anonymised || jsonb_build_object('match_players', n);
	UPDATE mm.match_players_archive mp SET player_id = pseudonym WHERE mp.player_id = forget_player.player_id;
	GET DIAGNOSTICS n = ROW_COUNT;
	anonymised := anonymised || jsonb_build_object('match_players_archive', n);
	-- a free-for-all's results name players: ranks' keys, the winner, the
	-- favourite; a match's properties may carry the id as a JSON string
	UPDATE mm.match_results r
	   SET ranks = mm.replace_json_string(r.ranks, forget_player.player_id, pseudonym),
		   winner_team = CASE WHEN r.winner_team = forget_player.player_id THEN pseudonym ELSE r.winner_team END,
		   predicted_favourite = CASE WHEN r.predicted_favourite = forget_player.player_id THEN pseudonym
									  ELSE r.predicted_favourite END
	 WHERE r.queue = ANY (match_queues) AND r.match_id = ANY (match_ids)
	   AND (r.ranks ? forget_player.player_id OR r.winner_team = forget_player.player_id
			OR r.predicted_favourite = forget_player.player_id);
	GET DIAGNOSTICS n = ROW_COUNT;
	anonymised := anonymised || jsonb_build_object('match_results', n);
	UPDATE mm.match_results_archive r
	   SET ranks = mm.replace_json_string(r.ranks, forget_player.player_id, pseudonym),
		   winner_team = CASE WHEN r.winner_team = forget_player.player_id THEN pseudonym ELSE r.winner_team END,
		   predicted_favourite = CASE WHEN r.predicted_favourite = forget_player.player_id THEN pseudonym
									  ELSE r.predicted_favourite END
	 WHERE r.queue = ANY (match_queues) AND r.match_id = ANY (match_ids)
	   AND (r.ranks ? forget_player.player_id OR r.winner_team = forget_player.player_id
			OR r.predicted_favourite = forget_player.player_id);
	GET DIAGNOSTICS n = ROW_COUNT;
	anonymised := anonymised || jsonb_build_object('match_results_archive', n);
	UPDATE mm.matches m SET properties = mm.replace_json_string(m.properties, forget_player.player_id, pseudonym)
	 WHERE m.queue = ANY (match_queues) AND m.id = ANY (match_ids)
	   AND strpos(m.properties::text, id_json) > 0
	   AND m.properties IS DISTINCT FROM mm.replace_json_string(m.properties, forget_player.player_id, pseudonym);
	GET DIAGNOSTICS n = ROW_COUNT;
	anonymised := anonymised || jsonb_build_object('matches', n);
	UPDATE mm.matches_archive m SET properties = mm.replace_json_string(m.properties, forget_player.player_id, pseudonym)
	 WHERE m.queue = ANY (match_queues) AND m.id = ANY (match_ids)
	   AND strpos(m.properties::text, id_json) > 0
	   AND m.properties IS DISTINCT FROM mm.replace_json_string(m.properties, forget_player.player_id, pseudonym);
	GET DIAGNOSTICS n = ROW_COUNT;
	anonymised := anonymised || jsonb_build_object('matches_archive', n);
	-- the tables sharded by player: moved to the pseudonym
	anonymised := anonymised
		|| jsonb_build_object('rating_history',
							  mm.move_player_rows('mm.rating_history', 'player_id', forget_player.player_id, pseudonym),
							  'season_ratings',
							  mm.move_player_rows('mm.season_ratings', 'player_id', forget_player.player_id, pseudonym),
							  'penalty_history',
							  mm.move_player_rows('mm.penalty_history', 'player_id', forget_player.player_id, pseudonym));

	-- the claim of this call goes, and on Citus the releases of the
	-- player's ended claims left to their queues' ticks (the claims they
	-- name went with the hold above; a read of every queue's shard)
	DELETE FROM mm.pending_releases r WHERE r.player_id = forget_player.player_id;
	DELETE FROM mm.active_players ap WHERE ap.player_id = forget_player.player_id AND ap.ticket_id = 0 AND ap.queue = '';
	RETURN jsonb_build_object('deleted', deleted, 'anonymised', anonymised);
END
$$;
COMMENT ON FUNCTION mm.forget_player(text) IS
'Forgets a player (a data subject''s erasure request): deletes the current state, anonymises the history under a random pseudonym; refused while the player searches or plays';
REVOKE ALL ON FUNCTION mm.forget_player(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.forget_player(text) TO mm_admin;
