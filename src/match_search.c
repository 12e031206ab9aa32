/*
 * match_search.c
 *	  Forms matches among a queue's searching tickets (pure C, no SPI).
 *
 * Oldest tickets first: each ticket in turn (oldest first) is the anchor of a
 * candidate match and the oldest ticket in it, so its age selects every
 * rule's expansion step.  The anchor leaves the pool whether it matches or
 * not, so later anchors only see younger tickets.
 *
 * Candidates come in age order (oldest first) from the pool of younger alive
 * tickets, restricted to the window [v - t, v + t] of the main numeric rule
 * (the first difference rule): every ticket of a valid match is within t of
 * the anchor.  Two ways to produce them, both O(result) and never O(N) per
 * anchor when the window is small:
 *	 - walk the pool in age order and keep those in the window (cheap when the
 *	   window holds a large share of the pool: a few steps per candidate);
 *	 - take the window from the value-sorted array (binary search), skip dead
 *	   entries with a union-find "next alive" pointer, and sort it by age
 *	   (cheap when the window is small).
 * The walk starts first (unless W <= 32) and switches to the window after
 * 2W + 64 steps, W being the window's alive count (a Fenwick tree).
 *
 * The greedy then takes compatible candidates oldest first (every ticket rule
 * checked incrementally through its handler) up to a target number of
 * players.  Targets go from the largest match to the smallest (team sizes
 * filled as evenly as their bounds allow and team_size_balance permits), so
 * a smaller match forms only when no larger one did.  Teams are balanced by
 * MmBalanceTeams with exact sizes (parties stay on one team), then the team
 * rules are checked.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "match_search.h"
#include "team_balance.h"

/* A ticket rule's can_add and add (see MmRuleHandler), called per candidate. */
typedef bool (*CanAddFunction) (const MmRuleContext *context, const MmRuleState *state,
								const MmRuleValue *value, double threshold);
typedef void (*AddFunction) (const MmRuleContext *context, MmRuleState *state,
							 const MmRuleValue *value);

/* The search's working state over one queue's tickets. */
typedef struct SearchState
{
	const MmRuleContext *context;
	const MmQueueConfig *config;
	MmTicket   *tickets;
	int			ntickets;
	const MmRuleHandler **handlers;
	int		   *ticket_rule;	/* the MM_SCOPE_TICKETS rules, in order */
	AddFunction *ticket_add;	/* ... and their handlers' add */
	int			nticket_rules;

	/* the pool: alive tickets */
	bool	   *dead;
	int		   *next_age;		/* union-find: next alive ticket index >= i */

	/* main numeric rule: value-sorted array of tickets with a value */
	int			main_rule;		/* -1: none */
	int			nsorted;
	int		   *sorted;			/* ticket indexes by (value, index) */
	double	   *sorted_value;
	int		   *pos_of;			/* sorted position of each ticket, -1 */
	double	   *main_value;		/* each ticket's main value (contiguous: the */
	char	   *main_kind;		/* walk reads it for every ticket it passes) */
	int		   *next_sorted;	/* union-find: next alive position >= p */
	int		   *fenwick;		/* alive counts over sorted positions */
	int			alive_any;		/* alive tickets whose main value is ANY */
	int		   *any_list;		/* those tickets in age order */
	int			nany;

	/* the balancing attribute: first team_difference, else first difference */
	int			balance_rule;

	/* per anchor */
	int			anchor;
	bool	   *rule_on;
	int		   *fit_rule;		/* the rules on, in order (TicketFits) */
	CanAddFunction *fit_can_add;	/* ... and can_add for a ticket rule, else
									 * NULL */
	int			nfit;
	double	   *rule_threshold;
	int		   *rule_step;
	MmRuleState *states;
	bool		windowed;
	double		window_lo;
	double		window_hi;
	int		   *cand;			/* candidates produced so far, in age order */
	int			ncand;
	bool		cand_done;
	bool		cand_walking;	/* still walking the pool in age order */
	int			walk_cursor;
	long		walk_budget;

	/* greedy scratch */
	int		   *chosen;
	int			nchosen;
	int			chosen_players;

	/* team scratch */
	double	   *ratings;
	int		   *party;
	bool		all_solo;		/* every gathered ticket has one player */
	int		   *team_of;
	int		   *team_size;
	int		   *actual_size;
	int		   *ticket_team;
	const MmTicket **chosen_tickets;

	MemoryContext result_context;	/* the caller's: the matches live there */
	MmSearchResult *result;
	int			matches_allocated;
} SearchState;

