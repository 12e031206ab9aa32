-- Role queues, the SQL side: mm.match_players.role and autofilled (and
-- their archive), mm.autofill_protection (grants, pg_dump, Citus placement,
-- queue deletion), per-role rating pools in mm.report_result (Glicko-2 by
-- team, OpenSkill free-for-all with a leaver) and the protection it counts
-- down, the players' roles in mm.get_assignment, mm.role_stats and the
-- per-role waits of mm.queue_statistics.  Most matches are made by hand, as
-- mm_admin, the way the tick writes them, so that every role is chosen
-- here; one is the tick's own (its seating is tested in
-- sql/role_queues.sql).  Every time is explicit (2041-07-01).
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\i sql/include/try.sql
SELECT last_value AS ticket_seq_last, is_called AS ticket_seq_called FROM mm.tickets_id_seq \gset
SELECT last_value AS match_seq_last, is_called AS match_seq_called FROM mm.matches_id_seq \gset
SELECT last_value AS history_seq_last, is_called AS history_seq_called FROM mm.rating_history_id_seq \gset
CREATE ROLE rs_admin IN ROLE mm_admin;

-- ===================================================================
-- The tables
-- ===================================================================
SELECT table_name, column_name, data_type, is_nullable, column_default
  FROM information_schema.columns
 WHERE table_schema = 'mm' AND table_name IN ('match_players', 'match_players_archive')
   AND column_name IN ('role', 'autofilled')
 ORDER BY table_name, ordinal_position;
SELECT column_name, data_type, is_nullable
  FROM information_schema.columns
 WHERE table_schema = 'mm' AND table_name = 'autofill_protection'
 ORDER BY ordinal_position;
SELECT pg_get_constraintdef(c.oid) AS definition FROM pg_constraint c
 WHERE c.conrelid = 'mm.autofill_protection'::regclass ORDER BY c.contype, c.conname;
-- mm_admin writes it, the director and the analyst read it, a frontend not
SELECT r.role, has_table_privilege(r.role, 'mm.autofill_protection', 'SELECT') AS read,
	   has_table_privilege(r.role, 'mm.autofill_protection', 'INSERT, UPDATE, DELETE') AS write
  FROM unnest(ARRAY['mm_admin', 'mm_director', 'mm_analyst', 'mm_ticker', 'mm_frontend']) r(role);
-- its rows are dumped, and on Citus it lives with its queue
SELECT 'mm.autofill_protection'::regclass = ANY (e.extconfig) AS dumped
  FROM pg_extension e WHERE e.extname = 'matchmaking';
SELECT placement, distribution_column FROM mm.sharding() WHERE table_name = 'mm.autofill_protection'::regclass;

-- The roles a config names: every composition of every team, or a
-- free-for-all's; none: NULL.
SELECT mm.config_roles('{"teams": [{"name": "a", "min": 3, "max": 3, "roles": {"tank": 1, "dps": 2}},
	{"name": "b", "min": 3, "max": 3, "roles": [{"tank": 1, "dps": 2}, {"healer": 1, "dps": 2}]}]}') AS teams,
	   mm.config_roles('{"match_size": {"min": 3, "max": 3}, "roles": {"scout": 1, "medic": 1, "sniper": 1}}') AS ffa,
	   mm.config_roles('{"match_size": {"min": 2, "max": 2}}') AS none;

