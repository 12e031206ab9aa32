-- Live matches expire: with "live_match_timeout_seconds", each tick of a
-- queue cancels its ready or assigned matches that became ready longer ago
-- than that (cancel_reason expired), cancels their open backfill request,
-- releases their players and announces match_cancelled with reason expired.
-- The config key's validation, when a match becomes ready (ready_at), what
-- the lifecycle functions say about an expired match, and what is left
-- alone (proposed matches, queues without the key, a player who left and
-- searches again).  Match ids are relative to the first match of this file.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
\set listener lt_listener
\set queue_prefix lt
\i sql/include/event_listener.sql
CREATE FUNCTION pg_temp.matches(q text, m0 bigint)
RETURNS TABLE (match integer, status text, cancel_reason text, ready_at timestamptz,
			   ended_at timestamptz, players text)
LANGUAGE sql AS $$
	SELECT (m.id - m0)::integer, m.status, m.cancel_reason, m.ready_at,
		   -- when it ended (mm.assign dates a live match by the clock)
		   CASE WHEN m.status IN ('completed', 'cancelled') THEN m.updated_at END,
		   (SELECT string_agg(mp.player_id || CASE WHEN mp.left_at IS NOT NULL THEN '(left)' ELSE '' END,
							  ',' ORDER BY mp.player_id)
			  FROM mm.match_players mp WHERE mp.match_id = m.id)
	  FROM mm.matches m WHERE m.queue = q ORDER BY m.id
$$;
-- the players held, with the status of the ticket that holds each
CREATE FUNCTION pg_temp.held(ids text[]) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(a.player_id || '=' || t.queue || ':' || t.status, ',' ORDER BY a.player_id), '')
	  FROM mm.active_players a JOIN mm.tickets t ON t.id = a.ticket_id
	 WHERE a.player_id = ANY (ids)
$$;

-- ------------------------------------------------------------- the config key
-- a number > 0 of at most a year; the error names the key (22023)
SELECT v AS live_match_timeout_seconds,
	   pg_temp.try(format('SELECT mm.validate_queue_config(%L::jsonb)',
						  '{"match_size": {"min": 2, "max": 2}, "live_match_timeout_seconds": ' || v || '}')) AS result
  FROM unnest(ARRAY['600', '0.5', '31536000', '0', '-1', '31536001', '1e12', '"600"', 'null', 'true', '[]']) v;
SELECT pg_temp.try($$SELECT mm.create_queue('lt_bad', '{"match_size": {"min": 2, "max": 2}, "live_match_timeout_seconds": 0}')$$);
\set VERBOSITY sqlstate
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "live_match_timeout_seconds": -5}');
\set VERBOSITY default
-- normalised: shown when given, absent otherwise
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "live_match_timeout_seconds": 3600}')
	   -> 'live_match_timeout_seconds' AS given,
	   mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}}') ? 'live_match_timeout_seconds' AS shown_when_absent;

-- ------------------------------------------------- ready and assigned matches
-- 1v1 without acceptance, live matches live 60 s
SELECT mm.create_queue('lt_duel', '{"teams": [{"name": "red", "min": 1, "max": 1},
                                              {"name": "blue", "min": 1, "max": 1}],
                                    "live_match_timeout_seconds": 60, "auto_backfill": true}');
