/*
 * search_property.c
 *	  Test support: the search against a brute force over small pools.
 *
 * Part of the test module matchmaking_test (test/modules/matchmaking_test),
 * built with the extension's pure search, rule and config parser files and
 * installed only by the test suite (test/modules/install.sh), never shipped
 * in matchmaking.so.  Its C functions are test tools, not API: no extension
 * script declares them; the regression tests test/regress/sql/search_completeness.sql and
 * test/regress/sql/search_backfill.sql create them in pg_temp with
 *		CREATE FUNCTION pg_temp.f(...) ... AS '$libdir/matchmaking_test', '<symbol>'
 *
 * Configs are parsed by the extension's parser without the catalog check of
 * a "match_function" (only its shape): the search never calls one.
 *
 * mm_search_valid_match_exists(config jsonb, tickets jsonb) RETURNS boolean
 *	 Whether the tickets ([{"players": [...], "age_seconds": 12}, ...], oldest
 *	 first) contain a valid match under the config: a set of tickets whose
 *	 oldest ticket's age selects every rule's step, whose player count is
 *	 within match_size, with every ticket rule that is on satisfied, and
 *	 (with teams) some placement of the tickets on teams, each party whole on
 *	 one team, every team within its min..max, satisfying every team rule
 *	 that is on.  By brute force over every subset and every placement: the
 *	 definition, independent of the search's choices.
 *
 * mm_search_backfill(config jsonb, members jsonb, open_slots int[],
 *					   candidates jsonb) RETURNS jsonb
 *	 MmSearchBackfill over tickets given like the pools above (members carry
 *	 "team": the team index); returns {"tickets": [candidate indexes],
 *	 "teams": [...], "players": n, "filled": bool, "region": name,
 *	 "quality": q}.
 *
 * mm_search_property(seed int, cases int, max_tickets int) RETURNS jsonb
 *	 Generates `cases` random queues (free-for-all and two-team, every rule
 *	 type the tick knows, expansions, optional rules, defaults and match_any,
 *	 parties) with pools of 1..max_tickets tickets, parses them with the real
 *	 config parser and extracts values with the real handlers, runs
 *	 MmSearchMatches and checks: completeness (a valid match exists, by brute
 *	 force, => the search formed at least one match) and soundness (every
 *	 formed match is valid with the search's own teams).  Returns counts and
 *	 the first failing case as JSON.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "lib/stringinfo.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "match_search.h"
#include "queue_config.h"
#include "rules.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(mm_search_valid_match_exists);
PG_FUNCTION_INFO_V1(mm_search_property);
PG_FUNCTION_INFO_V1(mm_search_backfill);

#define PROP_MAX_TICKETS 14

/* A pool: tickets oldest first with their parsed players. */
typedef struct Pool
{
	MmRuleContext context;
	int			n;
	MmTicket	tickets[PROP_MAX_TICKETS];
} Pool;

/* Reads [{"players": [...], "age_seconds": x}, ...] into a pool. */
static void
LoadPool(Pool *pool, const MmQueueConfig *config, Jsonb *tickets)
{
	JsonbContainer *root = &tickets->root;
	int			n;

	MmRuleContextInit(&pool->context, config);
	if (!JsonContainerIsArray(root) || JsonContainerIsScalar(root))
		elog(ERROR, "tickets must be an array");
	n = JsonContainerSize(root);
	if (n > PROP_MAX_TICKETS)
		elog(ERROR, "at most %d tickets", PROP_MAX_TICKETS);
	pool->n = n;
	for (int i = 0; i < n; i++)
	{
		JsonbValue *elem = getIthJsonbValueFromContainer(root, i);
		JsonbValue	v;
		JsonbContainer *players;
		MmTicket   *t = &pool->tickets[i];
		MmPlayerInput *inputs;
		int			np;

		if (elem->type != jbvBinary ||
			getKeyJsonValueFromContainer(elem->val.binary.data, "players", 7, &v) == NULL ||
			v.type != jbvBinary)
			elog(ERROR, "ticket %d has no players", i);
		players = v.val.binary.data;
		np = JsonContainerSize(players);
		memset(t, 0, sizeof(*t));
		t->id = i + 1;
		t->nplayers = np;
		t->player_ids = palloc(sizeof(char *) * np);
		inputs = palloc0(sizeof(MmPlayerInput) * np);
		if (getKeyJsonValueFromContainer(elem->val.binary.data, "age_seconds", 11, &v) != NULL &&
			v.type == jbvNumeric)
			t->age_seconds = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
																NumericGetDatum(v.val.numeric)));
		for (int p = 0; p < np; p++)
		{
			JsonbValue *pl = getIthJsonbValueFromContainer(players, p);
			JsonbContainer *obj = pl->val.binary.data;

			if (getKeyJsonValueFromContainer(obj, "id", 2, &v) != NULL && v.type == jbvString)
				t->player_ids[p] = pnstrdup(v.val.string.val, v.val.string.len);
			else
				t->player_ids[p] = psprintf("p%d_%d", i, p);
			inputs[p].id = t->player_ids[p];
			if (getKeyJsonValueFromContainer(obj, "attributes", 10, &v) != NULL && v.type == jbvBinary)
				inputs[p].attributes = v.val.binary.data;
			if (getKeyJsonValueFromContainer(obj, "latencies", 9, &v) != NULL && v.type == jbvBinary)
				inputs[p].latencies = v.val.binary.data;
		}
		MmExtractTicketValues(&pool->context, t, inputs, np);
	}
}

