/*
 * rule_team_difference.c
 *	  The team_difference rule: the teams' average values lie within max of
 *	  each other.
 *
 * Its handler (MmRuleTeamDifference) is one entry of the table in rules.c;
 * the shared helpers (a player's attribute, closeness, list attributes) are
 * in rules_internal.h.  Pure C, no SPI.
 */
#include "postgres.h"

#include <math.h>

#include "rules_internal.h"

/* Each player's number; the team averages are taken after teams exist. */
static void
TeamDifferenceExtract(MmRuleContext *context, const MmRuleConfig *rule,
					  const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	double		sum = 0;
	int			n = 0;

	MmExtractPlayerNumbers(context, rule, players, nplayers, value);
	/* the party's average, for ranking (MmCandidateCost) */
	for (int p = 0; p < nplayers; p++)
		if (!isnan(value->player_values[p]))
		{
			sum += value->player_values[p];
			n++;
		}
	value->number = n > 0 ? sum / n : NAN;
}

/*
 * |candidate's average - anchor's average| / max: parties of similar average
 * make teams of similar average.
 */
static double
TeamDifferenceDistance(const MmRuleContext *context, const MmRuleConfig *rule,
					   const MmRuleValue *anchor, const MmRuleValue *candidate,
					   double threshold)
{
	double		a = anchor->number;
	double		c = candidate->number;

	if (isnan(a) || isnan(c))
		return 0.0;
	return 1.0 - MmClosenessOf(fabs(c - a), threshold);
}

/* The spread of the team averages (players without a value left out). */
static bool
TeamDifferenceCheck(const MmRuleConfig *rule, int rule_index, const MmTeamsView *teams,
					double threshold, double *closeness)
{
	double		sums[MM_MAX_TEAMS];
	int			counts[MM_MAX_TEAMS];
	double		lo = 0,
				hi = 0;
	bool		first = true;
	int			t,
				k,
				p;

	for (t = 0; t < teams->nteams; t++)
	{
		sums[t] = 0;
		counts[t] = 0;
	}
	for (k = 0; k < teams->ntickets; k++)
	{
		const MmTicket *ticket = teams->tickets[k];
		const MmRuleValue *value = &ticket->values[rule_index];

		for (p = 0; p < ticket->nplayers; p++)
		{
			double		v = value->player_values[p];

			if (isnan(v))
				continue;
			sums[teams->ticket_team[k]] += v;
			counts[teams->ticket_team[k]]++;
		}
	}
	for (t = 0; t < teams->nteams; t++)
	{
		double		avg;

		if (counts[t] == 0)
			continue;
		avg = sums[t] / counts[t];
		if (first)
			lo = hi = avg;
		lo = Min(lo, avg);
		hi = Max(hi, avg);
		first = false;
	}
	*closeness = MmClosenessOf(hi - lo, threshold);
	return hi - lo <= threshold;
}

const MmRuleHandler MmRuleTeamDifference = {
	.type = MM_RULE_TEAM_DIFFERENCE, .type_name = "team_difference", .scope = MM_SCOPE_TEAMS,
	.extract = TeamDifferenceExtract, .check_teams = TeamDifferenceCheck,
	.distance = TeamDifferenceDistance
};
