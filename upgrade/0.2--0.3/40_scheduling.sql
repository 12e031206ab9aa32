
-- ===================================================================
-- Section: scheduling that repairs itself and starts at once
-- (src/schedule_starter.c; docs/scheduling.md)
-- ===================================================================

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

-- Creates or replaces one of matchmaking's pg_cron jobs so that it runs with
-- the current settings.  cron.schedule(name, ...) on an existing name
-- updates only the schedule and the command: the connection it was created
-- with (cron.host, port), its database, role and active flag stay.  A job
-- whose settings differ from those a new job would get, or cannot be
-- checked, is removed and created afresh (a new job id); one that matches
-- keeps its id.
CREATE OR REPLACE FUNCTION mm.cron_job_upsert(job_name text, cron_schedule text, command text)
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

-- The body of a queue's per-minute job for sub-minute intervals: ticks,
-- commits, sleeps until the next tick, and returns before the next minute's
-- run starts.  A session advisory lock keeps a second loop of the same queue
-- from running (it returns at once), even when a tick runs long.  A loop that
-- finds itself past the end of its minute (a tick ran long, or waited for a
-- lock, across the boundary) carries on through the next minute: that
-- minute's run found the lock taken and returned, and nothing else would tick
-- the queue until the minute after.  A procedure (not a function) so that
-- each tick commits on its own; it therefore has no SET clause, and
-- qualifies every operator instead.
CREATE OR REPLACE PROCEDURE mm.tick_loop(queue text)
LANGUAGE plpgsql
AS $$
DECLARE
	loop_job_name constant text := pg_catalog.concat('mm_tick:', queue);
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
		SELECT s.every INTO tick_every
		  FROM mm.schedule_jobs s
		 WHERE s.job_name OPERATOR(pg_catalog.=) loop_job_name
		   AND s.mode OPERATOR(pg_catalog.=) 'loop';
		EXIT WHEN NOT FOUND;

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
'Body of a queue''s per-minute pg_cron job: ticks every scheduled interval until just before the next minute (through it when a tick ran past the boundary)';

-- Makes pg_cron tick a queue every `every`.  Re-scheduling brings the job in
-- line with the current settings (mm.cron_job_upsert).  A queue on the
-- per-minute loop starts ticking at once: a background worker runs the loop
-- until the next minute boundary, when pg_cron takes over.  Warns when
-- pg_cron cannot run the job: settings that cannot work here
-- (mm.cron_problems), or a last run that failed.
CREATE OR REPLACE FUNCTION mm.schedule(queue text, every interval DEFAULT '1 second')
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

	INSERT INTO mm.schedule_jobs AS s (job_name, kind, queue, every, mode, cron_schedule, cron_job_id)
	VALUES (tick_job_name, 'tick', queue, every, plan.mode, plan.cron_schedule, tick_job_id)
	ON CONFLICT ON CONSTRAINT schedule_jobs_pkey DO UPDATE
	   SET every = EXCLUDED.every, mode = EXCLUDED.mode, cron_schedule = EXCLUDED.cron_schedule,
		   cron_job_id = EXCLUDED.cron_job_id, updated_at = now();

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

-- matchmaking's jobs with pg_cron's view of them (when pg_cron is here):
-- active flag, whether a tick loop is running now, the last run, and the
-- last failed run in words.  Jobs named like ours that have no row of
-- mm.schedule_jobs show with kind NULL.  SECURITY DEFINER: pg_cron shows
-- each role only its own jobs, and analysts and other admins read this too.
DROP VIEW mm.schedules;
DROP FUNCTION mm.schedule_status();
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

CREATE VIEW mm.schedules AS
	SELECT * FROM mm.schedule_status();
COMMENT ON VIEW mm.schedules IS
'matchmaking''s pg_cron jobs: queue ticks and retention, with their state and last error in words';

-- Privileges: scheduling and housekeeping are mm_admin's; the jobs' state is
-- mm_analyst's to read too (the tables: 90_privileges.sql).  The role that
-- schedules also needs USAGE on schema cron, pg_cron's grant, not ours.
GRANT EXECUTE ON FUNCTION mm.schedule(text, interval), mm.unschedule(text),
	mm.schedule_plan(interval, text), mm.require_pg_cron(), mm.cron_job_upsert(text, text, text),
	mm.cron_job_remove(text), mm.schedule_start_loop(text), mm.cron_connection(),
	mm.cron_problems(name), mm.cron_error_in_words(text, text, integer),
	mm.schedule_retention(interval, interval, boolean, integer), mm.unschedule_retention(),
	mm.purge_finished(interval, integer, boolean, timestamptz)
	TO mm_admin;
GRANT EXECUTE ON PROCEDURE mm.tick_loop(text), mm.run_retention() TO mm_admin;
GRANT EXECUTE ON FUNCTION mm.schedule_status(), mm.tick_loop_running(text) TO mm_admin, mm_analyst;
GRANT SELECT ON mm.schedules TO mm_admin, mm_analyst;

-- What the tick loop and the retention job read from mm.schedule_jobs is
-- checked by the table too (mm_admin may write it, and pg_dump restores it):
-- a loop that never sleeps, a keep no run can subtract.
ALTER TABLE mm.schedule_jobs
	ADD CONSTRAINT schedule_jobs_every CHECK (every OPERATOR(pg_catalog.>) '0'::interval),
	ADD CONSTRAINT schedule_jobs_keep CHECK (keep IS NULL OR (keep OPERATOR(pg_catalog.>) '0'::interval
															  AND keep OPERATOR(pg_catalog.<=) '1000 years'::interval)),
	ADD CONSTRAINT schedule_jobs_batch_size CHECK (batch_size IS NULL OR batch_size OPERATOR(pg_catalog.>) 0);
