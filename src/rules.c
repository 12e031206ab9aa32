/*
 * rules.c
 *	  The rule handlers: one entry per rule type (pure C, no SPI).
 *
 * See rules.h for the mechanism.  Missing attributes: a player lacking a
 * rule's attribute takes the rule's `default`; with "when_missing":
 * "match_any" the player imposes nothing on the rule; otherwise the ticket
 * cannot satisfy the rule (it can still match once the rule is off: optional
 * after seconds_until_optional, or a null expansion step).
 */
#include "postgres.h"

#include <math.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "json_walk.h"
#include "rules.h"

/*
 * 1 - used/allowed, in [0,1]; a zero threshold met exactly is a perfect 1.
 * A NaN (which finite values never give, but an overflowed sum would) counts
 * as 0, so a quality never leaves [0,1].
 */
static double
ClosenessOf(double used, double allowed)
{
	double		c;

	if (allowed <= 0 || isnan(allowed))
		return 1.0;
	if (isinf(allowed))
		return 1.0;
	c = 1.0 - used / allowed;
	if (!(c >= 0))
		c = 0;
	if (c > 1)
		c = 1;
	return c;
}

/*
 * A jsonb number as a double; false when it is not a finite number or its
 * magnitude exceeds MM_JSON_MAX_NUMBER (what ticket validation allows: a
 * larger value can only come from a ticket stored before the rule existed or
 * past the trigger, and sums of such values overflow to infinities and NaN).
 * Whole numbers within int4 (skills, latencies) take a fast exact path;
 * others go through numeric's text conversion.
 */
static bool
JsonbNumberValue(const JsonbValue *v, double *result)
{
	double		d;

	if (v == NULL || v->type != jbvNumeric)
		return false;
	if (DatumGetInt32(DirectFunctionCall1(numeric_scale, NumericGetDatum(v->val.numeric))) == 0)
	{
		bool		error = false;
		int32		i = numeric_int4_opt_error(v->val.numeric, &error);

		if (!error)
		{
			*result = (double) i;
			return true;
		}
	}
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
										   NumericGetDatum(v->val.numeric)));
	if (isnan(d) || fabs(d) > MM_JSON_MAX_NUMBER)
		return false;
	*result = d;
	return true;
}

/*
 * A player's value of the rule's attribute (a dotted path into the player's
 * attributes), or NULL.  The source decides where the attributes come from;
 * the later sources (mm.players.attributes, stored ratings) slot in here.
 */
static JsonbValue *
LookupPlayerValue(const MmRuleConfig *rule, const MmPlayerInput *player,
					JsonbValue *result)
{
	JsonbContainer *container;
	int			i;

	switch (rule->source)
	{
		case MM_SOURCE_TICKET:
			container = player->attributes;
			break;
		case MM_SOURCE_PLAYER:
			container = player->server_attributes;
			break;
		case MM_SOURCE_RATING:
			container = player->rating;
			break;
		default:
			elog(ERROR, "rule \"%s\" has an unknown source", rule->name);
			container = NULL;	/* keep the compiler quiet */
	}
	if (container == NULL || rule->attribute_depth == 0)
		return NULL;

	for (i = 0; i < rule->attribute_depth; i++)
	{
		const char *key = rule->attribute_path[i];

		if (!JsonContainerIsObject(container))
			return NULL;
		if (getKeyJsonValueFromContainer(container, key, strlen(key), result) == NULL)
			return NULL;
		if (i < rule->attribute_depth - 1)
		{
			if (result->type != jbvBinary)
				return NULL;
			container = result->val.binary.data;
		}
	}
	if (rule->attribute_depth == 0)
		return NULL;
	return result;
}

/* Each player's number (NaN: matches anything); sets the ticket's kind. */
static void
ExtractPlayerNumbers(const MmRuleConfig *rule, const MmPlayerInput *players,
					 int nplayers, MmRuleValue *value)
{
	int			i;
	int			present = 0;

	value->kind = MM_VALUE_PRESENT;
	value->player_values = palloc(sizeof(double) * nplayers);
	value->nvalues = nplayers;
	for (i = 0; i < nplayers; i++)
	{
		JsonbValue	jv;
		double		d;

		if (JsonbNumberValue(LookupPlayerValue(rule, &players[i], &jv), &d))
			value->player_values[i] = d;
		else if (rule->has_default && !rule->default_is_string)
			value->player_values[i] = rule->default_number;
		else if (rule->missing_matches_any)
		{
			value->player_values[i] = NAN;
			continue;
		}
		else
		{
			value->player_values[i] = NAN;
			value->kind = MM_VALUE_MISSING;
			continue;
		}
		present++;
	}
	if (value->kind != MM_VALUE_MISSING && present == 0)
		value->kind = MM_VALUE_ANY;
}

/* ---- difference: max between any two tickets' values -------------------- */

/* The party's value: average, min or max of its players' values. */
static void
DifferenceExtract(MmRuleContext *context, const MmRuleConfig *rule,
				  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	int			i;
	int			n = 0;
	double		merged = 0;

	ExtractPlayerNumbers(rule, players, nplayers, value);
	if (value->kind != MM_VALUE_PRESENT)
		return;
	for (i = 0; i < nplayers; i++)
	{
		double		v = value->player_values[i];

		if (isnan(v))
			continue;
		if (n == 0)
			merged = v;
		else if (rule->merge == MM_MERGE_MIN)
			merged = Min(merged, v);
		else if (rule->merge == MM_MERGE_MAX)
			merged = Max(merged, v);
		else
			merged += v;
		n++;
	}
	if (rule->merge == MM_MERGE_AVERAGE)
		merged /= n;
	value->number = merged;

	/* uncertain players search wider: f x the party's largest RD */
	value->widen = 0;
	if (rule->widen_by_rd > 0)
	{
		for (i = 0; i < nplayers; i++)
		{
			JsonbValue	rd;
			double		d;

			if (players[i].rating != NULL &&
				getKeyJsonValueFromContainer(players[i].rating, "rd", 2, &rd) != NULL &&
				JsonbNumberValue(&rd, &d))
				value->widen = Max(value->widen, rule->widen_by_rd * d);
		}
	}
}

