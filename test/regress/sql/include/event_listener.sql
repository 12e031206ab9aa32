-- The event listener of the lifecycle files (\i sql/include/event_listener.sql
-- after \set listener NAME and \set queue_prefix PREFIX; the file ends with
-- \i sql/include/event_listener_end.sql): a dblink connection that LISTENs
-- on mm_events, m0 (the last match id drawn), the id sequences saved, and
-- pg_temp.try and pg_temp.events (the events of the queues named PREFIX or
-- PREFIX_*).
-- dblink listens; made here only when no file before did, and dropped at
-- the end then, so the files after this one find what they would without it
SELECT NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'dblink') AS made_dblink \gset
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
SELECT dblink_connect(:'listener',
	format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
		   split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_exec(:'listener', 'LISTEN mm_events');
-- read by pg_temp.events (a function body sees no psql variable)
SELECT set_config('mm_test.listener', :'listener', false) IS NOT NULL AS listening,
       set_config('mm_test.queue_prefix', :'queue_prefix', false) IS NOT NULL AS filtering;
-- match ids continue from the last one drawn (other files drop their matches)
SELECT coalesce(pg_sequence_last_value('mm.matches_id_seq'), 0) AS m0 \gset
-- the id sequences as they are: restored at the end, so that the files after
-- this one see the ids they would see without it
SELECT t.last_value AS seq_tickets, t.is_called AS seq_tickets_called,
	   m.last_value AS seq_matches, m.is_called AS seq_matches_called,
	   b.last_value AS seq_backfill, b.is_called AS seq_backfill_called
  FROM mm.tickets_id_seq t, mm.matches_id_seq m, mm.backfill_requests_id_seq b \gset

\i sql/include/try.sql
-- The events of this file's queues sent since the last call (waits until
-- none arrive for 0.3 s),
-- without signature, ticket ids as their first players, match ids relative
-- to m0; each one's signature checked.
CREATE FUNCTION pg_temp.events(m0 bigint) RETURNS TABLE (event jsonb, signed boolean)
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	quiet integer := 0;
	k text;
BEGIN
	WHILE quiet < 3 LOOP
		PERFORM pg_sleep(0.1);
		quiet := quiet + 1;
		FOR r IN SELECT * FROM dblink_get_notify(current_setting('mm_test.listener')) LOOP
			quiet := 0;
			event := r.extra::jsonb - 'sig' - 'request_id';
			-- an all-queues tick ticks the queues of other files too
			CONTINUE WHEN event ->> 'queue' NOT LIKE current_setting('mm_test.queue_prefix') || '\_%'
					  AND event ->> 'queue' <> current_setting('mm_test.queue_prefix');
			IF event ? 'match_id' THEN
				event := event || jsonb_build_object('match_id', (event ->> 'match_id')::bigint - m0);
			END IF;
			FOREACH k IN ARRAY ARRAY['tickets', 'requeued_tickets', 'cancelled_tickets'] LOOP
				IF event ? k THEN
					event := jsonb_set(event, ARRAY[k],
						(SELECT coalesce(jsonb_agg(t.players -> 0 ->> 'id' ORDER BY u.ord), '[]')
						   FROM jsonb_array_elements_text(event -> k) WITH ORDINALITY AS u(id, ord)
						   JOIN mm.tickets t ON t.id = u.id::bigint));
				END IF;
			END LOOP;
			signed := mm.verify_event(r.extra);
			RETURN NEXT;
		END LOOP;
	END LOOP;
END
$$;
