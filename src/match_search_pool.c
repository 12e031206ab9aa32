/*
 * match_search_pool.c
 *	  The search's pool and candidates (pure C, no SPI): the alive tickets
 *	  (union-find "next alive" pointers), the main rule's value-sorted array
 *	  with its Fenwick tree of alive counts, the search's set-up, every
 *	  rule's step at an age, the candidates of an anchor (walk or window, see
 *	  match_search.c) and their ranking (weights, batching_preference).
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "match_search_internal.h"

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
void
MmSearchRemoveTicket(SearchState *s, int i)
{
	s->dead[i] = true;
	s->alive--;
	s->next_age[i] = i + 1;
	if (s->roles != NULL)
		for (int p = 0; p < s->tickets[i].nplayers; p++)
		{
			s->pool_accept[s->tickets[i].role_accept[p]]--;
			s->pool_first[MmSearchFirstChoices(s, &s->tickets[i], p)]--;
		}
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

MmRoleMask
MmSearchFirstChoices(const SearchState *s, const MmTicket *t, int player)
{
	const uint8 *rank = &t->role_rank[player * MM_MAX_ROLES];
	MmRoleMask	first = 0;

	for (int r = 0; r < s->roles->nroles; r++)
		if (rank[r] == 0)
			first |= 1 << r;
	return first;
}

/* Whether players counted by mask can fill seats per role (every seat). */
static bool
CountsFillSeats(int nroles, const int *counts, const int *seats, int players)
{
	int			all = (1 << nroles) - 1;

	for (int set = 1; set <= all; set++)
	{
		int			need = 0,
					outside = 0;
		int			rest = all & ~set;

		for (int r = 0; r < nroles; r++)
			if (set & (1 << r))
				need += seats[r];
		/* the players who may take no role of set: their masks lie in the rest */
		for (int mask = rest;; mask = (mask - 1) & rest)
		{
			outside += counts[mask];
			if (mask == 0)
				break;
		}
		if (players - outside < need)
			return false;
	}
	return true;
}

