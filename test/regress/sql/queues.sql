-- Queues: config validation (every error names the JSON path of the first
-- problem), the normalised config, expansion thresholds by age, and
-- create/alter/drop with the trigger that validates every write.
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SET datestyle = 'ISO, YMD';

\i sql/include/try.sql

-- Validates a config through mm.validate_queue_config.
CREATE FUNCTION pg_temp.check_config(config jsonb) RETURNS text
LANGUAGE sql AS $$
	SELECT pg_temp.try(format('SELECT mm.validate_queue_config(%L::jsonb)', config))
$$;

--
-- The design's example config, normalised: defaults filled in (weight 1,
-- source ticket, merge average), effective match_size, max_party_size.
--
SELECT jsonb_pretty(mm.validate_queue_config('{
  "match_size": {"min": 10, "max": 10},
  "teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}],
  "ticket_timeout_seconds": 120,
  "acceptance_timeout_seconds": 15,
  "rating": {"system": "glicko2", "pool": "ranked"},
  "statistics": {"show_player_count": true, "show_time_to_match": true},
  "rules": [
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 100, "merge": "average",
     "weight": 2, "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
    {"name": "ping", "type": "latency", "max_ms": 80,
     "expansion": {"every_seconds": 15, "steps": [120, 200, null]}},
    {"name": "mode", "type": "string_equality", "attribute": "mode", "seconds_until_optional": 30}]}'));

-- The smallest config, and every rule type with its options.
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}}');
SELECT r AS rule FROM jsonb_array_elements(mm.validate_queue_config('{"match_size": {"min": 2, "max": 8},
  "teams": [{"name": "a", "min": 1, "max": 4}, {"name": "b", "min": 1, "max": 4}], "rules": [
  {"name": "mode", "type": "string_equality", "attribute": "prefs.mode", "default": "classic"},
  {"name": "map", "type": "string_equality", "attribute": "map", "when_missing": "match_any"},
  {"name": "lvl", "type": "difference", "attribute": "level", "max": 5, "merge": "max",
   "default": 1, "weight": 0, "source": "ticket", "seconds_until_optional": 60},
  {"name": "ping", "type": "latency", "max_ms": 50},
  {"name": "avg", "type": "team_difference", "attribute": "skill", "max": 30,
   "expansion": {"every_seconds": 5, "delta": 10}},
  {"name": "sizes", "type": "team_size_balance", "max_difference": 0,
   "expansion": {"every_seconds": 20, "steps": [1, 2]}}]}')->'rules') AS r;
-- team_size_balance's linear expansion stops at 200 players (an int) without a limit
SELECT mm.validate_queue_config('{"teams": [{"name": "a", "min": 1, "max": 4}, {"name": "b", "min": 1, "max": 4}],
  "rules": [{"name": "sizes", "type": "team_size_balance", "max_difference": 0,
             "expansion": {"every_seconds": 20, "delta": 1}}]}') #> '{rules,0,expansion}' AS expansion;
SELECT mm.rule_threshold('{"teams": [{"name": "a", "min": 1, "max": 4}, {"name": "b", "min": 1, "max": 4}],
  "rules": [{"name": "sizes", "type": "team_size_balance", "max_difference": 0,
             "expansion": {"every_seconds": 1, "delta": 7}}]}', 'sizes', 1e12) AS far_future;

--
-- Teams and match_size.  Without match_size it comes from the teams; with
-- both, the effective bounds are their overlap.  max_party_size is the
-- largest team that leaves room for the other teams' min (no teams: match max).
--
SELECT c.label, v->'match_size' AS match_size, v->'max_party_size' AS max_party_size
  FROM (VALUES
	(1, 'no teams', '{"match_size": {"min": 2, "max": 8}}'::jsonb),
	(2, '5v5 from teams', '{"teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}]}'),
	(3, '4-6 a side', '{"teams": [{"name": "a", "min": 4, "max": 6}, {"name": "b", "min": 4, "max": 6}]}'),
	(4, 'overlap', '{"match_size": {"min": 2, "max": 9}, "teams": [{"name": "a", "min": 3, "max": 5}, {"name": "b", "min": 3, "max": 5}]}'),
	(5, 'uneven', '{"match_size": {"min": 4, "max": 6}, "teams": [{"name": "a", "min": 1, "max": 5}, {"name": "b", "min": 3, "max": 5}]}'),
	(6, 'three teams', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}, {"name": "c", "min": 1, "max": 1}]}'))
	AS c(n, label, config),
	LATERAL mm.validate_queue_config(c.config) AS v
 ORDER BY c.n;

