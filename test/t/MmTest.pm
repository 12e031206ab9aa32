# Shared helpers for the matchmaking TAP tests.
package MmTest;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use Exporter 'import';
our @EXPORT = qw(mm_new_node mm_crash_restart mm_scenario_sql);

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
	$node->start;
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

# SQL that fills a database through the API every version has, every call at
# an explicit time: queue duel (1v1, skill within 100: a and b match, c waits,
# d is cancelled) and queue ffa (2-4 players, 60 s timeout: the party p1+p2
# matches with x, y times out, z and the party q1+q2 are left searching).
sub mm_scenario_sql
{
	return q{
	SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2},
	  "teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
	  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100}]}');
	SELECT mm.create_queue('ffa', '{"match_size": {"min": 2, "max": 4}, "ticket_timeout_seconds": 60}');

	-- duel: a and b match, c waits (too far), d is cancelled
	SELECT mm.create_ticket('duel', '[{"id": "a", "attributes": {"skill": 1000}}]', '2026-01-01 00:00:00+00');
	SELECT mm.create_ticket('duel', '[{"id": "b", "attributes": {"skill": 1050}}]', '2026-01-01 00:00:01+00');
	SELECT mm.create_ticket('duel', '[{"id": "c", "attributes": {"skill": 3000}}]', '2026-01-01 00:00:02+00');
	SELECT mm.cancel_ticket(mm.create_ticket('duel', '[{"id": "d", "attributes": {"skill": 5000}}]',
											 '2026-01-01 00:00:03+00'));
	SELECT mm.tick('duel', '2026-01-01 00:00:10+00');

	-- ffa: a party of two matches with x; y times out alone
	SELECT mm.create_ticket('ffa', '[{"id": "p1"}, {"id": "p2"}]', '2026-01-01 00:00:00+00');
	SELECT mm.create_ticket('ffa', '[{"id": "x"}]', '2026-01-01 00:00:01+00');
	SELECT mm.tick('ffa', '2026-01-01 00:00:10+00');
	SELECT mm.create_ticket('ffa', '[{"id": "y"}]', '2026-01-01 00:00:20+00');
	SELECT mm.tick('ffa', '2026-01-01 00:01:30+00');

	-- left searching: z and the party q1+q2 in ffa (and c in duel)
	SELECT mm.create_ticket('ffa', '[{"id": "z"}]', '2026-01-01 00:01:40+00');
	SELECT mm.create_ticket('ffa', '[{"id": "q1"}, {"id": "q2"}]', '2026-01-01 00:01:41+00');
};
}

1;
