#!/usr/bin/env bash
# Scale-out benchmark (docs/scale-out.md): matchmaking on Citus against the
# same work on one plain node, ratios measured in one run.  The plain node is
# run.sh's cluster (PGHOST/PGPORT, database mm_bench); the Citus deployment a
# coordinator and two workers started here on the next ports, with the same
# memory settings, shards 8 per group (mm.distribute(8)).
#
#   1. a tick on a worker vs the same tick of the same queue on the plain
#      node: n searching tickets (MM_BENCH_CITUS_TICKETS, 20000) of a 5v5
#      queue (difference on skill, latency), the same rows on both; the tick
#      runs in a session on the node itself (on the worker: the node that
#      holds the queue, as the coordinator's call does) so that
#      mm.last_tick_stats() gives its phases; medians of MM_BENCH_CITUS_RUNS
#      (3) runs, each on a fresh queue of the same worker.  Also the wall
#      time of one psql call of the tick on the coordinator (routed to the
#      worker, a new session each time) against the same call on the plain
#      node.
#   2. two queues, one on each worker, MM_BENCH_CITUS_PAIR_TICKETS (50000)
#      tickets each, ticked at the same time through the coordinator vs the
#      same two ticks one after the other, in warm coordinator sessions
#      (from the first tick's start to the last one's end).
#      The machine's cores bound this: with 2 cores the two workers and the
#      coordinator share them.
#   3. ingest (tickets/s): mm.create_ticket (constant arguments, as a
#      backend's parameters: a volatile one keeps Citus from delegating the
#      call to the queue's worker) from 8 pgbench clients for
#      MM_BENCH_CITUS_PGBENCH_SECONDS (10) through the coordinator, on the
#      plain node, and straight to the queue's node (docs/scale-out.md, the
#      direct path: a queue on each worker, the clients connected to it),
#      and mm.create_tickets in batches of 1,000 from one session (the
#      array a literal of the call, as a backend's parameter) through
#      the coordinator, on the plain node and on the queue's node; medians
#      of MM_BENCH_CITUS_INGEST_RUNS (3) runs, each running every setup one
#      after the other (issue 29's targets: >= 0.5x, >= 0.8x per node,
#      >= 0.8x).
#   4. CPU cost: the CPU time (utime + stime from /proc, the postmasters'
#      exited children included) of every PostgreSQL process of the nodes
#      per 1,000 tickets created and matched, for a fixed amount of work:
#      MM_BENCH_CITUS_CPU_TICKETS (4000) 1v1 tickets from 8 pgbench clients
#      in two queues (on Citus one on each worker) while one session per
#      queue ticks it MM_BENCH_CITUS_CPU_TICKS (25) times every 0.2 s (on
#      Citus on the queue's node, where mm.schedule's loop runs), then once
#      more, with autovacuum off on both setups (a round falling into a
#      run of a few seconds or not moved single runs by 2x; each run's
#      VACUUM ANALYZE is measured after it, its own figure); all three
#      Citus nodes against the plain node, one after
#      the other, medians of MM_BENCH_CITUS_CPU_RUNS (3) runs (target
#      <= 1.5x); beside it the floor, the same number of calls to a
#      distributed function by queue that does nothing, and the least a
#      ticket through the coordinator can cost (straight to the nodes plus
#      the floor's extra CPU per call).
#   5. a lifecycle call by (queue, id) through the coordinator vs on the
#      plain node: the mean latency of mm.heartbeat(queue, id) from one
#      pgbench client, medians of MM_BENCH_CITUS_LIFECYCLE_RUNS (3) runs
#      (target <= 2x); beside it the floor of any call through the
#      coordinator, a distributed function by queue that does nothing.
# The Citus nodes take the plain node's durability settings (fsync,
# synchronous_commit, full_page_writes), so both sides flush alike.
# MM_BENCH_CITUS_PARTS picks the parts (default "tick pair ingest cpu
# lifecycle"), e.g. MM_BENCH_CITUS_PARTS="ingest cpu lifecycle".
# Run by: bash test/bench/run.sh citus
set -euo pipefail

runs=${MM_BENCH_CITUS_RUNS:-3}
n=${MM_BENCH_CITUS_TICKETS:-20000}
n_pair=${MM_BENCH_CITUS_PAIR_TICKETS:-50000}
pgbench_seconds=${MM_BENCH_CITUS_PGBENCH_SECONDS:-10}
cpu_tickets=${MM_BENCH_CITUS_CPU_TICKETS:-4000}
cpu_ticks=${MM_BENCH_CITUS_CPU_TICKS:-25}
cpu_reps=${MM_BENCH_CITUS_CPU_RUNS:-3}
ingest_runs=${MM_BENCH_CITUS_INGEST_RUNS:-3}
lifecycle_runs=${MM_BENCH_CITUS_LIFECYCLE_RUNS:-3}
parts=" ${MM_BENCH_CITUS_PARTS:-tick pair ingest cpu lifecycle} "
part() { [[ "$parts" == *" $1 "* ]]; }
now="2026-01-01 00:10:00+00"
plain_db=${PGDATABASE:-mm_bench}
sock=$PGHOST
base_port=$PGPORT
dir=$(mktemp -d /tmp/mm_bench_citus.XXXXXX)
chmod 755 "$dir"
ports=($((base_port + 1)) $((base_port + 2)) $((base_port + 3)))

say() { printf '==> citus: %s\n' "$*" >&2; }
q() { psql -X -v ON_ERROR_STOP=1 -q -At "$@"; }
qc() { q -h "$sock" -p "${ports[0]}" -d postgres "$@"; }

if [ ! -f "$(pg_config --pkglibdir 2>/dev/null)/citus.so" ] && [ "${MM_CITUS:-0}" != 1 ]; then
	say "skipped: Citus is not installed"
	exit 0
fi

