-- mm.tick and the rules: expansion steps reached at the right ages (linear,
-- custom, a null step switching a rule off), a rule optional after N
-- seconds, string equality, latency and the region choice, party merges,
-- missing attributes, oldest tickets first, weighted quality.
SET timezone = 'UTC';

\i sql/include/tick_helpers.sql
\i sql/include/searching.sql

-- linear expansion: max 50, +50 every 10 s, limit 150
SELECT mm.create_queue('tr_linear', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50,
             "expansion": {"every_seconds": 10, "delta": 50, "limit": 150}}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_linear', '[{"id": "la", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('tr_linear', '[{"id": "lb", "attributes": {"skill": 1120}}]', '2026-01-01 00:00:05+00'),
  ('tr_linear', '[{"id": "lc", "attributes": {"skill": 3000}}]', '2026-01-01 00:00:06+00'),
  ('tr_linear', '[{"id": "ld", "attributes": {"skill": 3200}}]', '2026-01-01 00:00:07+00');
SELECT mm.tick('tr_linear', '2026-01-01 00:00:09.999+00');  -- step 0: 50
SELECT mm.tick('tr_linear', '2026-01-01 00:00:10+00');      -- step 1: 100 < 120
SELECT mm.tick('tr_linear', '2026-01-01 00:00:19.999+00');  -- still step 1
SELECT mm.tick('tr_linear', '2026-01-01 00:00:20+00');      -- step 2: 150 >= 120
-- quality 1 - 120/150; the age of the oldest ticket (la, 20 s) chose the step
SELECT * FROM pg_temp.matches('tr_linear');
-- the limit holds: 200 apart never match, however old
SELECT mm.tick('tr_linear', '2026-01-01 01:00:00+00');
SELECT pg_temp.searching('tr_linear');

-- custom steps: 10, then 40 from 10 s, then off (null) from 20 s
SELECT mm.create_queue('tr_custom', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 10,
             "expansion": {"every_seconds": 10, "steps": [40, null]}}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_custom', '[{"id": "ca", "attributes": {"skill": 100}}]', '2026-01-01 00:00:00+00'),
  ('tr_custom', '[{"id": "cb", "attributes": {"skill": 130}}]', '2026-01-01 00:00:00+00'),
  ('tr_custom', '[{"id": "cc", "attributes": {"skill": 300}}]', '2026-01-01 00:00:01+00'),
  ('tr_custom', '[{"id": "cd", "attributes": {"skill": 700}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('tr_custom', '2026-01-01 00:00:09.999+00');   -- step 0: 10
SELECT mm.tick('tr_custom', '2026-01-01 00:00:10+00');   -- step 1: 40 (ca, cb)
SELECT pg_temp.searching('tr_custom');
SELECT mm.tick('tr_custom', '2026-01-01 00:00:20+00');   -- cc is 19 s old: step 1
SELECT mm.tick('tr_custom', '2026-01-01 00:00:21+00');   -- 20 s: off, anyone matches
-- an off rule does not count in the quality (no rule left: 1)
SELECT * FROM pg_temp.matches('tr_custom');

-- optional after 30 s: different modes match once the oldest is 30 s old
SELECT mm.create_queue('tr_optional', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "mode", "type": "string_equality", "attribute": "mode",
             "seconds_until_optional": 30}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_optional', '[{"id": "oa", "attributes": {"mode": "ctf"}}]', '2026-01-01 00:00:00+00'),
  ('tr_optional', '[{"id": "ob", "attributes": {"mode": "duel"}}]', '2026-01-01 00:00:10+00'),
  ('tr_optional', '[{"id": "oc", "attributes": {"mode": "duel"}}]', '2026-01-01 00:00:20+00'),
  ('tr_optional', '[{"id": "od", "attributes": {"mode": "koth"}}]', '2026-01-01 00:00:21+00');
-- ob and oc match on equal strings; oa and od wait
SELECT mm.tick('tr_optional', '2026-01-01 00:00:29+00');
SELECT pg_temp.searching('tr_optional');
SELECT mm.tick('tr_optional', '2026-01-01 00:00:30+00');
SELECT * FROM pg_temp.matches('tr_optional');

-- latency: every player's latency in the chosen region <= max_ms; the match
-- gets the region whose worst latency is lowest
SELECT mm.create_queue('tr_latency', '{"match_size": {"min": 2, "max": 3},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 100}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_latency', '[{"id": "ta", "latencies": {"eu": 30, "us": 60}}]', '2026-01-01 00:00:00+00'),
  ('tr_latency', '[{"id": "tb", "latencies": {"eu": 90, "us": 40, "asia": 10}}]', '2026-01-01 00:00:01+00'),
  ('tr_latency', '[{"id": "tc", "latencies": {"eu": 150}}]', '2026-01-01 00:00:02+00'),
  ('tr_latency', '[{"id": "td", "latencies": {"asia": 5, "us": 100}}]', '2026-01-01 00:00:03+00'),
  ('tr_latency', '[{"id": "te", "latencies": {"eu": 101}}]', '2026-01-01 00:00:04+00');
-- ta, tb, td share us (worst 100, within 100) and eu is not open to td:
-- region us, quality 1 - 100/100 = 0; tc and te cannot play anywhere together
SELECT mm.tick('tr_latency', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('tr_latency');
SELECT pg_temp.searching('tr_latency');
-- a party plays where all its players can: the worst of them counts
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_latency', '[{"id": "tf", "latencies": {"eu": 20, "us": 10}},
                   {"id": "tg", "latencies": {"eu": 70, "asia": 5}}]', '2026-01-01 00:00:06+00'),
  ('tr_latency', '[{"id": "th", "latencies": {"eu": 40, "us": 1}}]', '2026-01-01 00:00:07+00');
-- tc (eu 150) and te (eu 101) stay out; the party and th meet in eu (worst 70)
SELECT mm.tick('tr_latency', '2026-01-01 00:00:08+00');
SELECT * FROM pg_temp.matches('tr_latency') WHERE n = 2;
SELECT pg_temp.searching('tr_latency');

-- latency expands too: 50 ms, 120 ms from 15 s, then off from 30 s
SELECT mm.create_queue('tr_ping_expand', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 50,
             "expansion": {"every_seconds": 15, "steps": [120, null]}}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_ping_expand', '[{"id": "xa", "latencies": {"eu": 100, "us": 40}}]', '2026-01-01 00:00:00+00'),
  ('tr_ping_expand', '[{"id": "xb", "latencies": {"eu": 110, "asia": 20}}]', '2026-01-01 00:00:01+00'),
  ('tr_ping_expand', '[{"id": "xc", "latencies": {"asia": 500}}]', '2026-01-01 00:00:02+00'),
  ('tr_ping_expand', '[{"id": "xd", "latencies": {"us": 900}}]', '2026-01-01 00:00:03+00');
SELECT mm.tick('tr_ping_expand', '2026-01-01 00:00:14+00');  -- 50: no region fits
SELECT mm.tick('tr_ping_expand', '2026-01-01 00:00:15+00');  -- 120: xa and xb in eu (110)
SELECT pg_temp.searching('tr_ping_expand');
SELECT mm.tick('tr_ping_expand', '2026-01-01 00:00:31+00');  -- xc is 29 s old: 120
SELECT mm.tick('tr_ping_expand', '2026-01-01 00:00:32+00');  -- 30 s: off; no shared region
SELECT * FROM pg_temp.matches('tr_ping_expand');

-- a new config applies from the next tick
SELECT mm.create_queue('tr_alter', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 10}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_alter', '[{"id": "aa", "attributes": {"skill": 100}}]', '2026-01-01 00:00:00+00'),
  ('tr_alter', '[{"id": "ab", "attributes": {"skill": 150}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('tr_alter', '2026-01-01 00:00:02+00');
SELECT mm.alter_queue('tr_alter', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50}]}');
SELECT mm.tick('tr_alter', '2026-01-01 00:00:03+00');
SELECT * FROM pg_temp.matches('tr_alter');

-- parties: merge average (default), min, max over the party's values
SELECT mm.create_queue('tr_avg', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50}]}');
SELECT mm.create_queue('tr_min', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50, "merge": "min"}]}');
SELECT mm.create_queue('tr_max', '{"match_size": {"min": 3, "max": 3},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50, "merge": "max"}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT q, format('[{"id": "%s1", "attributes": {"skill": 1000}}, {"id": "%s2", "attributes": {"skill": 1200}}]', q, q)::jsonb,
	   '2026-01-01 00:00:00+00'
  FROM unnest(ARRAY['tr_avg', 'tr_min', 'tr_max']) q;
-- one solo at 1000, one at 1100, one at 1200 in each queue
INSERT INTO mm.tickets (queue, players, created_at)
SELECT q, format('[{"id": "%s_%s", "attributes": {"skill": %s}}]', q, s, s)::jsonb,
	   '2026-01-01 00:00:00+00'::timestamptz + s * interval '1 ms'
  FROM unnest(ARRAY['tr_avg', 'tr_min', 'tr_max']) q, unnest(ARRAY[1000, 1100, 1200]) s;
-- (the solos are created up to 1.2 s after the parties: tick once all exist)
SELECT mm.tick(q, '2026-01-01 00:00:02+00') FROM unnest(ARRAY['tr_avg', 'tr_min', 'tr_max']) q;
-- each party is matched with the solo at its merged value: 1100, 1000, 1200
SELECT * FROM pg_temp.matches('tr_avg');
SELECT * FROM pg_temp.matches('tr_min');
SELECT * FROM pg_temp.matches('tr_max');

-- missing attributes: a default, or match_any (a ticket lacking an attribute
-- without either is refused when created, see queues tests)
SELECT mm.create_queue('tr_missing', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "rank.skill", "max": 10, "default": 500},
            {"name": "mode", "type": "string_equality", "attribute": "mode", "when_missing": "match_any"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  -- no skill: counts as 500 (a dotted path into nested attributes)
  ('tr_missing', '[{"id": "ma", "attributes": {"mode": "ctf"}}]', '2026-01-01 00:00:00+00'),
  -- no mode: matches any mode
  ('tr_missing', '[{"id": "mb", "attributes": {"rank": {"skill": 520}}}]', '2026-01-01 00:00:01+00'),
  ('tr_missing', '[{"id": "mc", "attributes": {"rank": {"skill": 509}, "mode": "duel"}}]', '2026-01-01 00:00:02+00'),
  ('tr_missing', '[{"id": "md", "attributes": {"rank": {"skill": 510}, "mode": "ctf"}}]', '2026-01-01 00:00:03+00');
-- ma (500, ctf) cannot take mc (duel) but takes md (510, ctf);
-- mb (520, any mode) and mc (509, duel): 11 apart, over 10
SELECT mm.tick('tr_missing', '2026-01-01 00:00:10+00');
SELECT * FROM pg_temp.matches('tr_missing');
SELECT pg_temp.searching('tr_missing');
-- a party: a player without mode does not constrain it, the others do
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_missing', '[{"id": "me", "attributes": {"rank": {"skill": 515}}},
                   {"id": "mf", "attributes": {"rank": {"skill": 525}, "mode": "koth"}}]', '2026-01-01 00:00:04+00'),
  ('tr_missing', '[{"id": "mg", "attributes": {"rank": {"skill": 520}, "mode": "koth"}}]', '2026-01-01 00:00:05+00');
-- mb (520, any mode) is the oldest: the party (520 on average, koth) would
-- make 3 players, so mb takes mg (520, koth); the party of two is a match of
-- 2 on its own; mc (509, duel) waits

SELECT mm.tick('tr_missing', '2026-01-01 00:00:11+00');
SELECT * FROM pg_temp.matches('tr_missing') WHERE n >= 2;
SELECT pg_temp.searching('tr_missing');

-- oldest first, and the quality as the weighted mean of each rule's closeness
SELECT mm.create_queue('tr_weights', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100, "weight": 3},
            {"name": "ping", "type": "latency", "max_ms": 100}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_weights', '[{"id": "wa", "attributes": {"skill": 1000}, "latencies": {"eu": 20}}]', '2026-01-01 00:00:00+00'),
  ('tr_weights', '[{"id": "wb", "attributes": {"skill": 1050}, "latencies": {"eu": 80}}]', '2026-01-01 00:00:01+00'),
  ('tr_weights', '[{"id": "wc", "attributes": {"skill": 1000}, "latencies": {"eu": 20}}]', '2026-01-01 00:00:02+00');
-- wa takes wc, the closest candidate (cost 0 against wb's 3 * 0.5 + 0.8):
-- (3 * 1 + 1 * (1 - 20/100)) / 4 = 0.95
SELECT mm.tick('tr_weights', '2026-01-01 00:00:03+00');
SELECT * FROM pg_temp.matches('tr_weights');

-- numbers: decimals, exponents, values beyond 32 bits are compared exactly
SELECT mm.create_queue('tr_numbers', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "s", "type": "difference", "attribute": "s", "max": 0.5}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tr_numbers', '[{"id": "n1", "attributes": {"s": 1.25}}]', '2026-01-01 00:00:00+00'),
  ('tr_numbers', '[{"id": "n2", "attributes": {"s": 3000000000}}]', '2026-01-01 00:00:01+00'),
  ('tr_numbers', '[{"id": "n3", "attributes": {"s": 1e3}}]', '2026-01-01 00:00:02+00'),
  ('tr_numbers', '[{"id": "n4", "attributes": {"s": 1.75}}]', '2026-01-01 00:00:03+00'),
  ('tr_numbers', '[{"id": "n5", "attributes": {"s": 3000000000.4}}]', '2026-01-01 00:00:04+00'),
  ('tr_numbers', '[{"id": "n6", "attributes": {"s": 1000.6}}]', '2026-01-01 00:00:05+00');
-- n1 and n4 (0.5 apart: quality 0), n2 and n5 (0.4: 0.2); n3 and n6 are 0.6 apart
SELECT mm.tick('tr_numbers', '2026-01-01 00:00:06+00');
SELECT * FROM pg_temp.matches('tr_numbers');

-- values beyond the JSON limit (1e12), stored before the rule existed and
-- past the validation trigger: they count as missing, so a sum of them never
-- overflows (team sums 1e308 + 1e308 = inf, spread inf - inf = NaN) into a
-- NaN quality that matches_quality_range would refuse
SELECT mm.create_queue('tr_huge', '{"match_size": {"min": 4, "max": 4},
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}]}');
SELECT mm.create_queue('tr_huge_any', '{"match_size": {"min": 4, "max": 4},
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}]}');
SELECT mm.create_queue('tr_huge_default', '{"match_size": {"min": 4, "max": 4},
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}]}');
-- straight into the partition: the parent's validation is not run
INSERT INTO mm.tickets_active (queue, players, created_at)
SELECT q, jsonb_build_array(jsonb_build_object('id', q || '_' || i,
		 'attributes', jsonb_build_object('skill', 1e308))),
	   '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 second'
  FROM unnest(ARRAY['tr_huge', 'tr_huge_any', 'tr_huge_default']) q, generate_series(1, 4) i;
