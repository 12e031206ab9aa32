-- Metrics on hand-made tickets, matches and results at explicit times (on
-- 2041-06-15; "now" is 12:00 UTC).  Every expected figure is worked out by
-- hand in the comments.
\set SHOW_CONTEXT never
SET timezone = 'UTC';

SELECT mm.create_queue('metrics_q', '{"match_size": {"min": 2, "max": 4},
	"teams": [{"name": "red", "min": 1, "max": 2}, {"name": "blue", "min": 1, "max": 2}],
	"statistics": {"show_player_count": true, "show_time_to_match": true}}');
SELECT mm.create_queue('metrics_hidden', '{"match_size": {"min": 2, "max": 2},
	"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}');

-- ticket and match labels -> ids; players are "mx_<label>" with a skill and an eu latency
CREATE TEMP TABLE label (label text PRIMARY KEY, id bigint NOT NULL);
CREATE TEMP TABLE match_label (label text PRIMARY KEY, id bigint NOT NULL);
CREATE FUNCTION pg_temp.ticket(label text, created text, skill int, latency int) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO label
	SELECT label, mm.create_ticket('metrics_q',
		jsonb_build_array(jsonb_build_object('id', 'mx_' || label, 'attributes',
			jsonb_build_object('skill', skill), 'latencies', jsonb_build_object('eu', latency))),
		('2041-06-15 ' || created || '+00')::timestamptz)
$$;
-- a match of two tickets (red, blue) formed at `at`, region eu
CREATE FUNCTION pg_temp.match(label text, at text, quality float8, red text, blue text) RETURNS void
LANGUAGE sql AS $$
	WITH m AS (
		INSERT INTO mm.matches (queue, status, created_at, updated_at, region, quality)
		VALUES ('metrics_q', 'ready', ('2041-06-15 ' || at || '+00')::timestamptz,
				('2041-06-15 ' || at || '+00')::timestamptz, 'eu', quality)
		RETURNING id
	), l AS (
		INSERT INTO match_label SELECT label, id FROM m RETURNING id
	), p AS (
		INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team)
		SELECT l.id, 'metrics_q', tp.player_id, tp.ticket_id,
			   CASE WHEN t.label = red THEN 'red' ELSE 'blue' END
		  FROM l, label t JOIN mm.ticket_players tp ON tp.ticket_id = t.id
		 WHERE t.label IN (red, blue)
	)
	UPDATE mm.tickets SET status = 'matched', match_id = (SELECT id FROM l),
		   team = CASE WHEN id = (SELECT id FROM label WHERE label = red) THEN 'red' ELSE 'blue' END,
		   matched_at = ('2041-06-15 ' || at || '+00')::timestamptz,
		   updated_at = ('2041-06-15 ' || at || '+00')::timestamptz
	 WHERE id IN (SELECT id FROM label WHERE label IN (red, blue))
$$;
CREATE FUNCTION pg_temp.finish(label text, status text, at text) RETURNS void
LANGUAGE sql AS $$
	UPDATE mm.tickets SET status = finish.status, updated_at = ('2041-06-15 ' || at || '+00')::timestamptz
	 WHERE id = (SELECT id FROM label l WHERE l.label = finish.label)
$$;

--  ticket  created   outcome                          wait  skill latency
--  t1      11:10:00  match A at 11:10:10 (red)          10   1000  20
--  t2      11:10:05  match A (blue)                      5   1200  40
--  t4      11:19:00  match B at 11:21:00 (blue)        120   1100  50
--  t3      11:20:00  match B (red)                      60    900  30
--  t5      11:45:00  match C at 11:48:00 (red)         180   1000  60
--  t6      11:47:00  match C (blue)                     60   1000  80
--  t11     10:30:00  match D at 11:05:00 (red)        2100   1050  10
--  t12     10:50:00  match D (blue)                    900    950  30
--  t15     09:50:00  match E at 10:00:00 (red)         600   1000  20
--  t16     09:55:00  match E (blue)                    300   1000  20
--  t7      11:40:00  timed out at 11:42:00
--  t8      11:50:00  cancelled at 11:50:30 (after 30 s)
--  t13     10:00:00  cancelled at 10:10:00
--  t14     11:45:00  cancelled at 11:48:00 (after 180 s)
--  t9      11:57:00  searching
--  t10     11:59:00  searching, a party of two
SELECT pg_temp.ticket('t1', '11:10:00', 1000, 20), pg_temp.ticket('t2', '11:10:05', 1200, 40),
	   pg_temp.ticket('t4', '11:19:00', 1100, 50), pg_temp.ticket('t3', '11:20:00', 900, 30),
	   pg_temp.ticket('t5', '11:45:00', 1000, 60), pg_temp.ticket('t6', '11:47:00', 1000, 80),
	   pg_temp.ticket('t11', '10:30:00', 1050, 10), pg_temp.ticket('t12', '10:50:00', 950, 30),
	   pg_temp.ticket('t15', '09:50:00', 1000, 20), pg_temp.ticket('t16', '09:55:00', 1000, 20),
	   pg_temp.ticket('t7', '11:40:00', 1000, 20), pg_temp.ticket('t8', '11:50:00', 1000, 20),
	   pg_temp.ticket('t13', '10:00:00', 1000, 20), pg_temp.ticket('t14', '11:45:00', 1000, 20),
	   pg_temp.ticket('t9', '11:57:00', 1000, 20);
