-- Scheduling and retention (src/schedule_starter.c; docs/scheduling.md):
-- matchmaking's pg_cron jobs (mm.schedule_jobs), the tick loop pg_cron runs
-- for sub-minute intervals, the checks and repairs that make a scheduled job
-- run (mm.schedule warns about what would stop it), and retention: purging
-- and archiving finished tickets and matches.  Everything works without
-- pg_cron but the scheduling itself.
--
-- Privileges: scheduling and housekeeping are mm_admin's; the jobs' state is
-- mm_analyst's to read too.  The role that schedules also needs USAGE on
-- schema cron, pg_cron's grant, not ours.

-- matchmaking's pg_cron jobs: one row per queue tick job, and one for the
-- retention job.  The per-minute tick loop reads its interval here on every
-- round, so re-scheduling takes effect at once and unscheduling stops it.
CREATE TABLE mm.schedule_jobs (
	job_name text PRIMARY KEY,
	kind text NOT NULL
		CONSTRAINT schedule_jobs_kind CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['tick', 'retention'])),
	-- no foreign key (Citus rule 1): mm.queues_after_delete drops the jobs
	queue text UNIQUE,
	every interval NOT NULL,
	-- loop: a per-minute job whose procedure ticks every `every` (pg_cron < 1.5);
	-- native: pg_cron's own 'N seconds' schedule; cron: a cron expression
	mode text NOT NULL
		CONSTRAINT schedule_jobs_mode CHECK (mode OPERATOR(pg_catalog.=) ANY (ARRAY['loop', 'native', 'cron'])),
	cron_schedule text NOT NULL,
	cron_job_id bigint,
	-- retention only
	keep interval,
	archive boolean,
	batch_size integer,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	-- a tick job's role (the role that scheduled it, as pg_cron runs it): the loop keeper
	-- (src/schedule_starter.c) restarts a queue's loop as this role
	job_role name,
	CONSTRAINT schedule_jobs_queue_for_ticks CHECK (
		(kind OPERATOR(pg_catalog.=) 'tick') OPERATOR(pg_catalog.=) (queue IS NOT NULL)),
	CONSTRAINT schedule_jobs_retention_settings CHECK (
		kind OPERATOR(pg_catalog.=) 'tick'
		OR (keep IS NOT NULL AND archive IS NOT NULL AND batch_size IS NOT NULL)),
	-- what the tick loop and the retention job read is checked by the table
	-- too (mm_admin may write it, and pg_dump restores it): a loop that never
	-- sleeps, a keep no run can subtract
	CONSTRAINT schedule_jobs_every CHECK (every OPERATOR(pg_catalog.>) '0'::interval),
	CONSTRAINT schedule_jobs_keep CHECK (keep IS NULL OR (keep OPERATOR(pg_catalog.>) '0'::interval
														  AND keep OPERATOR(pg_catalog.<=) '1000 years'::interval)),
	CONSTRAINT schedule_jobs_batch_size CHECK (batch_size IS NULL OR batch_size OPERATOR(pg_catalog.>) 0)
);
COMMENT ON TABLE mm.schedule_jobs IS 'The pg_cron jobs matchmaking created (queue ticks, retention)';
GRANT SELECT ON TABLE mm.schedule_jobs TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.schedule_jobs TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.schedule_jobs', '');

-- Archive tables for mm.purge_finished(..., archive => true): the columns of
-- the live tables (their types and NOT NULL, no defaults or checks), with
-- archived_at.  A column the live table gained after its archive was made
-- comes after archived_at, so the archiving inserts name their columns.
CREATE TABLE mm.matches_archive (
	id bigint NOT NULL,
	queue text NOT NULL,
	status text NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	region text,
	quality float8 NOT NULL,
	rule_steps jsonb NOT NULL,
	connection text,
	properties jsonb NOT NULL,
	acceptance_deadline timestamptz,
	cancel_reason text,
	archived_at timestamptz NOT NULL,
	ready_at timestamptz,
	-- a key for logical replication: Citus moves shards with it
	-- (citus_rebalance_start), which needs a key on every table moved
	CONSTRAINT matches_archive_pkey PRIMARY KEY (id, queue)
);
COMMENT ON TABLE mm.matches_archive IS 'Finished matches moved out by mm.purge_finished(archive => true)';
GRANT SELECT ON TABLE mm.matches_archive TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.matches_archive TO mm_admin;
CREATE INDEX matches_archive_queue_created ON mm.matches_archive (queue, created_at);
SELECT pg_catalog.pg_extension_config_dump('mm.matches_archive', '');

CREATE TABLE mm.match_players_archive (
	match_id bigint NOT NULL,
	queue text NOT NULL,
	player_id text NOT NULL,
	ticket_id bigint NOT NULL,
	team text,
	accepted boolean,
	left_at timestamptz,
	archived_at timestamptz NOT NULL,
	role text,
	autofilled boolean NOT NULL,
	low_priority boolean NOT NULL DEFAULT false,
	CONSTRAINT match_players_archive_pkey PRIMARY KEY (match_id, player_id, queue)
);
COMMENT ON TABLE mm.match_players_archive IS 'Players of archived matches';
GRANT SELECT ON TABLE mm.match_players_archive TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.match_players_archive TO mm_admin;
CREATE INDEX match_players_archive_match ON mm.match_players_archive (match_id);
SELECT pg_catalog.pg_extension_config_dump('mm.match_players_archive', '');

CREATE TABLE mm.match_results_archive (
	match_id bigint NOT NULL,
	queue text NOT NULL,
	winner_team text,
	ranks jsonb,
	predicted_favourite text,
	favourite_win_probability float8,
	duration interval,
	reported_at timestamptz NOT NULL,
	archived_at timestamptz NOT NULL,
	CONSTRAINT match_results_archive_pkey PRIMARY KEY (match_id, queue)
);
COMMENT ON TABLE mm.match_results_archive IS 'Results of archived matches';
GRANT SELECT ON TABLE mm.match_results_archive TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.match_results_archive TO mm_admin;
CREATE INDEX match_results_archive_match ON mm.match_results_archive (match_id);
SELECT pg_catalog.pg_extension_config_dump('mm.match_results_archive', '');

CREATE TABLE mm.tickets_archive (
	id bigint NOT NULL,
	queue text NOT NULL,
	players jsonb NOT NULL,
	status text NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz,
	matched_at timestamptz,
	match_id bigint,
	team text,
	archived_at timestamptz NOT NULL,
	queues text[],
	heartbeat_at timestamptz,
	cancel_reason text,
	CONSTRAINT tickets_archive_pkey PRIMARY KEY (id, queue)
);
COMMENT ON TABLE mm.tickets_archive IS 'Finished tickets moved out by mm.purge_finished(archive => true)';
GRANT SELECT ON TABLE mm.tickets_archive TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.tickets_archive TO mm_admin;
CREATE INDEX tickets_archive_queue_created ON mm.tickets_archive (queue, created_at);
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_archive', '');

