-- Property test of the tick: 2,000 random tickets (fixed seed) in three queues
-- with different rule sets, created in waves and ticked at explicit `now`
-- values; then SQL checks, independent of the tick's code, that every
-- committed match obeys its queue's rules at the expansion step selected by
-- the age of its oldest ticket, no ticket is in two matches, team and match
-- sizes are within bounds, parties are never split and no ticket is lost.
-- Every check prints a count of violations (0) or a boolean, never raw rows.

SET timezone = 'UTC';

-- Three queues: teams with every team rule, a free-for-all, three teams.
SELECT mm.create_queue('prop_teams', '{
  "match_size": {"min": 4, "max": 6},
  "teams": [{"name": "red", "min": 2, "max": 3}, {"name": "blue", "min": 2, "max": 3}],
  "ticket_timeout_seconds": 240,
  "rules": [
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 100, "merge": "average",
     "expansion": {"every_seconds": 20, "delta": 50, "limit": 300}},
    {"name": "ping", "type": "latency", "max_ms": 80,
     "expansion": {"every_seconds": 30, "steps": [110, 150, null]}},
    {"name": "fair", "type": "team_difference", "attribute": "skill", "max": 150,
     "expansion": {"every_seconds": 45, "delta": 75, "limit": 300}},
    {"name": "even", "type": "team_size_balance", "max_difference": 0}]}');
SELECT mm.create_queue('prop_ffa', '{
  "match_size": {"min": 4, "max": 8},
  "ticket_timeout_seconds": 150,
  "rules": [
    {"name": "mode", "type": "string_equality", "attribute": "mode", "seconds_until_optional": 60},
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 250, "merge": "max",
     "expansion": {"every_seconds": 40, "steps": [400, null]}},
    {"name": "ping", "type": "latency", "max_ms": 100}]}');
SELECT mm.create_queue('prop_trio', '{
  "match_size": {"min": 6, "max": 9},
  "teams": [{"name": "a", "min": 2, "max": 3}, {"name": "b", "min": 2, "max": 3},
            {"name": "c", "min": 2, "max": 3}],
  "rules": [
    {"name": "mode", "type": "string_equality", "attribute": "mode"},
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 150, "merge": "min",
     "expansion": {"every_seconds": 30, "delta": 100, "limit": 600}},
    {"name": "fair", "type": "team_difference", "attribute": "skill", "max": 200,
     "seconds_until_optional": 90},
    {"name": "sizes", "type": "team_size_balance", "max_difference": 1}]}');

-- Random tickets: queue, party of 1 (75%), 2 (15%) or 3 (10%), one mode per
-- party, created at an integer second in [0, 180) after t0, in id order.
SELECT setseed(0.20260101);
CREATE TEMP TABLE prop_gen_random AS
SELECT n, random() AS r_queue, random() AS r_party, random() AS r_mode
  FROM generate_series(1, 2000) n ORDER BY n;
CREATE TEMP TABLE prop_gen_tickets AS
SELECT n,
       (ARRAY['prop_teams', 'prop_ffa', 'prop_trio'])[1 + floor(r_queue * 3)::int] AS queue,
       CASE WHEN r_party < 0.75 THEN 1 WHEN r_party < 0.90 THEN 2 ELSE 3 END AS party_size,
       (ARRAY['classic', 'ranked', 'arcade'])[1 + floor(r_mode * 3)::int] AS mode,
       timestamptz '2026-01-01 00:00:00+00' + (n * 9 / 100) * interval '1 second' AS created_at
  FROM prop_gen_random;
-- Players: skill N(1000, 400) and latencies N(70, 20) (at least 5 ms) to three
-- regions, by the Box-Muller transform.
CREATE TEMP TABLE prop_gen_players AS
SELECT n, k,
       round(1000 + 400 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::int AS skill,
       greatest(5, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))::int AS eu,
       greatest(5, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))::int AS us,
       greatest(5, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))::int AS asia
  FROM (SELECT t.n, k FROM prop_gen_tickets t, generate_series(1, t.party_size) k
         ORDER BY t.n, k) s
 ORDER BY n, k;