stop_all() {
	for p in "${ports[@]}"; do
		[ -d "$dir/n$p" ] && pg_ctl -D "$dir/n$p" -m immediate stop >/dev/null 2>&1 || true
	done
	rm -rf "$dir"
}
trap stop_all EXIT

# The plain node's durability settings (run.sh's throwaway cluster has fsync
# and synchronous_commit off) on every Citus node too: with them on, a
# commit's flush (three of them in a two-phase commit) is most of a ticket's
# or a heartbeat's time on the Citus side only, and the ratios measured the
# disk, not the deployment.
durability=$(q -d "$plain_db" -c "SELECT string_agg(name || ' = ' || quote_literal(setting), E'\n')
  FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes')")

say "starting a coordinator and two workers (ports ${ports[*]})"
for p in "${ports[@]}"; do
	# the plain node's encoding and locale too (test/scripts/common.sh): a
	# collation other than C compares every text key through strcoll
	initdb -D "$dir/n$p" -U postgres --no-sync -E UTF8 --locale=C >/dev/null
	printf '%s\n' "$durability" >> "$dir/n$p/postgresql.conf"
	cat >> "$dir/n$p/postgresql.conf" <<CONF
port = $p
unix_socket_directories = '$sock'
listen_addresses = ''
shared_preload_libraries = 'citus,matchmaking'
max_prepared_transactions = 100
citus.node_conninfo = 'sslmode=disable'
citus.enable_statistics_collection = off
shared_buffers = '512MB'
work_mem = '64MB'
max_parallel_workers_per_gather = 2
CONF
	pg_ctl -D "$dir/n$p" -l "$dir/n$p.log" -w start >/dev/null
	q -h "$sock" -p "$p" -d postgres -c "CREATE EXTENSION citus"
done
qc -c "SELECT citus_set_coordinator_host('$sock', ${ports[0]})" >/dev/null
qc -c "SELECT citus_add_node('$sock', ${ports[1]})" -c "SELECT citus_add_node('$sock', ${ports[2]})" >/dev/null
qc -c "CREATE EXTENSION matchmaking" -c "SELECT mm.distribute(8)" >/dev/null

config='{
  "match_size": {"min": 10, "max": 10},
  "teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}],
  "rules": [
    {"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
     "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
    {"name": "ping", "type": "latency", "max_ms": 150}]}'

# The n tickets of a queue, as one array literal's worth of SQL (the same
# rows for a queue name on any node: seeded by the name).
tickets_sql() {
	local queue=$1 count=${2:-$n}
	cat <<SQL
SELECT setseed(0.25);
SELECT cardinality(mm.create_tickets('$queue', ARRAY(
  SELECT jsonb_build_array(jsonb_build_object('id', '$queue-' || i,
           'attributes', jsonb_build_object('skill', round(1000 + 400 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))),
           'latencies', jsonb_build_object('eu', 40 + (i * 7) % 60, 'us', 40 + (i * 13) % 60, 'asia', 40 + (i * 17) % 60)))
    FROM generate_series(1, $count) i ORDER BY i), timestamptz '$now' - interval '30 seconds'));
SQL
}

# A fresh queue name on the given worker port (queue names hash to shards).
queue_on() {
	local port=$1 prefix=$2 i=0 name
	while :; do
		name="$prefix$i"
		if [ "$(qc -c "SELECT node_port FROM mm.queue_node('$name')")" = "$port" ] &&
			[ "$(qc -c "SELECT count(*) FROM mm.queues WHERE name = '$name'")" = 0 ]; then
			echo "$name"
			return
		fi
		i=$((i + 1))
	done
}

# One tick in a session on the node at port/db; prints "total_ms write_ms matches".
tick_on() {
	local port=$1 db=$2 queue=$3
	q -h "$sock" -p "$port" -d "$db" -F ' ' <<SQL
SELECT mm.tick('$queue', '$now') \\gset dummy_
SELECT round((load_ms + compute_ms + write_ms)::numeric, 1), round(write_ms::numeric, 1), matches
  FROM mm.last_tick_stats() WHERE queue = '$queue';
SQL
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}'; }

# --- 1. a tick on a worker vs on the plain node ---
worker_totals=() worker_writes=() plain_totals=() plain_writes=() routed=() plain_calls=()
wt=- ww=- pt=- pw=- rt=- pc=- pt2=- ps2=-
part tick && for r in $(seq 0 "$runs"); do
	queue=$(queue_on "${ports[1]}" "tw${r}_")
	qc -c "SELECT mm.create_queue('$queue', '$config')" >/dev/null
	tickets_sql "$queue" | qc >/dev/null
	q -d "$plain_db" -c "SELECT mm.create_queue('$queue', '$config')" >/dev/null
	tickets_sql "$queue" | q -d "$plain_db" >/dev/null
	q -d "$plain_db" -c "VACUUM ANALYZE mm.tickets_active" -c CHECKPOINT
	q -h "$sock" -p "${ports[1]}" -d postgres -c "VACUUM ANALYZE" -c CHECKPOINT
	read -r wt ww wm <<<"$(tick_on "${ports[1]}" postgres "$queue")"
	read -r pt pw pm <<<"$(tick_on "$base_port" "$plain_db" "$queue")"
	if [ "$wm" != "$pm" ]; then
		say "run $r: the worker formed $wm matches, the plain node $pm"
		exit 1
	fi
	# the same tick again, one psql call each: on the coordinator (routed to
	# the worker) and on the plain node
	queue2=$(queue_on "${ports[1]}" "tc${r}_")
	qc -c "SELECT mm.create_queue('$queue2', '$config')" >/dev/null
	tickets_sql "$queue2" | qc >/dev/null
	q -d "$plain_db" -c "SELECT mm.create_queue('$queue2', '$config')" >/dev/null
	tickets_sql "$queue2" | q -d "$plain_db" >/dev/null
	start=$(date +%s%N)
	qc -c "SELECT mm.tick('$queue2', '$now')" >/dev/null
	routed_ms=$((($(date +%s%N) - start) / 1000000))
	start=$(date +%s%N)
	q -d "$plain_db" -c "SELECT mm.tick('$queue2', '$now')" >/dev/null
	plain_call_ms=$((($(date +%s%N) - start) / 1000000))
	[ "$r" = 0 ] && continue		# warm-up
	worker_totals+=("$wt") worker_writes+=("$ww") plain_totals+=("$pt") plain_writes+=("$pw")
	routed+=("$routed_ms") plain_calls+=("$plain_call_ms")
	say "run $r: worker $wt ms (write $ww), plain $pt ms (write $pw); one call: coordinator $routed_ms ms, plain $plain_call_ms ms; $wm matches"
