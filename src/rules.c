/*
 * rules.c
 *	  The rule machinery: the table of handlers (one per rule type, each in
 *	  its rule_<type>.c), reading a player's attribute, list attributes, and
 *	  what the search calls (rules.h); the steps that reach into one rule
 *	  type's file are rules_match.c's.  Pure C, no SPI.
 *
 * See rules.h for the mechanism.  Missing attributes: a player lacking a
 * rule's attribute takes the rule's `default`; with "when_missing":
 * "match_any" the player imposes nothing on the rule; otherwise the ticket
 * cannot satisfy the rule (it can still match once the rule is off: optional
 * after seconds_until_optional, or a null expansion step).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "json_walk.h"
#include "rules_internal.h"

/*
 * 1 - used/allowed, in [0,1]; a zero threshold met exactly is a perfect 1.
 * A NaN (which finite values never give, but an overflowed sum would) counts
 * as 0, so a quality never leaves [0,1].
 */
double
MmClosenessOf(double used, double allowed)
{
	double		c;

	if (allowed <= 0 || isnan(allowed))
		return 1.0;
	if (isinf(allowed))
		return 1.0;
	c = 1.0 - used / allowed;
	if (!(c >= 0))
		c = 0;
	if (c > 1)
		c = 1;
	return c;
}

/*
 * A jsonb number as a double; false when it is not a finite number or its
 * magnitude exceeds MM_JSON_MAX_NUMBER (what ticket validation allows: a
 * larger value can only come from a ticket stored before the rule existed or
 * past the trigger, and sums of such values overflow to infinities and NaN).
 * Whole numbers within int4 (skills, latencies) take a fast exact path;
 * others go through numeric's text conversion.
 */
bool
MmJsonbNumberValue(const JsonbValue *v, double *result)
{
	double		d;

	if (v == NULL || v->type != jbvNumeric)
		return false;
	if (DatumGetInt32(DirectFunctionCall1(numeric_scale, NumericGetDatum(v->val.numeric))) == 0)
	{
		bool		error = false;
		int32		i = numeric_int4_opt_error(v->val.numeric, &error);

		if (!error)
		{
			*result = (double) i;
			return true;
		}
	}
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
										   NumericGetDatum(v->val.numeric)));
	if (isnan(d) || fabs(d) > MM_JSON_MAX_NUMBER)
		return false;
	*result = d;
	return true;
}

/*
 * A player's value of the rule's attribute (a dotted path into the player's
 * attributes), or NULL.  The source decides where the attributes come from;
 * the later sources (mm.players.attributes, stored ratings) slot in here.
 */
JsonbValue *
MmLookupPlayerValue(const MmRuleConfig *rule, const MmPlayerInput *player,
					JsonbValue *result)
{
	JsonbContainer *container;
	int			i;

	switch (rule->source)
	{
		case MM_SOURCE_TICKET:
			container = player->attributes;
			break;
		case MM_SOURCE_PLAYER:
			container = player->server_attributes;
			break;
		case MM_SOURCE_RATING:
			container = player->rating;
			break;
		default:
			elog(ERROR, "rule \"%s\" has an unknown source", rule->name);
			container = NULL;	/* keep the compiler quiet */
	}
	if (container == NULL || rule->attribute_depth == 0)
		return NULL;

	for (i = 0; i < rule->attribute_depth; i++)
	{
		const char *key = rule->attribute_path[i];

		if (!JsonContainerIsObject(container))
			return NULL;
		if (getKeyJsonValueFromContainer(container, key, strlen(key), result) == NULL)
			return NULL;
		if (i < rule->attribute_depth - 1)
		{
			if (result->type != jbvBinary)
				return NULL;
			container = result->val.binary.data;
		}
	}
	if (rule->attribute_depth == 0)
		return NULL;
	return result;
}

/*
 * Each player's number into numbers (NaN: matches anything); returns the
 * ticket's kind.
 */
