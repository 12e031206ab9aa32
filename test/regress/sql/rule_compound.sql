-- Rule type compound: a statement of and(...), or(...), not(...) over named
-- rules; the rules it names are evaluated only through it.  FlexMatch's
-- multi-mode rule set: classic players (mode 1) must be within 100 skill,
-- practice players (mode 2) play with anyone of their mode.
SET timezone = 'UTC';
\i sql/include/rule_helpers.sql

SELECT mm.create_queue('cp_modes', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "mode_classic", "type": "comparison", "attribute": "mode", "operator": "=", "reference": 1},
            {"name": "mode_practice", "type": "comparison", "attribute": "mode", "operator": "=", "reference": 2},
            {"name": "skill_classic", "type": "difference", "attribute": "skill", "max": 100},
            {"name": "modes", "type": "compound",
             "statement": "or(and(mode_classic, skill_classic), mode_practice)"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cp_modes', '[{"id": "c1", "attributes": {"mode": 1, "skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('cp_modes', '[{"id": "p1", "attributes": {"mode": 2, "skill": 1000}}]', '2026-01-01 00:00:01+00'),
  ('cp_modes', '[{"id": "c2", "attributes": {"mode": 1, "skill": 1500}}]', '2026-01-01 00:00:02+00'),
  ('cp_modes', '[{"id": "p2", "attributes": {"mode": 2, "skill": 2000}}]', '2026-01-01 00:00:03+00'),
  ('cp_modes', '[{"id": "c3", "attributes": {"mode": 1, "skill": 1080}}]', '2026-01-01 00:00:04+00');
-- passes: c1 with c3 (classic, 80 apart), p1 with p2 (practice, any skill);
-- fails: c2 (classic, 420+ from every classic player) and the mixed pairs
SELECT mm.tick('cp_modes', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cp_modes');
SELECT pg_temp.searching('cp_modes');

-- not(): a comparison holds when every player passes, so not(beginners) is
-- "at least one player above level 5" (a lobby with a mentor); optional
-- after 30 s (the compound's own seconds_until_optional).  b1 ranks b2
-- first (age order: no rule here ranks), but {b1, b2} breaks the statement:
-- the search backtracks to the mentor.
SELECT mm.create_queue('cp_not', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "beginners", "type": "comparison", "attribute": "level", "operator": "<=", "reference": 5},
            {"name": "mentor", "type": "compound", "statement": "not(beginners)", "seconds_until_optional": 30}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cp_not', '[{"id": "b1", "attributes": {"level": 2}}]', '2026-01-01 00:00:00+00'),
  ('cp_not', '[{"id": "b2", "attributes": {"level": 3}}]', '2026-01-01 00:00:01+00'),
  ('cp_not', '[{"id": "m9", "attributes": {"level": 9}}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('cp_not', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cp_not');
SELECT pg_temp.searching('cp_not');
-- two beginners: nothing until b2 has waited 30 s, then the rule is off
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cp_not', '[{"id": "b3", "attributes": {"level": 1}}]', '2026-01-01 00:00:10+00');
SELECT mm.tick('cp_not', '2026-01-01 00:00:30+00');
SELECT mm.tick('cp_not', '2026-01-01 00:00:31+00');
SELECT * FROM pg_temp.matches('cp_not') WHERE n = 2;

-- expansion reached: a named rule keeps its own expansion inside the
-- compound (skill_classic: 100, then 500 from 20 s)
SELECT mm.create_queue('cp_expand', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "classic", "type": "comparison", "attribute": "mode", "operator": "=", "reference": 1},
            {"name": "near", "type": "difference", "attribute": "skill", "max": 100,
             "expansion": {"every_seconds": 20, "steps": [500]}},
            {"name": "modes", "type": "compound", "statement": "and(classic, near)"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cp_expand', '[{"id": "e1", "attributes": {"mode": 1, "skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('cp_expand', '[{"id": "e2", "attributes": {"mode": 1, "skill": 1400}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('cp_expand', '2026-01-01 00:00:19+00');
SELECT mm.tick('cp_expand', '2026-01-01 00:00:20+00');
SELECT * FROM pg_temp.matches('cp_expand');

-- missing values: a named rule takes default / when_missing as usual (v2 has
-- no vip: match_any); the statement decides: vip fails (v1 has vip 0) but
-- near holds, so or(vip, near) holds
SELECT mm.create_queue('cp_missing', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "vip", "type": "comparison", "attribute": "vip", "operator": "=", "reference": 1,
             "when_missing": "match_any"},
            {"name": "near", "type": "difference", "attribute": "skill", "max": 50},
            {"name": "either", "type": "compound", "statement": "or(vip, near)"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('cp_missing', '[{"id": "v1", "attributes": {"skill": 1000, "vip": 0}}]', '2026-01-01 00:00:00+00'),
  ('cp_missing', '[{"id": "v2", "attributes": {"skill": 1020}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('cp_missing', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('cp_missing');

-- validation, with the JSON path of the problem
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "a", "type": "comparison", "attribute": "m", "operator": "=", "reference": 1},
            {"name": "c", "type": "compound", "statement": "or(a, b)"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "a", "type": "comparison", "attribute": "m", "operator": "=", "reference": 1},
            {"name": "c", "type": "compound", "statement": "or(a"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "a", "type": "comparison", "attribute": "m", "operator": "=", "reference": 1},
            {"name": "c", "type": "compound", "statement": "not(a, a)"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "a", "type": "comparison", "attribute": "m", "operator": "=", "reference": 1},
            {"name": "c", "type": "compound", "statement": "a"},
            {"name": "d", "type": "compound", "statement": "not(c)"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "a", "type": "comparison", "attribute": "m", "operator": "=", "reference": 1},
            {"name": "c", "type": "compound", "statement": "a"},
            {"name": "d", "type": "compound", "statement": "not(a)"}]}');
SELECT pg_temp.config_error('{"teams": [{"name": "r", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
  "rules": [{"name": "t", "type": "team_difference", "attribute": "s", "max": 10},
            {"name": "c", "type": "compound", "statement": "not(t)"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "c", "type": "compound"}]}');
SELECT pg_temp.config_error('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "a", "type": "comparison", "attribute": "m", "operator": "=", "reference": 1},
            {"name": "c", "type": "compound", "statement": "a) junk"}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "a", "type": "comparison", "attribute": "m", "operator": "=", "reference": 1},
            {"name": "c", "type": "compound", "statement": "or(a, not(a))"}]}') -> 'rules';

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['cp_modes', 'cp_not', 'cp_expand', 'cp_missing']) q;

-- a rule that can turn off may not be negated: off counts as true, and
-- not(same) would then block every match of the queue for good
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rules": [
  {"name": "same", "type": "string_equality", "attribute": "m", "seconds_until_optional": 10},
  {"name": "c", "type": "compound", "statement": "not(same)"}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rules": [
  {"name": "lvl", "type": "comparison", "attribute": "lvl", "operator": "<=", "reference": 5,
   "expansion": {"every_seconds": 10, "steps": [8, null]}},
  {"name": "mode", "type": "string_equality", "attribute": "mode"},
  {"name": "c", "type": "compound", "statement": "or(not(lvl), mode)"}]}');
-- twice negated it relaxes like any rule: allowed
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rules": [
  {"name": "same", "type": "string_equality", "attribute": "m", "seconds_until_optional": 10},
  {"name": "c", "type": "compound", "statement": "not(not(same))"}]}') -> 'rules' -> 1 ->> 'statement' AS statement;
