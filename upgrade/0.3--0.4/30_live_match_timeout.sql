
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

-- Any other write that makes a match ready or assigned without ready_at
-- (mm.accept_match's last acceptance, an UPDATE or INSERT by hand) sets it:
-- to updated_at on an UPDATE (when the status changed), to created_at on an
-- INSERT.  The tick sets it itself when it forms a ready match, so the
-- condition keeps the trigger from firing for its bulk insert.
CREATE FUNCTION mm.matches_set_ready_at() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	NEW.ready_at := CASE TG_OP WHEN 'INSERT' THEN NEW.created_at ELSE NEW.updated_at END;
	RETURN NEW;
END
$$;
COMMENT ON FUNCTION mm.matches_set_ready_at() IS
	'Trigger: records when a match became ready (ready_at) for the writes that do not set it';
REVOKE ALL ON FUNCTION mm.matches_set_ready_at() FROM PUBLIC;

CREATE TRIGGER matches_ready_at BEFORE INSERT OR UPDATE OF status ON mm.matches
	FOR EACH ROW
	WHEN (NEW.status OPERATOR(pg_catalog.=) ANY (ARRAY['ready', 'assigned']) AND NEW.ready_at IS NULL)
	EXECUTE FUNCTION mm.matches_set_ready_at();

-- The tick's read, on every tick of a queue with the key: the queue's live
-- matches by the time they became ready.  Partial, so it holds the live
-- matches only; the status changes that move a match in or out of it
-- already touch the indexes (matches_queue_finished, matches_proposed_deadline).
CREATE INDEX matches_live_ready ON mm.matches (queue, ready_at)
	WHERE status OPERATOR(pg_catalog.=) ANY (ARRAY['ready', 'assigned']);
