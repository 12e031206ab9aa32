-- Rule type blocklist: a player's list attribute names players who must not
-- share a match with them (either way round); lists of any length.  A player
-- without the list blocks nobody.
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql

SELECT mm.create_queue('bl_q', '{"match_size": {"min": 2, "max": 3},
  "rules": [{"name": "avoid", "type": "blocklist", "attribute": "avoid"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('bl_q', '[{"id": "alice", "attributes": {"avoid": ["bob"]}}]', '2026-01-01 00:00:00+00'),
  ('bl_q', '[{"id": "bob"}]', '2026-01-01 00:00:01+00'),
  ('bl_q', '[{"id": "carol", "attributes": {"avoid": []}}]', '2026-01-01 00:00:02+00'),
  ('bl_q', '[{"id": "dave", "attributes": {"avoid": ["alice"]}}]', '2026-01-01 00:00:03+00'),
  ('bl_q', '[{"id": "erin"}]', '2026-01-01 00:00:04+00');
-- alice blocks bob; dave blocks alice (it works either way round): alice
-- plays with carol and erin; bob and dave, who have nothing against each
-- other, play together
SELECT mm.tick('bl_q', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('bl_q');
SELECT pg_temp.searching('bl_q');

-- a long list (5,000 names) and a party: one blocked player in a party keeps
-- the whole party away from "long", who plays with "fine"; the party plays
-- on its own (two players)
SELECT mm.create_queue('bl_long', '{"match_size": {"min": 2, "max": 4},
  "rules": [{"name": "avoid", "type": "blocklist", "attribute": "social.avoid"}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'bl_long', jsonb_build_array(jsonb_build_object('id', 'long',
		 'attributes', jsonb_build_object('social', jsonb_build_object('avoid',
			 (SELECT jsonb_agg('troll' || i) FROM generate_series(1, 5000) i))))),
	   '2026-01-01 00:00:00+00';
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('bl_long', '[{"id": "friend"}, {"id": "troll4711"}]', '2026-01-01 00:00:01+00'),
  ('bl_long', '[{"id": "fine"}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('bl_long', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('bl_long');
SELECT pg_temp.searching('bl_long');

-- optional after N seconds: the block is lifted once the oldest has waited
SELECT mm.create_queue('bl_optional', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "avoid", "type": "blocklist", "attribute": "avoid", "seconds_until_optional": 60}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('bl_optional', '[{"id": "ox", "attributes": {"avoid": ["oy"]}}]', '2026-01-01 00:00:00+00'),
  ('bl_optional', '[{"id": "oy"}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('bl_optional', '2026-01-01 00:00:59+00');
SELECT mm.tick('bl_optional', '2026-01-01 00:01:00+00');
SELECT * FROM pg_temp.matches('bl_optional');

-- with teams: the block holds across teams too
SELECT mm.create_queue('bl_teams', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "rules": [{"name": "avoid", "type": "blocklist", "attribute": "avoid"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('bl_teams', '[{"id": "t1", "attributes": {"avoid": ["t2"]}}]', '2026-01-01 00:00:00+00'),
  ('bl_teams', '[{"id": "t2"}]', '2026-01-01 00:00:01+00'),
  ('bl_teams', '[{"id": "t3"}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('bl_teams', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('bl_teams');

-- validation: no default, no when_missing, no expansion
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "b", "type": "blocklist"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "b", "type": "blocklist", "attribute": "avoid", "default": []}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "b", "type": "blocklist", "attribute": "avoid", "expansion": {"every_seconds": 5, "steps": [null]}}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "b", "type": "blocklist", "attribute": "avoid", "weight": 2}]}') -> 'rules';

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['bl_q', 'bl_long', 'bl_optional', 'bl_teams']) q;
