/*
 * tick.c
 *	  mm.tick(): forms matches in one queue or all, in the caller's transaction.
 *
 * Per queue: a transaction-level advisory lock (a concurrent tick of the
 * same queue returns 0 at once), time out expired tickets (0.4: and, as the
 * queue's config asks, cancel silent ones and expire live matches), load the searching
 * tickets oldest first FOR UPDATE SKIP LOCKED (a ticket being cancelled is
 * neither matched nor waited for), extract their rule values, search
 * (match_search.c, pure C), write matches, match players and ticket states in
 * bulk (arrays unnested by prepared plans kept across calls) and queue the
 * events, which PostgreSQL sends at commit.  The queue's config row is read
 * FOR SHARE, so mm.alter_queue and mm.drop_queue wait for the tick's commit.
 * In all-queues mode each queue runs in its own subtransaction.
 *
 * Memory: everything of one queue lives in a per-queue context deleted when
 * the queue is done, so nothing grows across queues or calls.
 */
#include "postgres.h"

#include <math.h>

#include "access/detoast.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/itemptr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "events.h"
#include "match_function.h"
#include "match_search.h"
#include "player_sources.h"
#include "queue_config.h"
#include "rules.h"
#include "sql_arrays.h"
#include "ticket_parse.h"

PG_FUNCTION_INFO_V1(mm_tick);
PG_FUNCTION_INFO_V1(mm_last_tick_stats);

/* Tickets fetched per round trip from the load cursor. */
#define MM_LOAD_BATCH 1000

/* Seed of the advisory lock key: one key per queue name. */
#define MM_TICK_LOCK_SEED UINT64CONST(0x6d6d5f7469636b)

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

static MmTickStats *LastStats = NULL;
static int	LastStatsCount = 0;
static int	LastStatsAllocated = 0;

/* Plans prepared once per backend and kept (SPI_keepplan). */
static SPIPlanPtr PlanQueueConfig = NULL;
static SPIPlanPtr PlanQueueNames = NULL;
static SPIPlanPtr PlanTimeout = NULL;
static SPIPlanPtr PlanLoad = NULL;
static SPIPlanPtr PlanMatchIds = NULL;
static SPIPlanPtr PlanInsertMatches = NULL;
static SPIPlanPtr PlanInsertPlayers = NULL;
static SPIPlanPtr PlanUpdateTickets = NULL;
static SPIPlanPtr PlanReleasePlayers = NULL;
static SPIPlanPtr PlanDeleteActive = NULL;
static SPIPlanPtr PlanProposeTickets = NULL;
static SPIPlanPtr PlanExpireProposals = NULL;
static SPIPlanPtr PlanLoadBackfills = NULL;
static SPIPlanPtr PlanLoadMembers = NULL;
static SPIPlanPtr PlanUpdateBackfill = NULL;
static SPIPlanPtr PlanNotifyMatch = NULL;
static SPIPlanPtr PlanCancelBackfill = NULL;
static SPIPlanPtr PlanHasOtherTickets = NULL;
static SPIPlanPtr PlanLoadWithOthers = NULL;
static SPIPlanPtr PlanUnlistTickets = NULL;
static SPIPlanPtr PlanEndTicketsFromArrays = NULL;
static SPIPlanPtr PlanRuleStats = NULL;
static SPIPlanPtr PlanExpireLiveMatches = NULL;
static SPIPlanPtr PlanNotifyExpired = NULL;
static SPIPlanPtr PlanCancelSilentTickets = NULL;

/*
 * Whether the queue being ticked loaded a ticket that searches in several
 * queues (0.3): the matched tickets then leave mm.ticket_queues too.  Set by
 * LoadTickets for the queue it loads.
 */
static bool LoadedOtherQueuesTickets = false;

/*
 * The installed schema's version: the library serves every version's SQL,
 * so a database not yet updated keeps ticking.  0.1 has one mm.tickets table
 * with statuses updated in place; 0.2 partitions the tickets and releases
 * the players of a match when it forms; 0.3 adds the match lifecycle
 * (acceptance; players stay claimed until their match ends).  Decided when
 * the plans are prepared.
 */
typedef enum MmSchemaVersion
{
	MM_SCHEMA_NONE,
	MM_SCHEMA_01,
	MM_SCHEMA_02,
	MM_SCHEMA_03,
	MM_SCHEMA_04
} MmSchemaVersion;

static MmSchemaVersion PlansForSchema = MM_SCHEMA_NONE;

#define PlansForSchema01 (PlansForSchema == MM_SCHEMA_01)

/*
 * The per-queue memory context.  SPI calls return in SPI's procedure
 * context, so the tick switches back to this one after each of them.
 */
static MemoryContext QueueContext = NULL;

/* Whether this backend is inside mm.tick: a nested call is refused. */
static bool TickRunning = false;

static int	RunTick(FunctionCallInfo fcinfo, TimestampTz now, MemoryContext caller_context);

#define BackToQueueContext() MemoryContextSwitchTo(QueueContext)

/*
 * The work_mem the tick's statements run with, at least: their bulk writes
 * unnest arrays as long as the queue, whose rows PostgreSQL materialises,
 * and below this they would spill to temporary files.
 */
#define MM_TICK_WORK_MEM_KB 65536

