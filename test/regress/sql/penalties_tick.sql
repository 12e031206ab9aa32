-- Penalties, the C side: the "penalties" config key checked on every write,
-- and the tick's low-priority pool (penalised tickets match each other
-- until they are max_wait_seconds old, then anyone), with
-- mm.match_players.low_priority and mm.explain_ticket's "low_priority".
-- The standings are written into mm.player_penalties directly.  The
-- sequences are put back at the end: later files show ids.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
CREATE TEMP TABLE pt_sequences AS
SELECT format('%I.%I', schemaname, sequencename) AS seq, last_value FROM pg_sequences WHERE schemaname = 'mm';

-- a config's error as a client sees it, with its hint
CREATE FUNCTION pg_temp.penalties_error(penalties jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	hint text;
BEGIN
	PERFORM mm.validate_queue_config(jsonb_build_object('match_size', '{"min": 2, "max": 2}'::jsonb,
														'penalties', penalties));
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
	RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN hint <> '' THEN ' (' || hint || ')' ELSE '' END;
END $$;

-- 1. The config: each problem named by its path
SELECT p AS penalties, pg_temp.penalties_error(p::jsonb) AS result
  FROM (VALUES ('3'),
               ('[]'),
               ('{"cooldown": {}}'),
               ('{"cooldown_seconds": 60}'),
               ('{"cooldown_seconds": {"kick": 60}}'),
               ('{"cooldown_seconds": {"dodge": "60"}}'),
               ('{"cooldown_seconds": {"dodge": -1}}'),
               ('{"cooldown_seconds": {"leave": 31536001}}'),
               ('{"cooldown_growth": 0.5}'),
               ('{"cooldown_growth": 11}'),
               ('{"max_cooldown_seconds": -1}'),
               ('{"max_cooldown_seconds": 31536001}'),
               ('{"low_priority": true}'),
               ('{"low_priority": {"games": 3, "max_wait_seconds": 300}}'),
               ('{"low_priority": {"offences": 3, "max_wait_seconds": 300}}'),
               ('{"low_priority": {"offences": 3, "games": 3}}'),
               ('{"low_priority": {"offences": 0, "games": 3, "max_wait_seconds": 300}}'),
               ('{"low_priority": {"offences": 1.5, "games": 3, "max_wait_seconds": 300}}'),
               ('{"low_priority": {"offences": 3, "games": 1001, "max_wait_seconds": 300}}'),
               ('{"low_priority": {"offences": 3, "games": 3, "max_wait_seconds": -1}}'),
               ('{"low_priority": {"offences": 3, "games": 3, "max_wait_seconds": 86401}}'),
               ('{"low_priority": {"offences": 3, "games": 3, "max_wait_seconds": 300, "pool": "x"}}'),
               ('{"forgive_after_games": 0}'),
               ('{"forgive_after_games": 2.5}'),
               ('{}'),
               ('{"cooldown_seconds": {"dodge": 0, "acceptance_timeout": 30, "leave": 31536000}, "cooldown_growth": 10,
                 "max_cooldown_seconds": 0, "low_priority": {"offences": 1000, "games": 1, "max_wait_seconds": 0},
                 "forgive_after_games": 1000}')) v(p);
-- the normalised config keeps it as given
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "penalties": {"cooldown_seconds": {"dodge": 60, "acceptance_timeout": 30, "leave": 300}, "cooldown_growth": 2,
                "max_cooldown_seconds": 3600, "low_priority": {"offences": 3, "games": 3, "max_wait_seconds": 300},
                "forgive_after_games": 5}}') -> 'penalties' AS normalised;
-- a write is checked too
SELECT mm.create_queue('lp_bad', '{"match_size": {"min": 2, "max": 2}, "penalties": {"low_priority": {}}}');

-- 2. The pool: p1 and p2 have low-priority games left, n1 and n2 none.  In
-- age order p1 would meet n1 and p2 n2; the pool pairs p1 with p2 (every
-- skill is the default: the rule passes every pair).
SELECT mm.create_queue('lp', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 1000, "default": 0}],
  "penalties": {"cooldown_seconds": {"dodge": 60},
                "low_priority": {"offences": 3, "games": 3, "max_wait_seconds": 60}}}');
INSERT INTO mm.player_penalties (player_id, queue, offences, low_priority_games, updated_at)
VALUES ('p1', 'lp', 3, 2, '2026-01-01'), ('p2', 'lp', 3, 2, '2026-01-01'), ('p3', 'lp', 3, 2, '2026-01-01'),
       -- a standing in another queue, and one worked off, do not count
       ('n1', 'lp_other', 3, 2, '2026-01-01'), ('n2', 'lp', 3, 0, '2026-01-01');
SELECT mm.create_ticket('lp', jsonb_build_array(jsonb_build_object('id', p)),
                        '2026-01-01 00:00:00'::timestamptz + n * interval '1 second') > 0 AS created
  FROM (VALUES (1, 'p1'), (2, 'n1'), (3, 'p2'), (4, 'n2')) v(n, p)
 ORDER BY n;
