# A queue's tick loop cannot be stopped by a role with no grant, and a loop
# that cannot tick says so.  A role with no privilege at all holds the
# advisory locks whose keys 0.4 published (the loop's, hashtextextended(
# 'mm_tick_loop:' || queue, 0), and the tick's, hashtextextended(queue,
# 0x6d6d5f7469636b)): the loop still ticks and forms the match.  When a
# session that may tick holds the queue's tick (an open transaction that
# called mm.tick), a second loop of the queue returns with a WARNING naming
# the running one, the running loop warns after five ticks held off, and its
# run fails: pg_cron records a failed run instead of a success.  No pg_cron
# job is involved: the loop is called as pg_cron would call it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);
use MmTest;

my $node = mm_new_node('tick_loop_lock');
$node->safe_psql(
	'postgres', q{
	CREATE ROLE nobody_special LOGIN;           -- no grant of any kind
	CREATE ROLE loop_runner LOGIN IN ROLE mm_ticker;
	SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2}}');
	SELECT mm.create_queue('held', '{"match_size": {"min": 2, "max": 2}}');
	-- the loop returns once its queue is unscheduled: a match unschedules it
	CREATE FUNCTION public.unschedule_on_match() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		DELETE FROM mm.schedule_jobs WHERE queue = NEW.queue;
		RETURN NULL;
	END $$;
	CREATE TRIGGER unschedule_on_match AFTER INSERT ON mm.matches
		FOR EACH ROW EXECUTE FUNCTION public.unschedule_on_match();
});
sub schedule_sql
{
	my ($queue) = @_;
	return qq{
	INSERT INTO mm.schedule_jobs (job_name, kind, queue, every, mode, cron_schedule)
	VALUES ('mm_tick:$queue', 'tick', '$queue', '100 milliseconds', 'loop', '* * * * *')};
}

sub wait_for
{
	my ($query, $expected, $seconds) = @_;
	my $start = time;
	while (time - $start < $seconds)
	{
		return 1 if $node->safe_psql('postgres', $query) eq $expected;
		usleep(100_000);
	}
	return 0;
}

# A loop run ends at the next minute boundary: keep its runs inside one minute.
sub away_from_minute_boundary
{
	my $second = time - 60 * int(time / 60);
	usleep(int((63 - $second) * 1_000_000)) if $second >= 50;
	return;
}

# --- a role with no grant holds every published key: the loop still ticks
my $nobody = $node->background_psql('postgres', extra_params => [ '-U', 'nobody_special' ]);
$nobody->query_safe(
	q{SELECT pg_advisory_lock(hashtextextended(concat('mm_tick_loop:', 'duel'), 0)),
	         pg_advisory_lock(hashtextextended('duel', 30801029203845995))});
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
	WHERE l.locktype = 'advisory' AND l.granted AND a.usename = 'nobody_special'}),
	'2', 'the role with no grant holds both advisory keys');
$node->safe_psql('postgres', schedule_sql('duel') . q{;
	SELECT mm.create_ticket('duel', '[{"id": "p1"}]');
	SELECT mm.create_ticket('duel', '[{"id": "p2"}]');});
away_from_minute_boundary();
my ($rc, $out, $err) = $node->psql('postgres', "CALL mm.tick_loop('duel')",
	extra_params => [ '-U', 'loop_runner' ]);
is($rc, 0, 'the loop run succeeds') or diag $err;
is($node->safe_psql('postgres', "SELECT count(*) FROM mm.matches WHERE queue = 'duel'"),
	'1', 'the loop ticked the queue and formed the match despite the locks the role holds');
is($node->safe_psql('postgres', "SELECT count(*) FROM mm.schedule_jobs WHERE queue = 'duel'"), '0',
	'and returned once the match unscheduled the queue');
$nobody->quit;

# --- a session that may tick holds the queue's tick: the loop says so
my $holder = $node->background_psql('postgres', extra_params => [ '-U', 'loop_runner' ]);
$holder->query_safe("BEGIN; SELECT mm.tick('held')");
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$node->safe_psql('postgres', schedule_sql('held') . q{;
	SELECT mm.create_ticket('held', '[{"id": "p3"}]');
	SELECT mm.create_ticket('held', '[{"id": "p4"}]');});
away_from_minute_boundary();
my ($loop_out, $loop_err) = ('', '');
my $loop = IPC::Run::start(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-U', 'loop_runner',
	  '-c', "CALL mm.tick_loop('held')" ],
	'>', \$loop_out, '2>', \$loop_err,
	IPC::Run::timeout(90));
ok(wait_for("SELECT mm.tick_loop_running('held')", 't', 10), 'the loop runs');
my $loop_pid = $node->safe_psql('postgres', "SELECT mm.tick_loop_holder('held', 'loop')");
($rc, $out, $err) = $node->psql('postgres', "CALL mm.tick_loop('held')",
	extra_params => [ '-U', 'loop_runner' ]);
is($rc, 0, 'a second loop of the queue returns');
like($err, qr/WARNING:  another tick loop of queue "held" is running \(process $loop_pid\): this run leaves the queue to it/,
	'with a warning naming the running loop');
is($node->safe_psql('postgres', "SELECT mm.tick_loop_holder('held', 'tick')"), $holder_pid,
	'mm.tick_loop_holder names the session that holds the tick');
# five ticks held off take half a second at 100 ms
usleep(1_500_000);
$node->safe_psql('postgres', "DELETE FROM mm.schedule_jobs WHERE queue = 'held'");
$loop->finish;
isnt($loop->result, 0, 'the run that could not tick fails');
like($loop_err,
	qr/WARNING:  queue "held" was not ticked 5 times in a row: process $holder_pid holds its tick/,
	'after five ticks held off the loop warns, naming the session');
like($loop_err, qr/ERROR:  queue "held" was not ticked in this run: another session held its tick each time/,
	'and the run ends with an error');
is($node->safe_psql('postgres', "SELECT count(*) FROM mm.tickets WHERE queue = 'held' AND status = 'searching'"),
	'2', 'the tickets still wait');
$holder->query_safe('COMMIT');
$holder->quit;
is($node->safe_psql('postgres', "SELECT mm.tick('held')"), '1', 'once the holder commits, a tick matches them');

# --- a role that may run the loop cannot take its lock outside of it: held
# by an idle session, it would leave the queue unticked by every loop
for my $call ("SELECT mm.tick_loop_lock('duel')",
	q{DO $$BEGIN PERFORM mm.tick_loop_lock('duel'); END$$})
{
	($rc, $out, $err) = $node->psql('postgres', $call, extra_params => [ '-U', 'loop_runner' ]);
	like($err, qr/ERROR:  mm\.tick_loop_lock may be called only by CALL mm\.tick_loop/,
		"the loop lock is refused outside the loop: $call");
}
is($node->safe_psql('postgres', "SELECT mm.tick_loop_running('duel')"), 'f', 'and nobody holds it');

# --- neither lock can be taken from SQL: pg_advisory_* cannot form their tags
my $nolock = $node->safe_psql('postgres', q{SELECT has_function_privilege('nobody_special', 'mm.tick_loop_lock(text)', 'EXECUTE'),
	has_function_privilege('nobody_special', 'mm.tick(text, timestamptz)', 'EXECUTE')});
is($nolock, 'f|f', 'a role with no grant may call neither the loop lock nor the tick');

$node->stop;
done_testing();
