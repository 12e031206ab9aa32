# ALTER EXTENSION matchmaking UPDATE (0.1 -> 0.2 -> 0.3 -> 0.4) on a database filled as
# 0.1 filled it: every ticket keeps its id, queue, status, created_at, match and
# players (searching tickets keep searching with their age), matches, match
# players and results are kept, the one-active-ticket-per-player rule holds
# for the carried-over tickets and the players of the carried-over live
# matches are held, a tick after the upgrade matches them, and new tickets
# get new ids.  The requeue of a match formed before the upgrade (issue 17)
# leaves no player in two matches.  Then the upgraded schema is compared with a fresh
# CREATE EXTENSION of 0.4 (pg_dump of both, and the column order of every
# table), and so are the tables registered for pg_dump.
#
# The library serves only the current schema (it refuses to tick an older
# one), so the older databases are filled through their API where it is SQL
# and with what their tick (and 0.1's ticket trigger) wrote where it was C:
# mm_scenario_sql, mm_old_ticket_sql and mm_old_tick_sql of MmTest.pm.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use MmTest;

my $tempdir = PostgreSQL::Test::Utils::tempdir;

# Set up like mm_new_node, without creating the extension in postgres.
my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'pg_cron'\ncron.database_name = 'postgres'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE DATABASE up');
$node->safe_psql('up', "CREATE EXTENSION matchmaking VERSION '0.1'");
is($node->safe_psql('up', "SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'"),
	'0.1', 'version 0.1 installed');

# --- fill it as 0.1 did, every call at an explicit time
$node->safe_psql(
	'up', mm_scenario_sql('0.1') . q{
	INSERT INTO mm.match_results (match_id, winner_team, duration)
	SELECT match_id, 'red', '25 minutes' FROM mm.tickets WHERE players -> 0 ->> 'id' = 'a';
});

# What must survive, read the same way before and after.
my %record = (
	tickets => q{SELECT id, queue, status, created_at, matched_at, match_id, players
				   FROM mm.tickets ORDER BY id},
	matches => q{SELECT id, queue, status, quality, created_at, updated_at, region, rule_steps
				   FROM mm.matches ORDER BY id},
	match_players => q{SELECT match_id, player_id, ticket_id, team, queue
						 FROM mm.match_players ORDER BY match_id, player_id},
	match_results => q{SELECT match_id, queue, winner_team, ranks, predicted_favourite,
							  favourite_win_probability, duration, reported_at
						 FROM mm.match_results ORDER BY match_id},
	queues  => q{SELECT name, config, created_at, updated_at FROM mm.queues ORDER BY name},
	players => q{SELECT id, attributes, created_at FROM mm.players ORDER BY id});
my %before = map { $_ => $node->safe_psql('up', $record{$_}) } keys %record;

is( $node->safe_psql(
		'up', q{
	SELECT string_agg(t.queue || ':' || (t.players -> 0 ->> 'id') || ':' || t.status, ' '
					  ORDER BY t.id) FROM mm.tickets t}),
	'duel:a:matched duel:b:matched duel:c:searching duel:d:cancelled '
	  . 'ffa:p1:matched ffa:x:matched ffa:y:timed_out ffa:z:searching ffa:q1:searching',
	'0.1 has tickets in every state');
is($node->safe_psql('up', 'SELECT count(*) FROM mm.matches'),       '2', 'two matches');
is($node->safe_psql('up', 'SELECT count(*) FROM mm.match_results'), '1', 'one result');
my $old_max_id = $node->safe_psql('up', 'SELECT max(id) FROM mm.tickets');

# The library serves schema 0.4 only: before the update, what runs the
# schema's SQL in C is refused with SQLSTATE 55000, naming both versions,
# with the update as the hint (and changes nothing); pure functions work.
my ($rc, $out, $err) = $node->psql('up',
	"\\set VERBOSITY verbose\nSELECT mm.tick('ffa', '2026-01-01 00:01:50+00')");
like($err,
	qr/ERROR:  55000: mm\.tick needs extension "matchmaking" version 0\.4, but this database has version 0\.1.*HINT:  Run ALTER EXTENSION matchmaking UPDATE\./s,
	'0.1: mm.tick is refused until the update, naming both versions');
($rc, $out, $err) = $node->psql('up',
	q{SELECT mm.create_ticket('ffa', '[{"id": "n"}]', '2026-01-01 00:01:50+00')});
