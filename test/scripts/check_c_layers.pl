#!/usr/bin/perl
# The map of src/*.c: which file calls a function another file defines.
# Fails on
#   - a circle: files that call each other, directly or around a loop of
#     files (a strongly connected component of more than one file);
#   - more than $MAX_UPWARD calls from a file to one above it in @LAYERS
#     (lowest first: a file may call the files listed before it);
#   - a src/*.c file missing from @LAYERS (or listed and missing);
#   - a C function longer than $MAX_LINES lines (signature to closing brace).
# No ctags: a definition is an identifier at column 0 followed by "(", whose
# parameter list is followed by "{"; a call is an identifier followed by "("
# inside a body.  Comments, strings and preprocessor lines are blanked first.
#   perl test/scripts/check_c_layers.pl          # check (the regress suite runs it)
#   perl test/scripts/check_c_layers.pl --map    # also print every file-to-file edge
#   perl test/scripts/check_c_layers.pl --lengths  # every function over 100 lines
use strict;
use warnings;

my $MAX_UPWARD = 3;
my $MAX_LINES = 200;

# Lowest first.  A file calls only files before it: the shared helpers and
# the pure cores (ratings, balancing, rules, config parsing, search) at the
# bottom, the SQL entry points and the tick above them, the module's
# _PG_init last.  Each hub's parts sit below the hub and call only what is
# below them; the shared state is in a header (match_search_internal.h,
# rules_internal.h, queue_config_internal.h) and its shared functions in the
# lowest file of the hub (match_search_pool.c, rules.c, queue_config_read.c).
my @LAYERS = qw(
  sql_arrays.c json_walk.c schema_version.c
  ratings_elo.c ratings_glicko2.c ratings_team.c ratings_smurf.c ratings_openskill.c
  team_balance.c team_balance_sql.c
  role_assignment.c
  rules.c rule_expansion.c
  rule_difference.c rule_comparison.c rule_latency.c rule_set_intersection.c
  rule_string_equality.c rule_blocklist.c rule_match_total.c rule_role_difference.c
  rule_team_difference.c rule_team_size_balance.c rule_team_ticket_size_similarity.c
  rule_compound.c rules_match.c
  queue_config_read.c queue_config_rule.c queue_config_compound.c queue_config_roles.c queue_config.c
  queue_config_json.c
  match_search_pool.c match_search_gather.c match_search_exhaustive.c
  match_search.c match_search_backfill.c
  player_sources.c ticket_parse.c
  event_signing.c events.c
  citus_guard.c queue_shards.c
  match_function.c
  queue_config_sql.c rules_sql.c tickets.c ticket_shards.c ticket_end.c ticket_assignment.c ticket_heartbeat.c match_lock.c fairness.c
  tick_shards.c tick_plans.c tick_bulk.c tick_expiry.c tick_load.c tick_write.c tick_backfill.c tick.c
  explain.c replay.c replay_ratings.c schedule_starter.c
  matchmaking.c
);

# Files excepted from the checks while they are reworked: none.
my %EXEMPT_FILE = ();

my %opt = map { $_ => 1 } @ARGV;
my $dir = 'src';
my @files = sort map { s{^\Q$dir\E/}{}r } glob("$dir/*.c");
my @problems;

