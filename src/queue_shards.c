/*
 * queue_shards.c
 *	  The relations a statement about one queue names: on the Citus node
 *	  that holds the queue, its shards by name, with plans PostgreSQL keeps
 *	  per shard group; on one node, and where the shards are elsewhere, the
 *	  tables themselves.
 *
 * On Citus (docs/scale-out.md) a queue's tables are sharded by queue and
 * co-located: all of one queue's rows sit in one shard of each table, on
 * one node, and the calls by queue are distributed functions that Citus
 * runs there.  Through the distributed tables, Citus plans each statement
 * of such a call again and runs it through its local executor, which costs
 * about as much as a read by key itself; naming the shards, the statement
 * is a plain local one with a kept plan.  The tick (tick_shards.c), a
 * ticket's writes (ticket_shards.c) and the lifecycle's reads by key
 * (ticket_assignment.c) do so.
 *
 * A shard is named only while the call holds the shard's metadata lock in
 * share mode, as Citus's executor takes it for its own writes, and its
 * placement is on this node (MmLockShardHere): a shard move's last step,
 * which takes the lock exclusively, waits for the call, and a call after
 * it sees the shard elsewhere and goes through Citus.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "citus_guard.h"
#include "queue_shards.h"

/* Citus's lock mode number for ShareLock (lock_shard_metadata) */
#define CITUS_SHARE_LOCK 5

/* The tables a call's statements may name by shard; the first locks. */
static const char *const CallTables[] = {
	"tickets_active", "tickets", "tickets_ended", "matches", "match_players", "backfill_requests",
	"pending_claims", "pending_releases"
};
#define NCALL_TABLES lengthof(CallTables)

/* A statement's plan for one set of relations. */
typedef struct KeptPlan
{
	const MmQueueStatement *statement;
	SPIPlanPtr	plan;
	struct KeptPlan *next;
} KeptPlan;

struct MmQueueRelations
{
	/* each of CallTables' shard, qualified; NULL: the tables themselves */
	char	   *shards[NCALL_TABLES];
	KeptPlan   *plans;
	MmQueueRelations *next;
};

/* A queue seen by this backend: its shards (a shard keeps its name when it moves). */
typedef struct KnownQueue
{
	char	   *queue;
	int64		shard_id;		/* the shard of mm.tickets_active */
	Oid			first_relid;	/* once seen here; gone after a reinstall */
	MmQueueRelations *relations;
	struct KnownQueue *next;
} KnownQueue;

/* the queues a backend keeps (any text may be passed as a queue) */
#define MAX_KNOWN_QUEUES 1000

static MmQueueRelations Tables;
static MmQueueRelations *ShardSets = NULL;
static KnownQueue *KnownQueues = NULL;	/* the last used first */
static int	NKnownQueues = 0;
static SPIPlanPtr LockShard = NULL;
static SPIPlanPtr PlacedHere = NULL;

