# The figures where operators look (docs/monitoring.md): Debian's
# postgres_exporter, run with monitoring/queries.yaml as a login role of
# mm_analyst against a node with two queues, is scraped on 127.0.0.1; every
# series of the queries file is there with the value the test computes on
# its own from the tables (and, for the data it made, by hand).  The names
# that monitoring/alerts.yml and monitoring/grafana-dashboard.json use are
# series of the scrape; promtool checks and unit-tests the alert rules.
# Skipped without Debian's prometheus-postgres-exporter and prometheus.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use Time::HiRes qw(usleep);
use MmTest;

my $exporter = '/usr/bin/prometheus-postgres-exporter';
my $promtool = '/usr/bin/promtool';
plan skip_all => 'prometheus-postgres-exporter or prometheus (promtool) is not installed'
  unless -x $exporter && -x $promtool;

my $top = dirname(__FILE__) . '/../..';
my $dir = "$top/monitoring";

# promtool: the rules load, and their unit tests pass
for my $args ([ 'check', 'rules', 'alerts.yml' ], [ 'test', 'rules', 'alerts_test.yml' ])
{
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $promtool, @$args ], '>', \$out, '2>', \$err,
		init => sub { chdir $dir or die "$dir: $!" });
	ok($ok && $out =~ /SUCCESS/, "promtool @$args") or diag "$out$err";
}

my $node = mm_new_node('monitoring');
# T0 is the setup's time: six tickets 120 to 70 s before, matched 60 s
# before (waits 60, 50, 40, 30, 20, 10 s: p50 35, p95 57.5; 3 matches in 5
# minutes: 0.6 a minute); two more searching.  Autofill: 1 of the 4 role
# players.  One player owes low-priority games.  Ticks: a success of 0.5 s
# ending 19.5 s before T0, then a failure of 0.1 s.  Fairness: favourites of
# 0.52 (fair) and 0.6; the third match has one team's prediction (left out).
$node->safe_psql('postgres', q{
	CREATE TABLE public.t0 AS SELECT now() AS t0;
	GRANT SELECT ON public.t0 TO PUBLIC;
	SELECT mm.create_queue(q, '{"match_size": {"min": 2, "max": 2},
		"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}]}')
	  FROM unnest(ARRAY['mon_duel', 'mon_quiet']) q;
	SELECT mm.create_ticket('mon_duel', jsonb_build_array(jsonb_build_object('id', 'mon_p' || i)),
							t0 - '120 s'::interval + (i - 1) * '10 s'::interval)
	  FROM generate_series(1, 6) i, public.t0;
	SELECT mm.tick('mon_duel', t0 - '60 s'::interval) FROM public.t0;
	SELECT mm.create_ticket('mon_duel', jsonb_build_array(jsonb_build_object('id', 'mon_s' || i)),
							t0 - '30 s'::interval)
	  FROM generate_series(1, 2) i, public.t0;
	CREATE TABLE public.mon_matches AS
		SELECT match_id, row_number() OVER (ORDER BY match_id) AS n
		  FROM (SELECT DISTINCT match_id FROM mm.match_players WHERE queue = 'mon_duel') m;
	UPDATE mm.match_players mp
	   SET role = CASE m.n WHEN 1 THEN 'tank' ELSE 'dps' END,
		   autofilled = (m.n = 1 AND mp.team = 'red')
	  FROM public.mon_matches m
	 WHERE mp.queue = 'mon_duel' AND mp.match_id = m.match_id AND m.n <= 2;
	INSERT INTO mm.player_penalties (player_id, queue, offences, low_priority_games, updated_at)
	VALUES ('mon_lp1', 'mon_duel', 3, 2, now()), ('mon_lp2', 'mon_duel', 1, 0, now());
	INSERT INTO mm.match_predictions (queue, match_id, team, win_probability, pool, team_name, system,
									  created_at)
	SELECT 'mon_duel', m.match_id, p.team, p.win, 'ranked', CASE p.team WHEN 1 THEN 'red' ELSE 'blue' END,
		   'elo', t0 - '60 s'::interval
	  FROM public.mon_matches m CROSS JOIN public.t0
	  JOIN (VALUES (1, 1, 0.52), (1, 2, 0.48), (2, 1, 0.4), (2, 2, 0.6), (3, 1, 0.5)) p(n, team, win)
		ON p.n = m.n;
	CREATE ROLE mon_ticker LOGIN IN ROLE mm_ticker;
	CREATE ROLE mon_exporter LOGIN IN ROLE mm_analyst;
});
$node->safe_psql('postgres', q{
	SET ROLE mon_ticker;
	SELECT mm.record_tick('mon_duel', t0 - '20 s'::interval, t0 - '19.5 s'::interval),
		   mm.record_tick('mon_duel', t0 - '10 s'::interval, t0 - '9.9 s'::interval, '57014')
	  FROM public.t0;
});

# the exporter, as docs/monitoring.md installs it, on a free port of 127.0.0.1
my $port = PostgreSQL::Test::Cluster::get_free_port();
my ($exp_out, $exp_err) = ('', '');
my $dsn = sprintf('host=%s port=%d user=mon_exporter dbname=postgres sslmode=disable', $node->host, $node->port);
my $proc = IPC::Run::start(
	[ $exporter, "--extend.query-path=$dir/queries.yaml", "--web.listen-address=127.0.0.1:$port" ],
	'>', \$exp_out, '2>', \$exp_err,
	init => sub { $ENV{DATA_SOURCE_NAME} = $dsn });
my $http = HTTP::Tiny->new(timeout => 10);
my $body;
for (1 .. 100)
{
	my $res = $http->get("http://127.0.0.1:$port/metrics");
	if ($res->{success} && $res->{content} =~ /^mm_queue_searching_tickets/m)
	{
		$body = $res->{content};
		last;
	}
	usleep(200_000);
}
$proc->kill_kill;
ok(defined $body, 'the exporter serves /metrics on 127.0.0.1') or diag $exp_err;
$body //= '';

# name{queue="q"} value
my %got;
for my $line (split /\n/, $body)
{
	next if $line =~ /^#/;
	$got{$1}{$2} = $3 if $line =~ /^(mm_\w+)\{(?:.*,)?queue="([^"]*)"(?:,.*)?\} (\S+)$/;
	$got{$1}{''} = $2 if $line =~ /^(pg_up|pg_exporter_last_scrape_error) (\S+)$/;
}
is($got{pg_up}{''}, '1', 'the exporter reaches the database as mon_exporter');
is($got{pg_exporter_last_scrape_error}{''}, '0', 'no query of the scrape failed') or diag $exp_err;

