#!/usr/bin/env bash
# Benchmarks: ratios measured in one run on one throwaway cluster (machines are
# noisy, so every figure is reported next to its baseline from the same run).
#   bash test/bench/run.sh              # every benchmark
#   bash test/bench/run.sh ratings      # those whose file name starts with "ratings"
#   bash test/bench/run.sh citus        # scale-out on Citus (builds Citus if needed)
#   bash test/bench/run.sh roles        # a 5v5 role queue vs the same queue without roles (roles.sh)
#   bash test/bench/run.sh replay       # a day of a busy queue ticked live, then replayed by mm.replay (replay.sh)
source "$(dirname "$0")/../scripts/common.sh"

mm_init 54331
mm_setup_throwaway "max_parallel_workers_per_gather = 2" "shared_buffers = '1GB'" "work_mem = '64MB'"

# the scale-out benchmark (citus.sh) starts its own Citus nodes: Citus is
# built here when missing, as for the tests
case "${1:-}" in
"" | c | ci | cit | citu | citus*) mm_setup_citus || true ;;
esac

# the git checkout, for a benchmark that builds a released commit (core.sh)
export MM_SRC

mm_psql -d postgres -c "CREATE DATABASE mm_bench"
export PGDATABASE=mm_bench
mm_psql -c "CREATE EXTENSION matchmaking"

for f in "$MM_TREE"/test/bench/${1:-}*.sql; do
	[ -f "$f" ] || continue
	mm_log "benchmark $(basename "$f")"
	mm_as_user psql -X -v ON_ERROR_STOP=1 -q -f "$f"
done
for f in "$MM_TREE"/test/bench/${1:-}*.sh; do
	[ -f "$f" ] || continue
	[ "$(basename "$f")" = run.sh ] && continue
	mm_log "benchmark $(basename "$f")"
	mm_as_user bash "$f"
done
