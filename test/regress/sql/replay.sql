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

-- a director may not replay: a replay reads every recorded ticket, and a
-- rule can test any attribute ("phone" != '...' forms a match or not)
CREATE ROLE rp_director IN ROLE mm_director;
SET ROLE rp_director;
SELECT count(*) FROM mm.replay_matches('rp', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
  "rules": [{"name": "probe", "type": "comparison", "attribute": "phone", "operator": "!=", "reference": "+1-555-0100"}]}',
  '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00');
SELECT mm.replay('rp', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:02:00+00');
RESET ROLE;
DROP ROLE rp_director;

-- 6. acceptance and penalties.  Live: pb rejects the first proposal (a
-- dodge, 60 s of cooldown), pa and pc accept the next; p1 ... p12 are too
-- far apart to match; pb queues again after the cooldown and is matched
-- with pf.
SELECT mm.create_queue('rp_acc', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
  "ticket_timeout_seconds": 60, "acceptance_timeout_seconds": 10,
  "penalties": {"cooldown_seconds": {"dodge": 60, "acceptance_timeout": 30}},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
CREATE FUNCTION pg_temp.rp_ticket(player text, skill int, at float8) RETURNS bigint LANGUAGE sql AS $$
	SELECT mm.create_ticket('rp_acc', jsonb_build_array(jsonb_build_object('id', player,
		'attributes', jsonb_build_object('skill', skill))), '2026-01-01 00:00:00+00'::timestamptz + make_interval(secs => at))
$$;
CREATE FUNCTION pg_temp.rp_at(s float8) RETURNS timestamptz LANGUAGE sql AS $$
	SELECT '2026-01-01 00:00:00+00'::timestamptz + make_interval(secs => s)
$$;
CREATE FUNCTION pg_temp.rp_answer(player text, accept boolean, s float8) RETURNS text LANGUAGE sql AS $$
	SELECT mm.accept_match('rp_acc', mp.match_id, player, accept, pg_temp.rp_at(s))
	  FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id AND m.queue = mp.queue
	 WHERE mp.queue = 'rp_acc' AND mp.player_id = player AND m.status = 'proposed'
$$;
SELECT pg_temp.rp_ticket('pa', 100, 0.25) > 0 AS a1, pg_temp.rp_ticket('pb', 110, 0.5) > 0 AS b1;
SELECT mm.tick('rp_acc', pg_temp.rp_at(1)) AS proposed;
SELECT pg_temp.rp_answer('pb', false, 3) AS pb_rejects;
SELECT pg_temp.rp_ticket('pc', 120, 3.25) > 0 AS c1;
SELECT mm.tick('rp_acc', pg_temp.rp_at(4)) AS proposed;
SELECT pg_temp.rp_answer('pa', true, 5), pg_temp.rp_answer('pc', true, 6) AS ready;
SELECT bool_and(pg_temp.rp_ticket('p' || k, 500 + 150 * k, 6 + k / 10.0) > 0) AS far_apart
  FROM generate_series(1, 12) k;
SELECT sum(mm.tick('rp_acc', pg_temp.rp_at(s))) AS formed FROM generate_series(7, 70) s;
SELECT pg_temp.rp_ticket('pb', 110, 70.25) > 0 AS b2, pg_temp.rp_ticket('pf', 115, 70.5) > 0 AS f1;
SELECT mm.tick('rp_acc', pg_temp.rp_at(71)) AS proposed;
SELECT pg_temp.rp_answer('pb', true, 72.5), pg_temp.rp_answer('pf', true, 73.5) AS ready;
SELECT sum(mm.tick('rp_acc', pg_temp.rp_at(s))) AS formed FROM generate_series(74, 150) s;
SELECT mp.player_id, m.status, m.cancel_reason, mp.accepted
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id AND mp.queue = m.queue
 WHERE m.queue = 'rp_acc' ORDER BY m.id, 1;

-- the queue's own config: every proposal is one the record answered, so each
-- is answered the same way after the same delay (the reject at 2 s, the
-- acceptances at 2 s and 2.5 s); the figures are the recorded ones
SELECT k, r.replay -> k AS replay, r.recorded -> k AS recorded
  FROM (SELECT x -> 'replay' AS replay, x -> 'recorded' AS recorded
		  FROM mm.replay('rp_acc', NULL, pg_temp.rp_at(0), pg_temp.rp_at(150)) x) r,
	   unnest(ARRAY['tickets', 'matched', 'time_to_match_p50', 'time_to_match_max', 'timed_out', 'cancelled',
					'matches', 'proposals_cancelled']) k
 ORDER BY k;
SELECT jsonb_pretty(mm.replay('rp_acc', NULL, pg_temp.rp_at(0), pg_temp.rp_at(150)) -> 'replay' -> 'modelled') AS modelled;
SELECT match_number, formed_at, ready_at, p.players
  FROM mm.replay_matches('rp_acc', NULL, pg_temp.rp_at(0), pg_temp.rp_at(150)) r,
	   LATERAL (SELECT string_agg(x ->> 'player', ' ' ORDER BY x ->> 'player') AS players
				  FROM jsonb_array_elements(r.players) x) p
 ORDER BY 1;

-- a longer cooldown: the reused reject is a dodge that now lasts 600 s, so
-- pb's ticket of 70.25 s waits for its end (600 + 3 s); pf, alone, times out
SELECT x -> 'replay' -> 'matched' AS matched, x -> 'replay' -> 'timed_out' AS timed_out,
	   x -> 'replay' -> 'modelled' -> 'penalties' AS penalties
  FROM mm.replay('rp_acc', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"ticket_timeout_seconds": 60, "acceptance_timeout_seconds": 10,
	"penalties": {"cooldown_seconds": {"dodge": 600, "acceptance_timeout": 30}},
	"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}',
	pg_temp.rp_at(0), pg_temp.rp_at(700)) x;

-- a looser rule pairs p1 ... p12, groupings the record never proposed: each
-- player's answer is drawn (seeded) at the queue's recorded rates, here a
-- reject rate of 1 - sqrt(2/3) per player from 1 rejected proposal in 3 of
-- 2 players (a pair is accepted 2 times in 3); the same draws on every call
SELECT x -> 'replay' -> 'modelled' -> 'acceptance' AS acceptance, x -> 'replay' -> 'matched' AS matched
  FROM mm.replay('rp_acc', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"ticket_timeout_seconds": 60, "acceptance_timeout_seconds": 10,
	"penalties": {"cooldown_seconds": {"dodge": 60, "acceptance_timeout": 30}},
	"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 1000}]}',
	pg_temp.rp_at(0), pg_temp.rp_at(150)) x;
SELECT mm.replay('rp_acc', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"ticket_timeout_seconds": 60, "acceptance_timeout_seconds": 10,
	"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 1000}]}',
	pg_temp.rp_at(0), pg_temp.rp_at(150))
	 = mm.replay('rp_acc', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"ticket_timeout_seconds": 60, "acceptance_timeout_seconds": 10,
	"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 1000}]}',
	pg_temp.rp_at(0), pg_temp.rp_at(150)) AS same_draws;
-- without the acceptance step nothing is proposed: pb's recorded reject
-- neither cancels its ticket nor gives a cooldown
SELECT x -> 'replay' -> 'matched' AS matched, x -> 'replay' -> 'proposals_cancelled' AS proposals_cancelled,
	   x -> 'replay' -> 'modelled' AS modelled
  FROM mm.replay('rp_acc', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"ticket_timeout_seconds": 60, "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}',
	pg_temp.rp_at(0), pg_temp.rp_at(150)) x;
SELECT mm.drop_queue('rp_acc', true);

-- times at the edges: a tick_every past the timestamps' range replays the one
-- tick at from_time (the next would lie beyond to_time), with no wrap-around
SELECT count(*) AS replayed_matches
  FROM mm.replay_matches('rp', NULL, '4713-11-24 00:00:00+00 BC', '4713-11-24 00:00:00+00 BC', '2503211000 hours');
-- rating periods a whole int64 apart: the idle periods between them are
-- counted without overflow (and decay at most 1,000,000 of them)
SELECT replayed_ids, ARRAY(SELECT round(x::numeric, 3) FROM unnest(ratings) x) AS ratings,
       ARRAY(SELECT round(x::numeric, 3) FROM unnest(rds) x) AS rds
  FROM mm.replay_ratings_core('glicko2', 0.5, 32, 1500, 350, 0.06, 4.1,
         '{}'::integer[], '{}'::float8[], '{}'::float8[], '{}'::float8[], '{}'::float8[],
         '{1,1,2,2}'::bigint[], '{a,b,a,b}'::text[], '{x,y,x,y}'::text[], '{1,2,1,2}'::integer[],
         '{0,0,0,0}'::integer[],
         '{-9223372036854775808,-9223372036854775808,9223372036854775807,9223372036854775807}'::bigint[],
         '{}'::integer[], '{}'::integer[], '{}'::float8[], '{}'::float8[], '{}'::float8[]);
-- a match of 20,000 sides (every pair of sides is a game) stops at the
-- statement_timeout instead of running on uninterruptibly
SET statement_timeout = '100ms';
SELECT count(*) FROM mm.replay_ratings_core('elo', 0.5, 32, 1500, 350, 0.06, 4.1,
         '{}'::integer[], '{}'::float8[], '{}'::float8[], '{}'::float8[], '{}'::float8[],
         array_fill(1::bigint, ARRAY[20000]), ARRAY(SELECT 'p' || g FROM generate_series(1, 20000) g),
         ARRAY(SELECT 's' || g FROM generate_series(1, 20000) g), array_fill(1, ARRAY[20000]),
         array_fill(0, ARRAY[20000]), '{}'::bigint[], '{}'::integer[], '{}'::integer[], '{}'::float8[],
         '{}'::float8[], '{}'::float8[]);
RESET statement_timeout;

SELECT mm.drop_queue('rp', true);
SELECT bool_and(CASE WHEN s.last_value IS NULL THEN setval(s.seq::regclass, 1, false) > 0
					 ELSE setval(s.seq::regclass, s.last_value) > 0 END) AS sequences_restored
  FROM rp_sequences s;
