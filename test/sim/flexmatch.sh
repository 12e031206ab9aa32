#!/usr/bin/env bash
# FlexMatch's benchmark replayed in simulated time, on a throwaway cluster:
# the figures of docs/demo-and-simulator.md.  Four rule sets, one queue each:
# Classic, Survival, Practice and the multi-mode "All" (each ticket lists the
# modes it will play; a compound rule; see FlexMatchAllConfig in mm_sim.c).
# Like FlexMatch's, the replay asks the players to accept each match (10 s;
# each player accepts with probability 0.9, where FlexMatch's figures fit 0.9
# per match: the output says so under its table), and the games end with a
# reported result.
#   bash test/sim/flexmatch.sh                 # seed 1
#   bash test/sim/flexmatch.sh --seed 7        # any mm_sim options
#   bash test/sim/flexmatch.sh --acceptance-timeout 0   # without the acceptance step
#   bash test/sim/flexmatch.sh --rule-sets classic,survival,practice   # without "All"
#   MM_SIM_CHECK=1 bash test/sim/flexmatch.sh  # also check that a second run gives the same figures
source "$(dirname "$0")/../scripts/common.sh"

export MM_CRON_DB=mm_sim
mm_init 54332
mm_install_packages
mm_prepare_pgroot
mm_fresh_workdir
trap mm_cluster_stop EXIT
trap 'exit 130' INT TERM
mm_build_install sim
mm_cluster_start

mm_psql -d postgres -c "CREATE DATABASE mm_sim"
export PGDATABASE=mm_sim
mm_psql -c "CREATE EXTENSION matchmaking"

sim=$MM_TREE/test/sim/mm_sim
# the four rule sets unless the arguments say otherwise (a later option wins)
sets=(--rule-sets classic,survival,practice,all)
mm_log "mm_sim --flexmatch ${sets[*]} --seed 1 $*"
mm_as_user "$sim" --flexmatch "${sets[@]}" --seed 1 --chart "$MM_WORKDIR/flexmatch-chart.html" "$@" | tee "$MM_WORKDIR/run1.txt"

if [ "${MM_SIM_CHECK:-0}" = 1 ]; then
	mm_log "the same run again (another run tag, the queues re-created): the figures must not change"
	mm_as_user "$sim" --flexmatch "${sets[@]}" --seed 1 --run again --quiet "$@" > "$MM_WORKDIR/run2.txt"
	# everything but the echoed command line and the chart path
	if diff <(grep -v '^mm_sim \|^chart: ' "$MM_WORKDIR/run1.txt") \
			<(grep -v '^mm_sim \|^chart: ' "$MM_WORKDIR/run2.txt"); then
		mm_log "same figures: the simulation is reproducible"
	else
		mm_log "the figures differ between two runs with the same seed"
		exit 1
	fi
fi
mm_log "chart (ours, with FlexMatch's published average times dashed): $MM_WORKDIR/flexmatch-chart.html"
