-- The tick's bulk writes (src/tick_bulk.c): the match players and the
-- matched tickets' ended rows go straight into their tables, a page at a
-- time; a table that takes no bulk insert (here: given an insert trigger)
-- is written through the INSERT statements instead.  Both write the same
-- rows, and a constraint holds on the bulk path as on an INSERT.  Every call
-- passes an explicit now.
SET timezone = 'UTC';

-- the sequences as this file found them, restored at its end (later files
-- keep their ids)
SELECT nextval('mm.tickets_id_seq') AS tbk_next_ticket, nextval('mm.matches_id_seq') AS tbk_next_match \gset

-- The same 2v2 queue twice, with the same tickets (a party of two among
-- them; each queue's players named apart): tbk_bulk is written in bulk,
-- tbk_stmt through the statements.
SELECT mm.create_queue(q, '{"match_size": {"min": 4, "max": 4},
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}')
  FROM unnest(ARRAY['tbk_bulk', 'tbk_stmt']) q;
INSERT INTO mm.tickets (queue, players, created_at)
SELECT q.name,
       (SELECT jsonb_agg(jsonb_build_object('id', q.prefix || u.id, 'attributes', jsonb_build_object('skill', u.skill)))
          FROM unnest(p.ids, p.skills) u(id, skill)),
       p.created_at
  FROM (VALUES ('tbk_bulk', 'tbk_b_'), ('tbk_stmt', 'tbk_s_')) q(name, prefix),
       (VALUES (ARRAY['a', 'b'], ARRAY[1000, 1010], timestamptz '2026-01-01 00:00:00+00'),
               (ARRAY['c'], ARRAY[1020], '2026-01-01 00:00:01+00'),
               (ARRAY['d'], ARRAY[1030], '2026-01-01 00:00:02+00'),
               (ARRAY['e'], ARRAY[1500], '2026-01-01 00:00:03+00'),
               (ARRAY['f'], ARRAY[1510], '2026-01-01 00:00:04+00'),
               (ARRAY['g'], ARRAY[1520], '2026-01-01 00:00:05+00'),
               (ARRAY['h'], ARRAY[1530], '2026-01-01 00:00:06+00'),
               (ARRAY['i'], ARRAY[3000], '2026-01-01 00:00:07+00')) p(ids, skills, created_at)
 ORDER BY p.created_at, q.name;

-- What the tick wrote for a queue, ids replaced by player names and match
-- numbers, so that two queues compare.
CREATE FUNCTION pg_temp.written(q text) RETURNS SETOF text LANGUAGE sql AS $$
	WITH m AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM mm.matches WHERE queue = q)
	SELECT format('player %s: match %s, ticket of %s, team %s, role %s, autofilled %s, low_priority %s, accepted %s, left_at %s',
				  regexp_replace(mp.player_id, '^tbk_[bs]_', ''), m.n, regexp_replace(t.players -> 0 ->> 'id', '^tbk_[bs]_', ''), mp.team, mp.role,
				  mp.autofilled, mp.low_priority, mp.accepted, mp.left_at)
	  FROM mm.match_players mp JOIN m ON m.id = mp.match_id JOIN mm.tickets t ON t.id = mp.ticket_id
	 WHERE mp.queue = q
	UNION ALL
	SELECT format('ticket of %s: %s, match %s, team %s, players %s, created %s, updated %s, matched %s, queues %s, heartbeat %s, cancel_reason %s',
				  regexp_replace(t.players -> 0 ->> 'id', '^tbk_[bs]_', ''), t.status, m.n, t.team,
				  jsonb_array_length(t.players), t.created_at, t.updated_at, t.matched_at, t.queues,
				  t.heartbeat_at, t.cancel_reason)
	  FROM mm.tickets_ended t LEFT JOIN m ON m.id = t.match_id
	 WHERE t.queue = q
	 ORDER BY 1
$$;

-- the bulk path: no trigger, so no NOTICE
SELECT mm.tick('tbk_bulk', '2026-01-01 00:00:10+00');

-- the statements: each INSERT announces itself
CREATE FUNCTION public.tick_bulk_insert_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE NOTICE 'INSERT into %', TG_TABLE_NAME;
	RETURN NULL;
END
$$;
CREATE TRIGGER tick_bulk_insert_seen AFTER INSERT ON mm.match_players
	FOR EACH STATEMENT EXECUTE FUNCTION public.tick_bulk_insert_seen();
CREATE TRIGGER tick_bulk_insert_seen AFTER INSERT ON mm.tickets_ended
	FOR EACH STATEMENT EXECUTE FUNCTION public.tick_bulk_insert_seen();
SELECT mm.tick('tbk_stmt', '2026-01-01 00:00:10+00');
DROP TRIGGER tick_bulk_insert_seen ON mm.match_players;
DROP TRIGGER tick_bulk_insert_seen ON mm.tickets_ended;
DROP FUNCTION public.tick_bulk_insert_seen();

SELECT * FROM pg_temp.written('tbk_bulk');
-- the same rows both ways
SELECT count(*) AS rows_written,
       (SELECT array_agg(w) FROM pg_temp.written('tbk_bulk') w)
         = (SELECT array_agg(w) FROM pg_temp.written('tbk_stmt') w) AS same_rows
  FROM pg_temp.written('tbk_bulk');

-- A CHECK constraint holds on the bulk path: a match with player tbk_zz is
-- refused, and nothing of the tick stays.
ALTER TABLE mm.match_players ADD CONSTRAINT tick_bulk_no_zz CHECK (player_id <> 'tbk_zz');
SELECT mm.create_queue('tbk_check', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tbk_check', '[{"id": "tbk_zy", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('tbk_check', '[{"id": "tbk_zz", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:01+00');
\set VERBOSITY terse
SELECT mm.tick('tbk_check', '2026-01-01 00:00:10+00');
\set VERBOSITY default
SELECT (SELECT count(*) FROM mm.matches WHERE queue = 'tbk_check') AS matches,
       (SELECT count(*) FROM mm.match_players WHERE queue = 'tbk_check') AS match_players,
       (SELECT string_agg(status, ', ' ORDER BY id) FROM mm.tickets WHERE queue = 'tbk_check') AS tickets;
ALTER TABLE mm.match_players DROP CONSTRAINT tick_bulk_no_zz;

-- An insert rule makes an INSERT do more than the bulk path would: the tick
-- writes through the statement, and the rule runs.
CREATE TABLE public.tick_bulk_rule_log (player_id text);
CREATE RULE tick_bulk_log AS ON INSERT TO mm.match_players
	DO ALSO INSERT INTO public.tick_bulk_rule_log VALUES (NEW.player_id);
SELECT mm.create_queue('tbk_rule', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('tbk_rule', '[{"id": "tbk_r1", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
  ('tbk_rule', '[{"id": "tbk_r2", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('tbk_rule', '2026-01-01 00:00:10+00');
SELECT string_agg(player_id, ', ' ORDER BY player_id) AS logged_by_the_rule FROM public.tick_bulk_rule_log;
DROP RULE tick_bulk_log ON mm.match_players;
DROP TABLE public.tick_bulk_rule_log;

SELECT count(mm.drop_queue(q, force => true)) FROM unnest(ARRAY['tbk_bulk', 'tbk_stmt', 'tbk_check', 'tbk_rule']) q;
SELECT setval('mm.tickets_id_seq', :tbk_next_ticket, false) > 0 AS tickets_seq_restored,
       setval('mm.matches_id_seq', :tbk_next_match, false) > 0 AS matches_seq_restored;
