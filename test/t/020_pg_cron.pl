# Scheduling with the real pg_cron (Debian 12: 1.4, finest schedule one
# minute): a queue scheduled every second forms matches with no manual tick,
# and a LISTEN client hears match_found within 3 seconds of matchable tickets
# being committed; a second loop of the same queue returns at once; a loop
# whose tick is blocked across a minute boundary carries on through the next
# minute (that minute's pg_cron run found it running); re-scheduling
# replaces the job and stops the loop; unscheduling stops a running loop and
# the ticking; dropping a queue removes its job; a job handed to a login role
# that can only tick (mm_ticker) forms matches; the retention job archives
# old finished tickets.  The tick loop starts at once
# (a background worker until the next minute boundary, then pg_cron's job:
# test/t/090_first_tick.pl); the retention job runs at the next minute
# boundary, so this takes up to about two minutes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MmTest;

my $node = mm_new_node('cron');
# pg_cron runs jobs over libpq, to localhost by default; this node listens on
# a Unix socket only, so point pg_cron at its socket directory.
$node->append_conf('postgresql.conf', "cron.host = '" . $node->host . "'\n");
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron');

my $duel = '{"match_size": {"min": 2, "max": 2}, '
  . '"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}';
$node->safe_psql('postgres', "SELECT mm.create_queue('duel', '$duel')");
$node->safe_psql('postgres', "SELECT mm.create_queue('spare', '$duel')");

# Polls a query until it returns the expected value; returns the seconds it took.
sub wait_for
{
	my ($query, $expected, $seconds) = @_;
	my $start = time;
	while (time - $start < $seconds)
	{
		return time - $start if $node->safe_psql('postgres', $query) eq $expected;
		usleep(100_000);
	}
	return undef;
}

# Old finished tickets for the retention job: cancelled in 2020.
$node->safe_psql(
	'postgres', q{
	SELECT mm.create_ticket('spare', '[{"id": "old_1"}]', '2020-01-01 00:00:00+00');
	SELECT mm.create_ticket('spare', '[{"id": "old_2"}]', '2020-01-01 00:00:01+00');
	UPDATE mm.tickets SET status = 'cancelled', updated_at = '2020-01-01 00:01:00+00'
	 WHERE queue = 'spare';
});

# --- scheduling: the job pg_cron gets
# Scheduled early in a minute: until its end the loop is the background
# worker's, not a run of the pg_cron job, so the blocked tick below belongs to
# a loop that the next minute's run of the job can find running (pg_cron never
# starts a job's run while its previous run is still going).
{
	my $second = time - 60 * int(time / 60);
	usleep(int((63 - $second) * 1_000_000)) if $second >= 30;
}
my $job = $node->safe_psql('postgres', "SELECT mm.schedule('duel', '2 seconds')");
ok($job > 0, 'mm.schedule returns the pg_cron job id');
is($node->safe_psql('postgres', "SELECT mm.schedule('duel')"),
	$job, 're-scheduling a queue keeps its job');
is( $node->safe_psql(
		'postgres',
		"SELECT jobname || ' | ' || schedule || ' | ' || command FROM cron.job ORDER BY jobid"),
	"mm_tick:duel | * * * * * | CALL mm.tick_loop('duel')",
	'pg_cron 1.4: a per-minute job runs the tick loop');
is( $node->safe_psql(
		'postgres', "SELECT kind, queue, every, mode, job_id FROM mm.schedules"),
	"tick|duel|00:00:01|loop|$job",
	'mm.schedules lists it with the new interval');
my $retention = $node->safe_psql('postgres',
	"SELECT mm.schedule_retention('1 day', '1 minute', archive => true)");
is( $node->safe_psql(
		'postgres', "SELECT schedule || ' | ' || command FROM cron.job WHERE jobid = $retention"),
	'* * * * * | CALL mm.run_retention()',
	'the retention job is a pg_cron job too');

