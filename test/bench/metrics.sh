#!/usr/bin/env bash
# The analysts' functions over an hour of a 5v5 role queue (issue 28): their
# cost must follow the matches in the window, not the tables.
#
# One queue, role5v5: 5v5 with roles {"tank": 1, "healer": 1, "dps": 3} per
# team, acceptance (20 s) and penalties.  Its history, written straight into
# the tables as the tick and the lifecycle leave them (ticked long ago):
#   old     MM_BENCH_METRICS_OLD matches (100,000: about 0.9M tickets,
#           1M match players, 75,000 results) in the 30 days before;
#   hour 10 10 times MM_BENCH_METRICS_MATCHES (3,000) in the hour up to
#           now1 - 1 hour;
#   hour 1  MM_BENCH_METRICS_MATCHES matches (300) in the last hour, up to
#           now1 (nothing after it, as for a live now).
# Every match: 10 solo tickets (skill, eu/us latencies, role lists), 10
# match players with roles (some autofilled, some low-priority, some who
# left); one proposal in 12 is rejected and one in 12 expires (the next
# match's tickets, an offence in the penalty history); 9 in 10 of the
# others get a result 25 minutes later; beside one match in 7 a ticket is
# cancelled, beside one in 11 one times out; 40 tickets search at now1.
#
# Each function is called over the hour up to now1 (300 matches) and the
# hour before it (3,000), MM_BENCH_METRICS_RUNS times (15) each after one
# warm-up each, the two sizes interleaved (1x, 10x, 10x, 1x, ...) so that a
# shared machine's load falls on both alike; medians reported with the
# 10x/1x ratio and whether the targets are met, and beside them the
# backend's CPU time per call (from /proc/self/stat), which the load of
# the machine moves much less; twice: first with the statistics stale
# (the tables were ANALYZEd empty, in a database of their own, autovacuum
# off for them, as right after a bulk load), then after ANALYZE.  Target: the 1x time <= 100 ms and the
# ratio <= 10.  The figures also checked: both hours give the same results
# stale and analyzed.
#
# Run by: bash test/bench/run.sh metrics   (PGHOST/PGPORT/PGDATABASE set by run.sh)
# Settings: MM_BENCH_METRICS_OLD (100000), MM_BENCH_METRICS_MATCHES (300),
#   MM_BENCH_METRICS_RUNS (15), MM_BENCH_METRICS_KEEP (1: keep the database
#   mm_bench_5v5, with the timings in schema bench, for a look afterwards).
set -euo pipefail

old=${MM_BENCH_METRICS_OLD:-100000}
n1=${MM_BENCH_METRICS_MATCHES:-300}
runs=${MM_BENCH_METRICS_RUNS:-15}
now1="2030-03-01 12:00:00+00"

q() { psql -X -v ON_ERROR_STOP=1 -q -At "$@"; }
say() { printf '==> metrics 5v5: %s\n' "$*" >&2; }

load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
# a database of its own: its tables are empty when the statistics are taken
# (run.sh's database held metrics.sql's rows, whose dead pages would make the
# planner read the tables as empty instead)
db=mm_bench_5v5
q -d postgres -c "DROP DATABASE IF EXISTS $db"
q -d postgres -c "CREATE DATABASE $db"
export PGDATABASE=$db
q -c "CREATE EXTENSION matchmaking CASCADE"
say "set-up: $old old matches, $n1 in hour 1, $((n1 * 10)) in hour 10"
start=$(date +%s)
q -v old="$old" -v n1="$n1" -v now1="$now1" <<'SQL'
SET client_min_messages = warning;
SELECT mm.create_queue('role5v5', '{
  "match_size": {"min": 10, "max": 10},
  "teams": [{"name": "red", "min": 5, "max": 5, "roles": {"tank": 1, "healer": 1, "dps": 3}},
            {"name": "blue", "min": 5, "max": 5, "roles": {"tank": 1, "healer": 1, "dps": 3}}],
  "acceptance_timeout_seconds": 20,
  "penalties": {"cooldown_seconds": {"dodge": 60, "acceptance_timeout": 30, "leave": 300},
                "low_priority": {"offences": 3, "games": 3, "max_wait_seconds": 300}},
  "statistics": {"show_player_count": true, "show_time_to_match": true},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
             "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
            {"name": "ping", "type": "latency", "max_ms": 150}]}') IS NULL AS created \gset dummy_

