-- The match lifecycle: acceptance (proposed -> ready or cancelled), assignment,
-- requeue after a failed allocation, completion, leavers, backfill requests;
-- every transition's rows, events and errors.  Players stay held while
-- their match is live.  Match ids are shown relative to the first match of
-- this file, so the output does not depend on other files.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('lc_listener',
	format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
		   split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_exec('lc_listener', 'LISTEN mm_events');
SELECT coalesce(max(id), 0) AS m0 FROM mm.matches \gset

-- A ticket id list as the tickets' first players.
CREATE FUNCTION pg_temp.ticket_names(ids jsonb) RETURNS jsonb LANGUAGE sql AS $$
	SELECT coalesce(jsonb_agg(t.players -> 0 ->> 'id' ORDER BY u.ord), '[]')
	  FROM jsonb_array_elements_text(ids) WITH ORDINALITY AS u(id, ord)
	  JOIN mm.tickets t ON t.id = u.id::bigint
$$;
-- The events sent since the last call (waits until none arrive for 0.3 s),
-- without signature, match ids relative to m0, ticket ids as their first
-- players; each one's signature checked.
CREATE FUNCTION pg_temp.events(m0 bigint) RETURNS TABLE (event jsonb, signed boolean)
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	quiet integer := 0;
	k text;
BEGIN
	WHILE quiet < 3 LOOP
		PERFORM pg_sleep(0.1);
		quiet := quiet + 1;
		FOR r IN SELECT * FROM dblink_get_notify('lc_listener') LOOP
			quiet := 0;
			event := r.extra::jsonb - 'sig';
			IF event ? 'match_id' THEN
				event := event || jsonb_build_object('match_id', (event ->> 'match_id')::bigint - m0);
			END IF;
			FOREACH k IN ARRAY ARRAY['tickets', 'requeued_tickets', 'cancelled_tickets'] LOOP
				IF event ? k THEN
					event := jsonb_set(event, ARRAY[k], pg_temp.ticket_names(event -> k));
				END IF;
			END LOOP;
			signed := mm.verify_event(r.extra);
			RETURN NEXT;
		END LOOP;
	END LOOP;
END
$$;
CREATE FUNCTION pg_temp.tickets(q text, m0 bigint)
RETURNS TABLE (player text, status text, match integer, team text, created_at timestamptz)
LANGUAGE sql AS $$
	SELECT t.players -> 0 ->> 'id', t.status, (t.match_id - m0)::integer, t.team, t.created_at
	  FROM mm.tickets t WHERE t.queue = q ORDER BY t.id
$$;
CREATE FUNCTION pg_temp.held(q text) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(player_id, ',' ORDER BY player_id), '') FROM mm.active_players WHERE queue = q
$$;

-- ---------------------------------------------------------------- acceptance
SELECT mm.create_queue('lc_acc', '{"teams": [{"name": "red", "min": 1, "max": 1},
                                             {"name": "blue", "min": 1, "max": 1}],
                                   "acceptance_timeout_seconds": 10}');
SELECT mm.create_ticket('lc_acc', '[{"id": "a"}]', '2026-01-01 00:00:00+00') AS ta \gset
SELECT mm.create_ticket('lc_acc', '[{"id": "b"}]', '2026-01-01 00:00:01+00') AS tb \gset
SELECT mm.create_ticket('lc_acc', '[{"id": "c"}]', '2026-01-01 00:00:02+00') AS tc \gset
-- a and b (oldest first) are proposed; the match waits 10 s for answers
SELECT mm.tick('lc_acc', '2026-01-01 00:00:05+00');
SELECT id - :m0 AS match, status, acceptance_deadline FROM mm.matches WHERE queue = 'lc_acc';
SELECT * FROM pg_temp.tickets('lc_acc', :m0);
SELECT * FROM pg_temp.events(:m0);
-- a proposed ticket is still the player's active ticket
SELECT mm.create_ticket('lc_acc', '[{"id": "a"}]', '2026-01-01 00:00:06+00');
-- the answers: accepting twice is harmless; a stranger is refused
SELECT mm.accept_match(:m0 + 1, 'a', true, '2026-01-01 00:00:06+00');
SELECT mm.accept_match(:m0 + 1, 'a', true, '2026-01-01 00:00:06+00');
SELECT mm.accept_match(:m0 + 1, 'a', false, '2026-01-01 00:00:06+00');
SELECT mm.accept_match(:m0 + 1, 'zz', true, '2026-01-01 00:00:06+00');
SELECT mm.accept_match(-1, 'a', true, '2026-01-01 00:00:06+00');
SELECT mm.accept_match(:m0 + 1, NULL, true, '2026-01-01 00:00:06+00');
SELECT mm.accept_match(:m0 + 1, 'a', true, 'infinity');
-- b rejects: the match is cancelled, b's ticket too; a searches again with
-- its original creation time (its priority)
SELECT mm.accept_match(:m0 + 1, 'b', false, '2026-01-01 00:00:07+00');
SELECT id - :m0 AS match, status, cancel_reason, updated_at FROM mm.matches WHERE queue = 'lc_acc';
SELECT * FROM pg_temp.tickets('lc_acc', :m0);
SELECT pg_temp.held('lc_acc');
SELECT * FROM pg_temp.events(:m0);
-- answering a cancelled match again: the same answer returns the outcome,
-- another is refused
SELECT mm.accept_match(:m0 + 1, 'b', false, '2026-01-01 00:00:08+00');
SELECT mm.accept_match(:m0 + 1, 'a', false, '2026-01-01 00:00:08+00');

