-- The backfill search (MmSearchBackfill, src/match_search.h) that the tick
-- calls to fill the open slots of a running match: whole parties on a team
-- with room, every rule over the whole match at the step of its oldest
-- ticket, older candidates first, the most players when the slots cannot all
-- be filled.  Driven through a test tool of the test module matchmaking_test
-- (test/modules/matchmaking_test, never shipped), created in pg_temp.
-- Tickets are given as [{"players": [...], "age_seconds": n}, ...], members
-- with their "team" index, candidates oldest first; the result names the
-- chosen candidates by index.
SET timezone = 'UTC';

CREATE FUNCTION pg_temp.backfill(config jsonb, members jsonb, open_slots int[], candidates jsonb)
RETURNS jsonb AS '$libdir/matchmaking_test', 'mm_search_backfill' LANGUAGE C STRICT;

-- a 2v2 with a difference rule (max 100) and team averages within 100;
-- red has lost a player: one slot open on red
CREATE TEMP TABLE bf_config AS SELECT '{"teams": [{"name": "red", "min": 2, "max": 2},
  {"name": "blue", "min": 2, "max": 2}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
             "expansion": {"every_seconds": 10, "delta": 100, "limit": 300}},
            {"name": "fair", "type": "team_difference", "attribute": "skill", "max": 100}]}'::jsonb AS c;
CREATE TEMP TABLE bf_members AS SELECT '[
  {"team": 0, "age_seconds": 5, "players": [{"id": "r1", "attributes": {"skill": 1000}}]},
  {"team": 1, "age_seconds": 5, "players": [{"id": "b1", "attributes": {"skill": 1000}},
                                            {"id": "b2", "attributes": {"skill": 1040}}]}]'::jsonb AS m;

-- the oldest candidate that fits: 2000 is too far, the party of two has no
-- room, 1030 fits (990 is younger)
SELECT pg_temp.backfill(c, m, '{1, 0}', '[
  {"age_seconds": 4, "players": [{"id": "x", "attributes": {"skill": 2000}}]},
  {"age_seconds": 3, "players": [{"id": "p1", "attributes": {"skill": 1000}}, {"id": "p2", "attributes": {"skill": 1000}}]},
  {"age_seconds": 2, "players": [{"id": "y", "attributes": {"skill": 1030}}]},
  {"age_seconds": 1, "players": [{"id": "z", "attributes": {"skill": 990}}]}]')
  FROM bf_config, bf_members;

-- two open slots on red: the party of two fills both
SELECT pg_temp.backfill(c, '[{"team": 1, "age_seconds": 5, "players": [{"id": "b1", "attributes": {"skill": 1000}},
                                                               {"id": "b2", "attributes": {"skill": 1040}}]}]',
       '{2, 0}', '[
  {"age_seconds": 4, "players": [{"id": "x", "attributes": {"skill": 2000}}]},
  {"age_seconds": 3, "players": [{"id": "p1", "attributes": {"skill": 1000}}, {"id": "p2", "attributes": {"skill": 1000}}]},
  {"age_seconds": 2, "players": [{"id": "y", "attributes": {"skill": 1030}}]}]')
  FROM bf_config;

-- every rule holds over the whole match, at the step of its oldest ticket
-- (35 s: difference max 100 + 3 x 100, capped at 300).  Red keeps 1000,
-- blue averages 1300: 1450 would even the teams (1225 against 1300) but
-- stretch the skill spread to 450; 1010 keeps the spread but leaves red 295
-- below blue.  Nothing joins.
SELECT pg_temp.backfill(c, '[
  {"team": 0, "age_seconds": 35, "players": [{"id": "r1", "attributes": {"skill": 1000}}]},
  {"team": 1, "age_seconds": 35, "players": [{"id": "b1", "attributes": {"skill": 1250}},
                                             {"id": "b2", "attributes": {"skill": 1350}}]}]',
       '{1, 0}', '[
  {"age_seconds": 4, "players": [{"id": "x", "attributes": {"skill": 1450}}]},
  {"age_seconds": 3, "players": [{"id": "y", "attributes": {"skill": 1010}}]}]')
  FROM bf_config;
-- ... with blue at 1200 and 1250 (average 1225), 1300 brings red to 1150:
-- within 100 of blue, spread 1000..1300 within 300
SELECT pg_temp.backfill(c, '[
  {"team": 0, "age_seconds": 35, "players": [{"id": "r1", "attributes": {"skill": 1000}}]},
  {"team": 1, "age_seconds": 35, "players": [{"id": "b1", "attributes": {"skill": 1200}},
                                             {"id": "b2", "attributes": {"skill": 1250}}]}]',
       '{1, 0}', '[
  {"age_seconds": 4, "players": [{"id": "y", "attributes": {"skill": 1010}}]},
  {"age_seconds": 3, "players": [{"id": "x", "attributes": {"skill": 1300}}]}]')
  FROM bf_config;

-- slots that cannot all be filled: the most players that can join (one of
-- two: 2000 and 1150 are too far from the others), filled is false
SELECT pg_temp.backfill(c, '[{"team": 1, "age_seconds": 5, "players": [{"id": "b1", "attributes": {"skill": 1000}},
                                                               {"id": "b2", "attributes": {"skill": 1000}}]}]',
       '{2, 0}', '[
  {"age_seconds": 4, "players": [{"id": "x", "attributes": {"skill": 2000}}]},
  {"age_seconds": 3, "players": [{"id": "y", "attributes": {"skill": 1000}}]},
  {"age_seconds": 2, "players": [{"id": "z", "attributes": {"skill": 1150}}]}]')
  FROM bf_config;

-- free-for-all with latency: the whole match keeps a region within 100 ms;
-- a candidate only in "us" cannot join a match playing in "eu"
SELECT pg_temp.backfill('{"match_size": {"min": 2, "max": 4},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 100}]}', '[
  {"age_seconds": 9, "players": [{"id": "a", "latencies": {"eu": 30}}]},
  {"age_seconds": 9, "players": [{"id": "b", "latencies": {"eu": 50, "us": 20}}]}]',
       '{2}', '[
  {"age_seconds": 4, "players": [{"id": "x", "latencies": {"us": 10}}]},
  {"age_seconds": 3, "players": [{"id": "y", "latencies": {"eu": 90}}]},
  {"age_seconds": 2, "players": [{"id": "z", "latencies": {"eu": 40, "us": 10}}]}]');

-- no candidate at all
SELECT pg_temp.backfill(c, m, '{1, 0}', '[]') FROM bf_config, bf_members;
