
-- ===================================================================
-- Section: where pg_cron runs, in the error of a database without it
-- (docs/scheduling.md)
-- ===================================================================
--
-- mm.require_pg_cron suggested cron.database_name = '<this database>' even
-- when pg_cron already ran in another database, which that change would stop.
-- It now says where pg_cron runs (cron.database_name, when readable) and how
-- to schedule from there.

CREATE OR REPLACE FUNCTION mm.require_pg_cron(OUT version text, OUT schema name)
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
