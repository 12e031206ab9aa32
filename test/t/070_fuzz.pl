# Mutation fuzzing of the SQL interface, after pgvector's test/t/037_inputs.pl.
#
# Valid inputs are mutated with a seeded Perl PRNG and sent in batches, one
# psql session per batch, each call wrapped in fuzz_try() so that an error
# does not stop the batch:
#   - queue configs (create_queue, alter_queue, validate_queue_config,
#     rule_threshold, drop_queue, INSERT/UPDATE of mm.queues): keys deleted,
#     values of the wrong JSON type, huge/negative/tiny numbers, long and deep
#     arrays, long and unicode strings, and (pgvector style) the JSON text
#     itself cut and spliced;
#   - tickets (create_ticket, multi-row INSERT): missing or duplicate ids,
#     huge attribute values, nested objects, wrong types, many regions;
#   - mm.tick (interleaved on the fuzzed queues and on five fixed valid
#     queues, so that matches really form) with odd `now` values, ticket
#     cancellation and heartbeats with odd ids, status UPDATEs by hand;
#   - the match lifecycle on the matches the ticks formed (one queue asks
#     for acceptance): accept_match (all players, or one accepting or
#     rejecting), assign, report_result, complete_match, leave_match,
#     requeue_match, request_backfill, cancel_backfill, get_assignment, now
#     and then with odd ids, players, ranks, slots, connections and times;
#   - the metrics functions with extreme windows and times;
#   - penalties (0.4): two fixed queues (s_duel, s_squads, the acceptance
#     queue) have a "penalties" config with a short low-priority bound, so
#     the lifecycle's rejects, acceptance timeouts and leaves record
#     offences; tickets of penalised players (read from
#     mm.player_penalties) are refused while cooling down (55000) or are
#     matched in the low-priority pool; the penalties keys are among the
#     config mutations;
#   - ranked play (0.4): configure_rating_pool with mutated settings,
#     set_rating/set_ratings with odd numbers and arrays, start_season with
#     odd names and times, get_player_ratings/get_penalties with odd ids,
#     export_player with any id and forget_player with ids that hold nothing,
#     penalty_stats/low_priority_waits with odd windows, the new views;
#     queue_monitoring with odd windows, record_tick with odd times and SQLSTATEs;
#   - the rating and balancing functions (Elo, Glicko-2, team ratings, smurf
#     score, balance_teams, OpenSkill) with mismatched array lengths, NaN,
#     Infinity, NULL elements, multi-dimensional and oversized arrays.
#
# Checks: every call succeeds or fails with an SQLSTATE outside class XX
# (internal error, data corrupted) and in time (statement_timeout); the
# backend never crashes; afterwards (and after every batch) the matchmaking
# invariants hold: no ticket in two matches (cancelled proposals aside), no
# ticket lost or duplicated, mm.active_players holding exactly the held
# players (those of active tickets, and those of live matches who have not
# left: a player stays held until the match ends), statuses consistent with
# the match rows (proposed tickets in proposed matches), every match within the team
# bounds and match size of the config it was formed under, penalty counts
# never negative, no match mixing tickets of the low-priority pool with
# others (and no backfill from it), no tier for a provisional rating.  At least some
# matches must have formed.  Observer triggers (which only copy rows into
# tables of their own) record the config each match was formed under, the
# tickets inserted and the tickets backfill brought into a match.
#
# Seeded and reproducible: MM_FUZZ_SEED=<n> (default below); the seed is
# printed at the start and in every failure message, with the offending SQL.
# Bounded: 3000 calls (about 5 s on an idle 2-core machine), stopping early
# after 60 s.  Every call and its outcome go to tmp_check/070_fuzz_calls.log.
#   MM_FUZZ_CHECK_EVERY_CALL=1  check the invariants after every call (about
#                               4x slower), so that a violation names its call
#   MM_FUZZ_KNOWN_DEFECTS=0     leave out the inputs of the defects listed in
#                               @known_defects (fixed; sent by default)
#   MM_FUZZ_CALLS, MM_FUZZ_TIME_LIMIT  a longer exploration (3000, 60 s)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use B ();
use MmTest;

my $seed = $ENV{MM_FUZZ_SEED} // 7070;
die "MM_FUZZ_SEED must be a non-negative integer\n" unless $seed =~ /^\d+$/;
srand($seed);
note("MM_FUZZ_SEED=$seed (set MM_FUZZ_SEED to reproduce or to explore another seed)");

# overridable for longer explorations; the defaults are the suite's bounds
my $TOTAL_CALLS = $ENV{MM_FUZZ_CALLS} // 3000;
my $BATCH_SIZE = 100;
my $TIME_LIMIT_S = $ENV{MM_FUZZ_TIME_LIMIT} // 60;

# ---------------------------------------------------------------------------
# PRNG helpers (Perl's own PRNG, seeded above; never SQL random())

sub R { return int(rand($_[0])); }
sub pick { return $_[ R(scalar @_) ]; }
sub chance { return rand() < $_[0]; }

# A JSON token written as is (numbers Perl cannot hold, literals).
sub raw { my ($s) = @_; return bless \$s, 'FuzzRaw'; }

# ---------------------------------------------------------------------------
# A small JSON encoder: keys sorted (reproducible whatever Perl's hash order),
# numbers kept as numbers, FuzzRaw tokens verbatim.

sub is_num
{
	my $f = B::svref_2object(\$_[0])->FLAGS;
	return ($f & (B::SVp_IOK | B::SVp_NOK)) && !($f & B::SVp_POK);
}

