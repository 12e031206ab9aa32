# Ranked play and penalties on a real Citus cluster (MmCitus.pm): a
# coordinator and two workers after mm.distribute(8), and one plain node
# that runs the same statements (every figure is compared with it).  A 1v1
# Glicko-2 queue with acceptance and penalties, its pool configured with a
# seed, placements, tiers and demotion protection; imported ratings
# (mm.set_ratings); dodges recorded by mm.accept_match on the queue's
# worker, the cooldown refusing a ticket (55000 on one node; on Citus the
# queue's tick cancels it, cooling_down) until it ends, mm.get_penalties;
# the tick's low-priority pool
# (penalised players meet each other first, anyone from the bound on, and
# mm.match_players.low_priority); results reported on Citus (seeded first
# ratings, tiers stored, good games counted); a leave; two season starts
# (the first keeps the imported and seeded ratings; the second closes the
# archive and resets softly, with its history rows; mm.season_leaderboard);
# mm.penalty_stats and mm.low_priority_waits on the coordinator; a cancel
# of a proposed ticket, by (queue, id) and by id, recorded as a dodge.  The
# players are chosen so that every match has players on both workers.
# Skipped without Citus.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmCitus;
use MmTest;

mm_citus_require();

my ($coord, @workers) = mm_citus_cluster(workers => 2);
$coord->safe_psql('postgres', 'CREATE EXTENSION matchmaking');
is($coord->safe_psql('postgres', 'SELECT mm.distribute(8)'), 't', 'mm.distribute(8)');
my $single = mm_new_node('single');
my @nodes = ($coord, $single);

sub q1 { return $coord->safe_psql('postgres', $_[0]); }