INSERT INTO label SELECT 't10', mm.create_ticket('metrics_q',
	'[{"id": "mx_t10a", "attributes": {"skill": 1000}}, {"id": "mx_t10b", "attributes": {"skill": 1000}}]',
	'2041-06-15 11:59:00+00');
SELECT pg_temp.match('A', '11:10:10', 0.9, 't1', 't2'), pg_temp.match('B', '11:21:00', 0.8, 't3', 't4'),
	   pg_temp.match('C', '11:48:00', 1.0, 't5', 't6'), pg_temp.match('D', '11:05:00', 0.7, 't11', 't12'),
	   pg_temp.match('E', '10:00:00', 0.95, 't15', 't16');
SELECT pg_temp.finish('t7', 'timed_out', '11:42:00'), pg_temp.finish('t8', 'cancelled', '11:50:30'),
	   pg_temp.finish('t13', 'cancelled', '10:10:00'), pg_temp.finish('t14', 'cancelled', '11:48:00');
SELECT l.label, t.status, jsonb_array_length(t.players) AS player_count, t.created_at, t.matched_at, t.updated_at
  FROM label l JOIN mm.tickets t ON t.id = l.id ORDER BY t.created_at, l.label;

-- Results, all reported within the hour (E's match formed before it, at 10:00).
-- C's prediction is a coin flip (0.5: equal ratings), so it names no favourite.
--  match  winner                         favourite  p     duration  reported
--  A      blue                           blue       0.76  20 min    11:35
--  B      red                            blue       0.76  30 min    11:55
--  C      ranks red 2, blue 1 -> blue    (red)      0.50  10 min    11:59
--  D      red                            red        0.64  20 min    11:30
--  E      ranks 1 and 1 (draw)           red        0.55  60 min    11:50
-- The queue is copied from the match, whatever the insert says.
INSERT INTO mm.match_results (match_id, queue, winner_team, ranks, predicted_favourite,
							  favourite_win_probability, duration, reported_at)
SELECT l.id, 'not_this_queue', r.winner, r.ranks::jsonb, r.favourite, r.p, r.duration::interval,
	   ('2041-06-15 ' || r.reported || '+00')::timestamptz
  FROM (VALUES ('A', 'blue', NULL, 'blue', 0.76, '20 min', '11:35'),
			   ('B', 'red', NULL, 'blue', 0.76, '30 min', '11:55'),
			   ('C', NULL, '{"red": 2, "blue": 1}', 'red', 0.5, '10 min', '11:59'),
			   ('D', 'red', NULL, 'red', 0.64, '20 min', '11:30'),
			   ('E', NULL, '{"red": 1, "blue": 1}', 'red', 0.55, '60 min', '11:50'))
	   AS r (label, winner, ranks, favourite, p, duration, reported)
  JOIN match_label l ON l.label = r.label;
SELECT l.label, r.queue FROM mm.match_results r JOIN match_label l ON l.id = r.match_id ORDER BY l.label;
-- Leavers (every one a leave): A starts 11:10:10 and lasts 20 min, so its
-- first 20% ends 11:14:10: leaving at 11:12 is an early quit.  B: 11:21 +
-- 6 min = 11:27, leaving at 11:27 is not (strictly before).  D: 11:05 +
-- 4 min, leaving at 11:20 is not.  E: 10:00 + 12 min, leaving at 10:05 is.
UPDATE mm.match_players mp SET left_at = ('2041-06-15 ' || v.at || '+00')::timestamptz
  FROM (VALUES ('t1', '11:12:00'), ('t3', '11:27:00'), ('t12', '11:20:00'), ('t15', '10:05:00')) v (label, at)
  JOIN label l ON l.label = v.label
 WHERE mp.ticket_id = l.id;

-- Result rows are checked
\set VERBOSITY terse
INSERT INTO mm.match_results (match_id) VALUES (-1);
INSERT INTO mm.match_results (match_id, favourite_win_probability, predicted_favourite)
SELECT id, 1.5, 'red' FROM match_label WHERE label = 'A';
INSERT INTO mm.match_results (match_id, predicted_favourite) SELECT id, 'red' FROM match_label WHERE label = 'A';
INSERT INTO mm.match_results (match_id, ranks) SELECT id, '[1, 2]' FROM match_label WHERE label = 'A';
INSERT INTO mm.match_results (match_id, duration) SELECT id, '-1 minute' FROM match_label WHERE label = 'A';
INSERT INTO mm.match_results (match_id) SELECT id FROM match_label WHERE label = 'A';
\set VERBOSITY default
-- the winner: winner_team, else a unique rank 1
SELECT mm.result_winner('blue', NULL) AS named, mm.result_winner(NULL, '{"a": 1, "b": 2}') AS rank_1,
	   mm.result_winner(NULL, '{"a": 1.0, "b": 2}') AS rank_1_0, mm.result_winner(NULL, '{"a": 1, "b": 1}') AS tie,
	   mm.result_winner(NULL, NULL) AS nothing, mm.result_winner('x', '{"a": 1}') AS named_first,
	   mm.result_winner(NULL, '{}') AS empty;

-- Ticket figures over the hour (11:00, 12:00]:
-- searching at 12:00: t9 (1 player) and t10 (2), oldest since 11:57 = 180 s.
-- Matched in the hour: t1 10, t2 5, t3 60, t4 120, t5 180, t6 60, t11 2100,
-- t12 900 (t15, t16 at 10:00 are outside): 8 tickets, average 3435 / 8 =
-- 429.375; sorted 5 10 60 60 120 180 900 2100: p50 = (60 + 120) / 2 = 90,
-- p95 = 900 + 0.65 * 1200 = 1680, p99 = 900 + 0.93 * 1200 = 2016.
-- Fill rate: tickets created in the hour with a verdict: t1 t2 t3 t4 t6
-- (within 120 s; t4 at exactly 120), t5 (180 s), t7 (timed out), t9
-- (searching 180 s), t14 (cancelled after 180 s) = 5 of 9 = 0.555556; t8
-- (cancelled after 30 s) and t10 (searching 60 s) have none yet.
-- Timeouts in the hour: t7; cancellations: t8, t14 (t13 was at 10:10).
-- Every figure is rounded to 3 decimals: the fill rate 5 / 9 shows as 0.556.
SELECT searching_tickets, searching_players, oldest_wait_s, tickets_matched,
	   time_to_match_avg_s AS avg, time_to_match_p50_s AS p50, time_to_match_p95_s AS p95,
	   time_to_match_p99_s AS p99, fill_rate, fill_rate_tickets, timeouts, cancellations
  FROM mm.ticket_metrics('metrics_q', '1 hour', '2041-06-15 12:00:00+00');
-- Over the last 30 minutes (11:30, 12:00]: matched t5 180, t6 60: average
-- 120, p50 120, p95 60 + 0.95 * 120 = 174, p99 60 + 0.99 * 120 = 178.8;
-- verdicts t5 t6 t7 t9 t14, in time t6: 1 of 5 = 0.2.
SELECT tickets_matched, time_to_match_avg_s AS avg, time_to_match_p50_s AS p50,
	   time_to_match_p95_s AS p95, time_to_match_p99_s AS p99, fill_rate,
	   fill_rate_tickets, timeouts, cancellations
  FROM mm.ticket_metrics('metrics_q', '30 minutes', '2041-06-15 12:00:00+00');
-- At 11:58:30 only t9 is searching (t10 comes at 11:59), for 90 s.
SELECT searching_tickets, searching_players, oldest_wait_s
  FROM mm.ticket_metrics('metrics_q', '1 hour', '2041-06-15 11:58:30+00');
-- The per queue form; the empty queue has zeros and no times.
SELECT queue, searching_tickets, searching_players, oldest_wait_s, tickets_matched,
	   time_to_match_p95_s AS p95, fill_rate, timeouts, cancellations
  FROM mm.queue_stats('1 hour', '2041-06-15 12:00:00+00') WHERE queue LIKE 'metrics%' ORDER BY queue;
-- the view: the same columns over the last hour of the real clock
SELECT queue, tickets_matched FROM mm.queue_stats WHERE queue LIKE 'metrics%' ORDER BY queue;

-- Per match over the hour: A, B, C, D (E formed at 10:00); one player a
-- team, so the skill spread (highest minus lowest player skill) and the team
-- skill gap (highest minus lowest team average) are the same: D |1050 - 950|
-- = 100, A |1000 - 1200| = 200, B |900 - 1100| = 200, C 0.  Latency (eu),
-- average and worst: D 20 and 30, A 30 and 40, B 40 and 50, C 70 and 80.
SELECT l.label, d.queue_name, d.created_at, d.region, d.players, d.teams, d.quality,
	   d.skill_spread, d.team_skill_gap, d.latency_avg_ms, d.worst_latency_ms
  FROM mm.match_details('metrics_q', '1 hour', '2041-06-15 12:00:00+00') d
  JOIN match_label l ON l.id = d.match_id
 ORDER BY d.created_at;
-- another skill attribute: nobody has one, so no skill figures
SELECT count(*), count(skill_spread), count(team_skill_gap)
  FROM mm.match_details('metrics_q', '1 hour', '2041-06-15 12:00:00+00', 'mmr');

-- Match figures over the hour: 4 matches of 2 players; match quality
-- (0.9 + 0.8 + 1.0 + 0.7) / 4 = 0.85; skill spread and team skill gap
-- (200 + 200 + 0 + 100) / 4 = 125; latency (20 + 30 + 40 + 70) / 4 = 40,
-- worst (30 + 40 + 50 + 80) / 4 = 50.
-- Results reported in the hour: A B C D E = 5.  With a known winner and a
-- favourite: A (won), B (lost), D (won): 2 / 3 = 0.667 against
-- (0.76 + 0.76 + 0.64) / 3 = 0.72 predicted: 5.333 points apart.  C's
-- prediction was a coin flip (0.5), one coin_flip_results: counted as a
-- favourite that lost, it made the gap 16.5 points.
-- Leaves: t1's, t3's, t12's and t15's players, 4 of the 10 players = 0.4;
-- early quits: t1's (A) and t15's (E), 2 of the 10 = 0.2.
-- No proposal or requeue in this queue (see metrics_life below).
SELECT matches, players_per_match, quality_avg, skill_spread_avg, team_skill_gap_avg,
	   latency_avg_ms, worst_latency_avg_ms, results, favourite_win_rate,
	   favourite_predicted_rate AS predicted, win_rate_balance_points AS balance_points,
	   coin_flip_results AS coin_flips, leaves, leave_rate, early_quits, early_quit_rate,
	   proposals_rejected, proposals_expired, matches_requeued
  FROM mm.match_metrics('metrics_q', '1 hour', '2041-06-15 12:00:00+00');
SELECT queue, matches, results, coin_flip_results, leaves, early_quits
  FROM mm.match_stats('1 hour', '2041-06-15 12:00:00+00') WHERE queue LIKE 'metrics%' ORDER BY queue;
-- A new rating pool: everyone at the same rating, every prediction a coin
-- flip.  No favourite, so no win-rate figures (counted as favourites, the
-- sides mm.report_result names first in a tie, they measured only how often
-- that side won: 0 to 50 points "missed" on a fair pool).
BEGIN;
UPDATE mm.match_results SET favourite_win_probability = 0.5 WHERE queue = 'metrics_q';
SELECT results, favourite_win_rate, favourite_predicted_rate, win_rate_balance_points, coin_flip_results
  FROM mm.match_metrics('metrics_q', '1 hour', '2041-06-15 12:00:00+00');
ROLLBACK;
SELECT queue, matches FROM mm.match_stats WHERE queue LIKE 'metrics%' ORDER BY queue;

-- Per minute.  11:18 to 11:21: t4 arrives at 11:19 and t3 at 11:20, both
-- matched at 11:21 (60 and 120 s: average 90, p95 60 + 0.95 * 60 = 117) in
-- match B (quality 0.8); searching at the end of each minute: 0, 1, 2, 0.
SELECT minute, tickets_created, tickets_matched, time_to_match_avg_s,
	   time_to_match_p95_s AS p95, matches, quality_avg, timeouts,
	   cancellations, searching_at_end
  FROM mm.queue_stats_by_minute('metrics_q', '2041-06-15 11:18:30+00', '2041-06-15 11:22:00+00');
-- 11:40 to 11:42: t7 arrives at 11:40 and times out at 11:42.
SELECT minute, tickets_created, timeouts, cancellations, searching_at_end
  FROM mm.queue_stats_by_minute('metrics_q', '2041-06-15 11:40:00+00', '2041-06-15 11:42:00.000001+00');
-- 11:48 to 11:51: t5 and t6 matched at 11:48 (180 and 60 s: average 120,
-- p95 60 + 0.95 * 120 = 174) in C (quality 1), t14 cancelled at 11:48; t8
-- arrives and is cancelled within 11:50, so never searching at a minute's end.
SELECT minute, tickets_created, tickets_matched, time_to_match_avg_s,
	   time_to_match_p95_s AS p95, matches, quality_avg, timeouts,
	   cancellations, searching_at_end
  FROM mm.queue_stats_by_minute('metrics_q', '2041-06-15 11:48:00+00', '2041-06-15 11:52:00+00');
-- 11:56 to 11:59: t9 at 11:57, t10 at 11:59, both still searching.
SELECT minute, tickets_created, searching_at_end
  FROM mm.queue_stats_by_minute('metrics_q', '2041-06-15 11:56:00+00', '2041-06-15 12:00:00+00');

-- What players see: 3 searching players; estimated wait: median time to match
-- of the tickets matched in the last 15 minutes (t5 180, t6 60) = 120 s.
SELECT * FROM mm.queue_statistics('metrics_q', '2041-06-15 12:00:00+00');
-- hidden by the queue's flags (both false by default)
SELECT * FROM mm.queue_statistics('metrics_hidden', '2041-06-15 12:00:00+00');
SELECT mm.alter_queue('metrics_q', config #- '{statistics,show_time_to_match}') FROM mm.queues WHERE name = 'metrics_q';
SELECT * FROM mm.queue_statistics('metrics_q', '2041-06-15 12:00:00+00');
SELECT mm.alter_queue('metrics_q', jsonb_set(config, '{statistics}',
	'{"show_player_count": false, "show_time_to_match": true}')) FROM mm.queues WHERE name = 'metrics_q';
SELECT * FROM mm.queue_statistics('metrics_q', '2041-06-15 12:00:00+00');
-- no ticket matched in the last 15 minutes: no estimate
SELECT * FROM mm.queue_statistics('metrics_q', '2041-06-15 12:30:00+00');

-- A 2v2 whose team averages are equal (1200 and 1200) but whose players are
-- 400 apart (1000 .. 1400): team skill gap 0, skill spread 400; latencies
-- 10, 20, 30, 100: average 40, worst 100.
SELECT mm.create_queue('metrics_teams', '{"teams": [{"name": "red", "min": 2, "max": 2},
	{"name": "blue", "min": 2, "max": 2}]}');
WITH t AS (
	SELECT v.team, mm.create_ticket('metrics_teams', jsonb_build_array(jsonb_build_object('id', v.player,
			   'attributes', jsonb_build_object('skill', v.skill), 'latencies', jsonb_build_object('eu', v.ms))),
		   '2041-06-15 11:30:00+00') AS id, v.player
	  FROM (VALUES ('red', 'mt1', 1000, 10), ('red', 'mt2', 1400, 20),
				   ('blue', 'mt3', 1200, 30), ('blue', 'mt4', 1200, 100)) v (team, player, skill, ms)
), m AS (
	INSERT INTO mm.matches (queue, status, created_at, updated_at, region, quality)
	VALUES ('metrics_teams', 'ready', '2041-06-15 11:31:00+00', '2041-06-15 11:31:00+00', 'eu', 0.3)
	RETURNING id
)
INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team)
SELECT m.id, 'metrics_teams', t.player, t.id, t.team FROM m, t;
SELECT players, teams, quality, skill_spread, team_skill_gap, latency_avg_ms, worst_latency_ms
  FROM mm.match_details('metrics_teams', '1 hour', '2041-06-15 12:00:00+00');

