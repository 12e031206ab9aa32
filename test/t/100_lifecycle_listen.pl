# A LISTEN client in its own connection follows one match through its whole
# life: proposed -> accepted by both players -> ready -> assigned -> result
# reported -> completed.  It sees every event once, in that order, each
# signed; the players' stored ratings change exactly once (one history row
# each), and a second report changes nothing.
# A second listener logs in as a role without any grant (any role may
# LISTEN): through that match and a second one (a cancelled proposal that
# is a dodge, acceptance, an assignment, backfill, a leave, a result) it
# receives every event the first listener does, and no payload holds a
# game server's address, an assignment's properties, a ticket's token or a
# player's attribute.
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
$node->safe_psql('postgres', 'CREATE ROLE mm_outsider LOGIN');
my $outsider = $node->background_psql('postgres', extra_params => [ '-U', 'mm_outsider' ]);
$outsider->query_safe('LISTEN mm_events');
is($outsider->query_safe('SELECT current_user, pg_has_role(current_user, \'mm_frontend\', \'USAGE\')'),
	'mm_outsider|f', 'the outsider listens without any of the extension\'s roles');

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
is(join(',', sort keys %{ $events[2] }), 'event,match_id,queue,sig,status',
	'match_assigned names the match, not its server');
is($node->safe_psql('postgres', "SELECT connection FROM mm.get_assignment((SELECT ticket_id FROM mm.match_players WHERE match_id = $match AND player_id = 'ann'))"), 'udp://10.0.0.1:7777',
	'mm.get_assignment has the server');

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

# A second match, in 2043 (so that a cancel, which takes the clock, comes
# before the acceptance deadline): tickets with a hidden attribute and a
# token; carl cancels the proposal (a dodge), dave and erin play, the
# server is assigned with a password in its properties, frank backfills and
# leaves, the result is reported.
my @tokens;
sub ticket_with_token
{
	my ($player, $at) = @_;
	my ($id, $token) = split /\|/, $node->safe_psql('postgres',
		"SELECT ticket_id, token FROM mm.create_ticket_with_token('secret_duel',
		   '[{\"id\": \"$player\", \"attributes\": {\"phone\": \"+1-555-0100\"}}]', '$at')");
	push @tokens, $token;
	return $id;
}
$node->safe_psql('postgres', q{
	SELECT mm.create_queue('secret_duel', '{"teams": [{"name": "red", "min": 1, "max": 2},
	                                                  {"name": "blue", "min": 1, "max": 2}],
	    "match_size": {"min": 2, "max": 4}, "acceptance_timeout_seconds": 10,
	    "penalties": {"cooldown_seconds": {"dodge": 60, "leave": 60}}}');
});
my $seen_before = @seen;
my $carl = ticket_with_token('carl', '2043-01-01 00:00:00+00');
my $dave = ticket_with_token('dave', '2043-01-01 00:00:00+00');
$node->safe_psql('postgres', "SELECT mm.tick('secret_duel', '2043-01-01 00:00:01+00')");
is($node->safe_psql('postgres', "SELECT mm.cancel_ticket($carl)"), 't', 'carl cancels the proposal');
ticket_with_token('erin', '2043-01-01 00:00:02+00');
$node->safe_psql('postgres', "SELECT mm.tick('secret_duel', '2043-01-01 00:00:03+00')");
my $m2 = $node->safe_psql('postgres', "SELECT id FROM mm.matches WHERE queue = 'secret_duel' AND status = 'proposed'");
$node->safe_psql('postgres', "SELECT mm.accept_match($m2, p, true, '2043-01-01 00:00:04+00') FROM unnest(ARRAY['dave', 'erin']) p");
$node->safe_psql('postgres', "SELECT mm.assign($m2, 'secret-server:7777', '{\"password\": \"hunter2\"}')");
$node->safe_psql('postgres', "SELECT mm.request_backfill($m2, '{\"red\": 1}', '2043-01-01 00:00:05+00')");
ticket_with_token('frank', '2043-01-01 00:00:06+00');
$node->safe_psql('postgres', "SELECT mm.tick('secret_duel', '2043-01-01 00:00:07+00')");
$node->safe_psql('postgres', "SELECT mm.leave_match($m2, 'frank', '2043-01-01 00:00:08+00')");
$node->safe_psql('postgres', "SELECT mm.report_result($m2, '{\"red\": 1, \"blue\": 2}', '2043-01-01 00:20:00+00')");
wait_events($seen_before + 13);
my @second = map { decode_json($_)->{event} } @seen[ $seen_before .. $#seen ];
is(join(' ', @second),
	'match_proposed match_cancelled player_penalised ticket_cancelled match_proposed match_ready '
	  . 'match_assigned backfill_requested backfill_filled player_left player_penalised match_completed match_result',
	'the second match: every event once, in order');
is(join(' ', map { $_->{player_id} . ':' . $_->{reason} } grep { $_->{event} eq 'player_penalised' }
	  map { decode_json($_) } @seen[ $seen_before .. $#seen ]), 'carl:dodge frank:leave',
	'carl dodged by cancelling, frank left');

# what the outsider received: the same payloads
my @outside;
for my $try (1 .. 50)
{
	my $out = $outsider->query_safe('SELECT 1');
	push @outside, $1 while $out =~
	  /^Asynchronous notification "mm_events" with payload "(.*)" received from server process with PID \d+\.$/mg;
	last if @outside >= @seen;
	usleep(200_000);
}
is(scalar @outside, scalar @seen, 'the outsider received every event (' . scalar(@seen) . ')');
is_deeply(\@outside, \@seen, 'the same payloads as the first listener');
my %types = map { decode_json($_)->{event} => 1 } @outside;
note 'event types seen: ' . join(' ', sort keys %types);
my @secrets = ('udp://10.0.0.1', 'harbor', 'secret-server', '7777', 'hunter2', 'password', 'phone', '555-0100',
	'attributes', 'connection', 'properties', 'token', @tokens);
is(scalar(@tokens), 4, 'four tokens to look for');
# searched without the signature, a random hex string that may hold '7777'
my @leaks = grep { (my $p = $_) =~ s/"sig": "[0-9a-f]*"//; grep { index($p, $_) >= 0 } @secrets } @outside;
is(scalar @leaks, 0, 'no payload carries a server, a property, a token or an attribute')
  or diag join("\n", @leaks);
is($node->safe_psql('postgres', "SELECT connection, properties ->> 'password' FROM mm.get_assignment($dave, '$tokens[1]')"),
	'secret-server:7777|hunter2', 'dave\'s backend reads them with mm.get_assignment and his token');

$outsider->quit;
$listener->quit;
$node->stop;
done_testing();