-- ===================================================================
-- The queues
-- ===================================================================
-- 2v2, one tank and one dps a team, Glicko-2 per role in pool rs_ranked
SELECT mm.create_queue('rs_g2', '{"teams": [
	{"name": "red", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
	{"name": "blue", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
	"autofill": {"after_seconds": 60, "protect_games": 2},
	"rating": {"system": "glicko2", "pool": "rs_ranked", "per_role": true}}');
-- a free-for-all of three roles, OpenSkill per role, leavers lose
SELECT mm.create_queue('rs_ffa', '{"match_size": {"min": 3, "max": 3},
	"roles": {"scout": 1, "medic": 1, "sniper": 1},
	"autofill": {"after_seconds": 60, "protect_games": 2},
	"rating": {"system": "openskill", "pool": "rs_os", "per_role": true, "leavers_lose": true}}');
-- roles, but one rating a player (no per_role)
SELECT mm.create_queue('rs_plain', '{"teams": [
	{"name": "red", "min": 1, "max": 1, "roles": {"mid": 1}},
	{"name": "blue", "min": 1, "max": 1, "roles": {"mid": 1}}],
	"rating": {"system": "glicko2", "pool": "rs_plainpool"}}');
-- the statistics queue: a second composition brings a healer nobody plays
SELECT mm.create_queue('rs_stats', '{"teams": [
	{"name": "red", "min": 2, "max": 2, "roles": [{"tank": 1, "dps": 1}, {"healer": 1, "dps": 1}]},
	{"name": "blue", "min": 2, "max": 2, "roles": [{"tank": 1, "dps": 1}, {"healer": 1, "dps": 1}]}],
	"statistics": {"show_player_count": true, "show_time_to_match": true}}');
-- no roles at all
SELECT mm.create_queue('rs_noroles', '{"teams": [{"name": "red", "min": 1, "max": 1},
	{"name": "blue", "min": 1, "max": 1}],
	"statistics": {"show_player_count": true, "show_time_to_match": true}}');

-- A match as the tick writes it, at `at`: a ready match, its players with
-- team, role and autofilled, and their tickets (created through
-- mm.create_ticket at "created", with each player's "roles" list) matched
-- into it.  tickets: [{"team", "created", "players": [{"id", "roles",
-- "role", "autofilled"}]}]
CREATE FUNCTION pg_temp.rs_match(q text, at timestamptz, tickets jsonb) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	m bigint;
	t jsonb;
	tid bigint;
BEGIN
	INSERT INTO mm.matches (queue, status, created_at, updated_at, quality)
	VALUES (q, 'ready', at, at, 1) RETURNING id INTO m;
	FOR t IN SELECT e.value FROM jsonb_array_elements(tickets) e LOOP
		tid := mm.create_ticket(q, (SELECT jsonb_agg(p.value - 'role' - 'autofilled' ORDER BY p.ordinality)
									  FROM jsonb_array_elements(t -> 'players') WITH ORDINALITY p),
								(t ->> 'created')::timestamptz);
		INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team, role, autofilled)
		SELECT m, q, p.value ->> 'id', tid, t ->> 'team', p.value ->> 'role',
			   coalesce((p.value ->> 'autofilled')::boolean, false)
		  FROM jsonb_array_elements(t -> 'players') p;
		UPDATE mm.tickets x SET status = 'matched', match_id = m, team = t ->> 'team', matched_at = at,
			   updated_at = at
		 WHERE x.queue = q AND x.id = tid;
	END LOOP;
	RETURN m;
END
$$;

-- ===================================================================
-- Per-role pools exist as soon as a queue rates into them
-- ===================================================================
SELECT p.pool, mm.rating_pool_exists(p.pool) AS pool_exists
  FROM unnest(ARRAY['rs_ranked', 'rs_ranked.tank', 'rs_ranked.dps', 'rs_ranked.healer',
					'rs_os.medic', 'rs_plainpool', 'rs_plainpool.mid']) p(pool);
SELECT mm.decay_ratings('rs_ranked.tank', '1 day', '2041-07-01') AS decayed;
SELECT pg_temp.try($$SELECT mm.decay_ratings('rs_plainpool.mid', '1 day', '2041-07-01')$$) AS not_per_role;

-- ===================================================================
-- report_result per role: Glicko-2, two teams
-- ===================================================================
-- Stored ratings: rs_a has one in each pool; rs_d has no role in this match
-- (plain pool rs_ranked), and a dps rating that must stay untouched.
INSERT INTO mm.ratings (player_id, pool, rating, rd, volatility, games, wins, updated_at)
VALUES ('rs_a', 'rs_ranked.tank', 1700, 200, 0.06, 10, 5, '2041-07-01'),
	   ('rs_a', 'rs_ranked.dps', 1300, 200, 0.06, 10, 5, '2041-07-01'),
	   ('rs_a', 'rs_ranked', 1500, 200, 0.06, 10, 5, '2041-07-01'),
	   ('rs_b', 'rs_ranked.dps', 1600, 150, 0.06, 10, 5, '2041-07-01'),
	   ('rs_c', 'rs_ranked.tank', 1550, 100, 0.06, 10, 5, '2041-07-01'),
	   ('rs_d', 'rs_ranked', 1450, 300, 0.06, 10, 5, '2041-07-01'),
	   ('rs_d', 'rs_ranked.dps', 2000, 50, 0.06, 10, 5, '2041-07-01');
