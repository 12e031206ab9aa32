# Role queues against brute force (issue 20): random small pools, seeded and
# reproducible (MM_ROLE_SEED picks the seed, MM_ROLE_POOLS how many pools).
# Each pool is a fresh queue with roles (two teams with 1-3 compositions
# each, or a free-for-all), up to 10 searching players in tickets of one or
# two with random preference lists ("fill", none), sometimes autofill with
# some tickets old enough and some players protected.  One mm.tick at an
# explicit time, then:
#   - a valid match among the pool's tickets means the tick formed one, and
#     no valid match is left among the tickets it did not match;
#   - every match formed is valid: each team meets one of its compositions,
#     parties sit together, every player is on a role they accept (listed,
#     or any once autofill applies), autofilled exactly off their list;
#   - its seating has the fewest autofilled players, then the most first
#     choices, then the most second choices that its players allow;
#   - no ticket is in two matches;
#   - with a team_difference rule, no swap of two solo players of the same
#     role between the teams would even their skill out further.
# The brute force enumerates the placements of the tickets on the teams,
# then per team every composition and seating.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use MmTest;

my $seed = $ENV{MM_ROLE_SEED} // 20260420;
my $npools = $ENV{MM_ROLE_POOLS} // 2000;
my $batch = 50;
note "seed $seed (MM_ROLE_SEED), $npools pools (MM_ROLE_POOLS)";
srand($seed);

my @all_roles = qw(tank healer dps support);

sub pick { return $_[ int(rand(@_)) ]; }