SELECT mm.alter_queue('tr_huge', '{"match_size": {"min": 4, "max": 4},
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
SELECT mm.alter_queue('tr_huge_any', '{"match_size": {"min": 4, "max": 4},
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
             "when_missing": "match_any"}]}');
SELECT mm.alter_queue('tr_huge_default', '{"match_size": {"min": 4, "max": 4},
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
             "default": 1000}]}');
-- no skill: the tickets cannot satisfy the rule, no match, no error
SELECT mm.tick('tr_huge', '2026-01-01 00:00:10+00');
SELECT pg_temp.searching('tr_huge');
-- match_any: they match anything (quality 1: no value, no spread)
SELECT mm.tick('tr_huge_any', '2026-01-01 00:00:10+00');
SELECT * FROM pg_temp.matches('tr_huge_any');
-- default: everyone is 1000 (quality 1)
SELECT mm.tick('tr_huge_default', '2026-01-01 00:00:10+00');
SELECT * FROM pg_temp.matches('tr_huge_default');

-- many distinct region names (62 of each player's 64 are its own): loading
-- interns them through a hash table and a candidate match tracks only its
-- anchor's regions, so this is fast; the match plays in the shared region
-- whose worst latency is lowest: rg1 takes its closest candidate rg3 (eu
-- worst 30, against rg2's best 60), then rg2 alone (100 players >= min 2)
-- plays in us (20)
SELECT mm.create_queue('tr_regions', '{"match_size": {"min": 2, "max": 200},
  "rules": [{"name": "ping", "type": "latency", "max_ms": 100}]}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tr_regions',
	   (SELECT jsonb_agg(jsonb_build_object('id', 'rg' || t || '_' || p,
				 'latencies', (SELECT jsonb_object_agg('r' || t || '_' || p || '_' || k, 50)
								 FROM generate_series(1, 62) k)
							  || jsonb_build_object('eu', (ARRAY[30, 80, 10])[t], 'us', (ARRAY[60, 20, 10])[t]))
				 ORDER BY p)
		  FROM generate_series(1, 100) p),
	   '2026-01-01 00:00:00+00'::timestamptz + t * interval '1 second'
  FROM generate_series(1, 3) t;
SELECT mm.tick('tr_regions', '2026-01-01 00:00:10+00');
SELECT m.region, round(m.quality::numeric, 4) AS quality,
	   string_agg(DISTINCT split_part(mp.player_id, '_', 1), ' '
				  ORDER BY split_part(mp.player_id, '_', 1)) AS tickets,
	   count(*) AS players
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE m.queue = 'tr_regions' GROUP BY m.id, m.queue ORDER BY m.id;
SELECT pg_temp.searching('tr_regions');

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['tr_linear', 'tr_custom', 'tr_optional', 'tr_latency', 'tr_ping_expand',
					'tr_alter', 'tr_avg', 'tr_min', 'tr_max', 'tr_missing', 'tr_weights',
					'tr_numbers', 'tr_huge', 'tr_huge_any', 'tr_huge_default',
					'tr_regions']) q;
