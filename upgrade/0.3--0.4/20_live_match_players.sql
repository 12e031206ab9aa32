
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

-- Requeue holds the players it puts back to searching.  A ticket goes back
-- only when every one of its players is held by it: normally they already
-- are (the claim of the live match), an unclaimed one (a 0.1/0.2 match the
-- upgrade could not claim for them) is claimed now.  A ticket with a player
-- who left, or whom another active ticket or live match holds meanwhile,
-- stays ended, and its other players are released.  The claims are taken
-- in player order under the primary key, like mm.claim_players, so a
-- concurrent mm.create_ticket for the same player either waits and is
-- refused, or wins and the requeue leaves that ticket ended.
CREATE OR REPLACE FUNCTION mm.requeue_match(match_id bigint, reason text,
											now timestamptz DEFAULT pg_catalog.now())
RETURNS bigint[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	candidates bigint[];
	requeued bigint[];
BEGIN
	PERFORM mm.check_now(requeue_match.now);
	IF requeue_match.reason IS NULL OR requeue_match.reason = '' OR length(requeue_match.reason) > 256 THEN
		RAISE EXCEPTION 'reason must be 1 to 256 characters' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the reasons the extension itself cancels with: a requeue is counted
	-- apart from them (mm.match_stats' matches_requeued)
	IF requeue_match.reason IN ('rejected', 'acceptance_timeout', 'ticket_cancelled', 'queue_dropped', 'expired') THEN
		RAISE EXCEPTION 'reason "%" is one the extension cancels matches with', requeue_match.reason
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Name why the director requeues the match, e.g. server_crashed.';
	END IF;
	m := mm.lock_match(requeue_match.match_id, ARRAY['proposed', 'ready', 'assigned'], 'requeue',
					   requeue_match.now);
	IF m.status = 'proposed' THEN
		-- nobody is cancelled: every ticket searches again (a proposed
		-- ticket is active and holds its players)
		PERFORM mm.cancel_proposed_match(m.id, requeue_match.reason, '{}', requeue_match.now);
		SELECT coalesce(array_agg(DISTINCT mp.ticket_id ORDER BY mp.ticket_id), '{}') INTO requeued
		  FROM mm.match_players mp WHERE mp.match_id = m.id;
		RETURN requeued;
	END IF;

	UPDATE mm.matches SET status = 'cancelled', cancel_reason = requeue_match.reason,
		   updated_at = requeue_match.now
	 WHERE id = m.id;
	UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = requeue_match.now
	 WHERE b.match_id = m.id AND b.status = 'open';

	-- the tickets that may search again: matched here, no player left
	SELECT coalesce(array_agg(t.id ORDER BY t.id), '{}') INTO candidates
	  FROM mm.tickets_ended t
	 WHERE t.match_id = m.id AND t.status = 'matched'
	   AND NOT EXISTS (SELECT FROM mm.match_players mp
						WHERE mp.match_id = m.id AND mp.ticket_id = t.id
						  AND mp.left_at IS NOT NULL);
	-- their players: a claim by another ticket that holds nothing any more
	-- goes (the match is cancelled now, so a claim by this match's own
	-- tickets is kept by the ticket test), then the unclaimed are claimed
	DELETE FROM mm.active_players a
	 USING mm.match_players mp
	 WHERE mp.match_id = m.id AND mp.ticket_id = ANY (candidates)
	   AND a.player_id = mp.player_id AND a.ticket_id <> mp.ticket_id
	   AND NOT mm.claim_is_live(a.player_id, a.ticket_id);
	INSERT INTO mm.active_players (player_id, ticket_id, queue)
	SELECT mp.player_id, mp.ticket_id, mp.queue
	  FROM mm.match_players mp
	 WHERE mp.match_id = m.id AND mp.ticket_id = ANY (candidates)
	 ORDER BY mp.player_id
	ON CONFLICT (player_id) DO NOTHING;
	-- a ticket goes back only when it holds all of its players
	SELECT coalesce(array_agg(c.id ORDER BY c.id), '{}') INTO candidates
	  FROM unnest(candidates) c(id)
	 WHERE NOT EXISTS (SELECT FROM mm.match_players mp
						WHERE mp.match_id = m.id AND mp.ticket_id = c.id
						  AND NOT EXISTS (SELECT FROM mm.active_players a
										   WHERE a.player_id = mp.player_id AND a.ticket_id = c.id));

	-- they go back to searching with their id and creation time (their
	-- priority)
	WITH back AS (
		DELETE FROM mm.tickets_ended t
		 WHERE t.id = ANY (candidates)
		RETURNING t.*
	), ins AS (
		INSERT INTO mm.tickets_active (id, queue, players, status, created_at, updated_at, queues)
		SELECT b.id, b.queue, b.players, 'searching', b.created_at, requeue_match.now, b.queues FROM back b
		RETURNING id, created_at, queues
	), listed AS (
		-- a ticket of several queues searches in all of them again
		INSERT INTO mm.ticket_queues (queue, ticket_id, created_at)
		SELECT u.queue, i.id, i.created_at FROM ins i, unnest(i.queues) u(queue)
		 WHERE EXISTS (SELECT FROM mm.queues q WHERE q.name = u.queue)
	)
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO requeued FROM ins;
	-- their players stay claimed, by the same tickets, now searching; the
	-- players of tickets that stay ended are released
	DELETE FROM mm.active_players a
	 USING mm.match_players mp
	 WHERE mp.match_id = m.id AND a.player_id = mp.player_id AND a.ticket_id = mp.ticket_id
	   AND NOT mp.ticket_id = ANY (requeued);
	PERFORM mm.notify_match_event('match_cancelled', m.id,
		jsonb_build_object('reason', requeue_match.reason, 'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', '[]'::jsonb));
	RETURN requeued;
END
$$;
COMMENT ON FUNCTION mm.requeue_match(bigint, text, timestamptz) IS
'Cancels a live match whose allocation failed; its tickets search again with their original age and hold their players (a ticket with a player who left, or who holds another ticket, stays ended); returns their ids';