-- Autofill protection before the match: rs_d is autofilled in it, rs_c is
-- at 0 already, rs_e plays elsewhere, rs_a also has a row in another queue.
INSERT INTO mm.autofill_protection (queue, player_id, games_left, updated_at)
VALUES ('rs_g2', 'rs_a', 2, '2041-07-01'), ('rs_g2', 'rs_b', 1, '2041-07-01'),
	   ('rs_g2', 'rs_c', 0, '2041-07-01'), ('rs_g2', 'rs_d', 2, '2041-07-01'),
	   ('rs_g2', 'rs_e', 2, '2041-07-01'), ('rs_ffa', 'rs_a', 2, '2041-07-01'),
	   ('rs_ffa', 'rs_x', 2, '2041-07-01'), ('rs_ffa', 'rs_y', 1, '2041-07-01');
SELECT pg_temp.try($$INSERT INTO mm.autofill_protection VALUES ('rs_g2', 'rs_f', -1, '2041-07-01')$$)
	AS negative_refused;

SET ROLE rs_admin;
SELECT pg_temp.rs_match('rs_g2', '2041-07-01 10:00', '[
	{"team": "red", "created": "2041-07-01 09:59", "players": [{"id": "rs_a", "role": "tank"}]},
	{"team": "red", "created": "2041-07-01 09:59", "players": [{"id": "rs_b", "role": "dps"}]},
	{"team": "blue", "created": "2041-07-01 09:59", "players": [{"id": "rs_c", "role": "tank"}]},
	{"team": "blue", "created": "2041-07-01 09:59", "players": [{"id": "rs_d", "autofilled": true}]}]') AS g1 \gset
CREATE TEMP TABLE g1_result AS
SELECT * FROM mm.report_result('rs_g2', :g1, '{"red": 1, "blue": 2}', '2041-07-01 10:30');
RESET ROLE;
-- Each player's rating before is the one of the pool of the role played
-- (rs_d: the plain pool).  The red side is 1650 (RD 175), the blue 1500 (RD
-- 200); each player's new rating is one Glicko-2 period against the other
-- side's composite, from the role pool's rating.
SELECT g.player_id, g.team, g.rank, g.rating_before,
	   round(g.rating_after::numeric, 4) AS rating_after,
	   round(g.rating_after::numeric, 4) = round((mm.glicko2_update(
			x.rating, x.rd, 0.06, ARRAY[x.opp_rating], ARRAY[x.opp_rd], ARRAY[x.score])).rating::numeric, 4)
		   AS as_glicko2_in_role_pool
  FROM g1_result g
  JOIN (VALUES ('rs_a', 1700, 200, 1500, 200, 1), ('rs_b', 1600, 150, 1500, 200, 1),
			   ('rs_c', 1550, 100, 1650, 175, 0), ('rs_d', 1450, 300, 1650, 175, 0))
	   AS x (player_id, rating, rd, opp_rating, opp_rd, score) ON x.player_id = g.player_id
 ORDER BY g.player_id;
-- One game in the pool of the role played, none elsewhere; the history names it
SELECT r.player_id, r.pool, round(r.rating::numeric, 4) AS rating, r.games, r.wins, r.updated_at
  FROM mm.ratings r WHERE r.pool LIKE 'rs\_ranked%' ORDER BY r.player_id, r.pool;
SELECT h.player_id, h.pool, h.rating_before, h.created_at
  FROM mm.rating_history h WHERE h.match_id = :g1 ORDER BY h.player_id;
-- the protection: one game off for each player not autofilled (rs_a 2 -> 1,
-- rs_b 1 -> 0), never below 0 (rs_c stays, its row untouched), none for
-- the autofilled rs_d, nor for rs_e (not in the match) or another queue
SELECT queue, player_id, games_left, updated_at FROM mm.autofill_protection ORDER BY queue, player_id;

