-- Role queues: compositions, preferences, the exact seating, autofill and
-- its protection, role_difference, per-role ratings, role-aware backfill,
-- explain_ticket's roles, a free-for-all with roles, match function
-- proposals.  The sequences are put back at the end: later files show ids.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
CREATE TEMP TABLE rq_sequences AS
SELECT format('%I.%I', schemaname, sequencename) AS seq, last_value FROM pg_sequences WHERE schemaname = 'mm';

-- 1. Configs: every problem named by its path
SELECT mm.validate_queue_config('{"teams": [{"name": "a", "min": 5, "max": 5, "roles": {"tank": 1, "healer": 1, "dps": 2}},
  {"name": "b", "min": 5, "max": 5, "roles": {"tank": 1, "healer": 1, "dps": 3}}]}');
SELECT mm.validate_queue_config('{"teams": [{"name": "a", "min": 5, "max": 5, "roles": {"tank": 1, "healer": 1, "dps": 3}},
  {"name": "b", "min": 5, "max": 5}]}');
SELECT mm.validate_queue_config('{"teams": [{"name": "a", "min": 4, "max": 5, "roles": {"tank": 1, "dps": 4}},
  {"name": "b", "min": 4, "max": 5, "roles": {"tank": 1, "dps": 4}}]}');
SELECT mm.validate_queue_config('{"teams": [{"name": "a", "min": 2, "max": 2, "roles": [{"tank": 1, "dps": 1}, {"tank": 1.5}]},
  {"name": "b", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}]}');
SELECT mm.validate_queue_config('{"teams": [{"name": "a", "min": 2, "max": 2, "roles": {}},
  {"name": "b", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}]}');
SELECT mm.validate_queue_config('{"teams": [{"name": "a", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
  {"name": "b", "min": 2, "max": 2, "roles": {"tank": 1, "bad role": 1}}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 9, "max": 9},
  "roles": {"r1": 1, "r2": 1, "r3": 1, "r4": 1, "r5": 1, "r6": 1, "r7": 1, "r8": 1, "r9": 1}}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 3}, "roles": {"a": 2}}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "autofill": {"after_seconds": 30}}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "roles": {"a": 2}, "autofill": {"protect_games": 3}}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "roles": {"a": 2}, "autofill": {"after_seconds": -1}}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "elo", "per_role": true}}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "roles": {"a": 2},
  "rules": [{"name": "rd", "type": "role_difference", "attribute": "skill", "max": 10}]}');