--
-- Every validation error: the SQLSTATE and the path of the first problem.
--
SELECT c.n, c.label, pg_temp.check_config(c.config) AS result
  FROM (VALUES
	-- the document
	(1, 'json null', 'null'::jsonb),
	(2, 'array', '[]'),
	(3, 'string', '"queue"'),
	(4, 'empty object', '{}'),
	(5, 'unknown key', '{"match_size": {"min": 2, "max": 4}, "match_sise": 1}'),
	(6, 'odd unknown key', '{"match_size": {"min": 2, "max": 4}, "bad key": 1}'),
	(7, 'oversized', jsonb_build_object('match_size', '{"min": 2, "max": 4}'::jsonb, 'x', repeat('a', 70000))),
	-- match_size
	(10, 'match_size number', '{"match_size": 4}'),
	(11, 'min missing', '{"match_size": {"max": 4}}'),
	(12, 'max missing', '{"match_size": {"min": 2}}'),
	(13, 'min 1', '{"match_size": {"min": 1, "max": 4}}'),
	(14, 'min fraction', '{"match_size": {"min": 2.5, "max": 4}}'),
	(15, 'min string', '{"match_size": {"min": "2", "max": 4}}'),
	(16, 'min boolean', '{"match_size": {"min": true, "max": 4}}'),
	(17, 'min null', '{"match_size": {"min": null, "max": 4}}'),
	(18, 'min huge', '{"match_size": {"min": 1e400, "max": 4}}'),
	(19, 'max 201', '{"match_size": {"min": 2, "max": 201}}'),
	(20, 'min > max', '{"match_size": {"min": 6, "max": 4}}'),
	(21, 'unknown match_size key', '{"match_size": {"min": 2, "max": 4, "avg": 3}}'),
	-- teams
	(30, 'teams object', '{"teams": {}}'),
	(31, 'teams empty', '{"teams": []}'),
	(32, 'one team', '{"teams": [{"name": "a", "min": 1, "max": 1}]}'),
	(33, '101 teams', jsonb_build_object('teams', (SELECT jsonb_agg(jsonb_build_object('name', 't' || i, 'min', 1, 'max', 1)) FROM generate_series(1, 101) i))),
	(34, 'team not object', '{"teams": [1, 2]}'),
	(35, 'team name missing', '{"teams": [{"min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}]}'),
	(36, 'team name empty', '{"teams": [{"name": "", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}]}'),
	(37, 'team name leading -', '{"teams": [{"name": "-a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}]}'),
	(38, 'team name space', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b c", "min": 1, "max": 1}]}'),
	(39, 'team name 65', jsonb_build_object('teams', jsonb_build_array(jsonb_build_object('name', repeat('a', 65), 'min', 1, 'max', 1), '{"name": "b", "min": 1, "max": 1}'::jsonb))),
	(40, 'team name number', '{"teams": [{"name": 1, "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}]}'),
	(41, 'duplicate team', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "a", "min": 1, "max": 1}]}'),
	(42, 'team min 0', '{"teams": [{"name": "a", "min": 0, "max": 1}, {"name": "b", "min": 1, "max": 1}]}'),
	(43, 'team max < min', '{"teams": [{"name": "a", "min": 3, "max": 2}, {"name": "b", "min": 1, "max": 1}]}'),
	(44, 'team max missing', '{"teams": [{"name": "a", "min": 1}, {"name": "b", "min": 1, "max": 1}]}'),
	(45, 'team unknown key', '{"teams": [{"name": "a", "min": 1, "max": 1, "size": 1}, {"name": "b", "min": 1, "max": 1}]}'),
	(46, 'team mins over match max', '{"match_size": {"min": 2, "max": 8}, "teams": [{"name": "a", "min": 5, "max": 5}, {"name": "b", "min": 5, "max": 5}]}'),
	(47, 'team maxes under match min', '{"match_size": {"min": 8, "max": 10}, "teams": [{"name": "a", "min": 1, "max": 3}, {"name": "b", "min": 1, "max": 3}]}'),
	(48, 'teams over 200', '{"teams": [{"name": "a", "min": 1, "max": 150}, {"name": "b", "min": 1, "max": 150}]}'),
	-- timeouts, rating, statistics
	(50, 'ticket timeout 0', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": 0}'),
	(51, 'ticket timeout negative', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": -5}'),
	(52, 'ticket timeout string', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": "60"}'),
	(53, 'ticket timeout huge', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": 1e400}'),
	(54, 'ticket timeout null', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": null}'),
	(55, 'acceptance timeout 0', '{"match_size": {"min": 2, "max": 4}, "acceptance_timeout_seconds": 0}'),
	(56, 'rating string', '{"match_size": {"min": 2, "max": 4}, "rating": "elo"}'),
	(57, 'rating system missing', '{"match_size": {"min": 2, "max": 4}, "rating": {"pool": "p"}}'),
	(58, 'rating system unknown', '{"match_size": {"min": 2, "max": 4}, "rating": {"system": "trueskill"}}'),
	(59, 'rating pool bad', '{"match_size": {"min": 2, "max": 4}, "rating": {"system": "elo", "pool": "a pool"}}'),
	(60, 'rating unknown key', '{"match_size": {"min": 2, "max": 4}, "rating": {"system": "elo", "k": 32}}'),
	(61, 'statistics flag string', '{"match_size": {"min": 2, "max": 4}, "statistics": {"show_player_count": "yes"}}'),
	(62, 'statistics unknown key', '{"match_size": {"min": 2, "max": 4}, "statistics": {"show_everything": true}}'),
	-- rules: the array and the common fields
	(70, 'rules object', '{"match_size": {"min": 2, "max": 4}, "rules": {}}'),
	(71, '65 rules', jsonb_build_object('match_size', '{"min": 2, "max": 4}'::jsonb, 'rules', (SELECT jsonb_agg(jsonb_build_object('name', 'r' || i, 'type', 'latency', 'max_ms', 1)) FROM generate_series(1, 65) i))),
	(72, 'rule not object', '{"match_size": {"min": 2, "max": 4}, "rules": [1]}'),
	(73, 'rule name missing', '{"match_size": {"min": 2, "max": 4}, "rules": [{"type": "latency", "max_ms": 1}]}'),
	(74, 'rule name with space', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "my ping", "type": "latency", "max_ms": 1}]}'),
	(75, 'duplicate rule', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1}, {"name": "p", "type": "latency", "max_ms": 2}]}'),
	(76, 'type missing', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "max_ms": 1}]}'),
	(77, 'type unknown', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "distance"}]}'),
	(78, 'type number', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": 1}]}'),
	(79, 'rule unknown key', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "maxms": 2}]}'),
	(80, 'weight negative', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "weight": -1}]}'),
	(81, 'weight string', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "weight": "1"}]}'),
	(82, 'source player', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1, "source": "player"}]}'),
	(83, 'source rating', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1, "source": "rating"}]}'),
	(84, 'source unknown', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1, "source": "client"}]}'),
	(85, 'seconds_until_optional negative', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "seconds_until_optional": -1}]}'),
	-- attributes and missing values
	(90, 'attribute missing (difference)', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "max": 1}]}'),
	(91, 'attribute missing (string_equality)', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality"}]}'),
	(92, 'attribute missing (team_difference)', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "t", "type": "team_difference", "max": 1}]}'),
	(93, 'attribute empty', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": ""}]}'),
	(94, 'attribute empty key', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": "a..b"}]}'),
	(95, 'attribute leading dot', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": ".a"}]}'),
	(96, 'attribute 9 keys', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": "a.b.c.d.e.f.g.h.i"}]}'),
	(97, 'attribute number', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": 7}]}'),
	(98, 'attribute on latency', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "attribute": "ping"}]}'),
	(99, 'attribute on team_size_balance', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "b", "type": "team_size_balance", "max_difference": 1, "attribute": "x"}]}'),
	(100, 'string default for difference', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1, "default": "x"}]}'),
	(101, 'number default for string_equality', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": "mode", "default": 1}]}'),
	(102, 'default and when_missing', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": "mode", "default": "a", "when_missing": "match_any"}]}'),
	(103, 'when_missing unknown', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": "mode", "when_missing": "skip"}]}'),
	(104, 'default on latency', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "default": 5}]}'),
	-- thresholds
	(110, 'max missing', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill"}]}'),
	(111, 'max negative', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": -1}]}'),
	(112, 'max "NaN"', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": "NaN"}]}'),
	(113, 'max 1e400', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1e400}]}'),
	(114, 'max -1e400', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": -1e400}]}'),
	(115, 'max 1e13', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1e13}]}'),
	(126, 'max numeric NaN', jsonb_build_object('match_size', '{"min": 2, "max": 4}'::jsonb, 'rules', jsonb_build_array(jsonb_build_object('name', 's', 'type', 'difference', 'attribute', 'skill', 'max', 'NaN'::numeric)))),
	(127, 'max float8 Infinity', jsonb_build_object('match_size', '{"min": 2, "max": 4}'::jsonb, 'rules', jsonb_build_array(jsonb_build_object('name', 's', 'type', 'difference', 'attribute', 'skill', 'max', 'Infinity'::float8)))),
	(116, 'max_ms on difference', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1, "max_ms": 5}]}'),
	(117, 'max on latency', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max": 5}]}'),
	(118, 'max_ms missing', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency"}]}'),
	(119, 'max on string_equality', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": "mode", "max": 1}]}'),
	(120, 'max_difference missing', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "b", "type": "team_size_balance"}]}'),
	(121, 'max_difference fraction', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "b", "type": "team_size_balance", "max_difference": 1.5}]}'),
	(122, 'max_difference 201', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "b", "type": "team_size_balance", "max_difference": 201}]}'),
	(123, 'merge on latency', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "merge": "min"}]}'),
	(124, 'merge on team_difference', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "t", "type": "team_difference", "attribute": "skill", "max": 1, "merge": "min"}]}'),
	(125, 'merge unknown', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1, "merge": "median"}]}'),
	-- expansion
	(130, 'expansion on string_equality', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "m", "type": "string_equality", "attribute": "mode", "expansion": {"every_seconds": 5, "steps": [null]}}]}'),
	(131, 'expansion array', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": []}]}'),
	(132, 'every_seconds missing', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"delta": 1}}]}'),
	(133, 'every_seconds 0', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 0, "delta": 1}}]}'),
	(134, 'every_seconds string', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": "5", "delta": 1}}]}'),
	(135, 'neither delta nor steps', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5}}]}'),
	(136, 'delta negative', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5, "delta": -1}}]}'),
	(137, 'limit below base', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 100, "expansion": {"every_seconds": 5, "delta": 10, "limit": 50}}]}'),
	(138, 'steps and delta', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5, "delta": 1, "steps": [2]}}]}'),
	(139, 'steps empty', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5, "steps": []}}]}'),
	(140, '65 steps', jsonb_build_object('match_size', '{"min": 2, "max": 4}'::jsonb, 'rules', jsonb_build_array(jsonb_build_object('name', 'p', 'type', 'latency', 'max_ms', 1, 'expansion', jsonb_build_object('every_seconds', 5, 'steps', (SELECT jsonb_agg(i) FROM generate_series(1, 65) i)))))),
	(141, 'step string', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5, "steps": [2, "3"]}}]}'),
	(142, 'step negative', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5, "steps": [-2]}}]}'),
	(143, 'step huge', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5, "steps": [1e300]}}]}'),
	(144, 'null before a number', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5, "steps": [null, 5]}}]}'),
	(145, 'expansion unknown key', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "p", "type": "latency", "max_ms": 1, "expansion": {"every_seconds": 5, "deltaa": 1}}]}'),
	-- team rules need teams (the tick has no teams to compare in a free-for-all)
	(128, 'team_difference without teams', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "t", "type": "team_difference", "attribute": "skill", "max": 1}]}'),
	(129, 'team_size_balance without teams', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "latency", "max_ms": 1}, {"name": "b", "type": "team_size_balance", "max_difference": 1}]}'),
	-- team_size_balance counts players: its expansion takes integers 0..200
	(146, 'team_size_balance delta fraction', '{"teams": [{"name": "a", "min": 1, "max": 2}, {"name": "b", "min": 1, "max": 2}], "rules": [{"name": "b", "type": "team_size_balance", "max_difference": 0, "expansion": {"every_seconds": 5, "delta": 0.5}}]}'),
	(147, 'team_size_balance limit 1e12', '{"teams": [{"name": "a", "min": 1, "max": 2}, {"name": "b", "min": 1, "max": 2}], "rules": [{"name": "b", "type": "team_size_balance", "max_difference": 0, "expansion": {"every_seconds": 5, "delta": 1, "limit": 1e12}}]}'),
	(148, 'team_size_balance step 201', '{"teams": [{"name": "a", "min": 1, "max": 2}, {"name": "b", "min": 1, "max": 2}], "rules": [{"name": "b", "type": "team_size_balance", "max_difference": 0, "expansion": {"every_seconds": 5, "steps": [1, 201]}}]}'),
	(149, 'team_size_balance step fraction', '{"teams": [{"name": "a", "min": 1, "max": 2}, {"name": "b", "min": 1, "max": 2}], "rules": [{"name": "b", "type": "team_size_balance", "max_difference": 0, "expansion": {"every_seconds": 5, "steps": [1.5, null]}}]}'),
	-- the first problem wins: rules[1] is reported, not rules[2]
	(150, 'first problem', '{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "a", "type": "latency", "max_ms": 1}, {"name": "b", "type": "latency", "max_ms": -1}, {"name": "c", "type": "latency"}]}'))
	AS c(n, label, config)
 ORDER BY c.n;

