-- The lifecycle by (queue, id): each function's form that takes the queue
-- first (the form Citus routes to the queue's shard) does what the id-only
-- form does; a match or ticket of another queue is reported as missing,
-- naming the queue; a NULL queue is 22004.  Ids are compared with the rows
-- this file made, never shown.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
\i sql/include/try.sql
SELECT mm.create_queue('bq_acc', '{"teams": [{"name": "red", "min": 1, "max": 1},
                                             {"name": "blue", "min": 1, "max": 1}],
                                   "acceptance_timeout_seconds": 10,
                                   "rating": {"system": "elo"}}');
SELECT mm.create_queue('bq_auto', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                              {"name": "blue", "min": 2, "max": 2}],
                                    "auto_backfill": true}');

-- acceptance: one match accepted by both, one rejected
SELECT ticket_id AS ta1, token AS tok1 FROM mm.create_ticket_with_token('bq_acc', '[{"id": "bq_a1"}]', '2026-05-01 00:00:00+00') \gset
SELECT mm.create_ticket('bq_acc', '[{"id": "bq_a2"}]', '2026-05-01 00:00:01+00') AS ta2 \gset
SELECT mm.tick('bq_acc', '2026-05-01 00:00:02+00') AS matches;
SELECT max(id) AS ma FROM mm.matches WHERE queue = 'bq_acc' \gset
SELECT mm.accept_match('bq_acc', :ma, 'bq_a1', true, '2026-05-01 00:00:03+00');
SELECT mm.accept_match('bq_acc', :ma, 'bq_a2', true, '2026-05-01 00:00:04+00');
SELECT mm.create_ticket('bq_acc', '[{"id": "bq_r1"}]', '2026-05-01 00:00:05+00') AS tr1 \gset
SELECT mm.create_ticket('bq_acc', '[{"id": "bq_r2"}]', '2026-05-01 00:00:06+00') AS tr2 \gset
SELECT mm.tick('bq_acc', '2026-05-01 00:00:07+00') AS matches;
SELECT max(id) AS mr FROM mm.matches WHERE queue = 'bq_acc' \gset
SELECT mm.accept_match('bq_acc', :mr, 'bq_r1', false, '2026-05-01 00:00:08+00');
SELECT id - :tr1 AS ticket, status FROM mm.tickets WHERE id IN (:tr1, :tr2) ORDER BY id;
-- assign, the assignment by (queue, id) for the director and with the token
SELECT mm.assign('bq_acc', :ma, 'udp://10.0.0.1:7777', '{"region": "eu"}');
SELECT ticket_id = :ta1 AS is_ta1, ticket_status, match_id = :ma AS is_ma, match_status, team, connection, properties
  FROM mm.get_assignment('bq_acc', :ta1);
SELECT ticket_status, match_status, connection FROM mm.get_assignment('bq_acc', :ta1, :'tok1');
SELECT count(*) AS rows_of_other_queue FROM mm.get_assignment('bq_auto', :ta1);
SELECT count(*) AS rows_of_other_queue FROM mm.get_assignment('bq_auto', :ta1, :'tok1');
SELECT regexp_replace(pg_temp.try(format('SELECT * FROM mm.get_assignment(%L, %s, %L)', 'bq_acc', :ta1, 'wrong')),
					  'ticket [0-9]+', 'ticket N') AS wrong_token;
-- the result: ratings and history written once, the match completed
SELECT player_id, team, rank, round(rating_before) AS before, round(rating_after) AS after
  FROM mm.report_result('bq_acc', :ma, '{"red": 1, "blue": 2}', '2026-05-01 00:10:00+00');
SELECT status FROM mm.matches WHERE id = :ma;
SELECT count(*) AS history_rows FROM mm.rating_history WHERE match_id = :ma;
SELECT count(*) AS held FROM mm.active_players WHERE player_id IN ('bq_a1', 'bq_a2');

-- leave, backfill, cancel_backfill, complete, requeue on a queue with auto_backfill
SELECT mm.create_ticket('bq_auto', format('[{"id": "bq_p%s"}]', i)::jsonb,
						'2026-05-01 01:00:00+00'::timestamptz + i * interval '1 second') IS NOT NULL AS created
  FROM generate_series(1, 4) i;
SELECT mm.tick('bq_auto', '2026-05-01 01:00:10+00') AS matches;
SELECT max(id) AS mb FROM mm.matches WHERE queue = 'bq_auto' \gset
SELECT mm.leave_match('bq_auto', :mb, 'bq_p1', '2026-05-01 01:01:00+00');
SELECT open_slots, status FROM mm.backfill_requests WHERE match_id = :mb;
SELECT mm.cancel_backfill('bq_auto', :mb, '2026-05-01 01:01:30+00') AS cancelled,
	   mm.cancel_backfill('bq_auto', :mb, '2026-05-01 01:01:31+00') AS again;
