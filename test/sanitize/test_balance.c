/*
 * test_balance: MmBalanceTeams (src/team_balance.c) on seeded random inputs.
 *
 *   ./test_balance [cases] [seed]
 *
 * Differential: two teams of solo players up to MM_BALANCE_EXACT_MAX take a
 * fast path that says it gives the general code's answer exactly; the
 * general code is built from the same source with that path taken out
 * (MmBalanceTeamsGeneral, see the Makefile) and both must agree on the
 * result, every player's team and the bits of the spread.
 *
 * Oracle: up to a few hundred thousand assignments an exhaustive search
 * (here, independent of team_balance.c) gives the optimum, and the answer
 * must reach it: with free sizes the most even sizes the parties allow, then
 * the smallest spread, within the balancer's tolerance eps = 1e-9 (sum of
 * |ratings| + 1) plus rounding.  Feasibility must agree too (false exactly
 * when no assignment exists).
 *
 * Every answer: valid teams (exact sizes met, or every team non-empty),
 * parties on one team, the spread it reports equal to the teams' totals,
 * labels normalised as team_balance.h documents, the same answer on a second
 * call.  Inputs: 1..MM_BALANCE_EXACT_MAX players (some up to 40 for the
 * heuristic), 2..4 teams, parties, free, exact and invalid sizes, ties,
 * decimals, -0.0, huge values, NaN and Infinity (refused).
 */
#include "postgres.h"

#include "sanitize_test.h"
#include "team_balance.h"

extern bool MmBalanceTeamsGeneral(const MmBalanceInput *input, int *team_of, double *spread);

#define MAXP MM_BALANCE_MAX_PLAYERS

/* Brute-force leaves allowed per case (k^units / k! with free sizes). */
#define ORACLE_LIMIT 300000.0

typedef struct Oracle
{
	int			k;
	int			units;
	double		unit_total[MAXP];
	int			unit_size[MAXP];
	const int  *cap;			/* exact sizes, or NULL */
	/* search state */
	int			size[4];
	double		total[4];
	int			used;			/* free sizes: teams used so far (symmetry) */
	/* best */
	bool		found;
	int			best_diff;		/* size difference (free sizes) */
	double		best_spread;
} Oracle;

static void
OracleSearch(Oracle *o, int u)
{
	if (u == o->units)
	{
		int			lo = o->size[0],
					hi = o->size[0];
		double		tlo = o->total[0],
					thi = o->total[0];
		int			diff;
		double		spread;

		for (int t = 1; t < o->k; t++)
		{
			lo = Min(lo, o->size[t]);
			hi = Max(hi, o->size[t]);
			tlo = Min(tlo, o->total[t]);
			thi = Max(thi, o->total[t]);
		}
		if (lo < 1)
			return;
		if (o->cap)
		{
			for (int t = 0; t < o->k; t++)
				if (o->size[t] != o->cap[t])
					return;
			diff = 0;
		}
		else
			diff = hi - lo;
		spread = thi - tlo;
		if (!o->found || diff < o->best_diff ||
			(diff == o->best_diff && spread < o->best_spread))
		{
			o->found = true;
			o->best_diff = diff;
			o->best_spread = spread;
		}
		return;
	}
	for (int t = 0; t < o->k; t++)
	{
		double		saved;

		if (o->cap && o->size[t] + o->unit_size[u] > o->cap[t])
			continue;
		/* free sizes: teams are interchangeable, open them in order */
		if (!o->cap && t > o->used)
			break;
		saved = o->total[t];
		o->size[t] += o->unit_size[u];
		o->total[t] += o->unit_total[u];
		if (!o->cap && t == o->used)
		{
			o->used++;
			OracleSearch(o, u + 1);
			o->used--;
		}
		else
			OracleSearch(o, u + 1);
		o->size[t] -= o->unit_size[u];
		o->total[t] = saved;
	}
}

