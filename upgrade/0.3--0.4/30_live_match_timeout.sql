
-- ===================================================================
-- Section: live matches expire (live_match_timeout_seconds)
-- ===================================================================
--
-- A game server that dies leaves its ready or assigned match holding its
-- players.  With "live_match_timeout_seconds" in a queue's config, each tick
-- of the queue cancels its live matches that became ready longer ago than
-- that (status cancelled, cancel_reason expired), cancels their open
-- backfill requests, releases their players and announces match_cancelled
-- with reason expired (src/tick.c, ExpireLiveMatches).  A match becomes
-- ready when the tick forms it (a queue without acceptance) or when its last
-- player accepts it; mm.matches.ready_at records when.

ALTER TABLE mm.matches ADD COLUMN ready_at timestamptz;
COMMENT ON COLUMN mm.matches.ready_at IS
	'When the match became ready (formed without acceptance, or accepted by every player); NULL while proposed, or if it never was';
ALTER TABLE mm.matches_archive ADD COLUMN ready_at timestamptz;

-- The live matches of before 0.4.  Formed without acceptance: ready since
-- they were formed.  Accepted and still ready: mm.accept_match set
-- updated_at when the last player accepted.  Accepted and assigned since:
-- mm.assign moved updated_at on, but every answer came before the
-- acceptance deadline, so the earlier of the two is the latest the match
-- can have become ready (an expiry never comes early).  updated_at is kept:
-- the metrics read it.
UPDATE mm.matches m
   SET ready_at = CASE
		   WHEN m.acceptance_deadline IS NULL THEN m.created_at
		   WHEN m.status OPERATOR(pg_catalog.=) 'ready' THEN m.updated_at
		   ELSE GREATEST(m.created_at, LEAST(m.updated_at, m.acceptance_deadline)) END
 WHERE m.status OPERATOR(pg_catalog.=) ANY (ARRAY['ready', 'assigned']);
