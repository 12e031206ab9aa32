#!/usr/bin/perl
# Checks that every statement the tick prepares (src/tick_plans.c) filters on
# its queue: each reference to a table of a queue (the tables sharded by
# queue on Citus, docs/scale-out.md) must come with a condition on that
# reference's queue column, so that no statement can reach another queue's
# rows, on one node or on a shard.  Inserts write the queue they are given
# and are not searched.  Prints each offending statement; exits 1 when there
# is one.
#   perl test/scripts/check_tick_statements.pl [src/tick_plans.c]
use strict;
use warnings;

my $file = $ARGV[0] // 'src/tick_plans.c';
open my $fh, '<', $file or die "$file: $!\n";
my $src = do { local $/; <$fh> };
close $fh;
$src =~ s{/\*.*?\*/}{ }gs;    # comments between the literals

my @queue_tables = qw(tickets tickets_active tickets_ended ticket_queues matches
  match_players match_results backfill_requests rule_evaluations pending_claims pending_releases);
my $tables = join '|', @queue_tables;
my ($count, @problems) = (0);

while ($src =~ /KeepPlan(?:With)?\(&MmTickPlan\.(\w+),\s*((?:"(?:[^"\\]|\\.)*"\s*)+)/g)
{
	my ($name, $literals) = ($1, $2);
	my $sql = join '', $literals =~ /"((?:[^"\\]|\\.)*)"/g;
	$count++;
	# every reference: "mm.<table> [AS] [alias]", not the target of an INSERT
	while ($sql =~ /(INSERT\s+INTO\s+)?mm\.($tables)\b(?!_)(?:\s+(?:AS\s+)?(?!WHERE|USING|ON|SET|JOIN|WHERE|GROUP|ORDER|FOR|RETURNING|CROSS)([a-z]\w*))?/gi)
	{
		my ($insert, $table, $alias) = ($1, $2, $3);
		next if $insert;
		my $col = defined $alias ? qr/\b\Q$alias\E\.queue/ : qr/(?<![.\w])queue/;
		next if $sql =~ /$col\s+OPERATOR\(pg_catalog\.=\)/;
		push @problems, sprintf("%s: mm.%s%s has no condition on its queue", $name, $table,
			defined $alias ? " ($alias)" : '');
	}
}
die "no KeepPlan statements found in $file\n" unless $count;
print "$_\n" for @problems;
printf "%d statements of the tick checked: %s\n", $count,
  @problems ? scalar(@problems) . ' without a queue filter' : 'each filters on its queue';
exit(@problems ? 1 : 0);
