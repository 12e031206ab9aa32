/*
 * ticket_end.c
 *	  mm.end_tickets: active tickets ended (cancelled or timed out), moved
 *	  from mm.tickets_active to mm.tickets_ended, their players released.
 *
 * Every cancel ends here (mm.cancel_ticket, a rejected or expired proposal,
 * a dropped queue, the tickets the Citus tick cancels).  The move is a
 * delete plus an insert per queue, the deleted rows handed to the insert as
 * JSON: a delete and an insert in one statement (a CTE) is one that Citus,
 * through the distributed tables, ran by sending the rows to every node and
 * committing on all of them.  On the queue's Citus node the statements name
 * the queue's shards (queue_shards.c) with kept plans, so that none goes
 * through Citus's planner; on one node they read the tables with the same
 * statements.  A delete, not an UPDATE of the status: a session waiting on
 * the row then sees it gone (and looks again) instead of failing on a row
 * moved to another partition.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "queue_shards.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_end_tickets);

/* the queue's tickets deleted from the active partition, as JSON rows, and their ids */
static const MmQueueStatement DeleteActive = {
	"WITH moved_rows AS (DELETE FROM mm.tickets_active t"
	" WHERE t.queue OPERATOR(pg_catalog.=) $1 AND t.id OPERATOR(pg_catalog.=) ANY ($2)"
	" RETURNING t.id, t.players, t.created_at, t.queues)"
	" SELECT pg_catalog.jsonb_agg(pg_catalog.to_jsonb(m)), pg_catalog.array_agg(m.id) FROM moved_rows m",
	2, {TEXTOID, INT8ARRAYOID}
};

/* the same rows written into the ended partition */
static const MmQueueStatement InsertEnded = {
	"INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, queues)"
	" SELECT r.id, $1, r.players, $2, r.created_at, $3, r.queues"
	" FROM pg_catalog.jsonb_to_recordset($4) AS r(id bigint, players jsonb, created_at timestamptz, queues text[])",
	4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, JSONBOID}
};

/* the (player, ticket) pairs of the moved rows, in player order */
static const MmQueueStatement MovedPlayers = {
	"SELECT pg_catalog.array_agg(p.value OPERATOR(pg_catalog.->>) 'id' ORDER BY p.value OPERATOR(pg_catalog.->>) 'id'),"
	" pg_catalog.array_agg(CAST(m OPERATOR(pg_catalog.->>) 'id' AS bigint) ORDER BY p.value OPERATOR(pg_catalog.->>) 'id')"
	" FROM pg_catalog.jsonb_array_elements($1) m,"
	" pg_catalog.jsonb_array_elements(m OPERATOR(pg_catalog.->) 'players') p",
	1, {JSONBOID}
};

/* their claims released (at once on one node; by the queue's tick on Citus) */
static const MmQueueStatement ReleaseClaims = {
	"SELECT mm.release_queue_claims($1, $2, $3)",
	3, {TEXTOID, TEXTARRAYOID, INT8ARRAYOID}
};

/* the other queues the moved tickets searched in */
static const MmQueueStatement ListedQueues = {
	"SELECT DISTINCT u.queue FROM pg_catalog.jsonb_array_elements($1) m,"
	" pg_catalog.jsonb_array_elements_text(coalesce(nullif(m OPERATOR(pg_catalog.->) 'queues', 'null'),"
	" '[]')) u(queue)",
	1, {JSONBOID}
};

/*
 * On Citus, a ticket its tick has not claimed yet holds its queue's
 * pending claims (95_scale_out.sql); none on one node.
 */
static const MmQueueStatement DeletePending = {
	"DELETE FROM mm.pending_claims c"
	" WHERE c.queue OPERATOR(pg_catalog.=) ANY ($1) AND c.ticket_id OPERATOR(pg_catalog.=) ANY ($2)",
	2, {TEXTARRAYOID, INT8ARRAYOID}
};

static const MmQueueStatement DeleteListed = {
	"DELETE FROM mm.ticket_queues o"
	" WHERE o.queue OPERATOR(pg_catalog.=) ANY ($1) AND o.ticket_id OPERATOR(pg_catalog.=) ANY ($2)",
	2, {TEXTARRAYOID, INT8ARRAYOID}
};

/* qsort comparators */
static int
CompareIds(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* Runs a kept statement; its first column's value in the first row. */
static Datum
RunFirst(MmQueueRelations *relations, const MmQueueStatement *statement, Datum *args, int expected,
		 bool *isnull)
{
	int			rc = SPI_execute_plan(MmQueuePlan(relations, statement), args, NULL, false, 0);

	if (rc != expected)
		elog(ERROR, "ending tickets failed in \"%.40s\": %s", statement->sql, SPI_result_code_string(rc));
	*isnull = true;
	if (SPI_tuptable == NULL || SPI_processed == 0)
		return (Datum) 0;
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull);
}

