/*
 * explain.c
 *	  mm.explain_ticket: why a searching ticket is still waiting.
 *
 * For the ticket, against the other searching tickets of its queue (or of
 * another queue it searches in) as that queue's tick would see them at `now`: each rule's threshold (after expansion) and
 * when it next widens; how many tickets pass the rule against this one
 * (a pair's step is that of its older ticket, as in the search); the rules
 * that block its nearest candidates (ranked as the search ranks them); and
 * the wait the queue's last hour suggests.  Read-only, no locks.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "player_sources.h"
#include "queue_config.h"
#include "rules.h"
#include "ticket_parse.h"

/* How far ahead a rule's next widening is looked for. */
#define MM_EXPLAIN_HORIZON_SECONDS (7 * 86400.0)
/* The nearest candidates reported. */
#define MM_EXPLAIN_NEAREST 5

/* A rule's state at an age: on (with its step) or off. */
static void
RuleAt(const MmRuleConfig *rule, double age, bool *on, int *step, double *threshold)
{
	*on = MmRuleThresholdAt(rule, age, threshold, step);
	if (!*on)
		*step = -1;
}

/*
 * The first age after `age` at which the rule's step or on/off state
 * changes, or a negative number when it does not within the horizon.  A
 * rule only widens with age (steps grow, a rule turns optional once), so the
 * change point is found by doubling, then bisection to a millisecond.
 */
