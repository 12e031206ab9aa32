#!/usr/bin/env bash
# Role queues (issue 20): a 5v5 role queue against the same queue without
# roles, in one run on one cluster.  Every figure is a median of
# MM_BENCH_ROLES_RUNS runs (default 5) after one unrecorded warm-up; within a
# run the scenarios take turns (their order rotates from run to run), so load
# from elsewhere hits them alike.
#
# Two queues with the same rules (core.sh's: difference on skill, max 100,
# +50 every 10 s up to 400; latency 150 ms on eu/us/asia), 5v5:
#   bench_plain  no roles (the baseline);
#   bench_roles  each team {"tank": 1, "healer": 1, "dps": 3}; no autofill.
# 100,000 solo tickets created over the 60 s before `now`, loaded by COPY
# (as in core.sh).  The players are the same in every scenario (the same
# ids, skills, latencies and creation times, in the same order); the rows
# differ only in the queue's name (of the same length) and in "roles":
#   plain   bench_plain, no "roles";
#   fill    bench_roles, every player "roles": ["fill"] (accepts any role);
#   nolist  bench_roles, no "roles" (also any role: the rows are plain's);
#   mix     bench_roles, a realistic mix: first choice tank 20 %, healer 15 %,
#           dps 65 %; 70 % name a second role (one of the other two, even
#           odds), 10 % name a second role and then "fill", 20 % name one
#           role only.
# Measured per scenario: SELECT mm.tick(queue, now) in its own transaction
# (the tick's phases from mm.last_tick_stats(); and the backend's user +
# system CPU time over the tick, from /proc, which the load of other
# processes on the machine moves less than the wall clock), the matches
# formed, and for
# mix the share of matched players on their first choice, their second and
# through "fill".  Checked: each team of a role match holds 1 tank, 1 healer
# and 3 dps, nobody plays a role outside their list, no player is in two
# matches.
#
# Run by: bash test/bench/run.sh roles   (PGHOST/PGPORT/PGDATABASE set by run.sh)
# Settings: MM_BENCH_ROLES_RUNS (5), MM_BENCH_ROLES_TICKETS (100000).
set -euo pipefail

runs=${MM_BENCH_ROLES_RUNS:-5}
n_tickets=${MM_BENCH_ROLES_TICKETS:-100000}
now="2026-01-01 00:10:00+00"
scenarios=(plain fill nolist mix)

dir=$(mktemp -d /tmp/mm_bench_roles.XXXXXX)
chmod 755 "$dir"
trap 'rm -rf "$dir"' EXIT

q() { psql -X -v ON_ERROR_STOP=1 -q -At "$@"; }
say() { printf '==> roles: %s\n' "$*" >&2; }

rules='"rules": [
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
     "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
    {"name": "ping", "type": "latency", "max_ms": 150}]'
plain_config="{\"match_size\": {\"min\": 10, \"max\": 10},
  \"teams\": [{\"name\": \"red\", \"min\": 5, \"max\": 5}, {\"name\": \"blue\", \"min\": 5, \"max\": 5}],
  $rules}"
roles_config="{\"match_size\": {\"min\": 10, \"max\": 10},
  \"teams\": [{\"name\": \"red\", \"min\": 5, \"max\": 5, \"roles\": {\"tank\": 1, \"healer\": 1, \"dps\": 3}},
            {\"name\": \"blue\", \"min\": 5, \"max\": 5, \"roles\": {\"tank\": 1, \"healer\": 1, \"dps\": 3}}],
  $rules}"

say "set-up: $n_tickets players, four ticket files"
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
q -v now="$now" -v dir="$dir" -v n="$n_tickets" -v plain_config="$plain_config" \
  -v roles_config="$roles_config" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench_roles_runs, bench_roles_players;
CREATE TABLE bench_roles_runs (scenario text, run int, kind text, value float8);
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results, mm.backfill_requests;
SELECT count(mm.drop_queue(name)) FROM mm.queues WHERE name IN ('bench_plain', 'bench_roles') \gset dummy_
SELECT mm.create_queue('bench_plain', :'plain_config') \gset dummy_
SELECT mm.create_queue('bench_roles', :'roles_config') \gset dummy_

