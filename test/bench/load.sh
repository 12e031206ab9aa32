#!/usr/bin/env bash
# Sustained-load benchmark: for MM_BENCH_LOAD_SECONDS (default 60), at once,
#   - pgbench clients (-c 6 -j 2, -n) create solo tickets with mm.create_ticket
#     in queue "load" (1v1, or 5v5 with MM_BENCH_LOAD_MODE=5v5; a difference
#     rule on skill, 100 expanding by 100 every 5 s up to 500; skills uniform
#     in 0..2000).  Player ids are unique: "c<client_id>-<n>", n a per-client
#     counter.  One transaction in ten cancels the ticket it just created, one
#     in ten the client's previous ticket (mostly still searching; when a tick
#     holds or has matched it, cancel_ticket waits for the tick and returns
#     false).  Each statement is its own transaction (autocommit).
#   - the queue ticks once a second: SELECT mm.tick('load', clock_timestamp())
#     in one psql session, each tick its own transaction, paced by the server
#     (pg_sleep until start + k seconds; a late tick runs at once).  Latency =
#     clock_timestamp() before the tick to clock_timestamp() in the next
#     statement, so the commit (which sends the notifications) is included.
#   - a LISTEN client records every mm_events payload: test/sim/mm_listen
#     --raw, compiled into a temporary directory (the tree is not touched),
#     with a constructor that makes its stdout line-buffered so that nothing
#     is lost when it is stopped.  At the end a sentinel NOTIFY is sent after
#     every other transaction has finished; notifications reach a listener in
#     commit order, so once the sentinel is in the file every earlier event is.
#   - a sampler reads pg_notification_queue_usage() once a second.
# Then every payload is parsed as JSON in the server and checked: exactly one
# match_found (with "event" and a numeric "match_id") per row of mm.matches of
# the queue, no duplicates, no unknown ids; each match_found's "tickets" are
# the tickets mm.tickets_ended records for that match; the ticket_cancelled
# events name exactly the cancelled tickets; when mm.verify_event(text)
# exists, every payload of the extension carries a valid signature.
# Deadlocks are counted in pgbench's failures (--failures-detailed) and in the
# server log written during the run (log_line_prefix gets %e for the SQLSTATE
# meanwhile).
#
# Printed as a Markdown table "| figure | value |"; exits 1 when a check fails
# (deadlock, tick error, lost, duplicated or unknown event, aborted client).
#
# Run by: bash test/bench/run.sh load   (PGHOST/PGPORT/PGDATABASE set by run.sh)
# Settings: MM_BENCH_LOAD_SECONDS (60), MM_BENCH_LOAD_CLIENTS (6),
#   MM_BENCH_LOAD_THREADS (2), MM_BENCH_LOAD_MODE (1v1 | 5v5),
#   MM_BENCH_LOAD_KEEP=1 keeps the work directory (raw event, tick, sample files).
set -euo pipefail

seconds=${MM_BENCH_LOAD_SECONDS:-60}
clients=${MM_BENCH_LOAD_CLIENTS:-6}
threads=${MM_BENCH_LOAD_THREADS:-2}
mode=${MM_BENCH_LOAD_MODE:-1v1}
db=${PGDATABASE:-mm_bench}
queue=load
tree=$(cd "$(dirname "$0")/../.." && pwd)

dir=$(mktemp -d /tmp/mm_bench_load.XXXXXX)
chmod 755 "$dir"
bg_pids=()
cleanup() {
	local pid
	for pid in "${bg_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	if [ "${MM_BENCH_LOAD_KEEP:-0}" = 1 ]; then
		printf '==> load: files kept in %s\n' "$dir" >&2
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT

q() { psql -X -v ON_ERROR_STOP=1 -q -At "$@"; }
say() { printf '==> load: %s\n' "$*" >&2; }
now_epoch() { date +%s.%N; }

case $mode in
	1v1) config='{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
	              "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
	                         "expansion": {"every_seconds": 5, "delta": 100, "limit": 500}}]}' ;;
	5v5) config='{"match_size": {"min": 10, "max": 10},
	              "teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}],
	              "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
	                         "expansion": {"every_seconds": 5, "delta": 100, "limit": 500}}]}' ;;
	*) echo "MM_BENCH_LOAD_MODE must be 1v1 or 5v5" >&2; exit 2 ;;
esac

