/*
 * rule_latency.c
 *	  The latency rule: every player's latency in the match's region is at
 *	  most max_ms; also the choice of that region (MmChooseRegion,
 *	  MmBestRegion).
 *
 * Its handler (MmRuleLatency) is one entry of the table in rules.c; the
 * shared helpers (a player's attribute, closeness, list attributes) are in
 * rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "rules_internal.h"

/* (Re)builds region_hash with room for the regions known so far. */
static void
RegionHashGrow(MmRuleContext *context, int size)
{
	int			mask = size - 1;

	if (context->region_hash != NULL)
		pfree(context->region_hash);
	context->region_hash = palloc(sizeof(int) * size);
	memset(context->region_hash, -1, sizeof(int) * size);
	context->region_hash_size = size;
	for (int r = 0; r < context->nregions; r++)
	{
		const char *name = context->regions[r];
		uint32		slot = MmRegionNameHash(name, strlen(name)) & mask;

		while (context->region_hash[slot] >= 0)
			slot = (slot + 1) & mask;
		context->region_hash[slot] = r;
	}
}

/*
 * The index of a region name, added when new (indexes in order of first
 * appearance: MmBestRegion breaks ties by it).  A hash lookup: a sender may
 * post many distinct names, and a linear scan made loading quadratic.
 */
static int
InternRegion(MmRuleContext *context, const char *name, int len)
{
	uint32		mask;
	uint32		slot;
	int			r;

	/* at most half full */
	if (2 * (context->nregions + 1) > context->region_hash_size)
		RegionHashGrow(context, Max(16, 2 * context->region_hash_size));
	mask = context->region_hash_size - 1;
	for (slot = MmRegionNameHash(name, len) & mask;
		 (r = context->region_hash[slot]) >= 0;
		 slot = (slot + 1) & mask)
	{
		if (strncmp(context->regions[r], name, len) == 0 && context->regions[r][len] == '\0')
			return r;
	}
	if (context->nregions == context->regions_allocated)
	{
		context->regions_allocated *= 2;
		context->regions = repalloc(context->regions,
									sizeof(char *) * context->regions_allocated);
	}
	r = context->nregions++;
	context->regions[r] = pnstrdup(name, len);
	context->region_hash[slot] = r;
	return r;
}

/* Sorts a player's few regions by region index (insertion sort: 1 to ~10). */
static void
SortRegionLatencies(MmRegionLatency *list, int n)
{
	int			i,
				j;

	for (i = 1; i < n; i++)
	{
		MmRegionLatency item = list[i];

		for (j = i; j > 0 && list[j - 1].region > item.region; j--)
			list[j] = list[j - 1];
		list[j] = item;
	}
}

/*
 * The regions every player of the ticket reported (intersection), each with
 * the worst latency among them.  A player with no latencies at all takes the
 * rule's numeric default in every region, or imposes nothing with match_any;
 * otherwise the ticket cannot satisfy the rule.
 */
