# A queue's match function runs as the role that named it, never as whoever
# ticks: an mm_admin names a function that makes a role superuser when it
# runs as one; the superuser schedules the queue with pg_cron, and after
# pg_cron's own job has ticked it, every call ran as the admin and the role
# is not superuser.  A pg_dump restored by a superuser keeps the role the
# function runs as (the restore does not make it the restoring superuser); a
# role missing in the target leaves the queue without one, with a warning,
# until an admin names the function again.  After the update from 0.3, a
# queue whose function was missing is repaired by naming it again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use IPC::Run;
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

# --- a restore whose role is missing in the target: the queue gets no role
# (never the restoring superuser) until an admin names the function again
# (a superuser's function: an admin names it and it runs as that admin; a
# function game_admin owns is refused to another admin, whose rights its
# owner could borrow by rewriting it)
$node->safe_psql('postgres', 'CREATE ROLE gone_admin LOGIN IN ROLE mm_admin');
$node->safe_psql('game', q{GRANT USAGE ON SCHEMA game TO gone_admin;
	CREATE FUNCTION game.shared_pairs(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
	LANGUAGE sql AS $$ SELECT NULL::jsonb WHERE false $$;});
my ($orc, $oout, $oerr) = $node->psql('game', q{
	SELECT mm.create_queue('gone', '{"match_size": {"min": 2, "max": 2}, "match_function": "game.pairs"}');
}, extra_params => [ '-U', 'gone_admin' ]);
like($oerr, qr/ERROR:  match_function: function game\.pairs is owned by role "game_admin", whose privileges "gone_admin" does not have/,
	"another admin may not name game_admin's function");
$node->safe_psql('game', q{
	SELECT mm.create_queue('gone', '{"match_size": {"min": 2, "max": 2}, "match_function": "game.shared_pairs"}');
}, extra_params => [ '-U', 'gone_admin' ]);
is($node->safe_psql('game', "SELECT match_function_role FROM mm.queues WHERE name = 'gone'"),
	'gone_admin', 'a queue whose function an admin named');
$node->safe_psql('game', 'REVOKE USAGE ON SCHEMA game FROM gone_admin');
my $gone_dump = "$tempdir/gone.dump";
command_ok([ $node->installed_command('pg_dump'), '-Fc', '-f', $gone_dump, '-d', $node->connstr('game') ],
	'pg_dump of it');
$node->safe_psql('postgres', 'DROP ROLE gone_admin');
$node->safe_psql('postgres', 'CREATE DATABASE restored_gone');
my $log_offset = -s $node->logfile;
my ($rout, $rerr) = ('', '');
IPC::Run::run([ $node->installed_command('pg_restore'), '-d', $node->connstr('restored_gone'), $gone_dump ],
	'>', \$rout, '2>', \$rerr);
is($? >> 8, 0, 'pg_restore into a cluster where that role does not exist');
like(substr(slurp_file($node->logfile), $log_offset), qr/WARNING:  match_function_role "gone_admin" of queue "gone" does not exist: the queue's match function has no role to run as/,
	'the restore warns of the missing role (in the server log: pg_restore does not print notices)');
is($node->safe_psql('restored_gone', "SELECT coalesce(match_function_role, 'none') FROM mm.queues WHERE name = 'gone'"),
	'none', 'the queue has no role: not the restoring superuser');
is($node->safe_psql('restored_gone', "SELECT match_function_role FROM mm.queues WHERE name = 'duel'"),
	'game_admin', 'the queue whose role exists keeps it');
$node->safe_psql('restored_gone', q{
	SELECT mm.create_ticket('gone', '[{"id": "g1"}]', '2026-01-01 00:00:00+00');
	SELECT mm.create_ticket('gone', '[{"id": "g2"}]', '2026-01-01 00:00:01+00');});
my ($grc, $gout, $gerr) = $node->psql('restored_gone', "SELECT mm.tick('gone', '2026-01-01 00:00:05+00')");
like($gerr, qr/ERROR:  match_function of queue "gone" has no role to run as.*HINT:  An admin names the function again with mm\.alter_queue/s,
	'its tick fails and says what to do');
$node->safe_psql('restored_gone', q{
	SELECT mm.alter_queue('gone', config) FROM mm.queues WHERE name = 'gone';
}, extra_params => $as_admin);
is($node->safe_psql('restored_gone', "SELECT match_function_role FROM mm.queues WHERE name = 'gone'"),
	'game_admin', 'an admin naming the function again becomes its role');

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
# a queue whose function is missing at the update (dropped, to be created again)
$node->safe_psql('old', q{
	CREATE FUNCTION game.lost(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
	LANGUAGE sql AS $$ SELECT NULL::jsonb WHERE false $$;
}, extra_params => $as_admin);
$node->safe_psql('old', q{
	SELECT mm.create_queue('lost', '{"match_size": {"min": 2, "max": 2}, "match_function": "game.lost"}');
	DROP FUNCTION game.lost(text, jsonb, timestamptz);
});
$node->safe_psql('old', 'ALTER EXTENSION matchmaking UPDATE');
is($node->safe_psql('old', "SELECT coalesce(match_function_role, 'none') FROM mm.queues WHERE name = 'lost'"),
	'none', 'a queue whose function was missing at the update has no role');
# the repair the tick's hint gives: the function back, an admin names it
# again (the same text): it then runs as that admin
$node->safe_psql('old', q{
	CREATE FUNCTION game.lost(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
	LANGUAGE sql AS $$ SELECT NULL::jsonb WHERE false $$;
	SELECT mm.alter_queue('lost', config) FROM mm.queues WHERE name = 'lost';
}, extra_params => $as_admin);
is($node->safe_psql('old', "SELECT match_function_role FROM mm.queues WHERE name = 'lost'"),
	'game_admin', 'an admin naming the same function again repairs it');
# a superuser's repair: the function runs as its owner, never as the superuser
$node->safe_psql('old', q{
	ALTER TABLE mm.queues DISABLE TRIGGER queues_validate;
	UPDATE mm.queues SET match_function_role = NULL WHERE name = 'lost';
	ALTER TABLE mm.queues ENABLE TRIGGER queues_validate;
	SELECT mm.alter_queue('lost', config) FROM mm.queues WHERE name = 'lost';
});
is($node->safe_psql('old', "SELECT match_function_role FROM mm.queues WHERE name = 'lost'"),
	'game_admin', "a superuser naming it again makes it run as the function's owner");
is($node->safe_psql('old', "SELECT match_function_role FROM mm.queues WHERE name = 'duel'"),
	'game_admin', "after the update it runs as the function's owner");
is($node->safe_psql('old', q{
	SELECT mm.tick('duel', '2026-01-01 00:00:06+00');
	SELECT properties ->> 'by' FROM mm.matches WHERE queue = 'duel'}),
	"1\ngame_admin", 'and the superuser\'s tick runs it as that owner');

$node->stop;
done_testing();
