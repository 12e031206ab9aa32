#!/usr/bin/perl
# Builds the upgrade script of the version in development (HACKING.md,
# "Where SQL changes go"):
#
#   perl src/tools/build_upgrade.pl SRC_DIR UPGRADE_DIR [NEW_FILE...]  > script
#   perl src/tools/build_upgrade.pl --check PREVIOUS_SCRIPT SRC_DIR UPGRADE_DIR [NEW_FILE...]
#
# UPGRADE_DIR (upgrade/<from>--<to>/) holds the hand-written table and data
# changes, NN_concern.sql, and one manifest, NN_routines.txt: the routines
# that change, one signature a line as PostgreSQL resolves it
# ("mm.tick(text, timestamptz)"), in any order:
#
#   mm.f(text)              CREATE OR REPLACE from src/sql
#   recreate mm.f(text)     DROP, then CREATE: its return type, argument
#                           names or defaults changed
#   drop mm.f(text)         DROP only: a signature of the previous release
#                           that no longer exists
#
# The script is the files of UPGRADE_DIR in name order, the manifest in its
# place: first every DROP (in manifest order), then src/sql in name order:
# each NEW_FILE (a file whose objects are all new in this version, the
# Makefile's MM_NEW_IN_VERSION) whole, and from the other files each listed
# routine's definition with its COMMENT, GRANT and REVOKE statements.  So
# hand-written files numbered below the manifest change tables before the
# routines that use them, and those numbered above it create the views and
# triggers over new routines and run the data migrations that call them.
#
# Fails when a manifest line names a routine src/sql does not define (or a
# drop one it does), names one twice, or when a hand-written file creates a
# routine (a copy: list it in the manifest instead).  --check also compares
# src/sql with the previous release's script and fails when a routine that
# differs, is new or is gone is not in the manifest (test/run-tests.sh runs
# it with the regress suite's checkers).
use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use MmSql qw(routine_ref statements);

my $previous;
if (@ARGV && $ARGV[0] eq '--check')
{
	shift @ARGV;
	$previous = shift @ARGV;
}
my ($src_dir, $upgrade_dir, @new_files) = @ARGV;
die "usage: $0 [--check PREVIOUS_SCRIPT] SRC_DIR UPGRADE_DIR [NEW_FILE...]\n"
  unless defined $upgrade_dir && -d $src_dir && -d $upgrade_dir;
my %is_new = map { (my $b = $_) =~ s{.*/}{}; ($b => 1) } @new_files;
my @problems;

