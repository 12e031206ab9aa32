#!/usr/bin/env bash
# Fairness you can prove (issue 32, docs/fairness.md): mm.prediction_quality
# and mm.replay_ratings on recorded games, against a reference Glicko-2 and
# Elo written in Python outside the database (test/bench/fairness_reference.py)
# run on the same games.
#
# 1. Real games: the Lichess sample of test/data/lichess-sample-encounters.csv
#    (CC0; niklasf/liglicko2, research/sample-encounters.csv), played in time
#    order as 1v1 matches of a Glicko-2 queue: each match written, its
#    prediction recorded as the tick records it (mm.record_match_predictions),
#    its result reported through mm.report_result.  Checked: the deviance of
#    mm.prediction_quality equals the reference's within 1e-6; a replay with
#    the live settings gives the live ratings (max difference) and the same
#    deviance; an Elo replay's deviance equals the reference Elo's.
# 2. A generated stand-in with known true skills: 100,000 results between
#    2,000 players (true skills N(1500, 300), opponents drawn at random,
#    outcomes drawn from the logistic model of the true skills), loaded as
#    matches and results.  Checked: each system's replay deviance equals the
#    reference's within 1e-6, and a replay of the 100,000 results takes at
#    most 2 s of the backend's CPU (the best of MM_BENCH_FAIRNESS_RUNS runs,
#    default 3, without parallel workers; the wall clock is shown beside it
#    with the machine's load).
#    Reported: how close each system's ratings come to the true skills
#    (Pearson, Spearman, RMSE after removing the mean offset), OpenSkill's
#    too (replayed with its defaults; no Python reference, so no deviance
#    check; mu put on the Elo scale for the RMSE: 1500 + (mu - 25) * 400 *
#    1.702 / (ln 10 * sqrt(2) * beta), the normal of a 1v1's performance
#    difference matched to the logistic).
#
# Run by: bash test/bench/run.sh fairness   (PGHOST/PGPORT/PGDATABASE set by run.sh)
# Settings: MM_BENCH_FAIRNESS_RUNS (3), MM_BENCH_FAIRNESS_GAMES (100000).
set -euo pipefail

runs=${MM_BENCH_FAIRNESS_RUNS:-3}
n_games=${MM_BENCH_FAIRNESS_GAMES:-100000}
here=$(cd "$(dirname "$0")" && pwd)
ref="$here/fairness_reference.py"
lichess="$here/../data/lichess-sample-encounters.csv"

dir=$(mktemp -d /tmp/mm_bench_fairness.XXXXXX)
chmod 755 "$dir"
trap 'rm -rf "$dir"' EXIT

q() { psql -X -v ON_ERROR_STOP=1 -q -At "$@"; }
say() { printf '==> fairness: %s\n' "$*" >&2; }
failures=0
check() {
	# check NAME OK-BOOLEAN DETAIL
	if [ "$2" = t ]; then
		printf 'PASS  %-58s %s\n' "$1" "$3"
	else
		printf 'FAIL  %-58s %s\n' "$1" "$3"
		failures=$((failures + 1))
	fi
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$@"; }

# ---------------------------------------------------------------------
# 1. The Lichess sample
# ---------------------------------------------------------------------
say "Lichess sample: reference"
python3 "$ref" lichess "$lichess" > "$dir/lichess_ref.json"
cp "$lichess" "$dir/lichess.csv"
chmod 644 "$dir/lichess.csv"

say "Lichess sample: matches, predictions and results"
q <<SQL
SELECT mm.create_queue('lichess', '{"teams": [{"name": "white", "min": 1, "max": 1},
  {"name": "black", "min": 1, "max": 1}], "rating": {"system": "glicko2", "pool": "lichess"}}');
CREATE TABLE bench_lichess (line bigint GENERATED ALWAYS AS IDENTITY, white text, black text, result text,
							played_at timestamptz, time_control text);
\copy bench_lichess (white, black, result, played_at, time_control) FROM '$dir/lichess.csv' WITH (FORMAT csv, HEADER true)
DO \$\$
DECLARE
	g record;
	m bigint;
BEGIN
	FOR g IN SELECT * FROM bench_lichess
			  WHERE result IN ('1-0', '0-1', '1/2-1/2') AND white <> black ORDER BY played_at, line LOOP
		INSERT INTO mm.matches (queue, status, created_at, updated_at, quality)
		VALUES ('lichess', 'ready', g.played_at, g.played_at, 1) RETURNING id INTO m;
		INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team)
		VALUES (m, 'lichess', g.white, 0, 'white'), (m, 'lichess', g.black, 0, 'black');
		PERFORM mm.record_match_predictions('lichess', g.played_at);
		PERFORM mm.report_result('lichess', m, CASE g.result WHEN '1-0' THEN '{"white": 1, "black": 2}'
															 WHEN '0-1' THEN '{"white": 2, "black": 1}'
															 ELSE '{"white": 1, "black": 1}' END::jsonb,
								 g.played_at);
	END LOOP;