-- a and c are proposed next; an answer after the deadline is refused
SELECT mm.tick('lc_acc', '2026-01-01 00:00:08+00');
SELECT mm.accept_match(:m0 + 2, 'a', true, '2026-01-01 00:00:18.000001+00');
-- both accept: the match is ready, the tickets matched, the players held
SELECT mm.accept_match(:m0 + 2, 'c', true, '2026-01-01 00:00:09+00');
SELECT mm.accept_match(:m0 + 2, 'a', true, '2026-01-01 00:00:10+00');
SELECT id - :m0 AS match, status, updated_at FROM mm.matches WHERE queue = 'lc_acc' ORDER BY id;
SELECT player_id, accepted FROM mm.match_players WHERE match_id = :m0 + 2 ORDER BY 1;
SELECT * FROM pg_temp.tickets('lc_acc', :m0);
SELECT pg_temp.held('lc_acc');
SELECT * FROM pg_temp.events(:m0);
-- a player in a live match cannot search, and the refusal names the match
\set VERBOSITY verbose
SELECT mm.create_ticket('lc_acc', '[{"id": "c"}]', '2026-01-01 00:00:11+00');
\set VERBOSITY default
SELECT mm.accept_match(:m0 + 2, 'a', false, '2026-01-01 00:00:11+00');

-- ---------------------------------------------------------------- assignment
SELECT mm.assign(:m0 + 2, '');
SELECT mm.assign(:m0 + 2, repeat('x', 1025));
SELECT mm.assign(:m0 + 2, 'udp://10.0.0.7:7777', '[1]');
SELECT mm.assign(:m0 + 2, 'udp://10.0.0.7:7777', jsonb_build_object('blob', repeat('x', 5000)));
SELECT mm.assign(-1, 'udp://10.0.0.7:7777');
SELECT mm.assign(:m0 + 1, 'udp://10.0.0.7:7777');
SELECT mm.assign(:m0 + 2, 'udp://10.0.0.7:7777', '{"map": "harbor"}');
SELECT mm.assign(:m0 + 2, 'udp://10.0.0.8:7777');
SELECT ticket_id = :ta AS is_a, ticket_status, match_id - :m0 AS match, match_status, team, connection, properties
  FROM mm.get_assignment(:ta);
SELECT ticket_status, match_id, match_status FROM mm.get_assignment(:tb);
SELECT count(*) FROM mm.get_assignment(-1);
-- the frontend's form takes the ticket's token (derived from its id and the
-- event key: 32 hex digits, one per ticket): the same row with the right
-- one, 42501 for any other, whether or not the ticket exists
SELECT mm.ticket_token(:ta) ~ '^[0-9a-f]{32}$' AS hex32, mm.ticket_token(:ta) = mm.ticket_token(:ta) AS stable,
       mm.ticket_token(:ta) <> mm.ticket_token(:tb) AS per_ticket;
SELECT ticket_id = :ta AS is_a, ticket_status, match_id - :m0 AS match, match_status, team, connection, properties
  FROM mm.get_assignment(:ta, mm.ticket_token(:ta));
SELECT ticket_status, match_id - :m0 AS match FROM mm.get_assignment(ticket_id => :tb, token => mm.ticket_token(:tb));
SELECT count(*) FROM mm.get_assignment(-1, mm.ticket_token(-1));
SELECT count(*) FROM mm.get_assignment(-1, mm.ticket_token(:ta));
SELECT count(*) FROM mm.get_assignment(:ta, NULL);
SELECT count(*) FROM mm.get_assignment(NULL, mm.ticket_token(:ta));
\set VERBOSITY sqlstate
SELECT count(*) FROM mm.get_assignment(-1, mm.ticket_token(:ta));
SELECT count(*) FROM mm.get_assignment(:ta, mm.ticket_token(:tb));
SELECT count(*) FROM mm.get_assignment(:ta, upper(mm.ticket_token(:ta)));
SELECT count(*) FROM mm.get_assignment(:ta, mm.ticket_token(:ta) || '0');
SELECT count(*) FROM mm.get_assignment(:ta, left(mm.ticket_token(:ta), 31));
SELECT count(*) FROM mm.get_assignment(:ta, '');
SELECT count(*) FROM mm.get_assignment(:ta, NULL);
SELECT count(*) FROM mm.get_assignment(NULL, mm.ticket_token(:ta));
\set VERBOSITY default
SELECT mm.ticket_token_matches(:ta, mm.ticket_token(:ta)) AS matches,
       mm.ticket_token_matches(:ta, overlay(mm.ticket_token(:ta) PLACING 'g' FROM 32)) AS last_digit_wrong;
-- a new event key gives every ticket a new token: the old one is refused
BEGIN;
SELECT mm.ticket_token(:ta) AS old_token \gset
UPDATE mm.event_key SET key = decode(repeat('ab', 32), 'hex');
SELECT mm.ticket_token(:ta) <> :'old_token' AS new_token;
\set VERBOSITY sqlstate
SELECT count(*) FROM mm.get_assignment(:ta, :'old_token');
\set VERBOSITY default
ROLLBACK;
SELECT count(*) AS old_token_again FROM mm.get_assignment(:ta, :'old_token');
SELECT * FROM pg_temp.events(:m0);