/* Prepares a statement once and keeps it for the backend's lifetime. */
static SPIPlanPtr
KeepPlan(SPIPlanPtr *slot, const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan;

	if (*slot != NULL)
		return *slot;
	/*
	 * Generic plans from the first call: the bulk statements take arrays of
	 * up to the whole queue, and a custom plan would estimate every element
	 * of them on each call.
	 */
	plan = SPI_prepare_cursor(sql, nargs, argtypes, CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql,
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	*slot = plan;
	return plan;
}

/* Forgets the prepared plans (the schema changed under this backend). */
static void
FreePlans(void)
{
	SPIPlanPtr *plans[] = {&PlanQueueConfig, &PlanQueueNames, &PlanTimeout, &PlanLoad,
		&PlanMatchIds, &PlanInsertMatches, &PlanInsertPlayers, &PlanUpdateTickets,
		&PlanReleasePlayers, &PlanDeleteActive, &PlanProposeTickets, &PlanExpireProposals,
		&PlanLoadBackfills, &PlanLoadMembers, &PlanUpdateBackfill, &PlanNotifyMatch, &PlanCancelBackfill,
		&PlanHasOtherTickets, &PlanLoadWithOthers, &PlanUnlistTickets, &PlanRuleStats,
		&PlanEndTicketsFromArrays, &PlanExpireLiveMatches, &PlanNotifyExpired,
		&PlanCancelSilentTickets};
	int			i;

	for (i = 0; i < lengthof(plans); i++)
	{
		if (*plans[i] != NULL)
			SPI_freeplan(*plans[i]);
		*plans[i] = NULL;
	}
}

/*
 * The version of schema mm's layout: 0.1 has no mm.tickets_active partition,
 * 0.3 has the index of proposed matches' deadlines, 0.4 the role that named
 * a queue's match function.
 */
static MmSchemaVersion
InstalledSchema(void)
{
	Oid			namespace = get_namespace_oid("mm", false);

	if (!OidIsValid(get_relname_relid("tickets_active", namespace)))
		return MM_SCHEMA_01;
	if (!OidIsValid(get_relname_relid("matches_proposed_deadline", namespace)))
		return MM_SCHEMA_02;
	if (get_attnum(get_relname_relid("queues", namespace), "match_function_role") == InvalidAttrNumber)
		return MM_SCHEMA_03;
	return MM_SCHEMA_04;
}

/*
 * Prepares every statement of the tick (first call in this backend, and
 * again after ALTER EXTENSION changed the schema's layout).
 */
static void
PreparePlans(void)
{
	Oid			text1[] = {TEXTOID};
	Oid			load_args[] = {TEXTOID, TIMESTAMPTZOID};
	Oid			timeout_args[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Oid			int4_1[] = {INT4OID};
	Oid			matches_args[] = {TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID, FLOAT8ARRAYOID, TEXTARRAYOID,
	INT8ARRAYOID, TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID};
	Oid			players_args[] = {TEXTOID, INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID};
	Oid			tickets_args[] = {TIMESTAMPTZOID, INT8ARRAYOID, INT8ARRAYOID};
	Oid			ended_args[] = {TIMESTAMPTZOID, TIDARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTOID};
	Oid			ended_from_arrays_args[] = {TIMESTAMPTZOID, INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTOID,
	JSONBARRAYOID, TIMESTAMPTZARRAYOID};
	Oid			tid_array1[] = {TIDARRAYOID};
	Oid			text_array1[] = {TEXTARRAYOID};
	MmSchemaVersion schema = InstalledSchema();
	bool		schema01 = schema == MM_SCHEMA_01;

	if (PlanQueueConfig != NULL && schema != PlansForSchema)
		FreePlans();
	PlansForSchema = schema;

	/*
	 * FOR SHARE: conflicts with the UPDATE of mm.alter_queue and the FOR
	 * UPDATE of mm.drop_queue, so a queue's config cannot change while a tick
	 * of it is in flight (alter waits for the tick's commit), and a tick that
	 * starts while an alter is in flight waits for it and reads the new
	 * config.  Ticks share the lock (they exclude each other by the advisory
	 * lock), and so do ticket inserts (their foreign key check takes KEY
	 * SHARE).
	 */
	KeepPlan(&PlanQueueConfig,
			 schema >= MM_SCHEMA_04 ?
			 "SELECT config, match_function_role FROM mm.queues"
			 " WHERE name OPERATOR(pg_catalog.=) $1 FOR SHARE" :
			 "SELECT config, NULL::pg_catalog.text FROM mm.queues"
			 " WHERE name OPERATOR(pg_catalog.=) $1 FOR SHARE",
			 1, text1);
	KeepPlan(&PlanQueueNames, "SELECT name FROM mm.queues ORDER BY name", 0, NULL);
	if (schema01)
		KeepPlan(&PlanTimeout,
				 "WITH expired AS ("
				 " SELECT id FROM mm.tickets"
				 " WHERE queue OPERATOR(pg_catalog.=) $1"
				 " AND status OPERATOR(pg_catalog.=) 'searching'"
				 " AND created_at OPERATOR(pg_catalog.<) $2"
				 " ORDER BY created_at, id FOR UPDATE SKIP LOCKED)"
				 " UPDATE mm.tickets t SET status = 'timed_out', updated_at = $3"
				 " FROM expired WHERE t.id OPERATOR(pg_catalog.=) expired.id"
				 " RETURNING t.id",
				 3, timeout_args);
	else
		KeepPlan(&PlanTimeout,
				 "SELECT pg_catalog.array_agg(e.id) FROM mm.end_tickets(ARRAY("
				 " SELECT id FROM mm.tickets_active"
				 " WHERE queue OPERATOR(pg_catalog.=) $1"
				 " AND status OPERATOR(pg_catalog.=) 'searching'"
				 " AND created_at OPERATOR(pg_catalog.<) $2"
				 /*
				  * a searching ticket's updated_at is when it searched again
				  * (a requeued match, a rejected proposal): its time out
				  * counts from there
				  */
				 " AND COALESCE(updated_at, created_at) OPERATOR(pg_catalog.<) $2"
				 " ORDER BY created_at, id FOR UPDATE SKIP LOCKED), 'timed_out', $3) AS e(id)",
				 3, timeout_args);
	/*
	 * 0.2 leaves out tickets created after the tick's now (committed after
	 * the tick's transaction started, or inserted with a later created_at):
	 * their time to match would be negative.  The next tick takes them.
	 */
	KeepPlan(&PlanLoad,
			 schema01 ?
			 "SELECT id, created_at, players FROM mm.tickets"
			 " WHERE queue OPERATOR(pg_catalog.=) $1"
			 " AND status OPERATOR(pg_catalog.=) 'searching'"
			 " ORDER BY created_at, id FOR UPDATE SKIP LOCKED" :
			 schema == MM_SCHEMA_02 ?
			 "SELECT id, created_at, players, ctid FROM mm.tickets_active"
			 " WHERE queue OPERATOR(pg_catalog.=) $1"
			 " AND status OPERATOR(pg_catalog.=) 'searching'"
			 " AND created_at OPERATOR(pg_catalog.<=) $2"
			 " ORDER BY created_at, id FOR UPDATE SKIP LOCKED" :
			 /* 0.3: and whether the ticket searches in other queues too */
			 "SELECT id, created_at, players, ctid, queues IS NOT NULL FROM mm.tickets_active"
			 " WHERE queue OPERATOR(pg_catalog.=) $1"
			 " AND status OPERATOR(pg_catalog.=) 'searching'"
			 " AND created_at OPERATOR(pg_catalog.<=) $2"
			 " ORDER BY created_at, id FOR UPDATE SKIP LOCKED",
			 2, load_args);
	/* match ids are drawn first, so each is paired with its match by position */
	KeepPlan(&PlanMatchIds,
			 "SELECT pg_catalog.nextval(CAST('mm.matches_id_seq' AS pg_catalog.regclass))"
			 " FROM pg_catalog.generate_series(1, $1)",
			 1, int4_1);
	/*
	 * $7 and $8: the status (ready, or proposed) and the acceptance deadline;
	 * 0.4: a ready match is ready from now on (ready_at, which its
	 * live_match_timeout_seconds counts from)
	 */
	KeepPlan(&PlanInsertMatches,
			 schema01 ?
			 "INSERT INTO mm.matches (id, queue, status, created_at, updated_at, region, quality, rule_steps)"
			 " SELECT u.id, $1, 'ready', $2, $2, u.region, u.quality, CAST(u.steps AS pg_catalog.jsonb)"
			 " FROM ROWS FROM (pg_catalog.unnest($6), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5)) AS u(id, region, quality, steps)" :
			 schema >= MM_SCHEMA_04 ?
			 "INSERT INTO mm.matches (id, queue, status, created_at, updated_at, region, quality, rule_steps,"
			 " acceptance_deadline, properties, ready_at)"
			 " SELECT u.id, $1, $7, $2, $2, u.region, u.quality, CAST(u.steps AS pg_catalog.jsonb), $8,"
			 " CAST(COALESCE(u.props, '{}') AS pg_catalog.jsonb),"
			 " CASE WHEN $7 OPERATOR(pg_catalog.=) 'ready' THEN $2 END"
			 " FROM ROWS FROM (pg_catalog.unnest($6), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5),"
			 " pg_catalog.unnest($9)) AS u(id, region, quality, steps, props)" :
			 "INSERT INTO mm.matches (id, queue, status, created_at, updated_at, region, quality, rule_steps,"
			 " acceptance_deadline, properties)"
			 " SELECT u.id, $1, $7, $2, $2, u.region, u.quality, CAST(u.steps AS pg_catalog.jsonb), $8,"
			 " CAST(COALESCE(u.props, '{}') AS pg_catalog.jsonb)"
			 " FROM ROWS FROM (pg_catalog.unnest($6), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5),"
			 " pg_catalog.unnest($9)) AS u(id, region, quality, steps, props)",
			 9, matches_args);
	KeepPlan(&PlanInsertPlayers,
			 "INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team)"
			 " SELECT pg_catalog.unnest($2), $1, pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5)",
			 5, players_args);
	if (schema01)
	{
		/* 0.1: statuses in place; a trigger releases the players */
		KeepPlan(&PlanUpdateTickets,
				 "UPDATE mm.tickets t SET status = 'matched', matched_at = $1, updated_at = $1,"
				 " match_id = u.match_id"
				 " FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS u(ticket_id, match_id)"
				 " WHERE t.id OPERATOR(pg_catalog.=) u.ticket_id",
				 3, tickets_args);
		return;
	}

	/*
	 * A matched ticket leaves the active partition for the ended one: its
	 * row is copied and deleted by ctid, straight in the partitions (the
	 * parent's statement triggers are for other writers); then (0.2) its
	 * players are released.  This statement joins the rows by ctid in SQL;
	 * the next one takes them from arrays.
	 */
	KeepPlan(&PlanUpdateTickets,
			 schema == MM_SCHEMA_02 ?
			 "INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at,"
			 " matched_at, match_id, team)"
			 " SELECT t.id, t.queue, t.players, 'matched', t.created_at, $1, $1, u.match_id, u.team"
			 " FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4))"
			 " AS u(row_id, match_id, team)"
			 " JOIN mm.tickets_active t ON t.ctid OPERATOR(pg_catalog.=) u.row_id" :
	/*
	 * 0.3: a ticket of several queues ends under the queue that matched it
	 * ($5), its own queue joining its other queues.
	 */
			 "INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at,"
			 " matched_at, match_id, team, queues)"
			 " SELECT t.id, $5, t.players, 'matched', t.created_at, $1, $1, u.match_id, u.team,"
			 " CASE WHEN t.queue OPERATOR(pg_catalog.=) $5 THEN t.queues"
			 " ELSE pg_catalog.array_append(pg_catalog.array_remove(t.queues, $5), t.queue) END"
			 " FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4))"
			 " AS u(row_id, match_id, team)"
			 " JOIN mm.tickets_active t ON t.ctid OPERATOR(pg_catalog.=) u.row_id",
			 5, ended_args);
	/*
	 * The same rows from arrays the tick reads from the heap itself
	 * (ReadEndingTickets), for tickets of this queue alone.  The arrays are
	 * unnested in the select list, which streams them: no join, nothing
	 * materialised.
	 */
	KeepPlan(&PlanEndTicketsFromArrays,
			 "INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at,"
			 " matched_at, match_id, team)"
			 " SELECT pg_catalog.unnest($2), $5, pg_catalog.unnest($6), 'matched', pg_catalog.unnest($7),"
			 " $1, $1, pg_catalog.unnest($3), pg_catalog.unnest($4)",
			 7, ended_from_arrays_args);
	KeepPlan(&PlanDeleteActive,
			 "DELETE FROM mm.tickets_active WHERE ctid OPERATOR(pg_catalog.=) ANY ($1)",
			 1, tid_array1);
	if (schema == MM_SCHEMA_02)
	{
		KeepPlan(&PlanReleasePlayers,
				 "DELETE FROM mm.active_players"
				 " WHERE player_id OPERATOR(pg_catalog.=) ANY ($1)",
				 1, text_array1);
		return;
	}

	/*
	 * 0.3: a matched player stays claimed until the match ends (completed,
	 * cancelled, or the player left): nobody searches while in a live match.
	 * A proposed ticket stays in the active partition, waiting for its
	 * players' answers; the update changes no indexed column, so it is HOT.
	 */
	KeepPlan(&PlanProposeTickets,
			 "UPDATE mm.tickets_active t SET status = 'proposed', updated_at = $1,"
			 " match_id = u.match_id, team = u.team"
			 " FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4))"
			 " AS u(row_id, match_id, team)"
			 " WHERE t.ctid OPERATOR(pg_catalog.=) u.row_id",
			 4, ended_args);
	KeepPlan(&PlanExpireProposals, "SELECT mm.expire_proposed_matches($1, $2)", 2, load_args);

	/*
	 * Tickets of other queues that also search in this one: only when there
	 * are any does the load read them too (the plain load's index scan gives
	 * its rows in order; this one sorts).
	 */
	KeepPlan(&PlanHasOtherTickets,
			 "SELECT EXISTS (SELECT FROM mm.ticket_queues WHERE queue OPERATOR(pg_catalog.=) $1)",
			 1, text1);
	KeepPlan(&PlanLoadWithOthers,
			 "SELECT id, created_at, players, ctid, queues IS NOT NULL FROM mm.tickets_active"
			 " WHERE (queue OPERATOR(pg_catalog.=) $1 OR id OPERATOR(pg_catalog.=) ANY (ARRAY("
			 " SELECT o.ticket_id FROM mm.ticket_queues o WHERE o.queue OPERATOR(pg_catalog.=) $1"
			 " AND o.created_at OPERATOR(pg_catalog.<=) $2)))"
			 " AND status OPERATOR(pg_catalog.=) 'searching'"
			 " AND created_at OPERATOR(pg_catalog.<=) $2"
			 " ORDER BY created_at, id FOR UPDATE SKIP LOCKED",
			 2, load_args);
	{
		Oid			int8_array1[] = {INT8ARRAYOID};

		KeepPlan(&PlanUnlistTickets,
				 "DELETE FROM mm.ticket_queues WHERE ticket_id OPERATOR(pg_catalog.=) ANY ($1)",
				 1, int8_array1);
	}
	/* the search's per-rule counts, once per tick of the queue (mm.rule_stats) */
	{
		Oid			stats_args[] = {TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID, INT8ARRAYOID, INT8ARRAYOID};

		KeepPlan(&PlanRuleStats,
				 "INSERT INTO mm.rule_evaluations AS e (queue, rule, last_tick_at, last_passed, last_failed,"
				 " total_passed, total_failed, counting_since)"
				 " SELECT $1, u.rule, $2, u.passed, u.failed, u.passed, u.failed, $2"
				 " FROM ROWS FROM (pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5))"
				 " AS u(rule, passed, failed)"
				 " ON CONFLICT (queue, rule) DO UPDATE SET last_tick_at = EXCLUDED.last_tick_at,"
				 " last_passed = EXCLUDED.last_passed, last_failed = EXCLUDED.last_failed,"
				 " total_passed = e.total_passed OPERATOR(pg_catalog.+) EXCLUDED.last_passed,"
				 " total_failed = e.total_failed OPERATOR(pg_catalog.+) EXCLUDED.last_failed",
				 5, stats_args);
	}

	/*
	 * Backfill: the queue's open requests of live matches, oldest first, with
	 * their open slots in the order of the team names given ($2).  A request
	 * or match that a lifecycle step holds (cancel, complete, requeue, leave)
	 * is left for the next tick.
	 */
	{
		Oid			backfill_args[] = {TEXTOID, TEXTARRAYOID, TIMESTAMPTZOID};
		Oid			int8_1[] = {INT8OID};
		Oid			update_args[] = {INT8OID, TEXTOID, BOOLOID, TIMESTAMPTZOID};
		Oid			notify_args[] = {INT8OID, TEXTOID};
		Oid			cancel_args[] = {INT8OID, INT8OID, TIMESTAMPTZOID};

		KeepPlan(&PlanLoadBackfills,
				 "SELECT b.id, b.match_id, m.region,"
				 " ARRAY(SELECT coalesce(CAST(b.open_slots OPERATOR(pg_catalog.->>) u.team AS integer), 0)"
				 " FROM pg_catalog.unnest($2) WITH ORDINALITY AS u(team, ord) ORDER BY u.ord),"
				 /* the new tickets of the match's leavers: they cannot join it again */
				 " ARRAY(SELECT a.ticket_id FROM mm.match_players mp"
				 " JOIN mm.active_players a ON a.player_id OPERATOR(pg_catalog.=) mp.player_id"
				 " WHERE mp.match_id OPERATOR(pg_catalog.=) b.match_id AND mp.left_at IS NOT NULL)"
				 " FROM mm.backfill_requests b JOIN mm.matches m ON m.id OPERATOR(pg_catalog.=) b.match_id"
				 " WHERE b.queue OPERATOR(pg_catalog.=) $1 AND b.status OPERATOR(pg_catalog.=) 'open'"
				 " AND m.status OPERATOR(pg_catalog.=) ANY (ARRAY['ready', 'assigned'])"
				 /* a tick dated before the request (or the match) does not serve it */
				 " AND b.created_at OPERATOR(pg_catalog.<=) $3 AND m.created_at OPERATOR(pg_catalog.<=) $3"
				 " ORDER BY b.created_at, b.id FOR UPDATE OF b, m SKIP LOCKED",
				 3, backfill_args);
		/* a match's tickets, each with its players still in the match */
		KeepPlan(&PlanLoadMembers,
				 "SELECT t.id, t.created_at,"
				 " pg_catalog.jsonb_agg(p.value ORDER BY p.ord), pg_catalog.min(mp.team)"
				 " FROM mm.match_players mp"
				 " JOIN mm.tickets_ended t ON t.id OPERATOR(pg_catalog.=) mp.ticket_id"
				 " CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(t.players) WITH ORDINALITY AS p(value, ord)"
				 " WHERE mp.match_id OPERATOR(pg_catalog.=) $1 AND mp.left_at IS NULL"
				 " AND p.value OPERATOR(pg_catalog.->>) 'id' OPERATOR(pg_catalog.=) mp.player_id"
				 " GROUP BY t.id, t.created_at ORDER BY t.created_at, t.id",
				 1, int8_1);
		KeepPlan(&PlanUpdateBackfill,
				 "UPDATE mm.backfill_requests SET open_slots = CAST($2 AS pg_catalog.jsonb),"
				 " status = CASE WHEN $3 THEN 'filled' ELSE 'open' END, updated_at = $4"
				 " WHERE id OPERATOR(pg_catalog.=) $1",
				 4, update_args);
		KeepPlan(&PlanNotifyMatch,
				 "SELECT mm.notify_match_event('backfill_filled', $1, CAST($2 AS pg_catalog.jsonb))",
				 2, notify_args);
		/* a request the queue's current teams cannot serve */
		KeepPlan(&PlanCancelBackfill,
				 "WITH cancelled AS (UPDATE mm.backfill_requests SET status = 'cancelled', updated_at = $3"
				 " WHERE id OPERATOR(pg_catalog.=) $1 RETURNING id)"
				 " SELECT mm.notify_match_event('backfill_cancelled', $2,"
				 " pg_catalog.jsonb_build_object('request_id', c.id, 'reason', 'queue_teams_changed'))"
				 " FROM cancelled c",
				 3, cancel_args);
	}
	if (schema < MM_SCHEMA_04)
		return;

	/*
	 * 0.4, live_match_timeout_seconds: the queue's ready or assigned matches
	 * that became ready before $2 (now minus the limit), oldest first, read
	 * through the partial index of live matches.  A match a lifecycle step
	 * holds (assign, complete, leave, requeue, a result) is skipped, left
	 * for the next tick; a match such a step changed since this statement's
	 * snapshot is checked again once locked (a completed match no longer
	 * qualifies).  Each is cancelled as expired, its open backfill request
	 * cancelled and its players released (a player who left holds no claim
	 * of it any more); its tickets stay matched, the record of the match.
	 */
	{
		Oid			expire_args[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
		Oid			int8_array1[] = {INT8ARRAYOID};

		KeepPlan(&PlanExpireLiveMatches,
				 "WITH due AS MATERIALIZED ("
				 " SELECT id FROM mm.matches"
				 " WHERE queue OPERATOR(pg_catalog.=) $1"
				 " AND status OPERATOR(pg_catalog.=) ANY (ARRAY['ready', 'assigned'])"
				 " AND ready_at OPERATOR(pg_catalog.<) $2"
				 " ORDER BY ready_at, id FOR UPDATE SKIP LOCKED"
				 "), expired AS ("
				 " UPDATE mm.matches m SET status = 'cancelled', cancel_reason = 'expired', updated_at = $3"
				 " WHERE m.id IN (SELECT id FROM due) RETURNING m.id"
				 "), closed AS ("
				 " UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = $3"
				 " WHERE b.match_id IN (SELECT id FROM due) AND b.status OPERATOR(pg_catalog.=) 'open'"
				 "), released AS ("
				 " DELETE FROM mm.active_players a USING mm.match_players mp"
				 " WHERE mp.match_id IN (SELECT id FROM due)"
				 " AND a.player_id OPERATOR(pg_catalog.=) mp.player_id"
				 " AND a.ticket_id OPERATOR(pg_catalog.=) mp.ticket_id"
				 ")"
				 " SELECT pg_catalog.array_agg(id ORDER BY id) FROM expired",
				 3, expire_args);
		/* match_cancelled for each, signed like every lifecycle event */
		KeepPlan(&PlanNotifyExpired,
				 "SELECT mm.notify_match_event('match_cancelled', u.id,"
				 " CAST('{\"reason\": \"expired\", \"requeued_tickets\": [], \"cancelled_tickets\": []}'"
				 " AS pg_catalog.jsonb))"
				 " FROM pg_catalog.unnest($1) AS u(id) ORDER BY u.id",
				 1, int8_array1);
	}

	/*
	 * 0.4, heartbeat_timeout_seconds: the searching tickets this queue would
	 * read (its own, and those of other queues listed for it in
	 * mm.ticket_queues) whose last sign of life is before $2 (now minus the
	 * limit): their creation, their return to searching (updated_at) or
	 * their last mm.heartbeat.  Read through the queue's (queue, created_at)
	 * index up to $2: a ticket created since cannot be silent for long
	 * enough.  A ticket being beaten, cancelled or ticked is skipped; one
	 * beaten since this statement's snapshot is checked again once locked.
	 * They end as cancelled with cancel_reason heartbeat_missed (keeping
	 * their last beat), their players released and their other queues
	 * unlisted, as mm.end_tickets does; per queue of the tickets, their ids.
	 */
	{
		Oid			silent_args[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};

		KeepPlan(&PlanCancelSilentTickets,
				 "WITH moved AS ("
				 " DELETE FROM mm.tickets_active t WHERE t.id OPERATOR(pg_catalog.=) ANY (ARRAY("
				 " SELECT a.id FROM mm.tickets_active a"
				 " WHERE (a.queue OPERATOR(pg_catalog.=) $1 OR a.id OPERATOR(pg_catalog.=) ANY (ARRAY("
				 " SELECT o.ticket_id FROM mm.ticket_queues o WHERE o.queue OPERATOR(pg_catalog.=) $1"
				 " AND o.created_at OPERATOR(pg_catalog.<) $2)))"
				 " AND a.status OPERATOR(pg_catalog.=) 'searching'"
				 " AND a.created_at OPERATOR(pg_catalog.<) $2"
				 " AND GREATEST(a.created_at, a.updated_at, a.heartbeat_at) OPERATOR(pg_catalog.<) $2"
				 " ORDER BY a.created_at, a.id FOR UPDATE SKIP LOCKED))"
				 " RETURNING t.id, t.queue, t.players, t.created_at, t.queues, t.heartbeat_at"
				 "), released AS ("
				 " DELETE FROM mm.active_players p"
				 " USING moved m, pg_catalog.jsonb_array_elements(m.players) e"
				 " WHERE p.player_id OPERATOR(pg_catalog.=) (e.value OPERATOR(pg_catalog.->>) 'id')"
				 " AND p.ticket_id OPERATOR(pg_catalog.=) m.id"
				 "), unlisted AS ("
				 " DELETE FROM mm.ticket_queues q USING moved m"
				 " WHERE q.ticket_id OPERATOR(pg_catalog.=) m.id AND m.queues IS NOT NULL"
				 "), ended AS ("
				 " INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, queues,"
				 " heartbeat_at, cancel_reason)"
				 " SELECT m.id, m.queue, m.players, 'cancelled', m.created_at, $3, m.queues,"
				 " m.heartbeat_at, 'heartbeat_missed' FROM moved m"
				 " RETURNING id, queue"
				 ")"
				 " SELECT queue, pg_catalog.array_agg(id ORDER BY id) FROM ended"
				 " GROUP BY queue ORDER BY queue COLLATE pg_catalog.\"C\"",
				 3, silent_args);
	}
}

/* Milliseconds since a start time. */
static double
ElapsedMs(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* A new stats row for a queue of this call. */
static MmTickStats *
NewStats(const char *queue)
{
	MmTickStats *stats;

	if (LastStatsCount == LastStatsAllocated)
	{
		/* the capacity changes only once the memory is there (an out of memory error) */
		int			allocated = Max(8, LastStatsAllocated * 2);

		if (LastStats == NULL)
			LastStats = MemoryContextAlloc(TopMemoryContext, sizeof(MmTickStats) * allocated);
		else
			LastStats = repalloc(LastStats, sizeof(MmTickStats) * allocated);
		LastStatsAllocated = allocated;
	}
	stats = &LastStats[LastStatsCount++];
	memset(stats, 0, sizeof(*stats));
	strlcpy(stats->queue, queue, sizeof(stats->queue));
	return stats;
}

/* Orders int64 ids ascending, for qsort. */
static int
CompareInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/*
 * Cancels the proposed matches of a queue (of every queue when queue is
 * NULL) whose acceptance deadline passed (mm.expire_proposed_matches): their
 * tickets that accepted search again with their age, the others are
 * cancelled.  Before the search, so the requeued tickets take part in this
 * tick.  mm.tick(NULL) does it once for all queues: per queue, the probe of
 * mm.matches would run while the tick fills that table.  0.3 only.
 */
static void
ExpireProposals(const char *queue, TimestampTz now)
{
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	int			rc;

	if (PlanExpireProposals == NULL)
		return;
	values[0] = queue != NULL ? CStringGetTextDatum(queue) : (Datum) 0;
	nulls[0] = queue != NULL ? ' ' : 'n';
	values[1] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(PlanExpireProposals, values, nulls, false, 0);
	if (QueueContext != NULL)
		BackToQueueContext();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "expiring proposed matches failed: %s", SPI_result_code_string(rc));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Times out the queue's tickets older than ticket_timeout_seconds and
 * announces them.  Returns how many.
 */
static int
TimeOutTickets(const char *queue, const MmQueueConfig *config, TimestampTz now)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	int64	   *ids;
	int			n,
				i,
				rc;

	if (config->ticket_timeout_seconds <= 0)
		return 0;
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now - (int64) (config->ticket_timeout_seconds * USECS_PER_SEC));
	values[2] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(PlanTimeout, values, nulls, false, 0);
	BackToQueueContext();
	if (rc != (PlansForSchema01 ? SPI_OK_UPDATE_RETURNING : SPI_OK_SELECT))
		elog(ERROR, "timing out tickets failed: %s", SPI_result_code_string(rc));
	if (PlansForSchema01)
	{
		n = (int) SPI_processed;
		ids = palloc(sizeof(int64) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			bool		isnull;

			ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		}
	}
	else
	{
		/* one row: the array of the ended tickets' ids (NULL when none) */
		bool		isnull;
		Datum		array = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		n = 0;
		ids = NULL;
		if (!isnull)
		{
			ArrayType  *a = DatumGetArrayTypePCopy(array);

			n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
			ids = palloc(sizeof(int64) * Max(n, 1));
			memcpy(ids, ARR_DATA_PTR(a), sizeof(int64) * n);
		}
	}
	SPI_freetuptable(SPI_tuptable);
	if (n == 0)
		return 0;
	qsort(ids, n, sizeof(int64), CompareInt64);

	MmNotifyTickets("ticket_timed_out", queue, n, ids);
	return n;
}

/*
 * now minus a queue's limit in seconds (live_match_timeout_seconds,
 * heartbeat_timeout_seconds: at most a year).  A now less than the limit
 * after the earliest timestamp has none: an error, as for the acceptance
 * deadline past the latest one.
 */
static TimestampTz
CutoffBefore(TimestampTz now, double seconds, const char *key)
{
	TimestampTz cutoff;

	if (pg_sub_s64_overflow(now, (int64) (seconds * USECS_PER_SEC), &cutoff) ||
		!IS_VALID_TIMESTAMP(cutoff))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("now - %s is out of range for a timestamp", key)));
	return cutoff;
}