/* Units of the input (players with one party id), in first-player order. */
static int
Units(const MmBalanceInput *in, int *unit_of, double *unit_total, int *unit_size)
{
	int			units = 0;

	for (int p = 0; p < in->n; p++)
	{
		int			u = -1;

		if (in->party)
			for (int q = 0; q < p && u < 0; q++)
				if (in->party[q] == in->party[p])
					u = unit_of[q];
		if (u < 0)
		{
			u = units++;
			unit_total[u] = 0;
			unit_size[u] = 0;
		}
		unit_of[p] = u;
		unit_total[u] += in->ratings[p];
		unit_size[u]++;
	}
	return units;
}

static double
Factorial(int k)
{
	double		f = 1;

	for (int i = 2; i <= k; i++)
		f *= i;
	return f;
}

static void
Describe(char *buf, size_t len, const MmBalanceInput *in)
{
	size_t		off = 0;

	off += snprintf(buf + off, len - off, "n=%d k=%d sizes=", in->n, in->team_count);
	if (in->team_size)
		for (int t = 0; t < in->team_count && off < len; t++)
			off += snprintf(buf + off, len - off, "%s%d", t ? "," : "", in->team_size[t]);
	else
		off += snprintf(buf + off, len - off, "free");
	off += snprintf(buf + off, len - off, " players(rating/party)=");
	for (int p = 0; p < in->n && off < len; p++)
		off += snprintf(buf + off, len - off, " %.17g/%d", in->ratings[p],
						in->party ? in->party[p] : -1);
}

static char desc[16384];

/* Checks one answer of MmBalanceTeams. */
static void
CheckAnswer(long c, const MmBalanceInput *in, const int *team_of, double spread,
			const int *unit_of)
{
	int			size[MAXP];
	double		total[MAXP];
	int			k = in->team_count;
	double		hi = -INFINITY,
				lo = INFINITY;

	for (int t = 0; t < k; t++)
	{
		size[t] = 0;
		total[t] = 0;
	}
	for (int p = 0; p < in->n; p++)
	{
		if (team_of[p] < 0 || team_of[p] >= k)
		{
			CHECK(false, "case %ld: player %d on team %d: %s", c, p, team_of[p], desc);
			return;
		}
		size[team_of[p]]++;
		total[team_of[p]] += in->ratings[p];
	}
	for (int t = 0; t < k; t++)
	{
		hi = Max(hi, total[t]);
		lo = Min(lo, total[t]);
		if (in->team_size)
			CHECK(size[t] == in->team_size[t], "case %ld: team %d has %d players, wanted %d: %s",
				  c, t, size[t], in->team_size[t], desc);
		else
			CHECK(size[t] >= 1, "case %ld: team %d is empty: %s", c, t, desc);
	}
	/* same summation order as the balancer's: the same bits */
	CHECK(memcmp(&spread, &(double) {hi - lo}, sizeof(double)) == 0 || (isnan(spread) && isnan(hi - lo)),
		  "case %ld: reported spread %.17g, teams give %.17g: %s", c, spread, hi - lo, desc);
	/* parties stay together */
	for (int p = 0; p < in->n; p++)
		for (int q = 0; q < p; q++)
			if (unit_of[p] == unit_of[q])
				CHECK(team_of[p] == team_of[q], "case %ld: party of players %d and %d split: %s",
					  c, q, p, desc);
	/* labels: first appearance order, among teams of the same size rule */
	{
		bool		seen[MAXP] = {false};

		for (int p = 0; p < in->n; p++)
		{
			int			t = team_of[p];

			if (seen[t])
				continue;
			seen[t] = true;
			for (int l = 0; l < t; l++)
				if (!in->team_size || in->team_size[l] == in->team_size[t])
					CHECK(seen[l], "case %ld: team %d appears before team %d (labels not normalised): %s",
						  c, t, l, desc);
		}
	}
}