/* The brute force's view of one candidate set. */
typedef struct Brute
{
	const MmQueueConfig *config;
	const MmRuleContext *context;
	const MmTicket *tickets;
	bool		rule_on[MM_MAX_RULES];
	double		threshold[MM_MAX_RULES];
	const MmTicket *set[PROP_MAX_TICKETS];
	int			nset;
	int			team[PROP_MAX_TICKETS];
	double		age;			/* the set's oldest ticket */
} Brute;

/*
 * Every ticket rule that is on holds over the set (each joins in turn: for
 * these rules the order does not matter), rules named in a compound through
 * the compound's statement over whether each holds, and the whole-match
 * conditions (MmFinalHolds) and min_tickets.
 */
static bool
TicketRulesHold(Brute *b)
{
	const MmQueueConfig *config = b->config;
	MmRuleState *states = palloc0(sizeof(MmRuleState) * Max(config->nrules, 1));
	bool		ok = true;

	if (b->nset < config->min_tickets)
		return false;
	for (int r = 0; r < config->nrules; r++)
	{
		int			cap = config->match_max;

		if (MmRuleHandlerFor(config->rules[r].type)->scope != MM_SCOPE_TICKETS)
			continue;
		for (int k = 0; k < b->nset; k++)
			cap = Max(cap, Max(b->set[k]->values[r].nregions, b->set[k]->values[r].nset));
		MmRuleStateAlloc(&states[r], cap);
		MmRuleStateInit(b->context, &config->rules[r], &states[r]);
	}
	for (int r = 0; r < config->nrules && ok; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];
		const MmRuleHandler *h = MmRuleHandlerFor(rule->type);

		if (!b->rule_on[r] || rule->type == MM_RULE_COMPOUND)
			continue;
		for (int k = 0; k < b->nset && ok; k++)
		{
			const MmRuleValue *v = &b->set[k]->values[r];

			if (rule->in_compound)
			{
				MmLeafJoin(b->context, &states[r], v, b->threshold[r]);
				continue;
			}
			if (v->kind == MM_VALUE_MISSING)
				ok = false;
			else if (h->scope == MM_SCOPE_TICKETS)
			{
				if (!h->can_add(b->context, &states[r], v, b->threshold[r]))
					ok = false;
				else
					h->add(b->context, &states[r], v);
			}
		}
	}
	return ok && MmFinalHolds(b->context, states, b->rule_on, b->threshold);
}