done
if part tick; then
	wt=$(printf '%s\n' "${worker_totals[@]}" | median)
	ww=$(printf '%s\n' "${worker_writes[@]}" | median)
	pt=$(printf '%s\n' "${plain_totals[@]}" | median)
	pw=$(printf '%s\n' "${plain_writes[@]}" | median)
	rt=$(printf '%s\n' "${routed[@]}" | median)
	pc=$(printf '%s\n' "${plain_calls[@]}" | median)
fi

# --- 2. two queues on two workers: at the same time vs one after the other ---
# Warm sessions on the coordinator (each has ticked its queues once with a
# now before every ticket, which loads nothing but opens the connections to
# the workers and prepares the statements there), started together at a set
# time; each prints the epoch before and after its tick(s).
session_sql() {
	local at=$1; shift
	local queue
	for queue in "$@"; do echo "SELECT mm.tick('$queue', '2000-01-01') \gset dummy_"; done
	echo "SELECT pg_sleep_until('$at') \gset dummy_"
	echo "SELECT extract(epoch FROM clock_timestamp());"
	for queue in "$@"; do echo "SELECT mm.tick('$queue', '$now') \gset dummy_"; done
	echo "SELECT extract(epoch FROM clock_timestamp());"
}
span_ms() { awk '{v[NR] = $1} END {min = v[1]; max = v[1]; for (i in v) {if (v[i] < min) min = v[i]; if (v[i] > max) max = v[i]}; printf "%.0f", (max - min) * 1000}'; }
pair_together=() pair_sequential=()
part pair && for r in $(seq 1 "$runs"); do
	for mode in together sequential; do
		qa=$(queue_on "${ports[1]}" "pa${r}${mode}_")
		qb=$(queue_on "${ports[2]}" "pb${r}${mode}_")
		for queue in "$qa" "$qb"; do
			qc -c "SELECT mm.create_queue('$queue', '$config')" >/dev/null
			tickets_sql "$queue" "$n_pair" | qc >/dev/null
		done
		at=$(qc -c "SELECT clock_timestamp() + interval '3 seconds'")
		if [ "$mode" = together ]; then
			session_sql "$at" "$qa" | qc > "$dir/a.out" &
			session_sql "$at" "$qb" | qc > "$dir/b.out" &
			wait
			pair_together+=("$(cat "$dir/a.out" "$dir/b.out" | span_ms)")
		else
			session_sql "$at" "$qa" "$qb" | qc > "$dir/a.out"
			pair_sequential+=("$(span_ms < "$dir/a.out")")
		fi
	done
done
if part pair; then
	pt2=$(printf '%s\n' "${pair_together[@]}" | median)
	ps2=$(printf '%s\n' "${pair_sequential[@]}" | median)
fi

