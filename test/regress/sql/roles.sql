-- Least privilege: the group roles mm_frontend, mm_director, mm_analyst,
-- mm_ticker and mm_admin, each tried at what it may and may not do.  A login
-- role of each is made here and dropped at the end.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
SELECT rolname, rolcanlogin, rolsuper, rolinherit
  FROM pg_roles WHERE rolname LIKE 'mm\_%' ORDER BY rolname;
SELECT r.rolname AS role, m.rolname AS member_of
  FROM pg_auth_members a JOIN pg_roles r ON r.oid = a.member JOIN pg_roles m ON m.oid = a.roleid
 WHERE r.rolname LIKE 'mm\_%' ORDER BY 1, 2;
-- nothing in schema mm is open to PUBLIC but pure functions
SELECT p.oid::regprocedure AS public_routine
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'mm' AND has_function_privilege('public', p.oid, 'EXECUTE')
   AND p.proname NOT IN ('elo_expected', 'elo_update', 'elo_k_factor', 'glicko2_update', 'glicko2_decay',
                         'glicko2_period', 'glicko2_period_transition', 'glicko2_period_combine',
                         'glicko2_period_serialize', 'glicko2_period_deserialize', 'glicko2_period_final',
                         'team_rating', 'team_rating_transition', 'team_rating_combine', 'team_rating_final',
                         'win_probability', 'smurf_score', 'rating_boost', 'balance_teams',
                         'openskill_rate', 'openskill_predict_win', 'openskill_predict_draw', 'verify_event', 'glicko_expected',
                         'prediction_figures');
SELECT c.oid::regclass AS public_relation
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'mm' AND c.relkind IN ('r', 'p', 'v', 'S')
   AND (has_table_privilege('public', c.oid, 'SELECT') OR has_table_privilege('public', c.oid, 'INSERT'));
-- any role may call the pure functions: the schema is open to PUBLIC
CREATE ROLE rl_nobody LOGIN;
SET ROLE rl_nobody;
SELECT mm.verify_event('{"event": "x"}') AS verified, round(mm.elo_expected(1500, 1500)::numeric, 2) AS elo;
SELECT count(*) FROM mm.queues;
RESET ROLE;
DROP ROLE rl_nobody;
-- every SECURITY DEFINER routine pins its search_path
SELECT p.oid::regprocedure AS definer_without_search_path
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'mm' AND p.prosecdef
   AND NOT EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search\_path=%');

CREATE ROLE rl_front LOGIN IN ROLE mm_frontend;
CREATE ROLE rl_director LOGIN IN ROLE mm_director;
CREATE ROLE rl_analyst LOGIN IN ROLE mm_analyst;
CREATE ROLE rl_admin LOGIN IN ROLE mm_admin;

