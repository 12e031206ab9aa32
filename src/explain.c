/*
 * explain.c
 *	  mm.explain_ticket: why a searching ticket is still waiting.
 *
 * For the ticket, against the other searching tickets of its queue (or of
 * another queue it searches in) as that queue's tick would see them at `now`: each rule's threshold (after expansion) and
 * when it next widens; how many tickets pass the rule against this one
 * (a pair's step is that of its older ticket, as in the search); the rules
 * that block its nearest candidates (ranked as the search ranks them); and
 * an estimated wait with what it rests on: the queue's last hour when
 * searching tickets fit it now, the time until its rules have widened
 * enough for them, or none (null, with the reason) when nothing searching
 * can fit it (docs/metrics.md, "Estimated wait").  Read-only, no locks.
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
#include "schema_version.h"
#include "sql_arrays.h"
#include "ticket_parse.h"

/* How far ahead a rule's next widening is looked for. */
#define MM_EXPLAIN_HORIZON_SECONDS (7 * 86400.0)
/* The nearest candidates reported. */
#define MM_EXPLAIN_NEAREST 5

/*
 * now + seconds (>= 0), or false when that is past the last timestamp (a
 * `now` near the end of the range): the explanation then shows no time
 * rather than one computed past int64.
 */
static bool
TimeAfter(TimestampTz now, double seconds, TimestampTz *result)
{
	double		usecs = seconds * USECS_PER_SEC;

	if (isnan(usecs) || usecs >= (double) END_TIMESTAMP - (double) now)
		return false;
	*result = now + (int64) usecs;
	return true;
}

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
		/* the last probe is the horizon itself: a change after it is not looked for */
		hi = age + Min(d, MM_EXPLAIN_HORIZON_SECONDS);
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

/*
 * Whether a candidate passes a ticket rule against the ticket, alone, `later`
 * seconds from now (both a little older).
 */
static bool
PairPassesAt(const MmRuleContext *context, int r, const MmRuleHandler *handler, MmRuleState *state,
			 const MmTicket *self, const MmTicket *cand, double later)
{
	const MmRuleConfig *rule = &context->config->rules[r];
	bool		on;
	int			step;
	double		threshold;

	RuleAt(rule, Max(self->age_seconds, cand->age_seconds) + later, &on, &step, &threshold);
	if (!on)
		return true;
	if (self->values[r].kind == MM_VALUE_MISSING || cand->values[r].kind == MM_VALUE_MISSING)
		return false;
	MmRuleStateInit(context, rule, state);
	handler->add(context, state, &self->values[r]);
	return handler->can_add(context, state, &cand->values[r], threshold);
}

/* Whether a candidate passes a ticket rule against the ticket, alone, now. */
static bool
PairPasses(const MmRuleContext *context, int r, const MmRuleHandler *handler, MmRuleState *state,
		   const MmTicket *self, const MmTicket *cand)
{
	return PairPassesAt(context, r, handler, state, self, cand, 0);
}

/* A rule that can be judged on a pair of tickets. */
static bool
PairRule(const MmRuleConfig *rule, const MmRuleHandler *handler)
{
	return handler->scope == MM_SCOPE_TICKETS && rule->type != MM_RULE_COMPOUND &&
		handler->can_add != NULL && handler->add != NULL;
}

/*
 * A rule that decides, on a pair, whether the two can ever play together: a
 * pair rule that is not part of a compound (a compound may accept a pair one
 * of its rules refuses).
 */
static bool
FitRule(const MmRuleConfig *rule, const MmRuleHandler *handler)
{
	return PairRule(rule, handler) && !rule->in_compound;
}

/*
 * Whether the searching tickets could make up a match with the ticket `later`
 * seconds from now, as far as the pair rules tell: the ticket's players and
 * those of every candidate that passes each of them against it reach the
 * match's minimum then.  Team rules, compounds and the candidates' fit with
 * each other are left to the search, so this can only be too hopeful.  As
 * the rules only widen with age, once true it stays true.
 */
static bool
FitsAt(const MmRuleContext *context, const MmRuleHandler **handlers, MmRuleState *states,
	   const MmTicket *tickets, int ntickets, int self, double later)
{
	const MmQueueConfig *config = context->config;
	int			need = MmMatchMinAt(config, tickets[self].age_seconds + later);
	int			players = tickets[self].nplayers;

	for (int i = 0; i < ntickets && players < need; i++)
	{
		bool		fits = true;

		if (i == self)
			continue;
		CHECK_FOR_INTERRUPTS();
		for (int r = 0; r < config->nrules && fits; r++)
			if (FitRule(&config->rules[r], handlers[r]))
				fits = PairPassesAt(context, r, handlers[r], &states[r], &tickets[self], &tickets[i],
									later);
		if (fits)
			players += tickets[i].nplayers;
	}
	return players >= need;
}