/* Smallest alive index >= i (path halving). */
static int
FindNextAlive(int *next, int i)
{
	while (next[i] != i)
	{
		next[i] = next[next[i]];
		i = next[i];
	}
	return i;
}

/* Adds delta at a sorted position of the Fenwick tree of alive counts. */
static void
FenwickAdd(int *tree, int n, int pos, int delta)
{
	for (pos++; pos <= n; pos += pos & (-pos))
		tree[pos] += delta;
}

/* Alive count over sorted positions [0, pos). */
static int
FenwickPrefix(const int *tree, int pos)
{
	int			sum = 0;

	for (; pos > 0; pos -= pos & (-pos))
		sum += tree[pos];
	return sum;
}

/*
 * First sorted position whose value is >= v (or > v when strict).  Without
 * branches on the data (a conditional move per halving): the comparisons are
 * unpredictable, and mispredicted branches cost more than the loads.
 */
static int
LowerBound(const SearchState *s, double v, bool strict)
{
	const double *base = s->sorted_value;
	int			len = s->nsorted;

	if (len == 0)
		return 0;
	if (strict)
	{
		while (len > 1)
		{
			int			half = len / 2;

			base = base[half - 1] <= v ? base + half : base;
			len -= half;
		}
		return (int) (base - s->sorted_value) + (*base <= v);
	}
	while (len > 1)
	{
		int			half = len / 2;

		base = base[half - 1] < v ? base + half : base;
		len -= half;
	}
	return (int) (base - s->sorted_value) + (*base < v);
}

/* Takes a ticket out of the pool. */
static void
RemoveTicket(SearchState *s, int i)
{
	s->dead[i] = true;
	s->next_age[i] = i + 1;
	if (s->main_rule >= 0)
	{
		int			pos = s->pos_of[i];

		if (pos >= 0)
		{
			s->next_sorted[pos] = pos + 1;
			FenwickAdd(s->fenwick, s->nsorted, pos, -1);
		}
		else if (s->main_kind[i] == MM_VALUE_ANY)
			s->alive_any--;
	}
}

/* A ticket's main value, for the one sort by value. */
typedef struct ValueEntry
{
	uint64		key;			/* the value as an unsigned key (ValueKey) */
	double		value;
	int			ticket;
} ValueEntry;

/*
 * An unsigned integer whose order is the value's numeric order: the sign bit
 * set for non-negative values, every bit flipped for negative ones.  -0.0
 * counts as 0.0.  Values are never NaN (rules.c keeps only finite numbers;
 * an average may at most overflow to an infinity, which orders correctly).
 */
static inline uint64
ValueKey(double value)
{
	uint64		bits;

	if (value == 0.0)
		value = 0.0;
	memcpy(&bits, &value, sizeof(bits));
	return (bits & UINT64CONST(0x8000000000000000)) ? ~bits :
		bits | UINT64CONST(0x8000000000000000);
}

/*
 * Sets the sort keys.  Whole numbers (skills, levels) whose range fits in 53
 * bits take their offset from the smallest as key, so that only the few low
 * bytes the range needs differ; other values take ValueKey().
 */
static void
SetValueKeys(ValueEntry *entries, int n)
{
	double		smallest = 0.0;
	bool		whole = true;

	for (int i = 0; i < n && whole; i++)
	{
		double		v = entries[i].value;

		whole = fabs(v) < 4503599627370496.0 && v == floor(v);	/* 2^52 */
		if (i == 0 || v < smallest)
			smallest = v;
	}
	for (int i = 0; i < n; i++)
		entries[i].key = whole ? (uint64) (entries[i].value - smallest) :
			ValueKey(entries[i].value);
}

/*
 * Sorts entries by (value, ticket): the one O(N log N) step of the search
 * in a comparison sort, so an LSD radix sort instead, one stable pass per
 * byte of the key that is not the same in every entry (values such as
 * skills share most of their bytes), into the scratch array and back.
 * Entries come in ticket order, so stability orders equal values by ticket.
 */
static void
SortValueEntries(ValueEntry *entries, ValueEntry *scratch, int n)
{
	int			count[256];
	ValueEntry *from = entries;
	ValueEntry *to = scratch;
	uint64		all_ones = ~UINT64CONST(0);
	uint64		any_ones = 0;

	/* the bits that differ between keys */
	for (int i = 0; i < n; i++)
	{
		all_ones &= entries[i].key;
		any_ones |= entries[i].key;
	}
	for (int byte = 0; byte < 8; byte++)
	{
		int			shift = 8 * byte;
		int			offset = 0;

		if ((((all_ones ^ any_ones) >> shift) & 0xFF) == 0)
			continue;			/* the same byte everywhere: already in order */
		memset(count, 0, sizeof(count));
		for (int i = 0; i < n; i++)
			count[(from[i].key >> shift) & 0xFF]++;
		for (int d = 0; d < 256; d++)
		{
			int			c = count[d];

			count[d] = offset;
			offset += c;
		}
		for (int i = 0; i < n; i++)
			to[count[(from[i].key >> shift) & 0xFF]++] = from[i];
		{
			ValueEntry *swap = from;

			from = to;
			to = swap;
		}
	}
	if (from != entries)
		memcpy(entries, from, sizeof(ValueEntry) * n);
}

