
-- ===================================================================
-- Section: the tick loop's lock only the extension's roles can take
-- (docs/scheduling.md, docs/security.md)
-- ===================================================================
--
-- The loop held a session advisory lock with a published key, which any
-- role could take first to stop the queue's loop (the run then returned and
-- pg_cron recorded a success).  The loop now takes a lock SQL cannot form
-- (src/queue_locks.h), through mm.tick_loop_lock, says when another loop has
-- it, and fails its run when another session held the queue's tick each
-- time.  The tick's own lock changed likewise (in the library).

-- The tick loop's exclusion: a session lock per queue that SQL's advisory
-- lock functions cannot take (src/queue_locks.h), so that only the roles that
-- may run the loop can hold it.  False when another session holds it.
CREATE FUNCTION mm.tick_loop_lock(queue text)
RETURNS boolean
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'mm_tick_loop_lock';
COMMENT ON FUNCTION mm.tick_loop_lock(text) IS
'Takes the session lock of the queue''s tick loop without waiting; false when another session holds it (internal to mm.tick_loop)';
REVOKE ALL ON FUNCTION mm.tick_loop_lock(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tick_loop_lock(text) TO mm_ticker;

CREATE FUNCTION mm.tick_loop_unlock(queue text)
RETURNS boolean
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'mm_tick_loop_unlock';
COMMENT ON FUNCTION mm.tick_loop_unlock(text) IS
'Releases the session lock of the queue''s tick loop (internal to mm.tick_loop)';
REVOKE ALL ON FUNCTION mm.tick_loop_unlock(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tick_loop_unlock(text) TO mm_ticker;

-- The body of a queue's per-minute job, as in 40_ticker_role.sql but with
-- the loop lock above and a word when it cannot tick.
CREATE OR REPLACE PROCEDURE mm.tick_loop(queue text)
LANGUAGE plpgsql
AS $$
DECLARE
	started constant timestamptz := pg_catalog.clock_timestamp();
	-- the run belongs to the minute it starts in (or the next one when pg_cron
	-- starts it a moment early) and ends before that minute's successor starts
	deadline timestamptz := pg_catalog.date_trunc('minute', started OPERATOR(pg_catalog.+) '2 seconds'::interval)
							OPERATOR(pg_catalog.+) '1 minute'::interval;
	next_tick timestamptz := started;
	tick_every interval;
	failures integer := 0;
	last_state text;
	last_message text;
	held_off boolean;
	held_off_in_a_row integer := 0;
	ticks_held_off integer := 0;
	ticks_run integer := 0;
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT mm.tick_loop_lock(queue) THEN
		RAISE WARNING 'another tick loop of queue "%" is running (process %): this run leaves the queue to it',
			queue, mm.tick_loop_holder(queue, 'loop');
		RETURN;
	END IF;

	LOOP
		-- re-read on every round: mm.schedule / mm.unschedule take effect at once
		tick_every := mm.tick_loop_every(queue);
		EXIT WHEN tick_every IS NULL;

		BEGIN
			PERFORM mm.tick(queue);
			failures := 0;
			SELECT s.locked_out INTO held_off FROM mm.last_tick_stats() s
			 WHERE s.queue OPERATOR(pg_catalog.=) tick_loop.queue;
			IF coalesce(held_off, false) THEN
				ticks_held_off := ticks_held_off OPERATOR(pg_catalog.+) 1;
				held_off_in_a_row := held_off_in_a_row OPERATOR(pg_catalog.+) 1;
				IF held_off_in_a_row OPERATOR(pg_catalog.=) 5 THEN
					RAISE WARNING 'queue "%" was not ticked 5 times in a row: process % holds its tick', queue,
						mm.tick_loop_holder(queue, 'tick')
						USING DETAIL = 'A transaction that called mm.tick holds the queue until it ends.';
				END IF;
			ELSE
				ticks_run := ticks_run OPERATOR(pg_catalog.+) 1;
				held_off_in_a_row := 0;
			END IF;
		EXCEPTION WHEN OTHERS THEN
			-- one failed tick (a deadlock, a serialization failure) must not stop
			-- the queue for the rest of the minute; five in a row fail the job
			GET STACKED DIAGNOSTICS last_state = RETURNED_SQLSTATE, last_message = MESSAGE_TEXT;
			failures := failures OPERATOR(pg_catalog.+) 1;
			RAISE WARNING 'tick of queue "%" failed: %', queue, last_message;
		END;
		COMMIT;

		IF failures OPERATOR(pg_catalog.>=) 5 THEN
			PERFORM mm.tick_loop_unlock(queue);
			RAISE EXCEPTION 'tick of queue "%" failed % times in a row: %', queue, failures, last_message
				USING ERRCODE = last_state;
		END IF;

		next_tick := next_tick OPERATOR(pg_catalog.+) tick_every;
		IF next_tick OPERATOR(pg_catalog.<) pg_catalog.clock_timestamp() THEN
			next_tick := pg_catalog.clock_timestamp();	-- a tick ran long: skip the missed ones
		END IF;
		IF next_tick OPERATOR(pg_catalog.>=) deadline THEN
			-- on time: the next minute's run takes over
			EXIT WHEN pg_catalog.clock_timestamp() OPERATOR(pg_catalog.<) deadline;
			-- late: that run has returned (or will, finding the lock taken)
			deadline := pg_catalog.date_trunc('minute', pg_catalog.clock_timestamp()
											  OPERATOR(pg_catalog.+) '2 seconds'::interval)
						OPERATOR(pg_catalog.+) '1 minute'::interval;
		END IF;
		PERFORM pg_catalog.pg_sleep(pg_catalog.date_part('epoch',
								next_tick OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp()));
		-- a fresh transaction, so the next tick's now() is the time it runs
		COMMIT;
	END LOOP;

	PERFORM mm.tick_loop_unlock(queue);
	-- a run that ticked nothing because another session held the queue fails,
	-- so that pg_cron's run details and mm.schedules show it
	IF ticks_held_off OPERATOR(pg_catalog.>) 0 AND ticks_run OPERATOR(pg_catalog.=) 0 THEN
		RAISE EXCEPTION 'queue "%" was not ticked in this run: another session held its tick each time (% tries)',
			queue, ticks_held_off
			USING ERRCODE = 'lock_not_available',
				  HINT = 'See pg_locks (locktype advisory, objsubid 28020) for the process, and end its transaction.';
	END IF;
END;
$$;
COMMENT ON PROCEDURE mm.tick_loop(text) IS
'Body of a queue''s per-minute pg_cron job: ticks every scheduled interval until just before the next minute (through it when a tick ran past the boundary); needs mm_ticker';

-- The process that holds a queue's loop lock (kind 'loop') or its tick (kind
-- 'tick') right now, or NULL: the locks of src/queue_locks.h, as pg_locks
-- shows them (the keys as the library computes them).
CREATE FUNCTION mm.tick_loop_holder(queue text, kind text)
RETURNS integer
LANGUAGE plpgsql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF kind NOT IN ('loop', 'tick') THEN
		RAISE EXCEPTION 'kind must be ''loop'' or ''tick'', not "%"', kind
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN (SELECT min(l.pid) FROM pg_locks l
			 WHERE l.locktype = 'advisory' AND l.granted
			   AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
			   AND l.objsubid = CASE kind WHEN 'loop' THEN 28012 ELSE 28020 END
			   AND (l.classid::bigint << 32 | l.objid::bigint)
				   = CASE kind WHEN 'loop' THEN hashtextextended(concat('mm_tick_loop:', queue), 0)
							   ELSE hashtextextended(queue, 30801029203845995) END);
END;
$$;
COMMENT ON FUNCTION mm.tick_loop_holder(text, text) IS
'The process holding the queue''s tick loop (kind loop) or tick (kind tick), or NULL';
REVOKE ALL ON FUNCTION mm.tick_loop_holder(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tick_loop_holder(text, text) TO mm_admin, mm_analyst, mm_ticker;

-- Whether a tick loop of the queue holds its lock right now.
CREATE OR REPLACE FUNCTION mm.tick_loop_running(queue text)
RETURNS boolean
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.tick_loop_holder(queue, 'loop') IS NOT NULL
$$;
COMMENT ON FUNCTION mm.tick_loop_running(text) IS
'True while a tick loop of the queue (mm.tick_loop) is running';