like($err, qr/ERROR:  mm\.tickets_validate needs extension "matchmaking" version 0\.4, but this database has version 0\.1/,
	"0.1: its ticket trigger (C of 0.1's only) is refused");
($rc, $out, $err) = $node->psql('up',
	q{SELECT mm.notify_ticket_event('ticket_cancelled', 'duel', ARRAY[4]::bigint[])});
like($err, qr/ERROR:  signing an event needs extension "matchmaking" version 0\.4, but this database has version 0\.1/,
	'0.1: the library sends no unsigned event (0.1 had no event key)');
is($node->safe_psql('up', 'SELECT mm.elo_expected(1500, 1500)'), '0.5', '0.1: a pure function works');
is($node->safe_psql('up', $record{tickets}), $before{tickets}, '0.1: the refused calls changed nothing');

# --- the upgrade
# one command runs the chain of upgrade scripts: 0.1 -> 0.2 -> 0.3 -> 0.4
($rc, $out, $err) = $node->psql('up', "ALTER EXTENSION matchmaking UPDATE");
is($rc, 0, "ALTER EXTENSION matchmaking UPDATE (0.1 -> 0.2 -> 0.3 -> 0.4) succeeds")
  or diag "the upgrade failed:\n$err";
if ($rc != 0)
{
	$node->stop;
	done_testing();
	exit;
}
is($node->safe_psql('up', "SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'"),
	'0.4', 'extversion is 0.4');

for my $what (sort keys %record)
{
	is($node->safe_psql('up', $record{$what}), $before{$what}, "$what unchanged by the upgrade");
}
is( $node->safe_psql(
		'up', q{
	SELECT string_agg(id || ':' || status || ':' || created_at, ' ' ORDER BY id)
	  FROM mm.tickets_active}),
	$node->safe_psql(
		'up', q{
	SELECT string_agg(id || ':' || status || ':' || created_at, ' ' ORDER BY id)
	  FROM mm.tickets WHERE players -> 0 ->> 'id' IN ('c', 'z', 'q1')}),
	'the searching tickets are in tickets_active, still searching, with their created_at');
is($node->safe_psql('up', 'SELECT count(*) FROM mm.tickets_ended'),
	'6', 'the ended tickets are in tickets_ended');
is( $node->safe_psql(
		'up', q{
	SELECT count(*) FROM mm.tickets t JOIN mm.match_players mp ON mp.ticket_id = t.id
	 WHERE t.status = 'matched' AND mp.match_id = t.match_id
	   AND t.team IS NOT DISTINCT FROM mp.team}),
	'5', "matched tickets carry their match's team");
is( $node->safe_psql(
		'up', q{
	SELECT string_agg(ap.player_id || '>' || (t.players -> 0 ->> 'id') || '@' || ap.queue, ' '
					  ORDER BY ap.player_id)
	  FROM mm.active_players ap JOIN mm.tickets t ON t.id = ap.ticket_id}),
	'a>a@duel b>b@duel c>c@duel p1>p1@ffa p2>p1@ffa q1>q1@ffa q2>q1@ffa x>x@ffa z>z@ffa',
	'mm.active_players holds the players of the searching tickets and of the live (ready) matches');

# --- one active ticket per player, for the tickets carried over
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
is( $node->safe_psql(
		'up', $try_fn . q{
	SELECT pg_temp.try($$SELECT mm.create_ticket('duel', '[{"id": "c", "attributes": {"skill": 3000}}]',
					   '2026-01-01 00:01:50+00')$$);
	SELECT pg_temp.try($$SELECT mm.create_ticket('ffa', '[{"id": "q2"}]', '2026-01-01 00:01:50+00')$$);
}),
	"23505\n23505",
	'players of searching tickets (solo and party) are refused a second ticket');

# 0.1 released a match's players when it formed, and had no way to end a
# match: after the upgrade its matches are live (ready) and hold their
# players like any live match, until the director ends them
is( $node->safe_psql(
		'up', $try_fn . q{
	SELECT pg_temp.try($$SELECT mm.create_ticket('duel', '[{"id": "a", "attributes": {"skill": 1010}}]',
					   '2026-01-01 00:01:55+00')$$);}),
	'23505', 'a player of a live 0.1 match is refused a ticket');
$node->safe_psql('up',
	q{SELECT mm.complete_match(match_id, '2026-01-01 00:01:58+00') FROM mm.tickets WHERE players -> 0 ->> 'id' = 'a'});
