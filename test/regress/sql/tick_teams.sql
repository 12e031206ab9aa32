-- mm.tick with teams: parties kept on one team, teams balanced, the largest
-- match first (team_size_balance), team_difference, the quality with teams.
SET timezone = 'UTC';

\i sql/include/tick_helpers.sql
-- Per match: the size of each team, and whether every ticket sits on one team.
CREATE FUNCTION pg_temp.team_sizes(q text)
RETURNS TABLE (n bigint, sizes text, parties_whole boolean)
LANGUAGE sql AS $$
	SELECT row_number() OVER (ORDER BY m.id),
		   (SELECT string_agg(x.team || '=' || x.c, ' ' ORDER BY x.team)
			  FROM (SELECT mp.team, count(*) AS c FROM mm.match_players mp
					 WHERE mp.match_id = m.id GROUP BY mp.team) x),
		   (SELECT bool_and(x.teams = 1)
			  FROM (SELECT count(DISTINCT mp.team) AS teams FROM mm.match_players mp
					 WHERE mp.match_id = m.id GROUP BY mp.ticket_id) x)
	  FROM mm.matches m WHERE m.queue = q ORDER BY m.id
$$;
CREATE FUNCTION pg_temp.searching(q text) RETURNS bigint
LANGUAGE sql AS $$
	SELECT count(*) FROM mm.tickets t WHERE t.queue = q AND t.status = 'searching'
$$;

-- 2v2 with parties: a party of two always plays on one team
SELECT mm.create_queue('tt_duo', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                             {"name": "blue", "min": 2, "max": 2}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 500}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tt_duo', '[{"id": "s1", "attributes": {"skill": 1400}}]', '2026-01-01 00:00:00+00'),
  ('tt_duo', '[{"id": "p1", "attributes": {"skill": 1000}}, {"id": "p2", "attributes": {"skill": 1200}}]', '2026-01-01 00:00:01+00'),
  ('tt_duo', '[{"id": "s2", "attributes": {"skill": 1300}}]', '2026-01-01 00:00:02+00'),
  ('tt_duo', '[{"id": "s3", "attributes": {"skill": 1250}}]', '2026-01-01 00:00:03+00');