-- the players, the same in every scenario: skill N(1000, 400), latencies
-- N(70, 20), created over the 60 s before :now; and the mix's preferences
SELECT setseed(0.5) \gset dummy_
CREATE TABLE bench_roles_players AS
SELECT i, 'p' || i AS player_id, skill, eu, us, asia, created_at,
       CASE WHEN r1 < 0.20 THEN 'tank' WHEN r1 < 0.35 THEN 'healer' ELSE 'dps' END AS first,
       r2, r3
  FROM (SELECT i,
               round(1000 + 400 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())) AS skill,
               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS eu,
               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS us,
               greatest(1, round(70 + 20 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))) AS asia,
               timestamptz :'now' - random() * interval '60 seconds' AS created_at,
               random() AS r1, random() AS r2, random() AS r3
          FROM generate_series(1, :n) i) g;
-- the mix: a second role for 80 % (one of the other two, even odds), then
-- "fill" for 10 %
ALTER TABLE bench_roles_players ADD prefs jsonb;
UPDATE bench_roles_players p SET prefs = to_jsonb(
	ARRAY[first] || CASE WHEN r2 < 0.8 THEN ARRAY[(SELECT r FROM unnest(ARRAY['tank', 'healer', 'dps']) r
	                                               WHERE r <> first ORDER BY r <> 'dps', r
	                                               OFFSET (r3 < 0.5)::int LIMIT 1)]
	                    ELSE '{}'::text[] END
	             || CASE WHEN r2 >= 0.7 AND r2 < 0.8 THEN ARRAY['fill'] ELSE '{}'::text[] END);
ALTER TABLE bench_roles_players ADD PRIMARY KEY (player_id);
ANALYZE bench_roles_players;

-- one file per scenario: the same players in the same order
CREATE FUNCTION pg_temp.ticket_file(queue text, roles text)
RETURNS TABLE (queue text, players jsonb, created_at timestamptz) LANGUAGE sql AS $$
	SELECT ticket_file.queue,
	       jsonb_build_array(jsonb_build_object('id', p.player_id,
	         'attributes', jsonb_build_object('skill', p.skill),
	         'latencies', jsonb_build_object('eu', p.eu, 'us', p.us, 'asia', p.asia))
	         || CASE roles WHEN 'fill' THEN '{"roles": ["fill"]}'::jsonb
	                       WHEN 'mix' THEN jsonb_build_object('roles', p.prefs)
	                       ELSE '{}'::jsonb END),
	       p.created_at
	  FROM bench_roles_players p
	 ORDER BY p.created_at, p.i
$$;
\set file :dir '/plain.tsv'
COPY (SELECT * FROM pg_temp.ticket_file('bench_plain', 'none')) TO :'file';
\set file :dir '/fill.tsv'
COPY (SELECT * FROM pg_temp.ticket_file('bench_roles', 'fill')) TO :'file';
\set file :dir '/nolist.tsv'
COPY (SELECT * FROM pg_temp.ticket_file('bench_roles', 'none')) TO :'file';
\set file :dir '/mix.tsv'
COPY (SELECT * FROM pg_temp.ticket_file('bench_roles', 'mix')) TO :'file';
SELECT format('mix: first choice tank %s %%, healer %s %%, dps %s %%; %s %% name a second role, %s %% then "fill"',
              round(100.0 * count(*) FILTER (WHERE first = 'tank') / count(*), 1),
              round(100.0 * count(*) FILTER (WHERE first = 'healer') / count(*), 1),
              round(100.0 * count(*) FILTER (WHERE first = 'dps') / count(*), 1),
              round(100.0 * count(*) FILTER (WHERE jsonb_array_length(prefs) > 1) / count(*), 1),
              round(100.0 * count(*) FILTER (WHERE prefs ? 'fill') / count(*), 1))
  FROM bench_roles_players;
SQL