-- statistics as right after a bulk load: taken while the tables were empty,
-- and autovacuum kept away until the ANALYZE below
ANALYZE mm.tickets, mm.tickets_active, mm.tickets_ended, mm.matches, mm.match_players, mm.match_results,
		mm.penalty_history, mm.player_penalties, mm.active_players;
ALTER TABLE mm.tickets_active SET (autovacuum_enabled = off);
ALTER TABLE mm.tickets_ended SET (autovacuum_enabled = off);
ALTER TABLE mm.matches SET (autovacuum_enabled = off);
ALTER TABLE mm.match_players SET (autovacuum_enabled = off);
ALTER TABLE mm.match_results SET (autovacuum_enabled = off);
ALTER TABLE mm.penalty_history SET (autovacuum_enabled = off);
ALTER TABLE mm.player_penalties SET (autovacuum_enabled = off);

-- the matches: g numbers them in time order; hour 10, then hour 1 (up to
-- now1) follow the old history
CREATE TEMP TABLE gen AS
SELECT g::bigint AS g, formed,
	   CASE WHEN g % 12 = 5 THEN 'rejected' WHEN g % 12 = 9 THEN 'acceptance_timeout' END AS cancel
  FROM (SELECT g, :'now1'::timestamptz - interval '2 hours' - interval '30 days'
				  + (g - 1) * (interval '30 days' / :old) AS formed
		  FROM generate_series(1, :old) g
		UNION ALL
		SELECT :old + g, :'now1'::timestamptz - interval '2 hours' + (g - 0.5) * (interval '1 hour' / (10 * :n1))
		  FROM generate_series(1, 10 * :n1) g
		UNION ALL
		SELECT :old + 10 * :n1 + g, :'now1'::timestamptz - interval '1 hour' + (g - 0.5) * (interval '1 hour' / :n1)
		  FROM generate_series(1, :n1) g) s;

INSERT INTO mm.matches (id, queue, status, created_at, updated_at, region, quality, acceptance_deadline,
						cancel_reason, ready_at)
SELECT g, 'role5v5',
	   CASE WHEN cancel IS NOT NULL THEN 'cancelled' WHEN g % 10 <> 0 THEN 'completed' ELSE 'assigned' END,
	   formed,
	   CASE WHEN cancel = 'rejected' THEN formed + interval '8 s'
			WHEN cancel IS NOT NULL THEN formed + interval '20 s'
			WHEN g % 10 <> 0 THEN formed + interval '25 min' ELSE formed + interval '7 s' END,
	   CASE WHEN g % 3 = 0 THEN 'us' ELSE 'eu' END, 0.5 + (g % 50) / 100.0, formed + interval '20 s',
	   cancel, CASE WHEN cancel IS NULL THEN formed + interval '6 s' END
  FROM gen;

-- the players: a proposal that was cancelled holds the next match's tickets
INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team, accepted, left_at, role,
							  autofilled, low_priority)
SELECT g, 'role5v5', 'p' || (((tg * 16 + j) * 7919) % 200000), tg * 16 + j,
	   CASE WHEN j < 5 THEN 'red' ELSE 'blue' END,
	   CASE WHEN cancel = 'rejected' AND j = 4 THEN false WHEN cancel IS NULL THEN true END,
	   CASE WHEN cancel IS NULL AND g % 40 = 0 AND j = 3 THEN formed + interval '2 min' END,
	   CASE j % 5 WHEN 0 THEN 'tank' WHEN 1 THEN 'healer' ELSE 'dps' END,
	   j % 5 = 4 AND g % 3 = 0, g % 30 = 0 AND j = 2
  FROM (SELECT g, formed, cancel, CASE WHEN cancel IS NULL THEN g ELSE g + 1 END AS tg FROM gen) s,
	   generate_series(0, 9) j;