SELECT mm.tick('lp', '2026-01-01 00:00:10') AS matches;
SELECT string_agg(player_id || CASE WHEN low_priority THEN ' (low priority)' ELSE '' END, ', ' ORDER BY player_id) AS match
  FROM mm.match_players WHERE queue = 'lp' GROUP BY match_id ORDER BY 1;

-- 3. A lone penalised ticket and a lone normal one: apart while p3 is
-- younger than 60 s, together once it is 60 s old
SELECT mm.create_ticket('lp', '[{"id": "p3"}]', '2026-01-01 00:01:00') > 0 AS created;
SELECT mm.create_ticket('lp', '[{"id": "n3"}]', '2026-01-01 00:01:01') > 0 AS created;
SELECT mm.tick('lp', '2026-01-01 00:01:30') AS matches_at_30s;
SELECT t.players -> 0 ->> 'id' AS player, mm.explain_ticket(t.id, '2026-01-01 00:01:30') -> 'low_priority' AS low_priority
  FROM mm.tickets t WHERE t.queue = 'lp' AND t.status = 'searching' ORDER BY t.id;
SELECT mm.tick('lp', '2026-01-01 00:01:59.999') AS matches_just_before;
SELECT mm.tick('lp', '2026-01-01 00:02:00') AS matches_at_60s;
SELECT string_agg(player_id || CASE WHEN low_priority THEN ' (low priority)' ELSE '' END, ', ' ORDER BY player_id) AS match
  FROM mm.match_players WHERE queue = 'lp' GROUP BY match_id ORDER BY 1;
-- a ticket of the other pool is no rule's failure
SELECT rule, total_passed, total_failed FROM mm.rule_evaluations WHERE queue = 'lp';

-- 4. Penalties without a low-priority pool: the standings change nothing
SELECT mm.create_queue('lp_nopool', '{"match_size": {"min": 2, "max": 2},
  "penalties": {"cooldown_seconds": {"leave": 300}}}');
INSERT INTO mm.player_penalties (player_id, queue, offences, low_priority_games, updated_at)
VALUES ('q1', 'lp_nopool', 3, 2, '2026-01-01');
SELECT mm.create_ticket('lp_nopool', jsonb_build_array(jsonb_build_object('id', p)),
                        '2026-01-01 00:00:00'::timestamptz + n * interval '1 second') > 0 AS created
  FROM (VALUES (1, 'q1'), (2, 'q2')) v(n, p)
 ORDER BY n;
SELECT mm.tick('lp_nopool', '2026-01-01 00:00:10') AS matches;
SELECT string_agg(player_id || CASE WHEN low_priority THEN ' (low priority)' ELSE '' END, ', ' ORDER BY player_id) AS match
  FROM mm.match_players WHERE queue = 'lp_nopool' GROUP BY match_id ORDER BY 1;

-- 5. Backfill: a running match is normal; a ticket in the low-priority pool
-- does not join it, a penalised one past the bound does
SELECT mm.create_queue('lp_bf', '{"match_size": {"min": 2, "max": 3},
  "penalties": {"low_priority": {"offences": 3, "games": 3, "max_wait_seconds": 60}}}');
INSERT INTO mm.player_penalties (player_id, queue, offences, low_priority_games, updated_at)
VALUES ('bp', 'lp_bf', 3, 2, '2026-01-01');
SELECT mm.create_ticket('lp_bf', jsonb_build_array(jsonb_build_object('id', p)),
                        '2026-01-01 00:00:00'::timestamptz + n * interval '1 second') > 0 AS created
  FROM (VALUES (1, 'b1'), (2, 'b2')) v(n, p)
 ORDER BY n;
SELECT mm.tick('lp_bf', '2026-01-01 00:00:10') AS matches;
SELECT mm.request_backfill('lp_bf', m.id, '{"players": 1}', '2026-01-01 00:00:20') > 0 AS requested
  FROM mm.matches m WHERE m.queue = 'lp_bf';
SELECT mm.create_ticket('lp_bf', '[{"id": "bp"}]', '2026-01-01 00:00:21') > 0 AS created;
SELECT mm.tick('lp_bf', '2026-01-01 00:00:30') AS matches;
SELECT status FROM mm.backfill_requests WHERE queue = 'lp_bf';
SELECT mm.tick('lp_bf', '2026-01-01 00:01:21') AS matches;
SELECT status FROM mm.backfill_requests WHERE queue = 'lp_bf';
SELECT string_agg(player_id || CASE WHEN low_priority THEN ' (low priority)' ELSE '' END, ', ' ORDER BY player_id) AS match
  FROM mm.match_players WHERE queue = 'lp_bf' GROUP BY match_id ORDER BY 1;

SELECT mm.drop_queue('lp', true);
SELECT mm.drop_queue('lp_nopool', true);
SELECT mm.drop_queue('lp_bf', true);
DELETE FROM mm.player_penalties WHERE queue IN ('lp', 'lp_other', 'lp_nopool', 'lp_bf');
SELECT bool_and(CASE WHEN s.last_value IS NULL THEN setval(s.seq::regclass, 1, false) > 0
                     ELSE setval(s.seq::regclass, s.last_value) > 0 END) AS sequences_restored
  FROM pt_sequences s;