-- ---------------------------------------------------------------- requeue
-- the server failed: the tickets search again, same ids, original age
SELECT mm.requeue_match(:m0 + 2, 'server crashed', '2026-01-01 00:00:20+00') = ARRAY[:ta, :tc]::bigint[] AS requeued;
SELECT id - :m0 AS match, status, cancel_reason FROM mm.matches WHERE id = :m0 + 2;
SELECT * FROM pg_temp.tickets('lc_acc', :m0);
SELECT pg_temp.held('lc_acc');
SELECT * FROM pg_temp.events(:m0);
SELECT mm.requeue_match(:m0 + 2, 'again', '2026-01-01 00:00:21+00');
SELECT mm.requeue_match(:m0 + 2, '', '2026-01-01 00:00:21+00');
-- a reason the extension cancels with is not a requeue's (metrics count requeues apart)
SELECT mm.requeue_match(:m0 + 2, 'expired', '2026-01-01 00:00:21+00');

-- ---------------------------------------------------------------- timeout
-- proposed again; c accepts, a stays silent: at the deadline the tick
-- cancels the match, a's ticket with it, and c searches again
SELECT mm.tick('lc_acc', '2026-01-01 00:00:22+00');
SELECT mm.accept_match(:m0 + 3, 'c', true, '2026-01-01 00:00:23+00');
SELECT mm.tick('lc_acc', '2026-01-01 00:00:32+00');  -- exactly at the deadline: still waiting
SELECT status FROM mm.matches WHERE id = :m0 + 3;
-- c's client retries its answer past the deadline: the same answer is harmless
SELECT mm.accept_match(:m0 + 3, 'c', true, '2026-01-01 00:00:32.2+00') AS retried;
SELECT mm.tick('lc_acc', '2026-01-01 00:00:32.5+00');
SELECT id - :m0 AS match, status, cancel_reason FROM mm.matches WHERE id = :m0 + 3;
SELECT * FROM pg_temp.tickets('lc_acc', :m0);
SELECT pg_temp.held('lc_acc');
SELECT * FROM pg_temp.events(:m0);
-- a proposed match can be requeued too: nobody is cancelled
SELECT mm.create_ticket('lc_acc', '[{"id": "d"}]', '2026-01-01 00:00:40+00') AS td \gset
SELECT mm.tick('lc_acc', '2026-01-01 00:00:41+00');
SELECT mm.requeue_match(:m0 + 4, 'lobby closed', '2026-01-01 00:00:42+00') = ARRAY[:tc, :td]::bigint[] AS requeued;
SELECT * FROM pg_temp.tickets('lc_acc', :m0) WHERE player IN ('c', 'd');
SELECT * FROM pg_temp.events(:m0);

