# The hot paths on a real Citus cluster (MmCitus.pm, a coordinator and two
# workers after mm.distribute(8)) reach only the shards they need: every
# shard named in the commands a call issues (citus.log_remote_commands and
# citus.log_local_commands, on the coordinator's session and in the
# workers' logs, where the calls Citus delegates run) belongs to the
# call's queue or to its players.  Then the errors of one node on Citus: a
# ticket of one queue is written on the queue's node alone and its player
# claimed by the queue's tick: a player already pending in the queue gets
# 23505 at once, a player in a live match or claimed elsewhere has the new
# ticket cancelled by the tick (player_busy, announced and verifiable),
# also when two ticks claim one player at once; batches read the players'
# claims at once; a validation error names players[0] as on one node.
# A call that ends a ticket or a match reaches only its queue's node and
# leaves its players' claims to the queue's tick: before that tick, the
# player's new ticket in another queue (and mm.forget_player) takes the
# released claim over, while a player still in a live match is refused.
# The tick of a new queue whose shards' statistics predate it joins its
# tickets and pending claims without nested loops.
# Last, kill -9 of a worker under ticket load: the other worker's queue
# still takes tickets and ticks, its players on the dead worker wait, and
# a ticket of the dead worker's queue fails with 08006 naming it.  Skipped
# without Citus.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use MmCitus;

mm_citus_require();

my ($coord, @workers) = mm_citus_cluster(workers => 2);
$coord->safe_psql('postgres', 'CREATE EXTENSION matchmaking');
is($coord->safe_psql('postgres', 'SELECT mm.distribute(8)'), 't', 'mm.distribute(8)');

sub q1 { return $coord->safe_psql('postgres', $_[0]); }

# the port of the node that holds a player's claims
sub player_port
{
	return q1(qq{SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
		WHERE p.shardid = get_shard_id_for_distribution_column('mm.active_players', '$_[0]')
		  AND n.noderole = 'primary'});
}

