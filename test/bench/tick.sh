#!/usr/bin/env bash
# Benchmark of mm.tick on a 5v5 queue (difference on skill with linear
# expansion, latency on three regions) with 1k, 10k and 100k searching
# tickets (skill N(1000, 400), latencies N(70, 20), ages 0..119 s).
#
# Per size, in one backend, alternately (VACUUM between runs, every run in a
# transaction that is rolled back so each run sees the same tickets):
#   - the tick: SELECT mm.tick('bench_5v5', now);
#   - the floor: plain SQL that reads the same searching tickets with their
#     players FOR UPDATE SKIP LOCKED (oldest first, as the tick does) and
#     writes as many match, match-player and ticket rows as the tick did.
# Reports the median time of each, tick/floor, tickets matched per second,
# the tick's phases (load, compute without SPI I/O, write) and the peak of its
# memory context from mm.last_tick_stats(), and, measured from outside in a
# fresh backend, the growth of the backend's private resident memory during
# the tick (VmHWM from /proc/self/status after resetting it through
# /proc/self/clear_refs, minus shared and file-backed pages and the private
# memory before; a lower bound of the private peak), and the same for the
# floor.
#
# Run by: bash test/bench/run.sh tick   (env: PGHOST/PGPORT/PGDATABASE set by run.sh)
#   MM_BENCH_TICK_SIZES="1000 10000" to choose sizes, MM_BENCH_TICK_RUNS=3 runs per size.
set -euo pipefail

sizes=${MM_BENCH_TICK_SIZES:-"1000 10000 100000"}
runs=${MM_BENCH_TICK_RUNS:-3}
queue=bench_5v5
now="2026-01-01 00:10:00+00"

q() { psql -X -v ON_ERROR_STOP=1 -q -At "$@"; }

q <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench_tick_runs;
CREATE TABLE bench_tick_runs (size int, run int, kind text, ms float8, matches int,
	tickets_matched int, players_matched int, compute_ms float8,
	load_ms float8, write_ms float8, context_bytes bigint, tickets_loaded int);
DROP TABLE IF EXISTS bench_tick_enqueue;
DROP TABLE IF EXISTS bench_tick_memory;
CREATE TABLE bench_tick_memory (size int, kind text, anon_growth_kb bigint, context_bytes bigint);
CREATE TABLE bench_tick_enqueue (size int, ms float8);
-- The backend's memory figures (kB) from /proc/self/status.
CREATE OR REPLACE FUNCTION bench_proc_kb(field text) RETURNS bigint LANGUAGE sql AS $$
	SELECT (regexp_match(pg_read_file('/proc/self/status'), field || ':\s+(\d+) kB'))[1]::bigint
$$;
-- Resets the backend's peak resident size (VmHWM) to its current size.
CREATE OR REPLACE FUNCTION bench_reset_peak() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	COPY (SELECT 5) TO '/proc/self/clear_refs';
END
$$;
SQL

floor_sql=$(cat <<'SQL'
-- the floor, as one statement: read the searching tickets (id, created_at,
-- players, as the tick's load does) FOR UPDATE SKIP LOCKED oldest first;
-- write :m matches and the match-player and ticket rows of the :t oldest
-- tickets, ten by ten (psql variables :queue, :now, :m, :t)
PREPARE floor AS
WITH picked AS MATERIALIZED (
	SELECT t.id, t.players, pg_catalog.row_number() OVER (ORDER BY t.created_at, t.id) - 1 AS rn
	  FROM (SELECT t.id, t.created_at, t.players
	          FROM mm.tickets t
	         WHERE t.queue = :'queue' AND t.status = 'searching'
	         ORDER BY t.created_at, t.id
	           FOR UPDATE SKIP LOCKED) t),
matched AS MATERIALIZED (SELECT * FROM picked WHERE rn < :t),
new_matches AS (
	INSERT INTO mm.matches (queue, status, created_at, updated_at, region, quality, rule_steps)
	SELECT :'queue', 'ready', timestamptz :'now', timestamptz :'now', 'eu', 0.5,
	       '{"skill": {"step": 0, "threshold": 50}, "ping": {"step": 0, "threshold": 100}}'
	  FROM generate_series(1, :m)
	RETURNING id),
numbered AS (SELECT id, pg_catalog.row_number() OVER (ORDER BY id) - 1 AS k FROM new_matches),
new_players AS (
	INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team)
	SELECT n.id, :'queue', p.value ->> 'id', m.id, CASE WHEN m.rn % 10 < 5 THEN 'red' ELSE 'blue' END
	  FROM matched m JOIN numbered n ON n.k = m.rn / 10,
	       jsonb_array_elements(m.players) p
	RETURNING 1),
updated AS (
	UPDATE mm.tickets t SET status = 'matched', match_id = n.id, matched_at = timestamptz :'now',
	       updated_at = timestamptz :'now'
	  FROM matched m JOIN numbered n ON n.k = m.rn / 10
	 WHERE t.id = m.id
	RETURNING 1)
SELECT (SELECT count(*) FROM new_players) AS floor_players, (SELECT count(*) FROM updated) AS floor_tickets;
SQL
)

