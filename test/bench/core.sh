#!/usr/bin/env bash
# Core benchmark of the tick, ticket creation and enqueue: every figure is a
# ratio (or a figure against its target) measured in this run, each measurement run
# MM_BENCH_CORE_RUNS times (default 3) after one unrecorded warm-up, medians
# reported.  Printed at the end as a Markdown table
# "| figure | ours | baseline | ratio | target |", then every run.
#
#   1. tick vs physical floor, 100k searching tickets (queue "bench": 5v5,
#      difference on skill max 100, +50 every 10 s up to 400; latency 150 ms
#      on eu/us/asia; solo tickets created over the last 60 s, loaded by
#      COPY).  tick = SELECT mm.tick('bench', now) in its own transaction.
#      floor = plain tables with primary keys only and no triggers holding the
#      same rows (floor_tickets, floor_matches, floor_match_players,
#      floor_ended): in one transaction (bench_core_floor()), read the
#      searching tickets FOR UPDATE SKIP LOCKED oldest first, insert the very
#      match and match-player rows the tick wrote (copied from mm.matches and
#      mm.match_players after the tick), move the matched tickets from
#      floor_tickets to floor_ended.  Reset (truncate, reload, VACUUM ANALYZE,
#      CHECKPOINT) before every timing.
#      strict floor = the physical minimum of the same work: the same tickets
#      in plain tables with only their primary keys (strict_tickets,
#      strict_matches, strict_match_players), one statement reading the
#      queue's searching tickets FOR UPDATE SKIP LOCKED, one inserting the
#      matches, one their players, one deleting the matched tickets (no
#      history row, no trigger): bench_core_strict_floor(), timed after the
#      floor in its own transaction.  The three are also timed in the
#      backend's CPU time (1c), which the load of a shared machine moves much
#      less than their wall-clock times.
#      For reference (1d, no target): the ended-table floor again, its ended
#      table given for that run the two (queue, time) indexes the metrics
#      read: what the floor costs a product that keeps them.
#   2. history: the same tick at 20k searching tickets in two databases, one
#      with an empty history, one with 1M ended tickets (matched / cancelled /
#      timed_out) and 100k finished matches with their 1M match_players
#      inserted directly; the two alternate, each run in a fresh backend after
#      a warm-up tick of a small side queue.
#   3. 1,000 small queues (free-for-all of 2 or 1v1, difference rule), 20
#      searching tickets each: SELECT mm.tick(NULL, now), all queues.
#   4. enqueue: COPY of 100k tickets into mm.tickets vs the same COPY into a
#      plain table (id identity primary key, queue, players, created_at), and
#      mm.create_ticket from 8 pgbench clients (-c 8 -j 2 -T 10) vs a plain
#      INSERT of the same rows into the plain table; for the split of the
#      COPY's cost, the same COPY straight into mm.tickets_active (storage,
#      indexes; the parent's statement trigger, which validates and claims
#      the players, does not fire).
#   5. the tick's memory (mm.last_tick_stats().memory_bytes / tickets_loaded)
#      at 100k, next to the tickets' own jsonb size.
#   7. release (section "release", not run by default: it builds the 0.3
#      release, MM_BENCH_CORE_RELEASE (51c9abe), from the git checkout into
#      its own tree, installation and cluster on the next port, about two
#      minutes): the tick of the same queue ("bench": it uses no heartbeats,
#      live-match expiry, penalties, roles, backfill or match function) over
#      the same 100k tickets in this version and in the release,
#      alternating, each after the same reset; the features a queue does not
#      use must cost its tick nothing (target ≤ 1.05); also in the backend's
#      CPU time (7a).  7b: the same against the release given the (queue,
#      time) indexes of this version's mm.tickets_ended, which the metrics
#      read for every queue (a database of its own in the release's
#      cluster): what is left of 7 once that cost is in both.  The three
#      alternate, their order rotating.
#   8. ingest (section "ingest", not run by default; builds the release as 7
#      does, once for both): mm.create_ticket from 8 pgbench clients in this
#      version vs the release, and vs a plain INSERT of the same rows into a
#      table with only a primary key and a unique index on the player, the
#      three rotating, each after the same reset; then the first
#      MM_BENCH_CORE_STALE_SECONDS (20) of create_ticket right after a COPY
#      of MM_BENCH_CORE_TICKETS tickets into never-analyzed tables vs the
#      same after VACUUM ANALYZE.  Autovacuum off meanwhile.  Targets:
#      ≥ 1.0× the release, ≤ 2.5× the plain INSERT, stale ≥ 0.9× steady.
#   6. growth (section "growth", not run by default: the 1M tick needs about
#      2 GB and minutes): the same tick at MM_BENCH_CORE_GROWTH_BIG (1M)
#      searching tickets against MM_BENCH_CORE_TICKETS, alternating, each
#      after a reset (truncate, COPY, VACUUM ANALYZE, CHECKPOINT),
#      MM_BENCH_CORE_GROWTH_RUNS (1) times; phases, memory per ticket, and
#      the backend's CPU time (6c).
#
# Run by: bash test/bench/run.sh core   (PGHOST/PGPORT/PGDATABASE set by run.sh)
# Settings: MM_BENCH_CORE_RUNS (3), MM_BENCH_CORE_TICKETS (100000),
#   MM_BENCH_CORE_HISTORY_TICKETS (1000000, matches are a tenth),
#   MM_BENCH_CORE_HISTORY_SEARCHING (20000), MM_BENCH_CORE_QUEUES (1000),
#   MM_BENCH_CORE_PGBENCH_SECONDS (10), MM_BENCH_CORE_SECTIONS (the sections
#   to run, a subset of "tick pgbench history queues growth"; all but growth
#   by default; "release" and "ingest" neither), MM_BENCH_CORE_GROWTH_BIG
#   (1000000), MM_BENCH_CORE_GROWTH_RUNS (1), MM_BENCH_CORE_RELEASE (51c9abe),
#   MM_BENCH_CORE_STALE_SECONDS (20).
set -euo pipefail

runs=${MM_BENCH_CORE_RUNS:-3}
n_tickets=${MM_BENCH_CORE_TICKETS:-100000}
n_history=${MM_BENCH_CORE_HISTORY_TICKETS:-1000000}
n_history_matches=$((n_history / 10))
n_hist_searching=${MM_BENCH_CORE_HISTORY_SEARCHING:-20000}
n_queues=${MM_BENCH_CORE_QUEUES:-1000}
pgbench_seconds=${MM_BENCH_CORE_PGBENCH_SECONDS:-10}
sections=" ${MM_BENCH_CORE_SECTIONS:-tick pgbench history queues} "
n_big=${MM_BENCH_CORE_GROWTH_BIG:-1000000}
growth_runs=${MM_BENCH_CORE_GROWTH_RUNS:-1}
release=${MM_BENCH_CORE_RELEASE:-51c9abe}
now="2026-01-01 00:10:00+00"
main_db=${PGDATABASE:-mm_bench}
hist_db=${main_db}_core_hist
queues_db=${main_db}_core_queues

# files the server reads (COPY FROM a file) and pgbench scripts
dir=$(mktemp -d /tmp/mm_bench_core.XXXXXX)
chmod 755 "$dir"
trap 'rm -rf "$dir"' EXIT

q() { psql -X -v ON_ERROR_STOP=1 -q -At "$@"; }
say() { printf '==> core: %s\n' "$*" >&2; }

# the bench queue (the same config in every database that uses it)
bench_config='{
  "match_size": {"min": 10, "max": 10},
  "teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}],
  "rules": [
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
     "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
    {"name": "ping", "type": "latency", "max_ms": 150}]}'

# The backend's CPU time (user + system) in ms, from /proc/self/stat (clock
# ticks of 10 ms): what a step cost, which the load of a shared machine moves
# much less than the wall-clock time (NaN where there is no /proc).  Created
# in this run's database and in the release's.
cpu_fn_sql=$(cat <<'SQL'
CREATE OR REPLACE FUNCTION bench_cpu_ms() RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	f text[];
BEGIN
	f := regexp_split_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ');
	RETURN (f[12]::bigint + f[13]::bigint) * 10.0;
EXCEPTION WHEN OTHERS THEN
	RETURN 'NaN';
END
$$
SQL
)

# ---------------------------------------------------------------------------
# Set-up in the main database: results, ticket files, floor tables.
# ---------------------------------------------------------------------------
say "set-up: ticket files, floor tables"
q -c "$cpu_fn_sql"
q -v now="$now" -v dir="$dir" -v n="$n_tickets" -v nh="$n_hist_searching" \
  -v nq="$n_queues" -v config="$bench_config" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench_core_runs, bench_core_notes;
CREATE TABLE bench_core_runs (figure text, run int, kind text, value float8);
CREATE TABLE bench_core_notes (note text);
-- (a re-run in the same database starts afresh)
DROP TABLE IF EXISTS floor_tickets, floor_matches, floor_match_players, floor_ended,
	strict_tickets, strict_matches, strict_match_players,
	bench_out_matches, bench_out_players, bench_out_tickets, bench_plain;
DROP FUNCTION IF EXISTS bench_core_floor(text, timestamptz);
DROP FUNCTION IF EXISTS bench_core_strict_floor(text);
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE;
SELECT count(mm.drop_queue(name)) FROM mm.queues WHERE name IN ('bench', 'warm') \gset dummy_
SELECT mm.create_queue('bench', :'config') \gset dummy_