-- the tickets, ended (matched, cancelled, timed out), as the tick moved them
INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, matched_at, match_id, team)
SELECT g * 16 + j, 'role5v5',
	   jsonb_build_array(jsonb_build_object(
		   'id', 'p' || (((g * 16 + j) * 7919) % 200000),
		   'attributes', jsonb_build_object('skill', 1000 + ((g * 16 + j) * 104729) % 800),
		   'latencies', jsonb_build_object('eu', 20 + ((g * 16 + j) * 31) % 60, 'us', 60 + ((g * 16 + j) * 17) % 90),
		   'roles', CASE j % 5 WHEN 0 THEN '["tank", "dps"]' WHEN 1 THEN '["healer"]' ELSE '["dps", "fill"]' END::jsonb)),
	   CASE WHEN j < 10 THEN 'matched' WHEN j = 10 THEN 'cancelled' ELSE 'timed_out' END,
	   formed - (5 + ((g * 16 + j) * 31) % 90) * interval '1 s',
	   CASE WHEN j < 10 THEN formed + interval '6 s' ELSE formed END,
	   CASE WHEN j < 10 THEN formed + interval '6 s' END,
	   CASE WHEN j < 10 THEN g END,
	   CASE WHEN j < 5 THEN 'red' WHEN j < 10 THEN 'blue' END
  FROM gen, generate_series(0, 11) j
 WHERE gen.cancel IS NULL AND (j < 10 OR (j = 10 AND g % 7 = 0) OR (j = 11 AND g % 11 = 0));

INSERT INTO mm.match_results (match_id, queue, winner_team, predicted_favourite, favourite_win_probability,
							  duration, reported_at)
SELECT g, 'role5v5', CASE WHEN g % 3 = 0 THEN 'blue' ELSE 'red' END, 'red', 0.55, interval '24 min',
	   formed + interval '25 min'
  FROM gen WHERE cancel IS NULL AND g % 10 <> 0;

INSERT INTO mm.penalty_history (player_id, queue, match_id, reason, offences, cooldown_until,
								low_priority_games, created_at)
SELECT 'p' || ((((g + 1) * 16 + 4) * 7919) % 200000), 'role5v5', g,
	   CASE cancel WHEN 'rejected' THEN 'dodge' ELSE 'acceptance_timeout' END, 1 + g % 4,
	   formed + interval '80 s', CASE WHEN g % 4 = 3 THEN 3 ELSE 0 END, formed + interval '20 s'
  FROM gen WHERE cancel IS NOT NULL;
INSERT INTO mm.player_penalties (player_id, queue, offences, cooldown_until, low_priority_games, updated_at)
SELECT DISTINCT ON (h.player_id) h.player_id, 'role5v5', h.offences, h.cooldown_until, h.low_priority_games,
	   h.created_at
  FROM mm.penalty_history h ORDER BY h.player_id, h.created_at DESC;

-- 40 tickets searching at now1
SELECT setval('mm.matches_id_seq', (SELECT max(id) FROM mm.matches));
SELECT setval('mm.tickets_id_seq', (SELECT max(id) FROM mm.tickets));
INSERT INTO mm.tickets (queue, players, created_at)
SELECT 'role5v5', jsonb_build_array(jsonb_build_object('id', 'searching-' || i,
		   'attributes', jsonb_build_object('skill', 1000 + i), 'latencies', '{"eu": 30}'::jsonb)),
	   :'now1'::timestamptz - i * interval '2 s'
  FROM generate_series(1, 40) i;
CHECKPOINT;
SQL
say "set-up done in $(( $(date +%s) - start )) s: $(q -c "SELECT format('%s tickets, %s matches, %s match players', (SELECT count(*) FROM mm.tickets), (SELECT count(*) FROM mm.matches), (SELECT count(*) FROM mm.match_players))")"