/* Team sizes within bounds and every team rule that is on, for b->team. */
static bool
TeamsHold(Brute *b)
{
	const MmQueueConfig *config = b->config;
	int			size[MM_MAX_TEAMS];
	MmTeamsView view;

	for (int t = 0; t < config->nteams; t++)
		size[t] = 0;
	for (int k = 0; k < b->nset; k++)
		size[b->team[k]] += b->set[k]->nplayers;
	for (int t = 0; t < config->nteams; t++)
		if (size[t] < MmTeamMinAt(&config->teams[t], b->age) || size[t] > config->teams[t].max)
			return false;
	view.nteams = config->nteams;
	view.team_size = size;
	view.ntickets = b->nset;
	view.tickets = b->set;
	view.ticket_team = b->team;
	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleHandler *h = MmRuleHandlerFor(config->rules[r].type);
		double		c;

		if (!b->rule_on[r] || h->scope != MM_SCOPE_TEAMS)
			continue;
		if (!h->check_teams(&config->rules[r], r, &view, b->threshold[r], &c))
			return false;
	}
	return true;
}

/* Some placement of the set's tickets on teams that holds. */
static bool
SomePlacement(Brute *b, int k)
{
	if (k == b->nset)
		return TeamsHold(b);
	for (int t = 0; t < b->config->nteams; t++)
	{
		b->team[k] = t;
		if (SomePlacement(b, k + 1))
			return true;
	}
	return false;
}

/* Sets the thresholds at the age of the set's oldest ticket. */
static void
BruteThresholds(Brute *b, double age)
{
	for (int r = 0; r < b->config->nrules; r++)
	{
		int			step;

		b->rule_on[r] = MmRuleThresholdAt(&b->config->rules[r], age, &b->threshold[r], &step);
	}
}

/* Whether the set is a valid match (with teams: some placement holds). */
static bool
SetIsValid(Brute *b, bool any_placement)
{
	int			players = 0;
	double		age = 0;

	for (int k = 0; k < b->nset; k++)
	{
		players += b->set[k]->nplayers;
		/* the oldest ticket selects the steps, or the newest */
		if (k == 0 || (b->config->newest_age ? b->set[k]->age_seconds < age :
					   b->set[k]->age_seconds > age))
			age = b->set[k]->age_seconds;
	}
	b->age = age;
	if (players < MmMatchMinAt(b->config, age) || players > b->config->match_max)
		return false;
	BruteThresholds(b, age);
	if (!TicketRulesHold(b))
		return false;
	if (b->config->nteams == 0)
		return true;
	return any_placement ? SomePlacement(b, 0) : TeamsHold(b);
}

/* Whether any subset of the pool is a valid match. */
static bool
BruteExists(const MmQueueConfig *config, Pool *pool)
{
	Brute		b;

	memset(&b, 0, sizeof(b));
	b.config = config;
	b.context = &pool->context;
	b.tickets = pool->tickets;
	for (uint32 mask = 1; mask < (1U << pool->n); mask++)
	{
		b.nset = 0;
		for (int i = 0; i < pool->n; i++)
			if (mask & (1U << i))
				b.set[b.nset++] = &pool->tickets[i];
		if (SetIsValid(&b, true))
			return true;
	}
	return false;
}

/* Parses a config given as JSON text. */
static MmQueueConfig *
ParseConfigText(const char *text)
{
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));

	return MmParseQueueConfigWith(jb, NULL);
}

Datum
mm_search_valid_match_exists(PG_FUNCTION_ARGS)
{
	MmQueueConfig *config = MmParseQueueConfigWith(PG_GETARG_JSONB_P(0), NULL);
	Pool	   *pool = palloc0(sizeof(Pool));

	LoadPool(pool, config, PG_GETARG_JSONB_P(1));
	PG_RETURN_BOOL(BruteExists(config, pool));
}

/* ---- random cases ---------------------------------------------------------- */

static uint64 prop_rng;

static double
Rand(void)
{
	prop_rng ^= prop_rng << 13;
	prop_rng ^= prop_rng >> 7;
	prop_rng ^= prop_rng << 17;
	return (double) (prop_rng >> 11) / 9007199254740992.0;
}

/* An integer in [lo, hi]. */
static int
RandInt(int lo, int hi)
{
	return lo + (int) floor(Rand() * (hi - lo + 1));
}

