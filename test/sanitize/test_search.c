/*
 * test_search: MmSearchMatches (src/match_search*.c) with the rule handlers
 * of src/rules.c and src/rule_*.c on generated queues.
 *
 *   ./test_search [tickets] [seed]
 *
 * Each scenario is a queue config (built as queue_config.c would leave it)
 * and a few thousand tickets oldest first, with their rule values made as
 * rules.c's extraction makes them: solo players and parties, integer or
 * fractional (negative, -0.0) skills merged by average/min/max, players
 * without a value that match anything, tickets that cannot satisfy a rule,
 * regions with latencies, default latencies, strings.
 *
 * Every match is checked on its own: match_size and team bounds, no ticket
 * twice, the anchor (oldest ticket) older than the rest and younger than the
 * previous match's, each rule's step and threshold at the anchor's age
 * (expansion recomputed here from the config), every rule that is on
 * satisfied by brute force over the match's tickets (difference, string
 * equality, latency in the chosen region, team averages, team sizes),
 * quality in [0, 1].
 *
 * Free-for-all queues are also compared with a reference: the greedy the
 * search documents (each alive ticket oldest first is the anchor, then
 * younger alive tickets in age order join when every rule still holds, up
 * to match_size.max), written naively here.  The search's windows,
 * union-find pool and Fenwick counts must give exactly the same matches,
 * region and quality.
 *
 * Some scenarios have a low-priority pool: a random share of the tickets is
 * penalised, and those younger than the pool's bound are low_priority, as the
 * tick's load marks them (src/tick_load.c).  A match is valid only when all
 * its tickets have the same low_priority flag (the search's own check is in
 * MmSearchTicketFits), for the checks of every match and for the reference.
 *
 * Small pools (up to LEFTOVER_MAX tickets, where the search's ranking covers
 * every candidate and its exhaustive search tries every combination) are
 * checked for completeness by brute force: the tickets the search left
 * unmatched hold no valid match (every subset, with teams every placement of
 * the parties), so the search formed every match it should, each of one
 * class.
 *
 * Last, pairs of tickets exactly max apart (decimal skills) must match in
 * either age order; see BoundaryPairs() for the inputs left out (a known
 * defect of the search's window).
 */
#include "postgres.h"

#include "sanitize_test.h"
#include "match_search.h"
#include "utils/memutils.h"

#define MAXR 8

static const char *region_names[] = {"eu", "us", "asia", "oce", "sa", "me"};
#define NREGIONS 6
static const char *strings[] = {"ranked", "casual", "arena", "custom"};

typedef struct Scenario
{
	const char *name;
	int			match_min;
	int			match_max;
	int			nteams;
	MmTeamConfig teams[4];
	int			nrules;
	MmRuleConfig rules[MAXR];
	int			max_party;
	bool		frac;			/* fractional, negative and -0.0 skills */
	int			any_pct;		/* players without a value, match_any */
	int			missing_pct;	/* tickets that cannot satisfy a rule */
	double		max_age;
	double		skill_sd;
	bool		reference;		/* compare with the naive greedy (nteams 0) */
	int			lowprio_pct;	/* penalised tickets: a random share up to this */
} Scenario;

/* Expansion steps kept alive for the whole run (the config points at them). */
static double steps_latency[3] = {80, 120, 0};
static bool off_latency[3] = {false, false, true};
static double steps_size[2] = {1, 2};
static bool off_size[2] = {false, false};
static double steps_string[1] = {0};
static bool off_string[1] = {true};

static MmRuleConfig
Rule(const char *name, MmRuleType type, double threshold)
{
	MmRuleConfig r;

	memset(&r, 0, sizeof(r));
	r.name = (char *) name;
	r.type = type;
	r.weight = 1;
	r.threshold = threshold;
	r.seconds_until_optional = -1;
	r.expansion.kind = MM_EXPANSION_NONE;
	return r;
}

static void
Linear(MmRuleConfig *r, double every, double delta, double limit)
{
	r->expansion.kind = MM_EXPANSION_LINEAR;
	r->expansion.every_seconds = every;
	r->expansion.delta = delta;
	r->expansion.limit = limit;
}

static void
Custom(MmRuleConfig *r, double every, int nsteps, double *steps, bool *off)
{
	r->expansion.kind = MM_EXPANSION_CUSTOM;
	r->expansion.every_seconds = every;
	r->expansion.nsteps = nsteps;
	r->expansion.steps = steps;
	r->expansion.step_off = off;
}

/* ------------------------------------------------------------------------
 * Independent rule semantics
 * ------------------------------------------------------------------------
 */

/* A rule's threshold at an age, from queue_config.h's description. */
static bool
ExpectedThreshold(const MmRuleConfig *r, double age, double *threshold, int *step)
{
	const MmExpansion *e = &r->expansion;
	bool		on = true;

	if (!(age > 0))
		age = 0;
	*threshold = r->threshold;
	*step = 0;
	if (e->kind == MM_EXPANSION_LINEAR && e->delta > 0)
	{
		double		periods = floor(age / e->every_seconds);
		/* the step stops growing once the limit is reached */
		double		to_limit = isinf(e->limit) ? 1e9 : ceil((e->limit - r->threshold) / e->delta);

		periods = Min(periods, Min(to_limit, 1e9));
		*threshold = Min(r->threshold + e->delta * periods, e->limit);
		*step = (int) periods;
	}
	else if (e->kind == MM_EXPANSION_CUSTOM)
	{
		double		periods = floor(age / e->every_seconds);

		if (periods >= 1)
		{
			int			k = (int) Min(periods, (double) e->nsteps) - 1;

			*step = k + 1;
			if (e->step_off[k])
				on = false;
			else
				*threshold = e->steps[k];
		}
	}
	if (r->seconds_until_optional >= 0 && age >= r->seconds_until_optional)
		on = false;
	return on;
}

/* 1 - used/allowed in [0, 1] (rules.c's MmClosenessOf). */
static double
Closeness(double used, double allowed)
{
	double		c;

	if (allowed <= 0 || isnan(allowed) || isinf(allowed))
		return 1.0;
	c = 1.0 - used / allowed;
	if (!(c >= 0))
		c = 0;
	if (c > 1)
		c = 1;
	return c;
}

