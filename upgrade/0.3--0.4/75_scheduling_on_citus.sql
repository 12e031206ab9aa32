
-- ===================================================================
-- Section: scheduling and retention on Citus (docs/scale-out.md)
-- ===================================================================
--
-- mm.schedule_jobs becomes a reference table with mm.distribute, and a
-- queue's loop runs on the queue's node: the job rows carry their update
-- time (Citus refuses now() in DO UPDATE of a distributed table), and the
-- loop reads its interval through PL/pgSQL.  A retention batch works queue
-- by queue, every statement naming its queue (a statement on Citus then
-- runs on the queue's shards).

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

	-- the time comes in the row (Citus refuses now() in DO UPDATE of a
	-- distributed table, which mm.schedule_jobs is after mm.distribute)
	INSERT INTO mm.schedule_jobs AS s (job_name, kind, queue, every, mode, cron_schedule, cron_job_id,
									   updated_at)
	VALUES (tick_job_name, 'tick', queue, every, plan.mode, plan.cron_schedule, tick_job_id, now())
	ON CONFLICT ON CONSTRAINT schedule_jobs_pkey DO UPDATE
	   SET every = EXCLUDED.every, mode = EXCLUDED.mode, cron_schedule = EXCLUDED.cron_schedule,
		   cron_job_id = EXCLUDED.cron_job_id, updated_at = EXCLUDED.updated_at;

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

CREATE OR REPLACE FUNCTION mm.schedule_retention(keep interval, every interval DEFAULT '1 hour',
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

CREATE OR REPLACE FUNCTION mm.tick_loop_every(queue text)
RETURNS interval
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN (SELECT s.every FROM mm.schedule_jobs s
			 WHERE s.job_name = pg_catalog.concat('mm_tick:', tick_loop_every.queue) AND s.mode = 'loop');
END
$$;

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

	-- the oldest finished matches, queue by queue (the indexes lead with
	-- queue), then the oldest ended tickets the same way: batch_size of each
	-- at most.  Every statement names its queue, so that on Citus each runs
	-- on the queue's shards.
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
			INSERT INTO mm.match_players_archive
				SELECT mp.*, now FROM mm.match_players mp WHERE mp.queue = q AND mp.match_id = ANY (match_ids);
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
