# The simulator end to end in simulated time: FlexMatch's three Radiant vs Dire
# queues fed and ticked by test/sim/mm_sim, with FlexMatch's acceptance step
# (players accept with probability 0.9 within 10 s).  Checks that it is
# reproducible (same seed, same figures, in two databases), that every
# committed match obeys its queue's team rules, that no ticket is lost or in
# two matches, that proposals were accepted and some not, that every played
# match ended through the lifecycle (assigned, then a reported result that
# completed it; early quits through mm.leave_match), that no player is left
# held at the end, and that the simulated outcomes moved the stored ratings
# (mm_sim.players through mm.glicko2_update, mm.ratings through
# mm.report_result).  Then a short run of the role queues (mm_sim --roles):
# compositions kept, nobody outside their list unless autofilled; and one of
# the penalties queue (mm_sim --penalties): offences, cooldowns kept, the
# low-priority pool apart from the others until its bound, and mm.replay of
# the run close to the record.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmTest;

my $sim = "$ENV{TESTDIR}/test/sim/mm_sim";
plan skip_all => "mm_sim not built (make sim)" unless -x $sim;

my $node = mm_new_node('simulator');
$node->safe_psql('postgres', 'CREATE DATABASE sim_b');
$node->safe_psql('sim_b', 'CREATE EXTENSION matchmaking');

# Runs the simulator against one database and returns its figures table.
sub run_sim
{
	my ($db) = @_;
	my ($stdout, $stderr);
	my $ok = IPC::Run::run(
		[ $sim, '--flexmatch', '--seed', '7', '--tickets', '150', '--quiet',
		  '--dsn', $node->connstr($db) ],
		'>', \$stdout, '2>', \$stderr);
	ok($ok, "mm_sim ran against $db") or diag($stderr);
	# the per-queue lines of the figures (wall-clock times are left out)
	my @rows = grep { /^flexmatch_\w+\s+\d/ } split /\n/, $stdout;
	return join("\n", @rows);
}

my $a = run_sim('postgres');
my $b = run_sim('sim_b');
is(scalar(() = $a =~ /^flexmatch_/mg), 3, 'figures printed for the three queues');
is($a, $b, 'same seed, same figures');

my $db = 'postgres';
is($node->safe_psql($db, q{
	SELECT count(*) FROM mm.tickets WHERE queue LIKE 'flexmatch%'}), 450,
	'every ticket is in the tables (150 per queue)');
is($node->safe_psql($db, q{
	SELECT count(*) FROM mm.tickets WHERE queue LIKE 'flexmatch%'
	   AND status NOT IN ('matched', 'timed_out', 'cancelled')}), 0,
	'the run ends with no ticket searching: each was matched, timed out or cancelled');
cmp_ok($node->safe_psql($db, q{
	SELECT count(*) FROM mm.matches WHERE queue LIKE 'flexmatch%'}), '>', 50,
	'matches were formed');
is($node->safe_psql($db, q{
	SELECT count(*) FROM (SELECT mp.ticket_id, mp.player_id FROM mm.match_players mp
	  JOIN mm.matches m ON m.id = mp.match_id
	 WHERE m.status <> 'cancelled'
	 GROUP BY 1, 2 HAVING count(DISTINCT mp.match_id) > 1) x}), 0,
	'no ticket in two matches (cancelled proposals aside)');
is($node->safe_psql($db, q{
	SELECT count(*) FROM mm.tickets t
	 WHERE t.status = 'matched' AND t.queue LIKE 'flexmatch%'
	   AND jsonb_array_length(t.players) <> (SELECT count(*) FROM mm.match_players mp
	                           WHERE mp.match_id = t.match_id AND mp.ticket_id = t.id)}), 0,
	'every matched ticket has all its players in its match');
# team_size_balance max_difference 0: teams of equal size, within the mode's bounds
is($node->safe_psql($db, q{
	SELECT count(*) FROM (
	  SELECT m.id, m.queue, min(n) AS smallest, max(n) AS largest, count(*) AS teams
	    FROM mm.matches m
	    JOIN (SELECT match_id, team, count(*) AS n FROM mm.match_players GROUP BY 1, 2) s
	      ON s.match_id = m.id
	   WHERE m.queue LIKE 'flexmatch%'
	   GROUP BY m.id, m.queue) x
	 WHERE teams <> 2 OR smallest <> largest
	    OR (queue = 'flexmatch_classic' AND NOT smallest BETWEEN 4 AND 6)
	    OR (queue = 'flexmatch_survival' AND NOT smallest BETWEEN 1 AND 3)
	    OR (queue = 'flexmatch_practice' AND NOT smallest BETWEEN 2 AND 8)}), 0,
	'two teams of equal size within each mode\'s bounds in every match');
# every player's latency in the match's region is within the rule at its step
is($node->safe_psql($db, q{
	SELECT count(*) FROM mm.matches m
	  JOIN mm.match_players mp ON mp.match_id = m.id
	  JOIN mm.ticket_players tp ON tp.ticket_id = mp.ticket_id AND tp.player_id = mp.player_id
	 WHERE m.queue LIKE 'flexmatch%'
	   AND NOT coalesce((m.rule_steps -> 'fast_connection' ->> 'off')::boolean, false)
	   AND (tp.latencies ->> m.region)::float8 > (m.rule_steps -> 'fast_connection' ->> 'threshold')::float8}), 0,
	'every player\'s latency in the chosen region is within the latency rule at its step');
