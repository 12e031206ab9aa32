#!/usr/bin/env bash
# What-if replay benchmark (issue 21): a day of a busy queue ticked live in
# simulated time, then the same day replayed by mm.replay, both measured in
# this run.  Printed at the end as a Markdown table, then every run.
#
#   The day: MM_BENCH_REPLAY_TICKETS (200,000) one-player tickets over
#   MM_BENCH_REPLAY_SECONDS (86,400) of simulated time, evenly spaced (2.3 a
#   second), with the metrics benchmark's players (skill 600 + (i * 7919) %
#   800, eu latency 20 + (i * 104729) % 60) in a 1v1 queue with core.sh's
#   rules (difference on skill, max 50, +50 every 10 s up to 400; latency
#   150 ms) and a 60 s ticket timeout.  One ticket in 10 (picked by a hash of
#   i) asks to cancel 1 to 8 s after it arrived; most are matched by then.
#   Live: the queue ticks every MM_BENCH_REPLAY_TICK seconds (1) of
#   simulated time, SELECT mm.tick(queue, t) in its own transaction sent by
#   the client; before each tick, in the transaction before it, the tickets
#   that arrived since the last one are inserted and the cancels due are made
#   (mm.cancel_ticket).  The live figure is the sum of the mm.tick calls'
#   durations (clock_timestamp() around each call, commit not included), with
#   the phases from mm.last_tick_stats() and the sums per hour beside it.
#   mm.cancel_ticket dates the cancel by the wall clock: the cancelled
#   tickets' updated_at is then set to the simulated time of their cancel, as
#   test/regress/sql/replay.sql does.
#   Replay: mm.replay(queue, NULL, day start, day end, the same tick) (the
#   replay's figures beside the recorded ones), mm.replay_figures alone (the
#   replay without the recorded side) and mm.replay_matches, each timed
#   MM_BENCH_REPLAY_RUNS times (3) after one unrecorded warm-up, medians.
#   The target: mm.replay ≤ 0.5 × the live ticks' total.
#   Checks (the script fails on them): the replay with the queue's own config
#   reproduces the recorded figures (tickets, matched, matched share, time to
#   match p50 / p95 / max, timed out, cancelled, matches) and forms exactly
#   the recorded matches (the same tickets together); the replay wrote
#   nothing.
#
# Run by: bash test/bench/run.sh replay   (PGHOST/PGPORT/PGDATABASE set by run.sh)
# Settings: MM_BENCH_REPLAY_TICKETS (200000), MM_BENCH_REPLAY_SECONDS (86400),
#   MM_BENCH_REPLAY_TICK (1, seconds), MM_BENCH_REPLAY_RUNS (3).
set -euo pipefail

n_tickets=${MM_BENCH_REPLAY_TICKETS:-200000}
day_seconds=${MM_BENCH_REPLAY_SECONDS:-86400}
tick=${MM_BENCH_REPLAY_TICK:-1}
runs=${MM_BENCH_REPLAY_RUNS:-3}
day_start="2030-01-01 00:00:00+00"

q() { psql -X -v ON_ERROR_STOP=1 -q -At "$@"; }
say() { printf '==> replay: %s\n' "$*" >&2; }

config='{
  "teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "ticket_timeout_seconds": 60,
  "rules": [
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 50,
     "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
    {"name": "ping", "type": "latency", "max_ms": 150}]}'

load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')

# ---------------------------------------------------------------------------
# Set-up: the queue, the day's arrivals and cancels, the live procedure.
# ---------------------------------------------------------------------------
say "set-up: $n_tickets tickets over $day_seconds s, a tick every $tick s"
q -v n="$n_tickets" -v secs="$day_seconds" -v day_start="$day_start" -v config="$config" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench_replay_arrivals, bench_replay_cancels, bench_replay_live, bench_replay_runs,
	bench_replay_figures, bench_replay_before, bench_replay_ticks;
DROP FUNCTION IF EXISTS bench_replay_arrive(text, timestamptz, timestamptz), bench_replay_tick(text, int, timestamptz);
SELECT count(mm.drop_queue(name, true)) FROM mm.queues WHERE name = 'bench-replay' \gset dummy_
SELECT mm.create_queue('bench-replay', :'config') \gset dummy_