# --- 3. ingest through the coordinator vs the plain node ---
citus_tps=- plain_tps=- citus_batch=- plain_batch=-
# pgbench's tps of 8 clients running a script ($1) on a node (the rest)
tps() {
	local script=$1
	shift
	pgbench -n -c 8 -j 2 -T "$pgbench_seconds" -f "$script" "$@" 2>"$dir/pgbench.err" |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -1
}
# one ticket of one player in a queue ($1) per transaction, constant
# arguments but the player's id
create_ticket_script() {
	cat > "$dir/create_ticket_$1.pgbench" <<EOF
\\set id random(1, 1000000000)
\\set r random(1, 1000000000)
SELECT mm.create_ticket('$1', '[{"id": "i:client_id-:id-:r", "attributes": {"skill": 1000}, "latencies": {"eu": 50}}]');
EOF
	echo "$dir/create_ticket_$1.pgbench"
}
direct1_tps=- direct2_tps=- direct_batch=- ingest_ratios=- batch_ratios=- direct_ratios=-
if part ingest; then
	qc -c "SELECT mm.create_queue('ingest', '$config')" >/dev/null
	q -d "$plain_db" -c "SELECT mm.create_queue('ingest', '$config')" >/dev/null
	# the direct path (docs/scale-out.md): a backend sends a queue's tickets
	# to the node mm.queue_node names; a queue on each worker
	dq1=$(queue_on "${ports[1]}" "direct")
	dq2=$(queue_on "${ports[2]}" "direct")
	qc -c "SELECT mm.create_queue('$dq1', '$config')" -c "SELECT mm.create_queue('$dq2', '$config')" >/dev/null
	node_of() { qc -c "SELECT node_port FROM mm.queue_node('$1')"; }
	# batches of 1,000 from one session, 20 of them, each sent as a backend
	# sends it (the array a value of the statement, the call alone in it:
	# Citus runs such a call on the queue's node); the calls' own time
	# (psql's \timing), not the time to build the arrays.  $1 a prefix that
	# keeps the players of each run apart
	batches() {
		local prefix=$1 queue=$2 b
		shift 2
		for b in $(seq 1 20); do
			echo '\timing off'
			echo "SELECT ARRAY(SELECT jsonb_build_array(jsonb_build_object('id', '$prefix$b-' || i,
			        'attributes', jsonb_build_object('skill', 1000), 'latencies', jsonb_build_object('eu', 50)))
			        FROM generate_series(1, 1000) i)::text AS batch \\gset"
			echo '\timing on'
			echo "SELECT mm.create_tickets('$queue', :'batch', '$now') \\g /dev/null"
		done | q "$@" -v ON_ERROR_STOP=1 |
			awk '/^Time: / {ms += $2} END {printf "%.0f", 20000 / (ms / 1000)}'
	}
	c_tps=() p_tps=() d1_tps=() d2_tps=() c_b=() p_b=() d_b=() i_r=() b_r=() d_r=()
	# the setups one after the other in each run, medians of the runs
	for r in $(seq 1 "$ingest_runs"); do
		c=$(tps "$(create_ticket_script ingest)" -h "$sock" -p "${ports[0]}" postgres)
		p=$(tps "$(create_ticket_script ingest)" "$plain_db")
		d1=$(tps "$(create_ticket_script "$dq1")" -h "$sock" -p "$(node_of "$dq1")" postgres)
		d2=$(tps "$(create_ticket_script "$dq2")" -h "$sock" -p "$(node_of "$dq2")" postgres)
		cb=$(batches "c${r}b" ingest -h "$sock" -p "${ports[0]}" -d postgres)
		pb=$(batches "p${r}b" ingest -d "$plain_db")
		db=$(batches "d${r}b" "$dq1" -h "$sock" -p "$(node_of "$dq1")" -d postgres)
		c_tps+=("$c") p_tps+=("$p") d1_tps+=("$d1") d2_tps+=("$d2") c_b+=("$cb") p_b+=("$pb") d_b+=("$db")
		i_r+=("$(awk -v a="$c" -v b="$p" 'BEGIN {printf "%.2f", a / b}')")
		b_r+=("$(awk -v a="$cb" -v b="$pb" 'BEGIN {printf "%.2f", a / b}')")
		d_r+=("$(awk -v a="$d1" -v c="$d2" -v b="$p" 'BEGIN {printf "%.2f", (a < c ? a : c) / b}')")
		say "ingest run $r: create_ticket coordinator $c, one node $p, worker 1 direct $d1, worker 2 direct $d2 tickets/s; batches coordinator $cb, one node $pb, worker direct $db tickets/s"
	done
	citus_tps=$(printf '%s\n' "${c_tps[@]}" | median)
	plain_tps=$(printf '%s\n' "${p_tps[@]}" | median)
	direct1_tps=$(printf '%s\n' "${d1_tps[@]}" | median)
	direct2_tps=$(printf '%s\n' "${d2_tps[@]}" | median)
	citus_batch=$(printf '%s\n' "${c_b[@]}" | median)
	plain_batch=$(printf '%s\n' "${p_b[@]}" | median)
	direct_batch=$(printf '%s\n' "${d_b[@]}" | median)
	ingest_ratios=$(printf '%s\n' "${i_r[@]}" | sort -n | paste -sd ' ')
	batch_ratios=$(printf '%s\n' "${b_r[@]}" | sort -n | paste -sd ' ')
	direct_ratios=$(printf '%s\n' "${d_r[@]}" | sort -n | paste -sd ' ')
fi

# A distributed function by queue that does nothing, on both setups (once):
# the floor of a call through the coordinator, Citus's delegation alone.
nothing_made=
make_nothing() {
	[ -n "$nothing_made" ] && return
	local nothing="CREATE FUNCTION public.bench_nothing(queue text) RETURNS boolean LANGUAGE plpgsql AS 'BEGIN RETURN true; END'"
	qc -c "$nothing" -c "SELECT create_distributed_function('public.bench_nothing(text)', 'queue',
		colocate_with := 'mm.tickets_active')" >/dev/null
	q -d "$plain_db" -c "$nothing" >/dev/null
	nothing_made=1
}

