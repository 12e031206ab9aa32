# A queue's match function runs as the role that named it, never as whoever
# ticks: an mm_admin names a function that makes a role superuser when it
# runs as one; the superuser schedules the queue with pg_cron, and after
# pg_cron's own job has ticked it, every call ran as the admin and the role
# is not superuser.  A pg_dump restored by a superuser keeps the role the
# function runs as (the restore does not make it the restoring superuser).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use MmTest;

my $node = mm_new_node('mf_author');
$node->append_conf('postgresql.conf', "cron.host = '" . $node->host . "'\n");
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron');

$node->safe_psql(
	'postgres', q{
	CREATE ROLE game_admin LOGIN IN ROLE mm_admin;
	CREATE ROLE eve LOGIN;
	CREATE SCHEMA game AUTHORIZATION game_admin;
});
my $as_admin = [ '-U', 'game_admin' ];
$node->safe_psql(
	'postgres', q{
	CREATE TABLE game.calls (run_as text, backend text, escalation text);
	CREATE FUNCTION game.evil(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
	LANGUAGE plpgsql AS $$
	DECLARE
		outcome text := 'done';
	BEGIN
		BEGIN
			EXECUTE 'ALTER ROLE eve SUPERUSER';
		EXCEPTION WHEN insufficient_privilege THEN
			outcome := 'denied';
		END;
		INSERT INTO game.calls
		SELECT current_user, a.backend_type, outcome
		  FROM pg_stat_activity a WHERE a.pid = pg_backend_pid();
		RETURN QUERY SELECT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'))
		 WHERE jsonb_array_length(tickets) >= 2;
	END $$;
	SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2}, "match_function": "game.evil"}');
}, extra_params => $as_admin);
is($node->safe_psql('postgres', "SELECT match_function_role FROM mm.queues WHERE name = 'duel'"),
	'game_admin', 'the function runs as the admin that named it');

sub wait_for
{
	my ($query, $expected, $seconds) = @_;
	my $start = time;
	while (time - $start < $seconds)
	{
		return 1 if $node->safe_psql('postgres', $query) eq $expected;
		usleep(200_000);
	}
	return 0;
}

# the superuser schedules the queue: pg_cron's job runs as the superuser
my $job = $node->safe_psql('postgres', "SELECT mm.schedule('duel', '1 second')");
ok($job > 0, 'the superuser schedules the queue');
is($node->safe_psql('postgres', "SELECT username FROM cron.job WHERE jobid = $job"),
	'postgres', 'the pg_cron job runs as the superuser');
$node->safe_psql('postgres', q{
	SELECT mm.create_ticket('duel', '[{"id": "a1"}]');
	SELECT mm.create_ticket('duel', '[{"id": "a2"}]');
});
ok(wait_for("SELECT count(*) FROM mm.matches WHERE queue = 'duel'", '1', 30),
	'the scheduled tick forms the match');
# pg_cron's own run (at the next minute boundary) takes over the loop
ok(wait_for("SELECT count(*) > 0 FROM cron.job_run_details WHERE jobid = $job", 't', 75),
	"pg_cron's job has run");
$node->safe_psql('postgres', q{
	SELECT mm.create_ticket('duel', '[{"id": "b1"}]');
	SELECT mm.create_ticket('duel', '[{"id": "b2"}]');
});
ok(wait_for("SELECT count(*) FROM mm.matches WHERE queue = 'duel'", '2', 30),
	"pg_cron's tick forms the next match");
$node->safe_psql('postgres', "SELECT mm.unschedule('duel')");

is($node->safe_psql('postgres', q{SELECT DISTINCT run_as || ' ' || escalation FROM game.calls}),
	'game_admin denied', 'every call ran as the admin, and its escalation was denied');
is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'eve'"),
	'f', 'eve is not superuser');
# a superuser's manual tick too
$node->safe_psql('postgres', q{
	SELECT mm.create_ticket('duel', '[{"id": "c1"}]');
	SELECT mm.create_ticket('duel', '[{"id": "c2"}]');
	SELECT mm.tick('duel');
});
is($node->safe_psql('postgres', "SELECT count(*) FROM game.calls WHERE run_as <> 'game_admin'"),
	'0', "a superuser's manual tick runs it as the admin too");
is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'eve'"),
	'f', 'eve is still not superuser');

# --- a restore keeps the role the function runs as
my $tempdir = PostgreSQL::Test::Utils::tempdir;
$node->safe_psql('postgres', 'CREATE DATABASE game');
$node->safe_psql('game', 'CREATE EXTENSION matchmaking');
$node->safe_psql('game', 'CREATE SCHEMA game AUTHORIZATION game_admin');
$node->safe_psql('game', q{
	CREATE FUNCTION game.pairs(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
	LANGUAGE sql AS $$ SELECT NULL::jsonb WHERE false $$;
	SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2}, "match_function": "game.pairs"}');
}, extra_params => $as_admin);
my $dumpfile = "$tempdir/game.dump";
command_ok([ $node->installed_command('pg_dump'), '-Fc', '-f', $dumpfile, '-d', $node->connstr('game') ],
	'pg_dump of a database with a match function');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
command_ok([ $node->installed_command('pg_restore'), '-d', $node->connstr('restored'), $dumpfile ],
	'pg_restore by the superuser');
is($node->safe_psql('restored', "SELECT match_function_role FROM mm.queues WHERE name = 'duel'"),
	'game_admin', 'the restored queue runs its function as the admin, not the restoring superuser');

# --- a 0.3 database: the library does not tick it (nor its match function)
# before the update; after it, the function runs as its owner
$node->safe_psql('postgres', 'CREATE DATABASE old');
$node->safe_psql('old', "CREATE EXTENSION matchmaking VERSION '0.3'");
$node->safe_psql('old', 'CREATE SCHEMA game AUTHORIZATION game_admin');
$node->safe_psql('old', q{
	CREATE FUNCTION game.pairs(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
	LANGUAGE sql AS $$
	  SELECT jsonb_build_object('tickets', jsonb_build_array(tickets -> 0 -> 'id', tickets -> 1 -> 'id'),
								'properties', jsonb_build_object('by', current_user))
	   WHERE jsonb_array_length(tickets) >= 2 $$;
}, extra_params => $as_admin);
$node->safe_psql('old', q{
	SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2}, "match_function": "game.pairs"}');
	SELECT mm.create_ticket('duel', '[{"id": "o1"}]', '2026-01-01 00:00:00+00');
	SELECT mm.create_ticket('duel', '[{"id": "o2"}]', '2026-01-01 00:00:01+00');
});
my ($rc, $out, $err) = $node->psql('old', "SELECT mm.tick('duel', '2026-01-01 00:00:05+00')");
like($err, qr/mm\.tick needs extension "matchmaking" version 0\.4, but this database has version 0\.3.*HINT:  Run ALTER EXTENSION matchmaking UPDATE\./s,
	'a 0.3 database is not ticked (nor its match function run) before the update');
$node->safe_psql('old', 'ALTER EXTENSION matchmaking UPDATE');
is($node->safe_psql('old', "SELECT match_function_role FROM mm.queues WHERE name = 'duel'"),
	'game_admin', "after the update it runs as the function's owner");
is($node->safe_psql('old', q{
	SELECT mm.tick('duel', '2026-01-01 00:00:06+00');
	SELECT properties ->> 'by' FROM mm.matches WHERE queue = 'duel'}),
	"1\ngame_admin", 'and the superuser\'s tick runs it as that owner');

$node->stop;
done_testing();