static double
NextChange(const MmRuleConfig *rule, double age)
{
	bool		on0,
				on;
	int			step0,
				step;
	double		t0,
				thr,
				lo = age,
				hi,
				d = 1.0;

	RuleAt(rule, age, &on0, &step0, &t0);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		hi = age + d;
		RuleAt(rule, hi, &on, &step, &thr);
		if (on != on0 || step != step0)
			break;
		if (d >= MM_EXPLAIN_HORIZON_SECONDS)
			return -1;
		lo = hi;
		d *= 2;
	}
	/*
	 * At very large ages neighbouring doubles are more than a millisecond
	 * apart: stop when the midpoint is one of the ends (64 rounds at most).
	 */
	for (int round = 0; round < 64 && hi - lo > 0.001; round++)
	{
		double		mid = (lo + hi) / 2;

		CHECK_FOR_INTERRUPTS();
		if (mid <= lo || mid >= hi)
			break;
		RuleAt(rule, mid, &on, &step, &thr);
		if (on != on0 || step != step0)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* Whether a candidate passes a ticket rule against the ticket, alone. */
static bool
PairPasses(const MmRuleContext *context, int r, const MmRuleHandler *handler, MmRuleState *state,
		   const MmTicket *self, const MmTicket *cand)
{
	const MmRuleConfig *rule = &context->config->rules[r];
	bool		on;
	int			step;
	double		threshold;

	RuleAt(rule, Max(self->age_seconds, cand->age_seconds), &on, &step, &threshold);
	if (!on)
		return true;
	if (self->values[r].kind == MM_VALUE_MISSING || cand->values[r].kind == MM_VALUE_MISSING)
		return false;
	MmRuleStateInit(context, rule, state);
	handler->add(context, state, &self->values[r]);
	return handler->can_add(context, state, &cand->values[r], threshold);
}

/* A rule that can be judged on a pair of tickets. */
static bool
PairRule(const MmRuleConfig *rule, const MmRuleHandler *handler)
{
	return handler->scope == MM_SCOPE_TICKETS && rule->type != MM_RULE_COMPOUND &&
		handler->can_add != NULL && handler->add != NULL;
}

PG_FUNCTION_INFO_V1(mm_explain_ticket);

Datum
mm_explain_ticket(PG_FUNCTION_ARGS)
{
	int64		ticket_id;
	TimestampTz now;
	Oid			ticket_args[] = {INT8OID, TEXTOID};
	Oid			text1[] = {TEXTOID};
	Oid			args3[] = {TEXTOID, TIMESTAMPTZOID, INT8OID};
	Datum		values[3];
	MemoryContext caller = CurrentMemoryContext;
	char	   *queue;
	char	   *status;
	char	   *own_queue;
	char	   *queues_json;
	bool		searches_in;
	Jsonb	   *config_jsonb;
	MmQueueConfig *config;
	MmRuleContext context;
	MmTicket   *tickets;
	Jsonb	  **players;
	MmPlayerInput inputs[MM_MAX_MATCH_SIZE];
	const MmRuleHandler **handlers;
	MmRuleState *states;
	bool	   *rule_on;
	double	   *threshold;
	int			ntickets,
				self = -1,
				r,
				i,
				rc;
	bool		isnull;
	double		median = -1;
	StringInfoData out;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", PG_ARGISNULL(0) ? "ticket_id" : "now")));
	ticket_id = PG_GETARG_INT64(0);
	now = PG_GETARG_TIMESTAMPTZ(1);
	if (TIMESTAMP_NOT_FINITE(now))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("now must be a finite timestamp")));

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));

	/*
	 * The ticket, every queue it searches in (its own first), and whether
	 * the queue asked for (default: its own) is one of them.
	 */
	values[0] = Int64GetDatum(ticket_id);
	values[1] = PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2);
	rc = SPI_execute_with_args("SELECT t.queue, t.status,"
							   " pg_catalog.to_jsonb(pg_catalog.array_prepend(t.queue, COALESCE(t.queues, '{}')))::text,"
							   " $2 IS NULL OR $2 OPERATOR(pg_catalog.=) t.queue"
							   " OR $2 OPERATOR(pg_catalog.=) ANY (t.queues)"
							   " FROM mm.tickets t WHERE t.id OPERATOR(pg_catalog.=) $1",
							   2, ticket_args, values, PG_ARGISNULL(2) ? " n" : NULL,
							   true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading ticket " INT64_FORMAT " failed: %s", ticket_id, SPI_result_code_string(rc));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("ticket " INT64_FORMAT " does not exist", ticket_id)));
	own_queue = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	status = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2));
	queues_json = MemoryContextStrdup(caller, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3));
	searches_in = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
	MemoryContextSwitchTo(caller);
	queue = PG_ARGISNULL(2) ? own_queue : text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (strcmp(status, "searching") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("ticket " INT64_FORMAT " is %s, not searching", ticket_id, status),
				 errhint("mm.get_assignment tells a ticket's match.")));
	if (!searches_in)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ticket " INT64_FORMAT " does not search in queue \"%s\"", ticket_id, queue),
				 errdetail("It searches in %s.", queues_json)));

	/* the queue's config */
	values[0] = CStringGetTextDatum(queue);
	rc = SPI_execute_with_args("SELECT q.config FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) $1",
							   1, text1, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading queue \"%s\" failed: %s", queue, SPI_result_code_string(rc));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("queue \"%s\" does not exist", queue)));
	MemoryContextSwitchTo(caller);
	config_jsonb = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	config = MmParseQueueConfig(config_jsonb);
	MmRuleContextInit(&context, config);

	/* the searching tickets of the queue as its tick would load them, and this one */
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now);
	values[2] = Int64GetDatum(ticket_id);
	rc = SPI_execute_with_args("SELECT t.id, t.created_at, t.players FROM mm.tickets_active t"
							   " WHERE t.status OPERATOR(pg_catalog.=) 'searching'"
							   " AND (t.id OPERATOR(pg_catalog.=) $3"
							   " OR (t.created_at OPERATOR(pg_catalog.<=) $2"
							   " AND (t.queue OPERATOR(pg_catalog.=) $1 OR t.id OPERATOR(pg_catalog.=) ANY (ARRAY("
							   " SELECT o.ticket_id FROM mm.ticket_queues o WHERE o.queue OPERATOR(pg_catalog.=) $1)))))"
							   " ORDER BY t.created_at, t.id",
							   3, args3, values, NULL, true, 0);
	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the searching tickets failed: %s", SPI_result_code_string(rc));
	ntickets = (int) SPI_processed;
	tickets = palloc0(sizeof(MmTicket) * Max(ntickets, 1));
	players = palloc(sizeof(Jsonb *) * Max(ntickets, 1));
	for (i = 0; i < ntickets; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TimestampTz created;

		CHECK_FOR_INTERRUPTS();
		tickets[i].id = DatumGetInt64(SPI_getbinval(tuple, SPI_tuptable->tupdesc, 1, &isnull));
		created = DatumGetTimestampTz(SPI_getbinval(tuple, SPI_tuptable->tupdesc, 2, &isnull));
		tickets[i].age_seconds = Max(0.0, ((double) now - (double) created) / USECS_PER_SEC);
		players[i] = DatumGetJsonbPCopy(SPI_getbinval(tuple, SPI_tuptable->tupdesc, 3, &isnull));
		if (tickets[i].id == ticket_id)
			self = i;
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);
	if (MmConfigReadsPlayerSources(config))
		MmParseTicketsWithSources(&context, queue, tickets, players, ntickets, false);
	else
		for (i = 0; i < ntickets; i++)
			MmParseTicket(&context, &tickets[i], players[i], inputs, NULL);
	MemoryContextSwitchTo(caller);

	/* the queue's recent waits: the median of the last hour's matched tickets */
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now);
	rc = SPI_execute_with_args("SELECT pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY"
							   " EXTRACT(epoch FROM t.matched_at OPERATOR(pg_catalog.-) t.created_at))"
							   " FROM mm.tickets_ended t WHERE t.queue OPERATOR(pg_catalog.=) $1"
							   " AND t.status OPERATOR(pg_catalog.=) 'matched'"
							   " AND t.matched_at OPERATOR(pg_catalog.<=) $2"
							   " AND t.matched_at OPERATOR(pg_catalog.>) ($2 OPERATOR(pg_catalog.-) CAST('1 hour' AS pg_catalog.interval))",
							   2, args3, values, NULL, true, 1);
	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the queue's recent waits failed: %s", SPI_result_code_string(rc));
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			median = DatumGetFloat8(d);
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);

	handlers = palloc(sizeof(MmRuleHandler *) * Max(config->nrules, 1));
	states = palloc0(sizeof(MmRuleState) * Max(config->nrules, 1));
	rule_on = palloc(sizeof(bool) * Max(config->nrules, 1));
	threshold = palloc(sizeof(double) * Max(config->nrules, 1));
	for (r = 0; r < config->nrules; r++)
	{
		int			step;

		handlers[r] = MmRuleHandlerFor(config->rules[r].type);
		MmRuleStateAlloc(&states[r], MmRuleStateCapacity(config, r, tickets, ntickets));
		RuleAt(&config->rules[r], tickets[self].age_seconds, &rule_on[r], &step, &threshold[r]);
	}

	initStringInfo(&out);
	appendStringInfo(&out, "{\"ticket_id\": " INT64_FORMAT ", \"queue\": ", ticket_id);
	escape_json(&out, queue);
	appendStringInfo(&out, ", \"queues\": %s", queues_json);
	appendStringInfo(&out, ", \"age_seconds\": %.3f, \"searching_tickets\": %d, \"rules\": [",
					 tickets[self].age_seconds, ntickets - 1);
	for (r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];
		bool		on;
		int			step;
		double		thr,
					next = NextChange(rule, tickets[self].age_seconds);

		RuleAt(rule, tickets[self].age_seconds, &on, &step, &thr);
		appendStringInfoString(&out, r > 0 ? ", {\"name\": " : "{\"name\": ");
		escape_json(&out, rule->name);
		appendStringInfoString(&out, ", \"type\": ");
		escape_json(&out, MmRuleHandlerFor(rule->type)->type_name);
		if (on)
		{
			appendStringInfo(&out, ", \"on\": true, \"step\": %d", step);
			if (MmRuleHasThreshold(rule))
				appendStringInfo(&out, ", \"threshold\": %s", float8out_internal(thr));
		}
		else
			appendStringInfoString(&out, ", \"on\": false");
		if (next >= 0)
		{
			appendStringInfoString(&out, ", \"next_widening_at\": ");
			escape_json(&out, timestamptz_to_str(now + (int64) ((next - tickets[self].age_seconds) *
																USECS_PER_SEC)));
		}
		else
			appendStringInfoString(&out, ", \"next_widening_at\": null");
		if (PairRule(rule, handlers[r]))
		{
			int			passing = 0;

			for (i = 0; i < ntickets; i++)
				if (i != self && PairPasses(&context, r, handlers[r], &states[r], &tickets[self], &tickets[i]))
					passing++;
			appendStringInfo(&out, ", \"passing_tickets\": %d}", passing);
		}
		else
			/* team rules and compounds are decided on whole matches */
			appendStringInfoString(&out, ", \"passing_tickets\": null}");
	}

	/* the nearest candidates, as the search ranks them, and what blocks each */
	appendStringInfoString(&out, "], \"nearest\": [");
	{
		int			nearest[MM_EXPLAIN_NEAREST];
		double		cost[MM_EXPLAIN_NEAREST];
		int			n = 0,
					k;

		for (i = 0; i < ntickets; i++)
		{
			double		c;

			if (i == self)
				continue;
			c = MmCandidateCost(&context, &tickets[self], &tickets[i], rule_on, threshold);
			/* insertion into the sorted few: ties keep age order */
			for (k = n; k > 0 && cost[k - 1] > c; k--)
			{
				if (k < MM_EXPLAIN_NEAREST)
				{
					nearest[k] = nearest[k - 1];
					cost[k] = cost[k - 1];
				}
			}
			if (k < MM_EXPLAIN_NEAREST)
			{
				nearest[k] = i;
				cost[k] = c;
				if (n < MM_EXPLAIN_NEAREST)
					n++;
			}
		}
		for (k = 0; k < n; k++)
		{
			const MmTicket *c = &tickets[nearest[k]];
			bool		first = true;

			appendStringInfo(&out, "%s{\"ticket_id\": " INT64_FORMAT ", \"blocked_by\": [",
							 k > 0 ? ", " : "", c->id);
			for (r = 0; r < config->nrules; r++)
				if (PairRule(&config->rules[r], handlers[r]) &&
					!PairPasses(&context, r, handlers[r], &states[r], &tickets[self], c))
				{
					if (!first)
						appendStringInfoString(&out, ", ");
					escape_json(&out, config->rules[r].name);
					first = false;
				}
			appendStringInfoString(&out, "]}");
		}
	}
	appendStringInfoString(&out, "], \"recent_median_wait_seconds\": ");
	if (median >= 0)
		appendStringInfo(&out, "%.3f, \"estimated_wait_seconds\": %.3f", median,
						 Max(0.0, median - tickets[self].age_seconds));
	else
		appendStringInfoString(&out, "null, \"estimated_wait_seconds\": null");
	appendStringInfoChar(&out, '}');

	if ((rc = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(out.data)));
}