# a queue and a player on each worker, by port
my (%queue_on, %player_on);
for my $i (1 .. 60)
{
	$queue_on{ q1("SELECT node_port FROM mm.queue_node('hq_$i')") } //= "hq_$i";
	$player_on{ player_port("hp_$i") } //= "hp_$i";
}
my @ports = map { $_->port } @workers;
my ($qa, $qb) = @queue_on{@ports};
my ($pa, $pb) = @player_on{@ports};
ok($qa && $qb && $pa && $pb, 'a queue and a player on each worker');
for my $q ($qa, $qb)
{
	q1(qq{SELECT mm.create_queue('$q', '{"teams": [{"name": "red", "min": 1, "max": 1},
		{"name": "blue", "min": 1, "max": 1}]}')});
}

# The shards a value reaches in each co-location group: a queue's in the
# queue's tables, a player's in the player's, and every reference table's.
q1(q{CREATE FUNCTION public.allowed_shards(queues text[], players text[]) RETURNS SETOF bigint
	LANGUAGE sql AS $$
	SELECT get_shard_id_for_distribution_column(p.logicalrelid, v.value)
	  FROM pg_dist_partition p
	  JOIN (SELECT unnest(queues) AS value, 'mm.tickets'::regclass AS first
			UNION ALL SELECT unnest(players), 'mm.active_players'::regclass) v
		ON p.colocationid = (SELECT f.colocationid FROM pg_dist_partition f WHERE f.logicalrelid = v.first)
	UNION
	SELECT s.shardid FROM pg_dist_shard s JOIN pg_dist_partition p USING (logicalrelid)
	 WHERE p.partmethod = 'n'
	$$});

# every worker logs the commands it issues and runs on its own shards
for my $w (@workers)
{
	$w->safe_psql('postgres', q{ALTER SYSTEM SET citus.log_remote_commands = on;
		ALTER SYSTEM SET citus.log_local_commands = on; ALTER SYSTEM SET log_min_messages = notice});
	$w->safe_psql('postgres', 'SELECT pg_reload_conf()');
}

# Runs a call on the coordinator; returns (its output, the number of
# commands it issued on the shards, the shards it reached that neither its
# queues nor its players hold, as "table_shardid", the nodes it sent a
# command to that hold none of their shards, as "node_port", and those
# commands).
sub shards_of
{
	my ($sql, $queues, $players) = @_;
	my @offsets = map { -s $_->logfile } @workers;
	my ($ret, $out, $err) = $coord->psql('postgres', qq{SET citus.log_remote_commands = on;
		SET citus.log_local_commands = on; SET client_min_messages = notice; $sql},
		on_error_stop => 1);
	die "$sql failed: $err" if $ret;
	my $text = $err;
	# of the workers' logs, the lines of the sessions Citus opened for the
	# call (application citus_internal): a node's background workers and
	# tick loops log their own commands there too
	$text .= join("\n", grep { /\bcitus_internal\b/ } split /\n/, slurp_file($workers[$_]->logfile, $offsets[$_])) . "\n"
	  for 0 .. $#workers;
	my @commands = grep { /(issuing|executing the command locally)/ && /mm\.\w+_\d{6,}/ } split /\n/, $text;
	my %shards;
	$shards{$2} = $1 while $text =~ /mm\.(\w+?)_(\d{6,})\b/g;
	my $allowed_call = 'public.allowed_shards(ARRAY['
	  . join(',', map { "'" . s/'/''/gr . "'" } @$queues) . ']::text[], ARRAY['
	  . join(',', map { "'" . s/'/''/gr . "'" } @$players) . ']::text[])';
	my %allowed = map { $_ => 1 } split /\n/, q1("SELECT $allowed_call");
	my @extra = sort map { "$shards{$_}_$_" } grep { !$allowed{$_} } keys %shards;
	# and the nodes it sent a command to (a transaction's BEGIN, an
	# intermediate result's COPY, a commit) that hold none of those shards
	my %nodes_allowed = map { $_ => 1 } split /\n/,
	  q1('SELECT DISTINCT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
		  JOIN pg_dist_shard s USING (shardid) JOIN pg_dist_partition d USING (logicalrelid)
		 WHERE d.partmethod = \'h\' AND p.shardid IN (SELECT ' . $allowed_call . ')');
	# (from the call's own output, which carries the workers' notices: the
	# workers' logs also hold their maintenance daemons' commands)
	my @lines = split /\n/, $err;
	my %nodes;
	for my $i (0 .. $#lines - 1)
	{
		next unless $lines[$i] =~ /issuing /;
		$nodes{$1} = 1 if $lines[ $i + 1 ] =~ /on server \S*:(\d+) connectionId/;
	}
	push @extra, map { "node_$_" } sort grep { !$nodes_allowed{$_} } keys %nodes;
	return ($out, scalar @commands, \@extra, \@commands);
}

# the players whose claims a queue's tick drops (released by calls that
# ended their tickets or matches, mm.pending_releases)
sub released_in
{
	return split /\n/, q1(qq{SELECT DISTINCT player_id FROM mm.pending_releases WHERE queue = '$_[0]'});
}

my $now = "'2026-06-01 00:00:00+00'";
my %ticket;
for my $case ([ $qa, $pa ], [ $qa, $pb ], [ $qb, $pb ], [ $qb, $pa ])
{
	my ($q, $p) = @$case;
	my ($id, $n, $extra) = shards_of(qq{SELECT mm.create_ticket('$q', '[{"id": "$p"}]', $now)}, [$q], []);
	like($id, qr/^\d+$/, "create_ticket($q, $p)");
	is_deeply($extra, [], "create_ticket($q, $p) reaches only its queue's shards ($n commands)");
	$ticket{$q}{$p} = $id;
	# the next case takes the same players again; the claim's release is
	# left to the queue's tick
	my (undef, $cn, $cextra, $ccommands) = shards_of(qq{SELECT mm.cancel_ticket('$q', $id)}, [$q], []);
	is_deeply($cextra, [], "cancel_ticket($q, id) reaches only its queue's shards ($cn commands)");
	# the ticket's move and the end of its pending claim name the queue's
	# shards (mm.end_tickets, src/ticket_end.c): no command of Citus writes them
	is_deeply([ grep { /(DELETE FROM|INSERT INTO) mm\.(tickets_active|tickets_ended|pending_claims)_\d/ } @$ccommands ],
		[], "cancel_ticket($q, id) moves the ticket on the queue's shards by name");
	is(q1(qq{SELECT status FROM mm.tickets WHERE queue = '$q' AND id = $id}), 'cancelled',
		"cancel_ticket($q, id): the ticket is cancelled");
}

# a batch of two tickets: the queue's shards only, as one ticket
my ($ids, $bn, $bextra) = shards_of(
	qq{SELECT mm.create_tickets('$qb', ARRAY['[{"id": "bat1"}]', '[{"id": "bat2"}]']::jsonb[], $now)},
	[$qb], []);
like($ids, qr/^\{\d+,\d+\}$/, 'create_tickets, two tickets');
is_deeply($bextra, [], "create_tickets($qb, ...) reaches only its queue's shards ($bn commands)");
q1(qq{SELECT mm.cancel_ticket('$qb', id) FROM unnest('$ids'::bigint[]) id});

# the tick claims pending players in multi-row INSERTs of literals: ids
# that need quoting are held and claimed as they are, each by its ticket
my $odd = q1(q{SELECT mm.create_tickets('} . $qb . q{', ARRAY['[{"id": "o''neil"}]', '[{"id": "back\\\\slash"}]',
	'[{"id": "x), (y"}]']::jsonb[], } . $now . q{)});
my $odd_check = qq{SELECT string_agg(a.player_id || '=' || (a.ticket_id = (('$odd'::bigint[])[o.i]))::text, ' ' ORDER BY o.i)
	FROM unnest(ARRAY['o''neil', E'back\\\\slash', 'x), (y']) WITH ORDINALITY o(p, i)
	JOIN mm.%s a ON a.player_id = o.p};
is(q1(sprintf($odd_check, 'pending_claims')), q{o'neil=true back\slash=true x), (y=true},
	'a batch holds players whose ids need quoting');
is(q1(qq{SELECT count(*) FROM mm.active_players a WHERE a.ticket_id = ANY ('$odd'::bigint[])}), '0',
	'no claim before the tick');
my (undef, $sn, $sextra) = shards_of(qq{SELECT mm.tick('$qb', '2026-06-01 00:00:01+00')}, [$qb],
	['o\'neil', 'back\\slash', 'x), (y', released_in($qb)]);
is_deeply($sextra, [], "the tick that claims them reaches only its queue's and their shards ($sn commands)");
is(q1(sprintf($odd_check, 'active_players')), q{o'neil=true back\slash=true x), (y=true},
	'the tick claims them as they are');
q1(qq{SELECT mm.cancel_ticket('$qb', id) FROM unnest('$odd'::bigint[]) id});

# the direct path (docs/scale-out.md): a ticket sent to its queue's node
# takes its id from that node's range and claims its player as through the
# coordinator; a queue that does not exist is 42704 on every path
my ($wqa) = grep { $_->port == q1("SELECT node_port FROM mm.queue_node('$qa')") } @workers;
my $direct = $wqa->safe_psql('postgres', qq{SELECT mm.create_ticket('$qa', '[{"id": "direct1"}]', $now)});
ok($direct >= 2**48 * q1(qq{SELECT groupid FROM pg_dist_node WHERE nodeport = @{[$wqa->port]}}),
	'a ticket created on the queue\'s node has an id of that node\'s range');
is(q1(qq{SELECT ticket_id FROM mm.pending_claims WHERE queue = '$qa' AND player_id = 'direct1'})
	  . '|' . q1(qq{SELECT status FROM mm.tickets_active WHERE queue = '$qa' AND id = $direct}),
	"$direct|searching", 'the coordinator sees the ticket and its pending claim');
q1(qq{SELECT mm.cancel_ticket('$qa', $direct)});
for my $node ($coord, $wqa)
{
	my ($ret, $out, $err) = $node->psql('postgres',
		qq{\\set VERBOSITY verbose\nSELECT mm.create_ticket('nowhere', '[{"id": "direct2"}]', $now)});
	like($err, qr/ERROR:  42704: queue "nowhere" does not exist/,
		'a queue that does not exist: 42704 on the ' . ($node == $coord ? 'coordinator' : 'worker'));
}

# a match in $qa: heartbeat, the tick, get_assignment, assign, complete
my $t1 = q1(qq{SELECT mm.create_ticket('$qa', '[{"id": "$pa"}]', $now)});
my $t2 = q1(qq{SELECT mm.create_ticket('$qa', '[{"id": "$pb"}]', $now)});
my ($hb, $hn, $hextra) = shards_of(qq{SELECT mm.heartbeat('$qa', $t1, '2026-06-01 00:00:01+00')}, [$qa], []);
is_deeply($hextra, [], "heartbeat($qa, id) reaches only the queue's shards ($hn commands)");
is($hb, 't', "heartbeat($qa, id) through the coordinator beats the ticket");
is($hn, 0, "heartbeat($qa, id) updates the queue's shard by name, through no command of Citus");
is(q1(qq{SELECT mm.heartbeat('$qa', $t1, '2026-06-01 00:00:00.5+00')}), 't', 'an earlier beat is taken');
# in a transaction block the coordinator runs the call: through Citus
is(q1(qq{BEGIN; SELECT mm.heartbeat('$qa', $t2, '2026-06-01 00:00:01.5+00'); COMMIT}), 't',
	'heartbeat in a transaction block on the coordinator');
is(q1(qq{SELECT string_agg(extract(epoch FROM heartbeat_at - '2026-06-01 00:00:00+00')::float8::text, ' ' ORDER BY id)
	FROM mm.tickets_active WHERE queue = '$qa' AND id IN ($t1, $t2)}), '1 1.5',
	'each beat is kept, and an earlier one does not move it back');
my (undef, $tn, $textra) = shards_of(qq{SELECT mm.tick('$qa', '2026-06-01 00:00:02+00')}, [$qa],
	[$pa, $pb, released_in($qa)]);
is_deeply($textra, [], "tick($qa) reaches only its queue's and its players' shards ($tn commands)");
my $m = q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qa'});
ok($m, 'the tick formed a match');
my (undef, $an, $aextra, $acommands) = shards_of(qq{SELECT mm.assign('$qa', $m, 'udp://10.0.0.1:7777')}, [$qa], []);
is_deeply($aextra, [], "assign($qa, id) reaches only the queue's shards ($an commands)");
# mm.lock_match locks the match on the queue's shard by name (src/match_lock.c)
is_deeply([ grep { /FOR UPDATE/ } @$acommands ], [], 'assign locks its match through no command of Citus');
my ($ga, $gn, $gextra) =
  shards_of(qq{SELECT match_status FROM mm.get_assignment('$qa', $t1)}, [$qa], []);
is($ga, 'assigned', 'get_assignment by (queue, id)');
is_deeply($gextra, [], "get_assignment($qa, id) reaches only the queue's shards ($gn commands)");
# on the queue's node its reads name the queue's shards (src/ticket_assignment.c):
# no command that Citus plans and runs
is($gn, 0, 'get_assignment reads the queue\'s shards by name, through no command of Citus');

# --- errors as on one node ---
sub fails
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $coord->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $err;
}
# $pa and $pb are in the assigned match; a new player holds a ticket in $qb
my $t3 = q1(qq{SELECT mm.create_ticket('$qb', '[{"id": "busy_b"}]', $now)});
like(fails(qq{SELECT mm.create_ticket('$qb', '[{"id": "busy_b"}]', $now)}),
	qr/ERROR:  23505: player "busy_b" already has an active ticket\nDETAIL:  Ticket $t3 holds the player and is searching/,
	'a player pending in the queue: 23505 with the documented message');
like(fails(qq{SELECT mm.create_tickets('$qb', ARRAY['[{"id": "fresh1"}]', '[{"id": "busy_b"}]']::jsonb[], $now)}),
	qr/ERROR:  23505: player "busy_b" already has an active ticket\nDETAIL:  Ticket $t3 holds the player/,
	'a player pending in the queue, in a batch: 23505');
like(fails(qq{SELECT mm.create_tickets('$qa', ARRAY['[{"id": "twice"}]', '[{"id": "twice"}]']::jsonb[], $now)}),
	qr/ERROR:  23505: player "twice" at players\[2\]\[0\] is also at players\[1\]\[0\]/,
	'a player twice in a batch: 23505 naming both places, as on one node');
like(fails(qq{SELECT mm.create_tickets('$qa', ARRAY['[{"id": "fine"}]', '[{"id": "twice2"}]',
	'[{"id": "twice2"}]']::jsonb[], $now)}),
	qr/ERROR:  23505: player "twice2" at players\[3\]\[0\] is also at players\[2\]\[0\]/,
	'a player twice in a batch, after another ticket: 23505 naming both places');
# an invalid ticket of a batch is named by its path, as on one node, on
# the coordinator and on the queue's node
for my $node ($coord, $wqa)
{
	my ($ret, $out, $err) = $node->psql('postgres', qq{\\set VERBOSITY verbose
		SELECT mm.create_tickets('$qa', ARRAY['[{"id": "fine"}]', '{"id": "x"}']::jsonb[], $now)});
	like($err, qr/ERROR:  22023: invalid ticket at players\[2\]: must be an array/,
		'an invalid ticket in a batch names its path on the ' . ($node == $coord ? 'coordinator' : 'worker'));
}
# inside a transaction block Citus does not route the call: the batch runs
# on the coordinator through the distributed tables, with the same results
my ($txn) = $coord->safe_psql('postgres', qq{BEGIN;
	SELECT mm.create_tickets('$qa', ARRAY['[{"id": "txn1"}]', '[{"id": "txn2"}]']::jsonb[], $now);
	COMMIT;}) =~ /^\{(\d+,\d+)\}$/m;
ok($txn, 'a batch in a transaction block on the coordinator is written');
is(q1(qq{SELECT string_agg(player_id || '=' || ticket_id, ' ' ORDER BY player_id) FROM mm.pending_claims
	WHERE queue = '$qa' AND player_id IN ('txn1', 'txn2')}),
	join(' ', map { "txn$_=" . (split /,/, $txn // '')[$_ - 1] } 1, 2), 'and holds its players by their tickets');
like(fails(qq{BEGIN; SELECT mm.create_tickets('$qa', ARRAY['[{"id": "txn3"}]', '[{"id": "txn1"}]']::jsonb[], $now)}),
	qr/ERROR:  23505: player "txn1" already has an active ticket/, 'a pending player there: 23505');
q1(qq{SELECT mm.cancel_ticket('$qa', id) FROM unnest('{$txn}'::bigint[]) id}) if $txn;
is(q1(q{SELECT count(*) FROM mm.active_players WHERE player_id IN ('fresh1', 'twice', 'fine', 'twice2')})
	  . '|' . q1(q{SELECT count(*) FROM mm.pending_claims WHERE player_id IN ('fresh1', 'twice', 'fine', 'twice2')})
	  . '|' . q1(q{SELECT count(*) FROM mm.tickets WHERE players @> '[{"id": "fine"}]' OR players @> '[{"id": "fresh1"}]'}),
	'0|0|0', 'the refused batches hold, claim and write no one');

# a single ticket of a player in a live match (the player's shard on the
# other worker) is written, and the queue's tick cancels it: player_busy,
# announced on the queue's node and verifiable there
my ($wa, $wb) = @workers;
my $listener = $wb->background_psql('postgres');
$listener->query_safe('SET client_min_messages = warning; LISTEN mm_events');
my $t4 = q1(qq{SELECT mm.create_ticket('$qb', '[{"id": "$pa"}]', $now)});
like($t4, qr/^\d+$/, 'a ticket of a player in a live match is written on the queue\'s node');
q1(qq{SELECT mm.tick('$qb', '2026-06-01 00:00:03+00')});
is(q1(qq{SELECT status || ':' || cancel_reason FROM mm.tickets WHERE queue = '$qb' AND id = $t4}),
	'cancelled:player_busy', 'the tick cancels it (player_busy)');
is(q1(qq{SELECT string_agg(ticket_id::text, ',') FROM mm.active_players WHERE player_id = '$pa'}), $t1,
	'the player keeps the one claim of its match');
my $heard = $listener->query_safe('SELECT 1');
my ($busy_event) = $heard =~ /payload "(\{"event": "ticket_cancelled", "queue": "$qb", "reason": "player_busy"[^\n]*\})"/;
ok($busy_event && $busy_event =~ /"tickets": \[$t4\]/, 'ticket_cancelled with reason player_busy on the queue\'s node');
is($wb->safe_psql('postgres', 'SELECT mm.verify_event($e$' . ($busy_event // '') . '$e$)'), 't',
	'and it verifies');
$listener->quit;
q1(qq{SELECT mm.cancel_ticket('$qb', $t3)});

# a batch reads no player's shard either: its ticket of a player in a live
# match is written, and the tick cancels that one alone
my ($b1, $b2) = q1(qq{SELECT mm.create_tickets('$qb', ARRAY['[{"id": "fresh2"}]', '[{"id": "$pa"}]']::jsonb[], $now)})
  =~ /^\{(\d+),(\d+)\}$/;
ok($b1 && $b2, 'a batch with a player in a live match is written');
q1(qq{SELECT mm.tick('$qb', '2026-06-01 00:00:03+00')});
is(q1(qq{SELECT string_agg(status || ':' || coalesce(cancel_reason, '-'), ' ' ORDER BY id) FROM mm.tickets
	WHERE queue = '$qb' AND id IN ($b1, $b2)}),
	'searching:- cancelled:player_busy', 'the tick claims the free player and cancels the busy one (player_busy)');
is(q1(q{SELECT ticket_id FROM mm.active_players WHERE player_id = 'fresh2'}), $b1, 'fresh2 is claimed by its ticket');
q1(qq{SELECT mm.cancel_ticket('$qb', $b1)});

# --- one player, two queues on two workers, two ticks at once ---
# both tickets are written (nothing is shared at creation); the tick of the
# first queue, held open on its node, claims the player; the other tick
# waits for that claim and then cancels its ticket (COMMIT) or claims the
# player itself (ROLLBACK, the first queue's ticket cancelled by its next
# tick): one ticket and one claim of the player in the end
for my $end ('COMMIT', 'ROLLBACK')
{
	my $p = "dup_$end";
	my $ta = q1(qq{SELECT mm.create_ticket('$qa', '[{"id": "$p"}]', $now)});
	my $tb = $wb->safe_psql('postgres', qq{SELECT mm.create_ticket('$qb', '[{"id": "$p"}]', $now)});
	ok($ta && $tb, "$end: two tickets of $p in two queues are written");
	# (the workers log their commands to the client: NOTICEs off here)
	my $s1 = $wa->background_psql('postgres');
	$s1->query_safe(qq{SET client_min_messages = warning; BEGIN; SELECT mm.tick('$qa', '2026-06-01 00:00:04+00')});
	my ($o2, $e2) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-XAtq', '-h', $wb->host, '-p', $wb->port, '-d', 'postgres',
			'-c', 'SET client_min_messages = warning', '-c', qq{SELECT mm.tick('$qb', '2026-06-01 00:00:04+00')}
		],
		'>', \$o2, '2>', \$e2);
	my $waiting = 0;
	for my $try (1 .. 300)
	{
		$waiting = $_->safe_psql('postgres',
			q{SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'}) + $waiting
		  for @workers;
		last if $waiting;
		usleep(100_000);
	}
	ok($waiting, "$end: the second tick waits for the first's claim of $p");
	$s1->query_safe($end);
	$s1->quit;
	$h->finish;
	is($e2, '', "$end: the second tick ends without an error");
	q1(qq{SELECT mm.tick('$qa', '2026-06-01 00:00:05+00')});
	my ($kept, $lost) = $end eq 'COMMIT' ? ($ta, $tb) : ($tb, $ta);
	is(q1(qq{SELECT status || ':' || coalesce(cancel_reason, '-') FROM mm.tickets WHERE id = $lost}),
		'cancelled:player_busy',
		"$end: the later tick cancels its ticket (player_busy)");
	is(q1(qq{SELECT count(*) FROM mm.tickets_active WHERE players \@> '[{"id": "$p"}]'})
		  . '|' . q1(qq{SELECT string_agg(ticket_id::text, ',') FROM mm.active_players WHERE player_id = '$p'})
		  . '|' . q1(qq{SELECT count(*) FROM mm.pending_claims WHERE player_id = '$p'}),
		"1|$kept|0", "$end: one active ticket of $p, holding the one claim");
	q1(qq{SELECT mm.cancel_ticket('$qa', $ta), mm.cancel_ticket('$qb', $tb)});
}

# --- a new queue on shards whose statistics predate it ---
# the tick's reads of a queue's pending claims join them with its tickets;
# planned from statistics in which the queue has no row (its shards
# analyzed before it got tickets), a nested loop over the two scans is
# quadratic in the queue's new tickets.  The plans the tick logs
# (auto_explain) join them otherwise, and every ticket is matched.
my ($stale) = grep { q1("SELECT node_port FROM mm.queue_node('$_')") == $ports[0] } map { "stale_$_" } 1 .. 60;
q1(qq{SELECT mm.create_queue('$stale', '{"teams": [{"name": "red", "min": 1, "max": 1},
	{"name": "blue", "min": 1, "max": 1}]}')});
$wa->safe_psql('postgres', 'VACUUM ANALYZE');
q1(qq{SELECT cardinality(mm.create_tickets('$stale',
	ARRAY(SELECT jsonb_build_array(jsonb_build_object('id', 'stale-' || i)) FROM generate_series(1, 400) i), $now))});
my $log_from = -s $wa->logfile;
# Citus's own EXPLAIN of its distributed statements is off: under
# auto_explain it reads the parameters of a PL/pgSQL statement after they
# are gone ("cache lookup failed for type ...", now and then; Citus issue
# 7596); the tick's statements on the shards are plain PostgreSQL plans
$wa->safe_psql('postgres', qq{LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;
	SET citus.explain_distributed_queries = off;
	SET auto_explain.log_nested_statements = on; SET client_min_messages = warning;
	SELECT mm.tick('$stale', '2026-06-01 00:00:01+00')});
my $plans = slurp_file($wa->logfile, $log_from);
for my $statement ('WITH locked AS', 'SELECT id, created_at, players, ctid')
{
	my ($plan) = $plans =~ /Query Text: \Q$statement\E.*?\n(.*?)(?:\n\S|\z)/s;
	ok(defined $plan && $plan =~ /Join/, "the tick's plan of \"$statement ...\" on the shards is logged");
	unlike($plan // '', qr/Nested Loop/, "\"$statement ...\" joins the queue's tickets and claims without a nested loop");
}
is(q1(qq{SELECT count(*) FILTER (WHERE status = 'matched') FROM mm.tickets WHERE queue = '$stale'}), '400',
	"the tick matches the new queue's 400 tickets");

# --- every other lifecycle form by (queue, id) ---
# A duel with acceptance and ratings on worker A, its players one on each
# worker: each call reaches its queue's shards and, where it reads the
# players' claims (requeue) or ratings (a result), its players' (shards and
# nodes).  A call that ends a ticket or a match leaves the release of its
# players' claims to the queue's tick (mm.pending_releases).
my $qf = (grep { q1("SELECT node_port FROM mm.queue_node('$_')") == $ports[0] } map { "forms_$_" } 1 .. 60)[0];
q1(qq{SELECT mm.create_queue('$qf', '{"teams": [{"name": "red", "min": 1, "max": 1},
	{"name": "blue", "min": 1, "max": 1}], "acceptance_timeout_seconds": 60, "rating": {"system": "elo"},
	"auto_backfill": false}')});
my ($fa, $fb) = ((grep { player_port($_) == $ports[0] } map { "fa_$_" } 1 .. 40)[0],
	(grep { player_port($_) == $ports[1] } map { "fb_$_" } 1 .. 40)[0]);
my %form_at = (sec => 10);
sub form_now { return "'2026-06-01 00:01:" . sprintf('%02d', $form_at{sec}++) . "+00'" }
sub form_match
{
	q1(qq{SELECT mm.create_ticket('$qf', '[{"id": "$_"}]', $now)}) for ($fa, $fb);
	q1(qq{SELECT mm.tick('$qf', } . form_now() . ')');
	return q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qf'});
}
sub form_call
{
	my ($call, $players, $want) = @_;
	my ($out, $n, $extra, $commands) = shards_of("SELECT $call", [$qf], $players);
	my ($name) = $call =~ /\bmm\.(\w+)\(/;
	is($out, $want, "$name: $want") if defined $want;
	is_deeply($extra, [], "$name($qf, id) reaches only its queue's" . (@$players ? " and its players'" : '')
		  . " shards and nodes ($n commands)");
	return $commands;
}
my $f1 = form_match();
form_call(qq{mm.accept_match('$qf', $f1, '$fa', true, } . form_now() . ')', [], 'proposed');
form_call(qq{mm.accept_match('$qf', $f1, '$fb', true, } . form_now() . ')', [], 'ready');
form_call(qq{mm.requeue_match('$qf', $f1, 'server_crashed', } . form_now() . ')', [$fa, $fb]);
is(q1(qq{SELECT string_agg(status, ' ') FROM mm.tickets WHERE queue = '$qf' AND match_id IS NULL}),
	'searching searching', 'requeue_match: both tickets search again');
q1(qq{SELECT mm.tick('$qf', } . form_now() . ')');
my $f2 = q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qf'});
form_call(qq{mm.accept_match('$qf', $f2, '$fa', false, } . form_now() . ')', [], 'cancelled');
q1(qq{SELECT mm.cancel_ticket('$qf', $_)}) for split /\n/, q1(qq{SELECT id FROM mm.tickets_active WHERE queue = '$qf'});
my $f3 = form_match();
q1(qq{SELECT mm.accept_match('$qf', $f3, p, true, } . form_now() . ") FROM unnest(ARRAY['$fa', '$fb']) p");
form_call(qq{mm.leave_match('$qf', $f3, '$fb', } . form_now() . ')', []);
form_call(qq{mm.request_backfill('$qf', $f3, '{"red": 0, "blue": 1}', } . form_now() . ')', []);
form_call(qq{mm.cancel_backfill('$qf', $f3, } . form_now() . ')', [], 't');
form_call(qq{mm.complete_match('$qf', $f3, } . form_now() . ')', []);
my $f4 = form_match();
q1(qq{SELECT mm.accept_match('$qf', $f4, p, true, } . form_now() . ") FROM unnest(ARRAY['$fa', '$fb']) p");
form_call(qq{count(*) FROM mm.report_result('$qf', $f4, '{"red": 1, "blue": 2}', } . form_now() . ')',
	[$fa, $fb], '2');
ok(q1(qq{SELECT count(*) FROM mm.pending_releases WHERE queue = '$qf'}) > 0,
	'the released claims wait for the queue\'s tick');
q1(qq{SELECT mm.tick('$qf', } . form_now() . ')');
is(q1(qq{SELECT count(*) FROM mm.active_players WHERE player_id IN ('$fa', '$fb')})
	  . '|' . q1(qq{SELECT count(*) FROM mm.pending_releases WHERE queue = '$qf'}), '0|0',
	'the forms leave no claim behind once the queue has ticked');

# --- a released claim is taken over before its queue ticks ---
# fa and fb finish a match of qf (worker A); before qf ticks, fb's new
# ticket in a queue of worker B is claimed by that queue's tick (the claim
# of the ended match is stale), and forget_player takes fa's; a player
# still in a live match keeps the new ticket out (player_busy)
my $f5 = form_match();
q1(qq{SELECT mm.accept_match('$qf', $f5, p, true, } . form_now() . ") FROM unnest(ARRAY['$fa', '$fb']) p");
my $claims_sql = qq{SELECT string_agg(player_id || ':' || ticket_id, ',' ORDER BY player_id) FROM mm.active_players
	WHERE player_id IN ('$fa', '$fb')};
my $f5_claims = q1($claims_sql);
my $f5_ticket = q1(qq{SELECT ticket_id FROM mm.active_players WHERE player_id = '$fb'});
my $busy = q1(qq{SELECT mm.create_ticket('$qb', '[{"id": "$fb"}]', $now)});
q1(qq{SELECT mm.tick('$qb', '2026-06-01 00:00:06+00')});
is(q1(qq{SELECT status || ':' || cancel_reason FROM mm.tickets WHERE queue = '$qb' AND id = $busy})
	  . '|' . q1(qq{SELECT ticket_id FROM mm.active_players WHERE player_id = '$fb'}),
	"cancelled:player_busy|$f5_ticket", 'a player of a live match: the other queue\'s tick cancels the ticket');
my $f5_commands = form_call(qq{mm.complete_match('$qf', $f5, } . form_now() . ')', []);
is(q1($claims_sql), $f5_claims, 'complete_match leaves the claims to the queue\'s tick');
is(q1(qq{SELECT string_agg(player_id || ':' || ticket_id, ',' ORDER BY player_id) FROM mm.pending_releases
	WHERE queue = '$qf'}), $f5_claims, 'complete_match: the match\'s claims wait in the queue\'s pending releases');
# on the queue's node the release goes straight into the queue's shard, by
# name (mm.release_claims_on_queue_node), not through a command Citus plans
is_deeply([ grep { /pending_releases_\d/ } @$f5_commands ], [],
	'complete_match writes the pending releases into the queue\'s shard by name');
my $next = q1(qq{SELECT mm.create_ticket('$qb', '[{"id": "$fb"}]', $now)});
q1(qq{SELECT mm.tick('$qb', '2026-06-01 00:00:07+00')});
is(q1(qq{SELECT status FROM mm.tickets WHERE queue = '$qb' AND id = $next})
	  . '|' . q1(qq{SELECT ticket_id FROM mm.active_players WHERE player_id = '$fb'}),
	"searching|$next", 'the other queue\'s tick takes the released claim over: the new ticket searches');
like(q1(qq{SELECT mm.forget_player('$fa')}), qr/"deleted"/, 'forget_player takes a released claim over');
q1(qq{SELECT mm.tick('$qf', } . form_now() . ')');
is(q1(qq{SELECT ticket_id FROM mm.active_players WHERE player_id = '$fb'})
	  . '|' . q1(qq{SELECT count(*) FROM mm.active_players WHERE player_id = '$fa'})
	  . '|' . q1(qq{SELECT count(*) FROM mm.pending_releases WHERE queue = '$qf'}),
	"$next|0|0", 'the queue\'s tick then drops only what is still its own');
# where the queue's shard is not (the coordinator; worker B), the release
# goes through Citus: mm.release_queue_claims writes the same rows
is(q1(qq{SELECT mm.release_claims_on_queue_node('$qf', ARRAY['nobody'], ARRAY[1::bigint])})
	  . '|' . $workers[1]->safe_psql('postgres',
		qq{SELECT mm.release_claims_on_queue_node('$qf', ARRAY['nobody'], ARRAY[1::bigint])})
	  . '|' . q1(qq{SELECT count(*) FROM mm.pending_releases WHERE queue = '$qf'}),
	'f|f|0', 'away from the queue\'s node, nothing is written by shard name');
q1(qq{SELECT mm.release_queue_claims('$qf', ARRAY['nobody', 'someone'], ARRAY[1, 2]::bigint[])});
is(q1(qq{SELECT string_agg(player_id || ':' || ticket_id, ',' ORDER BY player_id) FROM mm.pending_releases
	WHERE queue = '$qf'}), 'nobody:1,someone:2', 'away from the queue\'s node, release_queue_claims writes through Citus');
is($workers[0]->safe_psql('postgres',
		qq{SELECT mm.release_claims_on_queue_node('$qf', ARRAY['nobody', 'third'], ARRAY[1, 3]::bigint[])})
	  . '|' . q1(qq{SELECT string_agg(player_id || ':' || ticket_id, ',' ORDER BY player_id) FROM mm.pending_releases
		WHERE queue = '$qf'}),
	't|nobody:1,someone:2,third:3', 'on the queue\'s node, by shard name, a pair already waiting skipped');
q1(qq{SELECT mm.tick('$qf', } . form_now() . ')');
is(q1(qq{SELECT count(*) FROM mm.pending_releases WHERE queue = '$qf'}), '0',
	'the queue\'s tick applies releases of claims that no longer exist');
# a statement by shard name goes past Citus: not when Citus would reach
# this node's shards over a connection of its own (local execution off),
# and not for a role that does not own the tables (lock_shard_metadata
# requires the owner): both go through Citus and work
my $lx = q1(qq{SELECT mm.create_ticket('$qf', '[{"id": "lx1"}]', $now)});
is($workers[0]->safe_psql('postgres', qq{SET citus.enable_local_execution = off; SET statement_timeout = '30s';
	SELECT mm.cancel_ticket('$qf', $lx)}), 't', 'with local execution off, cancel_ticket goes through Citus');
is(q1(qq{SELECT status FROM mm.tickets WHERE queue = '$qf' AND id = $lx}), 'cancelled',
	'with local execution off, the ticket is cancelled');
q1(q{CREATE ROLE hot_admin IN ROLE mm_admin});
is($workers[0]->safe_psql('postgres', qq{SET ROLE hot_admin; SELECT ticket_status FROM mm.ticket_assignment('$qf', $lx)}),
	'cancelled', 'an admin who does not own the tables reads a ticket\'s assignment on the queue\'s node');
q1(qq{SELECT mm.tick('$qf', } . form_now() . ')');
# a ticket of several queues (of one shard) claims its players when it is
# created: refused (23505) while the claim holds, and taking it over once
# the claim's ticket has ended, before that queue's tick
my ($same) = grep {
	q1(qq{SELECT get_shard_id_for_distribution_column('mm.tickets', '$_')
		= get_shard_id_for_distribution_column('mm.tickets', '$qf')}) eq 't'
} map { "same_$_" } 1 .. 80;
q1(qq{SELECT mm.create_queue('$same', '{"teams": [{"name": "red", "min": 1, "max": 1},
	{"name": "blue", "min": 1, "max": 1}]}')});
like(fails(qq{SELECT mm.create_ticket(ARRAY['$qf', '$same'], '[{"id": "$fb"}]', $now)}),
	qr/ERROR:  23505: player "$fb" already has an active ticket/,
	'a ticket of several queues: 23505 while the player\'s searching ticket holds the claim');
q1(qq{SELECT mm.cancel_ticket('$qb', $next)});
my $multi = q1(qq{SELECT mm.create_ticket(ARRAY['$qf', '$same'], '[{"id": "$fb"}]', $now)});
is(q1(qq{SELECT ticket_id FROM mm.active_players WHERE player_id = '$fb'})
	  . '|' . q1(qq{SELECT count(*) FROM mm.pending_releases WHERE queue = '$qb' AND player_id = '$fb'}),
	"$multi|1", 'then it takes the claim the cancel released over, before the cancelled ticket\'s queue ticks');
q1(qq{SELECT mm.cancel_ticket('$qf', $multi)});

# --- kill -9 of a worker under ticket load ---
# a session creating tickets in both queues (those that need the dead
# worker fail, the loop goes on)
my $load = $coord->background_psql('postgres', on_error_stop => 0);
$load->query_until(qr/started/, qq{\\echo started
	DO \$\$ BEGIN FOR i IN 1 .. 300 LOOP
		BEGIN
			PERFORM mm.create_ticket(CASE i % 2 WHEN 0 THEN '$qa' ELSE '$qb' END,
									 jsonb_build_array(jsonb_build_object('id', 'load_' || i)), $now);
		EXCEPTION WHEN OTHERS THEN NULL;
		END;
		PERFORM pg_sleep(0.01);
	END LOOP; END \$\$;
});
usleep(500_000);
$wa->kill9;
my $dead_port = $wa->port;
eval { $load->quit };
# the other worker's queue takes tickets (written on its node alone, the
# players anywhere) and ticks: players on the live worker are claimed and
# matched, a player on the dead one waits, with a WARNING naming the node
my @live = grep { player_port($_) == $wb->port } map { "after_$_" } 1 .. 40;
my ($on_dead) = grep { player_port($_) == $dead_port } map { "after_dead_$_" } 1 .. 40;
my $made = 0;
for my $p (@live[0 .. 3], $on_dead)
{
	my ($ret, $out, $err) = $coord->psql('postgres', qq{SELECT mm.create_ticket('$qb', '[{"id": "$p"}]', $now)});
	$made++ if $ret == 0 && $out =~ /^\d+$/;
	diag($err) if $ret;
}
is($made, 5, "with " . $wa->name . " dead, tickets of $qb are created, also for a player on the dead worker");
my ($tret, $tout, $terr) = $coord->psql('postgres', qq{SELECT mm.tick('$qb', '2026-06-01 00:00:10+00')});
ok($tret == 0 && $tout >= 2, "$qb keeps ticking ($tout matches)");
like($terr, qr/WARNING:  queue "$qb": the tickets of players on a node out of reach wait for a later tick/,
	'the tick warns about the players it could not claim');
is($wb->safe_psql('postgres', qq{SELECT count(*) FROM mm.active_players
	WHERE player_id = ANY (ARRAY['@{[join "','", @live[0 .. 3]]}'])}), '4',
	'the players on the live worker are claimed');
is($wb->safe_psql('postgres', qq{SELECT status FROM mm.tickets_active
	WHERE queue = '$qb' AND players \@> '[{"id": "$on_dead"}]'})
	  . ':' . $wb->safe_psql('postgres', qq{SELECT count(*) FROM mm.pending_claims
	WHERE queue = '$qb' AND player_id = '$on_dead'}), 'searching:1',
	'the player on the dead worker waits, still pending');
my $err = fails(qq{SELECT mm.create_ticket('$qa', '[{"id": "needs_dead"}]', $now)});
like($err, qr/ERROR:  08006: .*$dead_port/s, 'a ticket of the dead worker\'s queue: 08006 naming it');
note("the error: $err");
# a call that ends a ticket of the live worker's queue whose player lives
# on the dead worker commits: the release waits for the queue's tick
my $dead_ticket = $wb->safe_psql('postgres', qq{SELECT id FROM mm.tickets_active
	WHERE queue = '$qb' AND players \@> '[{"id": "$on_dead"}]'});
is(q1(qq{SELECT mm.cancel_ticket('$qb', $dead_ticket)})
	  . '|' . $wb->safe_psql('postgres', qq{SELECT count(*) FROM mm.pending_releases
	WHERE queue = '$qb' AND player_id = '$on_dead'}), 't|1',
	"with the player's worker dead, cancel_ticket($qb, id) commits; the release waits");
my ($rret, $rout, $rerr) = $coord->psql('postgres', qq{SELECT mm.tick('$qb', '2026-06-01 00:00:11+00')});
ok($rret == 0 && $rerr =~ /WARNING:  queue "$qb": the claims released on a node out of reach wait for a later tick/,
	'the tick warns about the releases it cannot apply and goes on')
  or diag($rerr);

# the killed worker stays down (a restart could race its dying backends)
$_->stop for ($coord, $wb);
done_testing();
