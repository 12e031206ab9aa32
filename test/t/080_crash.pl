# Crash safety: the extension's data stays consistent through crashes.
#
# 1. kill -9 of the backend running a tick over 40,000 searching tickets of a
#    5v5 queue (at least 0.3 s into it, once it writes its matches): the
#    postmaster restarts every backend (crash recovery); afterwards no match
#    of the killed tick exists, no ticket is lost or in two states,
#    mm.active_players holds exactly the players of the active tickets and
#    of the live matches, and a normal tick then forms whole matches.
# 2. kill -9 of the postmaster while one session enqueues batches of 50
#    tickets (each committed with its row in acked(first_id, last_id)) and
#    another ticks in a loop: after the restart every acknowledged ticket
#    exists, every ticket exists only with its acknowledgement, no ticket is in
#    two states or two matches, every match has its players and every matched
#    ticket its match.
# 3. pg_cron ticking resumes after a crash: a queue scheduled every second
#    (pg_cron 1.4: a per-minute job running mm.tick_loop) matches tickets;
#    the postmaster is killed while its loop runs, and after the restart new
#    tickets are matched again with no manual tick.  The waits for pg_cron
#    follow minute boundaries: the test takes about two minutes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use IPC::Run;
use MmTest;

my $test_start = time;

# TAP nodes are made with restart_after_crash = off (a crashed backend takes
# the postmaster down); crash recovery is what part 1 exercises.
my $node = mm_new_node('crash', conf => "restart_after_crash = on\n");
# pg_cron runs jobs over libpq, to localhost by default; this node listens on
# a Unix socket only, so point pg_cron at its socket directory.
$node->append_conf('postgresql.conf', "cron.host = '" . $node->host . "'\n");
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron');

my $five = '"teams": [{"name": "red", "min": 5, "max": 5}, {"name": "blue", "min": 5, "max": 5}]';
my $q_config = "{$five, "
  . '"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}';
my $q2_config = "{$five}";
my $duel = '{"match_size": {"min": 2, "max": 2}, '
  . '"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}';
$node->safe_psql('postgres', "SELECT mm.create_queue('q', '$q_config')");
$node->safe_psql('postgres', "SELECT mm.create_queue('q2', '$q2_config')");
$node->safe_psql('postgres', "SELECT mm.create_queue('q3', '$duel')");
$node->safe_psql('postgres',
	'CREATE TABLE acked (first_id bigint NOT NULL, last_id bigint NOT NULL, n int NOT NULL)');

# Part 3 starts first: pg_cron 1.4 starts the tick loop at the next minute
# boundary, so the loop gets going while parts 1 and 2 run.
my $job = $node->safe_psql('postgres', "SELECT mm.schedule('q3', '1 second')");
ok($job > 0, 'q3 is scheduled every second (pg_cron job)');
$node->safe_psql(
	'postgres', q{
	INSERT INTO mm.tickets (queue, players) VALUES
	  ('q3', '[{"id": "before_1"}]'), ('q3', '[{"id": "before_2"}]')});