-- How an interval becomes a pg_cron schedule.  Pure, so the rules can be
-- tested without pg_cron: sub-minute intervals use pg_cron's native
-- 'N seconds' schedules from 1.5 on (whole seconds only), otherwise a
-- per-minute job running mm.tick_loop; longer intervals become a cron
-- expression, which only exists for steps that divide an hour or a day.
CREATE FUNCTION mm.schedule_plan(every interval, pg_cron_version text DEFAULT '1.4',
								 OUT mode text, OUT cron_schedule text)
RETURNS record
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	seconds numeric;
	version_parts text[];
	native_seconds boolean;
BEGIN
	IF every IS NULL THEN
		RAISE EXCEPTION 'every must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF pg_cron_version IS NULL THEN
		RAISE EXCEPTION 'pg_cron_version must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF extract(month FROM every) <> 0 OR extract(year FROM every) <> 0 THEN
		RAISE EXCEPTION 'every must not contain months or years: %', every
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A month has no fixed length, so it cannot be a tick interval.';
	END IF;
	seconds := extract(epoch FROM every);
	IF seconds <= 0 THEN
		RAISE EXCEPTION 'every must be positive: %', every USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF seconds < 0.1 THEN
		RAISE EXCEPTION 'every must be at least 100 milliseconds: %', every
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'Each tick is its own transaction; more than ten a second only adds overhead.';
	END IF;
	IF seconds > 86400 THEN
		RAISE EXCEPTION 'every must be at most 1 day: %', every USING ERRCODE = 'invalid_parameter_value';
	END IF;

	version_parts := regexp_match(pg_cron_version, '^(\d{1,6})\.(\d{1,6})');
	IF version_parts IS NULL THEN
		RAISE EXCEPTION 'invalid pg_cron version: "%"', pg_cron_version
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A version looks like 1.4 or 1.6-1.';
	END IF;
	native_seconds := (version_parts[1]::integer, version_parts[2]::integer) >= (1, 5);

	IF seconds < 60 THEN
		IF native_seconds AND seconds = trunc(seconds) THEN
			mode := 'native';
			cron_schedule := format('%s seconds', seconds::integer);
		ELSE
			mode := 'loop';
			cron_schedule := '* * * * *';
		END IF;
	ELSIF seconds % 60 = 0 AND seconds < 3600 AND 60 % (seconds / 60) = 0 THEN
		mode := 'cron';
		cron_schedule := CASE WHEN seconds = 60 THEN '* * * * *'
							  ELSE format('*/%s * * * *', (seconds / 60)::integer) END;
	ELSIF seconds % 3600 = 0 AND 24 % (seconds / 3600) = 0 THEN
		mode := 'cron';
		cron_schedule := CASE WHEN seconds = 3600 THEN '0 * * * *'
							  WHEN seconds = 86400 THEN '0 0 * * *'
							  ELSE format('0 */%s * * *', (seconds / 3600)::integer) END;
	ELSE
		RAISE EXCEPTION 'every cannot be expressed as a cron schedule: %', every
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Use an interval under one minute, a whole number of minutes that divides an hour '
						 '(1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30), a whole number of hours that divides a day '
						 '(1, 2, 3, 4, 6, 8, 12), or 1 day.';
	END IF;