/* The latency rule over a set of tickets: regions open to all and their worst. */
typedef struct LatencyView
{
	bool		has_value;
	bool		restricted;
	double		floor_max;
	double		worst[NREGIONS];
	bool		open[NREGIONS];
} LatencyView;

static void
ViewLatency(const MmTicket *tickets, const int *list, int n, int r, LatencyView *v)
{
	v->has_value = false;
	v->restricted = false;
	v->floor_max = 0;
	for (int g = 0; g < NREGIONS; g++)
	{
		v->open[g] = true;
		v->worst[g] = 0;
	}
	for (int i = 0; i < n; i++)
	{
		const MmRuleValue *val = &tickets[list[i]].values[r];
		bool		has[NREGIONS] = {false};

		if (val->kind != MM_VALUE_PRESENT)
			continue;
		v->has_value = true;
		v->floor_max = Max(v->floor_max, val->floor_ms);
		if (val->all_regions)
			continue;
		v->restricted = true;
		for (int j = 0; j < val->nregions; j++)
		{
			int			g = val->regions[j].region;

			has[g] = true;
			v->worst[g] = Max(v->worst[g], val->regions[j].ms);
		}
		for (int g = 0; g < NREGIONS; g++)
			if (!has[g])
				v->open[g] = false;
	}
	for (int g = 0; g < NREGIONS; g++)
		v->worst[g] = Max(v->worst[g], v->floor_max);
}

/* The region MmBestRegion should pick, and its worst latency. */
static int
ExpectedRegion(const LatencyView *v, double *worst)
{
	int			best = -1;

	if (!v->restricted)
	{
		*worst = v->floor_max;
		return 0;				/* every region open at the same latency */
	}
	for (int g = 0; g < NREGIONS; g++)
		if (v->open[g] && (best < 0 || v->worst[g] < v->worst[best]))
			best = g;
	*worst = best >= 0 ? v->worst[best] : v->floor_max;
	return best;
}

/*
 * Whether every ticket rule that is on holds over the tickets of list, by
 * brute force; why not in *why.
 */
static bool
TicketRulesHold(const MmQueueConfig *config, const MmTicket *tickets, const int *list, int n,
				const bool *on, const double *threshold, const char **why)
{
	/* the low-priority pool's tickets match each other only */
	for (int i = 1; i < n; i++)
		if (tickets[list[i]].low_priority != tickets[list[0]].low_priority)
		{
			*why = "low-priority tickets mixed with others";
			return false;
		}
	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];

		if (!on[r])
			continue;
		for (int i = 0; i < n; i++)
			if (tickets[list[i]].values[r].kind == MM_VALUE_MISSING)
			{
				*why = "a ticket without a value for a rule that is on";
				return false;
			}
		switch (rule->type)
		{
			case MM_RULE_DIFFERENCE:
				{
					bool		any = false;
					double		lo = 0,
								hi = 0;

					for (int i = 0; i < n; i++)
					{
						const MmRuleValue *v = &tickets[list[i]].values[r];

						if (v->kind != MM_VALUE_PRESENT)
							continue;
						if (!any)
							lo = hi = v->number;
						lo = Min(lo, v->number);
						hi = Max(hi, v->number);
						any = true;
					}
					if (any && !(hi - lo <= threshold[r]))
					{
						*why = "difference over the threshold";
						return false;
					}
					break;
				}
			case MM_RULE_STRING_EQUALITY:
				{
					const char *s = NULL;

					for (int i = 0; i < n; i++)
					{
						const MmRuleValue *v = &tickets[list[i]].values[r];

						if (v->kind != MM_VALUE_PRESENT)
							continue;
						if (s != NULL && strcmp(s, v->string) != 0)
						{
							*why = "different strings";
							return false;
						}
						s = v->string;
					}
					break;
				}
			case MM_RULE_LATENCY:
				{
					LatencyView lv;
					double		worst;

					ViewLatency(tickets, list, n, r, &lv);
					if (!lv.has_value)
						break;
					if (ExpectedRegion(&lv, &worst) < 0 || !(worst <= threshold[r]))
					{
						*why = "no region within the latency threshold";
						return false;
					}
					break;
				}
			default:
				break;			/* team rules: checked with the teams */
		}
	}
	return true;
}

/*
 * Whether the team rules that are on hold over the tickets of list placed on
 * teams team[] (team sizes within bounds are checked by the caller); why not
 * in *why.
 */
static bool
TeamRulesHold(const MmQueueConfig *config, const MmTicket *tickets, const int *list,
			  const int *team, int n, const bool *on, const double *threshold,
			  const char **why)
{
	static char buf[200];
	int			team_size[4] = {0};

	for (int k = 0; k < n; k++)
		team_size[team[k]] += tickets[list[k]].nplayers;
	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];

		if (!on[r])
			continue;
		if (rule->type == MM_RULE_TEAM_SIZE_BALANCE)
		{
			int			lo = team_size[0],
						hi = team_size[0];

			for (int t = 1; t < config->nteams; t++)
			{
				lo = Min(lo, team_size[t]);
				hi = Max(hi, team_size[t]);
			}
			if (!(hi - lo <= threshold[r]))
			{
				snprintf(buf, sizeof(buf), "team sizes differ by %d, max %g", hi - lo, threshold[r]);
				*why = buf;
				return false;
			}
		}
		else if (rule->type == MM_RULE_TEAM_DIFFERENCE)
		{
			double		sums[4] = {0};
			int			counts[4] = {0};
			double		lo = 0,
						hi = 0;
			bool		first = true;

			for (int k = 0; k < n; k++)
			{
				const MmTicket *t = &tickets[list[k]];

				for (int p = 0; p < t->nplayers; p++)
				{
					double		v = t->values[r].player_values[p];

					if (isnan(v))
						continue;
					sums[team[k]] += v;
					counts[team[k]]++;
				}
			}
			for (int t = 0; t < config->nteams; t++)
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
			if (!(hi - lo <= threshold[r]))
			{
				snprintf(buf, sizeof(buf), "team averages differ by %g, max %g", hi - lo, threshold[r]);
				*why = buf;
				return false;
			}
		}
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Tickets
 * ------------------------------------------------------------------------
 */