/* SortTicketIndexes(): ticket indexes ascending (age order), comparison inlined. */
#define ST_SORT SortTicketIndexes
#define ST_ELEMENT_TYPE int
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* Builds the pool structures. */
static void
SearchInit(SearchState *s, const MmRuleContext *context, MmTicket *tickets, int ntickets,
		   MemoryContext result_context)
{
	const MmQueueConfig *config = context->config;
	int			nrules = config->nrules;
	int			i;
	int			maxp = Max(config->match_max, 1);

	memset(s, 0, sizeof(*s));
	s->result_context = result_context;
	s->context = context;
	s->config = config;
	s->tickets = tickets;
	s->ntickets = ntickets;
	s->handlers = palloc(sizeof(MmRuleHandler *) * Max(nrules, 1));
	s->ticket_rule = palloc(sizeof(int) * Max(nrules, 1));
	s->ticket_add = palloc(sizeof(AddFunction) * Max(nrules, 1));
	s->main_rule = -1;
	s->balance_rule = -1;
	for (i = 0; i < nrules; i++)
	{
		s->handlers[i] = MmRuleHandlerFor(config->rules[i].type);
		if (s->handlers[i]->scope == MM_SCOPE_TICKETS)
		{
			s->ticket_rule[s->nticket_rules] = i;
			s->ticket_add[s->nticket_rules] = s->handlers[i]->add;
			s->nticket_rules++;
		}
		if (config->rules[i].type == MM_RULE_DIFFERENCE && s->main_rule < 0)
			s->main_rule = i;
	}
	for (i = 0; i < nrules && s->balance_rule < 0; i++)
		if (config->rules[i].type == MM_RULE_TEAM_DIFFERENCE)
			s->balance_rule = i;
	if (s->balance_rule < 0)
		s->balance_rule = s->main_rule;

	s->dead = palloc0(sizeof(bool) * ntickets);
	s->next_age = palloc(sizeof(int) * (ntickets + 1));
	for (i = 0; i <= ntickets; i++)
		s->next_age[i] = i;

	if (s->main_rule >= 0)
	{
		ValueEntry *entries = palloc(sizeof(ValueEntry) * Max(ntickets, 1));
		ValueEntry *sort_scratch;

		s->any_list = palloc(sizeof(int) * Max(ntickets, 1));
		s->pos_of = palloc(sizeof(int) * Max(ntickets, 1));
		s->main_value = palloc(sizeof(double) * Max(ntickets, 1));
		s->main_kind = palloc(sizeof(char) * Max(ntickets, 1));
		for (i = 0; i < ntickets; i++)
		{
			const MmRuleValue *v = &tickets[i].values[s->main_rule];

			s->pos_of[i] = -1;
			/* NaN unless PRESENT: no window holds it (see WalkToCandidate) */
			s->main_value[i] = v->kind == MM_VALUE_PRESENT ? v->number : NAN;
			s->main_kind[i] = (char) v->kind;
			if (v->kind == MM_VALUE_PRESENT)
			{
				entries[s->nsorted].value = v->number;
				entries[s->nsorted].ticket = i;
				s->nsorted++;
			}
			else if (v->kind == MM_VALUE_ANY)
				s->any_list[s->nany++] = i;
		}
		s->alive_any = s->nany;
		SetValueKeys(entries, s->nsorted);
		sort_scratch = palloc(sizeof(ValueEntry) * Max(s->nsorted, 1));
		SortValueEntries(entries, sort_scratch, s->nsorted);
		pfree(sort_scratch);
		s->sorted = palloc(sizeof(int) * Max(s->nsorted, 1));
		s->sorted_value = palloc(sizeof(double) * Max(s->nsorted, 1));
		s->next_sorted = palloc(sizeof(int) * (s->nsorted + 1));
		s->fenwick = palloc0(sizeof(int) * (s->nsorted + 1));
		for (i = 0; i < s->nsorted; i++)
		{
			s->sorted[i] = entries[i].ticket;
			s->sorted_value[i] = entries[i].value;
			s->pos_of[s->sorted[i]] = i;
			s->next_sorted[i] = i;
			/* O(n) Fenwick build: each node adds itself to its parent */
			s->fenwick[i + 1] += 1;
			if (i + 1 + ((i + 1) & (-(i + 1))) <= s->nsorted)
				s->fenwick[i + 1 + ((i + 1) & (-(i + 1)))] += s->fenwick[i + 1];
		}
		s->next_sorted[s->nsorted] = s->nsorted;
		pfree(entries);
	}

	s->rule_on = palloc(sizeof(bool) * Max(nrules, 1));
	s->fit_rule = palloc(sizeof(int) * Max(nrules, 1));
	s->fit_can_add = palloc(sizeof(CanAddFunction) * Max(nrules, 1));
	s->rule_threshold = palloc(sizeof(double) * Max(nrules, 1));
	s->rule_step = palloc(sizeof(int) * Max(nrules, 1));
	s->states = palloc0(sizeof(MmRuleState) * Max(nrules, 1));
	for (i = 0; i < nrules; i++)
	{
		MmRuleState *state = &s->states[i];

		if (config->rules[i].type != MM_RULE_LATENCY)
			continue;
		state->region_capacity = MmLatencyStateCapacity(tickets, ntickets, i);
		state->open_region = palloc(sizeof(int) * Max(state->region_capacity, 1));
		state->region_worst = palloc(sizeof(double) * Max(state->region_capacity, 1));
	}
	s->cand = palloc(sizeof(int) * Max(ntickets, 1));
	s->chosen = palloc(sizeof(int) * maxp);
	s->chosen_tickets = palloc(sizeof(MmTicket *) * maxp);
	s->ratings = palloc(sizeof(double) * maxp);
	s->party = palloc(sizeof(int) * maxp);
	s->team_of = palloc(sizeof(int) * maxp);
	s->ticket_team = palloc(sizeof(int) * maxp);
	s->team_size = palloc(sizeof(int) * Max(config->nteams, 1));
	s->actual_size = palloc(sizeof(int) * Max(config->nteams, 1));

	s->result = MemoryContextAllocZero(result_context, sizeof(MmSearchResult));
	s->matches_allocated = 16;
	s->result->matches = MemoryContextAlloc(result_context,
											sizeof(MmFoundMatch) * s->matches_allocated);
}

