/*
 * rule_set_intersection.c
 *	  The set_intersection rule: the tickets share at least min_size values
 *	  of a list attribute.
 *
 * Its handler (MmRuleSetIntersection) is one entry of the table in rules.c;
 * the shared helpers (a player's attribute, closeness, list attributes) are
 * in rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include "rules_internal.h"

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

		if (!MmPlayerList(context, rule, &players[i], &ids, &nids))
		{
			if (rule->has_default)
			{
				ids = palloc(sizeof(int) * Max(rule->ndefault_list, 1));
				for (int k = 0; k < rule->ndefault_list; k++)
					ids[k] = MmInternString(context, rule->default_list[k],
											strlen(rule->default_list[k]));
				nids = MmSortUnique(ids, rule->ndefault_list);
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
			value->nset = MmIntersectSorted(value->set, value->nset, ids, nids, value->set);
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
	return MmIntersectSorted(state->open_region, state->nopen, value->set, value->nset, NULL) >= threshold;
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
	state->nopen = MmIntersectSorted(state->open_region, state->nopen, value->set, value->nset,
									 state->open_region);
}

const MmRuleHandler MmRuleSetIntersection = {
	.type = MM_RULE_SET_INTERSECTION, .type_name = "set_intersection", .scope = MM_SCOPE_TICKETS,
	.extract = SetIntersectionExtract, .state_init = SetIntersectionStateInit,
	.can_add = SetIntersectionCanAdd, .add = SetIntersectionAdd,
	.closeness = MmPerfectCloseness
};
