#!/usr/bin/env bash
# The main job: a demo of matchmaking on a throwaway local cluster.
#   bash test/demo.sh                      # about a minute and a half
#   bash test/demo.sh --seconds 300 --interval 0.5-2   # longer and busier
#
# Installs what it needs, builds the extension and the simulator, starts a
# cluster with pg_cron, creates example queues and has pg_cron tick them
# (mm.schedule).  The live part: the simulator sends players in real time
# (a progress line), they accept their matches in ranked_5v5, play, some quit
# early (mm.leave_match), and the game servers report the results
# (mm.report_result), while a LISTEN client prints the matches as they are
# announced.  Meanwhile FlexMatch's benchmark is replayed in simulated time in
# the background; its summary follows the live part.  Then the analysts'
# report (each target: met or not, and why a miss is expected here), the
# what-if (test/demo/whatif.sql: one queue's tickets of the run replayed by
# mm.replay with its own config and with a looser one) and the charts.  The
# cluster is stopped at the end and on Ctrl-C.
#
# Options (or environment):
#   --seconds N        real-time traffic after the first tick (MM_DEMO_SECONDS, 60)
#   --interval MIN-MAX seconds between tickets of each queue (MM_DEMO_INTERVAL, 2-6)
#   --seed N           simulator seed (MM_DEMO_SEED, 1)
#   --no-replay        skip the simulated-time FlexMatch replay (MM_DEMO_REPLAY=0)
#   --ratings          also show the rating functions one by one (MM_DEMO_RATINGS=1)
#   MM_DEMO_WHATIF_QUEUE, MM_DEMO_WHATIF_MAX  the what-if's queue (rd_practice) and
#                      its candidate's max for the queue's first skill rule (400)
source "$(dirname "$0")/scripts/common.sh"

demo_started=$(date +%s)
demo_seconds=${MM_DEMO_SECONDS:-60}
demo_interval=${MM_DEMO_INTERVAL:-2-6}
demo_seed=${MM_DEMO_SEED:-1}
demo_replay=${MM_DEMO_REPLAY:-1}
demo_ratings=${MM_DEMO_RATINGS:-0}
while [ $# -gt 0 ]; do
	case "$1" in
		--seconds) demo_seconds=$2; shift 2 ;;
		--interval) demo_interval=$2; shift 2 ;;
		--seed) demo_seed=$2; shift 2 ;;
		--no-replay) demo_replay=0; shift ;;
		--ratings) demo_ratings=1; shift ;;
		-h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
case "$demo_seconds" in ''|*[!0-9]*) echo "--seconds: a whole number of seconds" >&2; exit 2 ;; esac

export MM_CRON_DB=matchmaking_demo
mm_init 54330

listener_pid=""
replay_pid=""
demo_cleanup() {
	local pid
	for pid in "$listener_pid" "$replay_pid"; do
		if [ -n "$pid" ]; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	listener_pid=""
	replay_pid=""
	mm_cluster_stop
}

MM_ON_EXIT=demo_cleanup MM_BUILD_TARGETS=sim mm_setup_throwaway

mm_psql -d postgres -c "CREATE DATABASE $MM_CRON_DB" -c "CREATE DATABASE matchmaking_replay"
# the replay runs in a database of its own: its events and figures stay apart
mm_psql -d matchmaking_replay -c "CREATE EXTENSION matchmaking"
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
replay_chart=$MM_WORKDIR/flexmatch-chart.html
# the what-if: a queue without an acceptance step (the replay has none), its
# fair_teams rule at its first expansion step (400) from the start
whatif_queue=${MM_DEMO_WHATIF_QUEUE:-rd_practice}
whatif_max=${MM_DEMO_WHATIF_MAX:-400}
whatif_chart=$MM_WORKDIR/whatif-chart.html

mm_log "example queues (test/demo/queues.sql): ranked_5v5 asks its players to accept (10 s); every queue rates its players (Glicko-2, pool \"demo\")"
demo_psql -q -f "$MM_TREE/test/demo/queues.sql"
mm_log "scheduling every queue with pg_cron: mm.schedule(name, '1 second')"
demo_psql -q -c \
	"SELECT q.name AS queue, mm.schedule(q.name, '1 second') AS cron_job FROM mm.queues q ORDER BY q.name"

