#!/usr/bin/env bash
# The main job: a demo of matchmaking on a throwaway local cluster.
#   bash test/demo.sh
source "$(dirname "$0")/scripts/common.sh"

export MM_CRON_DB=matchmaking_demo
mm_init 54330

mm_install_packages
mm_prepare_pgroot
mm_fresh_workdir
trap mm_cluster_stop EXIT
trap 'exit 130' INT TERM
mm_build_install
mm_cluster_start

mm_psql -d postgres -c "CREATE DATABASE $MM_CRON_DB"
export PGDATABASE=$MM_CRON_DB
mm_psql -c "CREATE EXTENSION pg_cron" -c "CREATE EXTENSION matchmaking"

mm_log "ratings"
mm_as_user psql -X -v ON_ERROR_STOP=1 -f "$MM_TREE/test/demo/ratings.sql"