/* Prepares a statement and keeps it for the backend's lifetime. */
SPIPlanPtr
MmKeepPlan(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

/*
 * Takes the shard's metadata lock in share mode (until the transaction
 * ends) and tells whether its placement is on this node, read after the
 * lock in a statement of its own: a move that ended while the lock waited
 * is seen.  A statement that names a shard goes past Citus's executor,
 * which takes this lock for its own writes: holding it, the statement sees
 * or changes the shard before a move's last step (which takes it
 * exclusively) copies the shard's last changes, or it sees that the shard
 * is elsewhere.
 */
bool
MmLockShardHere(int64 shard_id)
{
	Oid			argtypes[2] = {INT4OID, INT8OID};
	Datum		args[2];
	bool		isnull;
	bool		here;
	int			rc;

	if (LockShard == NULL)
	{
		LockShard = MmKeepPlan("SELECT pg_catalog.lock_shard_metadata($1, ARRAY[$2])", 2, argtypes);
		PlacedHere = MmKeepPlan("SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_placement p"
								" WHERE p.shardid OPERATOR(pg_catalog.=) $1"
								" AND p.groupid OPERATOR(pg_catalog.=) (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g))",
								1, argtypes + 1);
	}
	args[0] = Int32GetDatum(CITUS_SHARE_LOCK);
	args[1] = Int64GetDatum(shard_id);
	rc = SPI_execute_plan(LockShard, args, NULL, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "locking shard " INT64_FORMAT " failed: %s", shard_id, SPI_result_code_string(rc));
	/* with the latest snapshot: a transaction's own one predates the wait */
	rc = SPI_execute_snapshot(PlacedHere, args + 1, NULL, GetLatestSnapshot(), InvalidSnapshot, true, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "reading the placement of shard " INT64_FORMAT " failed: %s", shard_id,
			 SPI_result_code_string(rc));
	here = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return !isnull && here;
}

/*
 * The statement sql with each "mm.<table>" of tables named by its shard
 * (not a longer name that starts with it, such as mm.matches_id_seq).
 */
char *
MmNameShards(const char *sql, const char *const *tables, char *const *shards, int ntables)
{
	StringInfoData out;
	const char *p = sql;

	initStringInfo(&out);
	while (*p)
	{
		bool		replaced = false;

		if (strncmp(p, "mm.", 3) == 0 && (p == sql || !(isalnum((unsigned char) p[-1]) || p[-1] == '_')))
		{
			for (int i = 0; i < ntables; i++)
			{
				size_t		len = strlen(tables[i]);
				char		next = p[3 + len];

				if (strncmp(p + 3, tables[i], len) == 0 && !(isalnum((unsigned char) next) || next == '_'))
				{
					appendStringInfoString(&out, shards[i]);
					p += 3 + len;
					replaced = true;
					break;
				}
			}
		}
		if (!replaced)
			appendStringInfoChar(&out, *p++);
	}
	return out.data;
}

/*
 * The shard of each "mm.<table>" of tables that holds the queue, qualified,
 * palloc'd into shards (SPI connected); returns the first one's id.
 */
int64
MmShardsOfQueue(const char *queue, const char *const *tables, int ntables, char **shards)
{
	Oid			argtypes[2] = {TEXTOID, TEXTARRAYOID};
	Datum		args[2];
	Datum	   *names = palloc(sizeof(Datum) * ntables);
	int64		first;
	bool		isnull;
	int			rc;

	for (int i = 0; i < ntables; i++)
		names[i] = CStringGetTextDatum(psprintf("mm.%s", tables[i]));
	args[0] = CStringGetTextDatum(queue);
	args[1] = PointerGetDatum(construct_array(names, ntables, TEXTOID, -1, false, TYPALIGN_INT));
	rc = SPI_execute_with_args("SELECT s.id, pg_catalog.shard_name(CAST(u.t AS pg_catalog.regclass), s.id)"
							   " FROM pg_catalog.unnest($2) WITH ORDINALITY AS u(t, o),"
							   " LATERAL (SELECT pg_catalog.get_shard_id_for_distribution_column("
							   "CAST(u.t AS pg_catalog.regclass), $1) AS id) s ORDER BY u.o",
							   2, argtypes, args, NULL, true, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != (uint64) ntables)
		elog(ERROR, "finding the shards of queue \"%s\" failed: %s", queue, SPI_result_code_string(rc));
	for (int i = 0; i < ntables; i++)
		shards[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	first = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return first;
}

/*
 * The queue's shards, read once per backend (SPI connected), and the set
 * of relations of their shard group.
 */
static KnownQueue *
KnownQueueOf(const char *queue)
{
	char	   *shards[NCALL_TABLES];
	int64		shard_id;
	KnownQueue *entry;
	MmQueueRelations *set;

	for (KnownQueue **link = &KnownQueues; (entry = *link) != NULL; link = &entry->next)
	{
		if (strcmp(entry->queue, queue) != 0)
			continue;
		*link = entry->next;
		if (!OidIsValid(entry->first_relid) ||
			SearchSysCacheExists1(RELOID, ObjectIdGetDatum(entry->first_relid)))
		{
			entry->next = KnownQueues;
			KnownQueues = entry;
			return entry;
		}
		/* the extension was installed again: its shards are new */
		pfree(entry->queue);
		pfree(entry);
		NKnownQueues--;
		break;
	}
	if (NKnownQueues >= MAX_KNOWN_QUEUES)
	{
		/* forget the least recently used */
		KnownQueue **link = &KnownQueues;

		while ((*link)->next != NULL)
			link = &(*link)->next;
		pfree((*link)->queue);
		pfree(*link);
		*link = NULL;
		NKnownQueues--;
	}

	shard_id = MmShardsOfQueue(queue, CallTables, NCALL_TABLES, shards);
	for (set = ShardSets; set != NULL; set = set->next)
		if (strcmp(set->shards[0], shards[0]) == 0)
			break;
	if (set == NULL)
	{
		set = MemoryContextAllocZero(TopMemoryContext, sizeof(MmQueueRelations));
		for (int i = 0; i < (int) NCALL_TABLES; i++)
			set->shards[i] = MemoryContextStrdup(TopMemoryContext, shards[i]);
		set->next = ShardSets;
		ShardSets = set;
	}
	entry = MemoryContextAllocZero(TopMemoryContext, sizeof(KnownQueue));
	entry->queue = MemoryContextStrdup(TopMemoryContext, queue);
	entry->shard_id = shard_id;
	entry->relations = set;
	entry->next = KnownQueues;
	KnownQueues = entry;
	NKnownQueues++;
	return entry;
}

/*
 * The relations that the statements of a call about the queue name (SPI
 * connected): its shards when the tables are distributed and the queue's
 * shard group is on this node (its metadata lock then held until the
 * transaction ends), else the tables.
 */
MmQueueRelations *
MmQueueRelationsOf(const char *queue)
{
	KnownQueue *known;
	const char *local_execution;

	if (!MmTablesAreDistributed())
		return &Tables;
	/*
	 * A statement that names a shard goes past Citus: only where Citus runs
	 * its own statements on this node's shards in this backend (local
	 * execution; a connection of its own to this node would not see the
	 * rows written by name, or would wait on their locks), and for the
	 * tables' owner, whom lock_shard_metadata requires (the extension's
	 * SECURITY DEFINER calls).
	 */
	local_execution = GetConfigOption("citus.enable_local_execution", true, false);
	if (local_execution == NULL || strcmp(local_execution, "on") != 0 ||
		!pg_class_ownercheck(get_relname_relid("tickets_active", get_namespace_oid("mm", false)), GetUserId()))
		return &Tables;
	known = KnownQueueOf(queue);
	if (!MmLockShardHere(known->shard_id))
		return &Tables;
	/* seen here: KnownQueueOf forgets the shards once it is gone (a reinstall) */
	if (!OidIsValid(known->first_relid))
		known->first_relid =
			RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(known->relations->shards[0])),
							 NoLock, false);
	return known->relations;
}

