-- Tickets: validation of the players against the queue (same errors for
-- mm.create_ticket, INSERT, multi-row INSERT and COPY), the claimed players
-- (mm.active_players), one active ticket per player, cancel_ticket.
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SET datestyle = 'ISO, YMD';

-- Ticket ids are printed below: start them at a known value.
ALTER SEQUENCE mm.tickets_id_seq RESTART WITH 5001;

\i sql/include/try.sql

-- Tries a ticket in a queue through a plain INSERT.
CREATE FUNCTION pg_temp.check_ticket(queue text, players jsonb) RETURNS text
LANGUAGE sql AS $$
	SELECT pg_temp.try(format('INSERT INTO mm.tickets (queue, players) VALUES (%L, %L::jsonb)', queue, players))
$$;

-- free-for-all of 2-4 with a numeric and a latency rule
SELECT mm.create_queue('tk-ffa', '{"match_size": {"min": 2, "max": 4}, "rules": [
	{"name": "skill", "type": "difference", "attribute": "skill", "max": 100},
	{"name": "ping", "type": "latency", "max_ms": 80}]}');
-- two teams of 1-3: the largest party is 3
SELECT mm.create_queue('tk-teams', '{"teams": [{"name": "red", "min": 1, "max": 3}, {"name": "blue", "min": 1, "max": 3}]}');
-- string rules with a nested attribute, a default and match_any
SELECT mm.create_queue('tk-mode', '{"match_size": {"min": 2, "max": 200}, "rules": [
	{"name": "mode", "type": "string_equality", "attribute": "prefs.mode"},
	{"name": "map", "type": "string_equality", "attribute": "map", "when_missing": "match_any"},
	{"name": "lvl", "type": "difference", "attribute": "level", "max": 3, "default": 1}]}');

--
-- Happy paths.
--
-- create_ticket with an explicit now: created_at is now, updated_at stays NULL
SELECT mm.create_ticket('tk-ffa', '[{"id": "tk-a1", "attributes": {"skill": 1500}, "latencies": {"eu-west": 35, "us-east": 90}}]',
						'2026-01-01 10:00:00+00');
-- INSERT ... RETURNING: status starts searching
INSERT INTO mm.tickets (queue, players, created_at)
VALUES ('tk-teams', '[{"id": "tk-b1"}, {"id": "tk-b2", "attributes": {"x": [1, 2]}}, {"id": "tk-b3"}]',
		'2026-01-01 10:00:01+00')
RETURNING id, queue, status, jsonb_array_length(players) AS player_count, created_at, updated_at, matched_at, match_id;
-- a new ticket cannot start in another status or with a match
SELECT pg_temp.try($$INSERT INTO mm.tickets (queue, players, status) VALUES ('tk-teams', '[{"id": "tk-b9"}]', 'cancelled')$$);
SELECT pg_temp.try($$INSERT INTO mm.tickets (queue, players, match_id) VALUES ('tk-teams', '[{"id": "tk-b9"}]', 7)$$);
ALTER SEQUENCE mm.tickets_id_seq RESTART WITH 5003;
-- multi-row INSERT
INSERT INTO mm.tickets (queue, players, created_at) VALUES
	('tk-ffa', '[{"id": "tk-c1", "attributes": {"skill": 1400}, "latencies": {"eu-west": 20}}]', '2026-01-01 10:00:02+00'),
	('tk-ffa', '[{"id": "tk-c2", "attributes": {"skill": 1450.5}, "latencies": {"eu-west": 0}},
				 {"id": "tk-c3", "attributes": {"skill": -3}, "latencies": {"us-east": 12.5}}]', '2026-01-01 10:00:02+00'),
	('tk-mode', '[{"id": "tk-c4", "attributes": {"prefs": {"mode": "classic"}, "map": "dust"}}]', '2026-01-01 10:00:02+00')