-- The report, for the queue and for all queues (metrics_q and metrics_teams
-- pooled: the figures of both).
SELECT * FROM mm.health_report('metrics_q', '1 hour', '2041-06-15 12:00:00+00');
SELECT metric, value, target, meets_target
  FROM mm.health_report(NULL, '1 hour', '2041-06-15 12:00:00+00')
 WHERE metric IN ('match quality', 'skill spread', 'team skill gap', 'worst latency (ms)', 'matches formed');
-- other targets; NULL leaves a figure without one
SELECT metric, target, meets_target
  FROM mm.health_report('metrics_q', '1 hour', '2041-06-15 12:00:00+00', min_quality => 0.9,
						max_time_to_match_p95_s => 1800, min_matched_within_2_min_pct => NULL,
						max_latency_avg_ms => 40, max_early_quit_pct => 20, max_win_rate_gap_points => 5.333)
 WHERE target IS NOT NULL OR metric = 'matched within 2 minutes (%)';
-- an empty queue: no figures, so no verdicts
SELECT * FROM mm.health_report('metrics_hidden', '1 hour', '2041-06-15 12:00:00+00');

-- Bad arguments
SELECT * FROM mm.queue_stats(NULL);
SELECT * FROM mm.queue_stats('0 seconds');
SELECT * FROM mm.queue_stats('-1 hour');
SELECT * FROM mm.queue_stats('1 hour', NULL);
SELECT * FROM mm.queue_stats('1 hour', 'infinity');
SELECT * FROM mm.ticket_metrics('no_such_queue');
SELECT * FROM mm.match_stats('-1 hour');
-- a window reaching before the earliest timestamp (now - time_window would overflow)
SELECT * FROM mm.queue_stats('178000000 years');
SELECT * FROM mm.ticket_metrics('metrics_q', '1 day', '4714-11-24 00:30:00+00 BC');
SELECT * FROM mm.match_metrics('no_such_queue');
SELECT * FROM mm.match_details('metrics_q', '1 hour', now(), NULL);
SELECT * FROM mm.health_report('metrics_q', NULL);
SELECT * FROM mm.health_report('no_such_queue');
-- an empty queue checks its arguments just the same
SELECT * FROM mm.match_details('metrics_hidden', '-1 hour');
SELECT * FROM mm.match_metrics('metrics_hidden', '1 hour', 'infinity');
SELECT * FROM mm.ticket_metrics('metrics_hidden', NULL);
SELECT * FROM mm.match_stats('1 hour', '-infinity');
-- targets: from 0 up to 1 (quality) or 100 (percentages, points), finite
SELECT * FROM mm.health_report('metrics_q', '1 hour', now(), min_quality => 1.5);
SELECT * FROM mm.health_report('metrics_q', '1 hour', now(), max_time_to_match_p95_s => -1);
SELECT * FROM mm.health_report('metrics_q', '1 hour', now(), max_latency_avg_ms => 'Infinity');
SELECT * FROM mm.health_report('metrics_q', '1 hour', now(), min_matched_within_2_min_pct => 'NaN');
SELECT * FROM mm.health_report('metrics_q', '1 hour', now(), max_early_quit_pct => 101);
SELECT * FROM mm.queue_statistics(NULL);
SELECT * FROM mm.queue_statistics('no_such_queue');
SELECT * FROM mm.queue_statistics('metrics_q', NULL);
SELECT * FROM mm.queue_stats_by_minute(NULL, now(), now());
SELECT * FROM mm.queue_stats_by_minute('metrics_q', NULL, now());
SELECT * FROM mm.queue_stats_by_minute('metrics_q', now(), NULL);
SELECT * FROM mm.queue_stats_by_minute('metrics_q', '2041-06-15 12:00+00', '2041-06-15 12:00+00');
SELECT * FROM mm.queue_stats_by_minute('metrics_q', '2041-06-15 12:00+00', '2041-06-15 11:00+00');
SELECT * FROM mm.queue_stats_by_minute('metrics_q', '2041-06-01 00:00+00', '2041-06-08 00:00:01+00');
-- far apart: to_time - from_time would overflow to a negative interval
SELECT * FROM mm.queue_stats_by_minute('metrics_q', '1900-01-01', '294276-12-31');
SELECT * FROM mm.queue_stats_by_minute('metrics_q', '-infinity', '2041-06-15 12:00+00');
SELECT * FROM mm.queue_stats_by_minute('metrics_q', '294276-12-31 23:00+00', '294276-12-31 23:59:30+00');
SELECT * FROM mm.queue_statistics('metrics_q', '4714-11-24 00:05:00+00 BC');
SELECT * FROM mm.queue_stats_by_minute('no_such_queue', '2041-06-15 11:00+00', '2041-06-15 12:00+00');