-- ticket i arrives at (i - 0.5) * secs / n: inside the day, never on a tick
CREATE TABLE bench_replay_arrivals AS
SELECT i, 'br-' || i AS player, timestamptz :'day_start' + (i - 0.5) * (:secs::float8 / :n) * interval '1 second' AS created_at,
	   jsonb_build_array(jsonb_build_object('id', 'br-' || i,
			'attributes', jsonb_build_object('skill', 600 + (i::bigint * 7919) % 800),
			'latencies', jsonb_build_object('eu', 20 + (i::bigint * 104729) % 60))) AS players,
	   CASE WHEN (i::bigint * 2654435761) % 100 < 10
			THEN timestamptz :'day_start' + (i - 0.5) * (:secs::float8 / :n) * interval '1 second'
				 + (1 + (i::bigint * 31) % 8) * interval '1 second' END AS cancel_at
  FROM generate_series(1, :n) i;
CREATE INDEX ON bench_replay_arrivals (created_at);
CREATE INDEX ON bench_replay_arrivals (cancel_at) WHERE cancel_at IS NOT NULL;
-- the cancels made, with their simulated time
CREATE TABLE bench_replay_cancels (ticket_id bigint PRIMARY KEY, cancel_at timestamptz);
-- every live tick: its duration (clock_timestamp() around the call) and phases
CREATE UNLOGGED TABLE bench_replay_ticks (k int, tick_ms float8, load_ms float8, compute_ms float8,
	write_ms float8, matches int);
CREATE TABLE bench_replay_runs (run int, kind text, value float8);
CREATE TABLE bench_replay_figures (kind text, figures jsonb);

