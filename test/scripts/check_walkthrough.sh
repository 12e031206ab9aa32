#!/usr/bin/env bash
# The README's walk-through is a regression test: test/regress/sql/walkthrough.sql must be
# exactly the README's walk-through SQL blocks (between the markers
# <!-- walkthrough:begin --> and <!-- walkthrough:end -->, leaving out a block
# right after <!-- walkthrough:skip -->) wrapped in a fixed preamble, which
# gives the walk-through a fresh database of its own, and postamble.  Every
# output block the README shows (a ``` block without a language after a SQL
# block) must appear, line for line, in test/regress/expected/walkthrough.out (trailing
# blanks aside).
#
#   bash test/scripts/check_walkthrough.sh           # exit 1 on any drift
#   bash test/scripts/check_walkthrough.sh --write   # regenerate test/regress/sql/walkthrough.sql
#
# Plain bash and awk, so it runs wherever the tests run.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
readme=$root/README.md
sql=$root/test/regress/sql/walkthrough.sql
out=$root/test/regress/expected/walkthrough.out

generate() {
	cat <<'EOF'
-- The README's walk-through, generated from README.md by
-- test/scripts/check_walkthrough.sh --write: edit the README, not this file.
-- It runs in a fresh database of its own, with PostgreSQL's default date
-- and interval styles (pg_regress sets others).
SELECT current_database() AS regress_database \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS mm_walkthrough;
RESET client_min_messages;
CREATE DATABASE mm_walkthrough;
\c mm_walkthrough
SET datestyle = 'ISO, MDY';
SET intervalstyle = 'postgres';
-- the README's blocks, top to bottom
EOF
	awk '
		/^<!-- walkthrough:begin/ { inside = 1; next }
		/^<!-- walkthrough:end/ { inside = 0; next }
		!inside { next }
		/^<!-- walkthrough:skip -->/ { skip = 1; next }
		!fence && /^```sql[ \t]*$/ { fence = 1; if (!skip) { if (n++) print ""; take = 1 } skip = 0; next }
		!fence && /^```/ { fence = 2; skip = 0; next }
		fence && /^```[ \t]*$/ { fence = 0; take = 0; next }
		take { print }
	' "$readme"
	cat <<'EOF'
-- end of the README's blocks
\c :regress_database
DROP DATABASE mm_walkthrough;
EOF
}

# The README's output blocks, each followed by a line holding only a form feed.
outputs() {
	awk '
		/^<!-- walkthrough:begin/ { inside = 1; next }
		/^<!-- walkthrough:end/ { inside = 0; next }
		!inside { next }
		/^<!-- walkthrough:skip -->/ { skip = 1; next }
		!fence && /^```sql[ \t]*$/ { fence = 1; last_sql = !skip; skip = 0; next }
		!fence && /^```[ \t]*$/ { fence = 2; take = last_sql; skip = 0; next }
		!fence && /^```/ { fence = 3; last_sql = 0; skip = 0; next }
		fence && /^```[ \t]*$/ { if (take) print "\f"; fence = 0; take = 0; next }
		take { print }
		!fence && NF { last_sql = 0 }	# an output block follows its SQL block directly
	' "$readme"
}

[ -f "$readme" ] || { echo "check_walkthrough: $readme not found" >&2; exit 2; }
grep -q '^<!-- walkthrough:begin' "$readme" || {
	echo "check_walkthrough: README.md has no <!-- walkthrough:begin --> marker" >&2; exit 1; }

if [ "${1:-}" = "--write" ]; then
	generate > "$sql"
	echo "check_walkthrough: wrote $sql"
	exit 0
fi

status=0
if ! diff -u "$sql" <(generate) > /dev/null; then
	echo "check_walkthrough: test/regress/sql/walkthrough.sql differs from the README's walk-through:" >&2
	diff -u --label test/regress/sql/walkthrough.sql --label "README.md walk-through" "$sql" <(generate) >&2 || true
	echo "Run: bash test/scripts/check_walkthrough.sh --write, then review test/regress/expected/walkthrough.out." >&2
	status=1
fi

if [ -f "$out" ]; then
	# every README output block must be a run of consecutive lines of the expected output
	if ! MM_BLOCKS=$(outputs) awk '
		{ line = $0; sub(/[ \t]+$/, "", line); text = text line "\n" }
		END {
			count = split(ENVIRON["MM_BLOCKS"], block, "\f\n?")
			for (i = 1; i <= count; i++) {
				b = block[i]
				sub(/^\n/, "", b)
				gsub(/[ \t]+\n/, "\n", b)	# trailing blanks: psql prints them, editors strip them
				if (b == "") continue
				if (index(text, b) == 0) {
					printf "check_walkthrough: README output block %d is not in test/regress/expected/walkthrough.out:\n%s", i, b > "/dev/stderr"
					bad = 1
				}
			}
			exit bad
		}' "$out"; then
		status=1
	fi
else
	echo "check_walkthrough: test/regress/expected/walkthrough.out is missing" >&2
	status=1
fi

[ "$status" -eq 0 ] && echo "check_walkthrough: README walk-through and test/regress/sql/walkthrough.sql agree"
exit $status