for size in $sizes; do
	echo "== $size searching tickets" >&2
	# fresh queue and tickets, enqueued in bulk through INSERT INTO mm.tickets
	q -v size="$size" -v queue="$queue" -v now="$now" <<'SQL'
-- (the old tickets go without a cancel event each: DELETE, then drop the queue)
DELETE FROM mm.tickets WHERE queue = :'queue';
SELECT count(mm.drop_queue(name)) FROM mm.queues WHERE name = :'queue' \gset
DELETE FROM mm.players WHERE id LIKE 'bench-%';
SELECT mm.create_queue(:'queue', '{
  "match_size": {"min": 10, "max": 10},
  "teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}],
  "rules": [
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 50,
     "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
    {"name": "ping", "type": "latency", "max_ms": 100,
     "expansion": {"every_seconds": 20, "steps": [120, 150]}}]}') \gset
SELECT setseed(0.5) \gset
CREATE TEMP TABLE gen AS
SELECT n,
       round(1000 + 400 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())) AS skill,
       greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS eu,
       greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS us,
       greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS asia
  FROM generate_series(1, :size) n ORDER BY n;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
INSERT INTO mm.tickets (queue, players, created_at)
SELECT :'queue',
       jsonb_build_array(jsonb_build_object('id', 'bench-' || n,
         'attributes', jsonb_build_object('skill', skill),
         'latencies', jsonb_build_object('eu', eu, 'us', us, 'asia', asia))),
       timestamptz :'now' - (n % 120) * interval '1 second'
  FROM gen ORDER BY n;
INSERT INTO bench_tick_enqueue VALUES (:size, (extract(epoch FROM clock_timestamp()) - :t0) * 1000);
SQL
	q -c "VACUUM ANALYZE mm.tickets, mm.active_players, mm.matches, mm.match_players"

	# one backend for the warm-up and every run of this size (the script is
	# built here because psql has no loops)
	{
		cat <<'SQL'
-- warm-up (caches, plans) and the counts the floor must write
BEGIN;
SELECT mm.tick(:'queue', :'now') AS m \gset
SELECT count(*) AS p, count(DISTINCT ticket_id) AS t FROM mm.match_players WHERE queue = :'queue' \gset
ROLLBACK;

SQL
		printf '%s\n' "$floor_sql"
		for run in $(seq 1 "$runs"); do
			cat <<SQL
\set run $run
SQL
			cat <<'SQL'
VACUUM mm.tickets, mm.active_players, mm.matches, mm.match_players;
BEGIN;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
EXECUTE floor \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
ROLLBACK;
INSERT INTO bench_tick_runs VALUES (:size, :run, 'floor', (:t1 - :t0) * 1000, :m, :floor_tickets, :floor_players, NULL, NULL, NULL, NULL, NULL);
VACUUM mm.tickets, mm.active_players, mm.matches, mm.match_players;
BEGIN;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT mm.tick(:'queue', :'now') AS tick_matches \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
SELECT count(*) AS tick_players, count(DISTINCT ticket_id) AS tick_tickets FROM mm.match_players WHERE queue = :'queue' \gset
SELECT load_ms, compute_ms, write_ms, memory_bytes, tickets_loaded FROM mm.last_tick_stats() WHERE queue = :'queue' \gset
ROLLBACK;
INSERT INTO bench_tick_runs VALUES (:size, :run, 'tick', (:t1 - :t0) * 1000, :tick_matches, :tick_tickets, :tick_players, :compute_ms, :load_ms, :write_ms, :memory_bytes, :tickets_loaded);
SQL
		done
	} | q -v size="$size" -v queue="$queue" -v now="$now"

	# memory, in a fresh backend: the read touches the shared buffers first,
	# then the peak resident size is reset and the tick runs; its private
	# growth is at least VmHWM - shared - file-backed - private before
	q -v size="$size" -v queue="$queue" -v now="$now" <<'SQL'
