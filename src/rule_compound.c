/*
 * rule_compound.c
 *	  The compound rule: a boolean statement (and, or, not) over other
 *	  rules.
 *
 * Its handler (MmRuleCompound) is one entry of the table in rules.c; the
 * shared helpers (a player's attribute, closeness, list attributes) are in
 * rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include "rules_internal.h"

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

bool
MmCompoundHolds(const MmRuleContext *context, const MmRuleConfig *compound,
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

const MmRuleHandler MmRuleCompound = {
	.type = MM_RULE_COMPOUND, .type_name = "compound", .scope = MM_SCOPE_TICKETS,
	.extract = MmNoValueExtract, .state_init = CompoundStateInit,
	.can_add = NULL, .add = CompoundAdd,
	.closeness = MmPerfectCloseness
};
