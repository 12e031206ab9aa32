#!/usr/bin/perl
# Turns routines copied into an upgrade's hand-written files (the old way of
# writing an upgrade, or a branch merged from before the manifest) into lines
# of its manifest (HACKING.md, "Where SQL changes go"):
#
#   perl src/tools/absorb_copies.pl PREVIOUS_SCRIPT SRC_DIR UPGRADE_DIR [FILE...]
#   e.g. perl src/tools/absorb_copies.pl released/matchmaking--0.3.sql src/sql upgrade/0.3--0.4
#
# In each FILE (default: every NN_*.sql of UPGRADE_DIR) it removes every
# CREATE [OR REPLACE] FUNCTION/PROCEDURE/AGGREGATE, the COMMENT, GRANT and
# REVOKE statements on routines, every DROP FUNCTION/PROCEDURE, and the
# comment lines right above each, and adds to the manifest (NN_routines.txt)
# the lines they mean that it does not hold yet: the signature of each routine
# created; "recreate" for one the file dropped and created again that the
# previous release has; "drop" for a dropped one src/sql no longer defines.
# A file left with nothing but comments is deleted.  It prints what it did and
# the statements that stay (tables, views, triggers, data: check they are on
# the right side of the manifest: below its number what routines need, above
# it what needs them).  Then build the upgrade and run build_upgrade.pl --check.
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use MmSql qw(routine_ref statements);

my ($previous, $src_dir, $upgrade_dir, @files) = @ARGV;
die "usage: $0 PREVIOUS_SCRIPT SRC_DIR UPGRADE_DIR [FILE...]\n"
  unless defined $upgrade_dir && -f $previous && -d $src_dir && -d $upgrade_dir;
@files = grep { !/\/00_header\.sql$/ } sort glob("$upgrade_dir/*.sql") unless @files;
my ($manifest) = glob("$upgrade_dir/*_routines.txt");
die "$upgrade_dir: no NN_routines.txt manifest\n" unless $manifest;

sub slurp
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!\n";
	local $/;
	return scalar <$fh>;
}

sub flat { (my $s = $_[0]) =~ s/\s+/ /g; return $s; }

sub defined_routines
{
	my ($text) = @_;
	my %set;
	for my $st (statements($text))
	{
		my $f = flat($st->[1]);
		if ($f =~ /^CREATE (?:OR REPLACE )?(?:FUNCTION|PROCEDURE|AGGREGATE) (.*)/is)
		{
			my ($sig) = routine_ref($1);
			$set{$sig} = 1 if $sig;
		}
		elsif ($f =~ /^DROP (?:FUNCTION|PROCEDURE|AGGREGATE|ROUTINE) (?:IF EXISTS )?(.*)/is)
		{
			my ($sig) = routine_ref($1);
			delete $set{$sig} if $sig;
		}
	}
	return \%set;
}

my %in_src = map { %{ defined_routines(slurp($_)) } } sort glob("$src_dir/*.sql");
my %in_previous = %{ defined_routines(slurp($previous)) };

# what the manifest holds already
my %listed;
for my $line (split /\n/, slurp($manifest))
{
	$line =~ s/#.*//;
	next unless $line =~ /\S/;
	$line =~ s/^\s*(?:drop|recreate)\s+//i;
	my ($sig) = routine_ref($line);
	$listed{$sig} = 1 if $sig;
}

my @added;
for my $file (@files)
{
	(my $short = $file) =~ s{.*/}{};
	my $text = slurp($file);
	my @lines = split /\n/, $text, -1;
	my (%remove, %dropped, @kept);
	for my $st (statements($text))
	{
		my ($line, $s) = @$st;
		my $f = flat($s);
		my $routine_statement = 1;
		if ($f =~ /^DROP (?:FUNCTION|PROCEDURE|AGGREGATE|ROUTINE) (?:IF EXISTS )?(.*)/is)
		{
			my ($sig) = routine_ref($1);
			$dropped{$sig} = 1;
			if (!$in_src{$sig} && !$listed{$sig})
			{
				push @added, "drop $sig";
				$listed{$sig} = 1;
			}
		}
		elsif ($f =~ /^CREATE (?:OR REPLACE )?(?:FUNCTION|PROCEDURE|AGGREGATE) (.*)/is)
		{
			my ($sig) = routine_ref($1);
			if (!$listed{$sig})
			{
				push @added, ($dropped{$sig} && $in_previous{$sig} ? "recreate $sig" : $sig);
				$listed{$sig} = 1;
			}
			print "$short: $sig is not in $src_dir: write it there\n" unless $in_src{$sig};
		}
		elsif ($f !~ /^(?:COMMENT ON (?:FUNCTION|PROCEDURE|AGGREGATE|ROUTINE)|(?:GRANT|REVOKE) [\w ,]+? ON (?:FUNCTION|PROCEDURE|ROUTINE)) /i)
		{
			$routine_statement = 0;
			push @kept, "$short:$line: " . substr($f, 0, 100);
		}
		next unless $routine_statement;
		my $n = () = $s =~ /\n/g;
		$remove{$_} = 1 for $line .. $line + $n;
		# the comment right above it goes with it
		my $k = $line - 1;
		while ($k >= 1 && $lines[ $k - 1 ] =~ /^\s*--/) { $remove{$k} = 1; $k--; }
	}
	next unless %remove;
	my $out = join("\n", map { $lines[ $_ - 1 ] } grep { !$remove{$_} } 1 .. @lines);
	$out =~ s/\n{3,}/\n\n/g;
	if ($out !~ /^\s*[^\s-]/m)
	{
		unlink $file or die "$file: $!\n";
		print "$short: only routines and comments: deleted\n";
		next;
	}
	open my $fh, '>', $file or die "$file: $!\n";
	print $fh $out;
	close $fh;
	print "$short: routines removed; kept:\n", map { "  $_\n" } @kept;
}

if (@added)
{
	open my $fh, '>>', $manifest or die "$manifest: $!\n";
	print $fh "\n# absorbed from copies\n", map { "$_\n" } @added;
	close $fh;
}
printf "%s: %d line(s) added\n", $manifest, scalar @added;
