/*
 * tickets.c
 *	  Validation of tickets on their way into mm.tickets.
 *
 * A BEFORE INSERT row trigger checks a ticket's players against its queue's
 * config (parsed by queue_config.c) and fills the columns the tick relies on
 * (status 'searching', player_count).  It runs for mm.create_ticket, a plain
 * INSERT, a multi-row INSERT and COPY alike.  The set-based work that follows
 * (mm.players and mm.ticket_players rows, one active ticket per player) is
 * done by statement-level triggers in SQL (Section: tickets).
 *
 * A bulk load validates many tickets of few queues, and a busy frontend
 * creates one ticket per call in the same few queues, so the parsed configs
 * are cached: within one SQL command without a look at mm.queues (a queue's
 * config cannot change while the command that inserts its tickets runs),
 * and across commands as long as the stored config is byte for byte the one
 * that was parsed.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "json_walk.h"
#include "queue_config.h"
#include "roles.h"
#include "schema_version.h"

PG_FUNCTION_INFO_V1(mm_tickets_validate);
PG_FUNCTION_INFO_V1(mm_validate_ticket);

#define MM_MAX_PLAYER_ID_LENGTH 128
#define MM_MAX_REGIONS 64
#define MM_MAX_REGION_LENGTH 64
#define MM_MAX_TICKET_BYTES (1024 * 1024)

/*
 * A parsed queue config, kept while the stored config is the same bytes: a
 * lookup in another command reads the row again and compares.  A config
 * naming a match function is parsed on every command, as the parse also
 * checks that the function (still) exists.
 */
typedef struct CachedQueueConfig
{
	char	   *name;
	Jsonb	   *raw;			/* the stored config it was parsed from */
	MmQueueConfig *config;
	bool		reusable;		/* no match function to look up again */
	LocalTransactionId lxid;	/* the command that last read the row */
	CommandId	cid;
	MemoryContext context;		/* holds the entry */
	struct CachedQueueConfig *next;
} CachedQueueConfig;

/* bounds the cache of a session that touches many queues */
#define MM_QUEUE_CACHE_MAX 64

static MemoryContext queue_cache_context = NULL;
static CachedQueueConfig *queue_cache = NULL;
static int	queue_cache_size = 0;
static SPIPlanPtr queue_config_plan = NULL;
static Oid	queue_config_copy = InvalidOid;

/*
 * The relation the queue's config is read from: mm.queues, or on a Citus
 * node its local copy (a reference table's placement, written by every
 * change of mm.queues in the same transaction): Citus would plan the read
 * of mm.queues again at every call, which costs more than the rest of a
 * ticket's validation.  *copy is the copy's OID (InvalidOid: mm.queues).
 * Called inside SPI.
 */
static char *
QueuesRelation(Oid *copy)
{
	int			ret;
	char	   *name;

	*copy = InvalidOid;
	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return "mm.queues";
	ret = SPI_execute("SELECT pg_catalog.shard_name(s.logicalrelid, s.shardid)"
					  " FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_partition d USING (logicalrelid)"
					  " JOIN pg_catalog.pg_dist_placement p USING (shardid)"
					  " WHERE s.logicalrelid OPERATOR(pg_catalog.=) CAST('mm.queues' AS pg_catalog.regclass)"
					  " AND d.partmethod OPERATOR(pg_catalog.=) 'n'"
					  " AND p.groupid OPERATOR(pg_catalog.=) (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g)",
					  true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "looking for the local copy of mm.queues failed: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		return "mm.queues";
	name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	*copy = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(name)), NoLock, false);
	return name;
}

/* Drops one entry (unlinked by the caller) with its memory. */
static void
FreeCachedQueueConfig(CachedQueueConfig *entry)
{
	MemoryContextDelete(entry->context);
	queue_cache_size--;
}

/*
 * The parsed config of a queue: from the cache when the same command already
 * read it, or when mm.queues still holds the bytes it was parsed from; else
 * parsed from mm.queues.  Raises 42704 when the queue does not exist.
 *
 * Read without a row lock, on purpose: a ticket validated against the config
 * an mm.alter_queue is replacing is no different from the tickets already
 * searching when the alter commits, which stay and are never re-validated
 * (the tick treats a value a new rule lacks as missing).  A FOR SHARE here
 * would only make every ticket insert wait for an alter and write a row lock
 * on the queue per command.
 */