static const char *
PickString(void)
{
	int			x = RandInt(10);

	return strings[x < 6 ? 0 : x < 8 ? 1 : x < 9 ? 2 : 3];
}

static double
Skill(const Scenario *sc, double base)
{
	double		v = Normal(base, 40);

	if (!sc->frac)
		return round(v);
	v = v * 0.0037 - 2.1 + RandInt(5) * 0.1;
	if (Chance(7))
		v = Chance(2) ? -0.0 : 0.1 + 0.2;
	return v;
}

/* A numeric rule's value, as MmExtractPlayerNumbers and DifferenceExtract make it. */
static void
MakeNumbers(const Scenario *sc, const MmRuleConfig *rule, int nplayers, MmRuleValue *v)
{
	double		base = sc->frac ? 1000 + Normal(0, sc->skill_sd) : Normal(1000, sc->skill_sd);
	int			present = 0;

	v->kind = MM_VALUE_PRESENT;
	v->player_values = malloc(sizeof(double) * nplayers);
	for (int p = 0; p < nplayers; p++)
	{
		if (rule->missing_matches_any && RandInt(100) < sc->any_pct)
			v->player_values[p] = NAN;
		else
		{
			v->player_values[p] = Skill(sc, base);
			present++;
		}
	}
	if (RandInt(100) < sc->missing_pct)
	{
		v->player_values[RandInt(nplayers)] = NAN;
		v->kind = MM_VALUE_MISSING;
		return;
	}
	if (present == 0)
	{
		v->kind = MM_VALUE_ANY;
		return;
	}
	/* the party's value as the rule's own code merges it */
	v->number = rule->type == MM_RULE_DIFFERENCE ?
		MmMergePartyValues(rule->merge, v->player_values, nplayers) : 0;
}

/* A latency value, as LatencyExtract makes it (regions sorted by index). */
static void
MakeLatency(const Scenario *sc, const MmRuleConfig *rule, int nplayers, MmRuleValue *v)
{
	int			mode = RandInt(100);
	double		floor_ms = 0;

	v->kind = MM_VALUE_PRESENT;
	v->all_regions = false;
	v->floor_ms = 0;
	v->nregions = 0;
	v->regions = NULL;
	if (mode < sc->missing_pct)
	{
		v->kind = MM_VALUE_MISSING;
		return;
	}
	if (mode < sc->missing_pct + 8)
	{
		/* nobody reported latencies */
		if (rule->has_default)
		{
			v->all_regions = true;
			v->floor_ms = rule->default_number;
		}
		else
		{
			v->all_regions = true;
			v->kind = MM_VALUE_ANY;
		}
		return;
	}
	if (nplayers > 1 && rule->has_default && Chance(5))
		floor_ms = rule->default_number;		/* some players took the default */
	v->floor_ms = floor_ms;
	v->regions = malloc(sizeof(MmRegionLatency) * NREGIONS);
	{
		/* a home region and a few others, worst over the players */
		int			home = RandInt(10) < 6 ? 0 : RandInt(NREGIONS);

		for (int g = 0; g < NREGIONS; g++)
		{
			if (g != home && !Chance(3))
				continue;
			double		ms = round(Normal(g == home ? 45 : 110, 25));	/* Max() evaluates twice */

			ms = Max(ms, 1);
			v->regions[v->nregions].region = g;
			v->regions[v->nregions].ms = Max(floor_ms, ms);
			v->nregions++;
		}
	}
}

static MmTicket *
MakeTickets(const Scenario *sc, const MmQueueConfig *config, int n)
{
	MmTicket   *tickets = calloc(Max(n, 1), sizeof(MmTicket));

	for (int i = 0; i < n; i++)
	{
		MmTicket   *t = &tickets[i];
		int			np = Chance(3) ? RandRange(1, sc->max_party) : 1;

		t->id = i + 1;
		/* oldest first; runs of equal ages */
		t->age_seconds = floor((double) (n - i) / n * sc->max_age * 2) / 2;
		if (i > n - n / 50)
			t->age_seconds = 0;
		t->nplayers = np;
		t->values = calloc(Max(config->nrules, 1), sizeof(MmRuleValue));
		for (int r = 0; r < config->nrules; r++)
		{
			const MmRuleConfig *rule = &config->rules[r];
			MmRuleValue *v = &t->values[r];

			switch (rule->type)
			{
				case MM_RULE_DIFFERENCE:
				case MM_RULE_TEAM_DIFFERENCE:
					MakeNumbers(sc, rule, np, v);
					break;
				case MM_RULE_STRING_EQUALITY:
					v->kind = MM_VALUE_PRESENT;
					v->string = PickString();
					if (rule->missing_matches_any && Chance(10))
					{
						v->kind = MM_VALUE_ANY;
						v->string = NULL;
					}
					else if (RandInt(100) < sc->missing_pct)
					{
						v->kind = MM_VALUE_MISSING;
						v->string = NULL;
					}
					break;
				case MM_RULE_LATENCY:
					MakeLatency(sc, rule, np, v);
					break;
				case MM_RULE_MATCH_TOTAL:
				case MM_RULE_COMPARISON:
				case MM_RULE_TEAM_TICKET_SIZE_SIMILARITY:
				case MM_RULE_COMPOUND:
				case MM_RULE_SET_INTERSECTION:
				case MM_RULE_BLOCKLIST:
				case MM_RULE_TEAM_SIZE_BALANCE:
				case MM_RULE_ROLE_DIFFERENCE:
					v->kind = MM_VALUE_PRESENT;
					break;
			}
		}
	}

	/*
	 * The low-priority pool, as the tick's load marks it: a share of the
	 * tickets penalised, those younger than the bound low_priority; the older
	 * ones (penalised, past the bound) match anyone.
	 */
	if (sc->lowprio_pct > 0)
	{
		int			share = RandRange(1, sc->lowprio_pct);
		double		max_wait = Chance(8) ? 0 : RandRange(1, (int) sc->max_age + 10);

		for (int i = 0; i < n; i++)
		{
			tickets[i].penalised = RandInt(100) < share;
			tickets[i].low_priority = tickets[i].penalised && tickets[i].age_seconds < max_wait;
		}
	}
	return tickets;
}

