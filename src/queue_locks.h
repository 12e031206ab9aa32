/*
 * queue_locks.h
 *	  The locks that keep two ticks, or two tick loops, of one queue apart.
 *
 * Advisory locks (the lock manager's user lock method), but with a fourth
 * key field that pg_advisory_lock and its kin never use (they use 1 and 2):
 * SQL cannot take them, so a role with no grant cannot hold a queue's tick
 * or loop to stop it.  Only the library does, inside mm.tick and
 * mm.tick_loop, which only mm_ticker and mm_admin may run.  pg_locks shows
 * them as locktype advisory with objsubid MM_LOCK_TICK or MM_LOCK_TICK_LOOP,
 * the 64-bit key in classid (high half) and objid (low half).
 */
#ifndef MM_QUEUE_LOCKS_H
#define MM_QUEUE_LOCKS_H

#include "postgres.h"

#include "miscadmin.h"
#include "storage/lock.h"

#define MM_LOCK_TICK		28020	/* 0x6d74, "mt": one queue's tick (transaction) */
#define MM_LOCK_TICK_LOOP	28012	/* 0x6d6c, "ml": one queue's tick loop (session) */

static inline void
MmSetQueueLockTag(LOCKTAG *tag, int64 key, uint16 kind)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) ((uint64) key >> 32), (uint32) key, kind);
}

#endif							/* MM_QUEUE_LOCKS_H */
