-- Events (src/events.c, src/event_signing.c; docs/events.md): the key that
-- signs every mm_events payload, the signature check anyone may call, and
-- the internal functions that queue ticket and match events (sent at commit).

-- The secret that signs every mm_events payload (src/event_signing.c): 32
-- random bytes made at install.  Readable by no role but the extension's
-- owner; the extension reads it internally to sign and to verify.  Not in
-- pg_dump's output: a restored database makes its own key.
CREATE TABLE mm.event_key (
	id integer PRIMARY KEY DEFAULT 1 CONSTRAINT event_key_single_row CHECK (id OPERATOR(pg_catalog.=) 1),
	key bytea NOT NULL
		CONSTRAINT event_key_length CHECK (pg_catalog.length(key) OPERATOR(pg_catalog.>=) 16
										   AND pg_catalog.length(key) OPERATOR(pg_catalog.<=) 256),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE mm.event_key IS 'The HMAC-SHA256 key that signs every mm_events payload; secret';
REVOKE ALL ON TABLE mm.event_key FROM PUBLIC;
INSERT INTO mm.event_key (key)
SELECT pg_catalog.decode(pg_catalog.replace(
		   CAST(pg_catalog.gen_random_uuid() AS text) OPERATOR(pg_catalog.||)
		   CAST(pg_catalog.gen_random_uuid() AS text), '-', ''), 'hex');

CREATE FUNCTION mm.verify_event(payload text)
RETURNS boolean
LANGUAGE C STABLE STRICT
AS 'MODULE_PATHNAME', 'mm_verify_event';
COMMENT ON FUNCTION mm.verify_event(text) IS
'True when an mm_events payload carries this database''s signature ("sig"), so the extension sent it unchanged';
GRANT EXECUTE ON FUNCTION mm.verify_event(text) TO mm_admin;

CREATE FUNCTION mm.notify_ticket_event(event text, queue text, tickets bigint[])
RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'mm_notify_ticket_event';
COMMENT ON FUNCTION mm.notify_ticket_event(text, text, bigint[]) IS
'Queues signed ticket_cancelled or ticket_timed_out events for tickets in that state, split under 8000 bytes; sent at commit';
REVOKE ALL ON FUNCTION mm.notify_ticket_event(text, text, bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.notify_ticket_event(text, text, bigint[]) TO mm_admin;

CREATE FUNCTION mm.notify_match_event(event text, match_id bigint, details jsonb)
RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'mm_notify_match_event';
COMMENT ON FUNCTION mm.notify_match_event(text, bigint, jsonb) IS
'Internal: queues a signed match event {"event", "queue", "match_id", "status", <details>} on mm_events, sent at commit';
REVOKE ALL ON FUNCTION mm.notify_match_event(text, bigint, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.notify_match_event(text, bigint, jsonb) TO mm_admin;

-- The same for a match of a known queue, read by (queue, id): on Citus the
-- queue's shard only (the lifecycle's calls by queue and the tick).
CREATE FUNCTION mm.notify_match_event(event text, queue text, match_id bigint, details jsonb)
RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'mm_notify_queue_match_event';
COMMENT ON FUNCTION mm.notify_match_event(text, text, bigint, jsonb) IS
'Internal: queues a signed match event of a queue''s match (read by queue and id) on mm_events, sent at commit';
REVOKE ALL ON FUNCTION mm.notify_match_event(text, text, bigint, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.notify_match_event(text, text, bigint, jsonb) TO mm_admin;
