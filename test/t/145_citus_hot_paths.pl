# The hot paths on a real Citus cluster (MmCitus.pm, a coordinator and two
# workers after mm.distribute(8)) reach only the shards they need: every
# shard named in the commands a call issues (citus.log_remote_commands and
# citus.log_local_commands, on the coordinator's session and in the
# workers' logs, where the calls Citus delegates run) belongs to the
# call's queue or to its players.  Then the errors of one node on Citus: a
# busy player gets 23505 with the documented message (single tickets,
# batches, the player's shard on another worker than the queue's), a
# validation error names players[0] as on one node.  Last, kill -9 of a
# worker under ticket load: tickets of the other worker's queue and players
# are still created, and a ticket that needs the dead worker fails with
# 08006 naming it.  Skipped without Citus.
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
# queues nor its players hold, as "table_shardid").
sub shards_of
{
	my ($sql, $queues, $players) = @_;
	my @offsets = map { -s $_->logfile } @workers;
	my ($ret, $out, $err) = $coord->psql('postgres', qq{SET citus.log_remote_commands = on;
		SET citus.log_local_commands = on; SET client_min_messages = notice; $sql},
		on_error_stop => 1);
	die "$sql failed: $err" if $ret;
	my $text = $err;
	$text .= slurp_file($workers[$_]->logfile, $offsets[$_]) for 0 .. $#workers;
	my @commands = grep { /(issuing|executing the command locally)/ && /mm\.\w+_\d{6,}/ } split /\n/, $text;
	my %shards;
	$shards{$2} = $1 while $text =~ /mm\.(\w+?)_(\d{6,})\b/g;
	my %allowed = map { $_ => 1 } split /\n/,
	  q1('SELECT public.allowed_shards(ARRAY['
		  . join(',', map { "'$_'" } @$queues) . ']::text[], ARRAY['
		  . join(',', map { "'$_'" } @$players) . ']::text[])');
	my @extra = sort map { "$shards{$_}_$_" } grep { !$allowed{$_} } keys %shards;
	return ($out, scalar @commands, \@extra);
}

my $now = "'2026-06-01 00:00:00+00'";
my %ticket;
for my $case ([ $qa, $pa ], [ $qa, $pb ], [ $qb, $pb ], [ $qb, $pa ])
{
	my ($q, $p) = @$case;
	my ($id, $n, $extra) = shards_of(qq{SELECT mm.create_ticket('$q', '[{"id": "$p"}]', $now)}, [$q], [$p]);
	like($id, qr/^\d+$/, "create_ticket($q, $p)");
	is_deeply($extra, [], "create_ticket($q, $p) reaches only its queue's and its player's shards ($n commands)");
	$ticket{$q}{$p} = $id;
	# the next case takes the same players again
	my (undef, $cn, $cextra) = shards_of(qq{SELECT mm.cancel_ticket('$q', $id)}, [$q], [$p]);
	is_deeply($cextra, [], "cancel_ticket($q, id) reaches only its shards ($cn commands)");
}

# a batch of two tickets: the queue's shards and the two players'
my ($ids, $bn, $bextra) = shards_of(
	qq{SELECT mm.create_tickets('$qb', ARRAY['[{"id": "bat1"}]', '[{"id": "bat2"}]']::jsonb[], $now)},
	[$qb], [qw(bat1 bat2)]);
like($ids, qr/^\{\d+,\d+\}$/, 'create_tickets, two tickets');
is_deeply($bextra, [], "create_tickets($qb, ...) reaches only its queue's and its players' shards ($bn commands)");
q1(qq{SELECT mm.cancel_ticket('$qb', id) FROM unnest('$ids'::bigint[]) id});

# a batch's claims are one multi-row INSERT of literals: ids that need
# quoting are claimed as they are, each by its own ticket
my $odd = q1(q{SELECT mm.create_tickets('} . $qb . q{', ARRAY['[{"id": "o''neil"}]', '[{"id": "back\\\\slash"}]',
	'[{"id": "x), (y"}]']::jsonb[], } . $now . q{)});
