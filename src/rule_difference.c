/*
 * rule_difference.c
 *	  The difference rule: the values of the tickets (each party merged:
 *	  average, min or max) lie within max of each other.
 *
 * Its handler (MmRuleDifference) is one entry of the table in rules.c; the
 * shared helpers (a player's attribute, closeness, list attributes) are in
 * rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include <math.h>

#include "utils/jsonb.h"

#include "rules_internal.h"

/* The party's value; see rules.h. */
double
MmMergePartyValues(MmMerge merge, const double *values, int nvalues)
{
	int			n = 0;
	double		merged = 0;

	for (int i = 0; i < nvalues; i++)
	{
		double		v = values[i];

		if (isnan(v))
			continue;
		if (n == 0)
			merged = v;
		else if (merge == MM_MERGE_MIN)
			merged = Min(merged, v);
		else if (merge == MM_MERGE_MAX)
			merged = Max(merged, v);
		else
			merged += v;
		n++;
	}
	if (merge == MM_MERGE_AVERAGE)
		merged /= n;
	return merged;
}

/* The party's value: average, min or max of its players' values. */
static void
DifferenceExtract(MmRuleContext *context, const MmRuleConfig *rule,
				  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	int			i;

	MmExtractPlayerNumbers(context, rule, players, nplayers, value);
	if (value->kind != MM_VALUE_PRESENT)
		return;
	value->number = MmMergePartyValues(rule->merge, value->player_values, nplayers);

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
				MmJsonbNumberValue(&rd, &d))
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
	return state->has_value ? MmClosenessOf(state->max - state->min, threshold + state->widen) : 1.0;
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
	return 1.0 - MmClosenessOf(fabs(candidate->number - anchor->number),
							   threshold + Max(anchor->widen, candidate->widen));
}

const MmRuleHandler MmRuleDifference = {
	.type = MM_RULE_DIFFERENCE, .type_name = "difference", .scope = MM_SCOPE_TICKETS,
	.extract = DifferenceExtract, .state_init = RangeStateInit,
	.can_add = DifferenceCanAdd, .add = DifferenceAdd,
	.closeness = DifferenceCloseness, .distance = DifferenceDistance,
	.check_final = DifferenceFinal
};