-- ---------------------------------------------------------------- completion, leavers
SELECT mm.create_queue('lc_plain', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                               {"name": "blue", "min": 2, "max": 2}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_plain', '[{"id": "p1"}, {"id": "p2"}]', '2026-01-01 00:01:00+00'),
  ('lc_plain', '[{"id": "p3"}]', '2026-01-01 00:01:01+00'),
  ('lc_plain', '[{"id": "p4"}]', '2026-01-01 00:01:02+00');
-- without acceptance a match is ready at once, its players held
SELECT mm.tick('lc_plain', '2026-01-01 00:01:05+00');
SELECT id - :m0 AS match, status FROM mm.matches WHERE queue = 'lc_plain';
SELECT pg_temp.held('lc_plain');
SELECT * FROM pg_temp.events(:m0);
-- p3 leaves: recorded, released, free to search; leaving twice is harmless
SELECT mm.leave_match(:m0 + 5, 'p3', '2026-01-01 00:02:00+00');
SELECT mm.leave_match(:m0 + 5, 'p3', '2026-01-01 00:02:30+00');
SELECT player_id, left_at FROM mm.match_players WHERE match_id = :m0 + 5 AND left_at IS NOT NULL;
SELECT pg_temp.held('lc_plain');
SELECT mm.leave_match(:m0 + 5, 'nobody', '2026-01-01 00:02:00+00');
SELECT mm.leave_match(:m0 + 5, 'p4', '2026-01-01 00:00:00+00');
SELECT mm.leave_match(:m0 + 3, 'c', '2026-01-01 00:02:00+00');
SELECT mm.create_ticket('lc_plain', '[{"id": "p3"}]', '2026-01-01 00:02:01+00') > 0 AS p3_searches;
SELECT * FROM pg_temp.events(:m0);

-- ---------------------------------------------------------------- backfill requests
-- p3 (blue) left: blue has one open slot, red none
SELECT mm.request_backfill(:m0 + 5, '{"red": 1}', '2026-01-01 00:02:02+00');
SELECT mm.request_backfill(:m0 + 5, '{"green": 0}', '2026-01-01 00:02:02+00');
SELECT mm.request_backfill(:m0 + 5, '{"blue": 0}', '2026-01-01 00:02:02+00');
SELECT mm.request_backfill(:m0 + 5, '{"blue": 0.5}', '2026-01-01 00:02:02+00');
SELECT mm.request_backfill(:m0 + 5, '[1]', '2026-01-01 00:02:02+00');
SELECT mm.request_backfill(:m0 + 1, NULL, '2026-01-01 00:02:02+00');
SELECT mm.request_backfill(:m0 + 5, '{"blue": 1}', '2026-01-01 00:02:02+00') > 0 AS requested;
-- at most one open request per match
SELECT mm.request_backfill(:m0 + 5, '{"blue": 1}', '2026-01-01 00:02:03+00');
SELECT mm.cancel_backfill(:m0 + 5, '2026-01-01 00:02:04+00');
SELECT mm.cancel_backfill(:m0 + 5, '2026-01-01 00:02:04+00');
-- default: every team up to its max
SELECT mm.request_backfill(:m0 + 5, NULL, '2026-01-01 00:02:05+00') > 0 AS requested;
SELECT open_slots, status, created_at, updated_at FROM mm.backfill_requests WHERE match_id = :m0 + 5 ORDER BY id;
SELECT * FROM pg_temp.events(:m0);

-- the tick serves the request before it forms new matches, oldest ticket
-- first: p5 fills blue; p6 and p7 form no match of their own (2v2)
SELECT mm.cancel_ticket(id) FROM mm.tickets_active WHERE players @> '[{"id": "p3"}]';
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_plain', '[{"id": "p5"}]', '2026-01-01 00:02:06+00'),
  ('lc_plain', '[{"id": "p6"}]', '2026-01-01 00:02:07+00'),
  ('lc_plain', '[{"id": "p7"}]', '2026-01-01 00:02:08+00');
SELECT mm.tick('lc_plain', '2026-01-01 00:02:10+00');
SELECT player_id, team, left_at FROM mm.match_players WHERE match_id = :m0 + 5 ORDER BY player_id;
SELECT open_slots, status, updated_at FROM mm.backfill_requests WHERE match_id = :m0 + 5 ORDER BY id;
SELECT * FROM pg_temp.tickets('lc_plain', :m0);
SELECT pg_temp.held('lc_plain');
SELECT * FROM pg_temp.events(:m0);
-- the match is full again
SELECT mm.request_backfill(:m0 + 5, NULL, '2026-01-01 00:02:11+00');
-- p4 (blue) leaves and a new request opens; completing the match cancels it
SELECT mm.leave_match(:m0 + 5, 'p4', '2026-01-01 00:02:12+00');
SELECT mm.request_backfill(:m0 + 5, NULL, '2026-01-01 00:02:13+00') > 0 AS requested;

-- the match was played: completed, everybody released; only once
SELECT mm.complete_match(:m0 + 5, '2026-01-01 00:30:00+00');
SELECT id - :m0 AS match, status, updated_at FROM mm.matches WHERE id = :m0 + 5;
SELECT pg_temp.held('lc_plain');
SELECT mm.complete_match(:m0 + 5, '2026-01-01 00:31:00+00');
SELECT mm.complete_match(:m0 + 1, '2026-01-01 00:31:00+00');
SELECT mm.complete_match(-1);
SELECT mm.complete_match(NULL);
-- completing closed the open request
SELECT status, updated_at FROM mm.backfill_requests WHERE match_id = :m0 + 5 ORDER BY id;
SELECT mm.request_backfill(:m0 + 5);
SELECT * FROM pg_temp.events(:m0);

-- ---------------------------------------------------------------- auto_backfill
-- a queue with "auto_backfill": true requests backfill when a player leaves
SELECT mm.create_queue('lc_auto', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                              {"name": "blue", "min": 2, "max": 2}],
                                    "auto_backfill": true}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_auto', '[{"id": "q1"}]', '2026-01-01 01:00:00+00'),
  ('lc_auto', '[{"id": "q2"}]', '2026-01-01 01:00:01+00'),
  ('lc_auto', '[{"id": "q3"}]', '2026-01-01 01:00:02+00'),
  ('lc_auto', '[{"id": "q4"}]', '2026-01-01 01:00:03+00');
SELECT mm.tick('lc_auto', '2026-01-01 01:00:04+00');
SELECT mp.match_id AS auto_match, min(mp.player_id) FILTER (WHERE mp.team = 'red') AS red_leaver,
       min(mp.player_id) FILTER (WHERE mp.team = 'blue') AS blue_leaver
  FROM mm.match_players mp WHERE mp.queue = 'lc_auto' GROUP BY mp.match_id \gset
SELECT mm.leave_match(:auto_match, :'blue_leaver', '2026-01-01 01:05:00+00');
SELECT b.open_slots, b.status, b.created_at FROM mm.backfill_requests b WHERE b.queue = 'lc_auto';
-- a second leaver finds the request open and adds its slot to it: still
-- one request, now for a player of each team
SELECT mm.leave_match(:auto_match, :'red_leaver', '2026-01-01 01:06:00+00');
SELECT count(*) AS requests FROM mm.backfill_requests b WHERE b.queue = 'lc_auto';
SELECT b.open_slots, b.status, b.updated_at FROM mm.backfill_requests b WHERE b.queue = 'lc_auto';
-- the tick fills both slots, one new player on each team
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_auto', '[{"id": "q5"}]', '2026-01-01 01:06:30+00'),
  ('lc_auto', '[{"id": "q6"}]', '2026-01-01 01:06:31+00');
