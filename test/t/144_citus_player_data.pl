# A player's data on request on a real Citus cluster (MmCitus.pm): a
# coordinator and two workers after mm.distribute(8), against one plain
# node running the same statements.  The subject (on one worker) and the
# other players (on the other) dodge, play a rated 1v1 with acceptance and
# penalties, go through two season starts; then mm.export_player on the
# coordinator lists the same rows as on one node, mm.forget_player is
# refused while the subject searches (55006), and once the ticket is
# cancelled it deletes and anonymises the same rows as on one node (tables
# sharded by player move their rows to the pseudonym); afterwards no text or
# jsonb column of any table of the extension holds the id or the attribute
# values (read through the coordinator), the counts are unchanged, the
# other players' rows are as they were.  Skipped without Citus.
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

# the subject on one worker, the others on the other (by the shard of mm.ratings)
my %by_worker;
for my $i (1 .. 40)
{
	my $name = sprintf('gd%02d', $i);
	my $port = q1("SELECT nodeport FROM pg_dist_shard_placement
		WHERE shardid = get_shard_id_for_distribution_column('mm.ratings', '$name')");
	push @{ $by_worker{ mm_citus_node_at($port)->name } }, $name;
}
my @wnames = sort keys %by_worker;
is(scalar @wnames, 2, 'player names on both workers');
my ($wa, $wb) = @by_worker{@wnames};
my %P = (s => $wa->[0], o1 => $wb->[0], o2 => $wb->[1]);
note(join ', ', map { "$_=$P{$_}" } sort keys %P);

sub for_node
{
	my ($node, $sql) = @_;
	$sql =~ s/\{p:(\w+)\}/$P{$1}/g;
	$sql =~ s/\{m:(\w+)\}/$node->safe_psql('postgres',
		"SELECT max(match_id) FROM mm.match_players WHERE queue = 'gq' AND player_id = '$P{$1}'")/ge;
	# (found by its players: on Citus a claim may outlive its ticket until
	# the queue's tick, and a ticket the tick has not claimed yet has none)
	$sql =~ s/\{t:(\w+)\}/$node->safe_psql('postgres',
		"SELECT id FROM mm.tickets_active WHERE queue = 'gq' AND players \@> '[{\"id\": \"$P{$1}\"}]'")/ge;
	$sql =~ s/\{team:(\w+)\}/$node->safe_psql('postgres',
		"SELECT team FROM mm.match_players WHERE queue = 'gq' AND player_id = '$P{$1}' ORDER BY match_id DESC LIMIT 1")/ge;
	return $sql;
}

# A statement on both nodes; the coordinator's output, checked to be the
# single node's.
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

my $subject_entry = q({"id": "{p:s}", "attributes": {"skill": 1234.5678, "nickname": "Zorro-4711"}, "latencies": {"gd-region-9": 37}});

# --- a month of the subject ---
both(q{SELECT mm.create_queue('gq', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
	"acceptance_timeout_seconds": 10, "rating": {"system": "glicko2", "pool": "gp"},
	"penalties": {"cooldown_seconds": {"dodge": 60}}}')});
both(q{SELECT mm.set_player_attributes('{p:s}', '{"email": "subject@example.org"}')});
both(q{SELECT mm.set_player_attributes('{p:o1}', '{"email": "other@example.org"}')});
# a dodge
both("SELECT mm.create_ticket('gq', '[$subject_entry]', '2026-06-01 10:00:00+00')");
both(q{SELECT mm.create_ticket('gq', '[{"id": "{p:o1}"}]', '2026-06-01 10:00:00+00')});
is(both(q{SELECT mm.tick('gq', '2026-06-01 10:00:01+00')}), '1', 'proposed');
is(both(q{SELECT mm.accept_match('gq', {m:s}, '{p:s}', false, '2026-06-01 10:00:03+00')}), 'cancelled', 'dodged');
both(q{SELECT mm.cancel_ticket('gq', {t:o1})});
# a rated game, after the cooldown
both("SELECT mm.create_ticket('gq', '[$subject_entry]', '2026-06-01 11:00:00+00')");
both(q{SELECT mm.create_ticket('gq', '[{"id": "{p:o2}"}]', '2026-06-01 11:00:00+00')});
is(both(q{SELECT mm.tick('gq', '2026-06-01 11:00:01+00')}), '1', 'proposed again');
both(q{SELECT mm.accept_match('gq', {m:s}, '{p:s}', true, '2026-06-01 11:00:02+00')});
is(both(q{SELECT mm.accept_match('gq', {m:s}, '{p:o2}', true, '2026-06-01 11:00:03+00')}), 'ready', 'accepted');
is( both(q{SELECT count(*) FROM mm.report_result('gq', {m:s}, jsonb_build_object('{team:s}', 1, '{team:o2}', 2),
		 '2026-06-01 11:20:00+00')}, 'report_result'),
	'2', 'rated');
# (on Citus the queue's next tick drops the claims the result released)
both(q{SELECT mm.tick('gq', '2026-06-01 11:20:01+00')}, 'the tick after the result');
both(q{SELECT mm.start_season('gp', 'S1', '2026-06-02 00:00:00+00')}, 'S1');
both(q{SELECT mm.start_season('gp', 'S2', '2026-06-03 00:00:00+00')}, 'S2');

# --- the export ---
is( both(q{SELECT string_agg(e.key || '=' || jsonb_array_length(e.value), ' ' ORDER BY e.key)
		 FROM jsonb_each(mm.export_player('{p:s}')) e WHERE jsonb_typeof(e.value) = 'array'}, 'export'),
	'active_players=0 autofill_protection=0 match_players=2 match_players_archive=0 match_results=1 '
	  . 'match_results_archive=0 matches=2 matches_archive=0 penalty_history=1 player_penalties=1 players=1 '
	  . 'rating_history=3 ratings=1 season_ratings=1 tickets=2 tickets_archive=0',
	'export_player: the subject\'s rows, table by table');
is(both(q{SELECT mm.export_player('{p:s}') #>> '{tickets,0,players,0,attributes,nickname}'}), 'Zorro-4711',
	'the export carries the ticket entry');

# --- refused while searching ---
both(q{SELECT mm.create_ticket('gq', '[{"id": "{p:s}"}]', '2026-06-04 10:00:00+00')});
for my $node (@nodes)
{
	my ($rc, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT mm.forget_player('$P{s}')");
	like($err, qr/55006: player "\Q$P{s}\E" is searching or in a live match/,
		'forget_player refused while searching on ' . $node->name);
}
both(q{SELECT mm.cancel_ticket('gq', {t:s})});

# --- forgetting ---
my $counts = q{SELECT (SELECT count(*) FROM mm.tickets) || ' ' || (SELECT count(*) FROM mm.match_players)
	|| ' ' || (SELECT count(*) FROM mm.rating_history) || ' ' || (SELECT count(*) FROM mm.season_ratings)
	|| ' ' || (SELECT count(*) FROM mm.penalty_history)
	|| ' ' || (SELECT string_agg(n::text, ',' ORDER BY match_id)
			   FROM (SELECT match_id, count(*) AS n FROM mm.match_players GROUP BY match_id) x)};
my $before = both($counts, 'counts before');
my $other_before = both(q{SELECT mm.export_player('{p:o2}') - 'match_results' - 'matches' - 'tickets'});
is( both(q{SELECT mm.forget_player('{p:s}')}, 'forget_player'),
	'{"deleted": {"players": 1, "ratings": 1, "player_penalties": 1, "autofill_protection": 0}, "anonymised": '
	  . '{"matches": 0, "tickets": 3, "match_players": 2, "match_results": 0, "rating_history": 3, '
	  . '"season_ratings": 1, "matches_archive": 0, "penalty_history": 1, "tickets_archive": 0, '
	  . '"match_players_archive": 0, "match_results_archive": 0}}',
	'forget_player deletes and anonymises the same rows as on one node');
is(both($counts), $before, 'counts and team sizes unchanged');
is(both(q{SELECT mm.export_player('{p:o2}') - 'match_results' - 'matches' - 'tickets'}), $other_before,
	'the other player\'s rows unchanged');
# every text or jsonb column of every table of the extension, through the
# coordinator
my $holding = q{DO $$
DECLARE
	c record;
	w text;
	n bigint;
	found text := '';
BEGIN
	FOR c IN SELECT cl.oid::regclass AS tbl, a.attname
			   FROM pg_class cl JOIN pg_attribute a ON a.attrelid = cl.oid
			  WHERE cl.relnamespace = 'mm'::regnamespace AND cl.relkind IN ('r', 'p')
				AND a.attnum > 0 AND NOT a.attisdropped
				AND a.atttypid IN ('text'::regtype, 'jsonb'::regtype, 'text[]'::regtype)
			  ORDER BY 1, 2 LOOP
		FOREACH w IN ARRAY ARRAY['{p:s}', 'subject@example.org', 'Zorro-4711', '1234.5678', 'gd-region-9'] LOOP
			EXECUTE format('SELECT count(*) FROM %s WHERE strpos(%I::text, $1) > 0', c.tbl, c.attname) INTO n USING w;
			IF n > 0 THEN
				found := found || format('%s.%s holds %s; ', c.tbl, c.attname, w);
			END IF;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'holding: %', CASE WHEN found = '' THEN 'nothing' ELSE found END;
END
$$};
for my $node (@nodes)
{
	my ($rc, $out, $err) = $node->psql('postgres', for_node($node, $holding));
	like($err, qr/NOTICE:  holding: nothing/, 'no column holds the subject on ' . $node->name)
	  or diag $err;
}
is( both(q{SELECT count(DISTINCT player_id) FROM (SELECT player_id FROM mm.match_players
		 UNION ALL SELECT player_id FROM mm.rating_history UNION ALL SELECT player_id FROM mm.season_ratings
		 UNION ALL SELECT player_id FROM mm.penalty_history) x WHERE player_id LIKE 'forgotten-%'}),
	'1', 'one pseudonym across the tables sharded by queue and by player');
is(both(q{SELECT count(*) FROM mm.active_players WHERE ticket_id = 0}), '0', 'the call\'s claim is gone');

$_->stop for reverse($coord, @workers);
$single->stop;
done_testing();