/* Collects the rest of the window (index >= from) in age order at once. */
static void
CollectWindow(SearchState *s, int from)
{
	int			start = s->ncand;
	int			pos = LowerBound(s, s->window_lo, false);
	int			k;

	for (pos = FindNextAlive(s->next_sorted, pos);
		 pos < s->nsorted && s->sorted_value[pos] <= s->window_hi;
		 pos = FindNextAlive(s->next_sorted, pos + 1))
	{
		if (s->sorted[pos] >= from)
			s->cand[s->ncand++] = s->sorted[pos];
	}
	for (k = 0; k < s->nany; k++)
	{
		int			i = s->any_list[k];

		if (i >= from && !s->dead[i])
			s->cand[s->ncand++] = i;
	}
	SortTicketIndexes(s->cand + start, s->ncand - start);
	s->cand_done = true;
}

/* Starts the candidate stream of an anchor. */
static void
CandidatesStart(SearchState *s)
{
	const MmRuleValue *v;

	s->ncand = 0;
	s->cand_done = false;
	s->cand_walking = true;
	s->walk_cursor = s->anchor + 1;
	s->walk_budget = -1;		/* unlimited */
	s->windowed = false;
	if (s->main_rule < 0 || !s->rule_on[s->main_rule])
		return;
	v = &s->tickets[s->anchor].values[s->main_rule];
	if (v->kind != MM_VALUE_PRESENT)
		return;

	/*
	 * The window only preselects candidates; the rule decides (max - min <=
	 * threshold, rounded).  v - t and v + t are rounded too and may fall just
	 * inside a value the rule accepts, so the window reaches a few units in
	 * the last place further.
	 */
	s->windowed = true;
	{
		double		t = s->rule_threshold[s->main_rule];
		double		slack = 4 * DBL_EPSILON * (fabs(v->number) + t);

		s->window_lo = v->number - t - slack;
		s->window_hi = v->number + t + slack;
	}
	{
		int			lo = LowerBound(s, s->window_lo, false);
		int			hi = LowerBound(s, s->window_hi, true);
		long		alive = FenwickPrefix(s->fenwick, hi) - FenwickPrefix(s->fenwick, lo) + s->alive_any;

		if (alive <= 32)
			CollectWindow(s, s->walk_cursor);
		else
			s->walk_budget = 2 * alive + 64;
	}
}

