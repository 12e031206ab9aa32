/*
 * tick.c
 *	  mm.tick(): forms matches in one queue or all, in the caller's
 *	  transaction; mm.last_tick_stats(): what the last one did.
 *
 * Per queue (TickQueue): a transaction-level lock that SQL cannot take
 * (queue_locks.h; a concurrent tick of the same queue returns 0 at once), the queue's config read FOR
 * SHARE (mm.alter_queue and mm.drop_queue wait for the tick's commit), what
 * ends before the search (tick_expiry.c), the searching tickets loaded and
 * locked (tick_load.c), the open backfill requests served
 * (tick_backfill.c), the search (match_search.c, pure C, or the queue's
 * match function, match_function.c), and the matches written in bulk with
 * their events, which PostgreSQL sends at commit (tick_write.c).  Every
 * statement is prepared once per backend (tick_plans.c), for the schema
 * version the library serves, which mm.tick checks first
 * (schema_version.c).  In all-queues mode each queue runs in its own
 * subtransaction.
 *
 * Memory: everything of one queue lives in a per-queue context deleted when
 * the queue is done, so nothing grows across queues or calls.
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "citus_guard.h"
#include "events.h"
#include "fairness.h"
#include "match_function.h"
#include "queue_locks.h"
#include "schema_version.h"
#include "tick_internal.h"

PG_FUNCTION_INFO_V1(mm_tick);
PG_FUNCTION_INFO_V1(mm_last_tick_stats);

/* Seed of the tick lock's key (queue_locks.h): one key per queue name. */
#define MM_TICK_LOCK_SEED UINT64CONST(0x6d6d5f7469636b)

/*
 * The work_mem the tick's statements run with, at least: their bulk writes
 * unnest arrays as long as the queue, whose rows PostgreSQL materialises,
 * and below this they would spill to temporary files.
 */
#define MM_TICK_WORK_MEM_KB 65536

static MmTickStats *LastStats = NULL;
static int	LastStatsCount = 0;
static int	LastStatsAllocated = 0;

/* Whether this backend is inside mm.tick: a nested call is refused. */
static bool TickRunning = false;

static int	RunTick(FunctionCallInfo fcinfo, TimestampTz now, MemoryContext caller_context);

/* Milliseconds since a start time. */
static double
ElapsedMs(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* A new stats row for a queue of this call. */
static MmTickStats *
NewStats(const char *queue)
{
	MmTickStats *stats;

	if (LastStatsCount == LastStatsAllocated)
	{
		/* the capacity changes only once the memory is there (an out of memory error) */
		int			allocated = Max(8, LastStatsAllocated * 2);

		if (LastStats == NULL)
			LastStats = MemoryContextAlloc(TopMemoryContext, sizeof(MmTickStats) * allocated);
		else
			LastStats = repalloc(LastStats, sizeof(MmTickStats) * allocated);
		LastStatsAllocated = allocated;
	}
	stats = &LastStats[LastStatsCount++];
	memset(stats, 0, sizeof(*stats));
	strlcpy(stats->queue, queue, sizeof(stats->queue));
	return stats;
}

/* Whether a member of the queue's config is false. */
static bool
ConfigIsFalse(Jsonb *config, const char *key)
{
	JsonbValue	v;

	return getKeyJsonValueFromContainer(&config->root, key, strlen(key), &v) != NULL &&
		v.type == jbvBool && !v.val.boolean;
}

/*
 * Reads the queue's config (FOR SHARE) into q.  False when the queue does
 * not exist (dropped while an all-queues tick ticked the others).
 */
static bool
ReadQueueConfig(MmTickQueue *q)
{
	Datum		values[1];
	bool		isnull;
	int			rc;

	values[0] = CStringGetTextDatum(q->queue);
	rc = SPI_execute_plan(MmTickPlan.queue_config, values, NULL, false, 1);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading queue config failed: %s", SPI_result_code_string(rc));
	if (SPI_processed == 0)
		return false;
	q->config_jsonb = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0],
													   SPI_tuptable->tupdesc, 1, &isnull));
	q->match_function_role = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	SPI_freetuptable(SPI_tuptable);
	q->config = MmParseQueueConfig(q->config_jsonb);
	q->match_function = MmQueueConfigMatchFunction(q->config_jsonb);
	return true;
}