sub slurp
{
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!\n";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

sub flat
{
	(my $s = $_[0]) =~ s/\s+/ /g;
	return $s;
}

# The routines a statement defines or names: (kind, [signatures]) with kind
# 'create' (its kind of routine beside it) or 'attached' (COMMENT, GRANT,
# REVOKE), or () for any other statement.
sub routines_of
{
	my ($s) = @_;
	my $f = flat($s);
	if ($f =~ /^CREATE (?:OR REPLACE )?(FUNCTION|PROCEDURE|AGGREGATE) (.*)/is)
	{
		my ($kind, $rest) = (uc $1, $2);
		my ($sig) = routine_ref($rest);
		return ('create', [$sig], $kind) if $sig;
		return;
	}
	if ($f =~ /^(?:COMMENT ON (?:FUNCTION|PROCEDURE|AGGREGATE|ROUTINE)|(?:GRANT|REVOKE) [\w ,]+? ON (?:FUNCTION|PROCEDURE|ROUTINE)) (.*)/is
		&& $f !~ /\bALL (FUNCTIONS|PROCEDURES|ROUTINES) IN SCHEMA\b/i)
	{
		my $rest = $1;
		my @sigs;
		while (1)
		{
			my ($sig, $after) = routine_ref($rest);
			last unless $sig;
			push @sigs, $sig;
			last unless $f !~ /^COMMENT/i && $after =~ /^\s*,\s*(.*)/s;
			$rest = $1;
		}
		return ('attached', \@sigs);
	}
	return;
}

# Who may execute a routine after a statement: GRANT or REVOKE (of EXECUTE
# or ALL) changes %$acl (signature -> {role => 1}); a CREATE (not OR
# REPLACE) starts with PUBLIC, as PostgreSQL does.
my %acl_kind;
sub apply_acl
{
	my ($acl, $s) = @_;
	my $f = flat($s);
	if ($f =~ /^CREATE (FUNCTION|PROCEDURE|AGGREGATE) (.*)/is)
	{
		my ($kind, $sig) = (uc $1, routine_ref($2));
		if ($sig)
		{
			$acl->{$sig} = { public => 1 };
			$acl_kind{$sig} = $kind;
		}
		return;
	}
	if ($f =~ /^DO .*GRANT EXECUTE ON (?:ROUTINE|FUNCTION) %s TO %s/is)
	{
		# 0.3's grants from a list: ('signature', 'role') rows, to existing routines
		while ($f =~ /\('(mm\.\w+\([^']*\))',\s*'(\w+)'\)/g)
		{
			my ($sig) = routine_ref($1);
			my $role = lc $2;
			$acl->{$sig}{$role} = 1 if $sig && $acl->{$sig};
		}
		return;
	}
	if ($f =~ /^(GRANT|REVOKE) ([\w ,]+?) ON ALL (FUNCTIONS|PROCEDURES|ROUTINES) IN SCHEMA mm (?:TO|FROM) (.*?)\s*;?\s*$/is)
	{
		# every routine of mm so far (functions: no procedures)
		my ($verb, $which) = (uc $1, uc $3);
		my @roles = map { lc } split /\s*,\s*/, $4;
		for my $sig (keys %$acl)
		{
			my $kind = $acl_kind{$sig} // 'FUNCTION';
			next if $which eq 'FUNCTIONS' && $kind eq 'PROCEDURE';
			next if $which eq 'PROCEDURES' && $kind ne 'PROCEDURE';
			for my $role (@roles)
			{
				if ($verb eq 'GRANT') { $acl->{$sig}{$role} = 1; }
				else { delete $acl->{$sig}{$role}; }
			}
		}
		return;
	}
	return unless $f =~ /^(GRANT|REVOKE) ([\w ,]+?) ON (?:FUNCTION|PROCEDURE|ROUTINE) (.*)/is;
	my ($verb, $rest) = (uc $1, $3);
	my @sigs;
	my $after = '';
	while (1)
	{
		my ($sig, $tail) = routine_ref($rest);
		last unless $sig;
		push @sigs, $sig;
		$after = $tail;
		last unless $tail =~ /^\s*,\s*(.*)/s;
		$rest = $1;
	}
	return unless $after =~ /^\s*(?:TO|FROM)\s+(.*?)\s*(?:WITH GRANT OPTION\s*)?;?\s*$/is;
	my @roles = map { lc } split /\s*,\s*/, $1;
	for my $sig (@sigs)
	{
		for my $role (@roles)
		{
			if ($verb eq 'GRANT') { $acl->{$sig}{$role} = 1; }
			else { delete $acl->{$sig}{$role}; }
		}
	}
}

# src/sql: per file its statements; per routine its file, kind and text.
my @src_files = sort glob("$src_dir/*.sql");
die "no SQL files in $src_dir\n" unless @src_files;
my (%src_text, %src_stmts, %routine);    # routine: sig -> {file, kind, create, attached => [..]}
for my $file (@src_files)
{
	(my $base = $file) =~ s{.*/}{};
	$src_text{$base} = slurp($file);
	$src_stmts{$base} = [ statements($src_text{$base}) ];
	for my $st (@{ $src_stmts{$base} })
	{
		my ($what, $sigs, $kind) = routines_of($st->[1]);
		next unless $what;
		if ($what eq 'create')
		{
			$routine{ $sigs->[0] } = { file => $base, kind => $kind, create => $st->[1], attached => [] };
		}
		else
		{
			push @{ $routine{$_}{attached} }, $st->[1] for grep { $routine{$_} } @$sigs;
		}
	}
}
for my $new (keys %is_new)
{
	push @problems, "MM_NEW_IN_VERSION names $new, which is not in $src_dir" unless $src_text{$new};
}

