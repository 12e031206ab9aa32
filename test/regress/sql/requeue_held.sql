-- mm.requeue_match holds the players it puts back to searching: a requeued
-- ticket searches again only with every one of its players claimed by it
-- in mm.active_players.  A player whose claim is missing (a match formed by
-- 0.1 or 0.2, which released its players when the match formed; here made
-- by deleting the claims, as those versions left them) is claimed again; a
-- player whom another active ticket or live match holds meanwhile keeps
-- that, and the old ticket stays ended, like a ticket with a player who
-- left.  After every requeue and tick: no player has two active tickets or
-- two live matches.  Match and ticket ids are shown as players' names.
SET timezone = 'UTC';
\set SHOW_CONTEXT never

-- Who holds each player of a queue's tickets: "player>first player of the
-- ticket:status", one entry per claim.
CREATE FUNCTION pg_temp.held() RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(a.player_id || '>' || (t.players -> 0 ->> 'id') || ':' || t.status, ' '
							   ORDER BY a.player_id), '')
	  FROM mm.active_players a JOIN mm.tickets t ON t.id = a.ticket_id
	 WHERE a.queue LIKE 'rh\_%'
$$;
-- The live matches of the file: "queue status: players".
CREATE FUNCTION pg_temp.live() RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(s.g, ' ; ' ORDER BY s.g), '') FROM (
		SELECT m.queue || ' ' || m.status || ': '
			   || string_agg(mp.player_id, ',' ORDER BY mp.player_id) AS g
		  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
		 WHERE m.queue LIKE 'rh\_%' AND m.status IN ('proposed', 'ready', 'assigned')
		   AND mp.left_at IS NULL
		 GROUP BY m.id, m.queue, m.status) s
$$;
-- The invariant: nobody in two active tickets, two live matches, or an
-- active ticket and a live match; every player of an active ticket held by it.
CREATE FUNCTION pg_temp.invariant() RETURNS text LANGUAGE sql AS $$
	WITH engaged AS (
		SELECT p.value ->> 'id' AS player_id, 'ticket ' || t.id AS what
		  FROM mm.tickets_active t, jsonb_array_elements(t.players) p
		 WHERE t.queue LIKE 'rh\_%'
		UNION ALL
		SELECT mp.player_id, 'match ' || m.id
		  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
		 WHERE m.queue LIKE 'rh\_%' AND m.status IN ('ready', 'assigned') AND mp.left_at IS NULL
	), twice AS (
		SELECT player_id FROM engaged GROUP BY player_id HAVING count(*) > 1
	), unheld AS (
		SELECT p.value ->> 'id' AS player_id
		  FROM mm.tickets_active t, jsonb_array_elements(t.players) p
		 WHERE t.queue LIKE 'rh\_%'
		   AND NOT EXISTS (SELECT FROM mm.active_players a
							WHERE a.player_id = p.value ->> 'id' AND a.ticket_id = t.id)
	)
	SELECT CASE WHEN NOT EXISTS (SELECT FROM twice) AND NOT EXISTS (SELECT FROM unheld) THEN 'holds'
				ELSE 'twice: ' || coalesce((SELECT string_agg(player_id, ',' ORDER BY player_id) FROM twice), '')
					 || ' unheld: ' || coalesce((SELECT string_agg(player_id, ',' ORDER BY player_id) FROM unheld), '')
		   END
$$;
-- A requeue's result as the tickets' first players.
CREATE FUNCTION pg_temp.names(ids bigint[]) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(t.players -> 0 ->> 'id', ',' ORDER BY t.id), '')
	  FROM mm.tickets t WHERE t.id = ANY (ids)
$$;
-- A statement's outcome: ok, or the SQLSTATE and message (ids as N).
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ' ' || regexp_replace(SQLERRM, ' [0-9]+', ' N', 'g');
END
$$;
-- The newest match of a queue.
CREATE FUNCTION pg_temp.last_match(q text) RETURNS bigint LANGUAGE sql AS $$
	SELECT max(id) FROM mm.matches WHERE queue = q
