#!/usr/bin/env bash
# Penalties for dodgers and leavers in simulated time, on a throwaway
# cluster: the figures of docs/demo-and-simulator.md (penalties and the
# low-priority pool).  One 3v3 queue, penalties_3v3, with FlexMatch's Classic
# rules, a 10 s acceptance step and the penalties of docs/penalties.md
# (cooldowns 60 / 30 / 300 s for a dodge, an acceptance timeout, a leave,
# doubled at each offence up to an hour; from the second offence 3 games in
# the low-priority pool, at most 120 s; 5 good games forgive an offence).
# Players dodge a proposal with --dodge-rate (0.05), of the others 2 % never
# answer, 4 % of the players leave a game early.  Prints the offences by
# reason, the waits of the low-priority pool and of the others, and fails
# (exit 3) if a penalised ticket waited past the pool's bound + 60 s.
#   bash test/sim/penalties.sh                       # seed 1, 840 tickets
#   bash test/sim/penalties.sh --dodge-rate 0.1 --leave-rate 0.1
source "$(dirname "$0")/../scripts/common.sh"

export MM_CRON_DB=mm_sim
mm_init 54334
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
mm_log "mm_sim --penalties --seed 1 $*"
mm_as_user "$sim" --penalties --seed 1 "$@"
