/*
 * Stand-alone driver: MmSearchMatches on a 5v5 queue (skill difference
 * 50 + 50 every 10 s up to 400, latency 100/120/150 ms on three regions)
 * over N tickets (skill N(1000, 400), latencies N(70, 20), ages n % 120 s),
 * timed, with a hash and optionally a dump of the matches.
 *   ./search N runs [dump-file]      (FRAC=1: non-integer and negative skills)
 * The random numbers are not the bench's (xorshift, not setseed), so the
 * figures are close to the bench's, not equal.
 */
#include "postgres.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "match_search.h"

static uint64 rng = 0x9E3779B97F4A7C15ULL;
static double
Uniform(void)
{
	rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}
static double
Normal(double mu, double sd)
{
	return round(mu + sd * sqrt(-2 * log(1 - Uniform())) * cos(2 * M_PI * Uniform()));
}

typedef struct Gen { int n; double skill, lat[3]; } Gen;
static int CmpGen(const void *a, const void *b)
{
	const Gen *x = a, *y = b;
	int ax = x->n % 120, ay = y->n % 120;
	if (ax != ay) return ay - ax;		/* older (larger age) first */
	return x->n - y->n;
}

int
main(int argc, char **argv)
{
	int			N = argc > 1 ? atoi(argv[1]) : 100000;
	int			reps = argc > 2 ? atoi(argv[2]) : 1;
	const char *dump = argc > 3 ? argv[3] : NULL;
	MmQueueConfig config = {0};
	MmTeamConfig teams[2] = {{"red", 5, 5}, {"blue", 5, 5}};
	MmRuleConfig rules[2] = {{0}};
	double		steps[2] = {120, 150};
	bool		step_off[2] = {false, false};
	MmRuleContext ctx;
	char	   *regions[3] = {"eu", "us", "asia"};
	Gen		   *gen = malloc(sizeof(Gen) * N);
	MmTicket   *tickets = calloc(N, sizeof(MmTicket));
	double		best = 1e9;

	config.match_min = config.match_max = 10;
	config.nteams = 2;
	config.teams = teams;
	config.nrules = 2;
	config.rules = rules;
	rules[0].name = "skill"; rules[0].type = MM_RULE_DIFFERENCE; rules[0].weight = 1;
	rules[0].seconds_until_optional = -1; rules[0].threshold = 50;
	rules[0].expansion.kind = MM_EXPANSION_LINEAR; rules[0].expansion.every_seconds = 10;
	rules[0].expansion.delta = 50; rules[0].expansion.limit = 400;
	rules[1].name = "ping"; rules[1].type = MM_RULE_LATENCY; rules[1].weight = 1;
	rules[1].seconds_until_optional = -1; rules[1].threshold = 100;
	rules[1].expansion.kind = MM_EXPANSION_CUSTOM; rules[1].expansion.every_seconds = 20;
	rules[1].expansion.nsteps = 2; rules[1].expansion.steps = steps; rules[1].expansion.step_off = step_off;
	ctx.config = &config; ctx.nregions = 3; ctx.regions_allocated = 3; ctx.regions = regions;

	for (int i = 0; i < N; i++)
	{
		gen[i].n = i + 1;
		gen[i].skill = Normal(1000, 400);
		if (getenv("FRAC"))
			gen[i].skill = gen[i].skill * 0.37 - 300 + (i % 7 == 0 ? -0.0 : 0.0) + (i % 5) * 0.1;
		for (int r = 0; r < 3; r++)
			gen[i].lat[r] = Max(1, Normal(70, 20));
	}
	qsort(gen, N, sizeof(Gen), CmpGen);
	for (int i = 0; i < N; i++)
	{
		MmTicket   *t = &tickets[i];
		MmRuleValue *v = calloc(2, sizeof(MmRuleValue));

		t->id = gen[i].n;
		t->age_seconds = gen[i].n % 120;
		t->nplayers = 1;
		t->values = v;
		v[0].kind = MM_VALUE_PRESENT;
		v[0].number = gen[i].skill;
		v[0].player_values = malloc(sizeof(double));
		v[0].player_values[0] = gen[i].skill;
		v[1].kind = MM_VALUE_PRESENT;
		v[1].nregions = 3;
		v[1].regions = malloc(sizeof(MmRegionLatency) * 3);
		for (int r = 0; r < 3; r++)
		{
			v[1].regions[r].region = r;
			v[1].regions[r].ms = gen[i].lat[r];
		}
	}

	for (int rep = 0; rep < reps; rep++)
	{
		struct timespec a, b;
		MmSearchResult *res;
		uint64		h = 1469598103934665603ULL;
		FILE	   *f = (dump && rep == 0) ? fopen(dump, "w") : NULL;

		clock_gettime(CLOCK_MONOTONIC, &a);
		res = MmSearchMatches(&ctx, tickets, N);
		clock_gettime(CLOCK_MONOTONIC, &b);
		for (int m = 0; m < res->nmatches; m++)
		{
			MmFoundMatch *fm = &res->matches[m];

			if (f) fprintf(f, "%d r%d q%.17g", m, fm->region, fm->quality);
			for (int k = 0; k < fm->ntickets; k++)
			{
				h = (h ^ (uint64) (fm->tickets[k] * 2 + fm->ticket_team[k])) * 1099511628211ULL;
				if (f) fprintf(f, " %d:%d", fm->tickets[k], fm->ticket_team[k]);
			}
			if (f) fprintf(f, " s%d,%d\n", fm->rule_steps[0].step, fm->rule_steps[1].step);
			h = (h ^ (uint64) (fm->quality * 1e12)) * 1099511628211ULL;
		}
		if (f) fclose(f);
		double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
		best = Min(best, ms);
		printf("run %d: %d matches, hash %016llx, %.1f ms\n", rep, res->nmatches, (unsigned long long) h, ms);
	}
	printf("best %.1f ms\n", best);
	return 0;
}