$$;
-- As 0.1 and 0.2 left a match: its players released when it formed.
CREATE FUNCTION pg_temp.unclaim(match_id bigint) RETURNS void LANGUAGE sql AS $$
	DELETE FROM mm.active_players a USING mm.match_players mp
	 WHERE mp.match_id = unclaim.match_id AND a.player_id = mp.player_id AND a.ticket_id = mp.ticket_id
$$;

SELECT mm.create_queue('rh_duel', '{"teams": [{"name": "red", "min": 1, "max": 1},
                                              {"name": "blue", "min": 1, "max": 1}]}');
SELECT mm.create_queue('rh_other', '{"match_size": {"min": 2, "max": 2}}');

-- 1. a match of 0.4: its tickets search again, held by the same tickets
SELECT mm.create_ticket('rh_duel', '[{"id": "ana"}]', '2026-01-01 00:00:00+00') AS t_ana \gset
SELECT mm.create_ticket('rh_duel', '[{"id": "ben"}]', '2026-01-01 00:00:01+00') AS t_ben \gset
SELECT mm.tick('rh_duel', '2026-01-01 00:00:05+00');
SELECT pg_temp.last_match('rh_duel') AS m \gset
SELECT pg_temp.live(), pg_temp.held();
SELECT pg_temp.names(mm.requeue_match(:m, 'server lost', '2026-01-01 00:00:10+00')) AS requeued;
SELECT pg_temp.held(), pg_temp.invariant();
SELECT pg_temp.try($$SELECT mm.create_ticket('rh_duel', '[{"id": "ana"}]', '2026-01-01 00:00:11+00')$$);