/*
 * Walks the pool in age order from walk_cursor to the next alive ticket in
 * the window, spending walk_budget (< 0: unlimited); returns it, or -1 when
 * the pool or the budget ran out (cand_done is set for the pool).  The state
 * stays in locals: this loop is the search's hottest.
 */
static int
WalkToCandidate(SearchState *s)
{
	int		   *next_age = s->next_age;
	const double *value = s->main_value;
	const char *kind = s->main_kind;
	bool		windowed = s->windowed;
	double		lo = s->window_lo;
	double		hi = s->window_hi;
	int			ntickets = s->ntickets;
	int			cursor = s->walk_cursor;
	long		budget = s->walk_budget;
	int			found = -1;

	while (budget != 0)
	{
		int			i;

		if (budget > 0)
			budget--;
		i = FindNextAlive(next_age, cursor);
		if (i >= ntickets)
		{
			s->cand_done = true;
			break;
		}
		cursor = i + 1;
		/*
		 * In the window of the main rule (only a PRESENT value can be: the
		 * others are NaN), or matching any value.
		 */
		if (!windowed || (value[i] >= lo && value[i] <= hi) ||
			kind[i] == MM_VALUE_ANY)
		{
			found = i;
			break;
		}
	}
	s->walk_cursor = cursor;
	s->walk_budget = budget;
	return found;
}

/* The k-th candidate of the anchor (age order), or -1 when there is none. */
static int
CandidateAt(SearchState *s, int k)
{
	while (k >= s->ncand)
	{
		int			i;

		if (s->cand_done)
			return -1;
		if (s->walk_budget == 0)
		{
			CollectWindow(s, s->walk_cursor);
			continue;
		}
		i = WalkToCandidate(s);
		if (i >= 0)
			s->cand[s->ncand++] = i;
	}
	return s->cand[k];
}

/* Whether a ticket can join the candidate match, rule by rule. */
static bool
TicketFits(SearchState *s, const MmTicket *t)
{
	for (int k = 0; k < s->nfit; k++)
	{
		int			r = s->fit_rule[k];

		if (t->values[r].kind == MM_VALUE_MISSING)
			return false;
		if (s->fit_can_add[k] != NULL &&
			!s->fit_can_add[k] (s->context, &s->states[r], &t->values[r],
								s->rule_threshold[r]))
			return false;
	}
	return true;
}

/* Adds a ticket to the candidate match and every ticket rule's state. */
static void
TicketJoin(SearchState *s, int i)
{
	const MmTicket *t = &s->tickets[i];

	for (int k = 0; k < s->nticket_rules; k++)
	{
		int			r = s->ticket_rule[k];

		s->ticket_add[k] (s->context, &s->states[r], &t->values[r]);
	}
	s->chosen[s->nchosen++] = i;
	s->chosen_players += t->nplayers;
}

/* Search nodes allowed to PlaceParties before it gives the benefit of the doubt. */
#define MM_PARTY_PLACEMENT_BUDGET 10000

/*
 * Places parties[i..n-1] (largest first) into the rooms left on each team.
 * Teams with the same room left are interchangeable, so only the first of
 * them is tried.
 */
static bool
PlaceParties(const int *parties, int n, int i, int *room, int nteams, int *budget)
{
	int			t,
				u;

	if (i == n || --(*budget) <= 0)
		return true;
	for (t = 0; t < nteams; t++)
	{
		bool		tried = false;

		if (room[t] < parties[i])
			continue;
		for (u = 0; u < t && !tried; u++)
			tried = room[u] == room[t];
		if (tried)
			continue;
		room[t] -= parties[i];
		if (PlaceParties(parties, n, i + 1, room, nteams, budget))
		{
			room[t] += parties[i];
			return true;
		}
		room[t] += parties[i];
	}
	return false;
}

/*
 * Whether the parties gathered so far, with one more of extra players, can
 * each sit on one team of the given sizes.  Solo players fill whatever room
 * is left, so only parties matter.
 */
static bool
PartiesFit(const SearchState *s, const int *sizes, int extra)
{
	int			parties[MM_MAX_MATCH_SIZE];
	int			room[MM_MAX_TEAMS];
	int			n = 0;
	int			k,
				t,
				budget = MM_PARTY_PLACEMENT_BUDGET;

	for (k = 0; k < s->nchosen; k++)
		if (s->tickets[s->chosen[k]].nplayers > 1)
			parties[n++] = s->tickets[s->chosen[k]].nplayers;
	parties[n++] = extra;
	/* largest first (insertion sort: a match holds few parties) */
	for (k = 1; k < n; k++)
	{
		int			p = parties[k];

		for (t = k; t > 0 && parties[t - 1] < p; t--)
			parties[t] = parties[t - 1];
		parties[t] = p;
	}
	for (t = 0; t < s->config->nteams; t++)
		room[t] = sizes[t];
	return PlaceParties(parties, n, 0, room, s->config->nteams, &budget);
}