static MmQueueConfig *
GetQueueConfig(const char *queue)
{
	CommandId	cid = GetCurrentCommandId(false);
	LocalTransactionId lxid = MyProc->lxid;
	CachedQueueConfig *entry;
	CachedQueueConfig **link;
	Datum		arg;
	Datum		config_datum;
	Jsonb	   *stored;
	bool		isnull;
	MemoryContext old_context;
	MemoryContext entry_context;
	int			ret;

	if (queue_cache_context == NULL)
		queue_cache_context = AllocSetContextCreate(TopMemoryContext,
													"mm queue config cache",
													ALLOCSET_SMALL_SIZES);
	for (link = &queue_cache; *link != NULL; link = &(*link)->next)
		if (strcmp((*link)->name, queue) == 0)
			break;
	entry = *link;
	if (entry != NULL && entry->lxid == lxid && entry->cid == cid)
		return entry->config;

	if ((ret = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(ret));
	if (queue_config_plan != NULL && OidIsValid(queue_config_copy) &&
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(queue_config_copy)))
	{
		/* the local copy is gone (the extension was installed again) */
		SPI_freeplan(queue_config_plan);
		queue_config_plan = NULL;
	}
	if (queue_config_plan == NULL)
	{
		Oid			argtypes[1] = {TEXTOID};
		SPIPlanPtr	plan;

		plan = SPI_prepare(psprintf("SELECT config FROM %s WHERE name OPERATOR(pg_catalog.=) $1",
									QueuesRelation(&queue_config_copy)),
						   1, argtypes);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if ((ret = SPI_keepplan(plan)) != 0)
			elog(ERROR, "SPI_keepplan failed: %s", SPI_result_code_string(ret));
		queue_config_plan = plan;
	}
	arg = CStringGetTextDatum(queue);
	ret = SPI_execute_plan(queue_config_plan, &arg, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(ret));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("queue \"%s\" does not exist", queue)));
	config_datum = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "queue \"%s\" has a null config", queue);
	stored = DatumGetJsonbP(config_datum);

	if (entry != NULL && entry->reusable && VARSIZE(stored) == VARSIZE(entry->raw) &&
		memcmp(stored, entry->raw, VARSIZE(stored)) == 0)
	{
		entry->lxid = lxid;
		entry->cid = cid;
	}
	else
	{
		/* a changed (or uncached) config: parse it into a new entry */
		if (entry != NULL)
		{
			*link = entry->next;
			FreeCachedQueueConfig(entry);
		}
		if (queue_cache_size >= MM_QUEUE_CACHE_MAX)
		{
			while (queue_cache != NULL)
			{
				entry = queue_cache;
				queue_cache = entry->next;
				FreeCachedQueueConfig(entry);
			}
		}
		entry_context = AllocSetContextCreate(queue_cache_context, "mm queue config",
											  ALLOCSET_SMALL_SIZES);
		old_context = MemoryContextSwitchTo(entry_context);
		PG_TRY();
		{
			entry = palloc0(sizeof(CachedQueueConfig));
			entry->context = entry_context;
			entry->raw = (Jsonb *) palloc(VARSIZE(stored));
			memcpy(entry->raw, stored, VARSIZE(stored));
			entry->config = MmParseQueueConfig(entry->raw);
			entry->reusable = MmQueueConfigMatchFunction(entry->raw) == NULL;
			entry->name = pstrdup(queue);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(old_context);
			MemoryContextDelete(entry_context);
			PG_RE_THROW();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old_context);
		entry->lxid = lxid;
		entry->cid = cid;
		entry->next = queue_cache;
		queue_cache = entry;
		queue_cache_size++;
	}

	if ((ret = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(ret));
	return entry->config;
}

/*
 * Follows a rule's dotted attribute path in a player's attributes.  Returns
 * false when a key on the way is missing or not an object.
 */
static bool
FindAttribute(JsonbContainer *attributes, const MmRuleConfig *rule, JsonbValue *result)
{
	JsonbContainer *container = attributes;
	int			i;

	for (i = 0; i < rule->attribute_depth; i++)
	{
		const char *key = rule->attribute_path[i];

		if (container == NULL || !JsonContainerIsObject(container))
			return false;
		if (getKeyJsonValueFromContainer(container, key, strlen(key), result) == NULL)
			return false;
		container = result->type == jbvBinary ? result->val.binary.data : NULL;
	}
	return true;
}