-- 2. a match whose claims are gone (0.2's), and a player who searched
-- again meanwhile: her new ticket keeps her, the old one stays ended; the
-- other player goes back, held; the next tick puts her in one match only
SELECT mm.tick('rh_duel', '2026-01-01 00:00:15+00');
SELECT pg_temp.last_match('rh_duel') AS m \gset
SELECT pg_temp.unclaim(:m);
SELECT pg_temp.held();
SELECT mm.create_ticket('rh_duel', '[{"id": "ana"}]', '2026-01-01 00:00:20+00') AS t_ana2 \gset
SELECT pg_temp.live(), pg_temp.invariant();
SELECT pg_temp.names(mm.requeue_match(:m, 'server lost', '2026-01-01 00:00:21+00')) AS requeued;
SELECT id = :t_ana AS old_ticket, status, match_id = :m AS in_requeued_match
  FROM mm.tickets WHERE players @> '[{"id": "ana"}]' ORDER BY id;
SELECT pg_temp.held(), pg_temp.invariant();
SELECT mm.tick('rh_duel', '2026-01-01 00:00:25+00');
SELECT pg_temp.last_match('rh_duel') AS m \gset
SELECT pg_temp.live(), pg_temp.invariant();
SELECT mp.player_id, mp.ticket_id = :t_ana2 AS ana_new_ticket, mp.ticket_id = :t_ben AS ben_ticket
  FROM mm.match_players mp WHERE mp.match_id = :m ORDER BY 1;
SELECT mm.complete_match(:m, '2026-01-01 00:30:00+00');

-- 3. a match whose claims are gone, nobody searching meanwhile: the
-- requeue claims its players again, so they cannot search twice
SELECT mm.create_ticket('rh_duel', '[{"id": "cy"}]', '2026-01-01 01:00:00+00') AS t_cy \gset
SELECT mm.create_ticket('rh_duel', '[{"id": "di"}]', '2026-01-01 01:00:01+00') AS t_di \gset
SELECT mm.tick('rh_duel', '2026-01-01 01:00:05+00');
SELECT pg_temp.last_match('rh_duel') AS m \gset
SELECT pg_temp.unclaim(:m);
SELECT pg_temp.names(mm.requeue_match(:m, 'server lost', '2026-01-01 01:00:10+00')) AS requeued;
SELECT pg_temp.held(), pg_temp.invariant();
SELECT pg_temp.try($$SELECT mm.create_ticket('rh_duel', '[{"id": "cy"}]', '2026-01-01 01:00:11+00')$$);
SELECT pg_temp.try($$SELECT mm.create_ticket('rh_other', '[{"id": "di"}]', '2026-01-01 01:00:11+00')$$);
-- a claim that holds nothing (its ticket cancelled) is no obstacle: the
-- requeue replaces it
SELECT mm.tick('rh_duel', '2026-01-01 01:00:15+00');
SELECT pg_temp.last_match('rh_duel') AS m \gset
SELECT pg_temp.unclaim(:m);
SELECT mm.create_ticket('rh_other', '[{"id": "cy"}]', '2026-01-01 01:00:16+00') AS t_cy_other \gset
SELECT mm.cancel_ticket(:t_cy_other);
INSERT INTO mm.active_players (player_id, ticket_id, queue) VALUES ('cy', :t_cy_other, 'rh_other');
SELECT pg_temp.names(mm.requeue_match(:m, 'server lost', '2026-01-01 01:00:20+00')) AS requeued;
SELECT pg_temp.held(), pg_temp.invariant();
SELECT mm.cancel_ticket(:t_cy), mm.cancel_ticket(:t_di);

-- 4. a player whom another live match holds: her old ticket stays ended
SELECT FROM mm.create_ticket('rh_duel', '[{"id": "ed"}]', '2026-01-01 02:00:00+00');
SELECT FROM mm.create_ticket('rh_duel', '[{"id": "flo"}]', '2026-01-01 02:00:01+00');
SELECT mm.tick('rh_duel', '2026-01-01 02:00:05+00');
SELECT pg_temp.last_match('rh_duel') AS m \gset
SELECT pg_temp.unclaim(:m);
SELECT FROM mm.create_ticket('rh_other', '[{"id": "ed"}]', '2026-01-01 02:00:10+00');
SELECT FROM mm.create_ticket('rh_other', '[{"id": "gus"}]', '2026-01-01 02:00:11+00');
SELECT mm.tick('rh_other', '2026-01-01 02:00:15+00');
SELECT pg_temp.live();
SELECT pg_temp.names(mm.requeue_match(:m, 'server lost', '2026-01-01 02:00:20+00')) AS requeued;
SELECT pg_temp.live(), pg_temp.held(), pg_temp.invariant();
SELECT mm.complete_match(pg_temp.last_match('rh_other'), '2026-01-01 02:30:00+00');

-- 5. a party with one member held elsewhere stays ended whole; its other
-- member is released, and the other party searches again, held
SELECT mm.create_queue('rh_pairs', '{"teams": [{"name": "red", "min": 2, "max": 2},
                                               {"name": "blue", "min": 2, "max": 2}]}');
SELECT FROM mm.create_ticket('rh_pairs', '[{"id": "p1"}, {"id": "p2"}]', '2026-01-01 03:00:00+00');
SELECT FROM mm.create_ticket('rh_pairs', '[{"id": "p3"}, {"id": "p4"}]', '2026-01-01 03:00:01+00');
SELECT mm.tick('rh_pairs', '2026-01-01 03:00:05+00');
SELECT pg_temp.last_match('rh_pairs') AS m \gset
SELECT pg_temp.unclaim(:m);
SELECT FROM mm.create_ticket('rh_other', '[{"id": "p1"}]', '2026-01-01 03:00:10+00');
SELECT pg_temp.names(mm.requeue_match(:m, 'server lost', '2026-01-01 03:00:20+00')) AS requeued;
SELECT pg_temp.held(), pg_temp.invariant();
SELECT pg_temp.try($$SELECT mm.create_ticket('rh_other', '[{"id": "p2"}]', '2026-01-01 03:00:21+00')$$) AS p2_searches;
SELECT pg_temp.try($$SELECT mm.create_ticket('rh_other', '[{"id": "p3"}]', '2026-01-01 03:00:21+00')$$) AS p3_searches;

SELECT mm.drop_queue('rh_duel', force => true);
SELECT mm.drop_queue('rh_other', force => true);
SELECT mm.drop_queue('rh_pairs', force => true);