-- s1 (1400), the party (1100 on average) and s2 (1300): the party on one
-- team, s1 and s2 on the other.  s3 waits.
SELECT mm.tick('tt_duo', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('tt_duo');
SELECT * FROM pg_temp.team_sizes('tt_duo');
SELECT pg_temp.searching('tt_duo');
-- two parties of two and the solo: the parties face each other, the solo waits
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tt_duo', '[{"id": "q1", "attributes": {"skill": 1000}}, {"id": "q2", "attributes": {"skill": 1100}}]', '2026-01-01 00:00:06+00'),
  ('tt_duo', '[{"id": "r1", "attributes": {"skill": 1050}}, {"id": "r2", "attributes": {"skill": 1050}}]', '2026-01-01 00:00:07+00');
SELECT mm.tick('tt_duo', '2026-01-01 00:00:08+00');
SELECT * FROM pg_temp.matches('tt_duo') WHERE n = 2;
SELECT pg_temp.searching('tt_duo');

-- 3v3: three parties of two cannot share two teams of three, so the greedy
-- leaves the third party out and takes solos instead
SELECT mm.create_queue('tt_pack', '{"teams": [{"name": "red", "min": 3, "max": 3},
                                              {"name": "blue", "min": 3, "max": 3}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tt_pack', '[{"id": "k1"}, {"id": "k2"}]', '2026-01-01 00:00:00+00'),
  ('tt_pack', '[{"id": "k3"}, {"id": "k4"}]', '2026-01-01 00:00:01+00'),
  ('tt_pack', '[{"id": "k5"}, {"id": "k6"}]', '2026-01-01 00:00:02+00'),
  ('tt_pack', '[{"id": "ks1"}]', '2026-01-01 00:00:03+00'),
  ('tt_pack', '[{"id": "ks2"}]', '2026-01-01 00:00:04+00'),
  ('tt_pack', '[{"id": "ks3"}]', '2026-01-01 00:00:05+00');
SELECT mm.tick('tt_pack', '2026-01-01 00:00:06+00');
SELECT * FROM pg_temp.team_sizes('tt_pack');
SELECT n, players FROM pg_temp.matches('tt_pack');
SELECT pg_temp.searching('tt_pack');

-- teams of 4 to 6, sizes equal (team_size_balance 0): only 6v6, 5v5 or 4v4,
-- and the largest the tickets allow
SELECT mm.create_queue('tt_flex', '{"teams": [{"name": "a", "min": 4, "max": 6},
                                              {"name": "b", "min": 4, "max": 6}],
  "rules": [{"name": "even", "type": "team_size_balance", "max_difference": 0}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tt_flex', format('[{"id": "f%s"}]', g)::jsonb, '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 s'
  FROM generate_series(1, 13) g;
SELECT mm.tick('tt_flex', '2026-01-01 00:01:00+00');   -- 6v6, one left
SELECT * FROM pg_temp.team_sizes('tt_flex');
SELECT pg_temp.searching('tt_flex');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tt_flex', format('[{"id": "g%s"}]', g)::jsonb, '2026-01-01 00:00:30+00'::timestamptz + g * interval '1 s'
  FROM generate_series(1, 10) g;
SELECT mm.tick('tt_flex', '2026-01-01 00:01:00+00');   -- 11 waiting: 5v5, one left
SELECT * FROM pg_temp.team_sizes('tt_flex') WHERE n = 2;
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tt_flex', format('[{"id": "h%s"}]', g)::jsonb, '2026-01-01 00:00:50+00'::timestamptz + g * interval '1 s'
  FROM generate_series(1, 8) g;
SELECT mm.tick('tt_flex', '2026-01-01 00:01:00+00');   -- 9 waiting: 4v4, one left
SELECT * FROM pg_temp.team_sizes('tt_flex') WHERE n = 3;
SELECT pg_temp.searching('tt_flex');
-- with max_difference 1, 9 players make 5v4 (team a, first in the config,
-- takes the extra player)
SELECT mm.alter_queue('tt_flex', '{"teams": [{"name": "a", "min": 4, "max": 6},
                                             {"name": "b", "min": 4, "max": 6}],
  "rules": [{"name": "even", "type": "team_size_balance", "max_difference": 1}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tt_flex', format('[{"id": "i%s"}]', g)::jsonb, '2026-01-01 00:00:55+00'::timestamptz + g * interval '0.1 s'
  FROM generate_series(1, 8) g;
SELECT mm.tick('tt_flex', '2026-01-01 00:01:00+00');
SELECT * FROM pg_temp.team_sizes('tt_flex') WHERE n = 4;
-- quality: team_size_balance closeness 1 - 1/1 = 0
SELECT n, quality, rule_steps FROM pg_temp.matches('tt_flex') ORDER BY n;

-- team_difference: the teams' average skill within max; quality from it
SELECT mm.create_queue('tt_diff', '{"teams": [{"name": "home", "min": 2, "max": 2},
                                              {"name": "away", "min": 2, "max": 2}],
  "rules": [{"name": "fair", "type": "team_difference", "attribute": "skill", "max": 20}]}');
-- a party of a strong and a weak player, and two average solos: the best
-- split is party vs solos, 1250 vs 1250
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tt_diff', '[{"id": "d1", "attributes": {"skill": 1500}}, {"id": "d2", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('tt_diff', '[{"id": "d3", "attributes": {"skill": 1240}}]', '2026-01-01 00:00:01+00'),
  ('tt_diff', '[{"id": "d4", "attributes": {"skill": 1280}}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('tt_diff', '2026-01-01 00:00:03+00');
-- 1250 vs 1260: 1 - 10/20 = 0.5
SELECT * FROM pg_temp.matches('tt_diff');
-- two parties whose averages are 100 apart cannot meet
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tt_diff', '[{"id": "e1", "attributes": {"skill": 1000}}, {"id": "e2", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:04+00'),
  ('tt_diff', '[{"id": "e3", "attributes": {"skill": 1100}}, {"id": "e4", "attributes": {"skill": 1100}}]', '2026-01-01 00:00:05+00');
SELECT mm.tick('tt_diff', '2026-01-01 00:00:06+00');
SELECT pg_temp.searching('tt_diff');

-- 5v5 on skill: the balancer evens the teams; the quality has the skill
-- closeness and the team balance (no team_difference rule: the spread of the
-- team averages against the skill threshold)
SELECT mm.create_queue('tt_5v5', '{"teams": [{"name": "red", "min": 5, "max": 5},
                                             {"name": "blue", "min": 5, "max": 5}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tt_5v5', format('[{"id": "v%s", "attributes": {"skill": %s}}]', g, 1000 + 10 * g)::jsonb,
	   '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 s'
  FROM generate_series(1, 10) g;
SELECT mm.tick('tt_5v5', '2026-01-01 00:00:20+00');
SELECT * FROM pg_temp.team_sizes('tt_5v5');
SELECT round(m.quality::numeric, 10) = round(((1 - 90 / 100.0) + (1 - abs(r.avg - b.avg) / 100.0)) / 2, 10) AS quality_as_documented,
	   abs(r.avg - b.avg) <= 10 AS balanced
  FROM mm.matches m,
	   LATERAL (SELECT avg((t.players -> 0 -> 'attributes' ->> 'skill')::numeric) AS avg
				  FROM mm.match_players mp JOIN mm.tickets t ON t.id = mp.ticket_id
				 WHERE mp.match_id = m.id AND mp.team = 'red') r,
	   LATERAL (SELECT avg((t.players -> 0 -> 'attributes' ->> 'skill')::numeric) AS avg
				  FROM mm.match_players mp JOIN mm.tickets t ON t.id = mp.ticket_id
				 WHERE mp.match_id = m.id AND mp.team = 'blue') b
 WHERE m.queue = 'tt_5v5';

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['tt_duo', 'tt_pack', 'tt_flex', 'tt_diff', 'tt_5v5']) q;
