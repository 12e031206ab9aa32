# pg_dump -Fc of a database with matchmaking data in every state (queues,
# tickets searching, matched, cancelled and timed out, a party, a match with a
# result, a server-side player, a pg_cron schedule), restored with pg_restore
# into a new cluster without pg_cron: every row of the extension's tables
# comes back, the sequences continue where they were, the one-active-ticket-
# per-player guarantee still holds for the restored searching tickets, and
# the same new tickets ticked at the same time form the same matches in both
# databases.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MmTest;

my $tempdir = PostgreSQL::Test::Utils::tempdir;

# Runs a client program; returns (exit code, stdout, stderr).
sub run_cmd
{
	my @cmd = @_;
	my ($out, $err) = ('', '');
	note 'running: ' . join(' ', @cmd);
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

my $orig = mm_new_node('dump_source');
my $odb  = 'postgres';

# A helper in every session that returns the SQLSTATE of a statement, or ok.
my $try_fn = q{
	CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $f$
	BEGIN
		EXECUTE q;
		RETURN 'ok';
	EXCEPTION WHEN OTHERS THEN
		RETURN SQLSTATE;
	END
	$f$;
};

$orig->safe_psql(
	$odb, q{
	INSERT INTO mm.players (id, attributes) VALUES ('server_side', '{"skill": 1234, "region": "eu"}');
} . mm_scenario_sql() . q{

	-- the duel was played (a's team won) and rated, the ffa match ended:
	-- both release their players
	SELECT mm.alter_queue('duel', config || '{"rating": {"system": "glicko2", "pool": "ranked"}}')
	  FROM mm.queues WHERE name = 'duel';
	SELECT mm.report_result(t.match_id,
							jsonb_build_object(t.team, 1, CASE t.team WHEN 'red' THEN 'blue' ELSE 'red' END, 2),
							'2026-01-01 00:25:00+00')
	  FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'a';
	SELECT mm.complete_match(t.match_id, '2026-01-01 00:20:00+00')
	  FROM mm.tickets t WHERE t.players -> 0 ->> 'id' = 'p1';
	-- a ticket searching in both queues (too strong for the duel, and the
	-- youngest of the ffa's: it keeps searching through the ticks below)
	SELECT mm.create_ticket(ARRAY['ffa', 'duel'], '[{"id": "both", "attributes": {"skill": 9000}}]',
							'2026-01-01 00:02:04+00');
});

is( $orig->safe_psql(
		$odb, q{
	SELECT string_agg(t.queue || ':' || (t.players -> 0 ->> 'id') || ':' || t.status, ' '
					  ORDER BY t.id) FROM mm.tickets t}),
	'duel:a:matched duel:b:matched duel:c:searching duel:d:cancelled '
	  . 'ffa:p1:matched ffa:x:matched ffa:y:timed_out ffa:z:searching ffa:q1:searching ffa:both:searching',
	'the source database has tickets in every state');
is($orig->safe_psql($odb, 'SELECT count(*) FROM mm.matches'), '2', 'two matches formed');
is( $orig->safe_psql(
		$odb, q{
	SELECT count(*) FROM mm.match_results r JOIN mm.matches m ON m.id = r.match_id
	 WHERE r.queue = 'duel' AND r.winner_team = 'red'}),
	'1', 'a match result (its queue copied from the match)');

# A pg_cron schedule, when pg_cron can be created here.  The queue it ticks
# has no tickets, so a run of the job would change nothing.
my ($cron_rc) = $orig->psql($odb, 'CREATE EXTENSION pg_cron');
my $have_cron = $cron_rc == 0;
SKIP:
{
	skip 'pg_cron is not available', 1 unless $have_cron;
	$orig->safe_psql(
		$odb, q{
		SELECT mm.create_queue('idle', '{"match_size": {"min": 2, "max": 2}}');
		SELECT mm.schedule('idle', '1 day');
	});
	is($orig->safe_psql($odb, 'SELECT queue, every, mode FROM mm.schedule_jobs'),
		'idle|1 day|cron', 'a scheduled queue');
}

# --- dump, and restore into a cluster without pg_cron
my $dumpfile = "$tempdir/mm.dump";
my ($rc, $out, $err) = run_cmd($orig->installed_command('pg_dump'),
	'-Fc', '-f', $dumpfile, '-d', $orig->connstr($odb));
is($rc, 0, 'pg_dump -Fc succeeds') or diag $err;

my $new = PostgreSQL::Test::Cluster->new('dump_target');
$new->init;
$new->start;
$new->safe_psql('postgres', 'CREATE DATABASE restored');
my $ndb = 'restored';

# pg_cron cannot be created without shared_preload_libraries: leave out its
# extension and its tables' data (its jobs mean nothing on the new cluster);
# everything else must restore without a single error.
($rc, $out, $err) = run_cmd($new->installed_command('pg_restore'), '-l', $dumpfile);
is($rc, 0, 'pg_restore -l') or diag $err;
my @toc     = split /\n/, $out;
my @dropped = grep { /\bpg_cron\b| cron / } @toc;
ok(!$have_cron || @dropped >= 2, 'the pg_cron entries of the dump are left out')
  or diag join("\n", @toc);
ok(!grep({ / mm / && /\bcron\b/ } @dropped), 'no matchmaking entry is left out')
  or diag join("\n", @dropped);
my $listfile = "$tempdir/restore.list";
PostgreSQL::Test::Utils::append_to_file($listfile,
	join("\n", grep { !/\bpg_cron\b| cron / } @toc) . "\n");
($rc, $out, $err) = run_cmd($new->installed_command('pg_restore'),
	'--no-owner', '-L', $listfile, '-d', $new->connstr($ndb), $dumpfile);
is($rc, 0, 'pg_restore into a cluster without pg_cron succeeds');
is($err, '', 'pg_restore printed no error');

is($new->safe_psql($ndb, "SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'"),
	$orig->safe_psql($odb, "SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'"),
	'the extension is restored at the same version');

# --- every row came back
my @tables = qw(queues players tickets tickets_active tickets_ended active_players ticket_queues
  matches match_players match_results ratings rating_history backfill_requests schedule_jobs);
for my $table (@tables)
{
	my $q = "SELECT count(*) || ' ' || coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '-')"
	  . " FROM mm.$table t";
	my $before = $orig->safe_psql($odb, $q);
	my $after  = $new->safe_psql($ndb, $q);
	is($after, $before, "mm.$table: every row restored ($before)");
}
ok($orig->safe_psql($odb, 'SELECT count(*) FROM mm.players') > 0
	  && $orig->safe_psql($odb, 'SELECT count(*) FROM mm.active_players') == 5
	  && $orig->safe_psql($odb, 'SELECT count(*) FROM mm.ticket_queues') == 1
	  && $orig->safe_psql($odb, 'SELECT count(*) FROM mm.rating_history') == 2
	  && $orig->safe_psql($odb, 'SELECT count(*) FROM mm.match_results') == 1,
	'the compared tables are not empty');
is($new->safe_psql($ndb, 'SELECT count(*) FROM ONLY mm.tickets'), '0',
	'restored tickets live in the partitions only');

# --- the one-active-ticket rule still holds for restored searching tickets
# (done on both sides alike: a refused insert uses up a ticket id)
my $dup = $try_fn . q{
	SELECT pg_temp.try($$SELECT mm.create_ticket('duel', '[{"id": "c", "attributes": {"skill": 3000}}]',
					   '2026-01-01 00:01:50+00')$$);
	SELECT pg_temp.try($$SELECT mm.create_ticket('ffa', '[{"id": "q2"}]', '2026-01-01 00:01:50+00')$$);
};
is($new->safe_psql($ndb, $dup), "23505\n23505",
	'players of restored searching tickets (solo and party) are refused a second ticket');
is($orig->safe_psql($odb, $dup), "23505\n23505", 'as in the source database');

# a player of a matched ticket may queue again, and the id sequence continues
my $max_id = $new->safe_psql($ndb, 'SELECT max(id) FROM mm.tickets');
my $newticket =
  q{SELECT mm.create_ticket('duel', '[{"id": "a", "attributes": {"skill": 1010}}]', '2026-01-01 00:02:00+00')};
my $new_id = $new->safe_psql($ndb, $newticket);
ok($new_id > $max_id, "a new ticket's id ($new_id) is above every restored id ($max_id)");
is($orig->safe_psql($odb, $newticket), $new_id, 'and the same id as in the source database');
my $next_match = $new->safe_psql($ndb, q{SELECT nextval('mm.matches_id_seq')});
is($orig->safe_psql($odb, q{SELECT nextval('mm.matches_id_seq')}), $next_match,
	'the match id sequence continues where it was');
ok($next_match > $new->safe_psql($ndb, 'SELECT max(id) FROM mm.matches'),
	'above every restored match id');

# --- the same tickets ticked at the same time form the same matches
my $more = q{
	SELECT mm.create_ticket('duel', '[{"id": "e", "attributes": {"skill": 2990}}]', '2026-01-01 00:02:01+00');
	SELECT mm.create_ticket('duel', '[{"id": "f", "attributes": {"skill": 1040}}]', '2026-01-01 00:02:02+00');
	SELECT mm.create_ticket('ffa', '[{"id": "w"}]', '2026-01-01 00:02:03+00');
	SELECT mm.tick('duel', '2026-01-01 00:02:05+00');
	SELECT mm.tick('ffa', '2026-01-01 00:02:05+00');
};
my $ticked = $new->safe_psql($ndb, $more);
is($orig->safe_psql($odb, $more), $ticked, 'same ticket ids and match counts in both');
like($ticked, qr/\n2\n1$/, 'two duel matches and one ffa match formed');

my $formed = q{
	SELECT m.id || ' ' || m.queue || ' ' || m.status || ' ' || m.quality || ' ' || m.created_at || ' '
		   || (SELECT string_agg(g.tickets, ' | ' ORDER BY g.tickets)
				 FROM (SELECT coalesce(mp.team, '-') || ':'
							  || string_agg(mp.ticket_id::text || '/' || mp.player_id, ','
											ORDER BY mp.ticket_id, mp.player_id) AS tickets
						 FROM mm.match_players mp WHERE mp.match_id = m.id
						GROUP BY mp.team) g)
	  FROM mm.matches m WHERE m.created_at = '2026-01-01 00:02:05+00' ORDER BY m.id
};
my $formed_new = $new->safe_psql($ndb, $formed);
is($formed_new, $orig->safe_psql($odb, $formed),
	'the restored database forms the same matches (ids, tickets, teams, quality)');
note $formed_new;
# what they are: c with e, a (again) with f, and z, q1+q2, w together
my $groups = q{
	SELECT string_agg(g, ' ; ' ORDER BY g) FROM (
		SELECT m.queue || '=' || string_agg(t.players -> 0 ->> 'id', '+' ORDER BY t.players -> 0 ->> 'id') AS g
		  FROM mm.matches m JOIN mm.tickets t ON t.match_id = m.id
		 WHERE m.created_at = '2026-01-01 00:02:05+00' GROUP BY m.id, m.queue) s
};
is($new->safe_psql($ndb, $groups), 'duel=a+f ; duel=c+e ; ffa=q1+w+z',
	'the restored searching tickets were matched');
is( $new->safe_psql(
		$ndb, q{SELECT string_agg(t.players -> 0 ->> 'id' || ' ' || q.queue, ',')
				  FROM mm.tickets t JOIN mm.ticket_queues q ON q.ticket_id = t.id WHERE t.status = 'searching'}),
	'both duel', 'only the ticket of both queues is left searching, still listed in the duel');
for my $table (qw(tickets active_players ticket_queues matches match_players))
{
	my $q = "SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM mm.$table t";
	is($new->safe_psql($ndb, $q), $orig->safe_psql($odb, $q),
		"mm.$table is the same in both databases after the tick");
}

$new->stop;
$orig->stop;
done_testing();