/*
 * Cancels the queue's live matches (ready or assigned) that became ready
 * more than live_match_timeout_seconds ago: status cancelled, cancel_reason
 * expired, the open backfill request cancelled, the players released, and
 * match_cancelled announced with reason expired.  One statement per tick of
 * a queue with the key (a second one announces, when any expired); nothing
 * without it.  Before backfill is served, so an expired match gets nobody.
 * 0.4 only.
 */
static void
ExpireLiveMatches(const char *queue, const MmQueueConfig *config, TimestampTz now)
{
	Datum		values[3];
	Datum		expired;
	bool		isnull;
	int			rc;

	if (PlanExpireLiveMatches == NULL || config->live_match_timeout_seconds <= 0)
		return;
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(CutoffBefore(now, config->live_match_timeout_seconds,
												 "live_match_timeout_seconds"));
	values[2] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(PlanExpireLiveMatches, values, NULL, false, 0);
	BackToQueueContext();
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "expiring live matches failed: %s", SPI_result_code_string(rc));
	/* one row: the array of the expired matches' ids (NULL when none) */
	expired = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		expired = PointerGetDatum(DatumGetArrayTypePCopy(expired));
	SPI_freetuptable(SPI_tuptable);
	if (isnull)
		return;
	values[0] = expired;
	rc = SPI_execute_plan(PlanNotifyExpired, values, NULL, false, 0);
	BackToQueueContext();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "announcing expired matches failed: %s", SPI_result_code_string(rc));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Cancels the searching tickets this queue reads (its own and those of other
 * queues that search in it too) that gave no sign of life for
 * heartbeat_timeout_seconds (created, back to searching, or mm.heartbeat):
 * status cancelled, cancel_reason heartbeat_missed, players released, and
 * ticket_cancelled announced with reason heartbeat_missed under each
 * ticket's own queue.  One statement per tick of a queue with the key;
 * nothing without it.  Before the load, so the tick never matches them.
 * 0.4 only.
 */
