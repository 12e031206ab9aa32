/*
 * team_balance.c
 *	  Splitting players into teams of fair total strength (pure C, no SPI).
 *
 * Players with the same party id form one "unit" that always goes to one
 * team.  The objective is the spread between the strongest and the weakest
 * team total (sum of ratings); team sizes are either given exactly or, when
 * free, first made as equal as the parties allow and only then is the spread
 * minimised.
 *
 * Up to MM_BALANCE_EXACT_MAX players a depth-first branch and bound over the
 * units (sorted by strength, strongest first) proves the optimum; it is seeded
 * with the heuristic's answer and prunes with a bound computed from the
 * ratings still to place.  Above that, a deterministic heuristic places the
 * parties (a small feasibility search so that exact sizes are always met when
 * they can be), fills the rest greedily (strongest player to the weakest team
 * with room) and then swaps same-sized units between teams while that lowers
 * the spread (or, at equal spread, the sum of squared team totals).
 *
 * Two teams of solo players (the tick's 5v5 matches) take a fast path that
 * gives the same answers; see BalancePairExact().
 *
 * Everything lives in one stack-allocated Balancer (about 20 kB); nothing is
 * palloc'd, so the code can be compiled and tested outside the server.
 */
#include "postgres.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "miscadmin.h"

#include "team_balance.h"

/* Search nodes allowed to the party-placement feasibility search. */
#define MM_BALANCE_PLACEMENT_BUDGET 2000000L

/*
 * Search nodes between two CHECK_FOR_INTERRUPTS() (a power of two): often
 * enough for statement_timeout and pg_cancel_backend() to act at once,
 * rarely enough to cost nothing.
 */
#define MM_BALANCE_INTERRUPT_MASK 4095

/* Passes of the swap improvement (each pass is O(units^2)); a safety cap. */
#define MM_BALANCE_MAX_SWAP_PASSES 1000

typedef struct BalanceUnit
{
	double		total;			/* sum of the members' ratings */
	int			size;			/* members */
	int			first;			/* lowest member index: deterministic tie-break */
} BalanceUnit;

typedef struct Balancer
{
	int			n;				/* players */
	int			k;				/* teams */
	int			unit_count;
	BalanceUnit units[MM_BALANCE_MAX_PLAYERS];	/* strongest first */
	int			unit_of[MM_BALANCE_MAX_PLAYERS];	/* player -> unit */
	double		rating_total;
	double		eps;			/* spreads closer than this count as equal */

	/*
	 * Team t gets exactly cap[t] players: the given sizes, or (free sizes)
	 * each candidate size vector in turn.  exact_sizes says the sizes were
	 * given, so team numbers carry meaning.
	 */
	bool		exact_sizes;
	int			cap[MM_BALANCE_MAX_PLAYERS];

	/* Current partial assignment. */
	int			team_size[MM_BALANCE_MAX_PLAYERS];
	double		team_total[MM_BALANCE_MAX_PLAYERS];
	int			assign[MM_BALANCE_MAX_PLAYERS]; /* unit -> team, -1 if none */

	/* Best complete assignment so far. */
	bool		found;
	double		best_spread;
	int			best_assign[MM_BALANCE_MAX_PLAYERS];

	long		placement_nodes;
	long		search_nodes;	/* BranchAndBound() calls, for interrupts */

	/*
	 * Exact search only: for each depth d, the ratings of the players in
	 * units d.. sorted ascending, as prefix sums (rem_prefix[d][m] = sum of
	 * the m weakest).
	 */
	int			rem_count[MM_BALANCE_EXACT_MAX + 1];
	double		rem_prefix[MM_BALANCE_EXACT_MAX + 1][MM_BALANCE_EXACT_MAX + 1];
} Balancer;

/* qsort order of units: strongest first, then larger, then by first member. */
static int
CompareUnits(const void *a, const void *b)
{
	const BalanceUnit *ua = (const BalanceUnit *) a;
	const BalanceUnit *ub = (const BalanceUnit *) b;

	if (ua->total != ub->total)
		return ua->total > ub->total ? -1 : 1;
	if (ua->size != ub->size)
		return ua->size > ub->size ? -1 : 1;
	return ua->first - ub->first;
}

static int
CompareIntsDescending(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x < y) - (x > y);
}

static int
CompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Spread of the current team totals. */
static double
CurrentSpread(const Balancer *b)
{
	double		hi = b->team_total[0];
	double		lo = b->team_total[0];

	for (int t = 1; t < b->k; t++)
	{
		hi = Max(hi, b->team_total[t]);
		lo = Min(lo, b->team_total[t]);
	}
	return hi - lo;
}

static void
ClearTeams(Balancer *b)
{
	for (int t = 0; t < b->k; t++)
	{
		b->team_size[t] = 0;
		b->team_total[t] = 0.0;
	}
	for (int u = 0; u < b->unit_count; u++)
		b->assign[u] = -1;
}

static void
PlaceUnit(Balancer *b, int u, int t)
{
	b->assign[u] = t;
	b->team_size[t] += b->units[u].size;
	b->team_total[t] += b->units[u].total;
}

static void
RemoveUnit(Balancer *b, int u)
{
	int			t = b->assign[u];

	b->assign[u] = -1;
	b->team_size[t] -= b->units[u].size;
	b->team_total[t] -= b->units[u].total;
}