my $a_again = $node->safe_psql('up',
	q{SELECT mm.create_ticket('duel', '[{"id": "a", "attributes": {"skill": 1010}}]', '2026-01-01 00:02:00+00')});
ok($a_again > $old_max_id, "once the match is completed, its player queues again, ticket id $a_again > $old_max_id");

# --- a tick after the upgrade matches the carried-over tickets
my $ticked = $node->safe_psql(
	'up', q{
	SELECT mm.create_ticket('duel', '[{"id": "e", "attributes": {"skill": 2990}}]', '2026-01-01 00:02:01+00');
	SELECT mm.create_ticket('duel', '[{"id": "f", "attributes": {"skill": 1040}}]', '2026-01-01 00:02:02+00');
	SELECT mm.create_ticket('ffa', '[{"id": "w"}]', '2026-01-01 00:02:03+00');
	SELECT mm.tick('duel', '2026-01-01 00:02:05+00');
	SELECT mm.tick('ffa', '2026-01-01 00:02:05+00');
});
my @ticked = split /\n/, $ticked;
ok($ticked[0] > $a_again && $ticked[1] > $ticked[0] && $ticked[2] > $ticked[1],
	'new tickets get increasing ids above the old ones');
is("$ticked[3] $ticked[4]", '2 1', 'two duel matches and one ffa match formed');
is( $node->safe_psql(
		'up', q{
	SELECT string_agg(g, ' ; ' ORDER BY g) FROM (
		SELECT m.id || ' ' || m.queue || '=' || string_agg(coalesce(t.team, '-') || ':' || (t.players -> 0 ->> 'id'),
														   '+' ORDER BY t.players -> 0 ->> 'id') AS g
		  FROM mm.matches m JOIN mm.tickets t ON t.match_id = m.id
		 WHERE m.created_at = '2026-01-01 00:02:05+00' GROUP BY m.id, m.queue) s}),
	'3 duel=red:c+blue:e ; 4 duel=red:a+blue:f ; 5 ffa=-:q1+-:w+-:z',
	'the expected matches, with match ids continuing from 0.1');
is( $node->safe_psql(
		'up', q{
	SELECT string_agg(mp.player_id, ',' ORDER BY mp.player_id) FROM mm.match_players mp
	 WHERE mp.match_id = 5}),
	'q1,q2,w,z', 'the party joined its match whole');
is($node->safe_psql('up', "SELECT count(*) FROM mm.tickets WHERE status = 'searching'"),
	'0', 'nothing left searching');
is( $node->safe_psql(
		'up', q{
	SELECT string_agg(a.player_id || '@' || t.match_id, ' ' ORDER BY a.player_id)
	  FROM mm.active_players a JOIN mm.tickets t ON t.id = a.ticket_id}),
	'a@4 c@3 e@3 f@4 p1@2 p2@2 q1@5 q2@5 w@5 x@2 z@5',
	'the players of the live matches (new, and the 0.1 one not ended) stay held until their match ends');

# --- the upgraded schema is the one CREATE EXTENSION makes
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION matchmaking');
is($node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = 'matchmaking'"),
	'0.4', 'fresh database at 0.4');

