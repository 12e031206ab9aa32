/*
 * tick_write.c
 *	  Writing what the search formed: the matches, their players, and their
 *	  tickets (ended as matched, or proposed while the players answer), in
 *	  bulk, and the events, which PostgreSQL sends at commit.
 *
 * The two largest writes, the match players and the matched tickets' ended
 * rows, go straight into their tables a page at a time (tick_bulk.c); every
 * other write, and those two where a table takes no bulk insert, is one
 * statement over arrays as long as the queue (the plans of tick_plans.c
 * unnest them).  Each is checked for the rows it wrote: the tick holds the
 * rows it writes locked, so only code inside the tick could change them.
 * The arrays are freed as soon as they are written, and the memory peak of
 * the phase is noted (MmTickNoteMemoryPeak).
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "events.h"
#include "sql_arrays.h"
#include "tick_internal.h"

/*
 * The rule_steps jsonb text of a match: per rule its step and threshold or
 * off.  buf is reused across matches; the result is an exact-size copy.
 */
static char *
RuleStepsJson(const MmQueueConfig *config, const MmFoundMatch *m, StringInfo buf)
{
	int			r;

	resetStringInfo(buf);
	appendStringInfoChar(buf, '{');
	for (r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];

		if (r > 0)
			appendStringInfoString(buf, ", ");
		escape_json(buf, rule->name);
		appendStringInfo(buf, ": {\"step\": %d", m->rule_steps[r].step);
		if (m->rule_steps[r].off)
			appendStringInfoString(buf, ", \"off\": true");
		else if (MmRuleHasThreshold(rule))
		{
			char	   *threshold = float8out_internal(m->rule_steps[r].threshold);

			appendStringInfo(buf, ", \"threshold\": %s", threshold);
			pfree(threshold);
		}
		appendStringInfoChar(buf, '}');
	}
	appendStringInfoChar(buf, '}');
	return pnstrdup(buf->data, buf->len);
}

/*
 * Runs a kept write plan and checks its outcome: the SPI code, and the rows
 * it wrote unless rows is negative.  what names the step in the errors.
 */
static void
RunWriteWithNulls(MmTickQueue *q, SPIPlanPtr plan, Datum *values, const char *nulls,
				  int expected_rc, int64 rows, const char *what)
{
	int			rc = SPI_execute_plan(plan, values, nulls, false, 0);

	MmTickBackToQueue(q);
	if (rc != expected_rc)
		elog(ERROR, "%s failed: %s", what, SPI_result_code_string(rc));
	/* the tick holds the rows locked: only code inside the tick can change them */
	if (rows >= 0 && SPI_processed != (uint64) rows)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s wrote " UINT64_FORMAT " rows instead of " INT64_FORMAT,
						what, SPI_processed, rows),
				 errdetail("The queue's tickets or matches changed during the tick: a match function or a trigger wrote to them, which is not supported.")));
}

void
MmTickRunWrite(MmTickQueue *q, SPIPlanPtr plan, Datum *values, int expected_rc, int64 rows,
			   const char *what)
{
	RunWriteWithNulls(q, plan, values, NULL, expected_rc, rows, what);
}

/*
 * The memory peak of the queue being ticked, noted where the write phase
 * holds the most (its arrays are freed before the phase ends).
 */
void
MmTickNoteMemoryPeak(MmTickQueue *q)
{
	q->peak_bytes = Max(q->peak_bytes, (int64) MemoryContextMemAllocated(q->context, true));
}

/*
 * Reads the players and creation times of the tickets to end (positions
 * t_index among the loaded ctids) straight from their rows in
 * mm.tickets_active, as a jsonb[] and a timestamptz[] in t_index order: the
 * ended rows are then inserted from arrays, which costs a fraction of
 * joining 100k row locations in SQL.  The rows are the versions this tick
 * locked FOR UPDATE, so any snapshot would see them; each row's id is
 * checked against the ticket's.  Returns false, with nothing built, when
 * the players would not fit one array (1 GB): the caller joins in SQL then.
 */