/* Keeps the current assignment when it beats the best one. */
static void
OfferSolution(Balancer *b)
{
	double		spread = CurrentSpread(b);

	if (!b->found || spread < b->best_spread - b->eps)
	{
		b->found = true;
		b->best_spread = spread;
		memcpy(b->best_assign, b->assign, sizeof(int) * b->unit_count);
	}
}

/* Orders team indices by ascending current total (stable on index). */
static void
TeamsByTotal(const Balancer *b, int *order)
{
	for (int t = 0; t < b->k; t++)
	{
		int			j = t;

		while (j > 0 && b->team_total[order[j - 1]] > b->team_total[t])
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = t;
	}
}

/*
 * Whether the parties from idx on of the size of the one placed on team
 * from_team before them still fit the teams numbered from_team and up,
 * counting whole parties per team: without it the search tried every way
 * of filling the teams before finding that the last ones overflow.
 */
static bool
SameSizeFit(const Balancer *b, const int *parties, int count, int idx, int from_team)
{
	int			size;
	int			left = 0;
	int			slots = 0;

	if (idx == 0 || idx >= count)
		return true;
	size = b->units[parties[idx - 1]].size;
	for (int i = idx; i < count && b->units[parties[i]].size == size; i++)
		left++;
	for (int t = from_team; t < b->k && slots < left; t++)
		slots += (b->cap[t] - b->team_size[t]) / size;
	return slots >= left;
}

/*
 * Feasibility search for the multi-player parties under the capacities cap[]:
 * places parties[idx..] (largest first), trying the weakest team first and
 * only one team per distinct remaining capacity (teams with equal room are
 * interchangeable for feasibility).  Parties of one size are interchangeable
 * too: each goes to a team numbered at least from_team, the team of the
 * previous party of its size, so that no placement is tried in every order
 * (16 parties of 3 in teams that cannot hold them were 3^16 tries).  Solo
 * players always fit afterwards, because the capacities add up to n.
 */
static bool
PlacePartiesFrom(Balancer *b, const int *parties, int count, int idx, int from_team)
{
	int			order[MM_BALANCE_MAX_PLAYERS];
	int			candidate_room[MM_BALANCE_MAX_PLAYERS];
	int			candidate_team[MM_BALANCE_MAX_PLAYERS];
	int			candidates = 0;
	int			u;
	double		saved_total;

	if (idx == count)
		return true;
	if (++b->placement_nodes > MM_BALANCE_PLACEMENT_BUDGET)
		return false;
	if ((b->placement_nodes & MM_BALANCE_INTERRUPT_MASK) == 0)
		CHECK_FOR_INTERRUPTS();

	u = parties[idx];
	/*
	 * One team per distinct room: of teams with equal room, the lowest
	 * numbered (it leaves the most to the next party of this size)
	 */
	for (int t = 0; t < b->k; t++)
	{
		int			room = b->cap[t] - b->team_size[t];
		bool		seen = false;

		if (room < b->units[u].size || t < from_team)
			continue;
		for (int j = 0; j < candidates && !seen; j++)
			seen = candidate_room[j] == room;
		if (!seen)
		{
			candidate_room[candidates] = room;
			candidate_team[candidates++] = t;
		}
	}
	/* the weakest of them first */
	TeamsByTotal(b, order);
	for (int i = 0; i < b->k; i++)
	{
		int			t = order[i];
		bool		chosen = false;

		for (int j = 0; j < candidates && !chosen; j++)
			chosen = candidate_team[j] == t;
		if (!chosen)
			continue;

		saved_total = b->team_total[t];
		PlaceUnit(b, u, t);
		if (SameSizeFit(b, parties, count, idx + 1, t) &&
			PlacePartiesFrom(b, parties, count, idx + 1,
							 idx + 1 < count && b->units[parties[idx + 1]].size == b->units[u].size ? t : 0))
			return true;
		RemoveUnit(b, u);
		b->team_total[t] = saved_total;
	}
	return false;
}

/*
 * Heuristic under exact capacities cap[]: parties by the feasibility search,
 * then solo players greedily.  Leaves a complete assignment in assign[] and
 * returns true, or false when the parties cannot be placed.
 */
static bool
GreedyFill(Balancer *b)
{
	int			parties[MM_BALANCE_MAX_PLAYERS] = {0};
	int			party_count = 0;

	ClearTeams(b);
	for (int u = 0; u < b->unit_count; u++)
		if (b->units[u].size > 1)
			parties[party_count++] = u;
	/* largest parties first (stable insertion sort keeps strength order) */
	for (int i = 1; i < party_count; i++)
	{
		int			p = parties[i];
		int			j = i;

		while (j > 0 && b->units[parties[j - 1]].size < b->units[p].size)
		{
			parties[j] = parties[j - 1];
			j--;
		}
		parties[j] = p;
	}
	if (!PlacePartiesFrom(b, parties, party_count, 0, 0))
		return false;

	/* solo players, strongest first, to the weakest team that has room */
	for (int u = 0; u < b->unit_count; u++)
	{
		int			best = -1;

		if (b->units[u].size > 1)
			continue;
		for (int t = 0; t < b->k; t++)
			if (b->team_size[t] < b->cap[t] &&
				(best < 0 || b->team_total[t] < b->team_total[best]))
				best = t;
		if (best < 0)
			return false;		/* cannot happen: capacities add up to n */
		PlaceUnit(b, u, best);
	}
	return true;
}

