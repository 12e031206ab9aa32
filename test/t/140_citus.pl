# matchmaking on a real Citus cluster (MmCitus.pm): a coordinator and two
# workers.  The cluster itself (both workers hold rows of a distributed
# table), CREATE EXTENSION propagated, then mm.distribute and what a
# deployment must do: queues on both workers form the same matches as one
# node for the same tickets; mm.tick called on the coordinator runs on the
# queue's worker (its log), with ids from the worker's range; a NULL queue
# never reaches Citus's delegation (which would crash the backend); ticks of
# two queues on two workers overlap without lock waits; a LISTEN on the
# queue's node receives its events (the tick's and a lifecycle call's) and
# mm.verify_event is true on every node; a worker killed (kill -9) in the
# middle of a tick loses and doubles nothing (tickets, matches, the player
# claims on both workers); mm.schedule's job runs on the queue's node; a
# ticket across shards is refused.  Skipped when Citus is not installed and
# test/run-tests.sh had no archive to build it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmCitus;
use MmTest;
use IPC::Run;
use Time::HiRes qw(usleep);

mm_citus_require();

# --- cluster ---
my ($coord, @workers) = mm_citus_cluster(workers => 2);

is($coord->safe_psql('postgres', 'SELECT count(*) FROM citus_get_active_worker_nodes()'),
	'2', 'two active workers');
is( $coord->safe_psql(
		'postgres', q{SELECT count(*) FROM pg_dist_node
		 WHERE isactive AND noderole = 'primary' AND groupid = 0}),
	'1', 'the coordinator is registered');

# a distributed table: its rows are stored on both workers, none on the coordinator
$coord->safe_psql(
	'postgres', q{
	CREATE TABLE smoke (id int PRIMARY KEY, v text);
	SELECT create_distributed_table('smoke', 'id');
	INSERT INTO smoke SELECT i, 'v' || i FROM generate_series(1, 100) i;
});
is($coord->safe_psql('postgres', 'SELECT count(*), sum(id) FROM smoke'),
	'100|5050', 'the coordinator reads every row back');
# each shard's rows counted in its table on the node that holds it
my (%stored, @elsewhere);
for my $row (split /\n/,
	$coord->safe_psql('postgres',
		q{SELECT nodeport, shard_name FROM citus_shards WHERE table_name = 'smoke'::regclass}))
{
	my ($port, $shard) = split /\|/, $row;
	my $node = mm_citus_node_at($port);
	if (!$node || $node == $coord)
	{
		push @elsewhere, "$shard on port $port";
		next;
	}
	$stored{ $node->name } += $node->safe_psql('postgres', "SELECT count(*) FROM $shard");
}
is("@elsewhere", '', 'every shard is on a worker');
is_deeply(
	[ sort keys %stored ],
	[ sort map { $_->name } @workers ],
	'both workers hold shards of the table');
ok(!grep({ !$_ } values %stored), 'both workers store rows')
  or diag explain \%stored;
is(eval { my $s = 0; $s += $_ for values %stored; $s }, 100, 'every row is stored once');
# workers have the metadata: a query on one reads the other's shards too
is($_->safe_psql('postgres', 'SELECT count(*) FROM smoke'), '100', $_->name . ' reads every row')
  for @workers;
my $holder = mm_citus_shard_node($coord, 'smoke', 42);
is($holder->safe_psql('postgres', "SELECT v FROM smoke WHERE id = 42"),
	'v42', 'mm_citus_shard_node names the worker of a row');

# --- the extension ---
$coord->safe_psql('postgres', 'CREATE EXTENSION matchmaking');
my $version = $coord->safe_psql('postgres',
	"SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'");
isnt($version, '', "matchmaking $version created on the coordinator");
for my $w (@workers)
{
	is( $w->safe_psql('postgres',
			"SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'"),
		$version,
		'Citus propagated CREATE EXTENSION matchmaking to ' . $w->name);
	is( $w->safe_psql(
			'postgres', q{SELECT count(*) > 0 FROM pg_proc
			 WHERE proname = 'tick' AND pronamespace = 'mm'::regnamespace}),
		't', 'schema mm and its functions exist on ' . $w->name);
}

