-- Custom match functions: a queue's "match_function" proposes matches, the
-- evaluator checks each proposal (shape, tickets still searching and locked
-- by this tick, teams and sizes, the queue's rules) and commits the best
-- non-overlapping ones by score; rejected proposals are counted by reason.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
CREATE SCHEMA mf_game;

-- Proposes every pair of consecutive tickets (red: the older), scored by
-- closeness in skill, plus a set of broken proposals: a ticket that is not
-- searching, malformed rows, a team too large, a team missing.
CREATE FUNCTION mf_game.pairs(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
	t jsonb;
	prev jsonb;
	ids jsonb := '[]';
BEGIN
	FOR t IN SELECT value FROM jsonb_array_elements(tickets) LOOP
		ids := ids || (t -> 'id');
		IF prev IS NOT NULL THEN
			RETURN NEXT jsonb_build_object(
				'tickets', jsonb_build_array(prev -> 'id', t -> 'id'),
				'teams', jsonb_build_object('red', jsonb_build_array(prev -> 'id'),
											'blue', jsonb_build_array(t -> 'id')),
				'score', 1000 - abs((prev #>> '{players,0,attributes,skill}')::int
									- (t #>> '{players,0,attributes,skill}')::int),
				'properties', jsonb_build_object('pair', (prev #>> '{players,0,id}') || '+' || (t #>> '{players,0,id}')));
		END IF;
		prev := t;
	END LOOP;
	-- stale: a ticket id the tick did not pass (cancelled, or never existed)
	RETURN NEXT jsonb_build_object('teams', jsonb_build_object('red', '[-1]'::jsonb, 'blue', jsonb_build_array(ids -> 0)), 'score', 5000);
	-- malformed: not an object, no teams, a string id, a NULL row
	RETURN NEXT '"junk"';
	RETURN NEXT jsonb_build_object('tickets', ids, 'score', 5000);
	RETURN NEXT jsonb_build_object('teams', jsonb_build_object('red', '["x"]'::jsonb, 'blue', jsonb_build_array(ids -> 1)), 'score', 5000);
	RETURN NEXT NULL;
	-- teams: red too large, blue missing
	RETURN NEXT jsonb_build_object('teams', jsonb_build_object('red', jsonb_build_array(ids -> 0),
																'blue', jsonb_build_array(ids -> 1, ids -> 2)), 'score', 5000);
	RETURN NEXT jsonb_build_object('teams', jsonb_build_object('red', jsonb_build_array(ids -> 0)), 'score', 5000);
	-- teams: one ticket on both teams
	RETURN NEXT jsonb_build_object('teams', jsonb_build_object('red', jsonb_build_array(ids -> 0),
																'blue', jsonb_build_array(ids -> 0)), 'score', 5000);
END
$$;
-- A function with the wrong return type, for the config check.
CREATE FUNCTION mf_game.wrong(queue text, tickets jsonb, now timestamptz) RETURNS jsonb
LANGUAGE sql AS $$ SELECT '{}'::jsonb $$;

-- the config names a schema-qualified function of the right signature
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "match_function": "pairs"}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.nope"}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.wrong"}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "match_function": 7}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rules_apply_to_proposals": "no"}');
-- the normalised config keeps the keys read outside the search; reading the
-- catalog, the validation is STABLE
SELECT c -> 'match_function' AS match_function, c -> 'rules_apply_to_proposals' AS rules_apply,
	   c -> 'auto_backfill' AS auto_backfill, c -> 'rating' AS rating
  FROM mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.pairs",
	"rules_apply_to_proposals": false, "auto_backfill": true,
	"rating": {"system": "elo", "boost": true, "leavers_lose": false}}') c;
SELECT provolatile FROM pg_proc WHERE oid = 'mm.validate_queue_config(jsonb)'::regprocedure;

SELECT mm.create_queue('mf_duel', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "match_function": "mf_game.pairs",
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 300}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_duel', '[{"id": "a", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('mf_duel', '[{"id": "b", "attributes": {"skill": 1500}}]', '2026-01-01 00:00:01+00'),
  ('mf_duel', '[{"id": "c", "attributes": {"skill": 1510}}]', '2026-01-01 00:00:02+00'),
  ('mf_duel', '[{"id": "d", "attributes": {"skill": 1600}}]', '2026-01-01 00:00:03+00'),
  ('mf_duel', '[{"id": "e", "attributes": {"skill": 3000}}]', '2026-01-01 00:00:04+00');
-- pairs a-b (score 500, skill gap 500 > 300: the rule rejects it), b-c
-- (990), c-d (910, overlaps b-c), d-e (-400, gap 1400: rejected by the
-- rule); 4 malformed rows, 1 stale, 3 that break the teams
SELECT mm.tick('mf_duel', '2026-01-01 00:00:05+00');
SELECT queue, proposals, accepted, rejected_malformed, rejected_stale, rejected_teams,
	   rejected_rules, rejected_overlap FROM mm.match_function_stats();
SELECT m.status, m.properties, string_agg(mp.player_id || '/' || mp.team, ',' ORDER BY mp.player_id) AS players
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE m.queue = 'mf_duel' GROUP BY m.id, m.queue ORDER BY m.id;
SELECT t.players -> 0 ->> 'id' AS player, t.status FROM mm.tickets t WHERE t.queue = 'mf_duel' ORDER BY t.id;

-- without the queue's rules: the proposals are checked for shape and
-- teams only; a-d (gap 600) and then nothing else (e alone)
SELECT mm.alter_queue('mf_duel', config || '{"rules_apply_to_proposals": false}')
  FROM mm.queues WHERE name = 'mf_duel';
SELECT mm.tick('mf_duel', '2026-01-01 00:00:06+00');
SELECT queue, proposals, accepted, rejected_rules, rejected_overlap FROM mm.match_function_stats();
SELECT string_agg(mp.player_id || '/' || mp.team, ',' ORDER BY mp.player_id) AS players
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE m.queue = 'mf_duel' GROUP BY m.id, m.queue ORDER BY m.id;

-- a function that fails fails the tick of its queue (mm.tick(NULL) goes on
-- with the other queues and warns)
CREATE OR REPLACE FUNCTION mf_game.pairs(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the match function broke'; END $$;
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_duel', '[{"id": "f", "attributes": {"skill": 3000}}]', '2026-01-01 00:00:07+00');
SELECT mm.tick('mf_duel', '2026-01-01 00:00:08+00');
-- nothing of the failed tick stays in the stats
SELECT (SELECT count(*) FROM mm.match_function_stats()) AS proposal_stats,
	   (SELECT count(*) FROM mm.last_tick_stats()) AS tick_stats;
SELECT mm.tick(NULL, '2026-01-01 00:00:08+00') >= 0 AS all_queues_ticked;

SELECT mm.drop_queue('mf_duel', force => true);

-- Proposals scripted in a table: ticket positions (in the tickets argument,
-- oldest first) stand for the tickets' ids.
CREATE TABLE mf_game.script (queue text, ord int, proposal jsonb);
CREATE FUNCTION mf_game.scripted(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE sql SET search_path = pg_catalog AS $$
  SELECT s.proposal
	  || CASE WHEN s.proposal ? 'tickets' THEN jsonb_build_object('tickets',
			(SELECT jsonb_agg(tickets -> x::int -> 'id') FROM jsonb_array_elements_text(s.proposal -> 'tickets') x))
		 ELSE '{}' END
	  || CASE WHEN s.proposal ? 'teams' THEN jsonb_build_object('teams',
			(SELECT jsonb_object_agg(tm.key, (SELECT jsonb_agg(tickets -> x::int -> 'id')
											  FROM jsonb_array_elements_text(tm.value) x))
			   FROM jsonb_each(s.proposal -> 'teams') tm))
		 ELSE '{}' END
	FROM mf_game.script s WHERE s.queue = scripted.queue ORDER BY s.ord
$$;

-- Every ticket of a proposal is checked against every other: x, y, x breaks
-- string_equality although the last x equals the first.  A score beyond a
-- double's range is malformed (the other proposals still count).
SELECT mm.create_queue('mf_ffa', '{"match_size": {"min": 3, "max": 3}, "match_function": "mf_game.scripted",
  "rules": [{"name": "mode", "type": "string_equality", "attribute": "mode"}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_ffa', '[{"id": "x1", "attributes": {"mode": "x"}}]', '2026-01-01 00:01:00+00'),
  ('mf_ffa', '[{"id": "y1", "attributes": {"mode": "y"}}]', '2026-01-01 00:01:01+00'),
  ('mf_ffa', '[{"id": "x2", "attributes": {"mode": "x"}}]', '2026-01-01 00:01:02+00'),
  ('mf_ffa', '[{"id": "x3", "attributes": {"mode": "x"}}]', '2026-01-01 00:01:03+00');
INSERT INTO mf_game.script VALUES
  ('mf_ffa', 1, '{"tickets": [0, 1, 2], "score": 100}'),
  ('mf_ffa', 2, '{"tickets": [0, 2, 3], "score": 1e400}'),
  ('mf_ffa', 3, '{"tickets": [0, 2, 3], "score": 50}');
SELECT mm.tick('mf_ffa', '2026-01-01 00:01:04+00');
SELECT queue, proposals, accepted, rejected_malformed, rejected_rules FROM mm.match_function_stats();
SELECT string_agg(mp.player_id, ',' ORDER BY mp.player_id) AS players
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE m.queue = 'mf_ffa' GROUP BY m.id, m.queue ORDER BY m.id;

-- "tickets" next to "teams" must list the same tickets, each once
SELECT mm.create_queue('mf_pair', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "match_function": "mf_game.scripted"}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_pair', '[{"id": "pa"}]', '2026-01-01 00:01:00+00'),
  ('mf_pair', '[{"id": "pb"}]', '2026-01-01 00:01:01+00');
INSERT INTO mf_game.script VALUES
  ('mf_pair', 1, '{"teams": {"red": [0], "blue": [1]}, "tickets": [0, 0], "score": 100}'),
  ('mf_pair', 2, '{"teams": {"red": [0], "blue": [1]}, "tickets": [1, 0], "score": 50}');
SELECT mm.tick('mf_pair', '2026-01-01 00:01:04+00');
SELECT queue, proposals, accepted, rejected_teams FROM mm.match_function_stats();

-- a match function cannot tick (it crashed the backend) nor change the
-- tickets it was given
CREATE FUNCTION mf_game.ticks(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	PERFORM mm.tick(queue, now);
	RETURN NEXT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'));
END $$;
CREATE FUNCTION mf_game.cancels(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
	PERFORM mm.cancel_ticket((tickets -> 0 ->> 'id')::bigint);
	RETURN NEXT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'));
END $$;
SELECT mm.create_queue('mf_nested', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.ticks"}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_nested', '[{"id": "n1"}]', '2026-01-01 00:01:00+00'),
  ('mf_nested', '[{"id": "n2"}]', '2026-01-01 00:01:01+00');
SELECT mm.tick('mf_nested', '2026-01-01 00:01:04+00');
SELECT mm.tick(NULL, '2026-01-01 00:01:04+00') >= 0 AS all_queues_ticked;
SELECT mm.alter_queue('mf_nested', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.cancels"}');
\set VERBOSITY terse
SELECT mm.tick('mf_nested', '2026-01-01 00:01:05+00');
-- nothing of a queue's rolled-back tick stays in the stats
SELECT mm.tick(NULL, '2026-01-01 00:01:05+00') >= 0 AS all_queues_ticked;
\set VERBOSITY default
SELECT count(*) AS stats_rows FROM mm.match_function_stats() WHERE queue = 'mf_nested';
SELECT count(*) AS searching FROM mm.tickets WHERE queue = 'mf_nested' AND status = 'searching';

-- a name that is not one: 22023 at match_function (not 42602)
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game..x"}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "match_function": "\"mf_game"}');

-- A match function runs as the role that named it, never as whoever ticks:
-- an admin's function ticked by a superuser cannot make anyone superuser.
CREATE ROLE mf_admin LOGIN IN ROLE mm_admin;
CREATE ROLE mf_eve LOGIN;
CREATE SCHEMA mf_owned AUTHORIZATION mf_admin;
SET ROLE mf_admin;
CREATE TABLE mf_owned.calls (run_as text, superuser boolean, search_path text, escalation text);
-- no SET search_path: the tick gives it pg_catalog, pg_temp
CREATE FUNCTION mf_owned.escalate(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE plpgsql AS $$
DECLARE
	outcome text := 'done';
BEGIN
	BEGIN
		EXECUTE 'ALTER ROLE mf_eve SUPERUSER';
	EXCEPTION WHEN insufficient_privilege THEN
		outcome := 'denied (' || SQLSTATE || ')';
	END;
	INSERT INTO mf_owned.calls
	SELECT current_user, r.rolsuper, current_setting('search_path'), outcome
	  FROM pg_roles r WHERE r.rolname = current_user;
	RETURN QUERY SELECT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'))
	 WHERE jsonb_array_length(tickets) >= 2;
END $$;
SELECT mm.create_queue('mf_author', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_owned.escalate"}');
SELECT match_function_role FROM mm.queues WHERE name = 'mf_author';
-- naming another role to run as is ignored: the writer is who it runs as
UPDATE mm.queues SET match_function_role = 'mf_eve' WHERE name = 'mf_author';
UPDATE mm.queues SET match_function_role = session_user WHERE name = 'mf_author';
SELECT match_function_role FROM mm.queues WHERE name = 'mf_author';
-- a function in a temporary schema is refused
CREATE FUNCTION pg_temp.mf_tmp(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE sql AS $$ SELECT NULL::jsonb WHERE false $$;
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "match_function": "pg_temp.mf_tmp"}');
SELECT mm.alter_queue('mf_author', '{"match_size": {"min": 2, "max": 2}, "match_function": "pg_temp.mf_tmp"}');
DROP FUNCTION pg_temp.mf_tmp(text, jsonb, timestamptz);
RESET ROLE;
-- the superuser ticks: the function runs as mf_admin, restricted
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_author', '[{"id": "au1"}]', '2026-01-01 00:02:00+00'),
  ('mf_author', '[{"id": "au2"}]', '2026-01-01 00:02:01+00');
SELECT mm.tick('mf_author', '2026-01-01 00:02:05+00') AS matches;
SELECT * FROM mf_owned.calls;
SELECT rolsuper AS eve_is_superuser FROM pg_roles WHERE rolname = 'mf_eve';
-- the superuser changing another key keeps the function's role ...
SELECT mm.alter_queue('mf_author', '{"match_size": {"min": 2, "max": 3}, "match_function": "mf_owned.escalate"}');
SELECT match_function_role FROM mm.queues WHERE name = 'mf_author';
-- ... so does respelling the same function (the function is compared, not
-- its text): the superuser does not become the role of the admin's code
SELECT mm.alter_queue('mf_author', '{"match_size": {"min": 2, "max": 3}, "match_function": "\"mf_owned\".\"escalate\""}');
SELECT match_function_role FROM mm.queues WHERE name = 'mf_author';
-- a superuser naming a function a non-superuser owns: it runs as the owner,
-- never with more rights than the owner has
SELECT mm.create_queue('mf_by_super', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_owned.escalate"}');
SELECT match_function_role FROM mm.queues WHERE name = 'mf_by_super';
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_by_super', '[{"id": "su1"}]', '2026-01-01 00:02:30+00'),
  ('mf_by_super', '[{"id": "su2"}]', '2026-01-01 00:02:31+00');
SELECT mm.tick('mf_by_super', '2026-01-01 00:02:35+00') AS matches;
SELECT * FROM mf_owned.calls;
SELECT rolsuper AS eve_is_superuser FROM pg_roles WHERE rolname = 'mf_eve';
-- a queue without a role (its function was missing at the upgrade to 0.4):
-- naming the same function again, as the hint says, gives it one
ALTER TABLE mm.queues DISABLE TRIGGER queues_validate;
UPDATE mm.queues SET match_function_role = NULL WHERE name = 'mf_by_super';
ALTER TABLE mm.queues ENABLE TRIGGER queues_validate;
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_by_super', '[{"id": "su5"}]', '2026-01-01 00:02:38+00'),
  ('mf_by_super', '[{"id": "su6"}]', '2026-01-01 00:02:39+00');
SELECT mm.tick('mf_by_super', '2026-01-01 00:02:40+00');
SET ROLE mf_admin;
SELECT mm.alter_queue('mf_by_super', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_owned.escalate"}');
RESET ROLE;
SELECT match_function_role FROM mm.queues WHERE name = 'mf_by_super';
SELECT mm.tick('mf_by_super', '2026-01-01 00:02:41+00') AS matches;
-- and when a superuser names it again, the owner
ALTER TABLE mm.queues DISABLE TRIGGER queues_validate;
UPDATE mm.queues SET match_function_role = NULL WHERE name = 'mf_by_super';
ALTER TABLE mm.queues ENABLE TRIGGER queues_validate;
SELECT mm.alter_queue('mf_by_super', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_owned.escalate"}');
SELECT match_function_role FROM mm.queues WHERE name = 'mf_by_super';
-- a function given away to a non-superuser after a superuser named it runs
-- as its new owner at the tick, not as the superuser recorded
CREATE FUNCTION mf_owned.given(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE sql AS $$
  SELECT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'),
							'properties', jsonb_build_object('run_as', current_user::text))
   WHERE jsonb_array_length(tickets) >= 2 $$;
SELECT mm.alter_queue('mf_by_super', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_owned.given"}');
SELECT match_function_role = session_user AS role_is_superuser FROM mm.queues WHERE name = 'mf_by_super';
ALTER FUNCTION mf_owned.given(text, jsonb, timestamptz) OWNER TO mf_admin;
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_by_super', '[{"id": "su3"}]', '2026-01-01 00:02:50+00'),
  ('mf_by_super', '[{"id": "su4"}]', '2026-01-01 00:02:51+00');
SELECT mm.tick('mf_by_super', '2026-01-01 00:02:55+00') AS matches;
SELECT properties ->> 'run_as' AS run_as FROM mm.matches WHERE queue = 'mf_by_super' AND properties ? 'run_as';
SELECT mm.drop_queue('mf_by_super', force => true);
-- a function owned by a role the admin has no privileges of (and which has
-- not the admin's) is refused: its owner could rewrite it to run with the
-- admin's rights (42501)
CREATE SCHEMA mf_eve_code AUTHORIZATION mf_eve;
GRANT USAGE ON SCHEMA mf_eve_code TO mf_admin;
SET ROLE mf_eve;
CREATE FUNCTION mf_eve_code.pairs(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE sql AS $$
  SELECT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'),
							'properties', jsonb_build_object('run_as', current_user::text))
   WHERE jsonb_array_length(tickets) >= 2 $$;
RESET ROLE;
SET ROLE mf_admin;
SELECT mm.create_queue('mf_eves', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_eve_code.pairs"}');
RESET ROLE;
-- a superuser's function named by the admin runs as the admin; given away to
-- that role afterwards, the tick refuses to run it as the admin (42501)
CREATE FUNCTION mf_eve_code.given(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE sql AS $$
  SELECT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'),
							'properties', jsonb_build_object('run_as', current_user::text))
   WHERE jsonb_array_length(tickets) >= 2 $$;
SET ROLE mf_admin;
SELECT mm.create_queue('mf_eves', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_eve_code.given"}');
RESET ROLE;
SELECT match_function_role FROM mm.queues WHERE name = 'mf_eves';
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_eves', '[{"id": "ev1"}]', '2026-01-01 00:02:56+00'),
  ('mf_eves', '[{"id": "ev2"}]', '2026-01-01 00:02:57+00'),
  ('mf_eves', '[{"id": "ev3"}]', '2026-01-01 00:02:58+00'),
  ('mf_eves', '[{"id": "ev4"}]', '2026-01-01 00:02:59+00');
SELECT mm.tick('mf_eves', '2026-01-01 00:02:59.5+00') AS matches;
SELECT properties ->> 'run_as' AS run_as FROM mm.matches WHERE queue = 'mf_eves';
ALTER FUNCTION mf_eve_code.given(text, jsonb, timestamptz) OWNER TO mf_eve;
SELECT mm.tick('mf_eves', '2026-01-01 00:03:00+00');
SELECT count(*) AS still_searching FROM mm.tickets WHERE queue = 'mf_eves' AND status = 'searching';
SELECT mm.drop_queue('mf_eves', force => true);
DROP SCHEMA mf_eve_code CASCADE;
-- ... and a role that cannot call the function cannot name it (42501)
CREATE FUNCTION mf_game.closed(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
LANGUAGE sql SET search_path = pg_catalog AS $$
  SELECT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'))
   WHERE jsonb_array_length(tickets) >= 2 $$;
REVOKE EXECUTE ON FUNCTION mf_game.closed(text, jsonb, timestamptz) FROM PUBLIC;
SET ROLE mf_admin;
SELECT mm.create_queue('mf_closed', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.closed"}');
RESET ROLE;
GRANT USAGE ON SCHEMA mf_game TO mm_admin;
SET ROLE mf_admin;
SELECT mm.create_queue('mf_closed', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.closed"}');
RESET ROLE;
GRANT EXECUTE ON FUNCTION mf_game.closed(text, jsonb, timestamptz) TO mf_admin;
SET ROLE mf_admin;
SELECT mm.create_queue('mf_closed', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.closed"}');
RESET ROLE;
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_closed', '[{"id": "cl1"}]', '2026-01-01 00:03:00+00'),
  ('mf_closed', '[{"id": "cl2"}]', '2026-01-01 00:03:01+00'),
  ('mf_closed', '[{"id": "cl3"}]', '2026-01-01 00:03:02+00'),
  ('mf_closed', '[{"id": "cl4"}]', '2026-01-01 00:03:03+00');
SELECT mm.tick('mf_closed', '2026-01-01 00:03:05+00') AS matches;
-- the role loses its right to call it: the queue's tick fails, as that role
REVOKE EXECUTE ON FUNCTION mf_game.closed(text, jsonb, timestamptz) FROM mf_admin;
\set VERBOSITY terse
SELECT mm.tick('mf_closed', '2026-01-01 00:03:06+00');
\set VERBOSITY default
SELECT count(*) AS still_searching FROM mm.tickets WHERE queue = 'mf_closed' AND status = 'searching';
-- the role is dropped: the tick says so and what to do
CREATE ROLE mf_gone LOGIN IN ROLE mm_admin;
GRANT EXECUTE ON FUNCTION mf_game.closed(text, jsonb, timestamptz) TO mf_gone;
SET ROLE mf_gone;
SELECT mm.create_queue('mf_orphan', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_game.closed"}');
RESET ROLE;
SELECT match_function_role FROM mm.queues WHERE name = 'mf_orphan';
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mf_orphan', '[{"id": "or1"}]', '2026-01-01 00:04:00+00'),
  ('mf_orphan', '[{"id": "or2"}]', '2026-01-01 00:04:01+00');
REVOKE EXECUTE ON FUNCTION mf_game.closed(text, jsonb, timestamptz) FROM mf_gone;
DROP ROLE mf_gone;
SELECT mm.tick('mf_orphan', '2026-01-01 00:04:05+00');
-- named again by an admin, it runs as that admin
SET ROLE mf_admin;
SELECT mm.alter_queue('mf_orphan', '{"match_size": {"min": 2, "max": 2}, "match_function": "mf_owned.escalate"}');
RESET ROLE;
SELECT match_function_role FROM mm.queues WHERE name = 'mf_orphan';
SELECT mm.tick('mf_orphan', '2026-01-01 00:04:06+00') AS matches;
SELECT mm.drop_queue('mf_author', force => true);
SELECT mm.drop_queue('mf_closed', force => true);
SELECT mm.drop_queue('mf_orphan', force => true);
DROP SCHEMA mf_owned CASCADE;
REVOKE USAGE ON SCHEMA mf_game FROM mm_admin;
DROP ROLE mf_admin;
DROP ROLE mf_eve;

SELECT mm.drop_queue('mf_ffa', force => true);
SELECT mm.drop_queue('mf_pair', force => true);
SELECT mm.drop_queue('mf_nested', force => true);
DROP SCHEMA mf_game CASCADE;