-- The metrics only read: every one of them runs in a read-only transaction.
BEGIN TRANSACTION READ ONLY;
SELECT count(*) FROM mm.queue_stats;
SELECT count(*) FROM mm.match_stats;
SELECT count(*) FROM mm.match_details();
SELECT count(*) FROM mm.health_report();
SELECT count(*) FROM mm.queue_statistics('metrics_q');
SELECT count(*) > 0 FROM mm.queue_stats_by_minute('metrics_q', now() - interval '1 hour', now());
COMMIT;

-- Analysts (and admins, through membership) may read every metric; other roles may not.
SET ROLE mm_analyst;
SELECT (SELECT count(*) FROM mm.queue_stats) AS queue_stats, (SELECT count(*) FROM mm.match_stats) AS match_stats,
	   (SELECT count(*) FROM mm.match_details('metrics_q', '1 hour', '2041-06-15 12:00:00+00')) AS details,
	   (SELECT count(*) FROM mm.health_report('metrics_q', '1 hour', '2041-06-15 12:00:00+00')) AS report,
	   (SELECT count(*) FROM mm.queue_stats_by_minute('metrics_q', '2041-06-15 11:00+00', '2041-06-15 12:00+00')) AS minutes,
	   (SELECT estimated_wait_s FROM mm.queue_statistics('metrics_q', '2041-06-15 12:00:00+00')) AS wait_s;
