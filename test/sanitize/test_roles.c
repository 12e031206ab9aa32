/*
 * test_roles: role_assignment.c (MmRolesFit, MmRolesSeat) against a brute
 * force, under AddressSanitizer and UBSan.  Random small problems: 1-3
 * groups, 1-4 roles, 1-3 compositions per group, players in tickets of 1-3
 * (parties), random accepted roles and ranks, sometimes fixed groups (a
 * match function's teams) or open seats (backfill).  Checks: MmRolesFit
 * says yes exactly when some seating of the players exists; MmRolesSeat
 * finds one exactly when a full seating exists, its seating is valid, and
 * its (autofills, first choices, first-or-second choices, ...) equal the
 * brute force's best.  MM_ROLES_DUMP=1 prints each problem MmRolesFit gets
 * wrong.
 */
#include "postgres.h"

#include "roles.h"
#include "sanitize_test.h"

#define MAXN 9
#define MAXG 3

typedef struct Problem
{
	MmRolesConfig roles;
	int			ncomp[MAXG];
	MmComposition comps[MAXG][3];
	MmComposition *comp_ptr[MAXG];
	int			group_size[MAXG];
	int			n;
	MmRoleMask	accept[MAXN];
	uint8		rank[MAXN][MM_MAX_ROLES];
	const uint8 *rank_ptr[MAXN];
	int			ticket_of[MAXN];
	int			ntickets;
	int			ticket_size[MAXN];
	int			ticket_group[MAXN];
	bool		fixed_groups;
	bool		use_seats;
	int			seats[MAXG * MM_MAX_ROLES];
} Problem;

/* The brute force's state: seats left, each ticket's group, the best cost. */
typedef struct Brute
{
	const Problem *p;
	int			left[MAXG][MM_MAX_ROLES];
	int			group_of_ticket[MAXN];
	int			cost[MM_MAX_ROLES + 1]; /* autofills, then off-first, off-second.. */
	int			best[MM_MAX_ROLES + 1];
	bool		found;
} Brute;

static int
Levels(const Problem *p)
{
	return p->roles.nroles;
}

/* Adds (sign 1) or removes (-1) a player's cost on a role. */
static void
CostAdd(Brute *b, int player, int role, int sign)
{
	const Problem *p = b->p;
	int			rank = p->rank[player][role];

	if (rank == MM_ROLE_UNLISTED)
	{
		b->cost[0] += sign;
		rank = p->roles.nroles;
	}
	for (int j = 1; j <= rank && j < p->roles.nroles; j++)
		b->cost[j] += sign;
}

static bool
Better(const int *a, const int *b, int levels)
{
	for (int j = 0; j < levels; j++)
		if (a[j] != b[j])
			return a[j] < b[j];
	return false;
}

/* Seats player i.. (a ticket's group is chosen at its first player). */
static void
BruteSeat(Brute *b, int i)
{
	const Problem *p = b->p;

	if (i == p->n)
	{
		if (!b->found || Better(b->cost, b->best, Levels(p)))
			memcpy(b->best, b->cost, sizeof(b->cost));
		b->found = true;
		return;
	}
	for (int g = 0; g < p->roles.ngroups; g++)
	{
		int			t = p->ticket_of[i];
		bool		first_of_ticket = i == 0 || p->ticket_of[i - 1] != t;

		if (!first_of_ticket && b->group_of_ticket[t] != g)
			continue;
		if (p->fixed_groups && p->ticket_group[t] >= 0 && p->ticket_group[t] != g)
			continue;
		for (int r = 0; r < p->roles.nroles; r++)
		{
			if (!(p->accept[i] & (1 << r)) || b->left[g][r] == 0)
				continue;
			b->left[g][r]--;
			b->group_of_ticket[t] = g;
			CostAdd(b, i, r, 1);
			BruteSeat(b, i + 1);
			CostAdd(b, i, r, -1);
			b->left[g][r]++;
		}
	}
}

