/*
 * rule_blocklist.c
 *	  The blocklist rule: no player of the match blocks another.
 *
 * Its handler (MmRuleBlocklist) is one entry of the table in rules.c; the
 * shared helpers (a player's attribute, closeness, list attributes) are in
 * rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include "rules_internal.h"

/* The players the party blocks, and the party's own ids. */
static void
BlocklistExtract(MmRuleContext *context, const MmRuleConfig *rule,
				 const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	int			total = 0;

	value->kind = MM_VALUE_PRESENT;
	value->ids = palloc(sizeof(int) * Max(nplayers, 1));
	for (int i = 0; i < nplayers; i++)
		value->ids[i] = MmInternString(context, players[i].id, strlen(players[i].id));
	value->nids = MmSortUnique(value->ids, nplayers);
	value->set = NULL;
	value->nset = 0;
	for (int i = 0; i < nplayers; i++)
	{
		int		   *ids = NULL;
		int			nids = 0;

		/* a player without a list blocks nobody */
		if (!MmPlayerList(context, rule, &players[i], &ids, &nids) || nids == 0)
			continue;
		value->set = value->set == NULL ? palloc(sizeof(int) * nids) :
			repalloc(value->set, sizeof(int) * (total + nids));
		memcpy(value->set + total, ids, sizeof(int) * nids);
		total += nids;
	}
	value->nset = value->set != NULL ? MmSortUnique(value->set, total) : 0;
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

		if (MmIntersectSorted(value->ids, value->nids, j->set, j->nset, NULL) > 0 ||
			MmIntersectSorted(value->set, value->nset, j->ids, j->nids, NULL) > 0)
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

const MmRuleHandler MmRuleBlocklist = {
	.type = MM_RULE_BLOCKLIST, .type_name = "blocklist", .scope = MM_SCOPE_TICKETS,
	.extract = BlocklistExtract, .state_init = BlocklistStateInit,
	.can_add = BlocklistCanAdd, .add = BlocklistAdd,
	.closeness = MmPerfectCloseness
};