# The SQL of one scenario's measurement in run $1.
scenario_sql() {
	local run=$1 scenario=$2 queue=bench_roles
	[ "$scenario" = plain ] && queue=bench_plain
	cat <<SQL
\\set run $run
\\set scenario $scenario
\\set queue $queue
\\set file '$dir/$scenario.tsv'
SQL
	cat <<'SQL'
TRUNCATE mm.tickets, mm.active_players, mm.matches, mm.match_players, mm.match_results,
         mm.backfill_requests, mm.autofill_protection;
SELECT setval('mm.tickets_id_seq', 1, false), setval('mm.matches_id_seq', 1, false) \gset dummy_
COPY mm.tickets (queue, players, created_at) FROM :'file';
SELECT count(*) AS searching, avg(pg_column_size(players)) AS jsonb_bytes FROM mm.tickets_active \gset
VACUUM ANALYZE mm.tickets, mm.active_players, mm.matches, mm.match_players;
CHECKPOINT;
-- the tick, in its own transaction; also the backend's CPU time around it
SELECT coalesce(pg_temp.cpu_ticks(), 'NaN') AS c0 \gset
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT mm.tick(:'queue', :'now') AS tick_matches \gset
SELECT extract(epoch FROM clock_timestamp()) AS t1 \gset
SELECT (coalesce(pg_temp.cpu_ticks(), 'NaN') - :c0) * 1000 / :hz AS cpu_ms \gset
SELECT tickets_loaded, players_matched, load_ms, compute_ms, write_ms
  FROM mm.last_tick_stats() WHERE queue = :'queue' \gset
-- what the matches hold: players by how their role relates to their list
-- (mix only: the lists are in bench_roles_players), and what breaks the rules
SELECT count(*) AS players,
       count(*) FILTER (WHERE :'scenario' = 'mix' AND mp.role = p.prefs ->> 0) AS first_choice,
       count(*) FILTER (WHERE :'scenario' = 'mix' AND mp.role = p.prefs ->> 1) AS second_choice,
       count(*) FILTER (WHERE :'scenario' = 'mix' AND NOT p.prefs ? mp.role AND p.prefs ? 'fill') AS by_fill,
       count(*) FILTER (WHERE :'scenario' = 'mix' AND NOT p.prefs ? mp.role AND NOT p.prefs ? 'fill') AS outside_list,
       count(*) FILTER (WHERE mp.autofilled) AS autofilled,
       count(*) FILTER (WHERE (:'queue' = 'bench_roles') <> (mp.role IS NOT NULL)) AS role_missing,
       count(*) FILTER (WHERE mp.role = 'tank') AS tanks,
       count(*) FILTER (WHERE mp.role = 'healer') AS healers,
       count(*) FILTER (WHERE mp.role = 'dps') AS dps,
       count(*) - count(DISTINCT mp.player_id) AS twice,
       count(*) FILTER (WHERE p.first = 'tank') AS first_tank,
       count(*) FILTER (WHERE p.first = 'tank' AND mp.role = 'tank') AS first_tank_hit,
       count(*) FILTER (WHERE p.first = 'healer') AS first_healer,
       count(*) FILTER (WHERE p.first = 'healer' AND mp.role = 'healer') AS first_healer_hit,
       count(*) FILTER (WHERE p.first = 'dps') AS first_dps,
       count(*) FILTER (WHERE p.first = 'dps' AND mp.role = 'dps') AS first_dps_hit
  FROM mm.match_players mp JOIN bench_roles_players p USING (player_id) \gset
SELECT count(*) AS bad_teams FROM (
	SELECT match_id, team FROM mm.match_players GROUP BY 1, 2
	HAVING count(*) <> 5
	    OR (:'queue' = 'bench_roles' AND (count(*) FILTER (WHERE role = 'tank') <> 1
	        OR count(*) FILTER (WHERE role = 'healer') <> 1 OR count(*) FILTER (WHERE role = 'dps') <> 3))) x \gset
INSERT INTO bench_roles_runs VALUES
	(:'scenario', :run, 'tick_ms', (:t1 - :t0) * 1000), (:'scenario', :run, 'matches', :tick_matches),
	(:'scenario', :run, 'cpu_ms', :cpu_ms),
	(:'scenario', :run, 'searching', :searching), (:'scenario', :run, 'jsonb_bytes', :jsonb_bytes),
	(:'scenario', :run, 'tickets_loaded', :tickets_loaded), (:'scenario', :run, 'players_matched', :players_matched),
	(:'scenario', :run, 'load_ms', :load_ms), (:'scenario', :run, 'compute_ms', :compute_ms),
	(:'scenario', :run, 'write_ms', :write_ms), (:'scenario', :run, 'players', :players),
	(:'scenario', :run, 'first_choice', :first_choice), (:'scenario', :run, 'second_choice', :second_choice),
	(:'scenario', :run, 'by_fill', :by_fill), (:'scenario', :run, 'outside_list', :outside_list),
	(:'scenario', :run, 'autofilled', :autofilled), (:'scenario', :run, 'role_missing', :role_missing),
	(:'scenario', :run, 'tanks', :tanks), (:'scenario', :run, 'healers', :healers),
	(:'scenario', :run, 'dps', :dps), (:'scenario', :run, 'twice', :twice),
	(:'scenario', :run, 'bad_teams', :bad_teams),
	(:'scenario', :run, 'first_tank', :first_tank), (:'scenario', :run, 'first_tank_hit', :first_tank_hit),
	(:'scenario', :run, 'first_healer', :first_healer), (:'scenario', :run, 'first_healer_hit', :first_healer_hit),
	(:'scenario', :run, 'first_dps', :first_dps), (:'scenario', :run, 'first_dps_hit', :first_dps_hit);
SQL
}

