/*
 * match_search.c
 *	  Forms matches among a queue's searching tickets (pure C, no SPI): the
 *	  anchor loop (MmSearchMatches).  Its phases: match_search_pool.c (pool
 *	  and candidates), match_search_gather.c (gathering and teams),
 *	  match_search_exhaustive.c (exhaustive search); backfill in
 *	  match_search_backfill.c.
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

#include "miscadmin.h"
#include "utils/memutils.h"

#include "match_search_internal.h"

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
	int			max_spread = MmSearchSetStepsAt(s, age);
	int			total;
	int			reachable;
	bool		first_choices = false;

	/*
	 * A role queue whose pool cannot fill the seats has no match around
	 * this anchor: nothing to scan (once the tanks are gone, every anchor
	 * would otherwise walk the whole pool).
	 */
	if (s->roles != NULL)
	{
		if (!MmSearchPoolCanSeat(s, false))
			return false;
		first_choices = MmSearchPoolCanSeat(s, true);
	}

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
	MmSearchCandidatesStart(s);
	MmSearchRankCandidates(s);
	/* mm.rule_stats: the first pass over the candidates counts */
	s->counting = true;

	if (config->nteams == 0)
	{
		/* free-for-all: as many as match_size.max allows, at least min */
		bool		packing_skipped;
		double		closeness_sum,
					weight_sum;
		bool		formed;

		/* a role queue: first choices first, as with teams below */
		s->first_choices_only = first_choices;
		formed = MmSearchGather(s, config->match_max, NULL, &packing_skipped) >= s->match_min;
		s->first_choices_only = false;
		formed = formed && MmSearchFinalHolds(s, s->states) &&
			(s->roles == NULL || MmSearchSeatRoles(s));
		if (!formed && first_choices)
		{
			s->counting = false;
			formed = MmSearchGather(s, config->match_max, NULL, &packing_skipped) >= s->match_min &&
				MmSearchFinalHolds(s, s->states) && MmSearchSeatRoles(s);
		}
		s->counting = false;
		if (formed)
		{
			MmSearchEmitMatch(s, 0, 0);
			return true;
		}
		if (MmSearchExhaustive(s, s->match_min, config->match_max, NULL,
							   &closeness_sum, &weight_sum))
		{
			MmSearchExtendMatch(s);
			if (s->roles != NULL && !MmSearchSeatRoles(s))
				return false;
			MmSearchEmitMatch(s, 0, 0);
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

		if (total > reachable ||
			!MmSearchEvenTeamSizes(config, s->team_min, total, max_spread,
								   s->tickets[s->anchor].nplayers, s->team_size))
			continue;
		/*
		 * A role queue first gathers players who can all have their first
		 * choice, skipping those who could not; only when that fills no match
		 * does it gather anyone who can be seated.
		 */
		if (first_choices)
		{
			s->first_choices_only = true;
			got = MmSearchGather(s, total, s->team_size, &packing_skipped);
			s->first_choices_only = false;
			if (got == total && MmSearchFinalHolds(s, s->states) &&
				MmSearchTryTeams(s, s->team_size, &closeness_sum, &weight_sum))
			{
				s->counting = false;
				MmSearchEmitMatch(s, closeness_sum, weight_sum);
				return true;
			}
			s->counting = false;
			closeness_sum = weight_sum = 0;
		}
		got = MmSearchGather(s, total, s->team_size, &packing_skipped);
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
		if (!MmSearchFinalHolds(s, s->states) ||
			!MmSearchTryTeams(s, s->team_size, &closeness_sum, &weight_sum))
		{
			s->counting = false;
			continue;
		}
		s->counting = false;
		MmSearchEmitMatch(s, closeness_sum, weight_sum);
		return true;
	}
	s->counting = false;

	/* the greedy formed nothing: search exhaustively, largest match first */
	for (total = config->match_max; total >= s->match_min; total--)
	{
		double		closeness_sum = 0,
					weight_sum = 0;

		if (!MmSearchEvenTeamSizes(config, s->team_min, total, max_spread,
								   s->tickets[s->anchor].nplayers, s->team_size))
			continue;
		if (MmSearchExhaustive(s, total, total, s->team_size, &closeness_sum, &weight_sum))
		{
			MmSearchEmitMatch(s, closeness_sum, weight_sum);
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
	(void) MmSearchSetStepsAt(s, anchor->age_seconds);
	MmSearchCandidatesStart(s);
	for (int k = 0;; k++)
	{
		int			i = MmSearchCandidateAt(s, k);
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
	MmSearchInit(&s, context, tickets, ntickets, result_context);
	for (a = 0; a < ntickets; a++)
	{
		if (s.dead[a])
			continue;
		/* statement_timeout and pg_cancel_backend() act during a long tick */
		CHECK_FOR_INTERRUPTS();
		/* the anchor leaves the pool: later anchors only see younger tickets */
		MmSearchRemoveTicket(&s, a);
		s.anchor = a;
		SearchAnchor(&s);
	}
	s.result->scratch_bytes = (int64) MemoryContextMemAllocated(scratch, true);
	MemoryContextSwitchTo(result_context);
	MemoryContextDelete(scratch);
	return s.result;
}
