# mm.replay and mm.replay_ratings on a streaming standby: the what-ifs run
# where analysts query, on a read replica (a read-only transaction in
# recovery), give what the primary gives for the same window, and give it
# again when called twice.
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

# rated results: a Glicko-2 and an OpenSkill pool, 20 one-on-one results
# each among 7 players
$primary->safe_psql(
	'postgres', q{
	SELECT mm.create_queue(q, jsonb_build_object('teams', '[{"name": "a", "min": 1, "max": 1}, {"name": "b", "min": 1, "max": 1}]'::jsonb,
		'rating', jsonb_build_object('system', s)))
	  FROM (VALUES ('rated_g2', 'glicko2'), ('rated_os', 'openskill')) v(q, s);
	DO $$
	DECLARE
		at timestamptz;
		made bigint;
	BEGIN
		FOR s IN 0..19 LOOP
			at := '2026-02-01 00:00:00+00'::timestamptz + make_interval(mins => s);
			FOR q IN 1..2 LOOP
				PERFORM mm.create_ticket((ARRAY['rated_g2', 'rated_os'])[q],
										 jsonb_build_array(jsonb_build_object('id', 'r' || p)), at)
				   FROM unnest(ARRAY[s % 7, (s + 1 + s % 3) % 7]) p;
				PERFORM mm.tick((ARRAY['rated_g2', 'rated_os'])[q], at + interval '1 second');
				SELECT max(m.id) INTO made FROM mm.matches m WHERE m.queue = (ARRAY['rated_g2', 'rated_os'])[q];
				PERFORM mm.report_result((ARRAY['rated_g2', 'rated_os'])[q], made,
										 jsonb_build_object('a', 1 + s % 2, 'b', 2 - s % 2), at + interval '30 seconds');
			END LOOP;
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

# mm.replay_ratings: read-only on the standby, the live settings reproduce
# the live ratings, and other settings run there too
for my $case (
	[ 'rated_g2', '{"system": "glicko2"}' ],
	[ 'rated_os', '{"system": "openskill"}' ],
	[ 'rated_g2', '{"system": "glicko2", "tau": 0.3, "rating_period": "5 minutes", "season_resets": [{"at": "2026-02-01 00:10+00"}]}' ],
	[ 'rated_os', '{"system": "openskill", "beta": 5, "seed": "live"}' ])
{
	my ($pool, $settings) = @$case;
	my $call = qq{SELECT mm.replay_ratings('$pool', '$settings', '2026-02-01 00:00+00', '2026-02-02 00:00+00')};
	my $first = $standby->safe_psql('postgres', "BEGIN READ ONLY; $call; COMMIT;");
	like($first, qr/"results": 20\b/, "$pool $settings: replays the 20 results on the standby");
	is($standby->safe_psql('postgres', $call), $first, "$pool $settings: the same output twice (deterministic)");
	is($primary->safe_psql('postgres', $call), $first, "$pool $settings: the same output as on the primary");
	if ($settings !~ /tau|beta/)
	{
		like($first, qr/"max_rating_difference": 0\b/, "$pool: the live settings reproduce the live ratings");
	}
}

$standby->stop;
$primary->stop;
done_testing();