cmp_ok($node->safe_psql($db, q{
	SELECT count(*) FROM mm.match_results r JOIN mm.matches m ON m.id = r.match_id
	 WHERE m.queue LIKE 'flexmatch%'}), '>', 50,
	'outcomes recorded in mm.match_results');

# the lifecycle: acceptance, assignment, results, early quits
my ($proposed, $not_accepted) = split /\|/, $node->safe_psql($db, q{
	SELECT count(*) FILTER (WHERE acceptance_deadline IS NOT NULL),
	       count(*) FILTER (WHERE status = 'cancelled' AND cancel_reason IN ('rejected', 'acceptance_timeout'))
	  FROM mm.matches WHERE queue LIKE 'flexmatch%'});
cmp_ok($proposed, '>', 50, 'matches were proposed (the queues ask for acceptance)');
ok($not_accepted > 0 && $not_accepted < $proposed,
	"some proposals were not accepted ($not_accepted of $proposed), the others were");
is($node->safe_psql($db, q{
	SELECT count(*) FROM mm.matches WHERE queue LIKE 'flexmatch%'
	   AND status NOT IN ('completed', 'cancelled')}), 0,
	'the run ends with no live match: every match played was completed');
is($node->safe_psql($db, q{
	SELECT count(*) FROM mm.matches m WHERE m.queue LIKE 'flexmatch%' AND m.status = 'completed'
	   AND (m.connection IS NULL
	        OR NOT EXISTS (SELECT FROM mm.match_results r WHERE r.match_id = m.id))}), 0,
	'every completed match was assigned a game server and has its result');
is($node->safe_psql($db, q{SELECT count(*) FROM mm.active_players}), 0,
	'no player is held at the end (matches ended, leavers released)');
cmp_ok($node->safe_psql($db, q{
	SELECT count(*) FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
	 WHERE m.queue LIKE 'flexmatch%' AND mp.left_at IS NOT NULL}), '>', 0,
	'early quits recorded through mm.leave_match');
is($node->safe_psql($db, q{
	SELECT count(*) FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
	 WHERE m.queue LIKE 'flexmatch%' AND mp.left_at IS NOT NULL
	   AND NOT (mp.left_at >= m.created_at AND mp.left_at <= m.updated_at)}), 0,
	'every early quit lies within its match');
SKIP:
{
	skip 'no mm.report_result', 2
	  unless $node->safe_psql($db, q{SELECT to_regprocedure('mm.report_result(bigint,jsonb,timestamptz)') IS NOT NULL}) eq 't';
	is($node->safe_psql($db, q{
		SELECT count(*) FROM mm.match_results r JOIN mm.matches m ON m.id = r.match_id
		 WHERE m.queue LIKE 'flexmatch%' AND (r.predicted_favourite IS NULL OR r.winner_team IS NULL)}), 0,
		'every result names the winner and the stored ratings\' favourite');
	cmp_ok($node->safe_psql($db, q{
		SELECT count(*) FROM mm.ratings WHERE pool = 'flexmatch_ranked' AND games > 0}), '>', 50,
		'results updated the stored ratings of the queues\' pool');
}
cmp_ok($node->safe_psql($db, q{
	SELECT count(*) FROM mm_sim.players WHERE games > 0 AND rating <> initial_rating}), '>', 0,
	'outcomes moved stored ratings');

# The role queues (mm_sim --roles): every team holds one tank, one healer and
# three dps; a player is seated outside their list exactly when marked
# autofilled, only in the queue with autofill, and only after its 60 s.
SKIP:
{
	skip 'no role queues (mm.match_players.role)', 3
	  unless $node->safe_psql($db, q{
		SELECT count(*) FROM pg_catalog.pg_attribute
		 WHERE attrelid = 'mm.match_players'::regclass AND attname = 'role' AND NOT attisdropped}) eq '1';
	my ($stdout, $stderr);
	my $ok = IPC::Run::run(
		[ $sim, '--roles', '--seed', '7', '--tickets', '120', '--acceptance-timeout', '0',
		  '--run', 'roles', '--quiet', '--dsn', $node->connstr($db) ],
		'>', \$stdout, '2>', \$stderr);
	ok($ok && $stdout =~ /^roles_5v5_autofill: time to match by role/m,
		'mm_sim --roles ran and printed the times to match per role') or diag($stderr);
	is($node->safe_psql($db, q{
		SELECT count(*) FROM (
		  SELECT mp.match_id, mp.team FROM mm.match_players mp
		   WHERE mp.queue LIKE 'roles_5v5%'
		   GROUP BY 1, 2
		  HAVING count(*) <> 5 OR count(*) FILTER (WHERE mp.role = 'tank') <> 1
		      OR count(*) FILTER (WHERE mp.role = 'healer') <> 1
		      OR count(*) FILTER (WHERE mp.role = 'dps') <> 3) x}), 0,
		'every team of a role match: one tank, one healer, three dps');
	is($node->safe_psql($db, q{
		SELECT count(*) FROM mm.match_players mp
		  JOIN mm.tickets t ON t.id = mp.ticket_id
		 CROSS JOIN LATERAL jsonb_array_elements(t.players) pl
		 WHERE mp.queue LIKE 'roles_5v5%' AND pl ->> 'id' = mp.player_id
		   AND (mp.autofilled <> NOT (pl -> 'roles' ? mp.role OR pl -> 'roles' ? 'fill')
		        OR (mp.autofilled AND (mp.queue = 'roles_5v5'
		                               OR t.matched_at - t.created_at < interval '60 seconds')))}), 0,
		'a player is outside their list exactly when autofilled, with autofill, after 60 s');
}