RETURNING id, queue, jsonb_array_length(players) AS player_count;
-- COPY (bulk enqueue)
COPY mm.tickets (queue, players, created_at) FROM STDIN;
tk-mode	[{"id": "tk-d1", "attributes": {"prefs": {"mode": "classic"}}}]	2026-01-01 10:00:03+00
tk-mode	[{"id": "tk-d2", "attributes": {"prefs": {"mode": "ranked"}, "level": 7}}, {"id": "tk-d3", "attributes": {"prefs": {"mode": "ranked"}}}]	2026-01-01 10:00:03+00
tk-teams	[{"id": "tk-d4"}]	2026-01-01 10:00:03+00
\.
SELECT id, queue, status, jsonb_array_length(players) AS player_count, created_at, updated_at FROM mm.tickets WHERE queue LIKE 'tk-%' ORDER BY id;
-- every player is claimed by its ticket (one active ticket per player)
SELECT ticket_id, player_id, queue FROM mm.active_players WHERE queue LIKE 'tk-%' ORDER BY ticket_id, player_id;
-- tickets do not create mm.players rows (those hold server-side attributes)
SELECT count(*) AS player_rows FROM mm.players WHERE id LIKE 'tk-%';

--
-- Every ticket error (through INSERT; create_ticket and COPY run the same trigger).
--
SELECT c.n, c.label, pg_temp.check_ticket(c.queue, c.players) AS result
  FROM (VALUES
	-- the ticket
	(1, 'no such queue', 'tk-nope', '[{"id": "tk-x"}]'::jsonb),
	(2, 'null queue', NULL, '[{"id": "tk-x"}]'),
	(3, 'null players', 'tk-teams', NULL),
	(4, 'players object', 'tk-teams', '{"id": "tk-x"}'),
	(5, 'players string', 'tk-teams', '"tk-x"'),
	(6, 'players json null', 'tk-teams', 'null'),
	(7, 'players empty', 'tk-teams', '[]'),
	(8, 'party of 4 in teams of 3', 'tk-teams', '[{"id": "tk-x1"}, {"id": "tk-x2"}, {"id": "tk-x3"}, {"id": "tk-x4"}]'),
	(9, 'party of 5 in a match of 4', 'tk-ffa', (SELECT jsonb_agg(jsonb_build_object('id', 'tk-x' || i, 'attributes', '{"skill": 1}'::jsonb, 'latencies', '{"eu": 1}'::jsonb)) FROM generate_series(1, 5) i)),
	(10, '201 players', 'tk-mode', (SELECT jsonb_agg(jsonb_build_object('id', 'tk-x' || i)) FROM generate_series(1, 201) i)),
	(11, 'over 1 MB', 'tk-teams', jsonb_build_array(jsonb_build_object('id', 'tk-x', 'attributes', jsonb_build_object('blob', repeat('b', 1100000))))),
	-- a player
	(20, 'player not object', 'tk-teams', '[{"id": "tk-x1"}, "tk-x2"]'),
	(21, 'id missing', 'tk-teams', '[{"attributes": {}}]'),
	(22, 'id empty', 'tk-teams', '[{"id": ""}]'),
	(23, 'id number', 'tk-teams', '[{"id": 17}]'),
	(24, 'id null', 'tk-teams', '[{"id": null}]'),
	(25, 'id 129 chars', 'tk-teams', jsonb_build_array(jsonb_build_object('id', repeat('x', 129)))),
	(26, 'duplicate id in ticket', 'tk-teams', '[{"id": "tk-x1"}, {"id": "tk-x2"}, {"id": "tk-x1"}]'),
	(27, 'unknown key', 'tk-teams', '[{"id": "tk-x1", "skill": 1500}]'),
	(28, 'attributes array', 'tk-teams', '[{"id": "tk-x1", "attributes": [1]}]'),
	(29, 'attributes null', 'tk-teams', '[{"id": "tk-x1", "attributes": null}]'),
	-- latencies
	(30, 'latencies array', 'tk-teams', '[{"id": "tk-x1", "latencies": [35]}]'),
	(31, 'latency negative', 'tk-teams', '[{"id": "tk-x1", "latencies": {"eu-west": -1}}]'),
	(32, 'latency string', 'tk-teams', '[{"id": "tk-x1", "latencies": {"eu-west": "35"}}]'),
	(33, 'latency null', 'tk-teams', '[{"id": "tk-x1", "latencies": {"eu-west": null}}]'),
	(34, 'latency huge', 'tk-teams', '[{"id": "tk-x1", "latencies": {"eu-west": 1e400}}]'),
	(39, 'latency NaN', 'tk-teams', jsonb_build_array(jsonb_build_object('id', 'tk-x1', 'latencies', jsonb_build_object('eu', 'NaN'::float8)))),
	(50, 'skill Infinity', 'tk-ffa', jsonb_build_array(jsonb_build_object('id', 'tk-x1', 'attributes', jsonb_build_object('skill', '-Infinity'::numeric), 'latencies', '{"eu": 1}'::jsonb))),
	(35, 'region name empty', 'tk-teams', '[{"id": "tk-x1", "latencies": {"": 5}}]'),
	(36, '65 regions', 'tk-teams', jsonb_build_array(jsonb_build_object('id', 'tk-x1', 'latencies', (SELECT jsonb_object_agg('r' || i, i) FROM generate_series(1, 65) i)))),
	(37, 'latencies missing for a latency rule', 'tk-ffa', '[{"id": "tk-x1", "attributes": {"skill": 1}}]'),
	(38, 'latencies empty for a latency rule', 'tk-ffa', '[{"id": "tk-x1", "attributes": {"skill": 1}, "latencies": {}}]'),
	-- attributes the rules read
	(40, 'rule attribute missing', 'tk-ffa', '[{"id": "tk-x1", "latencies": {"eu": 1}}]'),
	(41, 'rule attribute string', 'tk-ffa', '[{"id": "tk-x1", "attributes": {"skill": "1500"}, "latencies": {"eu": 1}}]'),
	(42, 'rule attribute huge', 'tk-ffa', '[{"id": "tk-x1", "attributes": {"skill": 1e300}, "latencies": {"eu": 1}}]'),
	(43, 'second player wrong', 'tk-ffa', '[{"id": "tk-x1", "attributes": {"skill": 1}, "latencies": {"eu": 1}}, {"id": "tk-x2", "attributes": {"skill": null}, "latencies": {"eu": 1}}]'),
	(44, 'nested attribute missing', 'tk-mode', '[{"id": "tk-x1", "attributes": {"prefs": {}}}]'),
	(45, 'nested parent not object', 'tk-mode', '[{"id": "tk-x1", "attributes": {"prefs": "classic"}}]'),
	(46, 'string rule given a number', 'tk-mode', '[{"id": "tk-x1", "attributes": {"prefs": {"mode": 1}}}]'),
	(47, 'match_any attribute of wrong type', 'tk-mode', '[{"id": "tk-x1", "attributes": {"prefs": {"mode": "a"}, "map": 3}}]'),
	(48, 'defaulted attribute of wrong type', 'tk-mode', '[{"id": "tk-x1", "attributes": {"prefs": {"mode": "a"}, "level": "high"}}]'),
	(49, 'odd key in the path', 'tk-teams', '[{"id": "tk-x1", "latencies": {"eu west": -5}}]'))
	AS c(n, label, queue, players)
 ORDER BY c.n;
