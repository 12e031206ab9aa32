#!/usr/bin/perl
# Keeps HACKING.md true.  Fails when it
#  - names a file or directory that does not exist (a `path` in backquotes, a
#    link, a command's script); the scripts of the version in development are
#    built, and a later version's files appear only in the recipe for cutting
#    it, so neither is looked for;
#  - names a SQL object (`mm.name`) that src/sql/ does not create, or a C
#    identifier (`MmName`, `RuleHandlers[]`, a CamelCase or mm_ name) that no
#    C, Perl, shell or SQL file under src/ or test/ holds;
#  - leaves a file of src/sql/*.sql, src/*.c or docs/*.md out of its tables
#    (a table row naming it; `rule_<type>.c` stands for every rule_*.c);
#  - is larger than 25 KB (25,000 bytes).
# Prints each problem; exits 1 when there is one.
#   perl test/scripts/check_hacking.pl
use strict;
use warnings;
use File::Basename qw(dirname basename);
use File::Spec;
use File::Find;

chdir(File::Spec->catdir(dirname(File::Spec->rel2abs($0)), '..', '..')) or die "chdir: $!";
my $doc = 'HACKING.md';
my $max_bytes = 25_000;

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "$path: $!";
	local $/;
	return scalar <$fh>;
}

my $text = slurp($doc);
my @problems;
push @problems, sprintf('%d bytes: at most %d', length($text), $max_bytes) if length($text) > $max_bytes;

# the versions: a path naming a later one is the recipe's future
my $make = slurp('Makefile');
my ($version) = $make =~ /^MM_VERSION\s*=\s*([\d.]+)/m or die "Makefile: no MM_VERSION\n";
my ($previous) = $make =~ /^MM_PREVIOUS\s*=\s*([\d.]+)/m or die "Makefile: no MM_PREVIOUS\n";
my %built = map { ($_ => 1) } ("matchmaking--$version.sql", "matchmaking--$previous--$version.sql");
sub vnum { my @p = split /\./, shift; return $p[0] * 1000 + ($p[1] // 0) }

# every file and directory of the tree, by path and by name
my (%path, %name);
find({ no_chdir => 1, wanted => sub {
	if (m{/\.git$} || m{/(?:results|output_iso|tmp_check)$}) { $File::Find::prune = 1; return; }
	(my $p = $File::Find::name) =~ s{^\./}{};
	return if $p eq '.';
	$path{$p} = 1;
	$path{"$p/"} = 1 if -d $_;
	push @{ $name{ basename($p) } }, $p;
} }, '.');

# what the test driver leaves in its copy of the tree (.gitignore)
my %ignored = map { m{^/?([^/*]+)/?$} ? ($1 => 1) : () } split /\n/, slurp('.gitignore');

# the SQL objects src/sql creates
my %sql;
for my $f (glob('src/sql/*.sql'))
{
	my $t = slurp($f);
	$sql{ lc $1 } = 1
	  while $t =~ /^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:UNIQUE\s+)?(?:FUNCTION|PROCEDURE|AGGREGATE|TABLE|VIEW|MATERIALIZED\s+VIEW|TYPE|SEQUENCE|INDEX|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?mm\.(\w+)/gim;
}

# the identifiers of the code (src/, test/: C, and the Perl and shell helpers)
my %c_words;
for my $f (grep { /\.(?:c|h|pl|pm|sh|sql)$/ } keys %path)
{
	next unless $f =~ m{^(?:src|test)/};
	my $t = slurp($f);
	$c_words{$1} = 1 while $t =~ /\b([A-Za-z_]\w*)\b/g;
}

sub check_path
{
	my ($p, $where) = @_;
	$p =~ s/[#:].*$//;
	$p =~ s/[.,;]$//;
	return if $p eq '' || $p =~ /[<>*]|\.\.\.|\bNN/ || $p =~ /^[-.]/;
	return if $ignored{ (split m{/}, $p)[0] };
	return if $built{$p} || $built{ basename($p) };
	if ($p =~ /(\d+\.\d+)(?:--(\d+\.\d+))?/)
	{
		my $v = vnum($2 // $1);
		return if $v > vnum($version);
	}
	my $q = $p;
	$q =~ s{^\./}{};
	return if $path{$q} || $path{"$q/"};
	return if $q !~ m{/} && $name{$q};
	# `.h` after `name.c`: the header of the same name
	push @problems, "$where: names $p, which does not exist";
}

my ($section, $in_fence, %row_names) = ('', 0);
my $lineno = 0;
for my $line (split /\n/, $text)
{
	$lineno++;
	my $where = "$doc:$lineno";
	if ($line =~ /^```/) { $in_fence = !$in_fence; next; }
	next if $in_fence;
	$section = $1 if $line =~ /^#+\s+(.*)/;
	# links
	while ($line =~ /\]\(([^)\s]+)\)/g)
	{
		my $t = $1;
		next if $t =~ /^[a-z]+:/ || $t =~ /^#/;
		check_path($t, $where);
	}
	# an indented command: its scripts
	if ($line =~ /^    \S/)
	{
		check_path($1, $where) while $line =~ m{((?:src|test|sql|expected|docs|released|upgrade)/[\w./*-]+)}g;
		next;
	}
	my @codes = $line =~ /`([^`]+)`/g;
	for my $code (@codes)
	{
		for my $tok (split /[\s,()]+/, $code)
		{
			$tok =~ s/^["']|["';]$//g;
			next if $tok eq '';
			if ($tok =~ /^mm\.(\w+)/)
			{
				push @problems, "$where: names mm.$1, which src/sql does not create" unless $sql{ lc $1 };
			}
			elsif ($tok =~ m{/} || $tok =~ /\.(?:c|h|sql|pl|pm|sh|md|spec|out|txt|py|yml|yaml|control)$/)
			{
				next if $tok =~ m{^\$|^https?:|^/|=};
				check_path($tok, $where);
			}
			elsif ($tok =~ /^((?:Mm|mm_)\w+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)(?:\[\])?$/ && $tok !~ /^(?:PostgreSQL|Citus|GitHub|ChangeLog)$/)
			{
				push @problems, "$where: names $1, which no file under src/ or test/ holds" unless $c_words{$1};
			}
		}
	}
	# table rows: what each table lists
	if ($line =~ /^\|/)
	{
		for my $code (@codes)
		{
			$row_names{$_} = 1 for map { basename($_) } grep { /\.(?:c|sql|md)$/ } split /[\s,]+/, $code;
		}
	}
}

my @wild = map { s/<\w+>/\\w+/gr } grep { /</ } keys %row_names;
for my $f (sort(glob('src/sql/*.sql')), sort(glob('src/*.c')), sort(glob('docs/*.md')))
{
	my $b = basename($f);
	next if $row_names{$b} || grep { $b =~ /^$_$/ } @wild;
	push @problems, "$doc: $f is missing from its table";
}

if (@problems)
{
	print "check_hacking: $_\n" for @problems;
	print 'check_hacking: ' . scalar(@problems) . " problem(s)\n";
	exit 1;
}
printf "check_hacking: %s, %d bytes; every file, object and page it names exists, and its tables list every file ... ok\n",
  $doc, length($text);
exit 0;