static void
CancelSilentTickets(const char *queue, const MmQueueConfig *config, TimestampTz now)
{
	Datum		values[3];
	uint64		nqueues,
				q;
	char	  **queues;
	ArrayType **ids;
	int			rc;

	if (PlanCancelSilentTickets == NULL || config->heartbeat_timeout_seconds <= 0)
		return;
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(CutoffBefore(now, config->heartbeat_timeout_seconds,
												 "heartbeat_timeout_seconds"));
	values[2] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(PlanCancelSilentTickets, values, NULL, false, 0);
	BackToQueueContext();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "cancelling tickets without heartbeat failed: %s", SPI_result_code_string(rc));
	/* one row per queue of the cancelled tickets: its name and their ids */
	nqueues = SPI_processed;
	queues = palloc(sizeof(char *) * Max(nqueues, 1));
	ids = palloc(sizeof(ArrayType *) * Max(nqueues, 1));
	for (q = 0; q < nqueues; q++)
	{
		bool		isnull;

		queues[q] = SPI_getvalue(SPI_tuptable->vals[q], SPI_tuptable->tupdesc, 1);
		ids[q] = DatumGetArrayTypePCopy(SPI_getbinval(SPI_tuptable->vals[q],
													  SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	for (q = 0; q < nqueues; q++)
	{
		int			n = ArrayGetNItems(ARR_NDIM(ids[q]), ARR_DIMS(ids[q]));

		MmNotifyTicketsWithReason("ticket_cancelled", queues[q], "heartbeat_missed", n,
								  (const int64 *) ARR_DATA_PTR(ids[q]));
	}
}

/*
 * Loads the searching tickets oldest first, locking them (SKIP LOCKED).
 * With ctids (0.2's write path), also returns where each ticket's row is:
 * a matched ticket's row is copied to the ended partition and deleted by
 * ctid, which cannot change while this tick holds the row lock.
 */
/*
 * What a match function needs of each loaded ticket besides its rule values:
 * its players as stored and its creation time (match_function.c).
 */
typedef struct LoadedRaw
{
	Jsonb	  **players;
	TimestampTz *created;
} LoadedRaw;

static MmTicket *
LoadTickets(MmRuleContext *context, const char *queue, TimestampTz now, int *count,
			ItemPointerData **ctids, LoadedRaw *raw_out)
{
	Datum		values[2];
	Portal		portal;
	MmTicket   *tickets;
	int			allocated = 1024;
	int			n = 0;
	bool		with_others = false;
	/* rules reading server-side values: parse once those are loaded */
	bool		deferred = MmConfigReadsPlayerSources(context->config);
	LoadedRaw	local_raw;
	MmPlayerInput players[MM_MAX_MATCH_SIZE];

	if (deferred && raw_out == NULL)
		raw_out = &local_raw;
	tickets = palloc(sizeof(MmTicket) * allocated);
	if (ctids)
		*ctids = palloc(sizeof(ItemPointerData) * allocated);
	if (raw_out)
	{
		raw_out->players = palloc(sizeof(Jsonb *) * allocated);
		raw_out->created = palloc(sizeof(TimestampTz) * allocated);
	}
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now);
	LoadedOtherQueuesTickets = false;
	if (PlanHasOtherTickets != NULL)
	{
		bool		isnull;
		int			rc = SPI_execute_plan(PlanHasOtherTickets, values, NULL, true, 1);

		BackToQueueContext();
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "looking for tickets of other queues failed: %s", SPI_result_code_string(rc));
		with_others = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
												 SPI_tuptable->tupdesc, 1, &isnull));
		SPI_freetuptable(SPI_tuptable);
	}
	portal = SPI_cursor_open(NULL, with_others ? PlanLoadWithOthers : PlanLoad,
							 values, NULL, false);
	BackToQueueContext();
	for (;;)
	{
		uint64		i;

		SPI_cursor_fetch(portal, true, MM_LOAD_BATCH);
		BackToQueueContext();
		if (SPI_processed == 0)
			break;
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			MmTicket   *ticket;
			bool		isnull;
			Datum		raw;
			Jsonb	   *jb;
			TimestampTz created_at;

			/* parsing 100k tickets takes a while: let a cancel or timeout act */
			CHECK_FOR_INTERRUPTS();
			if (n == allocated)
			{
				allocated *= 2;
				tickets = repalloc_huge(tickets, sizeof(MmTicket) * allocated);
				if (ctids)
					*ctids = repalloc_huge(*ctids, sizeof(ItemPointerData) * allocated);
				if (raw_out)
				{
					raw_out->players = repalloc_huge(raw_out->players, sizeof(Jsonb *) * allocated);
					raw_out->created = repalloc_huge(raw_out->created, sizeof(TimestampTz) * allocated);
				}
			}
			ticket = &tickets[n++];
			ticket->id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
			created_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &isnull));
			/* in double: int64 now - created_at can overflow (-infinity) */
			ticket->age_seconds = Max(0.0, ((double) now - (double) created_at) / USECS_PER_SEC);
			raw = SPI_getbinval(tuple, desc, 3, &isnull);
			jb = DatumGetJsonbP(raw);
			if (!deferred)
				MmParseTicket(context, ticket, jb, players, NULL);
			if (raw_out)
			{
				/* kept for the match function: a copy outliving the tuple */
				raw_out->players[n - 1] = (Pointer) jb != DatumGetPointer(raw) ? jb : DatumGetJsonbPCopy(raw);
				raw_out->created[n - 1] = created_at;
			}
			/* a detoasted copy is ours to free; the tuple is freed below */
			else if ((Pointer) jb != DatumGetPointer(raw))
				pfree(jb);
			if (ctids)
				(*ctids)[n - 1] = *(ItemPointer) DatumGetPointer(SPI_getbinval(tuple, desc, 4, &isnull));
			if (PlanHasOtherTickets != NULL &&
				DatumGetBool(SPI_getbinval(tuple, desc, 5, &isnull)))
				LoadedOtherQueuesTickets = true;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	BackToQueueContext();
	*count = n;
	if (deferred)
	{
		MmParseTicketsWithSources(context, queue, tickets, raw_out->players, n, raw_out == &local_raw);
		BackToQueueContext();
	}
	return tickets;
}

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
RunWriteWithNulls(SPIPlanPtr plan, Datum *values, const char *nulls, int expected_rc,
				  int64 rows, const char *what)
{
	int			rc = SPI_execute_plan(plan, values, nulls, false, 0);

	BackToQueueContext();
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

static void
RunWrite(SPIPlanPtr plan, Datum *values, int expected_rc, int64 rows, const char *what)
{
	RunWriteWithNulls(plan, values, NULL, expected_rc, rows, what);
}

/* 0.1's schema: the matched tickets' statuses are updated in place. */
static void
MarkTicketsMatched01(TimestampTz now, int ntickets, const int64 *ids, const int64 *match_ids)
{
	Datum		values[3];

	values[0] = TimestampTzGetDatum(now);
	values[1] = PointerGetDatum(MmBuildInt8Array(ids, ntickets));
	values[2] = PointerGetDatum(MmBuildInt8Array(match_ids, ntickets));
	RunWrite(PlanUpdateTickets, values, SPI_OK_UPDATE, ntickets, "marking tickets matched");
}

/*
 * The memory peak of the queue being ticked, noted where the write phase
 * holds the most (its arrays are freed before the phase ends).
 */
static int64 QueuePeakBytes = 0;

static void
NoteMemoryPeak(void)
{
	QueuePeakBytes = Max(QueuePeakBytes, (int64) MemoryContextMemAllocated(QueueContext, true));
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
	Oid			relid = get_relname_relid("tickets_active", get_namespace_oid("mm", false));
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

/*
 * Moves the matched tickets (positions t_index among the loaded ctids) from
 * mm.tickets_active to mm.tickets_ended under the queue that matched them,
 * and (0.2) releases their players.
 */
static void
MoveMatchedTickets(const char *queue, TimestampTz now, const ItemPointerData *ctids, int ntickets,
				   const int *t_index, const int64 *ticket_ids, const int64 *match_ids,
				   const char **teams, ArrayType *player_ids)
{
	Datum	   *datums = palloc(sizeof(Datum) * ntickets);
	ArrayType  *row_ids;
	ArrayType  *players;
	ArrayType  *created;
	Datum		values[7];
	int			i;

	for (i = 0; i < ntickets; i++)
		datums[i] = PointerGetDatum(&ctids[t_index[i]]);
	row_ids = construct_array(datums, ntickets, TIDOID, sizeof(ItemPointerData), false,
							  TYPALIGN_SHORT);
	pfree(datums);

	values[0] = TimestampTzGetDatum(now);
	values[2] = PointerGetDatum(MmBuildInt8Array(match_ids, ntickets));
	values[3] = PointerGetDatum(MmBuildTextArray(teams, ntickets));
	values[4] = CStringGetTextDatum(queue);
	/* tickets of this queue alone end as their row plus the match */
	if (!LoadedOtherQueuesTickets &&
		ReadEndingTickets(ctids, ntickets, t_index, ticket_ids, &players, &created))
	{
		values[1] = PointerGetDatum(MmBuildInt8Array(ticket_ids, ntickets));
		values[5] = PointerGetDatum(players);
		values[6] = PointerGetDatum(created);
		NoteMemoryPeak();
		RunWrite(PlanEndTicketsFromArrays, values, SPI_OK_INSERT, ntickets, "writing matched tickets");
		pfree(players);
		pfree(created);
		pfree(DatumGetPointer(values[1]));
	}
	else
	{
		values[1] = PointerGetDatum(row_ids);
		RunWrite(PlanUpdateTickets, values, SPI_OK_INSERT, ntickets, "writing matched tickets");
	}
	pfree(DatumGetPointer(values[2]));
	pfree(DatumGetPointer(values[3]));

	values[0] = PointerGetDatum(row_ids);
	RunWrite(PlanDeleteActive, values, SPI_OK_DELETE, ntickets, "deleting matched tickets");

	/* the tickets of several queues leave the others too */
	if (LoadedOtherQueuesTickets)
	{
		values[0] = PointerGetDatum(MmBuildInt8Array(ticket_ids, ntickets));
		RunWrite(PlanUnlistTickets, values, SPI_OK_DELETE, -1, "unlisting matched tickets");
	}

	/* 0.2 releases the players here; 0.3 when the match ends */
	if (PlanReleasePlayers != NULL)
	{
		values[0] = PointerGetDatum(player_ids);
		RunWrite(PlanReleasePlayers, values, SPI_OK_DELETE, -1, "releasing matched players");
	}
}

/*
 * A queue that asks for acceptance: the matched tickets stay in
 * mm.tickets_active as proposed, with their match and team, until every
 * player answered or the deadline passed (mm.accept_match,
 * mm.expire_proposed_matches).
 */
static void
ProposeTickets(TimestampTz now, const ItemPointerData *ctids, int ntickets,
			   const int *t_index, const int64 *match_ids, const char **teams)
{
	Datum	   *datums = palloc(sizeof(Datum) * ntickets);
	Datum		values[4];
	int			i;

	for (i = 0; i < ntickets; i++)
		datums[i] = PointerGetDatum(&ctids[t_index[i]]);
	values[0] = TimestampTzGetDatum(now);
	values[1] = PointerGetDatum(construct_array(datums, ntickets, TIDOID, sizeof(ItemPointerData),
												false, TYPALIGN_SHORT));
	values[2] = PointerGetDatum(MmBuildInt8Array(match_ids, ntickets));
	values[3] = PointerGetDatum(MmBuildTextArray(teams, ntickets));
	pfree(datums);
	RunWrite(PlanProposeTickets, values, SPI_OK_UPDATE, ntickets, "proposing matched tickets");
}

/*
 * When a proposed match formed at now stops waiting for acceptances, or 0
 * when the queue does not ask for acceptance (or the schema predates it).
 */
static TimestampTz
AcceptanceDeadline(const MmQueueConfig *config, TimestampTz now)
{
	TimestampTz deadline;

	if (PlanProposeTickets == NULL || config->acceptance_timeout_seconds <= 0)
		return 0;
	if (pg_add_s64_overflow(now, (int64) (config->acceptance_timeout_seconds * USECS_PER_SEC),
							&deadline) ||
		!IS_VALID_TIMESTAMP(deadline))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("now + acceptance_timeout_seconds is out of range for a timestamp")));
	return deadline;
}

