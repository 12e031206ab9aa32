#!/usr/bin/perl
# The functions Citus routes by their queue are listed twice: in mm.distribute
# (src/sql/95_scale_out.sql), which distributes them, and in src/citus_guard.c
# (DistributedByQueue), whose planner hook keeps a NULL queue away from
# Citus's delegation of them.  Checks that both name the same functions, and
# that each signature mm.distribute names is defined in src/sql with a text
# argument named queue first (HACKING.md, "Citus rules for SQL").
#   perl test/scripts/check_citus_functions.pl
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../../src/tools";
use MmSql qw(routine_ref statements);

my $root = "$FindBin::Bin/../..";
my @problems;

sub slurp
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!\n";
	local $/;
	return scalar <$fh>;
}

# the C list
my $c = slurp("$root/src/citus_guard.c");
$c =~ /DistributedByQueue\[\]\s*=\s*\{(.*?)\};/s or die "src/citus_guard.c: no DistributedByQueue[] list\n";
my %in_c = map { ($_ => 1) } $1 =~ /"(\w+)"/g;

# mm.distribute's list, and every routine of src/sql with its arguments
my (%in_sql, %defined);
for my $file (sort glob("$root/src/sql/*.sql"))
{
	for my $st (statements(slurp($file)))
	{
		my $s = $st->[1];
		if ($s =~ /^CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+(.*)/is)
		{
			my $rest = $1;
			my ($sig) = routine_ref($rest);
			$defined{$sig} = $rest if $sig;
			if ($sig && $sig =~ /^mm\.distribute\(/)
			{
				# (up to "]) AS u(routine)": a signature may hold "[]")
				my ($list) = $rest =~ /unnest\(ARRAY\[((?:(?!\]\)\s+AS\s+u\(routine\)).)*'mm\.tick\(.*?)\]\)\s+AS\s+u\(routine\)/s;
				push @problems, "mm.distribute: no ARRAY[...] AS u(routine) list of the routed functions found" unless $list;
				$in_sql{$_} = 1 for ($list // '') =~ /'([^']+)'/g;
			}
		}
	}
}

my %names;
for my $sig (sort keys %in_sql)
{
	my ($norm) = routine_ref($sig);
	my ($name) = $norm =~ /^mm\.(\w+)\(/;
	$names{$name} = 1;
	if (!$defined{$norm})
	{
		push @problems, "mm.distribute names $sig, which src/sql does not define";
		next;
	}
	push @problems, "$sig: a routed function takes the queue first (queue text)"
	  unless $defined{$norm} =~ /^\s*[\w.]+\s*\(\s*queue\s+text\b/i;
}
for my $name (sort keys %names)
{
	push @problems, "mm.$name is distributed by mm.distribute but missing from DistributedByQueue (src/citus_guard.c)"
	  unless $in_c{$name};
}
for my $name (sort keys %in_c)
{
	push @problems, "mm.$name is in DistributedByQueue (src/citus_guard.c) but mm.distribute does not distribute it"
	  unless $names{$name};
}

if (@problems)
{
	print "check_citus_functions: $_\n" for @problems;
	exit 1;
}
printf "check_citus_functions: mm.distribute and src/citus_guard.c route the same %d functions by queue ... ok\n",
  scalar(keys %names);
exit 0;
