/*
 * ticket_assignment.c
 *	  A ticket's assignment: mm.get_assignment in its four forms (by queue
 *	  and id or by id alone, each with or without the ticket's token) and
 *	  mm.ticket_assignment; the tickets' tokens, the secret that reads an
 *	  assignment.
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
#include "common/sha2.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "event_signing.h"
#include "queue_shards.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_ticket_assignment);
PG_FUNCTION_INFO_V1(mm_get_assignment);
PG_FUNCTION_INFO_V1(mm_get_assignment_by_id);
PG_FUNCTION_INFO_V1(mm_get_assignment_with_token);
PG_FUNCTION_INFO_V1(mm_get_assignment_in_queue_with_token);
PG_FUNCTION_INFO_V1(mm_ticket_token);
PG_FUNCTION_INFO_V1(mm_ticket_token_matches);

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

/* a ticket's queue, by id alone (every queue's rows) */
static const MmQueueStatement TicketQueue = {
	"SELECT x.queue FROM mm.tickets x WHERE x.id OPERATOR(pg_catalog.=) $1",
	1, {INT8OID}
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

/* Column n (from 1) of the row a read found. */
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
	in_queue = MmQueueReadRow(relations, &TicketInQueue, args, true);
	if (!in_queue && !MmQueueReadRow(MmQueueTables(), &TicketMatchedElsewhere, args, true))
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
		if (MmQueueReadRow(in_queue ? relations : MmQueueTables(), &MatchInQueue, args, true) ||
			(!queues_null && MmQueueReadRow(MmQueueTables(), &MatchInQueues,
											(Datum[]) {ticket_queues, values[2]}, true)))
		{
			Datum		match_queue = Column(2, &isnull);
			bool		match_here = in_queue && strcmp(TextDatumGetCString(match_queue), queue) == 0;

			values[3] = Column(3, &nulls[3]);
			values[5] = Column(4, &nulls[5]);
			values[6] = Column(5, &nulls[6]);
			args[0] = match_queue;
			args[1] = Column(1, &isnull);
			args[2] = values[0];
			MmQueueReadRow(match_here ? relations : MmQueueTables(), &TicketRoles, args, true);
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
	MmRefuseNullArgument(fcinfo, 0, "queue");
	if (PG_ARGISNULL(1))
	{
		InitMaterializedSRF(fcinfo, 0);
		return (Datum) 0;
	}
	return Assignment(fcinfo, PG_GETARG_TEXT_PP(0), PG_GETARG_DATUM(1));
}

/*
 * A ticket's token: the secret that reads its assignment (mm.get_assignment
 * with a token).  It is derived, not stored: the first 16 bytes of the
 * HMAC-SHA256, under the event key (event_signing.c), of
 * "mm ticket token <id>", as 32 lower-case hex digits.  Nothing is written
 * when a ticket is created (INSERT and COPY cost the same), a requeued
 * ticket keeps its token with its id, and only a role that can read the key
 * could compute one.  A new key (docs/events.md) gives every ticket a new
 * token.
 */
#define MM_TICKET_TOKEN_BYTES 16
#define MM_TICKET_TOKEN_HEX (2 * MM_TICKET_TOKEN_BYTES)

static void
TicketToken(int64 ticket_id, char *hex)
{
	char		data[64];
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	int			length;

	length = snprintf(data, sizeof(data), "mm ticket token " INT64_FORMAT, ticket_id);
	if (!MmEventKeyHmac(data, length, digest))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mm.event_key holds no key: ticket tokens cannot be made"),
				 errhint("Insert a key of 16 to 256 random bytes into mm.event_key (docs/events.md).")));
	hex_encode((const char *) digest, MM_TICKET_TOKEN_BYTES, hex);
	hex[MM_TICKET_TOKEN_HEX] = '\0';
}

/*
 * mm.ticket_token(ticket_id bigint) RETURNS text
 *
 * The token of a ticket id (whether or not the ticket exists).  STRICT; for
 * mm_director and the creation functions only.
 */
