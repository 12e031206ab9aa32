# mm.replay on a streaming standby: the what-if runs where analysts query,
# on a read replica (a read-only transaction in recovery), and gives what the
# primary gives for the same window.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('replay_primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION matchmaking');
# a history: two tickets a second for 30 s, between the ticks, ticked every second
$primary->safe_psql(
	'postgres', q{
	SELECT mm.create_queue('duel', '{"teams": [{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}],
		"rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 50,
				   "expansion": {"every_seconds": 5, "delta": 50, "limit": 300}}]}');
	DO $$
	BEGIN
		FOR s IN 0..39 LOOP
			IF s < 30 THEN
				PERFORM mm.create_ticket('duel', jsonb_build_array(jsonb_build_object('id', 'd' || (s * 2 + k),
						'attributes', jsonb_build_object('skill', ((s * 2 + k) * 7919) % 1000))),
					'2026-01-01 00:00:00.25+00'::timestamptz + make_interval(secs => s + (k - 1) * 0.5))
				  FROM generate_series(1, 2) k;
			END IF;
			PERFORM mm.tick('duel', '2026-01-01 00:00:01+00'::timestamptz + make_interval(secs => s));
		END LOOP;
	END
	$$;});

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('replay_standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');
my $replay = q{SELECT mm.replay('duel', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:40+00')};
my $on_standby = $standby->safe_psql('postgres', $replay);
like($on_standby, qr/"replay": \{.*"matches": [1-9]/, 'mm.replay runs on the standby and forms matches');
is($on_standby, $primary->safe_psql('postgres', $replay), 'the same result as on the primary');
is( $standby->safe_psql(
		'postgres', q{SELECT count(*) FROM mm.replay_matches('duel', NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:40+00')}),
	$primary->safe_psql('postgres', q{SELECT count(*) FROM mm.matches WHERE queue = 'duel'}),
	'mm.replay_matches on the standby forms as many matches as the primary recorded');
is( $standby->safe_psql(
		'postgres', q{BEGIN READ ONLY; SELECT (mm.replay('duel', '{"teams": [{"name": "a", "min": 1, "max": 1},
			{"name": "b", "min": 1, "max": 1}], "rules": [{"name": "skill", "type": "difference", "attribute": "skill",
			"max": 1000}]}', '2026-01-01 00:00:00+00', '2026-01-01 00:00:40+00') -> 'replay' ->> 'matched_share')::numeric
			>= 0.9; COMMIT;}),
	't', 'a candidate config replays on the standby too');

$standby->stop;
$primary->stop;
done_testing();