-- :n solo tickets of queue :queue created over the 60 s before :now, oldest
-- first (skill N(1000, 400), latencies N(70, 20)), written to a file
CREATE FUNCTION pg_temp.ticket_rows(queue text, n int, now timestamptz, prefix text)
RETURNS TABLE (queue text, players jsonb, created_at timestamptz) LANGUAGE sql AS $$
	SELECT ticket_rows.queue,
	       jsonb_build_array(jsonb_build_object('id', prefix || g.i,
	         'attributes', jsonb_build_object('skill', g.skill),
	         'latencies', jsonb_build_object('eu', g.eu, 'us', g.us, 'asia', g.asia))),
	       g.created_at
	  FROM (SELECT i,
	               round(1000 + 400 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())) AS skill,
	               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS eu,
	               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS us,
	               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS asia,
	               ticket_rows.now - random() * interval '60 seconds' AS created_at
	          FROM generate_series(1, n) i) g
	 ORDER BY g.created_at, g.i
$$;
SELECT setseed(0.5) \gset dummy_
\set file :dir '/tickets_main.tsv'
COPY (SELECT * FROM pg_temp.ticket_rows('bench', :n, :'now', 'p')) TO :'file';
\set file :dir '/tickets_hist.tsv'
COPY (SELECT * FROM pg_temp.ticket_rows('bench', :nh, :'now', 's')) TO :'file';
-- a small side queue's tickets, to warm a fresh backend up (plans, caches)
\set file :dir '/tickets_warm.tsv'
COPY (SELECT * FROM pg_temp.ticket_rows('warm', 100, :'now', 'w')) TO :'file';
-- :nq queues of 20 tickets: odd queues free-for-all of 2, even queues 1v1
\set file :dir '/tickets_queues.tsv'
COPY (SELECT 'q' || lpad(((i - 1) % :nq + 1)::text, 5, '0'),
             jsonb_build_array(jsonb_build_object('id', 'p' || i, 'attributes',
               jsonb_build_object('skill', round(1000 + 300 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))))),
             timestamptz :'now' - random() * interval '60 seconds' AS created_at
        FROM generate_series(1, :nq * 20) i ORDER BY 3, 2) TO :'file';

-- the physical floor: the same columns, primary keys only, no triggers
CREATE TABLE floor_tickets (id bigint PRIMARY KEY, queue text NOT NULL, players jsonb NOT NULL,
                            created_at timestamptz NOT NULL);
CREATE TABLE floor_matches (LIKE mm.matches INCLUDING DEFAULTS);
ALTER TABLE floor_matches ADD PRIMARY KEY (id);
CREATE TABLE floor_match_players (LIKE mm.match_players INCLUDING DEFAULTS);
ALTER TABLE floor_match_players ADD PRIMARY KEY (match_id, player_id);
CREATE TABLE floor_ended (LIKE mm.tickets_ended INCLUDING DEFAULTS INCLUDING GENERATED);
ALTER TABLE floor_ended ADD PRIMARY KEY (id);
-- the strict floor: the same, with no ended table
CREATE TABLE strict_tickets (id bigint PRIMARY KEY, queue text NOT NULL, players jsonb NOT NULL,
                             created_at timestamptz NOT NULL);
CREATE TABLE strict_matches (LIKE mm.matches INCLUDING DEFAULTS);
ALTER TABLE strict_matches ADD PRIMARY KEY (id);
CREATE TABLE strict_match_players (LIKE mm.match_players INCLUDING DEFAULTS);
ALTER TABLE strict_match_players ADD PRIMARY KEY (match_id, player_id);
-- what the tick wrote, for the floor to write again
CREATE TABLE bench_out_matches (LIKE mm.matches);
CREATE TABLE bench_out_players (LIKE mm.match_players);
CREATE TABLE bench_out_tickets (ticket_id bigint, match_id bigint, team text);
-- the enqueue baseline
CREATE TABLE bench_plain (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, queue text NOT NULL,
                          players jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());

