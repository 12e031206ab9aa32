-- A player's data on request: mm.export_player (every row about the player,
-- checked against the catalog: every table that holds the player's id is in
-- the export) and mm.forget_player (refused while the player searches or
-- plays; afterwards no text or jsonb column of any table of the extension
-- holds the player's id or attribute values, found from the catalog, so a
-- table added later that holds player ids and is not covered fails here;
-- other players' rows, team sizes and counts unchanged; one pseudonym per
-- call across every table).  Every time is explicit (2044-01).
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\i sql/include/try.sql
SELECT last_value AS ticket_seq_last, is_called AS ticket_seq_called FROM mm.tickets_id_seq \gset
SELECT last_value AS match_seq_last, is_called AS match_seq_called FROM mm.matches_id_seq \gset
SELECT last_value AS history_seq_last, is_called AS history_seq_called FROM mm.rating_history_id_seq \gset
SELECT last_value AS penalty_seq_last, is_called AS penalty_seq_called FROM mm.penalty_history_id_seq \gset

-- Who may call them: mm_admin only
SELECT r.role, has_function_privilege(r.role, 'mm.export_player(text)', 'EXECUTE') AS export,
	   has_function_privilege(r.role, 'mm.forget_player(text)', 'EXECUTE') AS forget
  FROM unnest(ARRAY['mm_admin', 'mm_director', 'mm_analyst', 'mm_ticker', 'mm_frontend']) r(role);

CREATE FUNCTION pg_temp.match_of(q text, player text) RETURNS bigint LANGUAGE sql AS $$
	SELECT max(mp.match_id) FROM mm.match_players mp WHERE mp.queue = q AND mp.player_id = player
$$;
-- Every text, jsonb and text[] column of every table of the extension (the
-- partitions themselves) whose text holds one of the needles: table,
-- column, needle, rows.
CREATE FUNCTION pg_temp.holding(needles text[])
RETURNS TABLE (table_name text, column_name text, needle text, hits bigint)
LANGUAGE plpgsql AS $$
DECLARE
	c record;
	w text;
	n bigint;
BEGIN
	FOR c IN SELECT cl.oid::regclass AS tbl, cl.relname, a.attname
			   FROM pg_class cl JOIN pg_attribute a ON a.attrelid = cl.oid
			  WHERE cl.relnamespace = 'mm'::regnamespace AND cl.relkind = 'r'
				AND a.attnum > 0 AND NOT a.attisdropped
				AND a.atttypid IN ('text'::regtype, 'jsonb'::regtype, 'json'::regtype, 'text[]'::regtype,
								   'character varying'::regtype)
			  ORDER BY cl.relname, a.attnum LOOP
		FOREACH w IN ARRAY needles LOOP
			EXECUTE format('SELECT count(*) FROM %s WHERE strpos(%I::text, $1) > 0', c.tbl, c.attname)
				INTO n USING w;
			IF n > 0 THEN
				table_name := c.relname; column_name := c.attname; needle := w; hits := n;
				RETURN NEXT;
			END IF;
		END LOOP;
	END LOOP;
END
$$;

-- ===================================================================
-- A month of pd_alice: a dodge, a duel, a free-for-all, a party, seasons
-- ===================================================================
SELECT mm.create_queue('pd_duel', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"acceptance_timeout_seconds": 10, "rating": {"system": "glicko2", "pool": "pd_pool"},
	"penalties": {"cooldown_seconds": {"dodge": 60}}}');
SELECT mm.create_queue('pd_ffa', '{"match_size": {"min": 3, "max": 3}, "rating": {"system": "openskill", "pool": "pd_ffa"}}');
SELECT mm.create_queue('pd_party', '{"teams": [{"name": "a", "min": 2, "max": 2}, {"name": "b", "min": 2, "max": 2}]}');
SELECT mm.set_player_attributes('pd_alice', '{"email": "alice@example.org", "level": 77}');
SELECT mm.set_player_attributes('pd_bob', '{"email": "bob@example.org"}');
CREATE TEMP TABLE alice_entry AS
SELECT '{"id": "pd_alice", "attributes": {"skill": 1234.5678, "nickname": "Zorro-4711"},
		 "latencies": {"pd-region-9": 37}}'::jsonb AS entry;

