
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

