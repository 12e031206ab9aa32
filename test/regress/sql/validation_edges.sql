-- Arguments at the edges of what is valid: each is refused with a clear
-- error naming it, or handled, never a wrong result or a stuck queue.  The
-- sequences are restored at the end, so the tests after this one see the
-- ids they would without it.
CREATE TEMP TABLE ve_sequences AS
SELECT format('%I.%I', schemaname, sequencename) AS seq, last_value FROM pg_sequences WHERE schemaname = 'mm';
\set SHOW_CONTEXT never
-- (interval arithmetic follows the session's time zone: the dates below are UTC's)
SET TIME ZONE 'UTC';

-- NULL arguments are 22004, naming the argument
SELECT mm.create_queue('ve', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "acceptance_timeout_seconds": 30, "rating": {"system": "elo"},
  "penalties": {"cooldown_seconds": {"dodge": 600, "acceptance_timeout": 600}}}');
DO $$
DECLARE
	call text;
	state text;
	message text;
BEGIN
	FOREACH call IN ARRAY ARRAY[
		'SELECT mm.reset_rule_stats(NULL)',
		'SELECT mm.assign(''ve'', 1, NULL)',
		'SELECT mm.assign(''ve'', 1, ''host:1'', NULL)',
		'SELECT mm.requeue_match(''ve'', 1, NULL)',
		'SELECT mm.set_player_attributes(NULL, ''{}'')',
		'SELECT mm.create_tickets(''ve'', NULL)']
	LOOP
		BEGIN
			EXECUTE call;
			RAISE NOTICE '%: no error', call;
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
			RAISE NOTICE '%: % %', call, state, message;
		END;
	END LOOP;
END
$$;

-- a window of '1 mon -29 days' compares as positive (a month is 30 days to
-- an interval) but starts after now in March: refused, not an empty window
SELECT matches FROM mm.match_metrics('ve', '1 mon -29 days', '2026-03-01 00:00:00+00');
SELECT * FROM mm.purge_finished('1 mon -29 days', 10, false, '2026-03-01 00:00:00+00');
-- the same window in April ends before now: a window of a day and a bit
SELECT matches FROM mm.match_metrics('ve', '1 mon -29 days', '2026-05-01 00:00:00+00');

-- "fill" is no role's name: a ticket's "fill" stands for any role
SELECT mm.validate_queue_config('{"teams": [{"name": "red", "min": 2, "max": 2, "roles": {"fill": 1, "tank": 1}},
  {"name": "blue", "min": 2, "max": 2, "roles": {"fill": 1, "tank": 1}}]}');

-- a rating decay whose idle reaches before the earliest timestamp is
-- refused when it is scheduled, not at every run of its job
SELECT mm.schedule_rating_decay('ve', '200000 years');
-- so is a retention whose keep has a negative part: '1 mon -29 days' is
-- positive as intervals compare, but reaches past now in March
SELECT mm.schedule_retention('1 mon -29 days');
SELECT mm.schedule_retention('1 day -23 hours');

-- a score float8 cannot hold would make every fairness report of the window fail
SELECT mm.create_ticket('ve', '[{"id": "ve1"}]', '2026-01-01 00:00:00+00') > 0 AS created,
       mm.create_ticket('ve', '[{"id": "ve2"}]', '2026-01-01 00:00:01+00') > 0 AS created;
SELECT mm.tick('ve', '2026-01-01 00:00:02+00') AS matches;
SELECT id AS ve_match FROM mm.matches WHERE queue = 've' \gset
SELECT mm.accept_match(:ve_match, 've1', true, '2026-01-01 00:00:03+00'),
       mm.accept_match(:ve_match, 've2', true, '2026-01-01 00:00:04+00');
SELECT * FROM mm.report_result('ve', :ve_match, '{"red": 1, "blue": 2}', '2026-01-01 00:10:00+00',
                               '{"red": 1e309, "blue": 1}');
SELECT * FROM mm.report_result('ve', :ve_match, '{"red": 1, "blue": 2}', '2026-01-01 00:10:00+00',
                               '{"red": 1e-400, "blue": 1}');
-- a backfill cancelled at a time before the match formed is refused, as
-- every other lifecycle call does
SELECT mm.cancel_backfill('ve', :ve_match, '2025-12-31 00:00:00+00');

-- an offence at the end of time: its cooldown lasts for ever, and the tick
-- that expires the proposal is not stuck on the sum
SELECT mm.create_ticket('ve', '[{"id": "ve3"}]', '294276-12-31 23:58:00+00') > 0 AS created,
       mm.create_ticket('ve', '[{"id": "ve4"}]', '294276-12-31 23:58:01+00') > 0 AS created;