-- The floor, in one transaction (the caller's): read, write the tick's rows.
CREATE FUNCTION bench_core_floor(q text, now timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
	bytes bigint;
BEGIN
	-- the tick's load: id, created_at, players of the searching tickets, oldest first
	SELECT count(*), sum(pg_column_size(s.players)) INTO n, bytes
	  FROM (SELECT t.id, t.created_at, t.players FROM floor_tickets t
	         WHERE t.queue = q ORDER BY t.created_at, t.id FOR UPDATE SKIP LOCKED) s;
	INSERT INTO floor_matches SELECT * FROM bench_out_matches;
	INSERT INTO floor_match_players SELECT * FROM bench_out_players;
	WITH moved AS (
		DELETE FROM floor_tickets t USING bench_out_tickets o WHERE t.id = o.ticket_id
		RETURNING t.id, t.queue, t.players, t.created_at, o.match_id, o.team)
	INSERT INTO floor_ended (id, queue, players, status, created_at, updated_at, matched_at, match_id, team)
	SELECT id, queue, players, 'matched', created_at, now, now, match_id, team FROM moved;
	RETURN n;
END
$$;

-- The strict floor, in one transaction (the caller's): four statements.
CREATE FUNCTION bench_core_strict_floor(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
	bytes bigint;
BEGIN
	SELECT count(*), sum(pg_column_size(s.players)) INTO n, bytes
	  FROM (SELECT t.id, t.created_at, t.players FROM strict_tickets t
	         WHERE t.queue = q ORDER BY t.created_at, t.id FOR UPDATE SKIP LOCKED) s;
	INSERT INTO strict_matches SELECT * FROM bench_out_matches;
	INSERT INTO strict_match_players SELECT * FROM bench_out_players;
	DELETE FROM strict_tickets t USING bench_out_tickets o WHERE t.id = o.ticket_id;
	RETURN n;
END
$$;
SQL

failures=""
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
# Runs one section in a subshell with -e; a failure is reported and the
# other sections still run.
section() {
	local name=$1 rc
	shift
	say "$name"
	set +e
	( set -e; "$@" )
	rc=$?
	set -e
	if [ "$rc" -ne 0 ]; then
		say "$name FAILED (exit $rc)"
		failures="$failures $name"
		note "$name failed (exit $rc), see the messages above" || true
	fi
}

# Copies the rows of a database's results table ($2) into the main
# database's bench_core_runs.
collect_runs() {
	q -d "$1" -c "COPY $2 TO STDOUT" | q -d "$main_db" -c "COPY bench_core_runs FROM STDIN"
}

# Records a note (something that looked wrong) for the report.
note() {
	say "note: $*"
	echo "INSERT INTO bench_core_notes VALUES (:'note');" | q -d "$main_db" -v note="$*"
}

# ---------------------------------------------------------------------------
# 1, 4a, 5: per run, COPY of the same file into the plain table, into the
# active partition directly (no statement trigger: storage and indexes only;
# emptied again) and into mm.tickets (the order rotates), the tick, then the
# floor with the tick's rows.
# ---------------------------------------------------------------------------
# SQL that times one COPY of the file into $2, recorded as kind $1.
copy_sql() {
	cat <<SQL
CHECKPOINT;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
COPY $2 (queue, players, created_at) FROM :'file';
SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
INSERT INTO bench_core_runs VALUES ('copy', :run, '$1', (:t1 - :t0) * 1000);
SQL
}
copy_plain_sql() { copy_sql plain_ms bench_plain; }
copy_partition_sql() {
	copy_sql partition_ms mm.tickets_active
	cat <<'SQL'
TRUNCATE mm.tickets_active;
SELECT setval('mm.tickets_id_seq', 1, false) \gset dummy_
VACUUM ANALYZE mm.tickets;
SQL
}
copy_mm_sql() { copy_sql mm_ms mm.tickets; }

figure_tick() {
	{
		for run in $(seq 0 "$runs"); do
			echo "\\set run $run"
			cat <<'SQL'
-- reset
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.match_scores, mm.match_predictions,
         mm.backfill_requests, floor_tickets, floor_matches, floor_match_players, floor_ended,
         strict_tickets, strict_matches, strict_match_players,
         bench_out_matches, bench_out_players, bench_out_tickets CASCADE;
TRUNCATE bench_plain RESTART IDENTITY;
SELECT setval('mm.tickets_id_seq', 1, false), setval('mm.matches_id_seq', 1, false) \gset dummy_
VACUUM ANALYZE bench_plain, mm.tickets, mm.active_players;
SQL
			# enqueue by COPY (the partition's before mm.tickets', whose rows stay)
			case $((run % 3)) in
				0) copy_plain_sql; copy_partition_sql; copy_mm_sql ;;
				1) copy_partition_sql; copy_mm_sql; copy_plain_sql ;;
				2) copy_partition_sql; copy_plain_sql; copy_mm_sql ;;
			esac
			cat <<'SQL'
-- the floor's tickets: the same rows, the same ids
INSERT INTO floor_tickets SELECT id, queue, players, created_at FROM mm.tickets_active;
INSERT INTO strict_tickets SELECT id, queue, players, created_at FROM mm.tickets_active;
SELECT count(*) AS searching, avg(pg_column_size(players)) AS jsonb_bytes FROM mm.tickets_active \gset
INSERT INTO bench_core_runs VALUES ('tick', :run, 'searching', :searching), ('tick', :run, 'jsonb_bytes', :jsonb_bytes);
VACUUM ANALYZE mm.tickets, mm.active_players, mm.matches, mm.match_players,
               floor_tickets, floor_matches, floor_match_players, floor_ended,
               strict_tickets, strict_matches, strict_match_players;
CHECKPOINT;
-- the tick, in its own transaction
SELECT extract(epoch FROM clock_timestamp()) AS t0, bench_cpu_ms() AS c0 \gset
SELECT mm.tick('bench', :'now') AS tick_matches \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1, bench_cpu_ms() AS c1 \gset
SELECT tickets_loaded, matches AS stat_matches, players_matched, load_ms, compute_ms, write_ms, memory_bytes
  FROM mm.last_tick_stats() WHERE queue = 'bench' \gset
INSERT INTO bench_core_runs VALUES
	('tick', :run, 'tick_ms', (:t1 - :t0) * 1000), ('tick', :run, 'tick_cpu_ms', :c1 - :c0),
	('tick', :run, 'matches', :tick_matches),
	('tick', :run, 'tickets_loaded', :tickets_loaded), ('tick', :run, 'players_matched', :players_matched),
	('tick', :run, 'load_ms', :load_ms), ('tick', :run, 'compute_ms', :compute_ms),
	('tick', :run, 'write_ms', :write_ms), ('tick', :run, 'memory_bytes', :memory_bytes);
-- the tick's output, for the floor to write the same rows
INSERT INTO bench_out_matches SELECT * FROM mm.matches;
INSERT INTO bench_out_players SELECT * FROM mm.match_players;
INSERT INTO bench_out_tickets SELECT id, match_id, team FROM mm.tickets_ended WHERE status = 'matched';
SELECT (SELECT count(*) FROM bench_out_matches) AS out_matches, (SELECT count(*) FROM bench_out_players) AS out_players,
       (SELECT count(*) FROM bench_out_tickets) AS out_tickets,
       (SELECT count(*) FROM mm.tickets_active WHERE status = 'searching') AS left_searching,
       -- held: the searching players and those of the (ready) matches
       (SELECT count(*) FROM mm.tickets_active WHERE status = 'searching')
         + (SELECT count(*) FROM mm.match_players) AS left_held,
       (SELECT count(*) FROM mm.active_players) AS left_active_players \gset
INSERT INTO bench_core_runs VALUES ('tick', :run, 'tickets_matched', :out_tickets),
	('tick', :run, 'left_searching', :left_searching), ('tick', :run, 'left_held', :left_held),
	('tick', :run, 'left_active_players', :left_active_players);
VACUUM ANALYZE bench_out_matches, bench_out_players, bench_out_tickets;
CHECKPOINT;
-- the floor, in its own transaction
SELECT extract(epoch FROM clock_timestamp()) AS t0, bench_cpu_ms() AS c0 \gset
SELECT bench_core_floor('bench', :'now') AS floor_read \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1, bench_cpu_ms() AS c1 \gset
SELECT (SELECT count(*) FROM floor_matches) AS floor_m, (SELECT count(*) FROM floor_match_players) AS floor_p,
       (SELECT count(*) FROM floor_ended) AS floor_t, (SELECT count(*) FROM floor_tickets) AS floor_left \gset
INSERT INTO bench_core_runs VALUES ('tick', :run, 'floor_ms', (:t1 - :t0) * 1000),
	('tick', :run, 'floor_cpu_ms', :c1 - :c0),
	('tick', :run, 'floor_read', :floor_read), ('tick', :run, 'floor_rows_ok',
	 (:floor_m = :out_matches AND :floor_p = :out_players AND :floor_t = :out_tickets
	  AND :floor_left = :left_searching AND :floor_read = :searching)::int);
CHECKPOINT;
-- the strict floor, in its own transaction
SELECT extract(epoch FROM clock_timestamp()) AS t0, bench_cpu_ms() AS c0 \gset
SELECT bench_core_strict_floor('bench') AS strict_read \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1, bench_cpu_ms() AS c1 \gset
SELECT (SELECT count(*) FROM strict_matches) AS strict_m, (SELECT count(*) FROM strict_match_players) AS strict_p,
       (SELECT count(*) FROM strict_tickets) AS strict_left \gset
INSERT INTO bench_core_runs VALUES ('tick', :run, 'strict_floor_ms', (:t1 - :t0) * 1000),
	('tick', :run, 'strict_floor_cpu_ms', :c1 - :c0),
	('tick', :run, 'strict_rows_ok',
	 (:strict_m = :out_matches AND :strict_p = :out_players AND :strict_left = :left_searching
	  AND :strict_read = :searching)::int);
-- 1d: the ended-table floor again over the same tickets (all of the
-- queue's, ended or not), its ended table given the metrics' two indexes
-- for this run
TRUNCATE floor_tickets, floor_matches, floor_match_players, floor_ended;
CREATE INDEX floor_ended_queue_created ON floor_ended (queue, created_at);
CREATE INDEX floor_ended_queue_matched ON floor_ended (queue, matched_at) WHERE matched_at IS NOT NULL;
INSERT INTO floor_tickets SELECT id, queue, players, created_at FROM mm.tickets WHERE queue = 'bench';
VACUUM ANALYZE floor_tickets, floor_matches, floor_match_players, floor_ended;
CHECKPOINT;
SELECT extract(epoch FROM clock_timestamp()) AS t0, bench_cpu_ms() AS c0 \gset
SELECT bench_core_floor('bench', :'now') AS floor_metrics_read \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1, bench_cpu_ms() AS c1 \gset
SELECT (SELECT count(*) FROM floor_ended) AS floor_metrics_t, (SELECT count(*) FROM floor_tickets) AS floor_metrics_left \gset
DROP INDEX floor_ended_queue_created, floor_ended_queue_matched;
INSERT INTO bench_core_runs VALUES ('tick', :run, 'floor_metrics_ms', (:t1 - :t0) * 1000),
	('tick', :run, 'floor_metrics_cpu_ms', :c1 - :c0),
	('tick', :run, 'floor_metrics_rows_ok',
	 (:floor_metrics_t = :out_tickets AND :floor_metrics_left = :left_searching
	  AND :floor_metrics_read = :searching)::int);
SQL
		done
	} | q -d "$main_db" -v now="$now" -v file="$dir/tickets_main.tsv"
}

# ---------------------------------------------------------------------------
# 4b: mm.create_ticket from 8 clients vs a plain INSERT of the same rows.
# ---------------------------------------------------------------------------
figure_pgbench() {
	cat > "$dir/create_ticket.pgbench" <<'EOF'
\set r random(1, 1000000000000)
\set skill random(0, 2000)
\set eu random(20, 150)
\set us random(20, 150)
\set asia random(20, 150)
SELECT mm.create_ticket('bench', jsonb_build_array(jsonb_build_object('id', 'c' || :client_id || '-' || :r, 'attributes', jsonb_build_object('skill', :skill), 'latencies', jsonb_build_object('eu', :eu, 'us', :us, 'asia', :asia))));
EOF
	cat > "$dir/plain_insert.pgbench" <<'EOF'
\set r random(1, 1000000000000)
\set skill random(0, 2000)
\set eu random(20, 150)
\set us random(20, 150)
\set asia random(20, 150)
INSERT INTO bench_plain (queue, players, created_at) VALUES ('bench', jsonb_build_array(jsonb_build_object('id', 'c' || :client_id || '-' || :r, 'attributes', jsonb_build_object('skill', :skill), 'latencies', jsonb_build_object('eu', :eu, 'us', :us, 'asia', :asia))), now());
EOF
	local run kind out tps failed
	for run in $(seq 1 "$runs"); do
		for kind in $(if [ $((run % 2)) = 1 ]; then echo plain mm; else echo mm plain; fi); do
			q -d "$main_db" <<'SQL'
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE;
TRUNCATE bench_plain RESTART IDENTITY;
VACUUM ANALYZE bench_plain, mm.tickets, mm.active_players;
CHECKPOINT;
SQL
			local script=$dir/plain_insert.pgbench
			[ "$kind" = mm ] && script=$dir/create_ticket.pgbench
			out=$(pgbench -n -c 8 -j 2 -T "$pgbench_seconds" -f "$script" "$main_db" 2>"$dir/pgbench.err") || {
				cat "$dir/pgbench.err" >&2
				return 1
			}
			tps=$(printf '%s\n' "$out" | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p')
			failed=$(printf '%s\n' "$out" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
			if [ -z "$tps" ]; then
				printf '%s\n' "$out" >&2
				return 1
			fi
			if [ -s "$dir/pgbench.err" ] || [ "${failed:-0}" != 0 ]; then
				note "pgbench $kind run $run: ${failed:-?} failed transactions; $(head -c 300 "$dir/pgbench.err" | tr '\n' ' ')"
			fi
			echo "INSERT INTO bench_core_runs VALUES ('pgbench', :run, :'kind', :tps);" |
				q -d "$main_db" -v run="$run" -v kind="${kind}_tps" -v tps="$tps"
			# the tickets pgbench wrote must all be searching, each with its player
			[ "$kind" = mm ] || continue
			q -d "$main_db" -v run="$run" <<'SQL'
SELECT count(*) AS n, count(*) FILTER (WHERE status = 'searching') AS s,
       (SELECT count(*) FROM mm.active_players) AS p FROM mm.tickets \gset
INSERT INTO bench_core_runs VALUES ('pgbench', :run, 'mm_tickets', :n), ('pgbench', :run, 'mm_searching', :s),
	('pgbench', :run, 'mm_active_players', :p);
SQL
		done
	done
	q -d "$main_db" <<'SQL'
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results,
         mm.backfill_requests, bench_plain CASCADE;
SQL
}

# ---------------------------------------------------------------------------
# 2: history.  Two databases with the same queue, ids and searching tickets;
# one holds the history.  Ids of the history come first (tickets 1..H,
# matches 1..H/10), the sequences continue after them in both.
# ---------------------------------------------------------------------------
hist_reset_sql() {
	cat <<'SQL'
SET client_min_messages = warning;
TRUNCATE mm.tickets_active, mm.active_players;
DELETE FROM mm.tickets_ended WHERE id > :nh;
DELETE FROM mm.match_players WHERE match_id > :nhm;
DELETE FROM mm.matches WHERE id > :nhm;
SELECT setval('mm.tickets_id_seq', :nh + 1, false), setval('mm.matches_id_seq', :nhm + 1, false) \gset dummy_
SQL
}

figure_history() {
	local db
	PGOPTIONS="-c client_min_messages=warning" q -d postgres -c "DROP DATABASE IF EXISTS $hist_db" -c "CREATE DATABASE $hist_db"
	q -d "$hist_db" -c "CREATE EXTENSION matchmaking"
	for db in "$main_db" "$hist_db"; do
		q -d "$db" -v config="$bench_config" <<'SQL'
SET client_min_messages = warning;
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE;
DROP TABLE IF EXISTS bench_core_hist_runs;
CREATE TABLE bench_core_hist_runs (figure text, run int, kind text, value float8);
SELECT count(mm.create_queue(name, :'config')) FROM (VALUES ('bench'), ('warm')) v(name)
 WHERE NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = v.name) \gset dummy_
SQL
	done
	say "history: inserting $n_history ended tickets, $n_history_matches matches, $n_history match players"
	q -d "$hist_db" -v now="$now" -v nh="$n_history" -v nhm="$n_history_matches" <<'SQL'
-- matches 1..nhm, one every 6 s over the week before now; 80% completed, 20%
-- cancelled (rejected at acceptance)
INSERT INTO mm.matches (id, queue, status, created_at, updated_at, region, quality, rule_steps,
                        acceptance_deadline, cancel_reason)
SELECT m, 'bench', CASE WHEN m <= :nhm * 0.8 THEN 'completed' ELSE 'cancelled' END,
       ts, ts + CASE WHEN m <= :nhm * 0.8 THEN interval '30 minutes' ELSE interval '15 seconds' END,
       (ARRAY['eu', 'us', 'asia'])[1 + m % 3], 0.5 + (m % 50) / 100.0,
       '{"skill": {"step": 1, "threshold": 150}, "ping": {"step": 0, "threshold": 150}}',
       CASE WHEN m > :nhm * 0.8 THEN ts + interval '15 seconds' END,
       CASE WHEN m > :nhm * 0.8 THEN 'rejected' END
  FROM generate_series(1, :nhm) m,
       LATERAL (SELECT timestamptz :'now' - interval '7 days' + m * (interval '7 days' / :nhm) AS ts) x;
-- ten players each: tickets 1..nh
INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team, accepted)
SELECT (t - 1) / 10 + 1, 'bench', 'h' || t, t, CASE WHEN (t - 1) % 10 < 5 THEN 'red' ELSE 'blue' END,
       t <= :nh * 0.8
  FROM generate_series(1, :nh) t;
-- the tickets: those of completed matches matched, the others cancelled or timed out
INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, matched_at, match_id, team)
SELECT t, 'bench',
       jsonb_build_array(jsonb_build_object('id', 'h' || t,
         'attributes', jsonb_build_object('skill', 500 + t % 1000),
         'latencies', jsonb_build_object('eu', 40 + t % 60, 'us', 60 + t % 50, 'asia', 80 + t % 40))),
       CASE WHEN matched THEN 'matched' WHEN t % 2 = 0 THEN 'cancelled' ELSE 'timed_out' END,
       ts - interval '40 seconds', ts, CASE WHEN matched THEN ts END,
       CASE WHEN matched THEN (t - 1) / 10 + 1 END,
       CASE WHEN NOT matched THEN NULL WHEN (t - 1) % 10 < 5 THEN 'red' ELSE 'blue' END
  FROM generate_series(1, :nh) t,
       LATERAL (SELECT t <= :nh * 0.8 AS matched,
                       timestamptz :'now' - interval '7 days' + ((t - 1) / 10 + 1) * (interval '7 days' / :nhm) AS ts) x;
VACUUM ANALYZE mm.tickets, mm.matches, mm.match_players;
SQL
	q -d "$hist_db" -At -c "SELECT format('history: %s ended tickets (%s), %s matches, %s match players',
		(SELECT count(*) FROM mm.tickets_ended), pg_size_pretty(pg_total_relation_size('mm.tickets_ended')),
		(SELECT count(*) FROM mm.matches), (SELECT count(*) FROM mm.match_players))" >&2

	local run kind
	for run in $(seq 0 "$runs"); do
		for kind in $(if [ $((run % 2)) = 0 ]; then echo empty history; else echo history empty; fi); do
			db=$main_db
			[ "$kind" = history ] && db=$hist_db
			{
				hist_reset_sql
				cat <<'SQL'
COPY mm.tickets (queue, players, created_at) FROM :'file';
COPY mm.tickets (queue, players, created_at) FROM :'warm';
VACUUM ANALYZE mm.tickets, mm.active_players, mm.matches, mm.match_players;
-- a fresh backend: warm it up with the side queue (plans, caches)
SELECT mm.tick('warm', :'now') \gset dummy_
CHECKPOINT;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT mm.tick('bench', :'now') AS tick_matches \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
SELECT tickets_loaded, load_ms, compute_ms, write_ms FROM mm.last_tick_stats() WHERE queue = 'bench' \gset
INSERT INTO bench_core_hist_runs VALUES ('history', :run, :'kind' || '_ms', (:t1 - :t0) * 1000),
	('history', :run, :'kind' || '_matches', :tick_matches), ('history', :run, :'kind' || '_loaded', :tickets_loaded),
	('history', :run, :'kind' || '_load_ms', :load_ms), ('history', :run, :'kind' || '_compute_ms', :compute_ms),
	('history', :run, :'kind' || '_write_ms', :write_ms);
SQL
			} | q -d "$db" -v now="$now" -v run="$run" -v kind="$kind" -v nh="$n_history" \
				-v nhm="$n_history_matches" -v file="$dir/tickets_hist.tsv" -v warm="$dir/tickets_warm.tsv"
		done
	done
	collect_runs "$hist_db" bench_core_hist_runs
	collect_runs "$main_db" bench_core_hist_runs
}