/* Pushes a rule's attribute path (attributes.a.b) onto a player's path. */
static void
PushAttributePath(MmJsonPath *path, const MmRuleConfig *rule)
{
	int			i;

	MmJsonPathPushKey(path, "attributes", 10);
	for (i = 0; i < rule->attribute_depth; i++)
		MmJsonPathPushKey(path, rule->attribute_path[i], strlen(rule->attribute_path[i]));
}

/*
 * Checks a player's attributes against the queue's rules: a rule's attribute
 * must have the rule's type (string for string_equality, a list of strings
 * for set_intersection and blocklist, number otherwise), and may be missing
 * only when the rule has a default or "when_missing".
 */
static void
CheckRuleAttributes(MmJsonPath *path, JsonbValue *attributes, const MmQueueConfig *config)
{
	int			i;

	for (i = 0; i < config->nrules; i++)
	{
		const MmRuleConfig *rule = &config->rules[i];
		JsonbValue	value;
		int			old = path->path.len;
		bool		found;

		if ((rule->attribute == NULL && rule->list_attribute == NULL) ||
			rule->source != MM_SOURCE_TICKET)
			continue;
		found = attributes != NULL && FindAttribute(attributes->val.binary.data, rule, &value);
		if (!found)
		{
			/* a player without a blocklist blocks nobody */
			if (rule->has_default || rule->missing_matches_any || rule->type == MM_RULE_BLOCKLIST)
				continue;
			PushAttributePath(path, rule);
			MmJsonError(path, "is required by rule \"%s\"", rule->name);
		}
		PushAttributePath(path, rule);
		if (rule->list_attribute != NULL ||
			(rule->type == MM_RULE_COMPARISON && rule->compare_op == MM_CMP_CONTAINS))
		{
			JsonbIterator *it;
			JsonbValue	elem;
			JsonbIteratorToken tok;

			if (value.type != jbvBinary || !JsonContainerIsArray(value.val.binary.data))
				MmJsonError(path, "must be a list of strings (rule \"%s\")", rule->name);
			it = JsonbIteratorInit(value.val.binary.data);
			while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
				if (tok == WJB_ELEM && elem.type != jbvString)
					MmJsonError(path, "must be a list of strings (rule \"%s\")", rule->name);
		}
		else if (rule->type == MM_RULE_STRING_EQUALITY || rule->reference_string != NULL)
		{
			if (value.type != jbvString)
				MmJsonError(path, "must be a string (rule \"%s\")", rule->name);
		}
		else
		{
			double		x;

			if (value.type != jbvNumeric)
				MmJsonError(path, "must be a number (rule \"%s\")", rule->name);
			x = MmJsonNumericToDouble(value.val.numeric);
			if (!isfinite(x) || fabs(x) > MM_JSON_MAX_NUMBER)
				MmJsonError(path, "must be a number between -1e12 and 1e12 (rule \"%s\")", rule->name);
			if (rule->type == MM_RULE_MATCH_TOTAL && x < 0)
				MmJsonError(path, "must be a number >= 0 (rule \"%s\" adds counts or amounts)", rule->name);
		}
		MmJsonPathPop(path, old);
	}
}

/*
 * Range-checks every number anywhere in a player's attributes (nested objects
 * and arrays included), not only those the queue's rules read now: a rule
 * added later by mm.alter_queue reads the searching tickets as they are, and
 * the rule arithmetic (differences, averages, quality) is only safe for
 * magnitudes up to MM_JSON_MAX_NUMBER.
 */
static void
CheckAttributeNumbers(MmJsonPath *path, JsonbContainer *container)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			index = 0;
	int			old = -1;

	check_stack_depth();
	it = JsonbIteratorInit(container);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			old = MmJsonPathPushKey(path, v.val.string.val, v.val.string.len);
			continue;
		}
		if (tok == WJB_ELEM)
			old = MmJsonPathPushIndex(path, index++);
		else if (tok != WJB_VALUE)
			continue;
		if (v.type == jbvBinary)
			CheckAttributeNumbers(path, v.val.binary.data);
		else if (v.type == jbvNumeric)
		{
			double		x = MmJsonNumericToDouble(v.val.numeric);

			if (!isfinite(x) || fabs(x) > MM_JSON_MAX_NUMBER)
				MmJsonErrorHint(path,
								"Any numeric attribute can become a rule's value when the queue is altered; send larger numbers, such as ids, as strings.",
								"must be a number between -1e12 and 1e12");
		}
		MmJsonPathPop(path, old);
	}
}

