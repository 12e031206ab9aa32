/*
 * tick_expiry.c
 *	  What the tick ends before it searches: proposed matches past their
 *	  acceptance deadline, tickets past ticket_timeout_seconds or
 *	  heartbeat_timeout_seconds, live matches past live_match_timeout_seconds.
 *
 * Each is one statement (tick_plans.c) per tick of a queue whose config
 * asks for it, and each announces what it ended.  They run before the load,
 * so the tick never matches a ticket it ends, and the tickets of expired
 * proposals that search again take part in the same tick.
 */
#include "postgres.h"

#include "utils/array.h"
#include "utils/builtins.h"

#include "events.h"
#include "sql_arrays.h"
#include "tick_internal.h"

/* Orders int64 ids ascending, for qsort. */
static int
CompareInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/*
 * Copies column col of row row of the SPI result just read, an array, into
 * the queue's context; NULL for a NULL.
 */
static ArrayType *
CopyArrayColumn(uint64 row, int col)
{
	bool		isnull;
	Datum		value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? NULL : DatumGetArrayTypePCopy(value);
}

/*
 * Drops the claims of the players of tickets or matches that ended (the
 * players, and the tickets that brought them; NULL when nothing ended).  A
 * statement of its own after the one that ended them: on Citus the claims
 * are sharded by player, the tickets and matches by queue.
 */
static void
ReleaseClaims(MmTickQueue *q, ArrayType *players, ArrayType *tickets)
{
	Datum		values[2];
	int			rc;

	if (players == NULL || tickets == NULL)
		return;
	values[0] = PointerGetDatum(players);
	values[1] = PointerGetDatum(tickets);
	rc = SPI_execute_plan(MmTickPlan.release_claims, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "releasing the players of ended tickets failed: %s", SPI_result_code_string(rc));
}

/*
 * Cancels the proposed matches of a queue (of every queue when q is NULL)
 * whose acceptance deadline passed (mm.expire_proposed_matches): their
 * tickets that accepted search again with their age, the others are
 * cancelled.  Before the search, so the requeued tickets take part in this
 * tick.  mm.tick(NULL) does it once for all queues: per queue, the probe of
 * mm.matches would run while the tick fills that table.
 */
void
MmTickExpireProposals(MmTickQueue *q, TimestampTz now)
{
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	int			rc;

	values[0] = q != NULL ? CStringGetTextDatum(q->queue) : (Datum) 0;
	nulls[0] = q != NULL ? ' ' : 'n';
	values[1] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(MmTickPlan.expire_proposals, values, nulls, false, 0);
	if (q != NULL)
		MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "expiring proposed matches failed: %s", SPI_result_code_string(rc));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Times out the queue's tickets older than ticket_timeout_seconds and
 * announces them.  Returns how many.
 */
int
MmTickTimeOutTickets(MmTickQueue *q)
{
	Datum		values[3];
	Datum		array;
	bool		isnull;
	ArrayType  *players;
	ArrayType  *tickets;
	int64	   *ids = NULL;
	int			n = 0,
				rc;

	if (q->config->ticket_timeout_seconds <= 0)
		return 0;
	values[0] = CStringGetTextDatum(q->queue);
	values[1] = TimestampTzGetDatum(q->now - (int64) (q->config->ticket_timeout_seconds * USECS_PER_SEC));
	values[2] = TimestampTzGetDatum(q->now);
	rc = SPI_execute_plan(MmTickPlan.timeout, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "timing out tickets failed: %s", SPI_result_code_string(rc));
	/*
	 * one row: the array of the ended tickets' ids (NULL when none), their
	 * players and the ticket of each
	 */
	array = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
	{
		ArrayType  *a = DatumGetArrayTypePCopy(array);

		n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
		ids = palloc(sizeof(int64) * Max(n, 1));
		memcpy(ids, ARR_DATA_PTR(a), sizeof(int64) * n);
	}
	players = CopyArrayColumn(0, 2);
	tickets = CopyArrayColumn(0, 3);
	SPI_freetuptable(SPI_tuptable);
	if (n == 0)
		return 0;
	ReleaseClaims(q, players, tickets);
	qsort(ids, n, sizeof(int64), CompareInt64);

	MmNotifyTickets("ticket_timed_out", q->queue, n, ids);
	return n;
}