/* An empty range: no value has joined yet. */
static void
RangeStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->has_value = false;
	state->min = state->max = 0;
	state->widen = 0;
}

/* Joins when the spread of all values stays within the threshold. */
static bool
DifferenceCanAdd(const MmRuleContext *context, const MmRuleState *state,
				 const MmRuleValue *value, double threshold)
{
	if (value->kind == MM_VALUE_ANY)
		return true;
	if (value->kind != MM_VALUE_PRESENT)
		return false;
	if (!state->has_value)
		return true;
	return Max(state->max, value->number) - Min(state->min, value->number) <=
		threshold + Max(state->widen, value->widen);
}

/* Widens the range with a joining ticket's value. */
static void
DifferenceAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
	if (value->kind != MM_VALUE_PRESENT)
		return;
	state->widen = Max(state->widen, value->widen);
	if (!state->has_value)
	{
		state->min = state->max = value->number;
		state->has_value = true;
		return;
	}
	state->min = Min(state->min, value->number);
	state->max = Max(state->max, value->number);
}

/* 1 - spread/max. */
static double
DifferenceCloseness(const MmRuleContext *context, const MmRuleState *state, double threshold)
{
	return state->has_value ? ClosenessOf(state->max - state->min, threshold + state->widen) : 1.0;
}

/* "min": the spread of the whole match is at least min. */
static bool
DifferenceFinal(const MmRuleContext *context, const MmRuleState *state, double threshold)
{
	if (!state->rule->has_min || !state->has_value)
		return !state->rule->has_min;
	return state->max - state->min >= state->rule->min;
}

/* |candidate - anchor| / max: how far the candidate widens the spread. */
static double
DifferenceDistance(const MmRuleContext *context, const MmRuleConfig *rule,
				   const MmRuleValue *anchor, const MmRuleValue *candidate, double threshold)
{
	if (anchor->kind != MM_VALUE_PRESENT || candidate->kind != MM_VALUE_PRESENT)
		return 0.0;
	return 1.0 - ClosenessOf(fabs(candidate->number - anchor->number),
							 threshold + Max(anchor->widen, candidate->widen));
}

/* ---- string_equality: every ticket has the same string ------------------- */

/* The party's string; players who disagree make the ticket unsatisfiable. */
static void
StringEqualityExtract(MmRuleContext *context, const MmRuleConfig *rule,
					  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	int			i;

	value->kind = MM_VALUE_ANY;
	value->string = NULL;
	for (i = 0; i < nplayers; i++)
	{
		JsonbValue	jv;
		JsonbValue *found = LookupPlayerValue(rule, &players[i], &jv);
		const char *s;

		if (found != NULL && found->type == jbvString)
			s = pnstrdup(found->val.string.val, found->val.string.len);
		else if (rule->has_default && rule->default_is_string)
			s = rule->default_string;
		else if (rule->missing_matches_any)
			continue;
		else
		{
			value->kind = MM_VALUE_MISSING;
			return;
		}
		if (value->string != NULL && strcmp(value->string, s) != 0)
		{
			value->kind = MM_VALUE_MISSING;
			return;
		}
		value->string = s;
		value->kind = MM_VALUE_PRESENT;
	}
}

/* No string chosen yet: the first present value sets it. */
static void
StringEqualityStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->has_value = false;
	state->string = NULL;
}

/* Joins with the same string, or matching anything. */
static bool
StringEqualityCanAdd(const MmRuleContext *context, const MmRuleState *state,
					 const MmRuleValue *value, double threshold)
{
	if (value->kind == MM_VALUE_ANY)
		return true;
	if (value->kind != MM_VALUE_PRESENT)
		return false;
	return !state->has_value || strcmp(state->string, value->string) == 0;
}

/* The first present string becomes the match's string. */
static void
StringEqualityAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
	if (value->kind != MM_VALUE_PRESENT || state->has_value)
		return;
	state->string = value->string;
	state->has_value = true;
}

/* Equal strings are a perfect match. */
static double
StringEqualityCloseness(const MmRuleContext *context, const MmRuleState *state, double threshold)
{
	return 1.0;
}

/* ---- latency: every player's latency in the chosen region <= max_ms ------- */

