-- Scale-out on Citus (docs/scale-out.md): which table is sharded how
-- (mm.sharding), the call that turns a matchmaking database into a Citus
-- deployment (mm.distribute), where a queue lives (mm.queue_node), and the
-- ticket path on shards.  Without Citus none of this changes anything: the
-- tables stay local and mm.create_ticket uses the ticket triggers.

-- How each table of the extension is placed on Citus: the tables of a queue
-- are sharded by queue and co-located (one queue's rows in one shard of each,
-- on one node, where its tick runs); the tables of a player are sharded by
-- player and co-located with each other; the queues and matchmaking's
-- pg_cron jobs are reference tables (a copy on every node: a queue's tick
-- loop runs on its node and reads its interval there); the event key stays
-- a table of each node, which mm.distribute gives the coordinator's key (the
-- extension reads it without a query).  test/t/140_citus.pl and
-- test/regress/sql/scale_out.sql check that every table is listed and that
-- every key of a sharded table holds its distribution column.
CREATE FUNCTION mm.sharding(OUT table_name regclass, OUT placement text, OUT distribution_column text)
RETURNS SETOF record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CAST(t.name AS pg_catalog.regclass), t.placement, t.distribution_column
	  FROM (VALUES ('mm.queues', 'reference', NULL),
				   ('mm.event_key', 'every node', NULL),
				   ('mm.tickets', 'queue', 'queue'),
				   ('mm.ticket_queues', 'queue', 'queue'),
				   ('mm.matches', 'queue', 'queue'),
				   ('mm.match_players', 'queue', 'queue'),
				   ('mm.match_results', 'queue', 'queue'),
				   ('mm.match_predictions', 'queue', 'queue'),
				   ('mm.match_scores', 'queue', 'queue'),
				   ('mm.backfill_requests', 'queue', 'queue'),
				   ('mm.autofill_protection', 'queue', 'queue'),
				   ('mm.rule_evaluations', 'queue', 'queue'),
				   ('mm.tick_runs', 'queue', 'queue'),
				   ('mm.tickets_archive', 'queue', 'queue'),
				   ('mm.matches_archive', 'queue', 'queue'),
				   ('mm.match_players_archive', 'queue', 'queue'),
				   ('mm.match_results_archive', 'queue', 'queue'),
				   ('mm.active_players', 'player', 'player_id'),
				   ('mm.players', 'player', 'id'),
				   ('mm.ratings', 'player', 'player_id'),
				   ('mm.rating_history', 'player', 'player_id'),
				   ('mm.season_ratings', 'player', 'player_id'),
				   ('mm.player_penalties', 'player', 'player_id'),
				   ('mm.penalty_history', 'player', 'player_id'),
				   ('mm.rating_pools', 'reference', NULL),
				   ('mm.seasons', 'reference', NULL),
				   ('mm.schedule_jobs', 'reference', NULL)) AS t(name, placement, distribution_column)
$$;
COMMENT ON FUNCTION mm.sharding() IS
'How mm.distribute places each table on Citus: sharded by queue, by player, a reference table, or a table of every node (the event key)';
REVOKE ALL ON FUNCTION mm.sharding() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.sharding() TO mm_admin, mm_analyst;

-- Whether this database's tables are sharded by Citus (mm.distribute ran).
-- Citus's catalog is read only when Citus is there.
CREATE FUNCTION mm.tables_are_distributed()
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
		RETURN false;
	END IF;
	RETURN EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
					WHERE p.logicalrelid = CAST('mm.tickets' AS regclass));
END
$$;
COMMENT ON FUNCTION mm.tables_are_distributed() IS
'True when mm.distribute has sharded this database''s tables on Citus';
REVOKE ALL ON FUNCTION mm.tables_are_distributed() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tables_are_distributed() TO mm_director, mm_admin, mm_analyst;