/* The brute force over every composition choice (or the open seats). */
static bool
BruteForce(const Problem *p, bool full, int *best)
{
	Brute		b;
	int			choice[MAXG] = {0};
	bool		any = false;

	memset(&b, 0, sizeof(b));
	b.p = p;
	for (;;)
	{
		int			total = 0;
		int			g;

		for (g = 0; g < p->roles.ngroups; g++)
			for (int r = 0; r < MM_MAX_ROLES; r++)
			{
				b.left[g][r] = p->use_seats ? p->seats[g * MM_MAX_ROLES + r] :
					p->comps[g][choice[g]].seats[r];
				total += b.left[g][r];
			}
		if (!full || total == p->n)
		{
			b.found = false;
			memset(b.cost, 0, sizeof(b.cost));
			BruteSeat(&b, 0);
			if (b.found && (!any || Better(b.best, best, Levels(p))))
			{
				memcpy(best, b.best, sizeof(b.best));
				any = true;
			}
		}
		if (p->use_seats)
			break;
		for (g = 0; g < p->roles.ngroups; g++)
		{
			if (++choice[g] < p->ncomp[g])
				break;
			choice[g] = 0;
		}
		if (g == p->roles.ngroups)
			break;
	}
	return any;
}

static void
MakeProblem(Problem *p)
{
	int			size = RandRange(1, 3);
	int			player = 0;

	memset(p, 0, sizeof(*p));
	p->roles.nroles = RandRange(1, 4);
	for (int r = 0; r < p->roles.nroles; r++)
		p->roles.names[r] = "r";
	p->roles.ngroups = RandRange(1, MAXG);
	p->roles.ncompositions = p->ncomp;
	p->roles.compositions = p->comp_ptr;
	p->roles.group_size = p->group_size;
	for (int g = 0; g < p->roles.ngroups; g++)
	{
		p->ncomp[g] = RandRange(1, 3);
		p->comp_ptr[g] = p->comps[g];
		p->group_size[g] = size;
		for (int c = 0; c < p->ncomp[g]; c++)
			for (int s = 0; s < size; s++)
				p->comps[g][c].seats[RandInt(p->roles.nroles)]++;
	}
	p->use_seats = Chance(6);
	if (p->use_seats)
		for (int g = 0; g < p->roles.ngroups; g++)
			for (int r = 0; r < p->roles.nroles; r++)
				p->seats[g * MM_MAX_ROLES + r] = RandInt(3);
	p->fixed_groups = Chance(5) && !p->use_seats;
	/* about as many players as seats, sometimes fewer */
	p->n = Min(MAXN, size * p->roles.ngroups - (Chance(3) ? RandInt(3) : 0));
	if (p->n < 1)
		p->n = 1;
	while (player < p->n)
	{
		int			t = p->ntickets++;
		int			tsize = Chance(4) ? Min(RandRange(2, 3), p->n - player) : 1;

		p->ticket_size[t] = tsize;
		p->ticket_group[t] = p->fixed_groups ? RandInt(p->roles.ngroups) : -1;
		for (int k = 0; k < tsize; k++, player++)
		{
			int			listed = 0;

			p->ticket_of[player] = t;
			memset(p->rank[player], MM_ROLE_UNLISTED, MM_MAX_ROLES);
			/* a random order of a random subset */
			for (int r = 0; r < p->roles.nroles; r++)
				if (Chance(2))
					p->rank[player][r] = listed++;
			for (int r = 0; r < p->roles.nroles; r++)
			{
				int			q = RandInt(p->roles.nroles);
				uint8		tmp = p->rank[player][r];

				if (p->rank[player][r] != MM_ROLE_UNLISTED && p->rank[player][q] != MM_ROLE_UNLISTED)
				{
					p->rank[player][r] = p->rank[player][q];
					p->rank[player][q] = tmp;
				}
			}
			for (int r = 0; r < p->roles.nroles; r++)
				if (p->rank[player][r] != MM_ROLE_UNLISTED)
					p->accept[player] |= 1 << r;
			/* autofill: any role, the unlisted ones costing an autofill */
			if (Chance(5))
				p->accept[player] = (MmRoleMask) ((1 << p->roles.nroles) - 1);
			p->rank_ptr[player] = p->rank[player];
		}
	}
}