/*
 * Cancels the searching tickets this queue reads (its own and those of other
 * queues that search in it too) that gave no sign of life for
 * heartbeat_timeout_seconds (created, back to searching, or mm.heartbeat):
 * status cancelled, cancel_reason heartbeat_missed, players released, and
 * ticket_cancelled announced with reason heartbeat_missed under each
 * ticket's own queue.  One statement per tick of a queue with the key;
 * nothing without it.  Before the load, so the tick never matches them.
 */
void
MmTickCancelSilentTickets(MmTickQueue *q)
{
	Datum		values[3];
	uint64		nqueues,
				i;
	char	  **queues;
	ArrayType **ids;
	ArrayType **players;
	ArrayType **tickets;
	int			rc;

	if (q->config->heartbeat_timeout_seconds <= 0)
		return;
	values[0] = CStringGetTextDatum(q->queue);
	/* (a now less than the limit after the earliest timestamp: 22008) */
	values[1] = TimestampTzGetDatum(MmTimestampPlusSeconds(q->now, -q->config->heartbeat_timeout_seconds,
														   "now - heartbeat_timeout_seconds"));
	values[2] = TimestampTzGetDatum(q->now);
	rc = SPI_execute_plan(MmTickPlan.cancel_silent_tickets, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "cancelling tickets without heartbeat failed: %s", SPI_result_code_string(rc));
	/*
	 * one row per queue of the cancelled tickets: its name, their ids, their
	 * players and the ticket of each
	 */
	nqueues = SPI_processed;
	queues = palloc(sizeof(char *) * Max(nqueues, 1));
	ids = palloc(sizeof(ArrayType *) * Max(nqueues, 1));
	players = palloc(sizeof(ArrayType *) * Max(nqueues, 1));
	tickets = palloc(sizeof(ArrayType *) * Max(nqueues, 1));
	for (i = 0; i < nqueues; i++)
	{
		queues[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		ids[i] = CopyArrayColumn(i, 2);
		players[i] = CopyArrayColumn(i, 3);
		tickets[i] = CopyArrayColumn(i, 4);
	}
	SPI_freetuptable(SPI_tuptable);
	for (i = 0; i < nqueues; i++)
		ReleaseClaims(q, players[i], tickets[i]);
	for (i = 0; i < nqueues; i++)
	{
		int			n = ArrayGetNItems(ARR_NDIM(ids[i]), ARR_DIMS(ids[i]));

		MmNotifyTicketsWithReason("ticket_cancelled", queues[i], "heartbeat_missed", n,
								  (const int64 *) ARR_DATA_PTR(ids[i]));
	}
}

/*
 * Cancels the queue's live matches (ready or assigned) that became ready
 * more than live_match_timeout_seconds ago: status cancelled, cancel_reason
 * expired, the open backfill request cancelled, the players released, and
 * match_cancelled announced with reason expired.  One statement per tick of
 * a queue with the key (when any expired, one more closes their requests and
 * one announces); nothing without it.  Before backfill is served, so an
 * expired match gets nobody.
 */
void
MmTickExpireLiveMatches(MmTickQueue *q)
{
	Datum		values[3];
	Datum		expired;
	bool		isnull;
	ArrayType  *players;
	ArrayType  *tickets;
	int			rc;

	if (q->config->live_match_timeout_seconds <= 0)
		return;
	values[0] = CStringGetTextDatum(q->queue);
	values[1] = TimestampTzGetDatum(MmTimestampPlusSeconds(q->now, -q->config->live_match_timeout_seconds,
														   "now - live_match_timeout_seconds"));
	values[2] = TimestampTzGetDatum(q->now);
	rc = SPI_execute_plan(MmTickPlan.expire_live_matches, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "expiring live matches failed: %s", SPI_result_code_string(rc));
	/*
	 * one row: the array of the expired matches' ids (NULL when none), their
	 * players and the ticket of each
	 */
	expired = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		expired = PointerGetDatum(DatumGetArrayTypePCopy(expired));
	players = CopyArrayColumn(0, 2);
	tickets = CopyArrayColumn(0, 3);
	SPI_freetuptable(SPI_tuptable);
	if (isnull)
		return;
	values[1] = expired;
	rc = SPI_execute_plan(MmTickPlan.close_expired_backfills, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "closing the expired matches' backfill requests failed: %s", SPI_result_code_string(rc));
	ReleaseClaims(q, players, tickets);
	values[0] = expired;
	values[1] = CStringGetTextDatum(q->queue);
	rc = SPI_execute_plan(MmTickPlan.notify_expired, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "announcing expired matches failed: %s", SPI_result_code_string(rc));
	SPI_freetuptable(SPI_tuptable);
}
