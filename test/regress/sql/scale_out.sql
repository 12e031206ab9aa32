-- Scale-out (docs/scale-out.md) on one node: every table is placed by
-- mm.sharding, every key of a sharded table holds its distribution column
-- (so mm.distribute can shard it on Citus), no foreign key reaches across
-- placements; mm.distribute without Citus does nothing and says so;
-- mm.create_tickets, the batch form of mm.create_ticket.  The cluster
-- itself is tested in test/t/140_citus.pl.
\set SHOW_CONTEXT never
SET timezone = 'UTC';

\i sql/include/try.sql

-- every table of schema mm is placed, and mm.sharding names only tables
SELECT c.oid::regclass AS unplaced_table
  FROM pg_class c
 WHERE c.relnamespace = 'mm'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
   AND c.oid NOT IN (SELECT table_name FROM mm.sharding());
SELECT placement, count(*) AS tables, string_agg(DISTINCT coalesce(distribution_column, '-'), ',') AS columns
  FROM mm.sharding() GROUP BY placement ORDER BY placement;

-- every primary key, unique constraint and unique index of a sharded table
-- (and of its partitions) holds the distribution column
SELECT i.indexrelid::regclass AS key_without_distribution_column
  FROM mm.sharding() s
  JOIN pg_class c ON c.oid = s.table_name OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = s.table_name)
  JOIN pg_index i ON i.indrelid = c.oid AND i.indisunique
 WHERE s.distribution_column IS NOT NULL
   AND NOT EXISTS (SELECT FROM pg_attribute a
					WHERE a.attrelid = c.oid AND a.attname = s.distribution_column
					  AND a.attnum = ANY (i.indkey))
 ORDER BY 1;

-- a foreign key joins two tables sharded alike, on their distribution column
SELECT k.conname AS key_across_placements
  FROM pg_constraint k
  JOIN mm.sharding() f ON f.table_name = k.conrelid
  JOIN mm.sharding() r ON r.table_name = k.confrelid
 WHERE k.contype = 'f'
   AND (f.placement <> r.placement OR f.distribution_column IS NULL
		OR NOT EXISTS (SELECT FROM pg_attribute a
						WHERE a.attrelid = k.conrelid AND a.attname = f.distribution_column
						  AND a.attnum = ANY (k.conkey)));
SELECT count(*) AS foreign_keys_checked
  FROM pg_constraint k WHERE k.contype = 'f' AND k.connamespace = 'mm'::regnamespace;

-- without Citus: nothing to distribute, every queue on this node
SELECT mm.tables_are_distributed() AS distributed;
SELECT mm.distribute() AS distributed_now;
SELECT count(*) AS queue_nodes FROM mm.queue_node('anything');
SELECT pg_temp.try($$SELECT mm.queue_node(NULL)$$) AS null_queue;

-- mm.create_tickets: one statement for many tickets, ids in the order given
SELECT last_value AS ticket_seq_last, is_called AS ticket_seq_called FROM mm.tickets_id_seq \gset
SELECT mm.create_queue('so_duel', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
BEGIN;
SELECT mm.create_tickets('so_duel', ARRAY['[{"id": "so_a", "attributes": {"skill": 1}}]',
										'[{"id": "so_b", "attributes": {"skill": 2}}]',
										'[{"id": "so_c", "attributes": {"skill": 3}}]']::jsonb[],
						 '2026-01-01') AS ids \gset
SELECT :'ids'::bigint[] = ARRAY(SELECT t.id FROM mm.tickets t WHERE t.queue = 'so_duel'
								 ORDER BY t.players->0->>'id') AS ids_in_order,
	   cardinality(:'ids'::bigint[]) AS tickets;
SELECT string_agg(player_id, ' ' ORDER BY player_id) AS claimed FROM mm.active_players WHERE queue = 'so_duel';
ROLLBACK;
-- the first invalid ticket is reported, and nothing of the batch stays
SELECT pg_temp.try($$SELECT mm.create_tickets('so_duel', ARRAY['[{"id": "so_a", "attributes": {"skill": 1}}]',
	'[{"id": "so_b"}]']::jsonb[], '2026-01-01')$$) AS missing_attribute;
SELECT pg_temp.try($$SELECT mm.create_tickets('so_duel', ARRAY['[{"id": "so_a", "attributes": {"skill": 1}}]',
	'[{"id": "so_b", "attributes": {"skill": 2}}]', '{"id": "so_c"}']::jsonb[], '2026-01-01')$$) AS not_an_array;
SELECT pg_temp.try($$SELECT mm.create_tickets('so_duel', ARRAY['[{"id": "so_a", "attributes": {"skill": 1}}]',
	'[{"id": "so_a", "attributes": {"skill": 1}}]']::jsonb[], '2026-01-01')$$) AS player_twice;
SELECT count(*) AS tickets_left FROM mm.tickets WHERE queue = 'so_duel';
SELECT pg_temp.try($$SELECT mm.create_tickets('so_duel', ARRAY['[{"id": "so_a", "attributes": {"skill": 1}}]', NULL]::jsonb[])$$) AS null_ticket;
SELECT pg_temp.try($$SELECT mm.create_tickets('so_duel', '{}')$$) AS no_tickets;
SELECT pg_temp.try($$SELECT mm.create_tickets(NULL, ARRAY['[]']::jsonb[])$$) AS null_queue;
SELECT pg_temp.try($$SELECT mm.create_tickets('so_none', ARRAY['[{"id": "x"}]']::jsonb[])$$) AS unknown_queue;
SELECT pg_temp.try($$SELECT mm.create_tickets('so_duel', ARRAY['[{"id": "x"}]']::jsonb[], NULL)$$) AS null_now;
SELECT mm.drop_queue('so_duel');
SELECT setval('mm.tickets_id_seq', :ticket_seq_last, :'ticket_seq_called') > 0 AS sequence_restored;
