
-- ===================================================================
-- Section: the players of live matches stay held (docs/lifecycle.md)
-- ===================================================================
--
-- Since 0.3 a player of a live match (proposed, ready or assigned, not
-- left) is claimed in mm.active_players by the ticket that brought them,
-- so the player cannot search until the match ends, and mm.requeue_match
-- puts that ticket back to searching under the same claim.  Matches formed
-- by 0.1 or 0.2 were left unclaimed: those versions released a player when
-- the match formed, and had no way to end a match, so every one of them is
-- still `ready`.  Requeueing one of them after the upgrade put tickets back
-- to searching without a claim, next to the player's newer ticket: one
-- player in two matches, or a tick that failed on match_players_pkey on
-- every run.
--
-- The upgrade restores one claim per player, without changing a ticket's
-- or a match's state where it can:
--  1. claims that hold nothing any more (neither an active ticket nor a
--     live match the player has not left) are dropped, as mm.claim_players
--     drops them when it meets one;
--  2. a player of an active ticket that holds no claim (a 0.3 database
--     where such a match was already requeued) is claimed by that ticket,
--     the oldest first; an active ticket whose player another active ticket
--     or live match already holds is a duplicate and is cancelled, as
--     mm.cancel_ticket does (a WARNING names the tickets), since the player
--     cannot be in both;
--  3. a player of a live match who is still unclaimed is claimed by the
--     ticket that brought them, in their newest live match.
-- A player of a live pre-0.3 match who holds an active ticket keeps that
-- ticket: the player is searching now, which a finished 0.2 game explains
-- and a forced cancel would punish.  That match does not hold the player;
-- ending it (complete, report a result) changes nothing for them, and
-- requeueing it leaves their ticket ended, as for a player who left.
--
-- Afterwards the 0.1/0.2 matches hold their players like any live match:
-- end the ones that were played with mm.complete_match (or let
-- live_match_timeout_seconds expire them) so their players may search.

-- 1. stale claims
DELETE FROM mm.active_players a
 WHERE NOT mm.claim_is_live(a.player_id, a.ticket_id);

-- 2. active tickets: claim their unclaimed players, cancel the duplicates
INSERT INTO mm.active_players (player_id, ticket_id, queue)
SELECT DISTINCT ON (p.value OPERATOR(pg_catalog.->>) 'id')
	   p.value OPERATOR(pg_catalog.->>) 'id', t.id, t.queue
  FROM mm.tickets_active t, pg_catalog.jsonb_array_elements(t.players) p
 WHERE NOT EXISTS (SELECT FROM mm.active_players a
					WHERE a.player_id OPERATOR(pg_catalog.=) (p.value OPERATOR(pg_catalog.->>) 'id'))
 ORDER BY p.value OPERATOR(pg_catalog.->>) 'id', t.created_at, t.id;

DO $repair$
DECLARE
	duplicates bigint[];
BEGIN
	SELECT pg_catalog.array_agg(DISTINCT t.id ORDER BY t.id) INTO duplicates
	  FROM mm.tickets_active t, pg_catalog.jsonb_array_elements(t.players) p
	  JOIN mm.active_players a ON a.player_id OPERATOR(pg_catalog.=) (p.value OPERATOR(pg_catalog.->>) 'id')
	 WHERE a.ticket_id OPERATOR(pg_catalog.<>) t.id;
	IF duplicates IS NOT NULL THEN
		-- as the frontend would: a proposed ticket rejects its match, the
		-- claims the ticket holds go, ticket_cancelled is announced
		PERFORM mm.cancel_ticket(d.id) FROM pg_catalog.unnest(duplicates) d(id) ORDER BY d.id;
		RAISE WARNING 'matchmaking: cancelled % ticket(s) of players that another ticket or live match holds: %',
			pg_catalog.cardinality(duplicates), pg_catalog.array_to_string(duplicates, ', ');
	END IF;
END
$repair$;

-- 3. live matches: their unclaimed players, each in the newest one
INSERT INTO mm.active_players (player_id, ticket_id, queue)
SELECT DISTINCT ON (mp.player_id) mp.player_id, mp.ticket_id, mp.queue
  FROM mm.match_players mp
  JOIN mm.matches m ON m.id OPERATOR(pg_catalog.=) mp.match_id
 WHERE m.status OPERATOR(pg_catalog.=) ANY (ARRAY['proposed', 'ready', 'assigned'])
   AND mp.left_at IS NULL
   AND NOT EXISTS (SELECT FROM mm.active_players a WHERE a.player_id OPERATOR(pg_catalog.=) mp.player_id)
 ORDER BY mp.player_id, m.created_at DESC, m.id DESC;

