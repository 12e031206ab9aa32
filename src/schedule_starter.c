/*
 * schedule_starter.c
 *	  The first minute of a newly scheduled queue: a dynamic background worker
 *	  that runs the queue's tick loop at once.
 *
 * With pg_cron 1.4 a sub-second schedule is a per-minute job whose run,
 * CALL mm.tick_loop(queue), ticks until the next minute boundary; the first
 * run of a new job starts at the next boundary, up to a minute away.
 * mm.schedule therefore also starts one dynamic background worker of this
 * library that runs the same CALL as soon as the scheduling transaction has
 * committed; from the next minute boundary on pg_cron's runs take over.
 *
 * The worker needs no shared_preload_libraries entry (dynamic workers load
 * the library themselves) and no slot reserved in advance: when every
 * max_worker_processes slot is taken, mm.schedule says so with a NOTICE and
 * the queue waits for pg_cron, as it did without the worker.  Two loops of a
 * queue never tick at once: mm.tick_loop holds a session lock per queue
 * (mm.tick_loop_lock, below: one that SQL's advisory lock functions cannot
 * take) and returns at once, with a WARNING, when another loop has it.  The loop re-reads the
 * queue's schedule on every round, so mm.unschedule stops the worker within
 * one interval.
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "tcop/dest.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"

#include "queue_locks.h"

/* What the worker needs, passed in bgw_extra (BGW_EXTRALEN bytes). */
typedef struct MmTickLoopStart
{
	Oid			database;		/* the scheduling session's database */
	Oid			role;			/* and role: pg_cron's job runs as it too */
	TransactionId xid;			/* the transaction that scheduled the queue */
	char		queue[BGW_EXTRALEN - 2 * sizeof(Oid) - sizeof(TransactionId)];
} MmTickLoopStart;

StaticAssertDecl(sizeof(MmTickLoopStart) <= BGW_EXTRALEN,
				 "MmTickLoopStart must fit in bgw_extra");

PGDLLEXPORT void MmTickLoopWorkerMain(Datum main_arg);
static void MmRunStatement(const char *sql);

PG_FUNCTION_INFO_V1(mm_schedule_start_loop);
PG_FUNCTION_INFO_V1(mm_tick_loop_lock);
PG_FUNCTION_INFO_V1(mm_tick_loop_unlock);

/* The loop lock's tag of a queue: the key hashtextextended('mm_tick_loop:' || queue, 0). */
static void
TickLoopLockTag(LOCKTAG *tag, text *queue)
{
	const char *prefix = "mm_tick_loop:";
	Size		plen = strlen(prefix);
	Size		qlen = VARSIZE_ANY_EXHDR(queue);
	char	   *name = palloc(plen + qlen);

	memcpy(name, prefix, plen);
	memcpy(name + plen, VARDATA_ANY(queue), qlen);
	MmSetQueueLockTag(tag, (int64) hash_bytes_extended((const unsigned char *) name, plen + qlen, 0),
					  MM_LOCK_TICK_LOOP);
	pfree(name);
}

/*
 * mm.tick_loop_lock(queue text) RETURNS boolean: takes the queue's loop lock
 * for the session, without waiting; false when another session holds it.
 * Held once however often this session asks (a loop that ended in an error
 * before releasing it leaves it held; the next loop here takes it over).
 */
Datum
mm_tick_loop_lock(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;
	LockAcquireResult res;

	TickLoopLockTag(&tag, PG_GETARG_TEXT_PP(0));
	res = LockAcquire(&tag, ExclusiveLock, true, true);
	if (res == LOCKACQUIRE_ALREADY_HELD)
		(void) LockRelease(&tag, ExclusiveLock, true);
	PG_RETURN_BOOL(res != LOCKACQUIRE_NOT_AVAIL);
}

/* mm.tick_loop_unlock(queue text) RETURNS boolean: releases it; false when not held. */
Datum
mm_tick_loop_unlock(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;

	TickLoopLockTag(&tag, PG_GETARG_TEXT_PP(0));
	PG_RETURN_BOOL(LockRelease(&tag, ExclusiveLock, true));
}

/*
 * mm.schedule_start_loop(queue text) RETURNS boolean
 *
 * Registers a worker that runs CALL mm.tick_loop(queue) as the current role
 * once the current transaction has ended.  False, with a NOTICE, when no
 * background worker slot is free.
 */