# the timing: every call over both hours, runs times each after a warm-up,
# interleaved, medians;
# the results kept (as text) to compare the stale and analyzed passes
q -v runs="$runs" -v now1="$now1" <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA bench;
CREATE TABLE bench.calls (n integer, name text, query text);
INSERT INTO bench.calls VALUES
  (1, 'mm.queue_stats', 'SELECT * FROM mm.queue_stats(''1 hour'', $1)'),
  (2, 'mm.ticket_metrics', 'SELECT * FROM mm.ticket_metrics(''role5v5'', ''1 hour'', $1)'),
  (3, 'mm.match_stats', 'SELECT * FROM mm.match_stats(''1 hour'', $1)'),
  (4, 'mm.match_metrics', 'SELECT * FROM mm.match_metrics(''role5v5'', ''1 hour'', $1)'),
  (5, 'mm.match_details', 'SELECT count(*), sum(skill_spread), sum(latency_avg_ms) FROM mm.match_details(''role5v5'', ''1 hour'', $1)'),
  (6, 'mm.health_report', 'SELECT * FROM mm.health_report(''role5v5'', ''1 hour'', $1)'),
  (7, 'mm.queue_stats_by_minute', 'SELECT * FROM mm.queue_stats_by_minute(''role5v5'', $1 - interval ''1 hour'', $1)'),
  (8, 'mm.queue_statistics', 'SELECT * FROM mm.queue_statistics(''role5v5'', $1)'),
  (9, 'mm.role_stats', 'SELECT * FROM mm.role_stats(''1 hour'', $1)'),
  (10, 'mm.penalty_stats', 'SELECT * FROM mm.penalty_stats(''1 hour'', $1)'),
  (11, 'mm.low_priority_waits', 'SELECT * FROM mm.low_priority_waits(''1 hour'', $1)'),
  (12, 'mm.rule_stats (view)', 'SELECT * FROM mm.rule_stats WHERE $1 IS NOT NULL');
CREATE TABLE bench.times (pass text, n integer, hour integer, ms float8, cpu_ms float8, calls integer,
						  result text);
-- The backend's CPU time (user + system, in clock ticks of 10 ms) from
-- /proc/self/stat: what the call did, whatever the machine's load; NULL
-- where there is no /proc.
CREATE FUNCTION bench.cpu_ticks() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	f text[];
BEGIN
	-- the fields after the command name, which is in parentheses
	f := regexp_split_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ');
	RETURN f[12]::bigint + f[13]::bigint;
EXCEPTION WHEN OTHERS THEN
	RETURN NULL;
END
$$;
-- Both sizes interleaved (1x, 10x, 10x, 1x, ...), so that the load of a
-- shared machine falls on both alike; the median of each, and the ratio of
-- the medians; beside it the CPU time per call (the mean: a clock tick is
-- coarser than a call).
CREATE PROCEDURE bench.measure(pass text, runs integer, now1 timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	c record;
	hour integer;
	at timestamptz;
	t0 timestamptz;
	c0 bigint;
	took1 float8[];
	took10 float8[];
	cpu1 bigint;
	cpu10 bigint;
	result1 text;
	result10 text;
BEGIN
	FOR c IN SELECT * FROM bench.calls ORDER BY n LOOP
		-- the warm-up call of each size keeps the result
		EXECUTE format('SELECT string_agg(r::text, %L) FROM (%s) r', ' | ', c.query) INTO result1 USING now1;
		EXECUTE format('SELECT string_agg(r::text, %L) FROM (%s) r', ' | ', c.query)
			INTO result10 USING now1 - interval '1 hour';
		took1 := '{}';
		took10 := '{}';
		cpu1 := 0;
		cpu10 := 0;
		FOR i IN 1 .. 2 * runs LOOP
			-- 1, 10, 10, 1, 1, 10, ...: each size as often first as second
			hour := CASE WHEN i % 4 IN (0, 1) THEN 1 ELSE 10 END;
			at := CASE hour WHEN 1 THEN now1 ELSE now1 - interval '1 hour' END;
			c0 := bench.cpu_ticks();
			t0 := clock_timestamp();
			EXECUTE format('SELECT count(*) FROM (%s) r', c.query) USING at;
			IF hour = 1 THEN
				took1 := took1 || extract(epoch FROM clock_timestamp() - t0) * 1000;
				cpu1 := cpu1 + (bench.cpu_ticks() - c0);
			ELSE
				took10 := took10 || extract(epoch FROM clock_timestamp() - t0) * 1000;
				cpu10 := cpu10 + (bench.cpu_ticks() - c0);
			END IF;
		END LOOP;
		INSERT INTO bench.times
		SELECT pass, c.n, 1, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), cpu1 * 10.0 / runs, count(*), result1
		  FROM unnest(took1) x;
		INSERT INTO bench.times
		SELECT pass, c.n, 10, percentile_cont(0.5) WITHIN GROUP (ORDER BY x), cpu10 * 10.0 / runs, count(*),
			   result10
		  FROM unnest(took10) x;
	END LOOP;