SELECT mm.request_backfill('bq_auto', :mb, '{"red": 1}', '2026-05-01 01:02:00+00') > 0 AS requested;
SELECT open_slots, status FROM mm.backfill_requests WHERE match_id = :mb AND status = 'open';
SELECT mm.requeue_match('bq_auto', :mb, 'server_crashed', '2026-05-01 01:03:00+00') IS NOT NULL AS requeued;
SELECT players -> 0 ->> 'id' AS player, status FROM mm.tickets WHERE queue = 'bq_auto' ORDER BY id;
SELECT player_id FROM mm.active_players WHERE queue = 'bq_auto' ORDER BY 1;
SELECT mm.tick('bq_auto', '2026-05-01 01:03:10+00') AS matches;
SELECT count(*) AS waiting FROM mm.tickets_active WHERE queue = 'bq_auto';
SELECT mm.create_ticket('bq_auto', '[{"id": "bq_p5"}]', '2026-05-01 01:03:20+00') AS t5 \gset
SELECT mm.tick('bq_auto', '2026-05-01 01:03:30+00') AS matches;
SELECT max(id) AS mc FROM mm.matches WHERE queue = 'bq_auto' \gset
SELECT mm.complete_match('bq_auto', :mc, '2026-05-01 01:20:00+00');
SELECT status FROM mm.matches WHERE id = :mc;
SELECT count(*) AS held FROM mm.active_players WHERE queue = 'bq_auto';

-- tickets: heartbeat and cancel by (queue, id)
SELECT mm.create_ticket('bq_auto', '[{"id": "bq_h1"}]', '2026-05-01 02:00:00+00') AS th \gset
SELECT mm.heartbeat('bq_auto', :th, '2026-05-01 02:00:05+00') AS beating;
SELECT heartbeat_at FROM mm.tickets WHERE id = :th;
SELECT mm.cancel_ticket('bq_auto', :th) AS cancelled, mm.cancel_ticket('bq_auto', :th) AS again;
SELECT mm.heartbeat('bq_auto', :th, '2026-05-01 02:00:06+00') AS beating;

-- a match or ticket of another queue is missing from this one; a NULL queue
SELECT n, regexp_replace(pg_temp.try(q), '(match|ticket) [0-9]+', '\1 N', 'g') AS result
  FROM (VALUES
	(1, format($$SELECT mm.accept_match('bq_auto', %s, 'bq_a1', true, '2026-05-01 00:00:04+00')$$, :ma)),
	(2, format($$SELECT mm.assign('bq_auto', %s, 'x')$$, :ma)),
	(3, format($$SELECT mm.requeue_match('bq_auto', %s, 'server_crashed', '2026-05-01 03:00:00+00')$$, :ma)),
	(4, format($$SELECT mm.complete_match('bq_auto', %s, '2026-05-01 03:00:00+00')$$, :ma)),
	(5, format($$SELECT mm.leave_match('bq_auto', %s, 'bq_a1', '2026-05-01 03:00:00+00')$$, :ma)),
	(6, format($$SELECT mm.request_backfill('bq_auto', %s, NULL, '2026-05-01 03:00:00+00')$$, :ma)),
	(7, format($$SELECT mm.cancel_backfill('bq_auto', %s, '2026-05-01 03:00:00+00')$$, :ma)),
	(8, format($$SELECT mm.report_result('bq_auto', %s, '{"red": 1, "blue": 2}', '2026-05-01 03:00:00+00')$$, :ma)),
	(9, format($$SELECT mm.cancel_ticket('bq_acc', %s)$$, :th)),
	(10, format($$SELECT mm.heartbeat('bq_acc', %s, '2026-05-01 03:00:00+00')$$, :th)),
	(11, format($$SELECT mm.accept_match(NULL, %s, 'bq_a1', true, '2026-05-01 00:00:04+00')$$, :ma)),
	(12, format($$SELECT mm.assign(NULL, %s, 'x')$$, :ma)),
	(13, format($$SELECT mm.requeue_match(NULL, %s, 'server_crashed', '2026-05-01 03:00:00+00')$$, :ma)),
	(14, format($$SELECT mm.complete_match(NULL, %s, '2026-05-01 03:00:00+00')$$, :ma)),
	(15, format($$SELECT mm.leave_match(NULL, %s, 'bq_a1', '2026-05-01 03:00:00+00')$$, :ma)),
	(16, format($$SELECT mm.request_backfill(NULL, %s, NULL, '2026-05-01 03:00:00+00')$$, :ma)),
	(17, format($$SELECT mm.cancel_backfill(NULL, %s, '2026-05-01 03:00:00+00')$$, :ma)),
	(18, format($$SELECT mm.report_result(NULL::text, %s, '{"red": 1}', '2026-05-01 03:00:00+00')$$, :ma)),
	(19, format($$SELECT mm.cancel_ticket(NULL, %s)$$, :th)),
	(20, format($$SELECT mm.heartbeat(NULL, %s, '2026-05-01 03:00:00+00')$$, :th)),
	(21, format($$SELECT * FROM mm.get_assignment(NULL, %s)$$, :th)),
	(22, format($$SELECT * FROM mm.get_assignment(NULL, %s, 'x')$$, :th)),
	-- the id-only forms keep their message
	(23, $$SELECT mm.complete_match(999999999, '2026-05-01 03:00:00+00')$$),
	(24, $$SELECT mm.cancel_ticket(999999999)$$)
  ) AS t(n, q)
 ORDER BY n;

-- leave nothing behind for the files after this one
SELECT mm.drop_queue('bq_acc', force => true), mm.drop_queue('bq_auto', force => true);
DELETE FROM mm.rating_history WHERE pool = 'bq_acc';
DELETE FROM mm.ratings WHERE pool = 'bq_acc';