/* The hash of a region name (up to a NUL, as the stored copy), for region_hash. */
static inline uint32
RegionNameHash(const char *name, int len)
{
	return hash_bytes((const unsigned char *) name, strnlen(name, len));
}

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
		uint32		slot = RegionNameHash(name, strlen(name)) & mask;

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
	for (slot = RegionNameHash(name, len) & mask;
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

			mine = palloc(sizeof(MmRegionLatency) * count);
			while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			{
				double		ms;

				if (tok == WJB_KEY)
					region = InternRegion(context, v.val.string.val, v.val.string.len);
				else if (tok == WJB_VALUE && region >= 0 && JsonbNumberValue(&v, &ms) && ms >= 0)
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
	return ClosenessOf(worst, threshold);
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
	return 1.0 - ClosenessOf(best, threshold);
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
static int
LatencyStateCapacity(const MmTicket *tickets, int ntickets, int rule_index)
{
	int			most = 0;

	for (int i = 0; i < ntickets; i++)
		most = Max(most, tickets[i].values[rule_index].nregions);
	return most;
}

/* ---- team_difference: max between the teams' average values -------------- */

/* Each player's number; the team averages are taken after teams exist. */
static void
TeamDifferenceExtract(MmRuleContext *context, const MmRuleConfig *rule,
					  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	double		sum = 0;
	int			n = 0;

	ExtractPlayerNumbers(rule, players, nplayers, value);
	/* the party's average, for ranking (MmCandidateCost) */
	for (int p = 0; p < nplayers; p++)
		if (!isnan(value->player_values[p]))
		{
			sum += value->player_values[p];
			n++;
		}
	value->number = n > 0 ? sum / n : NAN;
}

/*
 * |candidate's average - anchor's average| / max: parties of similar average
 * make teams of similar average.
 */
static double
TeamDifferenceDistance(const MmRuleContext *context, const MmRuleConfig *rule,
					   const MmRuleValue *anchor, const MmRuleValue *candidate,
					   double threshold)
{
	double		a = anchor->number;
	double		c = candidate->number;

	if (isnan(a) || isnan(c))
		return 0.0;
	return 1.0 - ClosenessOf(fabs(c - a), threshold);
}

/* The spread of the team averages (players without a value left out). */
static bool
TeamDifferenceCheck(const MmRuleConfig *rule, int rule_index, const MmTeamsView *teams,
					double threshold, double *closeness)
{
	double		sums[MM_MAX_TEAMS];
	int			counts[MM_MAX_TEAMS];
	double		lo = 0,
				hi = 0;
	bool		first = true;
	int			t,
				k,
				p;

	for (t = 0; t < teams->nteams; t++)
	{
		sums[t] = 0;
		counts[t] = 0;
	}
	for (k = 0; k < teams->ntickets; k++)
	{
		const MmTicket *ticket = teams->tickets[k];
		const MmRuleValue *value = &ticket->values[rule_index];

		for (p = 0; p < ticket->nplayers; p++)
		{
			double		v = value->player_values[p];

			if (isnan(v))
				continue;
			sums[teams->ticket_team[k]] += v;
			counts[teams->ticket_team[k]]++;
		}
	}
	for (t = 0; t < teams->nteams; t++)
	{
		double		avg;

		if (counts[t] == 0)
			continue;
		avg = sums[t] / counts[t];
		if (first)
			lo = hi = avg;
		lo = Min(lo, avg);
		hi = Max(hi, avg);
		first = false;
	}
	*closeness = ClosenessOf(hi - lo, threshold);
	return hi - lo <= threshold;
}

/* ---- team_size_balance: max_difference between team sizes ---------------- */

/* Rules that read nothing from the players (team_size_balance). */
static void
NoValueExtract(MmRuleContext *context, const MmRuleConfig *rule,
			   const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	value->kind = MM_VALUE_PRESENT;
}

/* The spread between the largest and the smallest team. */
static bool
TeamSizeBalanceCheck(const MmRuleConfig *rule, int rule_index, const MmTeamsView *teams,
					 double threshold, double *closeness)
{
	int			lo = teams->team_size[0];
	int			hi = teams->team_size[0];
	int			t;

	for (t = 1; t < teams->nteams; t++)
	{
		lo = Min(lo, teams->team_size[t]);
		hi = Max(hi, teams->team_size[t]);
	}
	*closeness = ClosenessOf(hi - lo, threshold);
	return hi - lo <= threshold;
}


/* ---- match_total: the sum over all players lies in [min, max] ------------ */

/* The party's sum (players matching anything add nothing). */
static void
MatchTotalExtract(MmRuleContext *context, const MmRuleConfig *rule,
				  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	double		sum = 0;

	ExtractPlayerNumbers(rule, players, nplayers, value);
	if (value->kind == MM_VALUE_MISSING)
		return;
	for (int i = 0; i < nplayers; i++)
	{
		/*
		 * A negative count (a stored value, a default, a ticket from before
		 * the rule) could only be let in by a later one: it counts as
		 * missing, as the max is checked as tickets join.
		 */
		if (value->player_values[i] < 0)
		{
			value->kind = MM_VALUE_MISSING;
			return;
		}
		if (!isnan(value->player_values[i]))
			sum += value->player_values[i];
	}
	value->number = sum;
}

/* The sum so far in state->max. */
static void
SumStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->has_value = false;
	state->min = state->max = 0;
}

/*
 * Joins while the sum stays within max + widening (values are counts or
 * amounts: the max is checked as tickets join).
 */
static bool
MatchTotalCanAdd(const MmRuleContext *context, const MmRuleState *state,
				 const MmRuleValue *value, double threshold)
{
	const MmRuleConfig *rule = state->rule;

	if (value->kind == MM_VALUE_ANY)
		return true;
	if (value->kind != MM_VALUE_PRESENT)
		return false;
	return !rule->has_max || state->max + value->number <= rule->max + threshold;
}

static void
MatchTotalAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
	if (value->kind != MM_VALUE_PRESENT)
		return;
	state->max += value->number;
	state->has_value = true;
}

/* The whole match: min - widening <= sum <= max + widening. */
static bool
MatchTotalFinal(const MmRuleContext *context, const MmRuleState *state, double threshold)
{
	const MmRuleConfig *rule = state->rule;

	if (rule->has_min && state->max < rule->min - threshold)
		return false;
	return !rule->has_max || state->max <= rule->max + threshold;
}

/* Sums and comparisons accept or refuse: no degree. */
static double
PerfectCloseness(const MmRuleContext *context, const MmRuleState *state, double threshold)
{
	return 1.0;
}

/* ---- comparison: each player against a reference, or across players ----- */

/*
 * Against a string reference: each player's value is 1 when its string
 * equals the reference, else 0 (the rule's threshold is 1), so = and !=
 * need nothing else of the handler.
 */
