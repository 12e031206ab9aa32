-- Trojan objects (pg_cron's privilege-escalation lesson): a user who can
-- create objects in a schema that comes first on the search_path must not be
-- able to hijack any code of the extension.  Every trap raises an error, so
-- a single unqualified reference anywhere in the paths below fails this test.
CREATE SCHEMA trojan;
CREATE FUNCTION trojan.trap_text_eq(text, text) RETURNS boolean
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan = (text, text) called'; END$$;
CREATE OPERATOR trojan.= (LEFTARG = text, RIGHTARG = text, FUNCTION = trojan.trap_text_eq);
CREATE FUNCTION trojan.trap_int8_eq(bigint, bigint) RETURNS boolean
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan = (bigint, bigint) called'; END$$;
CREATE OPERATOR trojan.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = trojan.trap_int8_eq);
CREATE FUNCTION trojan.trap_jsonb_field(jsonb, text) RETURNS text
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan ->> (jsonb, text) called'; END$$;
CREATE OPERATOR trojan.->> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = trojan.trap_jsonb_field);
CREATE FUNCTION trojan.trap_ts_lt(timestamptz, timestamptz) RETURNS boolean
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan < (timestamptz, timestamptz) called'; END$$;
CREATE OPERATOR trojan.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = trojan.trap_ts_lt);
CREATE FUNCTION trojan.now() RETURNS timestamptz
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan now() called'; END$$;
CREATE FUNCTION trojan.jsonb_array_elements(jsonb) RETURNS SETOF jsonb
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan jsonb_array_elements() called'; END$$;
CREATE FUNCTION trojan.jsonb_typeof(jsonb) RETURNS text
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan jsonb_typeof() called'; END$$;
CREATE FUNCTION trojan.length(text) RETURNS integer
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan length() called'; END$$;
CREATE FUNCTION trojan.pg_notify(text, text) RETURNS void
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan pg_notify() called'; END$$;
CREATE FUNCTION trojan.count(anyelement) RETURNS bigint
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan count() called'; END$$;
-- the traps are live: an unqualified call in this session hits them
SET search_path = trojan, pg_catalog, public;
SELECT 'a' = 'a';
SELECT now();

-- every entry point, with the traps first on the search path
SELECT mm.create_queue('trojan-q', '{"teams": [{"name": "a", "min": 1, "max": 2}, {"name": "b", "min": 1, "max": 2}],
  "ticket_timeout_seconds": 60, "statistics": {"show_player_count": true, "show_time_to_match": true},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50,
             "expansion": {"every_seconds": 10, "delta": 50, "limit": 200}},
            {"name": "ping", "type": "latency", "max_ms": 100},
            {"name": "mode", "type": "string_equality", "attribute": "mode", "seconds_until_optional": 30},
            {"name": "fair", "type": "team_difference", "attribute": "skill", "max": 100},
            {"name": "even", "type": "team_size_balance", "max_difference": 0}]}');
SELECT mm.alter_queue('trojan-q', (SELECT config FROM mm.queues WHERE name OPERATOR(pg_catalog.=) 'trojan-q'));
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}}') IS NOT NULL AS validated;
SELECT mm.create_ticket('trojan-q', '[{"id": "tr1", "attributes": {"skill": 1000, "mode": "x"}, "latencies": {"eu": 20}}]',
                        '2040-01-01 00:00:00+00') IS NOT NULL AS created;
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('trojan-q', '[{"id": "tr2", "attributes": {"skill": 1010, "mode": "x"}, "latencies": {"eu": 30}}]', '2040-01-01 00:00:01+00'),
  ('trojan-q', '[{"id": "tr3", "attributes": {"skill": 5000, "mode": "x"}, "latencies": {"eu": 30}}]', '2040-01-01 00:00:02+00'),
  ('trojan-q', '[{"id": "tr4", "attributes": {"skill": 9000, "mode": "y"}, "latencies": {"eu": 30}}]', '2040-01-01 00:00:03+00');