/*
 * The three strongest and three weakest teams, so that the spread after
 * changing two teams can be computed in constant time.
 */
typedef struct TeamExtremes
{
	int			top[3];
	int			bottom[3];
} TeamExtremes;

static void
FindExtremes(const Balancer *b, TeamExtremes *x)
{
	for (int i = 0; i < 3; i++)
		x->top[i] = x->bottom[i] = -1;
	for (int t = 0; t < b->k; t++)
	{
		double		v = b->team_total[t];
		int			cur = t;

		for (int i = 0; i < 3 && cur >= 0; i++)
		{
			if (x->top[i] < 0 || v > b->team_total[x->top[i]])
			{
				int			tmp = x->top[i];

				x->top[i] = cur;
				cur = tmp;
				if (cur >= 0)
					v = b->team_total[cur];
			}
		}
		v = b->team_total[t];
		cur = t;
		for (int i = 0; i < 3 && cur >= 0; i++)
		{
			if (x->bottom[i] < 0 || v < b->team_total[x->bottom[i]])
			{
				int			tmp = x->bottom[i];

				x->bottom[i] = cur;
				cur = tmp;
				if (cur >= 0)
					v = b->team_total[cur];
			}
		}
	}
}

/*
 * Pairwise swaps of same-sized units between two teams, applied as soon as
 * one improves (spread first, then sum of squared totals), until a whole pass
 * finds none.  Sizes never change, so the size rules stay satisfied.
 */
static void
ImproveBySwaps(Balancer *b)
{
	double		sq_eps = b->eps * (fabs(b->rating_total) + 1.0);

	for (int pass = 0; pass < MM_BALANCE_MAX_SWAP_PASSES; pass++)
	{
		bool		improved = false;
		double		cur_spread = CurrentSpread(b);
		TeamExtremes x;

		CHECK_FOR_INTERRUPTS(); /* a pass is O(units^2) */
		FindExtremes(b, &x);
		for (int u = 0; u < b->unit_count; u++)
		{
			for (int v = u + 1; v < b->unit_count; v++)
			{
				int			ta = b->assign[u];
				int			tb = b->assign[v];
				double		delta,
							na,
							nb,
							hi,
							lo,
							spread,
							sq_change;

				if (ta == tb || b->units[u].size != b->units[v].size)
					continue;
				delta = b->units[v].total - b->units[u].total;
				if (delta == 0.0)
					continue;
				na = b->team_total[ta] + delta;
				nb = b->team_total[tb] - delta;

				/* extremes of the teams the swap leaves alone */
				hi = Max(na, nb);
				lo = Min(na, nb);
				for (int i = 0; i < 3; i++)
				{
					if (x.top[i] >= 0 && x.top[i] != ta && x.top[i] != tb)
					{
						hi = Max(hi, b->team_total[x.top[i]]);
						break;
					}
				}
				for (int i = 0; i < 3; i++)
				{
					if (x.bottom[i] >= 0 && x.bottom[i] != ta && x.bottom[i] != tb)
					{
						lo = Min(lo, b->team_total[x.bottom[i]]);
						break;
					}
				}
				spread = hi - lo;
				sq_change = na * na + nb * nb -
					b->team_total[ta] * b->team_total[ta] -
					b->team_total[tb] * b->team_total[tb];

				if (spread < cur_spread - b->eps ||
					(spread <= cur_spread + b->eps && sq_change < -sq_eps))
				{
					RemoveUnit(b, u);
					RemoveUnit(b, v);
					PlaceUnit(b, u, tb);
					PlaceUnit(b, v, ta);
					improved = true;
					cur_spread = CurrentSpread(b);
					FindExtremes(b, &x);
				}
			}
		}
		if (!improved)
			break;
	}
}

/*
 * Lower bound of the final spread below the current partial assignment at
 * depth d (units d.. still to place).  Team t still receives m = cap[t] -
 * size players; its final total lies between its total plus the m weakest and
 * plus the m strongest remaining ratings, and the strongest final total is at
 * least the average (the weakest at most).
 */
static double
SpreadLowerBound(const Balancer *b, int d)
{
	int			r = b->rem_count[d];
	const double *pre = b->rem_prefix[d];
	double		avg = b->rating_total / b->k;
	double		max_low = -INFINITY;
	double		min_high = INFINITY;

	for (int t = 0; t < b->k; t++)
	{
		int			m = b->cap[t] - b->team_size[t];

		max_low = Max(max_low, b->team_total[t] + pre[m]);
		min_high = Min(min_high, b->team_total[t] + (pre[r] - pre[r - m]));
	}
	return Max(max_low, avg) - Min(min_high, avg);
}

