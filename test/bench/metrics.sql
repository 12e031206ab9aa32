-- Metrics stay cheap: one day of a busy queue (200,000 tickets, 2.3 a
-- second; 90% matched in pairs, 5% timed out, 5% cancelled; a result for
-- every other match), then each metric over the last hour against the same
-- metric over the whole day.  With the (queue, time) indexes a one-hour
-- window reads about 1/24 of the rows, so its time should be a small
-- fraction of the day's; without them both would scan the table.
-- Also one retention batch of 10,000 matches.
\set n 200000
SET client_min_messages = notice;

SELECT mm.create_queue('bench-metrics', '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "statistics": {"show_player_count": true, "show_time_to_match": true}}');

INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'bench-metrics',
	   jsonb_build_array(jsonb_build_object('id', 'bm-' || i,
			'attributes', jsonb_build_object('skill', 600 + (i::bigint * 7919) % 800),
			'latencies', jsonb_build_object('eu', 20 + (i::bigint * 104729) % 60))),
	   '2030-01-01 00:00:00+00'::timestamptz + i * (interval '86400 seconds' / :n)
  FROM generate_series(1, :n) i;

-- consecutive tickets pair up; pair % 20 = 0 times out, = 1 is cancelled
CREATE TEMP TABLE bench_pairs AS
SELECT t.id, t.created_at, (row_number() OVER (ORDER BY t.id) - 1) / 2 AS pair,
	   (row_number() OVER (ORDER BY t.id) - 1) % 2 AS side
  FROM mm.tickets t WHERE t.queue = 'bench-metrics';
CREATE TEMP TABLE bench_matches AS
SELECT pair, 100000000 + pair AS match_id,
	   max(created_at) + (pair % 30) * interval '1 second' AS formed
  FROM bench_pairs WHERE pair % 20 >= 2 GROUP BY pair;
INSERT INTO mm.matches (id, queue, status, created_at, updated_at, region, quality)
SELECT match_id, 'bench-metrics', 'ready', formed, formed, 'eu', 0.8 + (pair % 20) / 100.0
  FROM bench_matches;
INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team, left_at)
SELECT m.match_id, 'bench-metrics', tp.player_id, p.id, CASE p.side WHEN 0 THEN 'red' ELSE 'blue' END,
	   CASE WHEN p.pair % 50 = 2 THEN m.formed + interval '1 minute' END
  FROM bench_pairs p JOIN bench_matches m USING (pair) JOIN mm.ticket_players tp ON tp.ticket_id = p.id;
UPDATE mm.tickets t SET status = 'matched', match_id = m.match_id, matched_at = m.formed, updated_at = m.formed
  FROM bench_pairs p JOIN bench_matches m USING (pair) WHERE t.id = p.id;
UPDATE mm.tickets t SET status = CASE WHEN p.pair % 20 = 0 THEN 'timed_out' ELSE 'cancelled' END,
	   updated_at = t.created_at + interval '90 seconds'
  FROM bench_pairs p WHERE t.id = p.id AND p.pair % 20 < 2;
INSERT INTO mm.match_results (match_id, winner_team, predicted_favourite, favourite_win_probability, duration, reported_at)
SELECT match_id, CASE WHEN pair % 3 = 0 THEN 'blue' ELSE 'red' END, 'red', 0.6, interval '20 minutes',
	   formed + interval '20 minutes'
  FROM bench_matches WHERE pair % 2 = 0;
VACUUM ANALYZE mm.tickets, mm.matches, mm.match_players, mm.match_results, mm.active_players;

DO $$
DECLARE
	now_at constant timestamptz := '2030-01-02 00:00:00+00';
	t0 timestamptz;
	hour_ms float8;
	day_ms float8;
	rounds constant integer := 5;
	i integer;
	metric text;
BEGIN
	FOREACH metric IN ARRAY ARRAY['queue_stats', 'match_stats', 'health_report', 'queue_stats_by_minute', 'queue_monitoring'] LOOP
		FOR pass IN 1 .. 2 LOOP
			t0 := clock_timestamp();
			FOR i IN 1 .. rounds LOOP
				CASE metric
				WHEN 'queue_stats' THEN
					PERFORM * FROM mm.queue_stats(CASE pass WHEN 1 THEN interval '1 hour' ELSE interval '1 day' END, now_at);
				WHEN 'match_stats' THEN
					PERFORM * FROM mm.match_stats(CASE pass WHEN 1 THEN interval '1 hour' ELSE interval '1 day' END, now_at);
				WHEN 'health_report' THEN
					PERFORM * FROM mm.health_report(NULL, CASE pass WHEN 1 THEN interval '1 hour' ELSE interval '1 day' END, now_at);
				WHEN 'queue_monitoring' THEN
					PERFORM * FROM mm.queue_monitoring(CASE pass WHEN 1 THEN interval '1 hour' ELSE interval '1 day' END, now_at);
				ELSE
					PERFORM * FROM mm.queue_stats_by_minute('bench-metrics',
						now_at - CASE pass WHEN 1 THEN interval '1 hour' ELSE interval '1 day' END, now_at);
				END CASE;
			END LOOP;
			IF pass = 1 THEN
				hour_ms := extract(epoch FROM clock_timestamp() - t0) * 1000 / rounds;
			ELSE
				day_ms := extract(epoch FROM clock_timestamp() - t0) * 1000 / rounds;
			END IF;
		END LOOP;
		RAISE NOTICE '% over 1 hour: % ms; over the whole day: % ms (ratio %)', rpad(metric, 22),
			round(hour_ms::numeric, 1), round(day_ms::numeric, 1), round((hour_ms / day_ms)::numeric, 3);
	END LOOP;

	t0 := clock_timestamp();
	FOR i IN 1 .. 20 LOOP
		PERFORM * FROM mm.queue_statistics('bench-metrics', now_at);
	END LOOP;
	RAISE NOTICE 'queue_statistics (what players see): % ms',
		round((extract(epoch FROM clock_timestamp() - t0) * 1000 / 20)::numeric, 2);
END
$$;

-- one retention batch: finish every match, purge 10,000 (with their 20,000
-- tickets) and 10,000 timed-out or cancelled tickets
UPDATE mm.matches SET status = 'completed' WHERE queue = 'bench-metrics';
DO $$
DECLARE
	t0 timestamptz := clock_timestamp();
	r record;
BEGIN
	SELECT * INTO r FROM mm.purge_finished('1 hour', 10000, false, '2030-01-02 00:00:00+00');
	RAISE NOTICE 'purge_finished batch of 10000: % matches and % tickets in % ms', r.matches_purged,
		r.tickets_purged, round((extract(epoch FROM clock_timestamp() - t0) * 1000)::numeric, 1);
END
$$;

SELECT mm.drop_queue('bench-metrics');