# The upgrade directory: hand-written files and the manifest.
my @parts = sort grep { /\.(sql|txt)$/ } glob("$upgrade_dir/*");
my @manifests = grep { /\.txt$/ } @parts;
push @problems, "$upgrade_dir: one manifest (NN_routines.txt) expected, found " . scalar(@manifests)
  unless @manifests == 1;
my (%listed, @drops);    # sig -> 'replace' | 'recreate'; signatures to drop, in order
for my $manifest (@manifests)
{
	(my $short = $manifest) =~ s{.*/}{};
	my $n = 0;
	for my $line (split /\n/, slurp($manifest))
	{
		$n++;
		$line =~ s/#.*//;
		next unless $line =~ /\S/;
		my $where = "$short:$n";
		my ($op, $rest) = $line =~ /^\s*(drop|recreate)\s+(.*)$/i ? (lc $1, $2) : ('replace', $line);
		my ($sig, $after) = routine_ref($rest);
		if (!$sig || $after =~ /\S/)
		{
			push @problems, "$where: cannot read a routine signature in \"$line\"";
			next;
		}
		if ($listed{$sig} || grep { $_ eq $sig } @drops)
		{
			push @problems, "$where: $sig is listed twice";
			next;
		}
		if ($op eq 'drop')
		{
			push @problems, "$where: $sig is defined in src/sql: \"recreate\" it, or drop the other signature"
			  if $routine{$sig};
			push @drops, $sig;
			next;
		}
		if (!$routine{$sig})
		{
			push @problems, "$where: $sig is not defined in $src_dir";
			next;
		}
		if ($is_new{ $routine{$sig}{file} })
		{
			push @problems, "$where: $sig is in $routine{$sig}{file}, which the upgrade includes whole (MM_NEW_IN_VERSION)";
			next;
		}
		$listed{$sig} = $op;
		push @drops, $sig if $op eq 'recreate';
	}
}

# A hand-written file never creates a routine: that would be a second
# definition to keep equal to src/sql's.
for my $part (grep { /\.sql$/ } @parts)
{
	(my $short = $part) =~ s{.*/}{};
	for my $st (statements(slurp($part)))
	{
		my ($what, $sigs) = routines_of($st->[1]);
		push @problems, "$short:$st->[0]: creates $sigs->[0]: list it in the manifest, its definition is src/sql's"
		  if $what && $what eq 'create';
	}
}

