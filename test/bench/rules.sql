-- The rule language at scale (issue 9): each figure against its baseline
-- from the same run, medians of 3 runs, each run on freshly inserted
-- tickets in a fresh queue.
--   1. 10,000 tickets, 5v5, a queue with 8 rules (difference, latency,
--      string_equality, match_total, comparison, set_intersection, blocklist
--      and a compound over two of them) against the same tickets in a queue
--      with 2 rules (difference, latency).  Target: at most 3x.
--   2. 2x50 with 20,000 tickets, and a free-for-all of 60..100 with 20,000:
--      the tick and the search (compute_ms) against the 5v5 2-rule queue.
-- Run by: bash test/bench/run.sh rules
\set runs 3
SET client_min_messages = warning;
\pset tuples_only on
\pset format unaligned

CREATE TEMP TABLE bench_rules (figure text, run int, tick_ms float8, compute_ms float8, matches int);

CREATE FUNCTION pg_temp.bench_queue(q text, config jsonb, n int, run int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	formed int;
	st record;
BEGIN
	PERFORM mm.create_queue(q, config);
	PERFORM setseed(0.25);
	INSERT INTO mm.tickets (queue, players, created_at)
	SELECT q, jsonb_build_array(jsonb_build_object('id', format('%s-%s-%s', q, run, i),
			 'attributes', jsonb_build_object(
				 'skill', round(1000 + 200 * (random() + random() + random() - 1.5)),
				 'mode', (ARRAY['ranked', 'casual'])[1 + (i % 2)],
				 'healer', CASE WHEN random() < 0.2 THEN 1 ELSE 0 END,
				 'level', 1 + floor(random() * 60),
				 'maps', (SELECT jsonb_agg(m) FROM unnest(ARRAY['dust', 'mirage', 'nuke', 'inferno']) m
						   WHERE random() < 0.6),
				 'avoid', jsonb_build_array(format('%s-%s-%s', q, run, (i * 7919) % n))),
			 'latencies', jsonb_build_object('eu', round(20 + random() * 100), 'us', round(20 + random() * 130),
											 'asia', round(40 + random() * 150)))),
		   '2026-01-01 00:00:00+00'::timestamptz + (i % 60) * interval '1 second'
	  FROM generate_series(1, n) i;
	ANALYZE mm.tickets_active;
	t0 := clock_timestamp();
	formed := mm.tick(q, '2026-01-01 00:01:00+00');
	SELECT * INTO st FROM mm.last_tick_stats() s WHERE s.queue = q;
	INSERT INTO bench_rules VALUES (q, run, 1000 * extract(epoch FROM clock_timestamp() - t0),
									st.compute_ms, formed);
	PERFORM mm.drop_queue(q, force => true);
END $$;

\set two '{"teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}], "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100, "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}}, {"name": "ping", "type": "latency", "max_ms": 150}]}'
\set eight '{"teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}], "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100, "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}}, {"name": "ping", "type": "latency", "max_ms": 150}, {"name": "mode", "type": "string_equality", "attribute": "mode"}, {"name": "healers", "type": "match_total", "attribute": "healer", "max": 4}, {"name": "veteran", "type": "comparison", "attribute": "level", "operator": ">=", "reference": 5}, {"name": "maps", "type": "set_intersection", "attribute": "maps", "min_size": 1, "when_missing": "match_any"}, {"name": "avoid", "type": "blocklist", "attribute": "avoid"}, {"name": "novice", "type": "comparison", "attribute": "level", "operator": "<=", "reference": 30}, {"name": "levels", "type": "compound", "statement": "or(veteran, novice)"}]}'
\set big '{"teams": [{"name": "a", "min": 50, "max": 50}, {"name": "b", "min": 50, "max": 50}], "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 200, "expansion": {"every_seconds": 10, "delta": 100, "limit": 600}}, {"name": "ping", "type": "latency", "max_ms": 150}, {"name": "fair", "type": "team_difference", "attribute": "skill", "max": 50}]}'
\set four '{"teams": [{"name": "a", "min": 25, "max": 25}, {"name": "b", "min": 25, "max": 25}, {"name": "c", "min": 25, "max": 25}, {"name": "d", "min": 25, "max": 25}], "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 200, "expansion": {"every_seconds": 10, "delta": 100, "limit": 600}}, {"name": "ping", "type": "latency", "max_ms": 150}, {"name": "fair", "type": "team_difference", "attribute": "skill", "max": 50}]}'
\set ffa '{"match_size": {"min": 60, "max": 100}, "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 300}, {"name": "ping", "type": "latency", "max_ms": 150}]}'

-- warm-up, not recorded
SELECT pg_temp.bench_queue('warm', :'two', 2000, 0) \g /dev/null
DELETE FROM bench_rules;

SELECT pg_temp.bench_queue('two', :'two', 10000, r), pg_temp.bench_queue('eight', :'eight', 10000, r),
	   pg_temp.bench_queue('two20k', :'two', 20000, r), pg_temp.bench_queue('big', :'big', 20000, r),
	   pg_temp.bench_queue('four', :'four', 20000, r), pg_temp.bench_queue('ffa', :'ffa', 20000, r)
  FROM generate_series(1, :runs) r \g /dev/null

\echo
\echo '| figure | ours (ms) | baseline (ms) | ratio | target |'
\echo '| --- | ---: | ---: | ---: | --- |'
WITH med AS (
	SELECT figure, percentile_cont(0.5) WITHIN GROUP (ORDER BY tick_ms) AS tick_ms,
		   percentile_cont(0.5) WITHIN GROUP (ORDER BY compute_ms) AS compute_ms,
		   max(matches) AS matches
	  FROM bench_rules GROUP BY figure)
SELECT format('| %s | %s | %s | %s | %s |', f.label, round(a.tick_ms::numeric, 1), round(b.tick_ms::numeric, 1),
			  round((a.tick_ms / b.tick_ms)::numeric, 2),
			  CASE WHEN f.n = 1 THEN CASE WHEN a.tick_ms <= 3 * b.tick_ms THEN '≤ 3: met' ELSE '≤ 3: MISSED' END
				   ELSE '—' END)
  FROM (VALUES (1, '1. tick, 10k tickets, 8 rules (compound, blocklist, ...) vs 2 rules', 'eight', 'two', NULL),
			   (2, '2a. tick, 2x50, 20k tickets vs 5v5 2 rules 20k', 'big', 'two20k', NULL),
			   (3, '2b. tick, 4x25, 20k tickets vs 5v5 2 rules 20k', 'four', 'two20k', NULL),
			   (4, '2c. tick, free-for-all 60..100, 20k tickets vs 5v5 2 rules 20k', 'ffa', 'two20k', NULL)) f(n, label, ours, base, target)
  JOIN med a ON a.figure = f.ours JOIN med b ON b.figure = f.base
 ORDER BY f.n;
\echo
\echo '| queue | run | tick_ms | compute_ms (search) | matches |'
\echo '| --- | ---: | ---: | ---: | ---: |'
SELECT format('| %s | %s | %s | %s | %s |', figure, run, round(tick_ms::numeric, 1), round(compute_ms::numeric, 1), matches)
  FROM bench_rules ORDER BY figure, run;
