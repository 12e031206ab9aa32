/*
 * matchmaking.c
 *	  Module entry point of the matchmaking extension.
 *
 * Every concern lives in its own file under src/ (ratings, team balancing,
 * queue configuration, rules, the tick, events); this file only carries the
 * module magic and the load-time initialisation.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "citus_guard.h"
#include "events.h"
#include "schedule_starter.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* matchmaking.max_notify_queue_usage: see events.h */
double		MmMaxNotifyQueueUsage = 0.9;

/*
 * Module load callback: the matchmaking.* settings, and the hooks that guard
 * Citus's delegation of the distributed functions (citus_guard.c).
 */
void
_PG_init(void)
{
	DefineCustomRealVariable("matchmaking.max_notify_queue_usage",
							 "Fill level of the notification queue from which mm.tick refuses to run.",
							 "Every match is announced on mm_events at commit; with the queue full "
							 "the commit fails. From this fraction on (0 to 1), mm.tick stops with "
							 "an error naming the cause before forming matches.",
							 &MmMaxNotifyQueueUsage,
							 0.9, 0.0, 1.0,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	MmRegisterLoopKeeper();
	MarkGUCPrefixReserved("matchmaking");
	MmInstallCitusGuard();
}
