-- One ticket in several queues: INSERT with a queues array or
-- mm.create_ticket(text[], ...); each queue applies its own config; the
-- first queue that matches the ticket wins and the ticket leaves the others
-- in the same transaction; metrics count it once, under the winner.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
SELECT mm.create_queue('mq_duel', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "ticket_timeout_seconds": 60,
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
SELECT mm.create_queue('mq_ffa', '{"match_size": {"min": 3, "max": 3}}');
SELECT mm.create_queue('mq_acc', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "acceptance_timeout_seconds": 10}');
CREATE FUNCTION pg_temp.tickets() RETURNS TABLE (player text, queue text, queues text[], status text)
LANGUAGE sql AS $$
	SELECT t.players -> 0 ->> 'id', t.queue, t.queues, t.status FROM mm.tickets t
	 WHERE t.queue LIKE 'mq\_%' ORDER BY t.id
$$;
CREATE FUNCTION pg_temp.listed() RETURNS TABLE (queue text, player text) LANGUAGE sql AS $$
	SELECT q.queue, t.players -> 0 ->> 'id' FROM mm.ticket_queues q JOIN mm.tickets t ON t.id = q.ticket_id
	 WHERE q.queue LIKE 'mq\_%' ORDER BY 1, 2
$$;

-- the first queue is the ticket's own, the others are listed for their ticks
SELECT mm.create_ticket(ARRAY['mq_duel', 'mq_ffa'], '[{"id": "m1", "attributes": {"skill": 1000}}]',
                        '2026-01-01 00:00:00+00') > 0 AS created;
INSERT INTO mm.tickets (queue, queues, players, created_at) VALUES
  ('mq_ffa', '{mq_duel}', '[{"id": "m2", "attributes": {"skill": 3000}}]', '2026-01-01 00:00:01+00');
SELECT * FROM pg_temp.tickets();
SELECT * FROM pg_temp.listed();
-- why m1 waits, in each of its queues (its own by default): in mq_duel m2 is
-- 2000 apart in skill; in mq_ffa the two fit and wait for a third player
SELECT e ->> 'queue' AS queue, e -> 'queues' AS queues, e -> 'searching_tickets' AS others,
       e -> 'nearest' -> 0 -> 'blocked_by' AS nearest_blocked_by
  FROM mm.tickets t, LATERAL (VALUES (1, mm.explain_ticket(t.id, '2026-01-01 00:00:02+00')),
                                     (2, mm.explain_ticket(t.id, '2026-01-01 00:00:02+00', 'mq_ffa'))) x(n, e)
 WHERE t.players -> 0 ->> 'id' = 'm1' ORDER BY x.n;
-- not one of its queues (the ticket's id masked)
DO $$
DECLARE
	detail text;
BEGIN
	PERFORM mm.explain_ticket(t.id, '2026-01-01 00:00:02+00', 'mq_acc')
	   FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'm1';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RAISE NOTICE '%: % (%)', SQLSTATE, regexp_replace(SQLERRM, '[0-9]+', 'N'), detail;
END
$$;

-- bad lists: the index and the queue are named (the detail names the ticket)
\set VERBOSITY terse
SELECT mm.create_ticket(ARRAY['mq_duel', 'mq_nope'], '[{"id": "x", "attributes": {"skill": 1}}]', '2026-01-01 00:00:02+00');
SELECT mm.create_ticket(ARRAY['mq_duel', 'mq_duel'], '[{"id": "x", "attributes": {"skill": 1}}]', '2026-01-01 00:00:02+00');
SELECT mm.create_ticket(ARRAY['mq_duel', 'mq_ffa', 'mq_ffa'], '[{"id": "x", "attributes": {"skill": 1}}]', '2026-01-01 00:00:02+00');
SELECT mm.create_ticket(ARRAY[]::text[], '[{"id": "x", "attributes": {"skill": 1}}]', '2026-01-01 00:00:02+00');
INSERT INTO mm.tickets (queue, queues, players) VALUES ('mq_duel', '{}', '[{"id": "x", "attributes": {"skill": 1}}]');
INSERT INTO mm.tickets (queue, queues, players) VALUES ('mq_duel', ARRAY['mq_ffa', NULL], '[{"id": "x", "attributes": {"skill": 1}}]');
INSERT INTO mm.tickets (queue, queues, players)
SELECT 'mq_duel', array_agg('q' || i), '[{"id": "x", "attributes": {"skill": 1}}]' FROM generate_series(1, 17) i;
-- every queue's config validates the players: a party of two is too big for the duel
SELECT mm.create_ticket(ARRAY['mq_ffa', 'mq_duel'], '[{"id": "x", "attributes": {"skill": 1}}, {"id": "y", "attributes": {"skill": 1}}]', '2026-01-01 00:00:02+00');
-- one active ticket per player still holds
SELECT mm.create_ticket(ARRAY['mq_ffa'], '[{"id": "m1"}]', '2026-01-01 00:00:02+00');
\set VERBOSITY default
SELECT count(*) AS nothing_left_behind FROM mm.ticket_queues q
 WHERE NOT EXISTS (SELECT FROM mm.tickets_active t WHERE t.id = q.ticket_id);

-- the duel has no opponent for m1 yet; the ffa has two more players: m1
-- is matched there, leaves the duel in the same transaction and ends under
-- the ffa, its own queue joining its other queues
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('mq_ffa', '[{"id": "f1"}]', '2026-01-01 00:00:03+00');
SELECT mm.tick('mq_duel', '2026-01-01 00:00:05+00') AS duel_matches;
SELECT mm.tick('mq_ffa', '2026-01-01 00:00:05+00') AS ffa_matches;
SELECT * FROM pg_temp.tickets();
SELECT * FROM pg_temp.listed();
SELECT m.queue, string_agg(mp.player_id, ',' ORDER BY mp.player_id) AS players
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE m.queue LIKE 'mq\_%' GROUP BY m.id, m.queue ORDER BY m.id;

-- a duel ticket that also searches in the ffa: matched in the duel first
SELECT mm.complete_match(id, '2026-01-01 00:00:06+00') FROM mm.matches WHERE queue = 'mq_ffa';
SELECT mm.create_ticket(ARRAY['mq_duel', 'mq_ffa'], '[{"id": "m3", "attributes": {"skill": 1050}}]',
                        '2026-01-01 00:00:07+00') > 0 AS created;
SELECT mm.create_ticket(ARRAY['mq_duel'], '[{"id": "d1", "attributes": {"skill": 1000}}]',
                        '2026-01-01 00:00:08+00') > 0 AS created;
SELECT mm.create_ticket(ARRAY['mq_ffa'], '[{"id": "f2"}]', '2026-01-01 00:00:09+00') > 0 AS created;
SELECT mm.create_ticket(ARRAY['mq_ffa'], '[{"id": "f3"}]', '2026-01-01 00:00:09+00') > 0 AS created;
SELECT mm.tick('mq_duel', '2026-01-01 00:00:10+00') AS duel_matches;
SELECT mm.tick('mq_ffa', '2026-01-01 00:00:10+00') AS ffa_matches;
SELECT * FROM pg_temp.tickets() WHERE player IN ('m3', 'd1', 'f2', 'f3');
SELECT * FROM pg_temp.listed();

-- metrics count each ticket once, under the queue that matched it
SELECT queue, count(*) AS matched_tickets FROM mm.tickets
 WHERE queue LIKE 'mq\_%' AND status = 'matched' GROUP BY queue ORDER BY queue;

-- cancelled: it leaves every queue
SELECT mm.create_ticket(ARRAY['mq_ffa', 'mq_duel'], '[{"id": "c1", "attributes": {"skill": 5000}}]',
                        '2026-01-01 00:00:20+00') AS c1 \gset
SELECT * FROM pg_temp.listed();
SELECT mm.cancel_ticket(:c1);
SELECT * FROM pg_temp.listed();

-- acceptance: proposed in one queue, the others do not see it; rejected, it
-- searches in all its queues again
SELECT mm.complete_match(id, '2026-01-01 00:00:21+00') FROM mm.matches WHERE queue = 'mq_duel' AND status = 'ready';
SELECT mm.create_ticket(ARRAY['mq_duel', 'mq_acc'], '[{"id": "a1", "attributes": {"skill": 9000}}]',
                        '2026-01-01 00:00:22+00') > 0 AS created;
SELECT mm.create_ticket(ARRAY['mq_acc'], '[{"id": "a2"}]', '2026-01-01 00:00:23+00') > 0 AS created;
SELECT mm.create_ticket(ARRAY['mq_duel'], '[{"id": "d2", "attributes": {"skill": 9050}}]',
                        '2026-01-01 00:00:24+00') > 0 AS created;
SELECT mm.tick('mq_acc', '2026-01-01 00:00:25+00') AS acc_matches;
SELECT mm.tick('mq_duel', '2026-01-01 00:00:25+00') AS duel_matches_while_proposed;
SELECT mm.accept_match(id, 'a2', false, '2026-01-01 00:00:26+00') FROM mm.matches WHERE queue = 'mq_acc';
SELECT * FROM pg_temp.tickets() WHERE player IN ('a1', 'a2', 'd2');
SELECT mm.tick('mq_duel', '2026-01-01 00:00:27+00') AS duel_matches;
SELECT * FROM pg_temp.tickets() WHERE player IN ('a1', 'd2');

-- requeued after a failed allocation: back in all its queues
SELECT mm.requeue_match(m.id, 'no server', '2026-01-01 00:00:28+00') IS NOT NULL AS requeued
  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
 WHERE mp.player_id = 'a1' AND m.status = 'ready';
SELECT * FROM pg_temp.tickets() WHERE player IN ('a1', 'd2');
SELECT * FROM pg_temp.listed();

-- a dropped queue leaves the lists of the tickets that also searched in it
SELECT mm.drop_queue('mq_acc', force => true);
SELECT * FROM pg_temp.tickets() WHERE status = 'searching';
SELECT * FROM pg_temp.listed();

SELECT mm.drop_queue('mq_duel', force => true);
SELECT mm.drop_queue('mq_ffa', force => true);
SELECT count(*) AS listed_left FROM mm.ticket_queues;

-- dropping a queue with a proposed match that holds a ticket of another
-- queue: the match is cancelled first, the other queue's ticket searches
-- again there (it was left proposed in a match that no longer existed)
SELECT mm.create_queue('mq_own', '{"match_size": {"min": 3, "max": 3}}');
SELECT mm.create_queue('mq_prop', '{"match_size": {"min": 2, "max": 2}, "acceptance_timeout_seconds": 10}');
SELECT mm.create_ticket(ARRAY['mq_own', 'mq_prop'], '[{"id": "x1"}]', '2026-01-01 00:01:00+00') > 0 AS created;
SELECT mm.create_ticket('mq_prop', '[{"id": "y1"}]', '2026-01-01 00:01:01+00') > 0 AS created;
SELECT mm.tick('mq_prop', '2026-01-01 00:01:05+00') AS proposed;
SELECT mm.drop_queue('mq_prop');
SELECT mm.drop_queue('mq_prop', force => true);
SELECT * FROM pg_temp.tickets() WHERE player = 'x1';
SELECT count(*) AS held FROM mm.active_players WHERE player_id = 'x1';
-- dropping the ticket's own queue: the proposed match it is in (of another
-- queue) is cancelled, its other ticket searches again (it went on to ready
-- with a player who had no ticket)
SELECT mm.create_queue('mq_prop', '{"match_size": {"min": 2, "max": 2}, "acceptance_timeout_seconds": 10}');
SELECT mm.cancel_ticket(t.id) FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'x1' AND t.status = 'searching';
SELECT mm.create_ticket(ARRAY['mq_own', 'mq_prop'], '[{"id": "x2"}]', '2026-01-01 00:01:10+00') > 0 AS created;
SELECT mm.create_ticket('mq_prop', '[{"id": "y2"}]', '2026-01-01 00:01:11+00') > 0 AS created;
SELECT mm.tick('mq_prop', '2026-01-01 00:01:15+00') AS proposed;
SELECT mm.drop_queue('mq_own', force => true);
SELECT m.status, m.cancel_reason FROM mm.matches m WHERE m.queue = 'mq_prop' ORDER BY m.id;
SELECT * FROM pg_temp.tickets() WHERE player IN ('x2', 'y2');
SELECT player_id FROM mm.active_players WHERE player_id IN ('x2', 'y2') ORDER BY 1;
SELECT mm.drop_queue('mq_prop', force => true);

-- a NULL among a ticket's other queues (written by an UPDATE) lists no
-- queue: cancelling the ticket ends it and unlists it from its other queue
SELECT mm.create_queue('mq_n1', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.create_queue('mq_n2', '{"match_size": {"min": 2, "max": 2}}');
SELECT mm.create_ticket(ARRAY['mq_n1', 'mq_n2'], '[{"id": "n1"}]', '2026-01-01 00:02:00+00') AS n1 \gset
UPDATE mm.tickets_active SET queues = ARRAY[NULL, 'mq_n2'] WHERE id = :n1;
SELECT mm.cancel_ticket(:n1) AS cancelled;
SELECT status, queues FROM mm.tickets WHERE id = :n1;
SELECT count(*) AS listed_left FROM mm.ticket_queues WHERE ticket_id = :n1;
SELECT mm.drop_queue('mq_n1', force => true);
SELECT mm.drop_queue('mq_n2', force => true);
