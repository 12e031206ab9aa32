/*
 * ticket_heartbeat.c
 *	  mm.heartbeat(queue, ticket_id, now): a client's sign of life for its
 *	  ticket, the call waiting clients make most often.
 *
 * One update of the active ticket by its key, no event.  On the queue's
 * Citus node it names the queue's shard (queue_shards.c) with a plan kept
 * for the session, instead of going through Citus's planner at every beat;
 * on one node it updates the table with the same statement.  A ticket that
 * is not active is looked up to tell an ended one (false) from a missing one
 * (42704).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "queue_shards.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_heartbeat);

/* the beat: never moves heartbeat_at back */
static const MmQueueStatement BeatActive = {
	"UPDATE mm.tickets_active x SET heartbeat_at = GREATEST(x.heartbeat_at, $3)"
	" WHERE x.queue OPERATOR(pg_catalog.=) $1 AND x.id OPERATOR(pg_catalog.=) $2",
	3, {TEXTOID, INT8OID, TIMESTAMPTZOID}
};

/* the ticket's status in its queue, by key */
static const MmQueueStatement StatusInQueue = {
	"SELECT x.status FROM mm.tickets x"
	" WHERE x.queue OPERATOR(pg_catalog.=) $1 AND x.id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, INT8OID}
};

/* a ticket of several queues that another of them matched (every shard) */
static const MmQueueStatement StatusMatchedElsewhere = {
	"SELECT x.status FROM mm.tickets_ended x"
	" WHERE x.id OPERATOR(pg_catalog.=) $2 AND $1 OPERATOR(pg_catalog.=) ANY (x.queues)",
	2, {TEXTOID, INT8OID}
};

/*
 * The ticket's status by a read of at most one row with a new snapshot (in
 * SPI's memory, freed by SPI_finish), or NULL when it found none.
 */
static char *
ReadStatus(MmQueueRelations *relations, const MmQueueStatement *statement, Datum *args)
{
	if (!MmQueueReadRow(relations, statement, args, false))
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * mm.heartbeat(queue text, ticket_id bigint, now timestamptz) RETURNS boolean
 *
 * True while the ticket is searching or proposed (its heartbeat_at moved
 * up to now), false once it ended; 42704 for a ticket not in the queue.
 * A ticket requeued (moved back into the active partition) between the
 * update and the look at its status is beaten there: twice at most.
 */
Datum
mm_heartbeat(PG_FUNCTION_ARGS)
{
	char	   *queue;
	MmQueueRelations *relations;
	Datum		args[3];
	bool		active = true;
	int			rc;

	MmRefuseNullArgument(fcinfo, 0, "queue");
	MmRefuseNullArgument(fcinfo, 1, "ticket_id");
	MmRefuseNullArgument(fcinfo, 2, "now");
	if (TIMESTAMP_NOT_FINITE(PG_GETARG_TIMESTAMPTZ(2)))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_FIELD_OVERFLOW),
				 errmsg("now must be a finite time, not %s",
						DatumGetCString(DirectFunctionCall1(timestamptz_out, PG_GETARG_DATUM(2))))));
	queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
	args[0] = PG_GETARG_DATUM(0);
	args[1] = PG_GETARG_DATUM(1);
	args[2] = PG_GETARG_DATUM(2);

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	relations = MmQueueRelationsOf(queue);
	for (int attempt = 0; attempt < 2; attempt++)
	{
		char	   *status;

		rc = SPI_execute_plan(MmQueuePlan(relations, &BeatActive), args, NULL, false, 0);
		if (rc != SPI_OK_UPDATE)
			elog(ERROR, "beating ticket " INT64_FORMAT " failed: %s", PG_GETARG_INT64(1),
				 SPI_result_code_string(rc));
		if (SPI_processed > 0)
			break;
		status = ReadStatus(relations, &StatusInQueue, args);
		if (status == NULL)
			status = ReadStatus(MmQueueTables(), &StatusMatchedElsewhere, args);
		if (status == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("ticket " INT64_FORMAT " does not exist in queue \"%s\"",
							PG_GETARG_INT64(1), queue)));
		if (strcmp(status, "searching") != 0 && strcmp(status, "proposed") != 0)
		{
			active = false;
			break;
		}
		/* active at the last look: beat again (after two, the next beat lands) */
	}
	SPI_finish();
	PG_RETURN_BOOL(active);
}