my %layer;
for my $i (0 .. $#LAYERS)
{
	$layer{ $LAYERS[$i] } = $i;
}
for my $f (@files)
{
	push @problems, "$f: not listed in \@LAYERS of $0" unless exists $layer{$f};
}
my %present = map { $_ => 1 } @files;
for my $f (@LAYERS)
{
	# a name listed ahead of its file (fairness.c, being written elsewhere) is harmless
	next if $present{$f} || $f eq 'fairness.c';
	push @problems, "$f: listed in \@LAYERS of $0 but not in $dir/";
}

my %KEYWORD = map { $_ => 1 } qw(if for while switch return sizeof do else case
  defined offsetof __attribute__ __builtin_expect);

# C text with comments, strings, character literals and preprocessor lines
# blanked, newlines kept (so line numbers stay right).
sub blank
{
	my ($src) = @_;
	$src =~ s{(/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')}
	  { my $m = $1; my $n = ($m =~ tr/\n//); $m =~ m{^["']} ? '""' . ("\n" x $n) : ' ' . ("\n" x $n) }gse;
	# preprocessor lines, with their continuations
	$src =~ s{^([ \t]*#(?:[^\n]*\\\n)*[^\n]*)}{ "\n" x ($1 =~ tr/\n//) }gme;
	return $src;
}

my (%defs, %body, %static);    # name -> [files]; "file\0name" -> body; file\0name static
my @long;
for my $f (@files)
{
	open my $fh, '<', "$dir/$f" or die "$dir/$f: $!\n";
	my $src = blank(do { local $/; <$fh> });
	close $fh;
	# a definition: an identifier at column 0 (the line may start with the
	# return type), "(", balanced parameters, then "{"
	while ($src =~ /^((?:[A-Za-z_][\w \t\*]*?[\s\*])?)([A-Za-z_]\w*)[ \t]*\(/mg)
	{
		my ($prefix, $name) = ($1, $2);
		my $start = $-[0];
		my $pos = $+[0];
		next if $KEYWORD{$name};
		my $depth = 1;
		while ($depth > 0 && $pos < length $src)
		{
			my $c = substr($src, $pos++, 1);
			$depth++ if $c eq '(';
			$depth-- if $c eq ')';
		}
		my $rest = substr($src, $pos);
		next unless $rest =~ /^\s*\{/;
		my $open = $pos + $+[0] - 1;
		$depth = 0;
		my $end = $open;
		for (my $i = $open; $i < length $src; $i++)
		{
			my $c = substr($src, $i, 1);
			$depth++ if $c eq '{';
			if ($c eq '}' && --$depth == 0)
			{
				$end = $i;
				last;
			}
		}
		my $body = substr($src, $open, $end - $open + 1);
		# "static" may be on the line above the name (PostgreSQL style)
		my $before = substr($src, 0, $start);
		my ($prevline) = $before =~ /([^\n]*)\n?$/;
		my $is_static = ($prefix =~ /\bstatic\b/ || ($prevline // '') =~ /^\s*static\b/) ? 1 : 0;
		push @{ $defs{$name} }, $f;
		$body{"$f\0$name"} = $body;
		$static{"$f\0$name"} = $is_static;
		my $first = 1 + (substr($src, 0, $start) =~ tr/\n//);
		my $last = 1 + (substr($src, 0, $end) =~ tr/\n//);
		my $lines = $last - $first + 1;
		push @long, [ $f, $name, $lines, $first ] if $lines > ($opt{'--lengths'} ? 100 : $MAX_LINES);
		pos($src) = $end + 1;
	}
}

# edges: caller file -> callee file -> [calls]
my %edge;
for my $key (sort keys %body)
{
	my ($f, $fn) = split /\0/, $key;
	my %seen;
	# a member called through a pointer (h->extract(...)) is no call to a file
	while ($body{$key} =~ /(?<!->)(?<!\.)\b([A-Za-z_]\w*)\s*\(/g)
	{
		my $callee = $1;
		next if $KEYWORD{$callee} || $seen{$callee}++;
		next unless $defs{$callee};
		# a function of the caller's own file, or static elsewhere, is not a cross-file call
		next if grep { $_ eq $f } @{ $defs{$callee} };
		my @targets = grep { !$static{"$_\0$callee"} } @{ $defs{$callee} };
		next unless @targets == 1;
		push @{ $edge{$f}{ $targets[0] } }, "$fn -> $callee";
	}
}

if ($opt{'--map'})
{
	for my $from (sort keys %edge)
	{
		for my $to (sort keys %{ $edge{$from} })
		{
			printf "%s -> %s: %s\n", $from, $to, join(', ', @{ $edge{$from}{$to} });
		}
	}
}

# circles: Tarjan's strongly connected components
my ($index, @stack, %onstack, %idx, %low, @sccs) = (0);
my $strong;
$strong = sub {
	my ($v) = @_;
	$idx{$v} = $low{$v} = $index++;
	push @stack, $v;
	$onstack{$v} = 1;
	for my $w (sort keys %{ $edge{$v} || {} })
	{
		if (!exists $idx{$w})
		{
			$strong->($w);
			$low{$v} = $low{$w} if $low{$w} < $low{$v};
		}
		elsif ($onstack{$w})
		{
			$low{$v} = $idx{$w} if $idx{$w} < $low{$v};
		}
	}
	if ($low{$v} == $idx{$v})
	{
		my @c;
		my $w;
		do
		{
			$w = pop @stack;
			delete $onstack{$w};
			push @c, $w;
		} while ($w ne $v);
		push @sccs, [ sort @c ] if @c > 1;
	}
};
for my $f (@files)
{
	$strong->($f) unless exists $idx{$f};
}
for my $c (@sccs)
{
	next unless grep { !$EXEMPT_FILE{$_} } @$c;
	my @calls;
	for my $from (@$c)
	{
		for my $to (@$c)
		{
			push @calls, map { "$from: $_" } @{ $edge{$from}{$to} || [] };
		}
	}
	push @problems, "circle: " . join(' <-> ', @$c) . "\n\t" . join("\n\t", @calls);
}

# calls up the layering
my @upward;
for my $from (sort keys %edge)
{
	next if $EXEMPT_FILE{$from};
	for my $to (sort keys %{ $edge{$from} })
	{
		next unless exists $layer{$from} && exists $layer{$to};
		next unless $layer{$to} > $layer{$from};
		push @upward, map { "$from -> $to: $_" } @{ $edge{$from}{$to} };
	}
}
print "calls up the layering (", scalar(@upward), ", at most $MAX_UPWARD):\n\t",
  join("\n\t", @upward), "\n" if @upward;
push @problems, scalar(@upward) . " calls up the layering, at most $MAX_UPWARD" if @upward > $MAX_UPWARD;

for my $l (sort { $b->[2] <=> $a->[2] } @long)
{
	my ($f, $fn, $n, $line) = @$l;
	my $msg = "$dir/$f:$line: $fn is $n lines";
	if ($opt{'--lengths'} || $EXEMPT_FILE{$f})
	{
		print "$msg\n" if $opt{'--lengths'};
		next unless $n > $MAX_LINES && !$EXEMPT_FILE{$f};
	}
	push @problems, "$msg, at most $MAX_LINES";
}

if (@problems)
{
	print STDERR "check_c_layers: $_\n" for @problems;
	exit 1;
}
printf "check_c_layers: %d files, no circle, %d calls up the layering, no function over %d lines%s\n",
  scalar(@files), scalar(@upward), $MAX_LINES,
  %EXEMPT_FILE ? " (excepted for now: " . join(' ', sort keys %EXEMPT_FILE) . ")" : '';
exit 0;
