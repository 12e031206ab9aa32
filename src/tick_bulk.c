/*
 * tick_bulk.c
 *	  The tick's two largest writes (the matched tickets' ended rows, the
 *	  match players) made the way COPY makes them: rows built in C go into
 *	  the heap a batch at a time (table_multi_insert: one WAL record and one
 *	  buffer lock per page instead of per row), then into each index.
 *
 * Only for a plain table whose INSERT would do nothing more than that: no
 * insert trigger, no row security, every column the caller does not give
 * without default or NOT NULL, the columns it gives of the types it says.
 * Otherwise MmTickBulkBegin returns NULL and the caller runs its INSERT
 * statement instead.  NOT NULL and CHECK constraints are checked per row
 * (ExecConstraints), unique indexes as they are written, as an INSERT does.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "tick_internal.h"

/* rows and bytes held before a table_multi_insert call, as COPY's buffer */
#define MM_BULK_BATCH 1000
#define MM_BULK_BYTES 65535

struct MmTickBulk
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	CommandId	cid;
	MemoryContext row_context;	/* the caller's datums of one row */
	MemoryContext batch_context;	/* what table_multi_insert leaks */
	int			ncolumns;
	AttrNumber *attnums;		/* of each column given, in order */
	TupleTableSlot *slots[MM_BULK_BATCH];
	int			nslots;			/* made so far */
	int			nused;			/* holding rows not yet written */
	Size		nbytes;			/* their data's size */
	int64		rows;
};

/*
 * Whether an INSERT of the given columns into rel does nothing this file
 * does not: attnums receives each column's number.
 */
static bool
BulkInsertable(Relation rel, int ncolumns, const char *const *columns, const Oid *types,
			   AttrNumber *attnums)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TriggerDesc *trig = rel->trigdesc;
	bool	   *given = palloc0(sizeof(bool) * desc->natts);
	int			c,
				a;

	/* a rule or another access method would make the INSERT do more */
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relrowsecurity ||
		rel->rd_rel->relhasrules || rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		return false;
	if (trig != NULL &&
		(trig->trig_insert_before_row || trig->trig_insert_after_row ||
		 trig->trig_insert_instead_row || trig->trig_insert_before_statement ||
		 trig->trig_insert_after_statement || trig->trig_insert_new_table))
		return false;
	for (c = 0; c < ncolumns; c++)
	{
		Form_pg_attribute att;

		attnums[c] = get_attnum(RelationGetRelid(rel), columns[c]);
		if (attnums[c] <= 0)
			return false;
		att = TupleDescAttr(desc, attnums[c] - 1);
		if (att->atttypid != types[c] || att->attgenerated)
			return false;
		given[attnums[c] - 1] = true;
	}
	for (a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		if (given[a] || att->attisdropped)
			continue;
		if (att->atthasdef || att->attgenerated || att->attnotnull)
			return false;
	}
	pfree(given);
	return true;
}

/*
 * Opens relid for a bulk insert of the given columns (names and types), in
 * the current memory context; NULL when an INSERT statement must do it.
 */
