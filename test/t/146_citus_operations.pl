# Operating matchmaking on Citus (issue 29): scheduled queues come back in
# seconds and one worker's failure stays with its shards.  A coordinator and
# two workers, eight queues scheduled every second (pg_cron's per-minute
# loop) and the loop keeper of each node (src/schedule_starter.c):
# - every queue ticks (a pair of tickets is matched) within 5 s;
# - a worker killed (kill -9): the other worker's queues keep ticking; the
#   analysts' metrics on the coordinator fail naming the dead node (08xxx);
#   once it is back, its queues tick within 5 s of its start (its loop
#   keeper, not pg_cron's next minute);
# - the coordinator restarted: every queue ticks within 5 s;
# - a third worker added and the shards rebalanced (citus_rebalance_start,
#   logical replication) while tickets flow and the loops tick: the
#   rebalance completes, nothing is lost or doubled, ids stay unique, no
#   player is in two matches, every ticket of the flow is matched, the loop
#   of a moved queue ends on its old node and runs on its new one within 5 s
#   of the end of the move, a tick on the old node finds the shards moved,
#   and every queue matches a pair created after the move within 5 s.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmCitus;
use MmTest;
use IPC::Run;
use Time::HiRes qw(usleep time);

mm_citus_require();

my ($coord, @workers) = mm_citus_cluster(workers => 2, name => 'ops');
$coord->safe_psql('postgres', 'CREATE EXTENSION matchmaking');
$coord->safe_psql('postgres', 'CREATE EXTENSION pg_cron');

# 1v1 by skill: equal skills match at once; 0 against 1000 only once the
# older ticket has waited 3 s (the rule's expansion)
my $config = q({"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 10,
			   "expansion": {"every_seconds": 3, "delta": 1000, "limit": 1010}}]});
my @queues = map { "q$_" } 0 .. 7;
$coord->safe_psql('postgres', "SELECT mm.create_queue('$_', '$config')") for @queues;
is($coord->safe_psql('postgres', 'SELECT mm.distribute(8)'), 't', 'the database is distributed');
$coord->safe_psql('postgres', "SELECT mm.schedule('$_', '1 second')") for @queues;
is( $coord->safe_psql(
		'postgres', q{SELECT string_agg(DISTINCT mode || ' ' || job_role, ',') FROM mm.schedule_jobs
		 WHERE kind = 'tick'}),
	'loop ' . $coord->safe_psql('postgres', 'SELECT current_user'),
	'the queues are on the per-minute loop, with the role that scheduled them');

# The node of each queue, and a queue of each worker.
sub node_of
{
	my ($q) = @_;
	my $port = $coord->safe_psql('postgres', "SELECT node_port FROM mm.queue_node('$q')");
	return mm_citus_node_at($port) // die "queue $q: no node at port '$port'";
}
my ($qa) = grep { node_of($_) == $workers[0] } @queues;
my ($qb) = grep { node_of($_) == $workers[1] } @queues;
ok($qa && $qb, "queue $qa is on the first worker, $qb on the second");
my ($wa, $wb) = @workers;

# Creates a pair of tickets in queue $q through $node (retrying while it
# fails, as a backend would) that match at once, and waits until both are
# matched.  Returns the seconds from $from until they were, or undef after
# $limit seconds.
my $pair = 0;
sub seconds_until_ticked
{
	my ($q, $from, $limit, $node) = @_;
	$node //= $coord;
	$pair++;
	my @ids;
	for my $side ('a', 'b')
	{
		my $id = '';
		while ($id !~ /^\d+$/)
		{
			return undef if time - $from > $limit;
			(undef, $id) = $node->psql('postgres',
				qq{SELECT mm.create_ticket('$q', '[{"id": "p$pair$side", "attributes": {"skill": 500}}]')});
			$id //= '';
			usleep(100_000) unless $id =~ /^\d+$/;
		}
		push @ids, $id;
	}
	while (time - $from <= $limit)
	{
		my (undef, $n) = $node->psql('postgres',
			"SELECT count(*) FROM mm.tickets WHERE queue = '$q' AND id IN ($ids[0], $ids[1]) AND match_id IS NOT NULL");
		return time - $from if defined $n && $n eq '2';
		usleep(100_000);
	}
	return undef;
}

