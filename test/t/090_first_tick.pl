# Scheduling that starts at once and repairs itself, with the real pg_cron
# (Debian 12: 1.4, whose finest schedule is one minute):
# - with matchable tickets waiting, the first match exists within 5 seconds
#   of mm.schedule (a background worker runs the queue's tick loop until the
#   next minute boundary, then pg_cron's job takes over); never two loops of
#   a queue at once; mm.unschedule stops the worker;
# - mm.schedule warns when pg_cron cannot run the job (cron.host = localhost
#   on a server without TCP), mm.schedules shows the failed run in words, and
#   scheduling again after fixing cron.host re-creates the job with it, which
#   pg_cron then runs;
# - with every background worker slot taken, mm.schedule says so with a
#   NOTICE and the queue waits for pg_cron.
# About two minutes: it waits for two minute boundaries.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MmTest;

# pg_cron connects to localhost by default, but a test node listens on its
# Unix socket only: the setting from the issue, which cannot work.
my $node = mm_new_node('first_tick', conf => "cron.host = 'localhost'\n");
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron');

my $duel = '{"match_size": {"min": 2, "max": 2}, '
  . '"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}';
$node->safe_psql('postgres', "SELECT mm.create_queue('first', '$duel')");

# Polls a query until it returns the expected value; returns the seconds it
# took, or undef after $seconds.
sub wait_for
{
	my ($query, $expected, $seconds) = @_;
	my $start = time;
	while (time - $start < $seconds)
	{
		return time - $start if $node->safe_psql('postgres', $query) eq $expected;
		usleep(50_000);
	}
	return undef;
}

# The worker's loop ends at the next minute boundary, after which pg_cron's
# job (failing here until cron.host is fixed) is the queue's only loop: the
# checks that need the worker alive start early enough in a minute.
sub not_near_minute_end
{
	my $second = time - 60 * int(time / 60);
	usleep(int((61 - $second) * 1_000_000)) if $second >= 40;
	return;
}

# Runs SQL, returning its stdout and stderr (warnings, notices).
sub psql_with_messages
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql('postgres', $sql, stdout => \$out, stderr => \$err);
	die "psql failed ($rc): $err" if $rc != 0;
	return ($out, $err);
}

my $workers = q{SELECT count(*) FROM pg_stat_activity
	 WHERE backend_type = 'matchmaking tick loop' AND query = 'CALL mm.tick_loop(''first'')'};

# Two matchable tickets wait; the queue is not scheduled.
$node->safe_psql(
	'postgres', q{
	SELECT mm.create_ticket('first', '[{"id": "alice"}]');
	SELECT mm.create_ticket('first', '[{"id": "bob"}]');
});

# --- the first match within 5 seconds of mm.schedule
my $start = time;
my ($job, $messages) = psql_with_messages("SELECT mm.schedule('first', '1 second')");
my $elapsed = wait_for("SELECT count(*) FROM mm.matches WHERE queue = 'first'", '1', 5);
ok(defined $elapsed,
	sprintf('the first match exists %.2f s after mm.schedule (limit 5 s)', (time - $start)));