/* Appends an optional expansion / seconds_until_optional to a rule. */
static void
RandomExpansion(StringInfo buf, bool numeric, double base)
{
	int			kind = RandInt(0, 5);

	if (numeric && kind == 1)
		appendStringInfo(buf, ", \"expansion\": {\"every_seconds\": %d, \"delta\": %d, \"limit\": %d}",
						 RandInt(5, 30), (int) (base / 2) + 1, (int) (base * 3) + 1);
	else if (numeric && kind == 2)
		appendStringInfo(buf, ", \"expansion\": {\"every_seconds\": %d, \"steps\": [%d, null]}",
						 RandInt(10, 40), (int) (base * 2) + 1);
	else if (kind == 3)
		appendStringInfo(buf, ", \"seconds_until_optional\": %d", RandInt(10, 60));
	if (Rand() < 0.2)
		appendStringInfo(buf, ", \"weight\": %d", RandInt(0, 4));
}

/* A random queue config as JSON text. */
static char *
RandomConfig(bool *teams)
{
	StringInfoData buf;
	bool		first = true;
	int			nrules = 0;
	/* expansion_age_selection newest (its steps must loosen with age) */
	bool		newest = Rand() < 0.15;

	initStringInfo(&buf);
	*teams = Rand() < 0.5;
	if (*teams)
	{
		int			lo = RandInt(1, 3);
		int			hi = lo + (Rand() < 0.4 ? 1 : 0);

		const char *expansion = lo > 1 && Rand() < 0.3 ?
			psprintf(", \"expansion\": {\"every_seconds\": %d, \"steps\": [%d]}", RandInt(10, 40), lo - 1) : "";

		appendStringInfo(&buf, "{\"teams\": [{\"name\": \"red\", \"min\": %d, \"max\": %d%s}, "
						 "{\"name\": \"blue\", \"min\": %d, \"max\": %d%s}], \"rules\": [",
						 lo, hi, expansion, lo, hi, expansion);
	}
	else
	{
		int			lo = RandInt(2, 4);

		appendStringInfo(&buf, "{\"match_size\": {\"min\": %d, \"max\": %d}, \"rules\": [",
						 lo, lo + RandInt(0, 3));
	}
#define SEP() do { if (!first) appendStringInfoString(&buf, ", "); first = false; nrules++; } while (0)
	if (Rand() < 0.8)
	{
		int			max = RandInt(0, 6) * 25;

		SEP();
		appendStringInfo(&buf, "{\"name\": \"skill\", \"type\": \"difference\", \"attribute\": \"skill\", "
						 "\"max\": %d, \"merge\": \"%s\"", max,
						 (const char *[]) {"average", "min", "max"}[RandInt(0, 2)]);
		if (Rand() < 0.2)
			appendStringInfoString(&buf, ", \"when_missing\": \"match_any\"");
		else if (Rand() < 0.2)
			appendStringInfoString(&buf, ", \"default\": 1000");
		if (Rand() < 0.15)
			appendStringInfo(&buf, ", \"min\": %d", Min(max, 50));
		RandomExpansion(&buf, true, max);
		appendStringInfoChar(&buf, '}');
	}
	if (Rand() < 0.4)
	{
		SEP();
		appendStringInfoString(&buf, "{\"name\": \"mode\", \"type\": \"string_equality\", \"attribute\": \"mode\"");
		if (Rand() < 0.3)
			appendStringInfoString(&buf, ", \"when_missing\": \"match_any\"");
		RandomExpansion(&buf, false, 0);
		appendStringInfoChar(&buf, '}');
	}
	if (Rand() < 0.4)
	{
		int			max = RandInt(2, 8) * 15;

		SEP();
		appendStringInfo(&buf, "{\"name\": \"ping\", \"type\": \"latency\", \"max_ms\": %d", max);
		if (Rand() < 0.3)
			appendStringInfo(&buf, ", \"max_distance\": %d", RandInt(0, 6) * 10);
		if (Rand() < 0.3)
			appendStringInfoString(&buf, ", \"region_choice\": \"lowest_average\"");
		RandomExpansion(&buf, true, max);
		appendStringInfoChar(&buf, '}');
	}
	if (*teams && Rand() < 0.6)
	{
		int			max = RandInt(0, 8) * 25;

		SEP();
		appendStringInfo(&buf, "{\"name\": \"fair\", \"type\": \"team_difference\", \"attribute\": \"skill\", \"max\": %d", max);
		if (Rand() < 0.3)
			appendStringInfoString(&buf, ", \"default\": 1000");
		RandomExpansion(&buf, true, max);
		appendStringInfoChar(&buf, '}');
	}
	if (*teams && Rand() < 0.3)
	{
		SEP();
		appendStringInfo(&buf, "{\"name\": \"even\", \"type\": \"team_size_balance\", \"max_difference\": %d}",
						 RandInt(0, 1));
	}
	if (Rand() < 0.25)
	{
		SEP();
		appendStringInfoString(&buf, "{\"name\": \"healers\", \"type\": \"match_total\", \"attribute\": \"healer\"");
		if (Rand() < 0.7)
			appendStringInfo(&buf, ", \"min\": %d", RandInt(0, 1));
		appendStringInfo(&buf, ", \"max\": %d", RandInt(1, 2));
		if (Rand() < 0.3)
			appendStringInfoString(&buf, ", \"default\": 0");
		RandomExpansion(&buf, true, 1);
		appendStringInfoChar(&buf, '}');
	}
	if (Rand() < 0.2)
	{
		static const char *const ops[] = {"=", "!=", "<", "<=", ">", ">=", "all_equal", "all_different"};
		int			op = RandInt(0, 7);

		SEP();
		appendStringInfo(&buf, "{\"name\": \"level\", \"type\": \"comparison\", \"attribute\": \"level\", \"operator\": \"%s\"",
						 ops[op]);
		if (op < 6)
		{
			appendStringInfo(&buf, ", \"reference\": %d", RandInt(1, 4));
			if (Rand() < 0.3 && !newest)
				appendStringInfo(&buf, ", \"expansion\": {\"every_seconds\": %d, \"steps\": [%d, null]}",
								 RandInt(10, 40), RandInt(1, 4));
		}
		if (Rand() < 0.3)
			appendStringInfoString(&buf, ", \"when_missing\": \"match_any\"");
		if (Rand() < 0.3)
			appendStringInfo(&buf, ", \"seconds_until_optional\": %d", RandInt(10, 60));
		appendStringInfoChar(&buf, '}');
	}
	if (*teams && Rand() < 0.2)
	{
		SEP();
		appendStringInfoString(&buf, "{\"name\": \"premade\", \"type\": \"team_ticket_size_similarity\"}");
	}
	if (Rand() < 0.25)
	{
		static const char *const statements[] = {
			"or(and(cmode, cskill), pmode)", "not(cmode)", "or(cmode, cskill)",
			"and(not(pmode), cskill)", "or(not(cskill), pmode)"
		};

		SEP();
		appendStringInfo(&buf, "{\"name\": \"cmode\", \"type\": \"comparison\", \"attribute\": \"level\", \"operator\": \"<=\", \"reference\": 2}, "
						 "{\"name\": \"pmode\", \"type\": \"comparison\", \"attribute\": \"level\", \"operator\": \">\", \"reference\": 2}, "
						 "{\"name\": \"cskill\", \"type\": \"difference\", \"attribute\": \"skill\", \"max\": %d}, "
						 "{\"name\": \"modes\", \"type\": \"compound\", \"statement\": \"%s\"",
						 RandInt(0, 4) * 50, statements[RandInt(0, 4)]);
		if (Rand() < 0.3)
			appendStringInfo(&buf, ", \"seconds_until_optional\": %d", RandInt(10, 60));
		appendStringInfoChar(&buf, '}');
	}
	if (Rand() < 0.25)
	{
		SEP();
		appendStringInfo(&buf, "{\"name\": \"maps\", \"type\": \"set_intersection\", \"attribute\": \"maps\", \"min_size\": %d",
						 RandInt(1, 2));
		if (Rand() < 0.3)
			appendStringInfoString(&buf, ", \"when_missing\": \"match_any\"");
		else if (Rand() < 0.3)
			appendStringInfoString(&buf, ", \"default\": [\"a\", \"b\"]");
		if (Rand() < 0.3)
			appendStringInfo(&buf, ", \"expansion\": {\"every_seconds\": %d, \"steps\": [1, 0]}", RandInt(10, 30));
		appendStringInfoChar(&buf, '}');
	}
	if (Rand() < 0.25)
	{
		SEP();
		appendStringInfoString(&buf, "{\"name\": \"blocks\", \"type\": \"blocklist\", \"attribute\": \"blocks\"");
		if (Rand() < 0.2)
			appendStringInfo(&buf, ", \"seconds_until_optional\": %d", RandInt(10, 60));
		appendStringInfoChar(&buf, '}');
	}
#undef SEP
	appendStringInfoString(&buf, "]");
	if (Rand() < 0.15)
		appendStringInfo(&buf, ", \"min_tickets\": 2");
	{
		/* ranking variants (they change the order, never the validity) */
		int			batching = Rand() < 0.3 ? RandInt(1, 4) : 0;
		bool		has_latency = strstr(buf.data, "\"type\": \"latency\"") != NULL;
		static const char *const batchings[] = {
			NULL, "\"batching_preference\": \"sorted\", \"sort_by_attributes\": [\"skill\", \"level\"]",
			"\"batching_preference\": \"random\"", "\"batching_preference\": \"fastest_region\"",
			"\"batching_preference\": \"largest_population\""
		};

		if (batching >= 3 && !has_latency)
			batching = 2;
		if (newest || batching > 0)
			appendStringInfo(&buf, ", \"algorithm\": {%s%s%s}",
							 newest ? "\"expansion_age_selection\": \"newest\"" : "",
							 newest && batching > 0 ? ", " : "",
							 batching > 0 ? batchings[batching] : "");
	}
	appendStringInfoString(&buf, "}");
	return buf.data;
}

