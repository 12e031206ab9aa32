/*
 * tick_internal.h
 *	  What the files of mm.tick share, and nothing else includes.
 *
 * The tick is split by phase:
 *	 tick.c			 the entry points (mm.tick, mm.last_tick_stats) and the
 *					 tick of one queue, phase after phase
 *	 tick_shards.c	 the relations a queue's tick names (its shards on Citus)
 *	 tick_plans.c	 every statement the tick runs, prepared once per backend
 *	 tick_bulk.c	 the bulk insert of the match players and ended rows
 *	 tick_expiry.c	 before the search: proposals past their deadline, tickets
 *					 past their timeout or heartbeat, live matches past their life
 *	 tick_load.c	 loading the queue's searching tickets
 *	 tick_backfill.c serving the open backfill requests of live matches
 *	 tick_write.c	 writing the matches formed, their players and tickets
 *
 * A file calls only those below it in the layering of check_c_layers.pl:
 * tick_shards.c (the shared relations and plans) lowest, then tick_plans.c,
 * tick_bulk.c, tick_expiry.c, tick_load.c, tick_write.c, tick_backfill.c,
 * and tick.c on top.
 *
 * One queue's tick carries its state in an MmTickQueue: everything of it
 * lives in its memory context, deleted when the queue is done, so nothing
 * grows across queues or calls.  SPI calls return in SPI's procedure
 * context; the tick switches back to the queue's after each of them
 * (MmTickBackToQueue).
 */
#ifndef MM_TICK_INTERNAL_H
#define MM_TICK_INTERNAL_H

#include "postgres.h"

#include "executor/spi.h"
#include "storage/itemptr.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "match_search.h"
#include "queue_config.h"
#include "rules.h"

/* What the last mm.tick() of this backend did, per queue. */
typedef struct MmTickStats
{
	char		queue[MM_MAX_NAME_LENGTH + 1];
	bool		locked_out;		/* another tick held the queue */
	int			tickets_loaded;
	int			tickets_timed_out;
	int			matches;
	int			players_matched;
	double		load_ms;		/* timeouts and loading (SPI, JSON parsing) */
	double		compute_ms;		/* match_search only */
	double		write_ms;		/* bulk writes and events */
	int64		memory_bytes;	/* peak of the per-queue memory context */
} MmTickStats;

/*
 * The tick of one queue: what it read, what it loaded, where it counts.
 * Built by TickQueue (tick.c) phase after phase; every pointer is in
 * context.
 */
typedef struct MmTickQueue
{
	const char *queue;
	TimestampTz now;
	MemoryContext context;		/* the queue's; deleted when it is done */
	Jsonb	   *config_jsonb;	/* mm.queues.config as stored */
	MmQueueConfig *config;		/* ... parsed */
	MmRuleContext rules;		/* the rules' context for the search */
	const char *match_function; /* the queue's match_function, or NULL */
	char	   *match_function_role;	/* the role it runs as */

	/* the searching tickets loaded (tick_load.c), oldest first */
	MmTicket   *tickets;
	ItemPointerData *ctids;		/* where each one's row is */
	int			ntickets;
	/*
	 * Each one's players as stored and creation time, kept when a match
	 * function needs them (NULL otherwise).
	 */
	Jsonb	  **raw_players;
	TimestampTz *raw_created;
	/*
	 * Whether a loaded ticket searches in other queues too: the matched
	 * tickets then leave mm.ticket_queues as well.
	 */
	bool		other_queues_tickets;

	MmTickStats *stats;
	int64		peak_bytes;		/* the context's peak, noted in the writes */
} MmTickQueue;