SELECT mm.validate_queue_config('{"teams": [{"name": "a", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
  {"name": "b", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
  "rules": [{"name": "rd", "type": "role_difference", "attribute": "skill", "max": 10},
            {"name": "c", "type": "compound", "statement": "and(rd)"}]}');
-- 3 compositions on each of 7 teams combine in 2187 ways: more than 256
SELECT mm.validate_queue_config(jsonb_build_object('teams',
  (SELECT jsonb_agg(jsonb_build_object('name', 't' || t, 'min', 2, 'max', 2, 'roles',
          (SELECT jsonb_agg(jsonb_build_object('a', c, 'b', 2 - c)) FROM generate_series(0, 2) c)))
     FROM generate_series(1, 7) t)));
-- a valid one, as the tick reads it: every team's roles as a list
SELECT jsonb_pretty(mm.validate_queue_config('{"teams": [
  {"name": "red", "min": 3, "max": 3, "roles": [{"tank": 1, "dps": 2}, {"tank": 2, "dps": 1}]},
  {"name": "blue", "min": 3, "max": 3, "roles": {"tank": 1, "dps": 2}}],
  "autofill": {"after_seconds": 60, "protect_games": 2},
  "rating": {"system": "glicko2", "pool": "rq", "per_role": true}}') - 'rules' - 'statistics');

-- 2. Tickets: preferences checked against the queue's roles
SELECT mm.create_queue('rq', '{"teams": [{"name": "red", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
  {"name": "blue", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
  "autofill": {"after_seconds": 60, "protect_games": 2}}');
SELECT mm.create_ticket('rq', '[{"id": "x", "roles": ["tank", "mage"]}]', '2026-01-01');
SELECT mm.create_ticket('rq', '[{"id": "x", "roles": ["tank", "tank"]}]', '2026-01-01');
SELECT mm.create_ticket('rq', '[{"id": "x", "roles": ["fill", "tank"]}]', '2026-01-01');
SELECT mm.create_ticket('rq', '[{"id": "x", "roles": []}]', '2026-01-01');
SELECT mm.create_ticket('rq', '[{"id": "x", "roles": "tank"}]', '2026-01-01');
SELECT mm.create_ticket('rq', '[{"id": "x", "roles": [3]}]', '2026-01-01');
-- a queue without roles ignores a well-formed list
SELECT mm.create_queue('rq_plain', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.create_ticket('rq_plain', '[{"id": "x", "roles": ["mage"]}]', '2026-01-01') > 0 AS accepted;
SELECT mm.drop_queue('rq_plain', true);

-- 3. The check as candidates join: three dps-only players cannot share a
-- 2v2 of one tank and one dps a side; the third waits, the tanks join
SELECT mm.create_ticket('rq', jsonb_build_array(jsonb_build_object('id', p, 'roles', r)),
                        '2026-01-01 00:00:00'::timestamptz + n * interval '1 second')
  FROM (VALUES (1, 'a1', '["dps"]'::jsonb), (2, 'a2', '["dps"]'), (3, 'a3', '["dps"]'),
               (4, 'a4', '["tank"]'), (5, 'a5', '["tank"]')) v(n, p, r)
 ORDER BY n;
SELECT mm.tick('rq', '2026-01-01 00:00:10');
SELECT player_id, team, role, autofilled FROM mm.match_players WHERE queue = 'rq' ORDER BY player_id;
SELECT t.players -> 0 ->> 'id' AS still_searching FROM mm.tickets t WHERE t.queue = 'rq' AND t.status = 'searching';
SELECT mm.cancel_ticket(t.id) FROM mm.tickets t WHERE t.queue = 'rq' AND t.status = 'searching';

-- 4. The seating is exact: b3 only plays dps and b4 only tank, so one of
-- b1 and b2 (both dps first) tanks; a pass in age order seating each
-- player on their first free choice would have no dps seat left for b3
SELECT mm.create_ticket('rq', jsonb_build_array(jsonb_build_object('id', p, 'roles', r)),
                        '2026-01-01 00:01:00'::timestamptz + n * interval '1 second')
  FROM (VALUES (1, 'b1', '["dps", "tank"]'::jsonb), (2, 'b2', '["dps", "tank"]'), (3, 'b3', '["dps"]'),
               (4, 'b4', '["tank"]')) v(n, p, r)
 ORDER BY n;
SELECT mm.tick('rq', '2026-01-01 00:01:10');
SELECT player_id, team, role, autofilled,
       (SELECT t.players -> 0 -> 'roles' ->> 0 FROM mm.tickets t WHERE t.id = mp.ticket_id) = role AS first_choice
  FROM mm.match_players mp WHERE queue = 'rq' AND player_id LIKE 'b%' ORDER BY player_id;
-- first choices come first when gathering: b7 (dps, else tank) waits
-- though older than b8 and b9, who play their first choice like b5 and b6
SELECT mm.create_ticket('rq', jsonb_build_array(jsonb_build_object('id', p, 'roles', r)),
                        '2026-01-01 00:01:20'::timestamptz + n * interval '1 second')
  FROM (VALUES (5, 'b5', '["dps"]'::jsonb), (6, 'b6', '["dps"]'), (7, 'b7', '["dps", "tank"]'),
               (8, 'b8', '["tank"]'), (9, 'b9', '["tank"]')) v(n, p, r)
 ORDER BY n;
SELECT mm.tick('rq', '2026-01-01 00:01:30');
SELECT player_id, team, role FROM mm.match_players mp
 WHERE queue = 'rq' AND player_id IN ('b5', 'b6', 'b7', 'b8', 'b9') ORDER BY player_id;
SELECT t.players -> 0 ->> 'id' AS still_searching FROM mm.tickets t WHERE t.queue = 'rq' AND t.status = 'searching';
SELECT mm.cancel_ticket(t.id) FROM mm.tickets t WHERE t.queue = 'rq' AND t.status = 'searching';

-- 5. A party stays on one team: two tank-only friends cannot share a
-- team of one tank; with a dps friend they can
SELECT mm.create_ticket('rq', '[{"id": "c1", "roles": ["tank"]}, {"id": "c2", "roles": ["tank"]}]', '2026-01-01 00:02:00');
SELECT mm.create_ticket('rq', '[{"id": "c3", "roles": ["dps"]}]', '2026-01-01 00:02:01');
SELECT mm.create_ticket('rq', '[{"id": "c4", "roles": ["fill"]}]', '2026-01-01 00:02:02');
SELECT mm.tick('rq', '2026-01-01 00:02:10');
SELECT count(*) AS matched_c FROM mm.match_players WHERE queue = 'rq' AND player_id LIKE 'c%';
SELECT mm.create_ticket('rq', '[{"id": "c5", "roles": ["dps"]}, {"id": "c6", "roles": ["tank"]}]', '2026-01-01 00:02:03');
SELECT mm.tick('rq', '2026-01-01 00:02:20');
SELECT player_id, team, role FROM mm.match_players WHERE queue = 'rq' AND player_id LIKE 'c%' ORDER BY player_id;
SELECT mm.cancel_ticket(t.id) FROM mm.tickets t WHERE t.queue = 'rq' AND t.status = 'searching';

-- 6. Autofill: four dps-only players wait until their tickets are 60 s
-- old, then two of them tank, flagged and protected for two games
SELECT mm.create_ticket('rq', jsonb_build_array(jsonb_build_object('id', 'd' || n, 'roles', '["dps"]'::jsonb)),
                        '2026-01-01 00:03:00'::timestamptz + n * interval '1 second')
  FROM generate_series(1, 4) n;
SELECT mm.tick('rq', '2026-01-01 00:03:30') AS before_autofill;
SELECT jsonb_pretty(mm.explain_ticket(t.id, '2026-01-01 00:03:30') -> 'roles') FROM mm.tickets t
 WHERE t.players -> 0 ->> 'id' = 'd1';
SELECT mm.tick('rq', '2026-01-01 00:04:10') AS after_autofill;
SELECT player_id, role, autofilled FROM mm.match_players WHERE queue = 'rq' AND player_id LIKE 'd%' ORDER BY player_id;
SELECT player_id, games_left FROM mm.autofill_protection WHERE queue = 'rq' ORDER BY player_id;
-- the match ends; the four queue again, all old enough for autofill: d1
-- and d2 are protected and keep to dps, so d3 and d4 tank this time
SELECT mm.complete_match(m.id) FROM mm.matches m WHERE m.queue = 'rq' AND m.status = 'ready';
SELECT mm.create_ticket('rq', jsonb_build_array(jsonb_build_object('id', 'd' || n, 'roles', '["dps"]'::jsonb)),
                        '2026-01-01 00:05:00'::timestamptz + n * interval '1 second')
  FROM generate_series(1, 4) n;
SELECT mm.tick('rq', '2026-01-01 00:07:00') AS second_round;
SELECT player_id, role, autofilled FROM mm.match_players
 WHERE queue = 'rq' AND match_id = (SELECT max(match_id) FROM mm.match_players WHERE queue = 'rq')
 ORDER BY player_id;
-- a third time all four are protected: no match, however long they wait
SELECT mm.complete_match(m.id) FROM mm.matches m WHERE m.queue = 'rq' AND m.status = 'ready';
SELECT mm.create_ticket('rq', jsonb_build_array(jsonb_build_object('id', 'd' || n, 'roles', '["dps"]'::jsonb)),
                        '2026-01-01 00:08:00'::timestamptz + n * interval '1 second')
  FROM generate_series(1, 4) n;
SELECT mm.tick('rq', '2026-01-01 01:00:00') AS all_protected;
-- once the protection has counted down (mm.report_result does it per game
-- played), they may be autofilled again
UPDATE mm.autofill_protection SET games_left = 0 WHERE queue = 'rq';
SELECT mm.tick('rq', '2026-01-01 01:00:10') AS unprotected;
SELECT count(*) FILTER (WHERE autofilled) AS autofilled, count(*) AS players
  FROM mm.match_players WHERE queue = 'rq'
   AND match_id = (SELECT max(match_id) FROM mm.match_players WHERE queue = 'rq');

-- 7. Role-aware backfill: the tank leaves; a dps-only ticket cannot take
-- the seat, a dps-or-tank one can
SELECT mm.complete_match(m.id) FROM mm.matches m WHERE m.queue = 'rq' AND m.status = 'ready';
SELECT mm.create_ticket('rq', jsonb_build_array(jsonb_build_object('id', p, 'roles', r)),
                        '2026-01-01 01:08:00'::timestamptz + n * interval '1 second')
  FROM (VALUES (1, 'e1', '["tank"]'::jsonb), (2, 'e2', '["dps"]'), (3, 'e3', '["tank"]'), (4, 'e4', '["dps"]')) v(n, p, r)
 ORDER BY n;
SELECT mm.tick('rq', '2026-01-01 01:08:10');
SELECT m.id AS e_match FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id AND mp.queue = m.queue
 WHERE mp.player_id = 'e1' \gset
SELECT mm.leave_match(:e_match, 'e1', '2026-01-01 01:09:00');
SELECT mm.request_backfill(:e_match, NULL, '2026-01-01 01:09:00') IS NOT NULL AS requested;
SELECT mm.create_ticket('rq', '[{"id": "f1", "roles": ["dps"]}]', '2026-01-01 01:09:01');
SELECT mm.create_ticket('rq', '[{"id": "f2", "roles": ["dps", "tank"]}]', '2026-01-01 01:09:02');
SELECT mm.tick('rq', '2026-01-01 01:09:10');
SELECT player_id, team, role, left_at IS NOT NULL AS has_left FROM mm.match_players
 WHERE match_id = :e_match ORDER BY team, role, player_id;
SELECT t.players -> 0 ->> 'id' AS still_searching FROM mm.tickets t WHERE t.queue = 'rq' AND t.status = 'searching';
SELECT mm.drop_queue('rq', true);

-- 8. role_difference with per-role ratings: the tanks' tank ratings are
-- 400 apart, more than the rule's 100; once a closer tank queues, they play
SELECT mm.create_queue('rq_rated', '{"teams": [{"name": "red", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
  {"name": "blue", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
  "rating": {"system": "elo", "pool": "rqr", "per_role": true},
  "rules": [{"name": "lane", "type": "role_difference", "attribute": "rating", "source": "rating", "max": 100}]}');
INSERT INTO mm.ratings (player_id, pool, rating, games, wins, updated_at) VALUES
  ('g1', 'rqr.tank', 1500, 10, 5, '2026-01-01'), ('g2', 'rqr.tank', 1900, 10, 5, '2026-01-01'),
  ('g2', 'rqr.dps', 1500, 10, 5, '2026-01-01'), ('g5', 'rqr.tank', 1550, 10, 5, '2026-01-01');
SELECT mm.create_ticket('rq_rated', jsonb_build_array(jsonb_build_object('id', p, 'roles', r)),
                        '2026-01-01 00:10:00'::timestamptz + n * interval '1 second')
  FROM (VALUES (1, 'g1', '["tank"]'::jsonb), (2, 'g2', '["tank"]'), (3, 'g3', '["dps"]'), (4, 'g4', '["dps"]')) v(n, p, r)
 ORDER BY n;
SELECT mm.tick('rq_rated', '2026-01-01 00:10:10') AS far_tanks;
SELECT mm.create_ticket('rq_rated', '[{"id": "g5", "roles": ["tank"]}]', '2026-01-01 00:10:20');
SELECT mm.tick('rq_rated', '2026-01-01 00:10:30') AS close_tanks;
SELECT player_id, role FROM mm.match_players WHERE queue = 'rq_rated' ORDER BY player_id;
DELETE FROM mm.ratings WHERE pool LIKE 'rqr.%';
SELECT mm.drop_queue('rq_rated', true);

-- 9. Two compositions: a team of three plays 1 tank + 2 dps or 2 tanks +
-- 1 dps; four tanks and two dps fill 2/1 against 2/1
SELECT mm.create_queue('rq_two', '{"teams": [
  {"name": "red", "min": 3, "max": 3, "roles": [{"tank": 1, "dps": 2}, {"tank": 2, "dps": 1}]},
  {"name": "blue", "min": 3, "max": 3, "roles": [{"tank": 1, "dps": 2}, {"tank": 2, "dps": 1}]}]}');
SELECT mm.create_ticket('rq_two', jsonb_build_array(jsonb_build_object('id', 'h' || n, 'roles',
                          CASE WHEN n <= 4 THEN '["tank"]'::jsonb ELSE '["dps"]' END)),
                        '2026-01-01 00:11:00'::timestamptz + n * interval '1 second')
  FROM generate_series(1, 6) n;
SELECT mm.tick('rq_two', '2026-01-01 00:11:10');
SELECT team, count(*) FILTER (WHERE role = 'tank') AS tanks, count(*) FILTER (WHERE role = 'dps') AS dps
  FROM mm.match_players WHERE queue = 'rq_two' GROUP BY team ORDER BY team;
SELECT mm.drop_queue('rq_two', true);

-- 10. A free-for-all with roles: one "b" seat and two "a" seats, or
-- three "a"; the b-only ticket waits for a second b player
SELECT mm.create_queue('rq_ffa', '{"match_size": {"min": 3, "max": 3}, "roles": [{"a": 1, "b": 2}, {"a": 3}]}');
SELECT mm.create_ticket('rq_ffa', jsonb_build_array(jsonb_build_object('id', 'k' || n, 'roles',
                          CASE WHEN n = 1 THEN '["b"]'::jsonb ELSE '["a"]' END)),
                        '2026-01-01 00:12:00'::timestamptz + n * interval '1 second')
  FROM generate_series(1, 4) n;
SELECT mm.tick('rq_ffa', '2026-01-01 00:12:10');
SELECT player_id, team, role FROM mm.match_players WHERE queue = 'rq_ffa' ORDER BY player_id;
SELECT mm.drop_queue('rq_ffa', true);

-- 11. A match function's proposal is seated on the teams it chose; one
-- that cannot be (two tanks on one team of one tank) is rejected
CREATE FUNCTION public.rq_pairs(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE sql AS $$
	SELECT jsonb_build_object('teams', jsonb_build_object(
	         'red', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'),
	         'blue', jsonb_build_array(tickets -> 2 -> 'id', tickets -> 3 -> 'id')))
	 WHERE jsonb_array_length(tickets) >= 4
$$;
SELECT mm.create_queue('rq_fn', '{"teams": [{"name": "red", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
  {"name": "blue", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}], "match_function": "public.rq_pairs"}');
SELECT mm.create_ticket('rq_fn', jsonb_build_array(jsonb_build_object('id', p, 'roles', r)),
                        '2026-01-01 00:13:00'::timestamptz + n * interval '1 second')
  FROM (VALUES (1, 'm1', '["tank"]'::jsonb), (2, 'm2', '["tank"]'), (3, 'm3', '["dps"]'), (4, 'm4', '["dps"]')) v(n, p, r)
 ORDER BY n;
SELECT mm.tick('rq_fn', '2026-01-01 00:13:10') AS two_tanks_on_red;
SELECT queue, proposals, accepted, rejected_teams FROM mm.match_function_stats();
SELECT mm.cancel_ticket(t.id) FROM mm.tickets t WHERE t.queue = 'rq_fn' AND t.status = 'searching';
SELECT mm.create_ticket('rq_fn', jsonb_build_array(jsonb_build_object('id', p, 'roles', r)),
                        '2026-01-01 00:14:00'::timestamptz + n * interval '1 second')
  FROM (VALUES (1, 'n1', '["tank"]'::jsonb), (2, 'n2', '["dps"]'), (3, 'n3', '["dps", "tank"]'), (4, 'n4', '["dps"]')) v(n, p, r)
 ORDER BY n;
SELECT mm.tick('rq_fn', '2026-01-01 00:14:10') AS seated;
SELECT player_id, team, role FROM mm.match_players WHERE queue = 'rq_fn' ORDER BY player_id;
SELECT mm.drop_queue('rq_fn', true);
DROP FUNCTION public.rq_pairs(text, jsonb, timestamptz);

SELECT bool_and(CASE WHEN s.last_value IS NULL THEN setval(s.seq::regclass, 1, false) > 0
                     ELSE setval(s.seq::regclass, s.last_value) > 0 END) AS sequences_restored
  FROM rq_sequences s;
