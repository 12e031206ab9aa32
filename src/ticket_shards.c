/*
 * ticket_shards.c
 *	  A ticket of one queue written straight into the queue's shards, on the
 *	  Citus node that holds them.
 *
 * On Citus (docs/scale-out.md, "How a ticket is created") mm.create_ticket
 * runs on the queue's node and writes two rows there: the players' pending
 * claims and the ticket.  Through the distributed tables, Citus plans each
 * statement again and runs it through its executor, which costs about as
 * much as the statement itself; here the statements name the shards and
 * keep PostgreSQL's own plans, as the tick does (tick_shards.c).
 *
 * A shard is written here only while it is this node's: the call takes the
 * shard's metadata lock in share mode, as Citus's executor does for a write,
 * so a shard move's final step (which takes it exclusively) waits for the
 * call, and the call, once it has the lock, reads the shard's placement.
 * When the queue's shards are elsewhere (a move ended, a call on the
 * coordinator) the function returns NULL and the caller writes through
 * Citus.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(mm_create_ticket_on_shard);

/* tickets.c */
extern Datum mm_validate_ticket(PG_FUNCTION_ARGS);

/* Citus's lock mode number for ShareLock (lock_shard_metadata) */
#define CITUS_SHARE_LOCK 5

/* The shards of a queue's shard group on this node, and their statements. */
typedef struct QueueShards
{
	char	   *queue;
	int64		shard_id;		/* the shard of mm.tickets_active */
	char	   *tickets;		/* its name */
	char	   *pending;		/* the name of the shard of mm.pending_claims */
	Oid			tickets_relid;	/* the first, once seen here; gone after a reinstall */
	SPIPlanPtr	insert_pending;
	SPIPlanPtr	insert_ticket;
	struct QueueShards *next;
} QueueShards;

static QueueShards *KnownQueues = NULL;
static SPIPlanPtr LockShard = NULL;
static SPIPlanPtr PlacedHere = NULL;
static SPIPlanPtr RefusePending = NULL;

/* Prepares a statement and keeps it for the backend's lifetime. */
static SPIPlanPtr
KeepPlan(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

/*
 * The shards of a queue, found once per backend (a shard keeps its id and
 * name when it moves); their statements are prepared by PrepareWrites
 * once the shards are seen here.
 */
static QueueShards *
ShardsOf(const char *queue)
{
	QueueShards *entry;
	Oid			argtypes[1] = {TEXTOID};
	Datum		arg = CStringGetTextDatum(queue);
	bool		isnull;
	int			rc;

	for (QueueShards **link = &KnownQueues; (entry = *link) != NULL; link = &entry->next)
	{
		if (strcmp(entry->queue, queue) != 0)
			continue;
		if (!OidIsValid(entry->tickets_relid) ||
			SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->tickets_relid)))
			return entry;
		/* the extension was installed again: new shards */
		*link = entry->next;
		SPI_freeplan(entry->insert_pending);
		SPI_freeplan(entry->insert_ticket);
		pfree(entry->queue);
		pfree(entry->tickets);
		pfree(entry->pending);
		pfree(entry);
		break;
	}

	rc = SPI_execute_with_args("SELECT s.t, pg_catalog.shard_name(CAST('mm.tickets_active' AS pg_catalog.regclass), s.t),"
							   " pg_catalog.shard_name(CAST('mm.pending_claims' AS pg_catalog.regclass),"
							   " pg_catalog.get_shard_id_for_distribution_column("
							   "CAST('mm.pending_claims' AS pg_catalog.regclass), $1))"
							   " FROM (SELECT pg_catalog.get_shard_id_for_distribution_column("
							   "CAST('mm.tickets_active' AS pg_catalog.regclass), $1) AS t) s",
							   1, argtypes, &arg, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "finding the shards of queue \"%s\" failed: %s", queue, SPI_result_code_string(rc));
	entry = MemoryContextAllocZero(TopMemoryContext, sizeof(QueueShards));
	entry->shard_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	entry->tickets = MemoryContextStrdup(TopMemoryContext,
										 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
	entry->pending = MemoryContextStrdup(TopMemoryContext,
										 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3));
	SPI_freetuptable(SPI_tuptable);
	entry->queue = MemoryContextStrdup(TopMemoryContext, queue);
	entry->next = KnownQueues;
	KnownQueues = entry;
	return entry;
}

/* The statements of a queue's shards, prepared once they are seen here. */
static void
PrepareWrites(QueueShards *entry)
{
	Oid			pending_args[3] = {TEXTOID, TEXTOID, INT8OID};
	Oid			ticket_args[4] = {INT8OID, TEXTOID, JSONBOID, TIMESTAMPTZOID};

	if (entry->insert_ticket != NULL)
		return;
	/* the names come from Citus (shard_name quotes them) */
	entry->insert_pending =
		KeepPlan(psprintf("INSERT INTO %s (queue, player_id, ticket_id) VALUES ($1, $2, $3)"
						  " ON CONFLICT DO NOTHING", entry->pending),
				 3, pending_args);
	entry->insert_ticket =
		KeepPlan(psprintf("INSERT INTO %s (id, queue, players, created_at) VALUES ($1, $2, $3, $4)",
						  entry->tickets),
				 4, ticket_args);
	entry->tickets_relid = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(entry->tickets)),
											NoLock, false);
}