/* The statements of the tick, prepared once per backend (tick_plans.c). */
typedef struct MmTickPlans
{
	SPIPlanPtr	queue_config;
	SPIPlanPtr	queue_names;
	SPIPlanPtr	expire_proposals;
	SPIPlanPtr	timeout;
	SPIPlanPtr	release_claims;
	SPIPlanPtr	pending_players;
	SPIPlanPtr	claim_pending;
	SPIPlanPtr	forget_pending;
	SPIPlanPtr	has_releases;
	SPIPlanPtr	apply_releases;
	SPIPlanPtr	cancel_silent_tickets;
	SPIPlanPtr	expire_live_matches;
	SPIPlanPtr	close_expired_backfills;
	SPIPlanPtr	notify_expired;
	SPIPlanPtr	has_other_tickets;
	SPIPlanPtr	load;
	SPIPlanPtr	load_with_others;
	SPIPlanPtr	penalised_tickets;
	SPIPlanPtr	match_ids;
	SPIPlanPtr	insert_matches;
	SPIPlanPtr	insert_players;
	SPIPlanPtr	protect_autofilled;
	SPIPlanPtr	end_tickets_by_ctid;
	SPIPlanPtr	end_tickets_from_arrays;
	SPIPlanPtr	delete_active;
	SPIPlanPtr	unlist_tickets;
	SPIPlanPtr	propose_tickets;
	SPIPlanPtr	rule_stats;
	SPIPlanPtr	load_backfills;
	SPIPlanPtr	load_members;
	SPIPlanPtr	update_backfill;
	SPIPlanPtr	notify_match;
	SPIPlanPtr	cancel_backfill;
} MmTickPlans;

/*
 * The statements of the relations the current queue's tick works on
 * (tick_shards.c): one set on one node; on a Citus worker one set per local
 * shard group, whose statements name the shards themselves.
 */
extern MmTickPlans *MmTickCurrentPlans;
#define MmTickPlan (*MmTickCurrentPlans)

/* tick_shards.c */
extern bool MmTickUseRelationsOf(const char *queue);
extern bool MmTickOnShards(void);
extern int	MmTickPlanPendingClaims(void);
extern void MmTickPlannedPendingClaims(int level);
extern void MmTickClaimPendingPlayers(const char *queue, TimestampTz now);
extern void MmTickApplyPendingReleases(const char *queue);
extern Oid	MmTickRelid(const char *table);
extern char *MmTickStatementFor(const char *sql);

/* Back to the queue's memory context after an SPI call. */
static inline void
MmTickBackToQueue(const MmTickQueue *q)
{
	MemoryContextSwitchTo(q->context);
}

/* tick_bulk.c */
typedef struct MmTickBulk MmTickBulk;
extern MmTickBulk *MmTickBulkBegin(Oid relid, int ncolumns, const char *const *columns,
								   const Oid *types);
extern MemoryContext MmTickBulkRowContext(MmTickBulk *b);
extern void MmTickBulkAdd(MmTickBulk *b, const Datum *values, const bool *nulls);
extern int64 MmTickBulkEnd(MmTickBulk *b);

/* tick_plans.c */
extern void MmTickPreparePlans(void);

/* tick_expiry.c */
extern void MmTickExpireProposals(MmTickQueue *q, TimestampTz now);
extern int	MmTickTimeOutTickets(MmTickQueue *q);
extern void MmTickCancelSilentTickets(MmTickQueue *q);
extern void MmTickExpireLiveMatches(MmTickQueue *q);

/* tick_load.c */
extern void MmTickLoadTickets(MmTickQueue *q, bool keep_raw);

/* tick_backfill.c */
extern void MmTickServeBackfills(MmTickQueue *q);

/* tick_write.c */
extern void MmTickWriteMatches(MmTickQueue *q, const MmSearchResult *result, char **properties);
extern void MmTickWriteRuleStats(MmTickQueue *q, const MmSearchResult *result);
extern void MmTickMoveMatchedTickets(MmTickQueue *q, int ntickets, const int *t_index,
									 const int64 *ticket_ids, const int64 *match_ids,
									 const char **teams);
extern void MmTickRunWrite(MmTickQueue *q, SPIPlanPtr plan, Datum *values, int expected_rc,
						   int64 rows, const char *what);
extern void MmTickNoteMemoryPeak(MmTickQueue *q);

#endif							/* MM_TICK_INTERNAL_H */
