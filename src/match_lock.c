/*
 * match_lock.c
 *	  mm.lock_match: the lock every lifecycle step takes on its match, with
 *	  the step's checks.
 *
 * Every call that moves a match on (mm.accept_match, mm.assign,
 * mm.complete_match, mm.requeue_match, mm.leave_match, the backfill
 * requests) starts here, so it is read by key, on the queue's shards by
 * name on its Citus node (queue_shards.c) with a kept plan, instead of
 * through Citus's planner at every call.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "queue_shards.h"

PG_FUNCTION_INFO_V1(mm_lock_match);

static const MmQueueStatement LockMatch = {
	"SELECT x.* FROM mm.matches x"
	" WHERE x.queue OPERATOR(pg_catalog.=) $1 AND x.id OPERATOR(pg_catalog.=) $2 FOR UPDATE",
	2, {TEXTOID, INT8OID}
};

/* The allowed statuses joined with " or " (NULL elements skipped). */
static char *
AllowedList(ArrayType *allowed, bool *contains_status, bool *contains_null, const char *status)
{
	Datum	   *items;
	bool	   *nulls;
	int			n;
	StringInfoData out;

	deconstruct_array(allowed, TEXTOID, -1, false, TYPALIGN_INT, &items, &nulls, &n);
	initStringInfo(&out);
	*contains_status = false;
	*contains_null = false;
	for (int i = 0; i < n; i++)
	{
		char	   *item;

		if (nulls[i])
		{
			*contains_null = true;
			continue;
		}
		item = TextDatumGetCString(items[i]);
		if (strcmp(item, status) == 0)
			*contains_status = true;
		appendStringInfo(&out, "%s%s", out.len > 0 ? " or " : "", item);
	}
	return out.data;
}

/* A time as the session shows it (DateStyle, TimeZone), as RAISE does. */
static char *
TimestampText(TimestampTz t)
{
	return DatumGetCString(DirectFunctionCall1(timestamptz_out, TimestampTzGetDatum(t)));
}

/* The past participle of a step's action, for the hint. */
static const char *
ActionDone(const char *action)
{
	if (strcmp(action, "leave") == 0)
		return "left";
	if (strcmp(action, "complete") == 0)
		return "completed";
	if (strcmp(action, "requeue") == 0)
		return "requeued";
	return psprintf("%sed", action);
}

/*
 * mm.lock_match(queue text, match_id bigint, allowed text[], action text,
 *   now timestamptz DEFAULT NULL) RETURNS mm.matches
 *
 * Locks a match of a queue (FOR UPDATE) for a lifecycle step and returns
 * it; errors for a NULL match_id (22004), a match missing from the queue
 * (42704), one not in an allowed status (55000, with a hint naming them),
 * or a step dated before the match was formed (22023).
 */
Datum
mm_lock_match(PG_FUNCTION_ARGS)
{
	TupleDesc	result_desc;
	HeapTuple	row;
	TupleDesc	row_desc;
	char	   *queue;
	int64		match_id;
	Datum	   *values;
	bool	   *nulls;
	Datum		result;
	bool		isnull;
	int			rc;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("match_id must not be null")));
	match_id = PG_GETARG_INT64(1);
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("match " INT64_FORMAT " does not exist in queue \"<NULL>\"", match_id)));
	queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (get_call_result_type(fcinfo, NULL, &result_desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "mm.lock_match must return a row of mm.matches");

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	{
		MmQueueRelations *relations = MmQueueRelationsOf(queue);
		Datum		args[2] = {PG_GETARG_DATUM(0), Int64GetDatum(match_id)};

		rc = SPI_execute_plan(MmQueuePlan(relations, &LockMatch), args, NULL, false, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "locking match " INT64_FORMAT " failed: %s", match_id, SPI_result_code_string(rc));
	}
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("match " INT64_FORMAT " does not exist in queue \"%s\"", match_id, queue)));
	row = SPI_tuptable->vals[0];
	row_desc = SPI_tuptable->tupdesc;

	if (!PG_ARGISNULL(2))
	{
		char	   *status = SPI_getvalue(row, row_desc, SPI_fnumber(row_desc, "status"));
		bool		allowed_status;
		bool		unknown;
		char	   *allowed = AllowedList(PG_GETARG_ARRAYTYPE_P(2), &allowed_status, &unknown, status);

		/* status = ANY (allowed) is unknown, not false, with a NULL in it */
		if (!allowed_status && !unknown)
		{
			char	   *action = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));

			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot %s match " INT64_FORMAT ": it is %s",
							action ? action : "<NULL>", match_id, status),
					 errhint("Only a match that is %s can be %s.", allowed,
							 action ? ActionDone(action) : "")));
		}
	}
	if (!PG_ARGISNULL(4))
	{
		TimestampTz now = PG_GETARG_TIMESTAMPTZ(4);
		TimestampTz created = DatumGetTimestampTz(SPI_getbinval(row, row_desc,
																SPI_fnumber(row_desc, "created_at"), &isnull));

		if (now < created)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("now (%s) is before match " INT64_FORMAT " was formed (%s)",
							TimestampText(now), match_id, TimestampText(created))));
	}

	/* the row, column by column by name: a shard's columns are the table's */
	result_desc = BlessTupleDesc(result_desc);
	values = palloc(sizeof(Datum) * result_desc->natts);
	nulls = palloc(sizeof(bool) * result_desc->natts);
	for (int i = 0; i < result_desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(result_desc, i);
		int			column;

		nulls[i] = true;
		values[i] = (Datum) 0;
		if (att->attisdropped)
			continue;
		column = SPI_fnumber(row_desc, NameStr(att->attname));
		if (column <= 0)
			elog(ERROR, "the match row has no column \"%s\"", NameStr(att->attname));
		values[i] = SPI_getbinval(row, row_desc, column, &nulls[i]);
	}
	result = SPI_datumTransfer(HeapTupleGetDatum(heap_form_tuple(result_desc, values, nulls)), false, -1);
	SPI_finish();
	PG_RETURN_DATUM(result);
}
