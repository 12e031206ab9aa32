-- matchmaking 0.3 -> 0.4: match functions run as the role that named them,
-- and what a studio meets in its first week (live matches that expire,
-- heartbeats for tickets, a ticker role, per-ticket assignment tokens).
--
-- This upgrade is built from the files of upgrade/0.3--0.4, one per concern,
-- in name order; the fresh 0.4 install script is built from the SQL source
-- tree src/sql/ (see the Makefile), and test/t/050_upgrade.pl proves that
-- both give the same schema.

\echo Use "ALTER EXTENSION matchmaking UPDATE TO '0.4'" to load this file. \quit
