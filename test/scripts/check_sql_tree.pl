#!/usr/bin/perl
# Checks the SQL source tree, src/sql/*.sql, from which `make` builds the
# fresh install script of the version in development (in name order):
#  - every function, procedure and aggregate is created once: no signature
#    twice, no CREATE OR REPLACE (of anything: the script creates everything
#    it defines exactly once), and so are tables, views, types, sequences,
#    indexes and triggers;
#  - an object's COMMENT, GRANT, REVOKE, indexes and pg_extension_config_dump
#    are in the file that creates it, after it, and name an object the tree
#    creates; a trigger comes after its table and its function;
#  - no statement changes an object after its definition (ALTER FUNCTION,
#    ALTER TABLE, ALTER VIEW; ALTER SEQUENCE ... OWNED BY excepted), none drops
#    one, none migrates data (UPDATE, DELETE; INSERT only into mm.event_key);
#  - every file opens with a comment saying what it holds;
#  - no routine is longer than 150 lines, from CREATE to its closing $$; (a
#    longer one becomes an orchestrator of named steps, each its own
#    function: mm.report_result).
# Prints each problem with its file and line; exits 1 when there is one.
#   perl test/scripts/check_sql_tree.pl [directory]     (default src/sql)
use strict;
use warnings;

my $dir = $ARGV[0] // 'src/sql';
my @files = sort glob("$dir/*.sql");
my @problems;
die "no SQL files in $dir\n" unless @files;

# The reading rules (statements, signatures) are shared with the upgrade
# builder: src/tools/MmSql.pm.
use FindBin;
use lib "$FindBin::Bin/../../src/tools";
use MmSql qw(routine_ref statements);

my (%created, @uses);    # object key -> "file:line"; later references to check

