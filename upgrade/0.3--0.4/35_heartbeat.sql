
-- ===================================================================
-- Section: heartbeats of tickets (heartbeat_timeout_seconds)
-- ===================================================================
--
-- A client that vanished leaves its ticket searching.  With
-- "heartbeat_timeout_seconds" in a queue's config, the client keeps its
-- ticket alive with mm.heartbeat, and each tick of the queue cancels the
-- searching tickets it reads that gave no sign of life for that long (their
-- creation, their return to searching, their last beat): status cancelled,
-- cancel_reason heartbeat_missed, players released, ticket_cancelled with
-- reason heartbeat_missed (src/tick.c, CancelSilentTickets).  A ticket
-- searching in several queues is cancelled by the first of them whose limit
-- it overstays: the tightest applies.  A proposed ticket is not cancelled
-- for silence (its acceptance deadline rules it); back to searching, it
-- starts afresh.

-- The last beat, updated in place on the active partition: the column is
-- in no index, so a beat is a HOT update (no index entry, no new page) when
-- the row's page has room, and the tick's load reads none of it.  A bulk
-- load fills its pages: the active partition keeps a fifth of each new page
-- free for the beats (50,000 tickets beaten twice: every update HOT, the
-- partition no larger; without it, none).  Its existing pages are left as
-- they are, and empty as their tickets end.
ALTER TABLE mm.tickets ADD COLUMN heartbeat_at timestamptz;
ALTER TABLE mm.tickets_active SET (fillfactor = 80);
COMMENT ON COLUMN mm.tickets.heartbeat_at IS
	'The ticket''s last mm.heartbeat (NULL: none yet; its creation counts as the first); kept on a ticket cancelled for a missed heartbeat';
-- Why the tick cancelled a ticket (NULL for the other ends: mm.cancel_ticket,
-- a rejected proposal, mm.drop_queue, an UPDATE).
ALTER TABLE mm.tickets ADD COLUMN cancel_reason text;
COMMENT ON COLUMN mm.tickets.cancel_reason IS
	'Why the tick cancelled the ticket: heartbeat_missed, or player_busy (on Citus, a player another ticket or a live match held); NULL otherwise';
-- The archive keeps both (after archived_at: the archiving insert names its
-- columns, here for the matches' ready_at of 30_live_match_timeout.sql too).
ALTER TABLE mm.tickets_archive ADD COLUMN heartbeat_at timestamptz;
ALTER TABLE mm.tickets_archive ADD COLUMN cancel_reason text;