-- The errors as a client sees them, with their hints.
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 1, "wieght": 2}]}');
SELECT mm.validate_queue_config(NULL);
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 4}, "rules": [{"name": "t", "type": "team_difference", "attribute": "skill", "max": 1}]}');

-- Limits that are still accepted: 64 rules, 64 steps, 100 teams, 200 players.
SELECT jsonb_array_length(mm.validate_queue_config(jsonb_build_object('match_size', '{"min": 2, "max": 200}'::jsonb,
	'rules', (SELECT jsonb_agg(jsonb_build_object('name', 'r' || i, 'type', 'latency', 'max_ms', 1,
		'expansion', jsonb_build_object('every_seconds', 1, 'steps', (SELECT jsonb_agg(j) FROM generate_series(1, 64) j))))
		FROM generate_series(1, 64) i)))->'rules') AS rules;
SELECT mm.validate_queue_config(jsonb_build_object('teams',
	(SELECT jsonb_agg(jsonb_build_object('name', 't' || i, 'min', 1, 'max', 2)) FROM generate_series(1, 100) i)))->'match_size' AS match_size;

--
-- Thresholds by age of the oldest ticket (mm.rule_threshold).
--
CREATE TEMP TABLE threshold_config AS SELECT '{"match_size": {"min": 2, "max": 4}, "rules": [
  {"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
   "expansion": {"every_seconds": 10, "delta": 50, "limit": 220}},
  {"name": "open", "type": "difference", "attribute": "skill", "max": 10,
   "expansion": {"every_seconds": 60, "delta": 5}},
  {"name": "ping", "type": "latency", "max_ms": 80,
   "expansion": {"every_seconds": 15, "steps": [120, 200, null]}},
  {"name": "region", "type": "latency", "max_ms": 50, "seconds_until_optional": 40,
   "expansion": {"every_seconds": 15, "steps": [60]}},
  {"name": "mode", "type": "string_equality", "attribute": "mode", "seconds_until_optional": 30},
  {"name": "fixed", "type": "team_size_balance", "max_difference": 1}],
  "teams": [{"name": "a", "min": 1, "max": 2}, {"name": "b", "min": 1, "max": 2}]}'::jsonb AS config;

