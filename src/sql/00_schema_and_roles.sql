-- matchmaking: the SQL source tree.
--
-- `make` builds the fresh install script of the version in development
-- (matchmaking--<version>.sql) from the files of src/sql/ in name order,
-- after the line that refuses psql.  Name order is dependency order: each
-- file holds one concern, and every object in it is defined once, as it is
-- now, with its comment, its grants and its pg_dump registration beside it.
-- How a change is made (here, and in upgrade/<from>--<to>/ for the upgrade
-- script): HACKING.md, "Where SQL changes go".
--
-- Everything is schema-qualified so that no object a user creates in another
-- schema can hijack a call.  A function that sets its search_path
-- (pg_catalog, pg_temp) writes plain operators and functions; what runs
-- without one (views, index predicates, constraints, procedures, inlined SQL
-- functions, DO blocks) qualifies them too, as OPERATOR(pg_catalog.=), and
-- in procedures the types of their variables and casts (pg_catalog.text).
--
-- This file: the schema mm's check, the group roles and the privileges on
-- the schema itself (CREATE EXTENSION creates the schema, from `schema = mm`
-- in matchmaking.control).

-- CREATE EXTENSION adopts a schema mm that already exists.  Whoever owns it
-- can later rename it and put look-alike objects under the name mm, which
-- the extension's owner-rights functions would then call: the schema must be
-- new, or empty and owned by the installing role or a superuser.
DO $schema$
DECLARE
	mm_schema pg_catalog.oid;
	mm_owner pg_catalog.name;
	owner_is_superuser boolean;
BEGIN
	SELECT n.oid, r.rolname, r.rolsuper INTO mm_schema, mm_owner, owner_is_superuser
	  FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
	 WHERE n.nspname OPERATOR(pg_catalog.=) 'mm';
	IF mm_owner OPERATOR(pg_catalog.<>) CURRENT_USER AND NOT owner_is_superuser THEN
		RAISE EXCEPTION 'schema "mm" is owned by role "%", which is neither the role installing the extension nor a superuser',
			mm_owner
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Its owner could replace the extension''s objects: drop the schema (or ALTER SCHEMA mm OWNER TO the installing role) and run CREATE EXTENSION again.';
	END IF;
	IF EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.relnamespace OPERATOR(pg_catalog.=) mm_schema)
	   OR EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) mm_schema)
	   OR EXISTS (SELECT FROM pg_catalog.pg_type t WHERE t.typnamespace OPERATOR(pg_catalog.=) mm_schema)
	   OR EXISTS (SELECT FROM pg_catalog.pg_operator o WHERE o.oprnamespace OPERATOR(pg_catalog.=) mm_schema) THEN
		RAISE EXCEPTION 'schema "mm" already holds objects'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'The extension installs into a new or empty schema mm: move those objects out, or drop the schema.';
	END IF;
END
$schema$;

-- Group roles (NOLOGIN): grant them to your login roles.  Roles belong to the
-- cluster, not to a database: a second database's install, or a reinstall,
-- finds them already there and keeps them.
--   mm_frontend  the game's client-facing backend: create and cancel
--                tickets, answer proposed matches, read a ticket's status
--                and assignment
--   mm_director  the game-server allocator: assign, requeue, complete,
--                backfill, report results, read matches; member of mm_ticker
--   mm_analyst   read-only metrics and statistics
--   mm_ticker    ticks and nothing else: mm.tick, the loop pg_cron runs
--                (mm.tick_loop) and mm.last_tick_stats; no privilege on any
--                table (mm.tick runs as the extension's owner)
--   mm_admin     queues, schedules, rating pools; member of the other four
-- Nothing in mm is open to PUBLIC but the pure functions of their arguments
-- (the rating math, team balancing, mm.verify_event).  Each object's grants
-- are written with it: a role gets what its work needs; mm_admin may read
-- and write every table but the event key and call every routine, and
-- mm_analyst may read every table but the event key.
DO $roles$
DECLARE
	role_name text;
BEGIN
	FOREACH role_name IN ARRAY ARRAY['mm_frontend', 'mm_director', 'mm_analyst', 'mm_ticker', 'mm_admin']
	LOOP
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) role_name) THEN
			EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', role_name);
		END IF;
	END LOOP;
END
$roles$;

GRANT mm_frontend, mm_director, mm_analyst TO mm_admin;
GRANT mm_ticker TO mm_director, mm_admin;

-- The schema itself is open, so that any role can call the pure functions
-- granted to PUBLIC (mm.verify_event for every listener); every other
-- object in it is closed.
GRANT USAGE ON SCHEMA mm TO mm_frontend, mm_director, mm_analyst, mm_admin, mm_ticker;
GRANT USAGE ON SCHEMA mm TO PUBLIC;
