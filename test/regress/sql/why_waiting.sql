-- Why is my ticket waiting: mm.rule_stats (per rule, the candidates it
-- passed and rejected in the last tick and since a reset) and
-- mm.explain_ticket (a searching ticket's rules now, when they widen, who
-- passes them, what blocks its nearest candidates, the estimated wait and
-- what it rests on).
SET timezone = 'UTC';
\set SHOW_CONTEXT never
-- explain_ticket's result with ticket ids as their first players' ids
CREATE FUNCTION pg_temp.explain(player text, now timestamptz) RETURNS jsonb LANGUAGE sql AS $$
	SELECT e - 'ticket_id' - 'nearest'
		   || jsonb_build_object('nearest', coalesce((
				SELECT jsonb_agg(jsonb_build_object('player', (SELECT t.players -> 0 ->> 'id' FROM mm.tickets t
															   WHERE t.id = (n ->> 'ticket_id')::bigint),
													'blocked_by', n -> 'blocked_by') ORDER BY o)
				  FROM jsonb_array_elements(e -> 'nearest') WITH ORDINALITY AS x(n, o)), '[]'))
	  FROM (SELECT mm.explain_ticket(t.id, now) AS e FROM mm.tickets t
			 WHERE t.players -> 0 ->> 'id' = player AND t.status = 'searching') s
$$;

SELECT mm.create_queue('ex_duel', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
             "expansion": {"every_seconds": 30, "delta": 100, "limit": 500}},
            {"name": "ping", "type": "latency", "max_ms": 60},
            {"name": "mode", "type": "string_equality", "attribute": "mode", "seconds_until_optional": 120},
            {"name": "fair", "type": "team_difference", "attribute": "skill", "max": 200}]}');
-- the queue's history: two players matched after 40 s and 60 s
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('ex_duel', '[{"id": "h1", "attributes": {"skill": 1800, "mode": "ctf"}, "latencies": {"eu": 20}}]', '2025-12-31 23:58:00+00'),
  ('ex_duel', '[{"id": "h2", "attributes": {"skill": 1810, "mode": "ctf"}, "latencies": {"eu": 20}}]', '2025-12-31 23:58:20+00');
SELECT mm.tick('ex_duel', '2025-12-31 23:59:00+00');
-- a waits: b is 250 apart, c plays another mode, d is in another region
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('ex_duel', '[{"id": "a", "attributes": {"skill": 1000, "mode": "ctf"}, "latencies": {"eu": 20}}]', '2026-01-01 00:00:00+00'),
  ('ex_duel', '[{"id": "b", "attributes": {"skill": 1250, "mode": "ctf"}, "latencies": {"eu": 30}}]', '2026-01-01 00:00:05+00'),
  ('ex_duel', '[{"id": "c", "attributes": {"skill": 1050, "mode": "dm"}, "latencies": {"eu": 20}}]', '2026-01-01 00:00:06+00'),
  ('ex_duel', '[{"id": "d", "attributes": {"skill": 1020, "mode": "ctf"}, "latencies": {"us": 20}}]', '2026-01-01 00:00:07+00');
SELECT mm.tick('ex_duel', '2026-01-01 00:00:10+00');
SELECT jsonb_pretty(pg_temp.explain('a', '2026-01-01 00:00:10+00') - 'estimate_reason');
-- Nobody fits a now (b, c and d are each blocked): its estimate is when its
-- rules have widened enough for one of them, b's skill (250 apart) at a's age
-- 60 s (threshold 300), in 50 s; c's mode turns optional only at 120 s.
SELECT e ->> 'estimate_reason' AS reason FROM pg_temp.explain('a', '2026-01-01 00:00:10+00') e;
-- 40 s later the skill window is 200 wide (step 1): b still 250 apart, 20 s to go.
SELECT e -> 'rules' -> 0 AS skill_rule, e -> 'estimated_wait_seconds' AS estimated_wait,
	   e ->> 'estimate_basis' AS basis, e ->> 'estimate_reason' AS reason
  FROM pg_temp.explain('a', '2026-01-01 00:00:40+00') e;
-- d plays in "us" only, and ping never widens: nobody fits it, now or later.
-- Its estimate is unknown, not 0 (the recent median, 50 s, is under its age).
SELECT e -> 'estimated_wait_seconds' AS estimated_wait, e ->> 'estimate_basis' AS basis,
	   e ->> 'estimate_reason' AS reason, e -> 'recent_median_wait_seconds' AS median
  FROM pg_temp.explain('d', '2026-01-01 00:01:30+00') e;

