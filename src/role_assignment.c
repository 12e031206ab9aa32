/*
 * role_assignment.c
 *	  Seats the players of a match on (team, role) seats (pure C, no SPI):
 *	  whether a partial match can still be seated (MmRolesFit, called as
 *	  each candidate joins) and the best seating of a full one (MmRolesSeat).
 *	  See roles.h for what "best" means.
 *
 * For one choice of composition per group (at most
 * MM_MAX_COMPOSITION_CHOICES) the seats are fixed.  Solo players may sit on
 * any group, so the groups collapse into one seat count per role: a partial
 * match fits when Hall's condition holds (for every set of roles S, the
 * players who accept only roles of S are no more than S's seats), and the
 * best seating is a min-cost flow from the players to the roles.  Parties
 * are placed on groups first (every placement, within a bound), then the
 * flow goes from the players to the (group, role) seats.  A flow's cost
 * counts the autofilled players, then the players off their first choice,
 * off their first two, ...: one int64 in base nplayers + 1, so adding
 * costs never carries between the counts and comparing two costs compares
 * the counts in that order.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "queue_config.h"
#include "roles.h"

/* Party placements one composition choice may try. */
#define MM_ROLE_PLACEMENTS 512

int
MmRoleIndex(const MmRolesConfig *roles, const char *name, int len)
{
	for (int r = 0; r < roles->nroles; r++)
		if ((int) strlen(roles->names[r]) == len && memcmp(roles->names[r], name, len) == 0)
			return r;
	return -1;
}

/* A min-cost flow graph: node 0 the source, 1 the sink. */
typedef struct FlowEdge
{
	int			to;
	int			cap;
	int64		cost;
} FlowEdge;

typedef struct Flow
{
	int			nnodes;
	int			nedges;
	FlowEdge   *edges;			/* edge e and its reverse e ^ 1 */
	int		   *first;			/* per node: its edges, linked */
	int		   *next;
	int64	   *dist;
	int		   *via;			/* the edge a shortest path arrives by */
	int		   *queue;
	bool	   *queued;
} Flow;

static void
FlowInit(Flow *f, int nnodes, int maxedges)
{
	f->nnodes = nnodes;
	f->nedges = 0;
	f->edges = palloc(sizeof(FlowEdge) * 2 * maxedges);
	f->next = palloc(sizeof(int) * 2 * maxedges);
	f->first = palloc(sizeof(int) * nnodes);
	f->dist = palloc(sizeof(int64) * nnodes);
	f->via = palloc(sizeof(int) * nnodes);
	f->queue = palloc(sizeof(int) * (nnodes + 1));
	f->queued = palloc(sizeof(bool) * nnodes);
	for (int v = 0; v < nnodes; v++)
		f->first[v] = -1;
}

static void
FlowFree(Flow *f)
{
	pfree(f->edges);
	pfree(f->next);
	pfree(f->first);
	pfree(f->dist);
	pfree(f->via);
	pfree(f->queue);
	pfree(f->queued);
}

/* Adds an edge; returns its index. */
static int
FlowEdgeAdd(Flow *f, int from, int to, int cap, int64 cost)
{
	int			e = f->nedges;

	f->edges[e].to = to;
	f->edges[e].cap = cap;
	f->edges[e].cost = cost;
	f->next[e] = f->first[from];
	f->first[from] = e;
	f->edges[e + 1].to = from;
	f->edges[e + 1].cap = 0;
	f->edges[e + 1].cost = -cost;
	f->next[e + 1] = f->first[to];
	f->first[to] = e + 1;
	f->nedges += 2;
	return e;
}

/*
 * Successive shortest paths (Bellman-Ford on a queue: residual costs may
 * be negative) from node 0 to node 1, one unit at a time, at most want
 * units.  Returns the units sent; *cost their total cost.
 */