# --- 4. CPU per 1,000 tickets created and matched ---
# The CPU seconds of a node's PostgreSQL processes: the postmaster's own, its
# exited children's (cutime + cstime: it waits for every backend) and every
# live child's.
node_cpu() {
	local pmpid=$1
	# cat skips the processes that end meanwhile
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v pm="$pmpid" -v hz="$(getconf CLK_TCK)" '
		{
			pid = $1; line = $0; sub(/^[^)]*\) /, "", line); split(line, f, " ")
			# f[2] ppid, f[12] utime, f[13] stime, f[14] cutime, f[15] cstime
			if (pid == pm) t += f[12] + f[13] + f[14] + f[15]
			else if (f[2] == pm) t += f[12] + f[13]
		}
		END { printf "%.3f", t / hz }'
}
cluster_cpu() {
	local total=0 pm c
	for pm in "$@"; do
		c=$(node_cpu "$pm")
		total=$(awk -v a="$total" -v b="$c" 'BEGIN {printf "%.3f", a + b}')
	done
	echo "$total"
}
cpu_citus=- cpu_plain=- cpu_ratios=- cpu_direct=- cpu_direct_ratios=- vac_citus=- vac_direct=- vac_plain=-
cpu_nothing_citus=- cpu_nothing_plain=- cpu_bound=-
if part cpu; then
	duel='{"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}'
	# the same rows on both setups before it: the ingest part's queues go
	# (their rows would share the CPU queues' shards), and both are vacuumed
	# and checkpointed, so that neither pays for the other part's leftovers
	if part ingest; then
		qc -c "SELECT mm.drop_queue('ingest', true)" -c "SELECT mm.drop_queue('$dq1', true)" \
			-c "SELECT mm.drop_queue('$dq2', true)" >/dev/null
		q -d "$plain_db" -c "SELECT mm.drop_queue('ingest', true)" >/dev/null
	fi
	qc -c "VACUUM ANALYZE" >/dev/null
	q -d "$plain_db" -c "VACUUM ANALYZE" >/dev/null
	for p in "${ports[@]}"; do q -h "$sock" -p "$p" -d postgres -c CHECKPOINT >/dev/null; done
	q -d "$plain_db" -c CHECKPOINT >/dev/null
	# autovacuum off on both setups while this part runs: a run lasts a few
	# seconds, and whether an autovacuum round (on Citus one per node, over
	# every shard) falls into it moved single runs by 2x.  Each run's
	# VACUUM ANALYZE is measured after it instead, as a figure of its own.
	autovacuum() {
		local p
		for p in "${ports[@]}"; do
			q -h "$sock" -p "$p" -d postgres -c "ALTER SYSTEM SET autovacuum = $1" -c "SELECT pg_reload_conf()" >/dev/null
		done
		q -d "$plain_db" -c "ALTER SYSTEM SET autovacuum = $1" -c "SELECT pg_reload_conf()" >/dev/null
	}
	autovacuum off
	pm_of() { head -1 "$1/postmaster.pid"; }
	citus_pms="$(pm_of "$dir/n${ports[0]}") $(pm_of "$dir/n${ports[1]}") $(pm_of "$dir/n${ports[2]}")"
	plain_pm=$(pm_of "$(q -d "$plain_db" -c "SHOW data_directory")")
	# one repetition on one deployment: $1 "coordinator" (the clients on
	# the node of the connection options) or "direct" (4 clients on each
	# queue's node), $2 its postmasters' pids, $3 the database, $4 $5 the
	# two queues, the rest the connection options; prints CPU s per 1,000
	# tickets.  The same work on every setup: cpu_tickets tickets from 8
	# clients (cpu_tickets / 8 each), about half in each queue,
	# while one session per queue ticks it cpu_ticks times, every 0.2 s, then
	# once more each so that every ticket is matched.
	cpu_run() {
		local mode=$1 pms=$2 db=$3 qa=$4 qb=$5
		shift 5
		local before after vacuumed made matched i
		cat > "$dir/cpu.pgbench" <<EOF
\\set id random(1, 1000000000)
\\set r random(1, 1000000000)
\\set which random(1, 2)
\\if :which = 1
SELECT mm.create_ticket('$qa', '[{"id": "c:client_id-:id-:r"}]');
\\else
SELECT mm.create_ticket('$qb', '[{"id": "c:client_id-:id-:r"}]');
\\endif
EOF
		local port_a port_b
		port_a=$(qc -c "SELECT node_port FROM mm.queue_node('$qa')")
		port_b=$(qc -c "SELECT node_port FROM mm.queue_node('$qb')")
		sleep 1
		before=$(cluster_cpu $pms)
		# one session ticking each queue, as its loop does (mm.schedule): on
		# Citus on the queue's node
		local tickers=() tq tick_conn
		for tq in "$qa" "$qb"; do
			tick_conn=("$@")
			if [ "$db" != "$plain_db" ]; then
				tick_conn=(-h "$sock" -p "$([ "$tq" = "$qa" ] && echo "$port_a" || echo "$port_b")")
			fi
			for i in $(seq 1 "$cpu_ticks"); do
				echo "SELECT mm.tick('$tq') \\gset dummy_"
				echo "SELECT pg_sleep(0.2) \\gset dummy_"
			done | psql -X -q "${tick_conn[@]}" -d "$db" >/dev/null 2>&1 &
			tickers+=($!)
		done
		if [ "$mode" = direct ]; then
			# straight to the queues' nodes: 4 clients on each worker, each
			# creating tickets in the worker's queue
			local loaders=() qn port
			for qn in "$qa:$port_a" "$qb:$port_b"; do
				port=${qn##*:} qn=${qn%:*}
				printf '%s\n' '\set id random(1, 1000000000)' '\set r random(1, 1000000000)' \
					"SELECT mm.create_ticket('$qn', '[{\"id\": \"c:client_id-:id-:r\"}]');" > "$dir/cpu_$qn.pgbench"
				pgbench -n -c 4 -j 1 -t $((cpu_tickets / 8)) -f "$dir/cpu_$qn.pgbench" \
					-h "$sock" -p "$port" "$db" \
					>/dev/null 2>"$dir/pgbench_$qn.err" &
				loaders+=($!)
			done
			wait "${loaders[@]}"
		else
			pgbench -n -c 8 -j 2 -t $((cpu_tickets / 8)) -f "$dir/cpu.pgbench" "$@" "$db" >/dev/null 2>"$dir/pgbench.err"
		fi
		wait "${tickers[@]}" || true
		q "$@" -d "$db" -c "SELECT mm.tick('$qa')" -c "SELECT mm.tick('$qb')" >/dev/null
		# the ended sessions' time reaches their postmaster once it reaps them
		sleep 1
		after=$(cluster_cpu $pms)
		made=$(q "$@" -d "$db" -c "SELECT count(*) FROM mm.tickets WHERE queue IN ('$qa', '$qb')")
		matched=$(q "$@" -d "$db" -c "SELECT count(*) FROM mm.tickets WHERE queue IN ('$qa', '$qb') AND status = 'matched'")
		# the run's maintenance: VACUUM ANALYZE of what it wrote
		q "$@" -d "$db" -c "VACUUM ANALYZE" >/dev/null
		sleep 1
		vacuumed=$(cluster_cpu $pms)
		say "cpu: $db ($mode): $made tickets created, $matched matched, $(awk -v a="$before" -v b="$after" 'BEGIN {printf "%.2f", b - a}') CPU s, VACUUM ANALYZE $(awk -v a="$after" -v b="$vacuumed" 'BEGIN {printf "%.2f", b - a}') CPU s"
		awk -v a="$before" -v b="$after" -v v="$vacuumed" -v n="$made" \
			'BEGIN {printf "%.3f %.3f", (n > 0) ? (b - a) / n * 1000 : 0, (n > 0) ? (v - b) / n * 1000 : 0}'
	}
	cpu_c=() cpu_p=() cpu_r=() cpu_d=() cpu_dr=() vac_c=() vac_p=() vac_d=()
	for r in $(seq 1 "$cpu_reps"); do
		# fresh queues each time, one on each worker (the same names on the
		# plain node); the two setups one after the other
		cq1=$(queue_on "${ports[1]}" "cpu${r}_a")
		cq2=$(queue_on "${ports[2]}" "cpu${r}_b")
		for qn in "$cq1" "$cq2"; do
			qc -c "SELECT mm.create_queue('$qn', '$duel')" >/dev/null
			q -d "$plain_db" -c "SELECT mm.create_queue('$qn', '$duel')" >/dev/null
		done
		read -r c cv <<<"$(cpu_run coordinator "$citus_pms" postgres "$cq1" "$cq2" -h "$sock" -p "${ports[0]}")"
		read -r p pv <<<"$(cpu_run coordinator "$plain_pm" "$plain_db" "$cq1" "$cq2")"
		# the same work again on Citus, the tickets sent to their queues'
		# nodes (fresh queues on the same workers)
		dq1=$(queue_on "${ports[1]}" "cpud${r}_a")
		dq2=$(queue_on "${ports[2]}" "cpud${r}_b")
		qc -c "SELECT mm.create_queue('$dq1', '$duel')" -c "SELECT mm.create_queue('$dq2', '$duel')" >/dev/null
		read -r d dv <<<"$(cpu_run direct "$citus_pms" postgres "$dq1" "$dq2" -h "$sock" -p "${ports[0]}")"
		cpu_c+=("$c") cpu_p+=("$p") cpu_r+=("$(awk -v a="$c" -v b="$p" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')")
		vac_c+=("$cv") vac_p+=("$pv") vac_d+=("$dv")
		cpu_d+=("$d") cpu_dr+=("$(awk -v a="$d" -v b="$p" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')")
		say "cpu run $r: Citus through the coordinator $c, straight to the nodes $d, one node $p CPU s per 1,000 tickets; VACUUM ANALYZE after them $cv, $dv, $pv"
	done
	# the floor of the figure through the coordinator: the same number of
	# calls from 8 clients to a distributed function by queue that does
	# nothing, CPU s per 1,000 calls; straight to the nodes plus the floor's
	# extra CPU per call is the least a ticket through the coordinator costs
	make_nothing
	cpu_nothing() {
		local pms=$1 db=$2 before after
		shift 2
		printf '%s\n' '\set which random(1, 2)' '\if :which = 1' "SELECT public.bench_nothing('$cq1');" \
			'\else' "SELECT public.bench_nothing('$cq2');" '\endif' > "$dir/cpu_nothing.pgbench"
		sleep 1
		before=$(cluster_cpu $pms)
		pgbench -n -c 8 -j 2 -t $((cpu_tickets / 8)) -f "$dir/cpu_nothing.pgbench" "$@" "$db" >/dev/null 2>&1
		sleep 1
		after=$(cluster_cpu $pms)
		awk -v a="$before" -v b="$after" -v n="$cpu_tickets" 'BEGIN {printf "%.3f", (b - a) / n * 1000}'
	}
	nc_c=() nc_p=()
	for r in $(seq 1 "$cpu_reps"); do
		nc_c+=("$(cpu_nothing "$citus_pms" postgres -h "$sock" -p "${ports[0]}")")
		nc_p+=("$(cpu_nothing "$plain_pm" "$plain_db")")
		say "cpu floor run $r: a call doing nothing, through the coordinator ${nc_c[-1]}, one node ${nc_p[-1]} CPU s per 1,000 calls"
	done
	cpu_nothing_citus=$(printf '%s\n' "${nc_c[@]}" | median)
	cpu_nothing_plain=$(printf '%s\n' "${nc_p[@]}" | median)
	autovacuum on
	vac_citus=$(printf '%s\n' "${vac_c[@]}" | median)
	vac_direct=$(printf '%s\n' "${vac_d[@]}" | median)
	vac_plain=$(printf '%s\n' "${vac_p[@]}" | median)
	cpu_citus=$(printf '%s\n' "${cpu_c[@]}" | median)
	cpu_plain=$(printf '%s\n' "${cpu_p[@]}" | median)
	cpu_ratios=$(printf '%s\n' "${cpu_r[@]}" | sort -n | paste -sd ' ')
	cpu_direct=$(printf '%s\n' "${cpu_d[@]}" | median)
	cpu_direct_ratios=$(printf '%s\n' "${cpu_dr[@]}" | sort -n | paste -sd ' ')
	cpu_bound=$(awk -v d="$cpu_direct" -v c="$cpu_nothing_citus" -v p="$cpu_nothing_plain" \
		'BEGIN {printf "%.3f", d + c - p}')
fi

# --- 5. a lifecycle call by (queue, id): latency ---
lc_citus=- lc_plain=- lc_ratios=- lc_direct=- lc_direct_ratios=- lc_nothing_citus=- lc_nothing_plain=- lifecycle_rows=
if part lifecycle; then
	lq=$(queue_on "${ports[1]}" "life")
	qc -c "SELECT mm.create_queue('$lq', '$config')" >/dev/null
	q -d "$plain_db" -c "SELECT mm.create_queue('$lq', '$config')" >/dev/null
	# the mean latency of mm.heartbeat(queue, id) of one ticket, one client
	latency() {
		local id db=$1
		shift
		id=$(q "$@" -d "$db" -c "SELECT mm.create_ticket('$lq', '[{\"id\": \"beat-$(date +%s%N)\", \"attributes\": {\"skill\": 1}, \"latencies\": {\"eu\": 50}}]')")
		echo "SELECT mm.heartbeat('$lq', $id);" > "$dir/beat.pgbench"
		pgbench -n -c 1 -T "$pgbench_seconds" -f "$dir/beat.pgbench" "$@" "$db" 2>/dev/null |
			sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' | head -1
	}
	lc_c=() lc_p=() lc_r=() lc_d=() lc_dr=() lc_nc=() lc_np=()
	make_nothing
	for r in $(seq 1 "$lifecycle_runs"); do
		c=$(latency postgres -h "$sock" -p "${ports[0]}")
		p=$(latency "$plain_db")
		d=$(latency postgres -h "$sock" -p "$(qc -c "SELECT node_port FROM mm.queue_node('$lq')")")
		lc_c+=("$c") lc_p+=("$p") lc_r+=("$(awk -v a="$c" -v b="$p" 'BEGIN {printf "%.2f", a / b}')")
		lc_d+=("$d") lc_dr+=("$(awk -v a="$d" -v b="$p" 'BEGIN {printf "%.2f", a / b}')")
		# the floor of a call through the coordinator: a distributed
		# function by queue that does nothing, against the same on one node
		echo "SELECT public.bench_nothing('$lq');" > "$dir/nothing.pgbench"
		nc=$(pgbench -n -c 1 -T "$pgbench_seconds" -f "$dir/nothing.pgbench" -h "$sock" -p "${ports[0]}" postgres 2>/dev/null |
			sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' | head -1)
		np=$(pgbench -n -c 1 -T "$pgbench_seconds" -f "$dir/nothing.pgbench" "$plain_db" 2>/dev/null |
			sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' | head -1)
		lc_nc+=("$nc") lc_np+=("$np")
		say "lifecycle run $r: heartbeat coordinator $c ms, the queue's node $d ms, one node $p ms; a call doing nothing: coordinator $nc ms, one node $np ms"
	done
	lc_nothing_citus=$(printf '%s\n' "${lc_nc[@]}" | median)
	lc_nothing_plain=$(printf '%s\n' "${lc_np[@]}" | median)
	lc_citus=$(printf '%s\n' "${lc_c[@]}" | median)
	lc_plain=$(printf '%s\n' "${lc_p[@]}" | median)
	lc_ratios=$(printf '%s\n' "${lc_r[@]}" | sort -n | paste -sd ' ')
	lc_direct=$(printf '%s\n' "${lc_d[@]}" | median)
	lc_direct_ratios=$(printf '%s\n' "${lc_dr[@]}" | sort -n | paste -sd ' ')

	# Every other lifecycle form by (queue, id), each call a statement of
	# its own sent by one psql session, m calls timed by the clock: assign,
	# get_assignment and complete_match over m ready matches of a duel
	# queue, cancel_ticket over m searching tickets; prints the four means
	# in ms.  The session's start is in every side's time alike.  The queue
	# and its tickets are made through the first connection's options, the
	# calls sent through the second's (after --): on Citus the coordinator,
	# then the coordinator or the queue's node.
	duel='{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}]}'
	forms_m=${MM_BENCH_CITUS_LIFECYCLE_CALLS:-1000}
	lifecycle_forms() {
		local db=$1 fq=$2 f start end out=() setup=() call=()
		shift 2
		while [ $# -gt 0 ] && [ "$1" != -- ]; do setup+=("$1"); shift; done
		[ $# -gt 0 ] && shift
		call=("$@")
		set -- "${setup[@]}"
		q "$@" -d "$db" -c "SELECT mm.create_queue('$fq', '$duel')" >/dev/null
		q "$@" -d "$db" -c "SELECT cardinality(mm.create_tickets('$fq', ARRAY(
			SELECT jsonb_build_array(jsonb_build_object('id', '$fq-' || i)) FROM generate_series(1, 2 * $forms_m) i)))" \
			-c "SELECT mm.tick('$fq')" >/dev/null
		q "$@" -d "$db" -c "SELECT cardinality(mm.create_tickets('$fq', ARRAY(
			SELECT jsonb_build_array(jsonb_build_object('id', '$fq-c' || i)) FROM generate_series(1, $forms_m) i)))" >/dev/null
		q "$@" -d "$db" -c "SELECT format('SELECT mm.assign(%L, %s, %L);', '$fq', id, '10.0.0.1:7777')
			FROM mm.matches WHERE queue = '$fq' AND status = 'ready' ORDER BY id" > "$dir/assign.sql"
		q "$@" -d "$db" -c "SELECT format('SELECT mm.get_assignment(%L, %s);', '$fq', min(ticket_id))
			FROM mm.match_players WHERE queue = '$fq' GROUP BY match_id ORDER BY match_id" > "$dir/get_assignment.sql"
		q "$@" -d "$db" -c "SELECT format('SELECT mm.complete_match(%L, %s);', '$fq', id)
			FROM mm.matches WHERE queue = '$fq' AND status = 'ready' ORDER BY id" > "$dir/complete_match.sql"
		q "$@" -d "$db" -c "SELECT format('SELECT mm.cancel_ticket(%L, %s);', '$fq', id)
			FROM mm.tickets_active WHERE queue = '$fq' AND status = 'searching' ORDER BY id" > "$dir/cancel_ticket.sql"
		for f in assign get_assignment complete_match cancel_ticket; do
			[ "$(wc -l < "$dir/$f.sql")" = "$forms_m" ] || { say "lifecycle forms: $f has $(wc -l < "$dir/$f.sql") calls, not $forms_m"; exit 1; }
			start=$(date +%s%N)
			q "${call[@]}" -d "$db" -f "$dir/$f.sql" >/dev/null
			end=$(date +%s%N)
			out+=("$(awk -v t=$((end - start)) -v m="$forms_m" 'BEGIN {printf "%.3f", t / 1e6 / m}')")
		done
		echo "${out[*]}"
	}
	declare -A lf_c lf_d lf_p lf_r lf_dr
	forms="assign get_assignment complete_match cancel_ticket"
	coord=(-h "$sock" -p "${ports[0]}")
	for r in $(seq 1 "$lifecycle_runs"); do
		fq=$(queue_on "${ports[1]}" "forms")
		read -r -a fc <<< "$(lifecycle_forms postgres "$fq" "${coord[@]}" -- "${coord[@]}")"
		read -r -a fd <<< "$(lifecycle_forms postgres "${fq}_node" "${coord[@]}" -- -h "$sock" \
			-p "$(qc -c "SELECT node_port FROM mm.queue_node('${fq}_node')")")"
		read -r -a fp <<< "$(lifecycle_forms "$plain_db" "$fq" --)"
		i=0
		for f in $forms; do
			lf_c[$f]+="${fc[$i]} " lf_d[$f]+="${fd[$i]} " lf_p[$f]+="${fp[$i]} "
			lf_r[$f]+="$(awk -v a="${fc[$i]}" -v b="${fp[$i]}" 'BEGIN {printf "%.2f", a / b}') "
			lf_dr[$f]+="$(awk -v a="${fd[$i]}" -v b="${fp[$i]}" 'BEGIN {printf "%.2f", a / b}') "
			i=$((i + 1))
		done
		say "lifecycle forms run $r (ms per call, coordinator / the queue's node / one node): $(i=0
			for f in $forms; do printf '%s %s / %s / %s; ' "$f" "${fc[$i]}" "${fd[$i]}" "${fp[$i]}"; i=$((i + 1)); done)"
	done
	lifecycle_rows=""
	for f in $forms; do
		c=$(printf '%s\n' ${lf_c[$f]} | median) d=$(printf '%s\n' ${lf_d[$f]} | median)
		p=$(printf '%s\n' ${lf_p[$f]} | median)
		lifecycle_rows+="| mm.$f(queue, id), one session through the coordinator vs one node, mean ms | $c | $p | $(ratio "$c" "$p")x | $(printf '%s\n' ${lf_r[$f]} | sort -n | paste -sd ' ') | <= 2x |"$'\n'
		lifecycle_rows+="| the same on the queue's node vs one node, mean ms | $d | $p | $(ratio "$d" "$p")x | $(printf '%s\n' ${lf_dr[$f]} | sort -n | paste -sd ' ') | |"$'\n'
	done