diag(sprintf('first match %.2f s after mm.schedule returned', $elapsed // -1));
# (pg_cron cannot connect with these settings: the worker formed that match)

# --- the settings pg_cron cannot work with: a warning, not silence
like(
	$messages,
	qr/WARNING:  pg_cron cannot run the job of queue "first": cron.host is "localhost", but this server listens on no TCP address/,
	'mm.schedule warns that pg_cron cannot connect to localhost');
like($messages, qr/HINT:  Set cron.host = '\Q${\ $node->host}\E'/,
	'and hints at the socket directory');

# --- never two loops of a queue at once
is($node->safe_psql('postgres', "SELECT mm.unschedule('first')"), 't', 'unscheduled for a fresh start');
ok(defined wait_for("SELECT mm.tick_loop_running('first')", 'f', 3), 'the loop stopped');
not_near_minute_end();
$node->safe_psql('postgres', "SELECT mm.schedule('first', '1 second')");
ok(defined wait_for($workers, '1', 5), 'a background worker runs the queue\'s tick loop');
is($node->safe_psql('postgres', "SELECT mm.tick_loop_running('first')"),
	't', 'mm.tick_loop_running sees it');
my $worker_pid = $node->safe_psql('postgres', $workers =~ s/count\(\*\)/pid/r);
$node->safe_psql('postgres', "SELECT mm.schedule('first', '1 second')");
is($node->safe_psql('postgres', $workers =~ s/count\(\*\)/string_agg(pid::text, ',')/r),
	$worker_pid, 're-scheduling the running queue keeps its worker, and only it');
# a worker started beside the running loop finds its lock taken and ends at once
is($node->safe_psql('postgres', "SELECT mm.schedule_start_loop('first')"),
	't', 'a second worker can be started by hand');
usleep(1_000_000);
ok(defined wait_for($workers, '1', 3), 'but it ends at once, the first one ticking on');

# --- mm.unschedule stops the worker
is($node->safe_psql('postgres', "SELECT mm.unschedule('first')"), 't', 'mm.unschedule');
ok(defined wait_for("SELECT mm.tick_loop_running('first') OR ($workers) > 0", 'f', 3),
	'the worker stops within one interval');

# --- pg_cron's run fails: mm.schedules says why, in words
($job, $messages) = psql_with_messages("SELECT mm.schedule('first', '1 second')");
is( $node->safe_psql('postgres', "SELECT nodename FROM cron.job WHERE jobid = $job"),
	'localhost', 'the job connects to localhost, as cron.host says');
note 'waiting for the minute boundary, when pg_cron runs the job';
ok( defined wait_for(
		"SELECT last_run_status FROM mm.schedules WHERE queue = 'first'", 'failed', 70),
	'pg_cron\'s run of the job failed');
like(
	$node->safe_psql('postgres', "SELECT last_error FROM mm.schedules WHERE queue = 'first'"),
	qr/^pg_cron could not connect to the server \(host localhost, port \d+\) to run the job: check cron.host/,
	'mm.schedules shows the last error in words');
($messages) = (psql_with_messages("SELECT mm.schedule('first', '1 second')"))[1];
like(
	$messages,
	qr/WARNING:  the last run of the pg_cron job of queue "first" failed: pg_cron could not connect/,
	'scheduling again with the same settings warns that the last run failed');

# --- fixing cron.host, then scheduling again, repairs the job.  Every
# background worker slot is taken from now on (pg_cron's launcher and the
# logical replication launcher fill two).
$node->append_conf('postgresql.conf',
	"cron.host = '" . $node->host . "'\nmax_worker_processes = 2\n");
$node->restart;
ok( defined wait_for(
		q{SELECT count(*) FROM pg_stat_activity
		   WHERE backend_type IN ('pg_cron launcher', 'logical replication launcher')},
		'2', 10),
	'both background worker slots are taken');
$node->safe_psql(
	'postgres', q{
	SELECT mm.create_ticket('first', '[{"id": "carol"}]');
	SELECT mm.create_ticket('first', '[{"id": "dave"}]');
});
my $new_job;
($new_job, $messages) = psql_with_messages("SELECT mm.schedule('first', '1 second')");
isnt($new_job, $job, 'the job was re-created (a new job id)');
like($messages, qr/NOTICE:  pg_cron job $job \("mm_tick:first"\) was re-created: it connected to host localhost/,
	'mm.schedule says why it re-created the job');
is( $node->safe_psql('postgres', "SELECT nodename || ' ' || command FROM cron.job WHERE jobname = 'mm_tick:first'"),
	$node->host . " CALL mm.tick_loop('first')",
	'one job, with the socket directory as its host');
unlike($messages, qr/WARNING/, 'no warning once the settings work');
like(
	$messages,
	qr/NOTICE:  queue "first" starts ticking at the next minute boundary\nDETAIL:  No background worker slot was free/,
	'with no background worker slot free, a NOTICE says the queue waits for pg_cron');
is($node->safe_psql('postgres', "SELECT last_error IS NULL FROM mm.schedules WHERE queue = 'first'"),
	't', 'the old job\'s error went with it');
note 'waiting for the minute boundary, when pg_cron runs the repaired job';
ok( defined wait_for(
		"SELECT count(*) FROM mm.tickets WHERE queue = 'first' AND status = 'matched'", '4', 70),
	'pg_cron\'s repaired job ticks the queue');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM cron.job_run_details WHERE jobid = $new_job AND status IN ('running', 'succeeded')"),
	'1', 'pg_cron ran the repaired job');

is($node->safe_psql('postgres', "SELECT mm.unschedule('first')"), 't', 'unscheduled');
$node->stop;
done_testing();