# The queues tick at once when mm.schedule starts their loop itself; with
# pg_cron 1.4.2 alone (Debian 12) the first tick comes at the next minute
# boundary, and tickets created before it wait for it.
wait_s=0
for i in $(seq 1 25); do
	# pg_cron 1.5 and later run second schedules themselves; 1.4 runs our per-minute loop
	running=$(mm_as_user psql -X -At -c \
		"SELECT (SELECT p.mode <> 'loop' FROM mm.schedule_plan('1 second',
		                 (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'pg_cron')) p)
		     OR count(*) FILTER (WHERE mm.tick_loop_running(q.name)) = count(*) FROM mm.queues q" 2>/dev/null || echo f)
	[ "$running" = t ] && break
	sleep 0.2
done
if [ "$running" = t ]; then
	mm_log "every queue is ticking now, once a second"
else
	now_s=$(date +%s)
	wait_s=$(( 60 - now_s % 60 ))
	mm_log "pg_cron runs jobs by the minute: the first tick is at $(date -d "@$(( now_s + wait_s ))" +%H:%M:%S) (in ${wait_s} s)."
	mm_log "Tickets queue up until then; from then on every queue is ticked every second."
fi
run_s=$(( wait_s + demo_seconds ))

if [ "$demo_replay" = 1 ]; then
	# simulated time, in the background: only its summary is shown, after the live part
	PGDATABASE=matchmaking_replay mm_as_user "$sim" --flexmatch --seed "$demo_seed" --run replay --quiet \
		--chart "$replay_chart" > "$MM_WORKDIR/replay.txt" 2>&1 &
	replay_pid=$!
fi

mm_log "LISTEN mm_events: the matches as they are announced (found or proposed, cancelled, results, early quits)"
# run directly (not through runuser) so that $! is the client itself
env PGHOST="$MM_SOCKDIR" PGPORT="$MM_PORT" PGUSER=postgres PGDATABASE="$MM_CRON_DB" "$listen" \
	--events match_found,match_proposed,match_cancelled,match_result,player_left,ticket_timed_out &
listener_pid=$!

mm_log "the players, in real time for ${run_s} s (--interval $demo_interval); Ctrl-C stops"
sim_args=(--realtime --queues "$demo_queues" --seconds "$run_s" --interval "$demo_interval"
	--drain 15 --seed "$demo_seed" --run demo --chart "$chart")
mm_as_user "$sim" "${sim_args[@]}"

kill "$listener_pid" 2>/dev/null || true
wait "$listener_pid" 2>/dev/null || true
listener_pid=""

mm_log "ratings moved by the simulated outcomes"
demo_psql -q -v run=demo -f "$MM_TREE/test/demo/players.sql"

if [ "$demo_replay" = 1 ]; then
	replay_rc=0
	wait "$replay_pid" || replay_rc=$?
	replay_pid=""
	if [ "$replay_rc" -ne 0 ]; then
		cat "$MM_WORKDIR/replay.txt" >&2
		mm_log "the FlexMatch replay failed (exit $replay_rc)"
		exit 1
	fi
	mm_log "FlexMatch's benchmark, replayed in simulated time meanwhile (mm_sim --flexmatch): the same rules and traffic, ours beside FlexMatch's published figures"
	mm_log "not like for like: our players accept each on their own (0.9 per player), FlexMatch's figures fit 0.9 per match (see the lines under the table)"
	# the figures only (not the command line and the chart path, which is below)
	grep -v '^mm_sim \|^chart: \|^$' "$MM_WORKDIR/replay.txt" || true
fi

if [ "$demo_ratings" = 1 ]; then
	mm_log "the rating functions"
	demo_psql -f "$MM_TREE/test/demo/ratings.sql"
fi

