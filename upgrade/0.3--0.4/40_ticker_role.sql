
-- ===================================================================
-- Section: mm_ticker, the role that ticks (docs/security.md)
-- ===================================================================
--
-- mm_ticker may tick and nothing else: mm.tick (one queue or all of them),
-- the per-minute loop pg_cron runs (mm.tick_loop), and mm.last_tick_stats
-- for what its own session's last tick did.  It has no privilege on any
-- table: mm.tick runs as the extension's owner (SECURITY DEFINER), as
-- mm.create_ticket and the lifecycle functions do, and a queue's match
-- function runs as the role that named it, never as the ticker or the owner
-- (10_match_function_role.sql).  mm_director and mm_admin are members.
-- Created like the other group roles: roles belong to the cluster, so an
-- install in a second database, or a reinstall, finds it and keeps it.
DO $roles$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) 'mm_ticker') THEN
		CREATE ROLE mm_ticker NOLOGIN;
	END IF;
END
$roles$;
GRANT mm_ticker TO mm_director, mm_admin;
GRANT USAGE ON SCHEMA mm TO mm_ticker;

-- The tick writes what its callers may not (tickets, matches, rule
-- statistics) and signs its events (the key is read by the extension itself,
-- whoever calls).  What it runs is fixed by the queue's config, which only
-- mm_admin writes; the caller chooses the queue and the time (`now`).
ALTER FUNCTION mm.tick(text, timestamptz) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
GRANT EXECUTE ON FUNCTION mm.tick(text, timestamptz), mm.last_tick_stats() TO mm_ticker;

-- The loop's interval for a queue on the per-minute loop, NULL when the queue
-- is no longer on one (unscheduled, re-scheduled to another mode, dropped).
-- SECURITY DEFINER: the loop runs as the job's role, which needs no
-- privilege on mm.schedule_jobs.
CREATE FUNCTION mm.tick_loop_every(queue text)
RETURNS interval
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT s.every FROM mm.schedule_jobs s
	 WHERE s.job_name = pg_catalog.concat('mm_tick:', tick_loop_every.queue) AND s.mode = 'loop'
$$;
COMMENT ON FUNCTION mm.tick_loop_every(text) IS
'How often the per-minute loop of a queue ticks; NULL when the queue is not on the loop (internal to mm.tick_loop)';
REVOKE ALL ON FUNCTION mm.tick_loop_every(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tick_loop_every(text) TO mm_ticker;

-- The body of a queue's per-minute job for sub-minute intervals, as in 0.3
-- but reading its interval through mm.tick_loop_every, so that the job's
-- role needs nothing but mm_ticker.  A procedure (not a function) so that
-- each tick commits on its own; it therefore has no SET clause, and
-- qualifies every operator instead.
CREATE OR REPLACE PROCEDURE mm.tick_loop(queue text)
LANGUAGE plpgsql
AS $$
DECLARE
	lock_key constant bigint := pg_catalog.hashtextextended(pg_catalog.concat('mm_tick_loop:', queue), 0);
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
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT pg_catalog.pg_try_advisory_lock(lock_key) THEN
		RETURN;					-- another loop of this queue is running
	END IF;

	LOOP
		-- re-read on every round: mm.schedule / mm.unschedule take effect at once
		tick_every := mm.tick_loop_every(queue);
		EXIT WHEN tick_every IS NULL;

		BEGIN
			PERFORM mm.tick(queue);
			failures := 0;
		EXCEPTION WHEN OTHERS THEN
			-- one failed tick (a deadlock, a serialization failure) must not stop
			-- the queue for the rest of the minute; five in a row fail the job
			GET STACKED DIAGNOSTICS last_state = RETURNED_SQLSTATE, last_message = MESSAGE_TEXT;
			failures := failures OPERATOR(pg_catalog.+) 1;
			RAISE WARNING 'tick of queue "%" failed: %', queue, last_message;
		END;
		COMMIT;

		IF failures OPERATOR(pg_catalog.>=) 5 THEN
			PERFORM pg_catalog.pg_advisory_unlock(lock_key);
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

	PERFORM pg_catalog.pg_advisory_unlock(lock_key);
END;
$$;
COMMENT ON PROCEDURE mm.tick_loop(text) IS
'Body of a queue''s per-minute pg_cron job: ticks every scheduled interval until just before the next minute (through it when a tick ran past the boundary); needs mm_ticker';
GRANT EXECUTE ON PROCEDURE mm.tick_loop(text) TO mm_ticker;