/*
 * Greedy: the anchor, then compatible candidates oldest first, until the
 * match holds target players.  With teams (sizes not NULL) a party joins only
 * if every party can still sit on one team.  Returns the players gathered;
 * *packing_skipped tells whether a party was left out for that reason.
 */
static int
Gather(SearchState *s, int target, const int *sizes, bool *packing_skipped)
{
	int			k;

	*packing_skipped = false;
	for (k = 0; k < s->nticket_rules; k++)
	{
		int			r = s->ticket_rule[k];

		s->handlers[r]->state_init(s->context, &s->states[r]);
	}
	s->nchosen = 0;
	s->chosen_players = 0;
	if (s->tickets[s->anchor].nplayers > target || !TicketFits(s, &s->tickets[s->anchor]))
		return 0;
	if (sizes != NULL && s->tickets[s->anchor].nplayers > 1 &&
		!PartiesFit(s, sizes, s->tickets[s->anchor].nplayers))
		return 0;
	TicketJoin(s, s->anchor);
	for (k = 0; s->chosen_players < target; k++)
	{
		int			i = CandidateAt(s, k);
		int			np;

		if (i < 0)
			break;
		/* one anchor may scan a large pool, for each target size */
		if ((k & 4095) == 4095)
			CHECK_FOR_INTERRUPTS();
		np = s->tickets[i].nplayers;
		if (s->chosen_players + np > target)
			continue;
		if (!TicketFits(s, &s->tickets[i]))
			continue;
		if (sizes != NULL && np > 1 && !PartiesFit(s, sizes, np))
		{
			*packing_skipped = true;
			continue;
		}
		TicketJoin(s, i);
	}
	return s->chosen_players;
}

/*
 * Team sizes for a total, as even as the teams' bounds allow (water
 * filling: this minimises the largest team and maximises the smallest at
 * once).  False when the bounds cannot make the total or the spread exceeds
 * max_spread (< 0: no limit).
 */
static bool
EvenTeamSizes(const MmQueueConfig *config, int total, int max_spread, int *sizes)
{
	int			t;
	int			rest = total;
	int			lo,
				hi;

	for (t = 0; t < config->nteams; t++)
	{
		sizes[t] = config->teams[t].min;
		rest -= sizes[t];
	}
	if (rest < 0)
		return false;
	while (rest > 0)
	{
		int			best = -1;

		for (t = 0; t < config->nteams; t++)
			if (sizes[t] < config->teams[t].max && (best < 0 || sizes[t] < sizes[best]))
				best = t;
		if (best < 0)
			return false;
		sizes[best]++;
		rest--;
	}
	lo = hi = sizes[0];
	for (t = 1; t < config->nteams; t++)
	{
		lo = Min(lo, sizes[t]);
		hi = Max(hi, sizes[t]);
	}
	return max_spread < 0 || hi - lo <= max_spread;
}

/* Fills chosen_tickets and the balancing ratings of the gathered players. */
static int
PreparePlayers(SearchState *s)
{
	int			k,
				p,
				n = 0;
	double		sum = 0;
	int			known = 0;
	double		fill;

	s->all_solo = true;
	for (k = 0; k < s->nchosen; k++)
	{
		const MmTicket *t = &s->tickets[s->chosen[k]];

		s->chosen_tickets[k] = t;
		if (t->nplayers != 1)
			s->all_solo = false;
		for (p = 0; p < t->nplayers; p++)
		{
			double		v = NAN;

			if (s->balance_rule >= 0 && t->values[s->balance_rule].player_values != NULL)
				v = t->values[s->balance_rule].player_values[p];
			s->ratings[n] = v;
			s->party[n] = k;
			if (!isnan(v))
			{
				sum += v;
				known++;
			}
			n++;
		}
	}
	/* players without a value count as the match's average */
	fill = known > 0 ? sum / known : 0;
	for (p = 0; p < n; p++)
		if (isnan(s->ratings[p]))
			s->ratings[p] = fill;
	return n;
}

/*
 * Splits the gathered tickets into teams of the given sizes (or, failing
 * that, any sizes within the teams' bounds) and checks the team rules.
 * Sets ticket_team, actual_size and *team_spread, the spread between the
 * teams' averages of the balancing attribute.
 */