# ---------------------------------------------------------------------------
# 3: many small queues, SELECT mm.tick(NULL, now).
# ---------------------------------------------------------------------------
figure_queues() {
	PGOPTIONS="-c client_min_messages=warning" q -d postgres -c "DROP DATABASE IF EXISTS $queues_db" -c "CREATE DATABASE $queues_db"
	q -d "$queues_db" -c "CREATE EXTENSION matchmaking"
	q -d "$queues_db" -v nq="$n_queues" <<'SQL'
CREATE TABLE bench_core_runs (figure text, run int, kind text, value float8);
SELECT count(mm.create_queue('q' || lpad(i::text, 5, '0'), CASE WHEN i % 2 = 1
	THEN '{"match_size": {"min": 2, "max": 2},
	       "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 200}]}'::jsonb
	ELSE '{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
	       "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 200}]}'::jsonb END))
  FROM generate_series(1, :nq) i \gset dummy_
SQL
	{
		for run in $(seq 0 "$runs"); do
			echo "\\set run $run"
			cat <<'SQL'
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE;
SELECT setval('mm.tickets_id_seq', 1, false), setval('mm.matches_id_seq', 1, false) \gset dummy_
COPY mm.tickets (queue, players, created_at) FROM :'file';
VACUUM ANALYZE mm.tickets, mm.active_players, mm.matches, mm.match_players;
CHECKPOINT;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT mm.tick(NULL, :'now') AS tick_matches \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
SELECT count(*) AS stat_queues, count(*) FILTER (WHERE matches > 0) AS queues_with_matches,
       sum(tickets_loaded) AS loaded, sum(load_ms) AS load_ms, sum(compute_ms) AS compute_ms,
       sum(write_ms) AS write_ms
  FROM mm.last_tick_stats() \gset
INSERT INTO bench_core_runs VALUES ('queues', :run, 'tick_s', :t1 - :t0), ('queues', :run, 'matches', :tick_matches),
	('queues', :run, 'stat_queues', :stat_queues), ('queues', :run, 'queues_with_matches', :queues_with_matches),
	('queues', :run, 'loaded', :loaded), ('queues', :run, 'load_ms', :load_ms),
	('queues', :run, 'compute_ms', :compute_ms), ('queues', :run, 'write_ms', :write_ms);
SQL
		done
	} | q -d "$queues_db" -v now="$now" -v file="$dir/tickets_queues.tsv" 2> "$dir/queues.err"
	local warnings
	warnings=$(grep -c 'skipped queue' "$dir/queues.err" || true)
	if [ -s "$dir/queues.err" ]; then
		cat "$dir/queues.err" | head -20 >&2
		note "mm.tick(NULL) printed $(wc -l < "$dir/queues.err") lines on stderr, $warnings 'skipped queue' warnings: $(head -c 300 "$dir/queues.err" | tr '\n' ' ')"
	fi
	collect_runs "$queues_db" bench_core_runs
}

# ---------------------------------------------------------------------------
# 6: growth.  The same queue's tick at n_tickets and n_big searching tickets
# in one run, alternating (run 0 is not a warm-up here: every run counts).
# ---------------------------------------------------------------------------
figure_growth() {
	q -d "$main_db" -v now="$now" -v dir="$dir" -v n="$n_big" <<'SQL'
SET client_min_messages = warning;
CREATE FUNCTION pg_temp.ticket_rows(queue text, n int, now timestamptz, prefix text)
RETURNS TABLE (queue text, players jsonb, created_at timestamptz) LANGUAGE sql AS $$
	SELECT ticket_rows.queue,
	       jsonb_build_array(jsonb_build_object('id', prefix || g.i,
	         'attributes', jsonb_build_object('skill', g.skill),
	         'latencies', jsonb_build_object('eu', g.eu, 'us', g.us, 'asia', g.asia))),
	       g.created_at
	  FROM (SELECT i,
	               round(1000 + 400 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())) AS skill,
	               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS eu,
	               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS us,
	               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS asia,
	               ticket_rows.now - random() * interval '60 seconds' AS created_at
	          FROM generate_series(1, n) i) g
	 ORDER BY g.created_at, g.i
$$;
SELECT setseed(0.25) \gset dummy_
\set file :dir '/tickets_big.tsv'
COPY (SELECT * FROM pg_temp.ticket_rows('bench', :n, :'now', 'g')) TO :'file';
SQL
	local run size file
	for run in $(seq 1 "$growth_runs"); do
		for size in $(if [ $((run % 2)) = 1 ]; then echo "$n_tickets $n_big"; else echo "$n_big $n_tickets"; fi); do
			file=$dir/tickets_main.tsv
			[ "$size" = "$n_big" ] && file=$dir/tickets_big.tsv
			say "growth run $run: $size tickets"
			q -d "$main_db" -v now="$now" -v file="$file" -v run="$run" -v kind="$([ "$size" = "$n_big" ] && echo big || echo small)" <<'SQL'
SET client_min_messages = warning;
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE;
SELECT setval('mm.tickets_id_seq', 1, false), setval('mm.matches_id_seq', 1, false) \gset dummy_
COPY mm.tickets (queue, players, created_at) FROM :'file';
VACUUM ANALYZE mm.tickets, mm.active_players, mm.matches, mm.match_players;
CHECKPOINT;
-- where the time goes as the rows grow: WAL (full-page images), checkpoints
-- requested by the WAL volume, temporary files, buffers the backend wrote
SELECT pg_stat_force_next_flush() \gset dummy_
SELECT w.wal_bytes AS wal0, w.wal_fpi AS fpi0, b.checkpoints_req AS ckpt0, b.buffers_backend AS bw0,
       d.temp_bytes AS temp0
  FROM pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d WHERE d.datname = current_database() \gset
SELECT extract(epoch FROM clock_timestamp()) AS t0, bench_cpu_ms() AS c0 \gset
SELECT mm.tick('bench', :'now') AS tick_matches \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1, bench_cpu_ms() AS c1 \gset
SELECT pg_stat_force_next_flush() \gset dummy_
SELECT pg_stat_clear_snapshot() \gset dummy_
SELECT w.wal_bytes - :wal0 AS wal, w.wal_fpi - :fpi0 AS fpi, b.checkpoints_req - :ckpt0 AS ckpt,
       b.buffers_backend - :bw0 AS bw, d.temp_bytes - :temp0 AS temp
  FROM pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d WHERE d.datname = current_database() \gset
SELECT tickets_loaded, load_ms, compute_ms, write_ms, memory_bytes FROM mm.last_tick_stats() WHERE queue = 'bench' \gset
INSERT INTO bench_core_runs VALUES ('growth', :run, :'kind' || '_wal_mb', :wal / 1e6),
	('growth', :run, :'kind' || '_wal_fpi', :fpi), ('growth', :run, :'kind' || '_checkpoints_req', :ckpt),
	('growth', :run, :'kind' || '_backend_buffers_written', :bw), ('growth', :run, :'kind' || '_temp_mb', :temp / 1e6);
INSERT INTO bench_core_runs VALUES ('growth', :run, :'kind' || '_ms', (:t1 - :t0) * 1000),
	('growth', :run, :'kind' || '_cpu_ms', :c1 - :c0),
	('growth', :run, :'kind' || '_matches', :tick_matches), ('growth', :run, :'kind' || '_loaded', :tickets_loaded),
	('growth', :run, :'kind' || '_load_ms', :load_ms), ('growth', :run, :'kind' || '_compute_ms', :compute_ms),
	('growth', :run, :'kind' || '_write_ms', :write_ms),
	('growth', :run, :'kind' || '_bytes_per_ticket', :memory_bytes::float8 / :tickets_loaded);
SQL
		done
	done
	q -d "$main_db" -c "TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE"
}

# ---------------------------------------------------------------------------
# 7: this version's tick against the release's, same queue, same tickets.
# The release gets its own installation (its library has the same name) and
# cluster, with the settings of run.sh's.
# ---------------------------------------------------------------------------
release_stop() {
	local bindir=$1 data=$2
	[ -f "$data/postmaster.pid" ] && "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
}

# Builds the release (once per run: later sections reuse the installation
# and its database mm_bench with the queue "bench") and starts its cluster on
# the next port until the calling section ends.  Sets rbin, rdir, rport and
# rq (psql on the release's mm_bench).
release_up() {
	local system_bindir=/usr/lib/postgresql/15/bin
	rdir=$MM_WORKDIR/release
	rbin=$rdir/root$system_bindir
	rport=$((PGPORT + 1))
	[ -n "${MM_SRC:-}" ] || { say "release: MM_SRC (the git checkout) is not set"; return 1; }
	if [ ! -f "$rdir/built" ]; then
		rm -rf "$rdir"
		mkdir -p "$rdir/tree" "$rdir/root/usr/lib/postgresql" "$rdir/root/usr/share/postgresql" "$rdir/sock"
		say "release: building $release into $rdir"
		git -c safe.directory='*' -C "$MM_SRC" archive "$release" | tar -x -C "$rdir/tree"
		cp -a /usr/lib/postgresql/15 "$rdir/root/usr/lib/postgresql/"
		cp -a /usr/share/postgresql/15 "$rdir/root/usr/share/postgresql/"
		make -C "$rdir/tree" PG_CONFIG="$system_bindir/pg_config" -s -j2 all >/dev/null
		make -C "$rdir/tree" PG_CONFIG="$system_bindir/pg_config" -s install DESTDIR="$rdir/root" >/dev/null
		"$rbin/initdb" -D "$rdir/data" -U postgres -A trust --no-sync -E UTF8 --locale=C >/dev/null
		# the settings of this run's cluster (mm_cluster_start and run.sh), its
		# own port and socket, no pg_cron
		grep -v -e '^port' -e '^unix_socket_directories' -e '^shared_preload_libraries' -e '^cron\.' \
			"$MM_DATADIR/postgresql.conf" | sed -n '/^listen_addresses/,$p' >> "$rdir/data/postgresql.conf"
		printf "port = %s\nunix_socket_directories = '%s'\n" "$rport" "$rdir/sock" >> "$rdir/data/postgresql.conf"
	fi
	# shellcheck disable=SC2064 # the paths are known now
	trap "release_stop '$rbin' '$rdir/data'" EXIT
	"$rbin/pg_ctl" -D "$rdir/data" -l "$rdir/postgresql.log" -w -t 60 start >/dev/null
	rq() { PGHOST=$rdir/sock PGPORT=$rport q -d mm_bench "$@"; }
	if [ ! -f "$rdir/built" ]; then
		PGHOST=$rdir/sock PGPORT=$rport q -d postgres -c "CREATE DATABASE mm_bench"
		rq -c "CREATE EXTENSION matchmaking" -c "SELECT mm.create_queue('bench', '$bench_config')" >/dev/null
		# 7b: the release given the window indexes of this version's
		# mm.tickets_ended, which the metrics read (every queue pays them)
		PGHOST=$rdir/sock PGPORT=$rport q -d postgres -c "CREATE DATABASE mm_bench_windows"
		PGHOST=$rdir/sock PGPORT=$rport q -d mm_bench_windows \
			-c "CREATE EXTENSION matchmaking" -c "SELECT mm.create_queue('bench', '$bench_config')" \
			-c "CREATE INDEX tickets_ended_queue_created ON mm.tickets_ended (queue, created_at)" \
			-c "CREATE INDEX tickets_ended_queue_matched ON mm.tickets_ended (queue, matched_at) WHERE matched_at IS NOT NULL" \
			-c "CREATE INDEX tickets_ended_queue_gone ON mm.tickets_ended (queue, updated_at) WHERE status = ANY (ARRAY['cancelled', 'timed_out'])" \
			>/dev/null
		touch "$rdir/built"
	fi
	rq -c "$cpu_fn_sql"
	PGHOST=$rdir/sock PGPORT=$rport q -d mm_bench_windows -c "$cpu_fn_sql"
}

figure_release() {
	local v
	release_up
	say "release: $(rq -c "SELECT 'release ' || extversion FROM pg_extension WHERE extname = 'matchmaking'")"
	local run
	for run in $(seq 0 "$runs"); do
		for v in $(case $((run % 3)) in 0) echo current release windows ;; 1) echo release windows current ;;
		           *) echo windows current release ;; esac); do
			{
				cat <<'SQL'
SET client_min_messages = warning;
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE;
SELECT setval('mm.tickets_id_seq', 1, false), setval('mm.matches_id_seq', 1, false) \gset dummy_
COPY mm.tickets (queue, players, created_at) FROM :'file';
VACUUM ANALYZE mm.tickets, mm.active_players, mm.matches, mm.match_players;
CHECKPOINT;
SELECT extract(epoch FROM clock_timestamp()) AS t0, bench_cpu_ms() AS c0 \gset
SELECT mm.tick('bench', :'now') AS tick_matches \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1, bench_cpu_ms() AS c1 \gset
\o :out
SELECT :run, :'v' || '_ms', (:t1 - :t0) * 1000;
SELECT :run, :'v' || '_cpu_ms', :c1 - :c0;
SELECT :run, :'v' || '_matches', :tick_matches;
\o
SQL
			} > "$dir/release.sql"
			if [ "$v" = release ]; then
				rq -v now="$now" -v file="$dir/tickets_main.tsv" -v run="$run" -v v="$v" -v out="$dir/release.out" -F '	' -f "$dir/release.sql"
			elif [ "$v" = windows ]; then
				PGHOST=$rdir/sock PGPORT=$rport q -d mm_bench_windows -v now="$now" -v file="$dir/tickets_main.tsv" \
					-v run="$run" -v v="$v" -v out="$dir/release.out" -F '	' -f "$dir/release.sql"
			else
				q -d "$main_db" -v now="$now" -v file="$dir/tickets_main.tsv" -v run="$run" -v v="$v" -v out="$dir/release.out" -F '	' -f "$dir/release.sql"
			fi
			sed 's/^/release	/' "$dir/release.out" | q -d "$main_db" -c "COPY bench_core_runs FROM STDIN"
		done
	done
	q -d "$main_db" -c "TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE"
	release_stop "$rbin" "$rdir/data"
}