CREATE TEMP TABLE prop_gen AS
SELECT t.n, t.queue, t.created_at,
       jsonb_agg(jsonb_build_object(
         'id', 'prop-' || t.n || '-' || p.k,
         'attributes', jsonb_build_object('skill', p.skill, 'mode', t.mode),
         'latencies', jsonb_build_object('eu', p.eu, 'us', p.us, 'asia', p.asia))
         ORDER BY p.k) AS players,
       false AS created
  FROM prop_gen_tickets t JOIN prop_gen_players p USING (n)
 GROUP BY t.n, t.queue, t.created_at;

-- The data is what it claims to be (a broken generator proves nothing).
SELECT count(*) AS tickets, sum(party_size) AS players,
       count(*) FILTER (WHERE party_size > 1) AS parties,
       count(DISTINCT queue) AS queues
  FROM prop_gen_tickets;
SELECT round(avg(skill) / 100) * 100 AS skill_mean_100, round(stddev(skill) / 100) * 100 AS skill_sd_100,
       round(avg(eu) / 10) * 10 AS eu_mean_10, round(stddev(eu) / 10) * 10 AS eu_sd_10
  FROM prop_gen_players;

-- Waves: before each tick time, the tickets created by then are enqueued
-- (every tenth by a multi-row INSERT INTO mm.tickets, the rest by
-- mm.create_ticket), every 37th is cancelled, then each queue is ticked at
-- that `now`, one transaction per tick.
CREATE TEMP TABLE prop_ticks (now timestamptz, queue text, matches integer);
CREATE TEMP TABLE prop_cancels (n integer, cancelled boolean);
DO $$
DECLARE
	tick_at timestamptz;
	queue_name text;
BEGIN
	FOR tick_at IN
		SELECT timestamptz '2026-01-01 00:00:00+00' + s * interval '1 second'
		  FROM unnest(ARRAY[15, 30, 45, 60, 75, 90, 105, 120, 135, 150, 165, 180,
		                    210, 240, 300, 360, 480]) s ORDER BY s
	LOOP
		INSERT INTO mm.tickets (queue, players, created_at)
		SELECT g.queue, g.players, g.created_at FROM prop_gen g
		 WHERE NOT g.created AND g.created_at <= tick_at AND g.n % 10 = 0
		 ORDER BY g.n;
		PERFORM mm.create_ticket(g.queue, g.players, g.created_at) FROM prop_gen g
		 WHERE NOT g.created AND g.created_at <= tick_at AND g.n % 10 <> 0
		 ORDER BY g.n;
		UPDATE prop_gen SET created = true WHERE NOT created AND created_at <= tick_at;
		INSERT INTO prop_cancels
		SELECT g.n, mm.cancel_ticket(tp.ticket_id) FROM prop_gen g
		  JOIN mm.ticket_players tp ON tp.player_id = 'prop-' || g.n || '-1'
		 WHERE g.n % 37 = 0 AND g.created_at > tick_at - interval '15 seconds'
		   AND g.created_at <= tick_at
		 ORDER BY g.n;
		COMMIT;
		FOR queue_name IN SELECT unnest(ARRAY['prop_ffa', 'prop_teams', 'prop_trio']) ORDER BY 1
		LOOP
			INSERT INTO prop_ticks VALUES (tick_at, queue_name, mm.tick(queue_name, tick_at));
			COMMIT;
		END LOOP;
	END LOOP;
END
$$;

-- Every generated ticket was enqueued, and the cancels happened.
SELECT count(*) FILTER (WHERE created) AS enqueued,
       (SELECT count(*) FROM mm.tickets WHERE queue LIKE 'prop\_%') AS in_table,
       (SELECT count(*) FROM prop_cancels) AS cancel_calls,
       (SELECT count(*) FROM prop_cancels WHERE cancelled) > 0 AS some_cancelled
  FROM prop_gen;

