-- matchmaking 0.2 -> 0.3: the match lifecycle (acceptance, assignment,
-- backfill, results that update stored ratings), least-privilege roles, and
-- scheduling that repairs itself.
--
-- This upgrade is built from the files of upgrade/0.2--0.3, one per concern,
-- in name order; the fresh 0.3 install script is matchmaking--0.2.sql
-- followed by this upgrade (see the Makefile), so a fresh install and an
-- upgraded database run the same statements.

\echo Use "ALTER EXTENSION matchmaking UPDATE TO '0.3'" to load this file. \quit