/* Whether the relations are a queue's shards (else the tables). */
bool
MmQueueOnShards(const MmQueueRelations *relations)
{
	return relations->shards[0] != NULL;
}

/* The tables themselves: a statement about rows of other queues too. */
MmQueueRelations *
MmQueueTables(void)
{
	return &Tables;
}

/* The statement's plan for the relations, prepared once per backend. */
SPIPlanPtr
MmQueuePlan(MmQueueRelations *relations, const MmQueueStatement *statement)
{
	KeptPlan   *kept;
	char	   *sql;

	for (kept = relations->plans; kept != NULL; kept = kept->next)
		if (kept->statement == statement)
			return kept->plan;
	sql = relations->shards[0] == NULL ? pstrdup(statement->sql) :
		MmNameShards(statement->sql, CallTables, relations->shards, NCALL_TABLES);
	kept = MemoryContextAlloc(TopMemoryContext, sizeof(KeptPlan));
	kept->statement = statement;
	kept->plan = MmKeepPlan(sql, statement->nargs, (Oid *) statement->argtypes);
	kept->next = relations->plans;
	relations->plans = kept;
	pfree(sql);
	return kept->plan;
}

/*
 * Runs a statement that reads at most one row; true when it found one (in
 * SPI_tuptable).  read_only: the caller's snapshot; otherwise a new one, as
 * a statement of a volatile function takes.
 */
bool
MmQueueReadRow(MmQueueRelations *relations, const MmQueueStatement *statement, Datum *args,
			   bool read_only)
{
	int			rc = SPI_execute_plan(MmQueuePlan(relations, statement), args, NULL, read_only, 1);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading \"%.40s\" failed: %s", statement->sql, SPI_result_code_string(rc));
	return SPI_processed > 0;
}
