/*
 * Differential test: MmBalanceTeams against a reference version (linked as
 * MmBalanceTeamsOld, see the Makefile) on random inputs: 2..18 players, 2..4
 * teams, free or exact sizes (some invalid), with or without parties, integer,
 * decimal, tied and near-tied ratings (0.1 + 0.2 style), -0.0, NaN, Infinity.
 * Any difference in the result, the team of any player or the bits of the
 * spread is a mismatch.   ./balance_diff cases
 */
#include "postgres.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "team_balance.h"

extern bool MmBalanceTeamsOld(const MmBalanceInput *input, int *team_of, double *spread);

static uint64 rng = 88172645463325252ULL;
static uint64 Next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static double U(void) { return ((Next() >> 11) + 0.5) / 9007199254740992.0; }

int
main(int argc, char **argv)
{
	long		cases = argc > 1 ? atol(argv[1]) : 100000;
	long		bad = 0, fast = 0;
	double		ratings[MM_BALANCE_MAX_PLAYERS];
	int			party[MM_BALANCE_MAX_PLAYERS];
	int			sizes[MM_BALANCE_MAX_PLAYERS];

	for (long c = 0; c < cases; c++)
	{
		int			n = 2 + Next() % 17;		/* 2..18 */
		int			k = (Next() % 4 == 0) ? 2 + Next() % 3 : 2;
		int			kind = Next() % 6;
		bool		use_party = Next() % 3 == 0;
		bool		use_sizes = Next() % 2 == 0;
		int			a[MM_BALANCE_MAX_PLAYERS], b[MM_BALANCE_MAX_PLAYERS];
		double		sa = -1, sb = -1;
		bool		ra, rb;
		MmBalanceInput in;

		if (k > n) k = n;
		for (int p = 0; p < n; p++)
		{
			switch (kind)
			{
				case 0: ratings[p] = round(1000 + 400 * sqrt(-2 * log(U())) * cos(2 * M_PI * U())); break;
				case 1: ratings[p] = (double) (Next() % 5); break;			/* many ties */
				case 2: ratings[p] = 1000 + U() * 1000; break;				/* decimals */
				case 3: ratings[p] = (Next() % 3) * 0.1 + (Next() % 2) * 0.2; break;	/* rounding ties */
				case 4: ratings[p] = (Next() % 2 ? -1.0 : 1.0) * (Next() % 1000) * 1e-3; break;
				default: ratings[p] = (Next() % 4 == 0) ? -0.0 : (double) (Next() % 3) - 1; break;
			}
			party[p] = use_party ? (int) (Next() % (n + 1)) : (int) p * 7;
		}
		if (Next() % 50 == 0)
			ratings[Next() % n] = (Next() % 2) ? NAN : INFINITY;
		if (use_sizes)
		{
			int			left = n;

			for (int t = 0; t < k; t++)
			{
				sizes[t] = t == k - 1 ? left : 1 + (int) (Next() % Max(1, left - (k - 1 - t)));
				if (Next() % 3 == 0 && t < k - 1)
					sizes[t] = left / (k - t);
				left -= sizes[t];
			}
			if (Next() % 40 == 0)
				sizes[0] += 1;		/* invalid */
		}
		in.n = n;
		in.ratings = ratings;
		in.party = (use_party || Next() % 2) ? party : NULL;
		in.team_count = k;
		in.team_size = use_sizes ? sizes : NULL;
		ra = MmBalanceTeamsOld(&in, a, &sa);
		rb = MmBalanceTeams(&in, b, &sb);
		if (k == 2 && !use_party) fast++;
		if (ra != rb || (ra && (memcmp(a, b, sizeof(int) * n) != 0 || memcmp(&sa, &sb, sizeof(double)) != 0)))
		{
			if (bad++ < 10)
			{
				printf("MISMATCH case %ld n=%d k=%d kind=%d ra=%d rb=%d sa=%.17g sb=%.17g\n", c, n, k, kind, ra, rb, sa, sb);
				for (int p = 0; p < n; p++) printf(" %.17g/%d:%d:%d", ratings[p], in.party ? party[p] : -1, a[p], b[p]);
				printf("\n");
			}
		}
	}
	printf("%ld cases (%ld two-team solo), %ld mismatches\n", cases, fast, bad);
	return bad != 0;
}
