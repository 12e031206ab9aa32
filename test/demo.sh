#!/usr/bin/env bash
# The main job: a demo of matchmaking on a throwaway local cluster.
#   bash test/demo.sh                      # about two minutes
#   bash test/demo.sh --seconds 300 --interval 0.5-2   # longer and busier
#
# Installs what it needs, builds the extension and the simulator, starts a
# cluster with pg_cron, creates example queues, has pg_cron tick them
# (mm.schedule) while the simulator sends players in real time and a LISTEN
# client prints every match as it is announced; game outcomes go through the
# rating functions; then the FlexMatch replay in simulated time, the ratings
# showcase, the analysts' report and an HTML chart.  The cluster is stopped at
# the end and on Ctrl-C.
#
# Options (or environment):
#   --seconds N        real-time traffic after the first pg_cron tick (MM_DEMO_SECONDS, 60)
#   --interval MIN-MAX seconds between tickets of each queue (MM_DEMO_INTERVAL, 2-6)
#   --seed N           simulator seed (MM_DEMO_SEED, 1)
#   --no-replay        skip the simulated-time FlexMatch replay (MM_DEMO_REPLAY=0)
source "$(dirname "$0")/scripts/common.sh"

demo_seconds=${MM_DEMO_SECONDS:-60}
demo_interval=${MM_DEMO_INTERVAL:-2-6}
demo_seed=${MM_DEMO_SEED:-1}
demo_replay=${MM_DEMO_REPLAY:-1}
while [ $# -gt 0 ]; do
	case "$1" in
		--seconds) demo_seconds=$2; shift 2 ;;
		--interval) demo_interval=$2; shift 2 ;;
		--seed) demo_seed=$2; shift 2 ;;
		--no-replay) demo_replay=0; shift ;;
		-h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
case "$demo_seconds" in ''|*[!0-9]*) echo "--seconds: a whole number of seconds" >&2; exit 2 ;; esac

export MM_CRON_DB=matchmaking_demo
mm_init 54330

listener_pid=""
demo_cleanup() {
	if [ -n "$listener_pid" ]; then
		kill "$listener_pid" 2>/dev/null || true
		wait "$listener_pid" 2>/dev/null || true
		listener_pid=""
	fi
	mm_cluster_stop
}

MM_ON_EXIT=demo_cleanup MM_BUILD_TARGETS=sim mm_setup_throwaway

mm_psql -d postgres -c "CREATE DATABASE $MM_CRON_DB"
export PGDATABASE=$MM_CRON_DB
mm_psql -c "CREATE EXTENSION pg_cron" -c "CREATE EXTENSION matchmaking"

# psql for the demo's output: no pager, so the demo never stops to wait for a key
demo_psql() {
	mm_as_user psql -X -v ON_ERROR_STOP=1 -P pager=off "$@"
}

sim=$MM_TREE/test/sim/mm_sim
listen=$MM_TREE/test/sim/mm_listen
demo_queues="ranked_5v5,casual,rd_classic,rd_survival,rd_practice"
chart=$MM_WORKDIR/demo-chart.html

mm_log "example queues (test/demo/queues.sql)"
demo_psql -q -f "$MM_TREE/test/demo/queues.sql"

mm_log "scheduling every queue with pg_cron: mm.schedule(queue, '1 second')"
demo_psql -q -c \
	"SELECT q.name AS queue, mm.schedule(q.name, '1 second') AS cron_job FROM mm.queues q ORDER BY q.name"

# pg_cron 1.4.2 (Debian 12) schedules by the minute: the job mm.schedule made
# first runs at the next minute boundary, then ticks every second.
now_s=$(date +%s)
wait_s=$(( 60 - now_s % 60 ))
run_s=$(( wait_s + demo_seconds ))
first_tick=$(date -d "@$(( now_s + wait_s ))" +%H:%M:%S)
mm_log "pg_cron 1.4.2 runs jobs by the minute: the first tick is at $first_tick (in ${wait_s} s)."
mm_log "Tickets queue up until then; from then on every queue is ticked every second."

mm_log "LISTEN mm_events: matches are printed as they are announced"
# run directly (not through runuser) so that $! is the client itself
env PGHOST="$MM_SOCKDIR" PGPORT="$MM_PORT" PGUSER=postgres PGDATABASE="$MM_CRON_DB" "$listen" &
listener_pid=$!

mm_log "simulating players in real time for ${run_s} s (--interval $demo_interval); Ctrl-C stops"
sim_args=(--realtime --queues "$demo_queues" --seconds "$run_s" --interval "$demo_interval"
	--seed "$demo_seed" --run demo --chart "$chart")
mm_as_user "$sim" "${sim_args[@]}"

kill "$listener_pid" 2>/dev/null || true
wait "$listener_pid" 2>/dev/null || true
listener_pid=""

mm_log "ratings moved by the simulated outcomes"
demo_psql -q -v run=demo -f "$MM_TREE/test/demo/players.sql"

if [ "$demo_replay" = 1 ]; then
	mm_log "FlexMatch's benchmark replayed in simulated time (mm_sim --flexmatch)"
	mm_as_user "$sim" --flexmatch --seed "$demo_seed" --run replay --chart "$MM_WORKDIR/flexmatch-chart.html"
	# its simulated hour lies in the past: the report below covers the real-time run
	demo_psql -q -o /dev/null -c "SELECT mm.drop_queue(name, force => true) FROM mm.queues WHERE name LIKE 'flexmatch\_%' ORDER BY name"
fi

mm_log "ratings"
demo_psql -f "$MM_TREE/test/demo/ratings.sql"

mm_log "the analysts' report"
demo_psql -q -f "$MM_TREE/test/demo/report.sql"

mm_log "chart of the real-time run: $chart"
[ "$demo_replay" = 1 ] && mm_log "chart of the FlexMatch replay: $MM_WORKDIR/flexmatch-chart.html"
mm_log "done (the cluster stops now; the charts stay in $MM_WORKDIR until the next run)"
