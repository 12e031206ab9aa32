-- Rule type difference, its "min" (the match's spread must be
-- at least min: mixed-skill lobbies), and the ranking of acceptable
-- candidates by closeness, weighted by each rule's weight (see "How the
-- search chooses" in docs/queues-and-tickets.md).
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql

-- min: a spread of at least 300 (and at most 600)
SELECT mm.create_queue('df_min', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "mix", "type": "difference", "attribute": "skill", "min": 300, "max": 600}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('df_min', '[{"id": "n1", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('df_min', '[{"id": "n2", "attributes": {"skill": 1010}}]', '2026-01-01 00:00:01+00'),
  ('df_min', '[{"id": "n3", "attributes": {"skill": 1020}}]', '2026-01-01 00:00:02+00');
-- fails: 20 apart
SELECT mm.tick('df_min', '2026-01-01 00:00:05+00');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('df_min', '[{"id": "n4", "attributes": {"skill": 1400}}]', '2026-01-01 00:00:06+00');
-- passes: n1, n2 and n4 (400 apart); the ranking offers n2 and n3 first (the
-- closest), the spread condition needs the far one
SELECT mm.tick('df_min', '2026-01-01 00:00:07+00');
SELECT * FROM pg_temp.matches('df_min');
SELECT pg_temp.searching('df_min');

-- weights change which candidate wins: the anchor has skill 1000 and eu 20 ms;
-- "near" is 10 skill away at 90 ms, "fast" is 90 skill away at 20 ms
CREATE FUNCTION pg_temp.pair_with(skill_weight numeric, ping_weight numeric) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	PERFORM mm.create_queue('df_w', jsonb_build_object('match_size', '{"min": 2, "max": 2}'::jsonb,
		'rules', jsonb_build_array(
			jsonb_build_object('name', 'skill', 'type', 'difference', 'attribute', 'skill', 'max', 100,
							   'weight', skill_weight),
			jsonb_build_object('name', 'ping', 'type', 'latency', 'max_ms', 100, 'weight', ping_weight))));
	INSERT INTO mm.tickets (queue, players, created_at) VALUES
	  ('df_w', '[{"id": "anchor", "attributes": {"skill": 1000}, "latencies": {"eu": 20}}]', '2026-01-01 00:00:00+00'),
	  ('df_w', '[{"id": "near", "attributes": {"skill": 1010}, "latencies": {"eu": 90}}]', '2026-01-01 00:00:01+00'),
	  ('df_w', '[{"id": "fast", "attributes": {"skill": 1090}, "latencies": {"eu": 20}}]', '2026-01-01 00:00:02+00');
	PERFORM mm.tick('df_w', '2026-01-01 00:00:05+00');
	SELECT string_agg(mp.player_id, ' ' ORDER BY mp.player_id) || ', quality ' || round(m.quality::numeric, 4)
	  INTO result
	  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id WHERE m.queue = 'df_w'
	 GROUP BY m.id, m.queue;
	PERFORM mm.drop_queue('df_w', force => true);
	RETURN result;
END $$;
-- costs: near = w_skill * 0.1 + w_ping * 0.9, fast = w_skill * 0.9 + w_ping * 0.2
SELECT pg_temp.pair_with(1, 1) AS equal_weights,		-- near 1.0, fast 1.1: near
	   pg_temp.pair_with(1, 3) AS ping_counts_more,		-- near 2.8, fast 1.5: fast
	   pg_temp.pair_with(0, 1) AS only_ping;			-- near 0.9, fast 0.2: fast
-- ties by age: weight 0 on both rules ranks nobody, the older candidate wins
SELECT pg_temp.pair_with(0, 0) AS no_ranking;

-- validation
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 100, "min": 150}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 100, "min": -1}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 100, "min": 50}]}') -> 'rules';

SELECT mm.drop_queue('df_min', force => true);
