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

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Module load callback.  Nothing to register yet; GUCs (matchmaking.*) go here.
 */
void
_PG_init(void)
{
}
