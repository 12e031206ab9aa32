/*
 * player_sources.h
 *	  The values rules read from the server's side (player_sources.c):
 *	  mm.players.attributes ("source": "player") and the stored rating in the
 *	  queue's pool ("source": "rating").
 */
#ifndef MM_PLAYER_SOURCES_H
#define MM_PLAYER_SOURCES_H

#include "postgres.h"

#include "queue_config.h"
#include "rules.h"

typedef struct MmPlayerSources MmPlayerSources;

/* Whether any rule of the config reads a source other than the ticket. */
extern bool MmConfigReadsPlayerSources(const MmQueueConfig *config);

/*
 * Reads the attributes and ratings the config's rules need for these players
 * (SPI must be connected).  Allocated in CurrentMemoryContext.
 */
extern MmPlayerSources *MmLoadPlayerSources(const MmQueueConfig *config, const char *queue,
											const char **player_ids, int nplayers);

/* Points a player's server_attributes and rating at what was loaded for it. */
extern void MmApplyPlayerSources(const MmPlayerSources *sources, MmPlayerInput *player);

#endif							/* MM_PLAYER_SOURCES_H */
