# HACKING.md's "Cutting a version", followed once: a copy of the tree cuts
# the version in development as released and starts a scratch next version
# with src/tools/cut_version.sh, makes one trivial change the way every
# change is made (a function in src/sql, its line in the new manifest),
# builds and installs into a PostgreSQL root of its own, and checks that a
# database created at the cut version and updated equals a fresh install of
# the next (pg_dump --schema-only --binary-upgrade, as 050 compares them).
# Everything lives in the test's temporary directory and goes with it.  The
# trap the recipe guards against: MM_NEW_IN_VERSION left full makes the
# upgrade create the cut version's tables again (mm.player_penalties).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use IPC::Run;

my $tmp  = PostgreSQL::Test::Utils::tempdir;
my $src  = $ENV{TESTDIR} // die "TESTDIR is not set\n";
my $tree = "$tmp/tree";

sub run_ok
{
	my ($cmd, $name, %opt) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run($cmd, '>', \$out, '2>', \$err, $opt{init} ? (init => $opt{init}) : ());
	ok($ok, $name) or diag "$out\n$err";
	return $out;
}

sub slurp
{
	my ($f) = @_;
	open my $fh, '<', $f or die "$f: $!";
	local $/;
	return scalar <$fh>;
}

sub versions
{
	my ($dir) = @_;
	my $m = slurp("$dir/Makefile");
	my ($v) = $m =~ /^MM_VERSION = ([\d.]+)$/m;
	my ($p) = $m =~ /^MM_PREVIOUS = ([\d.]+)$/m;
	return ($v, $p);
}

# --- a private PostgreSQL root: a copy of the installation the suite uses
my $bindir  = $ENV{MM_BINDIR} // dirname(`pg_config --bindir`);
chomp $bindir;
my $pgc     = "$bindir/pg_config";
my $libroot = dirname($bindir);    # .../lib/postgresql/15
chomp(my $share = `$pgc --sharedir`);
my $root = "$tmp/root";
(my $lib_rel   = $libroot) =~ s{^.*?(/usr/lib/postgresql/)}{$1};
(my $share_rel = $share)   =~ s{^.*?(/usr/share/postgresql/)}{$1};
run_ok([ 'mkdir', '-p', dirname("$root$lib_rel"), dirname("$root$share_rel") ], 'root directories');
run_ok([ 'cp', '-a', $libroot, "$root$lib_rel" ], 'a copy of the installation');
run_ok([ 'cp', '-a', $share, "$root$share_rel" ], 'a copy of its share directory');
# built against the system's headers (the copy has none), installed under
# DESTDIR as test/scripts/common.sh installs into MM_PGROOT
my $sys_pgc  = "$lib_rel/bin/pg_config";
my $root_ext = "$root$share_rel/extension";
ok(-x $sys_pgc, "the system's pg_config ($sys_pgc)");

# --- the tree, copied without the suite's output
mkdir $tree or die "$tree: $!";
run_ok([ 'sh', '-c', 'cd "$1" && tar --exclude=./tmp_check --exclude=./results --exclude=./output_iso -cf - . | tar -C "$2" -xf -', 'sh', $src, $tree ],
	'the tree copied');
my ($version, $previous) = versions($tree);
my $next = sprintf('%d.%d', split(/\./, $version)) =~ s/(\d+)$/$1 + 1/er;
note "cutting $version, starting $next";
my $new_files = run_ok([ 'make', '-s', '-C', $tree, "PG_CONFIG=$sys_pgc", 'print-MM_NEW_IN_VERSION' ], 'the list of new files');
like($new_files, qr/\S/, "$version has files new in it (the trap is armed)");

# --- the recipe's mechanical part
run_ok([ 'sh', '-c', 'cd "$1" && PG_CONFIG="$2" bash src/tools/cut_version.sh "$3"', 'sh', $tree, $sys_pgc, $next ],
	"cut_version.sh $next");
my ($v2, $p2) = versions($tree);
is("$p2 -> $v2", "$version -> $next", 'the Makefile names the new versions');
ok(-f "$tree/released/matchmaking--$version.sql" && -f "$tree/released/matchmaking--$previous--$version.sql",
	"$version\'s scripts are kept in released/");
like(slurp("$tree/Makefile"), qr{^\treleased/matchmaking--\Q$previous--$version\E\.sql released/matchmaking--\Q$version\E\.sql$}m,
	"$version\'s scripts are released scripts (DATA)");