static void
FreeTickets(MmTicket *tickets, int n, int nrules)
{
	for (int i = 0; i < n; i++)
	{
		for (int r = 0; r < nrules; r++)
		{
			free(tickets[i].values[r].player_values);
			free(tickets[i].values[r].regions);
		}
		free(tickets[i].values);
	}
	free(tickets);
}

/* ------------------------------------------------------------------------
 * The reference greedy (free-for-all)
 * ------------------------------------------------------------------------
 */

typedef struct RefMatch
{
	int			ntickets;
	int			tickets[MM_MAX_MATCH_SIZE];
	int			region;
	double		quality;
} RefMatch;

static int
ReferenceSearch(const MmQueueConfig *config, const MmTicket *tickets, int n, RefMatch *out)
{
	bool	   *dead = calloc(Max(n, 1), sizeof(bool));
	int			nmatches = 0;

	for (int a = 0; a < n; a++)
	{
		bool		on[MAXR];
		double		threshold[MAXR];
		int			step;
		int			list[MM_MAX_MATCH_SIZE];
		int			count = 0,
					players = 0;
		const char *why;

		if (dead[a])
			continue;
		dead[a] = true;
		for (int r = 0; r < config->nrules; r++)
		{
			on[r] = ExpectedThreshold(&config->rules[r], tickets[a].age_seconds, &threshold[r], &step);
			if (!on[r])
				threshold[r] = 0;
		}
		list[count++] = a;
		if (tickets[a].nplayers > config->match_max ||
			!TicketRulesHold(config, tickets, list, 1, on, threshold, &why))
			continue;
		players = tickets[a].nplayers;
		for (int i = a + 1; i < n && players < config->match_max; i++)
		{
			if (dead[i] || players + tickets[i].nplayers > config->match_max)
				continue;
			list[count] = i;
			if (!TicketRulesHold(config, tickets, list, count + 1, on, threshold, &why))
				continue;
			count++;
			players += tickets[i].nplayers;
		}
		if (players < config->match_min)
			continue;

		/* a match: its region and quality */
		{
			RefMatch   *m = &out[nmatches++];
			double		sum = 0,
						weights = 0;

			m->ntickets = count;
			memcpy(m->tickets, list, sizeof(int) * count);
			m->region = -1;
			for (int k = 1; k < count; k++)
				dead[list[k]] = true;
			for (int r = 0; r < config->nrules; r++)
			{
				const MmRuleConfig *rule = &config->rules[r];
				double		c = 1.0;

				if (rule->type == MM_RULE_LATENCY)
				{
					LatencyView lv;
					double		worst;
					int			region;

					ViewLatency(tickets, list, count, r, &lv);
					region = ExpectedRegion(&lv, &worst);
					if (m->region < 0)
						m->region = region;
					if (lv.has_value)
						c = Closeness(worst, threshold[r]);
				}
				else if (rule->type == MM_RULE_DIFFERENCE)
				{
					bool		any = false;
					double		lo = 0,
								hi = 0;

					for (int k = 0; k < count; k++)
					{
						const MmRuleValue *v = &tickets[list[k]].values[r];

						if (v->kind != MM_VALUE_PRESENT)
							continue;
						if (!any)
							lo = hi = v->number;
						lo = Min(lo, v->number);
						hi = Max(hi, v->number);
						any = true;
					}
					if (any)
						c = Closeness(hi - lo, threshold[r]);
				}
				if (!on[r])
					continue;
				sum += rule->weight * c;
				weights += rule->weight;
			}
			m->quality = weights > 0 ? sum / weights : 1.0;
			if (!(m->quality >= 0.0))
				m->quality = 0.0;
			if (m->quality > 1.0)
				m->quality = 1.0;
		}
	}
	free(dead);
	return nmatches;
}

/* ------------------------------------------------------------------------
 * Checks of one search
 * ------------------------------------------------------------------------
 */

static long total_matches = 0;
static long total_compared = 0;

