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

# The what-if against reality: the run replayed with the queue's own config
# (the acceptance step and the penalties modelled, docs/metrics.md); the run
# is in simulated time from 2026-01-01 00:00 UTC.
mm_psql -At -F ' ' -c "
SELECT format('what-if (mm.replay of the live config): matched %s recorded, %s replayed (%s%%); time to match p95 %s s recorded, %s s replayed (%s%%); proposals cancelled %s recorded, %s replayed',
              r ->> 'matched', p ->> 'matched',
              round(100 * ((p ->> 'matched')::numeric / nullif((r ->> 'matched')::numeric, 0) - 1), 1),
              r ->> 'time_to_match_p95', p ->> 'time_to_match_p95',
              round(100 * ((p ->> 'time_to_match_p95')::numeric / nullif((r ->> 'time_to_match_p95')::numeric, 0) - 1), 1),
              r ->> 'proposals_cancelled', p ->> 'proposals_cancelled')
  FROM (SELECT x -> 'recorded' AS r, x -> 'replay' AS p
          FROM mm.replay('penalties_3v3', NULL, '2026-01-01 00:00:00+00', '2026-01-01 01:30:00+00') x) w"