# the expected values, computed here from the tables (not by mm.queue_monitoring)
my $expected = $node->safe_psql('postgres', q{
	WITH q(queue) AS (VALUES ('mon_duel'), ('mon_quiet')),
	s AS (SELECT queue, count(*) AS n, sum(jsonb_array_length(players)) AS players FROM mm.tickets
		   WHERE status IN ('searching', 'proposed') GROUP BY queue),
	w AS (SELECT queue, count(*) AS n,
				 percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM matched_at - created_at)) AS p50,
				 percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM matched_at - created_at)) AS p95
			FROM mm.tickets WHERE matched_at > now() - interval '5 minutes' GROUP BY queue),
	m AS (SELECT queue, count(*) / 5.0 AS per_minute FROM mm.matches
		   WHERE created_at > now() - interval '5 minutes' GROUP BY queue),
	a AS (SELECT queue, avg(CASE WHEN autofilled THEN 1 ELSE 0 END) AS rate FROM mm.match_players
		   WHERE role IS NOT NULL GROUP BY queue),
	l AS (SELECT queue, count(*) AS n FROM mm.player_penalties WHERE low_priority_games > 0 GROUP BY queue),
	f AS (SELECT queue, count(*) AS n, count(*) FILTER (WHERE fav >= 0.48 AND fav <= 0.52) AS fair
			FROM (SELECT queue, match_id, max(win_probability) AS fav FROM mm.match_predictions
				   GROUP BY queue, match_id HAVING count(*) = 2) x GROUP BY queue)
	SELECT json_object_agg(q.queue, json_build_object(
		'mm_queue_searching_tickets', coalesce(s.n, 0),
		'mm_queue_searching_players', coalesce(s.players, 0),
		'mm_queue_wait_p50_seconds', w.p50,
		'mm_queue_wait_p95_seconds', w.p95,
		'mm_queue_tickets_matched', coalesce(w.n, 0),
		'mm_queue_matches_per_minute', coalesce(m.per_minute, 0),
		'mm_queue_autofill_rate', a.rate,
		'mm_queue_low_priority_players', coalesce(l.n, 0),
		'mm_tick_ticks_total', r.ticks_total,
		'mm_tick_failures_total', r.failures_total,
		'mm_tick_consecutive_failures', r.consecutive_failures,
		'mm_tick_duration_seconds_total', r.duration_seconds_total,
		'mm_tick_last_duration_seconds', r.last_duration_seconds,
		'mm_tick_last_success_timestamp_seconds', extract(epoch FROM r.last_success_at),
		'mm_fairness_rated_matches', f.n,
		'mm_fairness_fair_matches', f.fair,
		'mm_fairness_fair_share', f.fair::float8 / f.n))
	  FROM q LEFT JOIN s USING (queue) LEFT JOIN w USING (queue) LEFT JOIN m USING (queue)
	  LEFT JOIN a USING (queue) LEFT JOIN l USING (queue) LEFT JOIN f USING (queue)
	  LEFT JOIN mm.tick_runs r USING (queue)
});
my $want = decode_json($expected);
my $since = $node->safe_psql('postgres',
	q{SELECT extract(epoch FROM now() - t0) FROM public.t0});

