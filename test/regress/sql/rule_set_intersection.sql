-- Rule type set_intersection: the tickets share at least min_size values of
-- a list-of-strings attribute (maps, DLC, modes).  A party's values are those
-- all its players have.  An expansion gives the min_size of each step.
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql

SELECT mm.create_queue('si_maps', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "maps", "type": "set_intersection", "attribute": "maps", "min_size": 1}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_maps', '[{"id": "a", "attributes": {"maps": ["dust", "mirage"]}}]', '2026-01-01 00:00:00+00'),
  ('si_maps', '[{"id": "b", "attributes": {"maps": ["nuke"]}}]', '2026-01-01 00:00:01+00'),
  ('si_maps', '[{"id": "c", "attributes": {"maps": ["mirage", "nuke"]}}]', '2026-01-01 00:00:02+00'),
  ('si_maps', '[{"id": "d", "attributes": {"maps": ["dust", "mirage", "nuke"]}}]', '2026-01-01 00:00:03+00'),
  ('si_maps', '[{"id": "e", "attributes": {"maps": []}}]', '2026-01-01 00:00:04+00');
-- passes: a, c and d share mirage; fails: b shares nothing with a, e has no map
SELECT mm.tick('si_maps', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('si_maps');
SELECT pg_temp.searching('si_maps');

-- a party's values are the ones all its players have: this party shares
-- only "dust"; with min_size 2 it fits nobody
SELECT mm.create_queue('si_party', '{"match_size": {"min": 2, "max": 3},
  "rules": [{"name": "dlc", "type": "set_intersection", "attribute": "dlc", "min_size": 2}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_party', '[{"id": "p1", "attributes": {"dlc": ["dust", "ice"]}}, {"id": "p2", "attributes": {"dlc": ["dust", "sand"]}}]',
   '2026-01-01 00:00:00+00'),
  ('si_party', '[{"id": "p3", "attributes": {"dlc": ["dust", "ice", "sand"]}}]', '2026-01-01 00:00:01+00'),
  ('si_party', '[{"id": "p4", "attributes": {"dlc": ["ice", "sand"]}}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('si_party', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('si_party');
SELECT pg_temp.searching('si_party');

-- expansion reached: min_size 2, then 1 from 30 s, then 0 (anyone) from 60 s:
-- x1 and x2 (tdm) at 30 s; y1 and y2 (nothing shared) once y1 is 60 s old
SELECT mm.create_queue('si_expand', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "modes", "type": "set_intersection", "attribute": "modes", "min_size": 2,
             "expansion": {"every_seconds": 30, "steps": [1, 0]}}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_expand', '[{"id": "x1", "attributes": {"modes": ["ctf", "tdm"]}}]', '2026-01-01 00:00:00+00'),
  ('si_expand', '[{"id": "x2", "attributes": {"modes": ["tdm", "koth"]}}]', '2026-01-01 00:00:01+00'),
  ('si_expand', '[{"id": "y1", "attributes": {"modes": ["race"]}}]', '2026-01-01 00:00:02+00'),
  ('si_expand', '[{"id": "y2", "attributes": {"modes": ["golf"]}}]', '2026-01-01 00:00:03+00');
SELECT mm.tick('si_expand', '2026-01-01 00:00:29+00');
SELECT mm.tick('si_expand', '2026-01-01 00:00:30+00');
SELECT mm.tick('si_expand', '2026-01-01 00:01:01+00');
SELECT mm.tick('si_expand', '2026-01-01 00:01:02+00');
SELECT * FROM pg_temp.matches('si_expand');

-- optional after N seconds
SELECT mm.create_queue('si_optional', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "maps", "type": "set_intersection", "attribute": "maps", "min_size": 1,
             "seconds_until_optional": 20}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_optional', '[{"id": "o1", "attributes": {"maps": ["dust"]}}]', '2026-01-01 00:00:00+00'),
  ('si_optional', '[{"id": "o2", "attributes": {"maps": ["nuke"]}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('si_optional', '2026-01-01 00:00:19+00');
SELECT mm.tick('si_optional', '2026-01-01 00:00:20+00');
SELECT * FROM pg_temp.matches('si_optional');

-- missing values: without default or when_missing a ticket without the
-- attribute is refused, as for every rule type
SELECT mm.create_queue('si_missing', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "maps", "type": "set_intersection", "attribute": "maps", "min_size": 1}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_missing', '[{"id": "m1"}]', '2026-01-01 00:00:00+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_missing', '[{"id": "m1", "attributes": {"maps": "dust"}}]', '2026-01-01 00:00:00+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_missing', '[{"id": "m1", "attributes": {"maps": ["dust", 7]}}]', '2026-01-01 00:00:00+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_missing', '[{"id": "m2", "attributes": {"maps": ["dust"]}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('si_missing', '2026-01-01 00:00:05+00');
SELECT pg_temp.searching('si_missing');
-- a default list stands in for a missing one; match_any imposes nothing
SELECT mm.create_queue('si_default', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "maps", "type": "set_intersection", "attribute": "maps", "min_size": 1,
             "default": ["dust", "nuke"]}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_default', '[{"id": "n1"}]', '2026-01-01 00:00:00+00'),
  ('si_default', '[{"id": "n2", "attributes": {"maps": ["mirage"]}}]', '2026-01-01 00:00:01+00'),
  ('si_default', '[{"id": "n3", "attributes": {"maps": ["nuke"]}}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('si_default', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('si_default');
SELECT mm.create_queue('si_any', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "maps", "type": "set_intersection", "attribute": "maps", "min_size": 1,
             "when_missing": "match_any"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_any', '[{"id": "q1"}]', '2026-01-01 00:00:00+00'),
  ('si_any', '[{"id": "q2", "attributes": {"maps": ["mirage"]}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('si_any', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('si_any');

-- with a compound: FlexMatch's "All" multi-mode set (a list attribute and a
-- compound): players list the modes they accept; classic needs skill
-- within 100, practice takes anyone
SELECT mm.create_queue('si_all', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "wants_classic", "type": "set_intersection", "attribute": "classic", "min_size": 1,
             "when_missing": "match_any"},
            {"name": "skill", "type": "difference", "attribute": "skill", "max": 100},
            {"name": "modes", "type": "set_intersection", "attribute": "modes", "min_size": 1},
            {"name": "classic_rules", "type": "compound", "statement": "or(and(wants_classic, skill), not(wants_classic))"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('si_all', '[{"id": "k1", "attributes": {"modes": ["classic", "practice"], "classic": ["yes"], "skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('si_all', '[{"id": "k2", "attributes": {"modes": ["classic"], "classic": ["yes"], "skill": 1500}}]', '2026-01-01 00:00:01+00'),
  ('si_all', '[{"id": "k3", "attributes": {"modes": ["practice"], "classic": [], "skill": 1600}}]', '2026-01-01 00:00:02+00');
-- k1 and k2 share classic but are 500 apart; k1 and k3 share practice, and
-- k3 does not want classic, so the classic condition does not apply
SELECT mm.tick('si_all', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('si_all');

-- validation
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "m", "type": "set_intersection", "attribute": "maps"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "m", "type": "set_intersection", "attribute": "maps", "min_size": 1.5}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "m", "type": "set_intersection", "attribute": "maps", "min_size": 1, "default": "dust"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "m", "type": "set_intersection", "attribute": "maps", "min_size": 1, "default": ["dust", 3]}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "m", "type": "set_intersection", "attribute": "maps", "min_size": 2,
             "expansion": {"every_seconds": 10, "delta": 1}}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "m", "type": "set_intersection", "attribute": "prefs.maps", "min_size": 1,
             "default": ["dust"], "expansion": {"every_seconds": 10, "steps": [0]}}]}') -> 'rules';

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['si_maps', 'si_party', 'si_expand', 'si_optional', 'si_missing', 'si_default',
                    'si_any', 'si_all']) q;