SELECT mm.tick('lc_auto', '2026-01-01 01:07:00+00');
SELECT b.open_slots, b.status FROM mm.backfill_requests b WHERE b.queue = 'lc_auto';
SELECT mp.team, count(*) FILTER (WHERE mp.left_at IS NULL) AS playing,
       count(*) FILTER (WHERE mp.left_at IS NOT NULL) AS left_match,
       count(*) FILTER (WHERE mp.player_id IN ('q5', 'q6')) AS backfilled
  FROM mm.match_players mp WHERE mp.match_id = :auto_match GROUP BY mp.team ORDER BY mp.team;
SELECT event ->> 'event' AS event, event -> 'open_slots' AS open_slots FROM pg_temp.events(:m0);
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "auto_backfill": "yes"}');

-- ------------------------------------------------- cancelling a proposed ticket
-- a proposed ticket that is cancelled rejects its match: the match is
-- cancelled, the ticket keeps no match, the other ticket searches again
SELECT mm.create_queue('lc_cancel', '{"teams": [{"name": "red", "min": 1, "max": 1},
                                                {"name": "blue", "min": 1, "max": 1}],
                                      "acceptance_timeout_seconds": 10}');
SELECT mm.create_ticket('lc_cancel', '[{"id": "k1"}]', '2026-01-01 02:00:00+00') AS tk1 \gset
SELECT mm.create_ticket('lc_cancel', '[{"id": "k2"}]', '2026-01-01 02:00:01+00') AS tk2 \gset
SELECT mm.tick('lc_cancel', '2026-01-01 02:00:02+00');
SELECT id AS cancel_match FROM mm.matches WHERE queue = 'lc_cancel' \gset
SELECT mm.cancel_ticket(:tk1);
SELECT id - :m0 AS match, status, cancel_reason FROM mm.matches WHERE queue = 'lc_cancel' ORDER BY id;
SELECT player, status, match, team, created_at FROM pg_temp.tickets('lc_cancel', :m0);
SELECT pg_temp.held('lc_cancel') AS held;
CREATE FUNCTION pg_temp.cancel_events(m0 bigint)
RETURNS TABLE (event text, reason text, requeued jsonb, cancelled jsonb, tickets jsonb, signed boolean)
LANGUAGE sql AS $$
	SELECT e.event ->> 'event', e.event ->> 'reason', e.event -> 'requeued_tickets',
	       e.event -> 'cancelled_tickets', e.event -> 'tickets', e.signed
	  FROM pg_temp.events(m0) e
$$;
SELECT * FROM pg_temp.cancel_events(:m0);
-- the player who stayed cannot accept the cancelled match
SELECT mm.accept_match(:cancel_match, 'k2', true, '2026-01-01 02:00:03+00');
-- by hand: an UPDATE that cancels a proposed ticket does the same
SELECT mm.create_ticket('lc_cancel', '[{"id": "k3"}]', '2026-01-01 02:00:03+00') AS tk3 \gset
SELECT mm.tick('lc_cancel', '2026-01-01 02:00:04+00');
UPDATE mm.tickets SET status = 'cancelled', updated_at = '2026-01-01 02:00:05+00' WHERE id = :tk3;
-- and one that puts a proposed ticket back to searching: both search again
SELECT mm.tick('lc_cancel', '2026-01-01 02:00:06+00');
SELECT mm.create_ticket('lc_cancel', '[{"id": "k4"}]', '2026-01-01 02:00:06+00') AS tk4 \gset
SELECT mm.tick('lc_cancel', '2026-01-01 02:00:07+00');
UPDATE mm.tickets SET status = 'searching' WHERE id = :tk4;
SELECT id - :m0 AS match, status, cancel_reason FROM mm.matches WHERE queue = 'lc_cancel' ORDER BY id;
SELECT player, status, match, team, created_at FROM pg_temp.tickets('lc_cancel', :m0);
SELECT pg_temp.held('lc_cancel') AS held;
SELECT * FROM pg_temp.cancel_events(:m0);