/* Depth-first branch and bound over units d.. under the capacities cap[]. */
static void
BranchAndBound(Balancer *b, int d)
{
	int			order[MM_BALANCE_EXACT_MAX];
	int			tried[MM_BALANCE_EXACT_MAX];
	int			tried_count = 0;
	int			size;
	double		saved_total;

	if ((++b->search_nodes & MM_BALANCE_INTERRUPT_MASK) == 0)
		CHECK_FOR_INTERRUPTS();
	if (d == b->unit_count)
	{
		OfferSolution(b);
		return;
	}
	if (SpreadLowerBound(b, d) >= b->best_spread - b->eps)
		return;

	size = b->units[d].size;
	TeamsByTotal(b, order);
	for (int i = 0; i < b->k; i++)
	{
		int			t = order[i];
		bool		same = false;

		if (b->team_size[t] + size > b->cap[t])
			continue;

		/*
		 * Symmetry: a team in exactly the same state as one already tried
		 * here (typically two empty teams of the same size) leads to
		 * mirror-image solutions.
		 */
		for (int j = 0; j < tried_count && !same; j++)
		{
			int			o = tried[j];

			same = b->team_size[o] == b->team_size[t] &&
				b->team_total[o] == b->team_total[t] &&
				b->cap[o] == b->cap[t];
		}
		if (same)
			continue;
		tried[tried_count++] = t;

		saved_total = b->team_total[t];
		PlaceUnit(b, d, t);
		BranchAndBound(b, d + 1);
		RemoveUnit(b, d);
		/* restore exactly: (x + y) - y need not equal x in floating point */
		b->team_total[t] = saved_total;
	}
}

/* Prefix sums of the remaining players' ratings at every depth (exact mode). */
static void
PrepareBounds(Balancer *b, const double *ratings)
{
	for (int d = 0; d <= b->unit_count; d++)
	{
		double		rest[MM_BALANCE_EXACT_MAX];
		int			r = 0;

		for (int p = 0; p < b->n; p++)
			if (b->unit_of[p] >= d)
				rest[r++] = ratings[p];
		qsort(rest, r, sizeof(double), CompareDoubles);
		b->rem_count[d] = r;
		b->rem_prefix[d][0] = 0.0;
		for (int m = 0; m < r; m++)
			b->rem_prefix[d][m + 1] = b->rem_prefix[d][m] + rest[m];
	}
}

/*
 * Solves under the capacities in cap[]: the heuristic, then (exact) the
 * branch and bound.  Returns false when the parties do not fit.
 */
static bool
SolveWithCapacities(Balancer *b, bool exact)
{
	if (!GreedyFill(b))
		return false;
	ImproveBySwaps(b);
	OfferSolution(b);
	if (exact)
	{
		ClearTeams(b);
		BranchAndBound(b, 0);
	}
	return true;
}

/*
 * Free sizes: enumerates team size vectors (non-increasing, every team at
 * least one player, largest minus smallest at most diff) and solves under
 * each in which the parties fit: all of them when exact, else only the first.
 * pos is the team being sized, left the players still to distribute.
 */
static void
TrySizeVectors(Balancer *b, int pos, int left, int diff, bool exact)
{
	int			teams_left = b->k - pos;
	int			upper = pos == 0 ? left : Min(b->cap[pos - 1], left);
	int			lower = pos == 0 ? 1 : Max(1, b->cap[0] - diff);

	if (++b->placement_nodes > MM_BALANCE_PLACEMENT_BUDGET)
		return;
	if ((b->placement_nodes & MM_BALANCE_INTERRUPT_MASK) == 0)
		CHECK_FOR_INTERRUPTS();
	if (teams_left == 1)
	{
		if (left >= lower && left <= upper)
		{
			b->cap[pos] = left;
			SolveWithCapacities(b, exact);
		}
		return;
	}
	/* most even first: the smallest possible largest team */
	for (int s = (left + teams_left - 1) / teams_left; s <= upper; s++)
	{
		int			rest_lower = pos == 0 ? Max(1, s - diff) : lower;

		if (s < lower)
			continue;
		/* the other teams must absorb the rest within [rest_lower, s] */
		if ((long) (teams_left - 1) * s < left - s ||
			(long) (teams_left - 1) * rest_lower > left - s)
			continue;
		b->cap[pos] = s;
		TrySizeVectors(b, pos + 1, left - s, diff, exact);
		if ((b->found && !exact) || b->placement_nodes > MM_BALANCE_PLACEMENT_BUDGET)
			return;
	}
}

/*
 * Capacities that the groups fit by construction: each group, largest
 * first, on the team with the fewest players so far (the lowest numbered of
 * them); every team gets one when there are at least as many groups.
 */
static void
LargestGroupsOnSmallestTeams(Balancer *b)
{
	int			sizes[MM_BALANCE_MAX_PLAYERS];

	for (int u = 0; u < b->unit_count; u++)
		sizes[u] = b->units[u].size;
	qsort(sizes, b->unit_count, sizeof(int), CompareIntsDescending);
	for (int t = 0; t < b->k; t++)
		b->cap[t] = 0;
	for (int u = 0; u < b->unit_count; u++)
	{
		int			smallest = 0;

		for (int t = 1; t < b->k; t++)
			if (b->cap[t] < b->cap[smallest])
				smallest = t;
		b->cap[smallest] += sizes[u];
	}
}

/*
 * Renumbers teams so that, among teams with the same size rule, the team of
 * the lowest-numbered player comes first: equivalent answers then look the
 * same.
 */
