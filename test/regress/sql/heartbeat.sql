-- Heartbeats: with "heartbeat_timeout_seconds", each tick of a queue cancels
-- the searching tickets it reads that gave no sign of life for that long
-- (created, back to searching, or mm.heartbeat): status cancelled,
-- cancel_reason heartbeat_missed, players released, ticket_cancelled with
-- reason heartbeat_missed.  The config key, mm.heartbeat's answers and
-- errors, proposed tickets, tickets of several queues (each queue applies
-- its own limit: the tightest wins), requeued tickets, and queues without
-- the key.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
\set listener hb_listener
\set queue_prefix hb
\i sql/include/event_listener.sql
-- the tickets of the given players: status, why cancelled, when it last
-- changed, the last beat
CREATE FUNCTION pg_temp.tickets(ids text[])
RETURNS TABLE (player text, queue text, status text, cancel_reason text, updated_at timestamptz,
			   heartbeat_at timestamptz, held boolean)
LANGUAGE sql AS $$
	SELECT t.players -> 0 ->> 'id', t.queue, t.status, t.cancel_reason, t.updated_at, t.heartbeat_at,
		   EXISTS (SELECT FROM mm.active_players a WHERE a.ticket_id = t.id)
	  FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = ANY (ids) ORDER BY t.id
$$;

-- ------------------------------------------------------------- the config key
SELECT v AS heartbeat_timeout_seconds,
	   pg_temp.try(format('SELECT mm.validate_queue_config(%L::jsonb)',
						  '{"match_size": {"min": 2, "max": 2}, "heartbeat_timeout_seconds": ' || v || '}')) AS result
  FROM unnest(ARRAY['30', '0.25', '31536000', '0', '-30', '31536001', '"30"', 'null', 'false', '{}']) v;
\set VERBOSITY sqlstate
SELECT mm.create_queue('hb_bad', '{"match_size": {"min": 2, "max": 2}, "heartbeat_timeout_seconds": 0}');
\set VERBOSITY default
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "heartbeat_timeout_seconds": 30}')
	   -> 'heartbeat_timeout_seconds' AS given,
	   mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}}') ? 'heartbeat_timeout_seconds' AS shown_when_absent;

-- ------------------------------------------------------------ mm.heartbeat
-- tickets that never match each other (a different mode each): silence is
-- all that can end them
SELECT mm.create_queue('hb', '{"match_size": {"min": 2, "max": 2}, "heartbeat_timeout_seconds": 30,
  "rules": [{"name": "mode", "type": "string_equality", "attribute": "mode"}]}');
SELECT count(mm.create_ticket('hb', jsonb_build_array(jsonb_build_object('id', p, 'attributes', jsonb_build_object('mode', p))),
						'2026-01-01 00:00:00+00'::timestamptz + s * interval '1 second')) AS tickets
  FROM unnest(ARRAY['h1', 'h2', 'h3'], ARRAY[0, 0, 20]) u(p, s);
SELECT min(id) AS t1 FROM mm.tickets WHERE queue = 'hb' \gset
-- a beat is recorded; an older one never moves it back
SELECT mm.heartbeat(:t1, '2026-01-01 00:00:25+00') AS beat, mm.heartbeat(:t1, '2026-01-01 00:00:10+00') AS older_beat;
SELECT * FROM pg_temp.tickets(ARRAY['h1', 'h2', 'h3']);
-- errors: the arguments, an unknown ticket
\set VERBOSITY sqlstate
SELECT mm.heartbeat(NULL);
SELECT mm.heartbeat(:t1, NULL);
SELECT mm.heartbeat(:t1, 'infinity');
SELECT mm.heartbeat(-1);
\set VERBOSITY default
SELECT mm.heartbeat(NULL);
SELECT mm.heartbeat(:t1, NULL);
SELECT mm.heartbeat(:t1, '-infinity');
SELECT mm.heartbeat(-1);
-- 30 s after its creation h2 is not yet silent for too long; one
-- microsecond later it is: cancelled as heartbeat_missed, released, announced
SELECT mm.tick('hb', '2026-01-01 00:00:30+00');
SELECT * FROM pg_temp.tickets(ARRAY['h1', 'h2', 'h3']);
SELECT mm.tick('hb', '2026-01-01 00:00:30.000001+00');
SELECT * FROM pg_temp.tickets(ARRAY['h1', 'h2', 'h3']);
SELECT * FROM pg_temp.events(:m0);
-- its client's next beat says it ended (false); the player may search again
SELECT mm.heartbeat(t.id, '2026-01-01 00:00:31+00') AS beat FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'h2';
SELECT mm.create_ticket('hb', '[{"id": "h2", "attributes": {"mode": "h2"}}]', '2026-01-01 00:00:32+00') IS NOT NULL AS searches_again;
-- h1 beats on and lives; h3 beat once at 00:00:40, and h2's new ticket
-- never: both are silent for more than 30 s at 00:01:15 (h3 keeps its
-- last beat)
SELECT mm.heartbeat(:t1, '2026-01-01 00:00:50+00');
SELECT mm.heartbeat(t.id, '2026-01-01 00:00:40+00') FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'h3';
SELECT mm.tick('hb', '2026-01-01 00:01:15+00');
SELECT * FROM pg_temp.tickets(ARRAY['h1', 'h2', 'h3']);
SELECT * FROM pg_temp.events(:m0);
-- a tick with nothing silent announces nothing
SELECT mm.tick('hb', '2026-01-01 00:01:16+00');
SELECT count(*) AS events FROM pg_temp.events(:m0);
-- the other ends keep no reason; a cancelled ticket's beat is false
SELECT mm.cancel_ticket(:t1);
SELECT mm.heartbeat(:t1, '2026-01-01 00:01:17+00');
SELECT status, cancel_reason FROM mm.tickets WHERE id = :t1;
SELECT * FROM pg_temp.events(:m0);

