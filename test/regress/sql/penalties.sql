-- Penalties, the SQL side: the tables (dumped, placed on Citus, who reads
-- them), the three offences through the lifecycle (a dodge in
-- mm.accept_match, an acceptance timeout in the tick, a leave in
-- mm.leave_match) with their cooldowns, growth and cap, the low-priority
-- games from the offences threshold on, the event player_penalised, the
-- cooldown refusing a new ticket (mm.create_ticket, INSERT, a multi-queue
-- ticket) until it ends (the message's time to the second), a cancelled
-- proposed ticket as a dodge (mm.cancel_ticket), good games from
-- mm.report_result working the games off and forgiving offences,
-- mm.get_penalties, mm.penalty_stats and mm.low_priority_waits.  The tick's
-- low-priority pool is in sql/penalties_tick.sql, the races in test/specs.
-- Every time is explicit (2043-05-01), but a cancel's (now(): shown
-- relative to the offence it records).
SET timezone = 'UTC';
\set SHOW_CONTEXT never
\i sql/include/try.sql
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('pn_listener',
	format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
		   split_part(current_setting('unix_socket_directories'), ',', 1)));
SELECT dblink_exec('pn_listener', 'LISTEN mm_events');
SELECT last_value AS ticket_seq_last, is_called AS ticket_seq_called FROM mm.tickets_id_seq \gset
SELECT last_value AS match_seq_last, is_called AS match_seq_called FROM mm.matches_id_seq \gset
SELECT last_value AS history_seq_last, is_called AS history_seq_called FROM mm.rating_history_id_seq \gset
-- the player_penalised events sent since the last call, signature checked
CREATE FUNCTION pg_temp.penalised() RETURNS TABLE (event jsonb, signed boolean)
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	quiet integer := 0;
BEGIN
	WHILE quiet < 3 LOOP
		PERFORM pg_sleep(0.1);
		quiet := quiet + 1;
		FOR r IN SELECT * FROM dblink_get_notify('pn_listener') LOOP
			quiet := 0;
			CONTINUE WHEN r.extra::jsonb ->> 'event' <> 'player_penalised';
			event := r.extra::jsonb - 'sig' - 'match_id';
			signed := mm.verify_event(r.extra);
			RETURN NEXT;
		END LOOP;
	END LOOP;
END
$$;
-- the latest match of a player in a queue
CREATE FUNCTION pg_temp.match_of(q text, player text) RETURNS bigint LANGUAGE sql AS $$
	SELECT max(mp.match_id) FROM mm.match_players mp WHERE mp.queue = q AND mp.player_id = player
$$;

-- ===================================================================
-- The tables
-- ===================================================================
SELECT c.relname, c.oid = ANY (e.extconfig) AS dumped, s.placement, s.distribution_column
  FROM pg_class c CROSS JOIN pg_extension e
  LEFT JOIN mm.sharding() s ON s.table_name = c.oid
 WHERE e.extname = 'matchmaking' AND c.relnamespace = 'mm'::regnamespace
   AND c.relname IN ('player_penalties', 'penalty_history')
 ORDER BY c.relname;
SELECT r.role, has_table_privilege(r.role, 'mm.player_penalties', 'SELECT') AS read,
	   has_table_privilege(r.role, 'mm.player_penalties', 'INSERT, UPDATE, DELETE') AS write,
	   has_function_privilege(r.role, 'mm.get_penalties(text, timestamptz)', 'EXECUTE') AS get_penalties,
	   has_function_privilege(r.role, 'mm.penalty_stats(interval, timestamptz)', 'EXECUTE') AS stats,
	   has_function_privilege(r.role, 'mm.record_offences(text, text[], text, bigint, timestamptz)', 'EXECUTE') AS record
  FROM unnest(ARRAY['mm_admin', 'mm_director', 'mm_analyst', 'mm_ticker', 'mm_frontend']) r(role);

