# Two LISTEN clients watch a ticket that searches in two queues while both
# queues tick at once, in two sessions: the ticket is matched once, in one
# queue, and both listeners see exactly one match_found naming it, from that
# queue.  The other queue's tick, in flight at the same time, skips it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use Time::HiRes qw(usleep);
use MmTest;

my $node = mm_new_node('multi_queue');
my @listeners = map { $node->background_psql('postgres') } 1 .. 2;
$_->query_safe('LISTEN mm_events') for @listeners;

# The match_found payloads a listener has received, polled until $want
# have come or $tries x 0.2 s passed.
sub match_events
{
	my ($listener, $want, $tries) = @_;
	my @events;
	for my $try (1 .. $tries)
	{
		my $out = $listener->query_safe('SELECT 1');
		while ($out =~
			/^Asynchronous notification "mm_events" with payload "(.*)" received from server process with PID \d+\.$/mg)
		{
			my $event = decode_json($1);
			push @events, $event if $event->{event} eq 'match_found';
		}
		last if @events >= $want;
		usleep(200_000);
	}
	return @events;
}

$node->safe_psql('postgres', q{
	SELECT mm.create_queue(q, '{"teams": [{"name": "red", "min": 1, "max": 1},
	                                      {"name": "blue", "min": 1, "max": 1}]}')
	  FROM unnest(ARRAY['duel_a', 'duel_b']) q;
	SELECT mm.create_ticket(ARRAY['duel_a', 'duel_b'], '[{"id": "m"}]', '2026-01-01 00:00:00+00');
	SELECT mm.create_ticket(ARRAY['duel_a'], '[{"id": "a1"}]', '2026-01-01 00:00:01+00');
	SELECT mm.create_ticket(ARRAY['duel_b'], '[{"id": "b1"}]', '2026-01-01 00:00:02+00');
});

# both ticks in flight at once: duel_a's holds m until it commits
my $tick_a = $node->background_psql('postgres');
my $tick_b = $node->background_psql('postgres');
$tick_a->query_safe('BEGIN');
my $a = $tick_a->query_safe(q{SELECT mm.tick('duel_a', '2026-01-01 00:00:05+00')});
my $b = $tick_b->query_safe(q{SELECT mm.tick('duel_b', '2026-01-01 00:00:05+00')});
$tick_a->query_safe('COMMIT');
is("$a $b", '1 0', 'duel_a matches m; duel_b, ticking at the same time, skips it');

for my $i (0 .. 1)
{
	my @events = match_events($listeners[$i], 1, 50);
	# no second event comes later either
	push @events, match_events($listeners[$i], 1, 5);
	is(scalar @events, 1, "listener $i sees one match_found");
	is($events[0]{queue}, 'duel_a', "listener $i: from duel_a");
	my @players = sort map { @{ $_->{players} } } @{ $events[0]{teams} };
	is("@players", 'a1 m', "listener $i: m with a1");
}

is($node->safe_psql('postgres', q{SELECT queue || ' ' || status || ' ' || array_to_string(queues, ',')
                                    FROM mm.tickets WHERE players -> 0 ->> 'id' = 'm'}),
	'duel_a matched duel_b', 'm ended under duel_a, its other queue recorded');
is($node->safe_psql('postgres', 'SELECT count(*) FROM mm.ticket_queues'), '0', 'and left duel_b');
is($node->safe_psql('postgres', q{SELECT status FROM mm.tickets WHERE players -> 0 ->> 'id' = 'b1'}),
	'searching', 'b1 still waits in duel_b');

$_->quit for (@listeners, $tick_a, $tick_b);
$node->stop;
done_testing();