is(q1(qq{SELECT string_agg(a.player_id || '=' || (a.ticket_id = (('$odd'::bigint[])[o.i]))::text, ' ' ORDER BY o.i)
	FROM unnest(ARRAY['o''neil', E'back\\\\slash', 'x), (y']) WITH ORDINALITY o(p, i)
	JOIN mm.active_players a ON a.player_id = o.p}),
	q{o'neil=true back\slash=true x), (y=true}, 'a batch claims players whose ids need quoting');
q1(qq{SELECT mm.cancel_ticket('$qb', id) FROM unnest('$odd'::bigint[]) id});

# the direct path (docs/scale-out.md): a ticket sent to its queue's node
# takes its id from that node's range and claims its player as through the
# coordinator; a queue that does not exist is 42704 on every path
my ($wqa) = grep { $_->port == q1("SELECT node_port FROM mm.queue_node('$qa')") } @workers;
my $direct = $wqa->safe_psql('postgres', qq{SELECT mm.create_ticket('$qa', '[{"id": "direct1"}]', $now)});
ok($direct >= 2**48 * q1(qq{SELECT groupid FROM pg_dist_node WHERE nodeport = @{[$wqa->port]}}),
	'a ticket created on the queue\'s node has an id of that node\'s range');
is(q1(qq{SELECT ticket_id FROM mm.active_players WHERE player_id = 'direct1'})
	  . '|' . q1(qq{SELECT status FROM mm.tickets_active WHERE queue = '$qa' AND id = $direct}),
	"$direct|searching", 'the coordinator sees the ticket and its claim');
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
my (undef, $tn, $textra) = shards_of(qq{SELECT mm.tick('$qa', '2026-06-01 00:00:02+00')}, [$qa], [$pa, $pb]);
is_deeply($textra, [], "tick($qa) reaches only its queue's and its players' shards ($tn commands)");
my $m = q1(qq{SELECT max(id) FROM mm.matches WHERE queue = '$qa'});
ok($m, 'the tick formed a match');
my (undef, $an, $aextra) = shards_of(qq{SELECT mm.assign('$qa', $m, 'udp://10.0.0.1:7777')}, [$qa], []);
is_deeply($aextra, [], "assign($qa, id) reaches only the queue's shards ($an commands)");
my ($ga, $gn, $gextra) =
  shards_of(qq{SELECT match_status FROM mm.get_assignment('$qa', $t1)}, [$qa], []);
is($ga, 'assigned', 'get_assignment by (queue, id)');
is_deeply($gextra, [], "get_assignment($qa, id) reaches only the queue's shards ($gn commands)");

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
	'a busy player: 23505 with the documented message');
like(fails(qq{SELECT mm.create_ticket('$qb', '[{"id": "$pa"}]', $now)}),
	qr/ERROR:  23505: player "$pa" is in match $m, which is assigned/,
	'a player in a live match, the player\'s shard on the other worker: 23505');
like(fails(qq{SELECT mm.create_tickets('$qa', ARRAY['[{"id": "fresh1"}]', '[{"id": "busy_b"}]']::jsonb[], $now)}),
	qr/ERROR:  23505: player "busy_b" already has an active ticket/,
	'a busy player in a batch: 23505');
like(fails(qq{SELECT mm.create_tickets('$qa', ARRAY['[{"id": "twice"}]', '[{"id": "twice"}]']::jsonb[], $now)}),
	qr/ERROR:  23505: player "twice" already has an active ticket/,
	'a player twice in a batch: 23505');
is(q1(q{SELECT count(*) FROM mm.active_players WHERE player_id IN ('fresh1', 'twice')}), '0',
	'the refused batches claimed no one');
like(fails(qq{SELECT mm.create_ticket('$qa', '[{"id": 5}]', $now)}),
	qr/ERROR:  22023: invalid ticket at players\[0\]\.id/,
	'a validation error names players[0] as on one node');

# --- two tickets of one player at once, through two nodes ---
# one on the coordinator (queue on the first worker), one on the second
# worker (Citus 13 runs the call there; its queue there): the second waits
# for the first's claim and, once it commits, is refused; after a rollback
# it is created
my ($wa, $wb) = @workers;
for my $end ('COMMIT', 'ROLLBACK')
{
	my $p = "dup_$end";
	my $s1 = $coord->background_psql('postgres');
	$s1->query_safe(qq{BEGIN; SELECT mm.create_ticket('$qa', '[{"id": "$p"}]', $now)});
	my ($o2, $e2) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-h', $wb->host, '-p', $wb->port,
			'-d', 'postgres', '-c', qq{SELECT mm.create_ticket('$qb', '[{"id": "$p"}]', $now)}
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
	ok($waiting, "$end: the second ticket of $p waits for the first's claim");
	$s1->query_safe($end);
	$s1->quit;
	$h->finish;
	if ($end eq 'COMMIT')
	{
		like($e2, qr/ERROR:  23505: player "$p" already has an active ticket/,
			'the second ticket, on another node: 23505 once the first commits');
	}
	else
	{
		like($o2, qr/^\d+$/, 'the second ticket, on another node: created once the first rolls back');
	}
	is(q1(qq{SELECT count(*) FROM mm.tickets_active WHERE players \@> '[{"id": "$p"}]'})
		  . '|' . q1(qq{SELECT count(*) FROM mm.active_players WHERE player_id = '$p'}),
		'1|1', "$end: one ticket and one claim of $p");
}

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
my $ok = 0;
my $made_b = 0;
for my $i (1 .. 60)
{
	my $p = "after_$i";
	next unless player_port($p) == $wb->port;
	my ($ret, $out, $err) =
	  $coord->psql('postgres', qq{SELECT mm.create_ticket('$qb', '[{"id": "$p"}]', $now)});
	$made_b++ if $ret == 0 && $out =~ /^\d+$/;
	$ok++;
	diag($err) if $ret;
	last if $ok == 5;
}
is($made_b, $ok, "with " . $wa->name . " dead, tickets of $qb for players on " . $wb->name . " are created ($made_b)");
my $err = fails(qq{SELECT mm.create_ticket('$qa', '[{"id": "needs_dead"}]', $now)});
my $dead = $wa->port;
like($err, qr/ERROR:  08006: .*$dead/s, 'a ticket that needs the dead worker: 08006 naming it');
note("the error: $err");

eval { $load->quit };
# the killed worker stays down (a restart could race its dying backends)
$_->stop for ($coord, $wb);
done_testing();