static void
LatencyExtract(MmRuleContext *context, const MmRuleConfig *rule,
			   const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	int			i;
	bool		any_reported = false;
	bool		any_default = false;
	MmRegionLatency *merged = NULL;
	int			nmerged = 0;
	int			nreported = 0;

	value->kind = MM_VALUE_PRESENT;
	value->floor_ms = 0;
	value->nfloor = 0;
	value->all_regions = false;
	value->nregions = 0;
	value->regions = NULL;

	for (i = 0; i < nplayers; i++)
	{
		JsonbContainer *lat = players[i].latencies;
		MmRegionLatency *mine;
		int			nmine = 0;
		int			count;

		count = (lat != NULL && JsonContainerIsObject(lat)) ? JsonContainerSize(lat) : 0;
		if (count == 0)
		{
			if (rule->has_default && !rule->default_is_string)
			{
				value->floor_ms = Max(value->floor_ms, rule->default_number);
				value->nfloor++;
				any_default = true;
			}
			else if (!rule->missing_matches_any)
			{
				value->kind = MM_VALUE_MISSING;
				return;
			}
			continue;
		}

		/* this player's regions, sorted by region index */
		{
			JsonbIterator *it = JsonbIteratorInit(lat);
			JsonbValue	v;
			JsonbIteratorToken tok;
			int			region = -1;
			double		best = 0;

			/* the first player's list becomes the ticket's: kept in the arena */
			mine = any_reported ? palloc(sizeof(MmRegionLatency) * count) :
				MmRuleAlloc(context, sizeof(MmRegionLatency) * count);
			while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			{
				double		ms;

				if (tok == WJB_KEY)
					region = InternRegion(context, v.val.string.val, v.val.string.len);
				else if (tok == WJB_VALUE && region >= 0 && MmJsonbNumberValue(&v, &ms) && ms >= 0)
				{
					mine[nmine].region = region;
					mine[nmine].ms = ms;
					mine[nmine].sum = ms;
					if (nmine == 0 || ms < best)
						best = ms;
					nmine++;
				}
			}
			SortRegionLatencies(mine, nmine);
			nreported++;
			/* how far each region is above this player's best */
			for (int k = 0; k < nmine; k++)
				mine[k].dist = mine[k].ms - best;
		}

		if (!any_reported)
		{
			merged = mine;
			nmerged = nmine;
			any_reported = true;
			continue;
		}

		/* intersect merged with mine, keeping the worst latency */
		{
			int			a = 0,
						b = 0,
						out = 0;

			while (a < nmerged && b < nmine)
			{
				if (merged[a].region < mine[b].region)
					a++;
				else if (merged[a].region > mine[b].region)
					b++;
				else
				{
					merged[out].region = merged[a].region;
					merged[out].ms = Max(merged[a].ms, mine[b].ms);
					merged[out].sum = merged[a].sum + mine[b].sum;
					merged[out].dist = Max(merged[a].dist, mine[b].dist);
					out++;
					a++;
					b++;
				}
			}
			nmerged = out;
			pfree(mine);
		}
	}

	if (!any_reported)
	{
		value->all_regions = true;
		value->nvalues = value->nfloor;
		if (!any_default)
			value->kind = MM_VALUE_ANY;
		return;
	}
	if (nmerged == 0)
	{
		/* the players share no region: they cannot play together */
		value->kind = MM_VALUE_MISSING;
		return;
	}
	for (i = 0; i < nmerged; i++)
	{
		merged[i].ms = Max(merged[i].ms, value->floor_ms);
		merged[i].sum += value->nfloor * value->floor_ms;
	}
	value->regions = merged;
	value->nregions = nmerged;
	value->nvalues = nreported + value->nfloor;
}

/* Every region starts open with no latency yet. */
static void
LatencyStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->has_value = false;
	state->max = 0;				/* the worst default so far; while not
								 * restricted, every region's worst */
	state->restricted = false;
	state->nopen = 0;
	state->uniform_sum = 0;
	state->nplayers = 0;
}

/* Whether a region with this worst latency and distance is allowed. */
static inline bool
RegionAllowed(const MmRuleConfig *rule, double worst, double dist, double threshold)
{
	return worst <= threshold && (!rule->has_max_distance || dist <= rule->max_distance);
}

/*
 * Joins when some region stays open to everyone within max_ms (and within
 * max_distance of each player's best region).  Costs O(regions of the state
 * + regions of the ticket), never O(regions seen).
 */