-- Turns a matchmaking database into a Citus deployment, on the
-- coordinator: every table placed as mm.sharding says (existing rows move
-- into the shards), mm.tick, its loop and the lifecycle's forms by queue
-- distributed by their queue (Citus runs a call on the coordinator on the
-- queue's node, which sends the events), ids drawn on different nodes kept
-- apart (each node draws from its own range of 2^48), and one event key on
-- every node (the coordinator's, copied: run it again after adding a node
-- or changing the key).  Safe to run again: what is done already
-- is left as it is.  Without Citus it does nothing and says so.
CREATE FUNCTION mm.distribute(shard_count integer DEFAULT 32)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- the ticket triggers run on the shards (refusing plain writes there)
SET citus.enable_unsafe_triggers = on
AS $$
DECLARE
	t record;
	moved regclass[] := '{}';
	failed text;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension e WHERE e.extname = 'citus') THEN
		RAISE NOTICE 'Citus is not installed in this database: nothing to distribute'
			USING HINT = 'See docs/scale-out.md for the deployment.';
		RETURN false;
	END IF;
	IF distribute.shard_count IS NULL OR distribute.shard_count < 1 OR distribute.shard_count > 64000 THEN
		RAISE EXCEPTION 'shard_count must be between 1 and 64000, not %', distribute.shard_count
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT pg_catalog.citus_is_coordinator() THEN
		RAISE EXCEPTION 'mm.distribute runs on the Citus coordinator'
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	-- every node preloads the library: its planner hook keeps a NULL queue
	-- away from Citus's delegation of the distributed functions, on which
	-- Citus 13 crashes (src/citus_guard.c)
	SELECT s.node INTO failed
	  FROM (SELECT 'the coordinator' AS node, current_setting('shared_preload_libraries') AS libraries
			UNION ALL
			SELECT r.nodename || ':' || r.nodeport, r.result
			  FROM pg_catalog.run_command_on_workers('SHOW shared_preload_libraries') r) s
	 WHERE NOT ('matchmaking' = ANY (string_to_array(replace(s.libraries, ' ', ''), ',')))
	 LIMIT 1;
	IF failed IS NOT NULL THEN
		RAISE EXCEPTION 'matchmaking is not in shared_preload_libraries on %', failed
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Set shared_preload_libraries = ''citus,matchmaking,pg_cron'' on every node and restart (docs/scale-out.md).';
	END IF;
	FOR t IN SELECT s.table_name, s.placement, s.distribution_column FROM mm.sharding() s LOOP
		CONTINUE WHEN t.placement = 'every node'
			OR EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = t.table_name);
		IF EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid = t.table_name AND c.relkind = 'r')
		   AND pg_catalog.pg_relation_size(t.table_name) > 0 THEN
			moved := moved || t.table_name;
		END IF;
		IF t.placement = 'reference' THEN
			PERFORM pg_catalog.create_reference_table(t.table_name);
		ELSIF t.table_name IN (CAST('mm.tickets' AS regclass), CAST('mm.active_players' AS regclass)) THEN
			-- the first of each group: a co-location group of its own
			PERFORM pg_catalog.create_distributed_table(t.table_name, t.distribution_column,
														shard_count => distribute.shard_count,
														colocate_with => 'none');
		ELSE
			PERFORM pg_catalog.create_distributed_table(t.table_name, t.distribution_column,
				colocate_with => CASE t.placement WHEN 'queue' THEN 'mm.tickets' ELSE 'mm.active_players' END);
		END IF;
	END LOOP;
	-- the rows now live in the shards: the coordinator's local copies go
	FOR t IN SELECT u.table_name FROM unnest(moved) AS u(table_name) LOOP
		PERFORM pg_catalog.truncate_local_data_after_distributing_table(t.table_name);
	END LOOP;
	-- a queue's tick, its per-minute loop (pg_cron's job, on the
	-- coordinator) and the lifecycle's calls by queue run on the node that
	-- holds the queue, and send their events from there; the same list as
	-- DistributedByQueue in src/citus_guard.c (Citus rule 2, HACKING.md)
	FOR t IN SELECT CAST(u.routine AS regprocedure) AS routine
			   FROM unnest(ARRAY['mm.tick(text, timestamptz)', 'mm.tick_loop(text)',
								 'mm.accept_match(text, bigint, text, boolean, timestamptz)',
								 'mm.assign(text, bigint, text, jsonb)',
								 'mm.requeue_match(text, bigint, text, timestamptz)',
								 'mm.complete_match(text, bigint, timestamptz)',
								 'mm.leave_match(text, bigint, text, timestamptz)',
								 'mm.request_backfill(text, bigint, jsonb, timestamptz)',
								 'mm.cancel_backfill(text, bigint, timestamptz)',
								 'mm.report_result(text, bigint, jsonb, timestamptz)',
								 'mm.cancel_ticket(text, bigint)',
								 'mm.heartbeat(text, bigint, timestamptz)']) AS u(routine) LOOP
		CONTINUE WHEN EXISTS (SELECT FROM pg_catalog.pg_dist_object o
							   WHERE o.classid = CAST('pg_catalog.pg_proc' AS regclass)
								 AND o.objid = t.routine AND o.distribution_argument_index IS NOT NULL);
		PERFORM pg_catalog.create_distributed_function(t.routine, 'queue', colocate_with => 'mm.tickets');
	END LOOP;
	-- ids drawn on each node from its own range: the node's group id times
	-- 2^48 (the coordinator, group 0, keeps its ids)
	SELECT r.nodeid || ': ' || r.result INTO failed FROM pg_catalog.run_command_on_all_nodes($cmd$
		DO $do$
		DECLARE
			s text;
			g bigint := (SELECT groupid FROM pg_catalog.pg_dist_local_group);
		BEGIN
			FOREACH s IN ARRAY ARRAY['mm.tickets_id_seq', 'mm.matches_id_seq',
									 'mm.backfill_requests_id_seq', 'mm.rating_history_id_seq',
									 'mm.penalty_history_id_seq'] LOOP
				IF pg_catalog.nextval(s) < g * 281474976710656 THEN
					PERFORM pg_catalog.setval(s, g * 281474976710656);
				END IF;
			END LOOP;
		END
		$do$
	$cmd$) r WHERE NOT r.success LIMIT 1;
	IF failed IS NOT NULL THEN
		RAISE EXCEPTION 'setting the id ranges of node % failed', failed
			USING ERRCODE = 'connection_failure';
	END IF;
	-- every node signs with the coordinator's key, so that a listener on
	-- any node verifies every event (mm.verify_event)
	SELECT r.nodename || ':' || r.nodeport || ': ' || r.result INTO failed
	  FROM pg_catalog.run_command_on_workers(pg_catalog.format(
			   'UPDATE mm.event_key SET key = %L, created_at = %L',
			   (SELECT k.key FROM mm.event_key k), (SELECT k.created_at FROM mm.event_key k))) r
	 WHERE NOT r.success LIMIT 1;
	IF failed IS NOT NULL THEN
		RAISE EXCEPTION 'copying the event key to a worker failed: %', failed
			USING ERRCODE = 'connection_failure';
	END IF;
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.distribute(integer) IS
'On the Citus coordinator: shards the tables (mm.sharding), runs each queue''s tick on its node, keeps ids apart; false without Citus';
REVOKE ALL ON FUNCTION mm.distribute(integer) FROM PUBLIC;

