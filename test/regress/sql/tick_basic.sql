-- mm.tick basics: a free-for-all queue, the returned count, what is written,
-- a second tick, cancelled and timed out tickets, largest match first, all
-- queues at once, bad arguments.  Every call passes an explicit now.
SET timezone = 'UTC';

\i sql/include/tick_helpers.sql
-- Each ticket's first player and state.
CREATE FUNCTION pg_temp.tickets(q text)
RETURNS TABLE (player text, status text, matched boolean, matched_at timestamptz)
LANGUAGE sql AS $$
	SELECT t.players -> 0 ->> 'id', t.status, t.match_id IS NOT NULL, t.matched_at
	  FROM mm.tickets t WHERE t.queue = q ORDER BY t.created_at, t.id
$$;

SELECT mm.create_queue('tb_ffa', '{"match_size": {"min": 2, "max": 4},
  "ticket_timeout_seconds": 60,
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');

-- Five compatible players and one far away; a 4-player match forms first.
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tb_ffa', '[{"id": "a", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('tb_ffa', '[{"id": "b", "attributes": {"skill": 1050}}]', '2026-01-01 00:00:01+00'),
  ('tb_ffa', '[{"id": "c", "attributes": {"skill": 2000}}]', '2026-01-01 00:00:02+00'),
  ('tb_ffa', '[{"id": "d", "attributes": {"skill": 980}}]', '2026-01-01 00:00:03+00'),
  ('tb_ffa', '[{"id": "e", "attributes": {"skill": 1010}}]', '2026-01-01 00:00:04+00'),
  ('tb_ffa', '[{"id": "f", "attributes": {"skill": 1020}}]', '2026-01-01 00:00:05+00');

-- returns the number of matches formed: a with its closest candidates e (10),
-- d (20) and f (20, ties by age), before b (50); b and c wait
SELECT mm.tick('tb_ffa', '2026-01-01 00:00:10+00');
-- quality: 1 - (1020 - 980) / 100 = 0.6; team is NULL without teams
SELECT * FROM pg_temp.matches('tb_ffa');
SELECT * FROM pg_temp.tickets('tb_ffa');
SELECT m.status, m.created_at, m.updated_at FROM mm.matches m WHERE m.queue = 'tb_ffa';
-- the players of matched tickets stay held while their match is live
SELECT tp.player_id, EXISTS (SELECT 1 FROM mm.active_players ap WHERE ap.player_id = tp.player_id) AS held
  FROM mm.ticket_players tp WHERE tp.queue = 'tb_ffa' ORDER BY 1;
SELECT queue, locked_out, tickets_loaded, tickets_timed_out, matches, players_matched,
	   load_ms >= 0 AND compute_ms >= 0 AND write_ms >= 0 AS timed, memory_bytes > 0 AS measured
  FROM mm.last_tick_stats();

-- a second tick finds nothing new: b (1050) and c (2000) are too far apart
SELECT mm.tick('tb_ffa', '2026-01-01 00:00:11+00');
SELECT tickets_loaded, matches FROM mm.last_tick_stats();

-- once the match is completed, its players are free to queue again
SELECT mm.complete_match(id, '2026-01-01 00:00:11+00') FROM mm.matches WHERE queue = 'tb_ffa';
SELECT tp.player_id, EXISTS (SELECT 1 FROM mm.active_players ap WHERE ap.player_id = tp.player_id) AS held
  FROM mm.ticket_players tp WHERE tp.queue = 'tb_ffa' ORDER BY 1;

-- a smaller match (>= min 2) forms when no larger one can: b with g
INSERT INTO mm.tickets (queue, players, created_at)
VALUES ('tb_ffa', '[{"id": "g", "attributes": {"skill": 1100}}]', '2026-01-01 00:00:12+00');
SELECT mm.tick('tb_ffa', '2026-01-01 00:00:13+00');
SELECT * FROM pg_temp.matches('tb_ffa') WHERE n = 2;

-- a cancelled ticket is never matched
SELECT mm.create_ticket('tb_ffa', '[{"id": "h", "attributes": {"skill": 2010}}]', '2026-01-01 00:00:20+00') AS h_ticket \gset
SELECT mm.cancel_ticket(:h_ticket);
SELECT mm.tick('tb_ffa', '2026-01-01 00:00:21+00');
SELECT * FROM pg_temp.tickets('tb_ffa') WHERE player IN ('c', 'h');

-- timeouts: strictly older than ticket_timeout_seconds (60)
SELECT mm.tick('tb_ffa', '2026-01-01 00:01:02+00');  -- c is exactly 60 s old: still searching
SELECT status FROM mm.tickets WHERE players -> 0 ->> 'id' = 'c';
SELECT mm.tick('tb_ffa', '2026-01-01 00:01:02.000001+00');  -- now older: timed out
SELECT * FROM pg_temp.tickets('tb_ffa') WHERE player = 'c';
SELECT tickets_loaded, tickets_timed_out, matches FROM mm.last_tick_stats();
-- the player is released and may queue again
SELECT EXISTS (SELECT 1 FROM mm.active_players WHERE player_id = 'c') AS active;
SELECT mm.create_ticket('tb_ffa', '[{"id": "c", "attributes": {"skill": 2000}}]', '2026-01-01 00:02:00+00') > 0 AS requeued;
-- a matched ticket's status is final (it sits in its match's players): 55000
\set VERBOSITY sqlstate
UPDATE mm.tickets SET status = 'cancelled' WHERE queue = 'tb_ffa' AND status = 'matched';
\set VERBOSITY default
-- a ticket created after now waits for a tick whose now has reached it (a
-- time to match is never negative)
SELECT mm.create_ticket('tb_ffa', '[{"id": "i", "attributes": {"skill": 1990}}]', '2026-01-01 00:02:30+00') > 0 AS future;
SELECT mm.tick('tb_ffa', '2026-01-01 00:02:01+00');
SELECT tickets_loaded, matches FROM mm.last_tick_stats();
SELECT mm.tick('tb_ffa', '2026-01-01 00:02:30+00');
SELECT * FROM pg_temp.matches('tb_ffa') WHERE n = 3;
SELECT count(*) AS negative_waits FROM mm.tickets WHERE queue = 'tb_ffa' AND matched_at < created_at;

-- a notification queue filled to matchmaking.max_notify_queue_usage stops a
-- tick before it forms matches (its commit would fail); 0 stands for a full queue
SET matchmaking.max_notify_queue_usage = 0;
\set VERBOSITY sqlstate
SELECT mm.tick('tb_ffa', '2026-01-01 00:02:31+00');
\set VERBOSITY default
RESET matchmaking.max_notify_queue_usage;
SHOW matchmaking.max_notify_queue_usage;
SET matchmaking.max_notify_queue_usage = 1.5;

-- tick of all queues (NULL): every queue in name order, the total returned
SELECT mm.create_queue('tb_all_1', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.create_queue('tb_all_2', '{"match_size": {"min": 3, "max": 3}}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tb_all_1', format('[{"id": "x%s"}]', g)::jsonb, '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 s'
  FROM generate_series(1, 5) g;
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tb_all_2', format('[{"id": "y%s"}]', g)::jsonb, '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 s'
  FROM generate_series(1, 6) g;
-- (other files' queues, if any were left, would be ticked too: the total is
-- checked against the per-queue statistics)
SELECT mm.tick(NULL, '2026-01-01 00:00:10+00') AS total \gset
SELECT :total = sum(matches) AS total_is_sum, :total >= 4 AS at_least_ours FROM mm.last_tick_stats();
SELECT queue, tickets_loaded, matches, players_matched FROM mm.last_tick_stats() WHERE queue LIKE 'tb\_%' ORDER BY queue;
SELECT * FROM pg_temp.matches('tb_all_1');
SELECT * FROM pg_temp.matches('tb_all_2');

-- a queue without tickets
SELECT mm.create_queue('tb_empty', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.tick('tb_empty', '2026-01-01 00:00:00+00');
SELECT queue, locked_out, tickets_loaded, matches FROM mm.last_tick_stats();
-- now defaults to now()
SELECT mm.tick('tb_empty');

-- bad arguments
SELECT mm.tick('tb_no_such_queue', '2026-01-01 00:00:00+00');
SELECT mm.tick('tb_ffa', NULL);
SELECT mm.tick(NULL, NULL);
SELECT mm.tick('tb_ffa', 'infinity');
SELECT mm.tick('tb_ffa', '-infinity');
SELECT mm.tick('', '2026-01-01 00:00:00+00');

-- nothing was left behind by the errors
SELECT count(*) FROM mm.matches WHERE queue LIKE 'tb_%';

-- the tick rolls back with its transaction
BEGIN;
SELECT mm.create_ticket('tb_empty', '[{"id": "r1"}]', '2026-01-01 00:00:00+00') > 0 AS r1,
	   mm.create_ticket('tb_empty', '[{"id": "r2"}]', '2026-01-01 00:00:00+00') > 0 AS r2;
COMMIT;
BEGIN;
SELECT mm.tick('tb_empty', '2026-01-01 00:00:01+00');
ROLLBACK;
SELECT * FROM pg_temp.tickets('tb_empty');
SELECT count(*) FROM mm.matches WHERE queue = 'tb_empty';

--
-- Rows the validation would have refused (written straight into the
-- partition, which skips it, as for a corrupt table): the tick copes.
--

-- A ticket created at -infinity is infinitely old: its rules are fully
-- expanded (the age is computed without overflow), so x and y match.
SELECT mm.create_queue('tb_inf', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 0,
             "expansion": {"every_seconds": 1, "delta": 1000}}]}');
INSERT INTO mm.tickets_active (queue, players, created_at) VALUES
  ('tb_inf', '[{"id": "inf_x", "attributes": {"skill": 0}}]', '-infinity'),
  ('tb_inf', '[{"id": "inf_y", "attributes": {"skill": 500}}]', '2026-01-01 00:00:00+00');
SELECT mm.tick('tb_inf', '2026-01-01 00:00:00+00');
SELECT * FROM pg_temp.matches('tb_inf');

-- One queue whose tick fails (a ticket without players) does not stop a tick
-- of all queues: that queue's tick is rolled back (its old ticket is not
-- timed out) and reported as a WARNING, and the other queues are ticked.
SELECT mm.create_queue('tb_bad', '{"match_size": {"min": 2, "max": 2}, "ticket_timeout_seconds": 60}');
SELECT mm.create_queue('tb_good', '{"match_size": {"min": 2, "max": 2}}');
INSERT INTO mm.tickets_active (id, queue, players, created_at) VALUES
  (990001, 'tb_bad', '[]', '2026-01-01 00:00:00+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tb_bad', '[{"id": "bad_old"}]', '2025-12-31 00:00:00+00'),
  ('tb_good', '[{"id": "good_1"}]', '2026-01-01 00:00:00+00'),
  ('tb_good', '[{"id": "good_2"}]', '2026-01-01 00:00:01+00');
-- (tb_empty's r1 and r2, whose earlier tick was rolled back, match too)
SELECT mm.tick(NULL, '2026-01-01 00:00:05+00') AS total \gset
SELECT :total = sum(matches) AS total_is_sum FROM mm.last_tick_stats();
SELECT queue, tickets_loaded, tickets_timed_out, matches FROM mm.last_tick_stats() WHERE queue LIKE 'tb\_%' ORDER BY queue;
SELECT * FROM pg_temp.tickets('tb_bad');
SELECT * FROM pg_temp.matches('tb_good');
-- a tick of that queue alone raises the error
SELECT mm.tick('tb_bad', '2026-01-01 00:00:05+00');

-- Match ids are paired with their matches whatever order the identity
-- hands them out in (here descending): each match's region is where its
-- players are.
SELECT last_value AS matches_seq_last, is_called AS matches_seq_called FROM mm.matches_id_seq \gset
ALTER TABLE mm.matches ALTER COLUMN id SET INCREMENT BY -1 RESTART WITH 1000000;
SELECT mm.create_queue('tb_ids', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 50}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tb_ids', '[{"id": "ids_eu1", "latencies": {"eu": 10}}]', '2026-01-01 00:00:00+00'),
  ('tb_ids', '[{"id": "ids_us1", "latencies": {"us": 10}}]', '2026-01-01 00:00:01+00'),
  ('tb_ids', '[{"id": "ids_eu2", "latencies": {"eu": 20}}]', '2026-01-01 00:00:02+00'),
  ('tb_ids', '[{"id": "ids_us2", "latencies": {"us": 20}}]', '2026-01-01 00:00:03+00');
SELECT mm.tick('tb_ids', '2026-01-01 00:00:05+00');
SELECT m.region, string_agg(mp.player_id, ' ' ORDER BY mp.player_id) AS players,
	   bool_and(mp.player_id LIKE 'ids_' || m.region || '%') AS paired_right
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE m.queue = 'tb_ids' GROUP BY m.id, m.region ORDER BY m.region;
ALTER TABLE mm.matches ALTER COLUMN id SET INCREMENT BY 1;
SELECT setval('mm.matches_id_seq', :matches_seq_last, :'matches_seq_called') > 0 AS sequence_restored;

-- A matched ticket ends as it was stored: players kept compressed (tb_big_1)
-- or out of line (tb_big_2, incompressible) come back whole in
-- mm.tickets_ended, with the ticket's creation time.
SELECT mm.create_queue('tb_big', '{"match_size": {"min": 2, "max": 2}}');
CREATE TEMP TABLE tb_big_src AS
SELECT n, jsonb_build_array(jsonb_build_object('id', 'tb_big_' || n, 'attributes',
         jsonb_build_object('bio', CASE n WHEN 1 THEN repeat('abcd', 5000)
           ELSE (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g) END))) AS players,
       timestamptz '2026-01-01 00:00:00+00' + n * interval '1 second' AS created_at
  FROM generate_series(1, 2) n;
INSERT INTO mm.tickets (queue, players, created_at) SELECT 'tb_big', players, created_at FROM tb_big_src ORDER BY n;
SELECT n, pg_column_size(a.players) < octet_length(a.players::text) AS compressed,
       pg_column_size(a.players) > 8000 AS out_of_line
  FROM mm.tickets_active a JOIN tb_big_src s ON s.players = a.players ORDER BY n;
SELECT mm.tick('tb_big', '2026-01-01 00:00:05+00');
SELECT s.n, e.status, e.players = s.players AS same_players, e.created_at = s.created_at AS same_created_at,
       e.match_id IS NOT NULL AS has_match
  FROM tb_big_src s LEFT JOIN mm.tickets_ended e ON e.players = s.players ORDER BY s.n;

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['tb_ffa', 'tb_all_1', 'tb_all_2', 'tb_empty', 'tb_inf', 'tb_bad', 'tb_good', 'tb_ids', 'tb_big']) q;