static void
NormaliseLabels(const Balancer *b, int *team_of)
{
	int			relabel[MM_BALANCE_MAX_PLAYERS];
	bool		used[MM_BALANCE_MAX_PLAYERS];

	for (int t = 0; t < b->k; t++)
	{
		relabel[t] = -1;
		used[t] = false;
	}
	for (int p = 0; p < b->n; p++)
	{
		int			t = team_of[p];

		if (relabel[t] >= 0)
			continue;
		/* the first unused label with the same size rule as t */
		for (int l = 0; l < b->k; l++)
		{
			if (!used[l] && (!b->exact_sizes || b->cap[l] == b->cap[t]))
			{
				relabel[t] = l;
				used[l] = true;
				break;
			}
		}
	}
	for (int p = 0; p < b->n; p++)
		team_of[p] = relabel[team_of[p]];
}

/*
 * The fast exact path: two teams, solo players only, at most
 * MM_BALANCE_EXACT_MAX players (a 5v5 match of solo tickets, the tick's
 * commonest case).  It runs the same steps as the general code (greedy fill,
 * pairwise swaps, then the branch and bound with the same visiting order,
 * symmetry rule, bound and acceptance test) with the same floating-point
 * operations in the same order, so it returns exactly the same answer,
 * without the bookkeeping that k teams and parties need (team orderings,
 * extremes, feasibility search, a sort per depth for the bounds).
 *
 * Before the branch and bound, a cheaper search over the splits (team 0's
 * members in rating order, pruned by prefix sums) counts the splits that
 * beat the heuristic's answer: none (the common case) means the answer is
 * the heuristic's, exactly one means it is that split, and otherwise their
 * smallest spread lets the branch and bound stop as soon as it reaches it.
 * These shortcuts only skip work whose outcome they prove, with a margin
 * far above rounding, so the answer stays the general code's.
 */
typedef struct PairBalancer
{
	int			n;				/* players = units, strongest first */
	double		rating[MM_BALANCE_EXACT_MAX];	/* by unit */
	int			cap[2];
	double		eps;
	double		avg;			/* rating_total / 2 */

	/*
	 * The ratings in ascending order as prefix sums: the units still to
	 * place at depth d are the n - d weakest, so prefix[m] (m <= n - d) is
	 * the sum of the m weakest of them.
	 */
	double		prefix[MM_BALANCE_EXACT_MAX + 1];
	/* the same in descending order (desc_prefix[m]: the m strongest) */
	double		desc_prefix[MM_BALANCE_EXACT_MAX + 1];
	double		rating_total;

	/* current partial assignment */
	int			size[2];
	double		total[2];
	int			assign[MM_BALANCE_EXACT_MAX];

	double		best_spread;
	int			best_assign[MM_BALANCE_EXACT_MAX];

	/*
	 * No split has a spread below this (the smallest spread over all splits,
	 * less a margin for rounding), so once best_spread - eps is at or below
	 * it no later leaf can be accepted and the search stops (done).
	 */
	double		spread_floor;
	bool		done;

	double		margin;			/* far above the rounding of sums of 16 ratings */
	bool		sums_finite;	/* abs_total < 1e300: no sum or difference of
								 * ratings overflows */
} PairBalancer;

/* Spread of two team totals, computed as CurrentSpread() does. */
static inline double
PairSpread(double t0, double t1)
{
	double		hi = t0;
	double		lo = t0;

	hi = Max(hi, t1);
	lo = Min(lo, t1);
	return hi - lo;
}

/* GreedyFill() and ImproveBySwaps() for two teams of solo players. */
static void
PairHeuristic(PairBalancer *b, double sq_eps)
{
	b->size[0] = b->size[1] = 0;
	b->total[0] = b->total[1] = 0.0;

	/* strongest first to the weaker team with room (ties: team 0) */
	for (int u = 0; u < b->n; u++)
	{
		int			t;

		if (b->size[0] < b->cap[0])
			t = (b->size[1] < b->cap[1] && b->total[1] < b->total[0]) ? 1 : 0;
		else
			t = 1;
		b->assign[u] = t;
		b->size[t]++;
		b->total[t] += b->rating[u];
	}

	for (int pass = 0; pass < MM_BALANCE_MAX_SWAP_PASSES; pass++)
	{
		bool		improved = false;
		double		cur_spread = PairSpread(b->total[0], b->total[1]);

		for (int u = 0; u < b->n; u++)
		{
			for (int v = u + 1; v < b->n; v++)
			{
				int			ta = b->assign[u];
				int			tb = b->assign[v];
				double		delta,
							na,
							nb,
							spread,
							sq_change;

				if (ta == tb)
					continue;
				delta = b->rating[v] - b->rating[u];
				if (delta == 0.0)
					continue;
				na = b->total[ta] + delta;
				nb = b->total[tb] - delta;
				spread = Max(na, nb) - Min(na, nb);
				if (spread > cur_spread + b->eps)
				{
					/*
					 * Later v have a delta no larger (the ratings descend
					 * and rounding is monotone), so na no larger and nb no
					 * smaller: with na < nb their spread is no smaller
					 * either, and they are all rejected here too.
					 */
					if (na < nb && b->sums_finite)
						break;
					continue;	/* no better on either count */
				}
				sq_change = na * na + nb * nb -
					b->total[ta] * b->total[ta] -
					b->total[tb] * b->total[tb];

				if (spread < cur_spread - b->eps ||
					(spread <= cur_spread + b->eps && sq_change < -sq_eps))
				{
					/* the general code's RemoveUnit/PlaceUnit sequence */
					b->total[ta] -= b->rating[u];
					b->total[tb] -= b->rating[v];
					b->total[tb] += b->rating[u];
					b->total[ta] += b->rating[v];
					b->assign[u] = tb;
					b->assign[v] = ta;
					improved = true;
					cur_spread = PairSpread(b->total[0], b->total[1]);
				}
			}
		}
		if (!improved)
			break;
	}
	b->best_spread = PairSpread(b->total[0], b->total[1]);
	memcpy(b->best_assign, b->assign, sizeof(int) * b->n);
}