/* A random pool as JSON text: tickets oldest first. */
static char *
RandomTickets(const MmQueueConfig *config, int nmax)
{
	StringInfoData buf;
	int			n = RandInt(1, nmax);
	double		age = RandInt(0, 90);
	int			pid = 0;
	int			party_max = Min(config->max_party_size, 3);

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (int i = 0; i < n; i++)
	{
		int			np = Rand() < 0.7 ? 1 : RandInt(1, party_max);
		const char *mode = Rand() < 0.5 ? "a" : "b";

		if (i > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfo(&buf, "{\"age_seconds\": %g, \"players\": [", age);
		for (int p = 0; p < np; p++)
		{
			if (p > 0)
				appendStringInfoString(&buf, ", ");
			appendStringInfo(&buf, "{\"id\": \"p%d\", \"attributes\": {", pid++);
			if (Rand() < 0.9)
				appendStringInfo(&buf, "\"skill\": %d, ", 800 + RandInt(0, 16) * 25);
			if (Rand() < 0.9)
				appendStringInfo(&buf, "\"mode\": \"%s\", ", mode);
			if (Rand() < 0.9)
				appendStringInfo(&buf, "\"healer\": %d, ", Rand() < 0.3 ? 1 : 0);
			if (Rand() < 0.9)
				appendStringInfo(&buf, "\"level\": %d, ", RandInt(1, 4));
			if (Rand() < 0.85)
			{
				static const char *const maps[] = {"a", "b", "c"};
				bool		first_map = true;

				appendStringInfoString(&buf, "\"maps\": [");
				for (int m = 0; m < 3; m++)
					if (Rand() < 0.6)
					{
						appendStringInfo(&buf, "%s\"%s\"", first_map ? "" : ", ", maps[m]);
						first_map = false;
					}
				appendStringInfoString(&buf, "], ");
			}
			if (Rand() < 0.3)
				appendStringInfo(&buf, "\"blocks\": [\"p%d\", \"nobody\"], ", RandInt(0, 20));
			appendStringInfoString(&buf, "\"x\": 0}");
			if (Rand() < 0.9)
			{
				bool		any = false;

				appendStringInfoString(&buf, ", \"latencies\": {");
				if (Rand() < 0.7)
				{
					appendStringInfo(&buf, "\"eu\": %d", RandInt(1, 12) * 10);
					any = true;
				}
				if (Rand() < 0.6 || !any)
				{
					appendStringInfo(&buf, "%s\"us\": %d", any ? ", " : "", RandInt(1, 12) * 10);
					any = true;
				}
				if (Rand() < 0.1)
					appendStringInfoString(&buf, ", \"asia\": 40");
				appendStringInfoChar(&buf, '}');
			}
			appendStringInfoChar(&buf, '}');
		}
		appendStringInfoString(&buf, "]}");
		{
			int			step = RandInt(0, 15);

			age = age > step ? age - step : 0;
		}
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/* Whether a formed match is valid with the search's own teams. */
static bool
FoundMatchValid(const MmQueueConfig *config, Pool *pool, const MmFoundMatch *m)
{
	Brute		b;

	memset(&b, 0, sizeof(b));
	b.config = config;
	b.context = &pool->context;
	b.tickets = pool->tickets;
	for (int k = 0; k < m->ntickets; k++)
	{
		b.set[b.nset] = &pool->tickets[m->tickets[k]];
		b.team[b.nset] = m->ticket_team[k];
		b.nset++;
	}
	return SetIsValid(&b, false);
}

Datum
mm_search_property(PG_FUNCTION_ARGS)
{
	int32		seed = PG_GETARG_INT32(0);
	int32		cases = PG_GETARG_INT32(1);
	int32		nmax = Min(Max(PG_GETARG_INT32(2), 1), 12);
	int			with_match = 0,
				formed = 0,
				missed = 0,
				unsound = 0;
	char	   *first_failure = NULL;
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext per_case = AllocSetContextCreate(CurrentMemoryContext, "mm search property",
												   ALLOCSET_DEFAULT_SIZES);
	StringInfoData out;

	prop_rng = 0x9E3779B97F4A7C15ULL ^ ((uint64) (uint32) seed * 0x2545F4914F6CDD1DULL);
	if (prop_rng == 0)
		prop_rng = 1;
	for (int c = 0; c < cases; c++)
	{
		bool		teams;
		char	   *config_text;
		char	   *tickets_text;
		MmQueueConfig *config;
		Pool	   *pool;
		bool		exists;
		MmSearchResult *result;

		CHECK_FOR_INTERRUPTS();
		MemoryContextSwitchTo(per_case);
		config_text = RandomConfig(&teams);
		config = ParseConfigText(config_text);
		tickets_text = RandomTickets(config, nmax);
		pool = palloc0(sizeof(Pool));
		LoadPool(pool, config,
				 DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(tickets_text))));
		exists = BruteExists(config, pool);
		result = MmSearchMatches(&pool->context, pool->tickets, pool->n);
		if (exists)
			with_match++;
		if (result->nmatches > 0)
			formed++;
		for (int k = 0; k < result->nmatches; k++)
			if (!FoundMatchValid(config, pool, &result->matches[k]))
			{
				unsound++;
				if (first_failure == NULL)
					first_failure = MemoryContextStrdup(caller,
														psprintf("unsound match in case %d: config %s tickets %s",
																 c, config_text, tickets_text));
			}
		if (exists && result->nmatches == 0)
		{
			missed++;
			if (first_failure == NULL)
				first_failure = MemoryContextStrdup(caller,
													psprintf("missed match in case %d: config %s tickets %s",
															 c, config_text, tickets_text));
		}
		MemoryContextSwitchTo(caller);
		MemoryContextReset(per_case);
	}
	MemoryContextDelete(per_case);

	initStringInfo(&out);
	appendStringInfo(&out, "{\"cases\": %d, \"with_valid_match\": %d, \"formed\": %d, "
					 "\"missed\": %d, \"unsound\": %d, \"first_failure\": ",
					 cases, with_match, formed, missed, unsound);
	if (first_failure)
		escape_json(&out, first_failure);
	else
		appendStringInfoString(&out, "null");
	appendStringInfoChar(&out, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(out.data)));
}