RESET ROLE;
SET ROLE mm_admin;
SELECT count(*) AS admin_report FROM mm.health_report(NULL, '1 hour', '2041-06-15 12:00:00+00');
RESET ROLE;
SET ROLE mm_frontend;
\set VERBOSITY terse
SELECT count(*) FROM mm.match_stats;
SELECT count(*) FROM mm.health_report('metrics_q');
\set VERBOSITY default
RESET ROLE;

-- A stored number too small for a float8 (a jsonb number may be 1e-400)
-- reads as 0, so the metrics still answer (a float8 cast of it fails).
-- Numbers beyond ±1e12 never get in: the ticket validation refuses them.
SELECT mm.create_queue('metrics_extreme', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 100}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('metrics_extreme', '[{"id": "xt1", "attributes": {"skill": 1e-400}, "latencies": {"eu": 1e-400}}]', '2041-06-15 11:59:00+00'),
  ('metrics_extreme', '[{"id": "xt2", "attributes": {"skill": 1000}, "latencies": {"eu": 20}}]', '2041-06-15 11:59:01+00');
SELECT mm.tick('metrics_extreme', '2041-06-15 11:59:02+00');
SELECT players, skill_spread, latency_avg_ms, worst_latency_ms
  FROM mm.match_details('metrics_extreme', '1 hour', '2041-06-15 12:00:00+00');