/*
 * Takes the shard's metadata lock in share mode (until the transaction
 * ends) and tells whether its placement is on this node, read after the
 * lock in a statement of its own: a move that ended while the lock waited
 * is seen.
 */
static bool
LockShardHere(int64 shard_id)
{
	Oid			argtypes[2] = {INT4OID, INT8OID};
	Datum		args[2];
	bool		isnull;
	bool		here;
	int			rc;

	if (LockShard == NULL)
	{
		LockShard = KeepPlan("SELECT pg_catalog.lock_shard_metadata($1, ARRAY[$2])", 2, argtypes);
		PlacedHere = KeepPlan("SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_placement p"
							  " WHERE p.shardid OPERATOR(pg_catalog.=) $1"
							  " AND p.groupid OPERATOR(pg_catalog.=) (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g))",
							  1, argtypes + 1);
	}
	args[0] = Int32GetDatum(CITUS_SHARE_LOCK);
	args[1] = Int64GetDatum(shard_id);
	rc = SPI_execute_plan(LockShard, args, NULL, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "locking shard " INT64_FORMAT " failed: %s", shard_id, SPI_result_code_string(rc));
	rc = SPI_execute_plan(PlacedHere, args + 1, NULL, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "reading the placement of shard " INT64_FORMAT " failed: %s", shard_id,
			 SPI_result_code_string(rc));
	here = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return !isnull && here;
}

/* qsort comparator of C strings */
static int
CompareStrings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The ids of a ticket's players (validated), in player order. */
static char **
SortedPlayerIds(Jsonb *players, int *count)
{
	JsonbIterator *it = JsonbIteratorInit(&players->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			depth = 0;
	int			n = 0;
	int			allocated = 8;
	char	  **ids = palloc(sizeof(char *) * allocated);
	bool		next_is_id = false;

	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_BEGIN_OBJECT || tok == WJB_BEGIN_ARRAY)
			depth++;
		else if (tok == WJB_END_OBJECT || tok == WJB_END_ARRAY)
			depth--;
		else if (tok == WJB_KEY && depth == 2)
			next_is_id = v.val.string.len == 2 && memcmp(v.val.string.val, "id", 2) == 0;
		else if (tok == WJB_VALUE && depth == 2 && next_is_id && v.type == jbvString)
		{
			if (n == allocated)
			{
				allocated *= 2;
				ids = repalloc(ids, sizeof(char *) * allocated);
			}
			ids[n++] = pnstrdup(v.val.string.val, v.val.string.len);
		}
	}
	qsort(ids, n, sizeof(char *), CompareStrings);
	*count = n;
	return ids;
}

/*
 * mm.create_ticket_on_shard(queue text, players jsonb, now timestamptz)
 *   RETURNS bigint
 *
 * On the Citus node that holds the queue's shards: validates the ticket,
 * holds its players in the queue's pending claims (a player already
 * pending in the queue is refused by mm.refuse_pending_player, 23505) and
 * writes the ticket; returns its id.  NULL, having written nothing, when
 * the shards are not on this node.
 */
Datum
mm_create_ticket_on_shard(PG_FUNCTION_ARGS)
{
	text	   *queue_text = PG_GETARG_TEXT_PP(0);
	Jsonb	   *players = PG_GETARG_JSONB_P(1);
	TimestampTz now = PG_GETARG_TIMESTAMPTZ(2);
	char	   *queue = text_to_cstring(queue_text);
	QueueShards *shards;
	char	  **ids;
	int			nids;
	int64		ticket_id;
	int			rc;

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	shards = ShardsOf(queue);
	if (!LockShardHere(shards->shard_id))
	{
		SPI_finish();
		PG_RETURN_NULL();
	}
	PrepareWrites(shards);
	/* the queue's config (42704 for a queue that does not exist) */
	DirectFunctionCall3(mm_validate_ticket, PointerGetDatum(queue_text), PointerGetDatum(players),
						TimestampTzGetDatum(now));
	ticket_id = nextval_internal(get_relname_relid("tickets_id_seq", get_namespace_oid("mm", false)), true);
	ids = SortedPlayerIds(players, &nids);
	for (int i = 0; i < nids; i++)
	{
		Datum		args[3] = {PointerGetDatum(queue_text), CStringGetTextDatum(ids[i]), Int64GetDatum(ticket_id)};

		rc = SPI_execute_plan(shards->insert_pending, args, NULL, false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "holding player \"%s\" failed: %s", ids[i], SPI_result_code_string(rc));
		if (SPI_processed == 0)
		{
			Oid			argtypes[2] = {TEXTOID, TEXTOID};

			if (RefusePending == NULL)
				RefusePending = KeepPlan("SELECT mm.refuse_pending_player($1, $2)", 2, argtypes);
			/* raises 23505, naming the ticket that holds the player */
			SPI_execute_plan(RefusePending, args, NULL, false, 0);
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("player \"%s\" already has an active ticket", ids[i])));
		}
	}
	{
		Datum		args[4] = {Int64GetDatum(ticket_id), PointerGetDatum(queue_text), PointerGetDatum(players),
		TimestampTzGetDatum(now)};

		rc = SPI_execute_plan(shards->insert_ticket, args, NULL, false, 0);
		if (rc != SPI_OK_INSERT || SPI_processed != 1)
			elog(ERROR, "writing ticket " INT64_FORMAT " failed: %s", ticket_id, SPI_result_code_string(rc));
	}
	SPI_finish();
	PG_RETURN_INT64(ticket_id);
}
