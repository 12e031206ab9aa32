/*
 * citus_guard.c
 *	  Keeps a NULL queue away from Citus's function call delegation.
 *
 * On Citus, mm.distribute makes mm.tick, mm.tick_loop and the lifecycle's
 * forms by queue distributed functions: Citus runs a call made on any node
 * on the node that holds the queue, which it finds by hashing the queue
 * argument.  Citus 13 hashes a NULL argument without checking it and the
 * backend crashes (the node restarts every session; Citus's issue #7242):
 * SELECT mm.tick(), or a client passing a NULL queue, would take the node
 * down.  So the library is preloaded on a Citus deployment (mm.distribute
 * checks it) and this planner hook, which runs before Citus's, gives such a
 * call a queue that is NULL but not constant: CASE WHEN random() IS NULL
 * THEN '' END.  Citus plans the query before it looks at the call, which
 * folds a constant expression (and fills in a defaulted queue), and it never
 * delegates a call with a volatile argument, so the call stays where it is
 * made and the function answers as on one node (mm.tick ticks the queues
 * of that node, the others refuse a NULL queue with 22004).  A CALL goes
 * through Citus's utility hook instead: a NULL queue there is refused before
 * Citus sees it.
 *
 * It also answers whether this database is such a deployment
 * (mm.tables_are_distributed), which the hot paths ask at every call.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "citus_guard.h"

PG_FUNCTION_INFO_V1(mm_tables_are_distributed);

static planner_hook_type PreviousPlanner = NULL;
static ProcessUtility_hook_type PreviousProcessUtility = NULL;

/*
 * The functions mm.distribute distributes by their queue (95_scale_out.sql):
 * the same list, which test/scripts/check_citus_functions.pl compares
 * (HACKING.md, "Citus rules for SQL", rule 2).
 */
static const char *const DistributedByQueue[] = {
	"tick", "tick_loop", "accept_match", "assign", "requeue_match", "complete_match",
	"leave_match", "request_backfill", "cancel_backfill", "report_result", "cancel_ticket",
	"heartbeat", "get_assignment", "create_ticket", "create_tickets"
};

/*
 * Whether a function is one that Citus may delegate by its first argument,
 * a queue: one of the list above, in schema mm, taking text first, in a
 * database with Citus.
 */
static bool
DelegatedByQueue(Oid funcid)
{
	Oid			mm = get_namespace_oid("mm", true);
	HeapTuple	tuple;
	Form_pg_proc proc;
	bool		result = false;
	int			i;

	if (!OidIsValid(mm) || !OidIsValid(get_relname_relid("pg_dist_object", PG_CATALOG_NAMESPACE)))
		return false;
	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tuple))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	if (proc->pronamespace == mm && proc->pronargs > 0 && proc->proargtypes.values[0] == TEXTOID)
		for (i = 0; i < (int) lengthof(DistributedByQueue); i++)
			if (strcmp(NameStr(proc->proname), DistributedByQueue[i]) == 0)
				result = true;
	ReleaseSysCache(tuple);
	return result;
}

/* NULL, but neither constant nor foldable: CASE WHEN random() IS NULL THEN '' END. */
static Node *
VolatileNullQueue(void)
{
	CaseExpr   *result = makeNode(CaseExpr);
	CaseWhen   *when = makeNode(CaseWhen);
	NullTest   *test = makeNode(NullTest);

	test->arg = (Expr *) makeFuncExpr(F_RANDOM, FLOAT8OID, NIL, InvalidOid, InvalidOid,
									  COERCE_EXPLICIT_CALL);
	test->nulltesttype = IS_NULL;
	test->argisrow = false;
	test->location = -1;
	when->expr = (Expr *) test;
	when->result = (Expr *) makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
									  CStringGetTextDatum(""), false, false);
	when->location = -1;
	result->casetype = TEXTOID;
	result->casecollid = DEFAULT_COLLATION_OID;
	result->args = list_make1(when);
	result->defresult = (Expr *) makeNullConst(TEXTOID, -1, DEFAULT_COLLATION_OID);
	result->location = -1;
	return (Node *) result;
}

/* Whether an argument is NULL as the planner will see it: a constant or a bound parameter. */
static bool
IsNullArgument(Node *arg, ParamListInfo bound)
{
	arg = strip_implicit_coercions(arg);
	if (IsA(arg, Const))
		return ((Const *) arg)->constisnull;
	if (IsA(arg, Param) && ((Param *) arg)->paramkind == PARAM_EXTERN && bound != NULL)
	{
		int			id = ((Param *) arg)->paramid;
		ParamExternData workspace;
		ParamExternData *value;

		if (id < 1 || id > bound->numParams)
			return false;
		value = bound->paramFetch != NULL
			? bound->paramFetch(bound, id, false, &workspace)
			: &bound->params[id - 1];
		return value != NULL && value->isnull;
	}
	return false;
}