Datum
mm_search_backfill(PG_FUNCTION_ARGS)
{
	MmQueueConfig *config = MmParseQueueConfigWith(PG_GETARG_JSONB_P(0), NULL);
	Jsonb	   *members_jb = PG_GETARG_JSONB_P(1);
	ArrayType  *slots_array = PG_GETARG_ARRAYTYPE_P(2);
	Pool	   *members = palloc0(sizeof(Pool));
	Pool	   *candidates = palloc0(sizeof(Pool));
	int		   *member_team;
	Datum	   *slot_datums;
	bool	   *slot_nulls;
	int			nslots;
	int		   *open_slots;
	MmBackfillResult *r;
	StringInfoData out;

	LoadPool(members, config, members_jb);
	/* the candidates intern their regions in the members' context */
	{
		JsonbContainer *root = &PG_GETARG_JSONB_P(3)->root;
		int			n = JsonContainerSize(root);
		MmRuleContext *ctx = &members->context;

		if (n > PROP_MAX_TICKETS)
			elog(ERROR, "at most %d candidates", PROP_MAX_TICKETS);
		candidates->n = n;
		for (int i = 0; i < n; i++)
		{
			JsonbValue *elem = getIthJsonbValueFromContainer(root, i);
			JsonbValue	v;
			JsonbContainer *players;
			MmTicket   *t = &candidates->tickets[i];
			MmPlayerInput *inputs;
			int			np;

			getKeyJsonValueFromContainer(elem->val.binary.data, "players", 7, &v);
			players = v.val.binary.data;
			np = JsonContainerSize(players);
			t->id = i + 1;
			t->nplayers = np;
			t->player_ids = palloc(sizeof(char *) * np);
			inputs = palloc0(sizeof(MmPlayerInput) * np);
			if (getKeyJsonValueFromContainer(elem->val.binary.data, "age_seconds", 11, &v) != NULL &&
				v.type == jbvNumeric)
				t->age_seconds = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
																	NumericGetDatum(v.val.numeric)));
			for (int p = 0; p < np; p++)
			{
				JsonbContainer *obj = getIthJsonbValueFromContainer(players, p)->val.binary.data;

				t->player_ids[p] = psprintf("c%d_%d", i, p);
				inputs[p].id = t->player_ids[p];
				if (getKeyJsonValueFromContainer(obj, "attributes", 10, &v) != NULL && v.type == jbvBinary)
					inputs[p].attributes = v.val.binary.data;
				if (getKeyJsonValueFromContainer(obj, "latencies", 9, &v) != NULL && v.type == jbvBinary)
					inputs[p].latencies = v.val.binary.data;
			}
			MmExtractTicketValues(ctx, t, inputs, np);
		}
	}

	member_team = palloc0(sizeof(int) * Max(members->n, 1));
	{
		JsonbContainer *root = &members_jb->root;

		for (int i = 0; i < members->n; i++)
		{
			JsonbValue *elem = getIthJsonbValueFromContainer(root, i);
			JsonbValue	v;

			if (getKeyJsonValueFromContainer(elem->val.binary.data, "team", 4, &v) != NULL &&
				v.type == jbvNumeric)
				member_team[i] = DatumGetInt32(DirectFunctionCall1(numeric_int4,
																   NumericGetDatum(v.val.numeric)));
			if (config->nteams > 0 && (member_team[i] < 0 || member_team[i] >= config->nteams))
				elog(ERROR, "member %d has no valid team", i);
		}
	}
	deconstruct_array(slots_array, INT4OID, 4, true, TYPALIGN_INT, &slot_datums, &slot_nulls, &nslots);
	if (nslots != Max(config->nteams, 1))
		elog(ERROR, "open_slots needs %d entries", Max(config->nteams, 1));
	open_slots = palloc(sizeof(int) * nslots);
	for (int i = 0; i < nslots; i++)
		open_slots[i] = slot_nulls[i] ? 0 : DatumGetInt32(slot_datums[i]);

	r = MmSearchBackfill(&members->context, members->tickets, members->n, member_team,
						 open_slots, candidates->tickets, candidates->n, NULL, NULL);

	initStringInfo(&out);
	appendStringInfoString(&out, "{\"tickets\": [");
	for (int k = 0; k < r->ntickets; k++)
		appendStringInfo(&out, "%s%d", k > 0 ? ", " : "", r->tickets[k]);
	appendStringInfoString(&out, "], \"teams\": [");
	for (int k = 0; k < r->ntickets; k++)
		appendStringInfo(&out, "%s%d", k > 0 ? ", " : "", r->ticket_team[k]);
	appendStringInfo(&out, "], \"players\": %d, \"filled\": %s, \"region\": ",
					 r->nplayers, r->filled ? "true" : "false");
	if (r->region >= 0)
		escape_json(&out, members->context.regions[r->region]);
	else
		appendStringInfoString(&out, "null");
	appendStringInfo(&out, ", \"quality\": %.4f}", r->ntickets > 0 ? r->quality : 0.0);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(out.data)));
}
