
-- ===================================================================
-- Section: heartbeats of tickets (heartbeat_timeout_seconds)
-- ===================================================================
--
-- A client that vanished leaves its ticket searching.  With
-- "heartbeat_timeout_seconds" in a queue's config, the client keeps its
-- ticket alive with mm.heartbeat, and each tick of the queue cancels the
-- searching tickets it reads that gave no sign of life for that long (their
-- creation, their return to searching, their last beat): status cancelled,
-- cancel_reason heartbeat_missed, players released, ticket_cancelled with
-- reason heartbeat_missed (src/tick.c, CancelSilentTickets).  A ticket
-- searching in several queues is cancelled by the first of them whose limit
-- it overstays: the tightest applies.  A proposed ticket is not cancelled
-- for silence (its acceptance deadline rules it); back to searching, it
-- starts afresh.

-- The last beat, updated in place on the active partition: the column is
-- in no index, so a beat is a HOT update (no index entry, no new page) when
-- the row's page has room, and the tick's load reads none of it.  A bulk
-- load fills its pages: the active partition keeps a fifth of each new page
-- free for the beats (50,000 tickets beaten twice: every update HOT, the
-- partition no larger; without it, none).  Its existing pages are left as
-- they are, and empty as their tickets end.
ALTER TABLE mm.tickets ADD COLUMN heartbeat_at timestamptz;
ALTER TABLE mm.tickets_active SET (fillfactor = 80);
COMMENT ON COLUMN mm.tickets.heartbeat_at IS
	'The ticket''s last mm.heartbeat (NULL: none yet; its creation counts as the first); kept on a ticket cancelled for a missed heartbeat';
-- Why the tick cancelled a ticket (NULL for the other ends: mm.cancel_ticket,
-- a rejected proposal, mm.drop_queue, an UPDATE).
ALTER TABLE mm.tickets ADD COLUMN cancel_reason text;
COMMENT ON COLUMN mm.tickets.cancel_reason IS
	'Why the tick cancelled the ticket: heartbeat_missed; NULL otherwise';
-- The archive keeps both (after archived_at: the archiving insert names its
-- columns, here for the matches' ready_at of 30_live_match_timeout.sql too).
ALTER TABLE mm.tickets_archive ADD COLUMN heartbeat_at timestamptz;
ALTER TABLE mm.tickets_archive ADD COLUMN cancel_reason text;

-- mm.purge_finished as in 0.3, but both archiving inserts name their columns:
-- 0.3 copied m.* into mm.matches_archive, whose new ready_at comes after
-- archived_at.
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
		INSERT INTO mm.matches_archive (id, queue, status, created_at, updated_at, region, quality,
										rule_steps, connection, properties, acceptance_deadline,
										cancel_reason, archived_at, ready_at)
		SELECT m.id, m.queue, m.status, m.created_at, m.updated_at, m.region, m.quality,
			   m.rule_steps, m.connection, m.properties, m.acceptance_deadline,
			   m.cancel_reason, now, m.ready_at
		  FROM mm.matches m WHERE m.id = ANY (match_ids);
		INSERT INTO mm.match_players_archive
			SELECT mp.*, now FROM mm.match_players mp WHERE mp.match_id = ANY (match_ids);
		INSERT INTO mm.match_results_archive
			SELECT r.*, now FROM mm.match_results r WHERE r.match_id = ANY (match_ids);
		INSERT INTO mm.tickets_archive (id, queue, players, status, created_at, updated_at, matched_at,
										match_id, team, archived_at, queues, heartbeat_at, cancel_reason)
		SELECT t.id, t.queue, t.players, t.status, t.created_at, t.updated_at, t.matched_at,
			   t.match_id, t.team, now, t.queues, t.heartbeat_at, t.cancel_reason
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

-- A client's sign of life for its ticket: one update of the active ticket by
-- its primary key, no event.  True while the ticket is searching or proposed
-- (a proposed ticket's beat is kept for when it searches again); false once
-- it ended (matched, cancelled, timed out): the client stops beating and
-- reads the outcome.  A beat waits for a tick that holds the ticket, and
-- then sees its outcome.  Beats never move heartbeat_at back.
CREATE FUNCTION mm.heartbeat(ticket_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ticket_status text;
BEGIN
	IF heartbeat.ticket_id IS NULL THEN
		RAISE EXCEPTION 'ticket_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF heartbeat.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(heartbeat.now) THEN
		RAISE EXCEPTION 'now must be a finite time, not %', heartbeat.now
			USING ERRCODE = 'datetime_field_overflow';
	END IF;
	-- twice at most: a ticket requeued (moved back to the active partition)
	-- between the update and the look at its status is beaten there
	FOR attempt IN 1 .. 2 LOOP
		UPDATE mm.tickets_active t SET heartbeat_at = GREATEST(t.heartbeat_at, heartbeat.now)
		 WHERE t.id = heartbeat.ticket_id;
		IF FOUND THEN
			RETURN true;
		END IF;
		SELECT t.status INTO ticket_status FROM mm.tickets t WHERE t.id = heartbeat.ticket_id;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ticket % does not exist', heartbeat.ticket_id
				USING ERRCODE = 'undefined_object';
		END IF;
		IF ticket_status NOT IN ('searching', 'proposed') THEN
			RETURN false;
		END IF;
	END LOOP;
	-- active at the last look after moving in and out of the active
	-- partition twice: the next beat lands
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.heartbeat(bigint, timestamptz) IS
'Keeps a searching or proposed ticket alive in a queue with heartbeat_timeout_seconds (true); false once the ticket ended';
REVOKE ALL ON FUNCTION mm.heartbeat(bigint, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.heartbeat(bigint, timestamptz) TO mm_frontend;