Datum
mm_ticket_token(PG_FUNCTION_ARGS)
{
	char		hex[MM_TICKET_TOKEN_HEX + 1];

	TicketToken(PG_GETARG_INT64(0), hex);
	PG_RETURN_TEXT_P(cstring_to_text(hex));
}

/*
 * mm.ticket_token_matches(ticket_id bigint, token text) RETURNS boolean
 *
 * Whether token is the ticket's token.  The comparison takes the same time
 * wherever the first difference is, so a caller cannot guess a token digit
 * by digit; only a token of the wrong length is refused at once (the length
 * is no secret).  STRICT.
 */
static bool
TokenMatches(int64 ticket_id, text *token)
{
	const char *given = VARDATA_ANY(token);
	char		expected[MM_TICKET_TOKEN_HEX + 1];
	int			diff = 0;
	int			i;

	TicketToken(ticket_id, expected);
	if (VARSIZE_ANY_EXHDR(token) != MM_TICKET_TOKEN_HEX)
		return false;
	for (i = 0; i < MM_TICKET_TOKEN_HEX; i++)
		diff |= expected[i] ^ given[i];
	return diff == 0;
}

Datum
mm_ticket_token_matches(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(TokenMatches(PG_GETARG_INT64(0), PG_GETARG_TEXT_PP(1)));
}

/* The assignment of ticket id, its queue found in every queue's rows. */
static Datum
AssignmentById(FunctionCallInfo fcinfo, Datum id)
{
	text	   *queue = NULL;
	int			rc;

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	if (MmQueueReadRow(MmQueueTables(), &TicketQueue, &id, true))
	{
		bool		isnull;
		Datum		value = Column(1, &isnull);

		/* copied out of SPI's memory, which SPI_finish frees */
		if (!isnull)
			queue = (text *) SPI_datumTransfer(value, false, -1);
	}
	SPI_finish();
	if (queue == NULL)
	{
		InitMaterializedSRF(fcinfo, 0);
		return (Datum) 0;
	}
	return Assignment(fcinfo, queue, id);
}

/* mm.get_assignment(ticket_id bigint): the director's form by id.  STRICT. */
Datum
mm_get_assignment_by_id(PG_FUNCTION_ARGS)
{
	return AssignmentById(fcinfo, PG_GETARG_DATUM(0));
}

/*
 * Refuses a NULL id or token (22004) and a token that is not the ticket's
 * (42501, whether or not the ticket exists: the answer does not tell which
 * ids exist), before anything is read.
 */
static void
CheckToken(FunctionCallInfo fcinfo, int id_arg, int token_arg)
{
	MmRefuseNullArgument(fcinfo, id_arg, "ticket_id");
	MmRefuseNullArgument(fcinfo, token_arg, "token");
	if (!TokenMatches(PG_GETARG_INT64(id_arg), PG_GETARG_TEXT_PP(token_arg)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("token is not the token of ticket " INT64_FORMAT, PG_GETARG_INT64(id_arg)),
				 errhint("Pass the token that mm.create_ticket_with_token returned with the ticket.")));
}

/* mm.get_assignment(ticket_id bigint, token text): a polling client's form. */
Datum
mm_get_assignment_with_token(PG_FUNCTION_ARGS)
{
	CheckToken(fcinfo, 0, 1);
	return AssignmentById(fcinfo, PG_GETARG_DATUM(0));
}

/*
 * mm.get_assignment(queue text, ticket_id bigint, token text): the same by
 * (queue, id), which Citus sends to the queue's node; a NULL queue is
 * refused first (22004).
 */
Datum
mm_get_assignment_in_queue_with_token(PG_FUNCTION_ARGS)
{
	MmRefuseNullArgument(fcinfo, 0, "queue");
	CheckToken(fcinfo, 1, 2);
	return Assignment(fcinfo, PG_GETARG_TEXT_PP(0), PG_GETARG_DATUM(1));
}
