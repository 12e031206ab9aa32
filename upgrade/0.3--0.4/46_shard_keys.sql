
-- ===================================================================
-- Section: keys that shard (docs/scale-out.md, docs/data-model.md)
-- ===================================================================
--
-- Every key of a table of a queue carries `queue`, every key of a table of
-- a player carries the player, so that Citus can shard them (by queue, by
-- player) and keep each key on one shard.  The id stays first: a lookup by
-- id alone still reads the key.  Nothing else changes on one node: an id
-- identifies its row as before (it is drawn from one sequence).
ALTER TABLE mm.match_results DROP CONSTRAINT match_results_match_id_fkey;
ALTER TABLE mm.backfill_requests DROP CONSTRAINT backfill_requests_match_id_fkey;

ALTER TABLE mm.tickets_active DROP CONSTRAINT tickets_active_pkey,
	ADD CONSTRAINT tickets_active_pkey PRIMARY KEY (id, queue);
ALTER TABLE mm.tickets_ended DROP CONSTRAINT tickets_ended_pkey,
	ADD CONSTRAINT tickets_ended_pkey PRIMARY KEY (id, queue);
ALTER TABLE mm.matches DROP CONSTRAINT matches_pkey,
	ADD CONSTRAINT matches_pkey PRIMARY KEY (id, queue);
ALTER TABLE mm.match_players DROP CONSTRAINT match_players_pkey,
	ADD CONSTRAINT match_players_pkey PRIMARY KEY (match_id, player_id, queue);
ALTER TABLE mm.match_results DROP CONSTRAINT match_results_pkey,
	ADD CONSTRAINT match_results_pkey PRIMARY KEY (match_id, queue),
	ADD CONSTRAINT match_results_match_id_fkey FOREIGN KEY (match_id, queue)
		REFERENCES mm.matches (id, queue) ON DELETE CASCADE;
ALTER TABLE mm.backfill_requests DROP CONSTRAINT backfill_requests_pkey,
	ADD CONSTRAINT backfill_requests_pkey PRIMARY KEY (id, queue),
	ADD CONSTRAINT backfill_requests_match_id_fkey FOREIGN KEY (match_id, queue)
		REFERENCES mm.matches (id, queue) ON DELETE CASCADE;
DROP INDEX mm.backfill_requests_one_open;
CREATE UNIQUE INDEX backfill_requests_one_open ON mm.backfill_requests (match_id, queue)
	WHERE status OPERATOR(pg_catalog.=) 'open';
ALTER TABLE mm.rating_history DROP CONSTRAINT rating_history_pkey,
	ADD CONSTRAINT rating_history_pkey PRIMARY KEY (id, player_id);

-- No foreign key to mm.queues (Citus rule 1, HACKING.md): the queue's jobs
-- go with it through mm.queues_after_delete.
ALTER TABLE mm.schedule_jobs DROP CONSTRAINT schedule_jobs_queue_fkey;

