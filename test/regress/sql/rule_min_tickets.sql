-- Queue key min_tickets (PlayFab): a match holds at least this many tickets,
-- so a party that fills the match alone does not play by itself.
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql

SELECT mm.create_queue('mk_two', '{"match_size": {"min": 2, "max": 4}, "min_tickets": 2}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mk_two', '[{"id": "k1"}, {"id": "k2"}, {"id": "k3"}, {"id": "k4"}]', '2026-01-01 00:00:00+00');
-- a full party alone: no match
SELECT mm.tick('mk_two', '2026-01-01 00:00:05+00');
SELECT pg_temp.searching('mk_two');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mk_two', '[{"id": "k5"}, {"id": "k6"}]', '2026-01-01 00:00:06+00'),
  ('mk_two', '[{"id": "k7"}]', '2026-01-01 00:00:07+00');
-- the party of four cannot take anyone (4 is the max); k5+k6 with k7
SELECT mm.tick('mk_two', '2026-01-01 00:00:08+00');
SELECT * FROM pg_temp.matches('mk_two');
SELECT pg_temp.searching('mk_two');

-- with teams: two parties of two cannot form a 2v2 alone with min_tickets 3
SELECT mm.create_queue('mk_teams', '{"teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "min_tickets": 3}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mk_teams', '[{"id": "t1"}, {"id": "t2"}]', '2026-01-01 00:00:00+00'),
  ('mk_teams', '[{"id": "t3"}, {"id": "t4"}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('mk_teams', '2026-01-01 00:00:05+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mk_teams', '[{"id": "t5"}]', '2026-01-01 00:00:06+00'),
  ('mk_teams', '[{"id": "t6"}]', '2026-01-01 00:00:07+00');
SELECT mm.tick('mk_teams', '2026-01-01 00:00:08+00');
SELECT * FROM pg_temp.matches('mk_teams');
SELECT pg_temp.searching('mk_teams');

-- validation
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 4}, "min_tickets": 5}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 4}, "min_tickets": 0}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 4}, "min_tickets": 2}') -> 'min_tickets';

SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['mk_two', 'mk_teams']) q;
