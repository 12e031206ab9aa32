-- The demo's example queues (test/demo.sh runs this file).
--
-- ranked_5v5: two teams of five; tickets of similar skill, fair teams,
--   low latency, every limit widening the longer the oldest ticket waits.
-- casual: 3 to 4 a side, same game mode (deathmatch or capture) for the
--   first 20 seconds, then anyone.
-- rd_classic, rd_survival, rd_practice: Radiant vs Dire, the three modes of
--   Amazon GameLift FlexMatch's published simulation (the same rules mm_sim
--   --flexmatch replays in simulated time): equal team sizes, each team's
--   average skill within 20 of the match average (for two equal teams: team
--   averages within 40 of each other), every latency <= 80 ms; skill
--   widens to 200 (400 between teams) at 20 s and 1000 (2000) at 40 s,
--   latency to 120 ms at 30 s and 2000 ms at 120 s; tickets time out at 120 s.
-- ranked_5v5 asks its players to accept the match within 10 seconds (as
-- FlexMatch's acceptance step does), and every queue rates its players in
-- one Glicko-2 pool, "demo", so each reported result carries the stored
-- ratings' favourite (the report's win balance).

\o /dev/null
SELECT mm.create_queue('ranked_5v5', $$
{"match_size": {"min": 10, "max": 10},
 "teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}],
 "ticket_timeout_seconds": 120,
 "acceptance_timeout_seconds": 10,
 "rating": {"system": "glicko2", "pool": "demo"},
 "statistics": {"show_player_count": true, "show_time_to_match": true},
 "rules": [
   {"name": "skill", "type": "difference", "attribute": "skill", "max": 150, "merge": "average",
    "weight": 2, "expansion": {"every_seconds": 10, "delta": 100, "limit": 900}},
   {"name": "fair_teams", "type": "team_difference", "attribute": "skill", "max": 50,
    "expansion": {"every_seconds": 15, "delta": 50, "limit": 300}},
   {"name": "ping", "type": "latency", "max_ms": 80,
    "expansion": {"every_seconds": 15, "steps": [100, 150, null]}}]}
$$);

SELECT mm.create_queue('casual', $$
{"match_size": {"min": 6, "max": 8},
 "teams": [{"name": "north", "min": 3, "max": 4}, {"name": "south", "min": 3, "max": 4}],
 "ticket_timeout_seconds": 90,
 "rating": {"system": "glicko2", "pool": "demo"},
 "statistics": {"show_player_count": true, "show_time_to_match": true},
 "rules": [
   {"name": "same_mode", "type": "string_equality", "attribute": "mode",
    "seconds_until_optional": 20},
   {"name": "even_sides", "type": "team_size_balance", "max_difference": 1},
   {"name": "ping", "type": "latency", "max_ms": 120}]}
$$);

-- The Radiant vs Dire modes differ only in their team sizes.
SELECT mm.create_queue('rd_' || mode, pg_catalog.format($$
{"match_size": {"min": %s, "max": %s},
 "teams": [{"name": "radiant", "min": %s, "max": %s}, {"name": "dire", "min": %s, "max": %s}],
 "ticket_timeout_seconds": 120,
 "rating": {"system": "glicko2", "pool": "demo"},
 "rules": [
   {"name": "equal_teams", "type": "team_size_balance", "max_difference": 0},
   {"name": "fair_teams", "type": "team_difference", "attribute": "skill", "max": 40,
    "expansion": {"every_seconds": 20, "steps": [400, 2000]}},
   {"name": "fast_connection", "type": "latency", "max_ms": 80,
    "expansion": {"every_seconds": 30, "steps": [120, 120, 120, 2000]}}]}
$$, 2 * team_min, 2 * team_max, team_min, team_max, team_min, team_max)::jsonb)
  FROM (VALUES ('classic', 4, 6), ('survival', 1, 3), ('practice', 2, 8)) AS m(mode, team_min, team_max)
 ORDER BY mode;
\o

SELECT name, config->'match_size' AS match_size, jsonb_array_length(config->'rules') AS rules
  FROM mm.queues ORDER BY name;