/* Checks "latencies": an object of region -> milliseconds >= 0. */
static void
CheckLatencies(MmJsonPath *path, JsonbValue *latencies)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			nregions;

	if (!MmJsonIsObject(latencies))
		MmJsonError(path, "must be an object of region -> milliseconds");
	nregions = JsonContainerSize(latencies->val.binary.data);
	if (nregions > MM_MAX_REGIONS)
		MmJsonError(path, "has %d regions, more than the limit of %d", nregions, MM_MAX_REGIONS);

	it = JsonbIteratorInit(latencies->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		int			old;
		int			nchars;

		if (tok != WJB_KEY)
			continue;
		old = MmJsonPathPushKey(path, v.val.string.val, v.val.string.len);
		nchars = pg_mbstrlen_with_len(v.val.string.val, v.val.string.len);
		if (nchars == 0 || nchars > MM_MAX_REGION_LENGTH)
			MmJsonError(path, "a region name must have 1 to %d characters", MM_MAX_REGION_LENGTH);
		tok = JsonbIteratorNext(&it, &v, true);
		Assert(tok == WJB_VALUE);
		(void) MmJsonNumber(path, &v, 0, false, MM_JSON_MAX_NUMBER);
		MmJsonPathPop(path, old);
	}
}

/*
 * Checks a player's "roles": the roles they accept, most preferred first,
 * each a role of the queue at most once, "fill" (any role) only last.  A
 * queue without roles ignores the list (a ticket may search several
 * queues), but it must still be a list of names.
 */
static void
CheckRoles(MmJsonPath *path, JsonbValue *value, const MmQueueConfig *config, const char *queue)
{
	const MmRolesConfig *roles = config->roles;
	JsonbContainer *list;
	int			n;
	MmRoleMask	seen = 0;

	list = MmJsonArray(path, value, 1, MM_MAX_ROLES + 1, &n);
	for (int k = 0; k < n; k++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(list, k);
		int			o = MmJsonPathPushIndex(path, k);
		char	   *name = MmJsonString(path, v, 1, MM_MAX_NAME_LENGTH);
		int			r;

		if (strcmp(name, "fill") == 0)
		{
			if (k != n - 1)
				MmJsonError(path, "\"fill\" (any role) must come last");
			MmJsonPathPop(path, o);
			break;
		}
		if (roles == NULL)
		{
			MmJsonPathPop(path, o);
			continue;
		}
		r = MmRoleIndex(roles, name, strlen(name));
		if (r < 0)
		{
			StringInfoData known;

			initStringInfo(&known);
			for (int j = 0; j < roles->nroles; j++)
				appendStringInfo(&known, "%s%s", j > 0 ? ", " : "", roles->names[j]);
			MmJsonErrorHint(path, psprintf("The roles of queue \"%s\": %s, or \"fill\".", queue, known.data),
							"unknown role \"%s\"", name);
		}
		if (seen & (1 << r))
			MmJsonError(path, "role \"%s\" is listed twice", name);
		seen |= 1 << r;
		MmJsonPathPop(path, o);
	}
}

/*
 * Validates a ticket's players against its queue's config and returns the
 * number of players.  Errors read "invalid ticket at players[1].id: ...".
 */