-- linear, capped at limit 220 (step 3 reaches it and stays)
SELECT age, mm.rule_threshold(config, 'skill', age)
  FROM threshold_config, unnest('{0, 9.999, 10, 19, 20, 29.5, 30, 60, 1e9}'::float8[]) age ORDER BY age;
-- linear without limit keeps growing
SELECT age, mm.rule_threshold(config, 'open', age)
  FROM threshold_config, unnest('{59, 60, 600, 6000}'::float8[]) age ORDER BY age;
-- custom: step k from (k+1)*15 s on; the null step switches the rule off
SELECT age, mm.rule_threshold(config, 'ping', age)
  FROM threshold_config, unnest('{0, 14.9, 15, 29.9, 30, 44.9, 45, 1000}'::float8[]) age ORDER BY age;
-- seconds_until_optional switches the rule off at 40 s whatever the step
SELECT age, mm.rule_threshold(config, 'region', age)
  FROM threshold_config, unnest('{0, 15, 39.9, 40, 100}'::float8[]) age ORDER BY age;
-- string_equality has no threshold; off after 30 s
SELECT age, mm.rule_threshold(config, 'mode', age)
  FROM threshold_config, unnest('{0, 29, 30}'::float8[]) age ORDER BY age;
SELECT mm.rule_threshold(config, 'fixed', 1e6) FROM threshold_config;
-- bad arguments
SELECT mm.rule_threshold(config, 'nope', 0) FROM threshold_config;
SELECT mm.rule_threshold(config, 'skill', -1) FROM threshold_config;
SELECT mm.rule_threshold(config, 'skill', 'NaN') FROM threshold_config;
SELECT mm.rule_threshold(config, 'skill', 'Infinity') FROM threshold_config;
SELECT mm.rule_threshold(config, 'skill', NULL) IS NULL AS null_age FROM threshold_config;
SELECT mm.rule_threshold('{"match_size": {"min": 1, "max": 4}}', 'skill', 0);

