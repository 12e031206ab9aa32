-- The queue's "algorithm" block (FlexMatch): strategy exhaustive (default) or
-- balanced with balanced_attribute, expansion_age_selection oldest (default)
-- or newest, and batching_preference (how an anchor's candidates are ranked).
SET timezone = 'UTC';
CREATE FUNCTION pg_temp.matches(q text)
RETURNS TABLE (n bigint, rule_steps jsonb, players text)
LANGUAGE sql AS $$
	SELECT row_number() OVER (ORDER BY m.id), m.rule_steps,
		   (SELECT string_agg(coalesce(mp.team || ':', '') || mp.player_id, ' ' ORDER BY mp.team, mp.player_id)
			  FROM mm.match_players mp WHERE mp.match_id = m.id)
	  FROM mm.matches m WHERE m.queue = q ORDER BY m.id
$$;
\i sql/include/config_error.sql

-- expansion_age_selection: skill within 50, +100 every 10 s up to 300.  An
-- old ticket (1000, waiting since 00:00:00) and a new one (1200, from
-- 00:00:25): with oldest, the old ticket's step (300) lets them meet at
-- 00:00:30; with newest, the new ticket's own step must reach 200 (at 20 s).
SELECT mm.create_queue('al_oldest', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50,
             "expansion": {"every_seconds": 10, "delta": 100, "limit": 300}}]}');
