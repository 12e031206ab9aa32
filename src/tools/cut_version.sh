#!/usr/bin/env bash
# Cuts the version in development as released and starts the next one
# (HACKING.md, "Cutting a version": this script is its mechanical part).
#   bash src/tools/cut_version.sh NEXT        # e.g. 0.5, from the repository root
# With MM_VERSION = V and MM_PREVIOUS = P in the Makefile, it
#  1. builds matchmaking--V.sql and matchmaking--P--V.sql (make, PG_CONFIG from
#     the environment) and keeps them as released scripts: moved to released/
#     and added to DATA, their lines in .gitignore replaced by the next
#     version's built scripts;
#  2. deletes upgrade/P--V/ (its output is the frozen matchmaking--P--V.sql)
#     and creates upgrade/V--NEXT/ with 00_header.sql and an empty manifest
#     (the old one's header comment, no line);
#  3. sets MM_VERSION = NEXT and MM_PREVIOUS = V, and empties
#     MM_NEW_IN_VERSION: its files are part of V now, and left in the list
#     the V -> NEXT upgrade would create their tables again and fail;
#  4. sets default_version in matchmaking.control and ServedVersions in
#     src/schema_version.c.
# What needs judgement (the tests' version lines, the upgrade test's block
# for V, CHANGELOG) stays with the engineer: HACKING.md lists it.
set -euo pipefail

next=${1:?usage: cut_version.sh NEXT}
[[ $next =~ ^[0-9]+\.[0-9]+$ ]] || { echo "cut_version: NEXT must look like 0.5, not $next" >&2; exit 2; }
[ -f matchmaking.control ] || { echo "cut_version: run it from the repository root" >&2; exit 2; }
pg_config=${PG_CONFIG:-pg_config}

version=$(make -s PG_CONFIG="$pg_config" print-MM_VERSION)
previous=$(make -s PG_CONFIG="$pg_config" print-MM_PREVIOUS)
[ "$(printf '%s\n%s\n' "$version" "$next" | sort -V | tail -n 1)" = "$next" ] && [ "$next" != "$version" ] ||
	{ echo "cut_version: $next does not come after $version" >&2; exit 2; }
old_dir=upgrade/$previous--$version
new_dir=upgrade/$version--$next
[ -d "$old_dir" ] || { echo "cut_version: no $old_dir" >&2; exit 1; }
[ ! -e "$new_dir" ] || { echo "cut_version: $new_dir exists" >&2; exit 1; }
fresh=matchmaking--$version.sql
upgrade=matchmaking--$previous--$version.sql

# 1. the scripts of the version, built and kept
rm -f "$fresh" "$upgrade"
make -s PG_CONFIG="$pg_config" "$fresh" "$upgrade"
mv "$fresh" "$upgrade" released/
perl -0pi -e "s{^(DATA = (?:.*\\\\\\n)*.*\\S)[ \\t]*\$}{\$1 \\\\\\n\\treleased/$upgrade released/$fresh}m" Makefile
grep -q "^DATA = .*\\\\$" Makefile && grep -q "	released/$upgrade released/$fresh\$" Makefile ||
	{ echo "cut_version: could not add the scripts to DATA in the Makefile" >&2; exit 1; }
perl -pi -e "s{^/\\Q$upgrade\\E\$}{/matchmaking--$version--$next.sql}; s{^/\\Q$fresh\\E\$}{/matchmaking--$next.sql}" .gitignore

# 2. the upgrade directories
header=$(sed -n '/^#/!q; p' "$old_dir/50_routines.txt" |
	sed -e "s/$previous -> $version/$version -> $next/g" -e "s/$previous--$version/$version--$next/g" \
		-e "s/routine of $previous/routine of $version/g" -e "s/a $previous signature/a $version signature/g")
rm -r "$old_dir"
mkdir -p "$new_dir"
printf '%s\n' "$header" > "$new_dir/50_routines.txt"
cat > "$new_dir/00_header.sql" <<EOF
-- matchmaking $version -> $next, built by make from upgrade/$version--$next/ (HACKING.md,
-- "Where SQL changes go"): the hand-written table and data changes in name
-- order, and in place of 50_routines.txt every routine it lists, from src/sql.
\\echo Use "ALTER EXTENSION matchmaking UPDATE TO '$next'" to load this file. \\quit
EOF

# 3. the Makefile's versions; the new version has no file of its own yet
perl -0pi -e "s/^MM_VERSION = .*\$/MM_VERSION = $next/m; s/^MM_PREVIOUS = .*\$/MM_PREVIOUS = $version/m;
	s/^MM_NEW_IN_VERSION = (?:.*\\\\\\n)*.*\$/MM_NEW_IN_VERSION =/m" Makefile
[ "$(make -s PG_CONFIG="$pg_config" print-MM_NEW_IN_VERSION)" = "" ] ||
	{ echo "cut_version: MM_NEW_IN_VERSION is not empty" >&2; exit 1; }

# 4. the control file and the library's served version
perl -pi -e "s/^default_version = .*\$/default_version = '$next'/" matchmaking.control
perl -pi -e "s/(ServedVersions\\[\\] = \\{)[^}]*\\}/\$1\"$next\"}/" src/schema_version.c
grep -q "ServedVersions\\[\\] = {\"$next\"}" src/schema_version.c ||
	{ echo "cut_version: could not set ServedVersions in src/schema_version.c" >&2; exit 1; }

echo "cut_version: $version released (released/$upgrade, released/$fresh); $next begins in $new_dir"