/*
 * Branch and bound over the splits: team 0 takes `need` more units from
 * positions pos..n-1 on top of `taken`.  Ratings are in descending order,
 * so the most it can still add is the next `need` ones and the least the
 * last `need` ones (prefix sums make both O(1)); a branch whose spread cannot
 * get below *smallest is cut, and so are the later positions once even the
 * largest choice falls short.  Lowers *smallest to the smallest spread below
 * it.  Summed in another order than the branch and bound proper, so its
 * spreads may differ from the ones that search computes for the same split,
 * by rounding only.
 */
static void
PairSplitSearch(const PairBalancer *b, int pos, int need, double taken,
				double *smallest)
{
	int			n = b->n;
	double		total = b->rating_total;

	if (need == 0)
	{
		*smallest = Min(*smallest, fabs(taken - (total - taken)));
		return;
	}
	for (int j = pos; j <= n - need; j++)
	{
		double		with = taken + b->rating[j];
		double		lowest = with + (b->desc_prefix[n] - b->desc_prefix[n - need + 1]);
		double		highest = with + (b->desc_prefix[j + need] - b->desc_prefix[j + 1]);

		/* too strong even with the weakest rest: try a weaker unit */
		if (lowest - (total - lowest) >= *smallest)
			continue;
		/* too weak even with the strongest rest: so are all later units */
		if ((total - highest) - highest >= *smallest)
			break;
		PairSplitSearch(b, j + 1, need - 1, with, smallest);
	}
}

/*
 * The splits whose spread is below `bound`, counted up to two (the same
 * walk as PairSplitSearch() with a fixed bound): *count, and the first one
 * as a bitmask of team 0's units with its spread.
 */
static void
PairSplitCount(const PairBalancer *b, int pos, int need, double taken, uint32 chosen,
			   double bound, int *count, uint32 *found, double *found_spread)
{
	int			n = b->n;
	double		total = b->rating_total;
	bool		may_be_too_strong = true;	/* see below */

	if (need == 0)
	{
		double		spread = fabs(taken - (total - taken));

		if (spread < bound && (*count)++ == 0)
		{
			*found = chosen;
			*found_spread = spread;
		}
		return;
	}
	/*
	 * The ratings descend, and rounding is monotone, so the "too strong"
	 * test below (lowest's spread against the fixed bound) can only go from
	 * true to false as j grows: once false, it needs no more evaluating.
	 */
	for (int j = pos; j <= n - need && *count < 2; j++)
	{
		double		with = taken + b->rating[j];
		double		highest;

		if (may_be_too_strong)
		{
			double		lowest = with + (b->desc_prefix[n] - b->desc_prefix[n - need + 1]);

			if (lowest - (total - lowest) >= bound)
				continue;
			may_be_too_strong = false;
		}
		highest = with + (b->desc_prefix[j + need] - b->desc_prefix[j + 1]);
		if ((total - highest) - highest >= bound)
			break;
		PairSplitCount(b, j + 1, need - 1, with, chosen | (1u << j), bound,
					   count, found, found_spread);
	}
}

/* BranchAndBound() for two teams of solo players: units d.. to place. */
static void
PairBranchAndBound(PairBalancer *b, int d)
{
	int			first;
	int			tried = -1;

	if (d == b->n)
	{
		double		spread = PairSpread(b->total[0], b->total[1]);

		if (spread < b->best_spread - b->eps)
		{
			b->best_spread = spread;
			memcpy(b->best_assign, b->assign, sizeof(int) * b->n);
			b->done = b->best_spread - b->eps <= b->spread_floor;
		}
		return;
	}

	/* SpreadLowerBound() */
	{
		int			r = b->n - d;
		int			m0 = b->cap[0] - b->size[0];
		int			m1 = b->cap[1] - b->size[1];
		double		max_low = -INFINITY;
		double		min_high = INFINITY;

		max_low = Max(max_low, b->total[0] + b->prefix[m0]);
		min_high = Min(min_high, b->total[0] + (b->prefix[r] - b->prefix[r - m0]));
		max_low = Max(max_low, b->total[1] + b->prefix[m1]);
		min_high = Min(min_high, b->total[1] + (b->prefix[r] - b->prefix[r - m1]));
		if (Max(max_low, b->avg) - Min(min_high, b->avg) >= b->best_spread - b->eps)
			return;
	}

	/* the weaker team first (team 0 on a tie), as TeamsByTotal() orders */
	first = b->total[0] > b->total[1] ? 1 : 0;
	for (int i = 0; i < 2; i++)
	{
		int			t = i == 0 ? first : 1 - first;
		double		saved_total;

		if (b->size[t] + 1 > b->cap[t])
			continue;
		/* symmetry: a team in the same state as the one just tried */
		if (tried >= 0 && b->size[tried] == b->size[t] &&
			b->total[tried] == b->total[t] && b->cap[tried] == b->cap[t])
			continue;
		tried = t;

		saved_total = b->total[t];
		b->assign[d] = t;
		b->size[t]++;
		b->total[t] += b->rating[d];
		PairBranchAndBound(b, d + 1);
		b->size[t]--;
		b->total[t] = saved_total;
		if (b->done)
			return;
	}
}

