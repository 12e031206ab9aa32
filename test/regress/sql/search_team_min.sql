-- Team sizes that expand with time (FlexMatch expands minPlayers): a team's
-- "expansion" gives its min at each step, from the age of the oldest ticket
-- of the candidate match.  A 4v4 that accepts 3v3 after 30 s and 2v2 after
-- 60 s.
SET timezone = 'UTC';
CREATE FUNCTION pg_temp.matches(q text)
RETURNS TABLE (n bigint, players text)
LANGUAGE sql AS $$
	SELECT row_number() OVER (ORDER BY m.id),
		   (SELECT string_agg(mp.team || ':' || mp.player_id, ' ' ORDER BY mp.team, mp.player_id)
			  FROM mm.match_players mp WHERE mp.match_id = m.id)
	  FROM mm.matches m WHERE m.queue = q ORDER BY m.id
$$;

SELECT mm.create_queue('tm_q', '{"teams": [
    {"name": "red", "min": 4, "max": 4, "expansion": {"every_seconds": 30, "steps": [3, 2]}},
    {"name": "blue", "min": 4, "max": 4, "expansion": {"every_seconds": 30, "steps": [3, 2]}}],
  "rules": [{"name": "even", "type": "team_size_balance", "max_difference": 0}]}');
-- the normalised config keeps the expansion; match_size is 8 at the start
SELECT c -> 'teams' AS teams, c -> 'match_size' AS match_size
  FROM mm.validate_queue_config((SELECT config FROM mm.queues WHERE name = 'tm_q')) c;
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tm_q', jsonb_build_array(jsonb_build_object('id', 'p' || i)),
	   '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 second'
  FROM generate_series(1, 6) i;
-- six players: nothing at 30 s (p1 is 29 s old: 4v4 needs 8)
SELECT mm.tick('tm_q', '2026-01-01 00:00:30+00');
-- p1 is 30 s old at 00:00:31: 3v3 is enough
SELECT mm.tick('tm_q', '2026-01-01 00:00:31+00');
SELECT * FROM pg_temp.matches('tm_q');

-- three solos and, later, a party of two: at 30 s 3v3 needs six players;
-- once r1 has waited 60 s, 2v2 (team sizes stay even): the party against
-- the two older solos
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tm_q', jsonb_build_array(jsonb_build_object('id', 'r' || i)),
	   '2026-01-01 00:01:00+00'::timestamptz + i * interval '1 second'
  FROM generate_series(1, 3) i;
SELECT mm.tick('tm_q', '2026-01-01 00:01:31+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tm_q', '[{"id": "q1"}, {"id": "q2"}]', '2026-01-01 00:01:40+00');
SELECT mm.tick('tm_q', '2026-01-01 00:02:00+00');
SELECT mm.tick('tm_q', '2026-01-01 00:02:01+00');
SELECT * FROM pg_temp.matches('tm_q') WHERE n = 2;

-- validation: steps are integers between 1 and the team's min
\i sql/include/config_error.sql
SELECT pg_temp.config_error('{"teams": [{"name": "r", "min": 3, "max": 3, "expansion": {"every_seconds": 10, "steps": [4]}},
  {"name": "b", "min": 3, "max": 3}]}');
SELECT pg_temp.config_error('{"teams": [{"name": "r", "min": 3, "max": 3, "expansion": {"every_seconds": 10, "delta": 1}},
  {"name": "b", "min": 3, "max": 3}]}');
SELECT pg_temp.config_error('{"teams": [{"name": "r", "min": 3, "max": 3, "expansion": {"steps": [2]}},
  {"name": "b", "min": 3, "max": 3}]}');

SELECT mm.drop_queue('tm_q', force => true);
