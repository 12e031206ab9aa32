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
 *
 * The loop keeper: when the library is in shared_preload_libraries (as on
 * Citus, where every node preloads it), a background worker of each node
 * checks every second, in the database matchmaking.loop_keeper_database
 * names (by default cron.database_name's), which queues on the per-minute
 * loop should tick on this node and have no loop running, and starts their
 * loop the same way, as the role that scheduled the queue
 * (mm.schedule_jobs.job_role).  A loop that died with its session (a node's
 * restart, the coordinator's connection gone) or ended because its queue's
 * shards moved to another node (mm.tick_loop_every is NULL there) is thus
 * running again within a second or two, not at the next minute.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "tcop/dest.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/wait_event.h"

#include "queue_locks.h"
#include "schema_version.h"
#include "schedule_starter.h"

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
PGDLLEXPORT void MmLoopKeeperMain(Datum main_arg);
static void MmRunStatement(const char *sql);
static bool MmStartTickLoopWorker(const char *queue, Oid database, Oid role, TransactionId xid,
								  BackgroundWorkerHandle **handle);

/* matchmaking.loop_keeper_database: see MmRegisterLoopKeeper */
static char *MmLoopKeeperDatabase = NULL;

/* How often the keeper looks for loops to start, and waits after an error. */
#define MM_KEEPER_NAPTIME_MS 1000L
#define MM_KEEPER_ERROR_NAPTIME_MS 5000L

/* A loop worker the keeper started, until it has stopped. */
typedef struct MmKeptLoop
{
	char		queue[NAMEDATALEN * 2];
	BackgroundWorkerHandle *handle;
} MmKeptLoop;

/* The keeper's loops (MmKeptLoop), in TopMemoryContext. */
static List *KeptLoops = NIL;

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
 * Whether the statement running is a top-level CALL mm.tick_loop(...): the
 * portal's one statement, the procedure named tick_loop in mm.  A session that
 * took the loop lock any other way could keep it while idle, and every loop
 * of the queue would leave the queue to it.
 */
static bool
RunningTickLoopCall(void)
{
	PlannedStmt *stmt;
	CallStmt   *call;
	Oid			procedure;
	char	   *name;

	if (ActivePortal == NULL || ActivePortal->commandTag != CMDTAG_CALL ||
		list_length(ActivePortal->stmts) != 1)
		return false;
	stmt = linitial_node(PlannedStmt, ActivePortal->stmts);
	if (stmt->utilityStmt == NULL || !IsA(stmt->utilityStmt, CallStmt))
		return false;
	call = (CallStmt *) stmt->utilityStmt;
	if (call->funcexpr == NULL)
		return false;
	/* only the extension's owner may create routines in mm */
	procedure = call->funcexpr->funcid;
	name = get_func_name(procedure);
	return name != NULL && strcmp(name, "tick_loop") == 0 &&
		get_func_namespace(procedure) == get_namespace_oid("mm", true);
}

/*
 * mm.tick_loop_lock(queue text) RETURNS boolean: takes the queue's loop lock
 * for the session, without waiting; false when another session holds it.
 * Held once however often this session asks (a loop that ended in an error
 * before releasing it leaves it held; the next loop here takes it over).
 * Only within CALL mm.tick_loop: the lock is released when the loop returns.
 */
Datum
mm_tick_loop_lock(PG_FUNCTION_ARGS)
{
	LOCKTAG		tag;
	LockAcquireResult res;

	if (!RunningTickLoopCall())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("mm.tick_loop_lock may be called only by CALL mm.tick_loop")));
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
	BackgroundWorkerHandle *handle;

	if (strlen(queue) >= sizeof(((MmTickLoopStart *) NULL)->queue))
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("queue name is too long for the tick loop worker: \"%s\"", queue)));

	/* single-user mode has no postmaster to start workers */
	if (!IsUnderPostmaster)
		PG_RETURN_BOOL(false);

	/* no transaction id: nothing written to wait for */
	if (!MmStartTickLoopWorker(queue, MyDatabaseId, GetUserId(), GetTopTransactionIdIfAny(), &handle))
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
 * Registers a dynamic worker that runs CALL mm.tick_loop(queue) in database
 * as role, once transaction xid (if valid) has ended.  False when no slot
 * is free.  The queue name must fit MmTickLoopStart.
 */