/*
 * The estimated wait (the members "estimated_wait_seconds", "estimate_basis"
 * and "estimate_reason"): with the tickets searching now the ticket fits a
 * match now (the queue's recent median wait minus its age, at least 0), or
 * once its rules have widened (the time until then), or not at all (null,
 * with the reason: a value it lacks, or no fitting ticket).
 */
static void
AppendEstimate(StringInfo out, const MmRuleContext *context, const MmRuleHandler **handlers,
			   MmRuleState *states, const MmTicket *tickets, int ntickets, int self,
			   double median, TimestampTz now)
{
	const MmQueueConfig *config = context->config;
	const MmTicket *t = &tickets[self];
	int64		lo,
				hi;

	/* a value the ticket lacks for a rule that stays on: nobody passes it */
	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];
		bool		on;
		int			step;
		double		threshold;

		if (!FitRule(rule, handlers[r]) || t->values[r].kind != MM_VALUE_MISSING)
			continue;
		RuleAt(rule, t->age_seconds + MM_EXPLAIN_HORIZON_SECONDS, &on, &step, &threshold);
		if (!on)
			continue;
		appendStringInfoString(out, ", \"estimated_wait_seconds\": null, \"estimate_basis\": \"unknown\""
							   ", \"estimate_reason\": ");
		{
			StringInfoData reason;

			initStringInfo(&reason);
			appendStringInfo(&reason, "the ticket has no value for rule \"%s\", which stays on: "
							 "it cannot match until its players' values change", rule->name);
			escape_json(out, reason.data);
		}
		return;
	}

	if (FitsAt(context, handlers, states, tickets, ntickets, self, 0))
	{
		if (median >= 0)
		{
			appendStringInfo(out, ", \"estimated_wait_seconds\": %.3f, \"estimate_basis\": \"recent_matches\""
							 ", \"estimate_reason\": ", Max(0.0, median - t->age_seconds));
			escape_json(out, "searching tickets fit it now: the queue's median wait of the last hour "
						"minus the ticket's age");
		}
		else
		{
			appendStringInfoString(out, ", \"estimated_wait_seconds\": null, \"estimate_basis\": \"unknown\""
								   ", \"estimate_reason\": ");
			escape_json(out, "searching tickets fit it now, but no ticket of the queue was matched in "
						"the hour before now to estimate from");
		}
		return;
	}
	if (!FitsAt(context, handlers, states, tickets, ntickets, self, MM_EXPLAIN_HORIZON_SECONDS))
	{
		appendStringInfoString(out, ", \"estimated_wait_seconds\": null, \"estimate_basis\": \"unknown\""
							   ", \"estimate_reason\": ");
		escape_json(out, "no searching ticket fits it, now or once its rules have widened (within a "
					"week): it waits for new players");
		return;
	}
	/* the first whole millisecond at which it fits: it does not at lo, does at hi */
	lo = 0;
	hi = (int64) (MM_EXPLAIN_HORIZON_SECONDS * 1000);
	while (hi - lo > 1)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (FitsAt(context, handlers, states, tickets, ntickets, self, mid / 1000.0))
			hi = mid;
		else
			lo = mid;
	}
	appendStringInfo(out, ", \"estimated_wait_seconds\": %.3f, \"estimate_basis\": \"rules_widen\""
					 ", \"estimate_reason\": ", hi / 1000.0);
	{
		StringInfoData reason;
		TimestampTz fits_at;

		initStringInfo(&reason);
		appendStringInfo(&reason, "no searching ticket fits it now; its rules have widened enough for "
						 "the tickets searching now at %s",
						 TimeAfter(now, hi / 1000.0, &fits_at) ? timestamptz_to_str(fits_at)
						 : "a time past the end of the timestamp range");
		escape_json(out, reason.data);
	}
}

/*
 * A role queue's "roles": per role, the seats a match has (the fewest of
 * its compositions), and among the searching players the ticket's pair
 * rules let it play with (itself included) those who may take the role and
 * those who want it first; "blocking_role" is the role most short of
 * players for one match (null when none is), and "autofill_from" when the
 * ticket may be given any role (null without autofill).
 */
