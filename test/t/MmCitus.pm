# A real Citus cluster for the TAP tests: a coordinator and workers, each a
# PostgreSQL::Test::Cluster node with Citus, matchmaking and pg_cron preloaded and the
# citus extension created in database postgres, the workers registered with
# the coordinator.
#
#   use MmCitus;
#   mm_citus_require();                      # skip_all unless Citus is installed
#   my ($coord, @workers) = mm_citus_cluster(workers => 2);
#
# The nodes listen on their unix socket only; Citus connects with the socket
# directory as host name (libpq reads a host that starts with '/' as a socket
# directory), so every node is registered as (socket directory, port).
package MmCitus;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use Exporter 'import';
our @EXPORT = qw(mm_citus_require mm_citus_missing mm_citus_cluster mm_citus_add_worker
  mm_citus_node_at mm_citus_shard_node mm_citus_table_nodes);

# Every node started here, by port: a shard placement names (host, port).
my %node_at_port;

# Why Citus cannot be used here, or undef when it can.  The driver
# (test/run-tests.sh) says MM_CITUS=0 when it found no Citus and no archive
# to build it from, or the build failed; otherwise citus.so is looked for in
# the installation the tests use.
sub mm_citus_missing
{
	return 'MM_CITUS=0: the test driver found no Citus installed and could not build one'
	  if defined $ENV{MM_CITUS} && $ENV{MM_CITUS} eq '0';
	my $libdir;
	if ($ENV{MM_BINDIR} && -d "$ENV{MM_BINDIR}/../lib")
	{
		$libdir = "$ENV{MM_BINDIR}/../lib";
	}
	else
	{
		$libdir = `pg_config --pkglibdir`;
		chomp $libdir if defined $libdir;
	}
	return "citus.so is not in $libdir" unless $libdir && -f "$libdir/citus.so";
	return undef;
}

# Skips the whole test file (plan skip_all) when Citus is not available.
sub mm_citus_require
{
	my $why = mm_citus_missing();
	plan skip_all => "Citus not available: $why" if defined $why;
	return;
}

# Starts a coordinator and workers (default 2) and registers them:
#   workers => N           number of workers
#   name    => 'citus'     prefix of the node names (name_coord, name_w1, ...)
#   conf    => '...'       extra postgresql.conf lines for every node
# Returns ($coordinator, @workers).  Skips the test file when Citus is
# not available.
sub mm_citus_cluster
{
	my (%opts) = @_;
	mm_citus_require();
	my $nworkers = $opts{workers} // 2;
	my $prefix = $opts{name} // 'citus';

	my @nodes = map { _citus_node($_, $opts{conf}) }
	  ("${prefix}_coord", map { "${prefix}_w$_" } 1 .. $nworkers);
	my ($coord, @workers) = @nodes;

	$coord->safe_psql('postgres',
		"SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ')');
	for my $w (@workers)
	{
		$coord->safe_psql('postgres',
			"SELECT citus_add_node('" . $w->host . "', " . $w->port . ')');
	}
	return ($coord, @workers);
}

# Starts one more worker named $name (with the extra postgresql.conf lines
# $conf) and registers it with the coordinator; returns it.  It holds no
# shards until they are moved there (citus_rebalance_start).
sub mm_citus_add_worker
{
	my ($coord, $name, $conf) = @_;
	my $w = _citus_node($name, $conf);
	$coord->safe_psql('postgres',
		"SELECT citus_add_node('" . $w->host . "', " . $w->port . ')');
	return $w;
}

# A started node with Citus (first, as it requires), matchmaking (its guard of Citus's delegation) and pg_cron preloaded and
# CREATE EXTENSION citus done in postgres.
sub _citus_node
{
	my ($name, $extra) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $host = $node->host;
	$node->append_conf(
		'postgresql.conf', qq{
shared_preload_libraries = 'citus,matchmaking,pg_cron'
cron.database_name = 'postgres'
# pg_cron runs jobs over libpq; the node listens on its socket only
cron.host = '$host'
# Citus commits across nodes with two-phase commit
max_prepared_transactions = 100
max_connections = 100
max_worker_processes = 32
# the TAP nodes run without SSL (Citus asks for it by default)
citus.node_conninfo = 'sslmode=disable'
# connections of a node to itself (shard moves, background tasks)
citus.local_hostname = '$host'
# no network here: no usage reports
citus.enable_statistics_collection = off
# shard moves and splits use logical replication
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
lc_messages = 'C'
} . ($extra // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	$node_at_port{ $node->port } = $node;
	return $node;
}

# The node started here that listens on a port (undef for another).
sub mm_citus_node_at
{
	my ($port) = @_;
	return $node_at_port{$port};
}

# The node holding the shard of a distributed table for a value of its
# distribution column (asked of the coordinator).
sub mm_citus_shard_node
{
	my ($coord, $table, $value) = @_;
	my $port = $coord->safe_psql(
		'postgres', qq{
		SELECT nodeport FROM citus_shards
		 WHERE shardid = get_shard_id_for_distribution_column('$table', '$value')
		 ORDER BY nodeport LIMIT 1});
	die "mm_citus_shard_node: no placement of $table for '$value'" if $port eq '';
	return $node_at_port{$port};
}

# The nodes that hold at least one shard of a table, by port.
sub mm_citus_table_nodes
{
	my ($coord, $table) = @_;
	my @ports = split /\n/,
	  $coord->safe_psql('postgres',
		"SELECT DISTINCT nodeport FROM citus_shards WHERE table_name = '$table'::regclass ORDER BY 1");
	return map { $node_at_port{$_} } @ports;
}

1;