ns=${#scenarios[@]}
for run in $(seq 0 "$runs"); do
	order=""
	for k in $(seq 0 $((ns - 1))); do
		order="$order ${scenarios[$(((k + run) % ns))]}"
	done
	say "run $run of $runs:$order"
	{
		# the backend's user + system CPU time in clock ticks (Linux; NULL elsewhere)
		cat <<'SQL'
CREATE FUNCTION pg_temp.cpu_ticks() RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	f text[];
BEGIN
	f := string_to_array(split_part(pg_read_file('/proc/' || pg_backend_pid() || '/stat'), ') ', 2), ' ');
	RETURN f[12]::float8 + f[13]::float8;
EXCEPTION WHEN OTHERS THEN
	RETURN NULL;
END
$$;
SQL
		for s in $order; do
			scenario_sql "$run" "$s"
		done
	} | q -v now="$now" -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)"
done

# ---------------------------------------------------------------------------
# The report.
# ---------------------------------------------------------------------------
q -v runs="$runs" -v nt="$n_tickets" -v cpus="$(nproc 2>/dev/null || echo '?')" \
  -v load_start="$load_start" -v load_end="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')" <<'SQL'
-- medians of the recorded runs (run 0 is the warm-up)
CREATE TEMP VIEW med AS
SELECT scenario, kind, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS v
  FROM bench_roles_runs WHERE run > 0 GROUP BY scenario, kind;
CREATE FUNCTION pg_temp.m(s text, k text) RETURNS float8 LANGUAGE sql AS
	$$ SELECT v FROM med WHERE scenario = s AND kind = k $$;
CREATE FUNCTION pg_temp.fmt(x float8, digits int DEFAULT 0) RETURNS text LANGUAGE sql AS
	$$ SELECT coalesce(to_char(round(x::numeric, digits),
	                           'FM999,999,999,990' || CASE WHEN digits > 0 THEN '.' || repeat('0', digits) ELSE '' END),
	                   'n/a') $$;
CREATE FUNCTION pg_temp.pct(a float8, b float8) RETURNS text LANGUAGE sql AS
	$$ SELECT pg_temp.fmt(100 * a / nullif(b, 0), 1) || ' %' $$;