SELECT mm.tick('trojan-q', '2040-01-01 00:00:05+00') AS matches;
SELECT mm.tick(NULL, '2040-01-01 00:00:06+00') AS matches_all_queues;
SELECT count(*) OPERATOR(pg_catalog.>) 0 AS has_stats FROM mm.last_tick_stats();
SELECT mm.cancel_ticket(id) FROM mm.tickets
 WHERE queue OPERATOR(pg_catalog.=) 'trojan-q' AND players OPERATOR(pg_catalog.@>) '[{"id": "tr3"}]';
SELECT mm.tick('trojan-q', '2040-01-01 00:02:00+00') AS after_timeout;
SELECT status, pg_catalog.count(*) FROM mm.tickets WHERE queue OPERATOR(pg_catalog.=) 'trojan-q'
 GROUP BY status ORDER BY status;
SELECT pg_catalog.count(*) AS stats_rows FROM mm.queue_stats('1 hour', '2040-01-01 00:03:00+00');
SELECT pg_catalog.count(*) AS health_rows FROM mm.health_report('trojan-q', '1 hour', '2040-01-01 00:03:00+00');
SELECT pg_catalog.count(*) AS player_stat_rows FROM mm.queue_statistics('trojan-q', '2040-01-01 00:03:00+00');
SELECT pg_catalog.count(*) AS minute_rows
  FROM mm.queue_stats_by_minute('trojan-q', '2040-01-01 00:00:00+00', '2040-01-01 00:05:00+00');
SELECT pg_catalog.count(*) AS match_stat_rows FROM mm.match_stats('1 hour', '2040-01-01 00:03:00+00');
SELECT * FROM mm.purge_finished('1 day', 100, false, '2040-01-01 00:03:00+00');
SELECT mm.schedule('trojan-q');   -- no pg_cron here: its own error, not a trap
SELECT mm.rule_threshold((SELECT config FROM mm.queues WHERE name OPERATOR(pg_catalog.=) 'trojan-q'), 'skill', 25);
SELECT mm.drop_queue('trojan-q', force => true);
-- 0.4's entry points: heartbeats, tokens, live match expiry, a requeue, and
-- a match function (run as its author with its own search_path)
SELECT mm.create_queue('trojan-life', '{"match_size": {"min": 2, "max": 2}, "heartbeat_timeout_seconds": 30,
  "live_match_timeout_seconds": 60}');
SELECT ticket_id IS NOT NULL AS created, pg_catalog.length(token) AS token_length
  FROM mm.create_ticket_with_token('trojan-life', '[{"id": "tl1"}]', '2040-01-01 00:00:00+00');
SELECT mm.create_ticket_with_token(ARRAY['trojan-life'], '[{"id": "tl2"}]', '2040-01-01 00:00:01+00') IS NOT NULL AS created;
SELECT mm.create_ticket('trojan-life', '[{"id": "tl3"}]', '2040-01-01 00:00:02+00') IS NOT NULL AS created;
SELECT mm.heartbeat(t.id, '2040-01-01 00:00:20+00') AS beaten FROM mm.tickets t
 WHERE t.queue OPERATOR(pg_catalog.=) 'trojan-life' AND t.players OPERATOR(pg_catalog.@>) '[{"id": "tl1"}]';
SELECT mm.heartbeat(t.id, '2040-01-01 00:00:20+00') AS beaten FROM mm.tickets t
 WHERE t.queue OPERATOR(pg_catalog.=) 'trojan-life' AND t.players OPERATOR(pg_catalog.@>) '[{"id": "tl2"}]';
-- tl3 is silent: cancelled; tl1 and tl2 match
SELECT mm.tick('trojan-life', '2040-01-01 00:00:40+00') AS matches;
SELECT t.players OPERATOR(pg_catalog.->) 0 OPERATOR(pg_catalog.->>) 'id' AS player, t.status, t.cancel_reason
  FROM mm.tickets t WHERE t.queue OPERATOR(pg_catalog.=) 'trojan-life' ORDER BY t.id;
