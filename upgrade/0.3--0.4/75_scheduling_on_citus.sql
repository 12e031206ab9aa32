
-- ===================================================================
-- Section: scheduling on Citus (docs/scale-out.md)
-- ===================================================================
--
-- mm.schedule_jobs becomes a reference table with mm.distribute, and a
-- queue's loop runs on the queue's node: the job rows carry their update
-- time (Citus refuses now() in DO UPDATE of a distributed table), and the
-- loop reads its interval through PL/pgSQL.

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
