
-- ===================================================================
-- Section: privileges (last: covers every function made above)
-- ===================================================================
--
-- Nothing is open to PUBLIC but the pure rating functions and the event
-- signature check.  The roles of 05_roles.sql get what their work needs;
-- the functions of each fragment carry their own grants next to them.

REVOKE ALL ON ALL ROUTINES IN SCHEMA mm FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA mm FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA mm FROM PUBLIC;
-- The schema itself is open, so that any role can call the pure functions
-- granted to PUBLIC below (mm.verify_event for every listener); every other
-- object in it is closed.
GRANT USAGE ON SCHEMA mm TO PUBLIC;

-- mm_frontend: tickets through functions only.  create_ticket and
-- cancel_ticket run as the extension's owner, so the role needs no privilege
-- on the tables (the validation and claim triggers run as the owner too).
ALTER FUNCTION mm.create_ticket(text, jsonb, timestamptz) SECURITY DEFINER;
ALTER FUNCTION mm.cancel_ticket(bigint) SECURITY DEFINER;
GRANT EXECUTE ON FUNCTION mm.create_ticket(text, jsonb, timestamptz), mm.cancel_ticket(bigint)
	TO mm_frontend;

-- mm_director: reads matches; its writes go through the lifecycle functions.
GRANT SELECT ON mm.matches, mm.match_players, mm.match_results, mm.backfill_requests TO mm_director;

-- mm_analyst: reads everything but the event key, writes nothing.
GRANT SELECT ON ALL TABLES IN SCHEMA mm TO mm_analyst;
REVOKE ALL ON mm.event_key FROM mm_analyst;

-- mm_admin: runs the matchmaker (queues, ticks, schedules, retention,
-- rating pools) and may bulk-load tickets with INSERT or COPY: every table
-- but the event key, every routine (the tick and the scheduled jobs run as
-- the role that scheduled them, and call the internal ones).
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA mm TO mm_admin;
REVOKE ALL ON mm.event_key FROM mm_admin;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA mm TO mm_admin;
GRANT EXECUTE ON ALL ROUTINES IN SCHEMA mm TO mm_admin;

-- The functions of 0.2 kept by 0.3 for PUBLIC (the pure functions of their
-- arguments: ratings, balancing, event verification) and the analysts; a
-- function a fragment replaced under another signature is granted there.
DO $grants$
DECLARE
	g record;
BEGIN
	FOR g IN
		SELECT f.signature, f.role_name
		  FROM (VALUES
			('mm.elo_expected(float8, float8)', 'PUBLIC'),
			('mm.elo_update(float8, float8, float8, float8)', 'PUBLIC'),
			('mm.elo_k_factor(integer, float8)', 'PUBLIC'),
			('mm.glicko2_update(float8, float8, float8, float8[], float8[], float8[], float8)', 'PUBLIC'),
			('mm.glicko2_decay(float8, float8, float8, integer)', 'PUBLIC'),
			('mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8)', 'PUBLIC'),
			('mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8, float8)', 'PUBLIC'),
			('mm.glicko2_period_combine(internal, internal)', 'PUBLIC'),
			('mm.glicko2_period_serialize(internal)', 'PUBLIC'),
			('mm.glicko2_period_deserialize(bytea, internal)', 'PUBLIC'),
			('mm.glicko2_period_final(internal)', 'PUBLIC'),
			('mm.glicko2_period(float8, float8, float8, float8, float8, float8)', 'PUBLIC'),
			('mm.glicko2_period(float8, float8, float8, float8, float8, float8, float8)', 'PUBLIC'),
			('mm.team_rating_transition(float8[], float8, float8)', 'PUBLIC'),
			('mm.team_rating_combine(float8[], float8[])', 'PUBLIC'),
			('mm.team_rating_final(float8[])', 'PUBLIC'),
			('mm.team_rating(float8, float8)', 'PUBLIC'),
			('mm.win_probability(float8[], float8[])', 'PUBLIC'),
			('mm.smurf_score(integer, float8, float8, float8, float8[], float8)', 'PUBLIC'),
			('mm.rating_boost(float8, integer)', 'PUBLIC'),
			('mm.balance_teams(float8[], integer, integer[])', 'PUBLIC'),
			('mm.openskill_rate(float8[], float8[], integer[], integer[])', 'PUBLIC'),
			('mm.openskill_predict_win(float8[], float8[], integer[])', 'PUBLIC'),
			('mm.verify_event(text)', 'PUBLIC'),
			('mm.ticket_metrics(text, interval, timestamptz)', 'mm_analyst'),
			('mm.queue_stats(interval, timestamptz)', 'mm_analyst'),
			('mm.match_details(text, interval, timestamptz)', 'mm_analyst'),
			('mm.match_metrics(text, interval, timestamptz)', 'mm_analyst'),
			('mm.match_stats(interval, timestamptz)', 'mm_analyst'),
			('mm.queue_stats_by_minute(text, timestamptz, timestamptz)', 'mm_analyst'),
			('mm.queue_statistics(text, timestamptz)', 'mm_analyst'),
			('mm.health_report(text, interval, timestamptz)', 'mm_analyst'),
			('mm.metrics_check_window(interval, timestamptz)', 'mm_analyst'),
			('mm.metrics_queues(text)', 'mm_analyst'),
			('mm.result_winner(text, jsonb)', 'mm_analyst'),
			('mm.match_player_values(bigint, text, text)', 'mm_analyst')
		  ) AS f(signature, role_name)
		 WHERE pg_catalog.to_regprocedure(f.signature) IS NOT NULL
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON ROUTINE %s TO %s',
								  pg_catalog.to_regprocedure(g.signature),
								  CASE g.role_name WHEN 'PUBLIC' THEN 'PUBLIC'
												   ELSE pg_catalog.quote_ident(g.role_name) END);
	END LOOP;
END
$grants$;
GRANT SELECT ON mm.queue_stats, mm.match_stats, mm.schedules TO mm_analyst;