--
-- Queue names.
--
SELECT c.label, pg_temp.try(format('SELECT mm.create_queue(%L, %L)', c.name, '{"match_size": {"min": 2, "max": 2}}')) AS result
  FROM (VALUES (1, 'empty', ''), (2, '65 chars', repeat('q', 65)), (3, 'leading -', '-queue'),
			   (4, 'leading _', '_queue'), (5, 'space', 'my queue'), (6, 'dot', 'q.1'),
			   (7, 'non-ascii', 'café'), (8, 'null', NULL)) AS c(n, label, name)
 ORDER BY c.n;
SELECT mm.create_queue('my queue', '{"match_size": {"min": 2, "max": 2}}');

--
-- create, alter, drop.
--
SELECT mm.create_queue(repeat('q', 64), '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.create_queue('qs-duel', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.create_queue('QS-Duel', '{"match_size": {"min": 2, "max": 2}}');	-- names are case-sensitive
SELECT mm.create_queue('qs-duel', '{"match_size": {"min": 2, "max": 2}}');	-- exists
SELECT mm.create_queue('qs-bad', '{"match_size": {"min": 2, "max": 2}, "rules": [{"name": "x"}]}');
SELECT mm.create_queue('qs-null', NULL);
SELECT name, config FROM mm.queues WHERE name LIKE 'qs-%' OR name LIKE 'QS-%' OR name LIKE 'qqq%' ORDER BY name;

SELECT mm.alter_queue('qs-duel', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": 60}');
SELECT config FROM mm.queues WHERE name = 'qs-duel';
SELECT mm.alter_queue('qs-duel', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": 0}');
SELECT mm.alter_queue('qs-missing', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.alter_queue('qs-duel', NULL);
SELECT mm.alter_queue(NULL, '{"match_size": {"min": 2, "max": 2}}');
SELECT config FROM mm.queues WHERE name = 'qs-duel';	-- unchanged by the failures

-- Direct writes are validated by the same trigger.
INSERT INTO mm.queues (name, config) VALUES ('qs-direct', '{"match_size": {"min": 2, "max": 3}}');
INSERT INTO mm.queues (name, config) VALUES ('qs-direct2', '{"match_size": {"min": 2, "max": 3}, "teams": [{"name": "a", "min": 1, "max": 1}]}');
INSERT INTO mm.queues (name, config) VALUES ('qs direct', '{"match_size": {"min": 2, "max": 3}}');
INSERT INTO mm.queues (name, config) VALUES ('qs-direct3', NULL);
INSERT INTO mm.queues (name, config) VALUES (NULL, '{"match_size": {"min": 2, "max": 3}}');
UPDATE mm.queues SET config = '{"match_size": {"min": 3, "max": 2}}' WHERE name = 'qs-direct';
UPDATE mm.queues SET config = jsonb_set(config, '{match_size,max}', '5') WHERE name = 'qs-direct';
UPDATE mm.queues SET name = '-qs' WHERE name = 'qs-direct';
SELECT name, config FROM mm.queues WHERE name = 'qs-direct';
-- updated_at follows updates; created_at stays
UPDATE mm.queues SET created_at = '2020-01-01', updated_at = '2020-01-01' WHERE name = 'qs-direct';
SELECT created_at = '2020-01-01' AS created_kept, updated_at > '2020-01-01' AS updated_moved FROM mm.queues WHERE name = 'qs-direct';

-- drop_queue: refused while tickets are active, unless force cancels them.
SELECT mm.create_ticket('qs-duel', '[{"id": "qs-p1"}]', '2026-01-01 10:00') > 0 AS created;
SELECT mm.create_ticket('qs-duel', '[{"id": "qs-p2"}]', '2026-01-01 10:00') > 0 AS created;
SELECT mm.drop_queue('qs-duel');
SELECT mm.drop_queue('qs-missing');
SELECT mm.drop_queue(NULL);
SELECT count(*) AS searching FROM mm.tickets WHERE queue = 'qs-duel' AND status = 'searching';
-- force: every ticket is cancelled (NOTIFY each, see the isolation spec), then the queue goes
BEGIN;
CREATE TEMP TABLE dropped_tickets AS SELECT id FROM mm.tickets WHERE queue = 'qs-duel';
SELECT mm.drop_queue('qs-duel', force => true);
SELECT count(*) AS tickets_left FROM mm.tickets t JOIN dropped_tickets d USING (id);
SELECT count(*) AS active_players_left FROM mm.active_players WHERE queue = 'qs-duel';
COMMIT;
SELECT count(*) AS queue_left FROM mm.queues WHERE name = 'qs-duel';
-- the players were released and can queue elsewhere
SELECT mm.create_ticket('qs-direct', '[{"id": "qs-p1"}]', '2026-01-01 10:00') > 0 AS queued_again;
-- a queue without active tickets drops without force (the cancelled ticket goes too)
SELECT mm.cancel_ticket(id) FROM mm.tickets WHERE queue = 'qs-direct';
SELECT mm.drop_queue('qs-direct');
SELECT mm.drop_queue(repeat('q', 64));
SELECT mm.drop_queue('QS-Duel');
SELECT name FROM mm.queues WHERE name LIKE 'qs-%' OR name LIKE 'QS-%' OR name LIKE 'qqq%' ORDER BY name;
DELETE FROM mm.players WHERE id LIKE 'qs-%';
