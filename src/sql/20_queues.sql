-- Queues (src/queue_config.c; docs/queues-and-tickets.md): the table
-- mm.queues, whose config every write validates in C (the queues_validate
-- trigger), the functions that parse a config, and the queue functions
-- (create, alter, drop).  Deleting a queue deletes its tickets and matches.

CREATE TABLE mm.queues (
	name text PRIMARY KEY
		CONSTRAINT queues_name_format CHECK (
			pg_catalog.length(name) OPERATOR(pg_catalog.<=) 64
			AND name OPERATOR(pg_catalog.~) '^[A-Za-z0-9][A-Za-z0-9_-]*$'),
	config jsonb NOT NULL,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	-- the role the queue's match function runs as (src/match_function.c):
	-- the tick calls it as this role, in a security-restricted operation
	-- with search_path pg_catalog, pg_temp, so user code never runs with
	-- the ticker's rights.  The queues_validate trigger keeps it: the writer
	-- who names (or changes) the function becomes its role and must be able
	-- to call it; a role named in the row is kept only when the writer has
	-- its privileges (a pg_dump restore).
	match_function_role text
);
COMMENT ON TABLE mm.queues IS 'Matchmaking queues; config is validated in C on every write';
COMMENT ON COLUMN mm.queues.match_function_role IS
	'The role the queue''s match_function runs as: the role that named it (set by the queues_validate trigger)';
GRANT SELECT ON TABLE mm.queues TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.queues TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.queues', '');

CREATE FUNCTION mm.queues_validate() RETURNS trigger
	AS 'MODULE_PATHNAME', 'mm_queues_validate'
	LANGUAGE C;
COMMENT ON FUNCTION mm.queues_validate() IS
	'Trigger: validates the name and config of every write to mm.queues';
REVOKE ALL ON FUNCTION mm.queues_validate() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queues_validate() TO mm_admin;
CREATE TRIGGER queues_validate BEFORE INSERT OR UPDATE ON mm.queues
	FOR EACH ROW EXECUTE FUNCTION mm.queues_validate();

-- Deleting a queue deletes its tickets and matches (and, through their
-- keys, results and backfill requests): the tick's tables carry no foreign
-- key to mm.queues, whose checks would cost a lookup per written row.
CREATE FUNCTION mm.queues_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- a copy of the reference table on Citus: nothing to do (Citus rule 12)
	IF TG_TABLE_NAME ~ '_[0-9]+$' THEN
		RETURN NULL;
	END IF;
	DELETE FROM mm.tickets t USING old_queues q WHERE t.queue = q.name;
	DELETE FROM mm.match_players mp USING old_queues q WHERE mp.queue = q.name;
	DELETE FROM mm.matches m USING old_queues q WHERE m.queue = q.name;
	-- their pg_cron jobs too (mm.schedule_jobs_after_delete unschedules them)
	DELETE FROM mm.schedule_jobs j USING old_queues q WHERE j.queue = q.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete() IS
	'Trigger: deletes the tickets, matches and scheduled jobs of deleted queues';
REVOKE ALL ON FUNCTION mm.queues_after_delete() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queues_after_delete() TO mm_admin;
CREATE TRIGGER queues_after_delete AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete();