-- ===================================================================
-- A dodge, an acceptance timeout, a leave
-- ===================================================================
-- 1v1 with acceptance; a dodge cools down 60 s, a timeout 30 s, a leave
-- 100 s, each further offence twice as long, at most 150 s; from the 2nd
-- offence on, 2 low-priority games; 2 good games forgive one offence.
SELECT mm.create_queue('pn_duel', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"acceptance_timeout_seconds": 10, "rating": {"system": "glicko2", "pool": "pn_duel"},
	"penalties": {"cooldown_seconds": {"dodge": 60, "acceptance_timeout": 30, "leave": 100},
	              "cooldown_growth": 2, "max_cooldown_seconds": 150,
	              "low_priority": {"offences": 2, "games": 2, "max_wait_seconds": 60},
	              "forgive_after_games": 2}}');
SELECT mm.create_queue('pn_other', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}]}');

-- p1 dodges: a cooldown of 60 s in pn_duel only; p2 searches again
SELECT mm.create_ticket('pn_duel', '[{"id": "pn1"}]', '2043-05-01 10:00:00') > 0 AS t1,
	   mm.create_ticket('pn_duel', '[{"id": "pn2"}]', '2043-05-01 10:00:01') > 0 AS t2;
SELECT mm.tick('pn_duel', '2043-05-01 10:00:02') AS proposed;
SELECT mm.accept_match(pg_temp.match_of('pn_duel', 'pn1'), 'pn1', false, '2043-05-01 10:00:05') AS answer;
SELECT * FROM pg_temp.penalised();
SELECT player_id, queue, offences, cooldown_until, low_priority_games, good_games FROM mm.player_penalties
 WHERE queue LIKE 'pn\_%' ORDER BY player_id, queue;
-- refused in pn_duel until 10:01:05, by every way in; another queue is open
SELECT pg_temp.try($$SELECT mm.create_ticket('pn_duel', '[{"id": "pn1"}]', '2043-05-01 10:00:30')$$) AS create_ticket,
	   pg_temp.try($$INSERT INTO mm.tickets (queue, players, created_at)
					 VALUES ('pn_duel', '[{"id": "pn1"}]', '2043-05-01 10:01:04.999')$$) AS insert,
	   pg_temp.try($$SELECT mm.create_ticket(ARRAY['pn_other', 'pn_duel'], '[{"id": "pn1"}]', '2043-05-01 10:00:30')$$) AS multi_queue,
	   pg_temp.try($$INSERT INTO mm.tickets (queue, players, created_at)
					 VALUES ('pn_duel', '[{"id": "pn9"}]', '2043-05-01 10:00:30'),
							('pn_duel', '[{"id": "pn1"}]', '2043-05-01 10:00:30')$$) AS two_rows;
SELECT mm.create_ticket('pn_duel', '[{"id": "pn1"}]', '2043-05-01 10:00:30');
-- a refused statement leaves nothing; a ticket elsewhere, and one at the end of the cooldown, pass
SELECT count(*) AS held FROM mm.active_players WHERE player_id IN ('pn1', 'pn9');
SELECT mm.create_ticket('pn_other', '[{"id": "pn1"}]', '2043-05-01 10:00:30') > 0 AS elsewhere;
SELECT mm.cancel_ticket(t.id) FROM mm.tickets_active t WHERE t.queue = 'pn_other';
SELECT mm.create_ticket('pn_duel', '[{"id": "pn1"}]', '2043-05-01 10:01:05') > 0 AS after_cooldown;

-- pn1 (2nd offence) and pn2 let the proposal time out: pn1 cools down
-- min(30 * 2, 150) = 60 s and owes 2 low-priority games; pn2 30 s
SELECT mm.tick('pn_duel', '2043-05-01 10:01:06') AS proposed;
SELECT mm.tick('pn_duel', '2043-05-01 10:01:20') AS after_deadline;
SELECT * FROM pg_temp.penalised() ORDER BY event ->> 'player_id';
SELECT player_id, offences, cooldown_until, low_priority_games FROM mm.player_penalties
 WHERE queue = 'pn_duel' ORDER BY player_id;