static bool
ReadEndingTickets(const ItemPointerData *ctids, int ntickets, const int *t_index,
				  const int64 *ticket_ids, ArrayType **players_out, ArrayType **created_out)
{
	Oid			relid = MmTickRelid("tickets_active");
	Relation	rel = table_open(relid, AccessShareLock);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	AttrNumber	id_att = get_attnum(relid, "id");
	AttrNumber	created_att = get_attnum(relid, "created_at");
	AttrNumber	players_att = get_attnum(relid, "players");
	Datum	   *created = palloc(sizeof(Datum) * Max(ntickets, 1));
	Size		header = ARR_OVERHEAD_NONULLS(1);
	Size		used = header;
	Size		capacity = 0;
	char	   *data = NULL;
	ArrayType  *players;
	int			i;

	for (i = 0; i < ntickets; i++)
	{
		ItemPointerData tid = ctids[t_index[i]];
		struct varlena *value;
		struct varlena *flat;
		Size		length;
		Size		need;
		bool		isnull;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!table_tuple_fetch_row_version(rel, &tid, SnapshotAny, slot) ||
			DatumGetInt64(slot_getattr(slot, id_att, &isnull)) != ticket_ids[i])
			elog(ERROR, "the row of ticket " INT64_FORMAT " is not where the tick locked it",
				 ticket_ids[i]);
		created[i] = slot_getattr(slot, created_att, &isnull);
		value = (struct varlena *) DatumGetPointer(slot_getattr(slot, players_att, &isnull));
		flat = VARATT_IS_EXTENDED(value) ? detoast_attr(value) : value;
		length = VARSIZE(flat);
		need = used + INTALIGN(length);
		if (need > capacity)
		{
			/* room for the rest at the average size so far, and a tenth more */
			Size		estimate = need + (need - header) / (i + 1) * (ntickets - i - 1) / 10 * 11;

			if (need > MaxAllocSize)
			{
				ExecDropSingleTupleTableSlot(slot);
				table_close(rel, AccessShareLock);
				if (data)
					pfree(data);
				pfree(created);
				return false;
			}
			capacity = Min(estimate, MaxAllocSize);
			data = data ? repalloc(data, capacity) : palloc0(capacity);
		}
		memcpy(data + used, flat, length);
		memset(data + used + length, 0, need - used - length);
		used = need;
		if (flat != value)
			pfree(flat);
		ExecClearTuple(slot);
	}
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, AccessShareLock);

	if (data == NULL)
		data = palloc0(header);
	else
		data = repalloc(data, used);
	players = (ArrayType *) data;
	SET_VARSIZE(players, used);
	players->ndim = 1;
	players->dataoffset = 0;
	players->elemtype = JSONBOID;
	ARR_DIMS(players)[0] = ntickets;
	ARR_LBOUND(players)[0] = 1;
	*players_out = players;
	*created_out = construct_array(created, ntickets, TIMESTAMPTZOID, sizeof(TimestampTz),
								   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	pfree(created);
	return true;
}

/* The row locations of the tickets at positions t_index, as a tid[]. */
static ArrayType *
RowIds(MmTickQueue *q, int ntickets, const int *t_index)
{
	Datum	   *datums = palloc(sizeof(Datum) * Max(ntickets, 1));
	ArrayType  *row_ids;
	int			i;

	for (i = 0; i < ntickets; i++)
		datums[i] = PointerGetDatum(&q->ctids[t_index[i]]);
	row_ids = construct_array(datums, ntickets, TIDOID, sizeof(ItemPointerData), false,
							  TYPALIGN_SHORT);
	pfree(datums);
	return row_ids;
}

/*
 * The ended rows of the matched tickets written straight into
 * mm.tickets_ended, each from its row in mm.tickets_active (the version
 * this tick locked: any snapshot sees it; its id is checked).  False, with
 * nothing written, when the table takes no bulk insert.
 */