\echo
\echo '### Role queue vs the same queue without roles (medians of' :runs 'runs after a warm-up;' :nt 'searching solo tickets, 5v5)'
\echo
\echo '| scenario | tick (ms) | ratio to no roles | backend CPU (ms) | CPU ratio | load / search / write (ms) | matches | of no roles | target |'
\echo '| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |'
SELECT format('| %s | %s | %s | %s | %s | %s / %s / %s | %s | %s | %s |', label,
              pg_temp.fmt(pg_temp.m(s, 'tick_ms')),
              pg_temp.fmt(pg_temp.m(s, 'tick_ms') / pg_temp.m('plain', 'tick_ms'), 2),
              pg_temp.fmt(pg_temp.m(s, 'cpu_ms')),
              pg_temp.fmt(pg_temp.m(s, 'cpu_ms') / pg_temp.m('plain', 'cpu_ms'), 2),
              pg_temp.fmt(pg_temp.m(s, 'load_ms')), pg_temp.fmt(pg_temp.m(s, 'compute_ms')),
              pg_temp.fmt(pg_temp.m(s, 'write_ms')),
              pg_temp.fmt(pg_temp.m(s, 'matches')),
              pg_temp.pct(pg_temp.m(s, 'matches'), pg_temp.m('plain', 'matches')),
              CASE s WHEN 'fill' THEN
                  'tick ≤ 1.5: ' || CASE WHEN pg_temp.m(s, 'tick_ms') / pg_temp.m('plain', 'tick_ms') <= 1.5
                                         THEN 'met' ELSE 'MISSED' END
                  || '; matches ≥ 95 %: ' || CASE WHEN pg_temp.m(s, 'matches') >= 0.95 * pg_temp.m('plain', 'matches')
                                                  THEN 'met' ELSE 'MISSED' END
                  ELSE '' END)
  FROM (VALUES (1, 'plain', 'no roles (baseline)'),
               (2, 'fill', 'roles, every player `["fill"]`'),
               (3, 'nolist', 'roles, no lists (rows identical to the baseline''s)'),
               (4, 'mix', 'roles, realistic mix')) t(ord, s, label)
 ORDER BY ord;

-- the ratio within each run (the scenarios of a run ran back to back), then its median
SELECT format('%s ratio to no roles within each run, median (min–max): fill %s, no lists %s, mix %s',
              CASE k WHEN 'tick_ms' THEN 'Tick' ELSE 'Backend CPU' END,
              string_agg(CASE WHEN s = 'fill' THEN r END, ''), string_agg(CASE WHEN s = 'nolist' THEN r END, ''),
              string_agg(CASE WHEN s = 'mix' THEN r END, ''))
  FROM (SELECT a.scenario AS s, a.kind AS k,
               format('%s (%s–%s)', pg_temp.fmt(percentile_cont(0.5) WITHIN GROUP (ORDER BY a.value / b.value), 2),
                      pg_temp.fmt(min(a.value / b.value), 2), pg_temp.fmt(max(a.value / b.value), 2)) AS r
          FROM bench_roles_runs a JOIN bench_roles_runs b ON b.run = a.run AND b.kind = a.kind AND b.scenario = 'plain'
         WHERE a.kind IN ('tick_ms', 'cpu_ms') AND a.run > 0 AND a.scenario <> 'plain'
         GROUP BY a.scenario, a.kind) x
 GROUP BY k ORDER BY k DESC;

\echo
\echo '#### The realistic mix: matched players by how their role relates to their list'
\echo
SELECT format('%s matched players: first choice %s, second choice %s, through "fill" %s, outside their list %s; '
              'roles played: tank %s, healer %s, dps %s',
              pg_temp.fmt(pg_temp.m('mix', 'players')),
              pg_temp.pct(pg_temp.m('mix', 'first_choice'), pg_temp.m('mix', 'players')),
              pg_temp.pct(pg_temp.m('mix', 'second_choice'), pg_temp.m('mix', 'players')),
              pg_temp.pct(pg_temp.m('mix', 'by_fill'), pg_temp.m('mix', 'players')),
              pg_temp.pct(pg_temp.m('mix', 'outside_list'), pg_temp.m('mix', 'players')),
              pg_temp.fmt(pg_temp.m('mix', 'tanks')), pg_temp.fmt(pg_temp.m('mix', 'healers')),
              pg_temp.fmt(pg_temp.m('mix', 'dps')));