/*
 * Ticks one queue, in queue_context (the caller's to delete); returns the
 * matches formed.
 */
static int
TickQueue(const char *queue, TimestampTz now, bool must_exist, bool expire_proposals,
		  MemoryContext queue_context)
{
	MemoryContext old_context;
	MmTickQueue q;
	MmSearchResult *result;
	char	  **properties = NULL;
	instr_time	start;
	int64		key;
	LOCKTAG		tag;

	memset(&q, 0, sizeof(q));
	q.queue = queue;
	q.now = now;
	q.context = queue_context;
	q.stats = NewStats(queue);

	key = (int64) hash_bytes_extended((const unsigned char *) queue, strlen(queue),
									  MM_TICK_LOCK_SEED);
	MmSetQueueLockTag(&tag, key, MM_LOCK_TICK);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
	{
		q.stats->locked_out = true;
		return 0;
	}
	old_context = MemoryContextSwitchTo(queue_context);

	INSTR_TIME_SET_CURRENT(start);
	/* on Citus, the queue's shards: here, or another node's queue */
	if (!MmTickUseRelationsOf(queue))
	{
		if (must_exist)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the shards of queue \"%s\" are not on this node", queue),
					 errhint("Call mm.tick on the coordinator, which runs it on the queue's node, "
							 "or on the node that mm.queue_node(queue) names.")));
		MemoryContextSwitchTo(old_context);
		return 0;
	}
	MmTickPreparePlans();
	if (!ReadQueueConfig(&q))
	{
		if (must_exist)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("queue \"%s\" does not exist", queue)));
		/* dropped while we were ticking the others */
		MemoryContextSwitchTo(old_context);
		return 0;
	}

	if (MmTickOnShards())
	{
		MmTickApplyPendingReleases(queue);
		MmTickClaimPendingPlayers(queue, now);
	}
	if (expire_proposals)
		MmTickExpireProposals(&q, now);
	q.stats->tickets_timed_out = MmTickTimeOutTickets(&q);
	MmTickCancelSilentTickets(&q);
	MmTickExpireLiveMatches(&q);
	MmRuleContextInit(&q.rules, q.config);
	MmTickLoadTickets(&q, q.match_function != NULL);
	MmTickServeBackfills(&q);
	q.stats->tickets_loaded = q.ntickets;
	q.stats->load_ms = ElapsedMs(start);

	INSTR_TIME_SET_CURRENT(start);
	if (q.match_function)
		result = MmRunMatchFunction(&q.rules, queue, q.match_function, q.match_function_role,
									!ConfigIsFalse(q.config_jsonb, "rules_apply_to_proposals"),
									q.tickets, q.raw_players, q.raw_created, q.ntickets, now,
									&properties);
	else
		result = MmSearchMatches(&q.rules, q.tickets, q.ntickets);
	q.stats->compute_ms = ElapsedMs(start);
	/* the search's structures were freed on return: count them at their peak */
	q.stats->memory_bytes = MemoryContextMemAllocated(queue_context, true) + result->scratch_bytes;

	INSTR_TIME_SET_CURRENT(start);
	if (result->nmatches > 0)
	{
		MmTickWriteMatches(&q, result, properties);
		/* a rated queue keeps each match's prediction (docs/fairness.md) */
		if (MmFairnessQueueIsRated(q.config_jsonb))
		{
			MmFairnessRecordPredictions(queue, now);
			MmTickBackToQueue(&q);
		}
	}
	MmTickWriteRuleStats(&q, result);
	/* the claims this tick's cancellations released */
	if (MmTickOnShards())
		MmTickApplyPendingReleases(queue);
	q.stats->write_ms = ElapsedMs(start);
	MmTickNoteMemoryPeak(&q);
	q.stats->memory_bytes = Max(q.stats->memory_bytes, q.peak_bytes);
	q.stats->matches = result->nmatches;

	MemoryContextSwitchTo(old_context);
	return result->nmatches;
}

