#!/usr/bin/env bash
# The full test suite: pg_regress, isolation specs and TAP tests, against a
# freshly built and installed extension on a throwaway cluster, and the pure C
# core under AddressSanitizer/UBSan (test/sanitize).
#   bash test/run-tests.sh            # everything
#   MM_SUITES="regress" bash test/run-tests.sh   # a subset: regress isolation tap sanitize
#   MM_REGRESS="setup tickets" MM_ISOLATION="backfill" MM_TAP="test/t/050_upgrade.pl" \
#     bash test/run-tests.sh                     # named tests of each suite (developers)
source "$(dirname "$0")/scripts/common.sh"

mm_init 54329
suites=${MM_SUITES:-"regress isolation tap sanitize"}

# the simulator is built too: a TAP test drives it
MM_BUILD_TARGETS=sim mm_setup_throwaway
# test support that the shipped library leaves out (test/regress/sql/search_completeness.sql)
bash "$MM_SRC/test/modules/install.sh"

cd "$MM_TREE"
passed=0
failed=0
skipped=0
status=0
# what failed, printed again at the end: CI shows only the tail of the output
: > failures.log

# One check of the tree: a test that passes or fails as a whole.
run_check() {
	if "$@"; then
		passed=$((passed + 1))
	else
		echo "$* ... FAILED" >> failures.log
		status=1
		failed=$((failed + 1))
	fi
}

# Counts the per-test "ok"/"FAILED" lines pg_regress and pg_isolation_regress print.
count_results() {
	local p f
	p=$(grep -E "\.\.\. +ok" "$1" | wc -l || true)
	f=$(grep -E '\.\.\. +FAILED' "$1" | wc -l || true)
	passed=$((passed + p))
	failed=$((failed + f))
	grep -E '\.\.\. +FAILED' "$1" >> failures.log || true
}

print_diffs() {
	[ -f "$1" ] && { echo "---- $1 ----"; head -c 20000 "$1"; }
}

