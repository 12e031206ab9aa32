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