SELECT format('on their first choice, by first choice: %s',
              string_agg(format('%s %s of %s matched (%s)', r, pg_temp.fmt(pg_temp.m('mix', 'first_' || r || '_hit')),
                                pg_temp.fmt(pg_temp.m('mix', 'first_' || r)),
                                pg_temp.pct(pg_temp.m('mix', 'first_' || r || '_hit'), pg_temp.m('mix', 'first_' || r))),
                         ', ' ORDER BY o))
  FROM (VALUES (1, 'tank'), (2, 'healer'), (3, 'dps')) t(o, r);
SELECT format('ticket jsonb size (B): no roles %s, fill %s, no lists %s, mix %s',
              pg_temp.fmt(pg_temp.m('plain', 'jsonb_bytes')), pg_temp.fmt(pg_temp.m('fill', 'jsonb_bytes')),
              pg_temp.fmt(pg_temp.m('nolist', 'jsonb_bytes')), pg_temp.fmt(pg_temp.m('mix', 'jsonb_bytes')));
\echo 'Machine:' :cpus 'CPUs, load average (1, 5, 15 min)' :load_start 'at the start,' :load_end 'at the end.'
\echo
\echo '#### Every run (run 0 = warm-up, not in the medians)'
\echo
\echo '| scenario | value | runs |'
\echo '| --- | --- | --- |'
SELECT format('| %s | %s | %s |', scenario, kind,
              string_agg(run || ': ' || CASE WHEN abs(value) >= 100 OR value = round(value) THEN round(value::numeric)::text
                                             ELSE round(value::numeric, 3)::text END, ', ' ORDER BY run))
  FROM bench_roles_runs
 WHERE kind IN ('tick_ms', 'cpu_ms', 'matches', 'load_ms', 'compute_ms', 'write_ms')
 GROUP BY scenario, kind ORDER BY scenario, kind;

-- checks: anything that broke a rule (printed; the script fails on them)
\echo
CREATE TEMP VIEW checks AS
SELECT format('%s run %s: %s', scenario, run, msg) AS msg FROM (
	SELECT scenario, run, value || ' teams break their composition (5 players; 1 tank, 1 healer, 3 dps)' AS msg
	  FROM bench_roles_runs WHERE kind = 'bad_teams' AND value <> 0
	UNION ALL
	SELECT scenario, run, value || ' players on a role outside their list' FROM bench_roles_runs
	 WHERE kind IN ('outside_list', 'autofilled') AND value <> 0
	UNION ALL
	SELECT scenario, run, value || ' players without a role in a role queue (or with one in the other)'
	  FROM bench_roles_runs WHERE kind = 'role_missing' AND value <> 0
	UNION ALL
	SELECT scenario, run, value || ' players in two matches' FROM bench_roles_runs WHERE kind = 'twice' AND value <> 0
	UNION ALL
	SELECT a.scenario, a.run, format('the tick loaded %s of %s searching tickets', a.value, b.value)
	  FROM bench_roles_runs a JOIN bench_roles_runs b USING (scenario, run)
	 WHERE a.kind = 'tickets_loaded' AND b.kind = 'searching' AND a.value <> b.value
	UNION ALL
	SELECT a.scenario, a.run, format('%s matches but %s players matched', a.value, b.value)
	  FROM bench_roles_runs a JOIN bench_roles_runs b USING (scenario, run)
	 WHERE a.kind = 'matches' AND b.kind = 'players' AND a.value * 10 <> b.value) c;
SELECT 'check: ' || msg FROM checks ORDER BY msg;
SELECT count(*) AS failed_checks, count(*) > 0 AS failed FROM checks \gset
\if :failed
\echo :failed_checks 'checks failed'
SELECT 1 / 0;
\endif
SQL