/*
 * MmBalanceTeams() for two teams, solo players and n <= MM_BALANCE_EXACT_MAX
 * (the caller checked that): cap0/cap1 the exact sizes, exact_sizes whether
 * they were given.  Same answer as the general code.
 */
static void
BalancePairExact(const MmBalanceInput *input, int cap0, int cap1, bool exact_sizes,
				 int *team_of)
{
	PairBalancer b;
	int			n = input->n;
	int			order[MM_BALANCE_EXACT_MAX];	/* unit -> player */
	double		rating_total = 0.0;
	double		abs_total = 0.0;

	b.n = n;
	b.cap[0] = cap0;
	b.cap[1] = cap1;
	for (int p = 0; p < n; p++)
	{
		rating_total += input->ratings[p];
		abs_total += fabs(input->ratings[p]);
	}
	b.eps = 1e-9 * (abs_total + 1.0);
	b.avg = rating_total / 2;

	/*
	 * Units strongest first, ties by player index (CompareUnits() with every
	 * size 1): a stable insertion sort on descending rating.
	 */
	for (int p = 0; p < n; p++)
	{
		double		r = input->ratings[p];
		int			j = p;

		while (j > 0 && b.rating[j - 1] < r)
		{
			b.rating[j] = b.rating[j - 1];
			order[j] = order[j - 1];
			j--;
		}
		b.rating[j] = r;
		order[j] = p;
	}
	/* ascending prefix sums: the weakest unit is the last */
	b.prefix[0] = 0.0;
	b.desc_prefix[0] = 0.0;
	for (int m = 0; m < n; m++)
	{
		b.prefix[m + 1] = b.prefix[m] + b.rating[n - 1 - m];
		b.desc_prefix[m + 1] = b.desc_prefix[m] + b.rating[m];
	}
	b.rating_total = rating_total;

	b.sums_finite = abs_total < 1e300;
	PairHeuristic(&b, b.eps * (fabs(rating_total) + 1.0));

	/*
	 * The branch and bound only replaces the heuristic's answer by a split
	 * whose spread is lower by more than eps, and stops once nothing lower
	 * exists: often at once.  The margin (eps / 1000) is far above the
	 * rounding of sums of 16 ratings (about 1e-14 of abs_total), so the
	 * answer is the same as without the floor; with huge ratings (sums near
	 * overflow) there is no floor.
	 */
	b.margin = b.eps * 1e-3;
	b.spread_floor = -INFINITY;
	b.done = false;
	if (abs_total < 1e300)
	{
		double		acceptable = b.best_spread - b.eps;
		int			fixed = cap0 == cap1 ? 1 : 0;
		int			count = 0;
		uint32		found = 0;
		double		found_spread = 0.0;

		/* no spread is below zero: a perfect heuristic needs no search */
		if (acceptable + 2 * b.margin > 0.0)
			PairSplitCount(&b, fixed, cap0 - fixed, fixed ? b.rating[0] : 0.0, (uint32) fixed,
						   acceptable + 2 * b.margin, &count, &found, &found_spread);
		if (count == 0)
			b.done = true;		/* nothing beats the heuristic */
		else if (count == 1 && found_spread < acceptable - 2 * b.margin)
		{
			/*
			 * Exactly one split beats the heuristic: the search would visit
			 * it (its bounds stay below), accept it and nothing after it.
			 * A second way to reach it (the search skipping a team in the
			 * same state as the other) would be a second split here.
			 */
			for (int u = 0; u < n; u++)
				b.best_assign[u] = (found & (1u << u)) ? 0 : 1;
			b.done = true;
		}
		else
		{
			double		smallest = acceptable + 2 * b.margin;

			PairSplitSearch(&b, fixed, cap0 - fixed, fixed ? b.rating[0] : 0.0, &smallest);
			b.spread_floor = smallest - b.margin;
			b.done = b.best_spread - b.eps <= b.spread_floor;
		}
	}
	b.size[0] = b.size[1] = 0;
	b.total[0] = b.total[1] = 0.0;
	if (!b.done)
		PairBranchAndBound(&b, 0);

	for (int u = 0; u < n; u++)
		team_of[order[u]] = b.best_assign[u];

	/* NormaliseLabels(): equal size rules put player 0 on team 0 */
	if ((!exact_sizes || cap0 == cap1) && team_of[0] == 1)
		for (int p = 0; p < n; p++)
			team_of[p] = 1 - team_of[p];
}