-- nothing of the refused tickets was written
SELECT count(*) AS stray_players FROM mm.players WHERE id LIKE 'tk-x%';

-- The errors as a client sees them.
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-x1"}, {"id": "tk-x2"}, {"id": "tk-x3"}, {"id": "tk-x4"}]', '2026-01-01 10:00');
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-x1", "name": "bob"}]', '2026-01-01 10:00');
SELECT mm.create_ticket('tk-nope', '[{"id": "tk-x1"}]', '2026-01-01 10:00');
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-x1"}]', NULL);
SELECT mm.create_ticket('tk-teams', NULL, '2026-01-01 10:00');
-- a NULL argument is refused by the function: 22004 naming it, and for the
-- queues the subscript of the NULL, first or later (INSERT and COPY meet the
-- table's NOT NULL constraints: 23502, case 2 above)
\set VERBOSITY sqlstate
SELECT mm.create_ticket(NULL::text, '[{"id": "tk-x1"}]', '2026-01-01 10:00');
SELECT mm.create_ticket(ARRAY[NULL]::text[], '[{"id": "tk-x1"}]', '2026-01-01 10:00');
SELECT mm.create_ticket(ARRAY['tk-teams', NULL], '[{"id": "tk-x1"}]', '2026-01-01 10:00');
\set VERBOSITY default
SELECT mm.create_ticket(NULL::text, '[{"id": "tk-x1"}]', '2026-01-01 10:00');
SELECT mm.create_ticket(ARRAY[NULL]::text[], '[{"id": "tk-x1"}]', '2026-01-01 10:00');
SELECT mm.create_ticket(ARRAY['tk-teams', 'tk-ffa', NULL], '[{"id": "tk-x1"}]', '2026-01-01 10:00');
SELECT mm.create_ticket('[0:1]={NULL,tk-teams}'::text[], '[{"id": "tk-x1"}]', '2026-01-01 10:00');
SELECT mm.create_ticket(ARRAY[['tk-teams']], '[{"id": "tk-x1"}]', '2026-01-01 10:00');
SELECT mm.create_ticket(ARRAY['tk-teams'], NULL, '2026-01-01 10:00');
SELECT mm.create_ticket(ARRAY['tk-teams'], '[{"id": "tk-x1"}]', NULL);
SELECT count(*) AS stray_tickets FROM mm.tickets WHERE players @> '[{"id": "tk-x1"}]';

--
-- One active ticket per player.
--
-- across tickets: the error names the player and the ticket that holds them
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-e1"}, {"id": "tk-a1"}]', '2026-01-01 10:01');
-- within one multi-row INSERT
INSERT INTO mm.tickets (queue, players) VALUES
	('tk-teams', '[{"id": "tk-e2"}]'),
	('tk-teams', '[{"id": "tk-e3"}]'),
	('tk-teams', '[{"id": "tk-e4"}, {"id": "tk-e2"}]');
-- within one COPY: the whole COPY is refused
COPY mm.tickets (queue, players) FROM STDIN;
tk-teams	[{"id": "tk-e5"}]
tk-teams	[{"id": "tk-e5"}]
\.
-- a bad row in a COPY refuses the whole COPY
COPY mm.tickets (queue, players) FROM STDIN;
tk-teams	[{"id": "tk-e6"}]
tk-teams	[{"id": ""}]
\.
SELECT count(*) AS written FROM mm.active_players WHERE player_id IN ('tk-e1', 'tk-e2', 'tk-e3', 'tk-e4', 'tk-e5', 'tk-e6');
-- across queues too
SELECT mm.create_ticket('tk-mode', '[{"id": "tk-b2", "attributes": {"prefs": {"mode": "classic"}}}]', '2026-01-01 10:01');

--
-- cancel_ticket
--
SELECT id AS a1_ticket FROM mm.tickets WHERE players @> '[{"id": "tk-a1"}]' \gset
SELECT mm.cancel_ticket(:a1_ticket) AS first, mm.cancel_ticket(:a1_ticket) AS second;
SELECT status, updated_at > created_at AS updated FROM mm.tickets WHERE id = :a1_ticket;
SELECT count(*) AS still_claimed FROM mm.active_players WHERE ticket_id = :a1_ticket;
SELECT mm.cancel_ticket(999999);
SELECT mm.cancel_ticket(NULL) IS NULL AS null_ticket;
-- the player is free again: the new ticket claims the player
SELECT mm.create_ticket('tk-ffa', '[{"id": "tk-a1", "attributes": {"skill": 1510}, "latencies": {"eu-west": 30}}]', '2026-01-01 10:02') AS a1_again;
SELECT ticket_id = :a1_ticket AS old_ticket FROM mm.active_players WHERE player_id = 'tk-a1';

--
-- Status changes by UPDATE keep mm.active_players in step, set-based, and a
-- ticket's queue and players are fixed.
--
UPDATE mm.tickets SET status = 'timed_out' WHERE queue = 'tk-mode' AND status = 'searching';
SELECT t.id, t.status, tp.player_id,
	   EXISTS (SELECT 1 FROM mm.active_players ap
				WHERE ap.ticket_id = t.id AND ap.player_id = tp.player_id) AS active
  FROM mm.tickets t JOIN mm.ticket_players tp ON tp.ticket_id = t.id
 WHERE t.queue = 'tk-mode' ORDER BY t.id, 3;
-- back to searching (e.g. a requeue) reactivates them
UPDATE mm.tickets SET status = 'searching' WHERE queue = 'tk-mode' AND players @> '[{"id": "tk-c4"}]';
SELECT player_id, ticket_id IS NOT NULL AS active FROM mm.active_players WHERE player_id = 'tk-c4';
UPDATE mm.tickets SET players = '[{"id": "tk-z"}]' WHERE players @> '[{"id": "tk-c4"}]';
UPDATE mm.tickets SET queue = 'tk-ffa' WHERE players @> '[{"id": "tk-c4"}]';
UPDATE mm.tickets SET players = players WHERE players @> '[{"id": "tk-c4"}]';	-- unchanged: allowed

--
-- The config is read per statement: a change within a transaction applies
-- to the next statement.
--
BEGIN;
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-f1"}, {"id": "tk-f2"}]', '2026-01-01 10:03') > 0 AS pair_fits;
SELECT mm.alter_queue('tk-teams', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}');
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-f3"}, {"id": "tk-f4"}]', '2026-01-01 10:03');
ROLLBACK;

--
-- created_at and attribute numbers (at the end: refused inserts use up ids).
--
-- an infinite now (the ticket's created_at): the tick and the metrics subtract it
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-x1"}]', 'infinity');
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-x1"}]', '-infinity');
SELECT pg_temp.try($$INSERT INTO mm.tickets (queue, players, created_at) VALUES ('tk-teams', '[{"id": "tk-x1"}]', 'infinity')$$);
-- Every number in the attributes is range-checked, read by a rule or not:
-- a rule added later by alter_queue would read it.
SELECT c.n, c.label, pg_temp.check_ticket(c.queue, c.players) AS result
  FROM (VALUES
	(51, 'unused attribute huge', 'tk-teams', '[{"id": "tk-n1", "attributes": {"skill": 1e308}}]'::jsonb),
	(52, 'unused attribute nested in an array', 'tk-teams', '[{"id": "tk-n1", "attributes": {"a": {"b": [1, 2, -1.5e12]}}}]'),
	(53, 'unused attribute of the second player', 'tk-ffa', '[{"id": "tk-n1", "attributes": {"skill": 1}, "latencies": {"eu": 1}}, {"id": "tk-n2", "attributes": {"skill": 1, "xp": -1e13}, "latencies": {"eu": 1}}]'))
	AS c(n, label, queue, players)
 ORDER BY c.n;
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-n1", "attributes": {"id": 76561198000000000}}]', '2026-01-01 10:00');
-- numbers at the limit, in attributes no rule reads, are accepted
BEGIN;
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-x1", "attributes": {"xp": 1e12, "h": [-1e12, 0.5]}}]', '2026-01-01 10:00') > 0 AS accepted;
ROLLBACK;

--
-- Ids and claims stay sound whatever writes the tables.
--
-- an explicit id that an ended ticket already has is refused (each partition
-- has its own primary key)
SELECT pg_temp.try(format($$INSERT INTO mm.tickets (id, queue, players) VALUES (%s, 'tk-teams', '[{"id": "tk-r1"}]')$$,
						  :a1_ticket)) AS reused_id;
-- and so is one an active ticket of another queue has (the keys hold the queue)
SELECT mm.create_ticket('tk-mode', '[{"id": "tk-r3", "attributes": {"prefs": {"mode": "ctf"}}}]', '2026-01-01 10:00') AS r3_ticket \gset
SELECT pg_temp.try(format($$INSERT INTO mm.tickets (id, queue, players) VALUES (%s, 'tk-teams', '[{"id": "tk-r4"}]')$$,
						  :r3_ticket)) AS id_of_another_queue;
SELECT mm.cancel_ticket(:r3_ticket);
-- an explicit id ahead of the sequence would collide with a later default one
SELECT pg_temp.try($$INSERT INTO mm.tickets (id, queue, players)
	VALUES ((SELECT last_value + 10 FROM mm.tickets_id_seq), 'tk-teams', '[{"id": "tk-r2"}]')$$) AS id_ahead;
-- a claim left behind by a delete straight from the partition is stale: the
-- player's next ticket replaces it
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-s1"}]', '2026-01-01 10:00') AS s1_ticket \gset
DELETE FROM mm.tickets_active WHERE id = :s1_ticket;
SELECT count(*) AS stale_claims FROM mm.active_players WHERE player_id = 'tk-s1';
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-s1"}]', '2026-01-01 10:00') <> :s1_ticket AS queued_again;
SELECT ticket_id <> :s1_ticket AS claim_replaced FROM mm.active_players WHERE player_id = 'tk-s1';
-- TRUNCATE of the active tickets releases every player
BEGIN;
TRUNCATE mm.tickets_active;
SELECT count(*) AS claims_after_truncate FROM mm.active_players;
ROLLBACK;
-- a role with INSERT on mm.tickets and USAGE on its sequence creates tickets:
-- the trigger (SECURITY DEFINER) checks the queue and claims the players
CREATE ROLE tk_frontend;
GRANT USAGE ON SCHEMA mm TO tk_frontend;
GRANT INSERT ON mm.tickets TO tk_frontend;
GRANT USAGE ON SEQUENCE mm.tickets_id_seq TO tk_frontend;
SET ROLE tk_frontend;
INSERT INTO mm.tickets (queue, players, created_at) VALUES ('tk-teams', '[{"id": "tk-f1"}]', '2026-01-01 10:00');
SELECT count(*) FROM mm.active_players;
RESET ROLE;
SELECT count(*) AS claimed FROM mm.active_players WHERE player_id = 'tk-f1';
REVOKE ALL ON mm.tickets FROM tk_frontend;
REVOKE ALL ON SEQUENCE mm.tickets_id_seq FROM tk_frontend;
REVOKE ALL ON SCHEMA mm FROM tk_frontend;
DROP ROLE tk_frontend;

-- Ticket creation reads every table by key, whatever the statistics: after a
-- bulk load into tables that were never analyzed (a new database), one more
-- ticket scans no table of mm whole (the rows it lists: none).
BEGIN;
DELETE FROM pg_catalog.pg_statistic s USING pg_catalog.pg_class c
 WHERE s.starelid = c.oid AND c.relnamespace = 'mm'::regnamespace;
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'tk-teams', jsonb_build_array(jsonb_build_object('id', 'tk-bulk' || i)), '2026-01-01 10:00'
  FROM generate_series(1, 3000) i;
CREATE TEMP TABLE tk_scans AS
SELECT relid, seq_scan FROM pg_catalog.pg_stat_xact_user_tables WHERE schemaname = 'mm';
SELECT mm.create_ticket('tk-teams', '[{"id": "tk-after-bulk"}]', '2026-01-01 10:00') > 0 AS created;
SELECT a.relname, a.seq_scan - coalesce(b.seq_scan, 0) AS whole_table_scans
  FROM pg_catalog.pg_stat_xact_user_tables a LEFT JOIN tk_scans b USING (relid)
 WHERE a.schemaname = 'mm' AND a.seq_scan > coalesce(b.seq_scan, 0)
 ORDER BY 1;
-- A batch (mm.create_tickets on one node, through the insert trigger) looks
-- each new id up in the active tickets' key: it reads a row or two per
-- ticket, never every active ticket (3,000 here).
CREATE TEMP TABLE tk_fetches AS
SELECT idx_tup_fetch FROM pg_catalog.pg_stat_xact_user_tables WHERE relid = 'mm.tickets_active'::regclass;
SELECT cardinality(mm.create_tickets('tk-teams', ARRAY(SELECT jsonb_build_array(jsonb_build_object('id', 'tk-batch' || i))
  FROM generate_series(1, 100) i), '2026-01-01 10:00')) AS batch;
SELECT a.idx_tup_fetch - b.idx_tup_fetch < 1000 AS reads_by_key
  FROM pg_catalog.pg_stat_xact_user_tables a, tk_fetches b WHERE a.relid = 'mm.tickets_active'::regclass;
ROLLBACK;

--
-- Clean up.
--
SELECT mm.drop_queue('tk-ffa', force => true);
SELECT mm.drop_queue('tk-teams', force => true);
SELECT mm.drop_queue('tk-mode', force => true);
DELETE FROM mm.players WHERE id LIKE 'tk-%';
SELECT count(*) AS left_over FROM mm.tickets WHERE queue LIKE 'tk-%';
