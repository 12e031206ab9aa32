/*
 * ticket_shards.h
 *	  The lock of a queue's shard on its Citus node (ticket_shards.c), which
 *	  every write that names a shard takes.
 */
#ifndef MM_TICKET_SHARDS_H
#define MM_TICKET_SHARDS_H

extern bool MmLockShardHere(int64 shard_id);

#endif