END
\$\$;
SQL
q -c "SELECT mm.prediction_quality('lichess', '2000-01-01', '2100-01-01')" > "$dir/lichess_quality.json"
q -c "SELECT mm.replay_ratings('lichess', '{\"system\": \"glicko2\"}', '2000-01-01', '2100-01-01')" > "$dir/lichess_g2.json"
q -c "SELECT mm.replay_ratings('lichess', '{\"system\": \"elo\"}', '2000-01-01', '2100-01-01')" > "$dir/lichess_elo.json"

games=$(json "$dir/lichess_ref.json" "d['games']")
matches=$(json "$dir/lichess_quality.json" "d['matches']")
check "Lichess: games in the database = games in the reference" \
	"$([ "$games" = "$matches" ] && echo t || echo f)" "$matches = $games"
for pair in "quality:lichess_quality.json:d['deviance']:glicko2" \
			"replay glicko2:lichess_g2.json:d['replay']['deviance']:glicko2" \
			"replay elo:lichess_elo.json:d['replay']['deviance']:elo"; do
	IFS=: read -r name file expr system <<<"$pair"
	db=$(json "$dir/$file" "$expr")
	py=$(json "$dir/lichess_ref.json" "d['$system']['deviance']")
	ok=$(python3 -c "print('t' if abs($db - $py) <= 1e-6 else 'f')")
	check "Lichess: deviance of $name = reference $system (1e-6)" "$ok" \
		"$(printf '%.9f vs %.9f' "$db" "$py")"
done
maxdiff=$(json "$dir/lichess_g2.json" "d['ratings']['max_rating_difference']")
check "Lichess: replay of the live settings = live ratings" \
	"$(python3 -c "print('t' if $maxdiff <= 1e-9 else 'f')")" "max difference $maxdiff"
say "Lichess sample: $(json "$dir/lichess_quality.json" \
	"'deviance %.4f (baseline %.4f), Brier %.4f, accuracy %.3f over %d decided' % (d['deviance'], d['baseline']['deviance'], d['brier'], d['accuracy'], d['decided'])")"

# ---------------------------------------------------------------------
# 2. The generated stand-in
# ---------------------------------------------------------------------
say "generated: $n_games games"
python3 "$ref" generate "$n_games" 32 "$dir" > /dev/null
python3 "$ref" replay "$dir/games.csv" --ratings > "$dir/gen_ref.json"
chmod 644 "$dir/games.csv"
q <<SQL
SELECT mm.create_queue('generated', '{"teams": [{"name": "a", "min": 1, "max": 1},
  {"name": "b", "min": 1, "max": 1}], "rating": {"system": "glicko2", "pool": "generated"}}');
CREATE TABLE bench_games (line bigint GENERATED ALWAYS AS IDENTITY, a text, b text, score int);
\copy bench_games (a, b, score) FROM '$dir/games.csv' WITH (FORMAT csv)
CREATE TABLE bench_ids AS
WITH m AS (
	INSERT INTO mm.matches (queue, status, created_at, updated_at, quality)
	SELECT 'generated', 'completed', '2030-01-01'::timestamptz + g.line * interval '1 second',
		   '2030-01-01'::timestamptz + g.line * interval '1 second', 1
	  FROM bench_games g ORDER BY g.line
	RETURNING id, created_at)
SELECT m.id, g.* FROM m JOIN bench_games g ON m.created_at = '2030-01-01'::timestamptz + g.line * interval '1 second';
INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team)
SELECT i.id, 'generated', i.a, 0, 'a' FROM bench_ids i UNION ALL SELECT i.id, 'generated', i.b, 0, 'b' FROM bench_ids i;
INSERT INTO mm.match_results (match_id, queue, winner_team, ranks, reported_at)
SELECT i.id, 'generated', CASE WHEN i.score = 1 THEN 'a' ELSE 'b' END,
	   CASE WHEN i.score = 1 THEN '{"a": 1, "b": 2}' ELSE '{"a": 2, "b": 1}' END::jsonb,
	   '2030-01-01'::timestamptz + i.line * interval '1 second'
  FROM bench_ids i;
ANALYZE mm.matches;
ANALYZE mm.match_players;
ANALYZE mm.match_results;
CREATE TABLE bench_times (system text, seconds float8, cpu_seconds float8);
SQL

for system in glicko2 elo openskill; do
	for run in $(seq "$runs"); do
		q <<SQL