-- 2044-01-01: pd_alice dodges pd_bob (an offence), then beats pd_carol
SELECT mm.create_ticket('pd_duel', jsonb_build_array(entry), '2044-01-01 10:00') > 0 AS alice FROM alice_entry;
SELECT mm.create_ticket('pd_duel', '[{"id": "pd_bob"}]', '2044-01-01 10:00') > 0 AS bob;
SELECT mm.tick('pd_duel', '2044-01-01 10:00:01') AS proposed;
SELECT mm.accept_match(pg_temp.match_of('pd_duel', 'pd_alice'), 'pd_alice', false, '2044-01-01 10:00:03') AS dodged;
SELECT count(mm.cancel_ticket(t.id)) AS cancelled FROM mm.tickets_active t WHERE t.queue = 'pd_duel';
SELECT mm.create_ticket('pd_duel', jsonb_build_array(entry), '2044-01-01 11:00') > 0 AS alice FROM alice_entry;
SELECT mm.create_ticket('pd_duel', '[{"id": "pd_carol"}]', '2044-01-01 11:00') > 0 AS carol;
SELECT mm.tick('pd_duel', '2044-01-01 11:00:01') AS proposed;
SELECT mm.accept_match(pg_temp.match_of('pd_duel', 'pd_alice'), p, true, '2044-01-01 11:00:03') AS accepted
  FROM unnest(ARRAY['pd_alice', 'pd_carol']) p;
SELECT count(*) AS rated FROM mm.report_result('pd_duel', pg_temp.match_of('pd_duel', 'pd_alice'),
	jsonb_build_object((SELECT team FROM mm.match_players WHERE player_id = 'pd_alice' AND queue = 'pd_duel'
						ORDER BY match_id DESC LIMIT 1), 1,
					   (SELECT team FROM mm.match_players WHERE player_id = 'pd_carol' AND queue = 'pd_duel'
						ORDER BY match_id DESC LIMIT 1), 2), '2044-01-01 11:21');
-- the first day's finished tickets and matches go to the archive
SELECT * FROM mm.purge_finished('1 day', 10000, true, '2044-01-03');

-- 2044-01-05: a free-for-all pd_alice wins (ranks by player id), a party
-- of pd_alice and pd_bob (assigned with properties naming pd_alice), a
-- season start over her duel rating
SELECT mm.create_ticket('pd_ffa', jsonb_build_array(entry), '2044-01-05 10:00') > 0 AS alice FROM alice_entry;
SELECT count(mm.create_ticket('pd_ffa', jsonb_build_array(jsonb_build_object('id', p)), '2044-01-05 10:00')) AS others
  FROM unnest(ARRAY['pd_bob', 'pd_carol']) p;
SELECT mm.tick('pd_ffa', '2044-01-05 10:00:01') AS formed;
SELECT count(*) AS rated FROM mm.report_result('pd_ffa', pg_temp.match_of('pd_ffa', 'pd_alice'),
	'{"pd_alice": 1, "pd_bob": 2, "pd_carol": 3}', '2044-01-05 10:21');
SELECT mm.create_ticket('pd_party', jsonb_build_array(entry, '{"id": "pd_bob", "latencies": {"eu-west": 20}}'::jsonb),
						'2044-01-05 11:00') > 0 AS party FROM alice_entry;
SELECT mm.create_ticket('pd_party', '[{"id": "pd_carol"}, {"id": "pd_dan"}]', '2044-01-05 11:00') > 0 AS party;
SELECT mm.tick('pd_party', '2044-01-05 11:00:01') AS formed;
SELECT mm.assign('pd_party', pg_temp.match_of('pd_party', 'pd_alice'), 'server-1:7777',
				 '{"captain": "pd_alice", "map": "dust"}');
SELECT mm.complete_match('pd_party', pg_temp.match_of('pd_party', 'pd_alice'), '2044-01-05 11:30');
SELECT mm.start_season('pd_pool', 'S1', '2044-01-06') AS reset;
SELECT mm.start_season('pd_pool', 'S2', '2044-01-07') AS reset;

-- ===================================================================
-- Export: a key per table, every table holding the id covered
-- ===================================================================
SELECT e.key, jsonb_array_length(e.value) AS rows
  FROM jsonb_each(mm.export_player('pd_alice')) e WHERE jsonb_typeof(e.value) = 'array' ORDER BY e.key;
