/*
 * rule_match_total.c
 *	  The match_total rule: the sum of a value over all players lies in
 *	  [min, max].
 *
 * Its handler (MmRuleMatchTotal) is one entry of the table in rules.c; the
 * shared helpers (a player's attribute, closeness, list attributes) are in
 * rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include <math.h>

#include "rules_internal.h"

/* The party's sum (players matching anything add nothing). */
static void
MatchTotalExtract(MmRuleContext *context, const MmRuleConfig *rule,
				  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	double		sum = 0;

	MmExtractPlayerNumbers(context, rule, players, nplayers, value);
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

const MmRuleHandler MmRuleMatchTotal = {
	.type = MM_RULE_MATCH_TOTAL, .type_name = "match_total", .scope = MM_SCOPE_TICKETS,
	.extract = MatchTotalExtract, .state_init = SumStateInit,
	.can_add = MatchTotalCanAdd, .add = MatchTotalAdd,
	.closeness = MmPerfectCloseness, .check_final = MatchTotalFinal
};