for suite in $suites; do
	case $suite in
	regress)
		mm_log "pg_regress"
		# the README's walk-through is test/regress/sql/walkthrough.sql: fail when they drift apart
		run_check bash test/scripts/check_walkthrough.sh
		# no link in the README or docs/ points at a missing file or heading
		run_check perl test/scripts/check_links.pl
		# HACKING.md names only what exists, and its tables list every file
		run_check perl test/scripts/check_hacking.pl
		# every statement the tick prepares filters on its queue (docs/scale-out.md)
		run_check perl test/scripts/check_tick_statements.pl
		# the SQL source tree defines every object once, with its grants
		run_check perl test/scripts/check_sql_tree.pl
		# src/*.c: no circle of files calling each other, no C function over 200 lines
		run_check perl test/scripts/check_c_layers.pl
		# mm.distribute and the C guard route the same functions by queue
		run_check perl test/scripts/check_citus_functions.pl
		# the upgrade's manifest lists every routine that differs from the previous release
		run_check perl src/tools/build_upgrade.pl --check \
			"released/matchmaking--$(make -s PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" print-MM_PREVIOUS).sql" src/sql \
			"$(make -s PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" print-MM_UPGRADE_DIR)" \
			$(make -s PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" print-MM_NEW_IN_VERSION)
		tests=${MM_REGRESS:-$(make PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" -s print-REGRESS)}
		# run in test/regress: the tests read their helpers with \i sql/include/...;
		# results/ and regression.diffs stay at the top of the tree
		if ! (cd test/regress && mm_as_user "$MM_PGXS_DIR/src/test/regress/pg_regress" --inputdir=. \
			--outputdir="$MM_TREE" --bindir="$MM_BINDIR" --dbname=contrib_regression $tests) 2>&1 | tee regress.log; then
			status=1
			print_diffs regression.diffs
		fi
		count_results regress.log
		;;
	isolation)
		tests=${MM_ISOLATION:-$(make PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" -s print-ISOLATION)}
		[ -z "$tests" ] && continue
		mm_log "isolation specs"
		if ! mm_as_user "$MM_PGXS_DIR/src/test/isolation/pg_isolation_regress" --inputdir=test/isolation \
			--outputdir=output_iso --bindir="$MM_BINDIR" --dbname=isolation_regression \
			$tests 2>&1 | tee isolation.log; then
			status=1
			print_diffs output_iso/regression.diffs
		fi
		count_results isolation.log
		;;
	tap)
		tests=${MM_TAP:-$(make PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" -s print-PROVE_TESTS)}
		[ -z "$tests" ] && continue
		# Citus (installed, or built from the vendored archive) for the tests that use it
		if grep -qs 'use MmCitus' $tests && ! mm_setup_citus; then
			echo "Citus set-up ... FAILED" >> failures.log
			status=1
			failed=$((failed + 1))
		fi
		mm_log "TAP tests"
		rm -rf tmp_check; mm_as_user mkdir -p tmp_check
		if ! mm_as_user env TESTDIR="$MM_TREE" PG_REGRESS="$MM_PGXS_DIR/src/test/regress/pg_regress" \
			MM_BINDIR="$MM_BINDIR" MM_CITUS="${MM_CITUS:-}" prove -I "$MM_PGXS_DIR/src/test/perl" -I test/t $tests 2>&1 | tee tap.log; then
			status=1
			# the end of each failed file's own log (prove's summary names the files)
			for t in $(sed -n '/^Test Summary Report/,$s/^\([^ ]*\.pl\) .*/\1/p' tap.log); do
				f=tmp_check/log/regress_log_$(basename "$t" .pl)
				[ -f "$f" ] && { echo "---- $f ----"; tail -n 80 "$f"; }
			done
		fi
		# a file that skips (plan skip_all: the Citus files without Citus) is
		# skipped, never passed: prove prints "NAME .. skipped: why"
		skipped=$((skipped + $(grep -cE '^[^ ]+\.pl \.+ skipped' tap.log || true)))
		t=$(sed -n 's/.*Tests=\([0-9]*\).*/\1/p' tap.log | tail -1)
		fl=$(grep -cE '^not ok' tap.log || true)
		passed=$((passed + ${t:-0} - fl))
		failed=$((failed + fl))
		[ "$status" -ne 0 ] && [ "$fl" -eq 0 ] && grep -q 'Result: FAIL' tap.log && failed=$((failed + 1))
		# prove's own report names each failed file, its failed tests and how it ended
		sed -n '/^Test Summary Report/,$p' tap.log >> failures.log
		;;
	sanitize)
		# stand-alone programs, each one test; a time limit each, so a hang fails
		mm_log "sanitizer tests (test/sanitize)"
		if ! mm_as_user make -C test/sanitize --no-print-directory -s -j"$(nproc 2>/dev/null || echo 2)" \
			PG_CONFIG="$MM_SYSTEM_BINDIR/pg_config" all > sanitize-build.log 2>&1; then
			echo "sanitize: build ... FAILED"
			echo "sanitize: build ... FAILED" >> failures.log
			head -c 20000 sanitize-build.log
			status=1
			failed=$((failed + 1))
			continue
		fi
		for t in $(make -C test/sanitize --no-print-directory -s print-TESTS); do
			if (cd test/sanitize && mm_as_user timeout 180 "./$t") > "sanitize-$t.log" 2>&1; then
				printf 'sanitize %-24s ... ok    (%s)\n' "$t" "$(tail -n 1 "sanitize-$t.log")"
				passed=$((passed + 1))
			else
				printf 'sanitize %-24s ... FAILED\n' "$t"
				printf 'sanitize %-24s ... FAILED\n' "$t" >> failures.log
				head -c 20000 "sanitize-$t.log"
				status=1
				failed=$((failed + 1))
			fi
		done
		;;
	*) echo "unknown suite $suite" >&2; exit 2 ;;
	esac
done

# a suite that failed without a per-test FAILED line (a crash, a harness error) still counts
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo
if [ -s failures.log ]; then
	echo "what failed:"
	cat failures.log
	echo
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || status=1
exit $status