-- a party ticket shows pd_alice's own entry only
SELECT t -> 'players' AS players, t -> 'party_size' AS party_size, t ->> 'queue' AS queue
  FROM jsonb_array_elements(mm.export_player('pd_alice') -> 'tickets') t WHERE t ->> 'queue' = 'pd_party';
SELECT mm.export_player('pd_alice') -> 'players' -> 0 -> 'attributes' AS trusted_attributes;
-- every table (a partition: its parent) with a row naming pd_alice has a
-- non-empty key in the export
SELECT h.table_name, coalesce(pa.relname, h.table_name) AS exported_as,
	   coalesce(jsonb_array_length(mm.export_player('pd_alice') -> coalesce(pa.relname, h.table_name)), 0) > 0 AS covered
  FROM (SELECT DISTINCT table_name FROM pg_temp.holding(ARRAY['pd_alice'])) h
  LEFT JOIN pg_inherits i ON i.inhrelid = ('mm.' || quote_ident(h.table_name))::regclass
  LEFT JOIN pg_class pa ON pa.oid = i.inhparent
 ORDER BY h.table_name;
SELECT pg_temp.try($$SELECT mm.export_player(NULL)$$) AS null_id, pg_temp.try($$SELECT mm.export_player('')$$) AS empty_id;
SELECT mm.export_player('pd_nobody') - 'player_id' = (SELECT jsonb_object_agg(k, '[]'::jsonb)
	FROM jsonb_object_keys(mm.export_player('pd_nobody') - 'player_id') k) AS unknown_player_all_empty;

-- ===================================================================
-- Forget: refused while searching or in a live match
-- ===================================================================
SELECT pg_temp.try($$SELECT mm.forget_player(NULL)$$) AS null_id, pg_temp.try($$SELECT mm.forget_player('')$$) AS empty_id;
SELECT mm.create_ticket('pd_party', '[{"id": "pd_alice"}, {"id": "pd_erin"}]', '2044-01-08 10:00') AS searching_ticket \gset
SELECT pg_temp.try($$SELECT mm.forget_player('pd_alice')$$) AS searching;
SELECT mm.create_ticket('pd_party', '[{"id": "pd_frank"}, {"id": "pd_gina"}]', '2044-01-08 10:00') > 0 AS party;
SELECT mm.tick('pd_party', '2044-01-08 10:00:01') AS formed;
SELECT pg_temp.try($$SELECT mm.forget_player('pd_alice')$$) AS in_live_match;
-- after leaving, the match is still live: still refused
SELECT mm.leave_match('pd_party', pg_temp.match_of('pd_party', 'pd_alice'), 'pd_alice', '2044-01-08 10:05');
SELECT count(*) AS claims FROM mm.active_players WHERE player_id = 'pd_alice';
SELECT pg_temp.try($$SELECT mm.forget_player('pd_alice')$$) AS left_live_match;
SELECT mm.complete_match('pd_party', pg_temp.match_of('pd_party', 'pd_alice'), '2044-01-08 10:30');

-- ===================================================================
-- Forget: deleted, anonymised, and nothing left
-- ===================================================================
CREATE TEMP TABLE counts_before AS
SELECT (SELECT count(*) FROM mm.tickets WHERE queue LIKE 'pd\_%') + (SELECT count(*) FROM mm.tickets_archive WHERE queue LIKE 'pd\_%') AS tickets,
	   (SELECT count(*) FROM mm.match_players WHERE queue LIKE 'pd\_%') + (SELECT count(*) FROM mm.match_players_archive WHERE queue LIKE 'pd\_%') AS match_players,
	   (SELECT count(*) FROM mm.rating_history WHERE pool LIKE 'pd\_%') AS rating_history,
	   (SELECT count(*) FROM mm.season_ratings WHERE pool LIKE 'pd\_%') AS season_ratings,
	   (SELECT count(*) FROM mm.penalty_history WHERE queue LIKE 'pd\_%') AS penalty_history,
	   (SELECT jsonb_agg(x ORDER BY x.queue, x.match_id) FROM
		  (SELECT queue, match_id, count(*) AS players, count(*) FILTER (WHERE team = 'a') AS team_a
			 FROM (SELECT queue, match_id, team FROM mm.match_players UNION ALL
				   SELECT queue, match_id, team FROM mm.match_players_archive) mp
			WHERE queue LIKE 'pd\_%' GROUP BY queue, match_id) x) AS team_sizes,
	   (SELECT jsonb_agg(s ORDER BY s.queue, s.reason) FROM mm.penalty_stats('30 days', '2044-01-10') s
		 WHERE s.queue LIKE 'pd\_%') AS penalty_stats,
	   (SELECT jsonb_agg(jsonb_build_object(e.key, jsonb_array_length(e.value)) ORDER BY e.key)
		  FROM jsonb_each(mm.export_player('pd_bob')) e WHERE jsonb_typeof(e.value) = 'array') AS bob_export;