# Creates a pair of tickets that match at once in each queue of @$queues
# (through the coordinator), then waits until every pair is matched;
# returns the seconds from the creation of each queue's pair until it was
# matched (undef: not within $limit seconds).
sub seconds_until_all_ticked
{
	my ($queues, $limit) = @_;
	my (%ids, %created, %after);
	for my $q (@$queues)
	{
		$pair++;
		$ids{$q} = join(',', map {
			$coord->safe_psql('postgres',
				qq{SELECT mm.create_ticket('$q', '[{"id": "p$pair$_", "attributes": {"skill": 500}}]')})
		} ('a', 'b'));
		$created{$q} = time;
	}
	my $from = time;
	while (time - $from <= $limit && keys %after < @$queues)
	{
		for my $q (grep { !exists $after{$_} } @$queues)
		{
			$after{$q} = time - $created{$q}
			  if $coord->safe_psql('postgres',
				"SELECT count(*) FROM mm.tickets WHERE queue = '$q' AND id IN ($ids{$q}) AND match_id IS NOT NULL")
			  eq '2';
		}
		usleep(100_000);
	}
	return \%after;
}

sub ticks_within
{
	my ($q, $from, $label, $node) = @_;
	my $s = seconds_until_ticked($q, $from, 15, $node);
	ok(defined $s && $s <= 5, "$label: $q ticks within 5 s")
	  or diag(defined $s ? sprintf('%.1f s', $s) : 'not within 15 s');
	note(sprintf('%s: %s ticked after %.1f s', $label, $q, $s)) if defined $s;
	return;
}

# --- every queue ticks ---
ticks_within($_, time, 'scheduled') for @queues;