# --- the loop starts at once (a background worker until the minute
# boundary, then pg_cron's run; either holds the queue's lock)
my $waited = wait_for("SELECT mm.tick_loop_running('duel')", 't', 5);
ok(defined $waited, 'the tick loop is running');
note sprintf('loop started after %.1f s', $waited // -1);

# Runs a second loop of the queue in a new session and returns the seconds
# the server spent in the CALL, from clock_timestamp() on either side, so
# that starting psql on a loaded machine does not count.  A loop that got the
# queue's lock would tick, then sleep until its next tick, one interval
# (1 second) later, and go on until the end of the minute; one that finds
# the lock taken returns after a try-lock, in milliseconds.  So "less than
# one interval" tells the two apart with a margin of about a thousand.
sub second_loop_seconds
{
	return $node->safe_psql(
		'postgres', q{
		CREATE TEMP TABLE loop_start AS SELECT clock_timestamp() AS t;
		CALL mm.tick_loop('duel');
		SELECT extract(epoch FROM clock_timestamp() - t) FROM loop_start;});
}
# At a minute boundary one minute's run hands over to the next one's, which
# can leave the lock free for a moment: keep away from the boundary.
sub away_from_minute_boundary
{
	my $second = time - 60 * int(time / 60);
	usleep(int((63 - $second) * 1_000_000)) if $second >= 56;
	usleep(int((3 - $second) * 1_000_000)) if $second < 3;
	return;
}
my $interval = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM every) FROM mm.schedule_jobs WHERE queue = 'duel'");
is($interval, '1.000000', 'the loop ticks every second');
away_from_minute_boundary();
my $seconds = second_loop_seconds();
ok($seconds < $interval,
	sprintf('a second loop of the queue returns at once (%.3f s, under one interval)', $seconds));
ok( defined wait_for(
		q{SELECT count(*) FROM pg_stat_activity
		   WHERE query = 'CALL mm.tick_loop(''duel'')' AND state = 'active'},
		'1', 3),
	'one loop of the queue runs');
# Even while the loop's tick runs long (here: waiting for a lock on the
# queue's row), a second loop returns at once instead of ticking beside it.
my $blocker = $node->background_psql('postgres');
$blocker->query_safe("BEGIN; SELECT name FROM mm.queues WHERE name = 'duel' FOR UPDATE");
ok( defined wait_for(
		q{SELECT count(*) FROM pg_stat_activity
		   WHERE query = 'CALL mm.tick_loop(''duel'')' AND wait_event_type = 'Lock'},
		'1', 5),
	"the loop's tick is blocked");
away_from_minute_boundary();
$seconds = second_loop_seconds();
ok($seconds < $interval,
	sprintf('a second loop returns at once while the tick runs long (%.3f s)', $seconds));
# The tick stays blocked across the next minute boundary, until pg_cron's run
# of the new minute has found the loop's lock taken and returned.  The loop
# then carries on through that minute: the LISTEN check below needs a tick
# within 3 seconds, long before the minute after.
my $boundary = $node->safe_psql('postgres',
	"SELECT date_trunc('minute', clock_timestamp()) + interval '1 minute'");
ok( defined wait_for(
		qq{SELECT count(*) > 0 FROM cron.job_run_details
		    WHERE jobid = $job AND start_time >= '$boundary' AND status = 'succeeded'},
		't', 75),
	"the next minute's run of the job returned while the loop's tick was blocked");
$blocker->query_safe('COMMIT');
$blocker->quit;
ok(defined wait_for("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'", '0', 5),
	'the blocked tick went on');
ok(defined wait_for("SELECT mm.tick_loop_running('duel')", 't', 3),
	'the loop carries on into the minute its tick ran over');

# --- a LISTEN client hears match_found within 3 seconds of the commit
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN mm_events');
$node->safe_psql(
	'postgres', q{
	SELECT mm.create_ticket('duel', '[{"id": "alice", "attributes": {"skill": 1500}}]');
	SELECT mm.create_ticket('duel', '[{"id": "bob", "attributes": {"skill": 1510}}]');
});
my $committed = time;
my $heard;
while (time - $committed < 10)
{
	my $out = $listener->query('SELECT 1');
	if ($out =~ /^Asynchronous notification "mm_events" with payload "(.*"event":\s*"match_found".*)" received/m)
	{
		$heard = $1;
		last;
	}
	usleep(50_000);
}
my $latency = time - $committed;
ok(defined $heard, 'the LISTEN client received match_found');
ok($latency < 3, sprintf('within 3 seconds of the commit (%.2f s)', $latency));
like($heard // '', qr/"queue": "duel"/, 'the event names the queue');
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(status, ',' ORDER BY id) FROM mm.tickets WHERE queue = 'duel'"),
	'matched,matched',
	'both tickets were matched with no manual tick');
# each tick is its own transaction, so its now() is the time it ran, after
# the tickets were committed (not the start of the loop or of its sleep)
is( $node->safe_psql(
		'postgres', q{
	SELECT bool_and(matched_at > created_at AND matched_at < created_at + interval '3 seconds')
	  FROM mm.tickets WHERE queue = 'duel'}),
	't', 'the tick ran at its own time');