# ---------------------------------------------------------------------------
# 8: ingest (section "ingest", not run by default; builds the release as 7
# does, or reuses its build).  Autovacuum is off on both clusters meanwhile.
#   a. mm.create_ticket from 8 pgbench clients (-c 8 -j 2, the script of 4b)
#      in this version and in the release, and the plain INSERT of the same
#      rows into ingest_plain (an identity primary key and a unique index on
#      the player), MM_BENCH_CORE_PGBENCH_SECONDS each, the order rotating
#      per run, each after the same reset (truncate, VACUUM ANALYZE of the
#      empty tables, CHECKPOINT) and in new connections.
#   b. stale statistics: this version's create_ticket for
#      MM_BENCH_CORE_STALE_SECONDS (20) right after a COPY of
#      MM_BENCH_CORE_TICKETS tickets into tables that were never analyzed
#      (their statistics deleted, as in a new database: no ANALYZE, no
#      VACUUM) against the same after VACUUM ANALYZE (the steady rate),
#      alternating.
# ---------------------------------------------------------------------------
# prints the tps of one pgbench run (script $1, seconds $2, then pgbench's
# connection options); a failed transaction is noted
ingest_pgbench() {
	local script=$1 secs=$2 out tps failed
	shift 2
	out=$(pgbench -n -c 8 -j 2 -T "$secs" -f "$script" "$@" 2>"$dir/pgbench.err") || {
		cat "$dir/pgbench.err" >&2
		return 1
	}
	tps=$(printf '%s\n' "$out" | sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p')
	failed=$(printf '%s\n' "$out" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
	[ -n "$tps" ] || { printf '%s\n' "$out" >&2; return 1; }
	if [ -s "$dir/pgbench.err" ] || [ "${failed:-0}" != 0 ]; then
		note "ingest $(basename "$script") $*: ${failed:-?} failed transactions; $(head -c 300 "$dir/pgbench.err" | tr '\n' ' ')"
	fi
	echo "$tps"
}

ingest_record() {
	echo "INSERT INTO bench_core_runs VALUES ('ingest', :run, :'kind', :value);" |
		q -d "$main_db" -v run="$1" -v kind="$2" -v value="$3"
}

figure_ingest() {
	local run kind tps order stale_seconds=${MM_BENCH_CORE_STALE_SECONDS:-20}
	local reset_sql="SET client_min_messages = warning;
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE;
VACUUM ANALYZE mm.tickets, mm.active_players;
CHECKPOINT;"
	release_up
	say "ingest: against $(rq -c "SELECT 'release ' || extversion FROM pg_extension WHERE extname = 'matchmaking'")"
	q -d "$main_db" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS ingest_plain;
CREATE TABLE ingest_plain (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, queue text NOT NULL,
                           players jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE UNIQUE INDEX ingest_plain_player ON ingest_plain ((players -> 0 ->> 'id'));
SQL
	cat > "$dir/ingest_mm.pgbench" <<'EOF'
\set r random(1, 1000000000000)
\set skill random(0, 2000)
\set eu random(20, 150)
\set us random(20, 150)
\set asia random(20, 150)
SELECT mm.create_ticket('bench', jsonb_build_array(jsonb_build_object('id', 'c' || :client_id || '-' || :r, 'attributes', jsonb_build_object('skill', :skill), 'latencies', jsonb_build_object('eu', :eu, 'us', :us, 'asia', :asia))));
EOF
	# the same rows, written by a plain INSERT
	sed 's/^SELECT mm.create_ticket(.bench., \(.*\));$/INSERT INTO ingest_plain (queue, players) VALUES ('"'bench'"', \1);/' \
		"$dir/ingest_mm.pgbench" > "$dir/ingest_plain.pgbench"
	grep -q '^INSERT INTO ingest_plain' "$dir/ingest_plain.pgbench"
	q -d "$main_db" -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" >/dev/null
	rq -c "ALTER SYSTEM SET autovacuum = off" -c "SELECT pg_reload_conf()" >/dev/null

	for run in $(seq 0 "$runs"); do
		case $((run % 3)) in
			0) order="current release plain" ;;
			1) order="release plain current" ;;
			*) order="plain current release" ;;
		esac
		for kind in $order; do
			case $kind in
			release)
				printf '%s\n' "$reset_sql" | rq
				tps=$(ingest_pgbench "$dir/ingest_mm.pgbench" "$pgbench_seconds" -h "$rdir/sock" -p "$rport" mm_bench) ;;
			current)
				printf '%s\n' "$reset_sql" | q -d "$main_db"
				tps=$(ingest_pgbench "$dir/ingest_mm.pgbench" "$pgbench_seconds" "$main_db") ;;
			plain)
				q -d "$main_db" -c "TRUNCATE ingest_plain RESTART IDENTITY" -c "VACUUM ANALYZE ingest_plain" -c "CHECKPOINT"
				tps=$(ingest_pgbench "$dir/ingest_plain.pgbench" "$pgbench_seconds" "$main_db") ;;
			esac
			ingest_record "$run" "${kind}_tps" "$tps"
		done
		# every ticket this version wrote is searching and holds its player;
		# the run's ratios (its three rates measured back to back: the median
		# of the runs' ratios is steadier than the ratio of the medians when
		# the machine's load moves)
		q -d "$main_db" -v run="$run" <<'SQL'