/* Whether every party id is distinct (or there are none): all players solo. */
static bool
AllSolo(const MmBalanceInput *input)
{
	if (input->party == NULL)
		return true;
	for (int p = 1; p < input->n; p++)
		for (int q = 0; q < p; q++)
			if (input->party[q] == input->party[p])
				return false;
	return true;
}

/* The spread between the strongest and the weakest team of an answer. */
static double
AnswerSpread(const MmBalanceInput *input, const int *team_of)
{
	double		totals[MM_BALANCE_MAX_PLAYERS];
	double		hi = -INFINITY,
				lo = INFINITY;
	int			k = input->team_count;

	for (int t = 0; t < k; t++)
		totals[t] = 0.0;
	for (int p = 0; p < input->n; p++)
		totals[team_of[p]] += input->ratings[p];
	for (int t = 0; t < k; t++)
	{
		hi = Max(hi, totals[t]);
		lo = Min(lo, totals[t]);
	}
	return hi - lo;
}

bool
MmBalanceTeams(const MmBalanceInput *input, int *team_of, double *spread)
{
	Balancer	b;
	int			n = input->n;
	int			k = input->team_count;
	int			largest_unit = 0;
	double		abs_total = 0.0;
	bool		exact;

	if (n < 1 || n > MM_BALANCE_MAX_PLAYERS || k < 2 || k > n)
		return false;

	/* two teams of solo players: the fast exact path */
	if (k == 2 && n <= MM_BALANCE_EXACT_MAX && AllSolo(input))
	{
		int			cap0 = (n + 1) / 2;
		int			cap1 = n / 2;

		for (int p = 0; p < n; p++)
			if (!isfinite(input->ratings[p]))
				return false;
		if (input->team_size != NULL)
		{
			cap0 = input->team_size[0];
			cap1 = input->team_size[1];
			if (cap0 < 1 || cap1 < 1 || cap0 + cap1 != n)
				return false;
		}
		BalancePairExact(input, cap0, cap1, input->team_size != NULL, team_of);
		if (spread != NULL)
			*spread = AnswerSpread(input, team_of);
		return true;
	}

	b.n = n;
	b.k = k;
	b.exact_sizes = input->team_size != NULL;
	b.rating_total = 0.0;

	/* group players into units by party id */
	b.unit_count = 0;
	for (int p = 0; p < n; p++)
	{
		int			u = -1;

		if (!isfinite(input->ratings[p]))
			return false;
		if (input->party != NULL)
			for (int q = 0; q < p && u < 0; q++)
				if (input->party[q] == input->party[p])
					u = b.unit_of[q];
		if (u < 0)
		{
			u = b.unit_count++;
			b.units[u].total = 0.0;
			b.units[u].size = 0;
			b.units[u].first = p;
		}
		b.unit_of[p] = u;
		b.units[u].total += input->ratings[p];
		b.units[u].size++;
		b.rating_total += input->ratings[p];
		abs_total += fabs(input->ratings[p]);
	}
	b.eps = 1e-9 * (abs_total + 1.0);

	/* strongest unit first; remap players to the sorted order */
	{
		int			old_to_new[MM_BALANCE_MAX_PLAYERS];

		qsort(b.units, b.unit_count, sizeof(BalanceUnit), CompareUnits);
		for (int u = 0; u < b.unit_count; u++)
		{
			old_to_new[b.unit_of[b.units[u].first]] = u;
			largest_unit = Max(largest_unit, b.units[u].size);
		}
		for (int p = 0; p < n; p++)
			b.unit_of[p] = old_to_new[b.unit_of[p]];
	}

	exact = n <= MM_BALANCE_EXACT_MAX;
	if (exact)
		PrepareBounds(&b, input->ratings);
	b.found = false;
	b.placement_nodes = 0;
	b.search_nodes = 0;

	if (b.exact_sizes)
	{
		int			sum = 0;
		int			largest_team = 0;

		for (int t = 0; t < k; t++)
		{
			if (input->team_size[t] < 1)
				return false;
			b.cap[t] = input->team_size[t];
			sum += b.cap[t];
			largest_team = Max(largest_team, b.cap[t]);
		}
		if (sum != n || largest_unit > largest_team ||
			!SolveWithCapacities(&b, exact))
			return false;
	}
	else
	{
		/* sizes as even as the parties allow, then the best spread */
		if (b.unit_count < k)
			return false;		/* some team would stay empty */
		for (int diff = n % k == 0 ? 0 : 1; !b.found; diff++)
		{
			if (diff >= n || b.placement_nodes > MM_BALANCE_PLACEMENT_BUDGET)
				break;
			TrySizeVectors(&b, 0, n, diff, exact);
		}
		/*
		 * Many teams and parties can leave the enumeration of size vectors
		 * without one that fits within its budget: the sizes of placing each
		 * group, largest first, on the smallest team fit by construction
		 */
		if (!b.found)
		{
			LargestGroupsOnSmallestTeams(&b);
			b.placement_nodes = 0;
			if (!SolveWithCapacities(&b, false))
				return false;
		}
	}

	for (int p = 0; p < n; p++)
		team_of[p] = b.best_assign[b.unit_of[p]];

	/* the size rule of each label, for relabelling (free sizes: all alike) */
	NormaliseLabels(&b, team_of);

	if (spread != NULL)
		*spread = AnswerSpread(input, team_of);
	return true;
}