-- Runs a statement as a role; 'ok' or the error's SQLSTATE and message.
CREATE FUNCTION pg_temp.as_role(who text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	result text := 'ok';
BEGIN
	EXECUTE format('SET LOCAL ROLE %I', who);
	BEGIN
		EXECUTE q;
	EXCEPTION WHEN OTHERS THEN
		result := SQLSTATE || ' ' || SQLERRM;
	END;
	RESET ROLE;
	RETURN result;
END
$$;

-- the admin runs the matchmaker
SELECT pg_temp.as_role('rl_admin', $q$SELECT mm.create_queue('rl_q', '{"teams": [{"name": "red", "min": 1, "max": 1},
  {"name": "blue", "min": 1, "max": 1}], "acceptance_timeout_seconds": 30}')$q$);
SELECT pg_temp.as_role('rl_admin', $q$INSERT INTO mm.tickets (queue, players, created_at)
  VALUES ('rl_q', '[{"id": "rl_bulk"}]', '2026-03-01 00:00:00+00')$q$) AS admin_bulk_insert;

-- the frontend: tickets and answers through functions
SELECT pg_temp.as_role('rl_front', $q$SELECT mm.create_ticket('rl_q', '[{"id": "rl_a"}]', '2026-03-01 00:00:01+00')$q$);
SELECT pg_temp.as_role('rl_front', $q$SELECT mm.create_ticket('rl_q', '[{"id": "rl_b"}]', '2026-03-01 00:00:02+00')$q$);
SELECT pg_temp.as_role('rl_front', $q$SELECT mm.cancel_ticket(id) FROM mm.tickets_active WHERE players @> '[{"id": "rl_b"}]'$q$)
  AS front_reads_tickets;
SELECT id AS tb FROM mm.tickets WHERE players @> '[{"id": "rl_b"}]' \gset
SELECT pg_temp.as_role('rl_front', format('SELECT mm.cancel_ticket(%s)', :tb)) AS front_cancels;
SELECT pg_temp.as_role('rl_front', $q$INSERT INTO mm.tickets (queue, players) VALUES ('rl_q', '[{"id": "rl_x"}]')$q$);
SELECT pg_temp.as_role('rl_front', $q$SELECT * FROM mm.ratings$q$);
SELECT pg_temp.as_role('rl_front', $q$SELECT * FROM mm.matches$q$);
SELECT pg_temp.as_role('rl_front', $q$SELECT mm.create_queue('rl_q2', '{"match_size": {"min": 2, "max": 2}}')$q$);
SELECT pg_temp.as_role('rl_front', $q$UPDATE mm.queues SET config = config$q$);
SELECT pg_temp.as_role('rl_front', $q$SELECT mm.tick('rl_q', '2026-03-01 00:00:05+00')$q$);

SELECT pg_temp.as_role('rl_admin', $q$SELECT mm.tick('rl_q', '2026-03-01 00:00:05+00')$q$) AS admin_ticks;
SELECT id AS mid FROM mm.matches WHERE queue = 'rl_q' \gset
SELECT id AS ta FROM mm.tickets WHERE players @> '[{"id": "rl_a"}]' \gset
SELECT pg_temp.as_role('rl_front', format($q$SELECT mm.accept_match(%s, 'rl_a', true, '2026-03-01 00:00:06+00')$q$, :mid));
SELECT pg_temp.as_role('rl_front', format($q$SELECT mm.accept_match(%s, 'rl_bulk', true, '2026-03-01 00:00:06+00')$q$, :mid));
-- a frontend reads an assignment with the ticket's token only: the id-only
-- form (any ticket's join secrets) and the tokens themselves are not its
SELECT pg_temp.as_role('rl_front', format('SELECT * FROM mm.get_assignment(%s, %L)', :ta, mm.ticket_token(:ta)))
  AS front_polls;
SELECT split_part(pg_temp.as_role('rl_front', format('SELECT * FROM mm.get_assignment(%s, %L)', :ta, mm.ticket_token(:ta + 1))), ' ', 1)
  AS front_polls_wrong_token;
SELECT pg_temp.as_role('rl_front', format('SELECT * FROM mm.get_assignment(%s)', :ta));
SELECT pg_temp.as_role('rl_front', format('SELECT mm.ticket_token(%s)', :ta));
SELECT pg_temp.as_role('rl_front', format('SELECT mm.ticket_token_matches(%s, %L)', :ta, mm.ticket_token(:ta)));
SELECT pg_temp.as_role('rl_front', $q$SELECT token ~ '^[0-9a-f]{32}$' FROM mm.create_ticket_with_token('rl_q', '[{"id": "rl_tok"}]', '2026-03-01 00:00:07+00')$q$)
  AS front_creates_with_token;
SELECT pg_temp.as_role('rl_front', $q$SELECT token ~ '^[0-9a-f]{32}$' FROM mm.create_ticket_with_token(ARRAY['rl_q'], '[{"id": "rl_tok2"}]', '2026-03-01 00:00:07+00')$q$)
  AS front_creates_with_token_queues;
SELECT pg_temp.as_role('rl_front', format($q$SELECT mm.assign(%s, 'udp://x')$q$, :mid));
SELECT pg_temp.as_role('rl_front', format($q$SELECT mm.complete_match(%s)$q$, :mid));
SELECT pg_temp.as_role('rl_front', format($q$SELECT mm.requeue_match(%s, 'x')$q$, :mid));
SELECT pg_temp.as_role('rl_front', $q$SELECT mm.notify_match_event('match_ready', 1, '{}')$q$);
SELECT pg_temp.as_role('rl_front', format($q$SELECT mm.report_result(%s, '{"red": 1, "blue": 2}')$q$, :mid));
SELECT pg_temp.as_role('rl_front', $q$SELECT * FROM mm.leaderboard$q$);

-- the director: assignment and the rest of the lifecycle, reads matches
SELECT pg_temp.as_role('rl_director', format($q$SELECT mm.assign(%s, 'udp://10.1.1.1:7777')$q$, :mid));
SELECT pg_temp.as_role('rl_director', $q$SELECT count(*) FROM mm.matches JOIN mm.match_players ON match_id = id$q$)
  AS director_reads_matches;
SELECT pg_temp.as_role('rl_director', format('SELECT * FROM mm.get_assignment(%s)', :ta)) AS director_polls;
SELECT pg_temp.as_role('rl_director', format('SELECT mm.ticket_token(%s)', :ta)) AS director_reads_tokens;
SELECT pg_temp.as_role('rl_director', format($q$SELECT mm.complete_match(%s, '2026-03-01 00:20:00+00')$q$, :mid));
SELECT status FROM mm.matches WHERE id = :mid;
SELECT pg_temp.as_role('rl_director', $q$SELECT mm.create_ticket('rl_q', '[{"id": "rl_c"}]')$q$);
SELECT pg_temp.as_role('rl_director', $q$SELECT mm.set_player_attributes('rl_a', '{"level": 3}')$q$) AS director_sets_attributes;
SELECT pg_temp.as_role('rl_front', $q$SELECT mm.set_player_attributes('rl_a', '{"level": 99}')$q$);
SELECT pg_temp.as_role('rl_front', $q$SELECT * FROM mm.players$q$);
SELECT pg_temp.as_role('rl_director', $q$SELECT * FROM mm.ratings$q$);
SELECT pg_temp.as_role('rl_director', $q$SELECT mm.alter_queue('rl_q', '{"match_size": {"min": 2, "max": 2}}')$q$);
SELECT pg_temp.as_role('rl_director', $q$DELETE FROM mm.matches$q$);
-- a replay reads every recorded ticket (a rule can test any attribute):
-- not the director's
SELECT pg_temp.as_role('rl_director', $q$SELECT mm.replay('rl_q', NULL, '2026-03-01 00:00:00+00', '2026-03-01 00:05:00+00')$q$);
SELECT pg_temp.as_role('rl_director', $q$SELECT count(*) FROM mm.replay_matches('rl_q', NULL, '2026-03-01 00:00:00+00', '2026-03-01 00:05:00+00')$q$);

-- the ticker ticks, and does nothing else: no ticket, no table, no queue
CREATE ROLE rl_ticker LOGIN IN ROLE mm_ticker;
SELECT pg_temp.as_role('rl_admin', $q$SELECT mm.create_queue('rl_tq', '{"match_size": {"min": 2, "max": 2}}')$q$);
SELECT FROM mm.create_ticket('rl_tq', '[{"id": "rl_t1"}]', '2026-03-01 00:00:01+00');
SELECT FROM mm.create_ticket('rl_tq', '[{"id": "rl_t2"}]', '2026-03-01 00:00:02+00');
SELECT pg_temp.as_role('rl_ticker', $q$SELECT mm.tick('rl_tq', '2026-03-01 00:00:05+00')$q$) AS ticker_ticks;
SELECT count(*) AS rl_tq_matches FROM mm.matches WHERE queue = 'rl_tq';
SELECT pg_temp.as_role('rl_ticker', $q$SELECT sum(matches) FROM mm.last_tick_stats()$q$) AS ticker_reads_its_stats;
-- every queue at once (dated before any ticket of the other tests, so it
-- changes nothing of theirs)
SELECT pg_temp.as_role('rl_ticker', $q$SELECT mm.tick(NULL, '1990-01-01 00:00:00+00')$q$) AS ticker_ticks_all;
SELECT pg_temp.as_role('rl_director', $q$SELECT mm.tick('rl_tq', '1990-01-01 00:00:00+00')$q$) AS director_ticks;
SELECT pg_temp.as_role('rl_ticker', $q$SELECT mm.create_ticket('rl_tq', '[{"id": "rl_t3"}]')$q$);
SELECT pg_temp.as_role('rl_ticker', $q$INSERT INTO mm.tickets (queue, players) VALUES ('rl_tq', '[{"id": "rl_t3"}]')$q$);
SELECT pg_temp.as_role('rl_ticker', $q$SELECT count(*) FROM mm.tickets$q$);
SELECT pg_temp.as_role('rl_ticker', $q$SELECT count(*) FROM mm.matches$q$);
SELECT pg_temp.as_role('rl_ticker', $q$SELECT count(*) FROM mm.queues$q$);
SELECT pg_temp.as_role('rl_ticker', $q$SELECT mm.alter_queue('rl_tq', '{"match_size": {"min": 3, "max": 3}}')$q$);
SELECT pg_temp.as_role('rl_ticker', $q$UPDATE mm.queues SET config = config$q$);
SELECT pg_temp.as_role('rl_ticker', $q$SELECT mm.schedule('rl_tq')$q$);
SELECT pg_temp.as_role('rl_ticker', format($q$SELECT mm.complete_match(%s)$q$, :mid));
SELECT pg_temp.as_role('rl_ticker', $q$SELECT mm.notify_match_event('match_ready', 1, '{}')$q$);
-- and runs the per-minute loop pg_cron runs: here a loop whose interval
-- (1000 years) ends it after one tick, at the real time
SELECT FROM mm.create_ticket('rl_tq', '[{"id": "rl_t3"}]', '2000-01-01 00:00:01+00');
SELECT FROM mm.create_ticket('rl_tq', '[{"id": "rl_t4"}]', '2000-01-01 00:00:02+00');
INSERT INTO mm.schedule_jobs (job_name, kind, queue, every, mode, cron_schedule)
VALUES ('mm_tick:rl_tq', 'tick', 'rl_tq', '1000 years', 'loop', '* * * * *');
SET ROLE rl_ticker;
CALL mm.tick_loop('rl_tq');
RESET ROLE;
SELECT count(*) AS rl_tq_matches FROM mm.matches WHERE queue = 'rl_tq';
-- the loop keeper runs a loop as its row's job_role: an admin may name
-- itself, never a role it cannot act as (here the superuser running the test)
SELECT pg_temp.as_role('rl_admin', $q$UPDATE mm.schedule_jobs SET job_role = 'rl_admin' WHERE job_name = 'mm_tick:rl_tq'$q$)
	AS admin_names_itself;
SELECT left(pg_temp.as_role('rl_admin', format($q$UPDATE mm.schedule_jobs SET job_role = %L WHERE job_name = 'mm_tick:rl_tq'$q$,
											   current_user)), 5) AS admin_names_superuser;
SELECT left(pg_temp.as_role('rl_admin', format($q$INSERT INTO mm.schedule_jobs (job_name, kind, queue, every, mode, cron_schedule, job_role)
	VALUES ('mm_tick:rl_x', 'tick', 'rl_x', '1 second', 'loop', '* * * * *', %L)$q$, current_user)), 5) AS admin_inserts_superuser;
SELECT job_role = 'rl_admin' AS job_role_kept FROM mm.schedule_jobs WHERE job_name = 'mm_tick:rl_tq';
DELETE FROM mm.schedule_jobs WHERE job_name = 'mm_tick:rl_tq';
SELECT pg_temp.as_role('rl_admin', $q$SELECT mm.drop_queue('rl_tq', true)$q$) AS admin_drops_rl_tq;

-- the analyst reads, never writes
SELECT pg_temp.as_role('rl_analyst', $q$SELECT count(*) FROM mm.tickets JOIN mm.matches m ON m.id = match_id$q$)
  AS analyst_reads;
SELECT pg_temp.as_role('rl_analyst', $q$SELECT count(*) FROM mm.ratings$q$) AS analyst_reads_ratings;
SELECT pg_temp.as_role('rl_analyst', $q$SELECT count(*) FROM mm.leaderboard$q$) AS analyst_reads_leaderboard;
SELECT pg_temp.as_role('rl_analyst', $q$SELECT * FROM mm.queue_stats_by_minute('rl_q', '2026-03-01 00:00:00+00', '2026-03-01 00:05:00+00')$q$)
  AS analyst_metrics;
SELECT pg_temp.as_role('rl_analyst', $q$SELECT mm.replay('rl_q', NULL, '2026-03-01 00:00:00+00', '2026-03-01 00:05:00+00')$q$)
  AS analyst_replays;
SELECT pg_temp.as_role('rl_analyst', $q$SELECT count(*) FROM mm.replay_matches('rl_q', NULL, '2026-03-01 00:00:00+00', '2026-03-01 00:05:00+00')$q$)
  AS analyst_replays_matches;
SELECT pg_temp.as_role('rl_analyst', $q$SELECT * FROM mm.event_key$q$);
SELECT pg_temp.as_role('rl_analyst', $q$INSERT INTO mm.tickets (queue, players) VALUES ('rl_q', '[{"id": "rl_y"}]')$q$);
SELECT pg_temp.as_role('rl_analyst', $q$SELECT mm.create_ticket('rl_q', '[{"id": "rl_y"}]')$q$);
SELECT pg_temp.as_role('rl_analyst', $q$UPDATE mm.matches SET status = 'cancelled'$q$);
SELECT pg_temp.as_role('rl_analyst', $q$SELECT mm.tick('rl_q')$q$);
SELECT pg_temp.as_role('rl_analyst', $q$SELECT mm.drop_queue('rl_q', true)$q$);

-- a player's data: the admin alone exports and forgets (as itself: the
-- functions are not SECURITY DEFINER); the ticket's id is given back after
SELECT last_value AS ticket_seq_last, is_called AS ticket_seq_called FROM mm.tickets_id_seq \gset
SELECT mm.cancel_ticket(mm.create_ticket('rl_q', '[{"id": "rl_gdpr", "attributes": {"x": 1}}]', '2026-03-01 00:00:00+00'))
  AS rl_gdpr_ticket_ended;
SELECT mm.set_player_attributes('rl_gdpr', '{"email": "gdpr@example.org"}');
SELECT r AS role, pg_temp.as_role(r, $q$SELECT jsonb_array_length(mm.export_player('rl_gdpr') -> 'tickets')$q$) AS export,
	   pg_temp.as_role(r, $q$SELECT mm.forget_player('rl_gdpr')$q$) AS forget
  FROM unnest(ARRAY['rl_front', 'rl_director', 'rl_analyst', 'rl_ticker', 'rl_admin']) r;
SELECT count(*) AS rl_gdpr_rows FROM mm.ticket_players WHERE player_id = 'rl_gdpr';

-- monitoring: the ticker (and the director, a ticker) records ticks, the
-- analyst reads the figures (the exporter's role is one); the admin may
-- also correct the table
SELECT r AS role,
	   pg_temp.as_role(r, $q$SELECT mm.record_tick('rl_q', '2026-03-01 00:00:00+00', '2026-03-01 00:00:00.25+00')$q$) AS records_tick,
	   pg_temp.as_role(r, $q$SELECT count(*) FROM mm.queue_monitoring('5 minutes', '2026-03-01 00:01:00+00')$q$) AS monitoring,
	   pg_temp.as_role(r, $q$SELECT count(*) FROM mm.queue_monitoring$q$) AS monitoring_view,
	   pg_temp.as_role(r, $q$SELECT count(*) FROM mm.tick_runs$q$) AS reads_tick_runs,
	   pg_temp.as_role(r, $q$SELECT count(*) FROM mm.fairness_monitoring$q$) AS fairness,
	   pg_temp.as_role(r, $q$DELETE FROM mm.tick_runs WHERE queue = 'rl_none'$q$) AS writes_tick_runs
  FROM unnest(ARRAY['rl_front', 'rl_director', 'rl_analyst', 'rl_ticker', 'rl_admin']) r;
SELECT queue, ticks_total FROM mm.tick_runs WHERE queue = 'rl_q';
-- fairness (docs/fairness.md): analysts and admins read the predictions
-- and run the three reports; the director reads the predictions and
-- reports scores; the frontend and the ticker none of it (the tick records
-- the predictions as the extension's owner)
SELECT pg_temp.as_role('rl_admin', $q$SELECT mm.create_queue('rl_rated', '{"teams": [{"name": "red", "min": 1, "max": 1},
  {"name": "blue", "min": 1, "max": 1}], "rating": {"system": "elo"}}')$q$) AS admin_rated_queue;
SELECT r AS role,
	   pg_temp.as_role(r, $q$SELECT mm.prediction_quality('rl_rated', '2026-03-01', '2026-03-02')$q$) AS quality,
	   pg_temp.as_role(r, $q$SELECT mm.fairness_report('rl_rated', '2026-03-01', '2026-03-02')$q$) AS scorecard,
	   pg_temp.as_role(r, $q$SELECT mm.replay_ratings('rl_rated', '{"system": "elo"}', '2026-03-01', '2026-03-02')$q$) AS replay,
	   pg_temp.as_role(r, $q$SELECT mm.replay_ratings('rl_rated', '{"system": "glicko2", "rating_period": "1 hour", "seed": "live", "season_resets": "live"}', '2026-03-01', '2026-03-02')$q$) AS replay_settings,
	   pg_temp.as_role(r, $q$SELECT count(*) FROM mm.match_predictions$q$) AS reads_predictions
  FROM unnest(ARRAY['rl_front', 'rl_director', 'rl_analyst', 'rl_ticker', 'rl_admin']) r;
SELECT r AS role, pg_temp.as_role(r, $q$INSERT INTO mm.match_predictions VALUES ('rl_rated', 1, 1, 0.5)$q$) AS writes_predictions,
	   pg_temp.as_role(r, $q$SELECT mm.record_match_predictions('rl_rated', '2026-03-01')$q$) AS records
  FROM unnest(ARRAY['rl_front', 'rl_director', 'rl_analyst', 'rl_ticker']) r;
SELECT r AS role,
	   has_function_privilege(r, 'mm.report_result(text, bigint, jsonb, timestamptz, jsonb)', 'EXECUTE') AS scores,
	   has_function_privilege(r, 'mm.report_result(bigint, jsonb, timestamptz, jsonb)', 'EXECUTE') AS scores_by_id,
	   has_table_privilege(r, 'mm.match_scores', 'SELECT') AS reads_scores,
	   has_table_privilege(r, 'mm.match_scores', 'INSERT') AS writes_scores,
	   has_function_privilege(r, 'mm.replay_ratings_core(text, float8, float8, float8, float8, float8, float8, integer[], float8[], float8[], float8[], float8[], bigint[], text[], text[], integer[], integer[], bigint[], integer[], integer[], float8[], float8[], float8[])', 'EXECUTE') AS replay_core
  FROM unnest(ARRAY['mm_frontend', 'mm_director', 'mm_analyst', 'mm_ticker', 'mm_admin']) r;
SELECT pg_temp.as_role('rl_admin', $q$SELECT mm.drop_queue('rl_rated', true)$q$) AS admin_drops_rated;

-- the event key is nobody's but the owner's
SELECT r AS role, has_table_privilege(r, 'mm.event_key', 'SELECT') AS reads_event_key
  FROM unnest(ARRAY['mm_frontend', 'mm_director', 'mm_analyst', 'mm_admin', 'mm_ticker']) r;

SELECT pg_temp.as_role('rl_admin', $q$SELECT mm.drop_queue('rl_q', true)$q$) AS admin_drops;
SELECT setval('mm.tickets_id_seq', :ticket_seq_last, :'ticket_seq_called') > 0 AS sequence_restored;
DELETE FROM mm.players WHERE id = 'rl_a';
DROP ROLE rl_front, rl_director, rl_analyst, rl_admin, rl_ticker;
