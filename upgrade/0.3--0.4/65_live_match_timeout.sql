-- Live matches expire (30_live_match_timeout.sql): the trigger that records
-- when a match became ready (its function is a routine of the manifest), and
-- the index of the tick's read.

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