-- The rule counts: per anchor (oldest first, each against the younger
-- tickets left), the first pass over its candidates, each stopping at the
-- first rule it fails; the tickets outside the skill window count as skill's
-- failures.  The first tick (23:59): h1 took h2, every rule passed once.
-- This one: a (skill 100) passes c and d on skill, leaves out b (250 apart);
-- c fails mode, d fails ping.  b leaves out c and d (200 and 230 apart).
-- c passes d on skill, d fails ping.  Skill: 3 passed, 3 failed; ping: 1
-- passed (c), 2 failed (d twice); mode: 1 failed (c); no match was gathered
-- for the team rule fair to check.
SELECT rule, type, last_tick_at, last_passed, last_failed, last_pass_rate, total_passed, total_failed,
	   counting_since FROM mm.rule_stats WHERE queue = 'ex_duel' ORDER BY rule;
-- a second tick adds to the totals; the last tick's counts are its own
SELECT mm.tick('ex_duel', '2026-01-01 00:00:11+00');
SELECT rule, last_passed + last_failed AS last_checks, total_passed + total_failed AS total_checks
  FROM mm.rule_stats WHERE queue = 'ex_duel' ORDER BY rule;
-- a reset starts the totals from zero; a dropped rule leaves the view
SELECT mm.reset_rule_stats('ex_duel', '2026-01-01 00:00:12+00');
SELECT rule, total_passed, total_failed, counting_since FROM mm.rule_stats WHERE queue = 'ex_duel' ORDER BY rule;
SELECT mm.alter_queue('ex_duel', jsonb_set(config, '{rules}', (config -> 'rules') - 2))
  FROM mm.queues WHERE name = 'ex_duel';
SELECT rule FROM mm.rule_stats WHERE queue = 'ex_duel' ORDER BY rule;

-- Without the mode rule, c fits a now: the estimate is the recent median
-- (50 s) minus a's age (12 s).
SELECT e -> 'estimated_wait_seconds' AS estimated_wait, e ->> 'estimate_basis' AS basis,
	   e ->> 'estimate_reason' AS reason
  FROM pg_temp.explain('a', '2026-01-01 00:00:12+00') e;
-- A ticket without a value for a rule that stays on (a level the game
-- server never set): nobody passes it, whatever the others.
SELECT mm.create_queue('ex_trusted', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "lvl", "type": "difference", "source": "player", "attribute": "level", "max": 5}]}');
SELECT mm.set_player_attributes('ex_p2', '{"level": 10}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('ex_trusted', '[{"id": "ex_p1"}]', '2026-01-01 00:00:00+00'),
  ('ex_trusted', '[{"id": "ex_p2"}]', '2026-01-01 00:00:01+00');
SELECT e -> 'estimated_wait_seconds' AS estimated_wait, e ->> 'estimate_basis' AS basis,
	   e ->> 'estimate_reason' AS reason
  FROM pg_temp.explain('ex_p1', '2026-01-01 00:00:12+00') e;
SELECT mm.drop_queue('ex_trusted', force => true);
-- Fits now, but no history to estimate from (the queue's matches are older
-- than an hour): unknown.
SELECT e -> 'estimated_wait_seconds' AS estimated_wait, e ->> 'estimate_basis' AS basis,
	   e ->> 'estimate_reason' AS reason
  FROM pg_temp.explain('a', '2026-01-01 01:00:00+00') e;

-- errors
SELECT mm.explain_ticket(-1, '2026-01-01 00:00:10+00');
SELECT mm.explain_ticket(NULL);
SELECT mm.explain_ticket(id, 'infinity') FROM mm.tickets WHERE players -> 0 ->> 'id' = 'a';
\set VERBOSITY sqlstate
SELECT mm.explain_ticket(id, '2026-01-01 00:00:10+00') FROM mm.tickets WHERE players -> 0 ->> 'id' = 'h1';
\set VERBOSITY default
SELECT mm.reset_rule_stats('ex_nope');

-- a ticket as old as the timestamp range allows: the next change of its
-- rule is found in bounded time (the search never ended, and could not be
-- cancelled)
SELECT mm.create_queue('ex_ancient', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 10,
             "expansion": {"every_seconds": 10000, "delta": 1}}]}');
INSERT INTO mm.tickets (queue, players, created_at)
VALUES ('ex_ancient', '[{"id": "anc1", "attributes": {"skill": 1}}]', '4713-01-02 00:00:00+00 BC');
SET statement_timeout = '20s';
SELECT jsonb_typeof(e) AS explained, e -> 'estimated_wait_seconds' AS estimated_wait,
	   e ->> 'estimate_basis' AS basis
  FROM mm.tickets t, mm.explain_ticket(t.id, '294276-12-01 00:00:00+00') e WHERE t.queue = 'ex_ancient';
RESET statement_timeout;
SELECT mm.drop_queue('ex_ancient', force => true);

SELECT mm.drop_queue('ex_duel', force => true);
-- the dropped queue's counts go with it
SELECT count(*) AS rule_rows_left FROM mm.rule_evaluations WHERE queue = 'ex_duel';
