/*
 * events.c
 *	  Builds the mm_events payloads and queues them with Async_Notify.
 *
 * Async_Notify only queues the notification: PostgreSQL delivers it when the
 * transaction commits and drops it on rollback, so nothing rolled back is
 * ever announced.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"

#include "events.h"

/* Appends "key": [ids]. */
static void
AppendIdArray(StringInfo buf, const char *key, int n, const int64 *ids)
{
	int			i;

	appendStringInfo(buf, ", \"%s\": [", key);
	for (i = 0; i < n; i++)
		appendStringInfo(buf, "%s" INT64_FORMAT, i > 0 ? ", " : "", ids[i]);
	appendStringInfoChar(buf, ']');
}

/* Appends a JSON string, or null. */
static void
AppendJsonString(StringInfo buf, const char *s)
{
	if (s == NULL)
		appendStringInfoString(buf, "null");
	else
		escape_json(buf, s);
}

/* Opens {"event": ..., "queue": ... */
static void
AppendHead(StringInfo buf, const char *event, const char *queue)
{
	appendStringInfoString(buf, "{\"event\": ");
	escape_json(buf, event);
	appendStringInfoString(buf, ", \"queue\": ");
	escape_json(buf, queue);
}

/*
 * A listening session that stops reading its notifications holds the queue's
 * tail, and the queue fills; the commit of a transaction that NOTIFYs then
 * fails.  A tick would do all its work only to be rolled back at commit, tick
 * after tick, so it stops first and says why.
 */
void
MmCheckNotifyQueue(void)
{
	LOCAL_FCINFO(fcinfo, 0);
	double		usage;

	InitFunctionCallInfoData(*fcinfo, NULL, 0, InvalidOid, NULL, NULL);
	usage = DatumGetFloat8(pg_notification_queue_usage(fcinfo));
	if (usage >= MmMaxNotifyQueueUsage)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the notification queue is %.1f%% full", usage * 100),
				 errdetail("mm.tick announces every match on mm_events at commit, which fails "
						   "with the queue full; no match was formed (matchmaking.max_notify_queue_usage = %g).",
						   MmMaxNotifyQueueUsage),
				 errhint("A session that listens is not reading its notifications: the server log "
						 "names it (\"NOTIFY queue is ... full\").")));
}

/* Signs a payload and queues it; it goes out at commit. */
static void
SignAndNotify(StringInfo payload)
{
	MmSignPayload(payload);
	Async_Notify(MM_EVENTS_CHANNEL, payload->data);
}

/*
 * The match_found (or match_proposed) payload into buf, compact when the full
 * one is too large.
 */
static void
MatchFoundPayload(StringInfo buf, const char *event, const char *queue, int64 match_id,
				  const char *region,
				  double quality, int nteams, const MmEventTeam *teams,
				  int ntickets, const int64 *ticket_ids)
{
	char	   *quality_text;
	int			t,
				p;

	AppendHead(buf, event, queue);
	appendStringInfo(buf, ", \"match_id\": " INT64_FORMAT ", \"region\": ", match_id);
	AppendJsonString(buf, region);
	quality_text = float8out_internal(quality);
	appendStringInfo(buf, ", \"quality\": %s, \"teams\": [", quality_text);
	pfree(quality_text);
	for (t = 0; t < nteams; t++)
	{
		appendStringInfoString(buf, t > 0 ? ", {\"name\": " : "{\"name\": ");
		AppendJsonString(buf, teams[t].name);
		appendStringInfoString(buf, ", \"players\": [");
		for (p = 0; p < teams[t].nplayers; p++)
		{
			if (p > 0)
				appendStringInfoString(buf, ", ");
			escape_json(buf, teams[t].player_ids[p]);
		}
		appendStringInfoChar(buf, ']');
		if (teams[t].roles != NULL)
		{
			bool		first = true;

			appendStringInfoString(buf, ", \"roles\": {");
			for (p = 0; p < teams[t].nplayers; p++)
			{
				if (p > 0)
					appendStringInfoString(buf, ", ");
				escape_json(buf, teams[t].player_ids[p]);
				appendStringInfoString(buf, ": ");
				escape_json(buf, teams[t].roles[p]);
			}
			appendStringInfoString(buf, "}, \"autofilled\": [");
			for (p = 0; p < teams[t].nplayers; p++)
				if (teams[t].autofilled[p])
				{
					if (!first)
						appendStringInfoString(buf, ", ");
					escape_json(buf, teams[t].player_ids[p]);
					first = false;
				}
			appendStringInfoChar(buf, ']');
		}
		appendStringInfoChar(buf, '}');
	}
	appendStringInfoChar(buf, ']');
	AppendIdArray(buf, "tickets", ntickets, ticket_ids);
	appendStringInfoChar(buf, '}');
	if (buf->len <= MM_EVENT_BODY_MAX)
		return;

	/* too large: ids only; the client reads the rest from mm.match_players */
	resetStringInfo(buf);
	AppendHead(buf, event, queue);
	appendStringInfo(buf, ", \"match_id\": " INT64_FORMAT, match_id);
	AppendIdArray(buf, "tickets", ntickets, ticket_ids);
	appendStringInfoString(buf, ", \"truncated\": true}");
	if (buf->len <= MM_EVENT_BODY_MAX)
		return;
	resetStringInfo(buf);
	AppendHead(buf, event, queue);
	appendStringInfo(buf, ", \"match_id\": " INT64_FORMAT ", \"truncated\": true}", match_id);
}