-- Before tick k: the tickets that arrived since tick k - 1 and the cancels
-- due (of the tickets still searching), as the players' clients would.
CREATE FUNCTION bench_replay_arrive(q text, prev timestamptz, now_at timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	INSERT INTO mm.tickets (queue, players, created_at)
	SELECT q, a.players, a.created_at FROM bench_replay_arrivals a
	 WHERE a.created_at > prev AND a.created_at <= now_at ORDER BY a.created_at;
	FOR r IN SELECT t.id, a.cancel_at
			   FROM bench_replay_arrivals a
			   JOIN mm.active_players ap ON ap.player_id = a.player
			   JOIN mm.tickets_active t ON t.queue = q AND t.id = ap.ticket_id AND t.status = 'searching'
			  WHERE a.cancel_at > prev AND a.cancel_at <= now_at LOOP
		IF mm.cancel_ticket(q, r.id) THEN
			INSERT INTO bench_replay_cancels VALUES (r.id, r.cancel_at);
		END IF;
	END LOOP;
END
$$;
-- Tick k, timed (the call only: its commit follows the function).
CREATE FUNCTION bench_replay_tick(q text, k int, now_at timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	t1 timestamptz;
	n int;
	s record;
BEGIN
	t0 := clock_timestamp();
	n := mm.tick(q, now_at);
	t1 := clock_timestamp();
	SELECT * INTO s FROM mm.last_tick_stats() x WHERE x.queue = q;
	INSERT INTO bench_replay_ticks VALUES (k, extract(epoch FROM t1 - t0) * 1000, s.load_ms, s.compute_ms,
		s.write_ms, n);
END
$$;
SQL

# ---------------------------------------------------------------------------
# The live day.
# ---------------------------------------------------------------------------
say "the live day (ticking every $tick s of simulated time)"
q -v day_start="$day_start" -v secs="$day_seconds" -v step="$tick" <<'SQL'
SELECT extract(epoch FROM clock_timestamp()) AS wall0 \gset
-- each statement in its own transaction, from the client, as a ticker and
-- the players' clients would send them (a procedure committing in a loop
-- would not report its dead rows to autovacuum until it returned)
SELECT format('SELECT bench_replay_arrive(%L, %L, %L)', 'bench-replay',
			  timestamptz :'day_start' + (k - 1) * :step * interval '1 second',
			  timestamptz :'day_start' + k * :step * interval '1 second'),
	   format('SELECT bench_replay_tick(%L, %s, %L)', 'bench-replay', k,
			  timestamptz :'day_start' + k * :step * interval '1 second')
  FROM generate_series(1, floor(:secs / :step::float8)::int) k ORDER BY k \gexec
SELECT extract(epoch FROM clock_timestamp()) AS wall1 \gset
CREATE TABLE bench_replay_live AS
SELECT count(*) AS ticks, sum(tick_ms) AS tick_ms, sum(load_ms) AS load_ms, sum(compute_ms) AS compute_ms,
	   sum(write_ms) AS write_ms, sum(matches) AS tick_matches, :wall1 - :wall0 AS wall_s,
	   percentile_cont(0.5) WITHIN GROUP (ORDER BY tick_ms) AS p50_ms,
	   percentile_cont(0.99) WITHIN GROUP (ORDER BY tick_ms) AS p99_ms
  FROM bench_replay_ticks;
-- the cancels at their simulated time (mm.cancel_ticket used the wall clock)
UPDATE mm.tickets_ended t SET updated_at = c.cancel_at FROM bench_replay_cancels c
 WHERE t.queue = 'bench-replay' AND t.id = c.ticket_id AND t.status = 'cancelled';
VACUUM ANALYZE mm.tickets_active, mm.tickets_ended, mm.matches, mm.match_players, mm.active_players;
CREATE TABLE bench_replay_before AS
SELECT (SELECT count(*) FROM mm.tickets WHERE queue = 'bench-replay') AS tickets,
	   (SELECT count(*) FROM mm.matches WHERE queue = 'bench-replay') AS matches,
	   (SELECT count(*) FROM mm.match_players WHERE queue = 'bench-replay') AS players,
	   (SELECT max(updated_at) FROM mm.tickets WHERE queue = 'bench-replay') AS last_update;
SELECT format('live day: %s ticks, %s matches in %s s (ticks %s ms)',
			  ticks, tick_matches, round(wall_s::numeric, 1), round(tick_ms::numeric))
  FROM bench_replay_live;
SQL

# ---------------------------------------------------------------------------
# The replays, each in its own backend; the order rotates.
# ---------------------------------------------------------------------------
replay_sql() {
	# $1: run, $2: kind
	local call
	case $2 in
		replay) call="SELECT mm.replay('bench-replay', NULL, :'day_start', :'day_end', :'every') AS out" ;;
		figures) call="SELECT mm.replay_figures('bench-replay', NULL, :'day_start', :'day_end', :'every') AS out" ;;
		matches) call="SELECT count(*) AS out FROM mm.replay_matches('bench-replay', NULL, :'day_start', :'day_end', :'every')" ;;
	esac
	cat <<SQL
\\set run $1
SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset
$call \\gset
SELECT extract(epoch FROM clock_timestamp()) AS t1 \\gset
INSERT INTO bench_replay_runs VALUES (:run, '$2', (:t1 - :t0) * 1000);
SQL
	if [ "$2" = replay ] && [ "$1" = 0 ]; then
		echo "INSERT INTO bench_replay_figures VALUES ('replay', :'out');"
	fi
}

day_end=$(echo "SELECT timestamptz :'day_start' + :secs * interval '1 second';" |
	q -v day_start="$day_start" -v secs="$day_seconds")
kinds=(replay figures matches)
for run in $(seq 0 "$runs"); do
	say "replay run $run of $runs"
	for k in 0 1 2; do
		kind=${kinds[$(((k + run) % 3))]}
		replay_sql "$run" "$kind" |
			q -v day_start="$day_start" -v day_end="$day_end" -v every="$tick seconds"
	done
done

# ---------------------------------------------------------------------------
# The report and the checks.
# ---------------------------------------------------------------------------
q -v runs="$runs" -v n="$n_tickets" -v secs="$day_seconds" -v tick="$tick" -v day_start="$day_start" \
  -v day_end="$day_end" -v cpus="$(nproc 2>/dev/null || echo '?')" -v load_start="$load_start" \
  -v load_end="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')" <<'SQL'