static bool
BulkEndTickets(MmTickQueue *q, int ntickets, const int *t_index, const int64 *ticket_ids,
			   const int64 *match_ids, const char **teams)
{
	static const char *const columns[] = {"id", "queue", "players", "status", "created_at",
	"updated_at", "matched_at", "match_id", "team"};
	static const Oid types[] = {INT8OID, TEXTOID, JSONBOID, TEXTOID, TIMESTAMPTZOID,
	TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID, TEXTOID};
	MmTickBulk *bulk = MmTickBulkBegin(MmTickRelid("tickets_ended"), lengthof(columns), columns, types);
	Oid			relid;
	Relation	rel;
	TupleTableSlot *slot;
	AttrNumber	id_att,
				created_att,
				players_att;
	Datum		values[9];
	bool		nulls[9] = {false, false, false, false, false, false, false, false, false};
	int			i;

	if (bulk == NULL)
		return false;
	relid = MmTickRelid("tickets_active");
	rel = table_open(relid, AccessShareLock);
	slot = table_slot_create(rel, NULL);
	id_att = get_attnum(relid, "id");
	created_att = get_attnum(relid, "created_at");
	players_att = get_attnum(relid, "players");
	values[1] = CStringGetTextDatum(q->queue);
	values[3] = CStringGetTextDatum("matched");
	values[5] = values[6] = TimestampTzGetDatum(q->now);
	for (i = 0; i < ntickets; i++)
	{
		ItemPointerData tid = q->ctids[t_index[i]];
		bool		isnull;

		if (!table_tuple_fetch_row_version(rel, &tid, SnapshotAny, slot) ||
			DatumGetInt64(slot_getattr(slot, id_att, &isnull)) != ticket_ids[i])
			elog(ERROR, "the row of ticket " INT64_FORMAT " is not where the tick locked it",
				 ticket_ids[i]);
		values[0] = Int64GetDatum(ticket_ids[i]);
		values[2] = slot_getattr(slot, players_att, &isnull);
		values[4] = slot_getattr(slot, created_att, &isnull);
		values[7] = Int64GetDatum(match_ids[i]);
		nulls[8] = teams[i] == NULL;
		if (teams[i] != NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(MmTickBulkRowContext(bulk));

			values[8] = CStringGetTextDatum(teams[i]);
			MemoryContextSwitchTo(old);
		}
		/* copies the row: the players may point into the active row's page */
		MmTickBulkAdd(bulk, values, nulls);
		ExecClearTuple(slot);
	}
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, AccessShareLock);
	MmTickNoteMemoryPeak(q);
	if (MmTickBulkEnd(bulk) != ntickets)
		elog(ERROR, "writing matched tickets wrote a different number of rows than %d", ntickets);
	return true;
}

/*
 * Moves the matched tickets (positions t_index among the loaded ctids) from
 * mm.tickets_active to mm.tickets_ended under the queue that matched them.
 * Their players stay claimed by the match.
 */
void
MmTickMoveMatchedTickets(MmTickQueue *q, int ntickets, const int *t_index,
						 const int64 *ticket_ids, const int64 *match_ids, const char **teams)
{
	ArrayType  *row_ids = NULL;
	ArrayType  *players;
	ArrayType  *created;
	Datum		values[7];

	/* tickets of this queue alone end as their row plus the match */
	if (!q->other_queues_tickets &&
		BulkEndTickets(q, ntickets, t_index, ticket_ids, match_ids, teams))
		;
	else
	{
		values[0] = TimestampTzGetDatum(q->now);
		values[2] = PointerGetDatum(MmBuildInt8Array(match_ids, ntickets));
		values[3] = PointerGetDatum(MmBuildTextArray(teams, ntickets));
		values[4] = CStringGetTextDatum(q->queue);
		if (!q->other_queues_tickets &&
			ReadEndingTickets(q->ctids, ntickets, t_index, ticket_ids, &players, &created))
		{
			values[1] = PointerGetDatum(MmBuildInt8Array(ticket_ids, ntickets));
			values[5] = PointerGetDatum(players);
			values[6] = PointerGetDatum(created);
			MmTickNoteMemoryPeak(q);
			MmTickRunWrite(q, MmTickPlan.end_tickets_from_arrays, values, SPI_OK_INSERT, ntickets,
						   "writing matched tickets");
			pfree(players);
			pfree(created);
			pfree(DatumGetPointer(values[1]));
		}
		else
		{
			row_ids = RowIds(q, ntickets, t_index);
			values[1] = PointerGetDatum(row_ids);
			MmTickRunWrite(q, MmTickPlan.end_tickets_by_ctid, values, SPI_OK_INSERT, ntickets,
						   "writing matched tickets");
		}
		pfree(DatumGetPointer(values[2]));
		pfree(DatumGetPointer(values[3]));
	}

	/* built only now: not held beside the ended rows' players (the peak) */
	if (row_ids == NULL)
		row_ids = RowIds(q, ntickets, t_index);
	values[0] = PointerGetDatum(row_ids);
	values[1] = CStringGetTextDatum(q->queue);
	MmTickRunWrite(q, MmTickPlan.delete_active, values, SPI_OK_DELETE, ntickets,
				   "deleting matched tickets");
	pfree(row_ids);

	/* the tickets of several queues leave the others too */
	if (q->other_queues_tickets)
	{
		values[0] = PointerGetDatum(MmBuildInt8Array(ticket_ids, ntickets));
		/* values[1]: the queue, as for the delete */
		MmTickRunWrite(q, MmTickPlan.unlist_tickets, values, SPI_OK_DELETE, -1,
					   "unlisting matched tickets");
	}
}

