/*
 * match_search_exhaustive.c
 *	  The search's exhaustive fallback (pure C, no SPI): when the greedy
 *	  finds no match around an anchor, a depth-first search over its ranked
 *	  candidates within a node budget (per anchor and per search); and a
 *	  formed match filled up towards match_size.max.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "match_search_internal.h"

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
		return MmSearchCheckTeamRules(s, closeness_sum, weight_sum);
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

/* MmSearchTryTeams, then (exhaustive search only) every other placement. */
static bool
TryTeamsExhaustive(SearchState *s, const int *sizes, double *closeness_sum, double *weight_sum)
{
	if (MmSearchTryTeams(s, sizes, closeness_sum, weight_sum))
		return true;
	/* strategy balanced: the teams are the balancer's; roles: the seating's */
	if (s->config->balanced || s->roles != NULL)
		return false;
	(void) MmSearchPreparePlayers(s);
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
			if (MmSearchFinalHolds(s, states))
				return true;
		}
		else
		{
			s->dfs_budget -= MM_EXHAUSTIVE_LEAF_COST;
			s->search_budget -= MM_EXHAUSTIVE_LEAF_COST;
			return MmSearchFinalHolds(s, states) &&
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
		/* a role check can take a millisecond (every choice of compositions) */
		if ((s->search_budget & (s->roles != NULL ? 63 : 4095)) == 0)
			CHECK_FOR_INTERRUPTS();
		if (s->chosen_players + np > hi || t->age_seconds < s->min_age)
			continue;
		if (!MmSearchTicketFits(s, states, t))
			continue;
		if (s->roles != NULL)
		{
			if (!MmSearchRolesFit(s, i))
				continue;
		}
		/* any sizes within the teams' bounds: the leaf may place freely */
		else if (sizes != NULL && np > 1 && !MmSearchPartiesFit(s, s->team_max, np))
			continue;
		next = DfsStates(s, depth + 1);
		StatesCopy(s, next, states);
		MmSearchTicketJoin(s, next, i);
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
bool
MmSearchExhaustive(SearchState *s, int lo, int hi, const int *sizes,
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
	if (!MmSearchTicketFits(s, level0, anchor))
		return false;
	if (s->roles != NULL ? !MmSearchRolesFit(s, s->anchor) :
		sizes != NULL && anchor->nplayers > 1 && !MmSearchPartiesFit(s, s->team_max, anchor->nplayers))
		return false;
	MmSearchTicketJoin(s, level0, s->anchor);
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
void
MmSearchExtendMatch(SearchState *s)
{
	/* a joining ticket could undo a whole-match condition: keep what holds */
	if (s->has_final)
		return;
	for (int k = 0; s->chosen_players < s->config->match_max; k++)
	{
		int			i = MmSearchRankedCandidateAt(s, k);
		bool		taken = false;

		if (i < 0)
			break;
		for (int c = 0; c < s->nchosen && !taken; c++)
			taken = s->chosen[c] == i;
		if (taken || s->chosen_players + s->tickets[i].nplayers > s->config->match_max ||
			s->tickets[i].age_seconds < s->min_age)
			continue;
		if (!MmSearchTicketFits(s, s->states, &s->tickets[i]))
			continue;
		if (s->roles != NULL && !MmSearchRolesFit(s, i))
			continue;
		MmSearchTicketJoin(s, s->states, i);
	}
}