int
main(int argc, char **argv)
{
	long		cases = 20000;
	uint64_t	seed = 1;
	long		fits = 0,
				seated = 0;
	double		started = CpuSeconds();
	char		summary[200];

	TestStart("test_roles", argc, argv, &cases, &seed);
	for (long c = 0; c < cases; c++)
	{
		Problem		p;
		MmRolePlayers players;
		MmRoleSeating seating;
		int			group_of[MAXN],
					role_of[MAXN];
		bool		autofilled[MAXN];
		int			best[MM_MAX_ROLES + 1];
		bool		partial,
					full,
					got;

		MakeProblem(&p);
		players.nplayers = p.n;
		players.accept = p.accept;
		players.rank = p.rank_ptr;
		players.ticket_of = p.ticket_of;
		players.ntickets = p.ntickets;
		players.ticket_size = p.ticket_size;
		players.ticket_group = p.fixed_groups ? p.ticket_group : NULL;

		partial = BruteForce(&p, false, best);
		got = MmRolesFit(&p.roles, &players, p.use_seats ? p.seats : NULL);
		CHECK(got == partial, "case %ld: MmRolesFit %d, brute force %d", c, got, partial);
		if (got != partial && getenv("MM_ROLES_DUMP"))
		{
			printf("roles %d groups %d seats? %d fixed %d n %d\n", p.roles.nroles, p.roles.ngroups, p.use_seats, p.fixed_groups, p.n);
			for (int g = 0; g < p.roles.ngroups; g++)
				for (int k = 0; k < p.ncomp[g]; k++)
				{
					printf(" g%d c%d:", g, k);
					for (int r = 0; r < p.roles.nroles; r++)
						printf(" %d", p.use_seats ? p.seats[g * MM_MAX_ROLES + r] : p.comps[g][k].seats[r]);
					printf("\n");
				}
			for (int i = 0; i < p.n; i++)
				printf(" player %d ticket %d (size %d, group %d) accept %x\n", i, p.ticket_of[i], p.ticket_size[p.ticket_of[i]], p.ticket_group[p.ticket_of[i]], p.accept[i]);
		}
		fits += got;

		full = BruteForce(&p, false, best);
		seating.group_of = group_of;
		seating.role_of = role_of;
		seating.autofilled = autofilled;
		got = MmRolesSeat(&p.roles, &players, p.use_seats ? p.seats : NULL, NULL, &seating);
		CHECK(got == full, "case %ld: MmRolesSeat %d, brute force %d", c, got, full);
		if (got && full)
		{
			int			cost[MM_MAX_ROLES + 1] = {0};
			int			used[MAXG][MM_MAX_ROLES] = {{0}};
			bool		valid = true;

			seated++;
			for (int i = 0; i < p.n; i++)
			{
				int			r = role_of[i],
							g = group_of[i],
							rank = p.rank[i][r];

				valid &= g >= 0 && g < p.roles.ngroups && r >= 0 && r < p.roles.nroles;
				if (!valid)
					break;
				valid &= (p.accept[i] & (1 << r)) != 0;
				valid &= autofilled[i] == (rank == MM_ROLE_UNLISTED);
				valid &= i == 0 || p.ticket_of[i - 1] != p.ticket_of[i] || group_of[i - 1] == g;
				valid &= !p.fixed_groups || p.ticket_group[p.ticket_of[i]] < 0 ||
					p.ticket_group[p.ticket_of[i]] == g;
				used[g][r]++;
				if (rank == MM_ROLE_UNLISTED)
				{
					cost[0]++;
					rank = p.roles.nroles;
				}
				for (int j = 1; j <= rank && j < p.roles.nroles; j++)
					cost[j]++;
			}
			CHECK(valid, "case %ld: the seating breaks a player's roles, a party or a fixed team", c);
			/* one composition per group (or within the open seats) */
			for (int g = 0; valid && g < p.roles.ngroups; g++)
			{
				bool		fits_one = false;

				if (p.use_seats)
				{
					fits_one = true;
					for (int r = 0; r < p.roles.nroles; r++)
						fits_one &= used[g][r] <= p.seats[g * MM_MAX_ROLES + r];
				}
				for (int k = 0; !p.use_seats && k < p.ncomp[g]; k++)
				{
					bool		ok = true;

					for (int r = 0; r < p.roles.nroles; r++)
						ok &= used[g][r] <= p.comps[g][k].seats[r];
					fits_one |= ok;
				}
				CHECK(fits_one, "case %ld: group %d meets none of its compositions", c, g);
			}
			for (int j = 0; j < p.roles.nroles; j++)
				CHECK(cost[j] == best[j], "case %ld: level %d costs %d, the best %d", c, j, cost[j], best[j]);
		}
	}
	snprintf(summary, sizeof(summary), "%ld problems, %ld fit, %ld seated against the brute force",
			 cases, fits, seated);
	return TestFinish(seed, started, summary);
}