# Penalties (mm_sim --penalties): dodges, acceptance timeouts and leaves are
# recorded as offences; no ticket was created while one of its players was
# cooling down (the simulator retried after a refusal); a match puts a
# player of the low-priority pool with the others only once that player's
# ticket waited max_wait_seconds (120 s); and the simulator's own check that
# no penalised ticket starved passed (it exits 3 otherwise).
SKIP:
{
	skip 'no penalties (mm.get_penalties)', 6
	  unless $node->safe_psql($db, q{
		SELECT to_regprocedure('mm.get_penalties(text,timestamptz)') IS NOT NULL}) eq 't';
	my ($stdout, $stderr);
	my $ok = IPC::Run::run(
		[ $sim, '--penalties', '--seed', '7', '--tickets', '200', '--dodge-rate', '0.1',
		  '--run', 'pen', '--quiet', '--dsn', $node->connstr($db) ],
		'>', \$stdout, '2>', \$stderr);
	ok($ok && $stdout =~ /^  never starves: /m,
		'mm_sim --penalties ran, and no penalised ticket starved') or diag($stdout . $stderr);
	is($node->safe_psql($db, q{
		SELECT string_agg(DISTINCT reason, ',' ORDER BY reason) FROM mm.penalty_history
		 WHERE queue = 'penalties_3v3'}), 'acceptance_timeout,dodge,leave',
		'offences of the three reasons recorded');
	is($node->safe_psql($db, q{
		SELECT count(*) FROM mm.tickets t
		 CROSS JOIN LATERAL jsonb_array_elements(t.players) pl
		  JOIN mm.penalty_history h ON h.player_id = pl ->> 'id' AND h.queue = t.queue
		 WHERE t.queue = 'penalties_3v3'
		   AND t.created_at >= h.created_at AND t.created_at < h.cooldown_until}), 0,
		'no ticket was created while one of its players was cooling down');
	cmp_ok($node->safe_psql($db, q{
		SELECT count(*) FROM mm.match_players WHERE queue = 'penalties_3v3' AND low_priority}), '>', 0,
		'players were matched from the low-priority pool');
	is($node->safe_psql($db, q{
		SELECT count(*) FROM mm.matches m
		 WHERE m.queue = 'penalties_3v3'
		   AND EXISTS (SELECT FROM mm.match_players mp WHERE mp.match_id = m.id AND NOT mp.low_priority)
		   AND EXISTS (SELECT FROM mm.match_players mp JOIN mm.tickets t ON t.id = mp.ticket_id
		                WHERE mp.match_id = m.id AND mp.low_priority
		                  AND m.created_at - t.created_at < interval '120 seconds')}), 0,
		'a player of the low-priority pool meets the others only after 120 s');
	# the what-if against reality: the run replayed with the queue's own
	# config, the acceptance step and the penalties modelled
	# (docs/metrics.md: within 3 % and 15 % on the full runs).  This run is
	# short, with twice the dodgers: almost half the proposals rejected,
	# re-proposed a tick later in the simulator than in a replay, so few
	# recorded answers are reused and the draws weigh more (138 matched
	# against 156, p95 51.7 s against 61.4 s): wider bounds.
	is($node->safe_psql($db, q{
		SELECT abs((p ->> 'matched')::numeric / (r ->> 'matched')::numeric - 1) <= 0.15
		   AND abs((p ->> 'time_to_match_p95')::numeric / (r ->> 'time_to_match_p95')::numeric - 1) <= 0.3
		   AND (p #>> '{modelled,acceptance,recorded_answers_reused}')::int > 0
		   AND (p #>> '{modelled,acceptance,new_groupings_drawn}')::int > 0
		   AND (p #>> '{modelled,penalties,dodges}')::int > 0
		  FROM (SELECT x -> 'recorded' AS r, x -> 'replay' AS p
				  FROM mm.replay('penalties_3v3', NULL, '2026-01-01 00:00:00+00', '2026-01-01 01:00:00+00') x) w}),
		't', 'mm.replay of the live config comes close to the record, answers reused and drawn, dodges penalised')
	  or diag($node->safe_psql($db, q{
		SELECT mm.replay('penalties_3v3', NULL, '2026-01-01 00:00:00+00', '2026-01-01 01:00:00+00')}));
}

$node->stop;
done_testing();