/* The memory context of one queue's tick. */
static MemoryContext
NewQueueContext(MemoryContext parent)
{
	return AllocSetContextCreate(parent, "mm tick queue", ALLOCSET_DEFAULT_SIZES);
}

/*
 * Ticks one queue of an all-queues tick in a subtransaction, so that a queue
 * that fails (bad data, a constraint the matches violate) cannot stop the
 * others: its writes and events are rolled back and the error becomes a
 * WARNING naming the queue.  A cancel or statement timeout still ends the
 * whole tick.  This is the pattern of PL/pgSQL's exception blocks: the SPI
 * connection made outside survives the subtransaction's abort (spi.c drops
 * only what the subtransaction made), and the caller's memory context and
 * resource owner are restored on both paths.
 */
static int
TickQueueGuarded(const char *queue, TimestampTz now, bool expire_proposals,
				 MemoryContext caller_context)
{
	MemoryContext old_context = CurrentMemoryContext;
	ResourceOwner old_owner = CurrentResourceOwner;
	volatile int matches = 0;
	int			stats_index = LastStatsCount;
	int			proposal_stats_count = MmMatchFunctionStatsCount();
	MemoryContext queue_context = NewQueueContext(caller_context);

	BeginInternalSubTransaction(NULL);
	/* run in the caller's context, not the subtransaction's */
	MemoryContextSwitchTo(old_context);
	PG_TRY();
	{
		matches = TickQueue(queue, now, false, expire_proposals, queue_context);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(old_context);
		CurrentResourceOwner = old_owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(old_context);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(old_context);
		CurrentResourceOwner = old_owner;
		/* nothing of the queue's tick remains: neither do its counts */
		if (LastStatsCount > stats_index)
		{
			MmTickStats *stats = &LastStats[stats_index];
			char		name[MM_MAX_NAME_LENGTH + 1];

			strlcpy(name, stats->queue, sizeof(name));
			memset(stats, 0, sizeof(*stats));
			strlcpy(stats->queue, name, sizeof(stats->queue));
			LastStatsCount = stats_index + 1;
		}
		MmMatchFunctionStatsTruncate(proposal_stats_count);
		/* like PL/pgSQL's OTHERS, never swallow a cancel */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			ReThrowError(edata);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("mm.tick skipped queue \"%s\": %s", queue, edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) :
				 errdetail("The tick of this queue was rolled back; the other queues were ticked."),
				 edata->hint ? errhint("%s", edata->hint) : 0));
		FreeErrorData(edata);
		matches = 0;
	}
	PG_END_TRY();
	MemoryContextDelete(queue_context);
	return matches;
}

/*
 * mm.tick(queue text DEFAULT NULL, now timestamptz DEFAULT now()) RETURNS integer
 *
 * Forms matches in one queue (all queues, by name, when queue is NULL) and
 * returns how many.  An unknown queue is an error; a queue another tick is
 * working on counts 0.  With all queues, a queue whose tick fails is rolled
 * back alone and reported as a WARNING (TickQueueGuarded); a single queue's
 * failure is the caller's error.
 */