END;
$$;
COMMENT ON FUNCTION mm.schedule_plan(interval, text) IS
'How mm.schedule runs a tick every `every` with a given pg_cron version: mode loop, native or cron, and the pg_cron schedule';
REVOKE ALL ON FUNCTION mm.schedule_plan(interval, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule_plan(interval, text) TO mm_admin;

-- pg_cron's version and schema in this database; fails with a hint on how to
-- enable it when it is missing.  The only place that decides "is pg_cron here".
-- The schema is that of pg_cron's table "job" (pg_cron creates its own schema,
-- "cron", whatever the extension's recorded namespace says).  pg_cron serves
-- one database, cron.database_name: when it already runs in another one, the
-- hint says so rather than suggest moving it here (which would stop it there).
CREATE FUNCTION mm.require_pg_cron(OUT version text, OUT schema name)
RETURNS record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron_database text;
	readable boolean := true;
BEGIN
	SELECT e.extversion, n.nspname INTO version, schema
	  FROM pg_extension e
	  JOIN pg_depend d ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
					  AND d.classid = 'pg_class'::regclass AND d.deptype = 'e'
	  JOIN pg_class c ON c.oid = d.objid AND c.relname = 'job' AND c.relkind = 'r'
	  JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE e.extname = 'pg_cron';
	IF FOUND THEN
		RETURN;
	END IF;
	-- set only while pg_cron is loaded (shared_preload_libraries); superusers
	-- and pg_read_all_settings may read it
	BEGIN
		cron_database := current_setting('cron.database_name', true);
	EXCEPTION WHEN insufficient_privilege THEN
		readable := false;
	END;
	IF NOT readable THEN
		RAISE EXCEPTION 'pg_cron is not installed in database "%"', current_database()
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'matchmaking schedules its ticks and housekeeping as pg_cron jobs. pg_cron runs in one '
						   'database only, named by cron.database_name, which this role may not read.',
				  HINT = 'Ask a superuser which database cron.database_name names: create matchmaking there, or '
						 'schedule this database''s ticks from there with cron.schedule_in_database '
						 '(docs/scheduling.md, "pg_cron in another database").';
	ELSIF cron_database IS NOT NULL AND cron_database <> current_database() THEN
		RAISE EXCEPTION 'pg_cron is not installed in database "%"', current_database()
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('matchmaking schedules its ticks and housekeeping as pg_cron jobs. pg_cron runs in '
								  'database %I (cron.database_name), and in that database only.', cron_database),
				  HINT = format('Leave cron.database_name as it is (changing it would stop pg_cron in database %I). '
								'Use matchmaking in that database, or have a superuser there schedule this '
								'database''s ticks with cron.schedule_in_database(..., database => %L) '
								'(docs/scheduling.md, "pg_cron in another database").', cron_database,
								current_database());
	ELSIF cron_database IS NOT NULL THEN
		RAISE EXCEPTION 'pg_cron is not installed in database "%"', current_database()
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'matchmaking schedules its ticks and housekeeping as pg_cron jobs. pg_cron runs in '
						   'this database (cron.database_name).',
				  HINT = 'Run CREATE EXTENSION pg_cron in this database.';
	ELSE
		RAISE EXCEPTION 'pg_cron is not installed in database "%"', current_database()
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'matchmaking schedules its ticks and housekeeping as pg_cron jobs. pg_cron is not '
						   'loaded on this server.',
				  HINT = format('In postgresql.conf set shared_preload_libraries = ''pg_cron'' and '
								'cron.database_name = %L, restart the server, then run CREATE EXTENSION '
								'pg_cron in this database.', current_database());
	END IF;
END;
$$;
COMMENT ON FUNCTION mm.require_pg_cron() IS
'pg_cron''s version and schema in this database, or an error saying how to enable pg_cron';
REVOKE ALL ON FUNCTION mm.require_pg_cron() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.require_pg_cron() TO mm_admin;

-- Creates or replaces one of matchmaking's pg_cron jobs so that it runs with
-- the current settings.  cron.schedule(name, ...) on an existing name
-- updates only the schedule and the command: the connection it was created
-- with (cron.host, port), its database, role and active flag stay.  A job
-- whose settings differ from those a new job would get, or cannot be
-- checked, is removed and created afresh (a new job id); one that matches
-- keeps its id.
CREATE FUNCTION mm.cron_job_upsert(job_name text, cron_schedule text, command text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
	conn record;
	job record;
	stale text;
	job_id bigint;
BEGIN
	SELECT * INTO cron FROM mm.require_pg_cron();
	SELECT * INTO conn FROM mm.cron_connection();
	-- the jobs of that name this role may see (pg_cron's row security: its own)
	FOR job IN EXECUTE format('SELECT jobid, nodename, nodeport, database, username, active
								 FROM %I.job WHERE jobname = $1 ORDER BY jobid', cron.schema)
				 USING job_name
	LOOP
		stale := CASE
			WHEN job.username <> current_user THEN format('it ran as role "%s"', job.username)
			WHEN job.database <> current_database() THEN format('it ran in database "%s"', job.database)
			WHEN NOT job.active THEN 'it was inactive'
			WHEN conn.background_workers THEN NULL
			WHEN conn.host IS NULL THEN NULL	-- cron.host unreadable: checked below
			WHEN job.nodename <> conn.host OR job.nodeport <> conn.port THEN
				format('it connected to host %s port %s, and cron.host and port are now %s and %s',
					   job.nodename, job.nodeport, conn.host, conn.port)
			END;
		IF stale IS NULL AND conn.background_workers IS NULL THEN
			stale := 'its connection settings could not be checked (cron.host is not readable)';
		END IF;
		IF stale IS NOT NULL THEN
			EXECUTE format('SELECT %I.unschedule($1)', cron.schema) USING job.jobid;
			RAISE NOTICE 'pg_cron job % ("%") was re-created: %', job.jobid, job_name, stale;
		END IF;
	END LOOP;
	-- cron.schedule(name, ...) updates the job of that name of this role, or creates it
	EXECUTE format('SELECT %I.schedule($1, $2, $3)', cron.schema)
	   INTO job_id USING job_name, cron_schedule, command;
	RETURN job_id;
END;
$$;
COMMENT ON FUNCTION mm.cron_job_upsert(text, text, text) IS
'Creates the pg_cron job of that name, or brings it in line with the current settings (internal to mm.schedule)';
REVOKE ALL ON FUNCTION mm.cron_job_upsert(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cron_job_upsert(text, text, text) TO mm_admin;

-- Removes a pg_cron job by name if it exists; true when one was removed.
CREATE FUNCTION mm.cron_job_remove(job_name text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
	job_id bigint;
	removed boolean := false;
BEGIN
	SELECT * INTO cron FROM mm.require_pg_cron();
	FOR job_id IN EXECUTE format('SELECT jobid FROM %I.job WHERE jobname = $1 ORDER BY jobid', cron.schema)
				   USING job_name
	LOOP
		EXECUTE format('SELECT %I.unschedule($1)', cron.schema) USING job_id;
		removed := true;
	END LOOP;
	RETURN removed;
END;
$$;
COMMENT ON FUNCTION mm.cron_job_remove(text) IS
'Removes the pg_cron job of that name if there is one (internal to mm.unschedule)';
REVOKE ALL ON FUNCTION mm.cron_job_remove(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cron_job_remove(text) TO mm_admin;

-- Deleting a row of mm.schedule_jobs (mm.unschedule, or dropping its queue)
-- removes its pg_cron job too.
CREATE FUNCTION mm.schedule_jobs_after_delete()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_cron') THEN
		PERFORM mm.cron_job_remove(OLD.job_name);
	END IF;
	RETURN NULL;
END;
$$;
COMMENT ON FUNCTION mm.schedule_jobs_after_delete() IS
'Trigger: removes the pg_cron job of a deleted mm.schedule_jobs row';
REVOKE ALL ON FUNCTION mm.schedule_jobs_after_delete() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule_jobs_after_delete() TO mm_admin;
CREATE TRIGGER schedule_jobs_remove_cron_job AFTER DELETE ON mm.schedule_jobs
	FOR EACH ROW EXECUTE FUNCTION mm.schedule_jobs_after_delete();

-- The loop keeper starts a queue's loop as the row's job_role, so a writer
-- may name only a role it could become itself (SET ROLE): an admin cannot
-- have loops run as a superuser or another login role.  pg_cron runs a job
-- as its owner by the same rule; a superuser's restore keeps the dumped role.
CREATE FUNCTION mm.schedule_jobs_check_role() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NEW.job_role IS NOT NULL
	   AND (TG_OP = 'INSERT' OR NEW.job_role IS DISTINCT FROM OLD.job_role)
	   AND NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = NEW.job_role
						  AND pg_has_role(current_user, r.oid, 'MEMBER')) THEN
		RAISE EXCEPTION 'job_role "%" is not a role that "%" may act as', NEW.job_role, current_user
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'mm.schedule records the role that calls it; loops run as that role.';
	END IF;
	RETURN NEW;
END;
$$;
COMMENT ON FUNCTION mm.schedule_jobs_check_role() IS
'Trigger: a mm.schedule_jobs row names only a job_role its writer is a member of';
REVOKE ALL ON FUNCTION mm.schedule_jobs_check_role() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule_jobs_check_role() TO mm_admin;
CREATE TRIGGER schedule_jobs_check_role BEFORE INSERT OR UPDATE OF job_role ON mm.schedule_jobs
	FOR EACH ROW EXECUTE FUNCTION mm.schedule_jobs_check_role();

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

-- The body of a queue's per-minute job for sub-minute intervals: ticks,
-- commits, sleeps until the next tick, and returns before the next minute's
-- run starts.  The queue's loop lock (mm.tick_loop_lock) keeps a second loop
-- of the same queue from running: it returns at once with a WARNING, even
-- when a tick runs long.  A loop that finds itself past the end of its minute
-- (a tick ran long, or waited for a lock, across the boundary) carries on
-- through the next minute: that minute's run found the lock taken and
-- returned, and nothing else would tick the queue until the minute after.
-- A tick that another session's tick holds off (an open transaction that
-- called mm.tick) forms nothing: five in a row are a WARNING, and a run in
-- which no tick could run fails.  It reads its interval through
-- mm.tick_loop_every, so that the job's role needs nothing but mm_ticker.  A
-- procedure (not a function) so that each tick commits on its own; it
-- therefore has no SET clause, and qualifies every operator and type
-- instead (a type is looked up on the caller's search_path too).
CREATE PROCEDURE mm.tick_loop(queue text)
LANGUAGE plpgsql
AS $$
DECLARE
	started constant pg_catalog.timestamptz := pg_catalog.clock_timestamp();
	-- the run belongs to the minute it starts in (or the next one when pg_cron
	-- starts it a moment early) and ends before that minute's successor starts
	deadline pg_catalog.timestamptz :=
		pg_catalog.date_trunc('minute', started OPERATOR(pg_catalog.+) '2 seconds'::pg_catalog.interval)
		OPERATOR(pg_catalog.+) '1 minute'::pg_catalog.interval;
	next_tick pg_catalog.timestamptz := started;
	tick_every pg_catalog.interval;
	failures pg_catalog.int4 := 0;
	last_state pg_catalog.text;
	last_message pg_catalog.text;
	held_off pg_catalog.bool;
	held_off_in_a_row pg_catalog.int4 := 0;
	ticks_held_off pg_catalog.int4 := 0;
	ticks_run pg_catalog.int4 := 0;
	tick_started pg_catalog.timestamptz;
	citus_session pg_catalog.text;
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT mm.tick_loop_lock(queue) THEN
		RAISE WARNING 'another tick loop of queue "%" is running (process %): this run leaves the queue to it',
			queue, mm.tick_loop_holder(queue, 'loop');
		RETURN;
	END IF;
	-- On Citus the coordinator's job runs this call on the queue's node, in a
	-- session Citus made for the coordinator (application_name
	-- citus_internal...), where Citus keeps no connection to another node
	-- past a transaction: each tick would connect anew to claim its players
	-- on the other nodes.  While it loops it is a client of its own; the
	-- name is given back when it returns (Citus may use the session again).
	IF pg_catalog.starts_with(pg_catalog.current_setting('application_name'), 'citus_internal') THEN
		citus_session := pg_catalog.current_setting('application_name');
		PERFORM pg_catalog.set_config('application_name', 'matchmaking tick loop', false);
	END IF;

	LOOP
		-- re-read on every round: mm.schedule / mm.unschedule take effect at once
		tick_every := mm.tick_loop_every(queue);
		EXIT WHEN tick_every IS NULL;

		tick_started := pg_catalog.clock_timestamp();
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
				-- its duration for the operators' figures (mm.tick_runs)
				PERFORM mm.record_tick(queue, tick_started, pg_catalog.clock_timestamp());
			END IF;
		EXCEPTION WHEN OTHERS THEN
			-- one failed tick (a deadlock, a serialization failure) must not stop
			-- the queue for the rest of the minute; five in a row fail the job
			GET STACKED DIAGNOSTICS last_state = RETURNED_SQLSTATE, last_message = MESSAGE_TEXT;
			failures := failures OPERATOR(pg_catalog.+) 1;
			RAISE WARNING 'tick of queue "%" failed: %', queue, last_message;
			-- the failed tick rolled back; its failure is recorded after it
			PERFORM mm.record_tick(queue, tick_started, pg_catalog.clock_timestamp(), last_state);
		END;
		COMMIT;

		IF failures OPERATOR(pg_catalog.>=) 5 THEN
			PERFORM mm.tick_loop_unlock(queue);
			IF citus_session IS NOT NULL THEN
				PERFORM pg_catalog.set_config('application_name', citus_session, false);
			END IF;
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
											  OPERATOR(pg_catalog.+) '2 seconds'::pg_catalog.interval)
						OPERATOR(pg_catalog.+) '1 minute'::pg_catalog.interval;
		END IF;
		PERFORM pg_catalog.pg_sleep(pg_catalog.date_part('epoch',
								next_tick OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp()));
		-- a fresh transaction, so the next tick's now() is the time it runs
		COMMIT;
	END LOOP;

	PERFORM mm.tick_loop_unlock(queue);
	IF citus_session IS NOT NULL THEN
		PERFORM pg_catalog.set_config('application_name', citus_session, false);
	END IF;
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
REVOKE ALL ON PROCEDURE mm.tick_loop(text) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE mm.tick_loop(text) TO mm_admin, mm_ticker;

-- Makes pg_cron tick a queue every `every`.  Re-scheduling brings the job in
-- line with the current settings (mm.cron_job_upsert).  A queue on the
-- per-minute loop starts ticking at once: a background worker runs the loop
-- until the next minute boundary, when pg_cron takes over.  Warns when
-- pg_cron cannot run the job: settings that cannot work here
-- (mm.cron_problems), or a last run that failed.
CREATE FUNCTION mm.schedule(queue text, every interval DEFAULT '1 second')
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
	plan record;
	tick_job_name text;
	command text;
	tick_job_id bigint;
	previous record;
	problem record;
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- lock the queue row so a concurrent drop waits for us
	PERFORM 1 FROM mm.queues q WHERE q.name = schedule.queue FOR KEY SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue USING ERRCODE = 'undefined_object';
	END IF;
	PERFORM mm.schedule_plan(every);	-- validates every before asking for pg_cron
	SELECT * INTO cron FROM mm.require_pg_cron();
	SELECT * INTO plan FROM mm.schedule_plan(every, cron.version);

	tick_job_name := 'mm_tick:' || queue;
	SELECT s.job_id, s.last_error, s.last_error_at, s.last_run_status INTO previous
	  FROM mm.schedule_status() s WHERE s.job_name = tick_job_name;
	command := CASE plan.mode WHEN 'loop' THEN format('CALL mm.tick_loop(%L)', queue)
							  ELSE format('SELECT mm.tick(%L)', queue) END;
	tick_job_id := mm.cron_job_upsert(tick_job_name, plan.cron_schedule, command);

	-- the time comes in the row (Citus rule 10)
	INSERT INTO mm.schedule_jobs AS s (job_name, kind, queue, every, mode, cron_schedule, cron_job_id,
									   updated_at, job_role)
	VALUES (tick_job_name, 'tick', queue, every, plan.mode, plan.cron_schedule, tick_job_id, now(),
			current_user)
	ON CONFLICT ON CONSTRAINT schedule_jobs_pkey DO UPDATE
	   SET every = EXCLUDED.every, mode = EXCLUDED.mode, cron_schedule = EXCLUDED.cron_schedule,
		   cron_job_id = EXCLUDED.cron_job_id, updated_at = EXCLUDED.updated_at,
		   job_role = EXCLUDED.job_role;

	-- a job of that name of another role (pg_cron shows each role its own
	-- jobs only, so cron.schedule could not replace it) runs the loop too
	FOR problem IN SELECT s.job_id FROM mm.schedule_status() s
					WHERE s.job_name = tick_job_name AND s.job_id <> tick_job_id LOOP
		RAISE WARNING 'queue "%" has another pg_cron job, %, of another role', queue, problem.job_id
			USING DETAIL = 'Both tick the queue; one tick of a queue runs at a time (a second one meanwhile forms nothing).',
				  HINT = format('Have a superuser run SELECT cron.unschedule(%s).', problem.job_id);
	END LOOP;
	-- what would keep pg_cron from running the job
	FOR problem IN SELECT * FROM mm.cron_problems(current_user) LOOP
		RAISE WARNING 'pg_cron cannot run the job of queue "%": %', queue, problem.problem
			USING HINT = problem.hint;
	END LOOP;
	IF previous.last_run_status = 'failed' AND previous.last_error IS NOT NULL THEN
		IF previous.job_id = tick_job_id THEN
			RAISE WARNING 'the last run of the pg_cron job of queue "%" failed: %', queue, previous.last_error
				USING DETAIL = CASE WHEN previous.last_error_at IS NULL
									THEN 'pg_cron recorded no time for the run: it never started.'
									ELSE format('The run started at %s.', previous.last_error_at) END,
					  HINT = 'See mm.schedules and cron.job_run_details.';
		ELSE
			RAISE NOTICE 'the last run of the replaced pg_cron job of queue "%" had failed: %', queue, previous.last_error;
		END IF;
	END IF;

	-- tick now rather than at the next minute boundary (the loop's own lock
	-- keeps it from running beside pg_cron's, or beside a loop already running)
	IF plan.mode = 'loop' AND NOT mm.tick_loop_running(queue)
	   AND EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = current_user AND r.rolcanlogin) THEN
		PERFORM mm.schedule_start_loop(queue);
	END IF;
	RETURN tick_job_id;
END;
$$;
COMMENT ON FUNCTION mm.schedule(text, interval) IS
'Makes pg_cron tick the queue every interval (sub-minute included), ticking at once; re-scheduling repairs the job; returns the pg_cron job id';
REVOKE ALL ON FUNCTION mm.schedule(text, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule(text, interval) TO mm_admin;

-- Stops pg_cron ticking a queue; false when it was not scheduled.
CREATE FUNCTION mm.unschedule(queue text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	tick_job_name text;
	row_removed boolean;
	job_removed boolean;
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.require_pg_cron();
	tick_job_name := 'mm_tick:' || queue;
	-- the row's delete trigger removes the pg_cron job; a job left without a
	-- row (restored from a dump, say) is removed by name
	DELETE FROM mm.schedule_jobs s WHERE s.job_name = tick_job_name;
	row_removed := FOUND;
	job_removed := mm.cron_job_remove(tick_job_name);
	RETURN row_removed OR job_removed;
END;
$$;
COMMENT ON FUNCTION mm.unschedule(text) IS
'Stops pg_cron ticking the queue; returns false when it was not scheduled';
REVOKE ALL ON FUNCTION mm.unschedule(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.unschedule(text) TO mm_admin;

-- One batch of retention: deletes (or archives, then deletes) finished
-- matches (completed or cancelled) last changed before now - older_than, with
-- their players, results and tickets, and finished tickets (cancelled or
-- timed out) likewise.  At most batch_size matches and batch_size other
-- tickets per call, oldest first; call it until it returns zeros
-- (mm.run_retention does, committing between batches).  The archiving
-- inserts name their columns (an archive's column order is not its live
-- table's).
CREATE FUNCTION mm.purge_finished(older_than interval, batch_size integer DEFAULT 10000,
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
	matches_left bigint;
	tickets_left bigint;
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
	-- an interval compares a month as 30 days: '1 mon -29 days' passes the
	-- check above, yet reaches past now in March
	IF cutoff > now THEN
		RAISE EXCEPTION 'older_than must not be negative: %', older_than
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('now - older_than is %s, after now.', cutoff);
	END IF;

	-- the oldest finished matches, queue by queue (the indexes lead with
	-- queue), then the oldest ended tickets the same way: batch_size of each
	-- at most.  Every statement names its queue (Citus rule 3).
	matches_purged := 0;
	tickets_purged := 0;
	matches_left := batch_size;
	tickets_left := batch_size;
	FOR q IN SELECT name FROM mm.queues ORDER BY name LOOP
		EXIT WHEN matches_left <= 0 AND tickets_left <= 0;
		match_ids := ARRAY(
			SELECT m.id FROM mm.matches m
			 WHERE m.queue = q AND m.status IN ('completed', 'cancelled') AND m.updated_at < cutoff
			 ORDER BY m.updated_at, m.id
			 LIMIT greatest(matches_left, 0)
			   FOR UPDATE SKIP LOCKED);
		matches_left := matches_left - cardinality(match_ids);
		ticket_ids := ARRAY(
			SELECT t.id FROM mm.tickets t
			 WHERE t.queue = q AND t.status IN ('cancelled', 'timed_out') AND t.updated_at < cutoff
			 ORDER BY t.updated_at, t.id
			 LIMIT greatest(tickets_left, 0)
			   FOR UPDATE SKIP LOCKED);
		tickets_left := tickets_left - cardinality(ticket_ids);
		CONTINUE WHEN cardinality(match_ids) = 0 AND cardinality(ticket_ids) = 0;
		-- a purged match takes its ended tickets along (a matched ticket
		-- needs its match; it ended under the match's queue), found through
		-- its players; a ticket back in the active partition (searching
		-- again) stays
		ticket_ids := ticket_ids || ARRAY(
			SELECT t.id FROM mm.tickets_ended t
			 WHERE t.queue = q
			   AND t.id IN (SELECT mp.ticket_id FROM mm.match_players mp
							 WHERE mp.queue = q AND mp.match_id = ANY (match_ids))
			   AND t.match_id = ANY (match_ids) AND t.id <> ALL (ticket_ids)
			 ORDER BY t.id FOR UPDATE);

		IF archive THEN
			INSERT INTO mm.matches_archive (id, queue, status, created_at, updated_at, region, quality,
											rule_steps, connection, properties, acceptance_deadline,
											cancel_reason, archived_at, ready_at)
			SELECT m.id, m.queue, m.status, m.created_at, m.updated_at, m.region, m.quality,
				   m.rule_steps, m.connection, m.properties, m.acceptance_deadline,
				   m.cancel_reason, now, m.ready_at
			  FROM mm.matches m WHERE m.queue = q AND m.id = ANY (match_ids);
			INSERT INTO mm.match_players_archive (match_id, queue, player_id, ticket_id, team, accepted, left_at,
												  archived_at, role, autofilled, low_priority)
			SELECT mp.match_id, mp.queue, mp.player_id, mp.ticket_id, mp.team, mp.accepted, mp.left_at,
				   now, mp.role, mp.autofilled, mp.low_priority
			  FROM mm.match_players mp WHERE mp.queue = q AND mp.match_id = ANY (match_ids);
			INSERT INTO mm.match_results_archive
				SELECT r.*, now FROM mm.match_results r WHERE r.queue = q AND r.match_id = ANY (match_ids);
			INSERT INTO mm.tickets_archive (id, queue, players, status, created_at, updated_at, matched_at,
											match_id, team, archived_at, queues, heartbeat_at, cancel_reason)
			SELECT t.id, t.queue, t.players, t.status, t.created_at, t.updated_at, t.matched_at,
				   t.match_id, t.team, now, t.queues, t.heartbeat_at, t.cancel_reason
			  FROM mm.tickets_ended t WHERE t.queue = q AND t.id = ANY (ticket_ids);
		END IF;

		-- match_results go by ON DELETE CASCADE; match players are deleted here
		DELETE FROM mm.match_players mp WHERE mp.queue = q AND mp.match_id = ANY (match_ids);
		DELETE FROM mm.tickets_ended t WHERE t.queue = q AND t.id = ANY (ticket_ids);
		GET DIAGNOSTICS n = ROW_COUNT;
		tickets_purged := tickets_purged + n;
		DELETE FROM mm.matches m WHERE m.queue = q AND m.id = ANY (match_ids);
		GET DIAGNOSTICS n = ROW_COUNT;
		matches_purged := matches_purged + n;
	END LOOP;
END;
$$;
COMMENT ON FUNCTION mm.purge_finished(interval, integer, boolean, timestamptz) IS
'One retention batch: deletes or archives finished matches and tickets last changed before now - older_than';
REVOKE ALL ON FUNCTION mm.purge_finished(interval, integer, boolean, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.purge_finished(interval, integer, boolean, timestamptz) TO mm_admin;

-- The body of the retention job: purges in batches, each its own transaction.
CREATE PROCEDURE mm.run_retention()
LANGUAGE plpgsql
AS $$
DECLARE
	settings pg_catalog.record;
	purged pg_catalog.record;
BEGIN
	SELECT s.keep, s.batch_size, s.archive INTO settings
	  FROM mm.schedule_jobs s WHERE s.job_name OPERATOR(pg_catalog.=) 'mm_retention';
	IF NOT FOUND THEN
		RETURN;
	END IF;
	LOOP
		SELECT * INTO purged FROM mm.purge_finished(settings.keep, settings.batch_size, settings.archive);
		COMMIT;
		EXIT WHEN purged.matches_purged OPERATOR(pg_catalog.=) 0
			  AND purged.tickets_purged OPERATOR(pg_catalog.=) 0;
	END LOOP;
END;
$$;
COMMENT ON PROCEDURE mm.run_retention() IS
'Body of the retention pg_cron job: mm.purge_finished in batches with the settings of mm.schedule_retention';
REVOKE ALL ON PROCEDURE mm.run_retention() FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE mm.run_retention() TO mm_admin;

-- Makes pg_cron purge finished tickets and matches older than `keep` every
-- `every`; re-scheduling replaces the job and its settings.
CREATE FUNCTION mm.schedule_retention(keep interval, every interval DEFAULT '1 hour',
									  archive boolean DEFAULT false, batch_size integer DEFAULT 10000)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	plan record;
	job_id bigint;
BEGIN
	IF keep IS NULL OR archive IS NULL OR batch_size IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN keep IS NULL THEN 'keep' WHEN archive IS NULL THEN 'archive' ELSE 'batch_size' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF keep <= '0'::interval THEN
		RAISE EXCEPTION 'keep must be positive: %', keep USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- The comparison above counts a month as 30 days, a run subtracts the
	-- calendar's: '1 mon -29 days' reaches past now in March, and every run
	-- of the job would fail then.  No part may be negative.
	IF extract(year FROM keep) * 12 + extract(month FROM keep) < 0 OR extract(day FROM keep) < 0
	   OR extract(hour FROM keep) * 3600 + extract(minute FROM keep) * 60 + extract(second FROM keep) < 0 THEN
		RAISE EXCEPTION 'keep must have no negative part: %', keep
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Subtracted from now, a month is 28 to 31 days: write the interval in one unit, say ''2 days''.';
	END IF;
	IF batch_size < 1 OR batch_size > 1000000 THEN
		RAISE EXCEPTION 'batch_size must be between 1 and 1000000: %', batch_size
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT * INTO plan FROM mm.schedule_plan(every);
	IF plan.mode <> 'cron' THEN
		RAISE EXCEPTION 'every must be at least 1 minute for the retention job: %', every
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM mm.require_pg_cron();

	job_id := mm.cron_job_upsert('mm_retention', plan.cron_schedule, 'CALL mm.run_retention()');
	INSERT INTO mm.schedule_jobs AS s (job_name, kind, every, mode, cron_schedule, cron_job_id,
									   keep, archive, batch_size, updated_at)
	VALUES ('mm_retention', 'retention', every, plan.mode, plan.cron_schedule, job_id,
			keep, archive, batch_size, now())
	ON CONFLICT ON CONSTRAINT schedule_jobs_pkey DO UPDATE
	   SET every = EXCLUDED.every, mode = EXCLUDED.mode, cron_schedule = EXCLUDED.cron_schedule,
		   cron_job_id = EXCLUDED.cron_job_id, keep = EXCLUDED.keep, archive = EXCLUDED.archive,
		   batch_size = EXCLUDED.batch_size, updated_at = EXCLUDED.updated_at;
	RETURN job_id;
END;
$$;
COMMENT ON FUNCTION mm.schedule_retention(interval, interval, boolean, integer) IS
'Makes pg_cron purge (or archive) finished tickets and matches older than keep; returns the pg_cron job id';
REVOKE ALL ON FUNCTION mm.schedule_retention(interval, interval, boolean, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule_retention(interval, interval, boolean, integer) TO mm_admin;

-- Stops the retention job; false when there was none.
CREATE FUNCTION mm.unschedule_retention()
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	row_removed boolean;
	job_removed boolean;
BEGIN
	PERFORM mm.require_pg_cron();
	DELETE FROM mm.schedule_jobs s WHERE s.job_name = 'mm_retention';
	row_removed := FOUND;
	job_removed := mm.cron_job_remove('mm_retention');
	RETURN row_removed OR job_removed;
END;
$$;
COMMENT ON FUNCTION mm.unschedule_retention() IS
'Stops the retention job; returns false when there was none';
REVOKE ALL ON FUNCTION mm.unschedule_retention() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.unschedule_retention() TO mm_admin;

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
CREATE FUNCTION mm.tick_loop_running(queue text)
RETURNS boolean
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT mm.tick_loop_holder(queue, 'loop') IS NOT NULL
$$;
COMMENT ON FUNCTION mm.tick_loop_running(text) IS
'True while a tick loop of the queue (mm.tick_loop) is running';
REVOKE ALL ON FUNCTION mm.tick_loop_running(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tick_loop_running(text) TO mm_admin, mm_analyst;

-- Scheduling that repairs itself and starts at once (src/schedule_starter.c;
-- docs/scheduling.md).

-- Starts a dynamic background worker that runs CALL mm.tick_loop(queue) as
-- the current role once the current transaction has ended: the queue ticks
-- at once instead of at the next minute boundary.  False, with a NOTICE,
-- when no background worker slot is free.
CREATE FUNCTION mm.schedule_start_loop(queue text)
RETURNS boolean
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'mm_schedule_start_loop';
COMMENT ON FUNCTION mm.schedule_start_loop(text) IS
'Runs the queue''s tick loop in a background worker from the end of this transaction to the next minute boundary (internal to mm.schedule)';
REVOKE ALL ON FUNCTION mm.schedule_start_loop(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule_start_loop(text) TO mm_admin;

-- The settings pg_cron connects with, as this server has them; NULL where
-- they cannot be read (they are superuser-only settings, hence SECURITY
-- DEFINER: the extension's owner reads them for mm.schedule's checks).
CREATE FUNCTION mm.cron_connection(OUT background_workers boolean, OUT host text, OUT port integer,
								   OUT socket_directories text, OUT listen_addresses text)
RETURNS record
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	port := current_setting('port')::integer;
	socket_directories := current_setting('unix_socket_directories');
	listen_addresses := current_setting('listen_addresses');
	BEGIN
		background_workers := current_setting('cron.use_background_workers', true)::boolean;
		host := current_setting('cron.host', true);
	EXCEPTION WHEN insufficient_privilege THEN
		background_workers := NULL;
		host := NULL;
	END;
END;
$$;
COMMENT ON FUNCTION mm.cron_connection() IS
'How pg_cron connects to run jobs on this server (cron.use_background_workers, cron.host, port); NULL where unreadable';
REVOKE ALL ON FUNCTION mm.cron_connection() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cron_connection() TO mm_admin;

-- Why pg_cron cannot run a job of role job_role on this server, as it is set
-- up now: one row per problem found, none when nothing is known to be wrong.
-- Checks the role's LOGIN, and, when jobs connect over libpq, cron.host
-- against the server's sockets and TCP addresses and the first pg_hba.conf
-- line that applies (read as the extension's owner, hence SECURITY DEFINER).
CREATE FUNCTION mm.cron_problems(job_role name)
RETURNS TABLE (problem text, hint text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	conn record;
	dirs text[];
	host_address inet;
	rule record;
	os_role name;
BEGIN
	IF job_role IS NULL THEN
		RAISE EXCEPTION 'job_role must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = job_role AND r.rolcanlogin) THEN
		problem := format('pg_cron runs the job as role "%s", which cannot log in', job_role);
		hint := 'Schedule as a role with LOGIN (not after SET ROLE to a group role such as mm_admin).';
		RETURN NEXT;
	END IF;

	SELECT * INTO conn FROM mm.cron_connection();
	IF conn.background_workers IS NULL OR conn.background_workers THEN
		RETURN;		-- unknown, or jobs run in background workers: no connection to check
	END IF;

	dirs := ARRAY(SELECT btrim(d) FROM unnest(string_to_array(conn.socket_directories, ',')) d
				   WHERE btrim(d) <> '');
	IF conn.host LIKE '/%' THEN
		IF NOT rtrim(conn.host, '/') = ANY (ARRAY(SELECT rtrim(d, '/') FROM unnest(dirs) d)) THEN
			problem := format('cron.host is "%s", which is not a socket directory of this server '
							  '(unix_socket_directories is "%s")', conn.host, conn.socket_directories);
			hint := 'Set cron.host to one of the socket directories and restart the server.';
			RETURN NEXT;
			RETURN;
		END IF;
	ELSIF btrim(conn.listen_addresses) = '' THEN
		problem := format('cron.host is "%s", but this server listens on no TCP address '
						  '(listen_addresses is empty)', conn.host);
		hint := CASE WHEN cardinality(dirs) > 0
					 THEN format('Set cron.host = %L (the socket directory) or cron.use_background_workers = on, '
								 'and restart the server.', dirs[1])
					 ELSE 'Set cron.use_background_workers = on and restart the server.' END;
		RETURN NEXT;
		RETURN;
	END IF;

	-- the first pg_hba.conf line for pg_cron's connection (superusers only;
	-- a line with a host name is not resolved, so it is passed over)
	IF conn.host NOT LIKE '/%' THEN
		BEGIN
			host_address := CASE WHEN conn.host IN ('localhost', '') THEN '127.0.0.1'::inet
								 ELSE conn.host::inet END;
		EXCEPTION WHEN invalid_text_representation THEN
			RETURN;		-- a host name: which lines apply depends on its address
		END;
	END IF;
	BEGIN
		SELECT r.line_number, r.type, r.auth_method, r.options INTO rule
		  FROM pg_hba_file_rules r
		 WHERE r.error IS NULL
		   AND CASE WHEN conn.host LIKE '/%' THEN r.type = 'local'
					ELSE r.type IN ('host', 'hostssl', 'hostnossl', 'hostgssenc', 'hostnogssenc')
						 AND (r.address IN ('all', 'samehost', 'samenet')
							  OR (r.netmask IS NOT NULL
								  AND family(host_address) = family(r.netmask::inet)
								  AND family(host_address) = family(r.address::inet)
								  AND (host_address & r.netmask::inet) = (r.address::inet & r.netmask::inet))) END
		   AND (r.database && ARRAY['all', current_database()]::text[]
				OR ('sameuser' = ANY (r.database) AND current_database() = job_role)
				OR ('samerole' = ANY (r.database) AND pg_has_role(job_role, current_database(), 'MEMBER')))
		   AND (r.user_name && ARRAY['all', job_role]::text[]
				OR EXISTS (SELECT 1 FROM unnest(r.user_name) u
							WHERE u LIKE '+%' AND pg_has_role(job_role, substr(u, 2)::name, 'MEMBER')))
		 ORDER BY r.line_number
		 LIMIT 1;
	EXCEPTION WHEN insufficient_privilege OR undefined_object OR invalid_text_representation THEN
		RETURN;
	END;
	IF NOT FOUND THEN
		problem := format('no line of pg_hba.conf lets pg_cron connect as role "%s" to database "%s" through %s',
						  job_role, current_database(),
						  CASE WHEN conn.host LIKE '/%' THEN 'the socket ' || conn.host ELSE 'host ' || conn.host END);
		hint := 'Add a line for it to pg_hba.conf, or set cron.use_background_workers = on.';
		RETURN NEXT;
	ELSIF rule.auth_method = 'reject' THEN
		problem := format('line %s of pg_hba.conf rejects pg_cron''s connection as role "%s"', rule.line_number, job_role);
		hint := 'Let that connection in before the reject line, or set cron.use_background_workers = on.';
		RETURN NEXT;
	ELSIF rule.auth_method IN ('password', 'md5', 'scram-sha-256', 'ldap', 'radius', 'pam', 'bsd') THEN
		problem := format('line %s of pg_hba.conf asks for a password (%s), which pg_cron does not give '
						  'unless the server''s operating-system user has it in ~/.pgpass',
						  rule.line_number, rule.auth_method);
		hint := 'Use trust or peer for pg_cron''s connection, add a ~/.pgpass entry, or set cron.use_background_workers = on.';
		RETURN NEXT;
	ELSIF rule.auth_method = 'peer' AND rule.options IS NULL THEN
		-- peer maps the client's operating-system user (the server's own) to a
		-- role of the same name, which is the bootstrap superuser's as a rule
		SELECT r.rolname INTO os_role FROM pg_roles r WHERE r.oid = 10;
		IF os_role <> job_role THEN
			problem := format('line %s of pg_hba.conf uses peer authentication: pg_cron connects as the server''s '
							  'operating-system user (usually "%s"), which peer accepts only as the role of that name, '
							  'not "%s"', rule.line_number, os_role, job_role);
			hint := 'Use trust for pg_cron''s connection, a peer map, or set cron.use_background_workers = on.';
			RETURN NEXT;
		END IF;
	END IF;
END;
$$;
COMMENT ON FUNCTION mm.cron_problems(name) IS
'Why pg_cron could not run a job of that role on this server as it is set up (no rows: nothing known to be wrong)';
REVOKE ALL ON FUNCTION mm.cron_problems(name) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cron_problems(name) TO mm_admin;

-- A failed pg_cron run's message in words: what went wrong and what to do.
CREATE FUNCTION mm.cron_error_in_words(message text, nodename text DEFAULT NULL, nodeport integer DEFAULT NULL)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN message IS NULL THEN NULL
		WHEN btrim(message) = 'connection failed' THEN
			format('pg_cron could not connect to the server%s to run the job: check cron.host, '
				   'listen_addresses and pg_hba.conf, or set cron.use_background_workers = on',
				   CASE WHEN nodename IS NOT NULL
						THEN format(' (host %s, port %s)', nodename, coalesce(nodeport::text, '?')) ELSE '' END)
		WHEN btrim(message) = 'job startup timeout' THEN
			'the job did not start in time: every pg_cron connection or background worker was busy '
			'(cron.max_running_jobs, max_connections, max_worker_processes)'
		WHEN btrim(message) = 'job canceled' THEN
			'the job was unscheduled or deactivated while it ran'
		WHEN message ~ 'is not permitted to log in' THEN
			'pg_cron runs the job as a role that cannot log in: ' || btrim(message, E' \n')
		WHEN message ~* 'password' THEN
			'pg_cron''s connection was refused for want of a password: ' || btrim(message, E' \n')
		ELSE 'the run failed: ' || btrim(message, E' \n')
	END
$$;
COMMENT ON FUNCTION mm.cron_error_in_words(text, text, integer) IS
'A failed pg_cron run''s message explained (for mm.schedules.last_error)';
REVOKE ALL ON FUNCTION mm.cron_error_in_words(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.cron_error_in_words(text, text, integer) TO mm_admin;

-- matchmaking's jobs with pg_cron's view of them (when pg_cron is here):
-- active flag, whether a tick loop is running now, the last run, and the
-- last failed run in words.  Jobs named like ours that have no row of
-- mm.schedule_jobs show with kind NULL.  SECURITY DEFINER: pg_cron shows
-- each role only its own jobs, and analysts and other admins read this too.
CREATE FUNCTION mm.schedule_status()
RETURNS TABLE (job_name text, kind text, queue text, every interval, mode text,
			   cron_schedule text, job_id bigint, active boolean, loop_running boolean,
			   last_run_status text, last_run_start timestamptz, last_run_message text,
			   last_error text, last_error_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_extension e WHERE e.extname = 'pg_cron') THEN
		RETURN QUERY
		SELECT s.job_name, s.kind, s.queue, s.every, s.mode, s.cron_schedule, s.cron_job_id,
			   NULL::boolean, mm.tick_loop_running(s.queue), NULL::text, NULL::timestamptz, NULL::text,
			   NULL::text, NULL::timestamptz
		  FROM mm.schedule_jobs s
		 ORDER BY s.job_name;
		RETURN;
	END IF;
	SELECT * INTO cron FROM mm.require_pg_cron();
	RETURN QUERY EXECUTE format($q$
		SELECT coalesce(s.job_name, j.jobname::text), s.kind, s.queue, s.every, s.mode,
			   coalesce(s.cron_schedule, j.schedule), coalesce(j.jobid, s.cron_job_id), j.active,
			   mm.tick_loop_running(coalesce(s.queue, CASE WHEN j.jobname LIKE 'mm\_tick:%%'
														   THEN substr(j.jobname, 9) END)),
			   r.status, r.start_time, r.return_message,
			   mm.cron_error_in_words(f.return_message, j.nodename, j.nodeport),
			   coalesce(f.start_time, f.end_time)
		  FROM mm.schedule_jobs s
		  FULL JOIN (SELECT * FROM %1$I.job
					  WHERE jobname LIKE 'mm\_tick:%%' OR jobname = 'mm_retention') j
			ON j.jobname = s.job_name
		  LEFT JOIN LATERAL (SELECT d.status, d.start_time, d.return_message
							   FROM %1$I.job_run_details d
							  WHERE d.jobid = j.jobid
							  ORDER BY d.runid DESC LIMIT 1) r ON true
		  LEFT JOIN LATERAL (SELECT d.start_time, d.end_time, d.return_message
							   FROM %1$I.job_run_details d
							  WHERE d.jobid = j.jobid AND d.status = 'failed'
							  ORDER BY d.runid DESC LIMIT 1) f ON true
		 ORDER BY 1$q$, cron.schema);
END;
$$;
COMMENT ON FUNCTION mm.schedule_status() IS
'matchmaking''s pg_cron jobs with their state and last error (the body of view mm.schedules)';
REVOKE ALL ON FUNCTION mm.schedule_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule_status() TO mm_admin, mm_analyst;

CREATE VIEW mm.schedules AS
	SELECT * FROM mm.schedule_status();
COMMENT ON VIEW mm.schedules IS
'matchmaking''s pg_cron jobs: queue ticks and retention, with their state and last error in words';
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.schedules TO mm_admin;
GRANT SELECT ON TABLE mm.schedules TO mm_analyst;

-- The loop's interval for a queue on the per-minute loop, NULL when the queue
-- is no longer on one (unscheduled, re-scheduled to another mode, dropped)
-- or, on Citus, when its shards are not on this node: a loop whose queue
-- moved (a shard move, a rebalance) ends, and the loop keeper of the node
-- that now holds the queue starts it there (src/schedule_starter.c).
-- SECURITY DEFINER: the loop runs as the job's role, which needs no
-- privilege on mm.schedule_jobs.
-- PL/pgSQL: the loop of a queue runs on the queue's node (Citus rule 5).
CREATE FUNCTION mm.tick_loop_every(queue text)
RETURNS interval
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- nested: Citus's catalog exists only with Citus, and PL/pgSQL plans a
	-- statement when it first runs
	IF mm.tables_are_distributed() THEN
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_placement p
						WHERE p.shardid = pg_catalog.get_shard_id_for_distribution_column('mm.tickets',
																						 tick_loop_every.queue)
						  AND p.groupid = (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)) THEN
			RETURN NULL;
		END IF;
	END IF;
	RETURN (SELECT s.every FROM mm.schedule_jobs s
			 WHERE s.job_name = pg_catalog.concat('mm_tick:', tick_loop_every.queue) AND s.mode = 'loop');
END
$$;
COMMENT ON FUNCTION mm.tick_loop_every(text) IS
'How often the per-minute loop of a queue ticks; NULL when the queue is not on the loop, or on Citus not on this node (internal to mm.tick_loop and the loop keeper)';
REVOKE ALL ON FUNCTION mm.tick_loop_every(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tick_loop_every(text) TO mm_ticker;