SELECT count(*) FROM (SELECT id FROM mm.tickets WHERE queue = :'queue' AND status = 'searching'
                       ORDER BY created_at, id) t \gset
SELECT bench_proc_kb('RssAnon') AS anon0, bench_reset_peak() \gset
BEGIN;
SELECT mm.tick(:'queue', :'now') \gset
SELECT bench_proc_kb('VmHWM') AS hwm, bench_proc_kb('RssShmem') AS shmem, bench_proc_kb('RssFile') AS file \gset
SELECT memory_bytes FROM mm.last_tick_stats() WHERE queue = :'queue' \gset
ROLLBACK;
INSERT INTO bench_tick_memory VALUES (:size, 'tick', :hwm - :shmem - :file - :anon0, :memory_bytes);
SQL
	# the same for the floor, for comparison
	{
		cat <<'SQL'
SELECT max(matches) AS m, max(tickets_matched) AS t FROM bench_tick_runs WHERE size = :size AND kind = 'tick' \gset
SQL
		printf '%s\n' "$floor_sql"
		cat <<'SQL'
SELECT count(*) FROM (SELECT id FROM mm.tickets WHERE queue = :'queue' AND status = 'searching'
                       ORDER BY created_at, id) t \gset
SELECT bench_proc_kb('RssAnon') AS anon0, bench_reset_peak() \gset
BEGIN;
EXECUTE floor \gset
SELECT bench_proc_kb('VmHWM') AS hwm, bench_proc_kb('RssShmem') AS shmem, bench_proc_kb('RssFile') AS file \gset
ROLLBACK;
INSERT INTO bench_tick_memory VALUES (:size, 'floor', :hwm - :shmem - :file - :anon0, NULL);
SQL
	} | q -v size="$size" -v queue="$queue" -v now="$now"
done

# the report: medians per size
q <<'SQL'
\pset tuples_only off
\pset format aligned
\pset footer off
SELECT e.size AS tickets,
       round(e.ms::numeric) AS enqueue_ms,
       k.matches,
       k.tickets_matched,
       round(k.ms::numeric, 1) AS tick_ms,
       round(f.ms::numeric, 1) AS floor_ms,
       round((k.ms / f.ms)::numeric, 2) AS tick_over_floor,
       round((k.tickets_matched / (k.ms / 1000))::numeric) AS matched_per_s,
       round(k.load_ms::numeric, 1) AS load_ms,
       round(k.compute_ms::numeric, 1) AS compute_ms,
       round(k.write_ms::numeric, 1) AS write_ms,
       round(k.context_bytes / 1024.0) AS context_peak_kb,
       round((k.context_bytes::numeric / e.size)) AS context_bytes_per_ticket,
       mem.anon_growth_kb AS rss_growth_kb,
       round((mem.anon_growth_kb * 1024.0 / e.size)::numeric) AS rss_bytes_per_ticket,
       fmem.anon_growth_kb AS floor_rss_growth_kb
  FROM bench_tick_enqueue e
  JOIN LATERAL (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) AS ms,
                       max(matches) AS matches, max(tickets_matched) AS tickets_matched,
                       percentile_disc(0.5) WITHIN GROUP (ORDER BY load_ms) AS load_ms,
                       percentile_disc(0.5) WITHIN GROUP (ORDER BY compute_ms) AS compute_ms,
                       percentile_disc(0.5) WITHIN GROUP (ORDER BY write_ms) AS write_ms,
                       max(context_bytes) AS context_bytes
                  FROM bench_tick_runs r WHERE r.size = e.size AND r.kind = 'tick') k ON true
  JOIN LATERAL (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) AS ms
                  FROM bench_tick_runs r WHERE r.size = e.size AND r.kind = 'floor') f ON true
  LEFT JOIN bench_tick_memory mem ON mem.size = e.size AND mem.kind = 'tick'
  LEFT JOIN bench_tick_memory fmem ON fmem.size = e.size AND fmem.kind = 'floor'
 ORDER BY e.size;
-- every run
SELECT size, run, kind, round(ms::numeric, 1) AS ms, matches, tickets_matched, players_matched,
       tickets_loaded, round(load_ms::numeric, 1) AS load_ms, round(compute_ms::numeric, 1) AS compute_ms,
       round(write_ms::numeric, 1) AS write_ms, context_bytes
  FROM bench_tick_runs ORDER BY size, run, kind;
SQL