/*
 * mm.end_tickets(queues text[], ticket_ids bigint[], new_status text,
 *   ended_at timestamptz) RETURNS SETOF bigint
 *
 * Ends the active tickets of ticket_ids that are in one of the queues
 * (cancelled or timed_out): each moves from tickets_active to
 * tickets_ended, its players are released (mm.release_queue_claims) and it
 * leaves the other queues it searched in.  Returns the ids it ended, in
 * order.
 */
Datum
mm_end_tickets(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	  **queues;
	int			nqueues;
	int64	   *ended = NULL;
	int			nended = 0;
	char	  **listed = NULL;
	int			nlisted = 0;
	MmQueueRelations *one_queue = NULL;
	bool		isnull;
	int			rc;

	/* a set of bigint: the expected description, of one column */
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		return (Datum) 0;
	queues = MmDistinctStrings(PG_GETARG_ARRAYTYPE_P(0), &nqueues);

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	for (int q = 0; q < nqueues; q++)
	{
		MmQueueRelations *relations = MmQueueRelationsOf(queues[q]);
		Datum		queue = CStringGetTextDatum(queues[q]);
		Datum		moved;
		Datum		args[4];
		Datum		players;
		Datum		tickets;
		bool		players_null;
		bool		tickets_null;

		if (nqueues == 1)
			one_queue = relations;
		args[0] = queue;
		args[1] = PG_GETARG_DATUM(1);
		moved = RunFirst(relations, &DeleteActive, args, SPI_OK_SELECT, &isnull);
		if (isnull)
			continue;
		{
			int			n;
			int64	   *ids = MmInt8Array(DatumGetArrayTypeP(SPI_getbinval(SPI_tuptable->vals[0],
																			SPI_tuptable->tupdesc, 2, &isnull)),
										  "the ended ids", INT_MAX, &n);

			ended = ended == NULL ? palloc(sizeof(int64) * n) : repalloc(ended, sizeof(int64) * (nended + n));
			memcpy(ended + nended, ids, sizeof(int64) * n);
			nended += n;
		}
		args[1] = PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2);
		args[2] = PG_ARGISNULL(3) ? (Datum) 0 : PG_GETARG_DATUM(3);
		args[3] = moved;
		rc = SPI_execute_plan(MmQueuePlan(relations, &InsertEnded), args,
							  (char[]) {' ', PG_ARGISNULL(2) ? 'n' : ' ', PG_ARGISNULL(3) ? 'n' : ' ', ' '},
							  false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "writing the ended tickets of queue \"%s\" failed: %s", queues[q], SPI_result_code_string(rc));

		rc = SPI_execute_plan(MmQueuePlan(MmQueueTables(), &MovedPlayers), &moved, NULL, true, 1);
		if (rc != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "reading the players of the ended tickets failed: %s", SPI_result_code_string(rc));
		players = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &players_null);
		tickets = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &tickets_null);
		{
			Datum		release[3] = {queue, players, tickets};

			rc = SPI_execute_plan(MmQueuePlan(MmQueueTables(), &ReleaseClaims), release,
								  (char[]) {' ', players_null ? 'n' : ' ', tickets_null ? 'n' : ' '}, false, 0);
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "releasing the players of queue \"%s\" failed: %s", queues[q],
					 SPI_result_code_string(rc));
		}

		/* the other queues they searched in */
		rc = SPI_execute_plan(MmQueuePlan(MmQueueTables(), &ListedQueues), &moved, NULL, true, 0);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "reading the other queues of the ended tickets failed: %s", SPI_result_code_string(rc));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			char	   *other = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);

			/* a null in a ticket's queues lists nothing */
			if (other == NULL)
				continue;
			listed = listed == NULL ? palloc(sizeof(char *) * 8) :
				(nlisted % 8 == 0 ? repalloc(listed, sizeof(char *) * (nlisted + 8)) : listed);
			listed[nlisted++] = other;
		}
	}
	if (nended > 0)
	{
		Datum		args[2];

		qsort(ended, nended, sizeof(int64), CompareIds);
		args[0] = PG_GETARG_DATUM(0);
		args[1] = PointerGetDatum(MmBuildInt8Array(ended, nended));
		/* one queue: its relations; several: through the tables (Citus routes them) */
		RunFirst(one_queue != NULL ? one_queue : MmQueueTables(), &DeletePending, args, SPI_OK_DELETE, &isnull);
		if (nlisted > 0)
		{
			/* a queue listed twice matches once */
			args[0] = PointerGetDatum(MmBuildTextArray((const char **) listed, nlisted));
			RunFirst(MmQueueTables(), &DeleteListed, args, SPI_OK_DELETE, &isnull);
		}
		for (int i = 0; i < nended; i++)
		{
			Datum		value = Int64GetDatum(ended[i]);
			bool		null = false;

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &null);
		}
	}
	SPI_finish();
	return (Datum) 0;
}
