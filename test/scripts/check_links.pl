#!/usr/bin/perl
# Fails when a relative link in README.md, CHANGELOG.md or docs/*.md points at
# a file that does not exist, or at a heading anchor the target lacks
# (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens).
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;

chdir(File::Spec->catdir(dirname(File::Spec->rel2abs($0)), '..', '..')) or die "chdir: $!";
my @files = ('README.md', 'CHANGELOG.md', sort glob('docs/*.md'));

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<:encoding(UTF-8)', $path) or die "$path: $!";
	local $/;
	return <$fh>;
}

my %anchor_cache;
sub anchors
{
	my ($path) = @_;
	return $anchor_cache{$path} if $anchor_cache{$path};
	my (%seen, %result);
	my $in_code = 0;
	for my $line (split /\n/, slurp($path))
	{
		if ($line =~ /^```/) { $in_code = !$in_code; next; }
		next if $in_code || $line !~ /^#+\s+(.*?)\s*$/;
		(my $slug = lc $1) =~ s/[^\w\- ]//g;
		$slug =~ s/ /-/g;
		my $n = $seen{$slug}++ // 0;
		$result{ $n ? "$slug-$n" : $slug } = 1;
	}
	return $anchor_cache{$path} = \%result;
}

my @problems;
for my $f (@files)
{
	(my $text = slurp($f)) =~ s/```.*?```//gs;
	while ($text =~ /\]\(([^)\s]+)\)/g)
	{
		my $target = $1;
		next if $target =~ /^[a-z]+:/;
		my ($path, $anchor) = split /#/, $target, 2;
		my $full = $path eq '' ? $f : File::Spec->canonpath(dirname($f) . "/$path");
		1 while $full =~ s{[^/]+/\.\./}{};
		if (!-e $full)
		{
			push @problems, "$f: link to missing file $target";
		}
		elsif (defined $anchor && $full =~ /\.md$/ && !anchors($full)->{$anchor})
		{
			push @problems, "$f: link to missing heading $target";
		}
	}
}
print "$_\n" for @problems;
printf "checked the links of %d files: %d broken\n", scalar @files, scalar @problems;
exit(@problems ? 1 : 0);