SELECT mm.forget_player('pd_alice');
-- no column of any table holds her id or attribute values
SELECT * FROM pg_temp.holding(ARRAY['pd_alice', 'alice@example.org', 'Zorro-4711', '1234.5678', 'pd-region-9']);
-- counts, team sizes, penalty figures and pd_bob's rows are as they were
SELECT b.tickets = a.tickets AS tickets, b.match_players = a.match_players AS match_players,
	   b.rating_history = a.rating_history AS rating_history, b.season_ratings = a.season_ratings AS season_ratings,
	   b.penalty_history = a.penalty_history AS penalty_history, b.team_sizes = a.team_sizes AS team_sizes,
	   b.penalty_stats = a.penalty_stats AS penalty_stats, b.bob_export = a.bob_export AS bob_export
  FROM counts_before b CROSS JOIN LATERAL (
	SELECT (SELECT count(*) FROM mm.tickets WHERE queue LIKE 'pd\_%') + (SELECT count(*) FROM mm.tickets_archive WHERE queue LIKE 'pd\_%') AS tickets,
		   (SELECT count(*) FROM mm.match_players WHERE queue LIKE 'pd\_%') + (SELECT count(*) FROM mm.match_players_archive WHERE queue LIKE 'pd\_%') AS match_players,
		   (SELECT count(*) FROM mm.rating_history WHERE pool LIKE 'pd\_%') AS rating_history,
		   (SELECT count(*) FROM mm.season_ratings WHERE pool LIKE 'pd\_%') AS season_ratings,
		   (SELECT count(*) FROM mm.penalty_history WHERE queue LIKE 'pd\_%') AS penalty_history,
		   (SELECT jsonb_agg(x ORDER BY x.queue, x.match_id) FROM
			  (SELECT queue, match_id, count(*) AS players, count(*) FILTER (WHERE team = 'a') AS team_a
				 FROM (SELECT queue, match_id, team FROM mm.match_players UNION ALL
					   SELECT queue, match_id, team FROM mm.match_players_archive) mp
				WHERE queue LIKE 'pd\_%' GROUP BY queue, match_id) x) AS team_sizes,
		   (SELECT jsonb_agg(s ORDER BY s.queue, s.reason) FROM mm.penalty_stats('30 days', '2044-01-10') s
			 WHERE s.queue LIKE 'pd\_%') AS penalty_stats,
		   (SELECT jsonb_agg(jsonb_build_object(e.key, jsonb_array_length(e.value)) ORDER BY e.key)
			  FROM jsonb_each(mm.export_player('pd_bob')) e WHERE jsonb_typeof(e.value) = 'array') AS bob_export) a;
-- one pseudonym, everywhere: the tickets' entries, match players, results,
-- history, season archives and penalty history agree; a match's players
-- still meet their ticket's entry
SELECT count(DISTINCT p) AS pseudonyms, bool_and(p ~ '^forgotten-[0-9a-f-]{36}$') AS shaped
  FROM (SELECT player_id AS p FROM mm.match_players WHERE player_id LIKE 'forgotten-%'
		UNION ALL SELECT player_id FROM mm.match_players_archive WHERE player_id LIKE 'forgotten-%'
		UNION ALL SELECT player_id FROM mm.rating_history WHERE player_id LIKE 'forgotten-%'
		UNION ALL SELECT player_id FROM mm.season_ratings WHERE player_id LIKE 'forgotten-%'
		UNION ALL SELECT player_id FROM mm.penalty_history WHERE player_id LIKE 'forgotten-%'
		UNION ALL SELECT k FROM mm.match_results r, jsonb_object_keys(r.ranks) k WHERE k LIKE 'forgotten-%'
		UNION ALL SELECT e ->> 'id' FROM mm.tickets t, jsonb_array_elements(t.players) e WHERE e ->> 'id' LIKE 'forgotten-%'
		UNION ALL SELECT e ->> 'id' FROM mm.tickets_archive t, jsonb_array_elements(t.players) e
				   WHERE e ->> 'id' LIKE 'forgotten-%') x;
