/*
 * player_sources.c
 *	  Trusted values for the rules: a rule with "source": "player" reads the
 *	  player's mm.players.attributes (written by the server with
 *	  mm.set_player_attributes), one with "source": "rating" the player's
 *	  stored rating in the queue's rating pool (mm.ratings; the system's
 *	  defaults for a player without one).  A client cannot send either.
 *
 * A role queue's players also bring their autofill protection
 * (mm.autofill_protection) and, with per-role ratings, their rating in each
 * role (pool "<pool>.<role>").
 *
 * The tick loads them once per queue for all the players it loaded, in
 * set-based queries, and hands each player's containers to the rules
 * through MmPlayerInput.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "player_sources.h"
#include "sql_arrays.h"

/*
 * A player's stored values, keyed by the player id itself (a pointer to the
 * whole string: ids of 128 characters may take 512 bytes, and a fixed key
 * would either cut them, making two players one, or cost that much per
 * player).
 */
typedef struct SourceEntry
{
	const char *player_id;		/* the key */
	Jsonb	   *attributes;		/* NULL: no mm.players row */
	Jsonb	   *rating;			/* NULL: unrated (the defaults apply) */
	bool		autofill_protected;
	Jsonb	   *role_rating[MM_MAX_ROLES];	/* NULL: unrated in that role */
} SourceEntry;

struct MmPlayerSources
{
	HTAB	   *players;
	Jsonb	   *default_rating; /* the system's defaults, for the unrated */
	const MmRolesConfig *roles; /* per-role ratings: the queue's roles */
};

/* What a lookup's rows are (column 1 the player id, 2 a jsonb, 3 a pool). */
typedef enum SourceKind
{
	SOURCE_ATTRIBUTES,
	SOURCE_RATINGS,
	SOURCE_ROLE_RATINGS,
	SOURCE_PROTECTION
} SourceKind;

static uint32
IdHash(const void *key, Size keysize)
{
	const char *id = *(const char *const *) key;

	return string_hash(id, strlen(id) + 1);
}

static int
IdMatch(const void *key1, const void *key2, Size keysize)
{
	return strcmp(*(const char *const *) key1, *(const char *const *) key2);
}

static SPIPlanPtr PlanAttributes = NULL;
static SPIPlanPtr PlanRatings = NULL;
static SPIPlanPtr PlanRoleRatings = NULL;
static SPIPlanPtr PlanProtection = NULL;

bool
MmConfigReadsPlayerSources(const MmQueueConfig *config)
{
	int			r;

	for (r = 0; r < config->nrules; r++)
		if (config->rules[r].source != MM_SOURCE_TICKET)
			return true;
	return config->roles != NULL && config->roles->autofill && config->roles->protect_games > 0;
}

static bool
ConfigReads(const MmQueueConfig *config, MmRuleSource source)
{
	int			r;

	for (r = 0; r < config->nrules; r++)
		if (config->rules[r].source == source)
			return true;
	return false;
}

/* Prepares a statement once per backend. */
static SPIPlanPtr
Prepare(SPIPlanPtr *slot, const char *sql, int nargs, Oid *argtypes)
{
	if (*slot == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "preparing \"%s\" failed: %s", sql, SPI_result_code_string(SPI_result));
		*slot = plan;
	}
	return *slot;
}

/*
 * A player's entry, made on first sight; player_id is kept as the key, so it
 * must live as long as the table (Fill copies it into the table's context).
 */
static SourceEntry *
Entry(HTAB *players, const char *player_id)
{
	bool		found;
	SourceEntry *e;

	e = hash_search(players, &player_id, HASH_ENTER, &found);
	if (!found)
	{
		e->player_id = player_id;
		e->attributes = NULL;
		e->rating = NULL;
		e->autofill_protected = false;
		memset(e->role_rating, 0, sizeof(e->role_rating));
	}
	return e;
}

/* Runs one of the lookups and files each row's jsonb (column 2) under its player. */
static void
Fill(MmPlayerSources *sources, SPIPlanPtr plan, Datum *values, SourceKind kind)
{
	MemoryContext caller = CurrentMemoryContext;
	uint64		i;
	int			rc = SPI_execute_plan(plan, values, NULL, true, 0);

	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading players' %s failed: %s",
			 kind == SOURCE_ATTRIBUTES ? "attributes" :
			 kind == SOURCE_PROTECTION ? "autofill protection" : "ratings",
			 SPI_result_code_string(rc));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		char	   *id = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
														   1, &isnull));
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
		SourceEntry *e = Entry(sources->players, id);

		if (kind == SOURCE_PROTECTION)
		{
			e->autofill_protected = true;
			continue;
		}
		if (isnull)
			continue;
		if (kind == SOURCE_RATINGS)
			e->rating = DatumGetJsonbPCopy(d);
		else if (kind == SOURCE_ROLE_RATINGS)
		{
			/* the pool is "<pool>.<role>": the role follows the last '.' */
			char	   *pool = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[i],
																 SPI_tuptable->tupdesc, 3, &isnull));
			char	   *dot = strrchr(pool, '.');
			int			r = dot ? MmRoleIndex(sources->roles, dot + 1, strlen(dot + 1)) : -1;

			if (r >= 0)
				e->role_rating[r] = DatumGetJsonbPCopy(d);
		}
		else
			e->attributes = DatumGetJsonbPCopy(d);
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);
}