/*
 * A queue that asks for acceptance: the matched tickets stay in
 * mm.tickets_active as proposed, with their match and team, until every
 * player answered or the deadline passed (mm.accept_match,
 * mm.expire_proposed_matches).
 */
static void
ProposeTickets(MmTickQueue *q, int ntickets, const int *t_index, const int64 *match_ids,
			   const char **teams)
{
	Datum		values[5];

	values[0] = TimestampTzGetDatum(q->now);
	values[1] = PointerGetDatum(RowIds(q, ntickets, t_index));
	values[2] = PointerGetDatum(MmBuildInt8Array(match_ids, ntickets));
	values[3] = PointerGetDatum(MmBuildTextArray(teams, ntickets));
	values[4] = CStringGetTextDatum(q->queue);
	MmTickRunWrite(q, MmTickPlan.propose_tickets, values, SPI_OK_UPDATE, ntickets,
				   "proposing matched tickets");
}

/*
 * When a proposed match formed at now stops waiting for acceptances, or 0
 * when the queue does not ask for acceptance.
 */
static TimestampTz
AcceptanceDeadline(const MmQueueConfig *config, TimestampTz now)
{
	if (config->acceptance_timeout_seconds <= 0)
		return 0;
	return MmTimestampPlusSeconds(now, config->acceptance_timeout_seconds,
								  "now + acceptance_timeout_seconds");
}

/*
 * Draws one id per match from mm.matches' identity sequence: the matches
 * are inserted with them explicitly, so match_ids[i] is the id of
 * matches[i] whatever order the sequence hands them out in.
 */
