/*
 * rule_team_ticket_size_similarity.c
 *	  The team_ticket_size_similarity rule: large parties meet large
 *	  parties.
 *
 * Its handler (MmRuleTeamTicketSizeSimilarity) is one entry of the table in
 * rules.c; the shared helpers (a player's attribute, closeness, list
 * attributes) are in rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include "rules_internal.h"

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

const MmRuleHandler MmRuleTeamTicketSizeSimilarity = {
	.type = MM_RULE_TEAM_TICKET_SIZE_SIMILARITY, .type_name = "team_ticket_size_similarity",
	.scope = MM_SCOPE_TEAMS, .extract = TicketSizeExtract,
	.check_teams = TicketSizeSimilarityCheck, .distance = TicketSizeDistance
};