/* Writes the matches in bulk and queues their events. */
static void
WriteMatches(const char *queue, const MmRuleContext *context, TimestampTz now,
			 MmTicket *tickets, const ItemPointerData *ctids, const MmSearchResult *result,
			 char **properties, MmTickStats *stats)
{
	const MmQueueConfig *config = context->config;
	int			nm = result->nmatches;
	const char **regions = palloc(sizeof(char *) * nm);
	double	   *qualities = palloc(sizeof(double) * nm);
	const char **steps = palloc(sizeof(char *) * nm);
	int64	   *match_ids = palloc(sizeof(int64) * nm);
	int			nplayers = 0,
				ntickets = 0;
	int64	   *mp_match,
			   *mp_ticket,
			   *t_ids,
			   *t_match;
	const char **mp_player,
			  **mp_team,
			  **t_team;
	int		   *t_index;
	ArrayType  *player_ids;
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	TimestampTz deadline = AcceptanceDeadline(config, now);
	int			rc,
				i,
				k,
				p;
	StringInfoData buf;


	initStringInfo(&buf);
	for (i = 0; i < nm; i++)
	{
		const MmFoundMatch *m = &result->matches[i];

		regions[i] = m->region >= 0 ? context->regions[m->region] : NULL;
		qualities[i] = m->quality;
		steps[i] = RuleStepsJson(config, m, &buf);
		nplayers += m->nplayers;
		ntickets += m->ntickets;
	}

	/*
	 * mm.matches: the ids are drawn from the identity's sequence first and
	 * inserted explicitly, so match_ids[i] is the id of matches[i] whatever
	 * order the sequence hands them out in.
	 */
	values[0] = Int32GetDatum(nm);
	rc = SPI_execute_plan(PlanMatchIds, values, NULL, false, 0);
	BackToQueueContext();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "drawing match ids failed: %s", SPI_result_code_string(rc));
	if (SPI_processed != (uint64) nm)
		elog(ERROR, "drawing match ids returned " UINT64_FORMAT " ids instead of %d",
			 SPI_processed, nm);
	for (i = 0; i < nm; i++)
	{
		bool		isnull;

		match_ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
												   SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);

	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now);
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
	RunWriteWithNulls(PlanInsertMatches, values, nulls, SPI_OK_INSERT, nm, "inserting matches");

	/* mm.match_players and the tickets */
	mp_match = palloc(sizeof(int64) * nplayers);
	mp_ticket = palloc(sizeof(int64) * nplayers);
	mp_player = palloc(sizeof(char *) * nplayers);
	mp_team = palloc(sizeof(char *) * nplayers);
	t_ids = palloc(sizeof(int64) * ntickets);
	t_match = palloc(sizeof(int64) * ntickets);
	t_team = palloc(sizeof(char *) * ntickets);
	t_index = palloc(sizeof(int) * ntickets);
	nplayers = ntickets = 0;
	for (i = 0; i < nm; i++)
	{
		const MmFoundMatch *m = &result->matches[i];

		for (k = 0; k < m->ntickets; k++)
		{
			const MmTicket *t = &tickets[m->tickets[k]];
			const char *team = m->ticket_team[k] >= 0 ? config->teams[m->ticket_team[k]].name : NULL;

			t_index[ntickets] = m->tickets[k];
			t_ids[ntickets] = t->id;
			t_team[ntickets] = team;
			t_match[ntickets++] = match_ids[i];
			for (p = 0; p < t->nplayers; p++)
			{
				mp_match[nplayers] = match_ids[i];
				mp_ticket[nplayers] = t->id;
				mp_player[nplayers] = t->player_ids[p];
				mp_team[nplayers++] = team;
			}
		}
	}
	values[1] = PointerGetDatum(MmBuildInt8Array(mp_match, nplayers));
	pfree(mp_match);
	player_ids = MmBuildTextArray(mp_player, nplayers);
	values[2] = PointerGetDatum(player_ids);
	pfree(mp_player);
	values[3] = PointerGetDatum(MmBuildInt8Array(mp_ticket, nplayers));
	pfree(mp_ticket);
	values[4] = PointerGetDatum(MmBuildTextArray(mp_team, nplayers));
	pfree(mp_team);
	RunWrite(PlanInsertPlayers, values, SPI_OK_INSERT, nplayers, "inserting match players");
	/* the arrays are as long as the queue: free them before the next ones */
	pfree(DatumGetPointer(values[1]));
	pfree(DatumGetPointer(values[3]));
	pfree(DatumGetPointer(values[4]));

	if (PlansForSchema01)
		MarkTicketsMatched01(now, ntickets, t_ids, t_match);
	else if (deadline != 0)
		ProposeTickets(now, ctids, ntickets, t_index, t_match, t_team);
	else
		MoveMatchedTickets(queue, now, ctids, ntickets, t_index, t_ids, t_match, t_team, player_ids);

	/* events: one match_found (or match_proposed) per match, sent at commit */
	for (i = 0; i < nm; i++)
	{
		const MmFoundMatch *m = &result->matches[i];
		int			nteams = Max(config->nteams, 1);
		MmEventTeam *teams = palloc(sizeof(MmEventTeam) * nteams);
		int64	   *ids = palloc(sizeof(int64) * m->ntickets);
		int			t;

		for (t = 0; t < nteams; t++)
		{
			teams[t].name = config->nteams > 0 ? config->teams[t].name : NULL;
			teams[t].nplayers = 0;
			teams[t].player_ids = palloc(sizeof(char *) * m->nplayers);
		}
		for (k = 0; k < m->ntickets; k++)
		{
			const MmTicket *tk = &tickets[m->tickets[k]];
			MmEventTeam *team = &teams[Max(m->ticket_team[k], 0)];

			ids[k] = tk->id;
			for (p = 0; p < tk->nplayers; p++)
				team->player_ids[team->nplayers++] = tk->player_ids[p];
		}
		MmNotifyMatchFound(deadline != 0 ? "match_proposed" : "match_found", queue, match_ids[i], regions[i], m->quality,
						   nteams, teams, m->ntickets, ids);
		for (t = 0; t < nteams; t++)
			pfree(teams[t].player_ids);
		pfree(teams);
		pfree(ids);
	}
	stats->players_matched = nplayers;
}