INSERT INTO bench_core_runs
SELECT 'ingest', :run, k.kind || '_per_current', k.value / c.value
  FROM bench_core_runs k JOIN bench_core_runs c ON c.figure = k.figure AND c.run = k.run AND c.kind = 'current_tps'
 WHERE k.figure = 'ingest' AND k.run = :run AND k.kind IN ('release_tps', 'plain_tps');
SELECT count(*) AS n, count(*) FILTER (WHERE status = 'searching') AS s,
       (SELECT count(*) FROM mm.active_players) AS p FROM mm.tickets \gset
INSERT INTO bench_core_runs VALUES ('ingest', :run, 'current_tickets', :n), ('ingest', :run, 'current_searching', :s),
	('ingest', :run, 'current_active_players', :p);
SQL
	done

	for run in $(seq 1 "$runs"); do
		for kind in $(if [ $((run % 2)) = 1 ]; then echo stale steady; else echo steady stale; fi); do
			{
				cat <<'SQL'
SET client_min_messages = warning;
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests CASCADE;
-- as in a new database: the tables never analyzed
DELETE FROM pg_catalog.pg_statistic s USING pg_catalog.pg_class c
 WHERE s.starelid = c.oid AND c.relnamespace = 'mm'::regnamespace;
COPY mm.tickets (queue, players, created_at) FROM :'file';
SQL
				if [ "$kind" = steady ]; then echo "VACUUM ANALYZE mm.tickets, mm.active_players;"; fi
				echo "CHECKPOINT;"
			} | q -d "$main_db" -v file="$dir/tickets_main.tsv"
			tps=$(ingest_pgbench "$dir/ingest_mm.pgbench" "$stale_seconds" "$main_db")
			ingest_record "$run" "${kind}_tps" "$tps"
		done
		echo "INSERT INTO bench_core_runs SELECT 'ingest', :run, 'steady_per_stale', a.value / b.value
  FROM bench_core_runs a JOIN bench_core_runs b USING (figure, run)
 WHERE a.figure = 'ingest' AND a.run = :run AND a.kind = 'steady_tps' AND b.kind = 'stale_tps';" |
			q -d "$main_db" -v run="$run"
	done
	q -d "$main_db" -c "TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests, ingest_plain CASCADE" \
		-c "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" >/dev/null
	rq -c "ALTER SYSTEM RESET autovacuum" -c "SELECT pg_reload_conf()" >/dev/null
	release_stop "$rbin" "$rdir/data"
}

case $sections in *" tick "*) section "1, 4a, 5: tick vs floors at $n_tickets tickets, COPY enqueue" figure_tick ;; esac
case $sections in *" pgbench "*) section "4b: create_ticket from 8 pgbench clients" figure_pgbench ;; esac
case $sections in *" history "*) section "2: history" figure_history ;; esac
case $sections in *" queues "*) section "3: $n_queues small queues" figure_queues ;; esac
case $sections in *" growth "*) section "6: growth, $n_tickets vs $n_big tickets" figure_growth ;; esac
case $sections in *" release "*) section "7: this version's tick vs the release $release" figure_release ;; esac
case $sections in *" ingest "*) section "8: ticket creation vs the release $release, a plain INSERT, stale statistics" figure_ingest ;; esac

# drop the extra databases (the cluster is thrown away anyway)
PGOPTIONS="-c client_min_messages=warning" q -d postgres -c "DROP DATABASE IF EXISTS $hist_db" -c "DROP DATABASE IF EXISTS $queues_db" || true

# ---------------------------------------------------------------------------
# The report.
# ---------------------------------------------------------------------------
q -d "$main_db" -v runs="$runs" -v nt="$n_tickets" -v cpus="$(nproc 2>/dev/null || echo '?')" \
  -v load_start="$load_start" -v load_end="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')" -v nh="$n_history" -v nhs="$n_hist_searching" \
  -v nq="$n_queues" -v pgs="$pgbench_seconds" -v nbig="$n_big" -v release="$release" \
  -v stale="${MM_BENCH_CORE_STALE_SECONDS:-20}" <<'SQL'
-- medians of the recorded runs (run 0 is the warm-up)
CREATE TEMP VIEW med AS
SELECT figure, kind, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS v,
       min(value) AS lo, max(value) AS hi, count(*) AS n
  FROM bench_core_runs WHERE run > 0 GROUP BY figure, kind;