# --- players on both workers (by the shard of mm.player_penalties) ---
my %by_worker;
for my $i (1 .. 60)
{
	my $name = sprintf('rp%02d', $i);
	# (pg_dist_shard_placement: citus_shards does not list the mm tables here)
	my $port = q1("SELECT nodeport FROM pg_dist_shard_placement
		WHERE shardid = get_shard_id_for_distribution_column('mm.player_penalties', '$name')");
	push @{ $by_worker{ mm_citus_node_at($port)->name } }, $name;
}
my @wnames = sort keys %by_worker;
is(scalar @wnames, 2, 'player names on both workers');
my ($wa, $wb) = @by_worker{@wnames};
# d*: the dodgers, s*: imported ratings; d1/d2, d3/s1 and s2/s3 (the pairs
# that play) are on different workers
my %P = (d1 => $wa->[0], d2 => $wb->[0], d3 => $wa->[1], s1 => $wb->[1], s2 => $wa->[2], s3 => $wb->[2]);
my %skill = (d1 => 1810, d2 => 1620, d3 => 1480);
note(join ', ', map { "$_=$P{$_}" } sort keys %P);

# A statement for one node: {p:d1} is the player's name, {m:d1} the
# player's latest match in rq, {t:d1} the player's active ticket, {team:d1}
# the player's team in that match (ids differ between the nodes).
sub for_node
{
	my ($node, $sql) = @_;
	$sql =~ s/\{p:(\w+)\}/$P{$1}/g;
	$sql =~ s/\{m:(\w+)\}/match_of($node, $1)/ge;
	# (on Citus a ticket the tick has not claimed yet is found by its players)
	$sql =~ s/\{t:(\w+)\}/$node->safe_psql('postgres',
		"SELECT coalesce((SELECT ticket_id FROM mm.active_players WHERE player_id = '$P{$1}'),
		   (SELECT id FROM mm.tickets_active WHERE queue = 'rq' AND players \@> '[{\"id\": \"$P{$1}\"}]'))")/ge;
	$sql =~ s/\{team:(\w+)\}/$node->safe_psql('postgres',
		"SELECT team FROM mm.match_players WHERE queue = 'rq' AND player_id = '$P{$1}'
		  AND match_id = " . match_of($node, $1))/ge;
	return $sql;
}

sub match_of
{
	my ($node, $who) = @_;
	return $node->safe_psql('postgres',
		"SELECT max(match_id) FROM mm.match_players WHERE queue = 'rq' AND player_id = '$P{$who}'");
}

# Runs a statement on both nodes; the coordinator's output, checked to be
# the single node's.
sub both
{
	my ($sql, $name) = @_;
	my @out;
	for my $node (@nodes)
	{
		my $text = for_node($node, $sql);
		my ($rc, $out, $err) = $node->psql('postgres', $text);
		if ($rc != 0)
		{
			$err =~ s/\n.*//s;
			$out = "FAILED: $err";
			diag $node->name . ": $text\n$out";
		}
		push @out, $out;
	}
	is($out[0], $out[1], "$name: as on one node") if defined $name;
	return $out[0];
}

# The error of a statement on both nodes (verbose: with its SQLSTATE).
sub both_error
{
	my ($sql) = @_;
	my @err;
	for my $node (@nodes)
	{
		my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n" . for_node($node, $sql));
		push @err, $err;
	}
	return @err;
}

# Player names back to roles in an output, for readable expectations.
my %role_of = reverse %P;
sub roles
{
	my ($s) = @_;
	$s =~ s/\b(rp\d\d)\b/$role_of{$1} \/\/ $1/ge;
	return $s;
}

# --- 1. the queue and the pool ---
both(q{SELECT mm.create_queue('rq', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"acceptance_timeout_seconds": 10, "rating": {"system": "glicko2", "pool": "ranked"},
	"penalties": {"cooldown_seconds": {"dodge": 60, "leave": 300},
	              "low_priority": {"offences": 1, "games": 1, "max_wait_seconds": 30}}}')});
my $settings = q({"seed": {"attribute": "skill", "rd": 200},
	"placement": {"games": 1, "rd": 80},
	"tiers": [{"name": "Bronze", "min": 0, "divisions": 4}, {"name": "Silver", "min": 1400, "divisions": 4},
	          {"name": "Gold", "min": 1600, "divisions": 4}, {"name": "Platinum", "min": 1800, "divisions": 4},
	          {"name": "Master", "min": 2000}],
	"demotion": {"margin": 25, "games": 3},
	"season_reset": {"share": 0.5, "rd": 250}});
both("SELECT mm.configure_rating_pool('ranked', '$settings', '2026-05-01 09:00:00+00') IS NOT NULL",
	'configure_rating_pool');
is(q1(q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid IN ('mm.rating_pools'::regclass, 'mm.seasons'::regclass)
		 AND partmethod = 'n'}), '2', 'rating_pools and seasons are reference tables');
is(q1(q{SELECT column_to_column_name(logicalrelid, partkey) FROM pg_dist_partition
		 WHERE logicalrelid = 'mm.season_ratings'::regclass}), 'player_id', 'season_ratings is sharded by player');
is($_->safe_psql('postgres', q{SELECT settings #>> '{placement,games}' FROM mm.rating_pools WHERE pool = 'ranked'}),
	'1', 'the settings are on ' . $_->name) for @workers;

# --- 2. imports, dodges, the cooldown, the low-priority pool ---
is( both(q{SELECT mm.set_ratings('ranked', ARRAY['{p:s1}', '{p:s2}', '{p:s3}'], ARRAY[1560, 1720, 2050]::float8[],
		 ARRAY[60, 70, 75]::float8[], NULL, '2026-05-01 09:30:00+00')}, 'set_ratings'),
	'3', 'set_ratings imports three players');
is( roles(both(q{SELECT player_id, rating, rd, placement_games_left, tier, division, tier_progress
		 FROM mm.ratings WHERE pool = 'ranked' ORDER BY rating}, 'imported ratings')),
	"s1|1560|60|0|Silver|1|0.2\ns2|1720|70|0|Gold|2|0.4\ns3|2050|75|0|Master|1|",
	'imported: placed (RD under placement.rd) with their tiers');
is(both(q{SELECT count(*) FROM mm.rating_history WHERE pool = 'ranked' AND reason = 'import'}), '3',
	'one import row each');

# three dodges: d_i rejects a match with s_i; s_i's ticket is then cancelled
for my $i (1 .. 3)
{
	my $at = sprintf('2026-05-01 10:00:%02d+00', ($i - 1) * 10);
	my $sk = $skill{"d$i"};
	both("SELECT mm.create_ticket('rq', '[{\"id\": \"{p:s$i}\"}]', '$at')");
	both("SELECT mm.create_ticket('rq', '[{\"id\": \"{p:d$i}\", \"attributes\": {\"skill\": $sk}}]',
		'$at'::timestamptz + interval '1 second')");
	is(both("SELECT mm.tick('rq', '$at'::timestamptz + interval '2 seconds')"), '1', "pair $i proposed");
	is(both("SELECT mm.accept_match('rq', {m:d$i}, '{p:d$i}', false, '$at'::timestamptz + interval '3 seconds')"),
		'cancelled', "d$i dodges");
	is(both("SELECT status FROM mm.tickets WHERE queue = 'rq' AND id = {t:s$i}"), 'searching',
		"s$i searches again");
	both("SELECT mm.cancel_ticket('rq', {t:s$i})");
}
is( roles(both(q{SELECT player_id, offences, cooldown_until, low_priority_games, good_games
		 FROM mm.player_penalties ORDER BY cooldown_until}, 'the dodges recorded')),
	"d1|1|2026-05-01 10:01:03+00|1|0\nd2|1|2026-05-01 10:01:13+00|1|0\nd3|1|2026-05-01 10:01:23+00|1|0",
	'each dodge: a cooldown of 60 s and one low-priority game');
is( roles(both(q{SELECT player_id, reason, offences, cooldown_until, low_priority_games FROM mm.penalty_history
		 WHERE player_id = '{p:d1}'}, 'penalty_history')),
	'd1|dodge|1|2026-05-01 10:01:03+00|1', 'the history row of the dodge');
# during the cooldown: refused with 55000 on one node; on Citus the ticket
# is written on the queue's node and its tick, which reads the cooldown,
# cancels it (cooling_down)
my ($cool_citus, $cool_single) = both_error(q{SELECT mm.create_ticket('rq', '[{"id": "{p:d1}"}]', '2026-05-01 10:00:30+00')});
like(roles($cool_single), qr/ERROR:  55000: player "d1" may not queue in "rq" until 2026-05-01 10:01:03\+00/,
	'a ticket during the cooldown is refused with 55000 on one node');
is($cool_citus, '', 'on Citus it is written');
both(q{SELECT mm.tick('rq', '2026-05-01 10:00:31+00')}, 'a tick during the cooldown');
is(q1(qq{SELECT status || ':' || cancel_reason FROM mm.tickets WHERE queue = 'rq' AND players @> '[{"id": "$P{d1}"}]'
	AND created_at = '2026-05-01 10:00:30+00'}), 'cancelled:cooling_down', 'and its tick cancels it (cooling_down)');
is(both(q{SELECT count(*) FROM mm.active_players WHERE player_id = '{p:d1}'}), '0',
	'the refused ticket claims nothing');
is( both(q{SELECT queue, offences, cooldown_until, cooling_down, low_priority_games, good_games,
		 jsonb_path_query_array(recent, '$[*].reason') FROM mm.get_penalties('{p:d1}', '2026-05-01 10:00:30+00')},
		'get_penalties'),
	'rq|1|2026-05-01 10:01:03+00|t|1|0|["dodge"]', 'get_penalties shows the dodge');

# after the cooldown: d1 and d2 (penalised) meet each other, not s1, older
both(q{SELECT mm.create_ticket('rq', '[{"id": "{p:s1}"}]', '2026-05-01 10:01:29+00')});
ok(both(q{SELECT mm.create_ticket('rq', '[{"id": "{p:d1}", "attributes": {"skill": 1810}}]', '2026-05-01 10:01:30+00')}) > 0,
	'a ticket after the cooldown is accepted');
both(q{SELECT mm.create_ticket('rq', '[{"id": "{p:d2}", "attributes": {"skill": 1620}}]', '2026-05-01 10:01:31+00')});
is(both(q{SELECT mm.tick('rq', '2026-05-01 10:01:32+00')}, 'the low-priority tick'), '1', 'one match');
is( roles(both(q{SELECT string_agg(player_id || ':' || low_priority, ',' ORDER BY player_id)
		 FROM mm.match_players WHERE queue = 'rq' AND match_id = {m:d1}})),
	join(',', sort("$P{d1}:true", "$P{d2}:true")) =~ s/\b(rp\d\d)\b/$role_of{$1}/gr,
	'the penalised players meet each other (low_priority set)');
is(both(q{SELECT status FROM mm.tickets WHERE queue = 'rq' AND id = {t:s1}}), 'searching', 's1 still searches');
both("SELECT mm.accept_match('rq', {m:d1}, '$_', true, '2026-05-01 10:01:33+00')") for @P{qw(d1 d2)};
# d3 alone in the pool: matched with s1 only from the bound (30 s) on
both(q{SELECT mm.create_ticket('rq', '[{"id": "{p:d3}", "attributes": {"skill": 1480}}]', '2026-05-01 10:01:40+00')});
is(both(q{SELECT mm.tick('rq', '2026-05-01 10:02:09+00')}), '0', 'd3 is held apart before its bound');
is(both(q{SELECT mm.tick('rq', '2026-05-01 10:02:10+00')}), '1', 'and matched with anyone at the bound');
is( roles(both(q{SELECT string_agg(player_id || ':' || low_priority, ',' ORDER BY player_id)
		 FROM mm.match_players WHERE queue = 'rq' AND match_id = {m:d3}}, 'low_priority flags')),
	join(',', map { "$role_of{$_->[0]}:$_->[1]" } sort { $a->[0] cmp $b->[0] } ([ $P{d3}, 'true' ], [ $P{s1}, 'false' ])),
	'match_players.low_priority marks d3 only');
# the tick on the queue's worker keeps the match's prediction (docs/fairness.md)
is(both(q{SELECT count(*) || ':' || round(sum(win_probability)::numeric, 9) FROM mm.match_predictions
		 WHERE queue = 'rq' AND match_id = {m:d3}}, 'match_predictions'),
	'2:1.000000000', 'a match formed on Citus keeps one prediction per team, as on one node');
both("SELECT mm.accept_match('rq', {m:d3}, '$_', true, '2026-05-01 10:02:11+00')") for @P{qw(d3 s1)};

# --- 3. results reported on Citus ---
is( both(q{SELECT count(*), count(*) FILTER (WHERE rank = 1) FROM mm.report_result('rq', {m:d1},
		 jsonb_build_object('{team:d1}', 1, '{team:d2}', 2), '2026-05-01 10:20:00+00')}, 'report_result d1 v d2'),
	'2|1', 'report_result on Citus rates both');
both(q{SELECT count(*) FROM mm.report_result('rq', {m:d3}, jsonb_build_object('{team:s1}', 1, '{team:d3}', 2),
	'2026-05-01 10:20:00+00')}, 'report_result s1 v d3');
is( roles(both(q{SELECT player_id, rating_before, rd_before, rating_after, rd_after FROM mm.rating_history
		 WHERE pool = 'ranked' AND reason = 'seed' ORDER BY rating_after DESC}, 'seed rows')),
	"d1|||1810|200\nd2|||1620|200\nd3|||1480|200",
	'the first ratings seeded from the tickets (reason seed)')
  or diag roles(q1(q{SELECT * FROM mm.rating_history WHERE pool = 'ranked' AND reason = 'seed'}));
is(both(q{SELECT count(*) FROM mm.rating_history WHERE pool = 'ranked' AND reason = 'match'}), '4',
	'one match row per player');
is( both(q{SELECT player_id, games, wins, season_games, placement_games_left, tier, division,
		 round(tier_progress::numeric, 6), round(rating::numeric, 6), round(rd::numeric, 6)
		 FROM mm.ratings WHERE pool = 'ranked' ORDER BY player_id}, 'ratings after the results') ne '', 1,
	'ratings');
is(both(q{SELECT count(*) FROM mm.ratings WHERE pool = 'ranked' AND (tier IS NULL OR division IS NULL)}), '0',
	'every player placed, tier and division stored');
is( roles(both(q{SELECT player_id, offences, low_priority_games, good_games FROM mm.player_penalties ORDER BY player_id},
		'good games')),
	join("\n", map { "$role_of{$_}|1|0|1" } sort @P{qw(d1 d2 d3)}),
	'good games counted: the low-priority games worked off');
is( both(q{SELECT pool, season, games, provisional, placement_games_left, tier IS NOT NULL
		 FROM mm.get_player_ratings('{p:d1}')}, 'get_player_ratings'),
	'ranked||1|f|0|t', 'get_player_ratings');
both(q{SELECT * FROM mm.placement_progress ORDER BY pool}, 'placement_progress');
both(q{SELECT pool, tier, division, players, round(share::numeric, 6) FROM mm.tier_distribution
	 ORDER BY pool, tier, division}, 'tier_distribution');

# --- 4. seasons, with a game and a leave in the first ---
my $before = both(q{SELECT string_agg(player_id || '=' || rating || '/' || rd, ',' ORDER BY player_id)
	FROM mm.ratings WHERE pool = 'ranked'});
is(both(q{SELECT mm.start_season('ranked', 'S1', '2026-06-01 00:00:00+00')}, 'start_season S1'), '0',
	'S1 keeps the six ratings, each imported or seeded before it');
is(both(q{SELECT count(*) FROM mm.season_ratings}), '0', 'the first season closes nothing');
is( both(q{SELECT string_agg(player_id || '=' || rating || '/' || rd, ',' ORDER BY player_id)
		 FROM mm.ratings WHERE pool = 'ranked'}, 'S1 kept'),
	$before, 'the imported and seeded ratings are as they were');
is(both(q{SELECT count(*) FROM mm.rating_history WHERE pool = 'ranked' AND reason = 'season_reset'}), '0',
	'no season_reset rows');
is(both(q{SELECT season, season_started_at FROM mm.rating_pools WHERE pool = 'ranked'}),
	'S1|2026-06-01 00:00:00+00', 'S1 runs');

# s2 leaves a match with s3 in S1 (an offence), and the match is reported
both(q{SELECT mm.create_ticket('rq', '[{"id": "{p:s2}"}]', '2026-06-02 00:00:00+00')});
both(q{SELECT mm.create_ticket('rq', '[{"id": "{p:s3}"}]', '2026-06-02 00:00:01+00')});
is(both(q{SELECT mm.tick('rq', '2026-06-02 00:00:02+00')}), '1', 's2 v s3 proposed');
both("SELECT mm.accept_match('rq', {m:s2}, '$_', true, '2026-06-02 00:00:03+00')") for @P{qw(s2 s3)};
both(q{SELECT mm.leave_match('rq', {m:s2}, '{p:s2}', '2026-06-02 00:05:00+00')}, 'leave_match');
is( roles(both(q{SELECT player_id, reason, offences, cooldown_until, low_priority_games FROM mm.penalty_history
		 WHERE reason = 'leave'}, 'the leave')),
	's2|leave|1|2026-06-02 00:10:00+00|1', 'the leave is an offence: 300 s and a low-priority game');
my ($leave_citus, $leave_single) =
  both_error(q{SELECT mm.create_ticket('rq', '[{"id": "{p:s2}"}]', '2026-06-02 00:09:59+00')});
like(roles($leave_single), qr/ERROR:  55000: player "s2" may not queue in "rq"/, 'the leaver cools down');
both(q{SELECT mm.tick('rq', '2026-06-02 00:09:59.5+00')}, 'a tick during the leaver\'s cooldown');
is($leave_citus . q1(qq{SELECT status || ':' || cancel_reason FROM mm.tickets WHERE queue = 'rq'
	AND players @> '[{"id": "$P{s2}"}]' AND created_at = '2026-06-02 00:09:59+00'}), 'cancelled:cooling_down',
	'on Citus too (its ticket cancelled by the tick)');
both(q{SELECT count(*) FROM mm.report_result('rq', {m:s2}, jsonb_build_object('{team:s3}', 1, '{team:s2}', 2),
	'2026-06-02 00:30:00+00')}, 'report_result after a leave');
is( roles(both(q{SELECT player_id, offences, low_priority_games, good_games FROM mm.player_penalties
		 WHERE player_id IN ('{p:s2}', '{p:s3}')}, 'no good game for the leaver')),
	's2|1|1|0', 'the leaver gets no good game (s3 has no standing)');
is(both(q{SELECT string_agg(player_id || ':' || season_games, ',' ORDER BY player_id) FROM mm.ratings
	 WHERE pool = 'ranked' AND season_games > 0}) =~ s/\b(rp\d\d)\b/$role_of{$1}/gr,
	join(',', map { "$role_of{$_}:1" } sort @P{qw(s2 s3)}), 'season games in S1');

# rounded: the pool's mean in a season reset is a sum over the shards on
# Citus, in another order than on one node (the last bits differ)
my $standing = q{concat_ws('|', player_id, round(rating::numeric, 9), round(rd::numeric, 9), round(volatility::numeric, 9),
	games, wins, season_games, placement_games_left, tier, division, round(tier_progress::numeric, 9))};
my $s1_final = both("SELECT string_agg($standing, ',' ORDER BY player_id) FROM mm.ratings WHERE pool = 'ranked'");
is(both(q{SELECT mm.start_season('ranked', 'S2', '2026-09-01 00:00:00+00')}, 'start_season S2'), '6',
	'S2 resets six ratings');
is( both("SELECT string_agg($standing, ',' ORDER BY player_id)
		 FROM mm.season_ratings WHERE pool = 'ranked' AND season = 'S1' AND ended_at = '2026-09-01 00:00:00+00'",
		'the S1 archive'),
	$s1_final, 'mm.season_ratings keeps the final standing of S1');
is( both(q{SELECT string_agg(name || ':' || started_at || ':' || coalesce(ended_at::text, '-'), ',' ORDER BY started_at)
		 FROM mm.seasons WHERE pool = 'ranked'}),
	'S1:2026-06-01 00:00:00+00:2026-09-01 00:00:00+00,S2:2026-09-01 00:00:00+00:-', 'mm.seasons');
is( both(q{SELECT count(*) FILTER (WHERE h.rating_before = s.rating AND h.rd_before = s.rd)
		 FROM mm.rating_history h JOIN mm.season_ratings s ON s.player_id = h.player_id AND s.pool = h.pool
		 WHERE h.reason = 'season_reset' AND h.created_at = '2026-09-01 00:00:00+00' AND s.season = 'S1'},
		'S2 history'),
	'6', 'the S2 reset rows start from the S1 archive');
is( both(q{WITH h AS (SELECT h.*, avg(h.rating_before) OVER () AS mean FROM mm.rating_history h
		 WHERE h.pool = 'ranked' AND h.reason = 'season_reset')
		 SELECT count(*) FILTER (WHERE abs(h.rating_after - (h.mean + (h.rating_before - h.mean) * 0.5)) < 1e-9
								  AND h.rd_after = least(greatest(h.rd_before, 250), greatest(h.rd_before, 350))
								  AND abs(r.rating - h.rating_after) < 1e-9 AND r.rd = h.rd_after
								  AND h.created_at = '2026-09-01 00:00:00+00')
		   FROM h JOIN mm.ratings r ON r.player_id = h.player_id AND r.pool = h.pool}),
	'6', 'the reset values: halfway to the mean, RD at least 250, stored in mm.ratings');
is(both(q{SELECT count(*) FROM mm.ratings WHERE pool = 'ranked' AND season_games = 0 AND games_below = 0}), '6',
	'season games and the demotion count back to 0');
is( both(q{SELECT count(*), count(rank), min(rank), max(rank), bool_or(provisional)
		 FROM mm.season_leaderboard WHERE pool = 'ranked' AND season = 'S1'}, 'season_leaderboard'),
	'6|6|1|6|f', 'season_leaderboard ranks S1');
both(q{SELECT player_id, rank, round(conservative_rating::numeric, 6), tier, division
	 FROM mm.season_leaderboard WHERE pool = 'ranked' AND season = 'S1' ORDER BY rank, player_id},
	'season_leaderboard rows');
is(both(q{SELECT season FROM mm.get_player_ratings('{p:s3}')}), 'S2', 'the running season');

# --- 5. the figures on the coordinator ---
is( both(q{SELECT * FROM mm.penalty_stats('365 days', '2026-12-31 00:00:00+00')}, 'penalty_stats'),
	"rq|dodge|3|3|3|3|0|1\nrq|leave|1|1|1|1|0|1", 'penalty_stats: three dodges, one leave, s2 owes a game');
is( both(q{SELECT * FROM mm.penalty_stats('1 hour', '2026-06-02 00:05:00+00')}, 'penalty_stats at the leave'),
	'rq|leave|1|1|1|1|1|1', 'penalty_stats over the hour of the leave');
my $waits = both(q{SELECT * FROM mm.low_priority_waits('365 days', '2026-12-31 00:00:00+00')}, 'low_priority_waits');
# with acceptance a ticket's wait runs to the last accept (matched_at,
# docs/lifecycle.md): d1 3 s, d2 2 s, d3 31 s in the pool; s1 42 s, s2 3 s,
# s3 2 s outside it (the dodged matches' tickets were never matched)
is($waits, "rq|f|3|15.667|38.1|42|30\nrq|t|3|12|28.2|31|30",
	'low_priority_waits: three players from the pool, three others, the bound 30');

# --- 6. a cancelled proposal is a dodge (both forms of mm.cancel_ticket) ---
# in 2043, so that the cancel (which takes the clock) comes before the
# deadline; c1 and c3 on one worker, c2 on the other
@P{qw(c1 c2 c3)} = ($wa->[10], $wb->[10], $wa->[11]);
%role_of = reverse %P;
both(q{SELECT mm.create_queue('cq', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"acceptance_timeout_seconds": 10, "penalties": {"cooldown_seconds": {"dodge": 60}}}')});
both(q{SELECT mm.create_ticket('cq', '[{"id": "{p:c1}"}]', '2043-01-01 00:00:00+00')});
both(q{SELECT mm.create_ticket('cq', '[{"id": "{p:c2}"}]', '2043-01-01 00:00:00+00')});
is(both(q{SELECT mm.tick('cq', '2043-01-01 00:00:01+00')}), '1', 'cq: c1 and c2 proposed');
is(both(q{SELECT mm.cancel_ticket('cq', {t:c1})}, 'cancel by queue'), 't', 'c1 cancels by (queue, id)');
both(q{SELECT mm.create_ticket('cq', '[{"id": "{p:c3}"}]', '2043-01-01 00:00:02+00')});
is(both(q{SELECT mm.tick('cq', '2043-01-01 00:00:03+00')}), '1', 'cq: c2 and c3 proposed');
is(both(q{SELECT mm.cancel_ticket({t:c3})}, 'cancel by id'), 't', 'c3 cancels by id');
is( roles(both(q{SELECT player_id, reason, offences, cooldown_until FROM mm.penalty_history
		 WHERE queue = 'cq' ORDER BY created_at}, 'cancel dodges')),
	"c1|dodge|1|2043-01-01 00:01:01+00\nc3|dodge|1|2043-01-01 00:01:03+00",
	'each cancel recorded a dodge on the player\'s shard; c2 none');
is(both(q{SELECT status FROM mm.tickets WHERE queue = 'cq' AND id = {t:c2}}), 'searching', 'c2 searches again');

$_->stop for reverse($coord, @workers);
$single->stop;
done_testing();
