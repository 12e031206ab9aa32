-- mm_events from the tick: match_found and ticket_timed_out, sent only when
-- the tick's transaction commits.  A second session (dblink) listens, so the
-- output carries no backend PID; ids are mapped to names for stable output.
SET timezone = 'UTC';
CREATE EXTENSION IF NOT EXISTS dblink;

SELECT dblink_connect('tick_listener',
	format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
		   split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_exec('tick_listener', 'LISTEN mm_events');

-- Waits (up to 10 s) for n notifications, or for notifications naming
-- min_tickets tickets in all, on the listener and returns them.
CREATE FUNCTION pg_temp.wait_events(n integer, min_tickets integer DEFAULT 0)
RETURNS TABLE (channel text, payload jsonb)
LANGUAGE plpgsql AS $$
DECLARE
	got jsonb[] := '{}';
	chan text[] := '{}';
	r record;
	tries integer := 0;
	seen_tickets integer := 0;
BEGIN
	LOOP
		FOR r IN SELECT * FROM dblink_get_notify('tick_listener') LOOP
			got := got || r.extra::jsonb;
			chan := chan || r.notify_name;
			seen_tickets := seen_tickets + coalesce(jsonb_array_length(r.extra::jsonb -> 'tickets'), 0);
		END LOOP;
		EXIT WHEN (cardinality(got) >= n AND seen_tickets >= min_tickets) OR tries >= 100;
		tries := tries + 1;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN QUERY SELECT c, p FROM unnest(chan, got) AS u(c, p);
END
$$;
-- A payload with match and ticket ids replaced by stable names.
CREATE FUNCTION pg_temp.readable(p jsonb) RETURNS jsonb
LANGUAGE sql AS $$
	SELECT p - 'match_id' - 'tickets'
		   || jsonb_build_object('tickets',
				(SELECT jsonb_agg(t.players -> 0 ->> 'id' ORDER BY u.ord)
				   FROM jsonb_array_elements_text(p -> 'tickets') WITH ORDINALITY AS u(id, ord)
				   JOIN mm.tickets t ON t.id = u.id::bigint))
		   || CASE WHEN p ? 'match_id' THEN jsonb_build_object('match_is_recorded',
				EXISTS (SELECT FROM mm.matches m WHERE m.id = (p ->> 'match_id')::bigint
						   AND m.queue = p ->> 'queue'
						   AND m.quality = (p ->> 'quality')::float8
						   AND m.region IS NOT DISTINCT FROM p ->> 'region'))
			  ELSE '{}' END
$$;

SELECT mm.create_queue('te_q', '{"teams": [{"name": "red", "min": 1, "max": 2},
                                           {"name": "blue", "min": 1, "max": 2}],
  "ticket_timeout_seconds": 30,
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100},
            {"name": "ping", "type": "latency", "max_ms": 80}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('te_q', '[{"id": "old", "attributes": {"skill": 5000}, "latencies": {"eu": 10}}]', '2025-12-31 23:59:00+00'),
  ('te_q', '[{"id": "ea", "attributes": {"skill": 1000}, "latencies": {"eu": 20, "us": 70}}]', '2026-01-01 00:00:00+00'),
  ('te_q', '[{"id": "eb", "attributes": {"skill": 1040}, "latencies": {"eu": 60, "us": 30}},
             {"id": "ec", "attributes": {"skill": 1060}, "latencies": {"eu": 40, "us": 35}}]', '2026-01-01 00:00:01+00'),
  ('te_q', '[{"id": "ed", "attributes": {"skill": 1010}, "latencies": {"us": 50}}]', '2026-01-01 00:00:02+00');

-- nothing is sent before commit, nor for a tick that is rolled back
BEGIN;
SELECT mm.tick('te_q', '2026-01-01 00:00:05+00');
SELECT count(*) FROM pg_temp.wait_events(0);
ROLLBACK;
SELECT count(*) FROM pg_temp.wait_events(0);

BEGIN;
SELECT mm.tick('te_q', '2026-01-01 00:00:05+00');
SELECT count(*) FROM pg_temp.wait_events(0);
COMMIT;
-- ticket_timed_out for "old" (65 s), then match_found: ea and ed against the
-- party, region us (worst 70); quality (skill 1 - 50/100, ping 1 - 70/80,
-- teams 1 - (1050 - 1005)/100) / 3
SELECT channel, pg_temp.readable(payload) FROM pg_temp.wait_events(2);