$listener->quit;

# --- re-scheduling to a cron interval replaces the job and stops the loop
is($node->safe_psql('postgres', "SELECT mm.schedule('duel', '5 minutes')"),
	$job, 're-scheduling to 5 minutes keeps the job');
is( $node->safe_psql(
		'postgres', "SELECT schedule || ' | ' || command FROM cron.job WHERE jobid = $job"),
	"*/5 * * * * | SELECT mm.tick('duel')",
	'a cron expression for a whole-minute interval');
ok(defined wait_for("SELECT mm.tick_loop_running('duel')", 'f', 5),
	'the running loop stops when the queue is no longer on a loop');

# --- unschedule stops a running loop, and the ticking
# The cron loop has stopped; scheduling every second starts one at once.
$node->safe_psql('postgres', "SELECT mm.schedule('duel', '1 second')");
ok(defined wait_for("SELECT mm.tick_loop_running('duel')", 't', 5),
	'scheduling starts the loop at once');
is($node->safe_psql('postgres', "SELECT mm.unschedule('duel')"),
	't', 'mm.unschedule returns true');
ok(defined wait_for("SELECT mm.tick_loop_running('duel')", 'f', 3),
	'the running loop stops at once');
is($node->safe_psql('postgres', "SELECT mm.unschedule('duel')"),
	'f', 'and false the second time');
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job WHERE jobname = 'mm_tick:duel'"),
	'0', 'the pg_cron job is gone');
$node->safe_psql(
	'postgres', q{
	SELECT mm.create_ticket('duel', '[{"id": "carol"}]');
	SELECT mm.create_ticket('duel', '[{"id": "dave"}]');
});
sleep 3;
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM mm.tickets WHERE queue = 'duel' AND status = 'searching'"),
	'2', 'after unscheduling, new tickets stay searching');

# --- a job handed to a login role that can only tick (docs/scheduling.md):
# a whole-minute schedule (no loop of ours ticks meanwhile), run by pg_cron at
# the next minute boundary, which the retention job below waits for
$node->safe_psql('postgres', 'CREATE ROLE game_ticker LOGIN IN ROLE mm_ticker');
$node->safe_psql('postgres', "SELECT mm.create_queue('ticked', '$duel')");
my $ticked_job = $node->safe_psql('postgres', "SELECT mm.schedule('ticked', '1 minute')");
$node->safe_psql('postgres', "SELECT cron.alter_job($ticked_job, username => 'game_ticker')");
is($node->safe_psql('postgres', "SELECT username FROM cron.job WHERE jobid = $ticked_job"),
	'game_ticker', 'a superuser hands the job to a login role in mm_ticker');
$node->safe_psql(
	'postgres', q{
	SELECT mm.create_ticket('ticked', '[{"id": "tk_1"}]');
	SELECT mm.create_ticket('ticked', '[{"id": "tk_2"}]');
});

# --- dropping a queue removes its job
$node->safe_psql('postgres', "SELECT mm.schedule('duel', '1 second')");
$node->safe_psql('postgres', "SELECT mm.drop_queue('duel', force => true)");
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job WHERE jobname = 'mm_tick:duel'"),
	'0', 'dropping a queue removes its pg_cron job');

# --- the retention job ran at the minute boundary and archived the old tickets
ok( defined wait_for(
		"SELECT count(*) > 0 FROM cron.job_run_details WHERE jobid = $retention AND status = 'succeeded'",
		't', 70),
	'the retention job ran');
is($node->safe_psql('postgres', "SELECT count(*) FROM mm.tickets WHERE queue = 'spare'"),
	'0', 'old finished tickets were purged');
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(status, ',') FROM mm.tickets_archive WHERE queue = 'spare'"),
	'cancelled,cancelled',
	'and archived');
ok( defined wait_for(
		"SELECT count(*) FROM mm.tickets WHERE queue = 'ticked' AND status = 'matched'", '2', 70),
	'a job run by a login role in mm_ticker, and nothing else, forms matches');
$node->safe_psql('postgres', "SELECT mm.drop_queue('ticked')");
is($node->safe_psql('postgres', "SELECT mm.unschedule_retention()"),
	't', 'mm.unschedule_retention');
is($node->safe_psql('postgres', "SELECT count(*) FROM cron.job"), '0', 'no jobs left');

$node->stop;
done_testing();