-- --------------------------------------- backfill after the queue's teams change
-- an open request whose match has players on a team the queue no longer has
-- cannot be served: the tick cancels it (event backfill_cancelled with a
-- reason) and goes on with the queue
SELECT mm.create_queue('lc_bf_teams', '{"teams": [{"name": "red", "min": 1, "max": 2},
                                                  {"name": "blue", "min": 1, "max": 2}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_bf_teams', '[{"id": "r1"}]', '2026-01-01 03:00:00+00'),
  ('lc_bf_teams', '[{"id": "r2"}]', '2026-01-01 03:00:01+00');
SELECT mm.tick('lc_bf_teams', '2026-01-01 03:00:02+00');
SELECT id AS bf_match FROM mm.matches WHERE queue = 'lc_bf_teams' \gset
SELECT mm.request_backfill(:bf_match, NULL, '2026-01-01 03:00:03+00') > 0 AS requested;
SELECT mm.alter_queue('lc_bf_teams', '{"teams": [{"name": "north", "min": 1, "max": 1},
                                                 {"name": "south", "min": 1, "max": 1}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_bf_teams', '[{"id": "r3"}]', '2026-01-01 03:00:04+00'),
  ('lc_bf_teams', '[{"id": "r4"}]', '2026-01-01 03:00:05+00');
SELECT mm.tick('lc_bf_teams', '2026-01-01 03:00:06+00');
SELECT b.status, b.updated_at FROM mm.backfill_requests b WHERE b.queue = 'lc_bf_teams';
SELECT m.id - :m0 AS match, m.status, string_agg(mp.player_id || ':' || mp.team, ' ' ORDER BY mp.player_id) AS players
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE m.queue = 'lc_bf_teams' GROUP BY m.id, m.status ORDER BY m.id;
SELECT event ->> 'event' AS event, event -> 'match_id' AS match, event ->> 'reason' AS reason, signed
  FROM pg_temp.events(:m0) WHERE event ->> 'event' LIKE 'backfill%';
-- the same when the queue becomes a free-for-all: no player joins a match of
-- teams without one (found by fuzz seed 484)
SELECT mm.alter_queue('lc_bf_teams', '{"teams": [{"name": "red", "min": 1, "max": 2},
                                                 {"name": "blue", "min": 1, "max": 2}]}');
SELECT mm.request_backfill(:bf_match, NULL, '2026-01-01 03:00:07+00') > 0 AS requested;
SELECT mm.alter_queue('lc_bf_teams', '{"match_size": {"min": 3, "max": 6}}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_bf_teams', '[{"id": "r5"}]', '2026-01-01 03:00:08+00');
SELECT mm.tick('lc_bf_teams', '2026-01-01 03:00:09+00');
SELECT b.status, b.updated_at FROM mm.backfill_requests b WHERE b.queue = 'lc_bf_teams' ORDER BY b.id;
SELECT string_agg(mp.player_id || ':' || coalesce(mp.team, '-'), ' ' ORDER BY mp.player_id) AS players
  FROM mm.match_players mp WHERE mp.match_id = :bf_match;
SELECT status FROM mm.tickets WHERE players -> 0 ->> 'id' = 'r5';

-- a match never grows past match_size.max: a 1v1 of a queue whose red team
-- may hold 2 is full at 2 players (found by fuzz seed 602)
SELECT mm.create_queue('lc_size', '{"teams": [{"name": "red", "min": 1, "max": 2},
                                              {"name": "blue", "min": 1, "max": 1}],
                                    "match_size": {"min": 2, "max": 3}}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_size', '[{"id": "z1"}]', '2026-01-01 04:00:00+00'),
  ('lc_size', '[{"id": "z2"}]', '2026-01-01 04:00:01+00');
SELECT mm.tick('lc_size', '2026-01-01 04:00:02+00');
SELECT id AS size_match FROM mm.matches WHERE queue = 'lc_size' \gset
SELECT mm.request_backfill(:size_match, '{"red": 1}', '2026-01-01 04:00:03+00') > 0 AS requested;
-- the queue now allows 2 players: the open request fills nobody, and new
-- requests are refused
SELECT mm.alter_queue('lc_size', '{"teams": [{"name": "red", "min": 1, "max": 2},
                                             {"name": "blue", "min": 1, "max": 1}],
                                   "match_size": {"min": 2, "max": 2}}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_size', '[{"id": "z3"}]', '2026-01-01 04:00:04+00');
SELECT mm.tick('lc_size', '2026-01-01 04:00:05+00');
SELECT count(*) AS players FROM mm.match_players WHERE match_id = :size_match;
SELECT mm.cancel_backfill(:size_match, '2026-01-01 04:00:06+00');
SELECT mm.request_backfill(:size_match, NULL, '2026-01-01 04:00:07+00');
SELECT mm.request_backfill(:size_match, '{"red": 1}', '2026-01-01 04:00:07+00');

-- a leaver who searches again is not put back into the match they left (the
-- queue's ticks failed on match_players' key while the request was open)
SELECT mm.create_queue('lc_rejoin', '{"teams": [{"name": "red", "min": 1, "max": 1},
                                                {"name": "blue", "min": 1, "max": 1}],
                                      "auto_backfill": true}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_rejoin', '[{"id": "j1"}]', '2026-01-01 05:00:00+00'),
  ('lc_rejoin', '[{"id": "j2"}]', '2026-01-01 05:00:01+00');
SELECT mm.tick('lc_rejoin', '2026-01-01 05:00:02+00');
SELECT id AS rejoin_match FROM mm.matches WHERE queue = 'lc_rejoin' \gset
SELECT mm.leave_match(:rejoin_match, 'j1', '2026-01-01 05:00:03+00');
SELECT mm.create_ticket('lc_rejoin', '[{"id": "j1"}]', '2026-01-01 05:00:04+00') > 0 AS searching_again;
SELECT mm.create_ticket('lc_rejoin', '[{"id": "j3"}]', '2026-01-01 05:00:05+00') > 0 AS created;
SELECT mm.tick('lc_rejoin', '2026-01-01 05:00:06+00');
SELECT string_agg(mp.player_id, ', ' ORDER BY mp.player_id) AS present
  FROM mm.match_players mp WHERE mp.match_id = :rejoin_match AND mp.left_at IS NULL;
