-- What-if: mm.replay and mm.replay_matches.  A history is made by ticking
-- a 1v1 queue every second in simulated time (two tickets arrive each
-- second for 100 s, between the ticks; every 17th is cancelled as it
-- arrives); replayed with
-- the queue's own config, the same ticks form the same matches; a looser
-- config matches faster, a stricter one slower; nothing live changes, no
-- event is sent, it runs read-only, and two calls agree.  The sequences are
-- put back at the end: later files show ids.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
CREATE TEMP TABLE rp_sequences AS
SELECT format('%I.%I', schemaname, sequencename) AS seq, last_value FROM pg_sequences WHERE schemaname = 'mm';

SELECT mm.create_queue('rp', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
  "ticket_timeout_seconds": 60,
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50,
             "expansion": {"every_seconds": 10, "delta": 50, "limit": 300}}]}');
DO $$
DECLARE
	t0 timestamptz := '2026-01-01 00:00:00+00';
	i int := 0;
	id bigint;
BEGIN
	FOR s IN 0..119 LOOP
		IF s < 100 THEN
			FOR k IN 1..2 LOOP
				i := i + 1;
				id := mm.create_ticket('rp', jsonb_build_array(jsonb_build_object('id', 'rp' || i,
						'attributes', jsonb_build_object('skill', (i * 7919) % 1000))),
					t0 + make_interval(secs => s + 0.25 + (k - 1) * 0.5));
				IF i % 17 = 0 THEN
					PERFORM mm.cancel_ticket(id);
				END IF;
			END LOOP;
		END IF;
		PERFORM mm.tick('rp', t0 + make_interval(secs => s + 1));
	END LOOP;
END
$$;
-- the cancels above ran at the wall clock's time: date them as they were
-- meant, at their tickets' arrival
UPDATE mm.tickets_ended SET updated_at = created_at WHERE queue = 'rp' AND status = 'cancelled';
CREATE TEMP TABLE rp_live AS
SELECT (SELECT count(*) FROM mm.tickets WHERE queue = 'rp') AS tickets,
	   (SELECT count(*) FROM mm.matches WHERE queue = 'rp') AS matches,
	   (SELECT count(*) FROM mm.match_players WHERE queue = 'rp') AS players,
	   (SELECT max(updated_at) FROM mm.tickets WHERE queue = 'rp') AS last_update;
SELECT tickets, matches FROM rp_live;

-- 1. the queue's own config, ticking when the live ticks did: the same matches
LISTEN mm_events;
SELECT count(*) AS replayed_matches FROM mm.replay_matches('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00');
SELECT count(*) AS not_in_history FROM (
	SELECT r.tickets FROM mm.replay_matches('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00') r
	EXCEPT
	SELECT array_agg(t.id ORDER BY t.id) FROM mm.tickets t WHERE t.queue = 'rp' AND t.status = 'matched' GROUP BY t.match_id) d;
SELECT count(*) AS not_replayed FROM (
	SELECT array_agg(t.id ORDER BY t.id) FROM mm.tickets t WHERE t.queue = 'rp' AND t.status = 'matched' GROUP BY t.match_id
	EXCEPT
	SELECT r.tickets FROM mm.replay_matches('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00') r) d;
-- and the same figures as recorded, side by side
SELECT k, r.replay -> k AS replay, r.recorded -> k AS recorded
  FROM (SELECT x -> 'replay' AS replay, x -> 'recorded' AS recorded
		  FROM mm.replay('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00') x) r,
	   unnest(ARRAY['tickets', 'matched', 'matched_share', 'time_to_match_p50', 'time_to_match_p95',
					'time_to_match_max', 'timed_out', 'cancelled', 'matches', 'quality_mean', 'quality_p10',
					'skill_attribute', 'skill_spread_mean', 'team_gap_mean']) k
 ORDER BY k;
SELECT mm.replay('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00') -> 'replay' -> 'rules' AS rule_checks;

-- 2. a looser config matches sooner; a stricter one later and less
SELECT (l -> 'replay' ->> 'time_to_match_p50')::numeric < (l -> 'recorded' ->> 'time_to_match_p50')::numeric AS looser_is_faster,
	   (s -> 'replay' ->> 'time_to_match_p50')::numeric > (s -> 'recorded' ->> 'time_to_match_p50')::numeric AS stricter_is_slower,
	   (s -> 'replay' ->> 'matched_share')::numeric < (s -> 'recorded' ->> 'matched_share')::numeric AS stricter_matches_fewer,
	   (s -> 'replay' ->> 'timed_out')::int > 0 AS stricter_times_out
  FROM mm.replay('rp', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
		"ticket_timeout_seconds": 60, "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 300}]}',
		'2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00') l,
	   mm.replay('rp', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
		"ticket_timeout_seconds": 60, "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 5}]}',
		'2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00') s;

