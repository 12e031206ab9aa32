# Two sessions enqueue the same players at the same time, in opposite orders,
# round after round (one multi-row INSERT of 30,000 tickets per round and
# session, each committed).  Per round exactly one session gets the players
# and the other is refused with unique_violation (23505): never a deadlock
# (40P01), whatever the order of the rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MmTest;

my $rounds = 4;
my $node = mm_new_node('enqueue');
$node->safe_psql('postgres', q{
	SELECT mm.create_queue('dl', '{"match_size": {"min": 2, "max": 2}}');
	CREATE TABLE dl_results (session text, round int, outcome text, at timestamptz DEFAULT clock_timestamp());
});

# A DO block that commits after every round; an error of a round is recorded
# by its SQLSTATE.
sub session_sql
{
	my ($session, $order) = @_;
	return qq{
DO \$\$
DECLARE
	r int;
BEGIN
	FOR r IN 1 .. $rounds LOOP
		BEGIN
			INSERT INTO mm.tickets (queue, players)
			SELECT 'dl', jsonb_build_array(jsonb_build_object('id', 'r' || r || '-' || i))
			  FROM generate_series(1, 30000) i ORDER BY i $order;
			INSERT INTO dl_results (session, round, outcome) VALUES ('$session', r, 'ok');
		EXCEPTION WHEN OTHERS THEN
			INSERT INTO dl_results (session, round, outcome) VALUES ('$session', r, SQLSTATE);
		END;
		COMMIT;
	END LOOP;
END
\$\$;
};
}

my @sessions;
for my $s (['a', 'ASC'], ['b', 'DESC'])
{
	# the SQL as an argument: both sessions start at once (input on stdin
	# would only be fed when the harness is pumped)
	my ($out, $err) = ('', '');
	push @sessions,
	  IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		  '-c', session_sql(@$s) ],
		'>', \$out, '2>', \$err,
		IPC::Run::timeout(180));
}
$_->finish for @sessions;

my $outcomes = $node->safe_psql('postgres',
	"SELECT session, round, outcome, at FROM dl_results ORDER BY at");
note "rounds (session, round, outcome, time):\n$outcomes";
is($node->safe_psql('postgres', "SELECT count(*) FROM dl_results WHERE outcome = '40P01'"),
	'0', 'no round deadlocked');
is($node->safe_psql('postgres', "SELECT count(*) FROM dl_results"),
	2 * $rounds, 'every round of both sessions finished');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT round FROM dl_results GROUP BY round
		HAVING count(*) FILTER (WHERE outcome = 'ok') <> 1
		    OR count(*) FILTER (WHERE outcome = '23505') <> 1) bad}),
	'0',
	'in every round one session got the players and the other was refused with 23505');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM mm.tickets_active t, jsonb_array_elements(t.players) p
	 WHERE NOT EXISTS (SELECT FROM mm.active_players a
	                    WHERE a.player_id = p.value ->> 'id' AND a.ticket_id = t.id)}),
	'0',
	'every searching ticket holds its players');
is($node->safe_psql('postgres', "SELECT count(*) FROM mm.tickets_active WHERE queue = 'dl'"),
	30000 * $rounds, 'one ticket per player and round');

done_testing();