SELECT t.players -> 0 ->> 'id' AS player, t.status FROM mm.tickets t
 WHERE t.queue = 'lc_rejoin' AND t.players -> 0 ->> 'id' IN ('j1', 'j3') ORDER BY t.id;

-- a config that shrank: a leaver leaves all the same (no room, no request),
-- and an open request never fills a team past its new max
SELECT mm.create_queue('lc_shrink', '{"teams": [{"name": "red", "min": 1, "max": 3},
                                                {"name": "blue", "min": 1, "max": 3}],
                                      "auto_backfill": true}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_shrink', '[{"id": "sh1"}]', '2026-01-01 05:10:00+00'),
  ('lc_shrink', '[{"id": "sh2"}]', '2026-01-01 05:10:01+00'),
  ('lc_shrink', '[{"id": "sh3"}]', '2026-01-01 05:10:02+00'),
  ('lc_shrink', '[{"id": "sh4"}]', '2026-01-01 05:10:03+00');
SELECT mm.tick('lc_shrink', '2026-01-01 05:10:04+00');
SELECT id AS shrink_match FROM mm.matches WHERE queue = 'lc_shrink' \gset
SELECT mm.alter_queue('lc_shrink', '{"teams": [{"name": "red", "min": 1, "max": 1},
                                               {"name": "blue", "min": 1, "max": 1}],
                                     "auto_backfill": true}');
SELECT mm.leave_match(:shrink_match, 'sh1', '2026-01-01 05:10:05+00');
SELECT count(*) AS requests FROM mm.backfill_requests WHERE match_id = :shrink_match;
SELECT count(*) AS sh1_held FROM mm.active_players WHERE player_id = 'sh1';
SELECT mm.alter_queue('lc_shrink', '{"teams": [{"name": "red", "min": 1, "max": 3},
                                               {"name": "blue", "min": 1, "max": 3}]}');
SELECT mm.request_backfill(:shrink_match, '{"red": 2}', '2026-01-01 05:10:06+00') > 0 AS requested;
SELECT mm.alter_queue('lc_shrink', '{"teams": [{"name": "red", "min": 1, "max": 2},
                                               {"name": "blue", "min": 1, "max": 3}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_shrink', '[{"id": "sh5"}]', '2026-01-01 05:10:07+00'),
  ('lc_shrink', '[{"id": "sh6"}]', '2026-01-01 05:10:08+00');
SELECT mm.tick('lc_shrink', '2026-01-01 05:10:09+00');
SELECT mp.team, count(*) AS present FROM mm.match_players mp
 WHERE mp.match_id = :shrink_match AND mp.left_at IS NULL GROUP BY mp.team ORDER BY mp.team;
SELECT b.status, b.open_slots FROM mm.backfill_requests b WHERE b.match_id = :shrink_match;

-- a requeued ticket gets its whole time out again: a match that lived
-- longer than ticket_timeout_seconds does not send its players to a timeout
SELECT mm.create_queue('lc_requeue_timeout', '{"match_size": {"min": 2, "max": 2}, "ticket_timeout_seconds": 60}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_requeue_timeout', '[{"id": "rt1"}]', '2026-01-01 06:00:00+00'),
  ('lc_requeue_timeout', '[{"id": "rt2"}]', '2026-01-01 06:00:01+00');
SELECT mm.tick('lc_requeue_timeout', '2026-01-01 06:00:05+00');
SELECT cardinality(mm.requeue_match(m.id, 'server failed', '2026-01-01 06:05:00+00')) AS requeued
  FROM mm.matches m WHERE m.queue = 'lc_requeue_timeout';
SELECT mm.cancel_ticket(t.id) FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'rt2' AND t.status = 'searching';
SELECT mm.tick('lc_requeue_timeout', '2026-01-01 06:05:30+00');
SELECT t.status FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'rt1' ORDER BY t.id;
SELECT mm.tick('lc_requeue_timeout', '2026-01-01 06:06:01+00');
SELECT t.status FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'rt1' ORDER BY t.id;

-- a proposal whose acceptance deadline is past the last timestamp: the tick of
-- the queue fails with 22008, and an all-queues tick after it in the same
-- session skips that queue (with a WARNING) and goes on: it crashed the
-- backend (found by fuzz seed 482)
SELECT mm.create_queue('lc_deadline', '{"teams": [{"name": "red", "min": 1, "max": 1},
                                                  {"name": "blue", "min": 1, "max": 1}],
                                        "acceptance_timeout_seconds": 30}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('lc_deadline', '[{"id": "d1"}]', '294276-12-31 23:59:00+00'),
  ('lc_deadline', '[{"id": "d2"}]', '294276-12-31 23:59:01+00');
SELECT mm.tick('lc_deadline', '294276-12-31 23:59:59+00');
BEGIN;
SET LOCAL client_min_messages = error;
SELECT mm.tick(NULL, '294276-12-31 23:59:59+00') >= 0 AS ticked;
SELECT tickets_loaded, matches FROM mm.last_tick_stats() WHERE queue = 'lc_deadline';
ROLLBACK;
SELECT count(*) AS searching FROM mm.tickets WHERE queue = 'lc_deadline' AND status = 'searching';