-- 3. deterministic; read-only; nothing live changed, no event (a
-- notification would print here)
SELECT mm.replay('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00', '3 seconds')
	 = mm.replay('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00', '3 seconds') AS same_twice;
BEGIN READ ONLY;
SELECT (mm.replay('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00') -> 'replay' ->> 'matches')::int > 0
	AS replays_read_only;
COMMIT;
SELECT (SELECT count(*) FROM mm.tickets WHERE queue = 'rp') = l.tickets
	   AND (SELECT count(*) FROM mm.matches WHERE queue = 'rp') = l.matches
	   AND (SELECT count(*) FROM mm.match_players WHERE queue = 'rp') = l.players
	   AND (SELECT max(updated_at) FROM mm.tickets WHERE queue = 'rp') = l.last_update AS nothing_live_changed
  FROM rp_live l;
UNLISTEN mm_events;

-- 4. a role queue: the same seats, per role, on both sides
SELECT mm.create_queue('rp_roles', '{"teams": [{"name": "a", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
  {"name": "b", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}]}');
DO $$
BEGIN
	FOR s IN 0..9 LOOP
		PERFORM mm.create_ticket('rp_roles', jsonb_build_array(jsonb_build_object('id', 'rr' || (s * 4 + k),
				'roles', CASE WHEN k = 1 THEN '["tank"]'::jsonb WHEN k = 2 THEN '["dps", "tank"]' ELSE '["dps"]' END)),
			'2026-01-01 00:00:00.25+00'::timestamptz + make_interval(secs => s))
		  FROM generate_series(1, 4) k;
		PERFORM mm.tick('rp_roles', '2026-01-01 00:00:01+00'::timestamptz + make_interval(secs => s));
	END LOOP;
END
$$;
SELECT x -> 'replay' -> 'roles' = x -> 'recorded' -> 'roles' AS same_roles, x -> 'replay' -> 'roles' AS roles
  FROM mm.replay('rp_roles', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:10+00') x;
SELECT p ->> 'player' AS player, p ->> 'team' AS team, p ->> 'role' AS role
  FROM mm.replay_matches('rp_roles', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:10+00') r,
	   jsonb_array_elements(r.players) p
 WHERE r.match_number = 1 ORDER BY 1;
SELECT mm.drop_queue('rp_roles', true);

-- 5. bad arguments
SELECT mm.replay('rp', NULL, '2026-01-01', '2026-01-01 00:01', '0 seconds');
SELECT mm.replay('rp', NULL, '2026-01-01', '2026-01-01 00:01', '1 day');
SELECT mm.replay('rp', NULL, '2026-01-01 00:01', '2026-01-01', '1 second');
SELECT mm.replay('rp', NULL, '-infinity', '2026-01-01', '1 second');
SELECT mm.replay('rp', NULL, '2026-01-01', '2036-01-01', '1 second');
SELECT mm.replay('nope', NULL, '2026-01-01', '2026-01-02', '1 second');
SELECT mm.replay('rp', '{"teams": [{"name": "a", "min": 1, "max": 1}], "rules": []}', '2026-01-01', '2026-01-02', '1 second');
SELECT mm.replay('rp', '{"match_size": {"min": 2, "max": 2}, "match_function": "public.nope"}', '2026-01-01', '2026-01-02', '1 second');
SELECT mm.replay(NULL, NULL, '2026-01-01', '2026-01-02', '1 second');
SELECT mm.replay('rp', NULL, '2026-01-01', '2026-01-02', NULL);
-- what each group role may call
SELECT r.rolname, has_function_privilege(r.rolname, 'mm.replay(text, jsonb, timestamptz, timestamptz, interval)', 'EXECUTE') AS replay,
	   has_function_privilege(r.rolname, 'mm.replay_matches(text, jsonb, timestamptz, timestamptz, interval)', 'EXECUTE') AS replay_matches
  FROM pg_roles r WHERE r.rolname IN ('mm_frontend', 'mm_ticker', 'mm_analyst', 'mm_director', 'mm_admin') ORDER BY 1;

SELECT mm.drop_queue('rp', true);
SELECT bool_and(CASE WHEN s.last_value IS NULL THEN setval(s.seq::regclass, 1, false) > 0
					 ELSE setval(s.seq::regclass, s.last_value) > 0 END) AS sequences_restored
  FROM rp_sequences s;