sub jstr
{
	my ($s) = @_;
	$s =~ s/(["\\])/\\$1/g;
	$s =~ s/([\x00-\x1f])/sprintf('\\u%04x', ord $1)/ge;
	return qq{"$s"};
}

sub enc
{
	my ($v) = @_;
	return 'null' unless defined $v;
	my $r = ref $v;
	return $$v if $r eq 'FuzzRaw';
	return '{' . join(',', map { jstr($_) . ':' . enc($v->{$_}) } sort keys %$v) . '}'
	  if $r eq 'HASH';
	return '[' . join(',', map { enc($_) } @$v) . ']' if $r eq 'ARRAY';
	if (is_num($v))
	{
		my $c = $v;
		return "$c";
	}
	return jstr($v);
}

sub clone
{
	my ($v) = @_;
	my $r = ref $v;
	return { map { $_ => clone($v->{$_}) } keys %$v } if $r eq 'HASH';
	return [ map { clone($_) } @$v ] if $r eq 'ARRAY';
	return $v;
}

# An SQL string literal (standard_conforming_strings is on).
sub lit
{
	my ($s) = @_;
	return 'NULL' unless defined $s;
	$s =~ s/'/''/g;
	return "'$s'";
}

# ---------------------------------------------------------------------------
# Odd JSON values

sub deep
{
	my $d = pick(2, 10, 100, 1000, 10000, 100000);
	return chance(0.5)
	  ? raw(('[' x $d) . (']' x $d))
	  : raw(('{"a":' x $d) . '1' . ('}' x $d));
}

sub long_array
{
	my $n = pick(8, 65, 201, 1000, 10000);
	my $k = R(3);
	return raw('[' . join(',', map { R(2000) - 500 } 1 .. $n) . ']') if $k == 0;
	return raw('[' . join(',', map { qq{"s$_"} } 1 .. $n) . ']') if $k == 1;
	return raw('[' . join(',', map { '{"name":"t' . $_ . '","min":1,"max":1}' } 1 .. $n) . ']');
}

sub long_string { return 'a' x pick(63, 64, 65, 128, 129, 256, 257, 1000, 70000); }

sub unicode
{
	return pick(
		"\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80",
		raw('"\\u0000"'), raw('"\\ud800"'), raw('"a\\u0000b"'), raw('"\\u00e9"'),
		"\xc3\xa9" x 64, "\xc3\xa9" x 65, "\xf0\x9f\x98\x80" x 40,
		"a b", "-a", "_a", "a.b", "a..b", ".", "a\\b", "\t", "\xe2\x80\x8b", "\xef\xbb\xbf",
		"ctf", "skill", "red", "x", "eu");
}

my @weird = (
	sub { undef }, sub { raw('true') }, sub { raw('false') },
	sub { '' }, sub { 'x' }, sub { '1' }, sub { '100' },
	sub { 'NaN' }, sub { 'Infinity' }, sub { '-Infinity' },
	sub { 0 }, sub { -1 }, sub { 1 }, sub { 2 }, sub { 0.5 }, sub { -0.5 },
	sub { 200 }, sub { 201 }, sub { 64 }, sub { 65 }, sub { 100000 },
	sub { raw('1e12') }, sub { raw('1000000000001') }, sub { raw('-1e12') },
	sub { raw('1e308') }, sub { raw('-1e308') }, sub { raw('1e-308') },
	sub { raw('5e-324') }, sub { raw('1e400') }, sub { raw('-1e400') }, sub { raw('1e-400') },
	sub { raw('-0') }, sub { raw('0.0000001') },
	sub { raw('2147483647') }, sub { raw('2147483648') }, sub { raw('-2147483649') },
	sub { raw('9223372036854775808') }, sub { raw('123456789012345678901234567890.123456789') },
	sub { [] }, sub { {} }, sub { [ 1, 2, 3 ] }, sub { { a => 1 } }, sub { [undef] },
	sub { [ { name => 'a', min => 1, max => 1 } ] },
	\&deep, \&long_array, \&long_string, \&unicode, \&unicode,
);

sub weird { return $weird[ R(scalar @weird) ]->(); }

my @junk_keys = (
	qw(name type min max attribute weight expansion every_seconds delta limit steps
	  default when_missing seconds_until_optional merge max_ms max_difference source
	  teams rules match_size ticket_timeout_seconds acceptance_timeout_seconds rating
	  live_match_timeout_seconds heartbeat_timeout_seconds
	  statistics system pool show_player_count show_time_to_match id attributes
	  latencies skill mode stats eu us roles autofill after_seconds protect_games per_role
	  tank dps fill
	  penalties cooldown_seconds dodge acceptance_timeout leave cooldown_growth
	  max_cooldown_seconds low_priority offences games max_wait_seconds forgive_after_games
	  seed rd placement each_season tiers divisions demotion margin season_reset share target),
	'', 'x' x 300, "\xc3\xa9t\xc3\xa9", 'a.b', 'NAME', ' name');

# Every (container, key) slot of a structure, in a reproducible order.
sub slots
{
	my ($v, $out) = @_;
	if (ref $v eq 'HASH')
	{
		for my $k (sort keys %$v)
		{
			push @$out, [ $v, $k ];
			slots($v->{$k}, $out);
		}
	}
	elsif (ref $v eq 'ARRAY')
	{
		for my $i (0 .. $#$v)
		{
			push @$out, [ $v, $i ];
			slots($v->[$i], $out);
		}
	}
	return $out;
}

sub slot_get
{
	my ($c, $k) = @_;
	return ref $c eq 'HASH' ? $c->{$k} : $c->[$k];
}

sub slot_set
{
	my ($c, $k, $v) = @_;
	if (ref $c eq 'HASH') { $c->{$k} = $v; }
	else { $c->[$k] = $v; }
	return;
}

# Values at the edges of what a key allows (mostly still valid), so that
# mutated configs pass validation and reach the tick with extreme settings.
my %edge = (
	every_seconds => [ raw('1e-9'), raw('0.001'), 1, raw('1e12'), raw('5e-324') ],
	delta => [ 0, raw('1e12'), 0.5, 200 ],
	limit => [ 0, raw('1e12'), 200, 100 ],
	max => [ 0, raw('1e12'), raw('1e-9'), 1, 2, 200 ],
	min => [ 1, 2, 3, 200 ],
	max_ms => [ 0, raw('1e12'), 1 ],
	max_difference => [ 0, 1, 200 ],
	weight => [ 0, raw('1e12'), raw('1e-300'), raw('5e-324') ],
	seconds_until_optional => [ 0, raw('1e12'), raw('1e-9') ],
	ticket_timeout_seconds => [ raw('1e-9'), raw('1e12'), 1 ],
	acceptance_timeout_seconds => [ raw('1e-9'), raw('1e12') ],
	live_match_timeout_seconds => [ raw('1e-9'), 1, 31536000, 31536001, 0 ],
	heartbeat_timeout_seconds => [ raw('1e-9'), 1, 31536000, 31536001, 0 ],
	steps => [ [ raw('1e12') ], [0], [undef], [ 0 .. 63 ], [ (200) x 64 ], [ (1) x 65 ],
		[ 5, 0, undef ], [ raw('1e-9'), raw('1e12'), undef ] ],
	default => [ 0, raw('1e12'), raw('-1e12'), 'x', '' ],
	merge => [ 'min', 'max', 'average' ],
	type => [ 'difference', 'string_equality', 'latency', 'team_difference', 'team_size_balance' ],
	attribute => [ 'skill', 'mode', 'stats.skill', 'stats', 'a.b.c.d.e.f.g.h', 'a.b.c.d.e.f.g.h.i' ],
	# penalties (docs/penalties.md)
	dodge => [ 0, raw('1e-9'), 31536000 ],
	acceptance_timeout => [ 0, raw('1e-9'), 31536000 ],
	leave => [ 0, 1, 31536000 ],
	cooldown_growth => [ 1, 10, raw('1.000001') ],
	max_cooldown_seconds => [ 0, 31536000, raw('1e-9') ],
	offences => [ 1, 1000 ],
	games => [ 1, 1000 ],
	max_wait_seconds => [ 0, raw('1e-9'), 86400, 1 ],
	forgive_after_games => [ 1, 1000 ],
	# rating pool settings (docs/ratings.md, "Ranked play")
	rd => [ raw('1e-9'), raw('1e6'), 350 ],
	divisions => [ 1, 10 ],
	margin => [ 0, raw('1e12'), raw('1e-9') ],
	share => [ 0, 1, raw('1e-9') ],
	target => [ raw('-1e9'), raw('1e9'), 0 ],
	each_season => [ raw('true'), raw('false') ],
);

# One structural mutation of a JSON-like structure; returns the new root.
# With $edgy, a value under a known key mostly gets one of its edge values.
sub mutate
{
	my ($root, $edgy) = @_;
	my $top = [ clone($root) ];
	my $all = slots($top->[0], []);
	my ($c, $k) = (!@$all || chance(0.03)) ? ($top, 0) : @{ $all->[ R(scalar @$all) ] };
	my $cur = slot_get($c, $k);
	my $op = R(100);

	if ($edgy && ref $c eq 'HASH' && $edge{$k} && chance(0.8))
	{
		slot_set($c, $k, clone(pick(@{ $edge{$k} })));
	}
	elsif ($op < 25 && $c != $top)
	{
		# delete the key or the element
		if (ref $c eq 'HASH') { delete $c->{$k}; }
		else { splice(@$c, $k, 1); }
	}
	elsif ($op < 55)
	{
		slot_set($c, $k, weird());
	}
	elsif ($op < 68 && defined $cur && !ref $cur && is_num($cur))
	{
		# a number nudged across its bounds
		my $n = $cur + 0;
		slot_set($c, $k,
			pick($n + 1, $n - 1, -$n, 0, $n * 1000, $n + 0.5, $n - 0.000001,
				raw('1e308'), raw('-1e308'), raw('1e-308')));
	}
	elsif ($op < 80 && ref $cur eq 'HASH')
	{
		$cur->{ pick(@junk_keys) } =
		  (chance(0.5) || !@$all) ? weird() : clone(slot_get(@{ $all->[ R(scalar @$all) ] }));
	}
	elsif ($op < 80 && ref $cur eq 'ARRAY')
	{
		if (@$cur && chance(0.6))
		{
			my $i = R(scalar @$cur);
			splice(@$cur, $i, 0, map { clone($cur->[$i]) } 1 .. pick(1, 1, 2, 70));
		}
		else
		{
			push @$cur, weird();
		}
	}
	elsif ($op < 90 && ref $c eq 'ARRAY' && $c != $top)
	{
		# a duplicate of the element (same team, rule or player twice)
		splice(@$c, $k, 0, clone($cur));
	}
	else
	{
		# a valid value from elsewhere in the structure: type confusion
		slot_set($c, $k, clone(slot_get(@{ $all->[ R(scalar @$all) ] }))) if @$all;
	}
	return $top->[0];
}

# pgvector-style mutation of the JSON text: insert, replace or truncate.
my @text_subs = (' ', ',', ':', '"', '{', '}', '[', ']', '-', '1', '9', 'e', '.', '\\',
	"\0", '2147483648', '1e999', 'null', '\\u0000', '\\ud800', "\x{e9}", '""', '[]');

sub text_mutate
{
	my ($text) = @_;
	utf8::decode($text);
	for (1 .. 1 + R(3))
	{
		my $r = R(length($text) + 1);
		my $sub = pick(@text_subs);
		if ($sub eq "\0") { $text = substr($text, 0, $r); }
		elsif (chance(0.5)) { substr($text, $r, 0) = $sub; }
		else { substr($text, $r, length($sub), $sub); }
	}
	utf8::encode($text);
	return $text;
}

# ---------------------------------------------------------------------------
# Valid inputs: queue configs and their tickets

my @bases = (
	{   # 1v1, skill with linear expansion, latency
		match_size => { min => 2, max => 2 },
		teams => [ { name => 'red', min => 1, max => 1 }, { name => 'blue', min => 1, max => 1 } ],
		ticket_timeout_seconds => 600,
		# leavers cool down and, from the first offence, play in the
		# low-priority pool; its bound is short beside the run (3000 s of
		# fuzz clock), so both sides of it are reached
		penalties => {
			cooldown_seconds => { leave => 20, dodge => 10 },
			cooldown_growth => 2, max_cooldown_seconds => 120,
			low_priority => { offences => 1, games => 2, max_wait_seconds => 180 },
			forgive_after_games => 3 },
		rules => [
			{   name => 'skill', type => 'difference', attribute => 'skill', max => 100,
				expansion => { every_seconds => 10, delta => 50, limit => 400 } },
			{ name => 'ping', type => 'latency', max_ms => 150 } ] },
	{   # free-for-all 3..6, mode with match_any, max-merged skill
		match_size => { min => 3, max => 6 },
		rules => [
			{   name => 'mode', type => 'string_equality', attribute => 'mode',
				when_missing => 'match_any', seconds_until_optional => 30 },
			{   name => 'skill', type => 'difference', attribute => 'skill', max => 300,
				merge => 'max', weight => 2 } ] },
	{   # 2 teams of 1..3, team rules, custom expansion, nested attribute
		match_size => { min => 4, max => 6 },
		teams => [ { name => 'a', min => 1, max => 3 }, { name => 'b', min => 1, max => 3 } ],
		acceptance_timeout_seconds => 30,
		live_match_timeout_seconds => 120,
		# the acceptance queue: rejects (dodge) and acceptance timeouts are
		# offences too
		penalties => {
			cooldown_seconds => { dodge => 10, acceptance_timeout => 5, leave => 30 },
			cooldown_growth => 1.5, max_cooldown_seconds => 300,
			low_priority => { offences => 1, games => 1, max_wait_seconds => 90 } },
		rules => [
			{   name => 'avg', type => 'team_difference', attribute => 'skill', max => 200,
				default => 1000, weight => 0.5 },
			{   name => 'even', type => 'team_size_balance', max_difference => 1,
				expansion => { every_seconds => 15, steps => [ 2, undef ] } },
			{   name => 'skill', type => 'difference', attribute => 'stats.skill', max => 500,
				default => 1000, expansion => { every_seconds => 5, steps => [ 800, 2000, undef ] } } ] },
	{   # 3 teams of 1..2, latency with linear expansion, rating and statistics
		teams => [
			{ name => 'x', min => 1, max => 2 }, { name => 'y', min => 1, max => 2 },
			{ name => 'z', min => 1, max => 2 } ],
		ticket_timeout_seconds => 300,
		heartbeat_timeout_seconds => 90,
		rating => { system => 'elo', pool => 'main' },
		statistics => { show_player_count => raw('true'), show_time_to_match => raw('true') },
		rules => [
			{   name => 'ping', type => 'latency', max_ms => 100,
				expansion => { every_seconds => 10, delta => 20, limit => 200 } } ] },
	{   # 4 teams of 1..4 (balancing with parties, up to 16 players), min-merged skill
		match_size => { min => 6, max => 16 },
		teams => [ map { { name => "t$_", min => 1, max => 4 } } 1 .. 4 ],
		rules => [
			{   name => 'skill', type => 'difference', attribute => 'skill', max => 150,
				merge => 'min', expansion => { every_seconds => 20, delta => 100 } },
			{   name => 'even', type => 'team_size_balance', max_difference => 2 },
			{   name => 'mode', type => 'string_equality', attribute => 'mode', default => 'ctf',
				seconds_until_optional => 60 } ] },
	{   # a role queue: 3v3, two compositions on one side, autofill, per-role ratings
		teams => [
			{ name => 'r', min => 3, max => 3, roles => [ { tank => 1, dps => 2 }, { tank => 2, dps => 1 } ] },
			{ name => 'b', min => 3, max => 3, roles => { tank => 1, dps => 2 } } ],
		autofill => { after_seconds => 10, protect_games => 2 },
		rating => { system => 'glicko2', pool => 'fzroles', per_role => raw('true') },
		rules => [
			{   name => 'lane', type => 'role_difference', attribute => 'rating', source => 'rating',
				max => 300 },
			{   name => 'skill', type => 'difference', attribute => 'skill', max => 200,
				expansion => { every_seconds => 10, delta => 100 } } ] },
);
my @base_rules = ([qw(skill ping)], [qw(mode skill)], [qw(avg even skill)], ['ping'], [qw(skill even mode)],
	[qw(lane skill)]);
my @base_party = (1, 3, 3, 2, 4, 3);
my @stable = qw(s_duel s_ffa s_squads s_trio s_teams4 s_roles);    # never altered or dropped
my %is_stable = map { $_ => 1 } @stable;
my %queue_base = map { $stable[$_] => $_ } 0 .. $#stable;   # queues believed to exist
my $fz_next = 0;
my $tickets_generated = 0;    # ticket calls so far: about the ticket id sequence

my $player_seq = 0;
my @recent_ids;

sub valid_player
{
	my $id = 'p' . ++$player_seq;
	push @recent_ids, $id;
	shift @recent_ids if @recent_ids > 50;
	return {
		id => $id,
		attributes => {
			skill => 900 + R(300),
			mode => pick('ctf', 'koth'),
			stats => { skill => 900 + R(300) } },
		latencies => { eu => 10 + R(100), us => 10 + R(100) },
		# role preferences (the role queue's roles; the others ignore them)
		(chance(0.6) ? (roles => pick([qw(tank)], [qw(dps)], [qw(dps tank)], [qw(tank fill)], [qw(fill)])) : ()) };
}

sub valid_players
{
	my ($base) = @_;
	my $n = chance(0.75) ? 1 : 1 + R($base_party[$base]);
	return [ map { valid_player() } 1 .. $n ];
}

# Mutations that target what a ticket is made of.
sub ticket_mutate
{
	my ($players) = @_;
	$players = clone($players);
	# an earlier mutation may have left no array of player objects
	return [ valid_player(), $players ] if ref $players ne 'ARRAY' || !@$players;
	my $p = $players->[ R(scalar @$players) ];
	return [ @$players, weird() ] if ref $p ne 'HASH';
	my $k = R(15);
	if ($k == 0) { delete $p->{id}; }
	elsif ($k == 1)
	{
		push @$players, clone($p);                    # the same id twice in the ticket
	}
	elsif ($k == 2 && @recent_ids)
	{
		$p->{id} = pick(@recent_ids);                 # an id another ticket may hold
	}
	elsif ($k == 3)
	{
		$p->{id} = pick('', 'a' x 128, 'a' x 129, "\xc3\xa9" x 128, "\xc3\xa9" x 129, weird());
	}
	elsif ($k == 4)
	{
		$p->{attributes} = {} if ref $p->{attributes} ne 'HASH';
		$p->{attributes}{skill} = pick(raw('1e12'), raw('-1e12'), raw('1000000000000.5'),
			raw('1e13'), raw('1e308'), raw('-1e308'), raw('5e-324'), raw('1e400'), '1000',
			undef, {}, [], raw('true'), 'NaN');
	}
	elsif ($k == 5)
	{
		$p->{attributes} = {} if ref $p->{attributes} ne 'HASH';
		$p->{attributes}{deep} = pick({ a => { b => [ 1, raw('1e13') ] } },
			{ a => [ [ [ raw('-1e308') ] ] ] }, deep(), long_array(), { x => 'y' x 100000 });
	}
	elsif ($k == 6) { $p->{attributes} = weird(); }
	elsif ($k == 7)
	{
		my $n = pick(63, 64, 65, 1000);
		$p->{latencies} = { map { sprintf('r%04d', $_) => R(200) } 1 .. $n };
	}
	elsif ($k == 8)
	{
		$p->{latencies} = {} if ref $p->{latencies} ne 'HASH';
		$p->{latencies}{ pick('', 'x' x 64, 'x' x 65, "\xc3\xa9" x 64, "\xc3\xa9" x 65, 'eu') } =
		  pick(-1, '10', raw('1e308'), raw('1e12'), raw('1000000000001'), undef, 0, raw('-0'), 10);
	}
	elsif ($k == 9) { delete $p->{latencies}; }
	elsif ($k == 10) { $p->{ pick(@junk_keys) } = weird(); }
	elsif ($k == 11) { push @$players, map { valid_player() } 1 .. pick(2, 5, 201); }
	elsif ($k == 12)
	{
		return pick(weird(), [], [ weird() ], {}, [ [] ], [ 1 ], raw('"[]"'));
	}
	elsif ($k == 13) { $players->[ R(scalar @$players) ] = weird(); }
	else
	{
		$p->{attributes} = {} if ref $p->{attributes} ne 'HASH';
		$p->{attributes}{mode} = weird();
	}
	return $players;
}

# ---------------------------------------------------------------------------
# Times, intervals, scalar SQL values

my $clock = 1767225600;    # 2026-01-01 00:00:00+00, advanced as calls are made

sub ts
{
	my ($e) = @_;
	my @t = gmtime($e);
	return sprintf("'%04d-%02d-%02d %02d:%02d:%02d+00'::timestamptz",
		$t[5] + 1900, $t[4] + 1, @t[ 3, 2, 1, 0 ]);
}

sub odd_time
{
	return pick("'infinity'::timestamptz", "'-infinity'::timestamptz", 'NULL::timestamptz',
		"'4714-11-24 00:00:00+00 BC'::timestamptz", "'294276-12-31 23:59:59.999999+00'::timestamptz",
		"'1970-01-01 00:00:00+00'::timestamptz", "'0001-01-01 00:00:00+00'::timestamptz",
		"'2000-02-29 12:00:00.5+00'::timestamptz", ts($clock - 365 * 86400), ts($clock + 86400),
		ts($clock - 3600), ts($clock) . " + '1 microsecond'::interval",
		"'200000-01-01 00:00:00+00'::timestamptz", "'3000-01-01 00:00:00+00'::timestamptz");
}

sub some_time { return chance(0.6) ? ts($clock - R(600)) : odd_time(); }

sub some_interval
{
	return pick("'1 hour'::interval", "'1 day'::interval", "'10 minutes'::interval",
		"'1 microsecond'::interval", "'0'::interval", "'-1 second'::interval", 'NULL::interval',
		"'178000000 years'::interval", "'-178000000 years'::interval",
		"'2147483647 days'::interval", "'-2147483648 days'::interval",
		"'2147483647 months'::interval", "'2562047788 hours'::interval",
		"'1 mon -30 days'::interval", "'1 day -86399 seconds'::interval",
		"'7 days'::interval", "'1000 years'::interval");
}

sub some_queue
{
	my @live = sort keys %queue_base;
	my $k = R(100);
	return pick(@stable) if $k < 55;
	return pick(@live) if $k < 85;
	return 'fz_' . R($fz_next + 1) if $k < 93;
	return pick(undef, '', 'nope', 'x' x 65, "\xc3\xa9", 'a b', 's_DUEL');
}

sub base_of
{
	my ($q) = @_;
	return (defined $q && exists $queue_base{$q}) ? $queue_base{$q} : R(scalar @bases);
}

# ---------------------------------------------------------------------------
# Call generators: each returns [category, sql, on_ok, valid]: on_ok updates
# the Perl state when the call succeeds (a queue that now exists); valid says
# the generator knows the call to be valid (an unmutated ticket with fresh
# players for a fixed queue, a tick of a fixed queue, rating arguments all in
# range, ...): such a call must succeed, whatever the fuzz did before it.

sub gen_config
{
	my $b = R(scalar @bases);
	my $cfg = $bases[$b];
	if (chance(0.85))
	{
		my $edgy = chance(0.5);
		$cfg = mutate($cfg, $edgy) for 1 .. 1 + R(3);
	}
	my $json = enc($cfg);
	$json = text_mutate($json) if chance(0.1);
	my $j = lit($json) . '::jsonb';
	my $k = R(100);
	if ($k < 40)
	{
		my $name = 'fz_' . $fz_next++;
		return [ 'queue_config', "SELECT mm.create_queue('$name', $j)",
			sub { $queue_base{$name} = $b } ];
	}
	if ($k < 58)
	{
		return [ 'queue_config', "SELECT mm.validate_queue_config($j)" ];
	}
	if ($k < 72)
	{
		my @fz = grep { /^fz_/ } sort keys %queue_base;
		my $name = @fz ? pick(@fz) : 'fz_0';
		return [ 'queue_config', "SELECT mm.alter_queue('$name', $j)",
			sub { $queue_base{$name} = $b } ];
	}
	if ($k < 84)
	{
		my $rule = pick(@{ $base_rules[$b] }, @{ $base_rules[$b] }, 'nope', undef, '');
		my $age = pick('0', '1', '9.99', '10', '25', '1e6', '-1', "'NaN'", "'Infinity'",
			"'-Infinity'", '1e308', "'5e-324'", 'NULL', '1e15');
		return [ 'queue_config', 'SELECT mm.rule_threshold(' . $j . ', ' . lit($rule) . ", $age)" ];
	}
	if ($k < 92)
	{
		my @fz = grep { /^fz_/ } sort keys %queue_base;
		my $name = @fz ? pick(@fz) : 'fz_0';
		my $force = pick('false', 'true', 'true', 'NULL');
		return [ 'queue_config', "SELECT mm.drop_queue('$name', $force)",
			sub { delete $queue_base{$name} } ];
	}
	if ($k < 96)
	{
		my $name = pick(undef, '', 'x' x 65, 'x' x 64, "\xc3\xa9", 'a b', '-a', 's_duel', 'fz_0');
		return [ 'queue_config', 'INSERT INTO mm.queues (name, config) VALUES (' . lit($name) . ", $j)" ];
	}
	my @fz = grep { /^fz_/ } sort keys %queue_base;
	my $name = @fz ? pick(@fz) : 'fz_0';
	return [ 'queue_config', "UPDATE mm.queues SET config = $j WHERE name = '$name'",
		sub { $queue_base{$name} = $b if exists $queue_base{$name} } ];
}

# A ticket of players with a standing in a queue with penalties (the most
# recently penalised first, those owing low-priority games before the
# others, none held elsewhere): refused while cooling down (55000), else
# penalised and matched in the queue's low-priority pool.  The ids are read
# in SQL (the fuzz does not know who was penalised); without one, the
# ticket keeps its fresh players.
sub gen_offender_ticket
{
	my $q = pick('s_duel', 's_squads');
	my $players = valid_players($queue_base{$q});
	my $json = lit(enc($players)) . '::jsonb';
	for my $i (0 .. (chance(0.7) ? 0 : $#$players))
	{
		$json = "jsonb_set($json, '{$i,id}', to_jsonb(coalesce((SELECT p.player_id FROM mm.player_penalties p"
		  . " WHERE p.queue = '$q' AND NOT EXISTS (SELECT 1 FROM mm.active_players a WHERE a.player_id = p.player_id)"
		  . ' ORDER BY p.low_priority_games > 0 DESC, p.updated_at DESC, p.player_id LIMIT 1 OFFSET ' . R(6)
		  . '), ' . lit($players->[$i]{id}) . ')))';
	}
	return [ 'ticket', "SELECT mm.create_ticket('$q', $json, " . ts($clock - R(20)) . ')' ];
}

sub gen_ticket
{
	return gen_offender_ticket() if chance(0.2);
	my $q = some_queue();
	my $valid;    # all the tickets so far are valid
	my $ticket_json = sub {
		my ($queue) = @_;
		my $players = valid_players(base_of($queue));
		$valid &&= defined $queue && exists $queue_base{$queue} && $is_stable{$queue};
		if (chance(0.45))
		{
			$valid = 0;
			for (1 .. 1 + R(2))
			{
				$players = chance(0.6) ? ticket_mutate($players) : mutate($players);
			}
		}
		my $json = enc($players);
		if (chance(0.04))
		{
			$valid = 0;
			$json = text_mutate($json);
		}
		return lit($json) . '::jsonb';
	};
	my $created_at = sub {
		return ts($clock - R(20)) if chance(0.9);
		$valid = 0;
		return odd_time();
	};
	my $k = R(100);
	$valid = 1;
	if ($k < 75)
	{
		my $players = $ticket_json->($q);
		return [ 'ticket', 'SELECT mm.create_ticket(' . lit($q) . ", $players, " . $created_at->() . ')',
			undef, $valid ];
	}
	if ($k < 95)
	{
		my @rows;
		for (1 .. 1 + R(4))
		{
			my $queue = chance(0.8) ? $q : some_queue();
			push @rows, '(' . lit($queue) . ', ' . $ticket_json->($queue) . ', ' . $created_at->() . ')';
		}
		return [ 'ticket',
			'INSERT INTO mm.tickets (queue, players, created_at) VALUES ' . join(', ', @rows), undef, $valid ];
	}
	# columns a new ticket must leave to their defaults
	my $col = pick("status) VALUES (%s, %s, 'matched')", "status) VALUES (%s, %s, 'cancelled')",
		"match_id) VALUES (%s, %s, 1)", "team) VALUES (%s, %s, 'red')",
		"updated_at) VALUES (%s, %s, now())",
		"id) VALUES (%s, %s, " . pick('1', '(SELECT last_value + ' . (1 + R(30)) . ' FROM mm.tickets_id_seq)') . ')',    # defect A
		"status) VALUES (%s, %s, NULL)");
	return [ 'ticket',
		'INSERT INTO mm.tickets (queue, players, ' . sprintf($col, lit($q), $ticket_json->($q)) ];
}

sub gen_tick
{
	if (chance(0.85))
	{
		my $q = chance(0.55) ? pick(@stable) : chance(0.8) ? some_queue() : undef;
		return [ 'tick', 'SELECT mm.tick(' . lit($q) . ', ' . ts($clock) . ')', undef,
			!defined $q || $is_stable{$q} ];
	}
	my $q = pick(undef, undef, pick(@stable), 'nope', '');
	return [ 'tick', 'SELECT mm.tick(' . lit($q) . '::text, ' . odd_time() . ')' ];
}

sub gen_cancel
{
	my $id = chance(0.7)
	  ? 1 + R($tickets_generated + 10)
	  : pick('0', '-1', 'NULL', '9223372036854775807', '-9223372036854775808',
		"'9223372036854775808'", "'abc'", '1.5', "''", '2147483648');
	my $k = R(100);
	return [ 'cancel', "SELECT mm.cancel_ticket($id)" ] if $k < 50;
	return [ 'cancel', "SELECT mm.heartbeat($id" . (chance(0.8) ? ', ' . lifecycle_now() : '') . ')' ]
	  if $k < 65;
	# by hand, as docs/queues-and-tickets.md allows; without the status filter the UPDATE
	# also reaches matched tickets, which is refused (see @known_defects)
	return [ 'cancel', "UPDATE mm.tickets SET status = 'cancelled', updated_at = " . ts($clock)
		  . " WHERE id = $id" . (chance(0.7) ? " AND status IN ('searching', 'proposed')" : '') ]
	  if $k < 75;
	return [ 'cancel', "UPDATE mm.tickets SET status = 'timed_out', updated_at = " . ts($clock)
		  . " WHERE id = $id" . (chance(0.7) ? " AND status = 'searching'" : '') ] if $k < 80;
	return [ 'cancel', "UPDATE mm.tickets SET status = 'searching' WHERE id = $id"
		  . " AND status IN ('cancelled', 'timed_out')" ] if $k < 88;
	my $ev = pick("'ticket_cancelled'", "'ticket_timed_out'", "'match_found'", 'NULL', "''");
	my $q = pick(lit(some_queue()), lit('x' x 9000), "'s_duel'");
	my $arr = pick("ARRAY[$id]::bigint[]", "'{1,2,NULL}'::bigint[]", "'{{1,2},{3,4}}'::bigint[]",
		"'{}'::bigint[]", 'NULL::bigint[]', "array_fill(9223372036854775807::bigint, ARRAY[3000])",
		"'[0:1]={1,2}'::bigint[]");
	return [ 'cancel', "SELECT mm.notify_ticket_event($ev, $q, $arr)" ];
}

sub gen_metrics
{
	my $queue = some_queue();
	my $q = lit($queue);
	my $w = chance(0.5) ? "'1 hour'::interval" : some_interval();
	my $now = chance(0.5) ? ts($clock) : some_time();
	my $valid = $w eq "'1 hour'::interval" && $now eq ts($clock);
	my $valid_q = $valid && defined $queue && $is_stable{$queue};
	my $k = R(10);
	return [ 'metrics', "SELECT * FROM mm.queue_stats($w, $now)", undef, $valid ] if $k == 0;
	return [ 'metrics', "SELECT * FROM mm.match_stats($w, $now)", undef, $valid ] if $k == 1;
	return [ 'metrics', "SELECT * FROM mm.ticket_metrics($q, $w, $now)", undef, $valid_q ] if $k == 2;
	return [ 'metrics', "SELECT * FROM mm.match_metrics($q, $w, $now)", undef, $valid_q ] if $k == 3;
	if ($k == 4)
	{
		my $attr = lit(pick('skill', 'stats.skill', undef, '', 'x' x 300, 'mode', "\xc3\xa9"));
		return [ 'metrics', "SELECT * FROM mm.match_details($q, $w, $now, $attr)" ];
	}
	return [ 'metrics', "SELECT * FROM mm.health_report($q, $w, $now)", undef, $valid_q ] if $k == 5;
	return [ 'metrics', "SELECT * FROM mm.queue_statistics($q, $now)", undef, $valid_q ] if $k == 6;
	return [ 'metrics', "SELECT * FROM mm.role_stats($w, $now)", undef, $valid ] if $k == 9;
	if ($k == 7 && chance(0.5))
	{
		# monitoring: the exporter's figures, and a tick recorded with odd times and SQLSTATEs
		return [ 'metrics', "SELECT * FROM mm.queue_monitoring($w, $now)", undef, $valid ] if chance(0.5);
		my $state = lit(pick(undef, '40P01', '57014', '', 'x', '4xP01', 'XX000', 'a' x 300, "\xc3\xa9"));
		return [ 'metrics', 'SELECT mm.record_tick(' . join(', ', $q, some_time(), some_time(), $state) . ')' ];
	}
	my ($from, $to);
	my $m = R(10);
	if ($m < 4)
	{
		my $back = 1 + R(7200);
		($from, $to) = (ts($clock - $back), ts($clock));
		return [ 'metrics', "SELECT * FROM mm.queue_stats_by_minute($q, $from, $to)", undef,
			defined $queue && $is_stable{$queue} ];
	}
	elsif ($m == 4) { ($from, $to) = (ts($clock), ts($clock)); }
	elsif ($m == 5) { ($from, $to) = (ts($clock), ts($clock - 60)); }
	elsif ($m == 6) { ($from, $to) = (ts($clock - 7 * 86400), ts($clock)); }
	elsif ($m == 7)
	{
		($from, $to) = (ts($clock - 7 * 86400), ts($clock) . " + '1 microsecond'::interval");
	}
	else { ($from, $to) = (some_time(), some_time()); }
	return [ 'metrics', "SELECT * FROM mm.queue_stats_by_minute($q, $from, $to)" ];
}

# --- rating and balancing arguments -----------------------------------------

my @odd_f8 = ('NaN', 'Infinity', '-Infinity', 'NULL', '1e308', '-1e308', '5e-324', '0', '-1',
	'-0', '1e15', '1e-300', '1', '0.5', '1.0000001', '-1e-9', '1.7976931348623157e308',
	'NaN', 'Infinity', '-Infinity', 'NULL', '1e308', '-1e308', '0', '-1', '1e-308',
	'1e309');    # the last is out of range for float8 itself
my @odd_int = ('0', '1', '-1', '2', '3', '16', '17', '200', '201', '2147483647', '-2147483648',
	'NULL', '2147483648');

# kinds of values: a valid generator each
my %valid = (
	rating => sub { 800 + R(1400) + pick(0, 0.5, 0.25) },
	rd => sub { 30 + R(320) },
	vol => sub { pick(0.06, 0.05, 0.09, 0.03) },
	score => sub { pick(0, 0.5, 1, 0.25) },
	k => sub { pick(16, 32, 40, 0) },
	tau => sub { pick(0.3, 0.5, 1.2) },
	rate => sub { R(101) / 100 },
	kda => sub { R(60) / 10 },
	games => sub { R(500) },
	periods => sub { R(100) },
	mu => sub { 15 + R(20) + 0.5 },
	sigma => sub { 1 + R(7) + 0.333 },
	weight => sub { pick(0, 1, 2, 0.5) },
	team_count => sub { pick(2, 2, 3, 4) },
	party => sub { R(6) },
);

sub f8_arg
{
	my ($kind, $odd) = @_;
	my $v = chance($odd) ? pick(@odd_f8) : $valid{$kind}->();
	return $v eq 'NULL' ? 'NULL::float8' : "'$v'::float8";
}

sub int_arg
{
	my ($kind, $odd) = @_;
	my $v = chance($odd) ? pick(@odd_int) : $valid{$kind}->();
	return $v eq 'NULL' ? 'NULL::int' : "'$v'::int";
}

# An array literal of n elements of a kind (float8 or int), mutated now and then.
sub arr_arg
{
	my ($kind, $n, $type, $odd) = @_;
	my $k = R(100);
	if ($k < 100 - 100 * $odd)
	{
		my @e = map { chance($odd) ? pick($type eq 'float8' ? @odd_f8 : @odd_int) : $valid{$kind}->() } 1 .. $n;
		return "'{" . join(',', @e) . "}'::${type}[]";
	}
	return pick("'{{1,2},{3,4}}'::${type}[]", "'[0:2]={1,2,3}'::${type}[]", "'[-5:-4]={1,2}'::${type}[]",
		"array_fill(1::$type, ARRAY[10001])", "array_fill(1::$type, ARRAY[10000])",
		"NULL::${type}[]", "'{NULL}'::${type}[]", "'{}'::${type}[]", "'{{}}'::${type}[]",
		"array_fill(1::$type, ARRAY[200])", "array_fill(1::$type, ARRAY[201])",
		"array_fill(1::$type, ARRAY[2,2,2])");
}

sub gen_rating
{
	my $odd = pick(0, 0.05, 0.15, 0.4);
	my $valid = $odd == 0;
	my $k = R(13);
	my $n = pick(0, 1, 2, 3, 5, 10);
	my $m = chance(0.85) ? $n : pick(0, $n + 1, ($n ? $n - 1 : 2));
	if ($k == 0)
	{
		return [ 'ratings', 'SELECT mm.elo_expected(' . f8_arg('rating', $odd) . ', ' . f8_arg('rating', $odd) . ')',
			undef, $valid ];
	}
	if ($k == 1)
	{
		return [ 'ratings', 'SELECT mm.elo_update(' . join(', ', f8_arg('rating', $odd),
			f8_arg('rating', $odd), f8_arg('score', $odd), (chance(0.5) ? f8_arg('k', $odd) : ())) . ')',
			undef, $valid ];
	}
	if ($k == 2)
	{
		return [ 'ratings', 'SELECT mm.elo_k_factor(' . int_arg('games', $odd) . ', ' . f8_arg('rating', $odd) . ')',
			undef, $valid ];
	}
	if ($k == 3 || $k == 4)
	{
		return [ 'ratings', 'SELECT * FROM mm.glicko2_update(' . join(', ',
			f8_arg('rating', $odd), f8_arg('rd', $odd), f8_arg('vol', $odd),
			arr_arg('rating', $n, 'float8', $odd), arr_arg('rd', $m, 'float8', $odd),
			arr_arg('score', chance(0.9) ? $n : $m, 'float8', $odd),
			(chance(0.3) ? f8_arg('tau', $odd) : ())) . ')', undef, $valid && $m == $n ];
	}
	if ($k == 5)
	{
		return [ 'ratings', 'SELECT * FROM mm.glicko2_decay(' . join(', ',
			f8_arg('rating', $odd), f8_arg('rd', $odd), f8_arg('vol', $odd),
			(chance(0.6) ? int_arg('periods', $odd) : ())) . ')', undef, $valid ];
	}
	if ($k == 6)
	{
		# the aggregate: one player's rows, now and then with another
		# player's triple, partial NULL game columns or a tau column
		my @p = (f8_arg('rating', 0), f8_arg('rd', 0), f8_arg('vol', 0));
		my $tau = chance(0.3) ? f8_arg('tau', $odd) : undef;
		my @rows;
		for (1 .. 1 + R(6))
		{
			my @me = chance($odd) ? (f8_arg('rating', $odd), f8_arg('rd', $odd), f8_arg('vol', $odd)) : @p;
			my @game = chance(0.1)
			  ? ('NULL::float8') x 3
			  : (f8_arg('rating', $odd), f8_arg('rd', $odd), f8_arg('score', $odd));
			push @rows, '(' . join(', ', @me, @game, defined $tau ? ($tau) : ()) . ')';
		}
		my $cols = defined $tau ? 'r, d, v, o, od, s, t' : 'r, d, v, o, od, s';
		return [ 'ratings', "SELECT (mm.glicko2_period($cols)).* FROM (VALUES "
			  . join(', ', @rows) . ") AS g($cols)", undef, $valid ];
	}
	if ($k == 7)
	{
		return [ 'ratings', 'SELECT mm.team_rating(r, w) FROM unnest('
			  . arr_arg('rating', $n, 'float8', $odd) . ', ' . arr_arg('weight', $m, 'float8', $odd)
			  . ') AS u(r, w)', undef, $valid ];
	}
	if ($k == 8)
	{
		return [ 'ratings', 'SELECT mm.win_probability(' . arr_arg('rating', $n || 1, 'float8', $odd)
			  . ', ' . arr_arg('rating', $m, 'float8', $odd) . ')', undef, $valid && $m > 0 ];
	}
	if ($k == 9)
	{
		my @a = (int_arg('games', $odd), f8_arg('rate', $odd), f8_arg('kda', $odd),
			f8_arg('rate', $odd), arr_arg('rating', pick(0, 4, 5, 8), 'float8', $odd));
		push @a, pick(f8_arg('rate', $odd), 'NULL') if chance(0.6);
		return [ 'ratings', 'SELECT mm.smurf_score(' . join(', ', @a) . ')', undef, $valid ];
	}
	if ($k == 10)
	{
		return [ 'ratings', 'SELECT mm.rating_boost(' . f8_arg('rate', $odd) . ', ' . int_arg('games', $odd) . ')',
			undef, $valid ];
	}
	# OpenSkill: teams of players, one rank per team
	my $teams = pick(1, 2, 2, 3, 4);
	my $players = pick(2, 3, 4, 6, 9);
	my @team = map { 1 + ($_ % $teams) } 0 .. $players - 1;
	my %rank = map { $_ => 1 + R($teams) } 1 .. $teams;
	my @rank = map { $rank{$_} } @team;
	my ($tm, $rk) = ("'{" . join(',', @team) . "}'::int[]", "'{" . join(',', @rank) . "}'::int[]");
	if (chance($odd)) { $tm = arr_arg('party', chance(0.5) ? $players : $players + 1, 'int', 0.5); }
	if (chance($odd)) { $rk = arr_arg('party', chance(0.5) ? $players : $players - 1, 'int', 0.5); }
	my $mu = arr_arg('mu', $players, 'float8', $odd);
	my $sigma_n = chance(0.9) ? $players : $players + 1;
	my $sigma = arr_arg('sigma', $sigma_n, 'float8', $odd);
	$valid &&= $teams >= 2 && $sigma_n == $players;
	return [ 'ratings', "SELECT * FROM mm.openskill_rate($mu, $sigma, $tm, $rk)", undef, $valid ] if $k == 11;
	return [ 'ratings', "SELECT mm.openskill_predict_win($mu, $sigma, $tm)", undef, $valid ];
}

sub gen_balance
{
	my $odd = pick(0, 0.05, 0.2);
	my $n = pick(1, 2, 3, 4, 4, 5, 6, 8, 10, 10, 12, 16, 17, 30, 200, 201);
	my @a = (arr_arg('rating', $n, 'float8', $odd));
	my $team_count = 2;
	if (chance(0.8))
	{
		if (chance(0.85))
		{
			$team_count = pick(2, 2, 3, 4, 16, $n, $n + 1);
			push @a, "'$team_count'::int";
		}
		else
		{
			$team_count = undef;
			push @a, int_arg('team_count', 1);
		}
		if (chance(0.6))
		{
			$team_count = undef;    # the parties may not be placeable
			my $pn = chance(0.85) ? $n : pick(0, $n - 1, $n + 1);
			push @a, arr_arg('party', $pn, 'int', $odd);
		}
	}
	return [ 'balance', 'SELECT mm.balance_teams(' . join(', ', @a) . ')', undef,
		$odd == 0 && $n <= 200 && defined $team_count && $team_count >= 2 && $team_count <= $n ];
}

# --- ranked play and penalties (0.4) -----------------------------------------

# Valid rating pool settings (docs/ratings.md, "Ranked play"), mutated as
# queue configs are.
my @pool_settings = (
	{   seed => { attribute => 'skill', rd => 200 },
		# placed by uncertainty too, also after a season's reset: tiers are shown
		placement => { games => 3, rd => 200, each_season => raw('true') },
		tiers => [
			{ name => 'Bronze', min => 0, divisions => 4 }, { name => 'Silver', min => 1000, divisions => 4 },
			{ name => 'Gold', min => 1100, divisions => 2 }, { name => 'Master', min => 1300 } ],
		demotion => { margin => 25, games => 3 },
		season_reset => { share => 0.5, rd => 150 } },
	{   placement => { games => 1, rd => 300 },
		tiers => [ { name => 'Low', min => 900, divisions => 10 }, { name => 'High', min => 1050 } ],
		demotion => { games => 1 },
		season_reset => { share => 1, target => 1000 } },
	{},
);
# the pools of the fixed queues: s_trio's Elo, s_roles's per-role Glicko-2
my @pools = ('main', 'fzroles', 'fzroles.tank', 'fzroles.dps');
my $season_seq = 0;
my $import_seq = 0;

sub some_pool
{
	return pick(@pools) if chance(0.85);
	return pick(undef, '', 'nope', 'x' x 300, "\xc3\xa9", 'main.tank', 'fzroles.', 'fzroles.fill');
}

# A player id: a recent one (rated, penalised or not), a fresh one, or odd.
sub some_player_id
{
	my $k = R(10);
	return pick(@recent_ids) if $k < 4 && @recent_ids;
	return 'imp' . ++$import_seq if $k < 7;
	return pick(undef, '', 'x' x 300, "\xc3\xa9" x 65, "a\tb", 'p1', 'P1', ' p1');
}

sub gen_ranked
{
	my $k = R(100);
	my $pool = some_pool();
	my $known = defined $pool && grep { $_ eq $pool } @pools;
	my $now = chance(0.85) ? ts($clock) : odd_time();
	my $valid = $known && $now eq ts($clock);
	if ($k < 18)
	{
		# '{}' (no tiers, no placement) seldom, so that players are placed in tiers
		my $set = $pool_settings[ pick(0, 0, 0, 1, 1, 2) ];
		if (chance(0.55))
		{
			$valid = 0;
			my $edgy = chance(0.5);
			$set = mutate($set, $edgy) for 1 .. 1 + R(3);
		}
		my $json = enc($set);
		if (chance(0.08))
		{
			$valid = 0;
			$json = text_mutate($json);
		}
		my $j = chance(0.03) ? 'NULL::jsonb' : lit($json) . '::jsonb';
		$valid = 0 if $j eq 'NULL::jsonb';
		return [ 'ranked', 'SELECT mm.configure_rating_pool(' . lit($pool) . ", $j, $now)", undef, $valid ];
	}
	# Elo takes no rd or volatility; a per-role Glicko-2 pool all three
	my $elo = defined $pool && $pool eq 'main';
	my $odd = pick(0, 0, 0.05, 0.2, 0.5);
	$valid &&= $odd == 0;
	if ($k < 33)
	{
		my $id = some_player_id();
		$valid &&= defined $id && $id =~ /^(?:p|imp)\d+$/;
		my @a = (lit($id), lit($pool), f8_arg('rating', $odd));
		if ($elo ? chance(0.1) : chance(0.8))
		{
			$valid = 0 if $elo;
			push @a, f8_arg('rd', $odd), f8_arg('vol', $odd);
		}
		else
		{
			push @a, 'NULL', 'NULL';
		}
		return [ 'ranked', 'SELECT mm.set_rating(' . join(', ', @a, $now) . ')', undef, $valid ];
	}
	if ($k < 48)
	{
		my $n = pick(0, 1, 2, 5, 20);
		my $m = chance(0.85) ? $n : pick(0, $n + 1, ($n ? $n - 1 : 2));
		$valid = 0 if $m != $n;
		my $ids;
		if (chance(0.8))
		{
			my @ids = map { chance(0.3) && @recent_ids ? pick(@recent_ids) : 'imp' . ++$import_seq } 1 .. $n;
			my %seen;
			$valid = 0 if grep { $seen{$_}++ } @ids;
			$ids = "'{" . join(',', map { qq{"$_"} } @ids) . "}'::text[]";
		}
		else
		{
			$valid = 0;
			$ids = pick("'{}'::text[]", "'{NULL}'::text[]", 'NULL::text[]', "'{\"\"}'::text[]",
				"'{p1,p1}'::text[]", "'{{p1,p2},{p3,p4}}'::text[]", "'[0:1]={p1,p2}'::text[]",
				"array_fill('x'::text, ARRAY[2])", "ARRAY[repeat('x', 300)]",
				"ARRAY(SELECT 'bulk' || g FROM generate_series(1, 1000) g)");
		}
		my @a = (lit($pool), $ids, arr_arg('rating', $n, 'float8', $odd));
		if ($elo ? chance(0.1) : chance(0.7))
		{
			$valid = 0 if $elo;
			push @a, arr_arg('rd', $m, 'float8', $odd), arr_arg('vol', chance(0.8) ? $n : $m, 'float8', $odd);
		}
		else
		{
			push @a, 'NULL', 'NULL';
		}
		return [ 'ranked', 'SELECT mm.set_ratings(' . join(', ', @a, $now) . ')', undef, $valid ];
	}
	if ($k < 58)
	{
		# a name the pool had is refused (23505), a time before the running
		# season's start too (22023: an odd future `now` ends the seasons of
		# that pool for the rest of the run, so none is required to succeed)
		my $name = chance(0.7) ? 'season ' . ++$season_seq
		  : pick(undef, '', 'x' x 64, 'x' x 65, 'x' x 300, "\xc3\xa9" x 64, "\xf0\x9f\x98\x80",
			"\xe6\x97\xa5\xe6\x9c\xac", 'season 1', 'a;b', ' ', "\t");
		return [ 'ranked', 'SELECT mm.start_season(' . lit($pool) . ', ' . lit($name) . ", $now)" ];
	}
	if ($k < 66)
	{
		my $id = some_player_id();
		if (chance(0.3))
		{
			# a player's data: the export of any id; forgetting only ids that
			# hold nothing (a never seen one, or odd), so the run's data stays
			return [ 'ranked', 'SELECT count(*) FROM jsonb_each(mm.export_player(' . lit($id) . '))', undef,
				defined $id && $id ne '' ]
			  if chance(0.6);
			my $gone = chance(0.7) ? 'gone' . ++$import_seq : pick(undef, '', "a\tb", 'x' x 300);
			return [ 'ranked', 'SELECT mm.forget_player(' . lit($gone) . ') IS NOT NULL', undef,
				defined $gone && $gone ne '' ];
		}
		return [ 'ranked', 'SELECT count(*) FROM mm.get_player_ratings(' . lit($id) . ')', undef, defined $id ];
	}
	if ($k < 76)
	{
		my $id = chance(0.5)
		  ? '(SELECT player_id FROM mm.player_penalties ORDER BY updated_at DESC, player_id LIMIT 1 OFFSET '
		  . R(5) . ')'
		  : lit(some_player_id());
		my $t = chance(0.7) ? ts($clock) : some_time();
		return [ 'ranked', "SELECT count(*) FROM mm.get_penalties($id, $t)" ];
	}
	if ($k < 88)
	{
		# the same odd windows and times as gen_metrics
		my $w = chance(0.5) ? "'1 hour'::interval" : some_interval();
		my $t = chance(0.5) ? ts($clock) : some_time();
		my $f = pick('penalty_stats', 'low_priority_waits');
		return [ 'ranked', "SELECT count(*) FROM mm.$f($w, $t)", undef,
			$w eq "'1 hour'::interval" && $t eq ts($clock) ];
	}
	my $view = pick('leaderboard', 'season_leaderboard', 'placement_progress', 'tier_distribution');
	my $where = chance(0.5) ? '' : ' WHERE pool = ' . lit($pool);
	return [ 'ranked', "SELECT count(*) FROM mm.$view$where", undef, 1 ];
}

# --- the match lifecycle (0.3) ------------------------------------------------

# A match picked in SQL: one of the newest five in the given statuses (the
# data, and so the pick, follow from the seed); the newest half the time, as
# there are seldom five proposed matches at once (rejects must reach one, so
# that dodges are recorded).
sub some_match
{
	my ($statuses) = @_;
	return pick('0', '-1', 'NULL::bigint', '9223372036854775807') if chance(0.05);
	return "(SELECT id FROM mm.matches WHERE status IN ($statuses) ORDER BY id DESC LIMIT 1 OFFSET "
	  . (chance(0.5) ? 0 : R(5)) . ')';
}

sub lifecycle_now { return chance(0.9) ? ts($clock) : odd_time(); }

# An answer's time.  Defect C (fixed; see @known_defects): with
# MM_FUZZ_KNOWN_DEFECTS=0 no answer is dated before its proposal.
my $with_known_defects = $ENV{MM_FUZZ_KNOWN_DEFECTS} // 1;

sub answer_time
{
	my $now = lifecycle_now();
	return $now if $with_known_defects;
	return "greatest($now, (SELECT m.created_at FROM mm.matches m WHERE m.id = x.match_id))";
}

# One of a match's players (the k-th by id), as (match_id, player_id) columns.
sub match_player
{
	my ($m, $extra) = @_;
	return "(SELECT mp.match_id, mp.player_id FROM mm.match_players mp WHERE mp.match_id = $m"
	  . ($extra // '') . ' ORDER BY mp.player_id LIMIT 1 OFFSET ' . R(3) . ') x';
}

# Acceptance, assignment, results, early quits, requeues and backfill on the
# matches the ticks formed, now and then with odd arguments.  None is
# required to succeed (a match may be in another status by then).
sub gen_lifecycle
{
	my $k = R(100);
	my $live = "'ready', 'assigned'";
	if ($k < 20)
	{
		# every player of a proposed match accepts, in order: the last makes it ready
		my $m = some_match("'proposed'");
		return [ 'lifecycle', 'SELECT count(mm.accept_match(x.match_id, x.player_id, true, ' . answer_time()
			  . ")) FROM (SELECT mp.match_id, mp.player_id FROM mm.match_players mp WHERE mp.match_id = $m"
			  . ' ORDER BY mp.player_id) x' ];
	}
	if ($k < 30)
	{
		my $m = some_match(chance(0.8) ? "'proposed'" : "'ready', 'cancelled'");
		my $player = chance(0.9) ? 'x.player_id' : lit(pick('nobody', '', undef));
		return [ 'lifecycle', "SELECT mm.accept_match(x.match_id, $player, "
			  . pick('true', 'true', 'false', 'false', 'NULL::boolean') . ', ' . answer_time() . ') FROM '
			  . match_player($m) ];
	}
	if ($k < 42)
	{
		my $m = some_match(chance(0.85) ? "'ready'" : "'proposed', 'assigned', 'completed'");
		my $conn = chance(0.8) ? lit('game-' . R(100) . '.example:7777') : lit(pick('', undef, 'x' x 1025));
		my $props = chance(0.8) ? "'{\"map\": \"dust\"}'::jsonb"
		  : pick("'[]'::jsonb", 'NULL::jsonb', "'1'::jsonb",
			"jsonb_build_object('big', repeat('x', 5000))");
		return [ 'lifecycle', "SELECT mm.assign($m, $conn, $props)" ];
	}
	if ($k < 54)
	{
		my $m = some_match(chance(0.9) ? $live : "'proposed', 'completed', 'cancelled'");
		# ranks by side (team, or player in a free-for-all), each side its own rank
		my $ranks = chance(0.85)
		  ? "(SELECT jsonb_object_agg(s, r) FROM (SELECT s, dense_rank() OVER (ORDER BY s) AS r"
		  . " FROM (SELECT DISTINCT coalesce(team, player_id) AS s FROM mm.match_players"
		  . " WHERE match_id = $m) d) x)"
		  : pick("'{}'::jsonb", "'[]'::jsonb", 'NULL::jsonb', "'{\"red\": 0}'::jsonb",
			"'{\"nope\": 1}'::jsonb", "'{\"a\": 1.5, \"b\": 2}'::jsonb", "'{\"a\": \"1\"}'::jsonb");
		return [ 'lifecycle', "SELECT count(*) FROM mm.report_result($m, $ranks, " . lifecycle_now() . ')' ];
	}
	if ($k < 64)
	{
		my $m = some_match(chance(0.9) ? $live : "'proposed', 'completed'");
		return [ 'lifecycle', "SELECT mm.complete_match($m, " . lifecycle_now() . ')' ];
	}
	if ($k < 74)
	{
		my $m = some_match(chance(0.9) ? $live : "'proposed', 'cancelled'");
		return [ 'lifecycle', 'SELECT mm.leave_match(x.match_id, x.player_id, ' . lifecycle_now() . ') FROM '
			  . match_player($m) ];
	}
	if ($k < 84)
	{
		my $m = some_match(chance(0.9) ? "'proposed', 'ready', 'assigned'" : "'completed', 'cancelled'");
		my $reason = chance(0.85) ? lit('server failed') : lit(pick('', undef, 'x' x 257));
		return [ 'lifecycle', "SELECT mm.requeue_match($m, $reason, " . lifecycle_now() . ')' ];
	}
	if ($k < 91)
	{
		my $m = some_match($live);
		my $slots = pick('NULL::jsonb', 'NULL::jsonb', "'{}'::jsonb", "'{\"players\": 1}'::jsonb",
			"'{\"a\": 1}'::jsonb", "'{\"red\": 1}'::jsonb", "'[]'::jsonb", "'{\"a\": -1}'::jsonb",
			"'{\"a\": 1.5}'::jsonb");
		return [ 'lifecycle', "SELECT mm.request_backfill($m, $slots, " . lifecycle_now() . ')' ];
	}
	if ($k < 95)
	{
		return [ 'lifecycle', 'SELECT mm.cancel_backfill(' . some_match($live . ", 'completed'") . ', '
			  . lifecycle_now() . ')' ];
	}
	my $id = chance(0.8) ? 1 + R($tickets_generated + 10) : pick('0', '-1', 'NULL::bigint', '9223372036854775807');
	return [ 'lifecycle', "SELECT count(*) FROM mm.get_assignment($id)" ];
}

# The mix of one batch.
sub gen_call
{
	my $k = R(100);
	$clock += 1;
	return gen_config() if $k < 18;
	if ($k < 52)
	{
		$tickets_generated++;
		return gen_ticket();
	}
	return gen_tick() if $k < 62;
	return gen_lifecycle() if $k < 70;
	return gen_cancel() if $k < 74;
	return gen_metrics() if $k < 80;
	return gen_ranked() if $k < 85;
	return gen_rating() if $k < 94;
	return gen_balance();
}

# ---------------------------------------------------------------------------
# The node, the wrapper, the fixed queues

my $node = mm_new_node('fuzz');
$node->safe_psql('postgres', q{
CREATE FUNCTION fuzz_try(sql text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	st text;
	msg text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
	RETURN st || '|' || left(translate(msg, E'\n\r', '  '), 300);
END
$f$;

-- The config each match was formed under (queues are altered and dropped
-- while the fuzz runs): an observer trigger that only copies rows.
CREATE TABLE fuzz_match_config (match_id bigint PRIMARY KEY, queue text, config jsonb);
CREATE FUNCTION fuzz_record_config() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO public.fuzz_match_config
	SELECT n.id, n.queue, q.config FROM new_matches n LEFT JOIN mm.queues q ON q.name = n.queue;
	RETURN NULL;
END
$f$;
CREATE TRIGGER fuzz_record_config AFTER INSERT ON mm.matches
	REFERENCING NEW TABLE AS new_matches
	FOR EACH STATEMENT EXECUTE FUNCTION fuzz_record_config();

-- Every ticket inserted (through mm.tickets, as create_ticket and INSERT do)
-- and every queue deleted, for the invariant "no ticket lost".
CREATE TABLE fuzz_ticket_log (id bigint, queue text);
CREATE FUNCTION fuzz_log_tickets() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO public.fuzz_ticket_log SELECT n.id, n.queue FROM new_tickets n;
	RETURN NULL;
END
$f$;
CREATE TRIGGER fuzz_log_tickets AFTER INSERT ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION fuzz_log_tickets();
CREATE TABLE fuzz_dropped_queues (queue text);
CREATE FUNCTION fuzz_log_drops() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO public.fuzz_dropped_queues SELECT o.name FROM old_queues o;
	RETURN NULL;
END
$f$;
CREATE TRIGGER fuzz_log_drops AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION fuzz_log_drops();

-- The tickets backfill brought into a match (rows inserted into a match
-- that had players before the statement), for the low-priority invariant.
CREATE TABLE fuzz_backfilled (match_id bigint, ticket_id bigint);
CREATE FUNCTION fuzz_log_backfill() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO public.fuzz_backfilled
	SELECT DISTINCT n.match_id, n.ticket_id FROM new_players n
	 WHERE EXISTS (SELECT 1 FROM mm.match_players o
					WHERE o.match_id = n.match_id
					  AND NOT EXISTS (SELECT 1 FROM new_players n2
									   WHERE n2.match_id = o.match_id AND n2.player_id = o.player_id
										 AND n2.queue = o.queue));
	RETURN NULL;
END
$f$;
CREATE TRIGGER fuzz_log_backfill AFTER INSERT ON mm.match_players
	REFERENCING NEW TABLE AS new_players
	FOR EACH STATEMENT EXECUTE FUNCTION fuzz_log_backfill();
});
for my $i (0 .. $#stable)
{
	$node->safe_psql('postgres',
		"SELECT mm.create_queue('$stable[$i]', " . lit(enc($bases[$i])) . '::jsonb)');
}

# ---------------------------------------------------------------------------
# Invariants

# Held players (0.3): a player is held (in mm.active_players) by an active
# ticket (searching or proposed), or, once the ticket has ended as matched,
# by its match while the match is live (ready or assigned) and the player has
# not left it.  A proposed match's tickets are active, so they hold their
# players themselves.
my $held_sql = q{
		SELECT p.value ->> 'id' AS player_id, t.id AS ticket_id, t.queue
		  FROM mm.tickets_active t CROSS JOIN jsonb_array_elements(t.players) p
		UNION
		SELECT mp.player_id, mp.ticket_id, m.queue
		  FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
		 WHERE m.status IN ('ready', 'assigned') AND mp.left_at IS NULL};

# The players of matches formed in a queue with a low-priority pool: whether
# their ticket was penalised (low_priority) and its age when it joined the
# match (the match's forming, or the backfill: matched_at), with the bound.
my $lp_sql = q{
		WITH lp AS (
			SELECT mp.match_id, mp.ticket_id, mp.low_priority, b.ticket_id IS NOT NULL AS backfilled,
				   extract(epoch FROM CASE WHEN b.ticket_id IS NULL THEN m.created_at ELSE t.matched_at END
										  - t.created_at) AS age,
				   (c.config #>> '{penalties,low_priority,max_wait_seconds}')::numeric AS bound
			  FROM mm.match_players mp
			  JOIN mm.matches m ON m.id = mp.match_id
			  JOIN fuzz_match_config c ON c.match_id = mp.match_id
			  JOIN mm.tickets t ON t.id = mp.ticket_id
			  LEFT JOIN (SELECT DISTINCT match_id, ticket_id FROM fuzz_backfilled) b
					 ON b.match_id = mp.match_id AND b.ticket_id = mp.ticket_id
			 WHERE jsonb_typeof(c.config #> '{penalties,low_priority,max_wait_seconds}') = 'number'
			   AND NOT c.config ? 'match_function')};

my @invariants = (
	[ 'no ticket in two matches that were not cancelled', q{
		SELECT mp.ticket_id::text FROM mm.match_players mp JOIN mm.matches m ON m.id = mp.match_id
		 WHERE m.status <> 'cancelled'
		 GROUP BY mp.ticket_id HAVING count(DISTINCT mp.match_id) > 1} ],
	[ 'no ticket in both partitions', q{
		SELECT id::text FROM mm.tickets GROUP BY id HAVING count(*) > 1} ],
	[ 'no ticket lost (every ticket inserted is still there unless its queue was dropped)', q{
		SELECT l.id || ' ' || l.queue FROM fuzz_ticket_log l
		 WHERE NOT EXISTS (SELECT 1 FROM mm.tickets t WHERE t.id = l.id)
		   AND NOT EXISTS (SELECT 1 FROM fuzz_dropped_queues d WHERE d.queue = l.queue)} ],
	[ 'every held player (active ticket, or live match not left) is in mm.active_players', qq{
		SELECT h.ticket_id || ' ' || coalesce(h.player_id, '<no id>') FROM ($held_sql) h
		 WHERE NOT EXISTS (SELECT 1 FROM mm.active_players a
							WHERE a.player_id = h.player_id AND a.ticket_id = h.ticket_id
							  AND a.queue = h.queue)} ],
	[ 'every mm.active_players row is a held player (active ticket, or live match not left)', qq{
		SELECT a.player_id || ' ' || a.ticket_id FROM mm.active_players a
		 WHERE NOT EXISTS (SELECT 1 FROM ($held_sql) h
							WHERE h.ticket_id = a.ticket_id AND h.queue = a.queue
							  AND h.player_id = a.player_id)} ],
	[ 'a matched or proposed ticket has an existing match; others have none', q{
		SELECT t.id || ' ' || t.status || ' ' || coalesce(t.match_id::text, 'NULL') FROM mm.tickets t
		 WHERE (t.status IN ('matched', 'proposed')
				AND (t.match_id IS NULL OR NOT EXISTS (SELECT 1 FROM mm.matches m WHERE m.id = t.match_id)))
			OR (t.status IN ('searching', 'cancelled', 'timed_out') AND t.match_id IS NOT NULL)} ],
	[ 'a proposed ticket is in a proposed match, a matched one in a match that was accepted'
		  . ' (or expired, or requeued after a player of the ticket left it)', q{
		SELECT t.id || ' ' || t.status || ' match ' || m.id || ' ' || m.status FROM mm.tickets t
		  JOIN mm.matches m ON m.id = t.match_id
		 WHERE (t.status = 'proposed' AND m.status <> 'proposed')
			OR (t.status = 'matched' AND m.status NOT IN ('ready', 'assigned', 'completed')
				AND NOT (m.status = 'cancelled' AND m.cancel_reason = 'expired')
				AND NOT (m.status = 'cancelled'
						 AND EXISTS (SELECT 1 FROM mm.match_players mp
									  WHERE mp.match_id = m.id AND mp.ticket_id = t.id
										AND mp.left_at IS NOT NULL)))} ],
	[ 'every player of a match not cancelled belongs to a ticket in that match, on its team', q{
		SELECT mp.match_id || ' ' || mp.player_id FROM mm.match_players mp
		  JOIN mm.matches m ON m.id = mp.match_id
		  LEFT JOIN mm.tickets t ON t.id = mp.ticket_id
		 WHERE m.status <> 'cancelled'
		   AND (t.id IS NULL
			OR t.status <> CASE m.status WHEN 'proposed' THEN 'proposed' ELSE 'matched' END
			OR t.match_id IS DISTINCT FROM mp.match_id
			OR t.team IS DISTINCT FROM mp.team OR t.queue <> mp.queue
			OR NOT t.players @> jsonb_build_array(jsonb_build_object('id', mp.player_id)))} ],
	[ 'every player of a matched ticket plays in its match', q{
		SELECT t.id || ' ' || coalesce(p.value ->> 'id', '<no id>')
		  FROM mm.tickets_ended t CROSS JOIN jsonb_array_elements(t.players) p
		 WHERE t.status = 'matched'
		   AND NOT EXISTS (SELECT 1 FROM mm.match_players mp
							WHERE mp.match_id = t.match_id AND mp.player_id = p.value ->> 'id'
							  AND mp.ticket_id = t.id)} ],
	[ 'no negative time to match (matched when the match was formed, or later: accepted, backfilled)', q{
		SELECT t.id || ' created ' || t.created_at || ' matched ' || t.matched_at || ' match ' || m.created_at
		  FROM mm.tickets_ended t JOIN mm.matches m ON m.id = t.match_id
		 WHERE t.status = 'matched'
		   AND (t.matched_at IS NULL OR t.matched_at < t.created_at OR t.matched_at < m.created_at)} ],
	[ 'every match has its config recorded', q{
		SELECT m.id::text FROM mm.matches m
		 WHERE NOT EXISTS (SELECT 1 FROM fuzz_match_config c WHERE c.match_id = m.id AND c.config IS NOT NULL)} ],
	# players who left make room for backfill: at most max players in the match
	# at once, and at least min ever
	[ 'every match is within its match size', q{
		SELECT m.id || ' has ' || n.players || ' players, ' || n.present || ' present'
		  FROM mm.matches m JOIN fuzz_match_config c ON c.match_id = m.id
		 CROSS JOIN LATERAL (SELECT count(*) AS players, count(*) FILTER (WHERE mp.left_at IS NULL) AS present
							   FROM mm.match_players mp WHERE mp.match_id = m.id) n
		 CROSS JOIN LATERAL (SELECT mm.validate_queue_config(c.config) -> 'match_size' AS ms) v
		 WHERE n.players < (v.ms ->> 'min')::numeric OR n.present > (v.ms ->> 'max')::numeric} ],
	[ 'every team of a match is within its bounds', q{
		SELECT m.id || ' team ' || (t.value ->> 'name') || ': ' || coalesce(n.players, 0)
		  FROM mm.matches m JOIN fuzz_match_config c ON c.match_id = m.id
		 CROSS JOIN LATERAL jsonb_array_elements(
				CASE WHEN jsonb_typeof(c.config -> 'teams') = 'array' THEN c.config -> 'teams' ELSE '[]' END) t
		  LEFT JOIN LATERAL (SELECT count(*) AS players, count(*) FILTER (WHERE mp.left_at IS NULL) AS present
							   FROM mm.match_players mp
							  WHERE mp.match_id = m.id AND mp.team = t.value ->> 'name') n ON true
		 WHERE coalesce(n.players, 0) < (t.value ->> 'min')::numeric
			OR coalesce(n.present, 0) > (t.value ->> 'max')::numeric} ],
	# penalties (0.4): the table's CHECK holds the counts; the history is
	# made of offences
	[ 'every mm.player_penalties row has offences, low-priority games and good games >= 0', q{
		SELECT player_id || ' ' || queue || ': ' || offences || ' ' || low_priority_games || ' ' || good_games
		  FROM mm.player_penalties
		 WHERE offences < 0 OR low_priority_games < 0 OR good_games < 0} ],
	[ 'every mm.penalty_history row is an offence (reason, offences >= 1, low-priority games >= 0)', q{
		SELECT id || ' ' || player_id || ' ' || reason || ' ' || offences FROM mm.penalty_history
		 WHERE reason NOT IN ('dodge', 'acceptance_timeout', 'leave') OR offences < 1
			OR low_priority_games < 0} ],
	# the low-priority pool: at a match's forming, a ticket is in the pool when
	# one of its players owed low-priority games in the queue
	# (match_players.low_priority) and it was younger than the bound; the
	# tick's matches take their tickets from one side only, backfill never
	# from the pool.  Ages within a millisecond of the bound are left out
	# (the tick's age is a float8).
	[ 'the low-priority pool: no match mixes tickets in the pool with others; backfill takes none from it', qq{
$lp_sql		SELECT 'match ' || match_id || ' mixes the pool and the others' FROM lp WHERE NOT backfilled
		 GROUP BY match_id
		HAVING bool_or(low_priority AND age < bound - 0.001)
		   AND bool_or(NOT low_priority OR age >= bound + 0.001)
		UNION ALL
		SELECT 'match ' || match_id || ' backfilled ticket ' || ticket_id || ' from the pool (age ' || age || ')'
		  FROM lp WHERE backfilled AND low_priority AND age < bound - 0.001} ],
	# ranked play (0.4): a provisional player has no tier
	[ 'mm.ratings: placement_games_left >= 0, a tier only when placed, a division only with a tier', q{
		SELECT player_id || ' ' || pool || ': ' || placement_games_left || ' ' || coalesce(tier, 'NULL')
			   || ' ' || coalesce(division::text, 'NULL')
		  FROM mm.ratings
		 WHERE placement_games_left < 0 OR (tier IS NOT NULL AND placement_games_left <> 0)
			OR (division IS NOT NULL AND tier IS NULL)
			OR season_games < 0 OR games_below < 0 OR tier_progress < 0 OR tier_progress > 1} ],
	[ 'every match player is on a team of the config (none in a free-for-all)', q{
		SELECT mp.match_id || ' ' || mp.player_id || ' ' || coalesce(mp.team, 'NULL')
		  FROM mm.match_players mp JOIN fuzz_match_config c ON c.match_id = mp.match_id
		 WHERE CASE WHEN c.config ? 'teams'
					THEN mp.team IS NULL OR NOT EXISTS (
						SELECT 1 FROM jsonb_array_elements(c.config -> 'teams') t
						 WHERE t.value ->> 'name' = mp.team)
					ELSE mp.team IS NOT NULL END} ],
);

# The same queries as one function (the first violation, or NULL), for
# MM_FUZZ_CHECK_EVERY_CALL=1: checked after every call, a violation names the
# call that caused it.
$node->safe_psql('postgres',
	'CREATE FUNCTION fuzz_invariants() RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
	names text[] := ARRAY[' . join(', ', map { lit($_->[0]) } @invariants) . '];
	queries text[] := ARRAY[' . join(', ', map { lit($_->[1]) } @invariants) . '];
	r text;
BEGIN
	FOR i IN 1 .. array_length(queries, 1) LOOP
		EXECUTE \'SELECT x FROM (\' || queries[i] || \') AS v(x) LIMIT 1\' INTO r;
		IF r IS NOT NULL THEN
			RETURN names[i] || \': \' || r;
		END IF;
	END LOOP;
	RETURN NULL;
END
$f$');
my $check_every_call = $ENV{MM_FUZZ_CHECK_EVERY_CALL} // 0;

# Runs every invariant query; returns { name => [up to 5 offending rows] }.
sub check_invariants
{
	my $sql = '';
	for my $i (0 .. $#invariants)
	{
		$sql .= "SELECT '$i|' || x FROM ($invariants[$i][1]) AS v(x) LIMIT 5;\n";
	}
	my ($ret, $out, $err) = $node->psql('postgres', $sql, on_error_stop => 0);
	my %bad;
	if ($ret != 0)
	{
		$bad{'invariant queries ran'} = [$err];
		return \%bad;
	}
	for my $line (split /\n/, $out)
	{
		my ($i, $row) = $line =~ /^(\d+)\|(.*)$/ or next;
		push @{ $bad{ $invariants[$i][0] } }, $row;
	}
	return \%bad;
}

# ---------------------------------------------------------------------------
# The run

my %count;      # category => calls
my %ok_count;   # category => calls that succeeded
my %valid_count;    # category => calls known to be valid (all must succeed)
my %states;     # SQLSTATE => calls
my %failures;   # category => [ messages ]
my $diags = 0;
my $crashed = 0;
my $invariant_broken;

sub shorten
{
	my ($sql) = @_;
	return $sql if length($sql) <= 3000;
	return substr($sql, 0, 3000) . '... (' . length($sql) . ' characters in all)';
}

sub failure
{
	my ($cat, $msg, $sql) = @_;
	my $text = "MM_FUZZ_SEED=$seed: $msg\n  SQL: " . shorten($sql);
	push @{ $failures{$cat} }, $text;
	diag($text) if $diags++ < 30;
	return;
}

# Inputs that showed defects found by this fuzzer, fixed since (explicit ids
# ahead of the sequence are refused; a matched ticket's status is final).
# They are in the default run; MM_FUZZ_KNOWN_DEFECTS=0 leaves them out, for
# bisecting an older build.
my @known_defects = (
	# Defect A: INSERT INTO mm.tickets accepts an explicit id ahead of the
	# sequence (an id an ended ticket holds is refused since the check in
	# mm.tickets_after_insert, 23505 "ticket id N is already used").  When the
	# sequence reaches that id, a plain mm.create_ticket (id left to its
	# default) fails: 23505 on tickets_active_pkey while the explicit ticket
	# is active, 23505 "ticket id N is already used" (hint: "Leave id to its
	# default") once it has ended.  Seed 7070 with MM_FUZZ_KNOWN_DEFECTS=1:
	# call 2607 INSERT INTO mm.tickets (queue, players, id) VALUES ('s_trio',
	# '[...]', (SELECT last_value + 25 FROM mm.tickets_id_seq)) succeeds, then
	# the valid call 2679 SELECT mm.create_ticket('s_teams4', ...) fails with
	# 23505 tickets_active_pkey.  (Before that check, an id of an ended ticket
	# was accepted too, giving one id in both partitions, after which every
	# tick that matched the ticket failed with 23505 on tickets_ended_pkey and
	# mm.cancel_ticket of the id failed as well.)
	[ 'A: explicit ticket id', qr/^INSERT INTO mm\.tickets \(queue, players, id\)/ ],
	# Defect B: an UPDATE of mm.tickets.status by hand (which docs/queues-and-tickets.md
	# allows: "an UPDATE of mm.tickets.status by hand releases or claims
	# them") also moves a matched ticket to cancelled or timed_out; it keeps
	# its match_id and stays in mm.match_players of a ready match (invariants
	# "a matched ticket has an existing match; others have none" and "every
	# match player belongs to a ticket matched into that match").  Seed 7070
	# with MM_FUZZ_KNOWN_DEFECTS=1 MM_FUZZ_CHECK_EVERY_CALL=1: call 1022
	#   UPDATE mm.tickets SET status = 'timed_out', updated_at = ... WHERE id = 351
	# leaves ticket 351 timed_out with match_id 32.
	[ 'B: hand UPDATE of an ended ticket', qr/^UPDATE mm\.tickets SET status = '(?:cancelled|timed_out)',.* WHERE id = [^ ]+$/ ],
	# Defect C: mm.accept_match took an answer dated before the match was
	# proposed (it checked the deadline only): after a tick with a future
	# `now` (3000-01-01) an answer at the fuzz's clock left tickets matched
	# before their match existed (invariant "no negative time to match";
	# seed 7070, calls 2201..2300).  The lifecycle steps now refuse such a
	# `now`.  Left out (MM_FUZZ_KNOWN_DEFECTS=0) by dating answers no earlier
	# than the proposal (answer_time), not by a pattern here.
);
note('known defects are ' . ($with_known_defects ? 'included' : 'left out') . ' (MM_FUZZ_KNOWN_DEFECTS)');

sub known_defect
{
	my ($sql) = @_;
	return 0 if $with_known_defects;
	for my $d (@known_defects)
	{
		return 1 if $sql =~ $d->[1];
	}
	return 0;
}

# Every call with its outcome, for a post-mortem (SQL cut at 1000 characters).
my $call_log = "$PostgreSQL::Test::Utils::tmp_check/070_fuzz_calls.log";
open my $call_log_fh, '>', $call_log or die "cannot write $call_log: $!";
note("every call and its outcome: $call_log");

my $t0 = time();
my $calls = 0;
my $batches = 0;
my $stopped_early = 0;
while ($calls < $TOTAL_CALLS)
{
	if (time() - $t0 > $TIME_LIMIT_S)
	{
		$stopped_early = 1;
		last;
	}
	my @batch;
	while (@batch < $BATCH_SIZE && $calls + @batch < $TOTAL_CALLS)
	{
		my $c = gen_call();
		next if known_defect($c->[1]);
		push @batch, $c;
	}
	my $script = "SET statement_timeout = '10s';\nSET client_min_messages = error;\n";
	for my $i (0 .. $#batch)
	{
		die "generated SQL contains the dollar quote: $batch[$i][1]" if $batch[$i][1] =~ /\$fz\$/;
		$script .= "SELECT '$i|' || fuzz_try(\$fz\$$batch[$i][1]\$fz\$);\n";
		$script .= "SELECT 'i$i|' || coalesce(fuzz_invariants(), 'ok');\n" if $check_every_call;
	}
	my ($ret, $out, $err) = $node->psql('postgres', $script, on_error_stop => 0, timeout => 300);
	my (%result, %inv_after);
	for my $line (split /\n/, $out)
	{
		$result{$1} = $2 if $line =~ /^(\d+)\|(.*)$/;
		$inv_after{$1} = $2 if $line =~ /^i(\d+)\|(.*)$/;
	}
	for my $i (0 .. $#batch)
	{
		my ($cat, $sql, $on_ok) = @{ $batch[$i] };
		$count{$cat}++;
		my $n = $calls + $i + 1;
		my $r = $result{$i};
		if (!defined $r)
		{
			if ($ret == 2 || $err =~ /server closed the connection|connection to server was lost/)
			{
				failure($cat, "call $n: the connection was lost (backend crash?): $err", $sql);
				$crashed = 1;
				last;
			}
			failure($cat, "call $n: no result (statement timeout or other top-level error): $err", $sql);
			next;
		}
		my ($state, $msg) = $r eq 'ok' ? ('ok', '') : split(/\|/, $r, 2);
		$states{$state}++;
		print $call_log_fh "$n\t$cat\t$state\t$msg\t" . substr($sql, 0, 1000) . "\n";
		if ($state eq 'ok')
		{
			$ok_count{$cat}++;
			$on_ok->() if $on_ok;
		}
		elsif ($state =~ /^XX/)
		{
			failure($cat, "call $n: internal error SQLSTATE $state: $msg", $sql);
		}
		elsif ($batch[$i][3])
		{
			failure($cat, "call $n: a valid call failed with SQLSTATE $state: $msg", $sql);
		}
		$valid_count{$cat}++ if $batch[$i][3];
		if ($check_every_call && !$invariant_broken && ($inv_after{$i} // 'ok') ne 'ok')
		{
			$invariant_broken = "right after call $n";
			diag("MM_FUZZ_SEED=$seed: call $n ($cat, $state): invariant broken right after it: "
				  . "$inv_after{$i}\n  SQL: " . shorten($sql));
		}
	}
	$calls += @batch;
	$batches++;
	last if $crashed;
	if (!$invariant_broken)
	{
		my $bad = check_invariants();
		if (%$bad)
		{
			$invariant_broken = "after batch $batches (calls " . ($calls - @batch + 1) . "..$calls)";
			diag("MM_FUZZ_SEED=$seed: invariants broken $invariant_broken: "
				  . join('; ', map { "$_: @{ $bad->{$_} }" } sort keys %$bad));
			# the culprit is one of the batch's calls that changed something
			my @suspects = grep { ($result{$_} // '') eq 'ok' && $batch[$_][0] =~ /^(?:ticket|tick|lifecycle|cancel|queue_config|ranked)$/ } 0 .. $#batch;
			diag("MM_FUZZ_SEED=$seed: calls of that batch that succeeded and may change data:\n"
				  . join("\n", map { '  ' . ($calls - @batch + 1 + $_) . ': ' . substr($batch[$_][1], 0, 300) } @suspects)
				  . "\nRerun with MM_FUZZ_SEED=$seed MM_FUZZ_CHECK_EVERY_CALL=1 to name the call.");
		}
	}
}
close $call_log_fh;
my $elapsed = time() - $t0;
note(sprintf('MM_FUZZ_SEED=%s: %d calls in %d batches, %.1f s%s', $seed, $calls, $batches,
	$elapsed, $stopped_early ? " (stopped early at the $TIME_LIMIT_S s limit)" : ''));
note('calls (succeeded) per category: '
	  . join(', ', map { "$_ $count{$_} (" . ($ok_count{$_} // 0) . ')' } sort keys %count));
note('outcomes by SQLSTATE: ' . join(', ', map { "$_ $states{$_}" } sort keys %states));

# ---------------------------------------------------------------------------
# Verdicts

cmp_ok($calls, '>=', $stopped_early ? 500 : $TOTAL_CALLS, "MM_FUZZ_SEED=$seed: enough calls made");
for my $cat (qw(queue_config ticket tick lifecycle cancel metrics ranked ratings balance))
{
	my @f = @{ $failures{$cat} // [] };
	ok(!@f, "MM_FUZZ_SEED=$seed: $cat: " . ($count{$cat} // 0)
		  . ' calls, each succeeded or failed with a proper SQLSTATE (no class XX, crash or timeout), and the '
		  . ($valid_count{$cat} // 0) . ' valid ones succeeded');
	cmp_ok($ok_count{$cat} // 0, '>', 0, "MM_FUZZ_SEED=$seed: $cat: some calls succeeded");
}

# the node stayed up and nothing crashed
my ($alive_ret, $alive_out) = $node->psql('postgres', 'SELECT 1');
is($alive_out, '1', "MM_FUZZ_SEED=$seed: SELECT 1 works after the run");
my $log = slurp_file($node->logfile);
my @crash_lines = $log =~ /^.*(?:terminated by signal|PANIC:|TRAP:|server process .* was terminated).*$/mg;
ok(!@crash_lines, "MM_FUZZ_SEED=$seed: the server log shows no crash")
  or diag(join("\n", @crash_lines[ 0 .. ($#crash_lines < 9 ? $#crash_lines : 9) ]));

# the invariants, at the end and after every batch
ok(!defined $invariant_broken, "MM_FUZZ_SEED=$seed: invariants held after every batch")
  or diag("first broken $invariant_broken");
my $bad = check_invariants();
for my $inv (@invariants)
{
	ok(!$bad->{ $inv->[0] }, "MM_FUZZ_SEED=$seed: invariant: $inv->[0]")
	  or diag("MM_FUZZ_SEED=$seed: offending rows: " . join(', ', @{ $bad->{ $inv->[0] } }));
}
ok(!$bad->{'invariant queries ran'}, 'the invariant queries ran')
  or diag(@{ $bad->{'invariant queries ran'} });

# not vacuous: matches formed, in queues with teams and without
my ($matches, $team_matches, $matched_tickets, $fz_matches) = split /\|/, $node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM mm.matches),
		   (SELECT count(DISTINCT match_id) FROM mm.match_players WHERE team IS NOT NULL),
		   (SELECT count(*) FROM mm.tickets WHERE status = 'matched'),
		   (SELECT count(*) FROM mm.matches WHERE queue LIKE 'fz\_%')});
note("MM_FUZZ_SEED=$seed: $matches matches ($team_matches with teams, $fz_matches in fuzzed queues), "
	  . "$matched_tickets matched tickets");
note("MM_FUZZ_SEED=$seed: matches per queue: " . join(', ', split /\n/, $node->safe_psql('postgres', q{
	SELECT q || ' ' || count(*)
	  FROM (SELECT CASE WHEN queue LIKE 'fz\_%' THEN 'fz_*' ELSE queue END AS q FROM mm.matches) m
	 GROUP BY q ORDER BY q})));
# ... and penalties: offences, penalised players matched, ranked play
note("MM_FUZZ_SEED=$seed: penalties and ranked play: " . $node->safe_psql('postgres', q{
	SELECT concat_ws(', ',
		'offences ' || coalesce((SELECT string_agg(reason || ' ' || n, ' ' ORDER BY reason)
								   FROM (SELECT reason, count(*) AS n FROM mm.penalty_history GROUP BY reason) r), 'none'),
		'penalised match players ' || (SELECT count(*) FROM mm.match_players WHERE low_priority),
		'matches of penalised players only ' || (SELECT count(*) FROM (SELECT match_id FROM mm.match_players
			GROUP BY match_id HAVING bool_and(low_priority)) x),
		'mixed matches ' || (SELECT count(*) FROM (SELECT match_id FROM mm.match_players
			GROUP BY match_id HAVING bool_or(low_priority) AND NOT bool_and(low_priority)) x),
		'matches formed in the pool (before the bound) ' || (} . $lp_sql . q{
			SELECT count(*) FROM (SELECT match_id FROM lp WHERE NOT backfilled GROUP BY match_id
								   HAVING bool_and(low_priority AND age < bound)) x),
		'backfilled tickets ' || (SELECT count(*) FROM fuzz_backfilled),
		'ratings ' || (SELECT count(*) FROM mm.ratings),
		'with a tier ' || (SELECT count(*) FROM mm.ratings WHERE tier IS NOT NULL),
		'seasons ' || (SELECT count(*) FROM mm.seasons))}));
note("MM_FUZZ_SEED=$seed: tickets refused for a cooldown: "
	  . scalar(() = slurp_file($call_log) =~ /\t55000\tplayer "[^"]*" may not queue/g));
cmp_ok($matches, '>=', 20, "MM_FUZZ_SEED=$seed: matches formed, so the invariants are not vacuous");
cmp_ok($team_matches, '>=', 5, "MM_FUZZ_SEED=$seed: matches with teams formed");
cmp_ok($matches - $team_matches, '>=', 1, "MM_FUZZ_SEED=$seed: free-for-all matches formed");

$node->stop;
done_testing();