static void
ExtractReferenceMatches(const MmRuleConfig *rule, const MmPlayerInput *players,
						int nplayers, MmRuleValue *value)
{
	int			present = 0;

	value->kind = MM_VALUE_PRESENT;
	value->player_values = palloc(sizeof(double) * nplayers);
	value->nvalues = nplayers;
	for (int i = 0; i < nplayers; i++)
	{
		JsonbValue	jv;
		JsonbValue *found = LookupPlayerValue(rule, &players[i], &jv);
		const char *s = NULL;
		int			len = 0;

		if (rule->compare_op == MM_CMP_CONTAINS)
		{
			/* a list of strings: 1 when it holds the reference */
			if (found != NULL && found->type == jbvBinary &&
				JsonContainerIsArray(found->val.binary.data))
			{
				JsonbValue	ref = {.type = jbvString};

				ref.val.string.val = rule->reference_string;
				ref.val.string.len = strlen(rule->reference_string);
				value->player_values[i] =
					findJsonbValueFromContainer(found->val.binary.data, JB_FARRAY, &ref) ? 1.0 : 0.0;
				present++;
			}
			else
			{
				value->player_values[i] = NAN;
				if (!rule->missing_matches_any)
					value->kind = MM_VALUE_MISSING;
			}
			continue;
		}
		if (found != NULL && found->type == jbvString)
		{
			s = found->val.string.val;
			len = found->val.string.len;
		}
		else if (rule->has_default && rule->default_is_string)
		{
			s = rule->default_string;
			len = strlen(s);
		}
		if (s != NULL)
		{
			value->player_values[i] = (len == (int) strlen(rule->reference_string) &&
									   memcmp(s, rule->reference_string, len) == 0) ? 1.0 : 0.0;
			present++;
		}
		else
		{
			value->player_values[i] = NAN;
			if (!rule->missing_matches_any)
				value->kind = MM_VALUE_MISSING;
		}
	}
	if (value->kind != MM_VALUE_MISSING && present == 0)
		value->kind = MM_VALUE_ANY;
}

/* Each player's number; all_equal / all_different within the party too. */
static void
ComparisonExtract(MmRuleContext *context, const MmRuleConfig *rule,
				  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	bool		first = true;

	if (rule->reference_string != NULL)
	{
		ExtractReferenceMatches(rule, players, nplayers, value);
		return;
	}
	ExtractPlayerNumbers(rule, players, nplayers, value);
	if (value->kind != MM_VALUE_PRESENT)
		return;
	for (int i = 0; i < nplayers; i++)
	{
		double		v = value->player_values[i];

		if (isnan(v))
			continue;
		if (rule->compare_op == MM_CMP_ALL_EQUAL && !first && v != value->number)
		{
			value->kind = MM_VALUE_MISSING;	/* the party disagrees with itself */
			return;
		}
		if (rule->compare_op == MM_CMP_ALL_DIFFERENT)
			for (int j = 0; j < i; j++)
				if (value->player_values[j] == v)
				{
					value->kind = MM_VALUE_MISSING;
					return;
				}
		if (first)
			value->number = v;
		first = false;
	}
}

/* Whether a value passes the operator against the reference. */
static inline bool
ComparePasses(MmCompareOp op, double v, double reference)
{
	switch (op)
	{
		case MM_CMP_EQ:
		case MM_CMP_CONTAINS:	/* 1 when the list holds the reference */
			return v == reference;
		case MM_CMP_NE:
			return v != reference;
		case MM_CMP_LT:
			return v < reference;
		case MM_CMP_LE:
			return v <= reference;
		case MM_CMP_GT:
			return v > reference;
		case MM_CMP_GE:
			return v >= reference;
		default:
			return true;
	}
}

static void
ComparisonStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->has_value = false;
	state->min = state->max = 0;
	state->nopen = 0;
}

/*
 * Against a reference (the threshold): every player of the ticket passes.
 * all_equal: the ticket's value equals the match's; all_different: none of
 * the ticket's values is in the match yet.
 */
static bool
ComparisonCanAdd(const MmRuleContext *context, const MmRuleState *state,
				 const MmRuleValue *value, double threshold)
{
	const MmRuleConfig *rule = state->rule;

	if (value->kind == MM_VALUE_ANY)
		return true;
	if (value->kind != MM_VALUE_PRESENT)
		return false;
	switch (rule->compare_op)
	{
		case MM_CMP_ALL_EQUAL:
			return !state->has_value || state->min == value->number;
		case MM_CMP_ALL_DIFFERENT:
			/* the values so far are region_worst[0 .. nopen - 1] */
			for (int i = 0; i < value->nvalues; i++)
			{
				double		v = value->player_values[i];

				if (isnan(v))
					continue;
				for (int k = 0; k < state->nopen; k++)
					if (state->region_worst[k] == v)
						return false;
			}
			return true;
		default:
			break;
	}
	for (int i = 0; i < value->nvalues; i++)
	{
		double		v = value->player_values[i];

		if (!isnan(v) && !ComparePasses(rule->compare_op, v, threshold))
			return false;
	}
	return true;
}

static void
ComparisonAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
	if (value->kind != MM_VALUE_PRESENT)
		return;
	if (!state->has_value)
		state->min = value->number;
	state->has_value = true;
	if (state->rule->compare_op == MM_CMP_ALL_DIFFERENT)
		for (int i = 0; i < value->nvalues; i++)
			if (!isnan(value->player_values[i]) && state->nopen < state->region_capacity)
				state->region_worst[state->nopen++] = value->player_values[i];
}

/* ---- team_ticket_size_similarity: large parties meet large parties ------- */

/*
 * A ticket is large when it holds at least half its team's players.  The
 * rule holds when no ticket is large, or every team has a large ticket.
 */
static bool
TicketSizeSimilarityCheck(const MmRuleConfig *rule, int rule_index, const MmTeamsView *teams,
						  double threshold, double *closeness)
{
	bool		has_large[MM_MAX_TEAMS];
	bool		any = false;

	*closeness = 1.0;
	for (int t = 0; t < teams->nteams; t++)
		has_large[t] = false;
	for (int k = 0; k < teams->ntickets; k++)
	{
		int			t = teams->ticket_team[k];

		if (2 * teams->tickets[k]->nplayers >= teams->team_size[t])
		{
			has_large[t] = true;
			any = true;
		}
	}
	if (!any)
		return true;
	for (int t = 0; t < teams->nteams; t++)
		if (!has_large[t] && teams->team_size[t] > 0)
			return false;
	return true;
}

/* Whether a ticket counts as large for ranking: half the largest team. */
static bool
TicketIsLarge(const MmRuleContext *context, int nplayers)
{
	int			most = 0;

	for (int t = 0; t < context->config->nteams; t++)
		most = Max(most, context->config->teams[t].max);
	return 2 * nplayers >= most;
}