# --- a worker killed: the other worker's queues keep ticking ---
# a pair in $qb that matches only after 3 s of waiting, created before the
# kill, of players whose shards are on the live worker (the tick claims a
# player on the dead one once it is back)
my @slow_players = grep {
	$coord->safe_psql('postgres', qq{SELECT nodeport FROM pg_dist_shard_placement
		WHERE shardid = get_shard_id_for_distribution_column('mm.active_players', '$_')}) == $wb->port
} map { "slow$_" } 0 .. 40;
my @slow = map {
	my $skill = $_ * 1000;
	$coord->safe_psql('postgres',
		qq{SELECT mm.create_ticket('$qb', '[{"id": "$slow_players[$_]", "attributes": {"skill": $skill}}]')})
} 0 .. 1;
my $killed = time;
mm_crash_stop($wa);
my $matched = '';
while (time - $killed < 15)
{
	(undef, $matched) = $coord->psql('postgres',
		"SELECT count(*) FROM mm.tickets WHERE queue = '$qb' AND id IN ($slow[0], $slow[1]) AND match_id IS NOT NULL");
	last if ($matched // '') eq '2';
	usleep(200_000);
}
is($matched, '2', 'with ' . $wa->name . " down, $qb on the other worker keeps ticking (a pair matched after the kill)");
ok(time - $killed <= 8, sprintf('within 5 s of the pair becoming matchable (%.1f s after the kill)', time - $killed));
is($wb->safe_psql('postgres', "SELECT mm.tick_loop_running('$qb')"), 't', "the loop of $qb runs on its worker");

# the analysts' metrics on the coordinator read every shard: they fail, naming the node missing
my $port_a = $wa->port;
my ($ret, $out, $err) = $coord->psql('postgres', "SELECT count(*) FROM mm.queue_stats('1 hour')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'mm.queue_stats fails with a worker down');
like($err, qr/ERROR:  08\w{3}: .*$port_a/, 'with a connection error (08xxx) naming the node missing');
($ret, $out, $err) = $coord->psql('postgres', "SELECT count(*) FROM mm.match_stats('1 hour')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  08\w{3}: .*$port_a/, 'mm.match_stats too');

# back: its queues tick within 5 s of its start
$wa->start;
my $started = time;
ticks_within($qa, $started, $wa->name . ' restarted after kill -9');
ok($wa->log_contains(qr/matchmaking loop keeper started the tick loop of queue "$qa"/),
	'the loop keeper of ' . $wa->name . " restarted the loop of $qa");

# --- the coordinator restarted ---
$coord->restart;
$started = time;
ticks_within($_, $started, 'the coordinator restarted') for ($qa, $qb);

# --- a third worker, a rebalance while tickets flow and the loops tick ---
my $wc = mm_citus_add_worker($coord, 'ops_w3');
is($coord->safe_psql('postgres', 'SELECT mm.distribute(8)'), 't', 'mm.distribute again for the new worker');
my %before = map { $_ => node_of($_)->name } @queues;

# the flow: tickets through the coordinator, one statement each, in pairs
# of one queue that match at once, paced, until the test stops it once the
# rebalance has ended (a row in flow_stop; at most $flow_max tickets)
$coord->safe_psql('postgres', 'CREATE TABLE flow_stop (stop boolean)');
my $flow_max = 6000;
my $script = '';
for my $i (0 .. $flow_max - 1)
{
	my $q = $queues[ int($i / 2) % @queues ];
	# a pair is never cut in two
	$script .= "SELECT NOT EXISTS (SELECT FROM flow_stop) AS go \\gset\n\\if :go\n" if $i % 2 == 0;
	$script .= qq{SELECT mm.create_ticket('$q', '[{"id": "flow$i", "attributes": {"skill": 500}}]');\n};
	$script .= "SELECT pg_sleep(0.03);\n";
	$script .= "\\endif\n" if $i % 2 == 1;
}
# from a file: psql reads it on its own (IPC::Run feeds a scalar only when pumped)
my $script_file = PostgreSQL::Test::Utils::tempdir() . '/flow.sql';
PostgreSQL::Test::Utils::append_to_file($script_file, $script);
my ($fout, $ferr) = ('', '');
my $flow = IPC::Run::start(
	[ 'psql', '-XAtq', '-h', $coord->host, '-p', $coord->port, '-d', 'postgres', '-f', $script_file ],
	'>', \$fout, '2>', \$ferr);
# the flow is under way before the rebalance starts
my $flowing = '0';
for (1 .. 100)
{
	$flowing = $coord->safe_psql('postgres',
		q{SELECT count(*) FROM mm.tickets WHERE players -> 0 ->> 'id' LIKE 'flow%'});
	last if $flowing > 0;
	usleep(100_000);
}
ok($flowing > 0, 'tickets flow through the coordinator');

($ret, $out, $err) = $coord->psql('postgres', 'SELECT citus_rebalance_start()');
is($ret, 0, 'citus_rebalance_start() starts (logical replication: every table has a key)') or diag($err);
($ret, $out, $err) = $coord->psql('postgres', 'SELECT citus_rebalance_wait()', timeout => 300);
my $moved_at = time;
is($ret, 0, 'the rebalance completes') or diag($err);
my $during = $coord->safe_psql('postgres',
	q{SELECT count(*) FROM mm.tickets WHERE players -> 0 ->> 'id' LIKE 'flow%'});
ok($during > $flowing && $during < $flow_max,
	"the tickets flowed while the shards moved ($flowing created when it started, $during when it ended)");
$coord->safe_psql('postgres', 'INSERT INTO flow_stop VALUES (true)');
is( $coord->safe_psql(
		'postgres', q{SELECT state FROM pg_dist_background_job ORDER BY job_id DESC LIMIT 1}),
	'finished', 'its background job finished');

my @moved = grep { node_of($_)->name ne $before{$_} } @queues;
ok(@moved > 0, 'queues moved: ' . join(' ', map { "$_ $before{$_} -> " . node_of($_)->name } @moved));
# a tick on the old node after the move (in a transaction block, so that
# Citus does not send it on) finds the queue's shards elsewhere, also while
# Citus has not dropped their old copy yet
for my $q ($moved[0])
{
	my $old = (grep { $_->name eq $before{$q} } @workers)[0];
	my $copy = $old->safe_psql('postgres',
		qq{SELECT to_regclass(shard_name('mm.tickets_active', get_shard_id_for_distribution_column('mm.tickets_active', '$q'))) IS NOT NULL});
	my ($ret, $out, $err) = $old->psql('postgres', qq{BEGIN; SELECT mm.tick('$q'); COMMIT});
	like($err, qr/the shards of queue "\Q$q\E" are not on this node/,
		"a tick of $q on its old node $before{$q} finds its shards moved"
		  . ($copy eq 't' ? ' (their old copy still there)' : ''));
}
is( $coord->safe_psql(
		'postgres', "SELECT count(*) > 0 FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
		 WHERE n.nodeport = " . $wc->port),
	't', 'the new worker holds shards');
# the hand-over: the loop of each queue moved runs on its new node
my %running;
while (time - $moved_at < 15 && keys %running < @moved)
{
	for my $q (grep { !exists $running{$_} } @moved)
	{
		$running{$q} = time - $moved_at
		  if node_of($q)->safe_psql('postgres', "SELECT mm.tick_loop_running('$q')") eq 't';
	}
	usleep(100_000);
}
for my $q (@moved)
{
	ok(defined $running{$q} && $running{$q} <= 5,
		"the loop of $q runs on " . node_of($q)->name . ' within 5 s of the end of the move')
	  or diag(defined $running{$q} ? sprintf('%.1f s', $running{$q}) : 'not within 15 s');
	note(sprintf('after the rebalance: the loop of %s ran on its new node after %.1f s', $q, $running{$q}))
	  if defined $running{$q};
}
# and every queue ticks: a pair created after the move, while the flow
# goes on, is matched within 5 s of its creation
my $after = seconds_until_all_ticked(\@queues, 15);
for my $q (@queues)
{
	ok(defined $after->{$q} && $after->{$q} <= 5,
		"after the rebalance, $q ticks on " . node_of($q)->name . ' (a new pair matched within 5 s)')
	  or diag(defined $after->{$q} ? sprintf('%.1f s', $after->{$q}) : 'not within 15 s');
	note(sprintf('after the rebalance: the pair of %s was matched %.1f s after its creation', $q, $after->{$q}))
	  if defined $after->{$q};
}
$flow->finish;
my @created = grep { /^\d+$/ } split /\n/, $fout;
is($ferr, '', 'no call of the flow failed');
my $nflow = $coord->safe_psql('postgres',
	q{SELECT count(*) FROM mm.tickets WHERE players -> 0 ->> 'id' LIKE 'flow%'});
is(scalar(@created), $nflow, "every ticket of the flow was created ($nflow)");
for my $q (@moved)
{
	my $old = (grep { $_->name eq $before{$q} } @workers)[0];
	is($old->safe_psql('postgres', "SELECT mm.tick_loop_running('$q')"), 'f',
		"the loop of $q ended on its old node ($before{$q})");
	is(node_of($q)->safe_psql('postgres', "SELECT mm.tick_loop_running('$q')"), 't',
		"and runs on its new one");
}

# nothing lost or doubled
my $list = join(',', @created);
is($coord->safe_psql('postgres', "SELECT count(*), count(DISTINCT id) FROM mm.tickets WHERE id IN ($list)"),
	scalar(@created) . '|' . scalar(@created), 'every ticket created is there, once');
is($coord->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM mm.tickets'), 't',
	'ticket ids are unique');
is($coord->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM mm.matches'), 't',
	'match ids are unique');
is( $coord->safe_psql(
		'postgres', q{SELECT count(*) FROM (SELECT player_id FROM mm.match_players
		 GROUP BY player_id HAVING count(*) > 1) d}),
	'0', 'no player is in two matches');
is( $coord->safe_psql(
		'postgres', qq{SELECT count(*) FROM mm.tickets t WHERE t.id IN ($list) AND t.match_id IS NOT NULL
		 AND NOT EXISTS (SELECT FROM mm.match_players mp WHERE mp.queue = t.queue
						  AND mp.match_id = t.match_id AND mp.ticket_id = t.id)}),
	'0', 'every matched ticket is among its match\'s players');
# the flow's pairs are matched by the loops (one whose partner failed may wait)
my $searching = '';
for (1 .. 50)
{
	$searching = $coord->safe_psql('postgres',
		"SELECT count(*) FROM mm.tickets WHERE id IN ($list) AND match_id IS NULL");
	last if $searching <= $nflow - @created;
	usleep(200_000);
}
ok($searching <= $nflow - @created, "the flow's tickets are matched ($searching searching)");
# the claims (sharded by player) and the tickets (by queue) cannot be joined
# on Citus: compared by their ids
my @claimed = split /,/, $coord->safe_psql('postgres',
	q{SELECT string_agg(ticket_id::text, ',') FROM mm.active_players WHERE player_id LIKE 'flow%'});
is( @claimed
	? $coord->safe_psql('postgres', 'SELECT count(*) FROM mm.tickets WHERE id IN (' . join(',', @claimed) . ')')
	: 0,
	scalar(@claimed),
	'every claim of a player of the flow has its ticket (' . scalar(@claimed) . ' claims)');

$_->stop for reverse($coord, @workers, $wc);
done_testing();