if (defined $previous)
{
	# Routines of the previous release as its script leaves them (the last
	# definition, the last comment), compared with src/sql's.
	my (%old, %old_acl, %src_acl);
	for my $st (map { @{ $src_stmts{$_} } } sort keys %src_stmts)
	{
		apply_acl(\%src_acl, $st->[1]);
	}
	for my $st (statements(slurp($previous)))
	{
		apply_acl(\%old_acl, $st->[1]);
		if (flat($st->[1]) =~ /^DROP (?:FUNCTION|PROCEDURE|AGGREGATE|ROUTINE) (?:IF EXISTS )?(.*)/is)
		{
			my ($sig) = routine_ref($1);
			delete @{$_}{$sig} for \%old, \%old_acl;
			next;
		}
		my ($what, $sigs) = routines_of($st->[1]);
		next unless $what;
		if ($what eq 'create') { $old{ $sigs->[0] }{create} = $st->[1]; }
		elsif (flat($st->[1]) =~ /^COMMENT/i) { $old{ $sigs->[0] }{comment} = $st->[1]; }
	}
	my %dropped = map { ($_ => 1) } @drops;
	my $same = sub { (my $a = flat($_[0])) =~ s/^CREATE OR REPLACE /CREATE /i; (my $b = flat($_[1])) =~ s/^CREATE OR REPLACE /CREATE /i; $a eq $b };
	for my $sig (sort keys %routine)
	{
		my $r = $routine{$sig};
		next if $is_new{ $r->{file} } || $listed{$sig};
		if (!$old{$sig})
		{
			push @problems, "$sig ($r->{file}) is new in this version: add it to the manifest";
			next;
		}
		my ($comment) = grep { flat($_) =~ /^COMMENT/i } @{ $r->{attached} };
		my $grants = sub { join(', ', sort keys %{ $_[0] // {} }) };
		push @problems, "$sig ($r->{file}) differs from the previous release's: add it to the manifest"
		  unless $same->($r->{create}, $old{$sig}{create})
		  && $same->($comment // '', $old{$sig}{comment} // '');
		push @problems, "$sig ($r->{file}): EXECUTE to " . $grants->($src_acl{$sig})
		  . ", in the previous release to " . $grants->($old_acl{$sig}) . ": add it to the manifest"
		  if $same->($r->{create}, $old{$sig}{create})
		  && $grants->($src_acl{$sig}) ne $grants->($old_acl{$sig});
	}
	# a routine replaced keeps its grants: those of the previous release that
	# src/sql's statements do not revoke would stay
	for my $sig (sort grep { $listed{$_} eq 'replace' && $old_acl{$_} } keys %listed)
	{
		my %after = ($sig => { %{ $old_acl{$sig} } });
		apply_acl(\%after, $_) for grep { flat($_) !~ /^COMMENT/i } @{ $routine{$sig}{attached} };
		my ($got, $want) = map { join(', ', sort keys %{ $_ // {} }) } $after{$sig}, $src_acl{$sig};
		push @problems, "$sig: replaced, EXECUTE would be to $got, src/sql grants $want: \"recreate\" it, or REVOKE in src/sql"
		  unless $got eq $want;
	}
	for my $sig (sort keys %old)
	{
		push @problems, "$sig of the previous release is not in src/sql: add \"drop $sig\" to the manifest"
		  unless $routine{$sig} || $dropped{$sig};
	}
	if (@problems)
	{
		print "build_upgrade: $_\n" for @problems;
		exit 1;
	}
	printf "build_upgrade: %s lists %d routines (%d dropped), the others equal the previous release's ... ok\n",
	  $upgrade_dir, scalar(keys %listed), scalar(grep { !$listed{$_} } @drops);
	exit 0;
}

if (@problems)
{
	print STDERR "build_upgrade: $_\n" for @problems;
	exit 1;
}

# The routines section, in place of the manifest.
sub routines_section
{
	my ($manifest) = @_;
	my $out = "-- Built from $manifest: the routines that change, as src/sql defines them\n"
	  . "-- (edit src/sql, not this script), with the files new in this version.\n";
	for my $sig (@drops)
	{
		my $kind = $routine{$sig} ? $routine{$sig}{kind} : 'ROUTINE';
		$out .= "DROP $kind $sig;\n";
	}
	for my $file (@src_files)
	{
		(my $base = $file) =~ s{.*/}{};
		if ($is_new{$base})
		{
			$out .= "\n$src_text{$base}";
			next;
		}
		my @keep;
		for my $st (@{ $src_stmts{$base} })
		{
			my ($what, $sigs) = routines_of($st->[1]);
			next unless $what && grep { $listed{$_} } @$sigs;
			my $s = $st->[1];
			$s =~ s/^CREATE\s+(FUNCTION|PROCEDURE|AGGREGATE)\b/CREATE OR REPLACE $1/i
			  if $what eq 'create' && $listed{ $sigs->[0] } eq 'replace';
			push @keep, "$s\n";
		}
		$out .= "\n-- src/sql/$base\n" . join('', @keep) if @keep;
	}
	return $out;
}

for my $part (@parts)
{
	(my $short = $part) =~ s{.*/}{};
	print "\n", ($part =~ /\.txt$/ ? routines_section("upgrade/" . ($upgrade_dir =~ s{.*/}{}r) . "/$short") : slurp($part));
}
exit 0;
