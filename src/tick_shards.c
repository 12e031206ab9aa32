/*
 * tick_shards.c
 *	  The relations a queue's tick works on: the tables of schema mm on one
 *	  node, the queue's own shards of them on a Citus worker.
 *
 * On Citus (docs/scale-out.md) the tables of a queue are sharded by queue
 * and co-located, so all of one queue's rows sit in one shard of each table,
 * on one node; mm.tick is a distributed function that Citus runs on that
 * node.  Through the distributed tables, every statement of the tick would
 * go through Citus's planner, which cannot plan them generically and costs a
 * multiple of the local write.  So the tick's statements name the shards
 * themselves: on the node that holds them they are plain local tables, and
 * the plans are PostgreSQL's own, kept per shard group like the one set of
 * one node.  Every statement filters on its queue (checked by
 * test/scripts/check_tick_statements.pl), so none can reach another queue's
 * rows in a shard.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "citus_guard.h"
#include "events.h"
#include "queue_shards.h"
#include "tick_internal.h"

/* The tables of a queue that the tick's statements name. */
static const char *const QueueTables[] = {
	/* first: a set is known by it */
	"tickets_active", "tickets_ended", "ticket_queues", "matches", "match_players",
	"backfill_requests", "rule_evaluations", "autofill_protection", "pending_claims", "pending_releases",
	/* a reference table: its copy on this node, locked here only */
	"queues"
};
#define NQUEUE_TABLES lengthof(QueueTables)

/* One set of relations and the statements prepared for them. */
typedef struct RelationSet
{
	/* the shard of each of QueueTables, qualified; NULL: the tables themselves */
	char	   *shards[NQUEUE_TABLES];
	MmTickPlans plans;
	struct RelationSet *next;
} RelationSet;

static RelationSet LocalTables;
static RelationSet *ShardSets = NULL;
static RelationSet *Current = &LocalTables;

MmTickPlans *MmTickCurrentPlans = &LocalTables.plans;

/*
 * Makes the statements of the next calls those of the relations that hold
 * the queue: the tables on one node, the queue's shards on Citus.  False
 * when the queue's shards are not on this node.
 */
bool
MmTickUseRelationsOf(const char *queue)
{
	char	   *shards[NQUEUE_TABLES];
	RelationSet *set;
	int64		shard_id;
	int			i;

	if (!MmTablesAreDistributed())
	{
		Current = &LocalTables;
		MmTickCurrentPlans = &Current->plans;
		return true;
	}

	/*
	 * the shard of each table that holds the queue, and whether it is here
	 * (a shard that moved away stays until Citus drops it: a relation here
	 * is not enough, its placement is read below)
	 */
	shard_id = MmShardsOfQueue(queue, QueueTables, NQUEUE_TABLES, shards);
	for (i = 0; i < (int) NQUEUE_TABLES; i++)
		if (!OidIsValid(RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(shards[i])),
										 NoLock, true)))
			return false;
	/*
	 * the tick's writes name the shards: it holds the shard's metadata lock,
	 * as a ticket written into them does, so that a move neither loses them
	 * nor lets a tick run on the copy it left behind
	 */
	if (!MmLockShardHere(shard_id))
		return false;

	for (set = ShardSets; set != NULL; set = set->next)
		if (strcmp(set->shards[0], shards[0]) == 0)
			break;
	if (set == NULL)
	{
		set = MemoryContextAllocZero(TopMemoryContext, sizeof(RelationSet));
		for (i = 0; i < (int) NQUEUE_TABLES; i++)
			set->shards[i] = MemoryContextStrdup(TopMemoryContext, shards[i]);
		set->next = ShardSets;
		ShardSets = set;
	}
	Current = set;
	MmTickCurrentPlans = &Current->plans;
	return true;
}

/* Whether the current statements name a queue's shards (on Citus). */
bool
MmTickOnShards(void)
{
	return Current->shards[0] != NULL;
}

/*
 * On Citus, the tick's statements that join a queue's tickets with its
 * pending claims (tick_plans.c) are planned without nested loops, from
 * MmTickPlanPendingClaims to MmTickPlannedPendingClaims around the call
 * that plans them.  A shard's statistics often predate the queue (its name
 * is in none of them; a burst of tickets comes faster than autovacuum's
 * ANALYZE), so the planner expects one row of the queue on each side, and
 * a nested loop over two such scans is quadratic in the queue's new
 * tickets: 835 ms for 765 tickets in one tick.  A hash join is linear
 * whatever the estimates.  Returns the GUC nest level to close (0 on one
 * node, where they do not join).
 */
