/*
 * rule_expansion.c
 *	  A rule's threshold at a given ticket age: expansion steps and
 *	  seconds_until_optional.
 *
 * Pure C over the parsed config (no SPI, no fmgr), shared by the tick's
 * search, the mm.rule_threshold() diagnostic and the stand-alone benchmark
 * driver in test/bench/standalone.
 */
#include "postgres.h"

#include <math.h>

#include "queue_config.h"

/*
 * A rule's threshold at an age; see queue_config.h.
 *
 * Linear: base + delta * floor(age / every_seconds), never past limit; the
 * step stops growing once the limit is reached.  Custom: step k (0-based)
 * applies from (k + 1) * every_seconds on, the last one stays; a null step
 * switches the rule off.  Once seconds_until_optional is reached the rule is
 * off whatever the step.
 */
bool
MmRuleThresholdAt(const MmRuleConfig *rule, double age_seconds, double *threshold, int *step)
{
	const MmExpansion *e = &rule->expansion;
	double		t = rule->threshold;
	int			s = 0;
	bool		on = true;

	if (!(age_seconds > 0))		/* negative, zero or NaN */
		age_seconds = 0;

	if (e->kind == MM_EXPANSION_LINEAR)
	{
		double		periods = floor(age_seconds / e->every_seconds);

		if (e->delta > 0)
		{
			/* the first period at which the limit is reached */
			double		to_limit = isinf(e->limit) ? 1e9 : ceil((e->limit - rule->threshold) / e->delta);

			periods = Min(periods, Min(to_limit, 1e9));
			t = Min(rule->threshold + e->delta * periods, e->limit);
			s = (int) periods;
		}
	}
	else if (e->kind == MM_EXPANSION_CUSTOM)
	{
		double		periods = floor(age_seconds / e->every_seconds);

		if (periods >= 1)
		{
			int			k = (int) Min(periods, (double) e->nsteps) - 1;

			s = k + 1;
			if (e->step_off[k])
				on = false;
			else
				t = e->steps[k];
		}
	}

	if (rule->seconds_until_optional >= 0 && age_seconds >= rule->seconds_until_optional)
		on = false;

	*threshold = t;
	*step = s;
	return on;
}

/*
 * A team's min at an age: step k (0-based) of its expansion applies from
 * (k + 1) * every_seconds on, the last one stays.
 */
int
MmTeamMinAt(const MmTeamConfig *team, double age_seconds)
{
	const MmExpansion *e = &team->min_expansion;
	double		periods;

	if (e->kind != MM_EXPANSION_CUSTOM || !(age_seconds > 0))
		return team->min;
	periods = floor(age_seconds / e->every_seconds);
	if (periods < 1)
		return team->min;
	return (int) e->steps[(int) Min(periods, (double) e->nsteps) - 1];
}

/* The match's min players at an age; see queue_config.h. */
int
MmMatchMinAt(const MmQueueConfig *config, double age_seconds)
{
	int			sum = 0;
	bool		expands = false;

	for (int t = 0; t < config->nteams; t++)
	{
		sum += MmTeamMinAt(&config->teams[t], age_seconds);
		expands |= config->teams[t].min_expansion.kind != MM_EXPANSION_NONE;
	}
	/* without a team expansion, the parsed bounds as they are */
	if (!expands)
		return config->match_min;
	return Max(Max(sum, config->match_size_min), 2);
}

/* Whether a rule has a threshold of its own; see queue_config.h. */
bool
MmRuleHasThreshold(const MmRuleConfig *rule)
{
	switch (rule->type)
	{
		case MM_RULE_STRING_EQUALITY:
		case MM_RULE_TEAM_TICKET_SIZE_SIMILARITY:
		case MM_RULE_COMPOUND:
		case MM_RULE_BLOCKLIST:
			return false;
		case MM_RULE_COMPARISON:
			/* a string reference is matched, not a threshold */
			return rule->compare_op != MM_CMP_ALL_EQUAL &&
				rule->compare_op != MM_CMP_ALL_DIFFERENT && rule->reference_string == NULL;
		default:
			return true;
	}
}