bool
MmSearchPoolCanSeat(const SearchState *s, bool first_only)
{
	const MmRolesConfig *roles = s->roles;
	const MmTicket *anchor = &s->tickets[s->anchor];
	int			counts[1 << MM_MAX_ROLES];
	int			nmasks = 1 << roles->nroles;
	int			players = 0;
	int			choice[MM_MAX_TEAMS];

	memcpy(counts, first_only ? s->pool_first : s->pool_accept, sizeof(int) * nmasks);
	/* the anchor left the pool when its turn came */
	if (s->dead[s->anchor])
		for (int p = 0; p < anchor->nplayers; p++)
			counts[first_only ? MmSearchFirstChoices(s, anchor, p) : anchor->role_accept[p]]++;
	for (int m = 0; m < nmasks; m++)
		players += counts[m];
	memset(choice, 0, sizeof(int) * roles->ngroups);
	for (int tried = 0; tried < MM_MAX_COMPOSITION_CHOICES; tried++)
	{
		int			seats[MM_MAX_ROLES] = {0};
		int			g;

		for (g = 0; g < roles->ngroups; g++)
			for (int r = 0; r < roles->nroles; r++)
				seats[r] += roles->compositions[g][choice[g]].seats[r];
		if (CountsFillSeats(roles->nroles, counts, seats, players))
			return true;
		for (g = 0; g < roles->ngroups; g++)
		{
			if (++choice[g] < roles->ncompositions[g])
				break;
			choice[g] = 0;
		}
		if (g == roles->ngroups)
			break;
	}
	return false;
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
void
MmSearchInit(SearchState *s, const MmRuleContext *context, MmTicket *tickets, int ntickets,
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
			s->ticket_add[s->nticket_rules] =
				config->rules[i].in_compound ? NULL : s->handlers[i]->add;
			s->nticket_rules++;
			if ((s->handlers[i]->check_final != NULL && !config->rules[i].in_compound) ||
				config->rules[i].type == MM_RULE_COMPOUND)
				s->has_final = true;
		}
		/* the window: a difference rule checked on its own */
		if (config->rules[i].type == MM_RULE_DIFFERENCE && s->main_rule < 0 &&
			!config->rules[i].in_compound)
			s->main_rule = i;
	}
	if (config->min_tickets > 1)
		s->has_final = true;
	for (i = 0; i < nrules && s->balance_rule < 0; i++)
		if (config->rules[i].type == MM_RULE_TEAM_DIFFERENCE)
			s->balance_rule = i;
	if (s->balance_rule < 0)
		s->balance_rule = s->main_rule;
	/* a rating-deviation widening reaches further than the threshold */
	s->main_widen = 0;
	if (s->main_rule >= 0 && config->rules[s->main_rule].widen_by_rd > 0)
		for (i = 0; i < ntickets; i++)
			s->main_widen = Max(s->main_widen, tickets[i].values[s->main_rule].widen);
	/* strategy balanced: the balanced attribute, extracted after the rules */
	if (config->balanced)
		s->balance_rule = nrules;

	s->dead = palloc0(sizeof(bool) * ntickets);
	s->alive = ntickets;
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
		MmRuleStateAlloc(&s->states[i], MmRuleStateCapacity(config, i, tickets, ntickets));
	s->compound_rule = palloc(sizeof(int) * Max(nrules, 1));
	s->cand = palloc(sizeof(int) * Max(ntickets, 1));
	/* ranking: twice the largest match, at least 16 candidates */
	s->rank_limit = Max(16, 2 * maxp);
	s->rank_rule = palloc(sizeof(int) * Max(nrules, 1));
	s->ranked = palloc(sizeof(int) * s->rank_limit);
	s->rank_cost = palloc(sizeof(double) * s->rank_limit);
	s->dfs_suffix = palloc(sizeof(int) * (s->rank_limit + 1));
	s->latency_rule = -1;
	for (i = 0; i < nrules && s->latency_rule < 0; i++)
		if (config->rules[i].type == MM_RULE_LATENCY)
			s->latency_rule = i;
	if (config->batching == MM_BATCHING_SORTED && config->nsort > 0)
		s->sort_keys = palloc(sizeof(double) * s->rank_limit * config->nsort);
	if (config->batching == MM_BATCHING_LARGEST_POPULATION && s->latency_rule >= 0)
	{
		s->region_population = palloc0(sizeof(int) * Max(context->nregions, 1));
		for (i = 0; i < ntickets; i++)
		{
			const MmRuleValue *v = &tickets[i].values[s->latency_rule];

			for (int k = 0; k < v->nregions; k++)
				s->region_population[v->regions[k].region]++;
		}
	}
	s->search_budget = MM_EXHAUSTIVE_SEARCH_NODES;
	s->chosen = palloc(sizeof(int) * maxp);
	s->chosen_tickets = palloc(sizeof(MmTicket *) * maxp);
	s->ratings = palloc(sizeof(double) * maxp);
	s->party = palloc(sizeof(int) * maxp);
	s->team_of = palloc(sizeof(int) * maxp);
	s->ticket_team = palloc0(sizeof(int) * maxp);
	s->team_size = palloc(sizeof(int) * Max(config->nteams, 1));
	s->actual_size = palloc(sizeof(int) * Max(config->nteams, 1));
	s->team_max = palloc(sizeof(int) * Max(config->nteams, 1));
	s->team_min = palloc(sizeof(int) * Max(config->nteams, 1));
	for (i = 0; i < config->nteams; i++)
		s->team_max[i] = config->teams[i].max;
	s->roles = config->roles;
	if (s->roles != NULL)
	{
		s->role_accept = palloc(sizeof(MmRoleMask) * maxp);
		s->role_rank = palloc(sizeof(uint8 *) * maxp);
		s->role_ticket_of = palloc(sizeof(int) * maxp);
		s->role_ticket_size = palloc(sizeof(int) * maxp);
		s->player_role = palloc(sizeof(int) * maxp);
		s->player_autofilled = palloc(sizeof(bool) * maxp);
		s->pool_accept = palloc0(sizeof(int) << s->roles->nroles);
		s->pool_first = palloc0(sizeof(int) << s->roles->nroles);
		for (i = 0; i < ntickets; i++)
			for (int p = 0; p < tickets[i].nplayers; p++)
			{
				s->pool_accept[tickets[i].role_accept[p]]++;
				s->pool_first[MmSearchFirstChoices(s, &tickets[i], p)]++;
			}
	}

	s->result = MemoryContextAllocZero(result_context, sizeof(MmSearchResult));
	s->result->nrules = config->nrules;
	s->result->rule_passed = s->rule_passed =
		MemoryContextAllocZero(result_context, sizeof(int64) * Max(config->nrules, 1));
	s->result->rule_failed = s->rule_failed =
		MemoryContextAllocZero(result_context, sizeof(int64) * Max(config->nrules, 1));
	s->matches_allocated = 16;
	s->result->matches = MemoryContextAlloc(result_context,
											sizeof(MmFoundMatch) * s->matches_allocated);
}