int
MmTickPlanPendingClaims(void)
{
	int			level;

	if (!MmTickOnShards())
		return 0;
	level = NewGUCNestLevel();
	(void) set_config_option("enable_nestloop", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
MmTickPlannedPendingClaims(int level)
{
	if (level > 0)
		AtEOXact_GUC(true, level);
}

/*
 * On Citus, before the tick reads its queue: the players of the queue's
 * pending tickets (written on this node without their claims,
 * docs/scale-out.md), read here on the queue's shards, are claimed, each in
 * its player's shard, and their cooldowns read by
 * mm.claim_pending_players; a ticket whose player another ticket or a live
 * match holds, or who cools down, is cancelled and announced with the
 * reason (player_busy, cooling_down).  The pending rows of the tickets
 * settled go, here too.
 */
void
MmTickClaimPendingPlayers(const char *queue, TimestampTz now)
{
	static const char *const reasons[] = {"player_busy", "cooling_down"};
	Datum		args[4];
	Datum		settled;
	bool		isnull;
	bool		none;
	ArrayType  *cancelled[lengthof(reasons)] = {NULL, NULL};
	int			planning;
	int			rc,
				i;

	args[0] = CStringGetTextDatum(queue);
	planning = MmTickPlanPendingClaims();
	rc = SPI_execute_plan(MmTickPlan.pending_players, args, NULL, false, 1);
	MmTickPlannedPendingClaims(planning);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "reading the pending players of queue \"%s\" failed: %s", queue, SPI_result_code_string(rc));
	args[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &none);
	args[2] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	settled = PointerGetDatum(construct_empty_array(INT8OID));
	if (!none)
	{
		args[1] = PointerGetDatum(DatumGetArrayTypePCopy(args[1]));
		args[2] = PointerGetDatum(DatumGetArrayTypePCopy(args[2]));
		args[3] = TimestampTzGetDatum(now);
		SPI_freetuptable(SPI_tuptable);
		rc = SPI_execute_plan(MmTickPlan.claim_pending, args, NULL, false, 1);
		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "claiming the players of queue \"%s\" failed: %s", queue, SPI_result_code_string(rc));
		for (i = 0; i < (int) lengthof(reasons); i++)
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1, &isnull);

			cancelled[i] = isnull ? NULL : DatumGetArrayTypePCopy(d);
		}
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);

			if (!isnull)
				settled = PointerGetDatum(DatumGetArrayTypePCopy(d));
		}
	}
	SPI_freetuptable(SPI_tuptable);
	args[1] = settled;
	rc = SPI_execute_plan(MmTickPlan.forget_pending, args, NULL, false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "settling the pending claims of queue \"%s\" failed: %s", queue, SPI_result_code_string(rc));
	for (i = 0; i < (int) lengthof(reasons); i++)
	{
		int			n;

		if (cancelled[i] == NULL)
			continue;
		n = ArrayGetNItems(ARR_NDIM(cancelled[i]), ARR_DIMS(cancelled[i]));
		if (n > 0)
			MmNotifyTicketsWithReason("ticket_cancelled", queue, reasons[i], n,
									  (const int64 *) ARR_DATA_PTR(cancelled[i]));
	}
}

/*
 * On Citus, at the start and the end of the queue's tick: the claims that
 * lifecycle calls and cancellations released in the queue (left to the
 * tick: mm.pending_releases) are dropped, each in its player's shard, by
 * mm.apply_pending_releases.  The tick keeps its connections to the other
 * nodes; a call that Citus runs on this node for the coordinator would
 * open a new one each time.
 */
void
MmTickApplyPendingReleases(const char *queue)
{
	Datum		args[1];
	bool		isnull;
	bool		any;
	int			rc;

	args[0] = CStringGetTextDatum(queue);
	/* most ticks find none: read on this node's shard, without Citus */
	rc = SPI_execute_plan(MmTickPlan.has_releases, args, NULL, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "reading the released claims of queue \"%s\" failed: %s", queue, SPI_result_code_string(rc));
	any = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	if (!any)
		return;
	rc = SPI_execute_plan(MmTickPlan.apply_releases, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "releasing the claims of queue \"%s\" failed: %s", queue, SPI_result_code_string(rc));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * The relation of one of the queue's tables (a name of QueueTables) that
 * the current statements name, looked up each time: an OID kept across
 * calls would outlive a reinstall.
 */
Oid
MmTickRelid(const char *table)
{
	int			i;

	for (i = 0; i < (int) NQUEUE_TABLES && strcmp(QueueTables[i], table) != 0; i++)
		;
	if (i == (int) NQUEUE_TABLES)
		elog(ERROR, "\"%s\" is not a table of the tick", table);
	if (Current->shards[i] != NULL)
		return RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(Current->shards[i])),
								NoLock, false);
	return get_relname_relid(table, get_namespace_oid("mm", false));
}

/*
 * A statement of the tick for the current relations: each "mm.<table>" of
 * a queue's table becomes its shard's name (not a longer name that starts
 * with it, such as mm.matches_id_seq).
 */
char *
MmTickStatementFor(const char *sql)
{
	if (Current->shards[0] == NULL)
		return pstrdup(sql);
	return MmNameShards(sql, QueueTables, Current->shards, NQUEUE_TABLES);
}