MmTickBulk *
MmTickBulkBegin(Oid relid, int ncolumns, const char *const *columns, const Oid *types)
{
	MmTickBulk *b;
	Relation	rel;
	RangeTblEntry *rte;
	AttrNumber *attnums = palloc(sizeof(AttrNumber) * ncolumns);

	/* the statement's own error says what is missing */
	if (pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		return NULL;
	rel = table_open(relid, RowExclusiveLock);
	if (!BulkInsertable(rel, ncolumns, columns, types, attnums))
	{
		table_close(rel, NoLock);
		pfree(attnums);
		return NULL;
	}
	b = palloc0(sizeof(MmTickBulk));
	b->rel = rel;
	b->ncolumns = ncolumns;
	b->attnums = attnums;
	b->estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	rte->requiredPerms = ACL_INSERT;
	ExecInitRangeTable(b->estate, list_make1(rte));
	b->rri = makeNode(ResultRelInfo);
	ExecInitResultRelation(b->estate, b->rri, 1);
	ExecOpenIndices(b->rri, false);
	/*
	 * No BulkInsertState: its ring of 16 MB of buffers made the backend
	 * write out the ended rows' pages itself during the tick (the ended
	 * rows took longer than through INSERT); the tick's rows stay in
	 * shared_buffers, as an INSERT's do.
	 */
	b->cid = GetCurrentCommandId(true);
	b->row_context = AllocSetContextCreate(CurrentMemoryContext, "mm tick bulk row",
										   ALLOCSET_SMALL_SIZES);
	b->batch_context = AllocSetContextCreate(CurrentMemoryContext, "mm tick bulk batch",
											 ALLOCSET_DEFAULT_SIZES);
	return b;
}

/* A memory context for the datums of the next row, reset once it is added. */
MemoryContext
MmTickBulkRowContext(MmTickBulk *b)
{
	return b->row_context;
}

/* Writes the rows held: the heap in one call, then each row's index entries. */
static void
BulkFlush(MmTickBulk *b)
{
	MemoryContext old_context;
	int			i;

	if (b->nused == 0)
		return;
	CHECK_FOR_INTERRUPTS();
	old_context = MemoryContextSwitchTo(b->batch_context);
	table_multi_insert(b->rel, b->slots, b->nused, b->cid, 0, NULL);
	for (i = 0; i < b->nused; i++)
	{
		ResetPerTupleExprContext(b->estate);
		if (b->rri->ri_NumIndices > 0)
			list_free(ExecInsertIndexTuples(b->rri, b->slots[i], b->estate, false, false,
											NULL, NIL));
		ExecClearTuple(b->slots[i]);
	}
	MemoryContextSwitchTo(old_context);
	MemoryContextReset(b->batch_context);
	b->nused = 0;
	b->nbytes = 0;
}

/*
 * Adds a row: values and nulls of the columns given to MmTickBulkBegin, in
 * that order; the row is copied, so they may go once this returns.
 */
void
MmTickBulkAdd(MmTickBulk *b, const Datum *values, const bool *nulls)
{
	TupleTableSlot *slot;
	int			c;

	if (b->nused == b->nslots)
		b->slots[b->nslots++] = table_slot_create(b->rel, NULL);
	slot = b->slots[b->nused];
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	for (c = 0; c < b->ncolumns; c++)
	{
		slot->tts_values[b->attnums[c] - 1] = values[c];
		slot->tts_isnull[b->attnums[c] - 1] = nulls[c];
	}
	ExecStoreVirtualTuple(slot);
	if (b->rel->rd_att->constr)
	{
		ResetPerTupleExprContext(b->estate);
		ExecConstraints(b->rri, slot, b->estate);
	}
	/* written into a partition directly: its bounds, as an INSERT checks them */
	if (b->rel->rd_rel->relispartition)
		ExecPartitionCheck(b->rri, slot, b->estate, true);
	b->nbytes += heap_compute_data_size(slot->tts_tupleDescriptor, slot->tts_values,
										slot->tts_isnull);
	/* a copy in the slot's memory: the caller's datums may point into a page */
	ExecMaterializeSlot(slot);
	MemoryContextReset(b->row_context);
	b->nused++;
	b->rows++;
	if (b->nused == MM_BULK_BATCH || b->nbytes >= MM_BULK_BYTES)
		BulkFlush(b);
}

/*
 * Writes what is left and closes the relation (its lock is kept); returns
 * the rows written.  The statements that follow see them.
 */
int64
MmTickBulkEnd(MmTickBulk *b)
{
	int64		rows;
	int			i;

	BulkFlush(b);
	for (i = 0; i < b->nslots; i++)
		ExecDropSingleTupleTableSlot(b->slots[i]);
	ExecCloseResultRelations(b->estate);
	ExecCloseRangeTableRelations(b->estate);
	FreeExecutorState(b->estate);
	table_close(b->rel, NoLock);
	MemoryContextDelete(b->row_context);
	MemoryContextDelete(b->batch_context);
	rows = b->rows;
	pfree(b->attnums);
	pfree(b);
	CommandCounterIncrement();
	return rows;
}