MmValueKind
MmReadPlayerNumbers(const MmRuleConfig *rule, const MmPlayerInput *players,
					int nplayers, double *numbers)
{
	MmValueKind kind = MM_VALUE_PRESENT;
	int			present = 0;

	for (int i = 0; i < nplayers; i++)
	{
		JsonbValue	jv;
		double		d;

		if (MmJsonbNumberValue(MmLookupPlayerValue(rule, &players[i], &jv), &d))
			numbers[i] = d;
		else if (rule->has_default && !rule->default_is_string)
			numbers[i] = rule->default_number;
		else if (rule->missing_matches_any)
		{
			numbers[i] = NAN;
			continue;
		}
		else
		{
			numbers[i] = NAN;
			kind = MM_VALUE_MISSING;
			continue;
		}
		present++;
	}
	if (kind != MM_VALUE_MISSING && present == 0)
		kind = MM_VALUE_ANY;
	return kind;
}

/* Each player's number (NaN: matches anything); sets the ticket's kind. */
void
MmExtractPlayerNumbers(MmRuleContext *context, const MmRuleConfig *rule,
					   const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	value->player_values = MmRuleAlloc(context, sizeof(double) * nplayers);
	value->nvalues = nplayers;
	value->kind = MmReadPlayerNumbers(rule, players, nplayers, value->player_values);
}

/* Rules that read nothing from the players (team_size_balance). */
void
MmNoValueExtract(MmRuleContext *context, const MmRuleConfig *rule,
				 const MmPlayerInput *players, int nplayers, MmRuleValue *value)
{
	value->kind = MM_VALUE_PRESENT;
}

/* Sums and comparisons accept or refuse: no degree. */
double
MmPerfectCloseness(const MmRuleContext *context, const MmRuleState *state, double threshold)
{
	return 1.0;
}

/* ---- list attributes: interned strings ------------------------------------ */

/* The index of a string in the context's string table, added when new. */
int
MmInternString(MmRuleContext *context, const char *name, int len)
{
	uint32		mask;
	uint32		slot;
	int			r;

	if (2 * (context->nstrings + 1) > context->string_hash_size)
	{
		int			size = Max(64, 2 * context->string_hash_size);

		if (context->string_hash != NULL)
			pfree(context->string_hash);
		context->string_hash = palloc(sizeof(int) * size);
		memset(context->string_hash, -1, sizeof(int) * size);
		context->string_hash_size = size;
		for (int k = 0; k < context->nstrings; k++)
		{
			const char *n = context->strings[k];

			slot = MmRegionNameHash(n, strlen(n)) & (size - 1);
			while (context->string_hash[slot] >= 0)
				slot = (slot + 1) & (size - 1);
			context->string_hash[slot] = k;
		}
	}
	mask = context->string_hash_size - 1;
	for (slot = MmRegionNameHash(name, len) & mask;
		 (r = context->string_hash[slot]) >= 0;
		 slot = (slot + 1) & mask)
	{
		if (strncmp(context->strings[r], name, len) == 0 && context->strings[r][len] == '\0')
			return r;
	}
	if (context->nstrings == context->strings_allocated)
	{
		context->strings_allocated = Max(16, 2 * context->strings_allocated);
		context->strings = context->strings == NULL ?
			palloc(sizeof(char *) * context->strings_allocated) :
			repalloc(context->strings, sizeof(char *) * context->strings_allocated);
	}
	r = context->nstrings++;
	context->strings[r] = pnstrdup(name, len);
	context->string_hash[slot] = r;
	return r;
}

static int
CompareInts(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/*
 * Sorts ints and drops duplicates; returns the new count.  A list attribute
 * has no length limit but the ticket's size, so O(n log n) (an insertion
 * sort took a second per reversed list of 80,000).
 */
int
MmSortUnique(int *a, int n)
{
	int			out = 0;

	CHECK_FOR_INTERRUPTS();
	qsort(a, n, sizeof(int), CompareInts);
	for (int i = 0; i < n; i++)
		if (out == 0 || a[out - 1] != a[i])
			a[out++] = a[i];
	return out;
}

/*
 * A player's list attribute as interned, sorted, unique ids; false when the
 * player has no list there (a non-list, or a list with a non-string, counts
 * as none).
 */
bool
MmPlayerList(MmRuleContext *context, const MmRuleConfig *rule, const MmPlayerInput *player,
			 int **ids, int *nids)
{
	JsonbValue	jv;
	JsonbValue *found = MmLookupPlayerValue(rule, player, &jv);
	JsonbContainer *list;
	int			n;

	if (found == NULL || found->type != jbvBinary ||
		!JsonContainerIsArray(found->val.binary.data) || JsonContainerIsScalar(found->val.binary.data))
		return false;
	list = found->val.binary.data;
	n = 0;
	*ids = palloc(sizeof(int) * Max(JsonContainerSize(list), 1));
	{
		JsonbIterator *it = JsonbIteratorInit(list);
		JsonbValue	e;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			if (tok != WJB_ELEM)
				continue;
			if (e.type != jbvString)
				return false;
			(*ids)[n++] = MmInternString(context, e.val.string.val, e.val.string.len);
		}
	}
	*nids = MmSortUnique(*ids, n);
	return true;
}