static void
TicketSizeExtract(MmRuleContext *context, const MmRuleConfig *rule,
				  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	value->kind = MM_VALUE_PRESENT;
	value->number = TicketIsLarge(context, nplayers) ? 1 : 0;
}

/* 0 for a ticket of the anchor's kind (large or not), else 1. */
static double
TicketSizeDistance(const MmRuleContext *context, const MmRuleConfig *rule,
				   const MmRuleValue *anchor, const MmRuleValue *candidate, double threshold)
{
	return anchor->number == candidate->number ? 0.0 : 1.0;
}

/* ---- compound ------------------------------------------------------------- */

/* Three-valued truth: false for every superset, true for every one, maybe. */
typedef enum Truth
{
	TRUTH_FALSE,
	TRUTH_MAYBE,
	TRUTH_TRUE
} Truth;

/* A leaf's truth for MmCompoundCanAdd. */
static Truth
LeafTruth(const MmRuleContext *context, const MmRuleConfig *leaf, int r,
		  const MmRuleState *states, const MmRuleValue *values, const bool *rule_on,
		  const double *threshold)
{
	const MmRuleHandler *h;

	if (!rule_on[r])
		return TRUTH_TRUE;
	if (states[r].broken || values[r].kind == MM_VALUE_MISSING)
		return TRUTH_FALSE;
	h = MmRuleHandlerFor(leaf->type);
	if (h->can_add != NULL && !h->can_add(context, &states[r], &values[r], threshold[r]))
		return TRUTH_FALSE;
	return TRUTH_MAYBE;
}

static Truth
EvalCanAdd(const MmRuleContext *context, const MmRuleConfig *compound, int node,
		   const MmRuleState *states, const MmRuleValue *values, const bool *rule_on,
		   const double *threshold)
{
	const MmCompoundNode *n = &compound->nodes[node];
	Truth		result;

	switch (n->op)
	{
		case MM_COMPOUND_RULE:
			return LeafTruth(context, &context->config->rules[n->rule], n->rule, states,
							 values, rule_on, threshold);
		case MM_COMPOUND_NOT:
			result = EvalCanAdd(context, compound, compound->child_list[n->first_child],
								states, values, rule_on, threshold);
			return result == TRUTH_TRUE ? TRUTH_FALSE :
				result == TRUTH_FALSE ? TRUTH_TRUE : TRUTH_MAYBE;
		case MM_COMPOUND_AND:
			result = TRUTH_TRUE;
			for (int k = 0; k < n->nchildren; k++)
			{
				Truth		c = EvalCanAdd(context, compound, compound->child_list[n->first_child + k],
										   states, values, rule_on, threshold);

				result = Min(result, c);
			}
			return result;
		case MM_COMPOUND_OR:
			result = TRUTH_FALSE;
			for (int k = 0; k < n->nchildren; k++)
			{
				Truth		c = EvalCanAdd(context, compound, compound->child_list[n->first_child + k],
										   states, values, rule_on, threshold);

				result = Max(result, c);
			}
			return result;
	}
	return TRUTH_MAYBE;
}

bool
MmCompoundCanAdd(const MmRuleContext *context, const MmRuleConfig *compound,
				 const MmRuleState *states, const MmRuleValue *values,
				 const bool *rule_on, const double *threshold)
{
	return EvalCanAdd(context, compound, 0, states, values, rule_on, threshold) != TRUTH_FALSE;
}

static bool
EvalHolds(const MmRuleContext *context, const MmRuleConfig *compound, int node,
		  const MmRuleState *states, const bool *rule_on, const double *threshold)
{
	const MmCompoundNode *n = &compound->nodes[node];

	switch (n->op)
	{
		case MM_COMPOUND_RULE:
			{
				int			r = n->rule;
				const MmRuleHandler *h;

				if (!rule_on[r])
					return true;
				if (states[r].broken)
					return false;
				h = MmRuleHandlerFor(context->config->rules[r].type);
				return h->check_final == NULL ||
					h->check_final(context, &states[r], threshold[r]);
			}
		case MM_COMPOUND_NOT:
			return !EvalHolds(context, compound, compound->child_list[n->first_child],
							  states, rule_on, threshold);
		case MM_COMPOUND_AND:
			for (int k = 0; k < n->nchildren; k++)
				if (!EvalHolds(context, compound, compound->child_list[n->first_child + k],
							   states, rule_on, threshold))
					return false;
			return true;
		case MM_COMPOUND_OR:
			for (int k = 0; k < n->nchildren; k++)
				if (EvalHolds(context, compound, compound->child_list[n->first_child + k],
							  states, rule_on, threshold))
					return true;
			return false;
	}
	return true;
}

static bool
CompoundHolds(const MmRuleContext *context, const MmRuleConfig *compound,
				const MmRuleState *states, const bool *rule_on, const double *threshold)
{
	return EvalHolds(context, compound, 0, states, rule_on, threshold);
}

/* A ticket joins a leaf's state; a ticket that breaks the leaf marks it. */
void
MmLeafJoin(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value,
		   double threshold)
{
	const MmRuleHandler *h = MmRuleHandlerFor(state->rule->type);

	if (!state->broken)
	{
		if (value->kind == MM_VALUE_MISSING)
			state->broken = true;
		else if (h->can_add != NULL && !h->can_add(context, state, value, threshold))
			state->broken = true;
	}
	if (h->add != NULL)
		h->add(context, state, value);
}

/* The compound itself holds no state: its leaves do. */
static void
CompoundStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->has_value = false;
}

static void
CompoundAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
}


/* ---- list attributes: interned strings ------------------------------------ */