# ---------------------------------------------------------------------------
# Set-up: the queue, empty tables, result tables, SQLSTATE in the log.
# ---------------------------------------------------------------------------
say "set-up: queue $queue ($mode), $clients clients, $seconds s"
q -v queue="$queue" -v config="$config" <<'SQL'
SET client_min_messages = warning;
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests;
SELECT count(mm.drop_queue(name, true)) FROM mm.queues WHERE name = :'queue' \gset dummy_
SELECT mm.create_queue(:'queue', :'config') \gset dummy_
DROP TABLE IF EXISTS bench_load_ticks, bench_load_usage, bench_load_events, bench_load_summary;
CREATE TABLE bench_load_ticks (kind text, k int, t0 timestamptz, ms float8, matches int,
	tickets_loaded int, tickets_timed_out int, players_matched int, load_ms float8,
	compute_ms float8, write_ms float8, locked_out boolean);
CREATE TABLE bench_load_usage (kind text, k int, at timestamptz, usage float8, active_tickets bigint);
CREATE TABLE bench_load_events (n bigserial, line text);
CREATE TABLE bench_load_summary (ord numeric, figure text, value text, problem text);
ALTER SYSTEM SET log_line_prefix = '%m [%p] %e ';
SELECT pg_reload_conf() \gset dummy_
VACUUM ANALYZE mm.tickets, mm.active_players, mm.matches, mm.match_players;
SQL

# the server log (run.sh: $MM_WORKDIR/postgresql.log, next to the data directory)
datadir=$(q -c "SHOW data_directory")
logfile=${MM_WORKDIR:-$(dirname "$datadir")}/postgresql.log
log_start=0
if [ -r "$logfile" ]; then
	log_start=$(stat -c %s "$logfile")
else
	say "note: server log $logfile not readable; deadlocks counted from pgbench only"
fi

# ---------------------------------------------------------------------------
# The LISTEN client: mm_listen --raw, line-buffered, in the work directory.
# ---------------------------------------------------------------------------
pg_config=/usr/lib/postgresql/15/bin/pg_config
[ -x "$pg_config" ] || pg_config=$(command -v pg_config)
cat > "$dir/line_buffered.c" <<'EOF'
#include <stdio.h>
/* runs before mm_listen's main: one write per event line, none lost on SIGTERM */
static void __attribute__((constructor))
mm_bench_line_buffered(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}
EOF
say "compiling mm_listen"
cc -O2 -I"$("$pg_config" --includedir)" -o "$dir/mm_listen" "$tree/test/sim/mm_listen.c" "$dir/line_buffered.c" \
	-L"$("$pg_config" --libdir)" -lpq

"$dir/mm_listen" --raw --dsn "dbname=$db application_name=mm_bench_load_listen" --seconds $((seconds + 900)) \
	> "$dir/events.txt" 2> "$dir/listen.err" &