END
$$;
SQL
say "pass 1: statistics stale (taken on the empty tables)"
echo "CALL bench.measure('stale', :runs, :'now1')" | q -v runs="$runs" -v now1="$now1"
say "pass 2: after ANALYZE"
q -c "ANALYZE mm.tickets, mm.tickets_active, mm.tickets_ended, mm.matches, mm.match_players, mm.match_results, mm.penalty_history, mm.player_penalties, mm.active_players"
echo "CALL bench.measure('analyzed', :runs, :'now1')" | q -v runs="$runs" -v now1="$now1"
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')

echo
echo "Metrics over an hour of a 5v5 role queue with $n1 matches (1x) and $((n1 * 10)) (10x), beside $old"
echo "old matches; median of $runs calls of each size, the sizes interleaved (ms); target: 1x <= 100 ms and"
echo "ratio <= 10 in both passes (the medians'); CPU: the backend's CPU time per call (ms, mean of $runs),"
echo "which the load moves much less; load average $load_start at the start, $load_end at the end."
echo
echo "| function | stale 1x | stale 10x | ratio | analyzed 1x | analyzed 10x | ratio | CPU 1x, 10x, ratio (stale; analyzed) | targets |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
q -F ' | ' <<'SQL'
SELECT '| ' || c.name, round(s1.ms::numeric, 1), round(s10.ms::numeric, 1), round((s10.ms / s1.ms)::numeric, 1),
	   round(a1.ms::numeric, 1), round(a10.ms::numeric, 1), round((a10.ms / a1.ms)::numeric, 1),
	   coalesce(format('%s, %s, %s; %s, %s, %s', round(s1.cpu_ms::numeric), round(s10.cpu_ms::numeric),
					   round((s10.cpu_ms / nullif(s1.cpu_ms, 0))::numeric, 1), round(a1.cpu_ms::numeric),
					   round(a10.cpu_ms::numeric), round((a10.cpu_ms / nullif(a1.cpu_ms, 0))::numeric, 1)), '-'),
	   CASE WHEN greatest(s1.ms, a1.ms) <= 100 AND s10.ms <= 10 * s1.ms AND a10.ms <= 10 * a1.ms
			THEN 'met' ELSE 'MISSED' END || ' |'
  FROM bench.calls c
  JOIN bench.times s1 ON s1.n = c.n AND s1.pass = 'stale' AND s1.hour = 1
  JOIN bench.times s10 ON s10.n = c.n AND s10.pass = 'stale' AND s10.hour = 10
  JOIN bench.times a1 ON a1.n = c.n AND a1.pass = 'analyzed' AND a1.hour = 1
  JOIN bench.times a10 ON a10.n = c.n AND a10.pass = 'analyzed' AND a10.hour = 10
 ORDER BY c.n;
SQL
echo
fail=0
bad=$(q -c "SELECT string_agg(c.name || ' (hour ' || s.hour || ')', ', ') FROM bench.times s JOIN bench.times a ON a.n = s.n AND a.hour = s.hour AND a.pass = 'analyzed' JOIN bench.calls c ON c.n = s.n WHERE s.pass = 'stale' AND s.result IS DISTINCT FROM a.result")
if [ -n "$bad" ]; then
	echo "FAIL: results differ between the stale and the analyzed pass: $bad"
	fail=1
fi
slow=$(q -c "SELECT string_agg(c.name || ' ' || t.pass || ' ' || round(t.ms::numeric, 1) || ' ms', ', ') FROM bench.times t JOIN bench.calls c ON c.n = t.n WHERE t.hour = 1 AND t.ms > 100")
[ -n "$slow" ] && echo "over 100 ms at 1x: $slow"
steep=$(q -c "SELECT string_agg(c.name || ' ' || a.pass || ' x' || round((b.ms / a.ms)::numeric, 1), ', ') FROM bench.times a JOIN bench.times b ON b.n = a.n AND b.pass = a.pass AND b.hour = 10 JOIN bench.calls c ON c.n = a.n WHERE a.hour = 1 AND b.ms > 10 * a.ms AND b.ms > 5")
[ -n "$steep" ] && echo "10x over 10 times 1x: $steep"
if [ "${MM_BENCH_METRICS_KEEP:-0}" != 1 ]; then
	q -d postgres -c "DROP DATABASE $db"
fi
exit $fail
