/*
 * queue_shards.h
 *	  The relations a statement about one queue names (queue_shards.c): on a
 *	  Citus node that holds the queue, its shards by name; elsewhere the
 *	  tables.
 */
#ifndef MM_QUEUE_SHARDS_H
#define MM_QUEUE_SHARDS_H

#include "executor/spi.h"

/* A statement of a call, "mm.<table>" naming one of the queue's tables. */
typedef struct MmQueueStatement
{
	const char *sql;
	int			nargs;
	Oid			argtypes[4];
} MmQueueStatement;

/* The relations a call's statements name (one set per shard group). */
typedef struct MmQueueRelations MmQueueRelations;

extern SPIPlanPtr MmKeepPlan(const char *sql, int nargs, Oid *argtypes);
extern bool MmLockShardHere(int64 shard_id);
extern char *MmNameShards(const char *sql, const char *const *tables, char *const *shards, int ntables);
extern int64 MmShardsOfQueue(const char *queue, const char *const *tables, int ntables, char **shards);
extern MmQueueRelations *MmQueueRelationsOf(const char *queue);
extern MmQueueRelations *MmQueueTables(void);
extern bool MmQueueOnShards(const MmQueueRelations *relations);
extern SPIPlanPtr MmQueuePlan(MmQueueRelations *relations, const MmQueueStatement *statement);
extern bool MmQueueReadRow(MmQueueRelations *relations, const MmQueueStatement *statement,
						   Datum *args, bool read_only);

#endif