mm_log "the analysts' report: the last hour, that is the real-time run"
demo_psql -q -v wait_s="$wait_s" -v seconds="$demo_seconds" <<'SQL'
\pset footer off
\echo 'Targets (mm.health_report with its default targets): met or not, and why a miss is expected here'
WITH h AS (
	SELECT to_jsonb(h) AS j, row_number() OVER () AS n FROM mm.health_report(NULL, '1 hour') h
), cancelled AS (
	-- the cancelled tickets: a player of it did not accept a proposal, or the run ended
	SELECT EXISTS (SELECT FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
	                WHERE mp.ticket_id = t.id AND mp.accepted IS NOT TRUE
	                  AND m.cancel_reason IN ('rejected', 'acceptance_timeout')) AS not_accepted
	  FROM mm.tickets t
	 WHERE t.created_at > now() - interval '1 hour' AND t.status = 'cancelled'
), facts AS (
	SELECT (SELECT count(*) FROM mm.match_results r
	         WHERE r.reported_at > now() - interval '1 hour' AND r.predicted_favourite IS NOT NULL) AS predicted,
	       (SELECT count(*) FILTER (WHERE NOT c.not_accepted) FROM cancelled c) AS cancelled_at_end,
	       (SELECT count(*) FILTER (WHERE c.not_accepted) FROM cancelled c) AS not_accepted,
	       (SELECT count(*) FROM mm.tickets t
	         WHERE t.created_at > now() - interval '1 hour' AND t.status = 'timed_out') AS timed_out
)
SELECT j->>'metric' AS metric, j->>'value' AS value, j->>'target' AS target,
       CASE (j->>'meets_target')::boolean WHEN true THEN 'met' WHEN false THEN 'MISSED' ELSE 'no data' END AS met,
       CASE WHEN (j->>'meets_target')::boolean THEN ''
            WHEN j->>'meets_target' IS NULL THEN 'nothing to measure in the window'
            WHEN j->>'metric' ILIKE '%quality%'
            THEN 'few players per queue (one ticket every 2-6 s): the rules widen with the wait, and wider matches score lower'
            WHEN j->>'metric' ILIKE '%p95%'
            THEN 'a 10-player match needs players who arrive over ~40 s at this traffic'
                 || CASE WHEN :wait_s > 0 THEN format(', and the tickets made before pg_cron''s first tick waited for it (%s s)', :wait_s) ELSE '' END
            WHEN j->>'metric' ILIKE '%2 minutes%' OR j->>'metric' ILIKE '%within%'
            THEN format('%s tickets timed out: one ticket every 2-6 s per queue is little traffic for the narrowest rules (the %s tickets cancelled at the end or because a player did not accept do not count)',
                        f.timed_out, f.cancelled_at_end + f.not_accepted)
            WHEN j->>'metric' ILIKE '%latency%'
            THEN 'by construction: the simulated players'' latency to every region is drawn from N(70, 20) ms, and the rules accept up to 80-150 ms'
            WHEN j->>'metric' ILIKE '%quit%'
            THEN 'the simulator makes 4% of the players quit somewhere in the first 60% of a game (--leave-rate)'
            WHEN j->>'metric' ILIKE '%win%'
            THEN format('%s results with a favourite: a win rate over so few games is uncertain by about %s points (50/sqrt(n)), and every new player starts at the same default rating',
                        f.predicted, round(50 / sqrt(greatest(f.predicted, 1))))
            ELSE '' END AS "why a miss is expected"
  FROM h, facts f
 WHERE j->>'target' IS NOT NULL
 ORDER BY n;

\echo 'Results, as the game servers reported them (mm.report_result), per queue; players who left at any'
\echo 'time (mm.leave_match; the early quits above count those who left in the first 20% of a game)'
SELECT m.queue,
       count(*) AS results,
       round(100.0 * avg((r.winner_team = r.predicted_favourite)::int) FILTER (WHERE r.predicted_favourite IS NOT NULL), 1)
         AS favourite_won_pct,
       round(100 * avg(r.favourite_win_probability)::numeric, 1) AS favourite_predicted_pct,
       round(avg(extract(epoch FROM r.duration))::numeric, 1) AS game_s,
       sum(p.players) AS players,
       sum(p.quits) AS left_before_the_end,
       round(100.0 * sum(p.quits) / nullif(sum(p.players), 0), 1) AS left_pct
  FROM mm.match_results r
  JOIN mm.matches m ON m.id = r.match_id
  CROSS JOIN LATERAL (SELECT count(*) AS players, count(*) FILTER (WHERE mp.left_at IS NOT NULL) AS quits
                        FROM mm.match_players mp WHERE mp.match_id = m.id) p
 WHERE r.reported_at > now() - interval '1 hour'
 GROUP BY m.queue
 ORDER BY m.queue;
SQL

mm_log "fairness (docs/fairness.md): the scorecard and the calibration of this run"
demo_psql -q -f "$MM_TREE/test/demo/fairness.sql"

mm_log "what-if (mm.replay): $whatif_queue's tickets of this run replayed with its own config and with a looser one, beside what happened"
demo_psql -q -v queue="$whatif_queue" -v max="$whatif_max" -v chart="$whatif_chart" -f "$MM_TREE/test/demo/whatif.sql"

mm_log "chart of the live run (real time, the demo's queues): $chart"
mm_log "chart of the what-if ($whatif_queue: recorded, replayed with its config, replayed with the candidate): $whatif_chart"
[ "$demo_replay" = 1 ] && mm_log "chart of the FlexMatch replay (simulated time; FlexMatch's published times dashed): $replay_chart"
mm_log "done in $(( $(date +%s) - demo_started )) s (the cluster stops now; the charts stay in $MM_WORKDIR until the next run)"