listen_pid=$!
bg_pids+=("$listen_pid")
# wait until it listens (its session is idle after LISTEN)
for i in $(seq 1 300); do
	n=$(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mm_bench_load_listen'
	            AND state = 'idle' AND query = 'LISTEN mm_events'")
	[ "$n" = 1 ] && break
	if ! kill -0 "$listen_pid" 2>/dev/null; then
		cat "$dir/listen.err" >&2
		say "mm_listen exited before listening"
		exit 1
	fi
	sleep 0.1
done
[ "$n" = 1 ] || { say "mm_listen is not listening after 30 s"; exit 1; }

# ---------------------------------------------------------------------------
# The load: pgbench, the ticker, the sampler, all started at $start.
# ---------------------------------------------------------------------------
cat > "$dir/load.pgbench" <<EOF
\\set n :n + 1
\\set skill random(0, 2000)
\\set action random(1, 10)
SELECT mm.create_ticket('$queue', jsonb_build_array(jsonb_build_object('id', 'c' || :client_id || '-' || :n, 'attributes', jsonb_build_object('skill', :skill)))) AS tid \\gset
\\if :action = 1
SELECT mm.cancel_ticket(:tid);
\\elif :action = 2 AND :prev > 0
SELECT mm.cancel_ticket(:prev);
\\endif
\\set prev :tid
EOF

start=$(now_epoch)
# tick k at start + k, k = 1..seconds; an error is recorded, the next tick runs
{
	echo "\\set ON_ERROR_STOP 0"
	echo "SET application_name = 'mm_bench_load_tick';"
	for k in $(seq 1 "$seconds"); do
		cat <<SQL
SELECT pg_sleep(greatest(0, $start + $k - extract(epoch FROM clock_timestamp()))) \\g /dev/null
SELECT clock_timestamp() AS t0 \\gset
SELECT mm.tick('$queue', clock_timestamp()) AS m \\gset
\\if :ERROR
SELECT 'error', $k, :'LAST_ERROR_SQLSTATE', replace(replace(:'LAST_ERROR_MESSAGE', E'\\n', ' '), '|', '/');
\\else
SELECT 'tick', $k, :'t0', 1000 * extract(epoch FROM clock_timestamp() - :'t0'), :m, s.tickets_loaded,
       s.tickets_timed_out, s.players_matched, s.load_ms, s.compute_ms, s.write_ms, s.locked_out
  FROM (SELECT 1) d LEFT JOIN mm.last_tick_stats() s ON s.queue = '$queue';
\\endif
SQL
	done
} > "$dir/ticks.sql"
# a sample at start + k + 0.5, k = 0..seconds
{
	echo "SET application_name = 'mm_bench_load_sample';"
	for k in $(seq 0 "$seconds"); do
		cat <<SQL
SELECT pg_sleep(greatest(0, $start + $k + 0.5 - extract(epoch FROM clock_timestamp()))) \\g /dev/null
SELECT 'usage', $k, clock_timestamp(), pg_notification_queue_usage(), (SELECT count(*) FROM mm.tickets_active);
SQL
	done
} > "$dir/samples.sql"

say "running for $seconds s"
psql -X -q -At -F '|' -f "$dir/ticks.sql" > "$dir/ticks.txt" 2> "$dir/ticks.err" &
tick_pid=$!
bg_pids+=("$tick_pid")
psql -X -q -At -F '|' -f "$dir/samples.sql" > "$dir/samples.txt" 2> "$dir/samples.err" &
sample_pid=$!
bg_pids+=("$sample_pid")
pgbench_rc=0
pgbench -n -c "$clients" -j "$threads" -T "$seconds" -D n=0 -D prev=0 --failures-detailed --verbose-errors \
	-P 10 -f "$dir/load.pgbench" "$db" > "$dir/pgbench.out" 2> "$dir/pgbench.err" || pgbench_rc=$?
pgbench_end=$(now_epoch)
elapsed=$(awk "BEGIN { print $pgbench_end - $start }")
tick_rc=0
wait "$tick_pid" || tick_rc=$?
sample_rc=0
wait "$sample_pid" || sample_rc=$?
say "pgbench done after $(printf '%.1f' "$elapsed") s (exit $pgbench_rc), ticker (exit $tick_rc), sampler (exit $sample_rc)"

# the sentinel: committed after every other transaction of the run
token="bench_load_end_$$_$RANDOM"
echo "SELECT pg_notify('mm_events', json_build_object('event', 'bench_load_end', 'token', :'token')::text);" |
	q -v token="$token" >/dev/null
sentinel_seen=0
for i in $(seq 1 1200); do
	if grep -q "$token" "$dir/events.txt"; then
		sentinel_seen=1
		break
	fi
	kill -0 "$listen_pid" 2>/dev/null || break
	sleep 0.1
done
final_usage=$(q -c "SELECT pg_notification_queue_usage()")
kill "$listen_pid" 2>/dev/null || true
wait "$listen_pid" 2>/dev/null || true
[ "$sentinel_seen" = 1 ] || say "the sentinel event never reached mm_listen: $(head -c 300 "$dir/listen.err")"

# ---------------------------------------------------------------------------
# What pgbench and the server log say.
# ---------------------------------------------------------------------------
pb() { sed -n "s/^$1: \\([0-9.]*\\).*/\\1/p" "$dir/pgbench.out" | head -1; }
pb_processed=$(pb 'number of transactions actually processed')
pb_failed=$(pb 'number of failed transactions')
pb_deadlock=$(pb 'number of deadlock failures')
pb_serialization=$(pb 'number of serialization failures')
pb_tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$dir/pgbench.out")
pb_aborted=$(grep -c 'aborted' "$dir/pgbench.err" || true)
if [ -z "$pb_processed" ]; then
	cat "$dir/pgbench.out" "$dir/pgbench.err" >&2
	say "pgbench printed no summary"
fi

log_deadlocks=0
log_errors=0
log_error_kinds=""
if [ -r "$logfile" ]; then
	tail -c +$((log_start + 1)) "$logfile" > "$dir/server.log"
	# one per ERROR line (its DETAIL, CONTEXT and STATEMENT lines carry the SQLSTATE too)
	log_deadlocks=$(grep -c -E ' 40P01 ERROR: |ERROR: +deadlock detected' "$dir/server.log" || true)
	log_errors=$(grep -c 'ERROR:' "$dir/server.log" || true)
	log_error_kinds=$(grep 'ERROR:' "$dir/server.log" | sed 's/^.*ERROR: *//' | sort | uniq -c | sort -rn | head -5 |
		awk '{ $1 = $1 "×"; print }' | paste -sd ';' - | tr '|' '/' || true)
fi
q -c "ALTER SYSTEM RESET log_line_prefix" -c "SELECT pg_reload_conf()" >/dev/null

# ---------------------------------------------------------------------------
# Load the records; parse and check the events in the server.
# ---------------------------------------------------------------------------
grep -E '^(tick|error)\|' "$dir/ticks.txt" > "$dir/ticks.tsv" || true
grep -E '^usage\|' "$dir/samples.txt" > "$dir/samples.tsv" || true
tick_errors=$(grep -c '^error|' "$dir/ticks.tsv" || true)
tick_error_text=$( { grep '^error|' "$dir/ticks.tsv" | head -3; head -c 300 "$dir/ticks.err"; } | paste -sd ' ' - | tr '|' '/' || true)

q -v ticks="$dir/ticks.tsv" -v samples="$dir/samples.tsv" -v events="$dir/events.txt" <<'SQL'
-- error lines have fewer columns: only the tick lines are loaded here
CREATE TEMP TABLE raw_ticks (line text);
COPY raw_ticks FROM :'ticks' WITH (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01');
INSERT INTO bench_load_ticks
SELECT f[1], f[2]::int, f[3]::timestamptz, f[4]::float8, f[5]::int, nullif(f[6], '')::int, nullif(f[7], '')::int,
       nullif(f[8], '')::int, nullif(f[9], '')::float8, nullif(f[10], '')::float8, nullif(f[11], '')::float8,
       nullif(f[12], '')::boolean
  FROM (SELECT string_to_array(line, '|') f FROM raw_ticks WHERE line LIKE 'tick|%') s;
COPY bench_load_usage FROM :'samples' WITH (FORMAT text, DELIMITER '|');
COPY bench_load_events (line) FROM :'events' WITH (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01');
SQL

q -v queue="$queue" -v seconds="$seconds" -v elapsed="$elapsed" -v clients="$clients" -v threads="$threads" \
  -v mode="$mode" -v pb_processed="${pb_processed:-}" -v pb_failed="${pb_failed:-}" -v pb_deadlock="${pb_deadlock:-}" \
  -v pb_serialization="${pb_serialization:-}" -v pb_tps="${pb_tps:-}" -v pb_aborted="$pb_aborted" \
  -v pb_rc="$pgbench_rc" -v log_deadlocks="$log_deadlocks" \
  -v log_errors="$log_errors" -v log_error_kinds="$log_error_kinds" -v tick_errors="$tick_errors" \
  -v tick_error_text="$tick_error_text" -v tick_rc="$tick_rc" -v sentinel_seen="$sentinel_seen" \
  -v token="$token" -v final_usage="$final_usage" -v log_readable="$([ -r "$logfile" ] && echo 1 || echo 0)" \
  -v cpus="$(nproc 2>/dev/null || echo '?')" -v loadavg="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')" <<'SQL'
CREATE FUNCTION pg_temp.try_jsonb(t text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
	RETURN t::jsonb;
EXCEPTION WHEN others THEN
	RETURN NULL;
END
$$;
CREATE FUNCTION pg_temp.ids(a bigint[]) RETURNS text LANGUAGE sql AS
	$$ SELECT coalesce(array_to_string(a[1:10], ', ') || CASE WHEN cardinality(a) > 10 THEN ', …' ELSE '' END, '') $$;
CREATE FUNCTION pg_temp.num(x float8, digits int DEFAULT 0) RETURNS text LANGUAGE sql AS
	$$ SELECT coalesce(to_char(round(x::numeric, digits),
	                           'FM999,999,999,990' || CASE WHEN digits > 0 THEN '.' || repeat('0', digits) ELSE '' END),
	                   'n/a') $$;

-- every line mm_listen wrote: "[HH:MM:SS] payload"
CREATE TEMP TABLE ev AS
SELECT n, line, pg_temp.try_jsonb(substring(line FROM '^\[[0-9:]+\] (.*)$')) AS p FROM bench_load_events;
CREATE TEMP TABLE mf AS          -- the match_found events, well formed
SELECT n, (p->>'match_id')::bigint AS match_id, p->>'queue' AS queue, p->'tickets' AS tickets
  FROM ev WHERE p->>'event' = 'match_found' AND jsonb_typeof(p->'match_id') = 'number';
CREATE TEMP TABLE db_matches AS SELECT id FROM mm.matches WHERE queue = :'queue';
CREATE TEMP TABLE cancelled_events AS
SELECT (t.value)::bigint AS ticket_id FROM ev, jsonb_array_elements_text(p->'tickets') t
 WHERE p->>'event' = 'ticket_cancelled';
CREATE TEMP TABLE db_cancelled AS SELECT id FROM mm.tickets_ended WHERE queue = :'queue' AND status = 'cancelled';
-- signatures, when this version signs its events: (events checked, failures), or NULL
CREATE FUNCTION pg_temp.verify_all(token text, OUT checked bigint, OUT failed bigint) LANGUAGE plpgsql AS $$
BEGIN
	IF to_regprocedure('mm.verify_event(text)') IS NULL THEN
		RETURN;
	END IF;
	EXECUTE $q$SELECT count(*), count(*) FILTER (WHERE NOT coalesce(mm.verify_event(payload), false))
	             FROM (SELECT substring(line FROM '^\[[0-9:]+\] (.*)$') AS payload, p FROM ev) e
	            WHERE p IS NULL OR p->>'token' IS DISTINCT FROM $1$q$
	   INTO checked, failed USING token;
END
$$;

SELECT
	(SELECT count(*) FROM ev) AS ev_lines,
	(SELECT count(*) FROM ev WHERE p IS NULL) AS ev_unparsable,
	(SELECT count(*) FROM ev WHERE p->>'event' = 'match_found') AS mf_all,
	(SELECT count(*) FROM ev WHERE p->>'event' = 'match_found' AND jsonb_typeof(p->'match_id') IS DISTINCT FROM 'number') AS mf_malformed,
	(SELECT count(*) FROM mf) AS mf_events,
	(SELECT count(DISTINCT match_id) FROM mf) AS mf_distinct,
	(SELECT count(*) FROM mf WHERE queue IS DISTINCT FROM :'queue') AS mf_other_queue,
	(SELECT count(*) FROM (SELECT match_id FROM mf GROUP BY match_id HAVING count(*) > 1) d) AS mf_dup_ids,
	(SELECT pg_temp.ids(array_agg(match_id ORDER BY match_id)) FROM (SELECT match_id FROM mf GROUP BY match_id HAVING count(*) > 1) d) AS mf_dup_list,
	(SELECT count(*) FROM db_matches) AS db_matches,
	(SELECT count(*) FROM db_matches d WHERE NOT EXISTS (SELECT FROM mf WHERE mf.match_id = d.id)) AS missing,
	(SELECT pg_temp.ids(array_agg(id ORDER BY id)) FROM db_matches d WHERE NOT EXISTS (SELECT FROM mf WHERE mf.match_id = d.id)) AS missing_list,
	(SELECT count(DISTINCT match_id) FROM mf WHERE NOT EXISTS (SELECT FROM db_matches d WHERE d.id = mf.match_id)) AS unknown,
	(SELECT pg_temp.ids(array_agg(DISTINCT match_id)) FROM mf WHERE NOT EXISTS (SELECT FROM db_matches d WHERE d.id = mf.match_id)) AS unknown_list,
	-- each match_found names the tickets mm.tickets_ended records for its match
	-- (the ended tickets grouped by match once: tickets_ended has no index on match_id)
	(SELECT count(*) FROM mf
	   LEFT JOIN (SELECT e.match_id, array_agg(e.id ORDER BY e.id) AS ids FROM mm.tickets_ended e
	               WHERE e.status = 'matched' GROUP BY e.match_id) te ON te.match_id = mf.match_id
	  WHERE mf.tickets IS NULL OR jsonb_typeof(mf.tickets) <> 'array'
	     OR (SELECT array_agg(t.value::bigint ORDER BY t.value::bigint) FROM jsonb_array_elements_text(mf.tickets) t)
	        IS DISTINCT FROM te.ids) AS mf_ticket_mismatch,
	(SELECT count(*) FROM ev WHERE p->>'event' = 'ticket_cancelled') AS tc_events,
	(SELECT count(*) FROM cancelled_events) AS tc_tickets,
	(SELECT count(*) FROM (SELECT ticket_id FROM cancelled_events GROUP BY 1 HAVING count(*) > 1) d) AS tc_dup,
	(SELECT count(*) FROM db_cancelled) AS db_cancelled,
	(SELECT count(*) FROM db_cancelled d WHERE NOT EXISTS (SELECT FROM cancelled_events c WHERE c.ticket_id = d.id)) AS tc_missing,
	(SELECT count(*) FROM (SELECT DISTINCT ticket_id FROM cancelled_events) c WHERE NOT EXISTS (SELECT FROM db_cancelled d WHERE d.id = c.ticket_id)) AS tc_unknown,
	(SELECT coalesce(string_agg(format('%s × %s', n, e), ', ' ORDER BY e), 'none')
	   FROM (SELECT coalesce(p->>'event', '(no event)') AS e, count(*) AS n FROM ev
	          WHERE p IS NOT NULL AND p->>'event' NOT IN ('match_found', 'ticket_cancelled', 'bench_load_end') GROUP BY 1) o) AS other_events,
	(SELECT count(*) FROM ev WHERE p->>'token' = :'token') AS sentinel_events,
	(SELECT count(*) FROM mm.tickets WHERE queue = :'queue') AS tickets,
	(SELECT count(*) FROM mm.tickets WHERE queue = :'queue' AND status = 'matched') AS tickets_matched,
	(SELECT count(*) FROM mm.tickets WHERE queue = :'queue' AND status IN ('searching', 'proposed')) AS tickets_active,
	(SELECT count(*) FROM mm.tickets WHERE queue = :'queue' AND status = 'timed_out') AS tickets_timed_out,
	(SELECT count(*) FROM mm.active_players WHERE queue = :'queue') AS active_players,
	-- held players (0.3): those of the active tickets, and those of the live
	-- matches (ready or assigned, not left), held until the match ends
	(SELECT count(*) FROM mm.tickets_active t, jsonb_array_elements(t.players) p
	  WHERE t.queue = :'queue') AS active_ticket_players,
	(SELECT count(*) FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
	  WHERE m.queue = :'queue' AND m.status IN ('ready', 'assigned') AND mp.left_at IS NULL) AS live_match_players,
	(SELECT count(*) FROM mm.active_players a
	  WHERE a.queue = :'queue'
	    AND NOT EXISTS (SELECT FROM mm.tickets_active t WHERE t.id = a.ticket_id)
	    AND NOT EXISTS (SELECT FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
	                     WHERE mp.ticket_id = a.ticket_id AND mp.player_id = a.player_id
	                       AND m.status IN ('ready', 'assigned') AND mp.left_at IS NULL)) AS stale_players,
	(SELECT count(*) FROM mm.match_players mp JOIN db_matches d ON d.id = mp.match_id) AS match_players,
	(SELECT count(*) FROM bench_load_ticks) AS ticks_ok,
	(SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM bench_load_ticks) AS tick_p50,
	(SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) FROM bench_load_ticks) AS tick_p99,
	(SELECT max(ms) FROM bench_load_ticks) AS tick_max,
	(SELECT coalesce(sum(matches), 0) FROM bench_load_ticks) AS tick_matches,
	(SELECT format('%s / %s / %s', pg_temp.num(percentile_cont(0.5) WITHIN GROUP (ORDER BY load_ms), 1),
	               pg_temp.num(percentile_cont(0.5) WITHIN GROUP (ORDER BY compute_ms), 1),
	               pg_temp.num(percentile_cont(0.5) WITHIN GROUP (ORDER BY write_ms), 1)) FROM bench_load_ticks) AS tick_phases,
	(SELECT format('%s / %s', pg_temp.num(percentile_cont(0.5) WITHIN GROUP (ORDER BY tickets_loaded)),
	               pg_temp.num(max(tickets_loaded))) FROM bench_load_ticks) AS tick_loaded,
	(SELECT count(*) FROM bench_load_ticks WHERE locked_out) AS ticks_locked_out,
	(SELECT count(*) FROM (SELECT t0, lag(t0) OVER (ORDER BY k) AS lag_t0 FROM bench_load_ticks) l
	  WHERE t0 > lag_t0 + interval '1.5 s') AS late_ticks,
	(SELECT max(usage) FROM bench_load_usage) AS usage_max,
	(SELECT count(*) FROM bench_load_usage) AS usage_samples,
	(SELECT max(active_tickets) FROM bench_load_usage) AS active_max,
	(SELECT round(100 * max(usage)::numeric, 6) FROM bench_load_usage) AS usage_max_pct,
	v.checked AS sig_checked, v.failed AS sig_failed
  FROM pg_temp.verify_all(:'token') v
\gset

INSERT INTO bench_load_summary (ord, figure, value, problem) VALUES
 (1, 'run', format('%s s (pgbench -T %s, wall %s s), queue %s, pgbench -c %s -j %s', :seconds, :seconds,
                   pg_temp.num(:elapsed, 1), :'mode', :clients, :threads), NULL),
 (2, 'tickets/s accepted (committed create_ticket calls)',
     format('%s (%s tickets in mm.tickets)', pg_temp.num(:tickets / :elapsed, 1), :tickets), NULL),
 (3, 'pgbench: transactions processed / failed (deadlock, serialization) / tps',
     format('%s / %s (%s, %s) / %s', coalesce(nullif(:'pb_processed', ''), '?'), coalesce(nullif(:'pb_failed', ''), '?'),
            coalesce(nullif(:'pb_deadlock', ''), '?'), coalesce(nullif(:'pb_serialization', ''), '?'),
            coalesce(nullif(:'pb_tps', ''), '?')),
     CASE WHEN nullif(:'pb_processed', '') IS NULL THEN 'pgbench printed no summary (exit ' || :pb_rc || ')'
          WHEN :'pb_failed' <> '0' THEN :'pb_failed' || ' failed pgbench transactions'
          WHEN :pb_aborted > 0 THEN :pb_aborted || ' pgbench clients aborted'
          WHEN :'pb_processed'::bigint <> :tickets
          THEN format('pgbench processed %s transactions but %s tickets exist', :'pb_processed', :tickets) END),
 (4, 'cancels/s (tickets cancelled)', format('%s (%s)', pg_temp.num(:db_cancelled / :elapsed, 1), :db_cancelled), NULL),
 (5, 'matches/s (matches formed over the run)',
     format('%s (%s matches, %s players; %s tickets matched)', pg_temp.num(:db_matches / :elapsed, 1), :db_matches,
            :match_players, :tickets_matched),
     CASE WHEN :db_matches <> :tick_matches THEN format('the ticks reported %s matches, mm.matches holds %s', :tick_matches, :db_matches) END),
 (6, 'ticks run / errors / late (> 1.5 s after the previous) / locked out',
     format('%s / %s / %s / %s', :ticks_ok + :tick_errors, :tick_errors, :late_ticks, :ticks_locked_out),
     CASE WHEN :tick_errors > 0 OR :tick_rc <> 0 THEN 'tick errors: ' || :'tick_error_text'
          WHEN :ticks_ok <> :seconds THEN format('%s ticks recorded, %s expected', :ticks_ok, :seconds) END),
 (7, 'tick latency p50 (ms)', pg_temp.num(nullif(:'tick_p50', '')::float8, 1), NULL),
 (8, 'tick latency p99 (ms)', pg_temp.num(nullif(:'tick_p99', '')::float8, 1), NULL),
 (9, 'tick latency max (ms)', pg_temp.num(nullif(:'tick_max', '')::float8, 1), NULL),
 (10, 'tick phases, medians: load / compute / write (ms)', :'tick_phases', NULL),
 (11, 'tickets loaded per tick: median / max', :'tick_loaded', NULL),
 (12, 'max pg_notification_queue_usage() (sampled every second)',
      format('%s (%s %%; %s samples; %s after the run)', coalesce(nullif(:'usage_max', ''), 'n/a'),
             coalesce(nullif(:'usage_max_pct', ''), 'n/a'), :usage_samples, :final_usage),
      CASE WHEN :usage_samples < :seconds THEN format('%s usage samples, %s expected', :usage_samples, :seconds + 1) END),
 (13, 'max active tickets (sampled every second)', coalesce(nullif(:'active_max', ''), 'n/a'), NULL),
 (14, 'deadlocks (40P01): pgbench deadlock failures / server log',
      format('%s / %s', coalesce(nullif(:'pb_deadlock', ''), '?'),
             CASE WHEN :log_readable = 1 THEN :log_deadlocks::text ELSE 'log not readable' END),
      CASE WHEN coalesce(nullif(:'pb_deadlock', ''), '0') <> '0' OR :log_deadlocks > 0
           THEN 'DEADLOCKS' END),
 (15, 'server log ERRORs during the run', CASE WHEN :log_errors = 0 THEN '0' ELSE format('%s: %s', :log_errors, :'log_error_kinds') END,
      CASE WHEN :log_errors > 0 THEN :log_errors || ' ERRORs in the server log' END),
 (16, 'events received: lines / unparsable / sentinel',
      format('%s / %s / %s', :ev_lines, :ev_unparsable, CASE WHEN :sentinel_events = 1 THEN 'seen' ELSE 'NOT SEEN' END),
      CASE WHEN :ev_unparsable > 0 THEN :ev_unparsable || ' payloads are not JSON'
           WHEN :sentinel_events <> 1 OR :sentinel_seen <> 1 THEN 'the end-of-run sentinel did not arrive: events may be missing' END),
 (17, 'match_found events / distinct match_ids / mm.matches rows',
      format('%s / %s / %s', :mf_events, :mf_distinct, :db_matches),
      CASE WHEN :mf_malformed > 0 THEN :mf_malformed || ' match_found events without a numeric match_id'
           WHEN :mf_other_queue > 0 THEN :mf_other_queue || ' match_found events of another queue' END),
 (18, 'exactly one match_found per committed match',
      CASE WHEN :missing = 0 AND :mf_dup_ids = 0 AND :unknown = 0 AND :mf_events = :db_matches THEN 'yes'
           ELSE format('NO: %s missing [%s], %s duplicated [%s], %s unknown [%s]', :missing, :'missing_list',
                       :mf_dup_ids, :'mf_dup_list', :unknown, :'unknown_list') END,
      CASE WHEN NOT (:missing = 0 AND :mf_dup_ids = 0 AND :unknown = 0 AND :mf_events = :db_matches)
           THEN 'match_found events do not match mm.matches one to one' END),
 (19, 'match_found "tickets" = tickets_ended of the match (mismatches)', :mf_ticket_mismatch::text,
      CASE WHEN :mf_ticket_mismatch > 0 THEN :mf_ticket_mismatch || ' match_found events name other tickets' END),
 (20, 'ticket_cancelled: events / tickets named / cancelled tickets; missing, duplicated, unknown',
      format('%s / %s / %s; %s, %s, %s', :tc_events, :tc_tickets, :db_cancelled, :tc_missing, :tc_dup, :tc_unknown),
      CASE WHEN :tc_missing > 0 OR :tc_dup > 0 OR :tc_unknown > 0
           THEN 'ticket_cancelled events do not match the cancelled tickets' END),
 (21, 'other events', :'other_events',
      CASE WHEN :'other_events' <> 'none' THEN 'unexpected events: ' || :'other_events' END),
 (21.5, 'event signatures (mm.verify_event): checked / invalid',
      CASE WHEN nullif(:'sig_checked', '') IS NULL THEN 'n/a (no mm.verify_event)'
           ELSE format('%s / %s', :'sig_checked', :'sig_failed') END,
      CASE WHEN coalesce(nullif(:'sig_failed', ''), '0') <> '0' THEN :'sig_failed' || ' events fail mm.verify_event' END),
 (22, 'left: active tickets / timed out; mm.active_players = players of active tickets + of live matches',
      format('%s / %s; %s = %s + %s', :tickets_active, :tickets_timed_out, :active_players,
             :active_ticket_players, :live_match_players),
      CASE WHEN :active_players <> :active_ticket_players + :live_match_players OR :stale_players > 0
           THEN format('mm.active_players (%s rows, %s held by neither an active ticket nor a live match) disagrees with the held players',
                       :active_players, :stale_players)
           WHEN :tickets <> :tickets_matched + :tickets_active + :db_cancelled + :tickets_timed_out
           THEN 'tickets are neither active, matched, cancelled nor timed out' END),
 (23, 'machine', format('%s CPUs, load average %s at the end', :'cpus', :'loadavg'), NULL);
SQL

{
	echo
	echo "### Sustained load ($seconds s, queue $mode, $clients pgbench clients + 1 tick/s + 1 listener)"
	echo
	echo '| figure | value |'
	echo '| --- | --- |'
	q -c "SELECT format('| %s | %s |', figure, replace(value, '|', '/')) FROM bench_load_summary ORDER BY ord"
	echo
}
problems=$(q -c "SELECT format('%s: %s', figure, problem) FROM bench_load_summary WHERE problem IS NOT NULL ORDER BY ord")
if [ -n "$problems" ]; then
	printf 'check FAILED: %s\n' "$problems" | sed '2,$s/^/check FAILED: /'
	[ -s "$dir/pgbench.err" ] && { echo "pgbench stderr (first lines):"; head -20 "$dir/pgbench.err"; }
	exit 1
fi
echo "checks: all passed"