SELECT mm.tick('ve', '294276-12-31 23:58:02+00') AS matches;
SELECT mm.tick('ve', '294276-12-31 23:58:40+00') AS matches;
SELECT m.status, m.cancel_reason FROM mm.matches m WHERE m.queue = 've' AND m.id <> :ve_match;
SELECT player_id, offences, cooldown_until FROM mm.player_penalties WHERE queue = 've' ORDER BY player_id;

-- forgetting a player renames that id only: a free-for-all's ranks and a
-- match's properties keep another player's id that contains it
SELECT mm.create_queue('ve_ffa', '{"match_size": {"min": 3, "max": 3}, "rating": {"system": "elo"}}');
SELECT mm.create_ticket('ve_ffa', '[{"id": "fp1"}]', '2026-01-01 00:00:00+00') > 0 AS created,
       mm.create_ticket('ve_ffa', '[{"id": "x\"fp1"}]', '2026-01-01 00:00:01+00') > 0 AS created,
       mm.create_ticket('ve_ffa', '[{"id": "z"}]', '2026-01-01 00:00:02+00') > 0 AS created;
SELECT mm.tick('ve_ffa', '2026-01-01 00:00:03+00') AS matches;
SELECT id AS ffa_match FROM mm.matches WHERE queue = 've_ffa' \gset
SELECT mm.assign('ve_ffa', :ffa_match, 'host:1', '{"captain": "x\"fp1", "fp1": ["fp1", "fp10"]}') IS NOT NULL AS assigned;
SELECT count(*) AS rated FROM mm.report_result('ve_ffa', :ffa_match, '{"fp1": 1, "x\"fp1": 2, "z": 3}',
                                               '2026-01-01 00:20:00+00');
SELECT (mm.forget_player('fp1') -> 'anonymised' ->> 'match_results')::integer AS results_anonymised;
SELECT (SELECT array_agg(regexp_replace(k, '^forgotten-[0-9a-f-]+$', 'forgotten-<uuid>') ORDER BY k)
          FROM jsonb_object_keys(r.ranks) k) AS rank_keys
  FROM mm.match_results r WHERE r.match_id = :ffa_match;
SELECT m.properties ->> 'captain' AS captain, jsonb_array_length(m.properties -> (SELECT k FROM jsonb_object_keys(m.properties) k WHERE k LIKE 'forgotten-%')) AS renamed_list,
       m.properties -> (SELECT k FROM jsonb_object_keys(m.properties) k WHERE k LIKE 'forgotten-%') ->> 1 AS kept
  FROM mm.matches m WHERE m.id = :ffa_match;
SELECT mm.drop_queue('ve_ffa', force => true);

-- a number too small for a float8 in a ticket counts as 0 in the replay's
-- recorded figures, as in the metrics
SELECT mm.create_queue('ve_tiny', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
SELECT mm.create_ticket('ve_tiny', '[{"id": "tn1", "attributes": {"skill": 1e-400}}]', '2026-01-01 10:00:00+00') > 0 AS created,
       mm.create_ticket('ve_tiny', '[{"id": "tn2", "attributes": {"skill": 5}}]', '2026-01-01 10:00:05+00') > 0 AS created;
SELECT mm.tick('ve_tiny', '2026-01-01 10:00:10+00') AS matches;
SELECT mm.replay('ve_tiny', NULL, '2026-01-01 10:00:00+00', '2026-01-01 10:01:00+00') -> 'recorded' -> 'skill_spread_mean'
       AS recorded_skill_spread;
SELECT mm.drop_queue('ve_tiny', force => true);

-- mm.match_details reads skill_attribute as a dotted path, as the rules do
SELECT mm.create_queue('ve_path', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "stats.skill", "max": 100}]}');
SELECT mm.create_ticket('ve_path', '[{"id": "pa1", "attributes": {"stats": {"skill": 10}}}]', '2026-01-01 11:00:00+00') > 0 AS created,
       mm.create_ticket('ve_path', '[{"id": "pa2", "attributes": {"stats": {"skill": 30}}}]', '2026-01-01 11:00:01+00') > 0 AS created;
SELECT mm.tick('ve_path', '2026-01-01 11:00:02+00') AS matches;
SELECT skill_spread FROM mm.match_details('ve_path', '1 hour', '2026-01-01 11:30:00+00', 'stats.skill');
SELECT skill_spread FROM mm.match_details('ve_path', '1 hour', '2026-01-01 11:30:00+00', 'stats..skill');
SELECT mm.drop_queue('ve_path', force => true);

