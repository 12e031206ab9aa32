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

/* Nodes one anchor's exhaustive search may visit, and the whole search. */
#define MM_EXHAUSTIVE_ANCHOR_NODES 262144L
#define MM_EXHAUSTIVE_SEARCH_NODES 8000000L
/* a leaf that forms teams costs as much as this many nodes */
#define MM_EXHAUSTIVE_LEAF_COST 64

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
	AddFunction *ticket_add;	/* ... and their handlers' add (NULL: a rule
								 * named in a compound, MmLeafJoin) */
	int			nticket_rules;
	bool		has_final;		/* a rule with a whole-match condition, a
								 * compound, or min_tickets > 1 */

	/* the pool: alive tickets */
	bool	   *dead;
	int		   *next_age;		/* union-find: next alive ticket index >= i */

	/* main numeric rule: value-sorted array of tickets with a value */
	int			main_rule;		/* -1: none */
	double		main_widen;		/* its largest widen_by_rd widening of any ticket */
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
	int		   *compound_rule;	/* the compounds on (TicketFits) */
	int			ncompound;
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

	/* ranking: the first rank_limit candidates, by (cost, age) */
	int			rank_limit;
	int			latency_rule;	/* the first latency rule, -1: none */
	int		   *region_population;	/* largest_population: tickets per region */
	double	   *sort_keys;		/* sorted: rank_limit x nsort distances */
	int		   *rank_rule;		/* rules on that rank (weight > 0, distance) */
	int			nrank_rules;
	int		   *ranked;
	double	   *rank_cost;
	int			nranked;

	/* exhaustive fallback (ExhaustiveSearch) */
	MmRuleState **dfs_states;	/* per depth: every rule's state, or NULL */
	int			dfs_depths;
	int		   *dfs_suffix;		/* players of ranked[j..] */
	long		dfs_budget;		/* nodes left for this anchor */
	long		search_budget;	/* nodes left for the whole search */

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
	int		   *team_max;		/* each team's max */
	int		   *team_min;		/* each team's min at the anchor's age */
	int			match_min;		/* the match's min players at the anchor's age */
	double		min_age;		/* newest: candidates younger than this wait */
	int		   *actual_size;
	int		   *ticket_team;
	const MmTicket **chosen_tickets;

	MemoryContext result_context;	/* the caller's: the matches live there */
	MmSearchResult *result;
	int64	   *rule_passed;	/* = result's: per rule, candidate checks passed */
	int64	   *rule_failed;	/* ... and failed (mm.rule_stats) */
	/*
	 * The counts take one pass per anchor and age: the first greedy pass over
	 * its candidates (Gather) and the team check of what it gathered.  Later
	 * passes (other team sizes, the exhaustive search) try the same
	 * candidates again and are not counted, nor is the anchor's pass of its
	 * own check (it is no candidate; its failure, a missing value, is).
	 */
	bool		counting;
	bool		checking_anchor;
	int			alive;			/* tickets in the pool */
	int			window_excluded;	/* alive tickets outside the anchor's window */
	int			matches_allocated;
} SearchState;

static int	SetStepsAt(SearchState *s, double age);

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
	s->alive--;
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
static void
RankCandidates(SearchState *s)
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
		int			i = CandidateAt(s, k);
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

/*
 * The k-th candidate in search order: the ranked ones first, then the rest in
 * age order; -1 when there is none.
 */
static inline int
RankedCandidateAt(SearchState *s, int k)
{
	if (k < s->nranked)
		return s->ranked[k];
	return CandidateAt(s, k);
}

/* Whether a ticket can join the candidate match, rule by rule. */
static bool
TicketFits(SearchState *s, MmRuleState *states, const MmTicket *t)
{
	for (int k = 0; k < s->nfit; k++)
	{
		int			r = s->fit_rule[k];

		if (t->values[r].kind == MM_VALUE_MISSING ||
			(s->fit_can_add[k] != NULL &&
			 !s->fit_can_add[k] (s->context, &states[r], &t->values[r],
								 s->rule_threshold[r])))
		{
			if (s->counting)
				s->rule_failed[r]++;
			return false;
		}
		if (s->fit_can_add[k] != NULL && s->counting && !s->checking_anchor)
			s->rule_passed[r]++;
	}
	for (int k = 0; k < s->ncompound; k++)
	{
		int			r = s->compound_rule[k];

		if (!MmCompoundCanAdd(s->context, &s->config->rules[r], states,
							  t->values, s->rule_on, s->rule_threshold))
		{
			if (s->counting)
				s->rule_failed[r]++;
			return false;
		}
		if (s->counting && !s->checking_anchor)
			s->rule_passed[r]++;
	}
	return true;
}

/* The whole-match conditions (rules.h MmFinalHolds) and min_tickets. */
static inline bool
FinalHolds(SearchState *s, const MmRuleState *states)
{
	if (!s->has_final)
		return true;
	return s->nchosen >= s->config->min_tickets &&
		MmFinalHolds(s->context, states, s->rule_on, s->rule_threshold);
}

