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
JsonbValue *
MmLookupPlayerValue(const MmRuleConfig *rule, const MmPlayerInput *player,
					JsonbValue *result)
{
	JsonbContainer *container;
	int			i;

	switch (rule->source)
	{
		case MM_SOURCE_TICKET:
			container = player->attributes;
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("rule \"%s\" uses a source the tick does not support yet",
							rule->name)));
			container = NULL;	/* keep the compiler quiet */
	}
	if (container == NULL || rule->attribute == NULL)
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
	for (i = 0; i < nplayers; i++)
	{
		JsonbValue	jv;
		double		d;

		if (JsonbNumberValue(MmLookupPlayerValue(rule, &players[i], &jv), &d))
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
}

/* An empty range: no value has joined yet. */
static void
RangeStateInit(const MmRuleContext *context, MmRuleState *state)
{
	state->has_value = false;
	state->min = state->max = 0;
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
	return Max(state->max, value->number) - Min(state->min, value->number) <= threshold;
}

/* Widens the range with a joining ticket's value. */
static void
DifferenceAdd(const MmRuleContext *context, MmRuleState *state, const MmRuleValue *value)
{
	if (value->kind != MM_VALUE_PRESENT)
		return;
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
	return state->has_value ? ClosenessOf(state->max - state->min, threshold) : 1.0;
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
		JsonbValue *found = MmLookupPlayerValue(rule, &players[i], &jv);
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

	value->kind = MM_VALUE_PRESENT;
	value->floor_ms = 0;
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
					nmine++;
				}
			}
			SortRegionLatencies(mine, nmine);
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
		merged[i].ms = Max(merged[i].ms, value->floor_ms);
	value->regions = merged;
	value->nregions = nmerged;
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
}

/*
 * Joins when some region stays open to everyone within max_ms.  Costs
 * O(regions of the state + regions of the ticket), never O(regions seen).
 */
static bool
LatencyCanAdd(const MmRuleContext *context, const MmRuleState *state,
			  const MmRuleValue *value, double threshold)
{
	int			i;

	if (value->kind == MM_VALUE_ANY)
		return true;
	if (value->kind != MM_VALUE_PRESENT)
		return false;
	if (context->nregions == 0)
		return Max(state->max, value->floor_ms) <= threshold;
	if (!state->restricted)
	{
		/* every region open at state->max */
		if (value->all_regions)
			return Max(state->max, value->floor_ms) <= threshold;
		for (i = 0; i < value->nregions; i++)
			if (Max(state->max, value->regions[i].ms) <= threshold)
				return true;
		return false;
	}
	if (value->all_regions)
	{
		for (i = 0; i < state->nopen; i++)
			if (Max(state->region_worst[i], value->floor_ms) <= threshold)
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
				if (Max(state->region_worst[a], value->regions[b].ms) <= threshold)
					return true;
				a++;
				b++;
			}
		}
	}
	return false;
}

/*
 * Raises each open region's worst latency; closes the regions the ticket
 * cannot play in (they leave the list: a closed region never reopens).
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
	if (value->all_regions)
	{
		for (i = 0; i < state->nopen; i++)
			state->region_worst[i] = Max(state->region_worst[i], value->floor_ms);
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
				out++;
				a++;
				b++;
			}
		}
		state->nopen = out;
	}
}

/* 1 - (worst latency in the chosen region)/max_ms. */
static double
LatencyCloseness(const MmRuleContext *context, const MmRuleState *state, double threshold)
{
	double		worst;

	if (!state->has_value)
		return 1.0;
	if (MmBestRegion(context, state, &worst) < 0)
		worst = state->max;
	return ClosenessOf(worst, threshold);
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

/* ---- team_difference: max between the teams' average values -------------- */

/* Each player's number; the team averages are taken after teams exist. */
static void
TeamDifferenceExtract(MmRuleContext *context, const MmRuleConfig *rule,
					  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	ExtractPlayerNumbers(rule, players, nplayers, value);
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

/* ---- the table ------------------------------------------------------------ */

static const MmRuleHandler RuleHandlers[] = {
	{MM_RULE_STRING_EQUALITY, "string_equality", MM_SCOPE_TICKETS,
		StringEqualityExtract, StringEqualityStateInit, StringEqualityCanAdd,
	StringEqualityAdd, StringEqualityCloseness, NULL},
	{MM_RULE_DIFFERENCE, "difference", MM_SCOPE_TICKETS,
		DifferenceExtract, RangeStateInit, DifferenceCanAdd,
	DifferenceAdd, DifferenceCloseness, NULL},
	{MM_RULE_LATENCY, "latency", MM_SCOPE_TICKETS,
		LatencyExtract, LatencyStateInit, LatencyCanAdd,
	LatencyAdd, LatencyCloseness, NULL},
	{MM_RULE_TEAM_DIFFERENCE, "team_difference", MM_SCOPE_TEAMS,
	TeamDifferenceExtract, NULL, NULL, NULL, NULL, TeamDifferenceCheck},
	{MM_RULE_TEAM_SIZE_BALANCE, "team_size_balance", MM_SCOPE_TEAMS,
	NoValueExtract, NULL, NULL, NULL, NULL, TeamSizeBalanceCheck},
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
}

/* Every rule's value of one ticket, through its handler. */
void
MmExtractTicketValues(MmRuleContext *context, MmTicket *ticket,
					  const MmPlayerInput *players, int nplayers)
{
	const MmQueueConfig *config = context->config;
	int			i;

	ticket->values = palloc0(sizeof(MmRuleValue) * Max(config->nrules, 1));
	for (i = 0; i < config->nrules; i++)
	{
		const MmRuleConfig *rule = &config->rules[i];

		MmRuleHandlerFor(rule->type)->extract(context, rule, players, nplayers,
											  &ticket->values[i]);
	}
}
