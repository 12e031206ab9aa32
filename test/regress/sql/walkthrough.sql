-- The README's walk-through, generated from README.md by
-- test/scripts/check_walkthrough.sh --write: edit the README, not this file.
-- It runs in a fresh database of its own, with PostgreSQL's default date
-- and interval styles (pg_regress sets others).
SELECT current_database() AS regress_database \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS mm_walkthrough;
RESET client_min_messages;
CREATE DATABASE mm_walkthrough;
\c mm_walkthrough
SET datestyle = 'ISO, MDY';
SET intervalstyle = 'postgres';
-- the README's blocks, top to bottom
CREATE EXTENSION IF NOT EXISTS matchmaking;
SET timezone = 'UTC';

SELECT mm.create_queue('ranked', '{
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "ticket_timeout_seconds": 120,
  "rules": [
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
     "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
    {"name": "ping", "type": "latency", "max_ms": 80}]}');

INSERT INTO mm.tickets (queue, players, created_at) VALUES
 ('ranked', '[{"id": "ana", "attributes": {"skill": 1510}, "latencies": {"eu-west": 35, "us-east": 90}}]', '2026-11-22 12:00:00+00'),
 ('ranked', '[{"id": "ben", "attributes": {"skill": 1480}, "latencies": {"eu-west": 40, "us-east": 70}},
              {"id": "cho", "attributes": {"skill": 1620}, "latencies": {"eu-west": 30, "us-east": 95}}]', '2026-11-22 12:00:02+00'),
 ('ranked', '[{"id": "dev", "attributes": {"skill": 1550}, "latencies": {"eu-west": 60, "us-east": 20}}]', '2026-11-22 12:00:05+00'),
 ('ranked', '[{"id": "eve", "attributes": {"skill": 2300}, "latencies": {"eu-west": 25}}]', '2026-11-22 12:00:05+00')
RETURNING id;

SELECT mm.tick('ranked', '2026-11-22 12:00:06+00');

SELECT id, status, region, round(quality::numeric, 3) AS quality, rule_steps FROM mm.matches;

SELECT player_id, team, ticket_id FROM mm.match_players ORDER BY team, player_id;

SELECT match_id, round(quality::numeric, 3) AS quality, skill_spread, team_skill_gap,
       latency_avg_ms, worst_latency_ms
  FROM mm.match_details('ranked', '1 hour', '2026-11-22 12:01:00+00');

SELECT round(rating::numeric, 2) AS rating, round(rd::numeric, 2) AS rd,
       round(volatility::numeric, 6) AS volatility
  FROM mm.glicko2_update(1500, 200, 0.06, ARRAY[1400, 1550, 1700], ARRAY[30, 100, 300],
                         ARRAY[1, 0, 0]);

SELECT queue, searching_players, oldest_wait_s, tickets_matched,
       round(time_to_match_avg_s::numeric, 2) AS wait_avg_s, time_to_match_p95_s AS wait_p95_s
  FROM mm.queue_stats('1 hour', '2026-11-22 12:01:00+00');

SELECT metric, value, target, meets_target
  FROM mm.health_report('ranked', '1 hour', '2026-11-22 12:01:00+00');

SELECT mm.complete_match(1, '2026-11-22 12:30:00+00');
SELECT mm.cancel_ticket(4);
SELECT id, status FROM mm.tickets ORDER BY id;
-- end of the README's blocks
\c :regress_database
DROP DATABASE mm_walkthrough;