static int
FlowRun(Flow *f, int want, int64 *cost)
{
	int			sent = 0;

	*cost = 0;
	while (sent < want)
	{
		int			head = 0,
					tail = 0;

		for (int v = 0; v < f->nnodes; v++)
		{
			f->dist[v] = PG_INT64_MAX;
			f->queued[v] = false;
		}
		f->dist[0] = 0;
		f->queue[tail++] = 0;
		f->queued[0] = true;
		while (head != tail)
		{
			int			u = f->queue[head];

			head = head == f->nnodes ? 0 : head + 1;
			f->queued[u] = false;
			for (int e = f->first[u]; e >= 0; e = f->next[e])
			{
				FlowEdge   *edge = &f->edges[e];

				if (edge->cap > 0 && f->dist[u] + edge->cost < f->dist[edge->to])
				{
					f->dist[edge->to] = f->dist[u] + edge->cost;
					f->via[edge->to] = e;
					if (!f->queued[edge->to])
					{
						f->queued[edge->to] = true;
						f->queue[tail] = edge->to;
						tail = tail == f->nnodes ? 0 : tail + 1;
					}
				}
			}
		}
		if (f->dist[1] == PG_INT64_MAX)
			break;
		for (int v = 1; v != 0; v = f->edges[f->via[v] ^ 1].to)
		{
			f->edges[f->via[v]].cap--;
			f->edges[f->via[v] ^ 1].cap++;
		}
		*cost += f->dist[1];
		sent++;
	}
	return sent;
}

/* The working state of one problem. */
typedef struct RoleProblem
{
	const MmRolesConfig *roles;
	const MmRolePlayers *players;
	int			nroles;
	int			ngroups;
	int		   *seats;			/* ngroups x MM_MAX_ROLES, this choice */
	bool		any_party;
	int64		level[MM_MAX_ROLES];	/* level[j]: W^(nroles-1-j) */

	/* party placement */
	int		   *party_group;	/* per ticket: its group, -1: solo */
	int		   *party_room;		/* per group: seats not yet taken by parties */
	int			placements;

	/* the best seating so far (MmRolesSeat) */
	bool		want_seating;
	bool		found;
	int64		best_cost;
	int		   *best_group;
	int		   *best_role;
} RoleProblem;

/*
 * The cost of a player on a role: autofilled counts at level 0, rank k at
 * levels 1..k.
 */
static int64
SeatCost(const RoleProblem *p, int player, int role)
{
	int			rank = p->players->rank[player][role];
	int64		cost = 0;

	if (rank == MM_ROLE_UNLISTED)
	{
		cost = p->level[0];
		rank = p->nroles;
	}
	for (int j = 1; j <= rank && j < p->nroles; j++)
		cost += p->level[j];
	return cost;
}

/*
 * Hall's condition for players on seats per role (counts[mask]: players
 * accepting exactly mask): every set of roles S has at least as many seats
 * as there are players accepting only roles of S.
 */
static bool
HallHolds(int nroles, const int *counts, const int *seats)
{
	int			nsets = 1 << nroles;

	/* a player who may take no role (their list names other queues' roles) */
	if (counts[0] > 0)
		return false;
	for (int set = 1; set < nsets; set++)
	{
		int			room = 0,
					need = 0;

		for (int r = 0; r < nroles; r++)
			if (set & (1 << r))
				room += seats[r];
		/* the masks within set: its submasks */
		for (int mask = set; mask > 0; mask = (mask - 1) & set)
			need += counts[mask];
		if (need > room)
			return false;
	}
	return true;
}

/*
 * The flow for the current seats and party placement: players to the
 * (group, role) seats they accept (a party's players on its group only;
 * with no party, the groups collapse to one).  Records the seating when it
 * seats every player and is the best so far.  True when it seats everyone.
 */