/* The index of a string in the context's string table, added when new. */
static int
InternString(MmRuleContext *context, const char *name, int len)
{
	uint32		mask;
	uint32		slot;
	int			r;

	if (2 * (context->nstrings + 1) > context->string_hash_size)
	{
		int			size = Max(64, 2 * context->string_hash_size);

		if (context->string_hash != NULL)
			pfree(context->string_hash);
		context->string_hash = palloc(sizeof(int) * size);
		memset(context->string_hash, -1, sizeof(int) * size);
		context->string_hash_size = size;
		for (int k = 0; k < context->nstrings; k++)
		{
			const char *n = context->strings[k];

			slot = RegionNameHash(n, strlen(n)) & (size - 1);
			while (context->string_hash[slot] >= 0)
				slot = (slot + 1) & (size - 1);
			context->string_hash[slot] = k;
		}
	}
	mask = context->string_hash_size - 1;
	for (slot = RegionNameHash(name, len) & mask;
		 (r = context->string_hash[slot]) >= 0;
		 slot = (slot + 1) & mask)
	{
		if (strncmp(context->strings[r], name, len) == 0 && context->strings[r][len] == '\0')
			return r;
	}
	if (context->nstrings == context->strings_allocated)
	{
		context->strings_allocated = Max(16, 2 * context->strings_allocated);
		context->strings = context->strings == NULL ?
			palloc(sizeof(char *) * context->strings_allocated) :
			repalloc(context->strings, sizeof(char *) * context->strings_allocated);
	}
	r = context->nstrings++;
	context->strings[r] = pnstrdup(name, len);
	context->string_hash[slot] = r;
	return r;
}

static int
CompareInts(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/*
 * Sorts ints and drops duplicates; returns the new count.  A list attribute
 * has no length limit but the ticket's size, so O(n log n) (an insertion
 * sort took a second per reversed list of 80,000).
 */
static int
SortUnique(int *a, int n)
{
	int			out = 0;

	CHECK_FOR_INTERRUPTS();
	qsort(a, n, sizeof(int), CompareInts);
	for (int i = 0; i < n; i++)
		if (out == 0 || a[out - 1] != a[i])
			a[out++] = a[i];
	return out;
}

/*
 * A player's list attribute as interned, sorted, unique ids; false when the
 * player has no list there (a non-list, or a list with a non-string, counts
 * as none).
 */
static bool
PlayerList(MmRuleContext *context, const MmRuleConfig *rule, const MmPlayerInput *player,
		   int **ids, int *nids)
{
	JsonbValue	jv;
	JsonbValue *found = LookupPlayerValue(rule, player, &jv);
	JsonbContainer *list;
	int			n;

	if (found == NULL || found->type != jbvBinary ||
		!JsonContainerIsArray(found->val.binary.data) || JsonContainerIsScalar(found->val.binary.data))
		return false;
	list = found->val.binary.data;
	n = 0;
	*ids = palloc(sizeof(int) * Max(JsonContainerSize(list), 1));
	{
		JsonbIterator *it = JsonbIteratorInit(list);
		JsonbValue	e;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			if (e.type != jbvString)
				return false;
			(*ids)[n++] = InternString(context, e.val.string.val, e.val.string.len);
		}
	}
	*nids = SortUnique(*ids, n);
	return true;
}

/* Size of the intersection of two sorted int lists (into out when given). */
static int
IntersectSorted(const int *a, int na, const int *b, int nb, int *out)
{
	int			i = 0,
				j = 0,
				n = 0;

	while (i < na && j < nb)
	{
		if (a[i] < b[j])
			i++;
		else if (a[i] > b[j])
			j++;
		else
		{
			if (out != NULL)
				out[n] = a[i];
			n++;
			i++;
			j++;
		}
	}
	return n;
}

/* ---- set_intersection: the tickets share at least min_size values -------- */

/* The party's common values: the intersection of its players' lists. */
static void
SetIntersectionExtract(MmRuleContext *context, const MmRuleConfig *rule,
					   const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	bool		any = false;

	value->kind = MM_VALUE_ANY;
	value->set = NULL;
	value->nset = 0;
	for (int i = 0; i < nplayers; i++)
	{
		int		   *ids = NULL;
		int			nids = 0;

		if (!PlayerList(context, rule, &players[i], &ids, &nids))
		{
			if (rule->has_default)
			{
				ids = palloc(sizeof(int) * Max(rule->ndefault_list, 1));
				for (int k = 0; k < rule->ndefault_list; k++)
					ids[k] = InternString(context, rule->default_list[k],
										  strlen(rule->default_list[k]));
				nids = SortUnique(ids, rule->ndefault_list);
			}
			else if (rule->missing_matches_any)
				continue;
			else
			{
				value->kind = MM_VALUE_MISSING;
				return;
			}
		}
		if (!any)
		{
			value->set = ids;
			value->nset = nids;
			any = true;
		}
		else
			value->nset = IntersectSorted(value->set, value->nset, ids, nids, value->set);
		value->kind = MM_VALUE_PRESENT;
	}
}

static void
SetIntersectionStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->restricted = false;
	state->nopen = 0;
	state->has_value = false;
}

/* Joins while the common values stay at least min_size (the threshold). */
static bool
SetIntersectionCanAdd(const MmRuleContext *context, const MmRuleState *state,
					  const MmRuleValue *value, double threshold)
{
	if (value->kind == MM_VALUE_ANY)
		return true;
	if (value->kind != MM_VALUE_PRESENT)
		return false;
	if (!state->restricted)
		return value->nset >= threshold;
	return IntersectSorted(state->open_region, state->nopen, value->set, value->nset, NULL) >= threshold;
}

static void
SetIntersectionAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
	if (value->kind != MM_VALUE_PRESENT)
		return;
	if (!state->restricted)
	{
		int			n = Min(value->nset, state->region_capacity);

		memcpy(state->open_region, value->set, sizeof(int) * n);
		state->nopen = n;
		state->restricted = true;
		state->has_value = true;
		return;
	}
	state->nopen = IntersectSorted(state->open_region, state->nopen, value->set, value->nset,
								   state->open_region);
}

/* ---- blocklist: no player of the match blocks another -------------------- */

