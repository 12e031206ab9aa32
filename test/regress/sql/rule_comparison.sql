-- Rule type comparison: every player's value against a reference (operator
-- =, !=, <, <=, >, >=), or across the match's players (all_equal,
-- all_different).  Absolute ranges (Open Match's "mmr:100-999" filters) are
-- two comparisons.  An expansion gives the reference of each step (steps).
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql

-- a range as two comparisons: level 10..20
SELECT mm.create_queue('cmp_range', '{"match_size": {"min": 2, "max": 3},
  "rules": [{"name": "lo", "type": "comparison", "attribute": "level", "operator": ">=", "reference": 10},
            {"name": "hi", "type": "comparison", "attribute": "level", "operator": "<=", "reference": 20}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_range', '[{"id": "r5", "attributes": {"level": 5}}]', '2026-01-01 00:00:00+00'),
  ('cmp_range', '[{"id": "r10", "attributes": {"level": 10}}]', '2026-01-01 00:00:01+00'),
  ('cmp_range', '[{"id": "r15", "attributes": {"level": 15}}, {"id": "r25", "attributes": {"level": 25}}]', '2026-01-01 00:00:02+00'),
  ('cmp_range', '[{"id": "r20", "attributes": {"level": 20}}]', '2026-01-01 00:00:03+00'),
  ('cmp_range', '[{"id": "r21", "attributes": {"level": 21}}]', '2026-01-01 00:00:04+00');
-- passes: r10 and r20; fails: r5 (< 10), the party with r25 (> 20), r21
SELECT mm.tick('cmp_range', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cmp_range');
SELECT pg_temp.searching('cmp_range');

-- every operator on the same six players (one ticket each, match of 2):
-- which tickets can play at all
DO $$
DECLARE
	ops text[] := ARRAY['=', '!=', '<', '<=', '>', '>='];
BEGIN
	FOR i IN 1 .. 6 LOOP
		PERFORM mm.create_queue('cmp_op', jsonb_build_object('match_size', '{"min": 2, "max": 6}'::jsonb,
			'rules', jsonb_build_array(jsonb_build_object('name', 'c', 'type', 'comparison',
				'attribute', 'v', 'operator', ops[i], 'reference', 3))));
		INSERT INTO mm.tickets (queue, players, created_at)
		SELECT 'cmp_op', jsonb_build_array(jsonb_build_object('id', format('op%s_v%s', i, v),
												 'attributes', jsonb_build_object('v', v))),
			   '2026-01-01 00:00:00+00'::timestamptz + v * interval '1 second'
		  FROM generate_series(1, 5) v;
		PERFORM mm.tick('cmp_op', '2026-01-01 00:00:10+00');
		RAISE NOTICE 'operator % 3: matched %', ops[i],
			(SELECT coalesce(string_agg(mp.player_id, ' ' ORDER BY mp.player_id), 'nobody')
			   FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id WHERE m.queue = 'cmp_op');
		PERFORM mm.drop_queue('cmp_op', force => true);
	END LOOP;
END $$;

-- all_equal: every player has the same value (a party that disagrees with
-- itself never plays while the rule is on)
SELECT mm.create_queue('cmp_equal', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "region_code", "type": "comparison", "attribute": "code", "operator": "all_equal"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_equal', '[{"id": "q1", "attributes": {"code": 1}}]', '2026-01-01 00:00:00+00'),
  ('cmp_equal', '[{"id": "q2", "attributes": {"code": 2}}]', '2026-01-01 00:00:01+00'),
  ('cmp_equal', '[{"id": "q3", "attributes": {"code": 1}}, {"id": "q4", "attributes": {"code": 2}}]', '2026-01-01 00:00:02+00'),
  ('cmp_equal', '[{"id": "q5", "attributes": {"code": 1}}]', '2026-01-01 00:00:03+00');
SELECT mm.tick('cmp_equal', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cmp_equal');
SELECT pg_temp.searching('cmp_equal');

-- all_different: no two players share a value (one of each class)
SELECT mm.create_queue('cmp_diff', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "class", "type": "comparison", "attribute": "class", "operator": "all_different"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_diff', '[{"id": "k1", "attributes": {"class": 1}}]', '2026-01-01 00:00:00+00'),
  ('cmp_diff', '[{"id": "k2", "attributes": {"class": 1}}]', '2026-01-01 00:00:01+00'),
  ('cmp_diff', '[{"id": "k3", "attributes": {"class": 2}}]', '2026-01-01 00:00:02+00'),
  ('cmp_diff', '[{"id": "k4", "attributes": {"class": 2}}]', '2026-01-01 00:00:03+00'),
  ('cmp_diff', '[{"id": "k5", "attributes": {"class": 3}}]', '2026-01-01 00:00:04+00');
SELECT mm.tick('cmp_diff', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cmp_diff');
SELECT pg_temp.searching('cmp_diff');

-- expansion reached: the reference steps down from 1500 to 1200 after 20 s
SELECT mm.create_queue('cmp_expand', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "elite", "type": "comparison", "attribute": "mmr", "operator": ">=", "reference": 1500,
             "expansion": {"every_seconds": 20, "steps": [1200]}}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_expand', '[{"id": "x1", "attributes": {"mmr": 1600}}]', '2026-01-01 00:00:00+00'),
  ('cmp_expand', '[{"id": "x2", "attributes": {"mmr": 1300}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('cmp_expand', '2026-01-01 00:00:19+00');
SELECT mm.tick('cmp_expand', '2026-01-01 00:00:20+00');
SELECT * FROM pg_temp.matches('cmp_expand');

-- optional after N seconds
SELECT mm.create_queue('cmp_optional', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "elite", "type": "comparison", "attribute": "mmr", "operator": ">", "reference": 1500,
             "seconds_until_optional": 45}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_optional', '[{"id": "y1", "attributes": {"mmr": 1400}}]', '2026-01-01 00:00:00+00'),
  ('cmp_optional', '[{"id": "y2", "attributes": {"mmr": 1600}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('cmp_optional', '2026-01-01 00:00:44+00');
SELECT mm.tick('cmp_optional', '2026-01-01 00:00:45+00');
SELECT * FROM pg_temp.matches('cmp_optional');

-- missing values: refused without default or when_missing; a default is
-- compared like a value; match_any passes
SELECT mm.create_queue('cmp_missing', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "lvl", "type": "comparison", "attribute": "level", "operator": ">=", "reference": 10}]}');
INSERT INTO mm.tickets (queue, players) VALUES ('cmp_missing', '[{"id": "z0"}]');
SELECT mm.create_queue('cmp_default', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "lvl", "type": "comparison", "attribute": "level", "operator": ">=", "reference": 10, "default": 1}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_default', '[{"id": "z1"}]', '2026-01-01 00:00:00+00'),
  ('cmp_default', '[{"id": "z2", "attributes": {"level": 12}}]', '2026-01-01 00:00:01+00'),
  ('cmp_default', '[{"id": "z3", "attributes": {"level": 11}}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('cmp_default', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cmp_default');
SELECT mm.create_queue('cmp_any', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "lvl", "type": "comparison", "attribute": "level", "operator": ">=", "reference": 10,
             "when_missing": "match_any"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_any', '[{"id": "a1"}]', '2026-01-01 00:00:00+00'),
  ('cmp_any', '[{"id": "a2", "attributes": {"level": 12}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('cmp_any', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cmp_any');

-- validation, with the JSON path of the problem
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "v", "reference": 1}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "v", "operator": "~", "reference": 1}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "v", "operator": ">="}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "v", "operator": "all_equal", "reference": 1}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "v", "operator": ">=", "reference": "gold"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "v", "operator": ">=", "reference": 5,
             "expansion": {"every_seconds": 10, "delta": 1}}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "v", "operator": "<", "reference": -2.5,
             "expansion": {"every_seconds": 10, "steps": [0, null]}},
            {"name": "d", "type": "comparison", "attribute": "w", "operator": "all_different"}]}') -> 'rules';

-- a string reference: = and != compare strings (the others are refused,
-- above); a missing string takes the rule's string default
SELECT mm.create_queue('cmp_string', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "ranked_only", "type": "comparison", "attribute": "mode", "operator": "=",
             "reference": "ranked", "default": "casual"},
            {"name": "no_bots", "type": "comparison", "attribute": "kind", "operator": "!=",
             "reference": "bot", "when_missing": "match_any"}]}');