# --- matchmaking on the cluster ---
# the workers log each statement they run (where the tick ran) and lock waits
for my $w (@workers)
{
	$w->append_conf('postgresql.conf',
		"log_statement = 'all'\nlog_lock_waits = on\ndeadlock_timeout = '100ms'\n");
	$w->reload;
}
# one plain node: the same tickets must form the same matches there
my $single = mm_new_node('single');

my $config = q({"teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
	"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 60}]});
my @queues = map { "q$_" } 0 .. 7;
for my $node ($coord, $single)
{
	$node->safe_psql('postgres', "SELECT mm.create_queue('$_', '$config')") for @queues;
}
# a ticket from before the distribution moves into its shard
$_->safe_psql('postgres',
	q{SELECT mm.create_ticket('q0', '[{"id": "early", "attributes": {"skill": 5}}]', '2026-01-01')})
  for ($coord, $single);

is($coord->safe_psql('postgres', 'SELECT mm.distribute(8)'), 't', 'mm.distribute shards the database');
is($coord->safe_psql('postgres', 'SELECT mm.distribute(8)'), 't', 'and is safe to run again');
is( $coord->safe_psql(
		'postgres', q{SELECT string_agg(s.table_name::text, ' ' ORDER BY 1) FROM mm.sharding() s
		 WHERE s.placement IN ('queue', 'player', 'reference')
		   AND NOT EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = s.table_name
			   AND p.partmethod = CASE s.placement WHEN 'reference' THEN 'n' ELSE 'h' END)}),
	'', 'every table is placed as mm.sharding says');
is( $coord->safe_psql(
		'postgres', q{SELECT count(DISTINCT colocationid) FROM pg_dist_partition
		 WHERE logicalrelid IN (SELECT table_name FROM mm.sharding() WHERE placement = 'queue')}),
	'1', 'the tables of a queue are co-located');
is($coord->safe_psql('postgres', q{SELECT status, queue FROM mm.tickets}),
	'searching|q0', 'the ticket from before is in its shard');
my $key = $coord->safe_psql('postgres', 'SELECT md5(key) FROM mm.event_key');
is($_->safe_psql('postgres', 'SELECT md5(key) FROM mm.event_key'), $key,
	$_->name . ' signs with the coordinator\'s event key')
  for @workers;

# a plain INSERT cannot claim players on other shards: refused, naming the function
my ($ret, $out, $err) = $coord->psql('postgres',
	q{INSERT INTO mm.tickets (queue, players) VALUES ('q1', '[{"id": "plain"}]')});
like($err, qr/on Citus, INSERT of mm.tickets is not supported.*\n.*HINT:  Create tickets with mm.create_ticket/,
	'a plain INSERT into mm.tickets is refused with a hint');

# two queues whose shards are on different workers
my %port_of;
for my $q (@queues)
{
	($port_of{$q}) = split /\|/, $coord->safe_psql('postgres', "SELECT node_port FROM mm.queue_node('$q')");
}
my ($qa) = grep { $port_of{$_} == $workers[0]->port } @queues;
my ($qb) = grep { $port_of{$_} == $workers[1]->port } @queues;
BAIL_OUT('no queue on each worker: ' . join(' ', map { "$_:$port_of{$_}" } @queues))
  unless $qa && $qb;
my ($wa, $wb) = @workers;
note "queue $qa on " . $wa->name . ", queue $qb on " . $wb->name;

# The same tickets on both deployments, in one batch per queue.
sub load_tickets
{
	my ($node, $queue, $from, $to, $at) = @_;
	return $node->safe_psql(
		'postgres', qq{
		SELECT cardinality(mm.create_tickets('$queue', ARRAY(
			SELECT jsonb_build_array(jsonb_build_object('id', '$queue-' || i,
				'attributes', jsonb_build_object('skill', (i * 7919) % 1000)))
			  FROM generate_series($from, $to) i ORDER BY i), '$at'))});
}

# The matches of the queues as rosters, the same text on any deployment.
sub rosters
{
	my ($node, @qs) = @_;
	my $list = join ', ', map { "'$_'" } @qs;
	return $node->safe_psql(
		'postgres', qq{
		SELECT m.queue || ' ' || round(m.quality::numeric, 6) || ' '
			   || string_agg(mp.team || ':' || mp.player_id, ',' ORDER BY mp.team, mp.player_id)
		  FROM mm.matches m JOIN mm.match_players mp ON mp.queue = m.queue AND mp.match_id = m.id
		 WHERE m.queue IN ($list)
		 GROUP BY m.queue, m.id, m.quality ORDER BY 1});
}

for my $node ($coord, $single)
{
	load_tickets($node, $_, 1, 400, '2026-01-01 00:00:00') for ($qa, $qb);
	$node->safe_psql('postgres', "SELECT mm.tick('$_', '2026-01-01 00:00:10')") for ($qa, $qb);
}
my $citus_rosters = rosters($coord, $qa, $qb);
my $single_rosters = rosters($single, $qa, $qb);
my $nmatches = () = $citus_rosters =~ /\n/g;
cmp_ok($nmatches, '>', 100, "the two queues formed matches ($nmatches)");
is($citus_rosters, $single_rosters, 'the same matches as one node, for the same tickets');

# a role queue ticks on its worker as on one node: the same seats, the same
# autofills, and the protection written to its shard
for my $node ($coord, $single)
{
	$node->safe_psql('postgres', q{
		SELECT mm.create_queue('lanes', '{"teams": [
			{"name": "red", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
			{"name": "blue", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
			"autofill": {"after_seconds": 30, "protect_games": 2}}');
		SELECT cardinality(mm.create_tickets('lanes', ARRAY(
			SELECT jsonb_build_array(jsonb_build_object('id', 'lane-' || i,
				'roles', CASE WHEN i % 6 = 0 THEN '["tank"]'::jsonb WHEN i % 6 = 1 THEN '["dps", "tank"]'
							  ELSE '["dps"]' END))
			  FROM generate_series(1, 24) i ORDER BY i), '2026-01-01 00:00:00'));
		SELECT mm.tick('lanes', '2026-01-01 00:01:00');});
}
my $seats = q{SELECT string_agg(mp.team || ':' || mp.role || ':' || mp.player_id
							|| CASE WHEN mp.autofilled THEN '*' ELSE '' END, ',' ORDER BY mp.match_id, mp.team, mp.player_id)
				FROM mm.match_players mp WHERE mp.queue = 'lanes'};
my $citus_seats = $coord->safe_psql('postgres', $seats);
like($citus_seats, qr/\*/, 'the role queue autofilled players on the cluster');
is($citus_seats, $single->safe_psql('postgres', $seats), 'the same seats and autofills as one node');
is( $coord->safe_psql('postgres',
		q{SELECT string_agg(player_id || '=' || games_left, ',' ORDER BY player_id) FROM mm.autofill_protection}),
	$single->safe_psql('postgres',
		q{SELECT string_agg(player_id || '=' || games_left, ',' ORDER BY player_id) FROM mm.autofill_protection}),
	'and the same autofill protection');

# the tick ran on the worker that holds the queue, against its shards
ok($wa->log_contains(qr/SELECT .*mm\.tick\('$qa'::text/), "mm.tick('$qa') ran on " . $wa->name);
ok(!$wb->log_contains(qr/mm\.tick\('$qa'::text/), 'and not on ' . $wb->name);
my $shard = $coord->safe_psql('postgres',
	"SELECT shard_name('mm.matches', get_shard_id_for_distribution_column('mm.matches', '$qa'))");
cmp_ok($wa->safe_psql('postgres', "SELECT count(*) FROM $shard WHERE queue = '$qa'"),
	'>', 0, "the matches of $qa are in its shard on " . $wa->name);
# match ids drawn on a worker come from its own range
for my $pair ([ $qa, $wa ], [ $qb, $wb ])
{
	my ($q, $w) = @$pair;
	is( $coord->safe_psql(
			'postgres', qq{SELECT bool_and(m.id / 281474976710656 = n.groupid)
			  FROM mm.matches m, pg_dist_node n WHERE m.queue = '$q' AND n.nodeport = } . $w->port),
		't', "the match ids of $q are in the range of " . $w->name);
}

# a NULL queue never reaches Citus's delegation, which crashes on one
# (src/citus_guard.c): the calls answer as on one node, on every node
for my $node ($coord, @workers)
{
	like($node->safe_psql('postgres', "SELECT mm.tick(now => '2026-01-01 00:00:10'); SELECT mm.tick(NULL, '2026-01-01 00:00:10')"),
		qr/^\d+\n\d+$/, 'mm.tick with its queue left out or NULL answers on ' . $node->name);
	my ($rc, $stdout, $stderr) = $node->psql(
		'postgres', q{PREPARE c(text) AS SELECT mm.cancel_ticket($1, 1);
		EXECUTE c(NULL); EXECUTE c(NULL); EXECUTE c(NULL); EXECUTE c(NULL); EXECUTE c(NULL); EXECUTE c(NULL);},
		on_error_stop => 0);
	is(scalar(() = $stderr =~ /ERROR:  queue must not be null/g), 6,
		'a NULL queue is refused (22004) on ' . $node->name . ', also as a bound parameter');
	($rc, $stdout, $stderr) = $node->psql('postgres', 'CALL mm.tick_loop(NULL)');
	like($stderr, qr/queue must not be null/, 'CALL mm.tick_loop(NULL) is refused on ' . $node->name);
}
is($_->safe_psql('postgres', 'SELECT 1'), '1', $_->name . ' is up, nothing crashed') for ($coord, @workers);

# --- two queues on two workers tick at the same time ---
load_tickets($coord, $_, 1001, 9000, '2026-01-01 00:01:00') for ($qa, $qb);
my @runs;
for my $q ($qa, $qb)
{
	my ($stdout, $stderr) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-XAtq', '-h', $coord->host, '-p', $coord->port, '-d', 'postgres',
			'-c', 'SELECT extract(epoch FROM clock_timestamp())',
			'-c', "SELECT mm.tick('$q', '2026-01-01 00:02:00')",
			'-c', 'SELECT extract(epoch FROM clock_timestamp())'
		],
		'>', \$stdout, '2>', \$stderr);
	push @runs, [ $q, $h, \$stdout, \$stderr ];
}
my %span;
for my $run (@runs)
{
	my ($q, $h, $stdout, $stderr) = @$run;
	$h->finish;
	my ($start, $matches, $end) = split /\n/, $$stdout;
	is($$stderr, '', "the tick of $q ran without error");
	cmp_ok($matches // 0, '>', 1000, "the tick of $q formed matches");
	$span{$q} = [ $start, $end ];
}
ok($span{$qa}[0] < $span{$qb}[1] && $span{$qb}[0] < $span{$qa}[1], 'the two ticks overlapped')
  or diag explain \%span;
ok(!$_->log_contains(qr/still waiting for/), 'no lock waits on ' . $_->name) for @workers;

# --- events: LISTEN on the queue's node ---
my $listener = $wa->background_psql('postgres');
$listener->query_safe('LISTEN mm_events');
load_tickets($coord, $qa, 20001, 20008, '2026-01-01 00:03:00');
$coord->safe_psql('postgres', "SELECT mm.tick('$qa', '2026-01-01 00:03:10')");
my @payloads;
for my $try (1 .. 50)
{
	my $got = $listener->query_safe('SELECT 1');
	push @payloads, $1
	  while $got =~ /^Asynchronous notification "mm_events" with payload "(.*)" received from server process with PID \d+\.$/mg;
	last if @payloads >= 2;
	usleep(100_000);
}
is(scalar(grep { /"event": ?"match_found"/ } @payloads), 2,
	"a LISTEN on the node of $qa receives its match_found events");
# a lifecycle call by queue on the coordinator runs on the queue's node too
my ($match) = $coord->safe_psql('postgres',
	"SELECT max(id) FROM mm.matches WHERE queue = '$qa' AND status = 'ready'");
$coord->safe_psql('postgres', "SELECT mm.assign('$qa', $match, 'game-1:7777')");
for my $try (1 .. 50)
{
	my $got = $listener->query_safe('SELECT 1');
	push @payloads, $1
	  while $got =~ /^Asynchronous notification "mm_events" with payload "(.*)" received from server process with PID \d+\.$/mg;
	last if grep { /"event": ?"match_assigned"/ } @payloads;
	usleep(100_000);
}
$listener->quit;
is(scalar(grep { /"event": ?"match_assigned"/ && /"match_id": ?$match\b/ } @payloads), 1,
	"mm.assign('$qa', ...) on the coordinator sends match_assigned on the node of $qa");
for my $node ($coord, @workers)
{
	my $list = join ', ', map { my $p = $_; $p =~ s/'/''/g; "'$p'" } @payloads;
	is($node->safe_psql('postgres', "SELECT bool_and(mm.verify_event(p)) FROM unnest(ARRAY[$list]) p"),
		't', 'mm.verify_event is true on ' . $node->name);
}

# --- a worker killed in the middle of a tick ---
my $total = load_tickets($coord, $qa, 30001, 60000, '2026-01-01 00:04:00');
my $before = $coord->safe_psql('postgres', "SELECT count(*) FROM mm.tickets WHERE queue = '$qa'");
# the tick's last write (its rule counts) waits for a row another session
# holds, so the worker dies with the tick's matches written, not committed
my $blocker = $coord->background_psql('postgres');
$blocker->query_safe("BEGIN; SELECT * FROM mm.rule_evaluations WHERE queue = '$qa' FOR UPDATE");
my ($kstdout, $kstderr) = ('', '');
my $kh = IPC::Run::start(
	[
		'psql', '-XAtq', '-h', $coord->host, '-p', $coord->port, '-d', 'postgres',
		'-c', "SELECT mm.tick('$qa', '2026-01-01 00:05:00')"
	],
	'>', \$kstdout, '2>', \$kstderr);
# wait until the tick waits there, then kill the worker
my $waiting = 0;
for my $try (1 .. 300)
{
	$waiting = $wa->safe_psql(
		'postgres', q{SELECT count(*) FROM pg_stat_activity
		 WHERE query LIKE '%mm.tick(%' AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'});
	last if $waiting;
	usleep(100_000);
}
is($waiting, 1, 'the tick wrote its matches on ' . $wa->name . ' and waits to finish');
mm_crash_restart($wa);
eval { $blocker->quit };
$kh->finish;
is($kstdout, '', 'the tick did not finish');
like($kstderr, qr/server closed the connection|terminat|connection to the server|connection not open/,
	'the coordinator lost the worker in the middle of the tick');
$coord->safe_psql('postgres', 'SELECT recover_prepared_transactions()');

# Whatever was acknowledged is there once; nothing is doubled.
sub check_invariants
{
	my ($label) = @_;
	is($coord->safe_psql('postgres', "SELECT count(*), count(DISTINCT id) FROM mm.tickets WHERE queue = '$qa'"),
		"$before|$before", "$label: every ticket of $qa is there, once");
	is( $coord->safe_psql(
			'postgres', q{SELECT count(*) FROM (SELECT player_id FROM mm.match_players mp
			  JOIN mm.matches m ON m.queue = mp.queue AND m.id = mp.match_id
			 WHERE m.status IN ('proposed', 'ready', 'assigned') AND mp.left_at IS NULL
			 GROUP BY player_id HAVING count(*) > 1) d}),
		'0', "$label: no player is in two live matches");
	is( $coord->safe_psql(
			'postgres', qq{SELECT count(*) FROM mm.tickets t WHERE t.queue = '$qa' AND t.status = 'matched'
			   AND NOT EXISTS (SELECT FROM mm.matches m WHERE m.queue = t.queue AND m.id = t.match_id)}),
		'0', "$label: every matched ticket has its match");
	is( $coord->safe_psql(
			'postgres', qq{SELECT count(*) FROM mm.match_players mp WHERE mp.queue = '$qa'
			   AND NOT EXISTS (SELECT FROM mm.matches m WHERE m.queue = mp.queue AND m.id = mp.match_id)}),
		'0', "$label: no match player without a match");
	# the claims, sharded by player on both workers, follow the tickets:
	# a ticket the tick has not claimed yet holds its players in the
	# queue's pending claims
	my $claims = $coord->safe_psql('postgres',
		"SELECT count(*), count(DISTINCT player_id) FROM (SELECT player_id FROM mm.active_players WHERE queue = '$qa'
		  UNION ALL SELECT player_id FROM mm.pending_claims WHERE queue = '$qa') c");
	my $holders = $coord->safe_psql(
		'postgres', qq{SELECT count(*) FROM mm.tickets t WHERE t.queue = '$qa'
		   AND (t.status IN ('searching', 'proposed')
				OR t.match_id IN (SELECT m.id FROM mm.matches m WHERE m.queue = '$qa'
								  AND m.status IN ('ready', 'assigned')))});
	is($claims, "$holders|$holders", "$label: one claim per player of an active ticket or a live match");
}
check_invariants('after the crash');
like($coord->safe_psql('postgres', "SELECT mm.tick('$qa', '2026-01-01 00:05:00')"),
	qr/^\d+$/, 'the queue ticks again once its worker is back');
check_invariants('after the next tick');
is($coord->safe_psql('postgres', "SELECT count(*) FROM mm.pending_claims WHERE queue = '$qa'"), '0',
	'the next tick claimed the players of every pending ticket');

# --- scheduling: pg_cron's job on the coordinator, the loop on the queue's node ---
$coord->safe_psql('postgres', 'CREATE EXTENSION pg_cron');
$coord->safe_psql('postgres', "SELECT mm.schedule('$qb', '5 seconds')");
is($coord->safe_psql('postgres', "SELECT command FROM cron.job WHERE jobname = 'mm_tick:$qb'"),
	"CALL mm.tick_loop('$qb')", 'mm.schedule creates the pg_cron job on the coordinator');
is($wb->safe_psql('postgres', "SELECT mm.tick_loop_every('$qb')"), '00:00:05',
	'the node of the queue reads the loop\'s interval from its copy of mm.schedule_jobs');
$coord->safe_psql('postgres', "SELECT mm.unschedule('$qb')");
# the job's call (a loop that ends at once, the queue being unscheduled) runs on the queue's node
$coord->safe_psql('postgres', "CALL mm.tick_loop('$qb')");
ok($wb->log_contains(qr/CALL mm\.tick_loop\('$qb'::text\)/), "CALL mm.tick_loop('$qb') ran on " . $wb->name);

# --- a ticket may combine the queues of one shard only ---
my ($same, $other) = split /\|/, $coord->safe_psql(
	'postgres', qq{SELECT (SELECT q FROM unnest(ARRAY['q0','q1','q2','q3','q4','q5','q6','q7']) q
				   WHERE q <> '$qa' AND get_shard_id_for_distribution_column('mm.tickets', q)
						 = get_shard_id_for_distribution_column('mm.tickets', '$qa') LIMIT 1),
				  '$qb'});
($ret, $out, $err) = $coord->psql('postgres',
	qq{SELECT mm.create_ticket(ARRAY['$qa', '$other'], '[{"id": "multi1", "attributes": {"skill": 5}}]')});
like($err, qr/queues "$qa" and "$other" are on different shards/, 'a ticket across shards is refused');
SKIP:
{
	skip "no other queue on the shard of $qa", 1 unless $same;
	like($coord->safe_psql('postgres',
			qq{SELECT mm.create_ticket(ARRAY['$qa', '$same'], '[{"id": "multi2", "attributes": {"skill": 5}}]')}),
		qr/^\d+$/, "a ticket in $qa and $same (one shard) is taken");
}

$listener = undef;
$_->stop for reverse($coord, @workers);
$single->stop;
done_testing();
