# Shared helpers for the matchmaking TAP tests.
package MmTest;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use Exporter 'import';
our @EXPORT = qw(mm_new_node mm_crash_restart);

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

1;
