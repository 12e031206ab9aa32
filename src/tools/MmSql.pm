# MmSql: the SQL reading rules shared by test/scripts/check_sql_tree.pl
# (which proves src/sql defines every object once) and
# src/tools/build_upgrade.pl (which builds an upgrade from a manifest of
# routines): statements of a script, routine signatures as PostgreSQL
# resolves them.
package MmSql;
use strict;
use warnings;
use Exporter 'import';
our @EXPORT_OK = qw(norm_type split_top arg_types routine_ref statements);

# Type names as PostgreSQL resolves them, so that int and integer, float8 and
# double precision name the same signature.
my %alias = (
	'int' => 'integer', 'int4' => 'integer', 'integer' => 'integer',
	'int8' => 'bigint', 'bigint' => 'bigint', 'int2' => 'smallint', 'smallint' => 'smallint',
	'float8' => 'float8', 'double precision' => 'float8', 'float4' => 'real', 'real' => 'real',
	'bool' => 'boolean', 'boolean' => 'boolean',
	'timestamptz' => 'timestamptz', 'timestamp with time zone' => 'timestamptz',
	'varchar' => 'varchar', 'character varying' => 'varchar');

sub norm_type
{
	my ($t) = @_;
	$t = lc $t;
	$t =~ s/\s+/ /g;
	$t =~ s/^\s+|\s+$//g;
	my $array = '';
	$array .= '[]' while $t =~ s/\s*\[\]$//;
	return ($alias{$t} // $t) . $array;
}

# Splits at top-level commas (outside parentheses, brackets and quotes).
sub split_top
{
	my ($s) = @_;
	my @parts;
	my ($cur, $depth, $quote) = ('', 0, '');
	for my $c (split //, $s)
	{
		if ($quote) { $quote = '' if $c eq $quote; }
		elsif ($c eq "'" || $c eq '"') { $quote = $c; }
		elsif ($c eq '(' || $c eq '[') { $depth++; }
		elsif ($c eq ')' || $c eq ']') { $depth--; }
		elsif ($c eq ',' && $depth == 0) { push @parts, $cur; $cur = ''; next; }
		$cur .= $c;
	}
	push @parts, $cur if $cur =~ /\S/;
	return @parts;
}

# The input argument types of an argument list: names, modes and defaults
# dropped, OUT arguments left out (they are not part of the signature).
sub arg_types
{
	my ($list) = @_;
	my @types;
	for my $a (split_top($list))
	{
		$a =~ s/--[^\n]*//g;
		$a =~ s/\s+(DEFAULT\s|=).*//is;
		$a =~ s/^\s+|\s+$//g;
		next if $a eq '';
		my $mode = 'in';
		$mode = lc $1 if $a =~ s/^(IN|OUT|INOUT|VARIADIC)\s+//i;
		next if $mode eq 'out';
		my $type = $a;
		# "name type": the first word is a name unless the whole is a type
		if ($a =~ /^("[^"]+"|\w+)\s+(.+)$/s)
		{
			my ($first, $rest) = ($1, $2);
			my $whole = norm_type($a);
			$type = $rest unless $whole =~ /^(float8|timestamptz|varchar)(\[\])*$/
			  && lc($a) =~ /^(double precision|timestamp with time zone|character varying)/;
		}
		push @types, norm_type($type);
	}
	return join(', ', @types);
}

# "mm.name(args)" at the start of $s: returns the signature and the rest.
sub routine_ref
{
	my ($s) = @_;
	$s =~ /^\s*((?:\w+\.)?\w+)\s*\(/ or return;
	my $name = lc $1;
	my $start = $+[0];
	my ($depth, $i, $quote) = (1, $start, '');
	while ($i < length $s && $depth > 0)
	{
		my $c = substr($s, $i, 1);
		if ($quote) { $quote = '' if $c eq $quote; }
		elsif ($c eq "'" || $c eq '"') { $quote = $c; }
		elsif ($c eq '(') { $depth++; }
		elsif ($c eq ')') { $depth--; }
		$i++;
	}
	return ("$name(" . arg_types(substr($s, $start, $i - 1 - $start)) . ')', substr($s, $i));
}

# Statements of a script with the line each starts on: comments, quoted
# strings and dollar quotes are skipped while looking for the ending ';'.
sub statements
{
	my ($text) = @_;
	my @out;
	my ($i, $n, $line, $start, $start_line) = (0, length $text, 1, undef, 0);
	while ($i < $n)
	{
		my $c = substr($text, $i, 1);
		if (substr($text, $i, 2) eq '--')
		{
			my $j = index($text, "\n", $i);
			$j = $n if $j < 0;
			$i = $j;
			next;
		}
		if (substr($text, $i, 2) eq '/*')
		{
			my $j = index($text, '*/', $i + 2);
			$j = $n - 2 if $j < 0;
			$line += () = substr($text, $i, $j + 2 - $i) =~ /\n/g;
			$i = $j + 2;
			next;
		}
		if ($c eq "\n") { $line++; $i++; next; }
		if ($c =~ /\s/) { $i++; next; }
		if (!defined $start)
		{
			if ($c eq '\\')
			{
				# a psql meta-command line
				my $j = index($text, "\n", $i);
				$j = $n if $j < 0;
				push @out, [ $line, substr($text, $i, $j - $i) ];
				$i = $j;
				next;
			}
			($start, $start_line) = ($i, $line);
		}
		if ($c eq "'" || $c eq '"')
		{
			my $j = $i + 1;
			while ($j < $n)
			{
				my $d = substr($text, $j, 1);
				if ($d eq $c)
				{
					if (substr($text, $j + 1, 1) eq $c) { $j += 2; next; }
					last;
				}
				$j++;
			}
			$line += () = substr($text, $i, $j + 1 - $i) =~ /\n/g;
			$i = $j + 1;
			next;
		}
		if ($c eq '$' && substr($text, $i) =~ /^(\$(?:[A-Za-z_]\w*)?\$)/
			&& ($i == 0 || substr($text, $i - 1, 1) !~ /\w/))
		{
			my $tag = $1;
			my $j = index($text, $tag, $i + length $tag);
			$j = $n - length $tag if $j < 0;
			$line += () = substr($text, $i, $j + length($tag) - $i) =~ /\n/g;
			$i = $j + length $tag;
			next;
		}
		if ($c eq ';')
		{
			push @out, [ $start_line, substr($text, $start, $i + 1 - $start) ];
			undef $start;
		}
		$i++;
	}
	push @out, [ $start_line, substr($text, $start) ] if defined $start;
	return @out;
}

1;