/*
 * Writes one backfill: the chosen candidate tickets join the match (its
 * match_players rows, the tickets moved to tickets_ended as matched with
 * the match's id and their team; their players stay held by the live
 * match), the request's open slots shrink (filled when none is left), and
 * backfill_filled is announced.  slots is updated in place.
 */
static void
WriteBackfill(const char *queue, const MmRuleContext *context, TimestampTz now,
			  int64 request_id, int64 match_id, int32 *slots,
			  const MmTicket *candidates, const int *candidate_index,
			  const ItemPointerData *ctids, const MmBackfillResult *res)
{
	const MmQueueConfig *config = context->config;
	int			nteams = config->nteams > 0 ? config->nteams : 1;
	int64	   *mp_match = palloc(sizeof(int64) * res->nplayers);
	int64	   *mp_ticket = palloc(sizeof(int64) * res->nplayers);
	const char **mp_player = palloc(sizeof(char *) * res->nplayers);
	const char **mp_team = palloc(sizeof(char *) * res->nplayers);
	int		   *t_index = palloc(sizeof(int) * res->ntickets);
	int64	   *t_match = palloc(sizeof(int64) * res->ntickets);
	int64	   *t_ids = palloc(sizeof(int64) * res->ntickets);
	const char **t_team = palloc(sizeof(char *) * res->ntickets);
	ArrayType  *player_ids;
	StringInfoData slots_json;
	StringInfoData details;
	Datum		values[5];
	int			np = 0,
				k,
				p,
				t,
				rc;

	for (k = 0; k < res->ntickets; k++)
	{
		const MmTicket *tk = &candidates[res->tickets[k]];
		int			team = res->ticket_team[k];
		const char *team_name = team >= 0 && config->nteams > 0 ? config->teams[team].name : NULL;

		t_index[k] = candidate_index[res->tickets[k]];
		t_match[k] = match_id;
		t_ids[k] = tk->id;
		t_team[k] = team_name;
		slots[Max(team, 0)] = Max(0, slots[Max(team, 0)] - tk->nplayers);
		for (p = 0; p < tk->nplayers; p++)
		{
			mp_match[np] = match_id;
			mp_ticket[np] = tk->id;
			mp_player[np] = tk->player_ids[p];
			mp_team[np++] = team_name;
		}
	}
	values[0] = CStringGetTextDatum(queue);
	values[1] = PointerGetDatum(MmBuildInt8Array(mp_match, np));
	player_ids = MmBuildTextArray(mp_player, np);
	values[2] = PointerGetDatum(player_ids);
	values[3] = PointerGetDatum(MmBuildInt8Array(mp_ticket, np));
	values[4] = PointerGetDatum(MmBuildTextArray(mp_team, np));
	RunWrite(PlanInsertPlayers, values, SPI_OK_INSERT, np, "inserting backfilled match players");
	MoveMatchedTickets(queue, now, ctids, res->ntickets, t_index, t_ids, t_match, t_team, player_ids);

	/* what is still open, as the request stores it */
	initStringInfo(&slots_json);
	appendStringInfoChar(&slots_json, '{');
	for (t = 0; t < nteams; t++)
	{
		if (t > 0)
			appendStringInfoString(&slots_json, ", ");
		escape_json(&slots_json, config->nteams > 0 ? config->teams[t].name : "players");
		/* filled: the match has no room left, whatever the request asked */
		appendStringInfo(&slots_json, ": %d", res->filled ? 0 : slots[t]);
	}
	appendStringInfoChar(&slots_json, '}');
	values[0] = Int64GetDatum(request_id);
	values[1] = CStringGetTextDatum(slots_json.data);
	values[2] = BoolGetDatum(res->filled);
	values[3] = TimestampTzGetDatum(now);
	RunWrite(PlanUpdateBackfill, values, SPI_OK_UPDATE, 1, "updating a backfill request");

	/* backfill_filled: the request, what is left open, the new tickets and players */
	initStringInfo(&details);
	appendStringInfo(&details, "{\"request_id\": " INT64_FORMAT ", \"filled\": %s, \"open_slots\": %s, \"tickets\": [",
					 request_id, res->filled ? "true" : "false", slots_json.data);
	for (k = 0; k < res->ntickets; k++)
		appendStringInfo(&details, "%s" INT64_FORMAT, k > 0 ? ", " : "", t_ids[k]);
	appendStringInfoString(&details, "], \"players\": [");
	for (p = 0; p < np && details.len < MM_EVENT_BODY_MAX / 2; p++)
	{
		appendStringInfoString(&details, p > 0 ? ", {\"id\": " : "{\"id\": ");
		escape_json(&details, mp_player[p]);
		appendStringInfoString(&details, ", \"team\": ");
		if (mp_team[p] != NULL)
			escape_json(&details, mp_team[p]);
		else
			appendStringInfoString(&details, "null");
		appendStringInfoChar(&details, '}');
	}
	/* too many to list: the client reads them from mm.match_players */
	appendStringInfo(&details, "]%s}", p < np ? ", \"truncated\": true" : "");
	values[0] = Int64GetDatum(match_id);
	values[1] = CStringGetTextDatum(details.data);
	rc = SPI_execute_plan(PlanNotifyMatch, values, NULL, false, 0);
	BackToQueueContext();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "announcing a backfill failed: %s", SPI_result_code_string(rc));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Cancels a backfill request that the queue's current config cannot serve
 * (a player of the match is on a team the queue no longer has), with a
 * backfill_cancelled event, instead of failing every tick of the queue.
 */