MmPlayerSources *
MmLoadPlayerSources(const MmQueueConfig *config, const char *queue,
					const char **player_ids, int nplayers)
{
	MmPlayerSources *sources = palloc0(sizeof(MmPlayerSources));
	HASHCTL		ctl;
	Datum		values[2];
	Oid			ids_arg[] = {TEXTARRAYOID};
	Oid			ratings_args[] = {TEXTARRAYOID, TEXTOID};
	Oid			role_ratings_args[] = {TEXTARRAYOID, TEXTARRAYOID};
	const MmRolesConfig *roles = config->roles;
	ArrayType  *ids = MmBuildTextArray(player_ids, nplayers);
	const char *system = config->rating_system;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(const char *);
	ctl.entrysize = sizeof(SourceEntry);
	ctl.hash = IdHash;
	ctl.match = IdMatch;
	ctl.hcxt = CurrentMemoryContext;
	sources->players = hash_create("mm player sources", Max(nplayers, 16), &ctl,
								   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);

	values[0] = PointerGetDatum(ids);
	if (ConfigReads(config, MM_SOURCE_PLAYER))
		Fill(sources,
			 Prepare(&PlanAttributes,
					 "SELECT id, attributes FROM mm.players WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
					 1, ids_arg),
			 values, SOURCE_ATTRIBUTES);
	if (roles != NULL && roles->autofill && roles->protect_games > 0)
	{
		values[1] = CStringGetTextDatum(queue);
		Fill(sources,
			 Prepare(&PlanProtection,
					 "SELECT player_id, NULL::pg_catalog.jsonb FROM mm.autofill_protection"
					 " WHERE queue OPERATOR(pg_catalog.=) $2 AND games_left OPERATOR(pg_catalog.>) 0"
					 " AND player_id OPERATOR(pg_catalog.=) ANY ($1)",
					 2, ratings_args),
			 values, SOURCE_PROTECTION);
	}
	if (ConfigReads(config, MM_SOURCE_RATING) && system != NULL && roles != NULL &&
		roles->per_role_rating)
	{
		const char *pool = config->rating_pool ? config->rating_pool : queue;
		const char *pools[MM_MAX_ROLES];

		for (int r = 0; r < roles->nroles; r++)
			pools[r] = psprintf("%s.%s", pool, roles->names[r]);
		sources->roles = roles;
		values[1] = PointerGetDatum(MmBuildTextArray(pools, roles->nroles));
		Fill(sources,
			 Prepare(&PlanRoleRatings,
					 "SELECT player_id, pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object("
					 "'rating', COALESCE(rating, mu), 'rd', rd, 'mu', mu, 'sigma', sigma)), pool"
					 " FROM mm.ratings WHERE pool OPERATOR(pg_catalog.=) ANY ($2)"
					 " AND player_id OPERATOR(pg_catalog.=) ANY ($1)",
					 2, role_ratings_args),
			 values, SOURCE_ROLE_RATINGS);
	}
	else if (ConfigReads(config, MM_SOURCE_RATING) && system != NULL)
	{
		/* OpenSkill stores mu and sigma: its "rating" is mu */
		values[1] = CStringGetTextDatum(config->rating_pool ? config->rating_pool : queue);
		Fill(sources,
			 Prepare(&PlanRatings,
					 "SELECT player_id, pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object("
					 "'rating', COALESCE(rating, mu), 'rd', rd, 'mu', mu, 'sigma', sigma))"
					 " FROM mm.ratings WHERE pool OPERATOR(pg_catalog.=) $2"
					 " AND player_id OPERATOR(pg_catalog.=) ANY ($1)",
					 2, ratings_args),
			 values, SOURCE_RATINGS);
	}
	if (ConfigReads(config, MM_SOURCE_RATING) && system != NULL)
	{
		/* the defaults mm.report_result starts a player from */
		sources->default_rating = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(
			strcmp(system, "glicko2") == 0 ? "{\"rating\": 1500, \"rd\": 350}" :
			strcmp(system, "elo") == 0 ? "{\"rating\": 1500}" :
			"{\"rating\": 25, \"mu\": 25, \"sigma\": 8.333333333333334}")));
	}
	return sources;
}

void
MmApplyPlayerSources(const MmPlayerSources *sources, MmPlayerInput *player)
{
	const char *key = player->id;
	SourceEntry *e;

	player->server_attributes = NULL;
	player->rating = sources->default_rating ? &sources->default_rating->root : NULL;
	player->autofill_protected = false;
	for (int r = 0; r < MM_MAX_ROLES; r++)
		player->role_rating[r] = player->rating;
	e = hash_search(sources->players, &key, HASH_FIND, NULL);
	if (e == NULL)
		return;
	if (e->attributes)
		player->server_attributes = &e->attributes->root;
	if (e->rating)
		player->rating = &e->rating->root;
	player->autofill_protected = e->autofill_protected;
	if (sources->roles != NULL)
	{
		int			first = -1;

		for (int r = 0; r < sources->roles->nroles; r++)
			if (e->role_rating[r])
				player->role_rating[r] = &e->role_rating[r]->root;
		/* the rating of the role being considered: the first listed */
		if (player->roles != NULL)
		{
			JsonbValue *v = getIthJsonbValueFromContainer(player->roles, 0);

			if (v != NULL && v->type == jbvString)
				first = MmRoleIndex(sources->roles, v->val.string.val, v->val.string.len);
		}
		/* any role: the first one rated */
		for (int r = 0; first < 0 && r < sources->roles->nroles; r++)
			if (e->role_rating[r])
				first = r;
		if (first >= 0)
			player->rating = player->role_rating[first];
	}
}