-- A second match: rs_a played dps (from their list) this time, rs_b was
-- autofilled; rs_a's dps rating moves, the tank one stays.
SET ROLE rs_admin;
SELECT pg_temp.rs_match('rs_g2', '2041-07-01 11:00', '[
	{"team": "red", "created": "2041-07-01 10:59", "players": [{"id": "rs_a", "role": "dps"}]},
	{"team": "red", "created": "2041-07-01 10:59", "players": [{"id": "rs_c", "role": "tank"}]},
	{"team": "blue", "created": "2041-07-01 10:59", "players": [{"id": "rs_b", "role": "tank", "autofilled": true}]},
	{"team": "blue", "created": "2041-07-01 10:59", "players": [{"id": "rs_d", "role": "dps"}]}]') AS g2 \gset
SELECT player_id, round(rating_before::numeric, 4) AS rating_before
  FROM mm.report_result('rs_g2', :g2, '{"red": 2, "blue": 1}', '2041-07-01 11:30')
 ORDER BY player_id;
RESET ROLE;
SELECT r.player_id, r.pool, r.games FROM mm.ratings r WHERE r.pool LIKE 'rs\_ranked%' ORDER BY r.player_id, r.pool;
SELECT queue, player_id, games_left, updated_at FROM mm.autofill_protection WHERE queue = 'rs_g2'
 ORDER BY player_id;