/* Queues a match_found or match_proposed notification (sent at commit). */
void
MmNotifyMatchFound(const char *event, const char *queue, int64 match_id, const char *region,
				   double quality, int nteams, const MmEventTeam *teams,
				   int ntickets, const int64 *ticket_ids)
{
	StringInfoData payload;

	initStringInfo(&payload);
	MatchFoundPayload(&payload, event, queue, match_id, region, quality, nteams, teams,
					  ntickets, ticket_ids);
	SignAndNotify(&payload);
	pfree(payload.data);
}

/* Queues ticket events, split so each payload stays under the limit. */
void
MmNotifyTickets(const char *event, const char *queue, int ntickets, const int64 *ticket_ids)
{
	MmNotifyTicketsWithReason(event, queue, NULL, ntickets, ticket_ids);
}

/* The same with a "reason" member before the tickets (NULL: none). */
void
MmNotifyTicketsWithReason(const char *event, const char *queue, const char *reason,
						  int ntickets, const int64 *ticket_ids)
{
	StringInfoData buf;
	int			i = 0;

	initStringInfo(&buf);
	while (i < ntickets)
	{
		int			first = i;

		resetStringInfo(&buf);
		AppendHead(&buf, event, queue);
		if (reason != NULL)
		{
			appendStringInfoString(&buf, ", \"reason\": ");
			escape_json(&buf, reason);
		}
		appendStringInfoString(&buf, ", \"tickets\": [");
		/* 24 bytes: the longest id, its separator and the closing "]}" */
		for (; i < ntickets && (i == first || buf.len + 24 <= MM_EVENT_BODY_MAX); i++)
			appendStringInfo(&buf, "%s" INT64_FORMAT, i > first ? ", " : "", ticket_ids[i]);
		appendStringInfoString(&buf, "]}");
		SignAndNotify(&buf);
	}
	pfree(buf.data);
}

PG_FUNCTION_INFO_V1(mm_notify_ticket_event);

/* Above this many tickets the check reads them in one statement. */
#define CHECK_TICKETS_ONE_BY_ONE 16

static void
RefuseTicketNotEnded(int64 id, const char *status, const char *queue)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("ticket " INT64_FORMAT " is not %s in queue \"%s\"", id, status, queue),
			 errdetail("An event is only sent for tickets in the state it announces.")));
}

/*
 * Refuses to announce a ticket that is not in the state the event names:
 * the payload is signed, so a listener may act on it, and this function is
 * open to SQL callers.  A few tickets (a cancel) are read one by one by
 * their key, (id, queue), in a statement prepared once per session: Citus
 * routes it without planning it again, and no statistics can make it read
 * the queue's other ended tickets (a read of the ids as a set went through
 * an index of the queue alone on a shard whose statistics predated them,
 * 0.5 ms at 3,500 ended tickets and growing).  Many tickets (a dropped
 * queue) are read as a set difference, not an anti join: right after a
 * bulk end the statistics still say the ended tickets are few, and a nested
 * loop over them was quadratic.
 */