static bool
MmStartTickLoopWorker(const char *queue, Oid database, Oid role, TransactionId xid,
					  BackgroundWorkerHandle **handle)
{
	MmTickLoopStart start;
	BackgroundWorker worker;

	memset(&start, 0, sizeof(start));
	start.database = database;
	start.role = role;
	start.xid = xid;
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
	/* the keeper asks the handle whether its loop still runs */
	worker.bgw_notify_pid = 0;
	memcpy(worker.bgw_extra, &start, sizeof(start));

	return RegisterDynamicBackgroundWorker(&worker, handle);
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

/*
 * Called from _PG_init: while the library is being preloaded, defines
 * matchmaking.loop_keeper_database and registers the loop keeper.
 */
void
MmRegisterLoopKeeper(void)
{
	BackgroundWorker worker;

	/* a server-start setting can only be defined while preloading */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomStringVariable("matchmaking.loop_keeper_database",
							   "Database whose scheduled tick loops the loop keeper keeps running.",
							   "Empty: the database of cron.database_name. The keeper runs only when "
							   "matchmaking is in shared_preload_libraries, and does nothing when "
							   "neither names a database.",
							   &MmLoopKeeperDatabase,
							   "",
							   PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	/* after an unexpected exit; proc_exit(0) (nothing to keep) unregisters it */
	worker.bgw_restart_time = 5;
	strlcpy(worker.bgw_library_name, "matchmaking", sizeof(worker.bgw_library_name));
	strlcpy(worker.bgw_function_name, "MmLoopKeeperMain", sizeof(worker.bgw_function_name));
	strlcpy(worker.bgw_name, "matchmaking loop keeper", sizeof(worker.bgw_name));
	strlcpy(worker.bgw_type, "matchmaking loop keeper", sizeof(worker.bgw_type));
	RegisterBackgroundWorker(&worker);
}

/* Whether a loop the keeper started for the queue has not stopped yet. */
static bool
MmKeptLoopAlive(List *kept, const char *queue)
{
	ListCell   *lc;

	foreach(lc, kept)
	{
		MmKeptLoop *loop = (MmKeptLoop *) lfirst(lc);
		pid_t		pid;

		if (strcmp(loop->queue, queue) == 0 &&
			GetBackgroundWorkerPid(loop->handle, &pid) != BGWH_STOPPED)
			return true;
	}
	return false;
}

/* The loops that have stopped, forgotten (the list lives in TopMemoryContext). */
static List *
MmKeptLoopsPrune(List *kept)
{
	List	   *alive = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	foreach(lc, kept)
	{
		MmKeptLoop *loop = (MmKeptLoop *) lfirst(lc);
		pid_t		pid;

		if (GetBackgroundWorkerPid(loop->handle, &pid) == BGWH_STOPPED)
		{
			pfree(loop->handle);
			pfree(loop);
		}
		else
			alive = lappend(alive, loop);
	}
	list_free(kept);
	MemoryContextSwitchTo(old);
	return alive;
}

/*
 * One round of the keeper: in a transaction, the queues whose loop should
 * run on this node (on the per-minute loop, and on Citus with their shards
 * here: mm.tick_loop_every is not NULL) with no loop holding their lock, each
 * with its job's role when that role may log in; a loop worker for each
 * one not started already.  Returns the list of loops started and running.
 */
static List *
MmKeeperRound(List *kept)
{
	int			ret;
	uint64		i;
	List	   *to_start = NIL;
	List	   *roles = NIL;
	ListCell   *lq;
	ListCell   *lr;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "matchmaking loop keeper: looking for loops to start");

	/* a database without the extension, or not yet updated, has nothing to keep */
	if (MmSchemaIsServed())
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		/*
		 * mm.schedule_jobs alone: on Citus a reference table, read on this
		 * node's copy (a join with a catalog would make it a distributed
		 * query); the role is looked up below
		 */
		ret = SPI_execute("SELECT s.queue, s.job_role"
						  "  FROM mm.schedule_jobs s"
						  " WHERE s.kind OPERATOR(pg_catalog.=) 'tick' AND s.mode OPERATOR(pg_catalog.=) 'loop'"
						  "   AND s.job_role IS NOT NULL"
						  "   AND mm.tick_loop_every(s.queue) IS NOT NULL"
						  "   AND NOT mm.tick_loop_running(s.queue)"
						  " ORDER BY s.queue",
						  true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "the loop keeper's query failed: %s", SPI_result_code_string(ret));
		for (i = 0; i < SPI_processed; i++)
		{
			char	   *queue = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
			char	   *role_name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
			HeapTuple	role_tuple;
			Oid			role = InvalidOid;
			MemoryContext old;

			/* a role that cannot log in could not run pg_cron's job either */
			role_tuple = SearchSysCache1(AUTHNAME, CStringGetDatum(role_name));
			if (HeapTupleIsValid(role_tuple))
			{
				Form_pg_authid form = (Form_pg_authid) GETSTRUCT(role_tuple);

				if (form->rolcanlogin)
					role = form->oid;
				ReleaseSysCache(role_tuple);
			}
			if (!OidIsValid(role))
				continue;
			old = MemoryContextSwitchTo(TopMemoryContext);
			to_start = lappend(to_start, pstrdup(queue));
			roles = lappend_oid(roles, role);
			MemoryContextSwitchTo(old);
		}
		SPI_finish();
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);

	kept = MmKeptLoopsPrune(kept);
	forboth(lq, to_start, lr, roles)
	{
		char	   *queue = (char *) lfirst(lq);
		BackgroundWorkerHandle *handle;
		MmKeptLoop *loop;
		MemoryContext old;

		/* started, but not holding its lock yet */
		if (MmKeptLoopAlive(kept, queue))
			continue;
		if (strlen(queue) >= sizeof(((MmTickLoopStart *) NULL)->queue))
			continue;
		old = MemoryContextSwitchTo(TopMemoryContext);
		if (!MmStartTickLoopWorker(queue, MyDatabaseId, lfirst_oid(lr), InvalidTransactionId, &handle))
		{
			MemoryContextSwitchTo(old);
			ereport(WARNING,
					(errmsg("the loop keeper could not start the tick loop of queue \"%s\"", queue),
					 errdetail("No background worker slot was free (max_worker_processes is %d).",
							   max_worker_processes)));
			continue;
		}
		loop = palloc0(sizeof(MmKeptLoop));
		strlcpy(loop->queue, queue, sizeof(loop->queue));
		loop->handle = handle;
		kept = lappend(kept, loop);
		MemoryContextSwitchTo(old);
		ereport(LOG,
				(errmsg("matchmaking loop keeper started the tick loop of queue \"%s\"", queue)));
	}
	list_free_deep(to_start);
	list_free(roles);
	return kept;
}