static void
CancelBackfill(int64 request_id, int64 match_id, TimestampTz now)
{
	Datum		values[3];
	int			rc;

	values[0] = Int64GetDatum(request_id);
	values[1] = Int64GetDatum(match_id);
	values[2] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(PlanCancelBackfill, values, NULL, false, 0);
	BackToQueueContext();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "cancelling backfill request " INT64_FORMAT " failed: %s", request_id,
			 SPI_result_code_string(rc));
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Serves the queue's open backfill requests, oldest first, from the loaded
 * searching tickets, before the search forms new matches
 * (MmSearchBackfill: the chosen tickets satisfy the queue's rules together
 * with the players still in the match).  A fill that would move a match to
 * another region is not made.  The tickets placed are removed from tickets[]
 * and ctids[] (their order kept), and *ntickets shrinks.  0.3 only.
 */
static void
ServeBackfills(const char *queue, MmRuleContext *context, TimestampTz now,
			   MmTicket *tickets, ItemPointerData *ctids, LoadedRaw *raw, int *ntickets)
{
	const MmQueueConfig *config = context->config;
	int			nteams = config->nteams > 0 ? config->nteams : 1;
	const char **team_names = palloc(sizeof(char *) * nteams);
	MmPlayerInput players[MM_MAX_MATCH_SIZE];
	MmTicket   *candidates;
	int		   *candidate_index;
	bool	   *taken;
	int64	   *request_ids;
	int64	   *match_ids;
	char	  **match_regions;
	int32	  **slots;
	int64	  **leaver_tickets;
	int		   *nleaver_tickets;
	Datum		values[3];
	int			nrequests,
				r,
				i,
				t,
				rc;

	if (PlanLoadBackfills == NULL || *ntickets == 0)
		return;
	for (t = 0; t < nteams; t++)
		team_names[t] = config->nteams > 0 ? config->teams[t].name : "players";
	values[0] = CStringGetTextDatum(queue);
	values[1] = PointerGetDatum(MmBuildTextArray(team_names, nteams));
	values[2] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(PlanLoadBackfills, values, NULL, false, 0);
	BackToQueueContext();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading backfill requests failed: %s", SPI_result_code_string(rc));
	nrequests = (int) SPI_processed;
	if (nrequests == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		return;
	}
	request_ids = palloc(sizeof(int64) * nrequests);
	match_ids = palloc(sizeof(int64) * nrequests);
	match_regions = palloc(sizeof(char *) * nrequests);
	slots = palloc(sizeof(int32 *) * nrequests);
	leaver_tickets = palloc(sizeof(int64 *) * nrequests);
	nleaver_tickets = palloc(sizeof(int) * nrequests);
	for (r = 0; r < nrequests; r++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		region;
		int			count;

		request_ids[r] = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		match_ids[r] = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
		region = SPI_getbinval(tuple, desc, 3, &isnull);
		match_regions[r] = isnull ? NULL : TextDatumGetCString(region);
		slots[r] = MmInt4Array(DatumGetArrayTypeP(SPI_getbinval(tuple, desc, 4, &isnull)),
							   "open_slots", nteams, &count);
		if (count != nteams)
			elog(ERROR, "backfill request " INT64_FORMAT " has %d open slot counts for %d teams",
				 request_ids[r], count, nteams);
		leaver_tickets[r] = MmInt8Array(DatumGetArrayTypeP(SPI_getbinval(tuple, desc, 5, &isnull)),
										"leavers' tickets", MM_MAX_ARRAY_ELEMENTS,
										&nleaver_tickets[r]);
	}
	SPI_freetuptable(SPI_tuptable);

	candidates = palloc(sizeof(MmTicket) * *ntickets);
	candidate_index = palloc(sizeof(int) * *ntickets);
	taken = palloc0(sizeof(bool) * *ntickets);
	for (r = 0; r < nrequests; r++)
	{
		MmTicket   *members;
		Jsonb	  **member_players;
		int		   *member_team;
		int			nmembers,
					ncandidates = 0;
		MmBackfillResult *res;
		bool		unservable = false;

		CHECK_FOR_INTERRUPTS();
		for (i = 0; i < *ntickets; i++)
		{
			int			k;

			if (taken[i])
				continue;
			for (k = 0; k < nleaver_tickets[r] && leaver_tickets[r][k] != tickets[i].id; k++)
				;
			if (k < nleaver_tickets[r])
				continue;
			candidates[ncandidates] = tickets[i];
			candidate_index[ncandidates++] = i;
		}
		if (ncandidates == 0)
			break;

		values[0] = Int64GetDatum(match_ids[r]);
		rc = SPI_execute_plan(PlanLoadMembers, values, NULL, false, 0);
		BackToQueueContext();
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "reading the players of match " INT64_FORMAT " failed: %s",
				 match_ids[r], SPI_result_code_string(rc));
		nmembers = (int) SPI_processed;
		members = palloc(sizeof(MmTicket) * Max(nmembers, 1));
		member_team = palloc(sizeof(int) * Max(nmembers, 1));
		member_players = palloc(sizeof(Jsonb *) * Max(nmembers, 1));
		for (i = 0; i < nmembers; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			TimestampTz created_at;
			Datum		team;

			members[i].id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
			created_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &isnull));
			members[i].age_seconds = Max(0.0, ((double) now - (double) created_at) / USECS_PER_SEC);
			member_players[i] = DatumGetJsonbPCopy(SPI_getbinval(tuple, desc, 3, &isnull));
			if (!MmConfigReadsPlayerSources(config))
				MmParseTicket(context, &members[i], member_players[i], players, NULL);
			team = SPI_getbinval(tuple, desc, 4, &isnull);
			member_team[i] = -1;
			if (!isnull)
			{
				char	   *name = TextDatumGetCString(team);

				for (t = 0; t < config->nteams; t++)
					if (strcmp(config->teams[t].name, name) == 0)
						member_team[i] = t;
			}

			/*
			 * The queue's teams changed since the match formed: a team it no
			 * longer has, a team in what is now a free-for-all, or no team
			 * where the queue now has teams.
			 */
			if (isnull ? config->nteams > 0 : member_team[i] < 0)
				unservable = true;
		}
		SPI_freetuptable(SPI_tuptable);
		if (unservable)
		{
			CancelBackfill(request_ids[r], match_ids[r], now);
			continue;
		}
		if (MmConfigReadsPlayerSources(config))
			MmParseTicketsWithSources(context, queue, members, member_players, nmembers, true);
		/* everybody left: nothing to fill around */
		if (nmembers == 0)
			continue;

		res = MmSearchBackfill(context, members, nmembers, member_team, slots[r],
							   candidates, ncandidates);
		if (res->ntickets == 0)
			continue;
		if (match_regions[r] != NULL && res->region >= 0 &&
			strcmp(context->regions[res->region], match_regions[r]) != 0)
			continue;
		WriteBackfill(queue, context, now, request_ids[r], match_ids[r], slots[r],
					  candidates, candidate_index, ctids, res);
		for (i = 0; i < res->ntickets; i++)
			taken[candidate_index[res->tickets[i]]] = true;
	}

	/* the rest go to the search, oldest first as loaded */
	for (i = 0, t = 0; i < *ntickets; i++)
	{
		if (taken[i])
			continue;
		tickets[t] = tickets[i];
		if (raw)
		{
			raw->players[t] = raw->players[i];
			raw->created[t] = raw->created[i];
		}
		ctids[t++] = ctids[i];
	}
	*ntickets = t;
}

/*
 * Adds the search's per-rule counts to mm.rule_evaluations: one statement per
 * tick of a queue, only when the search checked a candidate.  0.3 only.
 */
static void
WriteRuleStats(const char *queue, const MmQueueConfig *config, TimestampTz now,
			   const MmSearchResult *result)
{
	const char **names;
	Datum		values[5];
	int64		checks = 0;
	int			r;

	if (PlanRuleStats == NULL || result->nrules == 0)
		return;
	for (r = 0; r < result->nrules; r++)
		checks += result->rule_passed[r] + result->rule_failed[r];
	if (checks == 0)
		return;
	names = palloc(sizeof(char *) * result->nrules);
	for (r = 0; r < result->nrules; r++)
		names[r] = config->rules[r].name;
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now);
	values[2] = PointerGetDatum(MmBuildTextArray(names, result->nrules));
	values[3] = PointerGetDatum(MmBuildInt8Array(result->rule_passed, result->nrules));
	values[4] = PointerGetDatum(MmBuildInt8Array(result->rule_failed, result->nrules));
	RunWrite(PlanRuleStats, values, SPI_OK_INSERT, result->nrules, "counting rule checks");
}

/* A string member of the queue's config, or NULL. */
static const char *
ConfigString(Jsonb *config, const char *key)
{
	JsonbValue	v;

	if (getKeyJsonValueFromContainer(&config->root, key, strlen(key), &v) == NULL ||
		v.type != jbvString)
		return NULL;
	return pnstrdup(v.val.string.val, v.val.string.len);
}

/* Whether a member of the queue's config is false. */
static bool
ConfigIsFalse(Jsonb *config, const char *key)
{
	JsonbValue	v;

	return getKeyJsonValueFromContainer(&config->root, key, strlen(key), &v) != NULL &&
		v.type == jbvBool && !v.val.boolean;
}