/* Size of the intersection of two sorted int lists (into out when given). */
int
MmIntersectSorted(const int *a, int na, const int *b, int nb, int *out)
{
	int			i = 0,
				j = 0,
				n = 0;

	while (i < na && j < nb)
	{
		if (a[i] < b[j])
			i++;
		else if (a[i] > b[j])
			j++;
		else
		{
			if (out != NULL)
				out[n] = a[i];
			n++;
			i++;
			j++;
		}
	}
	return n;
}

/* ---- the table ------------------------------------------------------------ */

static const MmRuleHandler *const RuleHandlers[] = {
	&MmRuleStringEquality,
	&MmRuleDifference,
	&MmRuleLatency,
	&MmRuleTeamDifference,
	&MmRuleTeamSizeBalance,
	&MmRuleMatchTotal,
	&MmRuleComparison,
	&MmRuleTeamTicketSizeSimilarity,
	&MmRuleCompound,
	&MmRuleSetIntersection,
	&MmRuleBlocklist,
	&MmRuleRoleDifference,
};

/* The handler of a rule type, from the table above. */
const MmRuleHandler *
MmRuleHandlerFor(MmRuleType type)
{
	int			i;

	for (i = 0; i < lengthof(RuleHandlers); i++)
		if (RuleHandlers[i]->type == type)
			return RuleHandlers[i];
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("rule type %d has no handler in the tick", (int) type)));
	return NULL;				/* keep the compiler quiet */
}

/* Starts a per-tick context with no region known yet. */
void
MmRuleContextInit(MmRuleContext *context, const MmQueueConfig *config)
{
	context->config = config;
	context->nregions = 0;
	context->regions_allocated = 8;
	context->regions = palloc(sizeof(char *) * context->regions_allocated);
	context->region_hash_size = 0;
	context->region_hash = NULL;
	context->nstrings = 0;
	context->strings_allocated = 0;
	context->strings = NULL;
	context->string_hash_size = 0;
	context->string_hash = NULL;
	context->arena.context = CurrentMemoryContext;
	context->arena.block = NULL;
	context->arena.used = 0;
	context->arena.size = 0;
}

/* The arena's blocks: the first small (a tick of a few tickets), then doubling. */
#define MM_ARENA_FIRST_BLOCK (8 * 1024)
#define MM_ARENA_MAX_BLOCK (1024 * 1024)
/* larger pieces are palloc'd: they would waste the end of a small block */
#define MM_ARENA_MAX_PIECE (MM_ARENA_FIRST_BLOCK / 4)

/* size bytes from the arena (see rules.h), MAXALIGNed when aligned. */
static void *
ArenaAlloc(MmRuleContext *context, Size size, bool aligned)
{
	MmRuleArena *arena = &context->arena;
	Size		start;

	/*
	 * A piece asked for in another context may have to go before the arena's
	 * (a shorter-lived context): it is palloc'd there.
	 */
	if (arena->context != CurrentMemoryContext || size > MM_ARENA_MAX_PIECE)
		return palloc(size);
	start = aligned ? MAXALIGN(arena->used) : arena->used;
	if (arena->block == NULL || start + size > arena->size)
	{
		/* the rest of the current block, less than a piece, is left unused */
		arena->size = arena->block == NULL ? MM_ARENA_FIRST_BLOCK :
			Min(2 * arena->size, MM_ARENA_MAX_BLOCK);
		arena->block = MemoryContextAlloc(arena->context, arena->size);
		start = 0;
	}
	arena->used = start + size;
	return arena->block + start;
}

/* A piece of a loaded ticket; see rules.h. */
void *
MmRuleAlloc(MmRuleContext *context, Size size)
{
	return ArenaAlloc(context, size, true);
}

/* pnstrdup into the arena; see rules.h. */
char *
MmRuleStrdup(MmRuleContext *context, const char *in, Size len)
{
	char	   *out;

	len = strnlen(in, len);
	out = ArenaAlloc(context, len + 1, false);
	memcpy(out, in, len);
	out[len] = '\0';
	return out;
}