-- pn1 leaves a live match: the 3rd offence, 100 * 4 capped at 150 s
SELECT mm.create_ticket('pn_duel', '[{"id": "pn1"}]', '2043-05-01 10:03:00') > 0 AS t1,
	   mm.create_ticket('pn_duel', '[{"id": "pn3"}]', '2043-05-01 10:03:00') > 0 AS t3;
-- (pn1 is penalised: the tick holds it apart from pn3 until it is 60 s old)
SELECT mm.tick('pn_duel', '2043-05-01 10:03:30') AS before_the_bound,
	   mm.tick('pn_duel', '2043-05-01 10:04:00') AS at_the_bound;
SELECT mm.accept_match(pg_temp.match_of('pn_duel', 'pn1'), p, true, '2043-05-01 10:04:01')
  FROM unnest(ARRAY['pn1', 'pn3']) p;
SELECT player_id, low_priority FROM mm.match_players WHERE match_id = pg_temp.match_of('pn_duel', 'pn1') ORDER BY player_id;
SELECT mm.leave_match(pg_temp.match_of('pn_duel', 'pn1'), 'pn1', '2043-05-01 10:05:00');
SELECT * FROM pg_temp.penalised();
SELECT player_id, reason, offences, cooldown_until, low_priority_games, created_at
  FROM mm.penalty_history WHERE queue = 'pn_duel' ORDER BY created_at, player_id;
-- leaving twice is one offence
SELECT mm.leave_match(pg_temp.match_of('pn_duel', 'pn1'), 'pn1', '2043-05-01 10:05:01');
SELECT count(*) AS leaves FROM mm.penalty_history WHERE queue = 'pn_duel' AND reason = 'leave';

-- ===================================================================
-- Good games work it off
-- ===================================================================
-- the match's result: pn3 stayed (a good game: pn3 has no standing, so
-- nothing to count), pn1 left (none)
SELECT count(*) AS rated FROM mm.report_result(pg_temp.match_of('pn_duel', 'pn1'),
	jsonb_build_object((SELECT team FROM mm.match_players WHERE match_id = pg_temp.match_of('pn_duel', 'pn3')
						 AND player_id = 'pn3'), 1,
					   (SELECT team FROM mm.match_players WHERE match_id = pg_temp.match_of('pn_duel', 'pn1')
						 AND player_id = 'pn1'), 2), '2043-05-01 10:20:00');
SELECT player_id, offences, low_priority_games, good_games FROM mm.player_penalties
 WHERE queue = 'pn_duel' ORDER BY player_id;