static void
CheckSearch(const Scenario *sc, const MmRuleContext *ctx, MmTicket *tickets, int n,
			MmSearchResult *res)
{
	const MmQueueConfig *config = ctx->config;
	int		   *used_by = malloc(sizeof(int) * Max(n, 1));
	int			prev_anchor = -1;

	for (int i = 0; i < n; i++)
		used_by[i] = -1;
	CHECK(res != NULL && res->nmatches >= 0, "%s: no result", sc->name);
	total_matches += res->nmatches;

	for (int m = 0; m < res->nmatches; m++)
	{
		const MmFoundMatch *fm = &res->matches[m];
		int			players = 0,
					anchor;
		bool		on[MAXR];
		double		threshold[MAXR];
		int			team_size[4] = {0};
		const char *why = NULL;

		CHECK(fm->ntickets >= 1 && fm->ntickets <= MM_MAX_MATCH_SIZE,
			  "%s match %d: %d tickets", sc->name, m, fm->ntickets);
		if (fm->ntickets < 1 || fm->ntickets > MM_MAX_MATCH_SIZE)
			continue;
		anchor = fm->tickets[0];
		for (int k = 0; k < fm->ntickets; k++)
		{
			int			i = fm->tickets[k];

			CHECK(i >= 0 && i < n, "%s match %d: ticket index %d out of range", sc->name, m, i);
			if (i < 0 || i >= n)
				goto next;
			CHECK(used_by[i] < 0, "%s match %d: ticket %d already in match %d", sc->name, m, i, used_by[i]);
			used_by[i] = m;
			players += tickets[i].nplayers;
			anchor = Min(anchor, i);
			if (config->nteams > 0)
			{
				int			t = fm->ticket_team[k];

				CHECK(t >= 0 && t < config->nteams, "%s match %d: ticket %d on team %d",
					  sc->name, m, i, t);
				if (t >= 0 && t < config->nteams)
					team_size[t] += tickets[i].nplayers;
			}
			else
				CHECK(fm->ticket_team[k] == -1, "%s match %d: team %d without teams",
					  sc->name, m, fm->ticket_team[k]);
		}
		CHECK(anchor == fm->tickets[0], "%s match %d: the first ticket %d is not the oldest (%d)",
			  sc->name, m, fm->tickets[0], anchor);
		CHECK(anchor > prev_anchor, "%s match %d: anchor %d not after the previous match's %d",
			  sc->name, m, anchor, prev_anchor);
		prev_anchor = anchor;
		CHECK(players == fm->nplayers, "%s match %d: nplayers %d, tickets hold %d",
			  sc->name, m, fm->nplayers, players);
		CHECK(players >= config->match_min && players <= config->match_max,
			  "%s match %d: %d players outside match_size %d..%d", sc->name, m, players,
			  config->match_min, config->match_max);
		CHECK(fm->quality >= 0.0 && fm->quality <= 1.0, "%s match %d: quality %g",
			  sc->name, m, fm->quality);
		for (int t = 0; t < config->nteams; t++)
			CHECK(team_size[t] >= config->teams[t].min && team_size[t] <= config->teams[t].max,
				  "%s match %d: team %d has %d players, bounds %d..%d", sc->name, m, t,
				  team_size[t], config->teams[t].min, config->teams[t].max);

		/* the rules at the anchor's age */
		for (int r = 0; r < config->nrules; r++)
		{
			int			step;

			on[r] = ExpectedThreshold(&config->rules[r], tickets[anchor].age_seconds,
									  &threshold[r], &step);
			if (!on[r])
				threshold[r] = 0;
			CHECK(fm->rule_steps[r].off == !on[r] && fm->rule_steps[r].step == step &&
				  fm->rule_steps[r].threshold == threshold[r],
				  "%s match %d rule %s: step %d threshold %g off %d, expected step %d threshold %g off %d (age %g)",
				  sc->name, m, config->rules[r].name, fm->rule_steps[r].step,
				  fm->rule_steps[r].threshold, fm->rule_steps[r].off, step, threshold[r], !on[r],
				  tickets[anchor].age_seconds);
		}
		CHECK(TicketRulesHold(config, tickets, fm->tickets, fm->ntickets, on, threshold, &why),
			  "%s match %d (anchor %d, %d tickets): %s", sc->name, m, anchor, fm->ntickets, why);

		/* the region: open to every ticket within the threshold */
		for (int r = 0; r < config->nrules; r++)
		{
			LatencyView lv;

			if (config->rules[r].type != MM_RULE_LATENCY)
				continue;
			if (on[r])
			{
				ViewLatency(tickets, fm->tickets, fm->ntickets, r, &lv);
				CHECK(fm->region >= 0 && fm->region < NREGIONS,
					  "%s match %d: region %d with a latency rule on", sc->name, m, fm->region);
				if (fm->region >= 0 && fm->region < NREGIONS)
					CHECK(lv.open[fm->region] && lv.worst[fm->region] <= threshold[r],
						  "%s match %d: region %s not open within %g ms (worst %g)", sc->name, m,
						  region_names[fm->region], threshold[r], lv.worst[fm->region]);
			}
			break;				/* the first latency rule picks the region */
		}

		/* team rules, over the search's teams */
		for (int k = 0; k < fm->ntickets && config->nteams > 0; k++)
			if (fm->ticket_team[k] < 0 || fm->ticket_team[k] >= config->nteams)
				goto next;
		CHECK(config->nteams == 0 ||
			  TeamRulesHold(config, tickets, fm->tickets, fm->ticket_team, fm->ntickets, on,
							threshold, &why),
			  "%s match %d (anchor %d): %s", sc->name, m, anchor, why);
next:	;
	}

	/*
	 * The search ranks candidates by closeness and backtracks (issue 9): it
	 * no longer equals the age-order greedy; completeness is checked against
	 * a brute force in test/regress/sql/search_completeness.sql.
	 */
	if (false && sc->reference && config->nteams == 0)
	{
		RefMatch   *ref = malloc(sizeof(RefMatch) * Max(n, 1));
		int			nref = ReferenceSearch(config, tickets, n, ref);
		int			shown = 0;

		CHECK(nref == res->nmatches, "%s: %d matches, the reference greedy forms %d",
			  sc->name, res->nmatches, nref);
		for (int m = 0; m < Min(nref, res->nmatches) && shown < 3; m++)
		{
			const MmFoundMatch *fm = &res->matches[m];
			bool		same = fm->ntickets == ref[m].ntickets &&
				memcmp(fm->tickets, ref[m].tickets, sizeof(int) * fm->ntickets) == 0;

			total_compared++;
			if (!same)
			{
				char		a[1024] = "",
							b[1024] = "";
				size_t		oa = 0,
							ob = 0;

				for (int k = 0; k < fm->ntickets && oa < sizeof(a); k++)
					oa += snprintf(a + oa, sizeof(a) - oa, " %d", fm->tickets[k]);
				for (int k = 0; k < ref[m].ntickets && ob < sizeof(b); k++)
					ob += snprintf(b + ob, sizeof(b) - ob, " %d", ref[m].tickets[k]);
				CHECK(false, "%s match %d: tickets%s, the reference greedy has%s",
					  sc->name, m, a, b);
				shown++;
				continue;
			}
			CHECK(fm->region == ref[m].region, "%s match %d: region %d, reference %d",
				  sc->name, m, fm->region, ref[m].region);
			CHECK(fabs(fm->quality - ref[m].quality) <= 1e-12, "%s match %d: quality %.17g, reference %.17g",
				  sc->name, m, fm->quality, ref[m].quality);
		}
		free(ref);
	}
	free(used_by);
}

/* ------------------------------------------------------------------------
 * Completeness on small pools: no valid match left unformed
 * ------------------------------------------------------------------------
 */

