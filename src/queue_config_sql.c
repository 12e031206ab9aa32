/*
 * queue_config_sql.c
 *	  The queue config's SQL entry points: the validation trigger on
 *	  mm.queues (mm_queues_validate), mm.validate_queue_config, and
 *	  MmParseQueueConfig, the parse with the match function checked against
 *	  the catalog that the tick, the ticket validation and the diagnostics
 *	  call.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "json_walk.h"
#include "match_function.h"
#include "queue_config_internal.h"

PG_FUNCTION_INFO_V1(mm_validate_queue_config);
PG_FUNCTION_INFO_V1(mm_queues_validate);

/* The catalog check of a config's match function (22023 at its path). */
static void
LookupMatchFunction(const char *name, MmJsonPath *path)
{
	(void) MmLookupMatchFunction(name, path);
}

/* Parses a queue config, its match function checked; see queue_config.h. */
MmQueueConfig *
MmParseQueueConfig(Jsonb *config)
{
	return MmParseQueueConfigWith(config, LookupMatchFunction);
}

/*
 * Checks a queue name; raises 42602 invalid_name otherwise.
 */
static void
ValidateQueueName(const char *name)
{
	const char *problem = MmNameProblem(name);

	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid queue name \"%s\": %s", name, problem),
				 errhint("A queue name has 1 to 64 characters: letters, digits, '_' and '-', starting with a letter or a digit.")));
}

/*
 * mm.validate_queue_config(config jsonb) RETURNS jsonb: validates a config
 * like a write to mm.queues would, and returns it normalised.
 */
Datum
mm_validate_queue_config(PG_FUNCTION_ARGS)
{
	Jsonb	   *source;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue config must not be null")));
	source = PG_GETARG_JSONB_P(0);
	PG_RETURN_JSONB_P(MmQueueConfigToJsonb(MmParseQueueConfig(source), source));
}

/* The config's "match_function" of a row of mm.queues, or NULL. */
static char *
RowMatchFunction(HeapTuple tuple, TupleDesc tupdesc)
{
	bool		isnull;
	Datum		config = heap_getattr(tuple, SPI_fnumber(tupdesc, "config"), tupdesc, &isnull);

	return isnull ? NULL : MmQueueConfigMatchFunction(DatumGetJsonbP(config));
}

/* A text column of a row of mm.queues, or NULL. */
static char *
RowText(HeapTuple tuple, TupleDesc tupdesc, int col)
{
	bool		isnull;
	Datum		value = heap_getattr(tuple, col, tupdesc, &isnull);

	return isnull ? NULL : TextDatumGetCString(value);
}

/*
 * BEFORE INSERT OR UPDATE row trigger on mm.queues: validates the name and
 * the config of every write, also direct INSERT/UPDATE, keeps updated_at
 * current on UPDATE, and sets the role the match function runs as
 * (MmMatchFunctionRoleForWrite).
 */
Datum
mm_queues_validate(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	tupdesc;
	HeapTuple	tuple;
	Datum		value;
	bool		isnull;
	MemoryContext parse_context;
	MemoryContext old_context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) || TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("mm_queues_validate must be a BEFORE INSERT OR UPDATE row trigger")));

	tupdesc = RelationGetDescr(trigdata->tg_relation);
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple : trigdata->tg_trigtuple;

	value = heap_getattr(tuple, SPI_fnumber(tupdesc, "name"), tupdesc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue name must not be null")));
	ValidateQueueName(TextDatumGetCString(value));

	value = heap_getattr(tuple, SPI_fnumber(tupdesc, "config"), tupdesc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("queue config must not be null")));

	/* Parse in a short-lived context: only the verdict is needed here. */
	parse_context = AllocSetContextCreate(CurrentMemoryContext, "mm queue config",
										  ALLOCSET_SMALL_SIZES);
	old_context = MemoryContextSwitchTo(parse_context);
	(void) MmParseQueueConfig(DatumGetJsonbP(value));
	MemoryContextSwitchTo(old_context);
	MemoryContextDelete(parse_context);

	/* 0.4 on: the role the match function runs as */
	{
		int			col = SPI_fnumber(tupdesc, "match_function_role");

		if (col > 0)
		{
			bool		update = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event);
			HeapTuple	old_tuple = trigdata->tg_trigtuple;
			char	   *role;
			bool		role_null;
			Datum		role_value;

			role = MmMatchFunctionRoleForWrite(RowText(tuple, tupdesc, SPI_fnumber(tupdesc, "name")),
											   RowMatchFunction(tuple, tupdesc),
											   update ? RowMatchFunction(old_tuple, tupdesc) : NULL,
											   RowText(tuple, tupdesc, col),
											   update ? RowText(old_tuple, tupdesc, col) : NULL);
			role_null = role == NULL;
			role_value = role_null ? (Datum) 0 : CStringGetTextDatum(role);
			tuple = heap_modify_tuple_by_cols(tuple, tupdesc, 1, &col, &role_value, &role_null);
		}
	}

	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		int			col = SPI_fnumber(tupdesc, "updated_at");
		Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
		bool		now_null = false;

		tuple = heap_modify_tuple_by_cols(tuple, tupdesc, 1, &col, &now, &now_null);
	}
	return PointerGetDatum(tuple);
}
