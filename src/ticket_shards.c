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
 * When the queue's shards are elsewhere (a move ended, a call inside a
 * transaction block on the coordinator) the same statements name the
 * distributed tables and Citus routes them.
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

PG_FUNCTION_INFO_V1(mm_create_ticket_on_queue_node);

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
	SPIPlanPtr	insert_pending;	/* the statements on the shards */
	SPIPlanPtr	insert_ticket;
	struct QueueShards *next;
} QueueShards;

/* The same statements on the distributed tables, for shards elsewhere. */
static SPIPlanPtr InsertPendingThroughCitus = NULL;
static SPIPlanPtr InsertTicketThroughCitus = NULL;

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

/* The two writes of a ticket into the given relations (names quoted). */
static void
PrepareWrites(const char *pending, const char *tickets, SPIPlanPtr *insert_pending, SPIPlanPtr *insert_ticket)
{
	Oid			pending_args[3] = {TEXTOID, TEXTOID, INT8OID};
	Oid			ticket_args[4] = {INT8OID, TEXTOID, JSONBOID, TIMESTAMPTZOID};

	if (*insert_ticket != NULL)
		return;
	*insert_pending = KeepPlan(psprintf("INSERT INTO %s (queue, player_id, ticket_id) VALUES ($1, $2, $3)"
										" ON CONFLICT DO NOTHING", pending),
							   3, pending_args);
	*insert_ticket = KeepPlan(psprintf("INSERT INTO %s (id, queue, players, created_at) VALUES ($1, $2, $3, $4)",
									   tickets),
							  4, ticket_args);
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

/* The ids of a ticket's players (validated: strings), in player order. */
static char **
SortedPlayerIds(Jsonb *players, int *count)
{
	int			n = JsonContainerSize(&players->root);
	char	  **ids = palloc(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		JsonbValue *player = getIthJsonbValueFromContainer(&players->root, i);
		JsonbValue *id = getKeyJsonValueFromContainer(player->val.binary.data, "id", 2, NULL);

		ids[i] = pnstrdup(id->val.string.val, id->val.string.len);
	}
	qsort(ids, n, sizeof(char *), CompareStrings);
	*count = n;
	return ids;
}

/*
 * mm.create_ticket_on_queue_node(queue text, players jsonb, now timestamptz)
 *   RETURNS bigint
 *
 * mm.create_ticket on Citus, for a ticket of one queue: validates it, holds
 * its players in the queue's pending claims (a player already pending in
 * the queue is refused by mm.refuse_pending_player, 23505) and writes the
 * ticket, into the queue's shards when they are on this node; returns its
 * id.
 */
Datum
mm_create_ticket_on_queue_node(PG_FUNCTION_ARGS)
{
	text	   *queue_text = PG_GETARG_TEXT_PP(0);
	Jsonb	   *players = PG_GETARG_JSONB_P(1);
	TimestampTz now = PG_GETARG_TIMESTAMPTZ(2);
	char	   *queue = text_to_cstring(queue_text);
	QueueShards *shards;
	SPIPlanPtr	insert_pending;
	SPIPlanPtr	insert_ticket;
	char	  **ids;
	int			nids;
	int64		ticket_id;
	int			rc;

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	shards = ShardsOf(queue);
	if (LockShardHere(shards->shard_id))
	{
		PrepareWrites(shards->pending, shards->tickets, &shards->insert_pending, &shards->insert_ticket);
		if (!OidIsValid(shards->tickets_relid))
			shards->tickets_relid =
				RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(shards->tickets)), NoLock, false);
		insert_pending = shards->insert_pending;
		insert_ticket = shards->insert_ticket;
	}
	else
	{
		PrepareWrites("mm.pending_claims", "mm.tickets_active", &InsertPendingThroughCitus,
					  &InsertTicketThroughCitus);
		insert_pending = InsertPendingThroughCitus;
		insert_ticket = InsertTicketThroughCitus;
	}
	/* the queue's config (42704 for a queue that does not exist) */
	DirectFunctionCall3(mm_validate_ticket, PointerGetDatum(queue_text), PointerGetDatum(players),
						TimestampTzGetDatum(now));
	ticket_id = nextval_internal(get_relname_relid("tickets_id_seq", get_namespace_oid("mm", false)), true);
	ids = SortedPlayerIds(players, &nids);
	for (int i = 0; i < nids; i++)
	{
		Datum		args[3] = {PointerGetDatum(queue_text), CStringGetTextDatum(ids[i]), Int64GetDatum(ticket_id)};

		rc = SPI_execute_plan(insert_pending, args, NULL, false, 0);
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

		rc = SPI_execute_plan(insert_ticket, args, NULL, false, 0);
		if (rc != SPI_OK_INSERT || SPI_processed != 1)
			elog(ERROR, "writing ticket " INT64_FORMAT " failed: %s", ticket_id, SPI_result_code_string(rc));
	}
	SPI_finish();
	PG_RETURN_INT64(ticket_id);
}