int
main(int argc, char **argv)
{
	long		cases = 10000;
	uint64_t	seed = 1;
	long		fast = 0,
				oracle = 0,
				refused = 0;
	double		started = CpuSeconds();
	char		summary[200];

	TestStart("test_balance", argc, argv, &cases, &seed);

	for (long c = 0; c < cases; c++)
	{
		double		ratings[MAXP];
		int			party[MAXP];
		int			sizes[MAXP];
		int			a[MAXP],
					b[MAXP],
					again[MAXP];
		double		sa = -1,
					sb = -1,
					sagain = -1;
		bool		ra,
					rb,
					ragain;
		int			unit_of[MAXP];
		double		unit_total[MAXP];
		int			unit_size[MAXP];
		int			units;
		MmBalanceInput in;
		int			n,
					k,
					kind = RandInt(9),
					party_mode = RandInt(4);
		bool		use_sizes = Chance(2);
		bool		solo;
		double		abs_total = 0;

		/* two teams most often (the tick's common case and the fast path) */
		k = Chance(2) ? 2 : RandRange(3, 4);
		if (Chance(25))
			n = RandRange(17, 40);		/* heuristic: validity only */
		else if (k == 2)
			n = RandRange(1, MM_BALANCE_EXACT_MAX);
		else
			n = RandRange(1, k == 3 ? 12 : 10);
		if (Chance(100))
			k = n + 1;					/* more teams than players: refused */

		for (int p = 0; p < n; p++)
		{
			switch (kind)
			{
				case 0: ratings[p] = round(Normal(1000, 400)); break;
				case 1: ratings[p] = (double) RandInt(5); break;		/* many ties */
				case 2: ratings[p] = 1000 + Uniform() * 1000; break;	/* decimals */
				case 3: ratings[p] = RandInt(3) * 0.1 + RandInt(2) * 0.2; break; /* rounding ties */
				case 4: ratings[p] = (Chance(2) ? -1.0 : 1.0) * RandInt(1000) * 1e-3; break;
				case 5: ratings[p] = Chance(4) ? -0.0 : (double) RandInt(3) - 1; break;
				case 6: ratings[p] = Normal(0, 1) * 1e12; break;		/* large */
				case 7: ratings[p] = (Chance(2) ? 1 : -1) * Uniform() * 1e300; break;	/* near overflow */
				default: ratings[p] = Normal(1500, 300) + RandInt(100) * 1e-7; break;
			}
			switch (party_mode)
			{
				case 0: party[p] = p * 7; break;						/* solo, with ids */
				default: party[p] = RandInt(n / 2 + 1); break;			/* parties */
			}
		}
		if (Chance(60) && n > 0)
			ratings[RandInt(n)] = Chance(3) ? NAN : (Chance(2) ? INFINITY : -INFINITY);
		if (use_sizes && k <= n)
		{
			int			left = n;

			for (int t = 0; t < k; t++)
			{
				sizes[t] = t == k - 1 ? left : 1 + RandInt(Max(1, left - (k - 1 - t)));
				if (Chance(2) && t < k - 1)
					sizes[t] = left / (k - t);
				left -= sizes[t];
			}
			if (Chance(40))
				sizes[RandInt(k)] += Chance(2) ? 1 : -1;	/* invalid */
		}
		else
			use_sizes = false;

		in.n = n;
		in.ratings = ratings;
		in.party = party_mode == 3 ? NULL : party;
		in.team_count = k;
		in.team_size = use_sizes ? sizes : NULL;
		Describe(desc, sizeof(desc), &in);

		units = Units(&in, unit_of, unit_total, unit_size);
		solo = units == n;
		for (int p = 0; p < n; p++)
			abs_total += fabs(ratings[p]);

		ra = MmBalanceTeams(&in, a, &sa);
		ragain = MmBalanceTeams(&in, again, &sagain);
		CHECK(ra == ragain && (!ra || (memcmp(a, again, sizeof(int) * n) == 0 &&
									   memcmp(&sa, &sagain, sizeof(double)) == 0)),
			  "case %ld: a second call gave another answer: %s", c, desc);

		/* the fast path against the general code it replaces */
		if (k == 2 && n <= MM_BALANCE_EXACT_MAX && solo)
		{
			fast++;
			rb = MmBalanceTeamsGeneral(&in, b, &sb);
			if (ra != rb || (ra && (memcmp(a, b, sizeof(int) * n) != 0 ||
									memcmp(&sa, &sb, sizeof(double)) != 0)))
			{
				char		teams[2048];
				size_t		off = 0;

				for (int p = 0; p < n && off < sizeof(teams); p++)
					off += snprintf(teams + off, sizeof(teams) - off, " %d:%d",
									ra ? a[p] : -1, rb ? b[p] : -1);
				CHECK(false, "case %ld: fast path %d spread %.17g, general %d spread %.17g, "
					  "teams fast:general%s: %s", c, ra, sa, rb, sb, teams, desc);
			}
		}

		if (!ra)
		{
			bool		finite = true;

			refused++;
			for (int p = 0; p < n; p++)
				finite = finite && isfinite(ratings[p]);
			/* documented refusals need no oracle; solo free sizes always fit */
			if (finite && k >= 2 && k <= n && !use_sizes && solo)
				CHECK(false, "case %ld: solo players with free sizes refused: %s", c, desc);
		}
		else
		{
			for (int p = 0; p < n; p++)
				CHECK(isfinite(ratings[p]), "case %ld: accepted a non-finite rating: %s", c, desc);
			CheckAnswer(c, &in, a, sa, unit_of);
			/* solo players, free sizes: sizes differ by at most one */
			if (solo && !use_sizes)
			{
				int			cnt[MAXP] = {0},
							lo = n,
							hi = 0;

				for (int p = 0; p < n; p++)
					cnt[a[p]]++;
				for (int t = 0; t < k; t++)
				{
					lo = Min(lo, cnt[t]);
					hi = Max(hi, cnt[t]);
				}
				CHECK(hi - lo <= 1, "case %ld: solo sizes differ by %d: %s", c, hi - lo, desc);
			}
		}

		/* the optimum, by exhaustive search, where it is cheap enough */
		if (n <= MM_BALANCE_EXACT_MAX && k >= 2 && k <= n && abs_total < 1e300 &&
			pow(k, units) / (use_sizes ? 1 : Factorial(k)) <= ORACLE_LIMIT)
		{
			Oracle		o;

			memset(&o, 0, sizeof(o));
			o.k = k;
			o.units = units;
			memcpy(o.unit_total, unit_total, sizeof(double) * units);
			memcpy(o.unit_size, unit_size, sizeof(int) * units);
			o.cap = use_sizes ? sizes : NULL;
			if (use_sizes)
			{
				int			sum = 0;

				for (int t = 0; t < k; t++)
					sum += sizes[t];
				if (sum != n)
				{
					CHECK(!ra, "case %ld: accepted sizes that do not add up to n: %s", c, desc);
					continue;
				}
			}
			OracleSearch(&o, 0);
			oracle++;
			CHECK(ra == o.found, "case %ld: balancer says %s, exhaustive search %s: %s", c,
				  ra ? "feasible" : "infeasible", o.found ? "feasible" : "infeasible", desc);
			if (ra && o.found)
			{
				double		eps = 1e-9 * (abs_total + 1.0);
				double		rounding = 1e-12 * (abs_total + 1.0);
				int			cnt[MAXP] = {0},
							lo = n,
							hi = 0;

				for (int p = 0; p < n; p++)
					cnt[a[p]]++;
				for (int t = 0; t < k; t++)
				{
					lo = Min(lo, cnt[t]);
					hi = Max(hi, cnt[t]);
				}
				if (!use_sizes)
					CHECK(hi - lo == o.best_diff, "case %ld: sizes differ by %d, %d is possible: %s",
						  c, hi - lo, o.best_diff, desc);
				CHECK(sa <= o.best_spread + eps + rounding,
					  "case %ld: spread %.17g, the optimum is %.17g: %s", c, sa, o.best_spread, desc);
				CHECK(sa >= o.best_spread - rounding,
					  "case %ld: spread %.17g below the exhaustive optimum %.17g: %s", c, sa,
					  o.best_spread, desc);
			}
		}
	}
	snprintf(summary, sizeof(summary),
			 "%ld cases (%ld on the two-team fast path, %ld against the exhaustive optimum, %ld refused)",
			 cases, fast, oracle, refused);
	return TestFinish(seed, started, summary);
}