static void
CheckTicketsEnded(const char *event, const char *queue, int n, const int64 *ids, ArrayType *array)
{
	static SPIPlanPtr by_key = NULL;
	const char *status = strcmp(event, "ticket_cancelled") == 0 ? "cancelled" : "timed_out";
	Oid			argtypes[3] = {INT8ARRAYOID, TEXTOID, TEXTOID};
	Datum		values[3];
	int			rc;

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	values[1] = CStringGetTextDatum(queue);
	values[2] = CStringGetTextDatum(status);
	if (n <= CHECK_TICKETS_ONE_BY_ONE)
	{
		Oid			key_types[3] = {INT8OID, TEXTOID, TEXTOID};
		int			i;

		if (by_key == NULL)
		{
			SPIPlanPtr	plan = SPI_prepare("SELECT 1 FROM mm.tickets t"
										   " WHERE t.id OPERATOR(pg_catalog.=) $1"
										   " AND t.queue OPERATOR(pg_catalog.=) $2"
										   " AND t.status OPERATOR(pg_catalog.=) $3",
										   3, key_types);

			if (plan == NULL || SPI_keepplan(plan) != 0)
				elog(ERROR, "preparing the check of an event's tickets failed: %s",
					 SPI_result_code_string(SPI_result));
			by_key = plan;
		}
		for (i = 0; i < n; i++)
		{
			values[0] = Int64GetDatum(ids[i]);
			rc = SPI_execute_plan(by_key, values, NULL, true, 1);
			if (rc != SPI_OK_SELECT)
				elog(ERROR, "checking the tickets of an event failed: %s", SPI_result_code_string(rc));
			if (SPI_processed == 0)
				RefuseTicketNotEnded(ids[i], status, queue);
		}
	}
	else
	{
		values[0] = PointerGetDatum(array);
		rc = SPI_execute_with_args("SELECT d.id FROM (SELECT u.id FROM pg_catalog.unnest($1) AS u(id)"
								   " EXCEPT SELECT t.id FROM mm.tickets t"
								   " WHERE t.id OPERATOR(pg_catalog.=) ANY ($1)"
								   " AND t.queue OPERATOR(pg_catalog.=) $2"
								   " AND t.status OPERATOR(pg_catalog.=) $3) AS d"
								   " LIMIT 1",
								   3, argtypes, values, NULL, true, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "checking the tickets of an event failed: %s", SPI_result_code_string(rc));
		if (SPI_processed > 0)
		{
			bool		isnull;

			RefuseTicketNotEnded(DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
															 SPI_tuptable->tupdesc, 1, &isnull)),
								 status, queue);
		}
	}
	if ((rc = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
}

/*
 * mm.notify_ticket_event(event text, queue text, tickets bigint[]) RETURNS void
 *
 * Queues a ticket event for SQL callers (mm.cancel_ticket, mm.drop_queue's
 * bulk cancel), split under the payload limit exactly as the tick's
 * ticket_timed_out, once every ticket is checked to be in that state.
 */
Datum
mm_notify_ticket_event(PG_FUNCTION_ARGS)
{
	char	   *event = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *queue = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(2);
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i;
	int64	   *ids;

	if (strcmp(event, "ticket_cancelled") != 0 && strcmp(event, "ticket_timed_out") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("event must be ticket_cancelled or ticket_timed_out")));
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("tickets must be a one-dimensional array")));
	deconstruct_array(array, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	ids = palloc(sizeof(int64) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("tickets must not contain nulls")));
		ids[i] = DatumGetInt64(elems[i]);
	}
	if (n > 0)
		CheckTicketsEnded(event, queue, n, ids, array);
	MmNotifyTickets(event, queue, n, ids);
	PG_RETURN_VOID();
}

/*
 * Queues a match lifecycle event: {"event", "queue", "match_id", "status",
 * <the keys of details>, "sig"}.  The queue and status are read from
 * mm.matches, so the payload states the match as this transaction leaves it;
 * details (an object) carries the event's own fields.  With the queue known
 * (queue not NULL) the match is read by (queue, id), which Citus routes to
 * the queue's shard; by id alone it reads every shard.
 */
