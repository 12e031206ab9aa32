-- Scale-out on Citus (docs/scale-out.md): which table is sharded how
-- (mm.sharding), the call that turns a matchmaking database into a Citus
-- deployment (mm.distribute), where a queue lives (mm.queue_node), and the
-- ticket path on shards.  Without Citus none of this changes anything: the
-- tables stay local and mm.create_ticket uses the ticket triggers.

-- On Citus, the tickets whose players the queue's next tick claims: a
-- ticket of one queue is written on the queue's node alone (the players'
-- claims would make every ticket a transaction of two nodes), and the tick
-- claims the players of these tickets in one statement per tick before it
-- reads the queue (mm.claim_pending_players).  Empty on one node, where a
-- ticket claims its players itself.
-- A player has one such row per queue (the key): a second ticket of the
-- player in the queue is refused at once, as on one node; a ticket of the
-- player in another queue is refused by its tick, which finds the player
-- claimed.
CREATE TABLE mm.pending_claims (
	queue text NOT NULL,
	player_id text NOT NULL,
	ticket_id bigint NOT NULL,
	PRIMARY KEY (queue, player_id)
);
CREATE INDEX pending_claims_ticket ON mm.pending_claims (queue, ticket_id);
COMMENT ON TABLE mm.pending_claims IS
'On Citus, the searching tickets whose players the queue''s next tick claims (empty on one node)';
GRANT SELECT ON TABLE mm.pending_claims TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.pending_claims TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.pending_claims', '');

-- On Citus, the claims a lifecycle call or a cancellation released, which
-- the queue's tick drops from mm.active_players (mm.apply_pending_releases,
-- at the start and the end of each tick).  Claims live on the players'
-- shards: dropping them in the call would make it a transaction of every
-- node its players live on, and Citus opens a new connection for each such
-- call it runs on a worker for the coordinator.  Meanwhile a new ticket of
-- the player takes the released claim over (mm.take_over_stale_claim).
-- Empty on one node, where the call drops the claims itself.
CREATE TABLE mm.pending_releases (
	queue text NOT NULL,
	player_id text NOT NULL,
	ticket_id bigint NOT NULL,
	PRIMARY KEY (queue, player_id, ticket_id)
);
COMMENT ON TABLE mm.pending_releases IS
'On Citus, the claims released in a queue (an ended ticket or match) that its next tick drops from mm.active_players (empty on one node)';
GRANT SELECT ON TABLE mm.pending_releases TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.pending_releases TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.pending_releases', '');

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
				   ('mm.pending_claims', 'queue', 'queue'),
				   ('mm.pending_releases', 'queue', 'queue'),
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

-- Whether this database's tables are sharded by Citus (mm.distribute ran):
-- Citus's catalog is read only when Citus is there, and a true answer is
-- kept by the backend (src/citus_guard.c).
CREATE FUNCTION mm.tables_are_distributed()
RETURNS boolean
AS 'MODULE_PATHNAME', 'mm_tables_are_distributed'
LANGUAGE C STABLE;
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
								 'mm.heartbeat(text, bigint, timestamptz)',
								 'mm.get_assignment(text, bigint)', 'mm.get_assignment(text, bigint, text)',
								 'mm.create_ticket(text, jsonb, timestamptz)',
								 'mm.create_tickets(text, jsonb[], timestamptz)']) AS u(routine) LOOP
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