-- ------------------------------------------------------ a queue without it
-- no ticket is ever cancelled for silence; beats are accepted all the same
SELECT mm.create_queue('hb_open', '{"match_size": {"min": 3, "max": 3}}');
SELECT mm.create_ticket('hb_open', '[{"id": "n1"}]', '2026-01-01 00:00:00+00') AS tn \gset
SELECT mm.tick('hb_open', '2030-01-01 00:00:00+00');
SELECT mm.heartbeat(:tn, '2030-01-01 00:00:00+00');
SELECT * FROM pg_temp.tickets(ARRAY['n1']);

-- ------------------------------------------------------- proposed tickets
-- a proposed ticket is not searching: its acceptance deadline rules it, not
-- its silence, and a beat is accepted; back to searching (the other player
-- rejected), the silence counts from then
SELECT mm.create_queue('hb_acc', '{"match_size": {"min": 2, "max": 2}, "acceptance_timeout_seconds": 100,
                                   "heartbeat_timeout_seconds": 10}');
SELECT count(mm.create_ticket('hb_acc', jsonb_build_array(jsonb_build_object('id', p)),
						'2026-01-01 00:00:00+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['q1', 'q2']) WITH ORDINALITY u(p, n);
SELECT mm.tick('hb_acc', '2026-01-01 00:00:05+00');
SELECT mm.tick('hb_acc', '2026-01-01 00:01:00+00');
SELECT * FROM pg_temp.tickets(ARRAY['q1', 'q2']);
SELECT mm.heartbeat(t.id, '2026-01-01 00:01:00+00') AS proposed_beat FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'q2';
SELECT mm.accept_match(:m0 + 1, 'q1', false, '2026-01-01 00:01:01+00');
SELECT mm.tick('hb_acc', '2026-01-01 00:01:11+00');
SELECT * FROM pg_temp.tickets(ARRAY['q1', 'q2']);
SELECT mm.tick('hb_acc', '2026-01-01 00:01:11.000001+00');
SELECT * FROM pg_temp.tickets(ARRAY['q1', 'q2']);
SELECT * FROM pg_temp.events(:m0);

-- ------------------------------------------------------- requeued tickets
-- a ticket put back to searching by mm.requeue_match gets the whole limit
-- from the requeue: its client did not beat while it played
SELECT mm.create_queue('hb_rq', '{"match_size": {"min": 2, "max": 2}, "heartbeat_timeout_seconds": 10}');
SELECT count(mm.create_ticket('hb_rq', jsonb_build_array(jsonb_build_object('id', p)),
						'2026-01-01 00:00:00+00'::timestamptz + n * interval '1 second')) AS tickets
  FROM unnest(ARRAY['w1', 'w2']) WITH ORDINALITY u(p, n);
SELECT mm.tick('hb_rq', '2026-01-01 00:00:05+00');
SELECT cardinality(mm.requeue_match(:m0 + 2, 'server lost', '2026-01-01 00:05:00+00')) AS requeued;
-- (in a queue of 3 from now on, so that they wait instead of matching again)
BEGIN;
SELECT mm.alter_queue('hb_rq', '{"match_size": {"min": 3, "max": 3}, "heartbeat_timeout_seconds": 10}');
SELECT mm.tick('hb_rq', '2026-01-01 00:05:05+00');
SELECT * FROM pg_temp.tickets(ARRAY['w1', 'w2']);
SELECT mm.tick('hb_rq', '2026-01-01 00:05:10.000001+00');
SELECT * FROM pg_temp.tickets(ARRAY['w1', 'w2']);
ROLLBACK;
SELECT mm.drop_queue('hb_rq', force => true);

-- ------------------------------------------------------ several queues
-- each queue applies its own limit to every ticket it reads, its own and
-- those of other queues that search in it: the tightest wins.  x searches
-- in hb_a (no heartbeat) and hb_b (20 s); y in hb_b and hb_c (10 s); z in
-- hb_c and hb_a.  A cancelled ticket is announced under its own queue and
-- leaves every queue.
SELECT mm.create_queue('hb_a', '{"match_size": {"min": 4, "max": 4}}');
SELECT mm.create_queue('hb_b', '{"match_size": {"min": 4, "max": 4}, "heartbeat_timeout_seconds": 20}');
SELECT mm.create_queue('hb_c', '{"match_size": {"min": 4, "max": 4}, "heartbeat_timeout_seconds": 10}');
SELECT mm.create_ticket(ARRAY['hb_a', 'hb_b'], '[{"id": "x"}]', '2026-01-01 00:00:00+00') AS tx \gset
SELECT mm.create_ticket(ARRAY['hb_b', 'hb_c'], '[{"id": "y"}]', '2026-01-01 00:00:00+00') AS ty \gset
SELECT mm.create_ticket(ARRAY['hb_c', 'hb_a'], '[{"id": "z"}]', '2026-01-01 00:00:00+00') AS tz \gset
SELECT mm.heartbeat(:tz, '2026-01-01 00:00:08+00');
-- hb_a has no limit: it cancels nobody
SELECT mm.tick('hb_a', '2026-01-01 00:00:15+00');
SELECT * FROM pg_temp.tickets(ARRAY['x', 'y', 'z']);
-- hb_c (10 s) cancels y, whose own queue is hb_b; z beat at 00:00:08
SELECT mm.tick('hb_c', '2026-01-01 00:00:15+00');
SELECT * FROM pg_temp.tickets(ARRAY['x', 'y', 'z']);
SELECT queue, ticket_id = :ty AS is_y FROM mm.ticket_queues WHERE ticket_id IN (:tx, :ty, :tz) ORDER BY ticket_id, queue;
-- hb_b (20 s) cancels x (own queue hb_a); z is not in hb_b
SELECT mm.tick('hb_b', '2026-01-01 00:00:21+00');
SELECT * FROM pg_temp.tickets(ARRAY['x', 'y', 'z']);
-- z, silent since 00:00:08, goes in an all-queues tick (by hb_c, its own)
SELECT mm.tick(NULL, '2026-01-01 00:00:19+00') >= 0 AS ticked;
SELECT * FROM pg_temp.tickets(ARRAY['x', 'y', 'z']);
SELECT count(*) AS listed FROM mm.ticket_queues WHERE ticket_id IN (:tx, :ty, :tz);
SELECT * FROM pg_temp.events(:m0);

-- ---------------------------------------------------- rights and archive
SELECT has_function_privilege('mm_frontend', 'mm.heartbeat(bigint, timestamptz)', 'EXECUTE') AS frontend,
	   has_function_privilege('mm_analyst', 'mm.heartbeat(bigint, timestamptz)', 'EXECUTE') AS analyst,
	   (SELECT prosecdef FROM pg_proc WHERE oid = 'mm.heartbeat(bigint, timestamptz)'::regprocedure) AS security_definer;
BEGIN;
SELECT tickets_purged > 0 AS purged FROM mm.purge_finished('0 s', 1000000, true, '2031-01-01 00:00:00+00');
SELECT players -> 0 ->> 'id' AS player, status, cancel_reason, heartbeat_at
  FROM mm.tickets_archive WHERE queue = 'hb' ORDER BY id;
ROLLBACK;

SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['hb', 'hb_open', 'hb_acc', 'hb_a', 'hb_b', 'hb_c']) q;
-- every row of this file is gone with its queues
SELECT (SELECT count(*) FROM mm.tickets WHERE queue LIKE 'hb%') AS tickets_left,
	   (SELECT count(*) FROM mm.matches WHERE queue LIKE 'hb%') AS matches_left;
\i sql/include/event_listener_end.sql