-- The id-only form rates per role too (and counts rs_a's last game off).
SET ROLE rs_admin;
SELECT pg_temp.rs_match('rs_g2', '2041-07-01 12:00', '[
	{"team": "red", "created": "2041-07-01 11:59", "players": [{"id": "rs_a", "role": "tank"}]},
	{"team": "red", "created": "2041-07-01 11:59", "players": [{"id": "rs_b", "role": "dps"}]},
	{"team": "blue", "created": "2041-07-01 11:59", "players": [{"id": "rs_c", "role": "tank"}]},
	{"team": "blue", "created": "2041-07-01 11:59", "players": [{"id": "rs_d", "role": "dps"}]}]') AS g3 \gset
CREATE TEMP TABLE g3_result AS
SELECT * FROM mm.report_result(:g3, '{"red": 1, "blue": 2}', '2041-07-01 12:30');
RESET ROLE;
-- each rating before is the last one of the role's pool
SELECT g.player_id, x.role,
	   g.rating_before = (SELECT h.rating_after FROM mm.rating_history h
						   WHERE h.player_id = g.player_id AND h.pool = 'rs_ranked.' || x.role
							 AND h.match_id <> :g3
						   ORDER BY h.created_at DESC LIMIT 1) AS from_role_pool
  FROM g3_result g
  JOIN (VALUES ('rs_a', 'tank'), ('rs_b', 'dps'), ('rs_c', 'tank'), ('rs_d', 'dps')) x (player_id, role)
	ON x.player_id = g.player_id
 ORDER BY g.player_id;
SELECT h.player_id, h.pool FROM mm.rating_history h WHERE h.match_id = :g3 ORDER BY h.player_id;
SELECT player_id, games_left FROM mm.autofill_protection WHERE queue = 'rs_g2' ORDER BY player_id;

-- ===================================================================
-- report_result per role: OpenSkill free-for-all, a leaver scored as a loss
-- ===================================================================
INSERT INTO mm.ratings (player_id, pool, mu, sigma, games, wins, updated_at)
VALUES ('rs_x', 'rs_os.scout', 30, 5, 3, 1, '2041-07-01'), ('rs_x', 'rs_os', 10, 5, 3, 1, '2041-07-01'),
	   ('rs_y', 'rs_os.medic', 20, 6, 3, 1, '2041-07-01');
SET ROLE rs_admin;
SELECT pg_temp.rs_match('rs_ffa', '2041-07-01 10:00', '[
	{"created": "2041-07-01 09:59", "players": [{"id": "rs_x", "role": "scout"}]},
	{"created": "2041-07-01 09:59", "players": [{"id": "rs_y", "role": "medic"}]},
	{"created": "2041-07-01 09:59", "players": [{"id": "rs_z", "role": "sniper"}]}]') AS f1 \gset
SELECT mm.leave_match('rs_ffa', :f1, 'rs_y', '2041-07-01 10:05');
CREATE TEMP TABLE f1_result AS
SELECT * FROM mm.report_result('rs_ffa', :f1, '{"rs_x": 2, "rs_y": 1, "rs_z": 3}', '2041-07-01 10:30');
RESET ROLE;
-- rs_z is new: created at 25 / 8.333 in rs_os.sniper.  rs_y ranked first
-- but left: a loss (ranked below every other side), run apart from the
-- others' update (which keeps the reported ranks).
SELECT f.player_id, f.rank, f.rating_before, round(f.rating_after::numeric, 4) AS mu_after,
	   round(f.rating_after::numeric, 4)
		   = round(CASE WHEN f.player_id = 'rs_y' THEN l.mu ELSE o.mu END::numeric, 4) AS as_openskill_in_role_pool
  FROM f1_result f
  JOIN (SELECT u.id, u.i FROM unnest(ARRAY['rs_x', 'rs_y', 'rs_z']) WITH ORDINALITY u(id, i)) p ON p.id = f.player_id
  JOIN (SELECT r.mu, r.i FROM mm.openskill_rate(ARRAY[30, 20, 25]::float8[], ARRAY[5, 6, 25 / 3.0]::float8[],
												ARRAY[1, 2, 3], ARRAY[2, 1, 3]) WITH ORDINALITY r(mu, sigma, i)) o
	ON o.i = p.i
  JOIN (SELECT r.mu, r.i FROM mm.openskill_rate(ARRAY[30, 20, 25]::float8[], ARRAY[5, 6, 25 / 3.0]::float8[],
												ARRAY[1, 2, 3], ARRAY[2, 4, 3]) WITH ORDINALITY r(mu, sigma, i)) l
	ON l.i = p.i
 ORDER BY f.player_id;
SELECT r.player_id, r.pool, r.games, r.wins FROM mm.ratings r WHERE r.pool LIKE 'rs\_os%' ORDER BY r.player_id, r.pool;
-- every player of the free-for-all counts a game off (the leaver rs_y
-- too); rs_a did not play
SELECT player_id, games_left FROM mm.autofill_protection WHERE queue = 'rs_ffa' ORDER BY player_id;

-- Roles without per_role: the plain pool
SET ROLE rs_admin;
SELECT pg_temp.rs_match('rs_plain', '2041-07-01 10:00', '[
	{"team": "red", "created": "2041-07-01 09:59", "players": [{"id": "rs_p", "role": "mid"}]},
	{"team": "blue", "created": "2041-07-01 09:59", "players": [{"id": "rs_q", "role": "mid"}]}]') AS p1 \gset
SELECT player_id, rating_before FROM mm.report_result('rs_plain', :p1, '{"red": 1, "blue": 2}', '2041-07-01 10:30')
 ORDER BY player_id;
RESET ROLE;
SELECT r.player_id, r.pool, r.games FROM mm.ratings r WHERE r.pool LIKE 'rs\_plainpool%' ORDER BY r.player_id;

-- ===================================================================
-- get_assignment: the roles of the ticket's players
-- ===================================================================
SET ROLE rs_admin;
SELECT pg_temp.rs_match('rs_g2', '2041-07-01 13:00', '[
	{"team": "red", "created": "2041-07-01 12:59",
	 "players": [{"id": "rs_h1", "roles": ["tank"], "role": "tank"},
				 {"id": "rs_h2", "roles": ["tank", "dps"], "role": "dps"}]},
	{"team": "blue", "created": "2041-07-01 12:59",
	 "players": [{"id": "rs_h3", "roles": ["dps"], "role": "tank", "autofilled": true},
				 {"id": "rs_h4", "role": "dps"}]}]') AS h1 \gset
SELECT pg_temp.rs_match('rs_noroles', '2041-07-01 13:00', '[
	{"team": "red", "created": "2041-07-01 12:59", "players": [{"id": "rs_n1"}]},
	{"team": "blue", "created": "2041-07-01 12:59", "players": [{"id": "rs_n2"}]}]') AS n1 \gset
RESET ROLE;
SELECT t.id AS party1 FROM mm.tickets t WHERE t.queue = 'rs_g2' AND t.players -> 0 ->> 'id' = 'rs_h1' \gset
SELECT t.id AS party2 FROM mm.tickets t WHERE t.queue = 'rs_g2' AND t.players -> 0 ->> 'id' = 'rs_h3' \gset
SELECT t.id AS solo FROM mm.tickets t WHERE t.queue = 'rs_noroles' AND t.players -> 0 ->> 'id' = 'rs_n1' \gset
SELECT mm.create_ticket('rs_g2', '[{"id": "rs_h5", "roles": ["dps"]}]', '2041-07-01 13:00') AS waiting \gset
-- every form; a match without roles and a ticket without a match: NULL
SELECT 'queue, id' AS form, ticket_status, match_id = :h1 AS in_match, team, roles
  FROM mm.get_assignment('rs_g2', :party1)
UNION ALL
SELECT 'id', ticket_status, match_id = :h1, team, roles FROM mm.get_assignment(:party2)
UNION ALL
SELECT 'id, token', ticket_status, match_id = :h1, team, roles
  FROM mm.get_assignment(:party1, mm.ticket_token(:party1))
UNION ALL
SELECT 'queue, id, token', ticket_status, match_id = :h1, team, roles
  FROM mm.get_assignment('rs_g2', :party2, mm.ticket_token(:party2))
UNION ALL
SELECT 'no roles', ticket_status, match_id = :n1, team, roles FROM mm.get_assignment('rs_noroles', :solo)
UNION ALL
SELECT 'searching', ticket_status, match_id IS NULL, team, roles FROM mm.get_assignment('rs_g2', :waiting);
SELECT mm.cancel_ticket('rs_g2', :waiting);

-- ===================================================================
-- role_stats and the per-role waits of queue_statistics (now 12:00)
-- ===================================================================
--  match  formed  player  list          role  autofilled  created   wait
--  M0     10:00   s8      tank          tank              09:50     600
--                 s9      dps           dps               09:59      60
--  M1     11:50   s1      tank, dps     tank              11:49      60
--                 s2      dps           dps               11:48     120
--                 s3      dps, tank     tank              11:49:30   30
--                 s4      tank          dps   yes         11:45     300
--  M2     11:55   s5a     (none)        tank              11:54      60  (one ticket,
--                 s5b     fill          dps               11:54      60   a party)
--                 s6      tank          tank              11:52     180
--                 s7      dps           dps               11:53     120
SET ROLE rs_admin;
SELECT pg_temp.rs_match('rs_stats', '2041-07-01 10:00', '[
	{"team": "red", "created": "2041-07-01 09:50", "players": [{"id": "s8", "roles": ["tank"], "role": "tank"}]},
	{"team": "blue", "created": "2041-07-01 09:59", "players": [{"id": "s9", "roles": ["dps"], "role": "dps"}]}]')
	IS NOT NULL AS m0,
	   pg_temp.rs_match('rs_stats', '2041-07-01 11:50', '[
	{"team": "red", "created": "2041-07-01 11:49", "players": [{"id": "s1", "roles": ["tank", "dps"], "role": "tank"}]},
	{"team": "red", "created": "2041-07-01 11:48", "players": [{"id": "s2", "roles": ["dps"], "role": "dps"}]},
	{"team": "blue", "created": "2041-07-01 11:49:30", "players": [{"id": "s3", "roles": ["dps", "tank"], "role": "tank"}]},
	{"team": "blue", "created": "2041-07-01 11:45",
	 "players": [{"id": "s4", "roles": ["tank"], "role": "dps", "autofilled": true}]}]') IS NOT NULL AS m1,
	   pg_temp.rs_match('rs_stats', '2041-07-01 11:55', '[
	{"team": "red", "created": "2041-07-01 11:54",
	 "players": [{"id": "s5a", "role": "tank"}, {"id": "s5b", "roles": ["fill"], "role": "dps"}]},
	{"team": "blue", "created": "2041-07-01 11:52", "players": [{"id": "s6", "roles": ["tank"], "role": "tank"}]},
	{"team": "blue", "created": "2041-07-01 11:53", "players": [{"id": "s7", "roles": ["dps"], "role": "dps"}]}]')
	IS NOT NULL AS m2;
RESET ROLE;
-- Last hour (M1, M2):
--   tank: s1, s3, s5a, s6: 4 players, first choice 3/4 (s3 got its second),
--         none autofilled, wait (60 + 30 + 60 + 180) / 4 = 82.5
--   dps:  s2, s4, s5b, s7: 4 players, first choice 3/4 (s4 autofilled; s5b's
--         "fill" counts), autofilled 1/4, wait (120 + 300 + 60 + 120) / 4 = 150
SELECT * FROM mm.role_stats('1 hour', '2041-07-01 12:00') WHERE queue = 'rs_stats';
-- Three hours (M0 too): tank 5 players, 4/5 first, wait (330 + 600) / 5 =
-- 186; dps 5, 4/5, autofilled 1/5, wait (600 + 60) / 5 = 132.  rs_g2's
-- matches of 10:00, 11:00 and 12:00 are in it too (h1 at 13:00 is after
-- now): tank rs_a, rs_c; rs_c, rs_b (autofilled); rs_a, rs_c: 6 players,
-- 1/6 autofilled; dps rs_b; rs_a, rs_d; rs_b, rs_d: 5 (rs_d's NULL role of
-- 10:00 is no role); no lists (first choice), every wait 60 s.
SELECT * FROM mm.role_stats('3 hours', '2041-07-01 12:00') WHERE queue IN ('rs_g2', 'rs_stats');
-- a queue without roles has no row; the view is the last hour of the clock
SELECT count(*) AS rows_without_roles FROM mm.role_stats('1 day', '2041-07-01 14:00') WHERE queue = 'rs_noroles';
SELECT count(*) AS rows_now FROM mm.role_stats WHERE queue LIKE 'rs\_%';
SELECT pg_temp.try($$SELECT * FROM mm.role_stats('-1 hour', '2041-07-01 12:00')$$) AS negative_window;
SELECT pg_temp.try($$SELECT * FROM mm.role_stats('1 hour', NULL)$$) AS null_now;

-- What players see.  The tickets matched in (11:45, 12:00] (M1, M2) waited
-- 60, 120, 30, 300, 60, 180, 120: median 120.  Per role, the players who got
-- it from their list: tank s1 60, s3 30, s5a 60, s6 180: median 60, 4
-- players; dps s2 120, s5b 60, s7 120 (s4 was autofilled): median 120, 3
-- players; healer: nobody.
SELECT * FROM mm.queue_statistics('rs_stats', '2041-07-01 12:00');
-- at 11:52 only M1 (waits 60, 120, 30, 300: median 90): tank s1 60, s3 30:
-- median 45; dps s2 120
SELECT * FROM mm.queue_statistics('rs_stats', '2041-07-01 11:52');
-- no roles: none; hidden waits hide the roles too
SELECT * FROM mm.queue_statistics('rs_noroles', '2041-07-01 13:05');
SELECT mm.alter_queue('rs_stats', jsonb_set(config, '{statistics,show_time_to_match}', 'false'))
  FROM mm.queues WHERE name = 'rs_stats';
SELECT * FROM mm.queue_statistics('rs_stats', '2041-07-01 12:00');

-- who may read them
SELECT r.role, has_function_privilege(r.role, 'mm.role_stats(interval, timestamptz)', 'EXECUTE') AS role_stats,
	   has_table_privilege(r.role, 'mm.role_stats', 'SELECT') AS role_stats_view,
	   has_function_privilege(r.role, 'mm.queue_statistics(text, timestamptz)', 'EXECUTE') AS queue_statistics,
	   has_function_privilege(r.role, 'mm.get_assignment(bigint, text)', 'EXECUTE') AS get_assignment_token
  FROM unnest(ARRAY['mm_analyst', 'mm_director', 'mm_frontend']) r(role);

-- ===================================================================
-- The tick's own match: roles and protection as it writes them
-- ===================================================================
-- Three players only tank, one only plays dps: one tank autofills to dps.
-- rs_k3 and rs_k4 are protected (a game left), so the tick autofills rs_k1,
-- and gives rs_k1 the queue's protect_games (2).
SELECT mm.create_queue('rs_tick', '{"teams": [
	{"name": "red", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
	{"name": "blue", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
	"autofill": {"after_seconds": 60, "protect_games": 2},
	"rating": {"system": "glicko2", "pool": "rs_tp", "per_role": true}}');
INSERT INTO mm.autofill_protection (queue, player_id, games_left, updated_at)
VALUES ('rs_tick', 'rs_k3', 1, '2041-07-01'), ('rs_tick', 'rs_k4', 1, '2041-07-01');
SELECT count(mm.create_ticket('rs_tick', jsonb_build_array(jsonb_build_object('id', v.p, 'roles', v.r)),
							  '2041-07-01 14:00')) AS tickets
  FROM (VALUES ('rs_k1', '["tank"]'::jsonb), ('rs_k2', '["dps"]'), ('rs_k3', '["tank"]'),
			   ('rs_k4', '["tank"]')) v(p, r);
SELECT mm.tick('rs_tick', '2041-07-01 14:01:01') AS matches;
SELECT player_id, role, autofilled FROM mm.match_players WHERE queue = 'rs_tick' ORDER BY player_id;
SELECT player_id, games_left, updated_at FROM mm.autofill_protection WHERE queue = 'rs_tick' ORDER BY player_id;
SELECT t.players -> 0 ->> 'id' AS player, a.roles
  FROM mm.tickets t, mm.get_assignment('rs_tick', t.id) a
 WHERE t.queue = 'rs_tick' ORDER BY 1;
-- the result rates each in the pool of the role the tick gave, and counts
-- the protected players' last game off (rs_k1's autofilled game does not)
SELECT m.id AS k_match FROM mm.matches m WHERE m.queue = 'rs_tick' \gset
SELECT count(*) AS rated FROM mm.report_result('rs_tick', :k_match, '{"red": 1, "blue": 2}', '2041-07-01 14:30');
SELECT h.player_id, h.pool FROM mm.rating_history h WHERE h.match_id = :k_match ORDER BY h.player_id;
SELECT player_id, games_left, updated_at FROM mm.autofill_protection WHERE queue = 'rs_tick' ORDER BY player_id;

-- ===================================================================
-- Retention archives the roles; a deleted queue takes its protection along
-- ===================================================================
BEGIN;
SELECT matches_purged > 0 AS purged FROM mm.purge_finished('0', 1000000, true, '2041-07-02');
SELECT a.player_id, a.role, a.autofilled FROM mm.match_players_archive a
 WHERE a.queue = 'rs_g2' AND a.match_id = :g1 ORDER BY a.player_id;
ROLLBACK;
-- on Citus mm.drop_queue deletes a queue's rows itself (here by hand, undone)
BEGIN;
SELECT mm.delete_queue_rows('rs_ffa');
SELECT queue, count(*) FROM mm.autofill_protection GROUP BY queue ORDER BY queue;
ROLLBACK;
SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['rs_g2', 'rs_ffa', 'rs_plain', 'rs_stats', 'rs_noroles', 'rs_tick']) q;
SELECT count(*) AS protection_left FROM mm.autofill_protection;
SELECT count(*) AS players_left FROM mm.match_players WHERE queue LIKE 'rs\_%';
SELECT count(*) AS claims_left FROM mm.active_players WHERE queue LIKE 'rs\_%';

DELETE FROM mm.rating_history WHERE pool LIKE 'rs\_%';
DELETE FROM mm.ratings WHERE pool LIKE 'rs\_%';
DROP TABLE g1_result, g3_result, f1_result;
DROP ROLE rs_admin;
SELECT setval('mm.tickets_id_seq', :ticket_seq_last, :'ticket_seq_called') > 0 AS sequence_restored,
	   setval('mm.matches_id_seq', :match_seq_last, :'match_seq_called') > 0 AS match_sequence_restored,
	   setval('mm.rating_history_id_seq', :history_seq_last, :'history_seq_called') > 0 AS history_sequence_restored;