-- a player in two tickets of one call: mm.create_tickets names both places
-- in its batch (an INSERT or COPY: tickets.sql)
SELECT mm.create_queue('ve_dup', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.create_tickets('ve_dup', ARRAY['[{"id": "dup1"}]', '[{"id": "dup2"}, {"id": "dup1"}]']::jsonb[],
						 '2026-01-01 12:00:00+00');
-- a player already searching (the DETAIL, left out here, names its ticket)
SELECT mm.create_ticket('ve_dup', '[{"id": "dup1"}]', '2026-01-01 12:00:00+00') > 0 AS created;
\set VERBOSITY terse
SELECT mm.create_tickets('ve_dup', ARRAY['[{"id": "dup5"}]', '[{"id": "dup1"}]']::jsonb[], '2026-01-01 12:00:00+00');
\set VERBOSITY default
-- an invalid ticket of a batch gains no empty DETAIL or HINT
SELECT mm.create_tickets('ve_dup', ARRAY['[{"id": "dup6"}]', '[{"id": "dup7"}, {"id": "dup7"}]']::jsonb[],
						 '2026-01-01 12:00:00+00');
-- a repeat in a batch that is also invalid: the invalid ticket (or the
-- unknown queue) is reported, as without the repeat
SELECT mm.create_tickets('ve_none', ARRAY['[{"id": "dup8"}]', '[{"id": "dup8"}]']::jsonb[], '2026-01-01 12:00:00+00');
SELECT mm.create_tickets('ve_dup', ARRAY['[{"id": "dup9"}, {"id": "dup9"}]', '[{"id": "dup9"}]']::jsonb[],
						 '2026-01-01 12:00:00+00');
-- an UPDATE that sets two ended tickets of one player searching again
SELECT mm.create_ticket('ve_dup', '[{"id": "dup10"}]', '2026-01-01 12:00:00+00') AS first_ticket \gset
SELECT mm.cancel_ticket('ve_dup', :first_ticket);
SELECT mm.create_ticket('ve_dup', '[{"id": "dup10"}]', '2026-01-01 12:00:01+00') AS second_ticket \gset
SELECT mm.cancel_ticket('ve_dup', :second_ticket);
\set VERBOSITY terse
UPDATE mm.tickets SET status = 'searching' WHERE queue = 've_dup' AND id IN (:first_ticket, :second_ticket);
\set VERBOSITY default
SELECT count(*) AS tickets, count(*) FILTER (WHERE status = 'cancelled') AS cancelled
  FROM mm.tickets WHERE queue = 've_dup';
SELECT mm.drop_queue('ve_dup', force => true);

-- a rule's next widening past the last timestamp is null in the
-- explanation (it was computed past the timestamps), at an ordinary now
-- 3.5 days ahead; one more than a week ahead is not looked for (null)
SELECT mm.create_queue('ve_far', '{"match_size": {"min": 2, "max": 2}, "rules": [{"name": "skill",
  "type": "difference", "attribute": "skill", "max": 10,
  "expansion": {"every_seconds": 300000, "delta": 10, "limit": 100}},
  {"name": "level", "type": "difference", "attribute": "level", "max": 10,
  "expansion": {"every_seconds": 900000, "delta": 10, "limit": 100}}]}');
SELECT mm.create_ticket('ve_far', '[{"id": "far1", "attributes": {"skill": 1, "level": 1}}]',
						'294276-12-30 00:00:00+00') AS far_ticket \gset
SELECT r ->> 'name' AS rule, r -> 'next_widening_at' AS next_widening_at
  FROM jsonb_array_elements(mm.explain_ticket(:far_ticket, '294276-12-30 00:00:00+00') -> 'rules') r;
SELECT mm.create_ticket('ve_far', '[{"id": "far2", "attributes": {"skill": 1, "level": 1}}]',
						'2026-01-01 00:00:00+00') AS near_ticket \gset
SELECT r ->> 'name' AS rule, r -> 'next_widening_at' AS next_widening_at
  FROM jsonb_array_elements(mm.explain_ticket(:near_ticket, '2026-01-01 00:00:00+00') -> 'rules') r;
SELECT mm.drop_queue('ve_far', force => true);

SELECT mm.drop_queue('ve', force => true);
DELETE FROM mm.player_penalties WHERE queue = 've';
DELETE FROM mm.penalty_history WHERE queue = 've';
SELECT bool_and(CASE WHEN s.last_value IS NULL THEN setval(s.seq::regclass, 1, false) > 0
					 ELSE setval(s.seq::regclass, s.last_value) > 0 END) AS sequences_restored
  FROM ve_sequences s;
RESET TIME ZONE;