SELECT mm.validate_queue_config(config) -> 'rules' FROM mm.queues WHERE name = 'cmp_string';
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_string', '[{"id": "st1", "attributes": {"mode": "ranked", "kind": "bot"}}]', '2026-01-01 00:00:00+00'),
  ('cmp_string', '[{"id": "st2", "attributes": {"mode": "ranked"}}]', '2026-01-01 00:00:01+00'),
  ('cmp_string', '[{"id": "st3", "attributes": {"kind": "human"}}]', '2026-01-01 00:00:02+00'),
  ('cmp_string', '[{"id": "st4", "attributes": {"mode": "ranked", "kind": "human"}}]', '2026-01-01 00:00:03+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_string', '[{"id": "st5", "attributes": {"mode": 7}}]', '2026-01-01 00:00:04+00');
-- st1 is a bot, st3 plays casual (the default): st2 and st4
SELECT mm.tick('cmp_string', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cmp_string');
SELECT pg_temp.searching('cmp_string');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "v", "operator": "=", "reference": "gold",
             "expansion": {"every_seconds": 10, "steps": ["silver"]}}]}');

-- contains: a list attribute holds the reference (FlexMatch's collection
-- "contains"): only players who listed "ctf" play the ctf queue
SELECT mm.create_queue('cmp_contains', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "wants_ctf", "type": "comparison", "attribute": "modes", "operator": "contains",
             "reference": "ctf"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_contains', '[{"id": "ct1", "attributes": {"modes": ["dm"]}}]', '2026-01-01 00:00:00+00'),
  ('cmp_contains', '[{"id": "ct2", "attributes": {"modes": ["dm", "ctf"]}}]', '2026-01-01 00:00:01+00'),
  ('cmp_contains', '[{"id": "ct3", "attributes": {"modes": []}}]', '2026-01-01 00:00:02+00'),
  ('cmp_contains', '[{"id": "ct4", "attributes": {"modes": ["ctf"]}}]', '2026-01-01 00:00:03+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_contains', '[{"id": "ct5", "attributes": {"modes": "ctf"}}]', '2026-01-01 00:00:04+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cmp_contains', '[{"id": "ct6"}]', '2026-01-01 00:00:04+00');
SELECT mm.tick('cmp_contains', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cmp_contains');
SELECT pg_temp.searching('cmp_contains');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "m", "operator": "contains", "reference": 3}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "m", "operator": "contains", "reference": "x",
             "default": "x"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "comparison", "attribute": "m", "operator": "<", "reference": "x"}]}');

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['cmp_range', 'cmp_equal', 'cmp_diff', 'cmp_expand', 'cmp_optional',
                    'cmp_missing', 'cmp_default', 'cmp_any', 'cmp_string', 'cmp_contains']) q;