CREATE TEMP VIEW med AS
SELECT kind, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS v
  FROM bench_replay_runs WHERE run > 0 GROUP BY kind;
CREATE FUNCTION pg_temp.m(k text) RETURNS float8 LANGUAGE sql AS $$ SELECT v FROM med WHERE kind = k $$;
CREATE FUNCTION pg_temp.fmt(x float8, digits int DEFAULT 0) RETURNS text LANGUAGE sql AS
	$$ SELECT coalesce(to_char(round(x::numeric, digits),
	                           'FM999,999,999,990' || CASE WHEN digits > 0 THEN '.' || repeat('0', digits) ELSE '' END),
	                   'n/a') $$;
SELECT * FROM bench_replay_live \gset live_
SELECT figures -> 'replay' AS rp, figures -> 'recorded' AS rec FROM bench_replay_figures WHERE kind = 'replay' \gset

\echo
\echo '### What-if replay: a day of a busy queue,' :n 'tickets over' :secs 's, a tick every' :tick 's (medians of' :runs 'runs after a warm-up)'
\echo
\echo '| figure | value | baseline: the live ticks | ratio | target |'
\echo '| --- | ---: | ---: | ---: | --- |'
SELECT format('| live ticks: %s calls of `mm.tick`, total (s) | %s | | | |', :live_ticks, pg_temp.fmt(:live_tick_ms / 1000, 2));
SELECT format('| live tick p50 / p99 (ms); the live day''s wall clock, arrivals and cancels included (s) | %s / %s; %s | | | |',
			  pg_temp.fmt(:live_p50_ms, 3), pg_temp.fmt(:live_p99_ms, 3), pg_temp.fmt(:live_wall_s, 1));
SELECT format('| live tick phases: load / search / write (s) | %s / %s / %s | | | |',
			  pg_temp.fmt(:live_load_ms / 1000, 2), pg_temp.fmt(:live_compute_ms / 1000, 2), pg_temp.fmt(:live_write_ms / 1000, 2));
SELECT format('| `mm.replay` of the day (s) | %s | %s | %s | ≤ 0.5: %s |', pg_temp.fmt(pg_temp.m('replay') / 1000, 2),
			  pg_temp.fmt(:live_tick_ms / 1000, 2), pg_temp.fmt(pg_temp.m('replay') / :live_tick_ms, 3),
			  CASE WHEN pg_temp.m('replay') <= 0.5 * :live_tick_ms THEN 'met' ELSE 'MISSED' END);
SELECT format('| the replay alone, `mm.replay_figures` (s) | %s | %s | %s | |', pg_temp.fmt(pg_temp.m('figures') / 1000, 2),
			  pg_temp.fmt(:live_tick_ms / 1000, 2), pg_temp.fmt(pg_temp.m('figures') / :live_tick_ms, 3));
SELECT format('| `mm.replay_matches`, count(*) (s) | %s | %s | %s | |', pg_temp.fmt(pg_temp.m('matches') / 1000, 2),
			  pg_temp.fmt(:live_tick_ms / 1000, 2), pg_temp.fmt(pg_temp.m('matches') / :live_tick_ms, 3));
SELECT format('| replay speed: tickets per second (`mm.replay` / `mm.replay_figures`) | %s / %s | | | |',
			  pg_temp.fmt(:n / (pg_temp.m('replay') / 1000)), pg_temp.fmt(:n / (pg_temp.m('figures') / 1000)));
SELECT format('| simulated seconds per second of `mm.replay` | %s | | | |', pg_temp.fmt(:secs / (pg_temp.m('replay') / 1000)));
\echo
\echo '#### The replay with the queue''s own config against what was recorded'
\echo
\echo '| figure | replay | recorded |'
\echo '| --- | ---: | ---: |'
SELECT format('| %s | %s | %s |', k, :'rp'::jsonb -> k, :'rec'::jsonb -> k)
  FROM unnest(ARRAY['tickets', 'matched', 'matched_share', 'time_to_match_p50', 'time_to_match_p95',
					'time_to_match_max', 'timed_out', 'cancelled', 'still_searching', 'matches', 'quality_mean',
					'quality_p10', 'skill_spread_mean', 'team_gap_mean']) WITH ORDINALITY u(k, o) ORDER BY o;
