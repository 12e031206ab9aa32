# The lifecycle by (queue, id) on a real Citus cluster (MmCitus.pm): a
# coordinator and two workers after mm.distribute(8), two queues whose
# shards are on different workers.  Through the coordinator: accept (and a
# reject), assign, get_assignment (both forms), report_result and a decay
# of the pool, leave + backfill filled by a tick, cancel_backfill,
# heartbeat, cancel_ticket, requeue, complete; then no player is in two
# live matches and every live match's players are claimed; a proposal past
# its deadline is expired by the tick on the queue's worker.  Skipped
# without Citus.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmCitus;

mm_citus_require();

my ($coord, @workers) = mm_citus_cluster(workers => 2);
$coord->safe_psql('postgres', 'CREATE EXTENSION matchmaking');
is($coord->safe_psql('postgres', 'SELECT mm.distribute(8)'), 't', 'mm.distribute(8)');

sub q1 { return $coord->safe_psql('postgres', $_[0]); }

# two queues on different workers
my %port_of;
for my $i (1 .. 40)
{
	my $port = q1("SELECT node_port FROM mm.queue_node('lq_$i')");
	$port_of{$port} //= "lq_$i";
}
my @ports = sort keys %port_of;
is(scalar @ports, 2, 'queue names on both workers');
my ($qa, $qb) = @port_of{@ports};
q1(qq{SELECT mm.create_queue('$qa', '{"teams": [{"name": "red", "min": 1, "max": 1},
	{"name": "blue", "min": 1, "max": 1}], "acceptance_timeout_seconds": 10,
	"rating": {"system": "elo"}}')});
q1(qq{SELECT mm.create_queue('$qb', '{"teams": [{"name": "red", "min": 2, "max": 2},
	{"name": "blue", "min": 2, "max": 2}], "auto_backfill": true}')});

# --- acceptance, assignment, result in $qa ---
my ($ta1, $tok1) = split /\|/,
  q1(qq{SELECT ticket_id, token FROM mm.create_ticket_with_token('$qa', '[{"id": "a1"}]', '2026-05-01 00:00:00+00')});
my ($ta2) = split /\|/,
  q1(qq{SELECT ticket_id FROM mm.create_ticket_with_token('$qa', '[{"id": "a2"}]', '2026-05-01 00:00:01+00')});
is(q1(qq{SELECT mm.tick('$qa', '2026-05-01 00:00:02+00')}), '1', 'the tick forms a match');
my $ma = q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qa'});
is(q1(qq{SELECT mm.accept_match('$qa', $ma, 'a1', true, '2026-05-01 00:00:03+00')}), 'proposed', 'first accept');
is(q1(qq{SELECT mm.accept_match('$qa', $ma, 'a2', true, '2026-05-01 00:00:04+00')}), 'ready', 'both accepted');
q1(qq{SELECT mm.assign('$qa', $ma, 'udp://10.0.0.1:7777')});
is(q1(qq{SELECT ticket_status, match_status, connection FROM mm.get_assignment('$qa', $ta1)}),
	'matched|assigned|udp://10.0.0.1:7777', 'get_assignment by (queue, id)');
is(q1(qq{SELECT ticket_status, match_status FROM mm.get_assignment('$qa', $ta1, '$tok1')}),
	'matched|assigned', 'get_assignment by (queue, id, token)');
is(q1(qq{SELECT count(*) FROM mm.report_result('$qa', $ma, '{"red": 1, "blue": 2}', '2026-05-01 00:10:00+00')}),
	'2', 'report_result');
is(q1(qq{SELECT status FROM mm.matches WHERE queue = '$qa' AND id = $ma}), 'completed', 'the result completes the match');
is(q1(qq{SELECT count(*), sum(games) FROM mm.ratings WHERE player_id IN ('a1', 'a2')}), '2|2', 'ratings updated once');
is(q1(qq{SELECT count(*) FROM mm.rating_history WHERE match_id = $ma}), '2', 'one history row per player');
my ($ok, $out, $err) = $coord->psql('postgres',
	qq{SELECT mm.report_result('$qa', $ma, '{"red": 1, "blue": 2}', '2026-05-01 00:11:00+00')});
like($err, qr/already has a result/, 'a second result is refused');
# a Glicko-2 pool's idle ratings decay on their shards, once
q1(q{INSERT INTO mm.ratings (player_id, pool, rating, rd, volatility, updated_at)
	 SELECT 'd' || i, 'decay', 1500, 100, 0.06, '2026-05-01' FROM generate_series(1, 20) i});
is(q1(q{SELECT mm.decay_ratings('decay', '7 days', '2026-06-01 00:00:00+00')}), '20', 'decay_ratings on Citus');
is(q1(q{SELECT count(*) FROM mm.rating_history WHERE pool = 'decay' AND match_id IS NULL AND rd_after > rd_before}),
	'20', 'one decay row per idle player, its RD grown');
is(q1(q{SELECT mm.decay_ratings('decay', '7 days', '2026-06-01 00:00:00+00')}), '0', 'and nothing idle is left');
($ok, $out, $err) = $coord->psql('postgres', qq{SELECT mm.complete_match('$qb', $ma, '2026-05-01 00:11:00+00')});
like($err, qr/match $ma does not exist in queue "$qb"/, 'a match of another queue is missing');

# a reject
q1(qq{SELECT mm.create_ticket('$qa', '[{"id": "r1"}]', '2026-05-01 00:20:00+00')});
my $tr2 = q1(qq{SELECT mm.create_ticket('$qa', '[{"id": "r2"}]', '2026-05-01 00:20:01+00')});
q1(qq{SELECT mm.tick('$qa', '2026-05-01 00:20:02+00')});
my $mr = q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qa'});
is(q1(qq{SELECT mm.accept_match('$qa', $mr, 'r1', false, '2026-05-01 00:20:03+00')}), 'cancelled', 'a reject');
is(q1(qq{SELECT status FROM mm.tickets WHERE queue = '$qa' AND id = $tr2}), 'searching', 'the other ticket searches again');

# a proposal past its deadline: the tick (on the queue's worker) cancels it,
# the ticket that accepted searches again, the silent one is cancelled
is(q1(qq{SELECT mm.cancel_ticket('$qa', $tr2)}), 't', 'the other ticket cancelled by (queue, id)');
my $te1 = q1(qq{SELECT mm.create_ticket('$qa', '[{"id": "e1"}]', '2026-05-01 00:30:00+00')});
my $te2 = q1(qq{SELECT mm.create_ticket('$qa', '[{"id": "e2"}]', '2026-05-01 00:30:01+00')});
q1(qq{SELECT mm.tick('$qa', '2026-05-01 00:30:02+00')});
my $me = q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qa'});
q1(qq{SELECT mm.accept_match('$qa', $me, 'e1', true, '2026-05-01 00:30:03+00')});
q1(qq{SELECT mm.tick('$qa', '2026-05-01 00:30:20+00')});
is(q1(qq{SELECT status, cancel_reason FROM mm.matches WHERE queue = '$qa' AND id = $me}),
	'cancelled|acceptance_timeout', 'the tick expires a proposal');
is(q1(qq{SELECT string_agg(status, ',' ORDER BY id) FROM mm.tickets WHERE queue = '$qa' AND id IN ($te1, $te2)}),
	'searching,cancelled', 'the accepting ticket searches again, the silent one is cancelled');
is(q1(qq{SELECT string_agg(player_id, ',' ORDER BY player_id) FROM mm.active_players WHERE player_id IN ('e1', 'e2')}),
	'e1', 'only the searching player is held');
q1(qq{SELECT mm.cancel_ticket('$qa', $te1)});

# --- leave, backfill, cancel_backfill, requeue, complete in $qb ---
q1(qq{SELECT mm.create_ticket('$qb', format('[{"id": "b%s"}]', i)::jsonb,
	'2026-05-01 01:00:00+00'::timestamptz + i * interval '1 second') FROM generate_series(1, 4) i});
is(q1(qq{SELECT mm.tick('$qb', '2026-05-01 01:00:10+00')}), '1', 'a 2v2 match');
my $mb = q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qb'});
q1(qq{SELECT mm.leave_match('$qb', $mb, 'b1', '2026-05-01 01:01:00+00')});
is(q1(qq{SELECT status FROM mm.backfill_requests WHERE queue = '$qb' AND match_id = $mb}), 'open',
	'the leaver opens a backfill request');
my $t5 = q1(qq{SELECT mm.create_ticket('$qb', '[{"id": "b5"}]', '2026-05-01 01:01:10+00')});
q1(qq{SELECT mm.tick('$qb', '2026-05-01 01:01:20+00')});
is(q1(qq{SELECT status, match_id FROM mm.tickets WHERE queue = '$qb' AND id = $t5}), "matched|$mb",
	'a tick fills the slot');
is(q1(qq{SELECT status FROM mm.backfill_requests WHERE queue = '$qb' AND match_id = $mb}), 'filled', 'request filled');
q1(qq{SELECT mm.request_backfill('$qb', $mb, '{"red": 0, "blue": 0}', '2026-05-01 01:02:00+00')})
  if 0;
my $th = q1(qq{SELECT mm.create_ticket('$qb', '[{"id": "h1"}]', '2026-05-01 01:02:00+00')});
is(q1(qq{SELECT mm.heartbeat('$qb', $th, '2026-05-01 01:02:05+00')}), 't', 'heartbeat');
is(q1(qq{SELECT mm.cancel_ticket('$qb', $th)}), 't', 'cancel_ticket');
is(q1(qq{SELECT mm.heartbeat('$qb', $th, '2026-05-01 01:02:06+00')}), 'f', 'no beat after the cancel');
q1(qq{SELECT mm.leave_match('$qb', $mb, 'b2', '2026-05-01 01:03:00+00')});
is(q1(qq{SELECT mm.cancel_backfill('$qb', $mb, '2026-05-01 01:03:10+00')}), 't', 'cancel_backfill');
isnt(q1(qq{SELECT mm.requeue_match('$qb', $mb, 'server_crashed', '2026-05-01 01:04:00+00')}), '',
	'requeue_match');
is(q1(qq{SELECT count(*) FROM mm.tickets_active WHERE queue = '$qb'}), '3', 'the requeued tickets search again');
q1(qq{SELECT mm.create_ticket('$qb', '[{"id": "b6"}]', '2026-05-01 01:05:00+00')});
is(q1(qq{SELECT mm.tick('$qb', '2026-05-01 01:05:10+00')}), '1', 'they match again');
my $mc = q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qb'});
# the id-only forms work too (a read of every shard finds the queue)
q1(qq{SELECT mm.assign($mc, 'udp://10.0.0.2:7777')});
is(q1(qq{SELECT match_status FROM mm.get_assignment($t5)}), 'assigned', 'id-only get_assignment');

# --- invariants, asked on the coordinator ---
is( q1(q{SELECT count(*) FROM (SELECT mp.player_id FROM mm.match_players mp
		 JOIN mm.matches m ON m.queue = mp.queue AND m.id = mp.match_id
		 WHERE m.status IN ('proposed', 'ready', 'assigned') AND mp.left_at IS NULL
		 GROUP BY mp.player_id HAVING count(*) > 1) x}),
	'0', 'no player is in two live matches');
my @live = split /\n/, q1(q{SELECT mp.player_id || ':' || mp.ticket_id FROM mm.match_players mp
		 JOIN mm.matches m ON m.queue = mp.queue AND m.id = mp.match_id
		 WHERE m.status IN ('proposed', 'ready', 'assigned') AND mp.left_at IS NULL ORDER BY 1});
my %claims = map { $_ => 1 } split /\n/,
  q1(q{SELECT player_id || ':' || ticket_id FROM mm.active_players});
ok(@live > 0, 'there are live matches');
is(join(',', grep { !$claims{$_} } @live), '', "every live match's players are claimed");
q1(qq{SELECT mm.complete_match('$qb', $mc, '2026-05-01 01:30:00+00')});
ok(q1(qq{SELECT count(*) FROM mm.pending_releases WHERE queue = '$qb'}) > 0,
	'complete leaves the release of its players to the queue\'s tick');
q1(qq{SELECT mm.tick('$qb', '2026-05-01 01:30:01+00')});
is(q1(qq{SELECT count(*) FROM mm.active_players WHERE queue = '$qb'})
	  . '|' . q1(qq{SELECT count(*) FROM mm.pending_releases WHERE queue = '$qb'}), '0|0',
	'the tick releases the players');

$_->stop for reverse($coord, @workers);
done_testing();