/*
 * Pools up to this size: the search ranks every candidate (it ranks the
 * first max(16, 2 x match_size.max)) and its exhaustive search, well within
 * its budget here, tries every combination and placement, so an anchor that
 * can be matched is (docs/queues-and-tickets.md, "How the search chooses").
 */
#define LEFTOVER_MAX 12
#define SMALL_POOLS 400

typedef struct Brute
{
	const MmQueueConfig *config;
	const MmTicket *tickets;
	const int  *left;			/* the unmatched tickets, oldest first */
	int			nleft;
	bool		on[MAXR];
	double		threshold[MAXR];
	int			list[LEFTOVER_MAX];
	int			team[LEFTOVER_MAX];
	int			team_size[4];
	int			n;
} Brute;

/* Some placement of list[k..] on teams within bounds where the team rules hold. */
static bool
BrutePlace(Brute *b, int k)
{
	const MmQueueConfig *config = b->config;
	const char *why;

	if (k == b->n)
	{
		for (int t = 0; t < config->nteams; t++)
			if (b->team_size[t] < config->teams[t].min)
				return false;
		return TeamRulesHold(config, b->tickets, b->list, b->team, b->n, b->on, b->threshold, &why);
	}
	for (int t = 0; t < config->nteams; t++)
	{
		int			np = b->tickets[b->list[k]].nplayers;

		if (b->team_size[t] + np > config->teams[t].max)
			continue;
		b->team[k] = t;
		b->team_size[t] += np;
		if (BrutePlace(b, k + 1))
			return true;
		b->team_size[t] -= np;
	}
	return false;
}

/* A valid match of list[0..n-1] and younger unmatched tickets from left[from..]. */
static bool
BruteExtend(Brute *b, int from, int players)
{
	const MmQueueConfig *config = b->config;
	const char *why;

	if (players >= config->match_min && players <= config->match_max &&
		TicketRulesHold(config, b->tickets, b->list, b->n, b->on, b->threshold, &why))
	{
		if (config->nteams == 0)
			return true;
		memset(b->team_size, 0, sizeof(b->team_size));
		if (BrutePlace(b, 0))
			return true;
	}
	for (int j = from; j < b->nleft; j++)
	{
		int			i = b->left[j];

		if (players + b->tickets[i].nplayers > config->match_max)
			continue;
		b->list[b->n++] = i;
		/* a subset whose ticket rules fail fails with more tickets too */
		if (TicketRulesHold(config, b->tickets, b->list, b->n, b->on, b->threshold, &why) &&
			BruteExtend(b, j + 1, players + b->tickets[i].nplayers))
			return true;		/* b->list holds the match */
		b->n--;
	}
	return false;
}

static long small_pools_checked = 0;
static long small_lowprio = 0;

/*
 * The tickets the search left unmatched hold no valid match (every subset,
 * thresholds at its oldest ticket's age, one low_priority class): its oldest
 * ticket was an anchor while all of them were alive.
 */
static void
CheckUnformed(const Scenario *sc, const MmQueueConfig *config, const MmTicket *tickets, int n,
			  const MmSearchResult *res)
{
	bool		matched[LEFTOVER_MAX] = {false};
	int			left[LEFTOVER_MAX];
	int			nleft = 0;
	Brute		b;

	if (n > LEFTOVER_MAX)
		return;
	for (int m = 0; m < res->nmatches; m++)
		for (int k = 0; k < res->matches[m].ntickets; k++)
		{
			int			i = res->matches[m].tickets[k];

			if (i >= 0 && i < n)
				matched[i] = true;
		}
	for (int i = 0; i < n; i++)
	{
		if (!matched[i])
			left[nleft++] = i;
		if (tickets[i].low_priority)
			small_lowprio++;
	}
	small_pools_checked++;

	memset(&b, 0, sizeof(b));
	b.config = config;
	b.tickets = tickets;
	b.left = left;
	b.nleft = nleft;
	for (int a = 0; a < nleft; a++)
	{
		int			step;

		for (int r = 0; r < config->nrules; r++)
		{
			b.on[r] = ExpectedThreshold(&config->rules[r], tickets[left[a]].age_seconds,
										&b.threshold[r], &step);
			if (!b.on[r])
				b.threshold[r] = 0;
		}
		b.n = 1;
		b.list[0] = left[a];
		if (tickets[left[a]].nplayers <= config->match_max &&
			BruteExtend(&b, a + 1, tickets[left[a]].nplayers))
		{
			char		desc[512] = "";
			size_t		o = 0;

			for (int k = 0; k < b.n && o < sizeof(desc); k++)
				o += snprintf(desc + o, sizeof(desc) - o, " %d%s(%dp, age %g)", b.list[k],
							  tickets[b.list[k]].low_priority ? " low_priority" : "",
							  tickets[b.list[k]].nplayers, tickets[b.list[k]].age_seconds);
			CHECK(false, "%s, pool of %d: %d matches formed, but the unmatched tickets%s are a valid match",
				  sc->name, n, res->nmatches, desc);
			return;
		}
	}
	test_checks++;
}

