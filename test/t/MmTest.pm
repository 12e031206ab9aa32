# Shared helpers for the matchmaking TAP tests.
package MmTest;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use Exporter 'import';
our @EXPORT = qw(mm_new_node mm_crash_restart mm_crash_stop mm_scenario_sql mm_old_ticket_sql mm_old_tick_sql);

# A fresh node with pg_cron preloaded (cron.database_name = postgres) and the
# extension created in database postgres.
sub mm_new_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'pg_cron'\ncron.database_name = 'postgres'\n"
		  . ($opts{conf} // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION matchmaking');
	return $node;
}

# kill -9 the postmaster, wait until its children have gone, then start again.
# In a container whose init does not reap, the killed postmaster lingers as a
# zombie and still "owns" postmaster.pid and the socket lock, so the stale lock
# files are removed once only zombies are left.
sub mm_crash_restart
{
	my ($node) = @_;
	mm_crash_stop($node);
	$node->start;
	return;
}

# kill -9 the postmaster and wait until its children have gone (the node
# stays down: ->start brings it back).
sub mm_crash_stop
{
	my ($node) = @_;
	my $pidfile = $node->data_dir . '/postmaster.pid';
	open my $fh, '<', $pidfile or die "no $pidfile: $!";
	my $pid = <$fh>;
	close $fh;
	chomp $pid;

	$node->kill9;
	my $datadir = $node->data_dir;
	for my $try (1 .. 300)
	{
		my $live = 0;
		for my $stat (glob '/proc/[0-9]*/stat')
		{
			open my $s, '<', $stat or next;
			my $line = <$s>;
			close $s;
			next unless defined $line;
			my ($p, $state) = $line =~ /^(\d+) \(.*\) (\S)/;
			next unless defined $p && $state ne 'Z';
			# the postmaster itself, or one of its children
			$live++ if $p == $pid || (_ppid($p) // -1) == $pid;
		}
		last unless $live;
		usleep(100_000);
	}
	unlink $pidfile;
	unlink $node->host . '/.s.PGSQL.' . $node->port . '.lock';
	return;
}

sub _ppid
{
	my ($p) = @_;
	open my $s, '<', "/proc/$p/stat" or return undef;
	my $line = <$s>;
	close $s;
	return $line =~ /^\d+ \(.*\) \S (\d+)/ ? $1 : undef;
}

# SQL that fills a database at a version (the current one when not given),
# every call at an explicit time: queue duel (1v1, skill within 100: a and b
# match, c waits, d is cancelled) and queue ffa (2-4 players, 60 s timeout:
# the party p1+p2 matches with x, y times out, z and the party q1+q2 are left
# searching).  The library serves only the current schema, so in an older
# database the ticks are written as that version's tick wrote them
# (mm_old_tick_sql), and 0.1's tickets as its ticket trigger completed them
# (mm_old_ticket_sql).
sub mm_scenario_sql
{
	my ($version) = @_;
	my $old = defined $version && $version =~ /^0\.[123]$/;
	my $ticket = sub {
		my ($queue, $players, $at) = @_;
		return $old
		  ? mm_old_ticket_sql($version, $queue, $players, $at)
		  : "SELECT mm.create_ticket('$queue', '$players', '$at');";
	};
	my $tick = sub {
		my ($queue, $at, %outcome) = @_;
		return $old
		  ? mm_old_tick_sql($version, $queue, $at, %outcome)
		  : "SELECT mm.tick('$queue', '$at');";
	};
	# d: 0.1's mm.cancel_ticket announced the cancel unsigned, which the
	# library no longer does; its update is written instead
	my $d = '[{"id": "d", "attributes": {"skill": 5000}}]';
	my $ticket_d =
	  defined $version && $version eq '0.1'
	  ? mm_old_ticket_sql($version, 'duel', $d, '2026-01-01 00:00:03+00')
	  . "\n\tUPDATE mm.tickets SET status = 'cancelled', updated_at = pg_catalog.now()"
	  . " WHERE players -> 0 ->> 'id' = 'd';"
	  : "SELECT mm.cancel_ticket(mm.create_ticket('duel', '$d', '2026-01-01 00:00:03+00'));";
	my $skill = '{"skill": {"step": 0, "threshold": 100}}';

	return join(
		"\n",
		q{SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2},
	  "teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
	  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');},
		q{SELECT mm.create_queue('ffa', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": 60}');},
		'-- duel: a and b match, c waits (too far), d is cancelled',
		$ticket->('duel', '[{"id": "a", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00'),
		$ticket->('duel', '[{"id": "b", "attributes": {"skill": 1050}}]', '2026-01-01 00:00:01+00'),
		$ticket->('duel', '[{"id": "c", "attributes": {"skill": 3000}}]', '2026-01-01 00:00:02+00'),
		$ticket_d,
		$tick->('duel', '2026-01-01 00:00:10+00',
			matches => [ { quality => 0.5, rule_steps => $skill, tickets => [ [ 1, 'red' ], [ 2, 'blue' ] ] } ]),
		'-- ffa: a party of two matches with x; y times out alone',
		$ticket->('ffa', '[{"id": "p1"}, {"id": "p2"}]', '2026-01-01 00:00:00+00'),
		$ticket->('ffa', '[{"id": "x"}]',                '2026-01-01 00:00:01+00'),
		$tick->('ffa', '2026-01-01 00:00:10+00',
			matches => [ { quality => 1, rule_steps => '{}', tickets => [ [5], [6] ] } ]),
		$ticket->('ffa', '[{"id": "y"}]', '2026-01-01 00:00:20+00'),
		$tick->('ffa', '2026-01-01 00:01:30+00', timed_out => [7]),
		'-- left searching: z and the party q1+q2 in ffa (and c in duel)',
		$ticket->('ffa', '[{"id": "z"}]',                '2026-01-01 00:01:40+00'),
		$ticket->('ffa', '[{"id": "q1"}, {"id": "q2"}]', '2026-01-01 00:01:41+00'),
		'');
}

# SQL that inserts a ticket into a 0.1 database as mm.create_ticket did,
# without 0.1's validation trigger (C the library no longer serves): the
# columns it set are given.  Newer versions: mm.create_ticket.
sub mm_old_ticket_sql
{
	my ($version, $queue, $players, $at) = @_;
	return "SELECT mm.create_ticket('$queue', '$players', '$at');" if $version ne '0.1';
	return qq{ALTER TABLE mm.tickets DISABLE TRIGGER tickets_validate;
	INSERT INTO mm.tickets (queue, players, player_count, created_at, updated_at)
	VALUES ('$queue', '$players', jsonb_array_length('$players'), '$at', '$at');
	ALTER TABLE mm.tickets ENABLE TRIGGER tickets_validate;};
}

# SQL that writes what mm.tick of a 0.1, 0.2 or 0.3 database wrote (the
# library runs only the current schema's tick), for a test to upgrade from:
#   matches   => [ { quality => 0.5, rule_steps => '{...}',
#                    tickets => [ [ticket_id, team], ... ] }, ... ]
#     each a ready match formed at $at, its ids drawn in order, its players
#     those of its tickets, which end matched with its id and their team
#     (0.1 updates them in place; 0.2 and 0.3 move them to tickets_ended, and
#     0.2 releases their players, while 0.3 keeps them claimed);
#   timed_out => [ticket_id, ...]: tickets that end timed out at $at.
# The events the tick sent are not sent.
sub mm_old_tick_sql
{
	my ($version, $queue, $at, %outcome) = @_;
	die "mm_old_tick_sql: no tick of version $version" unless $version =~ /^0\.[123]$/;
	my @sql;
	for my $m (@{ $outcome{matches} // [] })
	{
		my $ids = join(', ', map { $_->[0] } @{ $m->{tickets} });
		my $teams = join(', ',
			map { "($_->[0], " . (defined $_->[1] ? "'$_->[1]'" : 'NULL::text') . ')' } @{ $m->{tickets} });
		push @sql, qq{WITH m AS (
		INSERT INTO mm.matches (queue, status, created_at, updated_at, quality, rule_steps)
		VALUES ('$queue', 'ready', '$at', '$at', $m->{quality}, '$m->{rule_steps}') RETURNING id)
	INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team)
	SELECT m.id, '$queue', p.value ->> 'id', t.id, u.team
	  FROM m, (VALUES $teams) AS u(ticket_id, team)
	  JOIN mm.tickets t ON t.id = u.ticket_id
	 CROSS JOIN LATERAL jsonb_array_elements(t.players) WITH ORDINALITY AS p(value, ord)
	 ORDER BY t.created_at, t.id, p.ord;};
		my $of_match = qq{(SELECT DISTINCT match_id, ticket_id, team FROM mm.match_players
		 WHERE ticket_id IN ($ids)) AS mp};
		if ($version eq '0.1')
		{
			push @sql, qq{UPDATE mm.tickets t SET status = 'matched', matched_at = '$at', updated_at = '$at',
	       match_id = mp.match_id
	  FROM $of_match WHERE t.id = mp.ticket_id;};
			next;
		}
		push @sql, qq{INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at,
	                             matched_at, match_id, team)
	SELECT t.id, t.queue, t.players, 'matched', t.created_at, '$at', '$at', mp.match_id, mp.team
	  FROM mm.tickets_active t JOIN $of_match ON mp.ticket_id = t.id ORDER BY t.id;},
		  qq{DELETE FROM mm.tickets_active WHERE id IN ($ids);};
		push @sql, qq{DELETE FROM mm.active_players WHERE ticket_id IN ($ids);} if $version eq '0.2';
	}
	if (@{ $outcome{timed_out} // [] })
	{
		my $ids = join(', ', @{ $outcome{timed_out} });
		push @sql,
		  $version eq '0.1'
		  ? qq{UPDATE mm.tickets SET status = 'timed_out', updated_at = '$at' WHERE id IN ($ids);}
		  : qq{SELECT mm.end_tickets(ARRAY[$ids]::bigint[], 'timed_out', '$at');};
	}
	return join("\n\t", @sql);
}

1;