Datum
mm_schedule_start_loop(PG_FUNCTION_ARGS)
{
	char	   *queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
	MmTickLoopStart start;
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	if (strlen(queue) >= sizeof(start.queue))
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("queue name is too long for the tick loop worker: \"%s\"", queue)));

	/* single-user mode has no postmaster to start workers */
	if (!IsUnderPostmaster)
		PG_RETURN_BOOL(false);

	memset(&start, 0, sizeof(start));
	start.database = MyDatabaseId;
	start.role = GetUserId();
	start.xid = GetTopTransactionIdIfAny();	/* none: nothing written to wait for */
	strlcpy(start.queue, queue, sizeof(start.queue));

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "matchmaking", sizeof(worker.bgw_library_name));
	strlcpy(worker.bgw_function_name, "MmTickLoopWorkerMain", sizeof(worker.bgw_function_name));
	snprintf(worker.bgw_name, sizeof(worker.bgw_name), "matchmaking tick loop of queue %s", queue);
	strlcpy(worker.bgw_type, "matchmaking tick loop", sizeof(worker.bgw_type));
	worker.bgw_main_arg = (Datum) 0;
	worker.bgw_notify_pid = 0;
	memcpy(worker.bgw_extra, &start, sizeof(start));

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(NOTICE,
				(errmsg("queue \"%s\" starts ticking at the next minute boundary", queue),
				 errdetail("No background worker slot was free to tick it before then "
						   "(max_worker_processes is %d).", max_worker_processes),
				 errhint("Raise max_worker_processes to let newly scheduled queues tick at once.")));
		PG_RETURN_BOOL(false);
	}
	PG_RETURN_BOOL(true);
}

/*
 * Entry point of the worker: waits for the scheduling transaction to end,
 * then runs the queue's tick loop until the next minute boundary.
 */
void
MmTickLoopWorkerMain(Datum main_arg)
{
	MmTickLoopStart start;
	char	   *command;

	memcpy(&start, MyBgworkerEntry->bgw_extra, sizeof(start));
	start.queue[sizeof(start.queue) - 1] = '\0';

	/* SIGTERM sets ProcDiePending: the loop's sleep and ticks end cleanly */
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnectionByOid(start.database, start.role, 0);
	pgstat_report_appname("matchmaking tick loop");

	/*
	 * The loop reads the queue's schedule: wait until the transaction that
	 * wrote it has committed (or rolled back, when the loop finds the queue
	 * unscheduled and returns at once).
	 */
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (TransactionIdIsValid(start.xid))
		XactLockTableWait(start.xid, NULL, NULL, XLTW_None);
	CommitTransactionCommand();
	CHECK_FOR_INTERRUPTS();

	command = psprintf("CALL mm.tick_loop(%s)", quote_literal_cstr(start.queue));

	/* the same statement pg_cron's job runs, shown as such in pg_stat_activity */
	SetCurrentStatementStartTimestamp();
	debug_query_string = command;
	pgstat_report_activity(STATE_RUNNING, command);
	StartTransactionCommand();
	MmRunStatement(command);
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	debug_query_string = NULL;

	proc_exit(0);
}

/*
 * Runs one SQL statement as a top-level command, through a portal as
 * exec_simple_query does, so that a procedure may commit inside it (which
 * SPI called from here could not).  The caller has started a transaction;
 * the statement's own commits leave a new one running at return.
 */
static void
MmRunStatement(const char *sql)
{
	MemoryContext parse_context;
	MemoryContext old_context;
	List	   *parse_trees;
	RawStmt    *parse_tree;
	CommandTag	tag;
	bool		snapshot_set = false;
	List	   *query_trees;
	List	   *plan_trees;
	Portal		portal;
	DestReceiver *receiver;
	QueryCompletion qc;

	/* parse trees and plans must outlive the statement's own commits */
	parse_context = AllocSetContextCreate(TopMemoryContext, "matchmaking tick loop statement",
										  ALLOCSET_DEFAULT_SIZES);
	old_context = MemoryContextSwitchTo(parse_context);

	parse_trees = pg_parse_query(sql);
	if (list_length(parse_trees) != 1)
		elog(ERROR, "expected one statement in \"%s\"", sql);
	parse_tree = linitial_node(RawStmt, parse_trees);
	tag = CreateCommandTag(parse_tree->stmt);

	if (analyze_requires_snapshot(parse_tree))
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		snapshot_set = true;
	}
	query_trees = pg_analyze_and_rewrite_fixedparams(parse_tree, sql, NULL, 0, NULL);
	plan_trees = pg_plan_queries(query_trees, sql, CURSOR_OPT_PARALLEL_OK, NULL);
	if (snapshot_set)
		PopActiveSnapshot();
	CHECK_FOR_INTERRUPTS();

	portal = CreatePortal("", true, true);
	portal->visible = false;
	PortalDefineQuery(portal, NULL, sql, tag, plan_trees, NULL);
	PortalStart(portal, NULL, 0, InvalidSnapshot);
	receiver = CreateDestReceiver(DestNone);

	MemoryContextSwitchTo(old_context);

	(void) PortalRun(portal, FETCH_ALL, true, true, receiver, receiver, &qc);

	receiver->rDestroy(receiver);
	PortalDrop(portal, false);
	MemoryContextDelete(parse_context);
}
