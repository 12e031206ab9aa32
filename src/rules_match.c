/*
 * rules_match.c
 *	  The rule machinery's steps that reach into one rule type's file: a
 *	  state's capacity (latency's regions) and the whole-match conditions
 *	  (compound statements).  Above rules.c and the rule_<type>.c files, so
 *	  that those call rules.c and never the other way round.  Pure C, no SPI.
 */
#include "postgres.h"

#include "rules_internal.h"

/* The capacity of a state's arrays; see rules.h. */
int
MmRuleStateCapacity(const MmQueueConfig *config, int rule_index,
					const MmTicket *tickets, int ntickets)
{
	const MmRuleConfig *rule = &config->rules[rule_index];

	if (rule->type == MM_RULE_LATENCY)
		return MmLatencyStateCapacity(tickets, ntickets, rule_index);
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
			if (!MmCompoundHolds(context, rule, states, rule_on, threshold))
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
