/*
 * rule_comparison.c
 *	  The comparison rule: each player against a reference value, or the
 *	  players across each other (all_equal, all_different, contains).
 *
 * Its handler (MmRuleComparison) is one entry of the table in rules.c; the
 * shared helpers (a player's attribute, closeness, list attributes) are in
 * rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include <math.h>

#include "utils/jsonb.h"

#include "rules_internal.h"

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
		JsonbValue *found = MmLookupPlayerValue(rule, &players[i], &jv);
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
	MmExtractPlayerNumbers(context, rule, players, nplayers, value);
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

const MmRuleHandler MmRuleComparison = {
	.type = MM_RULE_COMPARISON, .type_name = "comparison", .scope = MM_SCOPE_TICKETS,
	.extract = ComparisonExtract, .state_init = ComparisonStateInit,
	.can_add = ComparisonCanAdd, .add = ComparisonAdd,
	.closeness = MmPerfectCloseness
};
