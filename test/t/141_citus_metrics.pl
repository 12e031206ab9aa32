# The analysts' metrics on Citus give one node's answers: a plain node and a
# Citus cluster (coordinator and two workers, mm.distribute(8)) get the same
# queues and tickets at explicit times, are ticked at the same explicit
# times (on Citus through the coordinator, which runs each tick on the
# queue's node), some matches are completed with results, leaves and
# cancellations, and then every metric of src/sql/80_metrics.sql and
# docs/metrics.md (and mm.rule_stats, mm.leaderboard) returns the same rows
# on the coordinator as on the plain node.  Ids differ between the two (a
# worker draws from its own range): rows are compared without them, a match
# is known by its queue and its smallest player.
#
# The completed part is written to the tables directly, the same on both:
# mm.complete_match and mm.report_result take a match id only, which Citus
# cannot route yet, and a result row's trigger looks its match up by id
# (a query of all shards, refused on a shard unless
# citus.allow_nested_distributed_execution is on, as it is here for those
# rows only).  Ticket cancellations and timeouts are left out: on Citus
# mm.cancel_ticket does not cancel and the tick's timeout (mm.end_tickets)
# fails there.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmTest;
use MmCitus;

mm_citus_require();

my $plain = mm_new_node('metrics_plain');
my ($coord, @workers) = mm_citus_cluster(workers => 2, name => 'metrics');
$coord->safe_psql('postgres', 'CREATE EXTENSION matchmaking');
is($coord->safe_psql('postgres', 'SELECT mm.distribute(8)'), 't', 'mm.distribute(8)');

my @queues = qw(duel squad ffa);
my %deployment = (plain => $plain, citus => $coord);

sub both
{
	my ($sql) = @_;
	$_->safe_psql('postgres', $sql) for ($plain, $coord);
	return;
}

# --- the same queues and tickets on both ---
both(
	q{
SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2},
  "teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
  "statistics": {"show_player_count": true, "show_time_to_match": true},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 60,
             "expansion": {"every_seconds": 120, "steps": [200]}},
            {"name": "ping", "type": "latency", "max_ms": 80}]}');
SELECT mm.create_queue('squad', '{"match_size": {"min": 4, "max": 4},
  "teams": [{"name": "red", "min": 2, "max": 2}, {"name": "blue", "min": 2, "max": 2}],
  "statistics": {"show_player_count": true},
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 150}]}');
SELECT mm.create_queue('ffa', '{"match_size": {"min": 3, "max": 4},
  "statistics": {"show_time_to_match": true}}');
});
my %node_of = map {
	my $q = $_;
	($q => $coord->safe_psql('postgres', "SELECT node_port FROM mm.queue_node('$q')"))
} @queues;
my %ports = map { $_ => 1 } values %node_of;
is(scalar(keys %ports), 2, 'the queues are on both workers') or diag explain \%node_of;

# tickets arrive every 7 s from 11:00; a squad ticket i % 3 = 0 is a party of
# two; skills and latencies vary so that some wait, some never match
both(
	q{
SELECT mm.create_ticket(q,
	   (SELECT jsonb_agg(jsonb_build_object('id', q || '_' || i || '_' || k,
			   'attributes', jsonb_build_object('skill', 1000 + (i * 37 + k * 11) % 300),
			   'latencies', jsonb_build_object('eu', 10 + (i * 13 + k) % 90, 'us', 20 + (i * 29) % 90)))
		  FROM generate_series(1, CASE WHEN q = 'squad' AND i % 3 = 0 THEN 2 ELSE 1 END) k),
	   timestamptz '2041-06-15 11:00:00+00' + i * interval '7 s')
  FROM unnest(ARRAY['duel', 'squad', 'ffa']) q, generate_series(1, 60) i
 ORDER BY i, q;
});
is( $coord->safe_psql('postgres', 'SELECT count(*) FROM mm.tickets'),
	$plain->safe_psql('postgres', 'SELECT count(*) FROM mm.tickets'),
	'the same tickets on both');

# ticked at the same times: every 45 s from 11:01, and late ticks that widen
# the duel's skill rule
for my $t ((map { sprintf('11:%02d:%02d', int((60 + 45 * $_) / 60), (60 + 45 * $_) % 60) } 0 .. 9), '11:20:00',
	'11:40:00')
{
	for my $q (@queues)
	{
		my $n = $plain->safe_psql('postgres', "SELECT mm.tick('$q', '2041-06-15 $t+00')");
		is($coord->safe_psql('postgres', "SELECT mm.tick('$q', '2041-06-15 $t+00')"),
			$n, "tick $q at $t: $n matches on both");
	}
}