-- Not vacuous: every queue formed many matches, and the ticks' return values
-- add up to the matches in the table.
SELECT q.queue, sum(q.matches) >= 20 AS many_matches,
       sum(q.matches) = (SELECT count(*) FROM mm.matches m WHERE m.queue = q.queue) AS returns_add_up
  FROM prop_ticks q GROUP BY q.queue ORDER BY q.queue;

-- The facts the checks read: each match with its queue's config and the age
-- (seconds) of its oldest ticket when it was formed; each matched player with
-- its ticket, team and attributes.
CREATE TEMP TABLE prop_m AS
SELECT m.id, m.queue, q.config, m.region, m.created_at, m.rule_steps,
       extract(epoch FROM m.created_at - min(t.created_at))::float8 AS age
  FROM mm.matches m JOIN mm.queues q ON q.name = m.queue
  JOIN mm.tickets t ON t.match_id = m.id
 WHERE m.queue LIKE 'prop\_%'
 GROUP BY m.id, m.queue, q.config;
CREATE TEMP TABLE prop_mp AS
SELECT mp.match_id, mp.ticket_id, mp.player_id, mp.team,
       (tp.attributes ->> 'skill')::float8 AS skill, tp.attributes ->> 'mode' AS mode, tp.latencies
  FROM mm.match_players mp
  JOIN mm.ticket_players tp ON tp.ticket_id = mp.ticket_id AND tp.player_id = mp.player_id
 WHERE mp.queue LIKE 'prop\_%';
CREATE INDEX ON prop_mp (match_id);
ANALYZE prop_m, prop_mp;

