-- matchmaking 0.3 -> 0.4: match functions run as the role that named them,
-- and what a studio meets in its first week (live matches that expire,
-- heartbeats for tickets, a ticker role, per-ticket assignment tokens).
--
-- Built by src/tools/build_upgrade.pl from upgrade/0.3--0.4: the
-- hand-written table and data changes, one file per concern in name order,
-- and in place of 50_routines.txt the routines that change, as the SQL
-- source tree src/sql/ defines them (edit those, not this script).
-- test/t/050_upgrade.pl proves that this and the fresh install give the same
-- schema.

\echo Use "ALTER EXTENSION matchmaking UPDATE TO '0.4'" to load this file. \quit
