-- Operations on Citus (issue 29): tables that Citus can move with logical
-- replication, and tick loops that come back within seconds.

-- The archives get primary keys: citus_rebalance_start moves shards with
-- logical replication, which needs a key on every table of the co-location
-- group (the live tables have theirs).
ALTER TABLE mm.matches_archive ADD CONSTRAINT matches_archive_pkey PRIMARY KEY (id, queue);
ALTER TABLE mm.match_players_archive
	ADD CONSTRAINT match_players_archive_pkey PRIMARY KEY (match_id, player_id, queue);
ALTER TABLE mm.match_results_archive ADD CONSTRAINT match_results_archive_pkey PRIMARY KEY (match_id, queue);
ALTER TABLE mm.tickets_archive ADD CONSTRAINT tickets_archive_pkey PRIMARY KEY (id, queue);

-- A tick job's role, for the loop keeper (src/schedule_starter.c), which
-- restarts a queue's loop as that role; the jobs already there take their
-- pg_cron job's role.
ALTER TABLE mm.schedule_jobs ADD COLUMN job_role name;
DO $do$
BEGIN
	IF pg_catalog.to_regclass('cron.job') IS NOT NULL THEN
		UPDATE mm.schedule_jobs s SET job_role = CAST(j.username AS name)
		  FROM cron.job j
		 WHERE j.jobid OPERATOR(pg_catalog.=) s.cron_job_id AND s.kind OPERATOR(pg_catalog.=) 'tick';
	END IF;
END
$do$;

-- mm.schedule records the job's role.
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

-- A loop ends when its queue's shards are not on its node (hand-over).
CREATE OR REPLACE FUNCTION mm.tick_loop_every(queue text)
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