static bool
LatencyCanAdd(const MmRuleContext *context, const MmRuleState *state,
			  const MmRuleValue *value, double threshold)
{
	const MmRuleConfig *rule = state->rule;
	int			i;

	if (value->kind == MM_VALUE_ANY)
		return true;
	if (value->kind != MM_VALUE_PRESENT)
		return false;
	if (context->nregions == 0)
		return Max(state->max, value->floor_ms) <= threshold;
	if (!state->restricted)
	{
		/* every region open at state->max, at distance 0 */
		if (value->all_regions)
			return Max(state->max, value->floor_ms) <= threshold;
		for (i = 0; i < value->nregions; i++)
			if (RegionAllowed(rule, Max(state->max, value->regions[i].ms),
							  value->regions[i].dist, threshold))
				return true;
		return false;
	}
	if (value->all_regions)
	{
		for (i = 0; i < state->nopen; i++)
			if (RegionAllowed(rule, Max(state->region_worst[i], value->floor_ms),
							  state->region_dist[i], threshold))
				return true;
		return false;
	}
	/* both lists are sorted by region index */
	{
		int			a = 0,
					b = 0;

		while (a < state->nopen && b < value->nregions)
		{
			int			ra = state->open_region[a];
			int			rb = value->regions[b].region;

			if (ra < rb)
				a++;
			else if (ra > rb)
				b++;
			else
			{
				if (RegionAllowed(rule, Max(state->region_worst[a], value->regions[b].ms),
								  Max(state->region_dist[a], value->regions[b].dist), threshold))
					return true;
				a++;
				b++;
			}
		}
	}
	return false;
}

/*
 * Raises each open region's worst latency (and sum, distance); closes the
 * regions the ticket cannot play in (they leave the list: a closed region
 * never reopens).
 */
static void
LatencyAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
	double		uniform = state->max;
	int			i;

	if (value->kind != MM_VALUE_PRESENT)
		return;
	state->has_value = true;
	state->max = Max(state->max, value->floor_ms);
	state->nplayers += value->nvalues;
	if (value->all_regions)
	{
		double		add = value->nfloor * value->floor_ms;

		for (i = 0; i < state->nopen; i++)
		{
			state->region_worst[i] = Max(state->region_worst[i], value->floor_ms);
			state->region_sum[i] += add;
		}
		state->uniform_sum += add;
		return;
	}
	if (!state->restricted)
	{
		/* the first ticket with its own regions: they are the candidates */
		Assert(value->nregions <= state->region_capacity);
		for (i = 0; i < value->nregions; i++)
		{
			state->open_region[i] = value->regions[i].region;
			state->region_worst[i] = Max(uniform, value->regions[i].ms);
			state->region_sum[i] = state->uniform_sum + value->regions[i].sum;
			state->region_dist[i] = value->regions[i].dist;
		}
		state->nopen = value->nregions;
		state->restricted = true;
		return;
	}
	/* intersect in place, keeping the worst latency */
	{
		int			a = 0,
					b = 0,
					out = 0;

		while (a < state->nopen && b < value->nregions)
		{
			int			ra = state->open_region[a];
			int			rb = value->regions[b].region;

			if (ra < rb)
				a++;
			else if (ra > rb)
				b++;
			else
			{
				state->open_region[out] = ra;
				state->region_worst[out] = Max(state->region_worst[a], value->regions[b].ms);
				state->region_sum[out] = state->region_sum[a] + value->regions[b].sum;
				state->region_dist[out] = Max(state->region_dist[a], value->regions[b].dist);
				out++;
				a++;
				b++;
			}
		}
		state->nopen = out;
	}
}

/* 1 - (worst latency in the match's region)/max_ms. */
static double
LatencyCloseness(const MmRuleContext *context, const MmRuleState *state, double threshold)
{
	double		worst;

	if (!state->has_value)
		return 1.0;
	if (MmChooseRegion(context, state, threshold, &worst) < 0)
		worst = state->max;
	return MmClosenessOf(worst, threshold);
}