/* Ticks one queue; returns the matches formed. */
static int
TickQueue(const char *queue, TimestampTz now, bool must_exist, bool expire_proposals,
		  MemoryContext parent)
{
	MemoryContext queue_context;
	MemoryContext old_context;
	MmTickStats *stats = NewStats(queue);
	Datum		values[1];
	bool		isnull;
	int			rc;
	Jsonb	   *config_jsonb;
	MmQueueConfig *config;
	MmRuleContext context;
	MmTicket   *tickets;
	ItemPointerData *ctids = NULL;
	int			ntickets;
	MmSearchResult *result;
	const char *match_function;
	char	   *match_function_role;
	LoadedRaw	raw = {NULL, NULL};
	char	  **properties = NULL;
	instr_time	start;
	int64		key;
	int			matches;

	key = (int64) hash_bytes_extended((const unsigned char *) queue, strlen(queue),
									  MM_TICK_LOCK_SEED);
	if (!DatumGetBool(DirectFunctionCall1(pg_try_advisory_xact_lock_int8, Int64GetDatum(key))))
	{
		stats->locked_out = true;
		return 0;
	}

	queue_context = AllocSetContextCreate(parent, "mm tick queue", ALLOCSET_DEFAULT_SIZES);
	QueueContext = queue_context;
	QueuePeakBytes = 0;
	old_context = MemoryContextSwitchTo(queue_context);

	INSTR_TIME_SET_CURRENT(start);
	values[0] = CStringGetTextDatum(queue);
	rc = SPI_execute_plan(PlanQueueConfig, values, NULL, false, 1);
	BackToQueueContext();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading queue config failed: %s", SPI_result_code_string(rc));
	if (SPI_processed == 0)
	{
		if (must_exist)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("queue \"%s\" does not exist", queue)));
		/* dropped while we were ticking the others */
		MemoryContextSwitchTo(old_context);
		MemoryContextDelete(queue_context);
		QueueContext = NULL;
		return 0;
	}
	config_jsonb = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc, 1, &isnull));
	match_function_role = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	SPI_freetuptable(SPI_tuptable);
	config = MmParseQueueConfig(config_jsonb);

	if (expire_proposals)
		ExpireProposals(queue, now);
	stats->tickets_timed_out = TimeOutTickets(queue, config, now);
	CancelSilentTickets(queue, config, now);
	ExpireLiveMatches(queue, config, now);
	MmRuleContextInit(&context, config);
	match_function = PlansForSchema01 ? NULL : ConfigString(config_jsonb, "match_function");
	/* before 0.4 no role was kept to run it as: never the ticker's */
	if (match_function && PlansForSchema < MM_SCHEMA_04)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("queue \"%s\" has a match_function, which this library runs only on schema 0.4",
						queue),
				 errhint("Run ALTER EXTENSION matchmaking UPDATE.")));
	tickets = LoadTickets(&context, queue, now, &ntickets, PlansForSchema01 ? NULL : &ctids,
						  match_function ? &raw : NULL);
	if (!PlansForSchema01)
		ServeBackfills(queue, &context, now, tickets, ctids, match_function ? &raw : NULL, &ntickets);
	stats->tickets_loaded = ntickets;
	stats->load_ms = ElapsedMs(start);

	INSTR_TIME_SET_CURRENT(start);
	if (match_function)
		result = MmRunMatchFunction(&context, queue, match_function, match_function_role,
									!ConfigIsFalse(config_jsonb, "rules_apply_to_proposals"),
									tickets, raw.players, raw.created, ntickets, now, &properties);
	else
		result = MmSearchMatches(&context, tickets, ntickets);
	stats->compute_ms = ElapsedMs(start);
	/* the search's structures were freed on return: count them at their peak */
	stats->memory_bytes = MemoryContextMemAllocated(queue_context, true) + result->scratch_bytes;

	INSTR_TIME_SET_CURRENT(start);
	if (result->nmatches > 0)
		WriteMatches(queue, &context, now, tickets, ctids, result, properties, stats);
	WriteRuleStats(queue, config, now, result);
	stats->write_ms = ElapsedMs(start);
	NoteMemoryPeak();
	stats->memory_bytes = Max(stats->memory_bytes, QueuePeakBytes);
	stats->matches = matches = result->nmatches;

	MemoryContextSwitchTo(old_context);
	MemoryContextDelete(queue_context);
	QueueContext = NULL;
	return matches;
}

/*
 * Ticks one queue of an all-queues tick in a subtransaction, so that a queue
 * that fails (bad data, a constraint the matches violate) cannot stop the
 * others: its writes and events are rolled back and the error becomes a
 * WARNING naming the queue.  A cancel or statement timeout still ends the
 * whole tick.  This is the pattern of PL/pgSQL's exception blocks: the SPI
 * connection made outside survives the subtransaction's abort (spi.c drops
 * only what the subtransaction made), and the caller's memory context and
 * resource owner are restored on both paths.
 */
static int
TickQueueGuarded(const char *queue, TimestampTz now, MemoryContext caller_context)
{
	MemoryContext old_context = CurrentMemoryContext;
	ResourceOwner old_owner = CurrentResourceOwner;
	volatile int matches = 0;
	int			stats_index = LastStatsCount;
	int			proposal_stats_count = MmMatchFunctionStatsCount();

	BeginInternalSubTransaction(NULL);
	/* run in the caller's context, not the subtransaction's */
	MemoryContextSwitchTo(old_context);
	PG_TRY();
	{
		matches = TickQueue(queue, now, false, false, caller_context);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(old_context);
		CurrentResourceOwner = old_owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(old_context);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(old_context);
		CurrentResourceOwner = old_owner;
		/* the failed queue's memory: TickQueue did not get to delete it */
		if (QueueContext != NULL)
		{
			MemoryContextDelete(QueueContext);
			QueueContext = NULL;
		}
		/* nothing of the queue's tick remains: neither do its counts */
		if (LastStatsCount > stats_index)
		{
			MmTickStats *stats = &LastStats[stats_index];
			char		name[MM_MAX_NAME_LENGTH + 1];

			strlcpy(name, stats->queue, sizeof(name));
			memset(stats, 0, sizeof(*stats));
			strlcpy(stats->queue, name, sizeof(stats->queue));
			LastStatsCount = stats_index + 1;
		}
		MmMatchFunctionStatsTruncate(proposal_stats_count);
		/* like PL/pgSQL's OTHERS, never swallow a cancel */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
			ReThrowError(edata);
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("mm.tick skipped queue \"%s\": %s", queue, edata->message),
				 edata->detail ? errdetail_internal("%s", edata->detail) :
				 errdetail("The tick of this queue was rolled back; the other queues were ticked."),
				 edata->hint ? errhint("%s", edata->hint) : 0));
		FreeErrorData(edata);
		matches = 0;
	}
	PG_END_TRY();
	return matches;
}

/*
 * mm.tick(queue text DEFAULT NULL, now timestamptz DEFAULT now()) RETURNS integer
 *
 * Forms matches in one queue (all queues, by name, when queue is NULL) and
 * returns how many.  An unknown queue is an error; a queue another tick is
 * working on counts 0.  With all queues, a queue whose tick fails is rolled
 * back alone and reported as a WARNING (TickQueueGuarded); a single queue's
 * failure is the caller's error.
 */
Datum
mm_tick(PG_FUNCTION_ARGS)
{
	MemoryContext caller_context = CurrentMemoryContext;
	TimestampTz now;
	volatile int total = 0;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("now must not be null")));
	now = PG_GETARG_TIMESTAMPTZ(1);
	if (TIMESTAMP_NOT_FINITE(now))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("now must be a finite timestamp")));

	/* the statics of a tick (QueueContext, the plans' results) are one tick's */
	if (TickRunning)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mm.tick cannot be called inside a tick"),
				 errdetail("A match function or a trigger on the tick's tables called it.")));
	TickRunning = true;
	PG_TRY();
	{
		total = RunTick(fcinfo, now, caller_context);
	}
	PG_CATCH();
	{
		/* nothing of a failed tick remains: neither do its counts */
		TickRunning = false;
		LastStatsCount = 0;
		MmMatchFunctionStatsReset();
		PG_RE_THROW();
	}
	PG_END_TRY();
	TickRunning = false;
	PG_RETURN_INT32(total);
}

/* mm_tick once its arguments are checked: one queue, or every queue */
static int
RunTick(FunctionCallInfo fcinfo, TimestampTz now, MemoryContext caller_context)
{
	int			total = 0;
	int			rc;
	int			guc_nest_level;

	MmCheckNotifyQueue();
	/* a failed single-queue tick of this backend left it pointing at freed memory */
	QueueContext = NULL;
	LastStatsCount = 0;
	MmMatchFunctionStatsReset();
	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	PreparePlans();
	/* raised for this call only: restored below, or by the abort on error */
	guc_nest_level = NewGUCNestLevel();
	if (work_mem < MM_TICK_WORK_MEM_KB)
	{
		char		value[32];

		snprintf(value, sizeof(value), "%d", MM_TICK_WORK_MEM_KB);
		(void) set_config_option("work_mem", value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}

	if (!PG_ARGISNULL(0))
	{
		char	   *queue = text_to_cstring(PG_GETARG_TEXT_PP(0));

		total = TickQueue(queue, now, true, true, caller_context);
	}
	else
	{
		char	  **names;
		int			n,
					i;

		rc = SPI_execute_plan(PlanQueueNames, NULL, NULL, true, 0);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "listing queues failed: %s", SPI_result_code_string(rc));
		n = (int) SPI_processed;
		names = MemoryContextAlloc(caller_context, sizeof(char *) * Max(n, 1));
		for (i = 0; i < n; i++)
			names[i] = MemoryContextStrdup(caller_context,
										   SPI_getvalue(SPI_tuptable->vals[i],
														SPI_tuptable->tupdesc, 1));
		SPI_freetuptable(SPI_tuptable);
		ExpireProposals(NULL, now);
		for (i = 0; i < n; i++)
			total += TickQueueGuarded(names[i], now, caller_context);
	}

	AtEOXact_GUC(true, guc_nest_level);
	if ((rc = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
	return total;
}

/*
 * mm.last_tick_stats(): per queue, what the last mm.tick() of this backend
 * did and how long each phase took, so benchmarks can tell the matching
 * compute from the SPI reads and writes.
 */
Datum
mm_last_tick_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < LastStatsCount; i++)
	{
		MmTickStats *s = &LastStats[i];
		Datum		values[10];
		bool		nulls[10] = {0};

		values[0] = CStringGetTextDatum(s->queue);
		values[1] = BoolGetDatum(s->locked_out);
		values[2] = Int32GetDatum(s->tickets_loaded);
		values[3] = Int32GetDatum(s->tickets_timed_out);
		values[4] = Int32GetDatum(s->matches);
		values[5] = Int32GetDatum(s->players_matched);
		values[6] = Float8GetDatum(s->load_ms);
		values[7] = Float8GetDatum(s->compute_ms);
		values[8] = Float8GetDatum(s->write_ms);
		values[9] = Int64GetDatum(s->memory_bytes);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