static bool
SeatByFlow(RoleProblem *p)
{
	const MmRolePlayers *pl = p->players;
	int			n = pl->nplayers;
	int			groups = p->any_party ? p->ngroups : 1;
	int			seat_base = 2 + n;
	int			nnodes = seat_base + groups * p->nroles;
	Flow		f;
	int64		cost;
	int			sent;
	int		   *player_edge = palloc(sizeof(int) * n * groups * p->nroles);
	int			nplayer_edges = 0;

	FlowInit(&f, nnodes, n + n * groups * p->nroles + groups * p->nroles);
	for (int i = 0; i < n; i++)
	{
		int			party = p->party_group[pl->ticket_of[i]];

		FlowEdgeAdd(&f, 0, 2 + i, 1, 0);
		for (int g = 0; g < groups; g++)
		{
			if (p->any_party && party >= 0 && party != g)
				continue;
			for (int r = 0; r < p->nroles; r++)
				if (pl->accept[i] & (1 << r))
					player_edge[nplayer_edges++] =
						FlowEdgeAdd(&f, 2 + i, seat_base + g * p->nroles + r, 1, SeatCost(p, i, r));
		}
	}
	for (int g = 0; g < groups; g++)
		for (int r = 0; r < p->nroles; r++)
		{
			int			seats = 0;

			if (p->any_party)
				seats = p->seats[g * MM_MAX_ROLES + r];
			else
				for (int h = 0; h < p->ngroups; h++)
					seats += p->seats[h * MM_MAX_ROLES + r];
			if (seats > 0)
				FlowEdgeAdd(&f, seat_base + g * p->nroles + r, 1, seats, 0);
		}
	sent = FlowRun(&f, n, &cost);
	if (sent == n && (!p->found || cost < p->best_cost))
	{
		p->found = true;
		p->best_cost = cost;
		if (p->want_seating)
		{
			for (int k = 0; k < nplayer_edges; k++)
			{
				int			e = player_edge[k];

				if (f.edges[e].cap == 0)
				{
					int			player = f.edges[e ^ 1].to - 2;
					int			seat = f.edges[e].to - seat_base;

					p->best_group[player] = seat / p->nroles;
					p->best_role[player] = seat % p->nroles;
				}
			}
			if (!p->any_party)
			{
				/* the groups collapsed: seat each role's players group by group */
				int			left[MM_MAX_TEAMS * MM_MAX_ROLES];

				memcpy(left, p->seats, sizeof(int) * p->ngroups * MM_MAX_ROLES);
				for (int i = 0; i < n; i++)
				{
					int			r = p->best_role[i];
					int			g = 0;

					while (left[g * MM_MAX_ROLES + r] == 0)
						g++;
					left[g * MM_MAX_ROLES + r]--;
					p->best_group[i] = g;
				}
			}
		}
	}
	pfree(player_edge);
	FlowFree(&f);
	return sent == n;
}

/*
 * Places the parties from ticket t on: each on a group with room for it
 * whose seats its own players fit, then the flow.  Groups with the same
 * seats and no party yet are interchangeable: only the first is tried.
 * Returns true to stop (a fit found, or the bound reached).
 */
static bool
PlaceParties(RoleProblem *p, int t)
{
	const MmRolePlayers *pl = p->players;

	/* solo players of no fixed group go wherever the flow seats them */
	while (t < pl->ntickets && pl->ticket_size[t] == 1 &&
		   (pl->ticket_group == NULL || pl->ticket_group[t] < 0))
		t++;
	if (t == pl->ntickets)
	{
		bool		fits;

		if (++p->placements > MM_ROLE_PLACEMENTS)
			return true;
		fits = SeatByFlow(p);
		return fits && !p->want_seating;
	}
	for (int g = 0; g < p->ngroups; g++)
	{
		int			counts[1 << MM_MAX_ROLES];
		bool		same = false;

		if (p->party_room[g] < pl->ticket_size[t] ||
			(pl->ticket_group != NULL && pl->ticket_group[t] >= 0 && pl->ticket_group[t] != g))
			continue;
		for (int u = 0; u < g && !same && (pl->ticket_group == NULL || pl->ticket_group[t] < 0); u++)
			same = p->party_room[u] == p->party_room[g] &&
				memcmp(&p->seats[u * MM_MAX_ROLES], &p->seats[g * MM_MAX_ROLES],
					   sizeof(int) * MM_MAX_ROLES) == 0 &&
				p->party_room[u] == p->roles->group_size[u] &&
				p->party_room[g] == p->roles->group_size[g];
		if (same)
			continue;
		/* the parties on g so far and this one must fit g's seats */
		memset(counts, 0, sizeof(int) * (1 << p->nroles));
		for (int i = 0; i < pl->nplayers; i++)
		{
			int			ti = pl->ticket_of[i];

			if (ti == t || (ti < t && p->party_group[ti] == g))
				counts[pl->accept[i]]++;
		}
		if (!HallHolds(p->nroles, counts, &p->seats[g * MM_MAX_ROLES]))
			continue;
		p->party_group[t] = g;
		p->party_room[g] -= pl->ticket_size[t];
		if (PlaceParties(p, t + 1))
		{
			p->party_room[g] += pl->ticket_size[t];
			return true;
		}
		p->party_room[g] += pl->ticket_size[t];
		p->party_group[t] = -1;
		if (p->placements > MM_ROLE_PLACEMENTS)
			return true;
	}
	return false;
}