-- the backend's user + system CPU time (/proc/self/stat, in ticks of 1/100 s)
CREATE FUNCTION pg_temp.cpu_seconds() RETURNS float8 LANGUAGE sql AS
\$f\$ SELECT (split_part(s, ' ', 14)::float8 + split_part(s, ' ', 15)::float8) / 100
	   FROM pg_read_file('/proc/self/stat') s \$f\$;
-- all the work in this backend, so that its CPU time counts all of it
SET max_parallel_workers_per_gather = 0;
DO \$\$
DECLARE
	cpu0 float8 := pg_temp.cpu_seconds();
	t0 timestamptz := clock_timestamp();
	r jsonb;
BEGIN
	r := mm.replay_ratings('generated', '{"system": "$system"}', '2030-01-01', '2031-01-01');
	INSERT INTO bench_times VALUES ('$system', extract(epoch FROM clock_timestamp() - t0),
									pg_temp.cpu_seconds() - cpu0);
END
\$\$;
SQL
	done
	q -c "SELECT mm.replay_ratings('generated', '{\"system\": \"$system\", \"output_ratings\": true}', '2030-01-01', '2031-01-01')" \
		> "$dir/gen_$system.json"
	python3 -c "
import json, math, sys
d = json.load(open(sys.argv[1]))
# OpenSkill's mu on the Elo scale (see the header), the others as they are
scale = 400 * 1.702 / (math.log(10) * math.sqrt(2) * 25 / 6) if sys.argv[4] == 'openskill' else None
json.dump({p: (1500 + (v['rating'] - 25) * scale if scale else v['rating'])
		   for p, v in d['ratings']['player_ratings'].items()}, open(sys.argv[2], 'w'))
if not scale:
	json.dump(json.load(open(sys.argv[3]))[sys.argv[4]]['ratings'], open(sys.argv[5], 'w'))
" "$dir/gen_$system.json" "$dir/gen_${system}_ratings.json" "$dir/gen_ref.json" "$system" "$dir/ref_${system}_ratings.json"
	results=$(json "$dir/gen_$system.json" "d['results']")
	db=$(json "$dir/gen_$system.json" "d['replay']['deviance']")
	if [ "$system" != openskill ]; then
		py=$(json "$dir/gen_ref.json" "d['$system']['deviance']")
		check "generated: $system replay of $results results, deviance = reference (1e-6)" \
			"$(python3 -c "print('t' if abs($db - $py) <= 1e-6 and $results == $n_games else 'f')")" \
			"$(printf '%.9f vs %.9f' "$db" "$py")"
	fi
	cpu=$(q -c "SELECT min(cpu_seconds) FROM bench_times WHERE system = '$system'")
	best=$(q -c "SELECT min(seconds) FROM bench_times WHERE system = '$system'")
	median=$(q -c "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FROM bench_times WHERE system = '$system'")
	# CPU time: the wall clock of a shared machine counts the others' load too
	check "generated: $system replay of $results results <= 2 s (CPU)" \
		"$(python3 -c "print('t' if $cpu <= 2.0 else 'f')")" \
		"$(printf 'CPU %.2f s; wall best %.2f s, median %.2f s of %d runs; load %s' "$cpu" "$best" "$median" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)")"
	python3 "$ref" skills "$dir/skills.csv" "$dir/gen_${system}_ratings.json" > "$dir/close_$system.json"
	printf 'INFO  %-58s %s\n' "generated: $system ratings against the true skills" \
		"$(json "$dir/close_$system.json" "'Pearson %.4f, Spearman %.4f, RMSE %.1f over %d players' % (d['pearson'], d['spearman'], d['rmse_after_mean_shift'], d['players'])")"
	if [ "$system" != openskill ]; then
		python3 "$ref" skills "$dir/skills.csv" "$dir/ref_${system}_ratings.json" > "$dir/close_ref_$system.json"
		printf 'INFO  %-58s %s\n' "generated: reference $system against the true skills" \
			"$(json "$dir/close_ref_$system.json" "'Pearson %.4f, Spearman %.4f, RMSE %.1f' % (d['pearson'], d['spearman'], d['rmse_after_mean_shift'])")"
	fi
	printf 'INFO  %-58s %s\n' "generated: $system calibration" \
		"$(json "$dir/gen_$system.json" "'deviance %.4f (baseline %.4f), Brier %.4f, accuracy %.3f' % (d['replay']['deviance'], d['replay']['baseline']['deviance'], d['replay']['brier'], d['replay']['accuracy'])")"
done

q -c "DROP TABLE bench_lichess, bench_games, bench_ids, bench_times"
if [ "$failures" -gt 0 ]; then
	say "$failures check(s) failed"
	exit 1
fi
say "every check passed"
