# The Python LISTEN example of docs/events.md, run as written with the
# psycopg that Debian 12 ships (python3-psycopg 3.1.7, whose notifies() has
# no timeout): a quiet second yields None instead of blocking, the events of
# a tick and a cancel arrive verified and in order, a forged NOTIFY is
# dropped; the whole script, main block included, runs against the node.
# Skipped without Debian's python3 and its psycopg.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use IPC::Run;
use MmTest;

my $python = '/usr/bin/python3';
plan skip_all => 'python3-psycopg is not installed'
  unless -x $python && system($python, '-c', 'import psycopg') == 0;

# the example, as the docs show it
my $docs = dirname(__FILE__) . '/../../docs/events.md';
my $text = slurp_file($docs);
my ($example) = $text =~ /^```python\n(# Python, with psycopg.*?)^```$/ms;
ok(defined $example, 'docs/events.md has the psycopg example');
my $file = PostgreSQL::Test::Utils::tempdir() . '/example.py';
open(my $fh, '>', $file) or die "$file: $!";
print $fh $example;
close $fh;

my $node = mm_new_node('python_listen');
$ENV{MM_EVENT_KEY_HEX} = $node->safe_psql('postgres', q{SELECT encode(key, 'hex') FROM mm.event_key});
my $dsn = $node->connstr('postgres');

my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ $python, dirname(__FILE__) . '/python/listen_driver.py', $file, $dsn ],
	'>', \$out, '2>', \$err, IPC::Run::timeout(60));
ok($ok, 'the driver ran') or diag $err;
my @lines = split /\n/, $out;
is(shift(@lines) // '', '{"quiet": true, "waited": 1}', 'a quiet second yields None: it does not block');
is(join(' ', @lines),
	'{"event": "match_found", "queue": "py_duel"} {"event": "ticket_cancelled", "queue": "py_duel"}',
	'the match and the cancel arrive verified, the forged NOTIFY does not');

# the script itself, main block included, with the PG* environment and a handle()
local $ENV{PGHOST} = $node->host;
local $ENV{PGPORT} = $node->port;
local $ENV{PGDATABASE} = 'postgres';
my $main = IPC::Run::start(
	[ $python, '-c', "import builtins, sys\nbuiltins.handle = lambda e: print(e['event'], flush=True)\n"
		  . "exec(compile(open(sys.argv[1]).read(), sys.argv[1], 'exec'))", $file ],
	'>', \my $main_out, '2>', \my $main_err);
# listening once its LISTEN is in pg_stat_activity's last query
$node->poll_query_until('postgres',
	q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query = 'LISTEN mm_events' AND pid <> pg_backend_pid())})
  or die 'the example did not LISTEN';
$node->safe_psql('postgres', q{
	SELECT mm.create_ticket('py_duel', '[{"id": "py4"}]', '2026-01-01 00:00:02+00');
	SELECT mm.create_ticket('py_duel', '[{"id": "py5"}]', '2026-01-01 00:00:02+00');
	SELECT mm.tick('py_duel', '2026-01-01 00:00:03+00');
});
for (1 .. 100)
{
	$main->pump_nb;
	last if ($main_out // '') =~ /match_found/;
	select(undef, undef, undef, 0.1);
}
$main->kill_kill;
is($main_out, "match_found\n", 'the example as a script handles the match') or diag $main_err;

$node->stop;
done_testing();