/* The players the party blocks, and the party's own ids. */
static void
BlocklistExtract(MmRuleContext *context, const MmRuleConfig *rule,
				 const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	int			total = 0;

	value->kind = MM_VALUE_PRESENT;
	value->ids = palloc(sizeof(int) * Max(nplayers, 1));
	for (int i = 0; i < nplayers; i++)
		value->ids[i] = InternString(context, players[i].id, strlen(players[i].id));
	value->nids = SortUnique(value->ids, nplayers);
	value->set = NULL;
	value->nset = 0;
	for (int i = 0; i < nplayers; i++)
	{
		int		   *ids = NULL;
		int			nids = 0;

		/* a player without a list blocks nobody */
		if (!PlayerList(context, rule, &players[i], &ids, &nids) || nids == 0)
			continue;
		value->set = value->set == NULL ? palloc(sizeof(int) * nids) :
			repalloc(value->set, sizeof(int) * (total + nids));
		memcpy(value->set + total, ids, sizeof(int) * nids);
		total += nids;
	}
	value->nset = value->set != NULL ? SortUnique(value->set, total) : 0;
}

static void
BlocklistStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->njoined = 0;
	state->has_value = false;
}

/* Joins when nobody in the match blocks the party and it blocks nobody there. */
static bool
BlocklistCanAdd(const MmRuleContext *context, const MmRuleState *state,
				const MmRuleValue *value, double threshold)
{
	if (value->kind != MM_VALUE_PRESENT)
		return value->kind == MM_VALUE_ANY;
	for (int k = 0; k < state->njoined; k++)
	{
		const MmRuleValue *j = state->joined[k];

		if (IntersectSorted(value->ids, value->nids, j->set, j->nset, NULL) > 0 ||
			IntersectSorted(value->set, value->nset, j->ids, j->nids, NULL) > 0)
			return false;
	}
	return true;
}

static void
BlocklistAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
	if (value->kind != MM_VALUE_PRESENT || state->njoined >= state->region_capacity)
		return;
	state->joined[state->njoined++] = value;
	state->has_value = true;
}

/* ---- the table ------------------------------------------------------------ */

static const MmRuleHandler RuleHandlers[] = {
	{.type = MM_RULE_STRING_EQUALITY, .type_name = "string_equality", .scope = MM_SCOPE_TICKETS,
		.extract = StringEqualityExtract, .state_init = StringEqualityStateInit,
		.can_add = StringEqualityCanAdd, .add = StringEqualityAdd,
	.closeness = StringEqualityCloseness},
	{.type = MM_RULE_DIFFERENCE, .type_name = "difference", .scope = MM_SCOPE_TICKETS,
		.extract = DifferenceExtract, .state_init = RangeStateInit,
		.can_add = DifferenceCanAdd, .add = DifferenceAdd,
		.closeness = DifferenceCloseness, .distance = DifferenceDistance,
	.check_final = DifferenceFinal},
	{.type = MM_RULE_LATENCY, .type_name = "latency", .scope = MM_SCOPE_TICKETS,
		.extract = LatencyExtract, .state_init = LatencyStateInit,
		.can_add = LatencyCanAdd, .add = LatencyAdd,
	.closeness = LatencyCloseness, .distance = LatencyDistance},
	{.type = MM_RULE_TEAM_DIFFERENCE, .type_name = "team_difference", .scope = MM_SCOPE_TEAMS,
		.extract = TeamDifferenceExtract, .check_teams = TeamDifferenceCheck,
	.distance = TeamDifferenceDistance},
	{.type = MM_RULE_TEAM_SIZE_BALANCE, .type_name = "team_size_balance", .scope = MM_SCOPE_TEAMS,
	.extract = NoValueExtract, .check_teams = TeamSizeBalanceCheck},
	{.type = MM_RULE_MATCH_TOTAL, .type_name = "match_total", .scope = MM_SCOPE_TICKETS,
		.extract = MatchTotalExtract, .state_init = SumStateInit,
		.can_add = MatchTotalCanAdd, .add = MatchTotalAdd,
	.closeness = PerfectCloseness, .check_final = MatchTotalFinal},
	{.type = MM_RULE_COMPARISON, .type_name = "comparison", .scope = MM_SCOPE_TICKETS,
		.extract = ComparisonExtract, .state_init = ComparisonStateInit,
		.can_add = ComparisonCanAdd, .add = ComparisonAdd,
	.closeness = PerfectCloseness},
	{.type = MM_RULE_TEAM_TICKET_SIZE_SIMILARITY, .type_name = "team_ticket_size_similarity",
		.scope = MM_SCOPE_TEAMS, .extract = TicketSizeExtract,
	.check_teams = TicketSizeSimilarityCheck, .distance = TicketSizeDistance},
	{.type = MM_RULE_COMPOUND, .type_name = "compound", .scope = MM_SCOPE_TICKETS,
		.extract = NoValueExtract, .state_init = CompoundStateInit,
		.can_add = NULL, .add = CompoundAdd,
	.closeness = PerfectCloseness},
	{.type = MM_RULE_SET_INTERSECTION, .type_name = "set_intersection", .scope = MM_SCOPE_TICKETS,
		.extract = SetIntersectionExtract, .state_init = SetIntersectionStateInit,
		.can_add = SetIntersectionCanAdd, .add = SetIntersectionAdd,
	.closeness = PerfectCloseness},
	{.type = MM_RULE_BLOCKLIST, .type_name = "blocklist", .scope = MM_SCOPE_TICKETS,
		.extract = BlocklistExtract, .state_init = BlocklistStateInit,
		.can_add = BlocklistCanAdd, .add = BlocklistAdd,
	.closeness = PerfectCloseness},
};

/* The handler of a rule type, from the table above. */
const MmRuleHandler *
MmRuleHandlerFor(MmRuleType type)
{
	int			i;

	for (i = 0; i < lengthof(RuleHandlers); i++)
		if (RuleHandlers[i].type == type)
			return &RuleHandlers[i];
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("rule type %d has no handler in the tick", (int) type)));
	return NULL;				/* keep the compiler quiet */
}

