#!/usr/bin/env bash
# Shared set-up for the two README commands (test/run-tests.sh, test/demo.sh)
# and the benchmarks: Debian packages, build, install, and a throwaway
# PostgreSQL cluster run by an unprivileged OS user on its own port and socket
# directory with pg_cron preloaded.
#
# Settings (environment):
#   MM_PORT     port of the throwaway cluster (each script has its default)
#   MM_WORKDIR  where the cluster, the socket and a writable copy of the tree go
#               (default /tmp/matchmaking-<port>; wiped at start)
#   MM_PGROOT   install into this private copy of the PostgreSQL installation
#               instead of the system one (lets several checkouts test at once)
#   MM_SKIP_APT set to 1 to skip the package check
#   MM_CITUS_ARCHIVE  the Citus source archive built when no Citus is installed
#               (default: shared/vendor/citus-13.0.5.tar.gz beside the checkout)

set -euo pipefail

MM_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MM_PG_VERSION=15
MM_SYSTEM_BINDIR=/usr/lib/postgresql/$MM_PG_VERSION/bin
MM_PGXS_DIR=/usr/lib/postgresql/$MM_PG_VERSION/lib/pgxs
MM_RUN_USER=postgres
MM_PACKAGES="postgresql-$MM_PG_VERSION postgresql-server-dev-$MM_PG_VERSION postgresql-$MM_PG_VERSION-cron libipc-run-perl libpq-dev make gcc rsync python3-psycopg \
	prometheus-postgres-exporter prometheus"
# what building Citus from source needs beyond MM_PACKAGES
MM_CITUS_PACKAGES="libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev"

mm_log() { printf '==> %s\n' "$*" >&2; }

# Runs a command as the unprivileged cluster owner (initdb and postgres refuse root).
mm_as_user() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$MM_RUN_USER" -- env PATH="$MM_BINDIR:$PATH" PGHOST="$MM_SOCKDIR" PGPORT="$MM_PORT" \
			PGUSER=postgres PGDATABASE="${PGDATABASE:-postgres}" "$@"
	else
		env PATH="$MM_BINDIR:$PATH" PGHOST="$MM_SOCKDIR" PGPORT="$MM_PORT" "$@"
	fi
}

# Installs the Debian packages named as arguments (default: MM_PACKAGES).
mm_install_packages() {
	[ "${MM_SKIP_APT:-0}" = 1 ] && return 0
	local missing=""
	for p in ${*:-$MM_PACKAGES}; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing Debian packages:$missing (run as root to install them)" >&2
		exit 1
	fi
	mm_log "installing Debian packages:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends $missing >/dev/null
}

# Sets the paths every other function uses.
mm_init() {
	MM_PORT=${MM_PORT:-$1}
	MM_WORKDIR=${MM_WORKDIR:-/tmp/matchmaking-$MM_PORT}
	MM_DATADIR=$MM_WORKDIR/data
	MM_SOCKDIR=$MM_WORKDIR/sock
	MM_TREE=$MM_WORKDIR/tree
	if [ -n "${MM_PGROOT:-}" ]; then
		MM_BINDIR=$MM_PGROOT$MM_SYSTEM_BINDIR
	else
		MM_BINDIR=$MM_SYSTEM_BINDIR
	fi
	export MM_PORT MM_WORKDIR MM_DATADIR MM_SOCKDIR MM_TREE MM_BINDIR
}

# A private copy of the PostgreSQL installation; postgres finds its share and
# lib directories relative to its own binary, so the copy is self-contained.
mm_prepare_pgroot() {
	[ -z "${MM_PGROOT:-}" ] && return 0
	[ -x "$MM_BINDIR/postgres" ] && return 0
	mm_log "creating private PostgreSQL root $MM_PGROOT"
	mkdir -p "$MM_PGROOT/usr/lib/postgresql" "$MM_PGROOT/usr/share/postgresql"
	cp -a /usr/lib/postgresql/$MM_PG_VERSION "$MM_PGROOT/usr/lib/postgresql/"
	cp -a /usr/share/postgresql/$MM_PG_VERSION "$MM_PGROOT/usr/share/postgresql/"
}

# Stops a cluster left over by an earlier run of the same port, then starts afresh.
mm_fresh_workdir() {
	if [ -f "$MM_DATADIR/postmaster.pid" ]; then
		mm_log "stopping a cluster left by an earlier run"
		mm_as_user pg_ctl -D "$MM_DATADIR" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$MM_WORKDIR"
	mkdir -p "$MM_WORKDIR" "$MM_SOCKDIR"
	# a writable copy of the tree for the unprivileged user (pg_regress writes results/)
	rsync -a --exclude .git --exclude '*.o' --exclude '*.so' --exclude '*.bc' \
		--exclude results --exclude output_iso --exclude tmp_check "$MM_SRC/" "$MM_TREE/"
	if [ "$(id -u)" -eq 0 ]; then
		chown -R "$MM_RUN_USER": "$MM_WORKDIR"
		chmod 755 "$MM_WORKDIR"
	fi
}