\echo
\echo '#### The live ticks by hour of simulated time'
\echo
\echo '| hour | ticks | matches | tick total (ms) | per tick (ms) | load / search / write (ms) |'
\echo '| ---: | ---: | ---: | ---: | ---: | --- |'
SELECT format('| %s | %s | %s | %s | %s | %s / %s / %s |', hour, count(*), sum(matches), pg_temp.fmt(sum(tick_ms)),
			  pg_temp.fmt(avg(tick_ms), 3), pg_temp.fmt(sum(load_ms)), pg_temp.fmt(sum(compute_ms)), pg_temp.fmt(sum(write_ms)))
  FROM (SELECT floor((k * :tick::float8 - 1e-6) / 3600)::int AS hour, * FROM bench_replay_ticks) t
 GROUP BY hour ORDER BY hour;
\echo 'Machine:' :cpus 'CPUs, load average (1, 5, 15 min)' :load_start 'at the start,' :load_end 'at the end.'
\echo
\echo '#### Every run (ms; run 0 = warm-up, not in the medians)'
\echo
\echo '| call | runs |'
\echo '| --- | --- |'
SELECT format('| %s | %s |', kind, string_agg(run || ': ' || round(value::numeric), ', ' ORDER BY run))
  FROM bench_replay_runs GROUP BY kind ORDER BY kind;

-- checks: the replay reproduces the recorded day (printed; the script fails on them)
\echo
CREATE TEMP TABLE replayed AS
SELECT tickets FROM mm.replay_matches('bench-replay', NULL, :'day_start', :'day_end', (:'tick' || ' seconds')::interval);
CREATE TEMP TABLE recorded AS
SELECT array_agg(t.id ORDER BY t.id) AS tickets FROM mm.tickets t
 WHERE t.queue = 'bench-replay' AND t.status = 'matched' GROUP BY t.match_id;
CREATE TEMP VIEW checks AS
SELECT format('%s: replay %s, recorded %s', k, :'rp'::jsonb -> k, :'rec'::jsonb -> k) AS msg
  FROM unnest(ARRAY['tickets', 'matched', 'matched_share', 'time_to_match_p50', 'time_to_match_p95',
					'time_to_match_max', 'timed_out', 'cancelled', 'still_searching', 'matches']) k
 WHERE (:'rp'::jsonb -> k)::numeric IS DISTINCT FROM (:'rec'::jsonb -> k)::numeric
UNION ALL
SELECT format('%s replayed matches are not recorded ones', count(*)) FROM (
	SELECT tickets FROM replayed EXCEPT SELECT tickets FROM recorded) d HAVING count(*) > 0
UNION ALL
SELECT format('%s recorded matches were not replayed', count(*)) FROM (
	SELECT tickets FROM recorded EXCEPT SELECT tickets FROM replayed) d HAVING count(*) > 0
UNION ALL
SELECT format('the live ticks formed %s matches, the queue holds %s', :live_tick_matches, count(*))
  FROM mm.matches WHERE queue = 'bench-replay' HAVING count(*) <> :live_tick_matches
UNION ALL
SELECT format('%s tickets in the day, %s expected', count(*), :n)
  FROM mm.tickets WHERE queue = 'bench-replay' HAVING count(*) <> :n
UNION ALL
SELECT 'the replays changed the live tables' FROM bench_replay_before b
 WHERE (SELECT count(*) FROM mm.tickets WHERE queue = 'bench-replay') <> b.tickets
	OR (SELECT count(*) FROM mm.matches WHERE queue = 'bench-replay') <> b.matches
	OR (SELECT count(*) FROM mm.match_players WHERE queue = 'bench-replay') <> b.players
	OR (SELECT max(updated_at) FROM mm.tickets WHERE queue = 'bench-replay') IS DISTINCT FROM b.last_update;
SELECT 'check: ' || msg FROM checks ORDER BY msg;
SELECT count(*) AS failed_checks, count(*) > 0 AS failed FROM checks \gset
\if :failed
\echo :failed_checks 'checks failed'
SELECT 1 / 0;
\endif
SQL