static void
DrawMatchIds(MmTickQueue *q, int nm, int64 *match_ids)
{
	Datum		values[1];
	int			rc;

	values[0] = Int32GetDatum(nm);
	rc = SPI_execute_plan(MmTickPlan.match_ids, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "drawing match ids failed: %s", SPI_result_code_string(rc));
	if (SPI_processed != (uint64) nm)
		elog(ERROR, "drawing match ids returned " UINT64_FORMAT " ids instead of %d",
			 SPI_processed, nm);
	for (int i = 0; i < nm; i++)
	{
		bool		isnull;

		match_ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
												   SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Inserts the rows of mm.matches, proposed until deadline or ready (0), with
 * the ids drawn into match_ids and each match's region into regions;
 * properties: a match function's, one per match, or NULL.
 */
static void
InsertMatches(MmTickQueue *q, const MmSearchResult *result, char **properties,
			  TimestampTz deadline, const char **regions, int64 *match_ids)
{
	int			nm = result->nmatches;
	double	   *qualities = palloc(sizeof(double) * nm);
	const char **steps = palloc(sizeof(char *) * nm);
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < nm; i++)
	{
		const MmFoundMatch *m = &result->matches[i];

		regions[i] = m->region >= 0 ? q->rules.regions[m->region] : NULL;
		qualities[i] = m->quality;
		steps[i] = RuleStepsJson(q->config, m, &buf);
	}
	pfree(buf.data);
	DrawMatchIds(q, nm, match_ids);

	values[0] = CStringGetTextDatum(q->queue);
	values[1] = TimestampTzGetDatum(q->now);
	values[2] = PointerGetDatum(MmBuildTextArray(regions, nm));
	values[3] = PointerGetDatum(MmBuildFloat8Array(qualities, nm));
	values[4] = PointerGetDatum(MmBuildTextArray(steps, nm));
	values[5] = PointerGetDatum(MmBuildInt8Array(match_ids, nm));
	values[6] = CStringGetTextDatum(deadline != 0 ? "proposed" : "ready");
	values[7] = TimestampTzGetDatum(deadline);
	nulls[7] = deadline != 0 ? ' ' : 'n';
	/* a match function's properties; NULL: {} */
	values[8] = properties ? PointerGetDatum(MmBuildTextArray((const char **) properties, nm)) : (Datum) 0;
	nulls[8] = properties ? ' ' : 'n';
	RunWriteWithNulls(q, MmTickPlan.insert_matches, values, nulls, SPI_OK_INSERT, nm, "inserting matches");
	for (i = 2; i <= 8; i++)
		if (i != 6 && i != 7 && nulls[i] == ' ')
			pfree(DatumGetPointer(values[i]));
	for (i = 0; i < nm; i++)
		pfree((char *) steps[i]);
	pfree(steps);
	pfree(qualities);
}

/*
 * The rows of mm.match_players being written: straight into the table
 * (bulk), or gathered into the arrays of the insert_players statement when
 * the table takes no bulk insert (MmTickBulkBegin).
 */
typedef struct PlayerRows
{
	MmTickQueue *q;
	MmTickBulk *bulk;
	int			n;
	bool		roles;			/* a role queue: role and autofilled given */
	bool		low_priority_pool;	/* low_priority given */
	/* without bulk: one element per row */
	int64	   *match,
			   *ticket;
	const char **player,
			  **team,
			  **role;
	bool	   *autofilled,
			   *low_priority;
} PlayerRows;

static void
PlayerRowsBegin(PlayerRows *rows, MmTickQueue *q, int nplayers)
{
	static const char *const columns[] = {"match_id", "queue", "player_id", "ticket_id", "team",
	"role", "autofilled", "low_priority"};
	static const Oid types[] = {INT8OID, TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID, BOOLOID, BOOLOID};

	memset(rows, 0, sizeof(*rows));
	rows->q = q;
	rows->roles = q->config->roles != NULL;
	rows->low_priority_pool = q->config->low_priority_max_wait >= 0;
	rows->bulk = MmTickBulkBegin(MmTickRelid("match_players"), lengthof(columns), columns, types);
	if (rows->bulk != NULL)
		return;
	rows->match = palloc(sizeof(int64) * nplayers);
	rows->ticket = palloc(sizeof(int64) * nplayers);
	rows->player = palloc(sizeof(char *) * nplayers);
	rows->team = palloc(sizeof(char *) * nplayers);
	if (rows->roles)
	{
		rows->role = palloc(sizeof(char *) * nplayers);
		rows->autofilled = palloc(sizeof(bool) * nplayers);
	}
	if (rows->low_priority_pool)
		rows->low_priority = palloc(sizeof(bool) * nplayers);
}

/* role: NULL outside a role queue (autofilled false there) */
static void
PlayerRowsAdd(PlayerRows *rows, int64 match_id, const char *player, int64 ticket_id,
			  const char *team, const char *role, bool autofilled, bool low_priority)
{
	if (rows->bulk != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(MmTickBulkRowContext(rows->bulk));
		Datum		values[8];
		bool		nulls[8] = {false, false, false, false, false, false, false, false};

		values[0] = Int64GetDatum(match_id);
		values[1] = CStringGetTextDatum(rows->q->queue);
		values[2] = CStringGetTextDatum(player);
		values[3] = Int64GetDatum(ticket_id);
		nulls[4] = team == NULL;
		values[4] = team ? CStringGetTextDatum(team) : (Datum) 0;
		nulls[5] = role == NULL;
		values[5] = role ? CStringGetTextDatum(role) : (Datum) 0;
		values[6] = BoolGetDatum(rows->roles && autofilled);
		values[7] = BoolGetDatum(rows->low_priority_pool && low_priority);
		MemoryContextSwitchTo(old);
		MmTickBulkAdd(rows->bulk, values, nulls);
		rows->n++;
		return;
	}
	rows->match[rows->n] = match_id;
	rows->player[rows->n] = player;
	rows->ticket[rows->n] = ticket_id;
	rows->team[rows->n] = team;
	if (rows->roles)
	{
		rows->role[rows->n] = role;
		rows->autofilled[rows->n] = autofilled;
	}
	if (rows->low_priority_pool)
		rows->low_priority[rows->n] = low_priority;
	rows->n++;
}

/* Writes the rows not written yet and checks their number. */
static void
PlayerRowsEnd(PlayerRows *rows)
{
	MmTickQueue *q = rows->q;
	int			n = rows->n;
	Datum		values[8];
	char		nulls[8];
	int			i;

	if (rows->bulk != NULL)
	{
		if (MmTickBulkEnd(rows->bulk) != n)
			elog(ERROR, "inserting match players wrote a different number of rows than %d", n);
		return;
	}
	values[0] = CStringGetTextDatum(q->queue);
	values[1] = PointerGetDatum(MmBuildInt8Array(rows->match, n));
	pfree(rows->match);
	values[2] = PointerGetDatum(MmBuildTextArray(rows->player, n));
	pfree(rows->player);
	values[3] = PointerGetDatum(MmBuildInt8Array(rows->ticket, n));
	pfree(rows->ticket);
	values[4] = PointerGetDatum(MmBuildTextArray(rows->team, n));
	pfree(rows->team);
	memset(nulls, ' ', sizeof(nulls));
	nulls[5] = nulls[6] = rows->roles ? ' ' : 'n';
	values[5] = rows->roles ? PointerGetDatum(MmBuildTextArray(rows->role, n)) : (Datum) 0;
	values[6] = rows->roles ? PointerGetDatum(MmBuildBoolArray(rows->autofilled, n)) : (Datum) 0;
	nulls[7] = rows->low_priority_pool ? ' ' : 'n';
	values[7] = rows->low_priority_pool ? PointerGetDatum(MmBuildBoolArray(rows->low_priority, n)) : (Datum) 0;
	RunWriteWithNulls(q, MmTickPlan.insert_players, values, nulls, SPI_OK_INSERT, n,
					  "inserting match players");
	/* the arrays are as long as the queue: free them before the next ones */
	for (i = 1; i <= 7; i++)
		if (nulls[i] == ' ')
			pfree(DatumGetPointer(values[i]));
}

/*
 * Inserts the rows of mm.match_players (with roles and autofill in a role
 * queue, the low-priority flag where the queue has that pool) and protects
 * the autofilled players; returns how many players were matched.
 */
static int
InsertMatchPlayers(MmTickQueue *q, const MmSearchResult *result, const int64 *match_ids)
{
	const MmQueueConfig *config = q->config;
	const MmRolesConfig *roles = config->roles;
	const char **autofilled_ids = NULL;
	int			nautofilled = 0;
	int			nplayers = 0;
	PlayerRows	rows;
	int			i,
				k,
				p;

	for (i = 0; i < result->nmatches; i++)
		nplayers += result->matches[i].nplayers;
	if (roles != NULL)
		autofilled_ids = palloc(sizeof(char *) * nplayers);
	PlayerRowsBegin(&rows, q, nplayers);
	for (i = 0; i < result->nmatches; i++)
	{
		const MmFoundMatch *m = &result->matches[i];
		int			mp = 0;

		for (k = 0; k < m->ntickets; k++)
		{
			const MmTicket *t = &q->tickets[m->tickets[k]];
			const char *team = m->ticket_team[k] >= 0 ? config->teams[m->ticket_team[k]].name : NULL;

			for (p = 0; p < t->nplayers; p++, mp++)
			{
				const char *role = NULL;
				bool		autofilled = false;

				if (roles != NULL && m->player_role != NULL)
				{
					role = roles->names[m->player_role[mp]];
					autofilled = m->player_autofilled[mp];
					if (autofilled)
						autofilled_ids[nautofilled++] = t->player_ids[p];
				}
				/* penalised, also past the pool's bound */
				PlayerRowsAdd(&rows, match_ids[i], t->player_ids[p], t->id, team, role, autofilled,
							  t->penalised);
			}
		}
	}
	PlayerRowsEnd(&rows);
	if (nautofilled > 0 && roles->protect_games > 0)
	{
		Datum		values[4];

		values[0] = CStringGetTextDatum(q->queue);
		values[1] = PointerGetDatum(MmBuildTextArray(autofilled_ids, nautofilled));
		values[2] = Int32GetDatum(roles->protect_games);
		values[3] = TimestampTzGetDatum(q->now);
		MmTickRunWrite(q, MmTickPlan.protect_autofilled, values, SPI_OK_INSERT, nautofilled,
					   "protecting autofilled players");
	}
	return nplayers;
}

/* A matched ticket: its position among the loaded tickets, its match and slot */
typedef struct EndingTicket
{
	int			index;
	int			match;
	int			k;
} EndingTicket;

static int
CompareEndingTickets(const void *a, const void *b)
{
	int			ia = ((const EndingTicket *) a)->index;
	int			ib = ((const EndingTicket *) b)->index;

	return (ia > ib) - (ia < ib);
}

/*
 * The matched tickets: proposed while the players answer (deadline), else
 * moved to mm.tickets_ended.  Built once the match players are written, so
 * their arrays are not held beside those.  They are written in the order the
 * tick loaded them (oldest first, as the ids grow): the ended rows' key and
 * (queue, created_at) then grow at their right edge instead of taking each
 * entry at a random leaf, and the active rows are read in page order.
 */
static void
EndMatchedTickets(MmTickQueue *q, const MmSearchResult *result, const int64 *match_ids,
				  TimestampTz deadline)
{
	const MmQueueConfig *config = q->config;
	int			ntickets = 0;
	int64	   *t_ids,
			   *t_match;
	const char **t_team;
	int		   *t_index;
	EndingTicket *ending;
	int			i,
				k;

	for (i = 0; i < result->nmatches; i++)
		ntickets += result->matches[i].ntickets;
	ending = palloc(sizeof(EndingTicket) * Max(ntickets, 1));
	ntickets = 0;
	for (i = 0; i < result->nmatches; i++)
	{
		for (k = 0; k < result->matches[i].ntickets; k++)
		{
			ending[ntickets].index = result->matches[i].tickets[k];
			ending[ntickets].match = i;
			ending[ntickets++].k = k;
		}
	}
	qsort(ending, ntickets, sizeof(EndingTicket), CompareEndingTickets);
	t_ids = palloc(sizeof(int64) * ntickets);
	t_match = palloc(sizeof(int64) * ntickets);
	t_team = palloc(sizeof(char *) * ntickets);
	t_index = palloc(sizeof(int) * ntickets);
	for (i = 0; i < ntickets; i++)
	{
		const MmFoundMatch *m = &result->matches[ending[i].match];

		k = ending[i].k;
		t_index[i] = ending[i].index;
		t_ids[i] = q->tickets[t_index[i]].id;
		t_team[i] = m->ticket_team[k] >= 0 ? config->teams[m->ticket_team[k]].name : NULL;
		t_match[i] = match_ids[ending[i].match];
	}
	pfree(ending);
	if (deadline != 0)
		ProposeTickets(q, ntickets, t_index, t_match, t_team);
	else
		MmTickMoveMatchedTickets(q, ntickets, t_index, t_ids, t_match, t_team);
	pfree(t_ids);
	pfree(t_match);
	pfree(t_team);
	pfree(t_index);
}

/*
 * Queues one match_found (or match_proposed, with a deadline) per match, sent
 * at commit.
 */
static void
NotifyMatches(MmTickQueue *q, const MmSearchResult *result, const int64 *match_ids,
			  const char **regions, TimestampTz deadline)
{
	const MmQueueConfig *config = q->config;
	const MmRolesConfig *roles = config->roles;
	int			nteams = Max(config->nteams, 1);

	for (int i = 0; i < result->nmatches; i++)
	{
		const MmFoundMatch *m = &result->matches[i];
		MmEventTeam *teams = palloc(sizeof(MmEventTeam) * nteams);
		int64	   *ids = palloc(sizeof(int64) * m->ntickets);
		int			t,
					k,
					p,
					mp = 0;

		for (t = 0; t < nteams; t++)
		{
			teams[t].name = config->nteams > 0 ? config->teams[t].name : NULL;
			teams[t].nplayers = 0;
			teams[t].player_ids = palloc(sizeof(char *) * m->nplayers);
			teams[t].roles = NULL;
			teams[t].autofilled = NULL;
			if (m->player_role != NULL)
			{
				teams[t].roles = palloc(sizeof(char *) * m->nplayers);
				teams[t].autofilled = palloc(sizeof(bool) * m->nplayers);
			}
		}
		for (k = 0; k < m->ntickets; k++)
		{
			const MmTicket *tk = &q->tickets[m->tickets[k]];
			MmEventTeam *team = &teams[Max(m->ticket_team[k], 0)];

			ids[k] = tk->id;
			for (p = 0; p < tk->nplayers; p++, mp++)
			{
				if (m->player_role != NULL)
				{
					((const char **) team->roles)[team->nplayers] = roles->names[m->player_role[mp]];
					((bool *) team->autofilled)[team->nplayers] = m->player_autofilled[mp];
				}
				team->player_ids[team->nplayers++] = tk->player_ids[p];
			}
		}
		MmNotifyMatchFound(deadline != 0 ? "match_proposed" : "match_found", q->queue, match_ids[i],
						   regions[i], m->quality, nteams, teams, m->ntickets, ids);
		for (t = 0; t < nteams; t++)
			pfree(teams[t].player_ids);
		pfree(teams);
		pfree(ids);
	}
}

/*
 * Writes the matches in bulk and queues their events; properties: a match
 * function's, one per match, or NULL.
 */
void
MmTickWriteMatches(MmTickQueue *q, const MmSearchResult *result, char **properties)
{
	int			nm = result->nmatches;
	const char **regions = palloc(sizeof(char *) * nm);
	int64	   *match_ids = palloc(sizeof(int64) * nm);
	TimestampTz deadline = AcceptanceDeadline(q->config, q->now);

	InsertMatches(q, result, properties, deadline, regions, match_ids);
	q->stats->players_matched = InsertMatchPlayers(q, result, match_ids);
	EndMatchedTickets(q, result, match_ids, deadline);
	NotifyMatches(q, result, match_ids, regions, deadline);
	pfree(regions);
	pfree(match_ids);
}

/*
 * Adds the search's per-rule counts to mm.rule_evaluations: one statement per
 * tick of a queue, only when the search checked a candidate.
 */
void
MmTickWriteRuleStats(MmTickQueue *q, const MmSearchResult *result)
{
	const char **names;
	Datum		values[5];
	int64		checks = 0;
	int			r;

	if (result->nrules == 0)
		return;
	for (r = 0; r < result->nrules; r++)
		checks += result->rule_passed[r] + result->rule_failed[r];
	if (checks == 0)
		return;
	names = palloc(sizeof(char *) * result->nrules);
	for (r = 0; r < result->nrules; r++)
		names[r] = q->config->rules[r].name;
	values[0] = CStringGetTextDatum(q->queue);
	values[1] = TimestampTzGetDatum(q->now);
	values[2] = PointerGetDatum(MmBuildTextArray(names, result->nrules));
	values[3] = PointerGetDatum(MmBuildInt8Array(result->rule_passed, result->nrules));
	values[4] = PointerGetDatum(MmBuildInt8Array(result->rule_failed, result->nrules));
	MmTickRunWrite(q, MmTickPlan.rule_stats, values, SPI_OK_INSERT, result->nrules, "counting rule checks");
}