-- A rule's threshold at an age, recomputed from the config (NULL: the rule is
-- off).  Linear: base + delta per full every_seconds, capped at limit.
-- Custom: the base until one full period, then steps[k] from k+1 periods on
-- (the last step stays); a JSON null step switches the rule off.
-- seconds_until_optional: off from that age on.
CREATE FUNCTION pg_temp.prop_threshold(rule jsonb, base_key text, age float8)
RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
SELECT CASE
  WHEN rule ? 'seconds_until_optional' AND age >= (rule ->> 'seconds_until_optional')::float8
    THEN NULL
  WHEN NOT rule ? 'expansion' OR base_key IS NULL
    THEN (rule ->> base_key)::float8
  WHEN rule -> 'expansion' ? 'steps' THEN
    CASE WHEN floor(age / (rule #>> '{expansion,every_seconds}')::float8) < 1
         THEN (rule ->> base_key)::float8
         ELSE (rule #> '{expansion,steps}' ->> (least(
                 floor(age / (rule #>> '{expansion,every_seconds}')::float8)::int,
                 jsonb_array_length(rule #> '{expansion,steps}')) - 1))::float8
    END
  ELSE least((rule ->> base_key)::float8
             + (rule #>> '{expansion,delta}')::float8
               * floor(age / (rule #>> '{expansion,every_seconds}')::float8),
             (rule #>> '{expansion,limit}')::float8)
END
$$;
-- string_equality has no threshold: 0 stands for "on".
CREATE TEMP TABLE prop_rules AS
SELECT m.id AS match_id, r.rule ->> 'name' AS name, r.rule ->> 'type' AS type, r.rule,
       pg_temp.prop_threshold(r.rule,
         CASE r.rule ->> 'type' WHEN 'difference' THEN 'max' WHEN 'team_difference' THEN 'max'
              WHEN 'latency' THEN 'max_ms' WHEN 'team_size_balance' THEN 'max_difference'
              ELSE 'no_such_key' END, m.age) AS threshold,
       (r.rule ->> 'type') = 'string_equality'
         AND NOT (r.rule ? 'seconds_until_optional'
                  AND m.age >= (r.rule ->> 'seconds_until_optional')::float8) AS equality_on
  FROM prop_m m, jsonb_array_elements(m.config -> 'rules') r(rule);
UPDATE prop_rules SET threshold = 0 WHERE type = 'string_equality' AND equality_on;
ANALYZE prop_rules;

-- The recomputation agrees with the queue's own threshold function
-- (mm.rule_threshold, the C code the tick uses) on every match and rule.
SELECT count(*) AS recomputation_disagreeing FROM prop_rules r JOIN prop_m m ON m.id = r.match_id,
       LATERAL mm.rule_threshold(m.config, r.name, m.age) c
 WHERE CASE WHEN r.threshold IS NULL THEN NOT coalesce((c ->> 'off')::boolean, false)
            WHEN r.type = 'string_equality' THEN coalesce((c ->> 'off')::boolean, false)
            ELSE coalesce((c ->> 'off')::boolean, false)
                 OR abs((c ->> 'threshold')::float8 - r.threshold) > 1e-9 END;

-- The expansion steps were really exercised: some matches were formed with
-- a widened threshold, and some with a rule switched off.
SELECT count(*) FILTER (WHERE type = 'difference' AND threshold > (rule ->> 'max')::float8) > 0
         AS some_widened_skill,
       count(*) FILTER (WHERE type = 'latency' AND threshold > (rule ->> 'max_ms')::float8) > 0
         AS some_widened_latency,
       count(*) FILTER (WHERE threshold IS NULL) > 0 AS some_rule_off
  FROM prop_rules;

-- Rule violations per rule type (each must be 0).
CREATE TEMP VIEW prop_rule_violations AS
-- difference: the spread of the tickets' merged values within the threshold.
SELECT 'difference' AS rule_type, count(*) AS violations FROM (
  SELECT r.match_id FROM prop_rules r
    JOIN (SELECT match_id, ticket_id, avg(skill) AS average, min(skill) AS lowest,
                 max(skill) AS highest
            FROM prop_mp GROUP BY match_id, ticket_id) v ON v.match_id = r.match_id
   WHERE r.type = 'difference' AND r.threshold IS NOT NULL
   GROUP BY r.match_id, r.name, r.threshold, r.rule
  HAVING max(CASE r.rule ->> 'merge' WHEN 'min' THEN v.lowest WHEN 'max' THEN v.highest
                  ELSE v.average END)
       - min(CASE r.rule ->> 'merge' WHEN 'min' THEN v.lowest WHEN 'max' THEN v.highest
                  ELSE v.average END) > r.threshold + 1e-9) x
UNION ALL
-- latency: a region is chosen, every player's latency there within the
-- threshold, and no region has a lower worst latency.
SELECT 'latency', count(*) FROM (
  SELECT r.match_id FROM prop_rules r JOIN prop_m m ON m.id = r.match_id
   WHERE r.type = 'latency' AND r.threshold IS NOT NULL
     AND (m.region IS NULL
          OR EXISTS (SELECT 1 FROM prop_mp p WHERE p.match_id = m.id
                      AND coalesce((p.latencies ->> m.region)::float8, 'Infinity') > r.threshold)
          OR (SELECT max((p.latencies ->> m.region)::float8) FROM prop_mp p WHERE p.match_id = m.id)
             > (SELECT min(worst) FROM (
                  SELECT max((p.latencies ->> reg)::float8) AS worst
                    FROM prop_mp p, unnest(ARRAY['eu', 'us', 'asia']) reg
                   WHERE p.match_id = m.id GROUP BY reg) w))) x
UNION ALL
-- string_equality: one value among all players while the rule is on.
SELECT 'string_equality', count(*) FROM (
  SELECT r.match_id FROM prop_rules r JOIN prop_mp p ON p.match_id = r.match_id
   WHERE r.type = 'string_equality' AND r.equality_on
   GROUP BY r.match_id, r.name HAVING count(DISTINCT p.mode) > 1) x
UNION ALL
-- team_difference: the team averages within the threshold.
SELECT 'team_difference', count(*) FROM (
  SELECT r.match_id FROM prop_rules r
    JOIN (SELECT match_id, team, avg(skill) AS average FROM prop_mp GROUP BY match_id, team) t
      ON t.match_id = r.match_id
   WHERE r.type = 'team_difference' AND r.threshold IS NOT NULL
   GROUP BY r.match_id, r.name, r.threshold
  HAVING max(t.average) - min(t.average) > r.threshold + 1e-9) x
UNION ALL
-- team_size_balance: team sizes (including empty teams) within the threshold.
SELECT 'team_size_balance', count(*) FROM (
  SELECT r.match_id FROM prop_rules r JOIN prop_m m ON m.id = r.match_id,
         jsonb_array_elements(m.config -> 'teams') tdef(def)
   WHERE r.type = 'team_size_balance' AND r.threshold IS NOT NULL
   GROUP BY r.match_id, r.name, r.threshold
  HAVING max((SELECT count(*) FROM prop_mp p WHERE p.match_id = r.match_id AND p.team = tdef.def ->> 'name'))
       - min((SELECT count(*) FROM prop_mp p WHERE p.match_id = r.match_id AND p.team = tdef.def ->> 'name'))
       > r.threshold) x;
SELECT * FROM prop_rule_violations ORDER BY 1;

-- The checks are not blind: plant violations in the facts (a copy of the
-- tick's output), each in a different match, and they are found: a skill
-- outlier in a free-for-all (difference), a stray mode (string_equality), a
-- 9999 ms latency in the match's region (latency), a skill outlier in a
-- three-team match (difference and team_difference), a player moved to the
-- other team (team_size_balance).
BEGIN;
UPDATE prop_mp SET skill = skill + 5000
 WHERE player_id = (SELECT min(p.player_id) FROM prop_mp p
                     WHERE p.match_id = (SELECT min(r.match_id) FROM prop_rules r JOIN prop_m m ON m.id = r.match_id
                                          WHERE m.queue = 'prop_ffa' AND r.name = 'skill' AND r.threshold IS NOT NULL));
UPDATE prop_mp SET mode = 'planted'
 WHERE player_id = (SELECT min(p.player_id) FROM prop_mp p
                     WHERE p.match_id = (SELECT min(m.id) FROM prop_m m WHERE m.queue = 'prop_trio'));
UPDATE prop_mp SET latencies = latencies || jsonb_build_object((SELECT region FROM prop_m WHERE id = match_id), 9999)
 WHERE player_id = (SELECT min(p.player_id) FROM prop_mp p
                     WHERE p.match_id = (SELECT min(r.match_id) FROM prop_rules r JOIN prop_m m ON m.id = r.match_id
                                          WHERE m.queue = 'prop_teams' AND r.name = 'ping' AND r.threshold IS NOT NULL));
UPDATE prop_mp SET skill = skill + 5000
 WHERE player_id = (SELECT min(p.player_id) FROM prop_mp p
                     WHERE p.match_id = (SELECT max(r.match_id) FROM prop_rules r JOIN prop_m m ON m.id = r.match_id
                                          WHERE m.queue = 'prop_trio' AND r.name = 'fair' AND r.threshold IS NOT NULL));
UPDATE prop_mp SET team = CASE team WHEN 'red' THEN 'blue' ELSE 'red' END
 WHERE player_id = (SELECT min(p.player_id) FROM prop_mp p
                     WHERE p.match_id = (SELECT max(m.id) FROM prop_m m WHERE m.queue = 'prop_teams'));
SELECT rule_type, violations > 0 AS found FROM prop_rule_violations ORDER BY 1;
ROLLBACK;
-- and a matched ticket cannot be matched again: it left the active
-- partition, which is all the tick reads
SELECT count(*) AS matched_still_active FROM mm.tickets_active t
 WHERE t.queue LIKE 'prop\_%' AND EXISTS (SELECT 1 FROM mm.match_players mp WHERE mp.ticket_id = t.id);

-- The tick's own record of the steps (mm.matches.rule_steps) agrees with the
-- recomputation, for every rule it records.
SELECT count(*) FILTER (WHERE m.rule_steps ? r.name) > 0 AS rule_steps_recorded,
       count(*) FILTER (WHERE m.rule_steps ? r.name AND NOT (
         CASE WHEN r.threshold IS NULL
              THEN coalesce((m.rule_steps -> r.name ->> 'off')::boolean, false)
              WHEN r.type = 'string_equality'
              THEN NOT coalesce((m.rule_steps -> r.name ->> 'off')::boolean, false)
              ELSE abs((m.rule_steps -> r.name ->> 'threshold')::float8 - r.threshold) < 1e-9
         END)) AS rule_steps_disagreeing
  FROM prop_rules r JOIN prop_m m ON m.id = r.match_id;

-- Sizes and structure (each must be 0).
SELECT 'match size out of bounds' AS problem, count(*) AS matches FROM prop_m m
 WHERE (SELECT count(*) FROM prop_mp p WHERE p.match_id = m.id)
       NOT BETWEEN (m.config #>> '{match_size,min}')::int AND (m.config #>> '{match_size,max}')::int
UNION ALL
SELECT 'team size out of bounds', count(DISTINCT m.id) FROM prop_m m,
       jsonb_array_elements(coalesce(m.config -> 'teams', '[]')) tdef(def)
 WHERE (SELECT count(*) FROM prop_mp p WHERE p.match_id = m.id AND p.team = tdef.def ->> 'name')
       NOT BETWEEN (tdef.def ->> 'min')::int AND (tdef.def ->> 'max')::int
UNION ALL
SELECT 'player on a team the queue lacks', count(DISTINCT m.id) FROM prop_m m JOIN prop_mp p ON p.match_id = m.id
 WHERE m.config ? 'teams'
   AND NOT (m.config -> 'teams') @> jsonb_build_array(jsonb_build_object('name', p.team))
UNION ALL
SELECT 'party split across teams', count(*) FROM (
  SELECT 1 FROM prop_mp GROUP BY match_id, ticket_id HAVING count(DISTINCT coalesce(team, '')) > 1) x
UNION ALL
SELECT 'ticket in two matches', count(*) FROM (
  SELECT 1 FROM mm.match_players WHERE queue LIKE 'prop\_%'
   GROUP BY ticket_id HAVING count(DISTINCT match_id) > 1) x
UNION ALL
SELECT 'player in two matches', count(*) FROM (
  SELECT 1 FROM mm.match_players WHERE queue LIKE 'prop\_%'
   GROUP BY player_id HAVING count(*) > 1) x
UNION ALL
SELECT 'match formed at no tick time', count(*) FROM prop_m m
 WHERE NOT EXISTS (SELECT 1 FROM prop_ticks k WHERE k.now = m.created_at AND k.queue = m.queue)
UNION ALL
SELECT 'match with a ticket not yet created', count(*) FROM prop_m m WHERE m.age < 0
ORDER BY 1;

-- No ticket lost (each must be 0): every ticket is searching, matched,
-- timed_out or cancelled with rows that agree.
SELECT 'bad status' AS problem, count(*) AS tickets FROM mm.tickets
 WHERE queue LIKE 'prop\_%' AND status NOT IN ('searching', 'matched', 'timed_out', 'cancelled')
UNION ALL
SELECT 'matched without its match', count(*) FROM mm.tickets t
 WHERE t.queue LIKE 'prop\_%' AND t.status = 'matched'
   AND (t.matched_at IS NULL
        OR NOT EXISTS (SELECT 1 FROM mm.matches m WHERE m.id = t.match_id AND m.queue = t.queue
                         AND m.created_at = t.matched_at))
UNION ALL
SELECT 'matched with players missing from the match', count(DISTINCT t.id) FROM mm.tickets t
  JOIN mm.ticket_players tp ON tp.ticket_id = t.id
 WHERE t.queue LIKE 'prop\_%' AND t.status = 'matched'
   AND NOT EXISTS (SELECT 1 FROM mm.match_players mp WHERE mp.match_id = t.match_id
                     AND mp.ticket_id = t.id AND mp.player_id = tp.player_id)
UNION ALL
SELECT 'unmatched with match rows', count(*) FROM mm.tickets t
 WHERE t.queue LIKE 'prop\_%' AND t.status <> 'matched'
   AND (t.match_id IS NOT NULL OR EXISTS (SELECT 1 FROM mm.match_players mp WHERE mp.ticket_id = t.id))
UNION ALL
SELECT 'match row of a ticket not in that match', count(*) FROM mm.match_players mp
  LEFT JOIN mm.tickets t ON t.id = mp.ticket_id
 WHERE mp.queue LIKE 'prop\_%' AND (t.id IS NULL OR t.match_id IS DISTINCT FROM mp.match_id)
UNION ALL
-- held: the players of searching tickets and of matched ones (their matches
-- are ready, live until completed)
SELECT 'active players out of step', count(*) FROM (
  (SELECT tp.ticket_id, tp.player_id FROM mm.ticket_players tp JOIN mm.tickets t ON t.id = tp.ticket_id
    WHERE t.queue LIKE 'prop\_%' AND t.status IN ('searching', 'matched')
   EXCEPT SELECT ticket_id, player_id FROM mm.active_players WHERE queue LIKE 'prop\_%')
  UNION ALL
  (SELECT ticket_id, player_id FROM mm.active_players WHERE queue LIKE 'prop\_%'
   EXCEPT SELECT tp.ticket_id, tp.player_id FROM mm.ticket_players tp JOIN mm.tickets t ON t.id = tp.ticket_id
    WHERE t.queue LIKE 'prop\_%' AND t.status IN ('searching', 'matched'))) d
UNION ALL
SELECT 'players lost from tickets', count(*) FROM prop_gen_players g
 WHERE NOT EXISTS (SELECT 1 FROM mm.ticket_players tp WHERE tp.player_id = 'prop-' || g.n || '-' || g.k)
UNION ALL
SELECT 'searching past its timeout', count(*) FROM mm.tickets t JOIN mm.queues q ON q.name = t.queue
 WHERE t.queue LIKE 'prop\_%' AND t.status = 'searching' AND q.config ? 'ticket_timeout_seconds'
   AND t.created_at + (q.config ->> 'ticket_timeout_seconds')::float8 * interval '1 second'
       <= timestamptz '2026-01-01 00:08:00+00'
UNION ALL
SELECT 'timed out too early, or not by a tick', count(*) FROM mm.tickets t JOIN mm.queues q ON q.name = t.queue
 WHERE t.queue LIKE 'prop\_%' AND t.status = 'timed_out'
   AND (NOT q.config ? 'ticket_timeout_seconds'
        OR t.updated_at - t.created_at
           < (q.config ->> 'ticket_timeout_seconds')::float8 * interval '1 second'
        OR NOT EXISTS (SELECT 1 FROM prop_ticks k WHERE k.queue = t.queue AND k.now = t.updated_at))
UNION ALL
SELECT 'cancel that returned true but did not cancel', count(*) FROM prop_cancels c
  JOIN mm.ticket_players tp ON tp.player_id = 'prop-' || c.n || '-1'
  JOIN mm.tickets t ON t.id = tp.ticket_id
 WHERE c.cancelled AND t.status <> 'cancelled'
ORDER BY 1;

-- Every queue matched tickets; cancels and timeouts happened.
SELECT bool_and(matched > 0) AS every_queue_matched, sum(cancelled) > 0 AS some_cancelled,
       sum(timed_out) > 0 AS some_timed_out
  FROM (SELECT queue, count(*) FILTER (WHERE status = 'matched') AS matched,
               count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
               count(*) FILTER (WHERE status = 'timed_out') AS timed_out
          FROM mm.tickets WHERE queue LIKE 'prop\_%' GROUP BY queue) q;

-- Clean up (the regression database is shared by every file).
SELECT mm.drop_queue(name, force => true) FROM unnest(ARRAY['prop_ffa', 'prop_teams', 'prop_trio']) name;
DELETE FROM mm.players WHERE id LIKE 'prop-%';
SELECT count(*) AS left_over FROM mm.tickets WHERE queue LIKE 'prop\_%';