/* Every rule's value of one ticket, through its handler. */
void
MmExtractTicketValues(MmRuleContext *context, MmTicket *ticket,
					  const MmPlayerInput *players, int nplayers)
{
	const MmQueueConfig *config = context->config;
	int			nvalues;
	int			i;

	/*
	 * After the rules' values: strategy balanced's attribute (nrules), then
	 * batching_preference sorted's attributes (nrules + 1 + k), each party
	 * merged as an average.
	 */
	nvalues = Max(config->nrules + (config->balanced || config->nsort > 0 ?
									1 + config->nsort : 0), 1);
	ticket->values = MmRuleAlloc(context, sizeof(MmRuleValue) * nvalues);
	memset(ticket->values, 0, sizeof(MmRuleValue) * nvalues);
	if (config->balanced && config->balanced_rule != NULL)
		MmExtractPlayerNumbers(context, config->balanced_rule, players, nplayers,
							   &ticket->values[config->nrules]);
	for (i = 0; i < config->nsort; i++)
		MmRuleDifference.extract(context, &config->sort_rules[i], players, nplayers,
						  &ticket->values[config->nrules + 1 + i]);
	for (i = 0; i < config->nrules; i++)
	{
		const MmRuleConfig *rule = &config->rules[i];

		MmRuleHandlerFor(rule->type)->extract(context, rule, players, nplayers,
											  &ticket->values[i]);
	}
}

/* The weighted ranking cost of a candidate against an anchor; see rules.h. */
double
MmCandidateCost(const MmRuleContext *context, const MmTicket *anchor,
				const MmTicket *candidate, const bool *rule_on, const double *threshold)
{
	const MmQueueConfig *config = context->config;
	double		cost = 0;

	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];
		const MmRuleHandler *handler;

		if (!rule_on[r] || rule->weight <= 0)
			continue;
		handler = MmRuleHandlerFor(rule->type);
		if (handler->distance == NULL)
			continue;
		cost += rule->weight * handler->distance(context, rule, &anchor->values[r],
												 &candidate->values[r], threshold[r]);
	}
	return cost;
}

/* Starts a rule's state; see rules.h. */
void
MmRuleStateInit(const MmRuleContext *context, const MmRuleConfig *rule, MmRuleState *state)
{
	const MmRuleHandler *h = MmRuleHandlerFor(rule->type);

	state->rule = rule;
	state->broken = false;
	if (h->state_init != NULL)
		h->state_init(context, state);
}

/* Allocates a state's arrays; see rules.h. */
void
MmRuleStateAlloc(MmRuleState *state, int capacity)
{
	state->region_capacity = Max(capacity, 0);
	state->open_region = palloc(sizeof(int) * Max(capacity, 1));
	state->region_worst = palloc(sizeof(double) * Max(capacity, 1));
	state->region_sum = palloc(sizeof(double) * Max(capacity, 1));
	state->region_dist = palloc(sizeof(double) * Max(capacity, 1));
	state->joined = palloc(sizeof(MmRuleValue *) * Max(capacity, 1));
}

/* Copies a state; see rules.h. */
void
MmRuleStateCopy(MmRuleState *dst, const MmRuleState *src)
{
	int		   *open_region = dst->open_region;
	double	   *region_worst = dst->region_worst;
	double	   *region_sum = dst->region_sum;
	double	   *region_dist = dst->region_dist;
	const MmRuleValue **joined = dst->joined;
	int			capacity = dst->region_capacity;

	*dst = *src;
	dst->open_region = open_region;
	dst->region_worst = region_worst;
	dst->region_sum = region_sum;
	dst->region_dist = region_dist;
	dst->joined = joined;
	dst->region_capacity = capacity;
	if (src->nopen > 0 && open_region != NULL)
	{
		memcpy(open_region, src->open_region, sizeof(int) * src->nopen);
		memcpy(region_worst, src->region_worst, sizeof(double) * src->nopen);
		memcpy(region_sum, src->region_sum, sizeof(double) * src->nopen);
		memcpy(region_dist, src->region_dist, sizeof(double) * src->nopen);
	}
	if (src->njoined > 0 && joined != NULL)
		memcpy(joined, src->joined, sizeof(MmRuleValue *) * src->njoined);
}
