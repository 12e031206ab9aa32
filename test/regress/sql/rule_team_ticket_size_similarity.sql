-- Rule type team_ticket_size_similarity: large parties (at least half their
-- team's players) only meet large parties: when a team holds one, every
-- team holds one.  Candidates of the anchor's kind (large or not) rank first.
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql

SELECT mm.create_queue('ts_4v4', '{"teams": [{"name": "red", "min": 4, "max": 4}, {"name": "blue", "min": 4, "max": 4}],
  "rules": [{"name": "premade", "type": "team_ticket_size_similarity"}]}');
-- passes: two parties of four meet each other
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'ts_4v4', (SELECT jsonb_agg(jsonb_build_object('id', format('%s%s', t, p))) FROM generate_series(1, 4) p),
	   '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 second'
  FROM (VALUES (1, 'pa'), (2, 'pb')) v(i, t);
SELECT mm.tick('ts_4v4', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('ts_4v4');

-- fails: a party of four against four solo players
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('ts_4v4', '[{"id": "q1"}, {"id": "q2"}, {"id": "q3"}, {"id": "q4"}]', '2026-01-01 00:00:10+00'),
  ('ts_4v4', '[{"id": "s1"}]', '2026-01-01 00:00:11+00'),
  ('ts_4v4', '[{"id": "s2"}]', '2026-01-01 00:00:12+00'),
  ('ts_4v4', '[{"id": "s3"}]', '2026-01-01 00:00:13+00'),
  ('ts_4v4', '[{"id": "s4"}]', '2026-01-01 00:00:14+00');
SELECT mm.tick('ts_4v4', '2026-01-01 00:00:15+00');
SELECT pg_temp.searching('ts_4v4');
-- small parties are no concern: four more solos make 8 solo players
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'ts_4v4', jsonb_build_array(jsonb_build_object('id', 's' || i)), '2026-01-01 00:00:15+00'
  FROM generate_series(5, 8) i;
SELECT mm.tick('ts_4v4', '2026-01-01 00:00:16+00');
SELECT * FROM pg_temp.matches('ts_4v4') WHERE n = 2;
-- optional after N seconds: the lone premade plays the solos at 60 s
SELECT mm.alter_queue('ts_4v4', '{"teams": [{"name": "red", "min": 4, "max": 4}, {"name": "blue", "min": 4, "max": 4}],
  "rules": [{"name": "premade", "type": "team_ticket_size_similarity", "seconds_until_optional": 60}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'ts_4v4', jsonb_build_array(jsonb_build_object('id', 'u' || i)), '2026-01-01 00:00:30+00'
  FROM generate_series(1, 4) i;
SELECT mm.tick('ts_4v4', '2026-01-01 00:01:09+00');
SELECT pg_temp.searching('ts_4v4');
SELECT mm.tick('ts_4v4', '2026-01-01 00:01:10+00');
SELECT * FROM pg_temp.matches('ts_4v4') WHERE n = 3;

SELECT mm.create_queue('ts_pairs', '{"teams": [{"name": "red", "min": 4, "max": 4}, {"name": "blue", "min": 4, "max": 4}],
  "rules": [{"name": "premade", "type": "team_ticket_size_similarity"}]}');
-- a party of two (half of four) is large: it plays when the other team has
-- a party of two too (d and e, each with two solos)
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('ts_pairs', '[{"id": "d1"}, {"id": "d2"}]', '2026-01-01 00:00:20+00'),
  ('ts_pairs', '[{"id": "g1"}]', '2026-01-01 00:00:21+00'),
  ('ts_pairs', '[{"id": "g2"}]', '2026-01-01 00:00:22+00'),
  ('ts_pairs', '[{"id": "g3"}]', '2026-01-01 00:00:22+00'),
  ('ts_pairs', '[{"id": "g4"}]', '2026-01-01 00:00:22+00'),
  ('ts_pairs', '[{"id": "e1"}, {"id": "e2"}]', '2026-01-01 00:00:23+00');
SELECT mm.tick('ts_pairs', '2026-01-01 00:00:25+00');
SELECT * FROM pg_temp.matches('ts_pairs');
SELECT pg_temp.searching('ts_pairs');

-- validation
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 4},
  "rules": [{"name": "p", "type": "team_ticket_size_similarity"}]}');
SELECT pg_temp.config_error('{"teams": [{"name": "r", "min": 2, "max": 2}, {"name": "b", "min": 2, "max": 2}],
  "rules": [{"name": "p", "type": "team_ticket_size_similarity", "attribute": "x"}]}');
SELECT pg_temp.config_error('{"teams": [{"name": "r", "min": 2, "max": 2}, {"name": "b", "min": 2, "max": 2}],
  "rules": [{"name": "p", "type": "team_ticket_size_similarity", "expansion": {"every_seconds": 5, "steps": [null]}}]}');

SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['ts_4v4', 'ts_pairs']) q;
