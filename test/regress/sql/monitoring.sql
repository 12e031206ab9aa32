-- Monitoring (docs/monitoring.md): mm.record_tick and mm.tick_runs, and
-- every figure of mm.queue_monitoring worked out by hand at explicit times
-- (below each query); every argument error; a dropped queue's tick runs go.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
SELECT mm.create_queue(q, '{"match_size": {"min": 2, "max": 2},
	"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}')
  FROM unnest(ARRAY['mon_duel', 'mon_quiet']) q;
-- four tickets created at 0, 10, 20 and 30 s, matched by the tick at 60 s
-- (waits 60, 50, 40, 30 s), two more at 120 s left searching
SELECT count(mm.create_ticket('mon_duel', jsonb_build_array(jsonb_build_object('id', 'mon_p' || i)),
							  '2026-03-01 00:00:00+00'::timestamptz + (i - 1) * '10 s'::interval)) AS created
  FROM generate_series(1, 4) i;
SELECT mm.tick('mon_duel', '2026-03-01 00:01:00+00') AS matches;
SELECT count(mm.create_ticket('mon_duel', jsonb_build_array(jsonb_build_object('id', 'mon_s' || i)),
							  '2026-03-01 00:02:00+00')) AS created
  FROM generate_series(1, 2) i;
-- the first match's two players (mon_p1, mon_p2) played a role, mon_p1 autofilled
UPDATE mm.match_players SET role = 'tank', autofilled = (player_id = 'mon_p1')
 WHERE queue = 'mon_duel'
   AND match_id = (SELECT min(match_id) FROM mm.match_players WHERE queue = 'mon_duel');
-- one player owes low-priority games, another's penalty has none
INSERT INTO mm.player_penalties (player_id, queue, offences, low_priority_games, updated_at)
VALUES ('mon_lp1', 'mon_duel', 3, 2, '2026-03-01 00:00:00+00'),
	   ('mon_lp2', 'mon_duel', 1, 0, '2026-03-01 00:00:00+00');
-- a tick of 0.5 s that succeeded, then one of 0.25 s that failed
SELECT mm.record_tick('mon_duel', '2026-03-01 00:04:00+00', '2026-03-01 00:04:00.5+00') AS recorded,
	   mm.record_tick('mon_duel', '2026-03-01 00:04:10+00', '2026-03-01 00:04:10.25+00', '40P01') AS recorded;

-- At 5 min over 5 min: 2 searching; waits p50 45 s, p95 58.5 s (50 + 0.85 *
-- 10); 4 matched; 2 matches / 5 min = 0.4; autofill 1 of 2 role players;
-- 1 low-priority player; 2 ticks, 1 failed, 0.75 s in all, the last 0.25 s;
-- the last success ended at 00:04:00.5 (epoch 1772323440.5), 59.5 s before.
-- mon_quiet: nothing, and no tick runs (NULL).
SELECT * FROM mm.queue_monitoring('5 minutes', '2026-03-01 00:05:00+00');
-- At 30 s, as it was: the four first tickets searching, nothing matched yet.
SELECT queue, searching_tickets, searching_players, tickets_matched, matches_per_minute, autofill_rate
  FROM mm.queue_monitoring('1 minute', '2026-03-01 00:00:30+00');
-- Over the last minute at 5 min: no match in the window (0 per minute, no
-- waits, no autofill figure); the standing figures stay.
SELECT queue, searching_tickets, wait_p50_seconds, tickets_matched, matches_per_minute, autofill_rate,
	   low_priority_players, ticks_total
  FROM mm.queue_monitoring('1 minute', '2026-03-01 00:05:00+00');
-- a success resets the failures in a row, the last error stays
SELECT mm.record_tick('mon_duel', '2026-03-01 00:04:20+00', '2026-03-01 00:04:20+00') AS recorded;
SELECT queue, ticks_total, failures_total, consecutive_failures, duration_seconds_total,
	   last_duration_seconds, last_started_at, last_success_at, last_failure_at, last_error_sqlstate
  FROM mm.tick_runs ORDER BY queue;
-- the view: the last 5 minutes at now (nothing of 2026-03-01 is that recent)
SELECT queue, searching_tickets, tickets_matched, ticks_total FROM mm.queue_monitoring;

-- argument errors
\i sql/include/try.sql
SELECT pg_temp.try($$SELECT mm.record_tick(NULL, now(), now())$$);
SELECT pg_temp.try($$SELECT mm.record_tick('mon_duel', NULL, now())$$);
SELECT pg_temp.try($$SELECT mm.record_tick('mon_duel', now(), NULL)$$);
SELECT pg_temp.try($$SELECT mm.record_tick('mon_duel', '-infinity', now())$$);
SELECT pg_temp.try($$SELECT mm.record_tick('mon_duel', '2026-03-01 00:00:01+00', '2026-03-01 00:00:00+00')$$);
SELECT pg_temp.try($$SELECT mm.record_tick('mon_duel', now(), now(), '4xP01')$$);
SELECT pg_temp.try($$SELECT mm.record_tick('mon_duel', now(), now(), '')$$);
SELECT mm.record_tick('mon_no_such_queue', now(), now()) AS recorded_unknown_queue;
SELECT pg_temp.try($$SELECT * FROM mm.queue_monitoring('0 s', now())$$);
SELECT pg_temp.try($$SELECT * FROM mm.queue_monitoring(NULL, now())$$);
SELECT pg_temp.try($$SELECT * FROM mm.queue_monitoring('5 minutes', NULL)$$);
SELECT pg_temp.try($$SELECT * FROM mm.queue_monitoring('5 minutes', 'infinity')$$);

-- a dropped queue's tick runs go with it
SELECT mm.drop_queue(q, true) FROM unnest(ARRAY['mon_duel', 'mon_quiet']) q;
SELECT count(*) AS tick_runs_left FROM mm.tick_runs;
DELETE FROM mm.player_penalties WHERE player_id IN ('mon_lp1', 'mon_lp2');