static void
AppendRoles(StringInfo out, MmRuleContext *context, const MmRuleHandler **handlers,
			MmRuleState *states, const MmTicket *tickets, int ntickets, int self, TimestampTz now)
{
	const MmQueueConfig *config = context->config;
	const MmRolesConfig *roles = config->roles;
	int			seats[MM_MAX_ROLES] = {0};
	int			willing[MM_MAX_ROLES] = {0};
	int			first[MM_MAX_ROLES] = {0};
	int			blocking = -1,
				worst = 0;

	for (int g = 0; g < roles->ngroups; g++)
		for (int r = 0; r < roles->nroles; r++)
		{
			int			fewest = roles->compositions[g][0].seats[r];

			for (int c = 1; c < roles->ncompositions[g]; c++)
				fewest = Min(fewest, roles->compositions[g][c].seats[r]);
			seats[r] += fewest;
		}
	for (int i = 0; i < ntickets; i++)
	{
		const MmTicket *t = &tickets[i];
		bool		compatible = true;

		CHECK_FOR_INTERRUPTS();
		for (int r = 0; r < config->nrules && compatible && i != self; r++)
			if (PairRule(&config->rules[r], handlers[r]))
				compatible = PairPasses(context, r, handlers[r], &states[r], &tickets[self], t);
		if (!compatible)
			continue;
		for (int p = 0; p < t->nplayers; p++)
			for (int r = 0; r < roles->nroles; r++)
			{
				if (t->role_accept[p] & (1 << r))
					willing[r]++;
				if (t->role_rank[p * MM_MAX_ROLES + r] == 0)
					first[r]++;
			}
	}
	appendStringInfoString(out, ", \"roles\": {\"per_role\": [");
	for (int r = 0; r < roles->nroles; r++)
	{
		appendStringInfoString(out, r > 0 ? ", {\"role\": " : "{\"role\": ");
		escape_json(out, roles->names[r]);
		appendStringInfo(out, ", \"seats_per_match\": %d, \"players_who_may_take_it\": %d"
						 ", \"players_who_want_it_first\": %d}", seats[r], willing[r], first[r]);
		if (seats[r] - willing[r] > worst)
		{
			worst = seats[r] - willing[r];
			blocking = r;
		}
	}
	appendStringInfoString(out, "], \"blocking_role\": ");
	if (blocking >= 0)
		escape_json(out, roles->names[blocking]);
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ", \"autofill_from\": ");
	if (roles->autofill)
	{
		double		wait = Max(0.0, roles->autofill_after_seconds - tickets[self].age_seconds);

		escape_json(out, timestamptz_to_str(MmTimestampPlusSeconds(now, wait, "now + the autofill wait")));
	}
	else
		appendStringInfoString(out, "null");
	appendStringInfoChar(out, '}');
}

/*
 * A queue with a low-priority pool (penalties): whether a player of the
 * ticket has low-priority games left in the queue, as the tick marks it
 * (tick_load.c).
 */
static bool
TicketPenalised(const char *queue, const MmTicket *t, MemoryContext caller)
{
	Oid			argtypes[] = {TEXTOID, TEXTARRAYOID};
	Datum		values[2];
	bool		isnull;
	bool		penalised;
	int			rc;

	values[0] = CStringGetTextDatum(queue);
	values[1] = PointerGetDatum(MmBuildTextArray(t->player_ids, t->nplayers));
	rc = SPI_execute_with_args("SELECT EXISTS (SELECT 1 FROM mm.player_penalties p"
							   " WHERE p.queue OPERATOR(pg_catalog.=) $1"
							   " AND p.low_priority_games OPERATOR(pg_catalog.>) 0"
							   " AND p.player_id OPERATOR(pg_catalog.=) ANY ($2))",
							   2, argtypes, values, NULL, true, 1);
	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the ticket's penalties failed: %s", SPI_result_code_string(rc));
	penalised = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);
	return penalised;
}

/*
 * The ticket explained (it must be searching, and search in the queue asked
 * for, by default its own): returns the queue, and in *queues_json_out every
 * queue it searches in (its own first) as a JSON array.
 */