SELECT a.ticket_status, a.match_status FROM mm.tickets t
 CROSS JOIN LATERAL mm.get_assignment(t.id, mm.ticket_token(t.id)) a
 WHERE t.queue OPERATOR(pg_catalog.=) 'trojan-life' AND t.players OPERATOR(pg_catalog.@>) '[{"id": "tl1"}]';
-- the match outlives its 60 s: expired
SELECT mm.tick('trojan-life', '2040-01-01 00:02:00+00') AS matches;
SELECT status, cancel_reason FROM mm.matches WHERE queue OPERATOR(pg_catalog.=) 'trojan-life';
-- a requeue of a live match
SELECT mm.create_ticket('trojan-life', '[{"id": "tl4"}]', '2040-01-01 00:03:00+00') IS NOT NULL AS created,
       mm.create_ticket('trojan-life', '[{"id": "tl5"}]', '2040-01-01 00:03:00+00') IS NOT NULL AS created;
SELECT mm.tick('trojan-life', '2040-01-01 00:03:01+00') AS matches;
SELECT pg_catalog.cardinality(mm.requeue_match(m.id, 'server crashed', '2040-01-01 00:03:02+00')) AS requeued
  FROM mm.matches m WHERE m.queue OPERATOR(pg_catalog.=) 'trojan-life' AND m.status OPERATOR(pg_catalog.=) 'ready';
CREATE SCHEMA trojan_mf;
CREATE FUNCTION trojan_mf.pairs(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE sql AS $$
  SELECT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'))
   WHERE jsonb_array_length(tickets) >= 2 AND jsonb_typeof(tickets) = 'array' $$;
SELECT mm.alter_queue('trojan-life', '{"match_size": {"min": 2, "max": 2}, "match_function": "trojan_mf.pairs"}');
SELECT mm.tick('trojan-life', '2040-01-01 00:03:03+00') AS matches_by_function;
SELECT mm.drop_queue('trojan-life', force => true);
DROP SCHEMA trojan_mf CASCADE;
-- ratings and balancing are C; they never look anything up by name
SELECT pg_catalog.round(mm.elo_update(1500, 1200, 1)::numeric, 2) AS elo,
       mm.balance_teams(ARRAY[1, 2, 3, 4]::float8[]) AS teams;

RESET search_path;
DROP SCHEMA trojan CASCADE;

-- Trojan types: a procedure (it commits, so it has no SET clause) looks the
-- types of its variables and casts up on the caller's search_path, which a
-- database owner can set for every session (ALTER DATABASE ... SET
-- search_path); a domain there with a CHECK would run as whoever calls it,
-- a superuser's pg_cron job included.
CREATE SCHEMA trojan_types;
CREATE FUNCTION trojan_types.trap_check() RETURNS boolean
	LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'trojan domain checked'; END$$;
CREATE DOMAIN trojan_types.timestamptz AS pg_catalog.timestamptz CHECK (trojan_types.trap_check());
CREATE DOMAIN trojan_types.interval AS pg_catalog.interval CHECK (trojan_types.trap_check());
CREATE DOMAIN trojan_types.text AS pg_catalog.text CHECK (trojan_types.trap_check());
CREATE DOMAIN trojan_types.int4 AS pg_catalog.int4 CHECK (trojan_types.trap_check());
CREATE DOMAIN trojan_types.bool AS pg_catalog.bool CHECK (trojan_types.trap_check());
CREATE DOMAIN trojan_types.record AS pg_catalog.int4 CHECK (trojan_types.trap_check());
SET search_path = trojan_types, pg_catalog, public;
-- the traps are live
SELECT 'x'::text;
-- a queue with no schedule: the loop takes its lock and returns; no
-- retention schedule: the retention job returns
CALL mm.tick_loop('trojan-loop');
CALL mm.run_retention();
RESET search_path;
DROP SCHEMA trojan_types CASCADE;
