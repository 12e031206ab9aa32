#!/usr/bin/env bash
# Builds the test support module test/modules/matchmaking_test in the test
# tree (warnings are errors, as the extension's build) and installs it beside
# the extension: into MM_PGROOT when set, else the system's PostgreSQL.
# test/run-tests.sh calls it after the extension is built and installed; it
# takes the same environment as test/scripts/common.sh (MM_TREE, MM_PGROOT,
# MM_BINDIR, MM_EXTRA_CFLAGS, as mm_init exports them).
#   bash test/modules/install.sh
source "$(dirname "$0")/../scripts/common.sh"

: "${MM_TREE:?MM_TREE is not set: run from test/run-tests.sh, after mm_init}"
: "${MM_BINDIR:?MM_BINDIR is not set: run from test/run-tests.sh, after mm_init}"

mm_test_module=$MM_TREE/test/modules/matchmaking_test
mm_log "building the test module matchmaking_test"
mm_as_user make -C "$mm_test_module" PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" -s \
	-j"$(nproc 2>/dev/null || echo 2)" PG_CFLAGS="-Werror ${MM_EXTRA_CFLAGS:-}" all >/dev/null
mm_log "installing the test module${MM_PGROOT:+ into $MM_PGROOT}"
make -C "$mm_test_module" PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" -s install \
	${MM_PGROOT:+DESTDIR=$MM_PGROOT} >/dev/null