static bool
FormTeams(SearchState *s, const int *sizes, double *team_spread)
{
	const MmQueueConfig *config = s->config;
	MmBalanceInput input;
	int			n = PreparePlayers(s);
	int			k,
				t,
				p;
	double		lo_avg = 0,
				hi_avg = 0;
	double		team_sum[MM_MAX_TEAMS];

	input.n = n;
	input.ratings = s->ratings;
	/* every player alone on a ticket: the party ids all differ, as with none */
	input.party = s->all_solo ? NULL : s->party;
	input.team_count = config->nteams;
	input.team_size = sizes;
	if (!MmBalanceTeams(&input, s->team_of, NULL))
	{
		input.team_size = NULL;
		if (!MmBalanceTeams(&input, s->team_of, NULL))
			return false;
	}

	for (t = 0; t < config->nteams; t++)
	{
		s->actual_size[t] = 0;
		team_sum[t] = 0;
	}
	p = 0;
	for (k = 0; k < s->nchosen; k++)
	{
		s->ticket_team[k] = s->team_of[p];
		p += s->chosen_tickets[k]->nplayers;
	}
	for (p = 0; p < n; p++)
	{
		s->actual_size[s->team_of[p]]++;
		team_sum[s->team_of[p]] += s->ratings[p];
	}
	for (t = 0; t < config->nteams; t++)
	{
		double		avg;

		if (s->actual_size[t] < config->teams[t].min || s->actual_size[t] > config->teams[t].max)
			return false;
		avg = team_sum[t] / s->actual_size[t];
		if (t == 0)
			lo_avg = hi_avg = avg;
		lo_avg = Min(lo_avg, avg);
		hi_avg = Max(hi_avg, avg);
	}
	*team_spread = hi_avg - lo_avg;
	return true;
}

/* Whether the team rules hold; adds their weighted closeness. */
static bool
CheckTeamRules(SearchState *s, double *closeness_sum, double *weight_sum)
{
	MmTeamsView view;
	int			r;

	view.nteams = s->config->nteams;
	view.team_size = s->actual_size;
	view.ntickets = s->nchosen;
	view.tickets = s->chosen_tickets;
	view.ticket_team = s->ticket_team;
	for (r = 0; r < s->config->nrules; r++)
	{
		const MmRuleConfig *rule = &s->config->rules[r];
		double		c;

		if (!s->rule_on[r] || s->handlers[r]->scope != MM_SCOPE_TEAMS)
			continue;
		if (!s->handlers[r]->check_teams(rule, r, &view, s->rule_threshold[r], &c))
			return false;
		*closeness_sum += rule->weight * c;
		*weight_sum += rule->weight;
	}
	return true;
}

/* Records the gathered tickets as a match and takes them out of the pool. */
static void
EmitMatch(SearchState *s, double closeness_sum, double weight_sum)
{
	const MmQueueConfig *config = s->config;
	MmFoundMatch *m;
	int			r,
				k;
	double		quality;

	if (s->result->nmatches == s->matches_allocated)
	{
		s->matches_allocated *= 2;
		s->result->matches = repalloc(s->result->matches,
									  sizeof(MmFoundMatch) * s->matches_allocated);
	}
	m = &s->result->matches[s->result->nmatches++];
	m->ntickets = s->nchosen;
	m->nplayers = s->chosen_players;
	m->tickets = MemoryContextAlloc(s->result_context, sizeof(int) * 2 * s->nchosen);
	m->ticket_team = m->tickets + s->nchosen;
	for (k = 0; k < s->nchosen; k++)
	{
		m->tickets[k] = s->chosen[k];
		m->ticket_team[k] = config->nteams > 0 ? s->ticket_team[k] : -1;
		if (s->chosen[k] != s->anchor)
			RemoveTicket(s, s->chosen[k]);
	}

	/* ticket rules: weighted closeness; region from the first latency rule */
	m->region = -1;
	m->rule_steps = MemoryContextAlloc(s->result_context,
									   sizeof(MmRuleStep) * Max(config->nrules, 1));
	for (r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];

		m->rule_steps[r].step = s->rule_step[r];
		m->rule_steps[r].threshold = s->rule_threshold[r];
		m->rule_steps[r].off = !s->rule_on[r];
		if (rule->type == MM_RULE_LATENCY && m->region < 0)
			m->region = MmBestRegion(s->context, &s->states[r], NULL);
		if (!s->rule_on[r] || s->handlers[r]->scope != MM_SCOPE_TICKETS)
			continue;
		closeness_sum += rule->weight *
			s->handlers[r]->closeness(s->context, &s->states[r], s->rule_threshold[r]);
		weight_sum += rule->weight;
	}
	quality = weight_sum > 0 ? closeness_sum / weight_sum : 1.0;
	/* NaN-safe clamp: matches_quality_range must hold whatever the inputs */
	if (!(quality >= 0.0))
		quality = 0.0;
	if (quality > 1.0)
		quality = 1.0;
	m->quality = quality;
}