/*
 * Tries the seats of the current composition choice.  Returns true to stop
 * the search over the choices (MmRolesFit: a fit).
 */
static bool
TryChoice(RoleProblem *p)
{
	const MmRolePlayers *pl = p->players;

	if (!p->any_party)
	{
		int			counts[1 << MM_MAX_ROLES];
		int			totals[MM_MAX_ROLES];

		memset(counts, 0, sizeof(int) * (1 << p->nroles));
		for (int r = 0; r < p->nroles; r++)
		{
			totals[r] = 0;
			for (int g = 0; g < p->ngroups; g++)
				totals[r] += p->seats[g * MM_MAX_ROLES + r];
		}
		for (int i = 0; i < pl->nplayers; i++)
			counts[pl->accept[i]]++;
		if (!HallHolds(p->nroles, counts, totals))
			return false;
		if (!p->want_seating)
		{
			p->found = true;
			return true;
		}
		(void) SeatByFlow(p);
		return false;
	}
	for (int g = 0; g < p->ngroups; g++)
	{
		p->party_room[g] = 0;
		for (int r = 0; r < p->nroles; r++)
			p->party_room[g] += p->seats[g * MM_MAX_ROLES + r];
	}
	for (int t = 0; t < pl->ntickets; t++)
		p->party_group[t] = -1;
	p->placements = 0;
	if (PlaceParties(p, 0) && !p->want_seating)
	{
		/* the bound reached without a fit: the final seating decides */
		p->found = true;
		return true;
	}
	return false;
}

/* Every choice of one composition per group (or the given seats). */
static void
Solve(RoleProblem *p, const int *seats)
{
	const MmRolesConfig *roles = p->roles;
	int			choice[MM_MAX_TEAMS];

	if (seats != NULL)
	{
		memcpy(p->seats, seats, sizeof(int) * p->ngroups * MM_MAX_ROLES);
		(void) TryChoice(p);
		return;
	}
	memset(choice, 0, sizeof(int) * p->ngroups);
	for (int tried = 0; tried < MM_MAX_COMPOSITION_CHOICES; tried++)
	{
		int			g;

		for (g = 0; g < p->ngroups; g++)
			memcpy(&p->seats[g * MM_MAX_ROLES], roles->compositions[g][choice[g]].seats,
				   sizeof(int) * MM_MAX_ROLES);
		if (TryChoice(p))
			return;
		/* the next choice, as an odometer */
		for (g = 0; g < p->ngroups; g++)
		{
			if (++choice[g] < roles->ncompositions[g])
				break;
			choice[g] = 0;
		}
		if (g == p->ngroups)
			return;
	}
}

static void
ProblemInit(RoleProblem *p, const MmRolesConfig *roles, const MmRolePlayers *players,
			bool want_seating)
{
	int64		base = players->nplayers + 1;

	memset(p, 0, sizeof(*p));
	p->roles = roles;
	p->players = players;
	p->nroles = roles->nroles;
	p->ngroups = roles->ngroups;
	p->seats = palloc0(sizeof(int) * p->ngroups * MM_MAX_ROLES);
	p->party_group = palloc(sizeof(int) * Max(players->ntickets, 1));
	p->party_room = palloc(sizeof(int) * p->ngroups);
	for (int t = 0; t < players->ntickets; t++)
	{
		p->party_group[t] = -1;
		if (p->ngroups > 1 &&
			(players->ticket_size[t] > 1 ||
			 (players->ticket_group != NULL && players->ticket_group[t] >= 0)))
			p->any_party = true;
	}
	/* level[j] = base^(nroles-1-j): players <= MM_MAX_MATCH_SIZE keeps it in int64 */
	p->level[p->nroles - 1] = 1;
	for (int j = p->nroles - 2; j >= 0; j--)
		p->level[j] = p->level[j + 1] * base;
	p->want_seating = want_seating;
}

