# The loop keeper (src/schedule_starter.c): with matchmaking preloaded, a
# background worker starts within seconds the loop of every queue on the
# per-minute loop that has none running, as the role that scheduled it.
# No pg_cron job is involved (the rows of mm.schedule_jobs are written by
# hand, as mm.schedule would), so only the keeper can tick the queue here:
# - a scheduled queue's loop runs, as its job_role, and forms a match;
# - after kill -9 and a restart, the queue ticks within 5 s of the start;
# - a queue whose role cannot log in is not started; an unscheduled queue's
#   loop ends and is not started again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MmTest;

my $node = mm_new_node('loop_keeper',
	conf => "shared_preload_libraries = 'matchmaking,pg_cron'\nmax_worker_processes = 16\n");
$node->safe_psql(
	'postgres', q{
	CREATE ROLE keeper_ticker LOGIN IN ROLE mm_ticker;
	CREATE ROLE keeper_nologin NOLOGIN IN ROLE mm_ticker;
	SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2}}');
	SELECT mm.create_queue('locked_out', '{"match_size": {"min": 2, "max": 2}}');
	INSERT INTO mm.schedule_jobs (job_name, kind, queue, every, mode, cron_schedule, job_role)
	VALUES ('mm_tick:duel', 'tick', 'duel', '200 milliseconds', 'loop', '* * * * *', 'keeper_ticker'),
		   ('mm_tick:locked_out', 'tick', 'locked_out', '200 milliseconds', 'loop', '* * * * *',
			'keeper_nologin');
});

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

# Creates two tickets in duel and returns the seconds from $from until both
# are matched (undef after 15 s).
my $pair = 0;
sub matched_after
{
	my ($from) = @_;
	$pair++;
	my $ids = $node->safe_psql(
		'postgres', qq{
		SELECT string_agg(mm.create_ticket('duel', jsonb_build_array(jsonb_build_object('id', 'p$pair' || s)))::text, ',')
		  FROM (VALUES ('a'), ('b')) v(s)});
	return undef unless wait_for("SELECT count(*) FROM mm.tickets WHERE id IN ($ids) AND match_id IS NOT NULL",
		'2', 15);
	return time - $from;
}

ok(defined wait_for("SELECT mm.tick_loop_running('duel')", 't', 5), 'the keeper starts the loop of duel');
is( $node->safe_psql(
		'postgres', q{SELECT usename FROM pg_stat_activity WHERE backend_type = 'matchmaking tick loop'}),
	'keeper_ticker', 'as the role that scheduled the queue');
ok($node->log_contains(qr/matchmaking loop keeper started the tick loop of queue "duel"/), 'and logs it');
my $s = matched_after(time);
ok(defined $s && $s <= 5, 'the queue ticks (a pair is matched)');

# kill -9: the loop dies with the server; the keeper starts it again
mm_crash_restart($node);
my $started = time;
$s = matched_after($started);
ok(defined $s && $s <= 5, 'after kill -9 and a restart the queue ticks within 5 s of the start')
  or diag(defined $s ? sprintf('%.1f s', $s) : 'not within 15 s');

is($node->safe_psql('postgres', "SELECT mm.tick_loop_running('locked_out')"), 'f',
	'a queue whose role cannot log in is not started (pg_cron could not run it either)');

$node->safe_psql('postgres', "DELETE FROM mm.schedule_jobs WHERE queue = 'duel'");
ok(defined wait_for("SELECT mm.tick_loop_running('duel')", 'f', 5), 'an unscheduled queue\'s loop ends');
usleep(2_500_000);
is($node->safe_psql('postgres', "SELECT mm.tick_loop_running('duel')"), 'f', 'and is not started again');

$node->stop;
done_testing();
