/*
 * rule_team_size_balance.c
 *	  The team_size_balance rule: the team sizes differ by at most
 *	  max_difference.
 *
 * Its handler (MmRuleTeamSizeBalance) is one entry of the table in rules.c;
 * the shared helpers (a player's attribute, closeness, list attributes) are
 * in rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include "rules_internal.h"

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
	*closeness = MmClosenessOf(hi - lo, threshold);
	return hi - lo <= threshold;
}

const MmRuleHandler MmRuleTeamSizeBalance = {
	.type = MM_RULE_TEAM_SIZE_BALANCE, .type_name = "team_size_balance", .scope = MM_SCOPE_TEAMS,
	.extract = MmNoValueExtract, .check_teams = TeamSizeBalanceCheck
};
