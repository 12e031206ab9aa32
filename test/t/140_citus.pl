# matchmaking on a real Citus cluster (MmCitus.pm): a coordinator and two
# workers.  First the cluster itself: both workers active, a distributed
# table's rows stored on both workers; then CREATE EXTENSION matchmaking on
# the coordinator, which Citus propagates to the workers.  Skipped when
# Citus is not installed and test/run-tests.sh had no archive to build it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmCitus;

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

$_->stop for reverse($coord, @workers);
done_testing();
