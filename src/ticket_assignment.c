/*
 * ticket_assignment.c
 *	  A ticket's assignment by (queue, id): mm.get_assignment(queue, id) and
 *	  mm.ticket_assignment, the read behind the other forms.
 *
 * A director or a player's backend polls it for every ticket that waits
 * (docs/lifecycle.md), so its reads are by key in the ticket's queue.  On
 * the queue's Citus node they name the queue's shards (queue_shards.c)
 * with kept plans, instead of going through Citus's planner at every call;
 * on one node they read the tables with the same statements.  A ticket of
 * several queues that another of them matched is found through the
 * tables: its rows are in that queue's shards, anywhere in the cluster.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "queue_shards.h"

PG_FUNCTION_INFO_V1(mm_ticket_assignment);
PG_FUNCTION_INFO_V1(mm_get_assignment);

/* the ticket in its queue, by key */
static const MmQueueStatement TicketInQueue = {
	"SELECT x.id, x.status, x.match_id, x.team, x.queue, x.queues FROM mm.tickets x"
	" WHERE x.queue OPERATOR(pg_catalog.=) $1 AND x.id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, INT8OID}
};

/* a ticket of several queues that another of them matched (every shard) */
static const MmQueueStatement TicketMatchedElsewhere = {
	"SELECT x.id, x.status, x.match_id, x.team, x.queue, x.queues FROM mm.tickets_ended x"
	" WHERE x.id OPERATOR(pg_catalog.=) $2 AND $1 OPERATOR(pg_catalog.=) ANY (x.queues)",
	2, {TEXTOID, INT8OID}
};

/* the ticket's match in its queue, by key */
static const MmQueueStatement MatchInQueue = {
	"SELECT x.id, x.queue, x.status, x.connection, x.properties FROM mm.matches x"
	" WHERE x.queue OPERATOR(pg_catalog.=) $1 AND x.id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, INT8OID}
};

/* a proposed ticket of several queues: its match in one of them */
static const MmQueueStatement MatchInQueues = {
	"SELECT x.id, x.queue, x.status, x.connection, x.properties FROM mm.matches x"
	" WHERE x.queue OPERATOR(pg_catalog.=) ANY ($1) AND x.id OPERATOR(pg_catalog.=) $2",
	2, {TEXTARRAYOID, INT8OID}
};

/* the roles of the ticket's players in the match (NULL without roles) */
static const MmQueueStatement TicketRoles = {
	"SELECT pg_catalog.jsonb_object_agg(mp.player_id, mp.role) FILTER (WHERE mp.role IS NOT NULL)"
	" FROM mm.match_players mp WHERE mp.queue OPERATOR(pg_catalog.=) $1"
	" AND mp.match_id OPERATOR(pg_catalog.=) $2 AND mp.ticket_id OPERATOR(pg_catalog.=) $3",
	3, {TEXTOID, INT8OID, INT8OID}
};

/* Runs a read of at most one row; true when it found one. */
static bool
ReadOne(MmQueueRelations *relations, const MmQueueStatement *statement, Datum *args)
{
	int			rc = SPI_execute_plan(MmQueuePlan(relations, statement), args, NULL, true, 1);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading a ticket's assignment failed: %s", SPI_result_code_string(rc));
	return SPI_processed > 0;
}

/* Column n (from 1) of the row ReadOne found. */
static Datum
Column(int n, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, n, isnull);
}

/*
 * The assignment of ticket wanted_id in queue_text, as the one row of the
 * set-returning call fcinfo (materialized; none for a ticket that is not in
 * the queue).
 */
static Datum
Assignment(FunctionCallInfo fcinfo, text *queue_text, Datum wanted_id)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *queue = text_to_cstring(queue_text);
	MmQueueRelations *relations;
	Datum		args[3];
	Datum		values[8];
	bool		nulls[8] = {false, false, true, true, false, true, true, true};
	Datum		ticket_queues;
	bool		queues_null;
	bool		isnull;
	bool		in_queue;
	int			rc;

	InitMaterializedSRF(fcinfo, 0);
	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	relations = MmQueueRelationsOf(queue);
	args[0] = PointerGetDatum(queue_text);
	args[1] = wanted_id;
	in_queue = ReadOne(relations, &TicketInQueue, args);
	if (!in_queue && !ReadOne(MmQueueTables(), &TicketMatchedElsewhere, args))
	{
		SPI_finish();
		return (Datum) 0;
	}
	values[0] = Column(1, &isnull);
	values[1] = Column(2, &isnull);
	values[2] = Column(3, &nulls[2]);
	values[4] = Column(4, &nulls[4]);
	ticket_queues = Column(6, &queues_null);
	if (!nulls[2])
	{
		/* in the ticket's queue: the wanted one unless matched elsewhere */
		args[0] = Column(5, &isnull);
		args[1] = values[2];
		if (ReadOne(in_queue ? relations : MmQueueTables(), &MatchInQueue, args) ||
			(!queues_null && ReadOne(MmQueueTables(), &MatchInQueues,
									 (Datum[]) {ticket_queues, values[2]})))
		{
			Datum		match_queue = Column(2, &isnull);
			bool		match_here = in_queue && strcmp(TextDatumGetCString(match_queue), queue) == 0;

			values[3] = Column(3, &nulls[3]);
			values[5] = Column(4, &nulls[5]);
			values[6] = Column(5, &nulls[6]);
			args[0] = match_queue;
			args[1] = Column(1, &isnull);
			args[2] = values[0];
			ReadOne(match_here ? relations : MmQueueTables(), &TicketRoles, args);
			values[7] = Column(1, &nulls[7]);
		}
		else
			nulls[2] = true;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	SPI_finish();
	return (Datum) 0;
}

/*
 * mm.ticket_assignment(wanted_queue text, wanted_id bigint)
 *   RETURNS TABLE (ticket_id, ticket_status, match_id, match_status, team,
 *                  connection, properties, roles)
 *
 * The ticket's status, its match (in the ticket's queue; for a proposed
 * ticket of several queues, in one of them) with the match's status,
 * connection and properties, and the role of each of the ticket's players
 * ({"p1": "tank"}, NULL in a match without roles).  No row for a ticket
 * that is not in the queue.  STRICT: no row for a NULL argument.
 */
Datum
mm_ticket_assignment(PG_FUNCTION_ARGS)
{
	return Assignment(fcinfo, PG_GETARG_TEXT_PP(0), PG_GETARG_DATUM(1));
}

/*
 * mm.get_assignment(queue text, ticket_id bigint), the director's form:
 * the same row, a NULL queue refused, no row for a NULL id.  C rather than
 * SQL because directors poll it for every waiting ticket: a SQL function
 * with a SET clause plans its statements at every call.
 */
Datum
mm_get_assignment(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue must not be null")));
	if (PG_ARGISNULL(1))
	{
		InitMaterializedSRF(fcinfo, 0);
		return (Datum) 0;
	}
	return Assignment(fcinfo, PG_GETARG_TEXT_PP(0), PG_GETARG_DATUM(1));
}