CREATE FUNCTION pg_temp.m(f text, k text) RETURNS float8 LANGUAGE sql AS
	$$ SELECT v FROM med WHERE figure = f AND kind = k $$;
-- growth: every run counts (no warm-up)
CREATE FUNCTION pg_temp.mg(k text) RETURNS float8 LANGUAGE sql AS
	$$ SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FROM bench_core_runs WHERE figure = 'growth' AND kind = k $$;
CREATE FUNCTION pg_temp.fmt(x float8, digits int DEFAULT 0) RETURNS text LANGUAGE sql AS
	$$ SELECT coalesce(to_char(round(x::numeric, digits),
	                           'FM999,999,999,990' || CASE WHEN digits > 0 THEN '.' || repeat('0', digits) ELSE '' END),
	                   'n/a') $$;
CREATE FUNCTION pg_temp.verdict(x float8, limit_ float8) RETURNS text LANGUAGE sql AS
	$$ SELECT CASE WHEN x IS NULL THEN 'no data' WHEN x <= limit_ THEN 'met' ELSE 'MISSED' END $$;

\echo
\echo '### Core benchmark (medians of' :runs 'runs after a warm-up; ratio = ours / baseline, so > 1 is slower or bigger)'
\echo
\echo '| figure | ours | baseline | ratio | target |'
\echo '| --- | ---: | ---: | ---: | --- |'
SELECT format('| %s | %s | %s | %s | %s |', figure, ours, baseline, ratio, target)
  FROM (VALUES
	(0.5, format('1. tick vs strict floor (no ended table), %s searching tickets, 5v5 (ms)', pg_temp.fmt(:nt)),
	 pg_temp.fmt(pg_temp.m('tick', 'tick_ms')), pg_temp.fmt(pg_temp.m('tick', 'strict_floor_ms')),
	 pg_temp.fmt(pg_temp.m('tick', 'tick_ms') / pg_temp.m('tick', 'strict_floor_ms'), 2),
	 '≤ 1.5: ' || pg_temp.verdict(pg_temp.m('tick', 'tick_ms') / pg_temp.m('tick', 'strict_floor_ms'), 1.5)),
	(1, format('1. tick vs ended-table floor, %s searching tickets, 5v5 (ms)', pg_temp.fmt(:nt)),
	 pg_temp.fmt(pg_temp.m('tick', 'tick_ms')), pg_temp.fmt(pg_temp.m('tick', 'floor_ms')),
	 pg_temp.fmt(pg_temp.m('tick', 'tick_ms') / pg_temp.m('tick', 'floor_ms'), 2),
	 '≤ 1.2: ' || pg_temp.verdict(pg_temp.m('tick', 'tick_ms') / pg_temp.m('tick', 'floor_ms'), 1.2)),
	(1.5, '1c. the same in the backend''s CPU time: tick vs strict floor; vs ended-table floor (ms)',
	 pg_temp.fmt(pg_temp.m('tick', 'tick_cpu_ms')),
	 format('%s; %s', pg_temp.fmt(pg_temp.m('tick', 'strict_floor_cpu_ms')), pg_temp.fmt(pg_temp.m('tick', 'floor_cpu_ms'))),
	 format('%s; %s', pg_temp.fmt(pg_temp.m('tick', 'tick_cpu_ms') / pg_temp.m('tick', 'strict_floor_cpu_ms'), 2),
	        pg_temp.fmt(pg_temp.m('tick', 'tick_cpu_ms') / pg_temp.m('tick', 'floor_cpu_ms'), 2)), '—'),
	(1.7, '1d. for reference: tick vs the ended-table floor whose ended table has the two (queue, time) indexes the metrics read (ms; CPU)',
	 format('%s; %s', pg_temp.fmt(pg_temp.m('tick', 'tick_ms')), pg_temp.fmt(pg_temp.m('tick', 'tick_cpu_ms'))),
	 format('%s; %s', pg_temp.fmt(pg_temp.m('tick', 'floor_metrics_ms')), pg_temp.fmt(pg_temp.m('tick', 'floor_metrics_cpu_ms'))),
	 format('%s; %s', pg_temp.fmt(pg_temp.m('tick', 'tick_ms') / pg_temp.m('tick', 'floor_metrics_ms'), 2),
	        pg_temp.fmt(pg_temp.m('tick', 'tick_cpu_ms') / pg_temp.m('tick', 'floor_metrics_cpu_ms'), 2)), '—'),
	(2, '1a. tick phases: load / compute / write (ms)',
	 format('%s / %s / %s', pg_temp.fmt(pg_temp.m('tick', 'load_ms'), 1), pg_temp.fmt(pg_temp.m('tick', 'compute_ms'), 1),
	        pg_temp.fmt(pg_temp.m('tick', 'write_ms'), 1)), '—', '—', '—'),
	(3, '1b. matches formed / tickets matched (floor writes the same rows)',
	 format('%s / %s', pg_temp.fmt(pg_temp.m('tick', 'matches')), pg_temp.fmt(pg_temp.m('tick', 'tickets_matched'))),
	 format('%s / %s', pg_temp.fmt(pg_temp.m('tick', 'matches')), pg_temp.fmt(pg_temp.m('tick', 'tickets_matched'))),
	 '—', '—'),
	(4, format('2. tick at %s tickets: %s ended tickets + %s matches in history vs empty (ms)',
	           pg_temp.fmt(:nhs), pg_temp.fmt(:nh), pg_temp.fmt(:nh / 10)),
	 pg_temp.fmt(pg_temp.m('history', 'history_ms'), 1), pg_temp.fmt(pg_temp.m('history', 'empty_ms'), 1),
	 pg_temp.fmt(pg_temp.m('history', 'history_ms') / pg_temp.m('history', 'empty_ms'), 2),
	 '≤ 1.2: ' || pg_temp.verdict(pg_temp.m('history', 'history_ms') / pg_temp.m('history', 'empty_ms'), 1.2)),
	(5, '2a. history vs empty, write phase (ms)',
	 pg_temp.fmt(pg_temp.m('history', 'history_write_ms'), 1), pg_temp.fmt(pg_temp.m('history', 'empty_write_ms'), 1),
	 pg_temp.fmt(pg_temp.m('history', 'history_write_ms') / pg_temp.m('history', 'empty_write_ms'), 2), '—'),
	(6, format('3. mm.tick() over %s queues × 20 tickets (s)', pg_temp.fmt(:nq)),
	 pg_temp.fmt(pg_temp.m('queues', 'tick_s'), 3), '—', '—',
	 '≤ 1 s: ' || pg_temp.verdict(pg_temp.m('queues', 'tick_s'), 1)),
	(7, '3a. per queue (ms); matches formed',
	 format('%s; %s', pg_temp.fmt(pg_temp.m('queues', 'tick_s') * 1000 / :nq, 2), pg_temp.fmt(pg_temp.m('queues', 'matches'))),
	 '—', '—', '—'),
	(8, format('4a. COPY %s tickets: mm.tickets vs plain table (ms)', pg_temp.fmt(:nt)),
	 pg_temp.fmt(pg_temp.m('copy', 'mm_ms')), pg_temp.fmt(pg_temp.m('copy', 'plain_ms')),
	 pg_temp.fmt(pg_temp.m('copy', 'mm_ms') / pg_temp.m('copy', 'plain_ms'), 2),
	 '≤ 1.5: ' || pg_temp.verdict(pg_temp.m('copy', 'mm_ms') / pg_temp.m('copy', 'plain_ms'), 1.5)),
	(9.5, format('4c. COPY %s tickets straight into mm.tickets_active (no statement trigger: no validation, no player claim) vs plain table (ms)', pg_temp.fmt(:nt)),
	 pg_temp.fmt(pg_temp.m('copy', 'partition_ms')), pg_temp.fmt(pg_temp.m('copy', 'plain_ms')),
	 pg_temp.fmt(pg_temp.m('copy', 'partition_ms') / pg_temp.m('copy', 'plain_ms'), 2), '—'),
	(9, format('4b. mm.create_ticket, 8 clients, %s s (tickets/s; baseline: plain INSERT)', :pgs),
	 pg_temp.fmt(pg_temp.m('pgbench', 'mm_tps')), pg_temp.fmt(pg_temp.m('pgbench', 'plain_tps')),
	 pg_temp.fmt(pg_temp.m('pgbench', 'plain_tps') / pg_temp.m('pgbench', 'mm_tps'), 2), '—'),
	(10, format('5. tick memory per ticket at %s (B; baseline: jsonb of the players)', pg_temp.fmt(:nt)),
	 pg_temp.fmt(pg_temp.m('tick', 'memory_bytes') / pg_temp.m('tick', 'tickets_loaded')),
	 pg_temp.fmt(pg_temp.m('tick', 'jsonb_bytes')),
	 pg_temp.fmt(pg_temp.m('tick', 'memory_bytes') / pg_temp.m('tick', 'tickets_loaded') / pg_temp.m('tick', 'jsonb_bytes'), 2),
	 '≤ 900 B: ' || pg_temp.verdict(pg_temp.m('tick', 'memory_bytes') / pg_temp.m('tick', 'tickets_loaded'), 900))
	,
	(11, format('6. growth: tick at %s vs %s searching tickets (ms; every run counts)', pg_temp.fmt(:nbig), pg_temp.fmt(:nt)),
	 pg_temp.fmt(pg_temp.mg('big_ms')), pg_temp.fmt(pg_temp.mg('small_ms')),
	 pg_temp.fmt(pg_temp.mg('big_ms') / pg_temp.mg('small_ms'), 2),
	 '≤ 11: ' || pg_temp.verdict(pg_temp.mg('big_ms') / pg_temp.mg('small_ms'), 11)),
	(11.5, '6c. the same in the backend''s CPU time (ms)',
	 pg_temp.fmt(pg_temp.mg('big_cpu_ms')), pg_temp.fmt(pg_temp.mg('small_cpu_ms')),
	 pg_temp.fmt(pg_temp.mg('big_cpu_ms') / pg_temp.mg('small_cpu_ms'), 2), '—'),
	(12, '6a. growth: phases load / compute / write (ms), big vs small',
	 format('%s / %s / %s', pg_temp.fmt(pg_temp.mg('big_load_ms')), pg_temp.fmt(pg_temp.mg('big_compute_ms')),
	        pg_temp.fmt(pg_temp.mg('big_write_ms'))),
	 format('%s / %s / %s', pg_temp.fmt(pg_temp.mg('small_load_ms')), pg_temp.fmt(pg_temp.mg('small_compute_ms')),
	        pg_temp.fmt(pg_temp.mg('small_write_ms'))), '—', '—'),
	(13, format('6b. growth: tick memory per ticket at %s (B)', pg_temp.fmt(:nbig)),
	 pg_temp.fmt(pg_temp.mg('big_bytes_per_ticket')), '—', '—',
	 '≤ 900 B: ' || pg_temp.verdict(pg_temp.mg('big_bytes_per_ticket'), 900))
	,
	(14, format('7. tick of a queue using none of the 0.4 features, %s tickets: this version vs the release %s (ms)',
	            pg_temp.fmt(:nt), :'release'),
	 pg_temp.fmt(pg_temp.m('release', 'current_ms')), pg_temp.fmt(pg_temp.m('release', 'release_ms')),
	 pg_temp.fmt(pg_temp.m('release', 'current_ms') / pg_temp.m('release', 'release_ms'), 2),
	 '≤ 1.05: ' || pg_temp.verdict(pg_temp.m('release', 'current_ms') / pg_temp.m('release', 'release_ms'), 1.05))
	,
	(14.5, '7a. the same in the backend''s CPU time (ms)',
	 pg_temp.fmt(pg_temp.m('release', 'current_cpu_ms')), pg_temp.fmt(pg_temp.m('release', 'release_cpu_ms')),
	 pg_temp.fmt(pg_temp.m('release', 'current_cpu_ms') / pg_temp.m('release', 'release_cpu_ms'), 2), '—'),
	(14.6, '7b. the same against the release given the three (queue, time) indexes of this version''s mm.tickets_ended, which the metrics read for every queue (ms; CPU ms)',
	 format('%s; %s', pg_temp.fmt(pg_temp.m('release', 'current_ms')), pg_temp.fmt(pg_temp.m('release', 'current_cpu_ms'))),
	 format('%s; %s', pg_temp.fmt(pg_temp.m('release', 'windows_ms')), pg_temp.fmt(pg_temp.m('release', 'windows_cpu_ms'))),
	 format('%s; %s', pg_temp.fmt(pg_temp.m('release', 'current_ms') / pg_temp.m('release', 'windows_ms'), 2),
	        pg_temp.fmt(pg_temp.m('release', 'current_cpu_ms') / pg_temp.m('release', 'windows_cpu_ms'), 2)), '—'),
	(15, format('8. mm.create_ticket, 8 clients, %s s: this version vs the release %s (tickets/s; ratio: release / this, the median of the runs'' ratios)', :pgs, :'release'),
	 pg_temp.fmt(pg_temp.m('ingest', 'current_tps')), pg_temp.fmt(pg_temp.m('ingest', 'release_tps')),
	 pg_temp.fmt(pg_temp.m('ingest', 'release_tps_per_current'), 2),
	 '≤ 1.0: ' || pg_temp.verdict(pg_temp.m('ingest', 'release_tps_per_current'), 1.0)),
	(16, format('8a. mm.create_ticket vs a plain INSERT (primary key, unique player), 8 clients, %s s (tickets/s; ratio: plain / this, the median of the runs'' ratios)', :pgs),
	 pg_temp.fmt(pg_temp.m('ingest', 'current_tps')), pg_temp.fmt(pg_temp.m('ingest', 'plain_tps')),
	 pg_temp.fmt(pg_temp.m('ingest', 'plain_tps_per_current'), 2),
	 '≤ 2.5: ' || pg_temp.verdict(pg_temp.m('ingest', 'plain_tps_per_current'), 2.5)),
	(17, format('8b. mm.create_ticket, 8 clients, the first %s s after a COPY of %s tickets: never analyzed vs after VACUUM ANALYZE (tickets/s; ratio: steady / stale, the median of the runs'' ratios)',
	            :stale, pg_temp.fmt(:nt)),
	 pg_temp.fmt(pg_temp.m('ingest', 'stale_tps')), pg_temp.fmt(pg_temp.m('ingest', 'steady_tps')),
	 pg_temp.fmt(pg_temp.m('ingest', 'steady_per_stale'), 2),
	 '≤ 1.11 (stale ≥ 0.9 × steady): ' || pg_temp.verdict(pg_temp.m('ingest', 'steady_per_stale'), 1 / 0.9))
  ) t(ord, figure, ours, baseline, ratio, target)
 ORDER BY ord;