-- a ticket cancelled by mm.cancel_ticket: the same shape
SELECT mm.create_ticket('te_q', '[{"id": "ef", "attributes": {"skill": 1}, "latencies": {"eu": 1}}]',
						'2026-01-01 00:00:06+00') AS ef \gset
SELECT mm.cancel_ticket(:ef);
SELECT channel, pg_temp.readable(payload) FROM pg_temp.wait_events(1);

-- many tickets timing out at once: split into notifications under 8000 bytes
SELECT mm.alter_queue('te_q', '{"match_size": {"min": 2, "max": 2}, "ticket_timeout_seconds": 30,
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 0}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'te_q', format('[{"id": "bulk%s", "attributes": {"skill": %s}}]', g, g)::jsonb, '2026-01-01 00:00:00+00'
  FROM generate_series(1, 2000) g;
SELECT mm.tick('te_q', '2026-01-01 00:01:00+00');
SELECT tickets_timed_out FROM mm.last_tick_stats();
SELECT count(DISTINCT e.payload) >= 2 AS split,
	   count(t) AS tickets,
	   count(DISTINCT t) AS distinct_tickets,
	   max(octet_length(payload::text)) < 8000 AS under_limit,
	   bool_and(payload ->> 'event' = 'ticket_timed_out' AND payload ->> 'queue' = 'te_q') AS all_timed_out
  FROM pg_temp.wait_events(2, 2000) e, jsonb_array_elements(e.payload -> 'tickets') t;

-- a match too large for one payload goes out compact: ids only, truncated
SELECT mm.create_queue('te_big', '{"match_size": {"min": 200, "max": 200}}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'te_big', format('[{"id": "%s%s"}]', repeat('x', 100), g)::jsonb, '2026-01-01 00:00:00+00'
  FROM generate_series(1, 200) g;
SELECT mm.tick('te_big', '2026-01-01 00:00:01+00');
SELECT payload ->> 'event' AS event, payload ->> 'queue' AS queue, payload -> 'truncated' AS truncated,
	   jsonb_array_length(payload -> 'tickets') AS tickets, payload ? 'teams' AS has_teams,
	   (payload ->> 'match_id')::bigint = (SELECT id FROM mm.matches WHERE queue = 'te_big') AS match_id_ok
  FROM pg_temp.wait_events(1);

-- Concurrency seen from one session, with a second one through dblink:
-- a tick of a queue another session is ticking returns 0 at once, and a
-- ticket locked by another session (a cancel in flight) is skipped, not
-- waited for.
SELECT dblink_connect('tick_other',
	format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
		   split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT mm.create_queue('te_lock', '{"match_size": {"min": 2, "max": 2}}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('te_lock', '[{"id": "la"}]', '2026-01-01 00:00:00+00'),
  ('te_lock', '[{"id": "lb"}]', '2026-01-01 00:00:01+00'),
  ('te_lock', '[{"id": "lc"}]', '2026-01-01 00:00:02+00');
SELECT dblink_exec('tick_other', 'BEGIN');
SELECT * FROM dblink('tick_other', $$SELECT mm.tick('te_lock', '2026-01-01 00:00:03+00')$$) AS t(tick integer);
-- the other session holds the queue until it ends
SELECT mm.tick('te_lock', '2026-01-01 00:00:03+00');
SELECT queue, locked_out, tickets_loaded, matches FROM mm.last_tick_stats();
SELECT dblink_exec('tick_other', 'ROLLBACK');
-- the other session locks la's row (as mm.cancel_ticket does) and keeps it
SELECT dblink_exec('tick_other', 'BEGIN');
SELECT * FROM dblink('tick_other', $$SELECT t.players -> 0 ->> 'id' FROM mm.tickets t
	WHERE t.queue = 'te_lock' AND t.players -> 0 ->> 'id' = 'la' FOR UPDATE$$) AS t(locked text);
SET lock_timeout = '5s';
SELECT mm.tick('te_lock', '2026-01-01 00:00:03+00');
RESET lock_timeout;
SELECT queue, locked_out, tickets_loaded, matches FROM mm.last_tick_stats();
SELECT t.players -> 0 ->> 'id' AS player, t.status FROM mm.tickets t
 WHERE t.queue = 'te_lock' ORDER BY t.created_at;
SELECT dblink_exec('tick_other', 'ROLLBACK');
SELECT dblink_disconnect('tick_other');
-- the events of these ticks
SELECT channel, pg_temp.readable(payload) FROM pg_temp.wait_events(1);

SELECT dblink_disconnect('tick_listener');
SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['te_q', 'te_big', 'te_lock']) q;
DROP EXTENSION dblink;
