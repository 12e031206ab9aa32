
-- ===================================================================
-- Section: roles (least privilege; docs/security.md)
-- ===================================================================

-- Group roles (NOLOGIN): grant them to your login roles.  Roles belong to the
-- cluster, not to a database: a second database's install, or a reinstall,
-- finds them already there and keeps them.
--   mm_frontend  the game's client-facing backend: create and cancel
--                tickets, answer proposed matches, read a ticket's status
--                and assignment
--   mm_director  the game-server allocator: assign, requeue, complete,
--                backfill, report results, read matches
--   mm_analyst   read-only metrics and statistics
--   mm_admin     queues, schedules, rating pools; member of the other three
-- The grants of each function are next to it; 90_privileges.sql revokes
-- everything else from PUBLIC.
DO $roles$
DECLARE
	role_name text;
BEGIN
	FOREACH role_name IN ARRAY ARRAY['mm_frontend', 'mm_director', 'mm_analyst', 'mm_admin']
	LOOP
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) role_name) THEN
			EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', role_name);
		END IF;
	END LOOP;
END
$roles$;
GRANT mm_frontend, mm_director, mm_analyst TO mm_admin;
GRANT USAGE ON SCHEMA mm TO mm_frontend, mm_director, mm_analyst, mm_admin;