SELECT mm.create_queue('al_newest', '{"match_size": {"min": 2, "max": 2},
  "algorithm": {"expansion_age_selection": "newest"},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50,
             "expansion": {"every_seconds": 10, "delta": 100, "limit": 300}}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('al_oldest', '[{"id": "o1", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('al_oldest', '[{"id": "o2", "attributes": {"skill": 1200}}]', '2026-01-01 00:00:25+00'),
  ('al_newest', '[{"id": "n1", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('al_newest', '[{"id": "n2", "attributes": {"skill": 1200}}]', '2026-01-01 00:00:25+00');
SELECT mm.tick('al_oldest', '2026-01-01 00:00:30+00') AS oldest_at_30,
	   mm.tick('al_newest', '2026-01-01 00:00:30+00') AS newest_at_30;
SELECT mm.tick('al_newest', '2026-01-01 00:00:44+00') AS newest_at_44,
	   mm.tick('al_newest', '2026-01-01 00:00:45+00') AS newest_at_45;
-- rule_steps: the oldest ticket's step, or the newest ticket's
SELECT * FROM pg_temp.matches('al_oldest');
SELECT * FROM pg_temp.matches('al_newest');

-- newest needs expansions that loosen: a step tighter than the one before
-- would let a match form that breaks the steps recorded for it (a helper's
-- 100, 0, 100 formed a match of spread 10 at "threshold 0")
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "algorithm": {"expansion_age_selection": "newest"},
  "rules": [{"name": "d", "type": "difference", "attribute": "s", "max": 100,
             "expansion": {"every_seconds": 10, "steps": [100, 0, 100]}}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "algorithm": {"expansion_age_selection": "newest"},
  "rules": [{"name": "maps", "type": "set_intersection", "attribute": "maps", "min_size": 2,
             "expansion": {"every_seconds": 10, "steps": [1, 2]}}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "algorithm": {"expansion_age_selection": "newest"},
  "rules": [{"name": "lvl", "type": "comparison", "attribute": "lvl", "operator": ">=", "reference": 10,
             "expansion": {"every_seconds": 10, "steps": [5]}}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "algorithm": {"expansion_age_selection": "newest"},
  "rules": [{"name": "d", "type": "difference", "attribute": "s", "max": 100,
             "expansion": {"every_seconds": 10, "steps": [100, 150, null]}}]}') -> 'rules' -> 0 -> 'expansion' AS loosening_steps;

-- newest: the ages of the anchor's candidates are tried youngest first.  At
-- 00:02:00, at n5's step (5 s old: max 50) n3 and n5 (40 apart) already
-- match; n4 (90 apart) would have needed its own older step.
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('al_newest', '[{"id": "n3", "attributes": {"skill": 1000}}]', '2026-01-01 00:01:00+00'),
  ('al_newest', '[{"id": "n4", "attributes": {"skill": 1090}}]', '2026-01-01 00:01:10+00'),
  ('al_newest', '[{"id": "n5", "attributes": {"skill": 1040}}]', '2026-01-01 00:01:55+00');
SELECT mm.tick('al_newest', '2026-01-01 00:02:00+00');
SELECT * FROM pg_temp.matches('al_newest') WHERE n = 2;

-- strategy balanced: teams are split to even out balanced_attribute (here
-- "power", which no rule reads); the team rules are still checked
SELECT mm.create_queue('al_balanced', '{"teams": [{"name": "red", "min": 2, "max": 2},
  {"name": "blue", "min": 2, "max": 2}],
  "algorithm": {"strategy": "balanced", "balanced_attribute": "stats.power"}}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('al_balanced', '[{"id": "b1", "attributes": {"stats": {"power": 100}}}]', '2026-01-01 00:00:00+00'),
  ('al_balanced', '[{"id": "b2", "attributes": {"stats": {"power": 90}}}]', '2026-01-01 00:00:01+00'),
  ('al_balanced', '[{"id": "b3", "attributes": {"stats": {"power": 20}}}]', '2026-01-01 00:00:02+00'),
  ('al_balanced', '[{"id": "b4", "attributes": {"stats": {"power": 10}}}]', '2026-01-01 00:00:03+00');
-- 100 + 10 against 90 + 20
SELECT mm.tick('al_balanced', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('al_balanced');

-- batching_preference: which candidate the anchor A takes.  A: skill 1000,
-- level 5, eu 50 / us 10 ms.  B (older): skill 1010, level 1, eu 90.  C:
-- skill 1090, level 6, us 15.  Two far-away tickets (skill 5000) list only
-- us, so us is the most populated region.
CREATE FUNCTION pg_temp.pick(algorithm jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
	config jsonb := '{"match_size": {"min": 2, "max": 2},
	  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100},
	            {"name": "ping", "type": "latency", "max_ms": 100}]}';
BEGIN
	IF algorithm IS NOT NULL THEN
		config := config || jsonb_build_object('algorithm', algorithm);
	END IF;
	PERFORM mm.create_queue('al_pick', config);
	INSERT INTO mm.tickets (queue, players, created_at) VALUES
	  ('al_pick', '[{"id": "A", "attributes": {"skill": 1000, "level": 5}, "latencies": {"eu": 50, "us": 10}}]', '2026-01-01 00:00:00+00'),
	  ('al_pick', '[{"id": "B", "attributes": {"skill": 1010, "level": 1}, "latencies": {"eu": 90}}]', '2026-01-01 00:00:01+00'),
	  ('al_pick', '[{"id": "C", "attributes": {"skill": 1090, "level": 6}, "latencies": {"us": 15}}]', '2026-01-01 00:00:02+00'),
	  ('al_pick', '[{"id": "far1", "attributes": {"skill": 5000, "level": 1}, "latencies": {"us": 10}}]', '2026-01-01 00:00:03+00'),
	  ('al_pick', '[{"id": "far2", "attributes": {"skill": 5500, "level": 1}, "latencies": {"us": 10}}]', '2026-01-01 00:00:04+00');
	PERFORM mm.tick('al_pick', '2026-01-01 00:00:05+00');
	SELECT string_agg(mp.player_id, ' ' ORDER BY mp.player_id) INTO result
	  FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
	 WHERE m.queue = 'al_pick' AND mp.player_id <> 'A'
	   AND m.id = (SELECT a.match_id FROM mm.match_players a WHERE a.player_id = 'A' AND a.queue = 'al_pick');
	PERFORM mm.drop_queue('al_pick', force => true);
	RETURN result;
END $$;
-- the rules (default): B costs 0.1 + 0.9, C 0.9 + 0.15: B
SELECT pg_temp.pick(NULL) AS rules;
-- fastest_region: the pair's worst latency in their best region: B 90, C 15: C
SELECT pg_temp.pick('{"batching_preference": "fastest_region"}') AS fastest_region;
-- sorted: closest level first (B 4 away, C 1): C; by skill first: B
SELECT pg_temp.pick('{"batching_preference": "sorted", "sort_by_attributes": ["level"]}') AS sorted_level,
	   pg_temp.pick('{"batching_preference": "sorted", "sort_by_attributes": ["skill", "level"]}') AS sorted_skill;
-- largest_population: us (A, C and the two far tickets) before eu (A, B): C
SELECT pg_temp.pick('{"batching_preference": "largest_population"}') AS largest_population;
-- random: a fixed pseudo-random order; a match forms either way
SELECT pg_temp.pick('{"batching_preference": "random"}') IN ('B', 'C') AS random_forms;

-- the normalised form
SELECT mm.validate_queue_config('{"teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "algorithm": {"strategy": "balanced", "balanced_attribute": "power", "expansion_age_selection": "newest"}}') -> 'algorithm';
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "algorithm": {"strategy": "exhaustive", "expansion_age_selection": "oldest"}}') ? 'algorithm' AS shown_at_defaults;

-- validation
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2}, "algorithm": {"strategy": "greedy"}}');
SELECT pg_temp.config_error('{"teams": [{"name": "r", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
  "algorithm": {"strategy": "balanced"}}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "algorithm": {"strategy": "balanced", "balanced_attribute": "power"}}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2}, "algorithm": {"balanced_attribute": "power"}}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2}, "algorithm": {"expansion_age_selection": "middle"}}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2}, "algorithm": {"batching_preference": "fastest"}}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2}, "algorithm": {"batching_preference": "fastest_region"}}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2}, "algorithm": {"batching_preference": "sorted"}}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2}, "algorithm": {"sort_by_attributes": ["skill"]}}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "algorithm": {"batching_preference": "sorted", "sort_by_attributes": ["skill", ""]}}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "algorithm": {"batching_preference": "sorted", "sort_by_attributes": ["skill", "stats.level"]}}') -> 'algorithm';
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2}, "algorithm": {"speed": 1}}');

SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['al_oldest', 'al_newest', 'al_balanced']) q;