SELECT matches, skill_spread_avg FROM mm.match_stats('1 hour', '2041-06-15 12:00:00+00') WHERE queue = 'metrics_extreme';
SELECT mm.drop_queue('metrics_extreme', force => true);
-- how the metrics read a stored skill or latency: a number within ±1e12,
-- rounded at 12 decimals (so 1e-400 is 0); anything else is missing
SELECT v, mm.metrics_number(CAST(v AS jsonb)) AS read_as
  FROM (VALUES ('1e-400'), ('1000.5'), ('-1e12'), ('1.000000000001e12'), ('"12"'), ('null'),
			   ('true'), ('0.1234567890123456')) t(v);

-- a past now sees the queue as it was then: at 12:00:30 three tickets had
-- searched 30 s (two were matched at 12:00:40, one timed out at 12:02:01),
-- and no 120 s verdict was in yet
SELECT mm.create_queue('metrics_past', '{"match_size": {"min": 2, "max": 2}, "ticket_timeout_seconds": 120}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('metrics_past', '[{"id": "pa1"}]', '2041-01-01 12:00:00+00'),
  ('metrics_past', '[{"id": "pa2"}]', '2041-01-01 12:00:00+00');
SELECT mm.tick('metrics_past', '2041-01-01 12:00:40+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('metrics_past', '[{"id": "pa3"}]', '2041-01-01 12:00:00+00');
SELECT mm.tick('metrics_past', '2041-01-01 12:02:01+00');
SELECT searching_tickets, oldest_wait_s, fill_rate, fill_rate_tickets
  FROM mm.ticket_metrics('metrics_past', '1 hour', '2041-01-01 12:00:30+00');
SELECT searching_tickets, oldest_wait_s, fill_rate, fill_rate_tickets, timeouts
  FROM mm.ticket_metrics('metrics_past', '1 hour', '2041-01-01 12:03:00+00');
-- a proposed ticket is still searching (it is matched when the last answer
-- comes): the minutes before the acceptance keep their figures once the
-- match is accepted (they counted 0 before)
SELECT mm.create_queue('metrics_prop', '{"match_size": {"min": 2, "max": 2}, "acceptance_timeout_seconds": 600}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('metrics_prop', '[{"id": "pr1"}]', '2041-01-01 12:00:00+00'),
  ('metrics_prop', '[{"id": "pr2"}]', '2041-01-01 12:00:00+00');
SELECT mm.tick('metrics_prop', '2041-01-01 12:00:30+00');
SELECT minute, searching_at_end FROM mm.queue_stats_by_minute('metrics_prop', '2041-01-01 12:00+00', '2041-01-01 12:03+00');
SELECT searching_tickets FROM mm.ticket_metrics('metrics_prop', '1 hour', '2041-01-01 12:01:00+00');
SELECT mm.accept_match(mp.match_id, mp.player_id, true, '2041-01-01 12:02:10+00')
  FROM mm.match_players mp WHERE mp.queue = 'metrics_prop' ORDER BY mp.player_id;
SELECT minute, searching_at_end FROM mm.queue_stats_by_minute('metrics_prop', '2041-01-01 12:00+00', '2041-01-01 12:03+00');
SELECT searching_tickets FROM mm.ticket_metrics('metrics_prop', '1 hour', '2041-01-01 12:01:00+00');
SELECT mm.drop_queue('metrics_prop', force => true);
-- waits between the ends of the timestamp range do not overflow
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('metrics_past', '[{"id": "pa4"}]', '4713-06-01 00:00:00+00 BC');
SELECT oldest_wait_s > 0 AS positive_wait
  FROM mm.ticket_metrics('metrics_past', '1 hour', '294276-12-31 00:00:00+00');
SELECT mm.drop_queue('metrics_past', force => true);

-- one stored duration near the end of the range makes no metric fail
BEGIN;
UPDATE mm.match_results SET duration = '1500000 years' WHERE queue = 'metrics_q';
SELECT results, early_quits, early_quit_rate
  FROM mm.match_metrics('metrics_q', '1 hour', '2041-06-15 12:00:00+00');
ROLLBACK;

-- Proposals rejected and expired, matches requeued: the real lifecycle, on
-- 2041-06-16.  A proposal of la1 and la2 is rejected by la1 at 11:00:20;
-- la2 and lb1 are proposed at 11:01:10 and nobody answers by the deadline
-- (11:01:40): the tick at 11:02 cancels it.  In metrics_requeue, a ready
-- match is requeued at 11:30 (the director's reason: "server crashed").
SELECT mm.create_queue('metrics_life', '{"match_size": {"min": 2, "max": 2}, "acceptance_timeout_seconds": 30}');
SELECT mm.create_queue('metrics_requeue', '{"match_size": {"min": 2, "max": 2}}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('metrics_life', '[{"id": "la1"}]', '2041-06-16 11:00:00+00'),
  ('metrics_life', '[{"id": "la2"}]', '2041-06-16 11:00:01+00'),
  ('metrics_requeue', '[{"id": "lr1"}]', '2041-06-16 11:00:00+00'),
  ('metrics_requeue', '[{"id": "lr2"}]', '2041-06-16 11:00:00+00');
SELECT mm.tick('metrics_life', '2041-06-16 11:00:10+00');
SELECT mm.accept_match(mp.match_id, 'la1', false, '2041-06-16 11:00:20+00')
  FROM mm.match_players mp WHERE mp.queue = 'metrics_life' AND mp.player_id = 'la1';
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('metrics_life', '[{"id": "lb1"}]', '2041-06-16 11:01:00+00');
SELECT mm.tick('metrics_life', '2041-06-16 11:01:10+00');
SELECT mm.tick('metrics_life', '2041-06-16 11:02:00+00');
SELECT mm.tick('metrics_requeue', '2041-06-16 11:00:10+00');
SELECT cardinality(mm.requeue_match(m.id, 'server crashed', '2041-06-16 11:30:00+00')) AS requeued_tickets
  FROM mm.matches m WHERE m.queue = 'metrics_requeue';
SELECT queue, status, cancel_reason, updated_at FROM mm.matches
 WHERE queue IN ('metrics_life', 'metrics_requeue') ORDER BY id;
-- matches counts the matches formed and not cancelled while proposed: the
-- two proposals of metrics_life are no matches (proposals_cancelled, by
-- when they were formed), the requeued match was one (it was ready); the
-- averages, match_details and the health report leave the proposals out too
SELECT queue, matches, proposals_cancelled, proposals_rejected, proposals_expired, matches_requeued,
	   matches_expired, quality_avg
  FROM mm.match_stats('1 hour', '2041-06-16 12:00:00+00') WHERE queue IN ('metrics_life', 'metrics_requeue')
 ORDER BY queue;
SELECT queue_name, count(*) FROM mm.match_details(NULL, '1 hour', '2041-06-16 12:00:00+00')
 WHERE queue_name IN ('metrics_life', 'metrics_requeue') GROUP BY queue_name ORDER BY queue_name;
SELECT metric, value FROM mm.health_report('metrics_life', '1 hour', '2041-06-16 12:00:00+00')
 WHERE metric IN ('matches formed', 'proposals cancelled', 'match quality');
SELECT sum(matches) AS matches, sum(quality_avg) AS quality
  FROM mm.queue_stats_by_minute('metrics_life', '2041-06-16 11:00:00+00', '2041-06-16 12:00:00+00');
-- a proposal still waiting for answers is neither yet
BEGIN;
UPDATE mm.matches SET status = 'proposed', cancel_reason = NULL
 WHERE queue = 'metrics_life' AND cancel_reason = 'rejected';
SELECT matches, proposals_cancelled FROM mm.match_metrics('metrics_life', '1 hour', '2041-06-16 12:00:00+00');
ROLLBACK;
-- by when they were cancelled: the window (11:01, 11:31] holds the expiry
-- and the requeue, not the rejection at 11:00:20
SELECT proposals_rejected, proposals_expired, matches_requeued, matches_expired
  FROM mm.match_metrics(NULL, '30 minutes', '2041-06-16 11:31:00+00');
-- a live match the tick cancels as expired (matches_expired), or a proposal
-- a cancelled ticket ended, is no requeue
BEGIN;
UPDATE mm.matches SET cancel_reason = 'expired' WHERE queue = 'metrics_requeue';
UPDATE mm.matches SET cancel_reason = 'ticket_cancelled' WHERE queue = 'metrics_life' AND cancel_reason = 'rejected';
SELECT proposals_rejected, proposals_expired, matches_requeued, matches_expired
  FROM mm.match_metrics(NULL, '1 hour', '2041-06-16 12:00:00+00');
ROLLBACK;
SELECT mm.drop_queue('metrics_life', force => true);
SELECT mm.drop_queue('metrics_requeue', force => true);

SELECT mm.drop_queue('metrics_q', force => true);
SELECT mm.drop_queue('metrics_hidden');
SELECT mm.drop_queue('metrics_teams', force => true);
SELECT count(*) FROM mm.match_results WHERE queue LIKE 'metrics%';