static int
ValidatePlayers(Jsonb *players, const MmQueueConfig *config, const char *queue)
{
	MmJsonPath	pathbuf;
	MmJsonPath *path = &pathbuf;
	JsonbValue	root;
	JsonbContainer *array;
	int			count;
	int			i,
				j;
	char	  **ids;
	bool		needs_latencies = false;
	const char *latency_rule = NULL;

	MmJsonPathInit(path, "ticket");
	MmJsonPathPushKey(path, "players", 7);
	if (VARSIZE(players) > MM_MAX_TICKET_BYTES)
		MmJsonError(path, "larger than %d bytes", MM_MAX_TICKET_BYTES);
	MmJsonRoot(players, &root);
	array = MmJsonArray(path, &root, 1, MM_MAX_MATCH_SIZE, &count);
	if (count > config->max_party_size)
		MmJsonErrorHint(path,
						config->nteams > 0 ?
						"A party plays on one team, and the other teams still need their minimum." : NULL,
						"has %d players, more than the largest party queue \"%s\" allows (%d)",
						count, queue, config->max_party_size);

	for (i = 0; i < config->nrules; i++)
		if (config->rules[i].type == MM_RULE_LATENCY)
		{
			needs_latencies = true;
			latency_rule = config->rules[i].name;
			break;
		}

	ids = palloc(sizeof(char *) * count);
	for (i = 0; i < count; i++)
	{
		MmJsonField f[] = {{"id"}, {"attributes"}, {"latencies"}, {"roles"}};
		JsonbValue *player = getIthJsonbValueFromContainer(array, i);
		JsonbValue *v;
		int			old = MmJsonPathPushIndex(path, i);
		int			old2;

		MmJsonReadObject(path, player, f, lengthof(f));

		if (!(v = MmJsonGet(f, lengthof(f), "id")))
		{
			MmJsonPathPushKey(path, "id", 2);
			MmJsonError(path, "is required");
		}
		old2 = MmJsonPathPushKey(path, "id", 2);
		ids[i] = MmJsonString(path, v, 1, MM_MAX_PLAYER_ID_LENGTH);
		for (j = 0; j < i; j++)
			if (strcmp(ids[j], ids[i]) == 0)
				MmJsonError(path, "duplicate player id \"%s\" in the ticket", ids[i]);
		MmJsonPathPop(path, old2);

		if ((v = MmJsonGet(f, lengthof(f), "attributes")))
		{
			old2 = MmJsonPathPushKey(path, "attributes", 10);
			if (!MmJsonIsObject(v))
				MmJsonError(path, "must be an object");
			MmJsonPathPop(path, old2);
		}
		CheckRuleAttributes(path, v, config);
		if (v != NULL)
		{
			old2 = MmJsonPathPushKey(path, "attributes", 10);
			CheckAttributeNumbers(path, v->val.binary.data);
			MmJsonPathPop(path, old2);
		}

		old2 = MmJsonPathPushKey(path, "latencies", 9);
		if ((v = MmJsonGet(f, lengthof(f), "latencies")))
			CheckLatencies(path, v);
		if (needs_latencies && (v == NULL || JsonContainerSize(v->val.binary.data) == 0))
			MmJsonError(path, "at least one region is required by rule \"%s\"", latency_rule);
		MmJsonPathPop(path, old2);

		if ((v = MmJsonGet(f, lengthof(f), "roles")))
		{
			old2 = MmJsonPathPushKey(path, "roles", 5);
			CheckRoles(path, v, config, queue);
			MmJsonPathPop(path, old2);
		}

		MmJsonPathPop(path, old);
	}
	return count;
}

/*
 * The tick computes ages as now - created_at, and the metrics subtract
 * created_at from matched_at: an infinite created_at breaks both.
 */
static void
CheckCreatedAt(TimestampTz created_at)
{
	if (TIMESTAMP_NOT_FINITE(created_at))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ticket created_at must be a finite timestamp"),
				 errhint("mm.create_ticket takes created_at from its now argument.")));
}

/*
 * The BEFORE INSERT row trigger of 0.1's mm.tickets, retired with 0.1: the
 * symbol stays, so that the 0.1 install script still loads for an upgrade,
 * and raises the version error (0.2 on validate in mm_validate_ticket,
 * called by a statement trigger).
 */
Datum
mm_tickets_validate(PG_FUNCTION_ARGS)
{
	MmRetiredEntryPoint("mm.tickets_validate");
}

/*
 * mm.validate_ticket(queue text, players jsonb, created_at timestamptz)
 * RETURNS integer
 *
 * Checks a new ticket against its queue's config, as the statement trigger
 * of mm.tickets does for every inserted row, and returns its player count.
 * Errors name the JSON path of the first problem.
 */
Datum
mm_validate_ticket(PG_FUNCTION_ARGS)
{
	char	   *queue;
	MmQueueConfig *config;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ticket queue must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ticket players must not be null")));
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ticket created_at must not be null")));
	CheckCreatedAt(PG_GETARG_TIMESTAMPTZ(2));
	queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
	config = GetQueueConfig(queue);
	PG_RETURN_INT32(ValidatePlayers(PG_GETARG_JSONB_P(1), config, queue));
}

