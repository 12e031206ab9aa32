/*
 * schedule_starter.h
 *	  The tick loop's background workers: the one mm.schedule starts, and the
 *	  loop keeper that restarts loops within seconds (schedule_starter.c).
 */
#ifndef MM_SCHEDULE_STARTER_H
#define MM_SCHEDULE_STARTER_H

/*
 * From _PG_init: defines matchmaking.loop_keeper_database and, when the
 * library is preloaded, registers the loop keeper.
 */
extern void MmRegisterLoopKeeper(void);

#endif							/* MM_SCHEDULE_STARTER_H */
