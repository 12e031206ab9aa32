-- The end of a file that included sql/include/event_listener.sql (after it
-- dropped its queues): the listener goes, the id sequences go back to where
-- they were, so that the files after it see the ids they would see without
-- it, and dblink goes when this file made it.
SELECT dblink_disconnect(:'listener');
SELECT setval('mm.tickets_id_seq', :seq_tickets, :'seq_tickets_called') AS t,
	   setval('mm.matches_id_seq', :seq_matches, :'seq_matches_called') AS m,
	   setval('mm.backfill_requests_id_seq', :seq_backfill, :'seq_backfill_called') AS b \gset
\if :made_dblink
DROP EXTENSION dblink;
\endif