-- The node that holds a queue: where its tick runs and where to LISTEN for
-- its events (mm_events is sent by the node that ticks).  No row without
-- Citus (every queue is on the one node).
CREATE FUNCTION mm.queue_node(queue text, OUT node_name text, OUT node_port integer)
RETURNS SETOF record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF queue_node.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT mm.tables_are_distributed() THEN
		RETURN;
	END IF;
	RETURN QUERY
		SELECT n.nodename::text, n.nodeport
		  FROM pg_catalog.pg_dist_placement p
		  JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid
		 WHERE p.shardid = pg_catalog.get_shard_id_for_distribution_column('mm.tickets', queue_node.queue)
		   AND n.noderole = 'primary';
END
$$;
COMMENT ON FUNCTION mm.queue_node(text) IS
'On Citus: the node (host, port) that holds a queue, ticks it and sends its events; no row on one node';
REVOKE ALL ON FUNCTION mm.queue_node(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.queue_node(text) TO mm_frontend, mm_director, mm_admin, mm_analyst;

-- On a shard, the ticket triggers cannot reach the players' claims (sharded
-- by player, often on another node): a plain write of mm.tickets is refused
-- there, naming the function that does it.
CREATE FUNCTION mm.refuse_ticket_write_on_shard(operation text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RAISE EXCEPTION 'on Citus, % of mm.tickets is not supported', refuse_ticket_write_on_shard.operation
		USING ERRCODE = 'feature_not_supported',
			  HINT = CASE refuse_ticket_write_on_shard.operation
						 WHEN 'INSERT' THEN 'Create tickets with mm.create_ticket (mm.create_tickets for many).'
						 ELSE 'End tickets with mm.cancel_ticket; the tick and the lifecycle functions move them.'
					 END;
END
$$;
COMMENT ON FUNCTION mm.refuse_ticket_write_on_shard(text) IS
'Internal: refuses a plain write of mm.tickets on a Citus shard, with a hint naming the function to call';
REVOKE ALL ON FUNCTION mm.refuse_ticket_write_on_shard(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.refuse_ticket_write_on_shard(text) TO mm_admin;

-- The queues of a new ticket on Citus: the queue and the other queues exist,
-- none repeats the queue, all share the queue's shard (one ticket is written
-- to one shard).  Reads only the reference table and Citus's metadata.
CREATE FUNCTION mm.check_ticket_queues_on_shards(queue text, other_queues text[])
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text;
	shard bigint;
BEGIN
	PERFORM FROM mm.queues x WHERE x.name = check_ticket_queues_on_shards.queue;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', check_ticket_queues_on_shards.queue
			USING ERRCODE = 'undefined_object';
	END IF;
	IF check_ticket_queues_on_shards.other_queues IS NULL THEN
		RETURN;
	END IF;
	shard := pg_catalog.get_shard_id_for_distribution_column('mm.tickets', check_ticket_queues_on_shards.queue);
	FOREACH q IN ARRAY check_ticket_queues_on_shards.other_queues LOOP
		IF q = check_ticket_queues_on_shards.queue THEN
			RAISE EXCEPTION 'invalid ticket at queues: "%" repeats the ticket''s queue', q
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		IF NOT EXISTS (SELECT FROM mm.queues x WHERE x.name = q) THEN
			RAISE EXCEPTION 'invalid ticket at queues: queue "%" does not exist', q
				USING ERRCODE = 'undefined_object';
		END IF;
		IF pg_catalog.get_shard_id_for_distribution_column('mm.tickets', q) <> shard THEN
			RAISE EXCEPTION 'queues "%" and "%" are on different shards: one ticket cannot search in both',
				  check_ticket_queues_on_shards.queue, q
				USING ERRCODE = 'feature_not_supported',
					  HINT = 'On Citus a ticket may combine only the queues of one shard (docs/scale-out.md).';
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION mm.check_ticket_queues_on_shards(text, text[]) IS
'Internal: on Citus, refuses a ticket whose queues do not exist, repeat, or sit on different shards';
REVOKE ALL ON FUNCTION mm.check_ticket_queues_on_shards(text, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.check_ticket_queues_on_shards(text, text[]) TO mm_admin;

-- Refuses a player whose claim (mm.active_players) a new ticket on Citus
-- could not take: 23505 with the message of one node (mm.claim_players).
-- The claim's own key violation would reach the caller as Citus's XX000
-- naming the shard's index, and catching it costs a subtransaction (a
-- SAVEPOINT on every node of the transaction) per ticket: the claims skip a
-- taken player (ON CONFLICT DO NOTHING, which waits for a concurrent claim
-- as the key does) and this names it.  Reads the player's shard, and the
-- holder ticket's queue's.
CREATE FUNCTION mm.refuse_taken_player(player_id text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	holder record;
	holder_status text;
	live record;
BEGIN
	SELECT a.ticket_id, a.queue INTO holder
	  FROM mm.active_players a WHERE a.player_id = refuse_taken_player.player_id;
	IF holder.ticket_id IS NOT NULL THEN
		SELECT t.status INTO holder_status
		  FROM mm.tickets_active t WHERE t.queue = holder.queue AND t.id = holder.ticket_id;
		IF holder_status IS NULL THEN
			SELECT m.id, m.status INTO live
			  FROM mm.tickets_ended t
			  JOIN mm.matches m ON m.queue = t.queue AND m.id = t.match_id
			  JOIN mm.match_players mp ON mp.queue = m.queue AND mp.match_id = m.id
				   AND mp.player_id = refuse_taken_player.player_id
			 WHERE t.queue = holder.queue AND t.id = holder.ticket_id
			   AND m.status IN ('proposed', 'ready', 'assigned') AND mp.left_at IS NULL;
			IF live.id IS NOT NULL THEN
				RAISE EXCEPTION 'player "%" is in match %, which is %', refuse_taken_player.player_id,
					  live.id, live.status
					USING ERRCODE = 'unique_violation',
						  DETAIL = format('Ticket %s brought the player into the match.', holder.ticket_id),
						  HINT = 'A player in a live match cannot search until the match is completed or cancelled, or the player leaves it (mm.leave_match).';
			END IF;
		ELSE
			RAISE EXCEPTION 'player "%" already has an active ticket', refuse_taken_player.player_id
				USING ERRCODE = 'unique_violation',
					  DETAIL = format('Ticket %s holds the player and is %s.', holder.ticket_id, holder_status),
					  HINT = 'A player can be in one searching or proposed ticket at a time; cancel that ticket first.';
		END IF;
	END IF;
	-- a ticket of this batch, or a claim whose ticket is gone
	RAISE EXCEPTION 'player "%" already has an active ticket', refuse_taken_player.player_id
		USING ERRCODE = 'unique_violation';
END
$$;
COMMENT ON FUNCTION mm.refuse_taken_player(text) IS
'Internal: on Citus, refuses a new ticket''s player who is already claimed (23505, naming the ticket or match that holds the player)';
REVOKE ALL ON FUNCTION mm.refuse_taken_player(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.refuse_taken_player(text) TO mm_admin;

-- One ticket on Citus (mm.create_ticket calls this once the tables are
-- sharded).  Every statement names its distribution column, so Citus
-- routes each to one shard: the queue's config validates the players
-- (errors at players[0]..., as on one node), then per player, in player
-- order (no deadlock with a concurrent claim), the claim and the cooldown
-- check on the player's shard, then the ticket on the queue's shard.  The
-- transaction spans at most the queue's node and the players' nodes.
CREATE FUNCTION mm.create_ticket_on_shards(queue text, other_queues text[], players jsonb,
										   now timestamptz)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	new_id bigint;
	all_queues text[];
	pid text;
	q text;
BEGIN
	-- without other queues, mm.validate_ticket's read of the queue's config
	-- is the check that it exists (the same 42704): one read of the
	-- reference table fewer per ticket
	IF create_ticket_on_shards.other_queues IS NOT NULL THEN
		PERFORM mm.check_ticket_queues_on_shards(create_ticket_on_shards.queue, create_ticket_on_shards.other_queues);
	END IF;
	all_queues := array_prepend(create_ticket_on_shards.queue, coalesce(create_ticket_on_shards.other_queues, '{}'));
	FOREACH q IN ARRAY all_queues LOOP
		PERFORM mm.validate_ticket(q, create_ticket_on_shards.players, create_ticket_on_shards.now);
	END LOOP;
	new_id := pg_catalog.nextval('mm.tickets_id_seq');
	FOR pid IN SELECT e.value ->> 'id' FROM jsonb_array_elements(create_ticket_on_shards.players) e ORDER BY 1 LOOP
		INSERT INTO mm.active_players (player_id, ticket_id, queue)
		VALUES (pid, new_id, create_ticket_on_shards.queue)
		ON CONFLICT DO NOTHING;
		IF NOT FOUND THEN
			PERFORM mm.refuse_taken_player(pid);
		END IF;
		-- after the claim, as on one node: a claim waits for a concurrent
		-- offence that released the player, whose cooldown this then sees
		PERFORM FROM mm.player_penalties p
		 WHERE p.player_id = pid AND p.queue = ANY (all_queues) AND p.cooldown_until > create_ticket_on_shards.now;
		IF FOUND THEN
			PERFORM mm.refuse_cooled_down_players(array_fill(pid, ARRAY[cardinality(all_queues)]), all_queues,
												  array_fill(create_ticket_on_shards.now, ARRAY[cardinality(all_queues)]));
		END IF;
	END LOOP;
	INSERT INTO mm.tickets_active (id, queue, queues, players, created_at)
	VALUES (new_id, create_ticket_on_shards.queue, create_ticket_on_shards.other_queues,
			create_ticket_on_shards.players, create_ticket_on_shards.now);
	FOREACH q IN ARRAY coalesce(create_ticket_on_shards.other_queues, '{}') LOOP
		INSERT INTO mm.ticket_queues (queue, ticket_id, created_at)
		VALUES (q, new_id, create_ticket_on_shards.now);
	END LOOP;
	RETURN new_id;
END
$$;
COMMENT ON FUNCTION mm.create_ticket_on_shards(text, text[], jsonb, timestamptz) IS
'Internal: mm.create_ticket on Citus (each statement routed to one shard: the players'' claims and cooldowns on theirs, the ticket on its queue''s)';
REVOKE ALL ON FUNCTION mm.create_ticket_on_shards(text, text[], jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_ticket_on_shards(text, text[], jsonb, timestamptz) TO mm_admin;

-- Tickets on Citus, through the coordinator (mm.create_tickets calls this
-- once the tables are sharded): the checks of the ticket triggers done
-- here (each queue's config validates the players, in order; the queues of
-- one ticket share a shard), the players claimed on their shards in one
-- statement, then the tickets written to their queue's shard in one
-- statement, straight into the active partition (the parent's triggers are
-- for one node).  Returns the ids in the order of players.
CREATE FUNCTION mm.create_tickets_on_shards(queue text, other_queues text[], players jsonb[],
											now timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ids bigint[];
	q text;
	claimed integer;
	claim_sql text;
	player_ids text[];
	pid text;
	tid bigint;
BEGIN
	IF create_tickets_on_shards.other_queues IS NOT NULL THEN
		PERFORM mm.check_ticket_queues_on_shards(create_tickets_on_shards.queue, create_tickets_on_shards.other_queues);
	END IF;
	PERFORM mm.validate_tickets(create_tickets_on_shards.queue, create_tickets_on_shards.players,
								create_tickets_on_shards.now);
	FOREACH q IN ARRAY coalesce(create_tickets_on_shards.other_queues, '{}') LOOP
		PERFORM mm.validate_tickets(q, create_tickets_on_shards.players, create_tickets_on_shards.now);
	END LOOP;
	ids := ARRAY(SELECT pg_catalog.nextval('mm.tickets_id_seq')
				   FROM generate_series(1, cardinality(create_tickets_on_shards.players)));
	-- one active ticket per player, in player order as on one node: a
	-- taken player (or one repeated in the batch) is skipped and refused
	-- below with 23505 (mm.refuse_taken_player says why not the key's
	-- error).  One multi-row INSERT ... VALUES, which Citus splits by shard
	-- and sends to every node at once; an INSERT ... SELECT from the
	-- arguments went through the coordinator (its rows gathered there, then
	-- copied to each shard: about 3 times slower for 1,000 players).  The
	-- values are literals (%L), the ids the sequence's.  The claims are
	-- counted from RETURNING.
	player_ids := ARRAY(SELECT e.value ->> 'id'
						  FROM unnest(create_tickets_on_shards.players) u(players), jsonb_array_elements(u.players) e);
	SELECT 'INSERT INTO mm.active_players (player_id, ticket_id, queue) VALUES '
		   || string_agg(pg_catalog.format('(%L, %s, %L)', e.value ->> 'id', u.id, create_tickets_on_shards.queue),
						 ', ' ORDER BY e.value ->> 'id')
		   || ' ON CONFLICT DO NOTHING RETURNING player_id'
	  INTO claim_sql
	  FROM unnest(ids, create_tickets_on_shards.players) AS u(id, players), jsonb_array_elements(u.players) e;
	claimed := 0;
	FOR pid IN EXECUTE claim_sql LOOP
		claimed := claimed + 1;
	END LOOP;
	IF claimed < cardinality(player_ids) THEN
		-- the first player, in batch order, whose claim is not its ticket's
		FOR pid, tid IN
			SELECT e.value ->> 'id', u.id
			  FROM unnest(ids, create_tickets_on_shards.players) WITH ORDINALITY AS u(id, players, ord),
				   jsonb_array_elements(u.players) WITH ORDINALITY AS e(value, pord)
			 ORDER BY u.ord, e.pord
		LOOP
			PERFORM FROM mm.active_players a WHERE a.player_id = pid AND a.ticket_id = tid;
			IF NOT FOUND THEN
				PERFORM mm.refuse_taken_player(pid);
			END IF;
		END LOOP;
	END IF;
	-- a player cooling down after an offence may not queue (penalties), as
	-- on one node: checked after the claim, on the players' shards
	PERFORM FROM mm.player_penalties p
	 WHERE p.player_id = ANY (player_ids) AND p.cooldown_until > create_tickets_on_shards.now
	 LIMIT 1;
	IF FOUND THEN
		PERFORM mm.refuse_cooled_down_players(array_agg(e.value ->> 'id'), array_agg(q.queue),
											  array_agg(create_tickets_on_shards.now))
		  FROM unnest(create_tickets_on_shards.players) AS u(players), jsonb_array_elements(u.players) e,
			   unnest(array_prepend(create_tickets_on_shards.queue,
									coalesce(create_tickets_on_shards.other_queues, '{}'))) q(queue);
	END IF;
	INSERT INTO mm.tickets_active (id, queue, queues, players, created_at)
	SELECT u.id, create_tickets_on_shards.queue, create_tickets_on_shards.other_queues, u.players,
		   create_tickets_on_shards.now
	  FROM unnest(ids, create_tickets_on_shards.players) AS u(id, players);
	INSERT INTO mm.ticket_queues (queue, ticket_id, created_at)
	SELECT o.queue, u.id, create_tickets_on_shards.now
	  FROM unnest(ids) AS u(id), unnest(create_tickets_on_shards.other_queues) AS o(queue);
	RETURN ids;
END
$$;
COMMENT ON FUNCTION mm.create_tickets_on_shards(text, text[], jsonb[], timestamptz) IS
'Internal: mm.create_tickets on Citus (checks, claims the players on their shards, writes the tickets to their queue''s shard)';
REVOKE ALL ON FUNCTION mm.create_tickets_on_shards(text, text[], jsonb[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_tickets_on_shards(text, text[], jsonb[], timestamptz) TO mm_admin;

-- On Citus, the rows of a queue mm.drop_queue removes (on one node the
-- triggers of mm.queues do it, which on Citus fire on the reference table's
-- copies and cannot reach the shards): its tickets with their claims, its
-- matches with their players, results and backfill requests, its rule
-- statistics, autofill protection and pg_cron jobs, and its name in the
-- other queues of tickets.
-- Every statement names the queues it reaches (the dropped one, and the
-- queues of the tickets listed in it: on Citus, one shard).
CREATE FUNCTION mm.delete_queue_rows(queue text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	listing text[];
	player_ids text[];
	ticket_ids bigint[];
BEGIN
	-- the queues of the tickets that also search in this one
	listing := ARRAY(SELECT DISTINCT t.queue FROM mm.tickets_active t
					  WHERE t.id IN (SELECT l.ticket_id FROM mm.ticket_queues l
									  WHERE l.queue = delete_queue_rows.queue));
	WITH gone AS (
		DELETE FROM mm.tickets_ended t WHERE t.queue = delete_queue_rows.queue
		RETURNING t.id, t.players
	)
	SELECT array_agg(p.value ->> 'id'), array_agg(g.id) INTO player_ids, ticket_ids
	  FROM gone g, jsonb_array_elements(g.players) p;
	-- the claims of the players of its live matches
	PERFORM mm.release_claims(player_ids, ticket_ids);
	DELETE FROM mm.match_players mp WHERE mp.queue = delete_queue_rows.queue;
	DELETE FROM mm.matches m WHERE m.queue = delete_queue_rows.queue;
	DELETE FROM mm.rule_evaluations e WHERE e.queue = delete_queue_rows.queue;
	DELETE FROM mm.autofill_protection a WHERE a.queue = delete_queue_rows.queue;
	DELETE FROM mm.player_penalties p WHERE p.queue = delete_queue_rows.queue;
	DELETE FROM mm.penalty_history h WHERE h.queue = delete_queue_rows.queue;
	DELETE FROM mm.ticket_queues l WHERE l.queue = delete_queue_rows.queue;
	UPDATE mm.tickets_active t
	   SET queues = nullif(array_remove(t.queues, delete_queue_rows.queue), '{}')
	 WHERE t.queue = ANY (listing) AND t.queues @> ARRAY[delete_queue_rows.queue];
	DELETE FROM mm.schedule_jobs j WHERE j.queue = delete_queue_rows.queue;
END
$$;
COMMENT ON FUNCTION mm.delete_queue_rows(text) IS
'Internal: on Citus, deletes the rows of a queue mm.drop_queue removes (its tickets, claims, matches, statistics, autofill protection, penalties, jobs)';
REVOKE ALL ON FUNCTION mm.delete_queue_rows(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.delete_queue_rows(text) TO mm_admin;
