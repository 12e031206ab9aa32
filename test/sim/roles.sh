#!/usr/bin/env bash
# A 5v5 role queue in simulated time, on a throwaway cluster: the figures of
# docs/demo-and-simulator.md (role queues).  Two queues fed at once, each
# team one tank, one healer and three dps, FlexMatch's Classic rules:
# roles_5v5 without autofill, roles_5v5_autofill with autofill after 60 s
# (protection 3 games).  Supports are scarce: first choices tank 20 %,
# healer 15 %, dps 65 %; --role-second of the players (default 0.6) name a
# second role, 10 % end with "fill".  Prints time to match per role played
# and per first choice (median, p90), and where each player was seated.
# Without the acceptance step unless asked (it would dominate the waits).
#   bash test/sim/roles.sh                          # seed 1, parties of 1-5
#   bash test/sim/roles.sh --party 1-2 --interval 1-3 --role-second 0.2
#   bash test/sim/roles.sh --acceptance-timeout 10  # with acceptance (0.9 per player)
source "$(dirname "$0")/../scripts/common.sh"

export MM_CRON_DB=mm_sim
mm_init 54333
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
mm_log "mm_sim --roles --acceptance-timeout 0 --seed 1 $*"
mm_as_user "$sim" --roles --acceptance-timeout 0 --seed 1 --chart "$MM_WORKDIR/roles-chart.html" "$@"
mm_log "chart: $MM_WORKDIR/roles-chart.html"