-- two played games of pn1 (penalised) and pn2 (not): matched together once
-- pn1's ticket is 60 s old
CREATE FUNCTION pg_temp.play(at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	m bigint;
BEGIN
	PERFORM mm.create_ticket('pn_duel', '[{"id": "pn1"}]', at);
	PERFORM mm.create_ticket('pn_duel', '[{"id": "pn2"}]', at);
	PERFORM mm.tick('pn_duel', at + interval '59 seconds');
	PERFORM mm.tick('pn_duel', at + interval '60 seconds');
	m := pg_temp.match_of('pn_duel', 'pn1');
	PERFORM mm.accept_match(m, p, true, at + interval '61 seconds') FROM unnest(ARRAY['pn1', 'pn2']) p;
	PERFORM mm.report_result(m, '{"a": 1, "b": 2}', at + interval '10 minutes');
END
$$;
SELECT pg_temp.play('2043-05-01 11:00');
SELECT player_id, offences, low_priority_games, good_games FROM mm.player_penalties
 WHERE queue = 'pn_duel' ORDER BY player_id;
SELECT pg_temp.play('2043-05-01 12:00');
SELECT player_id, offences, low_priority_games, good_games FROM mm.player_penalties
 WHERE queue = 'pn_duel' ORDER BY player_id;

-- ===================================================================
-- What the backend and the analyst see
-- ===================================================================
SELECT queue, offences, cooldown_until, cooling_down, low_priority_games, good_games,
	   jsonb_path_query_array(recent, '$[*].reason') AS recent_reasons
  FROM mm.get_penalties('pn1', '2043-05-01 10:06:00');
SELECT count(*) AS rows_for_nobody FROM mm.get_penalties('pn_nobody');
SELECT pg_temp.try($$SELECT * FROM mm.get_penalties(NULL)$$) AS null_player,
	   pg_temp.try($$SELECT * FROM mm.get_penalties('pn1', 'infinity')$$) AS infinite_now;
SELECT * FROM mm.penalty_stats('1 day', '2043-05-01 10:06:00') WHERE queue LIKE 'pn\_%';
SELECT queue, low_priority, players, wait_bound_seconds, max_wait_seconds <= wait_bound_seconds + 1 AS bounded
  FROM mm.low_priority_waits('1 day', '2043-05-01 13:00:00') WHERE queue LIKE 'pn\_%';
SELECT pg_temp.try($$SELECT * FROM mm.penalty_stats('-1 day')$$) AS negative_window;

-- a queue without penalties records nothing
SELECT mm.create_ticket('pn_other', '[{"id": "pn5"}]', '2043-05-01 14:00') > 0 AS t5,
	   mm.create_ticket('pn_other', '[{"id": "pn6"}]', '2043-05-01 14:00') > 0 AS t6;
SELECT mm.tick('pn_other', '2043-05-01 14:00:01') AS formed;
SELECT mm.leave_match(pg_temp.match_of('pn_other', 'pn5'), 'pn5', '2043-05-01 14:01:00');
SELECT count(*) AS standings FROM mm.player_penalties WHERE player_id IN ('pn5', 'pn6');

-- ===================================================================
-- Cancelling a proposed ticket is a dodge
-- ===================================================================
-- 2v2 of two parties, a dodge cools down 60 s, a timeout 30 s.  The tick at
-- 15:00:01.5 proposes; a cancel by id, then one by (queue, id), each before
-- the deadline: every player of the cancelled ticket dodged (pc1 also after
-- accepting), at the match's time (now() is earlier than 2043); the other
-- party searches again without an offence.
SELECT mm.create_queue('pn_cancel', '{"teams": [{"name": "a", "min": 2, "max": 2}, {"name": "b", "min": 2, "max": 2}],
	"acceptance_timeout_seconds": 10,
	"penalties": {"cooldown_seconds": {"dodge": 60, "acceptance_timeout": 30}}}');
SELECT mm.create_ticket('pn_cancel', '[{"id": "pc1"}, {"id": "pc2"}]', '2043-05-01 15:00:00') AS pc_a \gset
SELECT mm.create_ticket('pn_cancel', '[{"id": "pc3"}, {"id": "pc4"}]', '2043-05-01 15:00:00') > 0 AS pc_b;
SELECT mm.tick('pn_cancel', '2043-05-01 15:00:01.5') AS proposed;
SELECT mm.accept_match(pg_temp.match_of('pn_cancel', 'pc1'), 'pc1', true, '2043-05-01 15:00:01.6') AS pc1_accepted;
SELECT mm.cancel_ticket(:pc_a) AS cancelled_by_id;
SELECT * FROM pg_temp.penalised() ORDER BY event ->> 'player_id';
SELECT m.status, m.cancel_reason, (SELECT string_agg((t.players -> 0 ->> 'id') || ':' || t.status, ' ' ORDER BY t.id)
										 FROM mm.tickets t WHERE t.queue = 'pn_cancel') AS tickets
  FROM mm.matches m WHERE m.id = pg_temp.match_of('pn_cancel', 'pc1');
SELECT player_id, reason, offences, cooldown_until, created_at, match_id = pg_temp.match_of('pn_cancel', 'pc1') AS its_match
  FROM mm.penalty_history WHERE queue = 'pn_cancel' ORDER BY player_id;
-- the cooldown ends at 15:01:01.5: the message names the second it is
-- over (15:01:02), not its fraction
SELECT pg_temp.try($$SELECT mm.create_ticket('pn_cancel', '[{"id": "pc1"}, {"id": "pc2"}]', '2043-05-01 15:01:01.4')$$) AS refused;
SELECT mm.create_ticket('pn_cancel', '[{"id": "pc1"}, {"id": "pc2"}]', '2043-05-01 15:01:02') > 0 AS at_the_time_printed;
-- by (queue, id): pc1 and pc2 against the party still searching
SELECT mm.tick('pn_cancel', '2043-05-01 15:01:03') AS proposed;
SELECT mm.cancel_ticket('pn_cancel', t.id) AS cancelled_by_queue
  FROM mm.tickets_active t WHERE t.queue = 'pn_cancel' AND t.players -> 0 ->> 'id' = 'pc3';
SELECT * FROM pg_temp.penalised() ORDER BY event ->> 'player_id';
SELECT player_id, offences, cooldown_until FROM mm.player_penalties WHERE queue = 'pn_cancel' ORDER BY player_id;
-- a searching ticket's cancel is no offence; a second cancel returns false
SELECT mm.cancel_ticket(t.id) AS cancelled_searching, mm.cancel_ticket(t.id) AS again
  FROM mm.tickets_active t WHERE t.queue = 'pn_cancel';
SELECT count(*) AS offences FROM mm.penalty_history WHERE queue = 'pn_cancel';
-- past the deadline (a match proposed in 2020: now() is later than its
-- deadline) the tick would have found the silent players: the cancelled
-- ticket's players who had not answered let it time out (30 s from the
-- cancel); one who had accepted did nothing
SELECT mm.create_ticket('pn_cancel', '[{"id": "pc5"}, {"id": "pc6"}]', '2020-01-01 00:00:00') AS pc_c \gset
SELECT mm.create_ticket('pn_cancel', '[{"id": "pc7"}, {"id": "pc8"}]', '2020-01-01 00:00:00') > 0 AS pc_d;
SELECT mm.tick('pn_cancel', '2020-01-01 00:00:01') AS proposed;
SELECT mm.accept_match(pg_temp.match_of('pn_cancel', 'pc5'), 'pc5', true, '2020-01-01 00:00:02') AS pc5_accepted;
SELECT mm.cancel_ticket('pn_cancel', :pc_c) AS cancelled_late;
SELECT event ->> 'player_id' AS player_id, event ->> 'reason' AS reason, signed FROM pg_temp.penalised();
SELECT player_id, reason, cooldown_until - created_at AS cooldown, created_at > '2026-01-01' AS at_the_cancel
  FROM mm.penalty_history WHERE queue = 'pn_cancel' AND player_id IN ('pc5', 'pc6', 'pc7', 'pc8');

-- ===================================================================
-- Clean up
-- ===================================================================
-- dropping a queue drops its penalties
SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['pn_duel', 'pn_other', 'pn_cancel']) q;
SELECT (SELECT count(*) FROM mm.player_penalties WHERE queue LIKE 'pn\_%') AS standings_left,
	   (SELECT count(*) FROM mm.penalty_history WHERE queue LIKE 'pn\_%') AS offences_left;
DELETE FROM mm.rating_history WHERE pool LIKE 'pn\_%';
DELETE FROM mm.ratings WHERE pool LIKE 'pn\_%';
SELECT dblink_disconnect('pn_listener');
SELECT setval('mm.tickets_id_seq', :ticket_seq_last, :'ticket_seq_called') > 0 AS sequence_restored,
	   setval('mm.matches_id_seq', :match_seq_last, :'match_seq_called') > 0 AS match_sequence_restored,
	   setval('mm.rating_history_id_seq', :history_seq_last, :'history_seq_called') > 0 AS history_sequence_restored;
DROP EXTENSION dblink;
