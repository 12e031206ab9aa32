/*
 * rule_role_difference.c
 *	  The role_difference rule: players of the same role on opposite teams
 *	  lie within max of each other (the two tanks, the two healers, ...).
 *
 * A team rule: checked once the roles are seated.  For each role, each
 * team's average over its players of that role; the rule holds when, for
 * every role, those averages lie within max.  With a per-role rating pool
 * and "source": "rating", a player's value is their rating in each role
 * (values[p * nroles + role]).  Pure C, no SPI.
 */
#include "postgres.h"

#include <math.h>

#include "roles.h"
#include "rules_internal.h"

/* Each player's number, per role when the ratings are per role. */
static void
RoleDifferenceExtract(MmRuleContext *context, const MmRuleConfig *rule,
					  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	const MmRolesConfig *roles = context->config->roles;
	MmPlayerInput one[MM_MAX_MATCH_SIZE];
	double		numbers[MM_MAX_MATCH_SIZE];
	double	   *values;
	bool		missing = false;
	bool		present = false;

	if (rule->source != MM_SOURCE_RATING || roles == NULL || !roles->per_role_rating)
	{
		MmExtractPlayerNumbers(context, rule, players, nplayers, value);
		return;
	}
	values = MmRuleAlloc(context, sizeof(double) * nplayers * roles->nroles);
	for (int r = 0; r < roles->nroles; r++)
	{
		MmValueKind kind;

		for (int p = 0; p < nplayers; p++)
		{
			one[p] = players[p];
			one[p].rating = players[p].role_rating[r];
		}
		kind = MmReadPlayerNumbers(rule, one, nplayers, numbers);
		missing |= kind == MM_VALUE_MISSING;
		present |= kind == MM_VALUE_PRESENT;
		for (int p = 0; p < nplayers; p++)
			values[p * roles->nroles + r] = numbers[p];
	}
	value->player_values = values;
	value->nvalues = nplayers * roles->nroles;
	value->kind = missing ? MM_VALUE_MISSING : present ? MM_VALUE_PRESENT : MM_VALUE_ANY;
}

/* For each role, the spread of the teams' averages over that role's players. */
static bool
RoleDifferenceCheck(const MmRuleConfig *rule, int rule_index, const MmTeamsView *teams,
					double threshold, double *closeness)
{
	double		sums[MM_MAX_TEAMS * MM_MAX_ROLES];
	int			counts[MM_MAX_TEAMS * MM_MAX_ROLES];
	double		worst = 0;
	int			nroles = teams->nroles;
	int			player = 0;

	*closeness = 1.0;
	if (teams->player_role == NULL || nroles == 0)
		return true;
	memset(sums, 0, sizeof(double) * teams->nteams * nroles);
	memset(counts, 0, sizeof(int) * teams->nteams * nroles);
	for (int k = 0; k < teams->ntickets; k++)
	{
		const MmTicket *ticket = teams->tickets[k];
		const MmRuleValue *value = &ticket->values[rule_index];
		bool		per_role = value->nvalues > ticket->nplayers;

		for (int p = 0; p < ticket->nplayers; p++, player++)
		{
			int			role = teams->player_role[player];
			double		v = value->player_values[per_role ? p * nroles + role : p];
			int			slot = teams->ticket_team[k] * nroles + role;

			if (isnan(v))
				continue;
			sums[slot] += v;
			counts[slot]++;
		}
	}
	for (int r = 0; r < nroles; r++)
	{
		double		lo = 0,
					hi = 0;
		bool		first = true;

		for (int t = 0; t < teams->nteams; t++)
		{
			double		avg;

			if (counts[t * nroles + r] == 0)
				continue;
			avg = sums[t * nroles + r] / counts[t * nroles + r];
			if (first)
				lo = hi = avg;
			lo = Min(lo, avg);
			hi = Max(hi, avg);
			first = false;
		}
		worst = Max(worst, hi - lo);
	}
	*closeness = MmClosenessOf(worst, threshold);
	return worst <= threshold;
}

const MmRuleHandler MmRuleRoleDifference = {
	.type = MM_RULE_ROLE_DIFFERENCE, .type_name = "role_difference", .scope = MM_SCOPE_TEAMS,
	.extract = RoleDifferenceExtract, .check_teams = RoleDifferenceCheck
};
