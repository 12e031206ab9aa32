/*
 * rule_string_equality.c
 *	  The string_equality rule: every ticket of the match has the same
 *	  string.
 *
 * Its handler (MmRuleStringEquality) is one entry of the table in rules.c;
 * the shared helpers (a player's attribute, closeness, list attributes) are
 * in rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include "utils/jsonb.h"

#include "rules_internal.h"

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

const MmRuleHandler MmRuleStringEquality = {
	.type = MM_RULE_STRING_EQUALITY, .type_name = "string_equality", .scope = MM_SCOPE_TICKETS,
	.extract = StringEqualityExtract, .state_init = StringEqualityStateInit,
	.can_add = StringEqualityCanAdd, .add = StringEqualityAdd,
	.closeness = StringEqualityCloseness
};