/* The match's region by the rule's region_choice; see rules.h. */
int
MmChooseRegion(const MmRuleContext *context, const MmRuleState *state, double threshold,
			   double *worst)
{
	const MmRuleConfig *rule = state->rule;
	int			best = -1;
	double		best_avg = 0;
	double		best_worst = 0;

	if (!state->restricted || rule == NULL)
		return MmBestRegion(context, state, worst);
	for (int i = 0; i < state->nopen; i++)
	{
		double		w = state->region_worst[i];
		double		avg = state->nplayers > 0 ? state->region_sum[i] / state->nplayers : w;
		bool		better;

		if (!RegionAllowed(rule, w, state->region_dist[i], threshold))
			continue;
		if (best < 0)
			better = true;
		else if (rule->region_choice == MM_REGION_LOWEST_AVERAGE)
			better = avg < best_avg || (avg == best_avg && w < best_worst);
		else
			better = w < best_worst;
		if (better)
		{
			best = state->open_region[i];
			best_avg = avg;
			best_worst = w;
		}
	}
	if (best < 0)
		return MmBestRegion(context, state, worst);
	if (worst != NULL)
		*worst = best_worst;
	return best;
}

/*
 * The worst latency of the pair in the best region both can play in, over
 * max_ms (1 when they share none: such a candidate cannot join anyway).
 */
static double
LatencyDistance(const MmRuleContext *context, const MmRuleConfig *rule,
				const MmRuleValue *anchor, const MmRuleValue *candidate, double threshold)
{
	double		best = -1;

	if (candidate->kind != MM_VALUE_PRESENT)
		return 0.0;
	if (anchor->kind != MM_VALUE_PRESENT || anchor->all_regions)
	{
		double		floor_ms = anchor->kind == MM_VALUE_PRESENT ? anchor->floor_ms : 0;

		if (candidate->all_regions)
			best = Max(floor_ms, candidate->floor_ms);
		for (int i = 0; i < candidate->nregions; i++)
		{
			double		w = Max(floor_ms, candidate->regions[i].ms);

			if (best < 0 || w < best)
				best = w;
		}
	}
	else if (candidate->all_regions)
	{
		for (int i = 0; i < anchor->nregions; i++)
		{
			double		w = Max(anchor->regions[i].ms, candidate->floor_ms);

			if (best < 0 || w < best)
				best = w;
		}
	}
	else
	{
		int			a = 0,
					b = 0;

		while (a < anchor->nregions && b < candidate->nregions)
		{
			if (anchor->regions[a].region < candidate->regions[b].region)
				a++;
			else if (anchor->regions[a].region > candidate->regions[b].region)
				b++;
			else
			{
				double		w = Max(anchor->regions[a].ms, candidate->regions[b].ms);

				if (best < 0 || w < best)
					best = w;
				a++;
				b++;
			}
		}
	}
	if (best < 0)
		return 1.0;
	return 1.0 - MmClosenessOf(best, threshold);
}

/*
 * The open region with the lowest worst latency (see rules.h); ties go to
 * the region seen first (the lowest index), so the choice is deterministic.
 */
int
MmBestRegion(const MmRuleContext *context, const MmRuleState *state, double *worst)
{
	int			best = -1;
	double		best_worst = 0;

	if (!state->restricted)
	{
		/* every region open at the same latency: the first one */
		if (context->nregions == 0)
			return -1;
		best = 0;
		best_worst = state->max;
	}
	else
	{
		for (int i = 0; i < state->nopen; i++)
		{
			if (best < 0 || state->region_worst[i] < best_worst)
			{
				best = state->open_region[i];
				best_worst = state->region_worst[i];
			}
		}
	}
	if (best >= 0 && worst != NULL)
		*worst = best_worst;
	return best;
}

/*
 * The room a latency state needs for a rule: the most regions one ticket
 * has (a state's regions are a subset of one ticket's).
 */
int
MmLatencyStateCapacity(const MmTicket *tickets, int ntickets, int rule_index)
{
	int			most = 0;

	for (int i = 0; i < ntickets; i++)
		most = Max(most, tickets[i].values[rule_index].nregions);
	return most;
}

const MmRuleHandler MmRuleLatency = {
	.type = MM_RULE_LATENCY, .type_name = "latency", .scope = MM_SCOPE_TICKETS,
	.extract = LatencyExtract, .state_init = LatencyStateInit,
	.can_add = LatencyCanAdd, .add = LatencyAdd,
	.closeness = LatencyCloseness, .distance = LatencyDistance
};