/*
 * Every rule's step at an age (the rules that are on, their thresholds), and
 * the team sizes' bounds then.  Returns the largest team size spread
 * team_size_balance allows (-1: no limit).
 */
int
MmSearchSetStepsAt(SearchState *s, double age)
{
	const MmQueueConfig *config = s->config;
	int			max_spread = -1;
	int			r;

	for (r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];

		s->rule_on[r] = MmRuleThresholdAt(rule, age,
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
	for (r = 0; r < config->nteams; r++)
		s->team_min[r] = MmTeamMinAt(&config->teams[r], age);
	s->match_min = MmMatchMinAt(config, age);
	return max_spread;
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
void
MmSearchCandidatesStart(SearchState *s)
{
	const MmRuleValue *v;

	s->ncand = 0;
	s->cand_done = false;
	s->cand_walking = true;
	s->walk_cursor = s->anchor + 1;
	s->walk_budget = -1;		/* unlimited */
	s->windowed = false;
	s->window_excluded = 0;
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
		double		t = s->rule_threshold[s->main_rule] + s->main_widen;
		double		slack = 4 * DBL_EPSILON * (fabs(v->number) + t);

		s->window_lo = v->number - t - slack;
		s->window_hi = v->number + t + slack;
	}
	{
		int			lo = LowerBound(s, s->window_lo, false);
		int			hi = LowerBound(s, s->window_hi, true);
		long		alive = FenwickPrefix(s->fenwick, hi) - FenwickPrefix(s->fenwick, lo) + s->alive_any;

		/* the pool's other tickets: outside the window, or without a value */
		s->window_excluded = s->alive - (int) alive;
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
int
MmSearchCandidateAt(SearchState *s, int k)
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

/* A ranked candidate: its cost against the anchor, then its age (index). */
typedef struct RankEntry
{
	double		cost;
	int			ticket;
} RankEntry;

#define ST_SORT SortRankEntries
#define ST_ELEMENT_TYPE RankEntry
#define ST_COMPARE(a, b) ((a)->cost < (b)->cost ? -1 : (a)->cost > (b)->cost ? 1 : \
						  ((a)->ticket > (b)->ticket) - ((a)->ticket < (b)->ticket))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * A candidate's cost under algorithm.batching_preference (see
 * docs/queues-and-tickets.md): sorted stores its distances on each
 * sort_by_attributes in sort_keys (row k) and returns the first; missing
 * values rank last.
 */
static double
BatchingCost(SearchState *s, const MmTicket *anchor, int i, int k)
{
	const MmTicket *t = &s->tickets[i];
	const MmQueueConfig *config = s->config;

	switch (config->batching)
	{
		case MM_BATCHING_SORTED:
			for (int a = 0; a < config->nsort; a++)
			{
				const MmRuleValue *va = &anchor->values[config->nrules + 1 + a];
				const MmRuleValue *vc = &t->values[config->nrules + 1 + a];
				double		d = va->kind == MM_VALUE_PRESENT && vc->kind == MM_VALUE_PRESENT ?
					fabs(vc->number - va->number) : 1e300;

				s->sort_keys[k * config->nsort + a] = d;
			}
			return s->sort_keys[k * config->nsort];
		case MM_BATCHING_FASTEST_REGION:
			if (s->latency_rule < 0)
				return 0;
			return MmRuleHandlerFor(MM_RULE_LATENCY)->distance(s->context,
															   &config->rules[s->latency_rule],
															   &anchor->values[s->latency_rule],
															   &t->values[s->latency_rule],
															   s->rule_on[s->latency_rule] ?
															   s->rule_threshold[s->latency_rule] :
															   config->rules[s->latency_rule].threshold);
		case MM_BATCHING_LARGEST_POPULATION:
			{
				const MmRuleValue *va,
						   *vc;
				int			best = 0;
				int			a = 0,
							b = 0;

				if (s->region_population == NULL)
					return 0;
				va = &anchor->values[s->latency_rule];
				vc = &t->values[s->latency_rule];
				/* the most populated region both list (either listing none: the other's) */
				if (va->nregions == 0 || vc->nregions == 0)
				{
					const MmRuleValue *v = va->nregions == 0 ? vc : va;

					for (int r = 0; r < v->nregions; r++)
						best = Max(best, s->region_population[v->regions[r].region]);
				}
				else
					while (a < va->nregions && b < vc->nregions)
					{
						if (va->regions[a].region < vc->regions[b].region)
							a++;
						else if (va->regions[a].region > vc->regions[b].region)
							b++;
						else
						{
							best = Max(best, s->region_population[va->regions[a].region]);
							a++;
							b++;
						}
					}
				return 1.0 / (1.0 + best);
			}
		case MM_BATCHING_RANDOM:
			{
				/* a fixed order: a hash of the two ticket ids */
				uint64		h = (uint64) t->id * UINT64CONST(0x9E3779B97F4A7C15) ^
					(uint64) anchor->id * UINT64CONST(0xC2B2AE3D27D4EB4F);

				h ^= h >> 29;
				h *= UINT64CONST(0xBF58476D1CE4E5B9);
				h ^= h >> 32;
				return (double) (h >> 11) / 9007199254740992.0;
			}
		case MM_BATCHING_RULES:
			break;
	}
	return 0;
}

/*
 * batching_preference sorted: by the distance on each sort attribute in
 * turn, then by age (insertion sort over the rows of sort_keys).
 */
static void
SortBySortKeys(SearchState *s, RankEntry *entries)
{
	int			nsort = s->config->nsort;
	int		   *row = palloc(sizeof(int) * Max(s->nranked, 1));

	for (int k = 0; k < s->nranked; k++)
		row[k] = k;
	for (int k = 1; k < s->nranked; k++)
	{
		int			v = row[k];
		int			j = k;

		for (; j > 0; j--)
		{
			const double *x = &s->sort_keys[row[j - 1] * nsort];
			const double *y = &s->sort_keys[v * nsort];
			int			c = 0;

			for (int a = 0; a < nsort && c == 0; a++)
				c = (x[a] > y[a]) - (x[a] < y[a]);
			if (c == 0)
				c = (entries[row[j - 1]].ticket > entries[v].ticket) -
					(entries[row[j - 1]].ticket < entries[v].ticket);
			if (c <= 0)
				break;
			row[j] = row[j - 1];
		}
		row[j] = v;
	}
	{
		RankEntry  *copy = palloc(sizeof(RankEntry) * Max(s->nranked, 1));

		memcpy(copy, entries, sizeof(RankEntry) * s->nranked);
		for (int k = 0; k < s->nranked; k++)
			entries[k] = copy[row[k]];
		pfree(copy);
	}
	pfree(row);
}

/*
 * Ranks the anchor's first rank_limit candidates (age order) by their cost
 * against the anchor (MmCandidateCost: each ranking rule's distance times
 * its weight), ties by age.  Without a ranking rule the order stays by age.
 */
void
MmSearchRankCandidates(SearchState *s)
{
	const MmTicket *anchor = &s->tickets[s->anchor];
	RankEntry	entries_local[64];
	RankEntry  *entries = s->rank_limit <= 64 ? entries_local :
		palloc(sizeof(RankEntry) * s->rank_limit);
	bool		any_cost = false;
	int			k;

	s->nranked = 0;
	for (k = 0; k < s->rank_limit; k++)
	{
		int			i = MmSearchCandidateAt(s, k);
		double		cost = 0;

		if (i < 0)
			break;
		if (s->config->batching == MM_BATCHING_RULES)
		{
			for (int q = 0; q < s->nrank_rules; q++)
			{
				int			r = s->rank_rule[q];
				const MmRuleConfig *rule = &s->config->rules[r];

				cost += rule->weight *
					s->handlers[r]->distance(s->context, rule, &anchor->values[r],
											 &s->tickets[i].values[r], s->rule_threshold[r]);
			}
		}
		else
			cost = BatchingCost(s, anchor, i, k);
		if (!(cost >= 0))
			cost = 0;			/* NaN-safe */
		entries[k].cost = cost;
		entries[k].ticket = i;
		any_cost |= cost > 0;
		s->nranked++;
	}
	if (s->sort_keys != NULL)
		SortBySortKeys(s, entries);
	else if (any_cost && s->nranked > 48)
		SortRankEntries(entries, s->nranked);
	else if (any_cost)
	{
		/* insertion sort: a few dozen entries, mostly short moves */
		for (k = 1; k < s->nranked; k++)
		{
			RankEntry	e = entries[k];
			int			j = k;

			while (j > 0 && (entries[j - 1].cost > e.cost ||
							 (entries[j - 1].cost == e.cost && entries[j - 1].ticket > e.ticket)))
			{
				entries[j] = entries[j - 1];
				j--;
			}
			entries[j] = e;
		}
	}
	for (k = 0; k < s->nranked; k++)
	{
		s->ranked[k] = entries[k].ticket;
		s->rank_cost[k] = entries[k].cost;
	}
	if (entries != entries_local)
		pfree(entries);
}