sub shuffled
{
	my @a = @_;
	for (my $i = $#a; $i > 0; $i--)
	{
		my $j = int(rand($i + 1));
		@a[ $i, $j ] = @a[ $j, $i ];
	}
	return @a;
}

# A random composition of size seats over the roles given (a role may have
# 0 seats, named or not).
sub random_composition
{
	my ($size, @roles) = @_;
	my %c = map { $_ => 0 } @roles;
	$c{ pick(@roles) }++ for 1 .. $size;
	# a role without seats is named or left out
	for my $r (@roles)
	{
		delete $c{$r} if !$c{$r} && rand() < 0.5;
	}
	return \%c;
}

sub comp_key
{
	my ($c) = @_;
	return join(',', map { "$_=$c->{$_}" } grep { $c->{$_} } sort keys %$c);
}

# 1-3 distinct compositions of a group of size seats.
sub random_compositions
{
	my ($size, $roles) = @_;
	my $want = 1 + int(rand(3));
	my (%seen, @out);
	for (1 .. 10)
	{
		my $c =
		  $size == 5 && rand() < 0.5
		  ? pick({ tank => 1, healer => 1, dps => 3 }, { tank => 2, healer => 1, dps => 2 },
			{ tank => 1, healer => 2, dps => 2 })
		  : random_composition($size, @$roles);
		next if $seen{ comp_key($c) }++;
		push @out, {%$c};
		last if @out == $want;
	}
	return \@out;
}

sub json_comp
{
	my ($c) = @_;
	return '{' . join(', ', map { "\"$_\": $c->{$_}" } sort keys %$c) . '}';
}

sub json_comps
{
	my ($cs) = @_;
	return @$cs == 1 ? json_comp($cs->[0]) : '[' . join(', ', map { json_comp($_) } @$cs) . ']';
}

# A random pool: its queue (groups, compositions, autofill), tickets and now.
sub random_pool
{
	my ($k) = @_;
	my %pool = (queue => "rp$k", now_s => 1_000_000 + 1000 * $k);
	my $kind = rand();
	my ($size, @groups);
	my @roles = rand() < 0.7 ? qw(tank healer dps) : shuffled(@all_roles);
	@roles = @roles[ 0 .. 1 + int(rand(@roles - 1)) ];
	@roles = qw(tank healer dps) if @roles < 2;
	if ($kind < 0.8)
	{
		$size = pick(2, 3, 3, 3, 5, 5);
		@roles = qw(tank healer dps) if $size == 5;
		my $c0 = random_compositions($size, \@roles);
		my $c1 = rand() < 0.7 ? $c0 : random_compositions($size, \@roles);
		@groups = ({ name => 'a', comps => $c0 }, { name => 'b', comps => $c1 });
		$pool{teams} = 1;
		# a team_difference rule that never refuses: the seating then evens
		# the teams out by swapping players of the same role
		$pool{balance} = rand() < 0.3;
	}
	else
	{
		$size = pick(2, 3, 4);
		@groups = ({ name => undef, comps => random_compositions($size, \@roles) });
		$pool{teams} = 0;
	}
	$pool{size} = $size;
	$pool{groups} = \@groups;
	# the roles of the queue: those its compositions name
	my %named;
	for my $g (@groups)
	{
		$named{$_} = 1 for map { keys %$_ } @{ $g->{comps} };
	}
	$pool{roles} = [ sort keys %named ];

	if (rand() < 0.5)
	{
		$pool{autofill} = pick(30, 60);
		$pool{protect} = rand() < 0.4 ? 2 : 0;
	}

	my $nplayers = 2 + int(rand(9));
	my @tickets;
	my $p = 0;
	while ($p < $nplayers)
	{
		my $n = ($nplayers - $p >= 2 && rand() < 0.3) ? 2 : 1;
		my @players;
		for (1 .. $n)
		{
			my %pl = (id => "r${k}p$p", skill => 1000 + int(rand(1000)));
			$p++;
			my $r = rand();
			if ($r < 0.10)
			{
				$pl{list} = undef;    # no list: any role, all first
			}
			elsif ($r < 0.14)
			{
				$pl{list} = ['fill'];
			}
			else
			{
				# most players want dps first: the other roles are scarce
				my @roles = @{ $pool{roles} };
				my $first = (grep { $_ eq 'dps' } @roles) && rand() < 0.5 ? 'dps' : pick(@roles);
				my @l = ($first, shuffled(grep { $_ ne $first } @roles));
				my $len = pick(1, 1, 1, 2, 2, 3);
				@l = @l[ 0 .. ($len < @l ? $len : scalar @l) - 1 ];
				push @l, 'fill' if rand() < 0.12;
				$pl{list} = \@l;
			}
			$pl{protected} = 1 if $pool{protect} && rand() < 0.3;
			push @players, \%pl;
		}
		# ages: sometimes exactly at autofill.after_seconds
		my $age = rand() < 0.15 && $pool{autofill} ? $pool{autofill} : int(rand(150));
		push @tickets, { players => \@players, age => $age };
	}
	# distinct creation times: the age order is the anchor order
	my %used;
	for my $t (@tickets)
	{
		$t->{age}++ while $used{ $t->{age} }++;
	}
	$pool{tickets} = \@tickets;
	prepare_pool(\%pool);
	return \%pool;
}

# Each player's rank of every role (as the C does: a list ranks by position,
# "fill" gives every role not yet listed the next position, no list ranks
# every role first), listed roles and accepted roles.
sub prepare_pool
{
	my ($pool) = @_;
	my @roles = @{ $pool->{roles} };
	my $ti = 0;
	for my $t (@{ $pool->{tickets} })
	{
		$t->{index} = $ti++;
		$t->{size} = scalar @{ $t->{players} };
		my $autofill_now = defined $pool->{autofill} && $t->{age} >= $pool->{autofill};
		for my $pl (@{ $t->{players} })
		{
			my %rank;
			if (!defined $pl->{list})
			{
				%rank = map { $_ => 0 } @roles;
			}
			else
			{
				my $pos = 0;
				for my $r (@{ $pl->{list} })
				{
					if ($r eq 'fill')
					{
						exists $rank{$_} or $rank{$_} = $pos for @roles;
						last;
					}
					$rank{$r} = $pos++;
				}
			}
			$pl->{rank} = \%rank;
			my $protected = $pool->{protect} && $pl->{protected};
			$pl->{accept} =
			  ($autofill_now && !$protected) ? [@roles] : [ grep { exists $rank{$_} } @roles ];
		}
	}
	return;
}

sub ts
{
	my ($s) = @_;
	return "to_timestamp($s)";
}

sub pool_config
{
	my ($pool) = @_;
	my @parts;
	if ($pool->{teams})
	{
		push @parts,
		  '"teams": ['
		  . join(', ',
			map { "{\"name\": \"$_->{name}\", \"min\": $pool->{size}, \"max\": $pool->{size}, \"roles\": "
				  . json_comps($_->{comps}) . '}' } @{ $pool->{groups} })
		  . ']';
	}
	else
	{
		push @parts, "\"match_size\": {\"min\": $pool->{size}, \"max\": $pool->{size}}",
		  '"roles": ' . json_comps($pool->{groups}[0]{comps});
	}
	push @parts,
	  '"rules": [{"name": "even", "type": "team_difference", "attribute": "skill", "max": 100000}]'
	  if $pool->{balance};
	if (defined $pool->{autofill})
	{
		push @parts,
		  "\"autofill\": {\"after_seconds\": $pool->{autofill}"
		  . ($pool->{protect} ? ", \"protect_games\": $pool->{protect}" : '') . '}';
	}
	return '{' . join(', ', @parts) . '}';
}

sub ticket_json
{
	my ($pool, $t) = @_;
	return '['
	  . join(', ',
		map {
			"{\"id\": \"$_->{id}\""
			  . ($pool->{balance} ? ", \"attributes\": {\"skill\": $_->{skill}}" : '')
			  . (defined $_->{list} ? ', "roles": [' . join(', ', map { "\"$_\"" } @{ $_->{list} }) . ']' : '')
			  . '}'
		} @{ $t->{players} }) . ']';
}

sub pool_sql
{
	my ($pool) = @_;
	my $q = $pool->{queue};
	my @sql = ("SELECT mm.create_queue('$q', '" . pool_config($pool) . "');");
	for my $t (@{ $pool->{tickets} })
	{
		push @sql,
		  "SELECT 'T|$q|$t->{index}|' || mm.create_ticket('$q', '"
		  . ticket_json($pool, $t) . "', "
		  . ts($pool->{now_s} - $t->{age}) . ');';
		for my $pl (grep { $_->{protected} } @{ $t->{players} })
		{
			push @sql,
			  "INSERT INTO mm.autofill_protection (queue, player_id, games_left, updated_at) "
			  . "VALUES ('$q', '$pl->{id}', 1, " . ts($pool->{now_s} - 500) . ');';
		}
	}
	push @sql, "SELECT 'K|$q|' || mm.tick('$q', " . ts($pool->{now_s}) . ');';
	push @sql,
	  "SELECT 'M|$q|' || concat_ws('|', match_id, ticket_id, player_id, coalesce(team, '-'), "
	  . "coalesce(role, '-'), autofilled) FROM mm.match_players WHERE queue = '$q' ORDER BY match_id, player_id;";
	return join("\n", @sql);
}

# A readable description of a pool, to reproduce a failure.
sub describe_pool
{
	my ($pool) = @_;
	my @lines = ("queue $pool->{queue} config " . pool_config($pool), "now " . ts($pool->{now_s}));
	for my $t (@{ $pool->{tickets} })
	{
		push @lines,
		  "  ticket $t->{index}: created_at " . ts($pool->{now_s} - $t->{age}) . " (age $t->{age}) "
		  . ticket_json($pool, $t)
		  . join('', map { " [$_->{id} protected]" } grep { $_->{protected} && $pool->{protect} } @{ $t->{players} });
	}
	return join("\n", @lines);
}

sub pool_players
{
	my ($pool) = @_;
	return scalar map { @{ $_->{players} } } @{ $pool->{tickets} };
}

# --- brute force ---------------------------------------------------------

# Score of a seating, smaller is better: autofills, then first choices (more
# is better), then second choices.  10 players at most, so base 100 keeps
# the counts apart.
sub seat_score
{
	my ($pl, $role) = @_;
	my $rank = $pl->{rank}{$role};
	return 10000 if !defined $rank;
	return -100 if $rank == 0;
	return -1 if $rank == 1;
	return 0;
}

# The best and the worst score of the players on one of the group's
# compositions ([best, worst]), undef when none seats them all.
sub best_group
{
	my ($pool, $g, $players) = @_;
	my ($best, $worst);
	for my $c (@{ $pool->{groups}[$g]{comps} })
	{
		my %left = %$c;
		my $rec;
		$rec = sub {
			my ($i, $score) = @_;
			if ($i == @$players)
			{
				$best = $score if !defined $best || $score < $best;
				$worst = $score if !defined $worst || $score > $worst;
				return;
			}
			for my $r (@{ $players->[$i]{accept} })
			{
				next unless $left{$r};
				$left{$r}--;
				$rec->($i + 1, $score + seat_score($players->[$i], $r));
				$left{$r}++;
			}
		};
		$rec->(0, 0);
		undef $rec;
	}
	return defined $best ? [ $best, $worst ] : undef;
}

sub mask_players
{
	my ($pool, $mask) = @_;
	my @p;
	for my $t (@{ $pool->{tickets} })
	{
		push @p, @{ $t->{players} } if $mask & (1 << $t->{index});
	}
	return \@p;
}

sub mask_size
{
	my ($pool, $mask) = @_;
	my $n = 0;
	for my $t (@{ $pool->{tickets} })
	{
		$n += $t->{size} if $mask & (1 << $t->{index});
	}
	return $n;
}

# Memoized best_group by (group, ticket mask).
sub group_score
{
	my ($pool, $g, $mask) = @_;
	my $memo = $pool->{memo}[$g] //= {};
	return $memo->{$mask} if exists $memo->{$mask};
	return $memo->{$mask} = best_group($pool, $g, mask_players($pool, $mask));
}

# The submasks of within whose tickets hold exactly size players.
sub masks_of_size
{
	my ($pool, $within, $size) = @_;
	my @out;
	for (my $m = $within; $m > 0; $m = ($m - 1) & $within)
	{
		push @out, $m if mask_size($pool, $m) == $size;
	}
	return @out;
}

# The best and the worst score of a match of exactly the tickets of mask
# (every split of them on the teams), undef when they make no valid match.
sub best_match
{
	my ($pool, $mask) = @_;
	return group_score($pool, 0, $mask) if !$pool->{teams};
	my ($best, $worst);
	for my $a (masks_of_size($pool, $mask, $pool->{size}))
	{
		my $b = $mask & ~$a;
		next if mask_size($pool, $b) != $pool->{size};
		my $sa = group_score($pool, 0, $a);
		next unless defined $sa;
		my $sb = group_score($pool, 1, $b);
		next unless defined $sb;
		my ($lo, $hi) = ($sa->[0] + $sb->[0], $sa->[1] + $sb->[1]);
		$best = $lo if !defined $best || $lo < $best;
		$worst = $hi if !defined $worst || $hi > $worst;
	}
	return defined $best ? [ $best, $worst ] : undef;
}

# Whether the tickets of within hold a valid match.
sub match_exists
{
	my ($pool, $within) = @_;
	my $size = $pool->{size};
	for my $a (masks_of_size($pool, $within, $size))
	{
		next unless defined group_score($pool, 0, $a);
		return 1 if !$pool->{teams};
		for my $b (masks_of_size($pool, $within & ~$a, $size))
		{
			return 1 if defined group_score($pool, 1, $b);
		}
	}
	return 0;
}

# --- checks ----------------------------------------------------------------

# the pools first: nothing else draws from the seeded sequence
my @pools = map { random_pool($_) } 1 .. $npools;
my $node = mm_new_node('roles');
my (@failures, %counts);
$counts{$_} = 0 for qw(pools matches with_match autofilled multi parties choice protected balanced);

# Checks one pool's outcome; returns the problems found.
sub check_pool
{
	my ($pool, $rows, $tick_count) = @_;
	my @problems;
	my %player_of;    # id -> [ticket, player]
	for my $t (@{ $pool->{tickets} })
	{
		$player_of{ $_->{id} } = [ $t, $_ ] for @{ $t->{players} };
	}
	my $all = (1 << @{ $pool->{tickets} }) - 1;
	my $exists = match_exists($pool, $all);

	my (%matches, %ticket_match, %player_seen);
	for my $r (@$rows)
	{
		my ($match, $ticket_id, $pid, $team, $role, $autofilled) = @$r;
		my $pp = $player_of{$pid};
		if (!$pp)
		{
			push @problems, "unknown player $pid in match $match";
			next;
		}
		push @problems, "player $pid in two matches" if $player_seen{$pid}++;
		my ($t, $pl) = @$pp;
		push @problems, "player ${pid}'s ticket id $ticket_id differs from its ticket's $t->{id}"
		  if $ticket_id ne $t->{id};
		if (defined $ticket_match{ $t->{index} } && $ticket_match{ $t->{index} } ne $match)
		{
			push @problems, "ticket $t->{index} in matches $ticket_match{$t->{index}} and $match";
		}
		$ticket_match{ $t->{index} } = $match;
		push @{ $matches{$match} }, { t => $t, pl => $pl, team => $team, role => $role, af => $autofilled };
	}
	push @problems, "mm.tick returned $tick_count, but " . scalar(keys %matches) . " matches have players"
	  if $tick_count != keys %matches;
	push @problems, "a valid match exists, but the tick formed none" if $exists && !%matches;
	push @problems, "no valid match exists, but the tick formed one" if !$exists && %matches;

	my $matched = 0;
	for my $m (sort { $a <=> $b } keys %matches)
	{
		my $seats = $matches{$m};
		my ($mask, $score) = (0, 0);
		my (%team_of_ticket, %team_roles, %team_size);
		for my $s (@$seats)
		{
			my ($t, $pl, $role) = ($s->{t}, $s->{pl}, $s->{role});
			$mask |= 1 << $t->{index};
			my $g = $pool->{teams} ? ($s->{team} eq 'a' ? 0 : $s->{team} eq 'b' ? 1 : -1) : 0;
			push @problems, "match $m: player $pl->{id} on team $s->{team}"
			  if $g < 0 || (!$pool->{teams} && $s->{team} ne '-');
			$team_of_ticket{ $t->{index} } //= $s->{team};
			push @problems, "match $m: the party of ticket $t->{index} is split"
			  if $team_of_ticket{ $t->{index} } ne $s->{team};
			$team_roles{$g}{$role}++;
			$team_size{$g}++;
			push @problems, "match $m: player $pl->{id} on role $role, outside what they accept ("
			  . join(',', @{ $pl->{accept} }) . ')'
			  unless grep { $_ eq $role } @{ $pl->{accept} };
			my $off_list = !defined $pl->{rank}{$role};
			my $flag = $s->{af} eq 't';
			push @problems, "match $m: player $pl->{id} on $role has autofilled = $s->{af}"
			  if $flag != $off_list;
			$score += seat_score($pl, $role);
			$counts{autofilled}++ if $flag;
			$counts{protected}++ if $pool->{protect} && $pl->{protected};
		}
		# whole tickets only
		for my $t (@{ $pool->{tickets} })
		{
			next unless $mask & (1 << $t->{index});
			my $in = grep { $_->{t} == $t } @$seats;
			push @problems, "match $m holds $in of ticket $t->{index}'s $t->{size} players"
			  if $in != $t->{size};
			$counts{parties}++ if $t->{size} > 1;
		}
		for my $g (0 .. $#{ $pool->{groups} })
		{
			my $have = comp_key($team_roles{$g} // {});
			push @problems, "match $m: team " . ($pool->{groups}[$g]{name} // 'ffa') . " is $have, none of its compositions"
			  unless grep { comp_key($_) eq $have } @{ $pool->{groups}[$g]{comps} };
		}
		my $range = best_match($pool, $mask);
		my $best = $range ? $range->[0] : undef;
		if (!defined $best)
		{
			push @problems, "match $m: its tickets make no valid match by brute force";
		}
		elsif ($score != $best)
		{
			push @problems,
			  sprintf("match $m: seating scores %s, the best is %s (autofills, first, second choices)",
				fmt_score($score), fmt_score($best));
		}
		push @problems, balance_problems($m, $seats) if $pool->{balance};
		# a match whose players have seatings of different worth
		$counts{choice}++ if $range && $range->[1] != $range->[0];
		$matched |= $mask;
	}
	# what the tick left can no longer form a match
	push @problems, "the tickets left unmatched still hold a valid match"
	  if %matches && match_exists($pool, $all & ~$matched);

	$counts{pools}++;
	$counts{with_match}++ if $exists;
	$counts{matches} += keys %matches;
	$counts{multi}++ if keys %matches > 1;
	return @problems;
}

# With a team_difference rule the seating evens the teams' average skill
# out: no two solo players of the same role on the two teams would bring
# the averages closer by swapping.
sub balance_problems
{
	my ($m, $seats) = @_;
	my %sum;
	$sum{ $_->{team} } += $_->{pl}{skill} for @$seats;
	my $gap = abs(($sum{a} // 0) - ($sum{b} // 0));
	$counts{balanced}++;
	for my $x (grep { $_->{team} eq 'a' && $_->{t}{size} == 1 } @$seats)
	{
		for my $y (grep { $_->{team} eq 'b' && $_->{t}{size} == 1 && $_->{role} eq $x->{role} } @$seats)
		{
			my $d = $y->{pl}{skill} - $x->{pl}{skill};
			my $after = abs(($sum{a} + $d) - ($sum{b} - $d));
			return "match $m: swapping $x->{pl}{id} and $y->{pl}{id} ($x->{role}) would even the teams out"
			  . " (skill totals $sum{a} and $sum{b})"
			  if $after < $gap;
		}
	}
	return;
}

# (autofills, first choices, second choices) of a score.
sub fmt_score
{
	my ($score) = @_;
	my $af = int(($score + 9999) / 10000);
	my $rest = 10000 * $af - $score;    # 100 F + S
	return sprintf('(%d, %d, %d)', $af, int($rest / 100), $rest % 100);
}

for (my $i = 0; $i < @pools; $i += $batch)
{
	my @chunk = @pools[ $i .. ($i + $batch - 1 < $#pools ? $i + $batch - 1 : $#pools) ];
	my $out = $node->safe_psql('postgres', join("\n", map { pool_sql($_) } @chunk));
	my (%rows, %tick, %ids);
	for my $line (split /\n/, $out)
	{
		my @f = split /\|/, $line, -1;
		if ($f[0] eq 'T') { $ids{ $f[1] }{ $f[2] } = $f[3]; }
		elsif ($f[0] eq 'K') { $tick{ $f[1] } = $f[2]; }
		elsif ($f[0] eq 'M') { push @{ $rows{ $f[1] } }, [ @f[ 2 .. 7 ] ]; }
	}
	for my $pool (@chunk)
	{
		my $q = $pool->{queue};
		$_->{id} = $ids{$q}{ $_->{index} } for @{ $pool->{tickets} };
		my @problems = check_pool($pool, $rows{$q} // [], $tick{$q} // -1);
		next unless @problems;
		push @failures, [ $pool, \@problems ];
	}
}

note sprintf(
	"%d pools: %d with a valid match, %d matches formed (%d where the seating mattered), "
	  . "%d pools with several, %d parties matched, %d players autofilled, %d protected players matched, %d matches balanced",
	@counts{qw(pools with_match matches choice multi parties autofilled protected balanced)});
is(scalar @failures, 0, "every pool's tick agrees with the brute force ($counts{pools} pools, seed $seed)");
for my $f (sort { pool_players($a->[0]) <=> pool_players($b->[0]) } @failures)
{
	diag(describe_pool($f->[0]) . "\n  " . join("\n  ", @{ $f->[1] }));
}
if (@failures)
{
	my ($small) = sort { pool_players($a->[0]) <=> pool_players($b->[0]) } @failures;
	diag("smallest failing pool:\n" . describe_pool($small->[0]));
}
ok($counts{with_match} > $counts{pools} / 4 && $counts{multi} > 0 && $counts{autofilled} > 0
	  && $counts{parties} > 0 && $counts{choice} > $counts{matches} / 4 && $counts{protected} > 0
	  && $counts{balanced} > 0,
	'the pools cover matches, several matches per tick, parties, autofill, protection and seatings that matter');

done_testing();