ok(!-e "$tree/upgrade/$previous--$version", "upgrade/$previous--$version is gone");
is(join(' ', grep { !/^#/ && /\S/ } split /\n/, slurp("$tree/upgrade/$version--$next/50_routines.txt")),
	'', 'the new manifest is empty');
is(run_ok([ 'make', '-s', '-C', $tree, "PG_CONFIG=$sys_pgc", 'print-MM_NEW_IN_VERSION' ], 'the list of new files'),
	"\n", 'MM_NEW_IN_VERSION is empty');
like(slurp("$tree/matchmaking.control"), qr/^default_version = '\Q$next\E'$/m, 'default_version');
like(slurp("$tree/src/schema_version.c"), qr/ServedVersions\[\] = \{"\Q$next\E"\}/, 'ServedVersions');
run_ok([ 'perl', "$tree/src/tools/build_upgrade.pl", '--check', "$tree/released/matchmaking--$version.sql",
		"$tree/src/sql", "$tree/upgrade/$version--$next" ],
	"every routine of src/sql equals $version\'s (build_upgrade.pl --check)");

# --- one trivial change of the new version, made as HACKING.md says
open my $fh, '>>', "$tree/src/sql/90_scheduling.sql" or die $!;
print $fh <<EOF;

-- The scratch version's one change (test/t/055_cut_version.pl).
CREATE FUNCTION mm.scratch_version()
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS \$\$ SELECT '$next' \$\$;
COMMENT ON FUNCTION mm.scratch_version() IS 'The scratch version';
REVOKE ALL ON FUNCTION mm.scratch_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.scratch_version() TO mm_admin;
EOF
close $fh;
open $fh, '>>', "$tree/upgrade/$version--$next/50_routines.txt" or die $!;
print $fh "\n# the scratch version's one change\nmm.scratch_version()\n";
close $fh;

# --- build, install into the private root
run_ok([ 'make', '-s', '-C', $tree, "PG_CONFIG=$sys_pgc", 'PG_CFLAGS=-Werror', "DESTDIR=$root", 'install' ], "make install of $next");
ok(-f "$root_ext/matchmaking--$version--$next.sql", "matchmaking--$version--$next.sql installed");

# --- the upgrade test: created at the cut version and updated = a fresh next version
my $node = PostgreSQL::Test::Cluster->new('cut', install_path => "$root$lib_rel");
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_cron'\ncron.database_name = 'postgres'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE up');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('up', "CREATE EXTENSION matchmaking VERSION '$version'");
$node->safe_psql('up', q{SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2}}')});
my ($rc, $out, $err) = $node->psql('up', 'ALTER EXTENSION matchmaking UPDATE');
is($rc, 0, "ALTER EXTENSION matchmaking UPDATE from $version to $next") or diag $err;
$node->safe_psql('fresh', 'CREATE EXTENSION matchmaking');
is($node->safe_psql('up', "SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'"), $next,
	"updated to $next");
is($node->safe_psql('up', 'SELECT mm.scratch_version()'), $next, 'the change is in the update');
is($node->safe_psql('up', 'SELECT count(*) FROM mm.queues'), '1', 'the data stays');

# as in 050_upgrade.pl: member objects only show in --binary-upgrade mode
sub schema_dump
{
	my ($db) = @_;
	my ($dump, $derr) = ('', '');
	IPC::Run::run([ $node->installed_command('pg_dump'), '--schema-only', '--binary-upgrade', '-d', $node->connstr($db) ],
		'>', \$dump, '2>', \$derr);
	is($? >> 8, 0, "pg_dump --schema-only of $db") or diag $derr;
	my @lines = grep {
		!/^--/ && !/^SET / && !/^\s*$/ && !/^\\(un)?restrict /
		  && !/^SELECT pg_catalog\.set_config\('search_path'/
		  && !/binary_upgrade_set_next_/ && !/binary_upgrade_create_empty_extension/
		  && !/pg_catalog\.setval\(/ && !/relfrozenxid/ && !/^WHERE oid = '\d+';$/
	} split /\n/, $dump;
	return join("\n", sort @lines) . "\n";
}
my ($up, $fresh) = (schema_dump('up'), schema_dump('fresh'));
like($fresh, qr/mm\.scratch_version/, 'the dump shows the extension\'s objects');
if (!is($up eq $fresh ? 'same' : 'different', 'same', "pg_dump of $version updated to $next = a fresh $next"))
{
	my %f = map { ($_ => 1) } split /\n/, $fresh;
	my %u = map { ($_ => 1) } split /\n/, $up;
	diag "only updated: $_" for grep { !$f{$_} } sort keys %u;
	diag "only fresh: $_"   for grep { !$u{$_} } sort keys %f;
}
$node->stop;

done_testing();
