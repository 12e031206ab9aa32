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
RETURNS TABLE (channel text, payload jsonb, raw text)
LANGUAGE plpgsql AS $$
DECLARE
	got text[] := '{}';
	chan text[] := '{}';
	r record;
	tries integer := 0;
	seen_tickets integer := 0;
BEGIN
	LOOP
		FOR r IN SELECT * FROM dblink_get_notify('tick_listener') LOOP
			got := got || r.extra;
			chan := chan || r.notify_name;
			seen_tickets := seen_tickets + coalesce(jsonb_array_length(r.extra::jsonb -> 'tickets'), 0);
		END LOOP;
		EXIT WHEN (cardinality(got) >= n AND seen_tickets >= min_tickets) OR tries >= 100;
		tries := tries + 1;
		PERFORM pg_sleep(0.1);
	END LOOP;
	RETURN QUERY SELECT c, p::jsonb, p FROM unnest(chan, got) AS u(c, p);
END
$$;
-- A payload with match and ticket ids replaced by stable names (and without
-- its signature, checked at the end).
CREATE FUNCTION pg_temp.readable(p jsonb) RETURNS jsonb
LANGUAGE sql AS $$
	SELECT p - 'match_id' - 'tickets' - 'sig'
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

-- drop_queue(force) cancels its tickets in one statement and announces them
-- in a few ticket_cancelled events, split under 8000 bytes (not one per ticket)
SELECT mm.create_queue('te_drop', '{"match_size": {"min": 2, "max": 2}}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'te_drop', format('[{"id": "drop%s"}]', g)::jsonb, '2026-01-01 00:00:00+00'
  FROM generate_series(1, 2000) g;
CREATE TEMP TABLE te_drop_tickets AS SELECT id FROM mm.tickets WHERE queue = 'te_drop';
SELECT mm.drop_queue('te_drop', force => true);
SELECT count(DISTINCT e.payload) BETWEEN 2 AND 10 AS batched,
	   count(t) AS tickets,
	   count(DISTINCT t) AS distinct_tickets,
	   count(*) FILTER (WHERE t::text::bigint NOT IN (SELECT id FROM te_drop_tickets)) AS strangers,
	   max(octet_length(payload::text)) < 8000 AS under_limit,
	   bool_and(payload ->> 'event' = 'ticket_cancelled' AND payload ->> 'queue' = 'te_drop') AS all_cancelled,
	   bool_and(mm.verify_event(e.raw)) AS all_signed
  FROM pg_temp.wait_events(2, 2000) e, jsonb_array_elements(e.payload -> 'tickets') t;
DELETE FROM mm.players WHERE id LIKE 'drop%';

-- Signatures.  Every payload ends with "sig": the HMAC-SHA256, under the key
-- in mm.event_key, of the payload without that member; anyone may NOTIFY
-- mm_events, so a listener tells ours from forged ones by it.
UPDATE mm.event_key SET key = decode(repeat('ab', 32), 'hex');
SELECT mm.create_queue('te_sig', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.cancel_ticket(mm.create_ticket('te_sig', '[{"id": "sig1"}]', '2026-01-01 00:00:00+00'));
-- forged: a made-up signature, and none at all
SELECT pg_notify('mm_events', '{"event": "ticket_cancelled", "queue": "te_sig", "tickets": [1], "sig": "'
				 || repeat('0', 64) || '"}');
SELECT pg_notify('mm_events', '{"event": "match_assigned", "queue": "te_sig", "match_id": 1, "connection": "evil:7777"}');
CREATE TEMP TABLE te_sig_events AS SELECT raw FROM pg_temp.wait_events(3);
-- ours verifies, the forged ones do not, and a changed byte breaks ours
SELECT raw::jsonb ->> 'event' AS event, raw::jsonb ? 'sig' AS has_sig, mm.verify_event(raw) AS genuine,
	   mm.verify_event(replace(raw, '"te_sig"', '"te_sih"')) AS altered
  FROM te_sig_events ORDER BY 1, 3;
-- the signature is the standard HMAC-SHA256, what a client computes with its
-- own library: SHA256((K xor opad) || SHA256((K xor ipad) || m)), here with
-- K = 32 bytes 0xab (zero-padded to 64) and m = the payload without its
-- last member ', "sig": "<64 hex>"' (76 characters with the closing brace)
SELECT encode(sha256(decode(repeat('f7', 32) || repeat('5c', 32), 'hex')
				 || sha256(decode(repeat('9d', 32) || repeat('36', 32), 'hex')
						   || convert_to(left(raw, length(raw) - 76) || '}', 'UTF8'))), 'hex')
	   = substr(raw, length(raw) - 65, 64) AS standard_hmac
  FROM te_sig_events WHERE mm.verify_event(raw);
-- another key: the same payload no longer verifies, from the next statement
-- of the same transaction on (the key read before is not reused)
BEGIN;
SELECT bool_or(mm.verify_event(raw)) AS verifies_before_the_change FROM te_sig_events;
UPDATE mm.event_key SET key = decode(repeat('cd', 32), 'hex');
SELECT bool_or(mm.verify_event(raw)) AS any_verifies_under_another_key FROM te_sig_events;
SAVEPOINT back;
UPDATE mm.event_key SET key = decode(repeat('ab', 32), 'hex');
SELECT bool_or(mm.verify_event(raw)) AS verifies_under_the_first_key_again FROM te_sig_events;
ROLLBACK TO SAVEPOINT back;
SELECT bool_or(mm.verify_event(raw)) AS verifies_after_the_rollback FROM te_sig_events;
COMMIT;
-- odd input: false, or NULL for NULL
SELECT mm.verify_event('') AS empty, mm.verify_event('{}') AS object, mm.verify_event(NULL) IS NULL AS null_in,
	   mm.verify_event(repeat('x', 200)) AS garbage;
-- events are only signed for tickets in the state they announce
-- (sig2 is searching, sig1 was cancelled, not timed out)
SELECT mm.create_ticket('te_sig', '[{"id": "sig2"}]', '2026-01-01 00:00:00+00') > 0 AS created;
DO $$
DECLARE
	event text;
	player text;
BEGIN
	FOR event, player IN VALUES ('ticket_cancelled', 'sig2'), ('ticket_timed_out', 'sig1') LOOP
		BEGIN
			PERFORM mm.notify_ticket_event(event, 'te_sig',
				ARRAY(SELECT t.id FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = player));
			RAISE NOTICE '% of %: sent', event, player;
		EXCEPTION WHEN invalid_parameter_value THEN
			RAISE NOTICE '% of %: %', event, player, regexp_replace(SQLERRM, '[0-9]+', 'N');
		END;
	END LOOP;
END
$$;
-- the same check over many tickets (a dropped queue's): read as one set
-- (rolled back: no event leaves)
BEGIN;
SELECT count(mm.cancel_ticket(mm.create_ticket('te_sig', jsonb_build_array(jsonb_build_object('id', 'many' || i)),
	'2026-01-01 00:00:00+00'))) AS cancelled FROM generate_series(1, 20) i;
DO $$
DECLARE
	many bigint[] := ARRAY(SELECT t.id FROM mm.tickets t
							WHERE t.queue = 'te_sig' AND t.players -> 0 ->> 'id' LIKE 'many%' ORDER BY t.id);
	searching bigint := (SELECT t.id FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'sig2');
BEGIN
	PERFORM mm.notify_ticket_event('ticket_cancelled', 'te_sig', many);
	RAISE NOTICE '% cancelled tickets: sent', cardinality(many);
	BEGIN
		PERFORM mm.notify_ticket_event('ticket_cancelled', 'te_sig', many || searching);
		RAISE NOTICE 'and a searching one: sent';
	EXCEPTION WHEN invalid_parameter_value THEN
		RAISE NOTICE 'and a searching one: %', replace(SQLERRM, searching::text, 'SEARCHING');
	END;
END
$$;
ROLLBACK;
-- without a key no event goes out unsigned: the transaction fails
BEGIN;
DELETE FROM mm.event_key;
SELECT mm.cancel_ticket(t.id) FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'sig2';
ROLLBACK;
-- the key is secret: only its owner reads it
CREATE ROLE te_reader;
GRANT USAGE ON SCHEMA mm TO te_reader;
SET ROLE te_reader;
SELECT key FROM mm.event_key;
RESET ROLE;
REVOKE USAGE ON SCHEMA mm FROM te_reader;
DROP ROLE te_reader;

SELECT dblink_disconnect('tick_listener');
SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['te_q', 'te_big', 'te_lock', 'te_sig']) q;
DROP EXTENSION dblink;