my $max_routine_lines = 150;
for my $file (@files)
{
	open my $fh, '<', $file or die "$file: $!\n";
	my $text = do { local $/; <$fh> };
	close $fh;
	(my $short = $file) =~ s{.*/}{};
	push @problems, "$short:1: the file does not open with a comment saying what it holds"
	  unless $text =~ /\A--[^\n]*\S/;
	for my $st (statements($text))
	{
		my ($line, $s) = @$st;
		my $where = "$short:$line";
		(my $flat = $s) =~ s/\s+/ /g;
		my $create = sub {
			my ($key) = @_;
			if (my $first = $created{$key})
			{
				push @problems, "$where: $key is created again (first at $first)";
			}
			else
			{
				$created{$key} = $where;
			}
		};
		if ($flat =~ /^CREATE OR REPLACE /i)
		{
			push @problems, "$where: CREATE OR REPLACE: the tree defines each object once, with CREATE";
		}
		if ($flat =~ /^CREATE (?:OR REPLACE )?(FUNCTION|PROCEDURE|AGGREGATE) (.*)/is)
		{
			my ($sig) = routine_ref($2);
			$create->("routine $sig") if $sig;
			push @problems, "$where: cannot read the signature" unless $sig;
			my $lines = ($s =~ tr/\n//) + 1;
			if ($lines > $max_routine_lines)
			{
				push @problems, "$where: " . ($sig // 'the routine') . " is $lines lines (at most $max_routine_lines):"
				  . ' split it into named steps, each its own function';
			}
		}
		elsif ($flat =~ /^CREATE (?:OR REPLACE )?(?:TEMP(?:ORARY)? )?(TABLE|VIEW|MATERIALIZED VIEW|TYPE|SEQUENCE) (?:IF NOT EXISTS )?([\w.]+)/i)
		{
			my ($kind, $name) = (lc $1, lc $2);
			$kind = 'relation' if $kind =~ /table|view|sequence/;
			$create->("$kind $name");
		}
		elsif ($flat =~ /^CREATE (?:UNIQUE )?INDEX (?:CONCURRENTLY )?(?:IF NOT EXISTS )?(\w+) ON ([\w.]+)/i)
		{
			$create->('index ' . lc $1);
			push @uses, [ $where, 'relation ' . lc $2, 'CREATE INDEX' ];
		}
		elsif ($flat =~ /^CREATE (?:CONSTRAINT )?TRIGGER (\w+) .*? ON ([\w.]+)/i)
		{
			$create->('trigger ' . lc($1) . ' on ' . lc($2));
			push @uses, [ $where, 'relation ' . lc $2, 'CREATE TRIGGER' ];
			if ($flat =~ /EXECUTE (?:FUNCTION|PROCEDURE) ([\w.]+\s*\()/i)
			{
				my ($sig) = routine_ref(substr($flat, $-[1]));
				push @uses, [ $where, "routine $sig", 'CREATE TRIGGER' ];
			}
		}
		elsif ($flat =~ /^(?:COMMENT ON (FUNCTION|PROCEDURE|AGGREGATE|ROUTINE)|(?:GRANT|REVOKE) [\w ,]+? ON (FUNCTION|PROCEDURE|ROUTINE)) (.*)/is
			&& $flat !~ /\bALL (FUNCTIONS|PROCEDURES|ROUTINES) IN SCHEMA\b/i)
		{
			my $rest = $3;
			my $what = $flat =~ /^(\w+)/ ? uc $1 : '';
			while (1)
			{
				my ($sig, $after) = routine_ref($rest);
				last unless $sig;
				push @uses, [ $where, "routine $sig", $what ];
				last unless $after =~ /^\s*,\s*(.*)/s && $what ne 'COMMENT';
				$rest = $1;
			}
		}
		elsif ($flat =~ /^COMMENT ON (TABLE|VIEW|SEQUENCE|MATERIALIZED VIEW) ([\w.]+)/i)
		{
			push @uses, [ $where, 'relation ' . lc $2, 'COMMENT' ];
		}
		elsif ($flat =~ /^COMMENT ON COLUMN ([\w]+\.[\w]+)\.\w+/i)
		{
			push @uses, [ $where, 'relation ' . lc $1, 'COMMENT' ];
		}
		elsif ($flat =~ /^COMMENT ON TYPE ([\w.]+)/i)
		{
			push @uses, [ $where, 'type ' . lc $1, 'COMMENT' ];
		}
		elsif ($flat =~ /^(GRANT|REVOKE) .*? ON (?:TABLE |SEQUENCE )?((?:mm\.\w+)(?:\s*,\s*mm\.\w+)*) (?:TO|FROM) /i)
		{
			my $what = uc $1;
			push @uses, [ $where, 'relation ' . lc $_, $what ] for split /\s*,\s*/, $2;
		}
		elsif ($flat =~ /^(GRANT|REVOKE) .* IN SCHEMA /i)
		{
			push @problems, "$where: a grant on ALL ... IN SCHEMA: grant each object in its own definition";
		}
		elsif ($flat =~ /^SELECT pg_catalog\.pg_extension_config_dump\('([\w.]+)'/i)
		{
			push @uses, [ $where, 'relation ' . lc $1, 'pg_extension_config_dump' ];
		}
		elsif ($flat =~ /^ALTER SEQUENCE ([\w.]+) OWNED BY ([\w.]+)\.\w+;$/i)
		{
			push @uses, [ $where, 'relation ' . lc $1, 'ALTER SEQUENCE' ], [ $where, 'relation ' . lc $2, 'ALTER SEQUENCE' ];
		}
		elsif ($flat =~ /^(ALTER (?:FUNCTION|PROCEDURE|ROUTINE|AGGREGATE|TABLE|VIEW|TYPE|SEQUENCE|INDEX)|DROP|UPDATE|DELETE|TRUNCATE)\b/i)
		{
			push @problems, "$where: " . uc($1)
			  . ': the tree writes each object as it is now, in its definition (changes and data migrations go to upgrade/)';
		}
		elsif ($flat =~ /^INSERT INTO ([\w.]+)/i && lc $1 ne 'mm.event_key')
		{
			push @problems, "$where: INSERT INTO $1: the install script holds no data but the event key";
		}
	}
}

# Implicit sequences of identity columns are created with their table.
for my $use (@uses)
{
	my ($where, $key, $what) = @$use;
	my $def = $created{$key};
	if (!$def && $key =~ /^relation (.*)_id_seq$/ && $created{"relation $1"})
	{
		$def = $created{"relation $1"};
	}
	if (!$def)
	{
		push @problems, "$where: $what names $key, which the tree does not create";
		next;
	}
	my ($def_file, $def_line) = split /:/, $def;
	my ($use_file, $use_line) = split /:/, $where;
	if ($what eq 'CREATE TRIGGER')
	{
		# a trigger stands with its table or with its function, after both
		push @problems, "$where: $what uses $key before its definition ($def)"
		  if $def_file gt $use_file || ($def_file eq $use_file && $use_line < $def_line);
	}
	elsif ($def_file ne $use_file)
	{
		push @problems, "$where: $what of $key belongs in $def_file, beside its definition";
	}
	elsif ($use_line < $def_line)
	{
		push @problems, "$where: $what of $key comes before its definition ($def)";
	}
}

my $routines = grep { /^routine / } keys %created;
if (@problems)
{
	print "check_sql_tree: $_\n" for @problems;
	print "check_sql_tree: " . scalar(@problems) . " problem(s) in $dir\n";
	exit 1;
}
printf "check_sql_tree: %d files, %d objects (%d routines), each defined once ... ok\n",
  scalar(@files), scalar(keys %created), $routines;
exit 0;