bool
MmRolesFit(const MmRolesConfig *roles, const MmRolePlayers *players, const int *seats)
{
	RoleProblem p;

	ProblemInit(&p, roles, players, false);
	Solve(&p, seats);
	pfree(p.seats);
	pfree(p.party_group);
	pfree(p.party_room);
	return p.found;
}

/* The spread of the teams' averages, as a sum of squares around their mean. */
static double
Unevenness(const double *sum, const int *size, int ngroups)
{
	double		mean = 0,
				total = 0;

	for (int g = 0; g < ngroups; g++)
		mean += sum[g] / Max(size[g], 1);
	mean /= ngroups;
	for (int g = 0; g < ngroups; g++)
	{
		double		d = sum[g] / Max(size[g], 1) - mean;

		total += d * d;
	}
	return total;
}

/*
 * Evens the teams out: two solo players of the same role on different
 * teams swap while a swap brings the teams' averages closer (the cost is
 * the same: same roles, same ranks).
 */
static void
Balance(const RoleProblem *p, const double *ratings, int *group_of, const int *role_of)
{
	const MmRolePlayers *pl = p->players;
	int			n = pl->nplayers;
	double		sum[MM_MAX_TEAMS];
	int			size[MM_MAX_TEAMS];

	if (ratings == NULL || p->ngroups < 2)
		return;
	for (int g = 0; g < p->ngroups; g++)
	{
		sum[g] = 0;
		size[g] = 0;
	}
	for (int i = 0; i < n; i++)
	{
		sum[group_of[i]] += ratings[i];
		size[group_of[i]]++;
	}
	for (int pass = 0; pass < 16; pass++)
	{
		double		now = Unevenness(sum, size, p->ngroups);
		double		best = now;
		int			bi = -1,
					bj = -1;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < n; i++)
		{
			int			a = group_of[i];

			if (pl->ticket_size[pl->ticket_of[i]] > 1)
				continue;
			for (int j = i + 1; j < n; j++)
			{
				int			b = group_of[j];
				double		v;

				if (b == a || role_of[j] != role_of[i] || pl->ticket_size[pl->ticket_of[j]] > 1)
					continue;
				sum[a] += ratings[j] - ratings[i];
				sum[b] += ratings[i] - ratings[j];
				v = Unevenness(sum, size, p->ngroups);
				sum[a] -= ratings[j] - ratings[i];
				sum[b] -= ratings[i] - ratings[j];
				if (v < best - 1e-9)
				{
					best = v;
					bi = i;
					bj = j;
				}
			}
		}
		if (bi < 0)
			break;
		{
			int			a = group_of[bi],
						b = group_of[bj];

			sum[a] += ratings[bj] - ratings[bi];
			sum[b] += ratings[bi] - ratings[bj];
			group_of[bi] = b;
			group_of[bj] = a;
		}
	}
}

bool
MmRolesSeat(const MmRolesConfig *roles, const MmRolePlayers *players, const int *seats,
			const double *ratings, MmRoleSeating *out)
{
	RoleProblem p;

	ProblemInit(&p, roles, players, true);
	p.best_group = out->group_of;
	p.best_role = out->role_of;
	Solve(&p, seats);
	if (p.found)
	{
		Balance(&p, ratings, out->group_of, out->role_of);
		out->first_choices = 0;
		out->autofills = 0;
		for (int i = 0; i < players->nplayers; i++)
		{
			int			rank = players->rank[i][out->role_of[i]];

			out->autofilled[i] = rank == MM_ROLE_UNLISTED;
			out->autofills += out->autofilled[i];
			out->first_choices += rank == 0;
		}
	}
	pfree(p.seats);
	pfree(p.party_group);
	pfree(p.party_room);
	return p.found;
}