static char *
ReadExplainedTicket(int64 ticket_id, Datum queue_arg, bool queue_null, MemoryContext caller,
					char **queues_json_out)
{
	Oid			ticket_args[] = {INT8OID, TEXTOID};
	Datum		values[2];
	char	   *queue;
	char	   *status;
	char	   *own_queue;
	char	   *queues_json;
	bool		searches_in;
	bool		isnull;
	int			rc;

	/*
	 * The ticket, every queue it searches in (its own first), and whether
	 * the queue asked for (default: its own) is one of them.
	 */
	values[0] = Int64GetDatum(ticket_id);
	values[1] = queue_null ? (Datum) 0 : queue_arg;
	rc = SPI_execute_with_args("SELECT t.queue, t.status,"
							   " pg_catalog.to_jsonb(pg_catalog.array_prepend(t.queue, COALESCE(t.queues, '{}')))::text,"
							   " $2 IS NULL OR $2 OPERATOR(pg_catalog.=) t.queue"
							   " OR $2 OPERATOR(pg_catalog.=) ANY (t.queues)"
							   " FROM mm.tickets t WHERE t.id OPERATOR(pg_catalog.=) $1",
							   2, ticket_args, values, queue_null ? " n" : NULL,
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
	queue = queue_null ? own_queue : text_to_cstring(DatumGetTextPP(queue_arg));
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
	*queues_json_out = queues_json;
	return queue;
}

/* The queue's config, parsed. */
static MmQueueConfig *
ReadExplainedConfig(const char *queue, MemoryContext caller)
{
	Oid			text1[] = {TEXTOID};
	Datum		values[1];
	Jsonb	   *config_jsonb;
	bool		isnull;
	int			rc;

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
	return MmParseQueueConfig(config_jsonb);
}

/*
 * The searching tickets of the queue as its tick would load them, and the
 * ticket explained (*self_out: its index), parsed for the rules.
 */
static MmTicket *
LoadExplainedTickets(MmRuleContext *context, const char *queue, int64 ticket_id, TimestampTz now,
					 MemoryContext caller, int *ntickets_out, int *self_out)
{
	const MmQueueConfig *config = context->config;
	Oid			args3[] = {TEXTOID, TIMESTAMPTZOID, INT8OID};
	Datum		values[3];
	MmTicket   *tickets;
	Jsonb	  **players;
	MmPlayerInput inputs[MM_MAX_MATCH_SIZE];
	int			ntickets,
				self = -1,
				i,
				rc;
	bool		isnull;

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
		MmParseTicketsWithSources(context, queue, tickets, players, ntickets, false);
	else
		for (i = 0; i < ntickets; i++)
			MmParseTicket(context, &tickets[i], players[i], inputs, NULL);
	MemoryContextSwitchTo(caller);
	*ntickets_out = ntickets;
	*self_out = self;
	return tickets;
}

/* The median wait of the queue's tickets matched in the last hour, or -1. */
static double
RecentMedianWait(const char *queue, TimestampTz now, MemoryContext caller)
{
	Oid			args2[] = {TEXTOID, TIMESTAMPTZOID};
	Datum		values[2];
	double		median = -1;
	bool		isnull;
	int			rc;

	/* the queue's recent waits: the median of the last hour's matched tickets */
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now);
	rc = SPI_execute_with_args("SELECT pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY"
							   " EXTRACT(epoch FROM t.matched_at OPERATOR(pg_catalog.-) t.created_at))"
							   " FROM mm.tickets_ended t WHERE t.queue OPERATOR(pg_catalog.=) $1"
							   " AND t.status OPERATOR(pg_catalog.=) 'matched'"
							   " AND t.matched_at OPERATOR(pg_catalog.<=) $2"
							   " AND t.matched_at OPERATOR(pg_catalog.>) ($2 OPERATOR(pg_catalog.-) CAST('1 hour' AS pg_catalog.interval))",
							   2, args2, values, NULL, true, 1);
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
	return median;
}

/*
 * "rules": each rule's step and threshold at the ticket's age, when it next
 * widens, and how many tickets pass it against this one.
 */
static void
AppendRuleSteps(StringInfo out, MmRuleContext *context, const MmRuleHandler **handlers,
				MmRuleState *states, const MmTicket *tickets, int ntickets, int self,
				TimestampTz now)
{
	const MmQueueConfig *config = context->config;
	int			r,
				i;

	for (r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];
		bool		on;
		int			step;
		double		thr,
					next = NextChange(rule, tickets[self].age_seconds);
		TimestampTz widens_at;

		RuleAt(rule, tickets[self].age_seconds, &on, &step, &thr);
		appendStringInfoString(out, r > 0 ? ", {\"name\": " : "{\"name\": ");
		escape_json(out, rule->name);
		appendStringInfoString(out, ", \"type\": ");
		escape_json(out, MmRuleHandlerFor(rule->type)->type_name);
		if (on)
		{
			appendStringInfo(out, ", \"on\": true, \"step\": %d", step);
			if (MmRuleHasThreshold(rule))
				appendStringInfo(out, ", \"threshold\": %s", float8out_internal(thr));
		}
		else
			appendStringInfoString(out, ", \"on\": false");
		if (next >= 0 && TimeAfter(now, next - tickets[self].age_seconds, &widens_at))
		{
			appendStringInfoString(out, ", \"next_widening_at\": ");
			escape_json(out, timestamptz_to_str(widens_at));
		}
		else
			appendStringInfoString(out, ", \"next_widening_at\": null");
		if (PairRule(rule, handlers[r]))
		{
			int			passing = 0;

			for (i = 0; i < ntickets; i++)
			{
				CHECK_FOR_INTERRUPTS();
				if (i != self && PairPasses(context, r, handlers[r], &states[r], &tickets[self], &tickets[i]))
					passing++;
			}
			appendStringInfo(out, ", \"passing_tickets\": %d}", passing);
		}
		else
			/* team rules and compounds are decided on whole matches */
			appendStringInfoString(out, ", \"passing_tickets\": null}");
	}
}