static void
NotifyMatchEvent(const char *event, text *queue_arg, int64 match_id, Jsonb *details)
{
	Oid			argtypes[2] = {INT8OID, TEXTOID};
	Datum		values[2];
	char	   *queue;
	char	   *status;
	char	   *details_text;
	StringInfoData buf;
	MemoryContext outer = CurrentMemoryContext;
	int			rc;

	if (!JB_ROOT_IS_OBJECT(details) || JB_ROOT_IS_SCALAR(details))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("details must be a JSON object")));
	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	values[0] = Int64GetDatum(match_id);
	if (queue_arg != NULL)
	{
		/* by its key, prepared once per session: Citus routes it unplanned */
		static SPIPlanPtr by_key = NULL;

		if (by_key == NULL)
		{
			SPIPlanPtr	plan = SPI_prepare("SELECT queue, status FROM mm.matches"
										   " WHERE queue OPERATOR(pg_catalog.=) $2 AND id OPERATOR(pg_catalog.=) $1",
										   2, argtypes);

			if (plan == NULL || SPI_keepplan(plan) != 0)
				elog(ERROR, "preparing the read of a match failed: %s", SPI_result_code_string(SPI_result));
			by_key = plan;
		}
		values[1] = PointerGetDatum(queue_arg);
		rc = SPI_execute_plan(by_key, values, NULL, false, 1);
	}
	else
		rc = SPI_execute_with_args("SELECT queue, status FROM mm.matches WHERE id OPERATOR(pg_catalog.=) $1",
								   1, argtypes, values, NULL, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading match " INT64_FORMAT " failed: %s", match_id, SPI_result_code_string(rc));
	if (SPI_processed == 0)
	{
		if (queue_arg != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("match " INT64_FORMAT " does not exist in queue \"%s\"", match_id,
							text_to_cstring(queue_arg))));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("match " INT64_FORMAT " does not exist", match_id)));
	}
	/* copied out of SPI's memory before SPI_finish frees it */
	queue = MemoryContextStrdup(outer,
								SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	status = MemoryContextStrdup(outer,
								 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
	if ((rc = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));

	initStringInfo(&buf);
	AppendHead(&buf, event, queue);
	appendStringInfo(&buf, ", \"match_id\": " INT64_FORMAT ", \"status\": ", match_id);
	escape_json(&buf, status);
	details_text = JsonbToCString(NULL, &details->root, VARSIZE(details));
	/* the details object's members follow: drop its braces */
	if (strcmp(details_text, "{}") != 0)
	{
		size_t		len = strlen(details_text);

		appendStringInfoString(&buf, ", ");
		appendBinaryStringInfo(&buf, details_text + 1, (int) len - 2);
	}
	appendStringInfoChar(&buf, '}');
	if (buf.len > MM_EVENT_BODY_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the %s event of match " INT64_FORMAT " would be %d bytes", event, match_id, buf.len),
				 errdetail("A NOTIFY payload holds at most %d bytes before its signature.",
						   MM_EVENT_BODY_MAX)));
	SignAndNotify(&buf);
	pfree(buf.data);
}

PG_FUNCTION_INFO_V1(mm_notify_match_event);

/*
 * mm.notify_match_event(event text, match_id bigint, details jsonb) RETURNS void
 *
 * Queues a match lifecycle event, the match found by its id
 * (NotifyMatchEvent).  Internal: EXECUTE is revoked from PUBLIC.
 */
Datum
mm_notify_match_event(PG_FUNCTION_ARGS)
{
	NotifyMatchEvent(text_to_cstring(PG_GETARG_TEXT_PP(0)), NULL, PG_GETARG_INT64(1),
					 PG_GETARG_JSONB_P(2));
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(mm_notify_queue_match_event);

/*
 * mm.notify_match_event(event text, queue text, match_id bigint, details jsonb) RETURNS void
 *
 * The same, the match found by (queue, id): on Citus, on the queue's shard
 * only.  The lifecycle's calls by queue and the tick use it.
 */
Datum
mm_notify_queue_match_event(PG_FUNCTION_ARGS)
{
	NotifyMatchEvent(text_to_cstring(PG_GETARG_TEXT_PP(0)), PG_GETARG_TEXT_PP(1), PG_GETARG_INT64(2),
					 PG_GETARG_JSONB_P(3));
	PG_RETURN_VOID();
}