SELECT count(*) AS match_players, count(*) FILTER (WHERE tp.player_id IS NOT NULL) AS meet_their_ticket
  FROM mm.match_players mp LEFT JOIN mm.ticket_players tp ON tp.ticket_id = mp.ticket_id AND tp.player_id = mp.player_id
 WHERE mp.player_id LIKE 'forgotten-%';
SELECT count(*) AS current_rows FROM mm.ratings WHERE player_id LIKE 'forgotten-%';
-- the party's other member keeps their entry
SELECT e AS bob_entry FROM mm.tickets t, jsonb_array_elements(t.players) e
 WHERE t.queue = 'pd_party' AND e ->> 'id' = 'pd_bob';
-- the call's claim is gone; forgetting again finds nothing; pd_alice may
-- come back as a new player
SELECT count(*) AS claims FROM mm.active_players WHERE ticket_id = 0;
SELECT mm.forget_player('pd_alice');
SELECT mm.create_ticket('pd_duel', '[{"id": "pd_alice"}]', '2044-01-09 10:00') > 0 AS back;
SELECT count(mm.cancel_ticket(t.id)) AS cancelled FROM mm.tickets_active t WHERE t.queue LIKE 'pd\_%';
-- any other change of a ticket's players is still refused
SELECT regexp_replace(pg_temp.try(format($$UPDATE mm.tickets_ended SET players = '[{"id": "pd_zed"}]' WHERE id = %s$$,
										 :searching_ticket)), 'ticket \d+', 'ticket N') AS rewrite,
	   regexp_replace(pg_temp.try(format($$UPDATE mm.tickets_ended SET players = '[{"id": "forgotten-x"}, {"id": "pd_erin"}]'
											WHERE id = %s$$, :searching_ticket)), 'ticket \d+', 'ticket N') AS fake_pseudonym;

-- ===================================================================
-- Clean up
-- ===================================================================
SELECT mm.drop_queue(q, force => true) FROM unnest(ARRAY['pd_duel', 'pd_ffa', 'pd_party']) q;
DELETE FROM mm.tickets_archive WHERE queue LIKE 'pd\_%';
DELETE FROM mm.matches_archive WHERE queue LIKE 'pd\_%';
DELETE FROM mm.match_players_archive WHERE queue LIKE 'pd\_%';
DELETE FROM mm.match_results_archive WHERE queue LIKE 'pd\_%';
DELETE FROM mm.season_ratings WHERE pool LIKE 'pd\_%';
DELETE FROM mm.seasons WHERE pool LIKE 'pd\_%';
DELETE FROM mm.rating_pools WHERE pool LIKE 'pd\_%';
DELETE FROM mm.rating_history WHERE pool LIKE 'pd\_%';
DELETE FROM mm.ratings WHERE pool LIKE 'pd\_%';
DELETE FROM mm.penalty_history WHERE queue LIKE 'pd\_%';
DELETE FROM mm.player_penalties WHERE queue LIKE 'pd\_%';
DELETE FROM mm.players WHERE id LIKE 'pd\_%';
DROP TABLE alice_entry, counts_before;
SELECT setval('mm.tickets_id_seq', :ticket_seq_last, :'ticket_seq_called') > 0 AS sequence_restored,
	   setval('mm.matches_id_seq', :match_seq_last, :'match_seq_called') > 0 AS match_sequence_restored,
	   setval('mm.rating_history_id_seq', :history_seq_last, :'history_seq_called') > 0 AS history_sequence_restored,
	   setval('mm.penalty_history_id_seq', :penalty_seq_last, :'penalty_seq_called') > 0 AS penalty_sequence_restored;