/*
 * Entry point of the loop keeper: connects to its database and, every
 * second, starts the loops that should run and do not (MmKeeperRound).  An
 * error is logged and the keeper carries on after a pause.
 */
void
MmLoopKeeperMain(Datum main_arg)
{
	const char *database;
	MemoryContext round_context;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	database = MmLoopKeeperDatabase && MmLoopKeeperDatabase[0] != '\0'
		? MmLoopKeeperDatabase : GetConfigOption("cron.database_name", true, false);
	if (database == NULL || database[0] == '\0')
	{
		ereport(LOG,
				(errmsg("matchmaking loop keeper: no database to keep"),
				 errdetail("Neither matchmaking.loop_keeper_database nor cron.database_name is set.")));
		proc_exit(0);
	}
	BackgroundWorkerInitializeConnection(database, NULL, 0);
	pgstat_report_appname("matchmaking loop keeper");

	round_context = AllocSetContextCreate(TopMemoryContext, "matchmaking loop keeper round",
										  ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		long		naptime = MM_KEEPER_NAPTIME_MS;
		MemoryContext old = MemoryContextSwitchTo(round_context);

		PG_TRY();
		{
			KeptLoops = MmKeeperRound(KeptLoops);
		}
		PG_CATCH();
		{
			/* log it, roll back, and try again after a pause */
			MemoryContextSwitchTo(round_context);
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			pgstat_report_activity(STATE_IDLE, NULL);
			naptime = MM_KEEPER_ERROR_NAPTIME_MS;
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
		MemoryContextReset(round_context);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, naptime,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}