Datum
mm_tick(PG_FUNCTION_ARGS)
{
	MemoryContext caller_context = CurrentMemoryContext;
	TimestampTz now;
	volatile int total = 0;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("now must not be null")));
	now = PG_GETARG_TIMESTAMPTZ(1);
	if (TIMESTAMP_NOT_FINITE(now))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("now must be a finite timestamp")));

	/* the statics of a tick (its stats, the match function's counts) are one tick's */
	if (TickRunning)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mm.tick cannot be called inside a tick"),
				 errdetail("A match function or a trigger on the tick's tables called it.")));
	TickRunning = true;
	PG_TRY();
	{
		total = RunTick(fcinfo, now, caller_context);
	}
	PG_CATCH();
	{
		/* nothing of a failed tick remains: neither do its counts */
		TickRunning = false;
		LastStatsCount = 0;
		MmMatchFunctionStatsReset();
		PG_RE_THROW();
	}
	PG_END_TRY();
	TickRunning = false;
	PG_RETURN_INT32(total);
}

/* mm_tick once its arguments are checked: one queue, or every queue */
static int
RunTick(FunctionCallInfo fcinfo, TimestampTz now, MemoryContext caller_context)
{
	int			total = 0;
	int			rc;
	int			guc_nest_level;

	/* the statements are the served schema's: a database not updated is refused */
	MmRequireServedSchema("mm.tick");
	MmCheckNotifyQueue();
	LastStatsCount = 0;
	MmMatchFunctionStatsReset();
	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	MmTickPreparePlans();
	/* raised for this call only: restored below, or by the abort on error */
	guc_nest_level = NewGUCNestLevel();
	if (work_mem < MM_TICK_WORK_MEM_KB)
	{
		char		value[32];

		snprintf(value, sizeof(value), "%d", MM_TICK_WORK_MEM_KB);
		(void) set_config_option("work_mem", value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}

	if (!PG_ARGISNULL(0))
	{
		char	   *queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
		MemoryContext queue_context = NewQueueContext(caller_context);

		total = TickQueue(queue, now, true, true, queue_context);
		MemoryContextDelete(queue_context);
	}
	else
	{
		char	  **names;
		bool		sharded;
		int			n,
					i;

		rc = SPI_execute_plan(MmTickPlan.queue_names, NULL, NULL, true, 0);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "listing queues failed: %s", SPI_result_code_string(rc));
		n = (int) SPI_processed;
		names = MemoryContextAlloc(caller_context, sizeof(char *) * Max(n, 1));
		for (i = 0; i < n; i++)
			names[i] = MemoryContextStrdup(caller_context,
										   SPI_getvalue(SPI_tuptable->vals[i],
														SPI_tuptable->tupdesc, 1));
		SPI_freetuptable(SPI_tuptable);
		/*
		 * The expired proposals of every queue at once; on Citus queue by
		 * queue, each on its shard (the queues of other nodes are skipped)
		 */
		sharded = MmTablesAreDistributed();
		if (!sharded)
			MmTickExpireProposals(NULL, now);
		for (i = 0; i < n; i++)
			total += TickQueueGuarded(names[i], now, sharded, caller_context);
	}

	AtEOXact_GUC(true, guc_nest_level);
	if ((rc = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
	return total;
}

/*
 * mm.last_tick_stats(): per queue, what the last mm.tick() of this backend
 * did and how long each phase took, so benchmarks can tell the matching
 * compute from the SPI reads and writes.
 */
Datum
mm_last_tick_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < LastStatsCount; i++)
	{
		MmTickStats *s = &LastStats[i];
		Datum		values[10];
		bool		nulls[10] = {0};

		values[0] = CStringGetTextDatum(s->queue);
		values[1] = BoolGetDatum(s->locked_out);
		values[2] = Int32GetDatum(s->tickets_loaded);
		values[3] = Int32GetDatum(s->tickets_timed_out);
		values[4] = Int32GetDatum(s->matches);
		values[5] = Int32GetDatum(s->players_matched);
		values[6] = Float8GetDatum(s->load_ms);
		values[7] = Float8GetDatum(s->compute_ms);
		values[8] = Float8GetDatum(s->write_ms);
		values[9] = Int64GetDatum(s->memory_bytes);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
