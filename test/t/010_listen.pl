# Events on channel mm_events, received by a real LISTEN client in another
# connection: match_found for a match formed by a committed tick (with the
# queue, match id, players and tickets), nothing for a tick that was rolled
# back, ticket_cancelled and ticket_timed_out, and a match_found over 8000
# bytes sent compact with "truncated": true; in a role queue, each team's
# roles and autofilled players, as mm.match_players has them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use Time::HiRes qw(usleep);
use MmTest;

my $node = mm_new_node('listen');
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN mm_events');

# Every mm_events payload the listener has received so far.  psql prints
# notifications after each command it runs, so poll with a trivial query;
# stop once $want payloads are in (or after ~2 s when $want is 0).
sub received
{
	my ($want) = @_;
	my @payloads;
	for my $try (1 .. ($want ? 100 : 10))
	{
		my $out = $listener->query_safe('SELECT 1');
		while ($out =~
			/^Asynchronous notification "mm_events" with payload "(.*)" received from server process with PID \d+\.$/mg)
		{
			push @payloads, $1;
		}
		last if $want && @payloads >= $want;
		usleep(200_000);
	}
	return @payloads;
}

# The player ids of a match_found event, whether a team lists ids or objects.
sub event_players
{
	my ($event) = @_;
	my @players;
	for my $team (@{ $event->{teams} // [] })
	{
		push @players, map { ref $_ ? $_->{id} : $_ } @{ $team->{players} // [] };
	}
	return join ',', sort @players;
}

my $t0 = "'2026-01-01 00:00:00+00'";
my $t10 = "'2026-01-01 00:00:10+00'";
$node->safe_psql('postgres', qq{
	SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2},
		"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
		"ticket_timeout_seconds": 60,
		"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50}]}');
	SELECT mm.create_ticket('duel', '[{"id": "a1", "attributes": {"skill": 1000}, "latencies": {"eu": 20}}]', $t0);
	SELECT mm.create_ticket('duel', '[{"id": "a2", "attributes": {"skill": 1010}, "latencies": {"eu": 30}}]', $t0);
});
is(scalar(received(0)), 0, 'no event before any tick');

# 1. a committed tick announces its match
is($node->safe_psql('postgres', "SELECT mm.tick('duel', $t10)"), '1', 'tick forms one match');
my ($match_id, $ticket_ids) = split /\|/, $node->safe_psql('postgres', q{
	SELECT m.id, (SELECT string_agg(t.id::text, ',' ORDER BY t.id) FROM mm.tickets t WHERE t.match_id = m.id)
	  FROM mm.matches m WHERE m.queue = 'duel'});
my @events = received(1);
is(scalar(@events), 1, 'one event for the committed tick');
my $ev = decode_json($events[0]);
is($ev->{event}, 'match_found', 'event is match_found');
is($ev->{queue}, 'duel', 'event names the queue');
is($ev->{match_id}, $match_id, 'event carries the match id');
is(event_players($ev), 'a1,a2', 'event lists the players by team');
is(join(',', sort { $a <=> $b } @{ $ev->{tickets} // [] }), $ticket_ids, 'event lists the tickets');
is(scalar(@{ $ev->{teams} // [] }), 2, 'event lists both teams');
ok(defined $ev->{quality} && $ev->{quality} >= 0 && $ev->{quality} <= 1, 'event carries a quality in [0,1]');
ok(!$ev->{truncated}, 'a small event is not truncated');
ok(length($events[0]) < 8000, 'payload under 8000 bytes');

# 2. a tick that is rolled back announces nothing
$node->safe_psql('postgres', qq{
	SELECT mm.create_ticket('duel', '[{"id": "b1", "attributes": {"skill": 1500}}]', $t0);
	SELECT mm.create_ticket('duel', '[{"id": "b2", "attributes": {"skill": 1510}}]', $t0);
});
is($node->safe_psql('postgres', "BEGIN; SELECT mm.tick('duel', $t10); ROLLBACK;"),
	'1', 'the rolled-back tick had formed a match');
is(scalar(received(0)), 0, 'no event for a rolled-back tick');
is($node->safe_psql('postgres', "SELECT count(*) FROM mm.matches WHERE queue = 'duel'"),
	'1', 'the rolled-back match is gone');
# the same tick committed is announced, and it is the only event since
is($node->safe_psql('postgres', "SELECT mm.tick('duel', $t10)"), '1', 'tick again, committed');
@events = received(1);
is(scalar(@events), 1, 'exactly one event: the committed tick only');
$ev = decode_json($events[0]);
is(event_players($ev), 'b1,b2', 'the event is the committed match of b1 and b2');
is($ev->{match_id},
	$node->safe_psql('postgres', "SELECT max(id) FROM mm.matches WHERE queue = 'duel'"),
	'with the committed match id');

# 3. ticket_cancelled and ticket_timed_out
my $c1 = $node->safe_psql('postgres',
	qq{SELECT mm.create_ticket('duel', '[{"id": "c1", "attributes": {"skill": 3000}}]', $t0)});
is($node->safe_psql('postgres', "SELECT mm.cancel_ticket($c1)"), 't', 'cancel a searching ticket');
@events = received(1);
is(scalar(@events), 1, 'one event for the cancel');
$ev = decode_json($events[0]);
is($ev->{event}, 'ticket_cancelled', 'event is ticket_cancelled');
is($ev->{queue}, 'duel', 'ticket_cancelled names the queue');
is(join(',', @{ $ev->{tickets} // [] }), $c1, 'ticket_cancelled lists the ticket');
is($node->safe_psql('postgres', "SELECT mm.cancel_ticket($c1)"), 'f', 'a second cancel returns false');
is(scalar(received(0)), 0, 'and announces nothing');

my $d1 = $node->safe_psql('postgres',
	qq{SELECT mm.create_ticket('duel', '[{"id": "d1", "attributes": {"skill": 4000}}]', $t0)});
is($node->safe_psql('postgres', "SELECT mm.tick('duel', '2026-01-01 00:01:01+00')"), '0',
	'tick past the timeout forms no match');
is($node->safe_psql('postgres', "SELECT status FROM mm.tickets WHERE id = $d1"), 'timed_out',
	'the old ticket timed out');
@events = received(1);
is(scalar(@events), 1, 'one event for the timeout');
$ev = decode_json($events[0]);
is($ev->{event}, 'ticket_timed_out', 'event is ticket_timed_out');
is(join(',', @{ $ev->{tickets} // [] }), $d1, 'ticket_timed_out lists the ticket');

# 4. a free-for-all of 200 players with 128-character ids: the full payload
# would be about 27 kB, so it goes out compact
$node->safe_psql('postgres', qq{
	SELECT mm.create_queue('ffa200', '{"match_size": {"min": 200, "max": 200}}');
	SELECT count(mm.create_ticket('ffa200',
		jsonb_build_array(jsonb_build_object('id', lpad(i::text, 128, 'x'))), $t0))
	  FROM generate_series(1, 200) i;
});
is($node->safe_psql('postgres', "SELECT mm.tick('ffa200', $t10)"), '1', 'tick forms the big match');
@events = received(1);
is(scalar(@events), 1, 'one event for the big match');
ok(length($events[0]) <= 8000, 'the compact payload is at most 8000 bytes (' . length($events[0]) . ')');
$ev = eval { decode_json($events[0]) };
ok($ev, 'the compact payload is valid JSON');
is($ev->{truncated}, JSON::PP::true, 'it says "truncated": true');
is($ev->{event}, 'match_found', 'compact event is still match_found');
is($ev->{queue}, 'ffa200', 'compact event names the queue');
is($ev->{match_id},
	$node->safe_psql('postgres', "SELECT id FROM mm.matches WHERE queue = 'ffa200'"),
	'compact event carries the match id');
is(scalar(@{ $ev->{tickets} // [] }), 200, 'compact event keeps the 200 ticket ids');
ok(!exists $ev->{teams}, 'compact event drops the teams and player ids');
# the client reads the rest with SQL
is($node->safe_psql('postgres', "SELECT count(*) FROM mm.match_players m JOIN mm.matches x ON x.id = m.match_id WHERE x.queue = 'ffa200'"),
	'200', 'the match has its 200 players in mm.match_players');

# 5. a role queue: each team says who plays which role and who was
# autofilled, the same as mm.match_players, and the payload verifies
$node->safe_psql('postgres', qq{
	SELECT mm.create_queue('lanes', '{"teams": [
		{"name": "red", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}},
		{"name": "blue", "min": 2, "max": 2, "roles": {"tank": 1, "dps": 1}}],
		"autofill": {"after_seconds": 0}}');
	SELECT mm.create_ticket('lanes', '[{"id": "r1", "roles": ["tank"]}]', $t0);
	SELECT mm.create_ticket('lanes', '[{"id": "r2", "roles": ["dps"]}]', $t0);
	SELECT mm.create_ticket('lanes', '[{"id": "r3", "roles": ["dps"]}]', $t0);
	SELECT mm.create_ticket('lanes', '[{"id": "r4", "roles": ["dps"]}]', $t0);
});
is($node->safe_psql('postgres', "SELECT mm.tick('lanes', $t10)"), '1', 'the role queue forms its match');
@events = received(1);
is(scalar(@events), 1, 'one event for the role match');
$ev = decode_json($events[0]);
my (%role, @autofilled);
for my $team (@{ $ev->{teams} // [] })
{
	is(join(',', sort keys %{ $team->{roles} // {} }), join(',', sort @{ $team->{players} }),
		"team $team->{name} gives a role to each of its players");
	%role = (%role, %{ $team->{roles} // {} });
	push @autofilled, @{ $team->{autofilled} // [] };
}
is(join(',', map { "$_=$role{$_}" } sort keys %role),
	$node->safe_psql('postgres', q{
		SELECT string_agg(player_id || '=' || role, ',' ORDER BY player_id) FROM mm.match_players
		 WHERE queue = 'lanes'}),
	'the event\'s roles are mm.match_players\' roles');
is(join(',', sort @autofilled),
	$node->safe_psql('postgres', q{
		SELECT string_agg(player_id, ',' ORDER BY player_id) FROM mm.match_players
		 WHERE queue = 'lanes' AND autofilled}),
	'the event names the autofilled player');
is(scalar(@autofilled), 1, 'one player was autofilled (a dps-only player tanks)');
my $payload = $events[0];
$payload =~ s/'/''/g;
is($node->safe_psql('postgres', "SELECT mm.verify_event('$payload')"), 't', 'the role event verifies');

$listener->quit;
$node->stop;
done_testing();