# Polls a query until it returns the expected value (every $interval
# seconds); returns the seconds it took, undef on timeout.  Connection
# failures count as "not yet".
sub wait_for
{
	my ($query, $expected, $seconds, $interval) = @_;
	my $start = time;
	while (time - $start < $seconds)
	{
		my ($ret, $out) = (0, '');
		$ret = $node->psql('postgres', $query, stdout => \$out);
		return time - $start if $ret == 0 && $out eq $expected;
		usleep(($interval // 0.1) * 1_000_000);
	}
	return undef;
}

sub count_of
{
	my ($query) = @_;
	return $node->safe_psql('postgres', $query);
}

# The invariants that must hold after any crash, over every queue.
sub check_invariants
{
	my ($label) = @_;
	is( count_of(q{SELECT count(*) FROM (SELECT id FROM mm.tickets GROUP BY id HAVING count(*) > 1) d}),
		'0', "$label: every ticket id appears once in mm.tickets (one state per ticket)");
	is( count_of(
			q{SELECT (SELECT count(*) FROM mm.tickets_active WHERE status NOT IN ('searching', 'proposed'))
			       + (SELECT count(*) FROM mm.tickets_ended WHERE status NOT IN ('matched', 'cancelled', 'timed_out'))}),
		'0', "$label: tickets_active holds only searching/proposed, tickets_ended only ended tickets");
	# held: the players of the active tickets, and those of live matches
	# (ready or assigned) who have not left: a player stays held until the
	# match ends
	my $held = q{
			     SELECT p.value ->> 'id', t.id, t.queue
			       FROM mm.tickets_active t, jsonb_array_elements(t.players) p
			     UNION ALL
			     SELECT mp.player_id, mp.ticket_id, m.queue
			       FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
			      WHERE m.status IN ('ready', 'assigned') AND mp.left_at IS NULL};
	is( count_of(
			qq{SELECT count(*) FROM (
			    ($held
			     EXCEPT ALL
			     SELECT player_id, ticket_id, queue FROM mm.active_players)
			    UNION ALL
			    (SELECT player_id, ticket_id, queue FROM mm.active_players
			     EXCEPT ALL
			     ($held))) d}),
		'0', "$label: mm.active_players holds exactly the held players (active tickets, live matches)");
	is( count_of(
			q{SELECT count(*) FROM (SELECT ticket_id FROM mm.match_players
			                         GROUP BY ticket_id HAVING count(DISTINCT match_id) > 1) d}),
		'0', "$label: no ticket is in two matches");
	is( count_of(
			q{SELECT count(*) FROM mm.tickets_ended t
			   WHERE t.status = 'matched'
			     AND NOT EXISTS (SELECT FROM mm.matches m WHERE m.id = t.match_id)}),
		'0', "$label: every matched ticket's match exists");
	is( count_of(
			q{SELECT count(*) FROM mm.tickets_ended t, jsonb_array_elements(t.players) p
			   WHERE t.status = 'matched'
			     AND NOT EXISTS (SELECT FROM mm.match_players mp
			                      WHERE mp.match_id = t.match_id AND mp.ticket_id = t.id
			                        AND mp.player_id = p.value ->> 'id' AND mp.team = t.team)}),
		'0', "$label: every player of a matched ticket has its match_players row");
	is( count_of(
			q{SELECT count(*) FROM mm.match_players mp
			   WHERE NOT EXISTS (SELECT FROM mm.tickets_ended t
			                      WHERE t.id = mp.ticket_id AND t.status = 'matched'
			                        AND t.match_id = mp.match_id)}),
		'0', "$label: every match_players row belongs to a ticket matched into that match");
	is( count_of(
			q{SELECT count(*) FROM mm.matches m
			   WHERE NOT EXISTS (SELECT FROM mm.match_players mp WHERE mp.match_id = m.id)}),
		'0', "$label: no match without its players");
	is( count_of(
			q{SELECT count(*) FROM (
			    SELECT m.id FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
			     WHERE m.queue IN ('q', 'q2')
			     GROUP BY m.id
			    HAVING count(*) <> 10 OR count(*) FILTER (WHERE mp.team = 'red') <> 5) d}),
		'0', "$label: every 5v5 match is whole (10 players, 5 a side)");
	return;
}

# psql in the background with the SQL as an argument (on stdin it would only
# be fed when the harness is pumped).
sub start_psql
{
	my ($appname, $sql, $out, $err) = @_;
	return IPC::Run::start(
		[ $node->installed_command('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1',
		  '-d', $node->connstr('postgres') . " application_name=$appname",
		  '-c', $sql ],
		'>', $out, '2>', $err,
		IPC::Run::timeout(300));
}

# ---------------------------------------------------------------------------
# Part 1: kill -9 of a backend in the middle of a tick
# ---------------------------------------------------------------------------
# Tickets of 1 to 3 players (80,000 players): a tick over them takes a second
# or two, most of it writing the matches and moving the tickets.
my $tickets = 40_000;
my $players = 0;
$players += 1 + $_ % 3 for 1 .. $tickets;
my $now1 = '2026-01-01 12:00:00+00';
my $t0 = time;
$node->safe_psql(
	'postgres', qq{
	INSERT INTO mm.tickets (queue, players, created_at)
	SELECT 'q', (SELECT jsonb_agg(jsonb_build_object('id', 'k' || g || '_' || m,
	                    'attributes', jsonb_build_object('skill', 1000 + (g * 7919) % 2000)))
	               FROM generate_series(1, 1 + g % 3) m),
	       timestamptz '2026-01-01 11:59:00+00' + g * interval '1 ms'
	  FROM generate_series(1, $tickets) g});
note sprintf('inserted %d tickets in %.1f s', $tickets, time - $t0);
is(count_of("SELECT count(*) FROM mm.active_players WHERE queue = 'q'"),
	$players, "$tickets tickets of $players players are searching");

# The tick draws all its match ids (mm.matches_id_seq, which is not
# transactional: other sessions see it move) before it writes the matches.
my $ids_before = count_of(
	'SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM mm.matches_id_seq');
my ($tick_out, $tick_err) = ('', '');
my $tick = start_psql('mm_crash_tick', "SELECT mm.tick('q', '$now1')", \$tick_out, \$tick_err);

# The tick's backend, once it is writing (more than a few match ids drawn:
# the pg_cron loop of q3 may draw one meanwhile; the ids are drawn just
# before the writes, which are most of the tick).
my ($tick_pid, $active_for, $ids_drawn, $seen);
my $wait_start = time;
while (time - $wait_start < 60)
{
	my $row = $node->safe_psql(
		'postgres', qq{
		SELECT a.pid, extract(epoch FROM clock_timestamp() - a.query_start),
		       (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM mm.matches_id_seq) - $ids_before
		  FROM pg_stat_activity a
		 WHERE a.application_name = 'mm_crash_tick' AND a.state = 'active'
		   AND a.query LIKE 'SELECT mm.tick(%'});
	if ($row =~ /^(\d+)\|([\d.]+)\|(\d+)$/)
	{
		$seen = 1;
		if ($3 > 10)
		{
			($tick_pid, $active_for, $ids_drawn) = ($1, $2, $3);
			last;
		}
	}
	elsif ($seen)
	{
		last;    # the tick ended before it was caught writing
	}
	usleep(10_000);
}
ok(defined $tick_pid, 'the tick backend was caught writing its matches')
  # without it there is nothing to kill (kill -9 of pid 0 would kill this test's process group)
  or die 'the tick ended before it was caught writing';
note sprintf('tick backend %s active for %.2f s, %d match ids drawn, when killed',
	$tick_pid // '?', $active_for // -1, $ids_drawn // -1);

my $log_offset = -s $node->logfile;
is(kill('KILL', $tick_pid), 1, 'kill -9 of the tick backend');
$tick->finish;
is($tick_out, '', 'the killed tick returned no result');
like($tick_err, qr/terminat|closed the connection|connection to server was lost/,
	'its client lost the connection');

# The postmaster kills every other backend, reinitializes and recovers.
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
my $recovered = wait_for('SELECT 1', '1', 120, 0.2);
ok(defined $recovered, 'the node accepts connections again after crash recovery');
note sprintf('connections accepted again %.1f s after the log said reinitializing', $recovered // -1);

is(count_of("SELECT count(*) FROM mm.tickets WHERE queue = 'q'"),
	$tickets, 'no ticket lost');
is(count_of("SELECT count(*) FROM mm.tickets_active WHERE queue = 'q' AND status = 'searching'"),
	$tickets, 'every ticket is still searching: the killed tick rolled back');
is(count_of("SELECT count(*) FROM mm.matches WHERE queue = 'q'"),
	'0', 'no match of the killed tick was committed');
is(count_of("SELECT count(*) FROM mm.match_players WHERE queue = 'q'"),
	'0', 'and no match player');
is(count_of("SELECT count(*) FROM mm.active_players WHERE queue = 'q'"),
	$players, 'every player still holds its active ticket');
check_invariants('after the killed tick');

# A normal tick then forms the matches.
$t0 = time;
my $formed = $node->safe_psql('postgres', "SELECT mm.tick('q', '$now1')");
note sprintf('a whole tick over %d tickets took %.1f s and formed %s matches', $tickets, time - $t0, $formed);
ok($formed > 0, 'a normal tick after the crash forms matches');
is(count_of("SELECT count(*) FROM mm.matches WHERE queue = 'q'"),
	$formed, 'the matches it returned were committed');
is( count_of(
		"SELECT sum(jsonb_array_length(players)) FROM mm.tickets WHERE queue = 'q' AND status = 'matched'"),
	10 * $formed, 'ten matched players per match');
is(count_of("SELECT count(*) FROM mm.tickets WHERE queue = 'q'"),
	$tickets, 'still no ticket lost');
is( count_of(
		"SELECT count(*) FROM mm.tickets WHERE queue = 'q' AND status NOT IN ('searching', 'matched')"),
	'0', 'every ticket of q is searching or matched');
check_invariants('after a normal tick');

# ---------------------------------------------------------------------------
# Part 2: kill -9 of the postmaster during concurrent enqueue and ticking
# ---------------------------------------------------------------------------
# Each batch and its acknowledgement commit together.  pg_sleep waits on the
# latch, where an orphaned backend notices that the postmaster is gone and
# exits (a backend busy in a loop without waits would outlive it).
my $enqueue_sql = q{
DO $$
DECLARE
	b int;
BEGIN
	FOR b IN 1 .. 1000000 LOOP
		WITH ins AS (
			INSERT INTO mm.tickets (queue, players, created_at)
			SELECT 'q2', jsonb_build_array(jsonb_build_object('id', 'c' || b || '_' || i)),
			       clock_timestamp()
			  FROM generate_series(1, 50) i
			RETURNING id)
		INSERT INTO acked (first_id, last_id, n) SELECT min(id), max(id), count(*) FROM ins;
		COMMIT;
		PERFORM pg_sleep(0.005);
	END LOOP;
END
$$};
my $ticker_sql = q{
DO $$
BEGIN
	LOOP
		PERFORM mm.tick('q2', clock_timestamp());
		COMMIT;
		PERFORM pg_sleep(0.005);
	END LOOP;
END
$$};
my ($enq_out, $enq_err, $tk_out, $tk_err) = ('', '', '', '');
my $enqueuer = start_psql('mm_crash_enqueue', $enqueue_sql, \$enq_out, \$enq_err);
my $ticker = start_psql('mm_crash_ticker', $ticker_sql, \$tk_out, \$tk_err);
my $part2_start = time;

ok( defined wait_for(
		q{SELECT (SELECT count(*) >= 5 FROM acked)
		     AND (SELECT count(*) > 0 FROM mm.matches WHERE queue = 'q2')},
		't', 60),
	'tickets are being enqueued and matched');
my $remaining = 2 - (time - $part2_start);
usleep($remaining * 1_000_000) if $remaining > 0;
my $acked_seen = count_of('SELECT count(*) FROM acked');
my $matches_seen = count_of("SELECT count(*) FROM mm.matches WHERE queue = 'q2'");
note "before the crash: $acked_seen batches acknowledged, $matches_seen matches in q2";

mm_crash_restart($node);
$enqueuer->finish;
$ticker->finish;
like($enq_err, qr/terminat|closed the connection|connection to server was lost/,
	'the enqueuing session was cut off by the crash');
like($tk_err, qr/terminat|closed the connection|connection to server was lost/,
	'the ticking session was cut off by the crash');

my $acked = count_of('SELECT count(*) FROM acked');
note "after the crash: $acked batches acknowledged, "
  . count_of("SELECT count(*) FROM mm.tickets WHERE queue = 'q2'") . " tickets, "
  . count_of("SELECT count(*) FROM mm.matches WHERE queue = 'q2'") . " matches in q2";
ok($acked >= $acked_seen, 'every acknowledgement seen before the crash survived');
ok(count_of("SELECT count(*) FROM mm.matches WHERE queue = 'q2'") >= $matches_seen,
	'every match seen before the crash survived');
is(count_of('SELECT count(*) FROM acked WHERE n <> 50 OR last_id - first_id <> 49'),
	'0', 'each acknowledged batch is 50 consecutive ids');
is( count_of(
		q{SELECT count(*) FROM acked a, generate_series(a.first_id, a.last_id) g(id)
		   WHERE NOT EXISTS (SELECT FROM mm.tickets t WHERE t.id = g.id AND t.queue = 'q2')}),
	'0', 'every acknowledged ticket exists');
is( count_of(
		q{SELECT count(*) FROM mm.tickets t
		   WHERE t.queue = 'q2'
		     AND NOT EXISTS (SELECT FROM acked a WHERE t.id BETWEEN a.first_id AND a.last_id)}),
	'0', 'every ticket of q2 committed with its acknowledgement');
check_invariants('after the postmaster crash');

# The queue works on: one more tick matches what is left in whole matches.
my $left = count_of("SELECT count(*) FROM mm.tickets_active WHERE queue = 'q2'");
my $more = $node->safe_psql('postgres', "SELECT mm.tick('q2', clock_timestamp())");
is($more, int($left / 10), "a tick after the restart matches the $left tickets left, ten per match");
check_invariants('after a tick following the postmaster crash');

# ---------------------------------------------------------------------------
# Part 3: scheduled ticking resumes after a crash
# ---------------------------------------------------------------------------
my $waited = wait_for(
	"SELECT count(*) FROM mm.tickets WHERE queue = 'q3' AND status = 'matched'",
	'2', 150, 0.5);
ok(defined $waited, 'the pg_cron tick loop matched the tickets of q3');
note sprintf('q3 tickets matched %.1f s after parts 1 and 2 (%.1f s into the test)',
	$waited // -1, time - $test_start);
ok( defined wait_for("SELECT mm.tick_loop_running('q3')", 't', 70, 0.5),
	'the tick loop of q3 is running');

my $crashed_at = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
mm_crash_restart($node);
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job WHERE jobid = $job"),
	'1', 'the pg_cron job survived the crash');
$node->safe_psql(
	'postgres', q{
	INSERT INTO mm.tickets (queue, players) VALUES
	  ('q3', '[{"id": "after_1"}]'), ('q3', '[{"id": "after_2"}]')});
my $resumed_start = time;
$waited = wait_for(
	q{SELECT count(*) FROM mm.tickets
	   WHERE queue = 'q3' AND status = 'matched' AND players -> 0 ->> 'id' LIKE 'after%'},
	'2', 150, 0.5);
ok(defined $waited, 'scheduled ticking resumed after the crash: the new tickets were matched');
note sprintf('matched %.1f s after the restart', $waited // (time - $resumed_start));
is( count_of(
		"SELECT count(*) > 0 FROM cron.job_run_details WHERE jobid = $job AND start_time > '$crashed_at'"),
	't', 'by a run of the pg_cron job started after the crash');
check_invariants('after the scheduled ticks');

$node->safe_psql('postgres', "SELECT mm.unschedule('q3')");
$node->stop;
note sprintf('test took %.0f s', time - $test_start);
done_testing();