-- Takes a player's claim over for a new ticket (or mm.forget_player's
-- hold, ticket 0) when the claim that holds the player is stale: its
-- ticket ended in the claim's queue, and not into a live match the player
-- is still in.  On Citus the call that ended it leaves the claim to the
-- queue's tick (mm.pending_releases); until then a new ticket of the
-- player takes it here.  Read by the claim's queue (its shards only): a
-- ticket not found in that queue (a ticket of several queues matched in
-- another) is taken as live, and the player waits for that queue's tick.
-- Returns whether the new claim is taken.
CREATE FUNCTION mm.take_over_stale_claim(player_id text, ticket_id bigint, queue text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	holder record;
	ended record;
	live record;
BEGIN
	SELECT a.ticket_id, a.queue INTO holder
	  FROM mm.active_players a WHERE a.player_id = take_over_stale_claim.player_id;
	IF FOUND THEN
		-- SELECT 1: Citus rule 7
		IF EXISTS (SELECT 1 FROM mm.tickets_active t WHERE t.queue = holder.queue AND t.id = holder.ticket_id) THEN
			RETURN false;
		END IF;
		SELECT t.match_id INTO ended
		  FROM mm.tickets_ended t WHERE t.queue = holder.queue AND t.id = holder.ticket_id;
		IF NOT FOUND THEN
			RETURN false;
		END IF;
		IF ended.match_id IS NOT NULL THEN
			-- the match by its key (a status in the filter would let the
			-- planner read the queue's live matches through their index)
			SELECT m.status, mp.left_at INTO live
			  FROM mm.matches m
			  JOIN mm.match_players mp ON mp.queue = m.queue AND mp.match_id = m.id
				   AND mp.player_id = take_over_stale_claim.player_id
			 WHERE m.queue = holder.queue AND m.id = ended.match_id;
			IF live.status IN ('proposed', 'ready', 'assigned') AND live.left_at IS NULL THEN
				RETURN false;
			END IF;
			-- a requeue that committed after the first look (the match read
			-- as cancelled above) put the ticket back to searching under the
			-- same claim: looked at again, in this later snapshot
			IF EXISTS (SELECT 1 FROM mm.tickets_active t WHERE t.queue = holder.queue AND t.id = holder.ticket_id) THEN
				RETURN false;
			END IF;
		END IF;
		DELETE FROM mm.active_players a
		 WHERE a.player_id = take_over_stale_claim.player_id AND a.ticket_id = holder.ticket_id;
	END IF;
	INSERT INTO mm.active_players (player_id, ticket_id, queue)
	VALUES (take_over_stale_claim.player_id, take_over_stale_claim.ticket_id, take_over_stale_claim.queue)
	ON CONFLICT DO NOTHING;
	RETURN FOUND;
END
$$;
COMMENT ON FUNCTION mm.take_over_stale_claim(text, bigint, text) IS
'Internal: takes a player''s claim for a ticket when the claim holding the player is stale (its ticket ended, not into a live match the player is in)';
REVOKE ALL ON FUNCTION mm.take_over_stale_claim(text, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.take_over_stale_claim(text, bigint, text) TO mm_admin;

-- On Citus, the queue's tick (at its start and its end) and mm.drop_queue:
-- drops the claims released in the queue (mm.pending_releases), one
-- statement on the players' shards, then their pending rows.  A claim taken
-- over meanwhile is held by another ticket and stays.  Dropping a pair late
-- is safe because a released pair never holds again: its ticket has ended,
-- or a requeue leaves it out (it had a leaver); the claims the tick gives
-- back for a later tick are released at once, not here.  With a node out
-- of reach the rows wait for a later tick (a WARNING names it).
CREATE FUNCTION mm.apply_pending_releases(queue text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	player_ids text[];
	ticket_ids bigint[];
BEGIN
	SELECT array_agg(r.player_id ORDER BY r.player_id), array_agg(r.ticket_id ORDER BY r.player_id)
	  INTO player_ids, ticket_ids
	  FROM mm.pending_releases r WHERE r.queue = apply_pending_releases.queue;
	IF player_ids IS NULL THEN
		RETURN;
	END IF;
	BEGIN
		PERFORM mm.release_claims(player_ids, ticket_ids);
	EXCEPTION WHEN connection_exception THEN
		-- kept for a later tick; a new ticket of these players takes the
		-- claim over meanwhile
		RAISE WARNING 'queue "%": the claims released on a node out of reach wait for a later tick',
			apply_pending_releases.queue
			USING ERRCODE = SQLSTATE, DETAIL = SQLERRM;
		RETURN;
	END;
	DELETE FROM mm.pending_releases r
	 WHERE r.queue = apply_pending_releases.queue
	   AND (r.player_id, r.ticket_id) IN (SELECT u.p, u.t FROM unnest(player_ids, ticket_ids) u(p, t));
END
$$;
COMMENT ON FUNCTION mm.apply_pending_releases(text) IS
'Internal: on Citus, drops the claims released in a queue (mm.pending_releases) from mm.active_players';
REVOKE ALL ON FUNCTION mm.apply_pending_releases(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.apply_pending_releases(text) TO mm_admin;

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
		IF NOT FOUND AND NOT mm.take_over_stale_claim(pid, new_id, create_ticket_on_shards.queue) THEN
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

-- Refuses a player who holds a pending claim in the queue (mm.pending_claims):
-- 23505 with the message of one node, naming the ticket that holds it.
CREATE FUNCTION mm.refuse_pending_player(queue text, player_id text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	holder bigint;
BEGIN
	SELECT c.ticket_id INTO holder FROM mm.pending_claims c
	 WHERE c.queue = refuse_pending_player.queue AND c.player_id = refuse_pending_player.player_id;
	RAISE EXCEPTION 'player "%" already has an active ticket', refuse_pending_player.player_id
		USING ERRCODE = 'unique_violation',
			  DETAIL = format('Ticket %s holds the player and is searching.', holder),
			  HINT = 'A player can be in one searching or proposed ticket at a time; cancel that ticket first.';
END
$$;
COMMENT ON FUNCTION mm.refuse_pending_player(text, text) IS
'Internal: refuses a player who already holds a pending claim in the queue (23505, naming its ticket)';
REVOKE ALL ON FUNCTION mm.refuse_pending_player(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.refuse_pending_player(text, text) TO mm_admin;

-- mm.create_ticket on Citus, for a ticket of one queue: everything it
-- reads and writes is on the queue's node (docs/scale-out.md, "How a
-- ticket is created").  The players are held in the queue's pending claims
-- (a player already pending in the queue is refused at once) and claimed,
-- with their cooldowns checked, by the queue's next tick
-- (mm.claim_pending_players).  Not read here: a player's claim and
-- cooldown live on the player's shard, and Citus opens a new connection to
-- reach another node from a call it runs on the queue's node (it keeps none
-- in such a backend), about ten times the cost of the whole ticket.  The
-- rows go straight into the queue's shards when they are on this node
-- (src/ticket_shards.c, which takes the shard's metadata lock as Citus's
-- executor does); Citus refuses a write that names a shard outside its own
-- calls unless manual changes are on.
CREATE FUNCTION mm.create_ticket_on_queue_node(queue text, players jsonb, now timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'mm_create_ticket_on_queue_node'
LANGUAGE C VOLATILE STRICT
SET citus.enable_manual_changes_to_shards = on;
COMMENT ON FUNCTION mm.create_ticket_on_queue_node(text, jsonb, timestamptz) IS
'Internal: mm.create_ticket on Citus for one queue (written on the queue''s node; the players claimed by its next tick)';
REVOKE ALL ON FUNCTION mm.create_ticket_on_queue_node(text, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_ticket_on_queue_node(text, jsonb, timestamptz) TO mm_admin;

-- mm.create_tickets on Citus, for tickets of one queue: as
-- mm.create_ticket_on_queue_node for a batch (src/ticket_shards.c), each
-- write one statement for the whole batch on the queue's node.  A player
-- pending in the queue or twice in the batch is refused with 23505; the
-- players' claims and cooldowns are left to the queue's next tick, as for
-- one ticket.  Returns the ids in the order of players.
CREATE FUNCTION mm.create_tickets_on_queue_node(queue text, players jsonb[], now timestamptz)
RETURNS bigint[]
AS 'MODULE_PATHNAME', 'mm_create_tickets_on_queue_node'
LANGUAGE C VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
SET citus.enable_manual_changes_to_shards = on;
COMMENT ON FUNCTION mm.create_tickets_on_queue_node(text, jsonb[], timestamptz) IS
'Internal: mm.create_tickets on Citus for one queue (written on the queue''s node; the players claimed by its next tick)';
REVOKE ALL ON FUNCTION mm.create_tickets_on_queue_node(text, jsonb[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.create_tickets_on_queue_node(text, jsonb[], timestamptz) TO mm_admin;

-- The claims a call ended in a queue, left for the queue's tick
-- (mm.release_queue_claims on Citus): written into the queue's shard of
-- mm.pending_releases when it is on this node (src/ticket_shards.c), one
-- statement with PostgreSQL's own kept plan instead of one that Citus plans
-- at every call; false, with nothing written, when the shard is elsewhere.
CREATE FUNCTION mm.release_claims_on_queue_node(queue text, player_ids text[], ticket_ids bigint[])
RETURNS boolean
AS 'MODULE_PATHNAME', 'mm_release_claims_on_queue_node'
LANGUAGE C VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
SET citus.enable_manual_changes_to_shards = on;
COMMENT ON FUNCTION mm.release_claims_on_queue_node(text, text[], bigint[]) IS
'Internal: the claims ended in a queue, written into its shard of mm.pending_releases when it is on this node (true)';
REVOKE ALL ON FUNCTION mm.release_claims_on_queue_node(text, text[], bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.release_claims_on_queue_node(text, text[], bigint[]) TO mm_admin;

-- Claims (player, ticket) pairs of a queue in mm.active_players, one
-- multi-row INSERT ... ON CONFLICT DO NOTHING per node that holds the
-- players' shards, in player order (a stale claim in the way taken over:
-- mm.take_over_stale_claim), then reads the cooldowns of the
-- players it claimed, in one read of their shards (a read without the
-- players would reach every shard): a node that cannot be reached (class
-- 08) fails its own claim only, and its players come back as unreachable.
-- Returns the pairs claimed and the claimed players cooling down in the
-- queue at now.
CREATE FUNCTION mm.claim_players_by_node(queue text, player_ids text[], ticket_ids bigint[], now timestamptz,
										 OUT won_player text[], OUT won_ticket bigint[], OUT cooling text[],
										 OUT unreachable text[])
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- JIT would compile the statements of a few thousand rows (3 times slower)
SET jit = off
AS $$
DECLARE
	node record;
	claim record;
	players text[];
	tickets bigint[];
BEGIN
	won_player := '{}';
	won_ticket := '{}';
	cooling := '{}';
	unreachable := '{}';
	FOR node IN
		SELECT pl.groupid,
			   -- literals (%L), the ids the node's sequence's
			   'INSERT INTO mm.active_players (player_id, ticket_id, queue) VALUES '
			   || string_agg(pg_catalog.format('(%L, %s, %L)', u.p, u.t, claim_players_by_node.queue), ', ' ORDER BY u.p)
			   || ' ON CONFLICT DO NOTHING RETURNING player_id, ticket_id' AS claim_sql,
			   array_agg(u.p) AS players
		  -- each player's shard found once (OFFSET 0: not once per placement)
		  FROM (SELECT v.p, v.t, pg_catalog.get_shard_id_for_distribution_column('mm.active_players', v.p) AS shardid
				  FROM unnest(claim_players_by_node.player_ids, claim_players_by_node.ticket_ids) AS v(p, t)
				OFFSET 0) u
		  JOIN pg_catalog.pg_dist_placement pl ON pl.shardid = u.shardid
		 GROUP BY pl.groupid ORDER BY pl.groupid
	LOOP
		BEGIN
			-- the INSERT alone in its statement: in a WITH, Citus would run it
			-- first into an intermediate result
			players := '{}';
			tickets := '{}';
			FOR claim IN EXECUTE node.claim_sql LOOP
				players := players || claim.player_id;
				tickets := tickets || claim.ticket_id;
			END LOOP;
			-- a player another ticket's claim holds: a stale claim (its ticket
			-- or match ended, the release left to that queue's tick) is taken
			-- over, in player order; conflicts are rare, so one call each
			FOR claim IN
				SELECT u.p AS player_id, u.t AS ticket_id
				  FROM unnest(claim_players_by_node.player_ids, claim_players_by_node.ticket_ids) u(p, t)
				 WHERE u.p = ANY (node.players) AND u.p <> ALL (players) ORDER BY u.p
			LOOP
				IF mm.take_over_stale_claim(claim.player_id, claim.ticket_id, claim_players_by_node.queue) THEN
					players := players || claim.player_id;
					tickets := tickets || claim.ticket_id;
				END IF;
			END LOOP;
			won_player := won_player || players;
			won_ticket := won_ticket || tickets;
		EXCEPTION WHEN connection_exception THEN
			RAISE WARNING 'queue "%": the tickets of players on a node out of reach wait for a later tick',
				claim_players_by_node.queue
				USING ERRCODE = SQLSTATE, DETAIL = SQLERRM;
			unreachable := unreachable || node.players;
		END;
	END LOOP;
	-- after the claim, as mm.create_ticket on one node: one read of the
	-- claimed players' shards (a literal, so that Citus reads theirs only)
	IF cardinality(won_player) > 0 THEN
		EXECUTE pg_catalog.format('SELECT coalesce(array_agg(p.player_id), ''{}'') FROM mm.player_penalties p'
								  ' WHERE p.player_id = ANY (%L::text[]) AND p.queue = %L AND p.cooldown_until > %L',
								  won_player, claim_players_by_node.queue, claim_players_by_node.now)
		   INTO cooling;
	END IF;
END
$$;
COMMENT ON FUNCTION mm.claim_players_by_node(text, text[], bigint[], timestamptz) IS
'Internal: on Citus, claims (player, ticket) pairs of a queue and reads their cooldowns, one statement of each per node; returns the pairs claimed, the players cooling down and those on nodes out of reach';
REVOKE ALL ON FUNCTION mm.claim_players_by_node(text, text[], bigint[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.claim_players_by_node(text, text[], bigint[], timestamptz) TO mm_admin;

-- Ends pending tickets the tick could not keep (mm.claim_pending_players):
-- cancelled with the reason, their players' claims released.
CREATE FUNCTION mm.cancel_pending_tickets(queue text, ticket_ids bigint[], reason text, now timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF cardinality(cancel_pending_tickets.ticket_ids) = 0 THEN
		RETURN;
	END IF;
	PERFORM mm.end_tickets(ARRAY[cancel_pending_tickets.queue], cancel_pending_tickets.ticket_ids, 'cancelled',
						   cancel_pending_tickets.now);
	UPDATE mm.tickets_ended t SET cancel_reason = cancel_pending_tickets.reason
	 WHERE t.queue = cancel_pending_tickets.queue AND t.id = ANY (cancel_pending_tickets.ticket_ids);
END
$$;
COMMENT ON FUNCTION mm.cancel_pending_tickets(text, bigint[], text, timestamptz) IS
'Internal: cancels tickets the tick could not claim, with the reason (player_busy, cooling_down)';
REVOKE ALL ON FUNCTION mm.cancel_pending_tickets(text, bigint[], text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cancel_pending_tickets(text, bigint[], text, timestamptz) TO mm_admin;

-- The queue's tick on Citus, before it reads the queue: claims the players
-- of the queue's pending tickets, which the tick read and locked on the
-- queue's shards (pairs of player and ticket, in player order), in
-- mm.active_players, one multi-row INSERT ... ON CONFLICT DO NOTHING per
-- node, then reads the cooldowns of the players it claimed (after the
-- claim, as mm.create_ticket on one node).  A ticket one of whose players
-- another ticket (of another queue, on any node) or a live match holds ends
-- cancelled with cancel_reason player_busy; one with a player cooling down
-- in the queue, with cooling_down; their players' claims are released and
-- the tick announces them (ticket_cancelled).  Returns those, and the
-- tickets settled, whose pending rows the tick deletes; a ticket with a
-- player on a node out of reach waits for a later tick.
CREATE FUNCTION mm.claim_pending_players(queue text, pairs_player text[], pairs_ticket bigint[], now timestamptz,
										 OUT player_busy bigint[], OUT cooling_down bigint[], OUT settled bigint[])
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	claimed record;
	waiting bigint[] := '{}';
BEGIN
	SELECT * INTO claimed
	  FROM mm.claim_players_by_node(claim_pending_players.queue, claim_pending_players.pairs_player,
									claim_pending_players.pairs_ticket, claim_pending_players.now);
	IF cardinality(claimed.unreachable) > 0 THEN
		-- its claims taken here given back
		waiting := ARRAY(SELECT DISTINCT u.t
						   FROM unnest(claim_pending_players.pairs_player, claim_pending_players.pairs_ticket) AS u(p, t)
						   JOIN unnest(claimed.unreachable) AS x(p) ON x.p = u.p);
		PERFORM mm.release_claims(array_agg(w.p), array_agg(w.t))
		   FROM unnest(claimed.won_player, claimed.won_ticket) AS w(p, t)
		   JOIN unnest(waiting) AS x(t) ON x.t = w.t;
	END IF;
	player_busy := ARRAY(SELECT DISTINCT u.t
						   FROM unnest(claim_pending_players.pairs_player, claim_pending_players.pairs_ticket) AS u(p, t)
						   LEFT JOIN unnest(claimed.won_player, claimed.won_ticket) AS w(p, t)
								ON w.p = u.p AND w.t = u.t
						  WHERE w.p IS NULL AND u.t <> ALL (waiting)
						  ORDER BY 1);
	cooling_down := ARRAY(SELECT DISTINCT w.t FROM unnest(claimed.won_player, claimed.won_ticket) AS w(p, t)
							JOIN unnest(claimed.cooling) AS c(p) ON c.p = w.p
						   WHERE w.t <> ALL (player_busy) AND w.t <> ALL (waiting)
						   ORDER BY 1);
	settled := ARRAY(SELECT DISTINCT u.t FROM unnest(claim_pending_players.pairs_ticket) AS u(t)
					  WHERE u.t <> ALL (waiting));
	PERFORM mm.cancel_pending_tickets(claim_pending_players.queue, player_busy, 'player_busy', claim_pending_players.now);
	PERFORM mm.cancel_pending_tickets(claim_pending_players.queue, cooling_down, 'cooling_down',
									  claim_pending_players.now);
END
$$;
COMMENT ON FUNCTION mm.claim_pending_players(text, text[], bigint[], timestamptz) IS
'Internal: on Citus, the tick claims the players of its queue''s pending tickets; returns the tickets it cancelled (player_busy, cooling_down) and those settled';
REVOKE ALL ON FUNCTION mm.claim_pending_players(text, text[], bigint[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.claim_pending_players(text, text[], bigint[], timestamptz) TO mm_admin;

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
	-- the claims of the players of its live matches, and those its ended
	-- tickets and matches left to its tick
	PERFORM mm.release_claims(player_ids, ticket_ids);
	PERFORM mm.apply_pending_releases(delete_queue_rows.queue);
	DELETE FROM mm.match_players mp WHERE mp.queue = delete_queue_rows.queue;
	DELETE FROM mm.matches m WHERE m.queue = delete_queue_rows.queue;
	DELETE FROM mm.rule_evaluations e WHERE e.queue = delete_queue_rows.queue;
	DELETE FROM mm.autofill_protection a WHERE a.queue = delete_queue_rows.queue;
	DELETE FROM mm.player_penalties p WHERE p.queue = delete_queue_rows.queue;
	DELETE FROM mm.penalty_history h WHERE h.queue = delete_queue_rows.queue;
	DELETE FROM mm.ticket_queues l WHERE l.queue = delete_queue_rows.queue;
	DELETE FROM mm.pending_claims c WHERE c.queue = delete_queue_rows.queue;
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