/* Tries to form a match around the current anchor. */
static void
SearchAnchor(SearchState *s)
{
	const MmQueueConfig *config = s->config;
	const MmTicket *anchor = &s->tickets[s->anchor];
	int			r;
	int			max_spread = -1;
	int			total;
	int			reachable;

	for (r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];

		s->rule_on[r] = MmRuleThresholdAt(rule, anchor->age_seconds,
										  &s->rule_threshold[r], &s->rule_step[r]);
		if (!s->rule_on[r])
			s->rule_threshold[r] = 0;
		if (s->rule_on[r] && rule->type == MM_RULE_TEAM_SIZE_BALANCE)
		{
			double		threshold = s->rule_threshold[r];
			int			spread;

			/* bounded before the cast: a spread beyond the largest match is no limit */
			if (!(threshold >= 0))
				threshold = 0;
			if (threshold > MM_MAX_MATCH_SIZE)
				threshold = MM_MAX_MATCH_SIZE;
			spread = (int) floor(threshold);

			max_spread = max_spread < 0 ? spread : Min(max_spread, spread);
		}
	}
	s->nfit = 0;
	for (r = 0; r < config->nrules; r++)
	{
		if (!s->rule_on[r])
			continue;
		s->fit_rule[s->nfit] = r;
		s->fit_can_add[s->nfit] = s->handlers[r]->scope == MM_SCOPE_TICKETS ?
			s->handlers[r]->can_add : NULL;
		s->nfit++;
	}
	CandidatesStart(s);

	if (config->nteams == 0)
	{
		/* free-for-all: as many as match_size.max allows, at least min */
		bool		packing_skipped;

		if (Gather(s, config->match_max, NULL, &packing_skipped) >= config->match_min)
			EmitMatch(s, 0, 0);
		return;
	}

	reachable = config->match_max;
	for (total = config->match_max; total >= config->match_min; total--)
	{
		double		closeness_sum = 0,
					weight_sum = 0,
					team_spread = 0;
		int			got;
		bool		packing_skipped;

		if (total > reachable || !EvenTeamSizes(config, total, max_spread, s->team_size))
			continue;
		got = Gather(s, total, s->team_size, &packing_skipped);
		if (got < total)
		{
			/*
			 * A smaller target gathers the same tickets, up to got players,
			 * unless other team sizes would have let a party in.
			 */
			if (!packing_skipped)
				reachable = got;
			continue;
		}
		if (!FormTeams(s, s->team_size, &team_spread))
			continue;
		if (!CheckTeamRules(s, &closeness_sum, &weight_sum))
			continue;

		/*
		 * Team balance in the quality: without a team_difference rule to
		 * measure it, an implicit component of weight 1, the spread of the
		 * team averages against the main difference rule's threshold.
		 */
		if (s->balance_rule >= 0 && s->balance_rule == s->main_rule && s->rule_on[s->main_rule])
		{
			double		allowed = s->rule_threshold[s->main_rule];

			double		c = allowed > 0 ? 1.0 - team_spread / allowed : 1.0;

			closeness_sum += c >= 0.0 ? c : 0.0;	/* NaN counts as 0 */
			weight_sum += 1.0;
		}
		EmitMatch(s, closeness_sum, weight_sum);
		return;
	}
}

/* Anchors oldest first; see the file header and match_search.h. */
MmSearchResult *
MmSearchMatches(const MmRuleContext *context, MmTicket *tickets, int ntickets)
{
	SearchState s;
	int			a;
	MemoryContext result_context = CurrentMemoryContext;
	MemoryContext scratch;

	/* the pool structures go when the search ends; the matches stay */
	scratch = AllocSetContextCreate(result_context, "mm match search", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(scratch);
	SearchInit(&s, context, tickets, ntickets, result_context);
	for (a = 0; a < ntickets; a++)
	{
		if (s.dead[a])
			continue;
		/* statement_timeout and pg_cancel_backend() act during a long tick */
		CHECK_FOR_INTERRUPTS();
		/* the anchor leaves the pool: later anchors only see younger tickets */
		RemoveTicket(&s, a);
		s.anchor = a;
		SearchAnchor(&s);
	}
	s.result->scratch_bytes = (int64) MemoryContextMemAllocated(scratch, true);
	MemoryContextSwitchTo(result_context);
	MemoryContextDelete(scratch);
	return s.result;
}