# Builds with warnings as errors and installs (system-wide, or into MM_PGROOT).
mm_build_install() {
	mm_log "building (warnings are errors)"
	local jobs
	jobs=$(nproc 2>/dev/null || echo 2)
	mm_as_user make -C "$MM_TREE" PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" -s -j"$jobs" PG_CFLAGS="-Werror ${MM_EXTRA_CFLAGS:-}" all "$@" >/dev/null
	mm_log "installing the extension${MM_PGROOT:+ into $MM_PGROOT}"
	make -C "$MM_TREE" PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" -s install ${MM_PGROOT:+DESTDIR=$MM_PGROOT} >/dev/null
}

# initdb + start.  Extra postgresql.conf lines come as arguments.
mm_cluster_start() {
	mm_log "starting a throwaway cluster on port $MM_PORT (socket $MM_SOCKDIR)"
	mm_as_user initdb -D "$MM_DATADIR" -U postgres -A trust --no-sync -E UTF8 --locale=C >/dev/null
	{
		echo "port = $MM_PORT"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$MM_SOCKDIR'"
		echo "shared_preload_libraries = 'pg_cron'"
		echo "cron.database_name = '${MM_CRON_DB:-postgres}'"
		# pg_cron runs jobs over libpq; the cluster listens on its socket only
		echo "cron.host = '$MM_SOCKDIR'"
		echo "max_connections = 100"
		echo "max_worker_processes = 16"
		echo "fsync = off"
		echo "synchronous_commit = off"
		echo "full_page_writes = off"
		echo "log_min_messages = warning"
		echo "lc_messages = 'C'"
		for line in "$@"; do echo "$line"; done
	} >> "$MM_DATADIR/postgresql.conf"
	mm_as_user pg_ctl -D "$MM_DATADIR" -l "$MM_WORKDIR/postgresql.log" -w -t 60 start >/dev/null
	MM_CLUSTER_STARTED=1
}

mm_cluster_stop() {
	if [ "${MM_CLUSTER_STARTED:-0}" = 1 ] && [ -f "$MM_DATADIR/postmaster.pid" ]; then
		mm_log "stopping the throwaway cluster"
		mm_as_user pg_ctl -D "$MM_DATADIR" -m fast -w stop >/dev/null 2>&1 || \
			mm_as_user pg_ctl -D "$MM_DATADIR" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	MM_CLUSTER_STARTED=0
}

mm_psql() {
	mm_as_user psql -X -v ON_ERROR_STOP=1 -q "$@"
}

# The whole set-up every entry script does: packages, a fresh work directory,
# build and install (plus the make targets in MM_BUILD_TARGETS), then a started
# cluster (extra postgresql.conf lines as arguments).  On exit, failure or
# Ctrl-C the function named by MM_ON_EXIT (default: stop the cluster) runs.
mm_setup_throwaway() {
	mm_install_packages
	mm_prepare_pgroot
	mm_fresh_workdir
	trap "${MM_ON_EXIT:-mm_cluster_stop}" EXIT
	trap 'exit 130' INT TERM
	mm_build_install ${MM_BUILD_TARGETS:-}
	mm_cluster_start "$@"
}

# The library directory of the installation the tests use (MM_PGROOT or the system's).
mm_pkglibdir() {
	echo "${MM_PGROOT:-}$("$MM_SYSTEM_BINDIR/pg_config" --pkglibdir)"
}

# Citus for the TAP tests that use it (test/t/MmCitus.pm).  Debian 12 has no
# Citus package: when the installation the tests use has none, it is built
# from the vendored source archive and installed where the extension is.
# Exports MM_CITUS=1 when Citus is there, MM_CITUS=0 (with one line saying
# why) when there is neither Citus nor the archive.  Returns non-zero, after
# printing the build log, when the build fails.  Runs after mm_setup_throwaway
# (MM_WORKDIR is fresh).  Written without relying on set -e, which a caller's
# "if" turns off.
mm_setup_citus() {
	local archive build log
	if [ -f "$(mm_pkglibdir)/citus.so" ]; then
		export MM_CITUS=1
		return 0
	fi
	archive=${MM_CITUS_ARCHIVE:-$MM_SRC/../shared/vendor/citus-13.0.5.tar.gz}
	if [ ! -f "$archive" ]; then
		mm_log "Citus tests skipped: no Citus installed and no archive at $archive"
		export MM_CITUS=0
		return 0
	fi
	mm_install_packages $MM_CITUS_PACKAGES || return 1
	build=$MM_WORKDIR/citus-build
	log=$MM_WORKDIR/citus-build.log
	mm_log "building Citus from $archive (log: $log)"
	# the archive has no top-level directory
	rm -rf "$build"
	mm_as_user mkdir -p "$build" || return 1
	# read by the caller: the cluster owner may not reach the archive's directory
	if ! (cd "$build" && mm_as_user tar -xzf - < "$archive" &&
		mm_as_user ./configure PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" &&
		mm_as_user make -j2 with_llvm=no) > "$log" 2>&1; then
		mm_log "Citus build failed; the end of $log:"
		tail -n 200 "$log" >&2
		export MM_CITUS=0
		return 1
	fi
	mm_log "installing Citus${MM_PGROOT:+ into $MM_PGROOT}"
	if ! make -C "$build" with_llvm=no install ${MM_PGROOT:+DESTDIR=$MM_PGROOT} >> "$log" 2>&1 ||
		[ ! -f "$(mm_pkglibdir)/citus.so" ]; then
		mm_log "Citus install failed; the end of $log:"
		tail -n 200 "$log" >&2
		export MM_CITUS=0
		return 1
	fi
	export MM_CITUS=1
}
