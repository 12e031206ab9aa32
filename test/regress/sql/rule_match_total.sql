-- Rule type match_total: the sum of a numeric attribute over every player of
-- the match lies in [min, max] (roles: exactly one healer, at most two
-- tanks).  An expansion widens the range: at a step of value w the sum may
-- be in [min - w, max + w].
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql

-- passes: four players, exactly one healer; the oldest ticket's match takes
-- the first healer and leaves the second (a second healer breaks max 1)
SELECT mm.create_queue('mt_one', '{"match_size": {"min": 4, "max": 4},
  "rules": [{"name": "healer", "type": "match_total", "attribute": "healer", "min": 1, "max": 1}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mt_one', '[{"id": "h1", "attributes": {"healer": 1}}]', '2026-01-01 00:00:00+00'),
  ('mt_one', '[{"id": "h2", "attributes": {"healer": 1}}]', '2026-01-01 00:00:01+00'),
  ('mt_one', '[{"id": "d1", "attributes": {"healer": 0}}]', '2026-01-01 00:00:02+00'),
  ('mt_one', '[{"id": "d2", "attributes": {"healer": 0}}]', '2026-01-01 00:00:03+00'),
  ('mt_one', '[{"id": "d3", "attributes": {"healer": 0}}]', '2026-01-01 00:00:04+00');
SELECT mm.tick('mt_one', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('mt_one');
SELECT pg_temp.searching('mt_one');

-- fails: four damage dealers and no healer (min 1) form nothing
SELECT mm.create_queue('mt_none', '{"match_size": {"min": 4, "max": 4},
  "rules": [{"name": "healer", "type": "match_total", "attribute": "healer", "min": 1, "max": 1}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'mt_none', jsonb_build_array(jsonb_build_object('id', 'n' || i, 'attributes', '{"healer": 0}'::jsonb)),
	   '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 second'
  FROM generate_series(1, 4) i;
SELECT mm.tick('mt_none', '2026-01-01 00:00:10+00');
SELECT pg_temp.searching('mt_none');

-- a party counts all its players: a party of two healers never fits max 1
SELECT mm.create_queue('mt_party', '{"match_size": {"min": 2, "max": 4},
  "rules": [{"name": "tanks", "type": "match_total", "attribute": "tank", "max": 2}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mt_party', '[{"id": "t1", "attributes": {"tank": 1}}, {"id": "t2", "attributes": {"tank": 1}}]', '2026-01-01 00:00:00+00'),
  ('mt_party', '[{"id": "t3", "attributes": {"tank": 1}}]', '2026-01-01 00:00:01+00'),
  ('mt_party', '[{"id": "x1", "attributes": {"tank": 0}}]', '2026-01-01 00:00:02+00'),
  ('mt_party', '[{"id": "x2", "attributes": {"tank": 0}}]', '2026-01-01 00:00:03+00');
-- t1+t2 (two tanks) with x1 and x2: the third tank, t3, would make three
SELECT mm.tick('mt_party', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('mt_party');
SELECT pg_temp.searching('mt_party');

-- expansion reached: no healer at all; from 20 s the range widens by 1
-- ([0, 2]) and the four form a match; rule_steps shows the widening
SELECT mm.create_queue('mt_expand', '{"match_size": {"min": 4, "max": 4},
  "rules": [{"name": "healer", "type": "match_total", "attribute": "healer", "min": 1, "max": 1,
             "expansion": {"every_seconds": 20, "steps": [1]}}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'mt_expand', jsonb_build_array(jsonb_build_object('id', 'e' || i, 'attributes', '{"healer": 0}'::jsonb)),
	   '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 second'
  FROM generate_series(1, 4) i;
SELECT mm.tick('mt_expand', '2026-01-01 00:00:15+00');
SELECT mm.tick('mt_expand', '2026-01-01 00:00:21+00');
SELECT * FROM pg_temp.matches('mt_expand');
SELECT mm.rule_threshold(config, 'healer', 25) FROM mm.queues WHERE name = 'mt_expand';

-- optional after N seconds: the rule is off once the oldest has waited 30 s
SELECT mm.create_queue('mt_optional', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "healer", "type": "match_total", "attribute": "healer", "min": 1,
             "seconds_until_optional": 30}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mt_optional', '[{"id": "o1", "attributes": {"healer": 0}}]', '2026-01-01 00:00:00+00'),
  ('mt_optional', '[{"id": "o2", "attributes": {"healer": 0}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('mt_optional', '2026-01-01 00:00:29+00');
SELECT mm.tick('mt_optional', '2026-01-01 00:00:30+00');
SELECT * FROM pg_temp.matches('mt_optional');

-- missing values: refused at ticket creation without default or when_missing;
-- a default counts as the player's value; match_any adds nothing
SELECT mm.create_queue('mt_missing', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "healer", "type": "match_total", "attribute": "healer", "min": 1, "max": 1}]}');
INSERT INTO mm.tickets (queue, players) VALUES ('mt_missing', '[{"id": "m0"}]');
SELECT mm.create_queue('mt_default', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "healer", "type": "match_total", "attribute": "healer", "min": 1, "max": 1, "default": 1}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mt_default', '[{"id": "md1"}]', '2026-01-01 00:00:00+00'),
  ('mt_default', '[{"id": "md2"}]', '2026-01-01 00:00:01+00'),
  ('mt_default', '[{"id": "md3", "attributes": {"healer": 0}}]', '2026-01-01 00:00:02+00');
-- md1 and md2 are both healers by default: md1 takes md3
SELECT mm.tick('mt_default', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('mt_default');
SELECT mm.create_queue('mt_any', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "healer", "type": "match_total", "attribute": "healer", "min": 1, "max": 1,
             "when_missing": "match_any"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mt_any', '[{"id": "ma1"}]', '2026-01-01 00:00:00+00'),
  ('mt_any', '[{"id": "ma2"}]', '2026-01-01 00:00:01+00'),
  ('mt_any', '[{"id": "ma3", "attributes": {"healer": 1}}]', '2026-01-01 00:00:02+00');
-- ma1 and ma2 add nothing (sum 0 < min 1): ma1 takes the healer ma3
SELECT mm.tick('mt_any', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('mt_any');

-- weight: match_total accepts or refuses and does not rank; its weight
-- still counts in the quality (closeness 1)
SELECT mm.create_queue('mt_weight', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "healer", "type": "match_total", "attribute": "healer", "max": 1, "weight": 3},
            {"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mt_weight', '[{"id": "w1", "attributes": {"healer": 1, "skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('mt_weight', '[{"id": "w2", "attributes": {"healer": 1, "skill": 1000}}]', '2026-01-01 00:00:01+00'),
  ('mt_weight', '[{"id": "w3", "attributes": {"healer": 0, "skill": 1050}}]', '2026-01-01 00:00:02+00');
-- w2 is closer but a second healer: w1 takes w3; (3 * 1 + 0.5) / 4 = 0.875
SELECT mm.tick('mt_weight', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('mt_weight');

-- validation, with the JSON path of the problem
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "h", "type": "match_total", "attribute": "healer"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 10},
            {"name": "h", "type": "match_total", "attribute": "healer", "min": 2, "max": 1}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "h", "type": "match_total", "attribute": "healer", "max": "one"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "h", "type": "match_total", "max": 1}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "h", "type": "match_total", "attribute": "healer", "max": 1, "max_ms": 5}]}');
-- the normalised form
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "h", "type": "match_total", "attribute": "healer", "min": 1, "max": 1,
             "expansion": {"every_seconds": 10, "delta": 1, "limit": 2}}]}') -> 'rules';

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['mt_one', 'mt_none', 'mt_party', 'mt_expand', 'mt_optional', 'mt_missing',
                    'mt_default', 'mt_any', 'mt_weight']) q;

\set SHOW_CONTEXT never
-- counts or amounts are >= 0: a negative bound or value is refused (a later
-- negative value could have brought a sum back under max, but max is checked
-- as tickets join, so the valid match 15 + -10 was never formed)
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "tot", "type": "match_total", "attribute": "v", "max": -1}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "tot", "type": "match_total", "attribute": "v", "max": 10, "default": -3}]}');
SELECT mm.create_queue('mt_negative', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "tot", "type": "match_total", "attribute": "v", "max": 10}]}');
SELECT mm.create_ticket('mt_negative', '[{"id": "neg1", "attributes": {"v": -10}}]', '2026-01-01 00:00:00+00');
SELECT mm.drop_queue('mt_negative', force => true);