# what the data makes, by hand
my %by_hand = (
	mm_queue_searching_tickets => 2, mm_queue_searching_players => 2,
	mm_queue_wait_p50_seconds => 35, mm_queue_wait_p95_seconds => 57.5, mm_queue_tickets_matched => 6,
	mm_queue_matches_per_minute => 0.6, mm_queue_autofill_rate => 0.25, mm_queue_low_priority_players => 1,
	mm_tick_ticks_total => 2, mm_tick_failures_total => 1, mm_tick_consecutive_failures => 1,
	mm_tick_duration_seconds_total => 0.6, mm_tick_last_duration_seconds => 0.1,
	mm_fairness_rated_matches => 2, mm_fairness_fair_matches => 1, mm_fairness_fair_share => 0.5);

sub close_to { my ($a, $b) = @_; return defined $a && defined $b && abs($a - $b) <= 1e-9 * (1 + abs($b)); }

for my $name (sort keys %{ $want->{mon_duel} })
{
	my $g = $got{$name}{mon_duel};
	ok(close_to($g, $want->{mon_duel}{$name}), "mon_duel $name is the tables' $want->{mon_duel}{$name}")
	  or diag "scraped: " . ($g // 'nothing');
	ok(close_to($g, $by_hand{$name}), "mon_duel $name is $by_hand{$name} by hand")
	  if exists $by_hand{$name};
}
# the age of the last success: 19.5 s at T0, plus the time until the scrape
my $age = $got{mm_tick_seconds_since_last_success}{mon_duel};
ok(defined $age && $age >= 19.5 && $age <= 19.5 + $since + 1e-6,
	"mon_duel's last successful tick is 19.5 s old at T0 (scraped: " . ($age // 'nothing') . ')');

# the queue without data: zeros, no figure where there is nothing to measure
for my $name (qw(mm_queue_searching_tickets mm_queue_searching_players mm_queue_tickets_matched
	mm_queue_matches_per_minute mm_queue_low_priority_players))
{
	is($got{$name}{mon_quiet}, '0', "mon_quiet $name is 0");
}
for my $name (qw(mm_queue_wait_p50_seconds mm_queue_wait_p95_seconds mm_queue_autofill_rate))
{
	is($got{$name}{mon_quiet}, 'NaN', "mon_quiet $name has no value (NaN)");
}
ok(!exists $got{mm_tick_ticks_total}{mon_quiet} && !exists $got{mm_fairness_fair_share}{mon_quiet},
	'mon_quiet, never ticked nor rated, has no tick or fairness series');

# every series the queries file declares was scraped
my $queries = slurp_file("$dir/queries.yaml");
my (@declared, $namespace);
for my $line (split /\n/, $queries)
{
	$namespace = $1 if $line =~ /^(\w+):\s*$/;
	push @declared, "${namespace}_$1" if $line =~ /^\s+- (\w+):\s*$/ && $1 ne 'queue';
}
is(scalar(@declared), 18, 'queries.yaml declares 18 series (8 per queue, 7 of ticks, 3 of fairness)');
is(join(' ', grep { !exists $got{$_}{mon_duel} } @declared), '', 'every declared series is scraped for mon_duel');

# the alerts and the dashboard name only scraped series (or the user's targets)
my %declared = map { $_ => 1 } @declared, 'mm_queue_wait_p95_target_seconds';
for my $file ('alerts.yml', 'alerts_test.yml', 'grafana-dashboard.json')
{
	my %used = map { $_ => 1 } (slurp_file("$dir/$file") =~ /\b(mm_[a-z0-9_]+)\b/g);
	is(join(' ', grep { !$declared{$_} } sort keys %used), '', "$file names only series of queries.yaml");
}
ok(eval { decode_json(slurp_file("$dir/grafana-dashboard.json")); 1 }, 'the dashboard is valid JSON');

$node->stop;
done_testing();