/*
 * A call Citus may delegate by its queue, with a NULL or defaulted one: its
 * queue made a volatile NULL.
 */
static void
GuardCall(Node *node, ParamListInfo bound)
{
	FuncExpr   *call;
	ListCell   *cell;
	bool		given = false;

	if (node == NULL || !IsA(node, FuncExpr))
		return;
	call = (FuncExpr *) node;
	/* the queue, given by position or by name, or left to its default */
	foreach(cell, call->args)
	{
		Node	   *arg = (Node *) lfirst(cell);
		NamedArgExpr *named = IsA(arg, NamedArgExpr) ? (NamedArgExpr *) arg : NULL;

		if (named != NULL && named->argnumber != 0)
			continue;
		if (named == NULL && cell != list_head(call->args))
			continue;
		given = true;
		if (IsNullArgument(named != NULL ? (Node *) named->arg : arg, bound) &&
			DelegatedByQueue(call->funcid))
		{
			if (named != NULL)
				named->arg = (Expr *) VolatileNullQueue();
			else
				lfirst(cell) = VolatileNullQueue();
		}
		break;
	}
	if (!given && DelegatedByQueue(call->funcid))
		call->args = lcons(VolatileNullQueue(), call->args);
}

static PlannedStmt *
GuardPlanner(Query *parse, const char *query_string, int cursor_options, ParamListInfo bound)
{
	ListCell   *cell;

	/* the calls Citus delegates: SELECT f(...) and SELECT ... FROM f(...) */
	if (parse->commandType == CMD_SELECT)
	{
		foreach(cell, parse->targetList)
			GuardCall((Node *) ((TargetEntry *) lfirst(cell))->expr, bound);
		foreach(cell, parse->rtable)
		{
			RangeTblEntry *rte = (RangeTblEntry *) lfirst(cell);
			ListCell   *f;

			if (rte->rtekind != RTE_FUNCTION)
				continue;
			foreach(f, rte->functions)
				GuardCall(((RangeTblFunction *) lfirst(f))->funcexpr, bound);
		}
	}
	if (PreviousPlanner != NULL)
		return PreviousPlanner(parse, query_string, cursor_options, bound);
	return standard_planner(parse, query_string, cursor_options, bound);
}

static void
GuardProcessUtility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *query_env, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *statement = pstmt->utilityStmt;

	if (IsA(statement, CallStmt))
	{
		FuncExpr   *call = ((CallStmt *) statement)->funcexpr;

		if (call != NULL && call->args != NIL && IsNullArgument(linitial(call->args), params) &&
			DelegatedByQueue(call->funcid))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("queue must not be null")));
	}
	if (PreviousProcessUtility != NULL)
		PreviousProcessUtility(pstmt, query_string, read_only_tree, context, params,
							   query_env, dest, qc);
	else
		standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params,
								query_env, dest, qc);
}

/* Installs the hooks (at load: preloaded, before any call is planned). */
void
MmInstallCitusGuard(void)
{
	PreviousPlanner = planner_hook;
	planner_hook = GuardPlanner;
	PreviousProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = GuardProcessUtility;
}

/*
 * Whether mm.distribute has sharded this database's tables on Citus
 * (mm.tickets_active is hash-distributed).  Every mm.create_ticket and
 * every tick asks on a node where Citus is installed; reading Citus's
 * catalog each time cost about 0.04 ms of a ticket on a worker.  A true
 * answer is kept with the table's OID, which it holds for as long as the
 * table lives (nothing undoes mm.distribute; a new installation has a new
 * table and is read again); false is read again at every call, as
 * mm.distribute may run meanwhile.  Without Citus's catalog: false, with
 * no query.
 */
bool
MmTablesAreDistributed(void)
{
	static Oid	distributed_table = InvalidOid;
	Oid			mm = get_namespace_oid("mm", true);
	Oid			tickets = OidIsValid(mm) ? get_relname_relid("tickets_active", mm) : InvalidOid;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		distributed;
	bool		isnull;
	int			rc;

	if (!OidIsValid(tickets))
		return false;
	if (tickets == distributed_table)
		return true;
	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return false;
	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	args[0] = ObjectIdGetDatum(tickets);
	rc = SPI_execute_with_args("SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p"
							   " WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1"
							   " AND p.partmethod OPERATOR(pg_catalog.=) 'h')",
							   1, argtypes, args, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "reading Citus's tables failed: %s", SPI_result_code_string(rc));
	distributed = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	if (distributed)
		distributed_table = tickets;
	return distributed;
}

/* mm.tables_are_distributed() RETURNS boolean: MmTablesAreDistributed */
Datum
mm_tables_are_distributed(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(MmTablesAreDistributed());
}