\echo
\echo 'The floor of 1 is physical: the same rows written to plain tables with only their primary keys,'
\echo 'no triggers, no events, no search: what any matchmaker storing these rows must write.'
\echo 'Ratio of 4b: plain INSERTs per second / create_ticket calls per second.'
\echo 'Machine:' :cpus 'CPUs, load average (1, 5, 15 min)' :load_start 'at the start,' :load_end 'at the end.'
\echo
\echo '#### Every run (run 0 = warm-up, not in the medians)'
\echo
\echo '| figure | value | runs |'
\echo '| --- | --- | --- |'
SELECT format('| %s | %s | %s |', figure, kind,
              string_agg(run || ': ' || CASE WHEN abs(value) >= 100 OR value = round(value) THEN round(value::numeric)::text
                                             ELSE round(value::numeric, 3)::text END, ', ' ORDER BY run))
  FROM bench_core_runs GROUP BY figure, kind ORDER BY figure, kind;

-- checks: anything that looked wrong
\echo
SELECT 'check: ' || msg FROM (
	SELECT 'floor did not write the tick''s rows in run ' || run AS msg FROM bench_core_runs
	 WHERE figure = 'tick' AND kind = 'floor_rows_ok' AND value <> 1
	UNION ALL
	SELECT 'strict floor did not write the tick''s rows in run ' || run FROM bench_core_runs
	 WHERE figure = 'tick' AND kind = 'strict_rows_ok' AND value <> 1
	UNION ALL
	SELECT 'the floor with the metrics'' indexes did not write the tick''s rows in run ' || run FROM bench_core_runs
	 WHERE figure = 'tick' AND kind = 'floor_metrics_rows_ok' AND value <> 1
	UNION ALL
	SELECT format('run %s: %s players searching or in a match but %s held', a.run, a.value, b.value)
	  FROM bench_core_runs a JOIN bench_core_runs b USING (figure, run)
	 WHERE a.figure = 'tick' AND a.kind = 'left_held' AND b.kind = 'left_active_players' AND a.value <> b.value
	UNION ALL
	SELECT format('run %s: tick loaded %s of %s searching tickets', a.run, a.value, b.value)
	  FROM bench_core_runs a JOIN bench_core_runs b USING (figure, run)
	 WHERE a.figure = 'tick' AND a.kind = 'tickets_loaded' AND b.kind = 'searching' AND a.value <> b.value
	UNION ALL
	SELECT format('release run %s: %s matches in this version, %s in the release', a.run, a.value, b.value)
	  FROM bench_core_runs a JOIN bench_core_runs b USING (figure, run)
	 WHERE a.figure = 'release' AND a.kind = 'current_matches' AND b.kind = 'release_matches' AND a.value <> b.value
	UNION ALL
	SELECT format('history run %s: %s matches with history, %s without', a.run, a.value, b.value)
	  FROM bench_core_runs a JOIN bench_core_runs b USING (figure, run)
	 WHERE a.figure = 'history' AND a.kind = 'history_matches' AND b.kind = 'empty_matches' AND a.value <> b.value
	UNION ALL
	SELECT format('pgbench run %s: %s of %s tickets searching', a.run, b.value, a.value)
	  FROM bench_core_runs a JOIN bench_core_runs b USING (figure, run)
	 WHERE a.figure = 'pgbench' AND a.kind = 'mm_tickets' AND b.kind = 'mm_searching' AND a.value <> b.value
	UNION ALL
	SELECT format('ingest run %s: %s of %s tickets searching, %s active players', a.run, b.value, a.value, c.value)
	  FROM bench_core_runs a JOIN bench_core_runs b USING (figure, run) JOIN bench_core_runs c USING (figure, run)
	 WHERE a.figure = 'ingest' AND a.kind = 'current_tickets' AND b.kind = 'current_searching'
	   AND c.kind = 'current_active_players' AND (a.value <> b.value OR a.value <> c.value)
	UNION ALL
	SELECT format('pgbench run %s: %s tickets but %s active players', a.run, a.value, b.value)
	  FROM bench_core_runs a JOIN bench_core_runs b USING (figure, run)
	 WHERE a.figure = 'pgbench' AND a.kind = 'mm_tickets' AND b.kind = 'mm_active_players' AND a.value <> b.value
	UNION ALL
	SELECT format('queues run %s: stats for %s queues, %s expected', run, value, :nq)
	  FROM bench_core_runs WHERE figure = 'queues' AND kind = 'stat_queues' AND value <> :nq
	UNION ALL
	SELECT note FROM bench_core_notes) c;
SQL

if [ -n "$failures" ]; then
	say "sections that failed:$failures"
	exit 1
fi