-- ---------------------------------------------------------------- tokens
-- mm.create_ticket_with_token: mm.create_ticket (same checks and errors),
-- returning the ticket's token with its id, for one queue or several
SELECT mm.create_queue('lc_token', '{"match_size": {"min": 2, "max": 2}}');
SELECT ticket_id AS tk1, token AS tk1_token
  FROM mm.create_ticket_with_token('lc_token', '[{"id": "tok1"}]', '2026-01-01 07:00:00+00') \gset
SELECT ticket_id AS tk2, token AS tk2_token
  FROM mm.create_ticket_with_token(ARRAY['lc_token', 'lc_plain'], '[{"id": "tok2"}]', '2026-01-01 07:00:01+00') \gset
SELECT :'tk1_token' = mm.ticket_token(:tk1) AS token1, :'tk2_token' = mm.ticket_token(:tk2) AS token2,
       t.queue, t.queues, t.status
  FROM mm.tickets t WHERE t.id = :tk2;
SELECT ticket_id = :tk1 AS is_tok1, ticket_status, match_id FROM mm.get_assignment(:tk1, :'tk1_token');
SELECT mm.tick('lc_token', '2026-01-01 07:00:05+00');
SELECT ticket_status, match_status, team FROM mm.get_assignment(:tk2, :'tk2_token');
-- a requeued ticket keeps its id, and so its token
SELECT mm.requeue_match(m.id, 'no server', '2026-01-01 07:00:10+00') = ARRAY[:tk1, :tk2]::bigint[] AS requeued
  FROM mm.matches m WHERE m.queue = 'lc_token';
SELECT ticket_status, match_id FROM mm.get_assignment(:tk1, :'tk1_token');
\set VERBOSITY terse
SELECT * FROM mm.create_ticket_with_token('lc_token', '[{"id": "tok1"}]', '2026-01-01 07:00:11+00');
\set VERBOSITY default
SELECT * FROM mm.create_ticket_with_token(ARRAY[NULL]::text[], '[{"id": "tok3"}]', '2026-01-01 07:00:11+00');
SELECT * FROM mm.create_ticket_with_token('lc_token', '[{"id": "tok3"}]', NULL);
SELECT * FROM pg_temp.events(:m0);

SELECT dblink_disconnect('lc_listener');
SELECT mm.drop_queue('lc_token', force => true);
SELECT mm.drop_queue('lc_acc', force => true);
SELECT mm.drop_queue('lc_plain', force => true);
SELECT mm.drop_queue('lc_auto', force => true);
SELECT mm.drop_queue('lc_cancel', force => true);
SELECT mm.drop_queue('lc_bf_teams', force => true);
SELECT mm.drop_queue('lc_deadline', force => true);
SELECT mm.drop_queue('lc_size', force => true);
SELECT mm.drop_queue('lc_rejoin', force => true);
SELECT mm.drop_queue('lc_shrink', force => true);
SELECT mm.drop_queue('lc_requeue_timeout', force => true);
DROP EXTENSION dblink;

-- the same with long player ids: three leavers' ids make an array of over
-- 130 bytes, which the tick reads from its statement's result and must copy
-- before that result is freed (read after it, the leavers went unchecked on
-- builds that clobber freed memory)
SELECT mm.create_queue('lc_rejoin_long', '{"teams": [{"name": "red", "min": 1, "max": 3},
                                                     {"name": "blue", "min": 1, "max": 3}],
                                           "match_size": {"min": 6, "max": 6}, "auto_backfill": true}');
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'lc_rejoin_long', jsonb_build_array(jsonb_build_object('id', 'long-player-id-' || repeat('x', 40) || n)),
       '2026-01-01 05:05:00+00'::timestamptz + n * interval '1 s'
  FROM generate_series(1, 6) n;
SELECT mm.tick('lc_rejoin_long', '2026-01-01 05:05:10+00');
SELECT id AS long_match FROM mm.matches WHERE queue = 'lc_rejoin_long' \gset
SELECT mm.leave_match(:long_match, mp.player_id, '2026-01-01 05:05:11+00') FROM mm.match_players mp
 WHERE mp.match_id = :long_match AND mp.team = 'red';
SELECT mm.create_ticket('lc_rejoin_long', jsonb_build_array(jsonb_build_object('id', mp.player_id)),
                        '2026-01-01 05:05:12+00') > 0 AS searching_again
  FROM mm.match_players mp WHERE mp.match_id = :long_match AND mp.team = 'red' ORDER BY mp.player_id;
SELECT mm.create_ticket('lc_rejoin_long', '[{"id": "long-newcomer"}]', '2026-01-01 05:05:13+00') > 0 AS created;
SELECT mm.tick('lc_rejoin_long', '2026-01-01 05:05:14+00');
SELECT string_agg(CASE WHEN mp.player_id = 'long-newcomer' THEN mp.player_id ELSE right(mp.player_id, 1) END || ':' || mp.team, ', ' ORDER BY mp.player_id) AS present
  FROM mm.match_players mp WHERE mp.match_id = :long_match AND mp.left_at IS NULL;
SELECT right(t.players -> 0 ->> 'id', 1) AS player, t.status FROM mm.tickets t
 WHERE t.queue = 'lc_rejoin_long' AND t.created_at > '2026-01-01 05:05:11+00' ORDER BY t.id;
SELECT mm.drop_queue('lc_rejoin_long', force => true);