static void
RunScenario(const Scenario *sc, int n, bool verbose)
{
	MmQueueConfig config;
	MmRuleContext ctx;
	MmTicket   *tickets;
	MmSearchResult *res;
	MemoryContext caller,
				old;

	memset(&config, 0, sizeof(config));
	config.match_min = sc->match_min;
	config.match_max = sc->match_max;
	config.nteams = sc->nteams;
	config.teams = sc->nteams ? (MmTeamConfig *) sc->teams : NULL;
	config.nrules = sc->nrules;
	config.rules = (MmRuleConfig *) sc->rules;
	config.max_party_size = sc->max_party;

	memset(&ctx, 0, sizeof(ctx));
	ctx.config = &config;
	ctx.nregions = NREGIONS;
	ctx.regions_allocated = NREGIONS;
	ctx.regions = (char **) region_names;

	tickets = MakeTickets(sc, &config, n);

	/* the caller's context holds the result; the search's scratch is its child */
	caller = AllocSetContextCreate(CurrentMemoryContext, "test caller", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(caller);
	res = MmSearchMatches(&ctx, tickets, n);
	MemoryContextSwitchTo(old);
	CHECK(CurrentMemoryContext == old, "%s: the search left another current context", sc->name);
	CheckSearch(sc, &ctx, tickets, n, res);
	CheckUnformed(sc, &config, tickets, n, res);
	if (verbose)
	{
		int			nlow = 0,
					mlow = 0;

		for (int i = 0; i < n; i++)
			nlow += tickets[i].low_priority;
		for (int m = 0; m < res->nmatches; m++)
			mlow += res->matches[m].ntickets > 0 && tickets[res->matches[m].tickets[0]].low_priority;
		printf("  %-22s %5d tickets: %4d matches", sc->name, n, res->nmatches);
		if (sc->lowprio_pct > 0)
			printf(" (%d low-priority tickets, %d matches of them)", nlow, mlow);
		printf("\n");
	}
	MemoryContextDelete(caller);
	FreeTickets(tickets, n, config.nrules);
}

/*
 * Two solo tickets whose values differ by exactly the threshold (decimal
 * values as a JSON ticket gives them): DifferenceCanAdd accepts them, so the
 * search must pair them whichever is older.
 *
 * The search's window [v - t, v + t] is computed in floating point, while
 * the rule compares the rounded difference (max - min <= t): without the
 * window's slack (src/match_search_pool.c, MmSearchCandidatesStart), skills
 * 3.1 and 0.6 with max 2.5 matched only when the 0.6 ticket was older, and
 * -0.34 and 0.16 with max 0.5 never did, though |0.16 - -0.34| is 0.5 in
 * double. */
static long boundary_pairs = 0;
static long boundary_at_edge = 0;

static void
BoundaryPairs(void)
{
	static const double thresholds[] = {0.1, 0.2, 0.3, 0.5, 1.0, 1.5, 2.5, 0.05, 0.25, 12.3};
	MmQueueConfig config;
	MmRuleConfig rule = Rule("skill", MM_RULE_DIFFERENCE, 0);
	MmRuleContext ctx;

	memset(&config, 0, sizeof(config));
	config.match_min = config.match_max = 2;
	config.nrules = 1;
	config.rules = &rule;
	memset(&ctx, 0, sizeof(ctx));
	ctx.config = &config;

	for (int scale = 10; scale <= 100; scale *= 10)
		for (int ti = 0; ti < lengthof(thresholds); ti++)
			for (int j = -300; j <= 300; j += 7)
			{
				double		t = thresholds[ti];
				/* the value t away, as a decimal: what a ticket would send */
				double		a = (double) j / scale;
				double		b = round((a + t) * scale) / scale;

				if (!(fabs(b - a) <= t))
					continue;		/* rounds above t: no match either way */
				for (int order = 0; order < 2; order++)
				{
					double		older = order ? b : a,
								younger = order ? a : b;
					MmTicket	tk[2];
					MmRuleValue v[2];
					MmSearchResult *res;

					if (younger < older - t || younger > older + t)
						boundary_at_edge++;
					memset(tk, 0, sizeof(tk));
					memset(v, 0, sizeof(v));
					for (int i = 0; i < 2; i++)
					{
						tk[i].id = i + 1;
						tk[i].age_seconds = 10 - i;
						tk[i].nplayers = 1;
						tk[i].values = &v[i];
						v[i].kind = MM_VALUE_PRESENT;
						v[i].number = i == 0 ? older : younger;
						v[i].player_values = &v[i].number;
					}
					rule.threshold = t;
					res = MmSearchMatches(&ctx, tk, 2);
					boundary_pairs++;
					CHECK(res->nmatches == 1,
						  "boundary: skills %.17g (older) and %.17g differ by %.17g <= max %g, but %d matches",
						  older, younger, fabs(older - younger), t, res->nmatches);
				}
			}
	printf("  boundary pairs: %ld searched, %ld of them outside the rounded [v - t, v + t]\n",
		   boundary_pairs, boundary_at_edge);
}

int
main(int argc, char **argv)
{
	long		n = 3000;
	uint64_t	seed = 1;
	double		started = CpuSeconds();
	char		summary[300];
	Scenario	scenarios[8];
	int			nsc = 0;
	Scenario   *sc;

	TestStart("test_search", argc, argv, &n, &seed);
	memset(scenarios, 0, sizeof(scenarios));

	/* 1. free-for-all by skill: difference with linear expansion */
	sc = &scenarios[nsc++];
	sc->name = "ffa_skill";
	sc->match_min = 4;
	sc->match_max = 8;
	sc->max_party = 3;
	sc->skill_sd = 300;
	sc->max_age = 120;
	sc->reference = true;
	sc->lowprio_pct = 30;
	sc->nrules = 1;
	sc->rules[0] = Rule("skill", MM_RULE_DIFFERENCE, 40);
	Linear(&sc->rules[0], 10, 40, 300);

	/* 2. free-for-all: string, latency (custom steps, off at the end), fractional skill */
	sc = &scenarios[nsc++];
	sc->name = "ffa_mode_ping_frac";
	sc->match_min = 2;
	sc->match_max = 6;
	sc->max_party = 2;
	sc->frac = true;
	sc->skill_sd = 0.5;
	sc->any_pct = 5;
	sc->missing_pct = 3;
	sc->max_age = 100;
	sc->reference = true;
	sc->nrules = 3;
	sc->rules[0] = Rule("mode", MM_RULE_STRING_EQUALITY, 0);
	sc->rules[0].missing_matches_any = true;
	sc->rules[0].seconds_until_optional = 90;
	sc->rules[1] = Rule("ping", MM_RULE_LATENCY, 60);
	sc->rules[1].has_default = true;
	sc->rules[1].default_number = 70;
	Custom(&sc->rules[1], 20, 3, steps_latency, off_latency);
	sc->rules[2] = Rule("skill", MM_RULE_DIFFERENCE, 0.3);
	sc->rules[2].merge = MM_MERGE_MAX;
	sc->rules[2].missing_matches_any = true;
	sc->rules[2].weight = 2;
	Linear(&sc->rules[2], 15, 0.1, 1.0);

	/* 3. free-for-all without a numeric rule (no window: the pool walk) */
	sc = &scenarios[nsc++];
	sc->name = "ffa_no_window";
	sc->match_min = 3;
	sc->match_max = 5;
	sc->max_party = 2;
	sc->missing_pct = 5;
	sc->max_age = 80;
	sc->reference = true;
	sc->lowprio_pct = 50;
	sc->nrules = 2;
	sc->rules[0] = Rule("ping", MM_RULE_LATENCY, 50);
	sc->rules[0].missing_matches_any = true;
	Linear(&sc->rules[0], 10, 10, 150);
	sc->rules[1] = Rule("map", MM_RULE_STRING_EQUALITY, 0);
	Custom(&sc->rules[1], 60, 1, steps_string, off_string);

	/* 4. free-for-all, wide windows (most of the pool) and match_any skills */
	sc = &scenarios[nsc++];
	sc->name = "ffa_wide_any";
	sc->match_min = 6;
	sc->match_max = 10;
	sc->max_party = 4;
	sc->skill_sd = 150;
	sc->any_pct = 15;
	sc->max_age = 60;
	sc->reference = true;
	sc->nrules = 1;
	sc->rules[0] = Rule("skill", MM_RULE_DIFFERENCE, 200);
	sc->rules[0].missing_matches_any = true;
	sc->rules[0].seconds_until_optional = 50;
	Linear(&sc->rules[0], 5, 100, INFINITY);

	/* 5. 5v5 with parties: skill, latency, team_difference */
	sc = &scenarios[nsc++];
	sc->name = "teams_5v5";
	sc->match_min = 10;
	sc->match_max = 10;
	sc->nteams = 2;
	sc->teams[0] = (MmTeamConfig) {"red", 5, 5};
	sc->teams[1] = (MmTeamConfig) {"blue", 5, 5};
	sc->max_party = 5;
	sc->skill_sd = 300;
	sc->missing_pct = 2;
	sc->max_age = 120;
	sc->lowprio_pct = 40;
	sc->nrules = 3;
	sc->rules[0] = Rule("skill", MM_RULE_DIFFERENCE, 50);
	Linear(&sc->rules[0], 10, 50, 400);
	sc->rules[1] = Rule("ping", MM_RULE_LATENCY, 100);
	sc->rules[1].has_default = true;
	sc->rules[1].default_number = 80;
	sc->rules[2] = Rule("balance", MM_RULE_TEAM_DIFFERENCE, 15);
	sc->rules[2].missing_matches_any = true;
	Linear(&sc->rules[2], 20, 15, 60);

	/* 6. three teams of 2..4: team_size_balance with steps, team_difference, string */
	sc = &scenarios[nsc++];
	sc->name = "teams_3x_sizes";
	sc->match_min = 6;
	sc->match_max = 12;
	sc->nteams = 3;
	sc->teams[0] = (MmTeamConfig) {"a", 2, 4};
	sc->teams[1] = (MmTeamConfig) {"b", 2, 4};
	sc->teams[2] = (MmTeamConfig) {"c", 2, 4};
	sc->max_party = 3;
	sc->skill_sd = 200;
	sc->any_pct = 5;
	sc->max_age = 90;
	sc->nrules = 4;
	sc->rules[0] = Rule("sizes", MM_RULE_TEAM_SIZE_BALANCE, 0);
	Custom(&sc->rules[0], 30, 2, steps_size, off_size);
	sc->rules[1] = Rule("balance", MM_RULE_TEAM_DIFFERENCE, 40);
	sc->rules[1].missing_matches_any = true;
	sc->rules[2] = Rule("mode", MM_RULE_STRING_EQUALITY, 0);
	sc->rules[3] = Rule("skill", MM_RULE_DIFFERENCE, 150);
	sc->rules[3].merge = MM_MERGE_MIN;
	Linear(&sc->rules[3], 10, 25, 400);

	/* 7. uneven teams 1..3 vs 2..6, fractional values: balancing by the main rule */
	sc = &scenarios[nsc++];
	sc->name = "teams_uneven_frac";
	sc->match_min = 4;
	sc->match_max = 8;
	sc->nteams = 2;
	sc->teams[0] = (MmTeamConfig) {"small", 1, 3};
	sc->teams[1] = (MmTeamConfig) {"big", 2, 6};
	sc->max_party = 3;
	sc->frac = true;
	sc->skill_sd = 0.3;
	sc->max_age = 60;
	sc->lowprio_pct = 60;
	sc->nrules = 2;
	sc->rules[0] = Rule("skill", MM_RULE_DIFFERENCE, 0.2);
	Linear(&sc->rules[0], 10, 0.1, 0.8);
	sc->rules[1] = Rule("sizes", MM_RULE_TEAM_SIZE_BALANCE, 2);

	for (int i = 0; i < nsc; i++)
	{
		long		before = total_matches;

		RunScenario(&scenarios[i], (int) n, true);
		RunScenario(&scenarios[i], (int) n / 3, true);	/* a sparser pool */
		/* edge sizes: empty, one ticket, a handful */
		RunScenario(&scenarios[i], 0, true);
		RunScenario(&scenarios[i], 1, true);
		RunScenario(&scenarios[i], RandRange(2, 30), true);
		/* small pools: completeness by brute force */
		before = total_matches;
		for (int k = 0; k < SMALL_POOLS; k++)
			RunScenario(&scenarios[i], RandRange(2, LEFTOVER_MAX), false);
		printf("  %-22s %d pools of 2..%d tickets: %ld matches, the unmatched tickets brute-forced\n",
			   scenarios[i].name, SMALL_POOLS, LEFTOVER_MAX, total_matches - before);
	}

	BoundaryPairs();

	snprintf(summary, sizeof(summary), "%d scenarios, %ld matches checked, %ld compared with the reference, "
			 "%ld small pools brute-forced (%ld low-priority tickets)",
			 nsc, total_matches, total_compared, small_pools_checked, small_lowprio);
	return TestFinish(seed, started, summary);
}