-- A config naming a match function is checked against the catalog: the
-- functions that parse a config read it, so they are not immutable.
CREATE FUNCTION mm.validate_queue_config(config jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'mm_validate_queue_config'
	LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.validate_queue_config(jsonb) IS
	'Validates a queue config like a write to mm.queues would; returns it with every default filled in';
REVOKE ALL ON FUNCTION mm.validate_queue_config(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.validate_queue_config(jsonb) TO mm_admin;

CREATE FUNCTION mm.rule_threshold(config jsonb, rule text, age_seconds float8) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'mm_rule_threshold'
	LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.rule_threshold(jsonb, text, float8) IS
	'Diagnostic: a rule''s expansion step and threshold when the oldest ticket is age_seconds old';
REVOKE ALL ON FUNCTION mm.rule_threshold(jsonb, text, float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.rule_threshold(jsonb, text, float8) TO mm_admin;

CREATE FUNCTION mm.create_queue(name text, config jsonb) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- the trigger validates name and config
	INSERT INTO mm.queues (name, config) VALUES (create_queue.name, create_queue.config);
END
$$;
COMMENT ON FUNCTION mm.create_queue(text, jsonb) IS
	'Creates a queue; the config is validated (errors name the JSON path)';
REVOKE ALL ON FUNCTION mm.create_queue(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_queue(text, jsonb) TO mm_admin;

CREATE FUNCTION mm.alter_queue(name text, config jsonb) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF alter_queue.name IS NULL THEN
		RAISE EXCEPTION 'queue name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	UPDATE mm.queues q SET config = alter_queue.config
	 WHERE q.name = alter_queue.name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', alter_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.alter_queue(text, jsonb) IS
	'Replaces a queue''s config (validated); searching tickets stay and are matched under the new config';
REVOKE ALL ON FUNCTION mm.alter_queue(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.alter_queue(text, jsonb) TO mm_admin;

CREATE FUNCTION mm.drop_queue(name text, force boolean DEFAULT false) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	active_count bigint;
	cancelled_ids bigint[];
	proposed_match record;
	other_queues text[];
	match_queues text[];
	proposing bigint[];
BEGIN
	IF drop_queue.name IS NULL THEN
		RAISE EXCEPTION 'queue name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- FOR UPDATE also blocks new tickets (their validation locks the row FOR KEY SHARE)
	PERFORM FROM mm.queues q WHERE q.name = drop_queue.name FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', drop_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;
	-- and waits for the running ticks of the other queues its tickets search
	-- in (a tick holds its queue FOR SHARE): one of them may be proposing one
	-- of its tickets, and the statements below must see that match
	other_queues := ARRAY(SELECT DISTINCT u.queue FROM mm.tickets_active t, unnest(t.queues) u(queue)
						   WHERE t.queue = drop_queue.name);
	PERFORM FROM mm.queues q WHERE q.name = ANY (other_queues) ORDER BY q.name FOR UPDATE;
	-- and waits for a lifecycle call on one of its live matches (a requeue
	-- puts their tickets back to searching without the queue's lock): the
	-- count below then sees what it committed
	PERFORM FROM mm.matches m
	 WHERE m.queue = drop_queue.name AND m.status IN ('proposed', 'ready', 'assigned')
	 ORDER BY m.id FOR UPDATE;

	-- a proposed match of the queue may hold tickets of other queues (and
	-- the queue's tickets may be proposed in other queues' matches)
	-- (the queues these tickets and matches can be in: this one, the other
	-- queues of its tickets, and the queues of the tickets that also search
	-- in it; on Citus, those of one shard)
	proposing := ARRAY(SELECT m.id FROM mm.matches m
						WHERE m.queue = drop_queue.name AND m.status = 'proposed');
	match_queues := drop_queue.name || other_queues
					|| ARRAY(SELECT DISTINCT t.queue FROM mm.tickets_active t
							  WHERE t.id IN (SELECT l.ticket_id FROM mm.ticket_queues l
											  WHERE l.queue = drop_queue.name));
	SELECT count(*) INTO active_count FROM mm.tickets_active t
	 WHERE t.queue = ANY (match_queues)
	   AND (t.queue = drop_queue.name OR t.match_id = ANY (proposing));
	IF active_count > 0 THEN
		IF NOT coalesce(drop_queue.force, false) THEN
			RAISE EXCEPTION 'queue "%" still has active tickets', drop_queue.name
				USING ERRCODE = 'object_in_use',
					  DETAIL = format('%s searching or proposed ticket(s) block dropping the queue.',
									  active_count),
					  HINT = 'Cancel them first, or call mm.drop_queue(name, force => true) to cancel them.';
		END IF;
		-- the proposed matches the queue takes part in are cancelled first:
		-- the queue's tickets in them are cancelled, the others search again
		-- in their own queues (none is left proposed in a match that goes
		-- away, no match goes on without its tickets)
		proposing := proposing || ARRAY(SELECT t.match_id FROM mm.tickets_active t
										 WHERE t.queue = drop_queue.name AND t.status = 'proposed');
		FOR proposed_match IN
			SELECT m.id, m.queue FROM mm.matches m
			 WHERE m.queue = ANY (match_queues) AND m.status = 'proposed' AND m.id = ANY (proposing)
			 ORDER BY m.id FOR UPDATE
		LOOP
			cancelled_ids := ARRAY(SELECT t.id FROM mm.tickets_active t
									WHERE t.queue = drop_queue.name AND t.match_id = proposed_match.id);
			PERFORM mm.cancel_proposed_match(proposed_match.queue, proposed_match.id, 'queue_dropped',
											 cancelled_ids, now());
		END LOOP;
		-- cancel them all in one statement (the queue row lock keeps new
		-- tickets out; a ticket locked by a tick is waited for), then tell
		-- every client in ticket_cancelled events split under 8000 bytes
		cancelled_ids := ARRAY(SELECT t.id FROM mm.tickets_active t
								WHERE t.queue = drop_queue.name
								ORDER BY t.id FOR UPDATE);
		SELECT array_agg(c.id ORDER BY c.id) INTO cancelled_ids
		  FROM mm.end_tickets(ARRAY[drop_queue.name], cancelled_ids, 'cancelled', now()) AS c(id);
		IF cancelled_ids IS NOT NULL THEN
			PERFORM mm.notify_ticket_event('ticket_cancelled', drop_queue.name, cancelled_ids);
		END IF;
	END IF;

	-- tickets, matches and everything hanging off them go with the queue
	-- (mm.queues_after_delete; on Citus mm.delete_queue_rows first: Citus rule 12)
	IF mm.tables_are_distributed() THEN
		PERFORM mm.delete_queue_rows(drop_queue.name);
	END IF;
	DELETE FROM mm.queues q WHERE q.name = drop_queue.name;
END
$$;
COMMENT ON FUNCTION mm.drop_queue(text, boolean) IS
	'Drops a queue with its tickets and matches; refused while tickets are active unless force cancels them';
REVOKE ALL ON FUNCTION mm.drop_queue(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.drop_queue(text, boolean) TO mm_admin;
