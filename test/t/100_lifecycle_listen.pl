# A LISTEN client in its own connection follows one match through its whole
# life: proposed -> accepted by both players -> ready -> assigned -> result
# reported -> completed.  It sees every event once, in that order, each
# signed; the players' stored ratings change exactly once (one history row
# each), and a second report changes nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use Time::HiRes qw(usleep);
use MmTest;

my $node = mm_new_node('lifecycle');
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN mm_events');

# The payloads received so far (psql prints notifications after a command),
# polled until $want have come or $tries x 0.2 s passed (default 20 s).
my @seen;
sub wait_events
{
	my ($want, $tries) = @_;
	for my $try (1 .. ($tries // 100))
	{
		my $out = $listener->query_safe('SELECT 1');
		while ($out =~
			/^Asynchronous notification "mm_events" with payload "(.*)" received from server process with PID \d+\.$/mg)
		{
			push @seen, $1;
		}
		last if @seen >= $want;
		usleep(200_000);
	}
	return scalar @seen;
}

$node->safe_psql('postgres', q{
	SELECT mm.create_queue('ranked_duel', '{"teams": [{"name": "red", "min": 1, "max": 1},
	                                                  {"name": "blue", "min": 1, "max": 1}],
	    "acceptance_timeout_seconds": 10,
	    "rating": {"system": "glicko2", "pool": "ranked"}}');
	SELECT mm.create_ticket('ranked_duel', '[{"id": "ann"}]', '2026-01-01 00:00:00+00');
	SELECT mm.create_ticket('ranked_duel', '[{"id": "bob"}]', '2026-01-01 00:00:01+00');
});
my $matches = $node->safe_psql('postgres', q{SELECT mm.tick('ranked_duel', '2026-01-01 00:00:05+00')});
is($matches, '1', 'the tick proposes one match');
my $match = $node->safe_psql('postgres', 'SELECT id FROM mm.matches');
wait_events(1);

# each step in its own transaction, as a game's services would call them
$node->safe_psql('postgres', "SELECT mm.accept_match($match, 'ann', true, '2026-01-01 00:00:06+00')");
is($node->safe_psql('postgres', "SELECT mm.accept_match($match, 'bob', true, '2026-01-01 00:00:07+00')"),
	'ready', 'the second acceptance makes the match ready');
$node->safe_psql('postgres', "SELECT mm.assign($match, 'udp://10.0.0.1:7777', '{\"map\": \"harbor\"}')");
$node->safe_psql('postgres',
	"SELECT mm.report_result($match, '{\"red\": 1, \"blue\": 2}', '2026-01-01 00:20:00+00')");
wait_events(5);

my @events = map { decode_json($_) } @seen;
is(join(' ', map { $_->{event} } @events),
	'match_proposed match_ready match_assigned match_completed match_result',
	'every transition is announced once, in order');
ok((grep { $_->{match_id} == $match } @events) == @events, 'all of them name the match');
is(join(' ', map { $node->safe_psql('postgres', "SELECT mm.verify_event(\$p\$$_\$p\$)") } @seen),
	't t t t t', 'every payload carries a valid signature');
is($events[2]{connection}, 'udp://10.0.0.1:7777', 'match_assigned carries the connection');

# the result and the ratings
is($node->safe_psql('postgres', "SELECT status FROM mm.matches WHERE id = $match"),
	'completed', 'the match is completed');
is($node->safe_psql('postgres', "SELECT winner_team FROM mm.match_results WHERE match_id = $match"),
	'red', 'the result names the winner');
my $ratings = q{SELECT string_agg(player_id || ':' || games || ':' || wins || ':' || (rating > 1500)::text
                                  || ':' || (rd < 350)::text, ' ' ORDER BY player_id)
                  FROM mm.ratings WHERE pool = 'ranked'};
is($node->safe_psql('postgres', $ratings), 'ann:1:1:true:true bob:1:0:false:true',
	'each player rated once: the winner up, the loser down, both more certain');
is($node->safe_psql('postgres',
		"SELECT string_agg(player_id || '=' || n, ' ' ORDER BY player_id) FROM (
		   SELECT player_id, count(*) AS n FROM mm.rating_history WHERE match_id = $match GROUP BY 1) h"),
	'ann=1 bob=1', 'one history row per player');

# a second report is refused and changes nothing
my $snapshot = q{SELECT string_agg(player_id || ' ' || rating || ' ' || rd, ', ' ORDER BY player_id) FROM mm.ratings};
my $before = $node->safe_psql('postgres', $snapshot);
my ($rc, $out, $err) = $node->psql('postgres',
	"SELECT mm.report_result($match, '{\"red\": 2, \"blue\": 1}', '2026-01-01 00:21:00+00')");
isnt($rc, 0, 'a second report is refused');
like($err, qr/match $match/, 'naming the match');
is($node->safe_psql('postgres', $snapshot), $before, 'and the ratings are unchanged');
is(wait_events(6, 10), 5, 'and nothing more was announced');

# the players are free again
is($node->safe_psql('postgres', 'SELECT count(*) FROM mm.active_players'), '0', 'both players released');

$listener->quit;
$node->stop;
done_testing();