-- where released players search again (and wait: a match needs 3)
SELECT mm.create_queue('lt_other', '{"match_size": {"min": 3, "max": 3}}');
SELECT count(mm.create_ticket('lt_duel', jsonb_build_array(jsonb_build_object('id', p)),
						'2026-01-01 00:00:00+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['a', 'b']) WITH ORDINALITY u(p, n);
-- match 1 (a, b) is ready at 00:00:05
SELECT mm.tick('lt_duel', '2026-01-01 00:00:05+00');
SELECT count(mm.create_ticket('lt_duel', jsonb_build_array(jsonb_build_object('id', p)),
						'2026-01-01 00:00:20+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['c', 'd']) WITH ORDINALITY u(p, n);
-- match 2 (c, d) is ready at 00:00:30, assigned a server at once
SELECT mm.tick('lt_duel', '2026-01-01 00:00:30+00');
SELECT mm.assign(:m0 + 2, 'udp://10.0.0.9:7777');
-- in match 1, b leaves (auto_backfill opens a request for the slot) and
-- searches again elsewhere
SELECT mm.leave_match(:m0 + 1, 'b', '2026-01-01 00:00:40+00');
SELECT mm.create_ticket('lt_other', '[{"id": "b"}]', '2026-01-01 00:00:41+00') IS NOT NULL AS b_searches;
SELECT * FROM pg_temp.matches('lt_duel', :m0);
SELECT match_id - :m0 AS match, status FROM mm.backfill_requests WHERE queue = 'lt_duel';
SELECT * FROM pg_temp.events(:m0);
-- 60 s after it became ready, match 1 still lives (the limit is passed only
-- after it); a player of a live match cannot search
SELECT mm.tick('lt_duel', '2026-01-01 00:01:05+00');
SELECT status FROM mm.matches WHERE id = :m0 + 1;
SELECT replace(pg_temp.try($$SELECT mm.create_ticket('lt_other', '[{"id": "a"}]', '2026-01-01 00:01:05+00')$$),
			   'match ' || (:m0 + 1), 'match <1>') AS a_searches;
-- one microsecond later it expires: cancelled, its request cancelled, a
-- released, the tickets stay matched (the record); b's new ticket keeps b
SELECT mm.tick('lt_duel', '2026-01-01 00:01:05.000001+00');
SELECT * FROM pg_temp.matches('lt_duel', :m0);
SELECT match_id - :m0 AS match, status, updated_at FROM mm.backfill_requests WHERE queue = 'lt_duel';
SELECT t.players -> 0 ->> 'id' AS player, t.status, t.match_id - :m0 AS match
  FROM mm.tickets t WHERE t.queue = 'lt_duel' ORDER BY t.id;
SELECT pg_temp.held(ARRAY['a', 'b', 'c', 'd']) AS held;
-- announced once, signed, with the reason and the match's status
SELECT * FROM pg_temp.events(:m0);
-- a searches again at once
SELECT mm.create_ticket('lt_other', '[{"id": "a"}]', '2026-01-01 00:01:06+00') IS NOT NULL AS a_searches;
-- the assigned match 2 expires 60 s after it became ready, in an all-queues
-- tick too
SELECT mm.tick(NULL, '2026-01-01 00:01:30+00') >= 0 AS ticked;
SELECT status FROM mm.matches WHERE id = :m0 + 2;
SELECT mm.tick(NULL, '2026-01-01 00:01:31+00') >= 0 AS ticked;
SELECT * FROM pg_temp.matches('lt_duel', :m0);
SELECT pg_temp.held(ARRAY['a', 'b', 'c', 'd']) AS held;
SELECT * FROM pg_temp.events(:m0);
-- the match metrics count both (servers that never ended their matches)
SELECT matches_expired, matches_requeued FROM mm.match_metrics('lt_duel', '1 hour', '2026-01-01 00:02:00+00');
-- a tick with nothing to expire announces nothing
SELECT mm.tick('lt_duel', '2026-01-01 00:10:00+00');
SELECT count(*) AS events FROM pg_temp.events(:m0);

-- ---------------------------------------- the lifecycle after an expiry
-- every step that needs a live match is refused with 55000 and changes
-- nothing; cancelling a backfill finds none open
\set VERBOSITY sqlstate
SELECT mm.complete_match(:m0 + 1, '2026-01-01 00:02:00+00');
SELECT mm.report_result(:m0 + 1, '{"red": 1, "blue": 2}', '2026-01-01 00:02:00+00');
SELECT mm.assign(:m0 + 1, 'udp://10.0.0.9:7777');
SELECT mm.leave_match(:m0 + 1, 'a', '2026-01-01 00:02:00+00');
SELECT mm.requeue_match(:m0 + 1, 'server lost', '2026-01-01 00:02:00+00');
SELECT mm.request_backfill(:m0 + 1, NULL, '2026-01-01 00:02:00+00');
\set VERBOSITY default
SELECT replace(pg_temp.try(format($$SELECT mm.complete_match(%s, '2026-01-01 00:02:00+00')$$, :m0 + 2)),
			   'match ' || (:m0 + 2), 'match <2>') AS complete_expired;
SELECT mm.cancel_backfill(:m0 + 1, '2026-01-01 00:02:00+00') AS cancelled_backfill;
SELECT count(*) AS results FROM mm.match_results WHERE match_id IN (:m0 + 1, :m0 + 2);
SELECT * FROM pg_temp.matches('lt_duel', :m0);

-- -------------------------------- a match ended by the director never expires
SELECT count(mm.create_ticket('lt_duel', jsonb_build_array(jsonb_build_object('id', p)),
						'2026-01-01 01:00:00+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['e', 'f', 'g', 'h']) WITH ORDINALITY u(p, n);
-- matches 3 (e, f) and 4 (g, h), ready at 01:00:05
SELECT mm.tick('lt_duel', '2026-01-01 01:00:05+00');
SELECT mm.complete_match(:m0 + 3, '2026-01-01 01:00:30+00');
SELECT cardinality(mm.requeue_match(:m0 + 4, 'server lost', '2026-01-01 01:00:30+00')) AS requeued;
-- g and h search again and form match 5, ready at 01:00:31
SELECT mm.tick('lt_duel', '2026-01-01 01:00:31+00');
SELECT mm.tick('lt_duel', '2026-01-01 01:01:10+00');
SELECT * FROM pg_temp.matches('lt_duel', :m0) WHERE match >= 3;
SELECT * FROM pg_temp.events(:m0);

-- ---------------------------------------------------------- with acceptance
-- counted from when the last player accepted, never from the proposal: a
-- proposed match waits for its answers (acceptance_timeout_seconds rules it)
SELECT mm.create_queue('lt_acc', '{"match_size": {"min": 2, "max": 2}, "acceptance_timeout_seconds": 1000,
                                   "live_match_timeout_seconds": 30}');
SELECT count(mm.create_ticket('lt_acc', jsonb_build_array(jsonb_build_object('id', p)),
						'2026-01-01 02:00:00+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['k1', 'k2', 'k3', 'k4']) WITH ORDINALITY u(p, n);
-- matches 6 (k1, k2) and 7 (k3, k4) proposed at 02:00:05
SELECT mm.tick('lt_acc', '2026-01-01 02:00:05+00');
SELECT mm.accept_match(:m0 + 6, 'k1', true, '2026-01-01 02:00:10+00');
SELECT mm.accept_match(:m0 + 6, 'k2', true, '2026-01-01 02:00:20+00');
SELECT * FROM pg_temp.matches('lt_acc', :m0);
SELECT mm.tick('lt_acc', '2026-01-01 02:00:50+00');
SELECT * FROM pg_temp.matches('lt_acc', :m0);
SELECT mm.tick('lt_acc', '2026-01-01 02:00:51+00');
SELECT * FROM pg_temp.matches('lt_acc', :m0);
SELECT * FROM pg_temp.events(:m0);
-- the same answer again to the expired match returns its status
SELECT mm.accept_match(:m0 + 6, 'k1', true, '2026-01-01 02:00:52+00');

-- ------------------------------- queues without the key, and the key added
-- later: a live match never expires without it; added, it counts from when
-- the match became ready, so older matches expire at the next tick
SELECT mm.create_queue('lt_open', '{"match_size": {"min": 2, "max": 2}}');
SELECT count(mm.create_ticket('lt_open', jsonb_build_array(jsonb_build_object('id', p)),
						'2026-01-01 03:00:00+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['o1', 'o2']) WITH ORDINALITY u(p, n);
SELECT mm.tick('lt_open', '2026-01-01 03:00:05+00');
SELECT mm.tick('lt_open', '2030-01-01 00:00:00+00');
SELECT * FROM pg_temp.matches('lt_open', :m0);
SELECT mm.alter_queue('lt_open', '{"match_size": {"min": 2, "max": 2}, "live_match_timeout_seconds": 3600}');
SELECT mm.tick('lt_open', '2026-01-01 04:00:05+00');
SELECT * FROM pg_temp.matches('lt_open', :m0);
SELECT mm.tick('lt_open', '2026-01-01 04:00:06+00');
SELECT * FROM pg_temp.matches('lt_open', :m0);
SELECT * FROM pg_temp.events(:m0);

-- ---------------------------------------------- ready_at of other writers
-- a match made ready by hand gets ready_at too: updated_at on an UPDATE of
-- its status, created_at on an INSERT; a later status change keeps it
SELECT count(mm.create_ticket('lt_acc', jsonb_build_array(jsonb_build_object('id', p)),
						'2026-01-01 05:00:00+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['r1', 'r2']) WITH ORDINALITY u(p, n);
SELECT mm.tick('lt_acc', '2026-01-01 05:00:05+00');
BEGIN;
UPDATE mm.matches SET status = 'ready', updated_at = '2026-01-01 05:00:07+00' WHERE id = :m0 + 9;
UPDATE mm.matches SET status = 'assigned', updated_at = '2026-01-01 05:00:09+00' WHERE id = :m0 + 9;
INSERT INTO mm.matches (queue, status, created_at, updated_at, quality)
VALUES ('lt_acc', 'ready', '2026-01-01 05:00:08+00', '2026-01-01 05:00:09+00', 0.5);
SELECT id - :m0 AS match, status, ready_at FROM mm.matches WHERE id > :m0 + 8 ORDER BY id;
ROLLBACK;

-- ------------------------------------------------------------- the archive
-- mm.purge_finished(archive => true) keeps ready_at with the match
BEGIN;
SELECT matches_purged > 0 AS purged
  FROM mm.purge_finished('0 s', 1000000, true, '2031-01-01 00:00:00+00');
SELECT id - :m0 AS match, status, cancel_reason, ready_at, archived_at
  FROM mm.matches_archive WHERE queue = 'lt_duel' ORDER BY id;
ROLLBACK;

-- ------------------------------------------------------------------ the index
-- the tick reads a queue's live matches by ready_at through a partial index
SELECT indexdef FROM pg_indexes WHERE schemaname = 'mm' AND indexname = 'matches_live_ready';
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM mm.matches
 WHERE queue = 'lt_duel' AND status = ANY (ARRAY['ready', 'assigned']) AND ready_at < '2026-01-01'
 ORDER BY ready_at, id;
RESET enable_seqscan;

SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['lt_duel', 'lt_other', 'lt_acc', 'lt_open']) q;
-- every row of this file is gone with its queues
SELECT (SELECT count(*) FROM mm.tickets WHERE queue LIKE 'lt%') AS tickets_left,
	   (SELECT count(*) FROM mm.matches WHERE queue LIKE 'lt%') AS matches_left;
\i sql/include/event_listener_end.sql

-- --------------------------------------------------- the upgrade from 0.3
-- In a database of its own (dropped at the end): the live matches of 0.3
-- get ready_at from the upgrade.  Formed without acceptance: when formed;
-- accepted and ready: when the last player accepted (updated_at); accepted
-- and assigned (mm.assign dated it by the clock): the acceptance deadline,
-- the latest it can have become ready.  Ended matches get none.
SELECT current_database() AS regress_db \gset
CREATE DATABASE mm_lt_upgrade;
\c mm_lt_upgrade
SET timezone = 'UTC';
\set SHOW_CONTEXT never
CREATE EXTENSION matchmaking VERSION '0.3';
SELECT mm.create_queue('up_plain', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.create_queue('up_acc', '{"match_size": {"min": 2, "max": 2}, "acceptance_timeout_seconds": 100}');
SELECT count(mm.create_ticket(q, jsonb_build_array(jsonb_build_object('id', p)),
						'2020-01-01 00:00:00+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['up_plain', 'up_plain', 'up_plain', 'up_plain', 'up_acc', 'up_acc', 'up_acc', 'up_acc'],
			  ARRAY['u1', 'u2', 'u3', 'u4', 'v1', 'v2', 'v3', 'v4']) WITH ORDINALITY u(q, p, n);
-- matches 1 and 2 (up_plain) ready at 00:00:10, 3 and 4 (up_acc) proposed;
-- 1 completed, 3 accepted at 00:00:20, 4 at 00:00:30 and assigned.  The
-- library ticks only its own schema (0.4), so 0.3's tick at 00:00:10 is
-- written as it wrote it: the matches, their players, the tickets of
-- up_plain ended matched (their players still claimed) and those of up_acc
-- proposed until the deadline.
INSERT INTO mm.matches (queue, status, created_at, updated_at, quality, rule_steps, acceptance_deadline)
SELECT u.q, CASE WHEN u.q = 'up_acc' THEN 'proposed' ELSE 'ready' END,
	   '2020-01-01 00:00:10+00', '2020-01-01 00:00:10+00', 1, '{}',
	   CASE WHEN u.q = 'up_acc' THEN timestamptz '2020-01-01 00:01:50+00' END
  FROM unnest(ARRAY['up_plain', 'up_plain', 'up_acc', 'up_acc']) WITH ORDINALITY u(q, n) ORDER BY u.n;
INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id)
SELECT (t.id + 1) / 2, t.queue, t.players -> 0 ->> 'id', t.id FROM mm.tickets t ORDER BY t.id;
INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, matched_at, match_id)
SELECT t.id, t.queue, t.players, 'matched', t.created_at, '2020-01-01 00:00:10+00', '2020-01-01 00:00:10+00',
	   (t.id + 1) / 2
  FROM mm.tickets_active t WHERE t.queue = 'up_plain' ORDER BY t.id;
DELETE FROM mm.tickets_active WHERE queue = 'up_plain';
UPDATE mm.tickets_active SET status = 'proposed', updated_at = '2020-01-01 00:00:10+00', match_id = (id + 1) / 2
 WHERE queue = 'up_acc';
SELECT mm.complete_match(1, '2020-01-01 00:00:30+00');
SELECT mm.accept_match(m, p, true, '2020-01-01 00:00:20+00'::timestamptz + (m - 3) * interval '10 seconds')
  FROM (VALUES (3, 'v1'), (3, 'v2'), (4, 'v3'), (4, 'v4')) AS a(m, p);
SELECT mm.assign(4, 'udp://10.0.0.4:7777');
ALTER EXTENSION matchmaking UPDATE TO '0.4';
SELECT id, queue, status, acceptance_deadline, ready_at FROM mm.matches ORDER BY id;
-- ticked with a limit, the live ones expire by it
SELECT mm.alter_queue(name, config || '{"live_match_timeout_seconds": 60}') FROM mm.queues ORDER BY name;
SELECT mm.tick(NULL, '2020-01-01 00:01:10.5+00');
SELECT id, status, cancel_reason FROM mm.matches ORDER BY id;
\c :regress_db
DROP DATABASE mm_lt_upgrade;
