# Every ```sql block of README.md runs as shown: each block outside the
# walk-through in a fresh database of its own; the walk-through (every block
# between its markers, the one pg_regress leaves out included) top to bottom
# in a fresh database, after which no player is held in a live match and a
# reader's next ticket for a walk-through player is taken; and the blocks that
# need pg_cron (the install block, the scheduling after the walk-through) in
# pg_cron's database, in the README's order with the walk-through, as a
# reader who follows the README there would run them.  No block may fail, and
# mm.schedule must not warn.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $readme = ($ENV{TESTDIR} // '.') . '/README.md';
open my $fh, '<', $readme or die "cannot read $readme: $!";
my @lines = <$fh>;
close $fh;

# The ```sql blocks, in order, each with where it stands.
my (@blocks, $block);
my ($in_walkthrough, $fence) = (0, 0);
for my $i (0 .. $#lines)
{
	my $line = $lines[$i];
	if (!$fence)
	{
		$in_walkthrough = 1 if $line =~ /^<!-- walkthrough:begin/;
		$in_walkthrough = 0 if $line =~ /^<!-- walkthrough:end/;
		if ($line =~ /^```sql\s*$/)
		{
			$block = { line => $i + 1, sql => '', walkthrough => $in_walkthrough };
			$fence = 1;
		}
		elsif ($line =~ /^```/)
		{
			$fence = 2;
		}
		next;
	}
	if ($line =~ /^```\s*$/)
	{
		push @blocks, $block if $fence == 1;
		$fence = 0;
		next;
	}
	$block->{sql} .= $line if $fence == 1;
}
# (the SQL without its comments decides whether a block needs pg_cron)
for my $b (@blocks)
{
	(my $code = $b->{sql}) =~ s/--[^\n]*//g;
	$b->{cron} = !$b->{walkthrough} && $code =~ /pg_cron|\bcron\.|mm\.(?:un)?schedule/;
}
my @walkthrough = grep { $_->{walkthrough} } @blocks;
my @cron = grep { $_->{cron} } @blocks;
my @alone = grep { !$_->{walkthrough} && !$_->{cron} } @blocks;
ok(@walkthrough >= 10, sprintf('README.md has a walk-through (%d sql blocks)', scalar @walkthrough));
ok(@alone >= 1, 'and sql blocks outside it');
ok(@cron >= 2, 'and blocks that need pg_cron');

my $node = PostgreSQL::Test::Cluster->new('readme');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'pg_cron'\ncron.database_name = 'game'\n"
	  . "cron.host = '" . $node->host . "'\n");
$node->start;

# Runs SQL in a database, stopping at the first error; ok when none.
sub runs
{
	my ($db, $sql, $name) = @_;
	my ($out, $err) = ('', '');
	my $ret = $node->psql($db, $sql, stdout => \$out, stderr => \$err, on_error_stop => 1);
	ok($ret == 0, $name) or diag("psql exited with $ret:\n$err");
	return $err;
}

# No match is left proposed, ready or assigned: nobody is held.
sub nobody_held
{
	my ($db, $name) = @_;
	is( $node->safe_psql(
			$db, q{SELECT count(*) FROM mm.matches WHERE status IN ('proposed', 'ready', 'assigned')}),
		'0', $name);
	return;
}

my $n = 0;
for my $b (@alone)
{
	my $db = 'readme_' . ++$n;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	runs($db, $b->{sql}, "README.md line $b->{line}: runs in a fresh database");
	nobody_held($db, "README.md line $b->{line}: no match is left live")
	  if $node->safe_psql($db, "SELECT count(*) FROM pg_extension WHERE extname = 'matchmaking'") eq '1';
}

$node->safe_psql('postgres', 'CREATE DATABASE readme_walkthrough');
runs('readme_walkthrough', join("\n", map { $_->{sql} } @walkthrough),
	"the walk-through (README.md lines $walkthrough[0]{line}-$walkthrough[-1]{line}) runs in a fresh database");
nobody_held('readme_walkthrough', 'the walk-through ends its match');
runs(
	'readme_walkthrough',
	q{SELECT mm.create_ticket('ranked', '[{"id": "ana", "attributes": {"skill": 1510}, "latencies": {"eu-west": 35}}]')},
	"after the walk-through, a player of its match may search again");

# pg_cron's database: the README's blocks that need pg_cron, with the
# walk-through, in the README's order
$node->safe_psql('postgres', 'CREATE DATABASE game');
my $err = runs(
	'game',
	join("\n", map { $_->{sql} } grep { $_->{cron} || $_->{walkthrough} } @blocks),
	'in pg_cron\'s database, the install block, the walk-through and the scheduling run');
unlike($err, qr/WARNING/, 'mm.schedule does not warn') or diag($err);
is($node->safe_psql('game', q{SELECT count(*) FROM cron.job WHERE jobname = 'mm_tick:ranked'}),
	'0', 'the README unschedules what it scheduled');

$node->stop;
done_testing();