# a match is known by its queue and smallest player
sub matches_of
{
	my ($node) = @_;
	my %m;
	for my $row (split /\n/,
		$node->safe_psql(
			'postgres', q{
		SELECT m.queue || ':' || min(mp.player_id), m.id, m.created_at AT TIME ZONE 'UTC'
		  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id AND mp.queue = m.queue
		 GROUP BY m.id, m.queue, m.created_at}))
	{
		my ($key, $id, $at) = split /\|/, $row;
		$m{$key} = { id => $id, at => $at, queue => (split /:/, $key)[0] };
	}
	return \%m;
}
my %matches = map { $_ => matches_of($deployment{$_}) } keys %deployment;
is_deeply([ sort keys %{ $matches{citus} } ], [ sort keys %{ $matches{plain} } ],
	'the same matches on both (by queue and smallest player)');
cmp_ok(scalar(keys %{ $matches{plain} }), '>=', 20, 'enough matches to measure');

# --- completed with results, leaves, cancelled matches: the same rows on both ---
my @keys = sort grep { !/^ffa:/ } keys %{ $matches{plain} };
my @reasons = qw(rejected acceptance_timeout allocation_failed expired);
for my $name (sort keys %deployment)
{
	my $node = $deployment{$name};
	my ($ddl, @results) = ('');
	for my $j (0 .. $#keys)
	{
		my $m = $matches{$name}{ $keys[$j] };
		my ($id, $q, $at) = ($m->{id}, $m->{queue}, "timestamptz '$m->{at}+00'");
		if ($j % 3 == 0)
		{
			$ddl .= "UPDATE mm.matches SET status = 'completed', updated_at = $at + interval '25 min'"
			  . " WHERE id = $id AND queue = '$q';\n";
			# a coin flip every fifth, a draw (ranks only) every seventh
			my $p = $j % 5 == 0 ? 0.5 : 0.5 + ($j % 4) * 0.1;
			my $winner = $j % 7 == 0 ? 'NULL' : ($j % 2 ? q{'red'} : q{'blue'});
			push @results,
			  { node => $node, queue => $q,
				sql => "INSERT INTO mm.match_results (match_id, queue, winner_team, ranks,"
				  . " predicted_favourite, favourite_win_probability, duration, reported_at)"
				  . " VALUES ($id, '$q', $winner, '{\"red\": 1, \"blue\": 2}', 'red', $p,"
				  . " interval '" . (10 + $j) . " min', $at + interval '25 min');" };
			# the smallest player leaves early every other result, late otherwise
			$ddl .= "UPDATE mm.match_players SET left_at = $at + interval '"
			  . ($j % 2 ? '1 min' : '20 min')
			  . "' WHERE match_id = $id AND queue = '$q' AND player_id = '"
			  . (split /:/, $keys[$j], 2)[1] . "';\n"
			  if $j % 6 == 0 || $j % 6 == 3;
		}
		elsif ($j % 3 == 1)
		{
			$ddl .= "UPDATE mm.matches SET status = 'cancelled', cancel_reason = '"
			  . $reasons[ $j % 4 ]
			  . "', updated_at = $at + interval '2 min' WHERE id = $id AND queue = '$q';\n";
		}
	}
	$node->safe_psql('postgres', $ddl);
	for my $r (@results)
	{
		if ($name eq 'plain')
		{
			$node->safe_psql('postgres', $r->{sql});
			next;
		}
		# on the worker of the queue: the result's trigger reads the match
		my $w = mm_citus_node_at($node_of{ $r->{queue} });
		$w->safe_psql('postgres',
			"SET citus.allow_nested_distributed_execution = on;\n$r->{sql}");
	}
	$node->safe_psql(
		'postgres', q{
		INSERT INTO mm.ratings (player_id, pool, rating, rd, mu, sigma, games, wins, updated_at)
		SELECT 'p' || i, CASE WHEN i % 2 = 0 THEN 'ranked' ELSE 'casual' END,
			   CASE WHEN i % 3 <> 0 THEN 1400 + (i * 53) % 300 END,
			   CASE WHEN i % 3 = 1 THEN 50 + i END,
			   CASE WHEN i % 3 = 0 THEN 25 + i % 7 END, CASE WHEN i % 3 = 0 THEN 8.0 - i % 5 END,
			   i, i / 2, timestamptz '2041-06-15 12:00:00+00'
		  FROM generate_series(1, 30) i});
}

# --- every metric: the same rows on both ---
my $noon = q{'2041-06-15 12:00:00+00'};
my $mid = q{'2041-06-15 11:03:30+00'};
my @checks;
for my $now ($noon, $mid)
{
	for my $w (q{'10 minutes'}, q{'1 hour'}, q{'1 day'})
	{
		push @checks, "SELECT * FROM mm.queue_stats($w, $now)",
		  "SELECT * FROM mm.match_stats($w, $now)";
		for my $q ('NULL', map { "'$_'" } @queues)
		{
			push @checks, "SELECT * FROM mm.ticket_metrics($q, $w, $now)",
			  "SELECT * FROM mm.match_metrics($q, $w, $now)",
			  "SELECT queue_name, created_at, region, players, teams, quality, skill_spread,"
			  . " team_skill_gap, latency_avg_ms, worst_latency_ms FROM mm.match_details($q, $w, $now)",
			  "SELECT * FROM mm.health_report($q, $w, $now)",
			  "SELECT * FROM mm.ticket_figures($q, $w, $now)",
			  "SELECT * FROM mm.match_figures($q, $w, $now)";
		}
		push @checks,
		  "SELECT queue_name, created_at, region, players, teams, quality, skill_spread, team_skill_gap,"
		  . " latency_avg_ms, worst_latency_ms"
		  . " FROM mm.match_details_figures(ARRAY['duel', 'squad', 'ffa'], $w, $now, 'skill')";
	}
	for my $q (@queues)
	{
		push @checks, "SELECT * FROM mm.queue_statistics('$q', $now)",
		  "SELECT * FROM mm.tickets_searching_at(ARRAY['$q'], $now)";
	}
	push @checks, "SELECT * FROM mm.tickets_searching_at(ARRAY['duel', 'squad', 'ffa'], $now)";
}
for my $q (@queues)
{
	push @checks,
	  "SELECT * FROM mm.queue_stats_by_minute('$q', '2041-06-15 10:58:00+00', '2041-06-15 12:30:00+00')",
	  "SELECT * FROM mm.queue_stats_by_minute('$q', '2041-06-15 11:02:10+00', '2041-06-15 11:09:50+00')";
}
# other skill attributes, and the views (the real clock: the data is in 2041)
push @checks,
  "SELECT queue_name, created_at, players, skill_spread, team_skill_gap FROM mm.match_details(NULL, '1 day', $noon, 'rank')",
  'SELECT * FROM mm.queue_stats', 'SELECT * FROM mm.match_stats',
  'SELECT queue, rule, type, last_tick_at, last_passed, last_failed, last_pass_rate, total_passed,'
  . ' total_failed, counting_since FROM mm.rule_stats',
  'SELECT * FROM mm.leaderboard';

for my $sql (@checks)
{
	my %out;
	for my $name (keys %deployment)
	{
		my ($ret, $stdout, $stderr) =
		  $deployment{$name}->psql('postgres', "SET timezone = 'UTC'; $sql", on_error_stop => 1);
		# an error never equals the other side's
		$out{$name} = $ret == 0 ? join("\n", sort split /\n/, $stdout) : "ERROR on $name: $stderr";
	}
	is($out{citus}, $out{plain}, "same rows: $sql");
}

# a match's players, by match
my $same = 1;
for my $key (sort keys %{ $matches{plain} })
{
	my %out = map {
		my $id = $matches{$_}{$key}{id};
		(   $_ => join("\n",
				sort split /\n/,
				$deployment{$_}->safe_psql('postgres', "SELECT * FROM mm.match_player_values($id, 'eu', 'skill')"))
		  )
	} keys %deployment;
	next if $out{citus} eq $out{plain};
	$same = 0;
	diag "match_player_values of $key: citus\n$out{citus}\nplain\n$out{plain}";
}
ok($same, 'mm.match_player_values: the same players of every match');

# the figures are not vacuous
my $m = $plain->safe_psql('postgres',
	"SELECT results, coin_flip_results, leaves, early_quits, proposals_rejected, proposals_expired,"
	  . " matches_requeued, matches_expired FROM mm.match_metrics(NULL, '1 day', $noon)");
ok(!grep({ $_ == 0 } split /\|/, $m), "every outcome figure is measured: $m");
my $t = $plain->safe_psql('postgres',
	"SELECT searching_tickets, tickets_matched FROM mm.ticket_metrics(NULL, '1 day', $noon)");
ok(!grep({ $_ == 0 } split /\|/, $t), "tickets searching and matched: $t");

# past five calls a session may plan a function's query once for all
# (a generic plan): the answers stay the same on Citus
for my $sql ("SELECT * FROM mm.ticket_metrics(NULL, '1 hour', $noon)",
	"SELECT * FROM mm.ticket_metrics('duel', '1 hour', $noon)",
	"SELECT * FROM mm.match_metrics(NULL, '1 day', $noon)",
	"SELECT * FROM mm.match_metrics('squad', '1 day', $noon)",
	"SELECT * FROM mm.queue_statistics('duel', $noon)",
	"SELECT * FROM mm.queue_stats_by_minute('duel', '2041-06-15 10:58:00+00', '2041-06-15 11:30:00+00')")
{
	my $once = $plain->safe_psql('postgres', "SET timezone = 'UTC'; $sql");
	my $eight = $coord->safe_psql('postgres', "SET timezone = 'UTC';\n" . join(";\n", ($sql) x 8));
	my @runs = split /\n/, $eight;
	my $per = scalar(split /\n/, $once) || 1;
	my %distinct;
	$distinct{ join "\n", @runs[ $_ * $per .. $_ * $per + $per - 1 ] } = 1 for 0 .. 7;
	is_deeply([ keys %distinct ], [$once], "eight calls in one session: $sql");
}

$_->stop for ($plain, reverse($coord, @workers));
done_testing();