fi

cores=$(nproc 2>/dev/null || echo '?')
cat <<TABLE

Scale-out benchmark: $n tickets per tick, medians of $runs runs (ingest $ingest_runs, CPU $cpu_reps, lifecycle $lifecycle_runs), $cores cores
| figure | Citus | one node | ratio | runs' ratios | target |
| --- | --- | --- | --- | --- | --- |
| tick on the queue's worker, ms | $wt | $pt | $(ratio "$wt" "$pt")x | | <= 1.2x |
| its write phase, ms | $ww | $pw | $(ratio "$ww" "$pw")x | | |
| one psql call of the tick, on the coordinator vs on the node, ms (wall) | $rt | $pc | $(ratio "$rt" "$pc")x | | |
| two queues ($n_pair tickets each) on two workers: at once (Citus) vs one after the other (Citus), ms | $pt2 | $ps2 | $(ratio "$pt2" "$ps2")x | | <= 0.65x |
| mm.create_ticket through the coordinator, 8 clients, tickets/s | ${citus_tps%.*} | ${plain_tps%.*} | $(ratio "$citus_tps" "$plain_tps")x | $ingest_ratios | >= 0.5x |
| mm.create_ticket straight to the queue's node, 8 clients, tickets/s: worker 1 | ${direct1_tps%.*} | ${plain_tps%.*} | $(ratio "$direct1_tps" "$plain_tps")x | | >= 0.8x per node |
| the same, worker 2 | ${direct2_tps%.*} | ${plain_tps%.*} | $(ratio "$direct2_tps" "$plain_tps")x | $direct_ratios (the slower worker) | >= 0.8x per node |
| mm.create_tickets through the coordinator, batches of 1,000, tickets/s | $citus_batch | $plain_batch | $(ratio "$citus_batch" "$plain_batch")x | $batch_ratios | >= 0.8x |
| mm.create_tickets straight to the queue's node, batches of 1,000, tickets/s | $direct_batch | $plain_batch | $(ratio "$direct_batch" "$plain_batch")x | | |
| CPU s of all nodes' PostgreSQL processes per 1,000 tickets created and matched ($cpu_tickets tickets, $cpu_ticks ticks of each queue) | $cpu_citus | $cpu_plain | $(ratio "$cpu_citus" "$cpu_plain")x | $cpu_ratios | <= 1.5x |
| the same, the tickets sent straight to their queues' nodes | $cpu_direct | $cpu_plain | $(ratio "$cpu_direct" "$cpu_plain")x | $cpu_direct_ratios | <= 1.5x |
| the floor: CPU s per 1,000 calls of a distributed function by queue that does nothing, 8 clients through the coordinator vs one node | $cpu_nothing_citus | $cpu_nothing_plain | $(ratio "$cpu_nothing_citus" "$cpu_nothing_plain")x | | |
| the least a ticket through the coordinator can cost: straight to the nodes plus the floor's extra per call, vs one node's ticket | $cpu_bound | $cpu_plain | $(ratio "$cpu_bound" "$cpu_plain")x | | |
| CPU s of the VACUUM ANALYZE after those runs (autovacuum off during them), per 1,000 tickets: through the coordinator | $vac_citus | $vac_plain | $(ratio "$vac_citus" "$vac_plain")x | | |
| the same, straight to the nodes | $vac_direct | $vac_plain | $(ratio "$vac_direct" "$vac_plain")x | | |
| mm.heartbeat(queue, id): coordinator vs node, mean ms | $lc_citus | $lc_plain | $(ratio "$lc_citus" "$lc_plain")x | $lc_ratios | <= 2x |
| the same on the queue's node vs on the plain node, mean ms | $lc_direct | $lc_plain | $(ratio "$lc_direct" "$lc_plain")x | $lc_direct_ratios | |
| the floor: a distributed function by queue that does nothing, through the coordinator vs on the plain node, mean ms | $lc_nothing_citus | $lc_nothing_plain | $(ratio "$lc_nothing_citus" "$lc_nothing_plain")x | | |
${lifecycle_rows:-}
TABLE
