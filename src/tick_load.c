/*
 * tick_load.c
 *	  Loading a queue's searching tickets for the tick.
 *
 * The tickets are read oldest first and locked FOR UPDATE SKIP LOCKED (a
 * ticket being cancelled is neither matched nor waited for), through a
 * cursor in batches, and their rule values extracted as they arrive
 * (ticket_parse.c), or once all are loaded when a rule reads server-side
 * player values (player_sources.c).  Each ticket's row location (ctid) is
 * kept: a matched ticket's row is copied to the ended partition and deleted
 * by ctid, which cannot change while the tick holds the row lock.  In a
 * queue with a low-priority pool (penalties) the tickets of penalised
 * players are marked once all are loaded.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "player_sources.h"
#include "ticket_parse.h"
#include "tick_internal.h"

/* Tickets fetched per round trip from the load cursor. */
#define MM_LOAD_BATCH 1000

static int
CompareInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * A queue with a low-priority pool: marks the loaded tickets of players with
 * low-priority games left in the queue (penalised), and those of them still
 * younger than the pool's bound (low_priority: they match each other only).
 * The tickets are in age order, the ids read sorted and looked up.
 */
static void
MarkPenalisedTickets(MmTickQueue *q, MmTicket *tickets, int n)
{
	double		max_wait = q->config->low_priority_max_wait;
	Datum		values[1];
	int64	   *ids;
	int			nids;
	int			rc;

	if (max_wait < 0 || n == 0)
		return;
	values[0] = CStringGetTextDatum(q->queue);
	/* not read-only: a snapshot that sees the claims this tick took on Citus */
	rc = SPI_execute_plan(MmTickPlan.penalised_tickets, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the penalised tickets failed: %s", SPI_result_code_string(rc));
	nids = (int) SPI_processed;
	if (nids == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		return;
	}
	ids = palloc(sizeof(int64) * nids);
	for (int i = 0; i < nids; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	qsort(ids, nids, sizeof(int64), CompareInt64);
	for (int i = 0; i < n; i++)
	{
		MmTicket   *t = &tickets[i];

		if (bsearch(&t->id, ids, nids, sizeof(int64), CompareInt64) == NULL)
			continue;
		t->penalised = true;
		t->low_priority = t->age_seconds < max_wait;
	}
	pfree(ids);
}

/*
 * Loads the queue's searching tickets (and those of other queues that
 * search in it too) into q->tickets, q->ctids and q->ntickets, oldest
 * first.  With keep_raw, also each one's players as stored and its creation
 * time (q->raw_players, q->raw_created), for a match function.
 */
void
MmTickLoadTickets(MmTickQueue *q, bool keep_raw)
{
	Datum		values[2];
	Portal		portal;
	int			planning;
	MmTicket   *tickets;
	ItemPointerData *ctids;
	Jsonb	  **raw_players = NULL;
	TimestampTz *raw_created = NULL;
	int			allocated = 1024;
	int			n = 0;
	bool		with_others;
	bool		isnull;
	int			rc;
	/* rules reading server-side values: parse once those are loaded */
	bool		deferred = MmConfigReadsPlayerSources(q->config);
	bool		raw = keep_raw || deferred;
	MmPlayerInput players[MM_MAX_MATCH_SIZE];

	tickets = palloc(sizeof(MmTicket) * allocated);
	ctids = palloc(sizeof(ItemPointerData) * allocated);
	if (raw)
	{
		raw_players = palloc(sizeof(Jsonb *) * allocated);
		raw_created = palloc(sizeof(TimestampTz) * allocated);
	}
	values[0] = CStringGetTextDatum(q->queue);
	values[1] = TimestampTzGetDatum(q->now);
	q->other_queues_tickets = false;

	rc = SPI_execute_plan(MmTickPlan.has_other_tickets, values, NULL, true, 1);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "looking for tickets of other queues failed: %s", SPI_result_code_string(rc));
	with_others = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);

	planning = MmTickPlanPendingClaims();
	portal = SPI_cursor_open(NULL, with_others ? MmTickPlan.load_with_others : MmTickPlan.load,
							 values, NULL, false);
	MmTickPlannedPendingClaims(planning);
	MmTickBackToQueue(q);
	for (;;)
	{
		uint64		i;

		SPI_cursor_fetch(portal, true, MM_LOAD_BATCH);
		MmTickBackToQueue(q);
		if (SPI_processed == 0)
			break;
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			MmTicket   *ticket;
			Datum		value;
			Jsonb	   *jb;
			TimestampTz created_at;

			/* parsing 100k tickets takes a while: let a cancel or timeout act */
			CHECK_FOR_INTERRUPTS();
			if (n == allocated)
			{
				allocated *= 2;
				tickets = repalloc_huge(tickets, sizeof(MmTicket) * allocated);
				ctids = repalloc_huge(ctids, sizeof(ItemPointerData) * allocated);
				if (raw)
				{
					raw_players = repalloc_huge(raw_players, sizeof(Jsonb *) * allocated);
					raw_created = repalloc_huge(raw_created, sizeof(TimestampTz) * allocated);
				}
			}
			ticket = &tickets[n++];
			ticket->id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
			created_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &isnull));
			/* in double: int64 now - created_at can overflow (-infinity) */
			ticket->age_seconds = Max(0.0, ((double) q->now - (double) created_at) / USECS_PER_SEC);
			value = SPI_getbinval(tuple, desc, 3, &isnull);
			jb = DatumGetJsonbP(value);
			if (!deferred)
				MmParseTicket(&q->rules, ticket, jb, players, NULL);
			if (raw)
			{
				/* kept: a copy outliving the tuple */
				raw_players[n - 1] = (Pointer) jb != DatumGetPointer(value) ? jb : DatumGetJsonbPCopy(value);
				raw_created[n - 1] = created_at;
			}
			/* a detoasted copy is ours to free; the tuple is freed below */
			else if ((Pointer) jb != DatumGetPointer(value))
				pfree(jb);
			ctids[n - 1] = *(ItemPointer) DatumGetPointer(SPI_getbinval(tuple, desc, 4, &isnull));
			if (DatumGetBool(SPI_getbinval(tuple, desc, 5, &isnull)))
				q->other_queues_tickets = true;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	MmTickBackToQueue(q);
	/* the arrays live through the tick: give back the doubling's slack */
	if (n < allocated)
	{
		tickets = repalloc_huge(tickets, sizeof(MmTicket) * Max(n, 1));
		ctids = repalloc_huge(ctids, sizeof(ItemPointerData) * Max(n, 1));
	}
	if (deferred)
	{
		/* the players are freed once parsed unless a match function needs them */
		MmParseTicketsWithSources(&q->rules, q->queue, tickets, raw_players, n, !keep_raw);
		MmTickBackToQueue(q);
	}
	MarkPenalisedTickets(q, tickets, n);
	q->tickets = tickets;
	q->ctids = ctids;
	q->ntickets = n;
	q->raw_players = keep_raw ? raw_players : NULL;
	q->raw_created = keep_raw ? raw_created : NULL;
}