/* Adds a ticket to the candidate match and every ticket rule's state. */
static void
TicketJoin(SearchState *s, MmRuleState *states, int i)
{
	const MmTicket *t = &s->tickets[i];

	for (int k = 0; k < s->nticket_rules; k++)
	{
		int			r = s->ticket_rule[k];

		if (s->ticket_add[k] != NULL)
			s->ticket_add[k] (s->context, &states[r], &t->values[r]);
		else
			MmLeafJoin(s->context, &states[r], &t->values[r], s->rule_threshold[r]);
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

		MmRuleStateInit(s->context, &s->config->rules[r], &s->states[r]);
	}
	s->nchosen = 0;
	s->chosen_players = 0;
	if (s->tickets[s->anchor].nplayers > target)
		return 0;
	s->checking_anchor = true;
	if (!TicketFits(s, s->states, &s->tickets[s->anchor]))
	{
		s->checking_anchor = false;
		return 0;
	}
	s->checking_anchor = false;
	if (sizes != NULL && s->tickets[s->anchor].nplayers > 1 &&
		!PartiesFit(s, sizes, s->tickets[s->anchor].nplayers))
		return 0;
	TicketJoin(s, s->states, s->anchor);
	for (k = 0; s->chosen_players < target; k++)
	{
		int			i = RankedCandidateAt(s, k);
		int			np;

		if (i < 0)
		{
			/*
			 * Every candidate was considered: the tickets outside the main
			 * rule's window were rejected by that rule without a check.
			 */
			if (s->counting && s->window_excluded > 0)
				s->rule_failed[s->main_rule] += s->window_excluded;
			break;
		}
		/* one anchor may scan a large pool, for each target size */
		if ((k & 4095) == 4095)
			CHECK_FOR_INTERRUPTS();
		np = s->tickets[i].nplayers;
		if (s->chosen_players + np > target || s->tickets[i].age_seconds < s->min_age)
			continue;
		if (!TicketFits(s, s->states, &s->tickets[i]))
			continue;
		if (sizes != NULL && np > 1 && !PartiesFit(s, sizes, np))
		{
			*packing_skipped = true;
			continue;
		}
		TicketJoin(s, s->states, i);
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
EvenTeamSizes(const MmQueueConfig *config, const int *team_min, int total, int max_spread,
			  int *sizes)
{
	int			t;
	int			rest = total;
	int			lo,
				hi;

	for (t = 0; t < config->nteams; t++)
	{
		sizes[t] = team_min[t];
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

		if (s->actual_size[t] < s->team_min[t] || s->actual_size[t] > config->teams[t].max)
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
		{
			if (s->counting)
				s->rule_failed[r]++;
			return false;
		}
		if (s->counting)
			s->rule_passed[r]++;
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

	/* newest: the steps are those of the match's youngest ticket */
	if (config->newest_age)
	{
		double		youngest = s->tickets[s->chosen[0]].age_seconds;

		for (k = 1; k < s->nchosen; k++)
			youngest = Min(youngest, s->tickets[s->chosen[k]].age_seconds);
		(void) SetStepsAt(s, youngest);
	}
	if (s->result->nmatches == s->matches_allocated)
	{
		s->matches_allocated *= 2;
		s->result->matches = repalloc(s->result->matches,
									  sizeof(MmFoundMatch) * s->matches_allocated);
	}
	/* the tickets in age order (the search chose them in ranked order) */
	for (k = 1; k < s->nchosen; k++)
	{
		int			i = s->chosen[k];
		int			team = s->ticket_team[k];
		int			j = k;

		while (j > 0 && s->chosen[j - 1] > i)
		{
			s->chosen[j] = s->chosen[j - 1];
			s->ticket_team[j] = s->ticket_team[j - 1];
			j--;
		}
		s->chosen[j] = i;
		s->ticket_team[j] = team;
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
			m->region = MmChooseRegion(s->context, &s->states[r], s->rule_threshold[r], NULL);
		if (!s->rule_on[r] || s->handlers[r]->scope != MM_SCOPE_TICKETS || rule->in_compound)
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

/*
 * Teams for the gathered tickets (FormTeams), then the team rules; adds the
 * team rules' weighted closeness, and the implicit team balance component,
 * to the sums.
 */
static bool
TryTeams(SearchState *s, const int *sizes, double *closeness_sum, double *weight_sum)
{
	double		team_spread = 0;

	*closeness_sum = 0;
	*weight_sum = 0;
	if (!FormTeams(s, sizes, &team_spread))
		return false;
	if (!CheckTeamRules(s, closeness_sum, weight_sum))
		return false;

	/*
	 * Team balance in the quality: without a team_difference rule to measure
	 * it, an implicit component of weight 1, the spread of the team averages
	 * against the main difference rule's threshold.
	 */
	if (s->balance_rule >= 0 && s->balance_rule == s->main_rule && s->rule_on[s->main_rule])
	{
		double		allowed = s->rule_threshold[s->main_rule];
		double		c = allowed > 0 ? 1.0 - team_spread / allowed : 1.0;

		*closeness_sum += c >= 0.0 ? c : 0.0;	/* NaN counts as 0 */
		*weight_sum += 1.0;
	}
	return true;
}

/*
 * Places chosen tickets k.. on teams (each whole on one team, within the
 * teams' max), then checks the team minimums and the team rules: every
 * placement, for the sets where the balanced split (FormTeams) fails a team
 * rule that another split would satisfy (team_difference with teams of
 * unequal sizes: the balancer evens totals, the rule compares averages).
 */
static bool
PlaceAny(SearchState *s, int k, double *closeness_sum, double *weight_sum)
{
	const MmQueueConfig *config = s->config;

	if (--s->dfs_budget < 0 || --s->search_budget < 0)
		return false;
	if (k == s->nchosen)
	{
		for (int t = 0; t < config->nteams; t++)
			if (s->actual_size[t] < s->team_min[t])
				return false;
		*closeness_sum = 0;
		*weight_sum = 0;
		return CheckTeamRules(s, closeness_sum, weight_sum);
	}
	for (int t = 0; t < config->nteams; t++)
	{
		int			np = s->chosen_tickets[k]->nplayers;
		bool		same = false;

		if (s->actual_size[t] + np > config->teams[t].max)
			continue;
		/* an empty team like an earlier empty one of the same bounds: tried */
		for (int u = 0; u < t && !same; u++)
			same = s->actual_size[u] == 0 && s->actual_size[t] == 0 &&
				s->team_min[u] == s->team_min[t] &&
				config->teams[u].max == config->teams[t].max;
		if (same)
			continue;
		s->ticket_team[k] = t;
		s->actual_size[t] += np;
		if (PlaceAny(s, k + 1, closeness_sum, weight_sum))
			return true;
		s->actual_size[t] -= np;
		if (s->dfs_budget < 0 || s->search_budget < 0)
			return false;
	}
	return false;
}

/* TryTeams, then (exhaustive search only) every other placement. */
static bool
TryTeamsExhaustive(SearchState *s, const int *sizes, double *closeness_sum, double *weight_sum)
{
	if (TryTeams(s, sizes, closeness_sum, weight_sum))
		return true;
	/* strategy balanced: the teams are the balancer's */
	if (s->config->balanced)
		return false;
	(void) PreparePlayers(s);
	for (int t = 0; t < s->config->nteams; t++)
		s->actual_size[t] = 0;
	return PlaceAny(s, 0, closeness_sum, weight_sum);
}

/* The DFS's rule states at a depth, allocated on first use. */
static MmRuleState *
DfsStates(SearchState *s, int depth)
{
	int			nrules = s->config->nrules;

	if (depth >= s->dfs_depths)
	{
		int			n = Max(depth + 1, 2 * s->dfs_depths);

		if (s->dfs_states == NULL)
			s->dfs_states = palloc0(sizeof(MmRuleState *) * n);
		else
		{
			s->dfs_states = repalloc(s->dfs_states, sizeof(MmRuleState *) * n);
			memset(s->dfs_states + s->dfs_depths, 0,
				   sizeof(MmRuleState *) * (n - s->dfs_depths));
		}
		s->dfs_depths = n;
	}
	if (s->dfs_states[depth] == NULL)
	{
		MmRuleState *level = palloc0(sizeof(MmRuleState) * Max(nrules, 1));

		for (int r = 0; r < nrules; r++)
			MmRuleStateAlloc(&level[r], s->states[r].region_capacity);
		s->dfs_states[depth] = level;
	}
	return s->dfs_states[depth];
}

/* Copies the ticket rules' states (their own arrays stay in place). */
static void
StatesCopy(SearchState *s, MmRuleState *dst, const MmRuleState *src)
{
	for (int k = 0; k < s->nticket_rules; k++)
	{
		int			r = s->ticket_rule[k];

		MmRuleStateCopy(&dst[r], &src[r]);
	}
}

/*
 * Depth-first search over the ranked candidates ranked[from..] for a set
 * that, with the tickets chosen so far, holds lo..hi players, satisfies every
 * ticket rule and (sizes not NULL) forms teams of those sizes that satisfy
 * the team rules.  Candidates are tried in ranked order, so the first set
 * found is the one a ranked greedy with backtracking prefers.  False when
 * there is none or the budget ran out.
 */
static bool
Dfs(SearchState *s, int depth, int from, int lo, int hi, const int *sizes,
	double *closeness_sum, double *weight_sum)
{
	MmRuleState *states = s->dfs_states[depth];

	if (s->chosen_players >= lo)
	{
		if (sizes == NULL)
		{
			/* free-for-all: a larger set may meet a whole-match condition */
			if (FinalHolds(s, states))
				return true;
		}
		else
		{
			s->dfs_budget -= MM_EXHAUSTIVE_LEAF_COST;
			s->search_budget -= MM_EXHAUSTIVE_LEAF_COST;
			return FinalHolds(s, states) &&
				TryTeamsExhaustive(s, sizes, closeness_sum, weight_sum);
		}
	}
	for (int j = from; j < s->nranked; j++)
	{
		int			i = s->ranked[j];
		const MmTicket *t = &s->tickets[i];
		int			np = t->nplayers;
		MmRuleState *next;

		if (s->chosen_players + s->dfs_suffix[j] < lo)
			return false;		/* not enough players left */
		if (--s->dfs_budget < 0 || --s->search_budget < 0)
			return false;
		if ((s->search_budget & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (s->chosen_players + np > hi || t->age_seconds < s->min_age)
			continue;
		if (!TicketFits(s, states, t))
			continue;
		/* any sizes within the teams' bounds: the leaf may place freely */
		if (sizes != NULL && np > 1 && !PartiesFit(s, s->team_max, np))
			continue;
		next = DfsStates(s, depth + 1);
		StatesCopy(s, next, states);
		TicketJoin(s, next, i);
		if (Dfs(s, depth + 1, j + 1, lo, hi, sizes, closeness_sum, weight_sum))
			return true;
		s->nchosen--;
		s->chosen_players -= np;
	}
	return false;
}

/*
 * The exhaustive fallback when the ranked greedy formed nothing: a
 * depth-first search over the ranked candidates (see Dfs).  On success the
 * chosen tickets are in s->chosen and their states in s->states.
 */
static bool
ExhaustiveSearch(SearchState *s, int lo, int hi, const int *sizes,
				 double *closeness_sum, double *weight_sum)
{
	const MmTicket *anchor = &s->tickets[s->anchor];
	MmRuleState *level0;
	int			j;

	if (s->dfs_budget <= 0 || s->search_budget <= 0 || anchor->nplayers > hi)
		return false;
	level0 = DfsStates(s, 0);
	for (int k = 0; k < s->nticket_rules; k++)
	{
		int			r = s->ticket_rule[k];

		MmRuleStateInit(s->context, &s->config->rules[r], &level0[r]);
	}
	s->nchosen = 0;
	s->chosen_players = 0;
	if (!TicketFits(s, level0, anchor))
		return false;
	if (sizes != NULL && anchor->nplayers > 1 && !PartiesFit(s, s->team_max, anchor->nplayers))
		return false;
	TicketJoin(s, level0, s->anchor);
	s->dfs_suffix[s->nranked] = 0;
	for (j = s->nranked - 1; j >= 0; j--)
		s->dfs_suffix[j] = s->dfs_suffix[j + 1] + s->tickets[s->ranked[j]].nplayers;
	if (!Dfs(s, 0, 0, lo, hi, sizes, closeness_sum, weight_sum))
		return false;
	StatesCopy(s, s->states, s->dfs_states[s->nchosen - 1]);
	return true;
}

/*
 * Free-for-all after the exhaustive search found a match of at least
 * match_size.min: more candidates join, in search order, up to max.
 */
static void
ExtendMatch(SearchState *s)
{
	/* a joining ticket could undo a whole-match condition: keep what holds */
	if (s->has_final)
		return;
	for (int k = 0; s->chosen_players < s->config->match_max; k++)
	{
		int			i = RankedCandidateAt(s, k);
		bool		taken = false;

		if (i < 0)
			break;
		for (int c = 0; c < s->nchosen && !taken; c++)
			taken = s->chosen[c] == i;
		if (taken || s->chosen_players + s->tickets[i].nplayers > s->config->match_max ||
			s->tickets[i].age_seconds < s->min_age)
			continue;
		if (!TicketFits(s, s->states, &s->tickets[i]))
			continue;
		TicketJoin(s, s->states, i);
	}
}

/*
 * Every rule's step at an age (the rules that are on, their thresholds), and
 * the team sizes' bounds then.  Returns the largest team size spread
 * team_size_balance allows (-1: no limit).
 */
static int
SetStepsAt(SearchState *s, double age)
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

/*
 * Tries to form a match around the current anchor with every rule at its
 * step for an age (the anchor's, or with expansion_age_selection newest a
 * younger one: then only candidates at least that old join).  True when a
 * match was formed.
 */
static bool
SearchAtAge(SearchState *s, double age)
{
	const MmQueueConfig *config = s->config;
	int			r;
	int			max_spread = SetStepsAt(s, age);
	int			total;
	int			reachable;

	s->nfit = 0;
	s->nrank_rules = 0;
	s->ncompound = 0;
	for (r = 0; r < config->nrules; r++)
	{
		if (!s->rule_on[r] || config->rules[r].in_compound)
			continue;
		if (config->rules[r].type == MM_RULE_COMPOUND)
		{
			s->compound_rule[s->ncompound++] = r;
			continue;
		}
		s->fit_rule[s->nfit] = r;
		s->fit_can_add[s->nfit] = s->handlers[r]->scope == MM_SCOPE_TICKETS ?
			s->handlers[r]->can_add : NULL;
		s->nfit++;
		if (s->handlers[r]->distance != NULL && config->rules[r].weight > 0)
			s->rank_rule[s->nrank_rules++] = r;
	}
	CandidatesStart(s);
	RankCandidates(s);
	/* mm.rule_stats: the first pass over the candidates counts */
	s->counting = true;

	if (config->nteams == 0)
	{
		/* free-for-all: as many as match_size.max allows, at least min */
		bool		packing_skipped;
		double		closeness_sum,
					weight_sum;
		bool		formed;

		formed = Gather(s, config->match_max, NULL, &packing_skipped) >= s->match_min &&
			FinalHolds(s, s->states);
		s->counting = false;
		if (formed)
		{
			EmitMatch(s, 0, 0);
			return true;
		}
		if (ExhaustiveSearch(s, s->match_min, config->match_max, NULL,
							 &closeness_sum, &weight_sum))
		{
			ExtendMatch(s);
			EmitMatch(s, 0, 0);
			return true;
		}
		return false;
	}

	reachable = config->match_max;
	for (total = config->match_max; total >= s->match_min; total--)
	{
		double		closeness_sum = 0,
					weight_sum = 0;
		int			got;
		bool		packing_skipped;

		if (total > reachable || !EvenTeamSizes(config, s->team_min, total, max_spread, s->team_size))
			continue;
		got = Gather(s, total, s->team_size, &packing_skipped);
		if (got < total)
		{
			s->counting = false;
			/*
			 * A smaller target gathers the same tickets, up to got players,
			 * unless other team sizes would have let a party in.
			 */
			if (!packing_skipped)
				reachable = got;
			continue;
		}
		if (!FinalHolds(s, s->states) ||
			!TryTeams(s, s->team_size, &closeness_sum, &weight_sum))
		{
			s->counting = false;
			continue;
		}
		s->counting = false;
		EmitMatch(s, closeness_sum, weight_sum);
		return true;
	}
	s->counting = false;

	/* the greedy formed nothing: search exhaustively, largest match first */
	for (total = config->match_max; total >= s->match_min; total--)
	{
		double		closeness_sum = 0,
					weight_sum = 0;

		if (!EvenTeamSizes(config, s->team_min, total, max_spread, s->team_size))
			continue;
		if (ExhaustiveSearch(s, total, total, s->team_size, &closeness_sum, &weight_sum))
		{
			EmitMatch(s, closeness_sum, weight_sum);
			return true;
		}
		if (s->dfs_budget <= 0 || s->search_budget <= 0)
			return false;
	}
	return false;
}

/* Levels of expansion_age_selection newest an anchor tries, at most. */
#define MM_NEWEST_LEVELS 16

/*
 * Tries to form a match around the current anchor.  With
 * expansion_age_selection oldest (the default) the anchor's age selects the
 * steps.  With newest the youngest ticket's age does: for each level Y among
 * the ages of the anchor's candidates (youngest first, at most
 * MM_NEWEST_LEVELS), the search runs with every rule at its step for Y and
 * only candidates at least Y old, so the youngest ticket of a match found
 * there is at least Y old (expansions loosen with age: its own steps are at
 * least as loose).
 */
static void
SearchAnchor(SearchState *s)
{
	const MmTicket *anchor = &s->tickets[s->anchor];
	double		levels[MM_NEWEST_LEVELS];
	int			nlevels = 0;

	s->dfs_budget = MM_EXHAUSTIVE_ANCHOR_NODES;
	s->min_age = -1;
	if (!s->config->newest_age)
	{
		(void) SearchAtAge(s, anchor->age_seconds);
		return;
	}
	/* the candidates' ages at the anchor's (loosest) steps */
	(void) SetStepsAt(s, anchor->age_seconds);
	CandidatesStart(s);
	for (int k = 0;; k++)
	{
		int			i = CandidateAt(s, k);
		double		age;
		int			j;

		if (i < 0 || k >= 4 * MM_NEWEST_LEVELS)
			break;
		age = s->tickets[i].age_seconds;
		for (j = 0; j < nlevels && levels[j] != age; j++)
			;
		if (j == nlevels && nlevels < MM_NEWEST_LEVELS)
			levels[nlevels++] = age;
	}
	/* youngest first (the most candidates), then older */
	for (int a = 1; a < nlevels; a++)
	{
		double		v = levels[a];
		int			b = a;

		while (b > 0 && levels[b - 1] > v)
		{
			levels[b] = levels[b - 1];
			b--;
		}
		levels[b] = v;
	}
	for (int l = 0; l < nlevels; l++)
	{
		s->min_age = levels[l];
		if (SearchAtAge(s, levels[l]))
			return;
	}
	/* the anchor alone sets the age (a match of one ticket: one party) */
	s->min_age = anchor->age_seconds;
	(void) SearchAtAge(s, anchor->age_seconds);
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

/* ---- backfill ------------------------------------------------------------- */

/* The backfill search's working state (see MmSearchBackfill). */
typedef struct BackfillState
{
	const MmRuleContext *context;
	const MmQueueConfig *config;
	const MmRuleHandler **handlers;
	const MmTicket *members;
	int			nmembers;
	const int  *member_team;
	const MmTicket *candidates;
	int			ncandidates;
	int			nteams;			/* 0: free-for-all (one room) */
	int		   *room;			/* open slots left per team (or [0]) */
	int			wanted;			/* open slots in all */

	bool	   *rule_on;
	double	   *threshold;
	int		   *step;
	MmRuleState **states;		/* per depth */
	int			capacity;		/* latency regions a state may hold */

	/* the current set and the best one */
	int		   *chosen;
	int		   *chosen_team;
	int			nchosen;
	int			players;
	int		   *best;
	int		   *best_team;
	int			nbest;
	int			best_players;
	long		budget;

	/* the teams view of the whole match */
	const MmTicket **view_tickets;
	int		   *view_team;
	int		   *team_size;
} BackfillState;

/* A fresh state of every ticket rule, with the members joined. */
static MmRuleState *
BackfillLevel(BackfillState *b, int depth)
{
	int			nrules = b->config->nrules;

	if (b->states[depth] == NULL)
	{
		MmRuleState *level = palloc0(sizeof(MmRuleState) * Max(nrules, 1));

		for (int r = 0; r < nrules; r++)
		{
			level[r].rule = &b->config->rules[r];
			MmRuleStateAlloc(&level[r], b->capacity);
		}
		b->states[depth] = level;
	}
	return b->states[depth];
}

/* Copies the ticket rules' states from one depth to another. */
static void
BackfillCopy(BackfillState *b, MmRuleState *dst, const MmRuleState *src)
{
	for (int r = 0; r < b->config->nrules; r++)
		if (b->handlers[r]->scope == MM_SCOPE_TICKETS)
			MmRuleStateCopy(&dst[r], &src[r]);
}

/* Whether a ticket may join the states (every ticket rule that is on). */
static bool
BackfillFits(BackfillState *b, const MmRuleState *states, const MmTicket *t)
{
	for (int r = 0; r < b->config->nrules; r++)
	{
		const MmRuleConfig *rule = &b->config->rules[r];

		if (!b->rule_on[r] || rule->in_compound)
			continue;
		if (rule->type == MM_RULE_COMPOUND)
		{
			if (!MmCompoundCanAdd(b->context, rule, states, t->values, b->rule_on, b->threshold))
				return false;
			continue;
		}
		if (t->values[r].kind == MM_VALUE_MISSING)
			return false;
		if (b->handlers[r]->scope == MM_SCOPE_TICKETS &&
			!b->handlers[r]->can_add(b->context, &states[r], &t->values[r], b->threshold[r]))
			return false;
	}
	return true;
}

/* Adds a ticket to every ticket rule's state. */
static void
BackfillJoin(BackfillState *b, MmRuleState *states, const MmTicket *t)
{
	for (int r = 0; r < b->config->nrules; r++)
	{
		if (b->handlers[r]->scope != MM_SCOPE_TICKETS)
			continue;
		if (b->config->rules[r].in_compound)
			MmLeafJoin(b->context, &states[r], &t->values[r], b->threshold[r]);
		else
			b->handlers[r]->add(b->context, &states[r], &t->values[r]);
	}
}

/*
 * The team rules over the whole match (members and the current set); adds
 * their weighted closeness when the sums are given.
 */
static bool
BackfillTeamRules(BackfillState *b, double *closeness_sum, double *weight_sum)
{
	MmTeamsView view;
	int			n = 0;

	if (b->nteams == 0)
		return true;
	for (int t = 0; t < b->nteams; t++)
		b->team_size[t] = 0;
	for (int k = 0; k < b->nmembers; k++)
	{
		b->view_tickets[n] = &b->members[k];
		b->view_team[n] = b->member_team[k];
		b->team_size[b->member_team[k]] += b->members[k].nplayers;
		n++;
	}
	for (int k = 0; k < b->nchosen; k++)
	{
		b->view_tickets[n] = &b->candidates[b->chosen[k]];
		b->view_team[n] = b->chosen_team[k];
		b->team_size[b->chosen_team[k]] += b->candidates[b->chosen[k]].nplayers;
		n++;
	}
	view.nteams = b->nteams;
	view.team_size = b->team_size;
	view.ntickets = n;
	view.tickets = b->view_tickets;
	view.ticket_team = b->view_team;
	for (int r = 0; r < b->config->nrules; r++)
	{
		double		c;

		if (!b->rule_on[r] || b->handlers[r]->scope != MM_SCOPE_TEAMS)
			continue;
		if (!b->handlers[r]->check_teams(&b->config->rules[r], r, &view, b->threshold[r], &c))
			return false;
		if (closeness_sum != NULL)
		{
			*closeness_sum += b->config->rules[r].weight * c;
			*weight_sum += b->config->rules[r].weight;
		}
	}
	return true;
}

/*
 * Depth-first, oldest candidates first: returns true once every open slot
 * is filled (the set is then the best); otherwise keeps the largest valid set
 * seen in best.
 */
static bool
BackfillDfs(BackfillState *b, int depth, int from)
{
	MmRuleState *states = b->states[depth];

	if (b->nchosen > 0 && b->players > b->best_players &&
		MmFinalHolds(b->context, states, b->rule_on, b->threshold) &&
		BackfillTeamRules(b, NULL, NULL))
	{
		memcpy(b->best, b->chosen, sizeof(int) * b->nchosen);
		memcpy(b->best_team, b->chosen_team, sizeof(int) * b->nchosen);
		b->nbest = b->nchosen;
		b->best_players = b->players;
		if (b->players == b->wanted)
			return true;
	}
	for (int j = from; j < b->ncandidates; j++)
	{
		const MmTicket *t = &b->candidates[j];
		int			nrooms = Max(b->nteams, 1);

		if (--b->budget < 0)
			return false;
		if ((b->budget & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (t->nplayers > b->wanted - b->players || !BackfillFits(b, states, t))
			continue;
		for (int team = 0; team < nrooms; team++)
		{
			MmRuleState *next;

			if (b->room[team] < t->nplayers)
				continue;
			next = BackfillLevel(b, depth + 1);
			BackfillCopy(b, next, states);
			BackfillJoin(b, next, t);
			b->room[team] -= t->nplayers;
			b->chosen[b->nchosen] = j;
			b->chosen_team[b->nchosen] = b->nteams > 0 ? team : -1;
			b->nchosen++;
			b->players += t->nplayers;
			if (BackfillDfs(b, depth + 1, j + 1))
				return true;
			b->nchosen--;
			b->players -= t->nplayers;
			b->room[team] += t->nplayers;
			if (b->budget < 0)
				return false;
		}
	}
	return false;
}

/* Sets every rule's step and threshold at an age. */
static void
BackfillThresholds(BackfillState *b, double age)
{
	for (int r = 0; r < b->config->nrules; r++)
	{
		b->rule_on[r] = MmRuleThresholdAt(&b->config->rules[r], age, &b->threshold[r], &b->step[r]);
		if (!b->rule_on[r])
			b->threshold[r] = 0;
	}
}

/* The rule arrays of a backfill state: each rule's handler, on/off, threshold, step. */
static void
BackfillRulesInit(BackfillState *b, const MmRuleContext *context)
{
	int			nrules = context->config->nrules;

	b->context = context;
	b->config = context->config;
	b->handlers = palloc(sizeof(MmRuleHandler *) * Max(nrules, 1));
	for (int r = 0; r < nrules; r++)
		b->handlers[r] = MmRuleHandlerFor(b->config->rules[r].type);
	b->rule_on = palloc(sizeof(bool) * Max(nrules, 1));
	b->threshold = palloc(sizeof(double) * Max(nrules, 1));
	b->step = palloc(sizeof(int) * Max(nrules, 1));
}

/* Depth 0's states, empty, with every rule at its step for an age. */
static MmRuleState *
BackfillStartAt(BackfillState *b, double age)
{
	MmRuleState *level;

	BackfillThresholds(b, age);
	level = BackfillLevel(b, 0);
	for (int r = 0; r < b->config->nrules; r++)
		if (b->handlers[r]->scope == MM_SCOPE_TICKETS)
			MmRuleStateInit(b->context, &b->config->rules[r], &level[r]);
	return level;
}

/* Fills open slots of a running match; see match_search.h. */
MmBackfillResult *
MmSearchBackfill(const MmRuleContext *context, const MmTicket *members, int nmembers,
				 const int *member_team, const int *open_slots,
				 const MmTicket *candidates, int ncandidates)
{
	const MmQueueConfig *config = context->config;
	int			nrules = config->nrules;
	MemoryContext result_context = CurrentMemoryContext;
	MemoryContext scratch;
	MmBackfillResult *result;
	BackfillState b;
	double		member_age = 0;
	int			maxp = MM_MAX_MATCH_SIZE;
	int			best_first = -1;
	double		best_age = 0;
	int			present = 0;

	result = palloc0(sizeof(MmBackfillResult));
	result->region = -1;
	result->rule_steps = palloc0(sizeof(MmRuleStep) * Max(nrules, 1));

	scratch = AllocSetContextCreate(result_context, "mm backfill search", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(scratch);

	memset(&b, 0, sizeof(b));
	BackfillRulesInit(&b, context);
	b.members = members;
	b.nmembers = nmembers;
	b.member_team = member_team;
	b.candidates = candidates;
	b.ncandidates = ncandidates;
	b.nteams = config->nteams;
	b.room = palloc(sizeof(int) * Max(b.nteams, 1));
	for (int t = 0; t < Max(b.nteams, 1); t++)
	{
		b.room[t] = Max(open_slots[t], 0);
		/* nor a team past its max (the config may have changed since the request) */
		if (b.nteams > 0)
		{
			int			on_team = 0;

			for (int k = 0; k < nmembers; k++)
				if (member_team[k] == t)
					on_team += members[k].nplayers;
			b.room[t] = Min(b.room[t], Max(config->teams[t].max - on_team, 0));
		}
		b.wanted += b.room[t];
	}
	/* the match never grows past match_size.max, whatever the request asks */
	for (int k = 0; k < nmembers; k++)
		present += members[k].nplayers;
	b.wanted = Min(b.wanted, Min(maxp, Max(config->match_max - present, 0)));
	b.states = palloc0(sizeof(MmRuleState *) * (maxp + 2));
	for (int r = 0; r < nrules; r++)
	{
		b.capacity = Max(b.capacity, MmRuleStateCapacity(config, r, members, nmembers));
		b.capacity = Max(b.capacity, MmRuleStateCapacity(config, r, candidates, ncandidates));
	}
	b.chosen = palloc(sizeof(int) * (maxp + 1));
	b.chosen_team = palloc(sizeof(int) * (maxp + 1));
	b.best = palloc(sizeof(int) * (maxp + 1));
	b.best_team = palloc(sizeof(int) * (maxp + 1));
	b.view_tickets = palloc(sizeof(MmTicket *) * (nmembers + maxp + 1));
	b.view_team = palloc(sizeof(int) * (nmembers + maxp + 1));
	b.team_size = palloc(sizeof(int) * Max(b.nteams, 1));
	b.budget = MM_BACKFILL_NODES;
	for (int k = 0; k < nmembers; k++)
		member_age = Max(member_age, members[k].age_seconds);

	/*
	 * The oldest chosen candidate sets the step when it is older than every
	 * member: each first candidate (oldest first) is tried with the
	 * thresholds at that age, the rest of the set coming after it.
	 */
	for (int first = 0; first < ncandidates && b.wanted > 0 && b.budget > 0; first++)
	{
		MmRuleState *level0;
		double		age = Max(member_age, candidates[first].age_seconds);
		int			before = b.best_players;

		level0 = BackfillStartAt(&b, age);
		for (int k = 0; k < nmembers; k++)
			BackfillJoin(&b, level0, &members[k]);
		b.nchosen = 0;
		b.players = 0;
		/* the set starts with candidate first: BackfillDfs from first, one level down */
		{
			const MmTicket *t = &candidates[first];
			bool		done = false;

			if (t->nplayers > b.wanted || !BackfillFits(&b, level0, t))
				continue;
			for (int team = 0; team < Max(b.nteams, 1) && !done && b.budget > 0; team++)
			{
				MmRuleState *next;

				if (b.room[team] < t->nplayers)
					continue;
				next = BackfillLevel(&b, 1);
				BackfillCopy(&b, next, level0);
				BackfillJoin(&b, next, t);
				b.room[team] -= t->nplayers;
				b.chosen[0] = first;
				b.chosen_team[0] = b.nteams > 0 ? team : -1;
				b.nchosen = 1;
				b.players = t->nplayers;
				done = BackfillDfs(&b, 1, first + 1);
				b.room[team] += t->nplayers;
			}
			if (b.best_players > before)
			{
				best_first = first;
				best_age = age;
			}
			if (done)
				break;
		}
	}

	if (b.nbest > 0)
	{
		double		closeness_sum = 0,
					weight_sum = 0;
		double		quality;
		MmRuleState *final;

		/* the best set's states and team rules again, for quality and region */
		final = BackfillStartAt(&b, best_age);
		for (int k = 0; k < nmembers; k++)
			BackfillJoin(&b, final, &members[k]);
		for (int k = 0; k < b.nbest; k++)
			BackfillJoin(&b, final, &candidates[b.best[k]]);
		memcpy(b.chosen, b.best, sizeof(int) * b.nbest);
		memcpy(b.chosen_team, b.best_team, sizeof(int) * b.nbest);
		b.nchosen = b.nbest;
		(void) BackfillTeamRules(&b, &closeness_sum, &weight_sum);
		for (int r = 0; r < nrules; r++)
		{
			const MmRuleConfig *rule = &config->rules[r];

			result->rule_steps[r].step = b.step[r];
			result->rule_steps[r].threshold = b.threshold[r];
			result->rule_steps[r].off = !b.rule_on[r];
			if (rule->type == MM_RULE_LATENCY && result->region < 0)
				result->region = MmChooseRegion(context, &final[r], b.threshold[r], NULL);
			if (!b.rule_on[r] || b.handlers[r]->scope != MM_SCOPE_TICKETS || rule->in_compound)
				continue;
			closeness_sum += rule->weight *
				b.handlers[r]->closeness(context, &final[r], b.threshold[r]);
			weight_sum += rule->weight;
		}
		quality = weight_sum > 0 ? closeness_sum / weight_sum : 1.0;
		if (!(quality >= 0.0))
			quality = 0.0;
		result->quality = Min(quality, 1.0);

		result->ntickets = b.nbest;
		result->nplayers = b.best_players;
		result->filled = b.best_players == b.wanted;
		result->tickets = MemoryContextAlloc(result_context, sizeof(int) * b.nbest);
		result->ticket_team = MemoryContextAlloc(result_context, sizeof(int) * b.nbest);
		/* chosen in ascending candidate order already (DFS goes forward) */
		memcpy(result->tickets, b.best, sizeof(int) * b.nbest);
		memcpy(result->ticket_team, b.best_team, sizeof(int) * b.nbest);
	}
	(void) best_first;

	MemoryContextSwitchTo(result_context);
	MemoryContextDelete(scratch);
	return result;
}

/* Whether tickets may share a match by the ticket rules; see match_search.h. */
bool
MmTicketsFitTogether(const MmRuleContext *context, const MmTicket *tickets, int ntickets)
{
	const MmQueueConfig *config = context->config;
	MemoryContext old_context = CurrentMemoryContext;
	MemoryContext scratch;
	BackfillState b;
	MmRuleState *states;
	double		age = 0;
	bool		fit = true;

	scratch = AllocSetContextCreate(old_context, "mm tickets fit", ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(scratch);
	memset(&b, 0, sizeof(b));
	BackfillRulesInit(&b, context);
	b.states = palloc0(sizeof(MmRuleState *));
	for (int r = 0; r < config->nrules; r++)
		b.capacity = Max(b.capacity, MmRuleStateCapacity(config, r, tickets, ntickets));
	for (int k = 0; k < ntickets; k++)
		age = Max(age, tickets[k].age_seconds);
	states = BackfillStartAt(&b, age);
	for (int k = 0; k < ntickets && fit; k++)
	{
		fit = BackfillFits(&b, states, &tickets[k]);
		if (fit)
			BackfillJoin(&b, states, &tickets[k]);
	}
	MemoryContextSwitchTo(old_context);
	MemoryContextDelete(scratch);
	return fit;
}
