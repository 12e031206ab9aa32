# The extension loads on a fresh cluster with pg_cron preloaded and survives
# a crash (kill -9 of the postmaster) and restart with its data intact.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmTest;

my $node = mm_new_node('restart');
is($node->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'"),
	'0.4', 'extension created at the default version');
$node->safe_psql('postgres',
	"INSERT INTO mm.players (id) VALUES ('survivor')");

mm_crash_restart($node);

is($node->safe_psql('postgres', "SELECT count(*) FROM mm.players WHERE id = 'survivor'"),
	'1', 'committed rows survive a crash');

$node->stop;
done_testing();
