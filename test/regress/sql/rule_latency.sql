-- Rule type latency, its max_distance (FlexMatch's
-- maxDistance: no player plays more than that many ms above their own best
-- region) and region_choice (lowest_worst, the default, or lowest_average).
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql
CREATE FUNCTION pg_temp.regions(q text)
RETURNS TABLE (n bigint, region text, quality numeric, players text)
LANGUAGE sql AS $$
	SELECT row_number() OVER (ORDER BY m.id), m.region, round(m.quality::numeric, 4),
		   (SELECT string_agg(mp.player_id, ' ' ORDER BY mp.player_id)
			  FROM mm.match_players mp WHERE mp.match_id = m.id)
	  FROM mm.matches m WHERE m.queue = q ORDER BY m.id
$$;

-- region_choice: three players; eu has the lowest worst latency (60), us the
-- lowest average (10, 10, 70: 30 against eu's 60, 60, 60)
CREATE TEMP TABLE lt_players AS SELECT '[
  {"id": "r1", "latencies": {"eu": 60, "us": 10}},
  {"id": "r2", "latencies": {"eu": 60, "us": 10}},
  {"id": "r3", "latencies": {"eu": 60, "us": 70}}]'::jsonb AS p;
SELECT mm.create_queue('lt_worst', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 100}]}');
SELECT mm.create_queue('lt_avg', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 100, "region_choice": "lowest_average"}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'lt_worst', jsonb_build_array(e), '2026-01-01 00:00:00+00'::timestamptz + k * interval '1 second'
  FROM lt_players, jsonb_array_elements(p) WITH ORDINALITY AS x(e, k);
SELECT mm.tick('lt_worst', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.regions('lt_worst');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'lt_avg', jsonb_build_array(jsonb_set(e, '{id}', to_jsonb('a' || (e ->> 'id')))),
	   '2026-01-01 00:00:00+00'::timestamptz + k * interval '1 second'
  FROM lt_players, jsonb_array_elements(p) WITH ORDINALITY AS x(e, k);
SELECT mm.tick('lt_avg', '2026-01-01 00:00:05+00');
-- us: the quality measures the worst latency there (70: 1 - 70/100)
SELECT * FROM pg_temp.regions('lt_avg');

-- max_distance: d1's best region is eu (20 ms); us (90 ms) is 70 above it.
-- With max_distance 50, d1 and d2 (us only) cannot meet although 90 is within
-- max_ms; d1 and d3 meet in eu.
SELECT mm.create_queue('lt_dist', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 100, "max_distance": 50,
             "expansion": {"every_seconds": 30, "steps": [150]}}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lt_dist', '[{"id": "d1", "latencies": {"eu": 20, "us": 90}}]', '2026-01-01 00:00:00+00'),
  ('lt_dist', '[{"id": "d2", "latencies": {"us": 30}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('lt_dist', '2026-01-01 00:00:05+00');
SELECT pg_temp.searching('lt_dist');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lt_dist', '[{"id": "d3", "latencies": {"eu": 80, "us": 60}}]', '2026-01-01 00:00:06+00');
-- d3's own best is us (60): eu at 80 is 20 above, within 50
SELECT mm.tick('lt_dist', '2026-01-01 00:00:07+00');
SELECT * FROM pg_temp.regions('lt_dist');
SELECT pg_temp.searching('lt_dist');

-- max_distance holds e2 back (us is 70 above e1's best) until the rule is optional
SELECT mm.create_queue('lt_dist2', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 100, "max_distance": 50,
             "seconds_until_optional": 60}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lt_dist2', '[{"id": "e1", "latencies": {"eu": 20, "us": 90}}]', '2026-01-01 00:00:00+00'),
  ('lt_dist2', '[{"id": "e2", "latencies": {"us": 30}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('lt_dist2', '2026-01-01 00:00:59+00');
-- optional after 60 s: the rule is off, they play (region: the lowest worst)
SELECT mm.tick('lt_dist2', '2026-01-01 00:01:00+00');
SELECT * FROM pg_temp.regions('lt_dist2');

-- a party: its distance is its worst player's
SELECT mm.create_queue('lt_party', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 200, "max_distance": 40}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lt_party', '[{"id": "f1", "latencies": {"eu": 10, "us": 40}}, {"id": "f2", "latencies": {"eu": 100, "us": 50}}]',
   '2026-01-01 00:00:00+00'),
  ('lt_party', '[{"id": "f3", "latencies": {"eu": 30, "us": 30}}]', '2026-01-01 00:00:01+00');
-- eu: f2 is 50 above its best (us 50): too far; us: f1 is 30 above, f2 0,
-- f3 0: the match plays in us
SELECT mm.tick('lt_party', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.regions('lt_party');

-- validation
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "p", "type": "latency", "max_ms": 100, "max_distance": -1}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "p", "type": "latency", "max_ms": 100, "region_choice": "closest"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "s", "type": "difference", "attribute": "s", "max": 1, "region_choice": "lowest_worst"}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "p", "type": "latency", "max_ms": 100, "max_distance": 30,
             "region_choice": "lowest_average"}]}') -> 'rules';

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['lt_worst', 'lt_avg', 'lt_dist', 'lt_dist2', 'lt_party']) q;