/* Starts a per-tick context with no region known yet. */
void
MmRuleContextInit(MmRuleContext *context, const MmQueueConfig *config)
{
	context->config = config;
	context->nregions = 0;
	context->regions_allocated = 8;
	context->regions = palloc(sizeof(char *) * context->regions_allocated);
	context->region_hash_size = 0;
	context->region_hash = NULL;
	context->nstrings = 0;
	context->strings_allocated = 0;
	context->strings = NULL;
	context->string_hash_size = 0;
	context->string_hash = NULL;
}

/* Every rule's value of one ticket, through its handler. */
void
MmExtractTicketValues(MmRuleContext *context, MmTicket *ticket,
					  const MmPlayerInput *players, int nplayers)
{
	const MmQueueConfig *config = context->config;
	int			i;

	/*
	 * After the rules' values: strategy balanced's attribute (nrules), then
	 * batching_preference sorted's attributes (nrules + 1 + k), each party
	 * merged as an average.
	 */
	ticket->values = palloc0(sizeof(MmRuleValue) *
							 Max(config->nrules + (config->balanced || config->nsort > 0 ?
												   1 + config->nsort : 0), 1));
	if (config->balanced && config->balanced_rule != NULL)
		ExtractPlayerNumbers(config->balanced_rule, players, nplayers,
							 &ticket->values[config->nrules]);
	for (i = 0; i < config->nsort; i++)
		DifferenceExtract(context, &config->sort_rules[i], players, nplayers,
						  &ticket->values[config->nrules + 1 + i]);
	for (i = 0; i < config->nrules; i++)
	{
		const MmRuleConfig *rule = &config->rules[i];

		MmRuleHandlerFor(rule->type)->extract(context, rule, players, nplayers,
											  &ticket->values[i]);
	}
}

/* The weighted ranking cost of a candidate against an anchor; see rules.h. */
double
MmCandidateCost(const MmRuleContext *context, const MmTicket *anchor,
				const MmTicket *candidate, const bool *rule_on, const double *threshold)
{
	const MmQueueConfig *config = context->config;
	double		cost = 0;

	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];
		const MmRuleHandler *handler;

		if (!rule_on[r] || rule->weight <= 0)
			continue;
		handler = MmRuleHandlerFor(rule->type);
		if (handler->distance == NULL)
			continue;
		cost += rule->weight * handler->distance(context, rule, &anchor->values[r],
												 &candidate->values[r], threshold[r]);
	}
	return cost;
}

/* Starts a rule's state; see rules.h. */
void
MmRuleStateInit(const MmRuleContext *context, const MmRuleConfig *rule, MmRuleState *state)
{
	const MmRuleHandler *h = MmRuleHandlerFor(rule->type);

	state->rule = rule;
	state->broken = false;
	if (h->state_init != NULL)
		h->state_init(context, state);
}

/* The capacity of a state's arrays; see rules.h. */
int
MmRuleStateCapacity(const MmQueueConfig *config, int rule_index,
					const MmTicket *tickets, int ntickets)
{
	const MmRuleConfig *rule = &config->rules[rule_index];

	if (rule->type == MM_RULE_LATENCY)
		return LatencyStateCapacity(tickets, ntickets, rule_index);
	if (rule->type == MM_RULE_COMPARISON && rule->compare_op == MM_CMP_ALL_DIFFERENT)
		return Max(config->match_max, 1);
	if (rule->type == MM_RULE_BLOCKLIST)
		return Max(config->match_max, 1);
	if (rule->type == MM_RULE_SET_INTERSECTION)
	{
		int			most = 1;

		for (int i = 0; i < ntickets; i++)
			most = Max(most, tickets[i].values[rule_index].nset);
		return most;
	}
	return 0;
}

/* Allocates a state's arrays; see rules.h. */
void
MmRuleStateAlloc(MmRuleState *state, int capacity)
{
	state->region_capacity = Max(capacity, 0);
	state->open_region = palloc(sizeof(int) * Max(capacity, 1));
	state->region_worst = palloc(sizeof(double) * Max(capacity, 1));
	state->region_sum = palloc(sizeof(double) * Max(capacity, 1));
	state->region_dist = palloc(sizeof(double) * Max(capacity, 1));
	state->joined = palloc(sizeof(MmRuleValue *) * Max(capacity, 1));
}

/* Copies a state; see rules.h. */
void
MmRuleStateCopy(MmRuleState *dst, const MmRuleState *src)
{
	int		   *open_region = dst->open_region;
	double	   *region_worst = dst->region_worst;
	double	   *region_sum = dst->region_sum;
	double	   *region_dist = dst->region_dist;
	const MmRuleValue **joined = dst->joined;
	int			capacity = dst->region_capacity;

	*dst = *src;
	dst->open_region = open_region;
	dst->region_worst = region_worst;
	dst->region_sum = region_sum;
	dst->region_dist = region_dist;
	dst->joined = joined;
	dst->region_capacity = capacity;
	if (src->nopen > 0 && open_region != NULL)
	{
		memcpy(open_region, src->open_region, sizeof(int) * src->nopen);
		memcpy(region_worst, src->region_worst, sizeof(double) * src->nopen);
		memcpy(region_sum, src->region_sum, sizeof(double) * src->nopen);
		memcpy(region_dist, src->region_dist, sizeof(double) * src->nopen);
	}
	if (src->njoined > 0 && joined != NULL)
		memcpy(joined, src->joined, sizeof(MmRuleValue *) * src->njoined);
}

/* Every whole-match condition; see rules.h. */
bool
MmFinalHolds(const MmRuleContext *context, const MmRuleState *states,
			 const bool *rule_on, const double *threshold)
{
	const MmQueueConfig *config = context->config;

	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];
		const MmRuleHandler *h;

		if (!rule_on[r] || rule->in_compound)
			continue;
		if (rule->type == MM_RULE_COMPOUND)
		{
			if (!CompoundHolds(context, rule, states, rule_on, threshold))
				return false;
			continue;
		}
		h = MmRuleHandlerFor(rule->type);
		if (h->scope == MM_SCOPE_TICKETS && h->check_final != NULL &&
			!h->check_final(context, &states[r], threshold[r]))
			return false;
	}
	return true;
}