# pg_dump never prints an extension's member objects, except in
# --binary-upgrade mode, which dumps each one (with ALTER EXTENSION ... ADD):
# a plain `pg_dump --schema-only --schema=mm` would compare only CREATE SCHEMA
# (and pg_dump 15 crashes on -n mm / -t mm.tickets_active once a partition is
# an extension configuration table).  Both databases hold nothing else.
# Dropped: comments, SET lines, blank lines, \restrict keys, and what
# carries OIDs, xids or sequence positions.
sub schema_dump
{
	my ($db) = @_;
	my ($rc, $out, $err) = ('', '', '');
	IPC::Run::run(
		[ $node->installed_command('pg_dump'), '--schema-only', '--binary-upgrade',
		  '-d', $node->connstr($db) ],
		'>', \$out, '2>', \$err);
	is($? >> 8, 0, "pg_dump --schema-only of $db") or diag $err;
	my @lines = grep {
		!/^--/
		  && !/^SET /
		  && !/^\s*$/
		  && !/^\\(un)?restrict /
		  && !/^SELECT pg_catalog\.set_config\('search_path'/
		  && !/binary_upgrade_set_next_/
		  && !/binary_upgrade_create_empty_extension/
		  && !/pg_catalog\.setval\(/
		  && !/relfrozenxid/
		  && !/^WHERE oid = '\d+';$/
	} split /\n/, $out;
	return join("\n", sort @lines) . "\n";
}
my $up_schema    = schema_dump('up');
my $fresh_schema = schema_dump('fresh');
ok($fresh_schema =~ /CREATE TABLE mm\.tickets_active/ && $fresh_schema =~ /ALTER EXTENSION matchmaking ADD TABLE mm\.tickets_active/,
	'the dump shows the extension\'s objects');
if (!is($up_schema eq $fresh_schema ? 'same' : 'different', 'same',
		'pg_dump of the upgraded schema = pg_dump of a fresh 0.4'))
{
	PostgreSQL::Test::Utils::append_to_file("$tempdir/up.sql",    $up_schema);
	PostgreSQL::Test::Utils::append_to_file("$tempdir/fresh.sql", $fresh_schema);
	my ($diff, $derr) = PostgreSQL::Test::Utils::run_command(
		[ 'diff', '-u', "$tempdir/up.sql", "$tempdir/fresh.sql" ]);
	diag "--- upgraded, +++ fresh (sorted lines):\n$diff$derr";
}

# Sorting hides column order, which SELECT * (and the archive copies) see.
my $columns = q{
	SELECT c.relname || ' ' || c.relkind::text || ' (' || cols.list || ')'
	  FROM pg_class c
	  JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'mm'
	 CROSS JOIN LATERAL (
		SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) AS list
		  FROM pg_attribute a
		 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) cols
	 WHERE c.relkind IN ('r', 'p', 'v')
	 ORDER BY c.relname
};
my %up_cols    = map { /^(\S+)/; ($1 => $_) } split /\n/, $node->safe_psql('up',    $columns);
my %fresh_cols = map { /^(\S+)/; ($1 => $_) } split /\n/, $node->safe_psql('fresh', $columns);
my @col_diffs;
for my $rel (sort keys %{ { %up_cols, %fresh_cols } })
{
	my ($u, $f) = ($up_cols{$rel} // '(missing)', $fresh_cols{$rel} // '(missing)');
	push @col_diffs, "upgraded: $u\n   fresh: $f" if $u ne $f;
}
ok(keys %fresh_cols >= 20, 'the column lists cover the tables and views of mm');
is(join("\n", @col_diffs), '', 'every table and view has the same columns in the same order');

my $config = q{
	SELECT array_to_string(ARRAY(SELECT unnest(extconfig::regclass[]::text[]) ORDER BY 1), ' ')
		   || ' / ' || array_to_string(ARRAY(SELECT unnest(extcondition) ORDER BY 1), ',')
	  FROM pg_extension WHERE extname = 'matchmaking'
};
my $up_config = $node->safe_psql('up', $config);
is($up_config, $node->safe_psql('fresh', $config),
	'the same tables are registered for pg_dump (extconfig)');
note $up_config;

# --- issue 17: a match formed by 0.1, requeued after the upgrade, must not
# put a player in two matches.  Exactly as reported: ana and ben match on
# 0.1, the upgrade, a ticket for ana, requeue_match(1, 'x'), a tick.
$node->safe_psql('postgres', 'CREATE DATABASE rq');
$node->safe_psql(
	'rq', join("\n",
		q{CREATE EXTENSION matchmaking VERSION '0.1';},
		q{SELECT mm.create_queue('duel', '{"match_size": {"min": 2, "max": 2}}');},
		mm_old_ticket_sql('0.1', 'duel', '[{"id": "ana"}]', '2026-01-01 00:00:00+00'),
		mm_old_ticket_sql('0.1', 'duel', '[{"id": "ben"}]', '2026-01-01 00:00:01+00'),
		mm_old_tick_sql('0.1', 'duel', '2026-01-01 00:00:10+00',
			matches => [ { quality => 1, rule_steps => '{}', tickets => [ [1], [2] ] } ]),
		q{ALTER EXTENSION matchmaking UPDATE;}));
# who is in which live match, and which active ticket holds whom
my $live_sql = q{
	SELECT coalesce(string_agg(mp.player_id || '@' || mp.match_id, ' ' ORDER BY mp.player_id, mp.match_id), '')
	  FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
	 WHERE m.status IN ('proposed', 'ready', 'assigned') AND mp.left_at IS NULL};
my $held_sql = q{
	SELECT coalesce(string_agg(a.player_id || '>' || a.ticket_id || ':' || t.status, ' ' ORDER BY a.player_id), '')
	  FROM mm.active_players a JOIN mm.tickets t ON t.id = a.ticket_id};
is($node->safe_psql('rq', $held_sql), 'ana>1:matched ben>2:matched',
	'issue 17: the upgrade holds the players of the 0.1 match');
($rc, $out, $err) = $node->psql('rq',
	q{SELECT mm.create_ticket('duel', '[{"id": "ana"}]', '2026-01-01 00:01:00+00')});
like($err, qr/player "ana" is in match 1, which is ready/,
	'issue 17: create_ticket for ana is refused while her match is live');
is($node->safe_psql('rq', q{SELECT mm.requeue_match(1, 'x', '2026-01-01 00:01:01+00')}),
	'{1,2}', 'issue 17: requeue_match(1) puts both tickets back');
is($node->safe_psql('rq', $held_sql), 'ana>1:searching ben>2:searching',
	'issue 17: the requeued tickets hold their players');
($rc, $out, $err) = $node->psql('rq', q{SELECT mm.tick('duel', '2026-01-01 00:01:05+00')});
is("$rc $out", '0 1', 'issue 17: the tick forms one match') or diag $err;
is($node->safe_psql('rq', $live_sql), 'ana@2 ben@2', 'issue 17: ana is in one match');

# The variant: ana searched again on 0.1 after her match formed (0.1 let
# her), in a queue of 2 or 3, where the requeued ticket and her new one would
# make one match with ana twice (match_players_pkey, on every tick).  Her
# active ticket keeps her; the match's ticket stays ended on the requeue.
$node->safe_psql('postgres', 'CREATE DATABASE rq2');
$node->safe_psql(
	'rq2', join("\n",
		q{CREATE EXTENSION matchmaking VERSION '0.1';},
		q{SELECT mm.create_queue('ffa', '{"match_size": {"min": 2, "max": 3}}');},
		mm_old_ticket_sql('0.1', 'ffa', '[{"id": "ana"}]', '2026-01-01 00:00:00+00'),
		mm_old_ticket_sql('0.1', 'ffa', '[{"id": "ben"}]', '2026-01-01 00:00:01+00'),
		mm_old_tick_sql('0.1', 'ffa', '2026-01-01 00:00:10+00',
			matches => [ { quality => 1, rule_steps => '{}', tickets => [ [1], [2] ] } ]),
		mm_old_ticket_sql('0.1', 'ffa', '[{"id": "ana"}]', '2026-01-01 00:00:20+00'),
		q{ALTER EXTENSION matchmaking UPDATE;}));
is($node->safe_psql('rq2', $held_sql), 'ana>3:searching ben>2:matched',
	'variant: ana\'s active ticket keeps her; ben is held by the 0.1 match');
is($node->safe_psql('rq2', q{SELECT mm.requeue_match(1, 'x', '2026-01-01 00:01:01+00')}),
	'{2}', 'variant: the requeue puts back ben\'s ticket only');
is($node->safe_psql('rq2', q{SELECT string_agg(id || ':' || status, ' ' ORDER BY id) FROM mm.tickets}),
	'1:matched 2:searching 3:searching', 'variant: ana\'s ticket of the requeued match stays ended');
for my $second (5, 6)
{
	($rc, $out, $err) = $node->psql('rq2', "SELECT mm.tick('ffa', '2026-01-01 00:01:0$second+00')");
	is($rc, 0, "variant: tick at 00:01:0$second succeeds") or diag $err;
}
is($node->safe_psql('rq2', $live_sql), 'ana@2 ben@2',
	'variant: one match, of ana (with her active ticket) and ben');
is($node->safe_psql('rq2', q{SELECT ticket_id FROM mm.match_players WHERE match_id = 2 AND player_id = 'ana'}),
	'3', 'variant: ana plays with the ticket that held her');

# --- 0.2 -> 0.4: a database filled as 0.2 did
$node->safe_psql('postgres', 'CREATE DATABASE up2');
$node->safe_psql('up2', "CREATE EXTENSION matchmaking VERSION '0.2'");
$node->safe_psql('up2', mm_scenario_sql('0.2'));
my $tickets_02 = q{SELECT string_agg(id || ':' || status || ':' || created_at || ':' || coalesce(match_id, 0), ' '
                                     ORDER BY id) FROM mm.tickets};
my $before_02 = $node->safe_psql('up2', $tickets_02);
($rc, $out, $err) = $node->psql('up2', "ALTER EXTENSION matchmaking UPDATE TO '0.4'");
is($rc, 0, "ALTER EXTENSION matchmaking UPDATE TO '0.4' from 0.2 succeeds") or diag $err;
is($node->safe_psql('up2', $tickets_02), $before_02, '0.2 tickets unchanged by the upgrade');
is(schema_dump('up2') eq $fresh_schema ? 'same' : 'different', 'same',
	'pg_dump of the schema upgraded from 0.2 = a fresh 0.4');
# 0.2 released matched players when their match formed, and had no way to
# end a match: its matches are live (ready) after the upgrade, and a requeue
# would put their tickets back to searching, so the upgrade holds their
# players like those of a 0.3 match; they search again once it ends
is($node->safe_psql('up2', $held_sql),
	'a>1:matched b>2:matched c>3:searching p1>5:matched p2>5:matched q1>9:searching q2>9:searching '
	  . 'x>6:matched z>8:searching',
	'the players of the live 0.2 matches and of the searching tickets are held');
is( $node->safe_psql(
		'up2', $try_fn . q{
	SELECT pg_temp.try($$SELECT mm.create_ticket('duel', '[{"id": "a", "attributes": {"skill": 1000}}]',
					   '2026-01-01 00:03:00+00')$$);
	SELECT pg_temp.try($$SELECT mm.create_ticket('duel', '[{"id": "c", "attributes": {"skill": 3000}}]',
					   '2026-01-01 00:03:00+00')$$);
	SELECT mm.complete_match(id, '2026-01-01 00:03:01+00') FROM mm.matches WHERE queue = 'duel';
	SELECT pg_temp.try($$SELECT mm.create_ticket('duel', '[{"id": "a", "attributes": {"skill": 1000}}]',
					   '2026-01-01 00:03:02+00')$$);}),
	"23505\n23505\n\nok",
	'a player of a live 0.2 match is held until it is completed, then may search; a searching player is held');
# and the lifecycle works on a 0.2 match
$node->safe_psql('up2', q{SELECT mm.complete_match(id, '2026-01-01 00:30:00+00') FROM mm.matches WHERE queue = 'ffa'});
is($node->safe_psql('up2', q{SELECT status FROM mm.matches WHERE queue = 'ffa'}), 'completed',
	'a 0.2 match can be completed');

# --- 0.3 -> 0.4: a database filled as 0.3 did
$node->safe_psql('postgres', 'CREATE DATABASE up3');
$node->safe_psql('up3', "CREATE EXTENSION matchmaking VERSION '0.3'");
$node->safe_psql('up3', mm_scenario_sql('0.3'));
my $before_03 = $node->safe_psql('up3', $tickets_02);
($rc, $out, $err) = $node->psql('up3', q{SELECT mm.explain_ticket(3, '2026-01-01 00:02:00+00')});
like($err, qr/ERROR:  mm\.explain_ticket needs extension "matchmaking" version 0\.4, but this database has version 0\.3.*HINT:  Run ALTER EXTENSION matchmaking UPDATE\./s,
	'0.3: mm.explain_ticket is refused until the update');
($rc, $out, $err) = $node->psql('up3', "ALTER EXTENSION matchmaking UPDATE TO '0.4'");
is($rc, 0, "ALTER EXTENSION matchmaking UPDATE TO '0.4' from 0.3 succeeds") or diag $err;
is($node->safe_psql('up3', $tickets_02), $before_03, '0.3 tickets unchanged by the upgrade');
is(schema_dump('up3') eq $fresh_schema ? 'same' : 'different', 'same',
	'pg_dump of the schema upgraded from 0.3 = a fresh 0.4');

# A 0.3 database where a 0.2 match was already requeued (issue 17): ana has
# two searching tickets, the requeued one unclaimed.  The upgrade claims or
# cancels every unclaimed active ticket: the one that holds her stays, the
# other is cancelled (with a NOTICE), and the tick forms one match.
$node->safe_psql('postgres', 'CREATE DATABASE up3b');
$node->safe_psql(
	'up3b', join("\n",
		q{CREATE EXTENSION matchmaking VERSION '0.2';},
		q{SELECT mm.create_queue('ffa', '{"match_size": {"min": 2, "max": 3}}');},
		q{SELECT mm.create_ticket('ffa', '[{"id": "ana"}]', '2026-01-01 00:00:00+00');},
		q{SELECT mm.create_ticket('ffa', '[{"id": "ben"}]', '2026-01-01 00:00:01+00');},
		mm_old_tick_sql('0.2', 'ffa', '2026-01-01 00:00:10+00',
			matches => [ { quality => 1, rule_steps => '{}', tickets => [ [1], [2] ] } ]),
		q{ALTER EXTENSION matchmaking UPDATE TO '0.3';
	SELECT mm.create_ticket('ffa', '[{"id": "ana"}]', '2026-01-01 00:01:00+00');
	SELECT mm.requeue_match(1, 'x', '2026-01-01 00:01:01+00');}));
is($node->safe_psql('up3b', q{SELECT string_agg(id || ':' || status, ' ' ORDER BY id) FROM mm.tickets}),
	'1:searching 2:searching 3:searching', '0.3: the requeue left ana with two searching tickets');
($rc, $out, $err) = $node->psql('up3b', "ALTER EXTENSION matchmaking UPDATE TO '0.4'");
is($rc, 0, 'the upgrade of that 0.3 database succeeds') or diag $err;
like($err, qr/cancelled 1 ticket\(s\) of players that another ticket or live match holds: 1/,
	'the upgrade says which ticket it cancelled');
is($node->safe_psql('up3b', q{SELECT string_agg(id || ':' || status, ' ' ORDER BY id) FROM mm.tickets}),
	'1:cancelled 2:searching 3:searching', 'the unclaimed duplicate is cancelled');
is($node->safe_psql('up3b', $held_sql), 'ana>3:searching ben>2:searching',
	'every searching ticket holds its players');
($rc, $out, $err) = $node->psql('up3b', q{SELECT mm.tick('ffa', '2026-01-01 00:01:05+00')});
is("$rc $out", '0 1', 'the tick forms one match') or diag $err;
is($node->safe_psql('up3b', $live_sql), 'ana@2 ben@2', 'ana is in one match');

# A 0.3 installed into a schema mm that its database's owner had created
# (0.3 adopted it): that owner could swap the schema for look-alikes, so the
# update refuses it until a superuser takes the schema over; a fresh 0.4
# install refuses such a schema at once.
$node->safe_psql('postgres', q{CREATE ROLE game_owner LOGIN; CREATE DATABASE up3c OWNER game_owner;
	CREATE DATABASE fresh_owned OWNER game_owner});
$node->safe_psql('up3c', 'CREATE SCHEMA mm', extra_params => [ '-U', 'game_owner' ]);
$node->safe_psql('up3c', "CREATE EXTENSION matchmaking VERSION '0.3'");
($rc, $out, $err) = $node->psql('up3c', "ALTER EXTENSION matchmaking UPDATE TO '0.4'");
like($err, qr/ERROR:  schema "mm" is owned by role "game_owner", which is neither the role updating the extension nor a superuser/,
	'the update refuses a schema mm its database owner owns');
$node->safe_psql('up3c', 'ALTER SCHEMA mm OWNER TO CURRENT_USER');
($rc, $out, $err) = $node->psql('up3c', "ALTER EXTENSION matchmaking UPDATE TO '0.4'");
is($rc, 0, 'once a superuser owns the schema, the update succeeds') or diag $err;
$node->safe_psql('fresh_owned', 'CREATE SCHEMA mm', extra_params => [ '-U', 'game_owner' ]);
($rc, $out, $err) = $node->psql('fresh_owned', 'CREATE EXTENSION matchmaking');
like($err, qr/ERROR:  schema "mm" is owned by role "game_owner", which is neither the role installing the extension nor a superuser/,
	'CREATE EXTENSION refuses a schema mm another role owns');
$node->safe_psql('fresh_owned', 'ALTER SCHEMA mm OWNER TO CURRENT_USER; CREATE TABLE mm.mine (a integer)');
($rc, $out, $err) = $node->psql('fresh_owned', 'CREATE EXTENSION matchmaking');
like($err, qr/ERROR:  schema "mm" already holds objects/, 'and one that holds objects');
$node->safe_psql('fresh_owned', 'DROP TABLE mm.mine');
($rc, $out, $err) = $node->psql('fresh_owned', 'CREATE EXTENSION matchmaking');
is($rc, 0, 'an empty schema mm a superuser owns is taken') or diag $err;

$node->stop;
done_testing();