/*
 * "nearest" (closing "rules" first): the nearest candidates, as the search
 * ranks them, and what blocks each.
 */
static void
AppendNearest(StringInfo out, MmRuleContext *context, const MmRuleHandler **handlers,
			  MmRuleState *states, const MmTicket *tickets, int ntickets, int self,
			  const bool *rule_on, const double *threshold)
{
	const MmQueueConfig *config = context->config;
	int			nearest[MM_EXPLAIN_NEAREST];
	double		cost[MM_EXPLAIN_NEAREST];
	int			n = 0,
				k,
				r,
				i;

	appendStringInfoString(out, "], \"nearest\": [");
	for (i = 0; i < ntickets; i++)
	{
		double		c;

		CHECK_FOR_INTERRUPTS();
		if (i == self)
			continue;
		c = MmCandidateCost(context, &tickets[self], &tickets[i], rule_on, threshold);
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

		appendStringInfo(out, "%s{\"ticket_id\": " INT64_FORMAT ", \"blocked_by\": [",
						 k > 0 ? ", " : "", c->id);
		for (r = 0; r < config->nrules; r++)
			if (PairRule(&config->rules[r], handlers[r]) &&
				!PairPasses(context, r, handlers[r], &states[r], &tickets[self], c))
			{
				if (!first)
					appendStringInfoString(out, ", ");
				escape_json(out, config->rules[r].name);
				first = false;
			}
		appendStringInfoString(out, "]}");
	}
	appendStringInfoChar(out, ']');
}

PG_FUNCTION_INFO_V1(mm_explain_ticket);

Datum
mm_explain_ticket(PG_FUNCTION_ARGS)
{
	int64		ticket_id;
	TimestampTz now;
	MemoryContext caller = CurrentMemoryContext;
	char	   *queue;
	char	   *queues_json;
	MmQueueConfig *config;
	MmRuleContext context;
	MmTicket   *tickets;
	const MmRuleHandler **handlers;
	MmRuleState *states;
	bool	   *rule_on;
	double	   *threshold;
	int			ntickets,
				self,
				r,
				rc;
	double		median;
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
	/* its statements are the served schema's */
	MmRequireServedSchema("mm.explain_ticket");

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));

	queue = ReadExplainedTicket(ticket_id, PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2),
								PG_ARGISNULL(2), caller, &queues_json);
	config = ReadExplainedConfig(queue, caller);
	MmRuleContextInit(&context, config);
	tickets = LoadExplainedTickets(&context, queue, ticket_id, now, caller, &ntickets, &self);
	median = RecentMedianWait(queue, now, caller);

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
	AppendRuleSteps(&out, &context, handlers, states, tickets, ntickets, self, now);
	AppendNearest(&out, &context, handlers, states, tickets, ntickets, self, rule_on, threshold);
	if (config->roles != NULL)
		AppendRoles(&out, &context, handlers, states, tickets, ntickets, self, now);
	/* in the low-priority pool: it matches only its pool's tickets until this age */
	if (config->low_priority_max_wait >= 0 &&
		tickets[self].age_seconds < config->low_priority_max_wait &&
		TicketPenalised(queue, &tickets[self], caller))
		appendStringInfo(&out, ", \"low_priority\": {\"until_seconds\": %s}",
						 float8out_internal(config->low_priority_max_wait));
	appendStringInfoString(&out, ", \"recent_median_wait_seconds\": ");
	if (median >= 0)
		appendStringInfo(&out, "%.3f", median);
	else
		appendStringInfoString(&out, "null");
	AppendEstimate(&out, &context, handlers, states, tickets, ntickets, self, median, now);
	appendStringInfoChar(&out, '}');

	if ((rc = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(out.data)));
}
