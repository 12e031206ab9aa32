/*
 * tick_plans.c
 *	  Every statement mm.tick runs, prepared once per backend and kept.
 *
 * The statements are written for the schema version this library serves
 * (schema_version.c), which mm.tick checks before it prepares them: one
 * statement per step, no arm per version.  A kept plan survives changes of
 * the tables it reads (PostgreSQL's plan cache analyses it again).  The
 * statements that take arrays as long as the queue get generic plans from
 * the first call.  On a Citus worker the statements name the queue's shards
 * (tick_shards.c): one set of plans per shard group.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "tick_internal.h"

/* Prepares a statement once and keeps it, with the given cursor options. */
static void
KeepPlanWith(SPIPlanPtr *slot, const char *sql, int nargs, Oid *argtypes, int options)
{
	SPIPlanPtr	plan;

	if (*slot != NULL)
		return;
	plan = SPI_prepare_cursor(MmTickStatementFor(sql), nargs, argtypes, options);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql,
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	*slot = plan;
}

/*
 * Prepares a statement once and keeps it for the backend's lifetime, with
 * generic plans from the first call: the bulk statements take arrays of up
 * to the whole queue, and a custom plan would estimate every element of
 * them on each call.
 */
static void
KeepPlan(SPIPlanPtr *slot, const char *sql, int nargs, Oid *argtypes)
{
	KeepPlanWith(slot, sql, nargs, argtypes, CURSOR_OPT_GENERIC_PLAN);
}

/*
 * On Citus, the statements that read the queue's pending claims are planned
 * at each tick (custom plans): a queue's shards are often empty when its
 * first tick plans them, and a generic plan of an empty shard (nested loops
 * over sequential scans) keeps that shape as the queue fills, quadratic in
 * its pending tickets; and without nested loops (MmTickPlanPendingClaims).
 * Nothing changes on one node.
 */
static int
PendingClaimsPlan(int options)
{
	if (!MmTickOnShards())
		return options;
	return (options & ~CURSOR_OPT_GENERIC_PLAN) | CURSOR_OPT_CUSTOM_PLAN;
}

/* The live matches' expiry (live_match_timeout_seconds). */
static void
PrepareLiveMatchExpiry(void)
{
	Oid			queue_cutoff_now[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Oid			int8_array_text[] = {INT8ARRAYOID, TEXTOID};
	Oid			text_int8_array_now[] = {TEXTOID, INT8ARRAYOID, TIMESTAMPTZOID};

	/*
	 * live_match_timeout_seconds: the queue's ready or assigned matches that
	 * became ready before $2 (now minus the limit), oldest first, read
	 * through the partial index of live matches.  A match a lifecycle step
	 * holds (assign, complete, leave, requeue, a result) is skipped, left for
	 * the next tick; a match such a step changed since this statement's
	 * snapshot is checked again once locked (a completed match no longer
	 * qualifies).  Each is cancelled as expired (its open backfill request
	 * by close_expired_backfills); its tickets stay matched, the record of
	 * the match.  One row: their ids, and the players with their tickets,
	 * whose claims release_claims drops (a player who left holds no claim of
	 * it any more).
	 */
	KeepPlan(&MmTickPlan.expire_live_matches,
			 "WITH due AS MATERIALIZED ("
			 " SELECT id FROM mm.matches"
			 " WHERE queue OPERATOR(pg_catalog.=) $1"
			 " AND status OPERATOR(pg_catalog.=) ANY (ARRAY['ready', 'assigned'])"
			 " AND ready_at OPERATOR(pg_catalog.<) $2"
			 " ORDER BY ready_at, id FOR UPDATE SKIP LOCKED"
			 "), expired AS ("
			 " UPDATE mm.matches m SET status = 'cancelled', cancel_reason = 'expired', updated_at = $3"
			 " WHERE m.queue OPERATOR(pg_catalog.=) $1 AND m.id IN (SELECT id FROM due) RETURNING m.id"
			 "), players AS ("
			 " SELECT mp.player_id, mp.ticket_id FROM mm.match_players mp"
			 " WHERE mp.queue OPERATOR(pg_catalog.=) $1 AND mp.match_id IN (SELECT id FROM due)"
			 ")"
			 " SELECT (SELECT pg_catalog.array_agg(id ORDER BY id) FROM expired),"
			 " (SELECT pg_catalog.array_agg(player_id) FROM players),"
			 " (SELECT pg_catalog.array_agg(ticket_id) FROM players)",
			 3, queue_cutoff_now);
	/*
	 * The expired matches' open backfill requests, cancelled in a statement
	 * of their own: one a lifecycle step opened and committed after the
	 * expiry's snapshot (it held the match, then let go before the tick
	 * locked it) is seen here, and none can open since (the tick holds the
	 * matches, and every writer of a request locks its match).
	 */
	KeepPlan(&MmTickPlan.close_expired_backfills,
			 "UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = $3"
			 " WHERE b.queue OPERATOR(pg_catalog.=) $1 AND b.match_id OPERATOR(pg_catalog.=) ANY ($2)"
			 " AND b.status OPERATOR(pg_catalog.=) 'open'",
			 3, text_int8_array_now);
	/* match_cancelled for each, signed like every lifecycle event */
	KeepPlan(&MmTickPlan.notify_expired,
			 "SELECT mm.notify_match_event('match_cancelled', $2, u.id,"
			 " CAST('{\"reason\": \"expired\", \"requeued_tickets\": [], \"cancelled_tickets\": []}'"
			 " AS pg_catalog.jsonb))"
			 " FROM pg_catalog.unnest($1) AS u(id) ORDER BY u.id",
			 2, int8_array_text);
}

/* The queue's config, the queue names, and the steps before the search. */
static void
PrepareReadsAndExpiry(void)
{
	Oid			text1[] = {TEXTOID};
	Oid			queue_now[] = {TEXTOID, TIMESTAMPTZOID};
	Oid			queue_cutoff_now[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Oid			release_args[] = {TEXTARRAYOID, INT8ARRAYOID};
	Oid			text_int8_array[] = {TEXTOID, INT8ARRAYOID};
	Oid			claim_args[] = {TEXTOID, TEXTARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID};

	/*
	 * FOR SHARE: conflicts with the UPDATE of mm.alter_queue and the FOR
	 * UPDATE of mm.drop_queue, so a queue's config cannot change while a tick
	 * of it is in flight (alter waits for the tick's commit), and a tick that
	 * starts while an alter is in flight waits for it and reads the new
	 * config.  Ticks share the lock (they exclude each other by the advisory
	 * lock), and so do ticket inserts (their foreign key check takes KEY
	 * SHARE).
	 */
	KeepPlan(&MmTickPlan.queue_config,
			 "SELECT config, match_function_role FROM mm.queues"
			 " WHERE name OPERATOR(pg_catalog.=) $1 FOR SHARE",
			 1, text1);
	KeepPlan(&MmTickPlan.queue_names, "SELECT name FROM mm.queues ORDER BY name", 0, NULL);
	KeepPlan(&MmTickPlan.expire_proposals, "SELECT mm.expire_proposed_matches($1, $2)", 2, queue_now);
	/*
	 * ticket_timeout_seconds: the queue's searching tickets older than $2
	 * (now minus the limit) end as timed out, as mm.end_tickets ends a
	 * ticket: moved to the ended partition and unlisted from their other
	 * queues.  One row: their ids, and their players with the ticket of
	 * each, whose claims release_claims drops (a separate statement: on
	 * Citus the claims are sharded by player, these rows by queue).
	 */
	KeepPlan(&MmTickPlan.timeout,
			 "WITH moved AS ("
			 " DELETE FROM mm.tickets_active t WHERE t.queue OPERATOR(pg_catalog.=) $1"
			 " AND t.id OPERATOR(pg_catalog.=) ANY (ARRAY("
			 " SELECT id FROM mm.tickets_active"
			 " WHERE queue OPERATOR(pg_catalog.=) $1"
			 " AND status OPERATOR(pg_catalog.=) 'searching'"
			 " AND created_at OPERATOR(pg_catalog.<) $2"
			 /*
			  * a searching ticket's updated_at is when it searched again (a
			  * requeued match, a rejected proposal): its time out counts from
			  * there
			  */
			 " AND COALESCE(updated_at, created_at) OPERATOR(pg_catalog.<) $2"
			 " ORDER BY created_at, id FOR UPDATE SKIP LOCKED))"
			 " RETURNING t.id, t.queue, t.players, t.created_at, t.queues"
			 "), unlisted AS ("
			 " DELETE FROM mm.ticket_queues q USING moved m"
			 " WHERE q.queue OPERATOR(pg_catalog.=) ANY (m.queues) AND q.ticket_id OPERATOR(pg_catalog.=) m.id"
			 "), ended AS ("
			 " INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, queues)"
			 " SELECT m.id, m.queue, m.players, 'timed_out', m.created_at, $3, m.queues FROM moved m"
			 " RETURNING id"
			 ")"
			 " SELECT (SELECT pg_catalog.array_agg(id ORDER BY id) FROM ended),"
			 " (SELECT pg_catalog.array_agg(e.value OPERATOR(pg_catalog.->>) 'id') FROM moved m,"
			 " pg_catalog.jsonb_array_elements(m.players) e),"
			 " (SELECT pg_catalog.array_agg(m.id) FROM moved m)",
			 3, queue_cutoff_now);
	/*
	 * The claims of ended tickets or matches: a claim of one of the players
	 * held by one of the tickets.  (A player's claim is held by the ticket
	 * that has the player, so no other claim can match both.)
	 */
	KeepPlan(&MmTickPlan.release_claims,
			 "DELETE FROM mm.active_players"
			 " WHERE player_id OPERATOR(pg_catalog.=) ANY ($1) AND ticket_id OPERATOR(pg_catalog.=) ANY ($2)",
			 2, release_args);

	/*
	 * On Citus, the claim of the pending tickets' players
	 * (MmTickClaimPendingPlayers): the pending tickets that no lifecycle
	 * call holds, locked, with their players in player order (joins, not =
	 * ANY: the arrays are as long as the queue's new tickets); their claims
	 * (in the players' shards, through Citus: mm.claim_pending_players);
	 * once they are settled, the pending rows of those tickets, and of
	 * tickets that ended meanwhile, go.  Empty on one node.
	 */
	KeepPlanWith(&MmTickPlan.pending_players,
			 "WITH locked AS ("
			 " SELECT t.id FROM mm.tickets_active t WHERE t.queue OPERATOR(pg_catalog.=) $1"
			 " AND t.id IN (SELECT c.ticket_id FROM mm.pending_claims c WHERE c.queue OPERATOR(pg_catalog.=) $1)"
			 " FOR UPDATE OF t SKIP LOCKED)"
			 " SELECT pg_catalog.array_agg(c.player_id ORDER BY c.player_id),"
			 " pg_catalog.array_agg(c.ticket_id ORDER BY c.player_id)"
			 " FROM mm.pending_claims c JOIN locked l ON l.id OPERATOR(pg_catalog.=) c.ticket_id"
			 " WHERE c.queue OPERATOR(pg_catalog.=) $1",
			 1, text1, PendingClaimsPlan(CURSOR_OPT_GENERIC_PLAN));
	KeepPlan(&MmTickPlan.claim_pending,
			 "SELECT player_busy, cooling_down, settled FROM mm.claim_pending_players($1, $2, $3, $4)",
			 4, claim_args);
	/*
	 * On Citus, the claims released in the queue since its last tick
	 * (mm.pending_releases): looked for in the queue's shard, and only
	 * then dropped in the players' shards, through Citus.
	 */
	KeepPlan(&MmTickPlan.has_releases,
			 "SELECT EXISTS (SELECT FROM mm.pending_releases WHERE queue OPERATOR(pg_catalog.=) $1)",
			 1, text1);
	KeepPlan(&MmTickPlan.apply_releases, "SELECT mm.apply_pending_releases($1)", 1, text1);
	KeepPlanWith(&MmTickPlan.forget_pending,
			 "DELETE FROM mm.pending_claims c WHERE c.queue OPERATOR(pg_catalog.=) $1"
			 " AND (c.ticket_id IN (SELECT u.t FROM pg_catalog.unnest($2) AS u(t))"
			 " OR NOT EXISTS (SELECT FROM mm.tickets_active t WHERE t.queue OPERATOR(pg_catalog.=) $1"
			 " AND t.id OPERATOR(pg_catalog.=) c.ticket_id))",
			 2, text_int8_array, PendingClaimsPlan(CURSOR_OPT_GENERIC_PLAN));

	/*
	 * heartbeat_timeout_seconds: the searching tickets this queue would read
	 * (its own, and those of other queues listed for it in mm.ticket_queues)
	 * whose last sign of life is before $2 (now minus the limit): their
	 * creation, their return to searching (updated_at) or their last
	 * mm.heartbeat.  Read through the queue's (queue, created_at) index up to
	 * $2: a ticket created since cannot be silent for long enough.  A ticket
	 * being beaten, cancelled or ticked is skipped; one beaten since this
	 * statement's snapshot is checked again once locked.  They end as
	 * cancelled with cancel_reason heartbeat_missed (keeping their last
	 * beat) and their other queues unlisted, as mm.end_tickets does; per
	 * queue of the tickets, their ids, and their players with the ticket of
	 * each (for release_claims).
	 */
	KeepPlan(&MmTickPlan.cancel_silent_tickets,
			 "WITH moved AS ("
			 " DELETE FROM mm.tickets_active t WHERE (t.queue OPERATOR(pg_catalog.=) $1"
			 " OR $1 OPERATOR(pg_catalog.=) ANY (t.queues)) AND t.id OPERATOR(pg_catalog.=) ANY (ARRAY("
			 " SELECT a.id FROM mm.tickets_active a"
			 " WHERE (a.queue OPERATOR(pg_catalog.=) $1 OR a.id OPERATOR(pg_catalog.=) ANY (ARRAY("
			 " SELECT o.ticket_id FROM mm.ticket_queues o WHERE o.queue OPERATOR(pg_catalog.=) $1"
			 " AND o.created_at OPERATOR(pg_catalog.<) $2)))"
			 " AND a.status OPERATOR(pg_catalog.=) 'searching'"
			 " AND a.created_at OPERATOR(pg_catalog.<) $2"
			 " AND GREATEST(a.created_at, a.updated_at, a.heartbeat_at) OPERATOR(pg_catalog.<) $2"
			 " AND (a.queue OPERATOR(pg_catalog.=) $1 OR $1 OPERATOR(pg_catalog.=) ANY (a.queues))"
			 " ORDER BY a.created_at, a.id FOR UPDATE SKIP LOCKED))"
			 " RETURNING t.id, t.queue, t.players, t.created_at, t.queues, t.heartbeat_at"
			 "), unlisted AS ("
			 " DELETE FROM mm.ticket_queues q USING moved m"
			 " WHERE q.queue OPERATOR(pg_catalog.=) ANY (m.queues) AND q.ticket_id OPERATOR(pg_catalog.=) m.id"
			 "), ended AS ("
			 " INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, queues,"
			 " heartbeat_at, cancel_reason)"
			 " SELECT m.id, m.queue, m.players, 'cancelled', m.created_at, $3, m.queues,"
			 " m.heartbeat_at, 'heartbeat_missed' FROM moved m"
			 " RETURNING id, queue, players"
			 ")"
			 " SELECT e.queue, pg_catalog.array_agg(DISTINCT e.id ORDER BY e.id),"
			 " pg_catalog.array_agg(p.value OPERATOR(pg_catalog.->>) 'id'), pg_catalog.array_agg(e.id)"
			 " FROM ended e, pg_catalog.jsonb_array_elements(e.players) p"
			 " GROUP BY e.queue ORDER BY e.queue COLLATE pg_catalog.\"C\"",
			 3, queue_cutoff_now);
}

/*
 * On Citus, the load leaves out the tickets whose players are not claimed
 * yet: those written after the tick claimed the queue's pending ones
 * (MmTickClaimPendingPlayers) wait for the next tick.  Nothing on one node.
 */
static const char *
NotPending(void)
{
	if (!MmTickOnShards())
		return "";
	return " AND NOT EXISTS (SELECT FROM mm.pending_claims c"
		" WHERE c.queue OPERATOR(pg_catalog.=) $1"
		" AND c.ticket_id OPERATOR(pg_catalog.=) mm.tickets_active.id)";
}

/* Loading the searching tickets. */
static void
PrepareLoad(void)
{
	Oid			text1[] = {TEXTOID};
	Oid			queue_now[] = {TEXTOID, TIMESTAMPTZOID};

	/*
	 * Tickets created after the tick's now (committed after the tick's
	 * transaction started, or inserted with a later created_at) are left
	 * out: their time to match would be negative.  The next tick takes them.
	 * The last column: whether the ticket searches in other queues too.
	 * Planned for a fast start: the rows come in the order of
	 * tickets_active_queue_created, with no sort, which a plan for the
	 * whole result would choose past a few thousand tickets and which spills
	 * to disk once the rows outgrow work_mem (a million tickets).
	 */
	KeepPlanWith(&MmTickPlan.load,
				 psprintf("SELECT id, created_at, players, ctid, queues IS NOT NULL FROM mm.tickets_active"
						  " WHERE queue OPERATOR(pg_catalog.=) $1"
						  " AND status OPERATOR(pg_catalog.=) 'searching'"
						  " AND created_at OPERATOR(pg_catalog.<=) $2%s"
						  " ORDER BY created_at, id FOR UPDATE SKIP LOCKED", NotPending()),
				 2, queue_now, PendingClaimsPlan(CURSOR_OPT_GENERIC_PLAN | CURSOR_OPT_FAST_PLAN));

	/*
	 * Tickets of other queues that also search in this one: only when there
	 * are any does the load read them too (the plain load's index scan gives
	 * its rows in order; this one sorts).
	 */
	KeepPlan(&MmTickPlan.has_other_tickets,
			 "SELECT EXISTS (SELECT FROM mm.ticket_queues WHERE queue OPERATOR(pg_catalog.=) $1)",
			 1, text1);
	KeepPlanWith(&MmTickPlan.load_with_others,
			 psprintf("SELECT id, created_at, players, ctid, queues IS NOT NULL FROM mm.tickets_active"
					  " WHERE (queue OPERATOR(pg_catalog.=) $1 OR id OPERATOR(pg_catalog.=) ANY (ARRAY("
					  " SELECT o.ticket_id FROM mm.ticket_queues o WHERE o.queue OPERATOR(pg_catalog.=) $1"
					  " AND o.created_at OPERATOR(pg_catalog.<=) $2)))"
					  " AND (queue OPERATOR(pg_catalog.=) $1 OR $1 OPERATOR(pg_catalog.=) ANY (queues))"
					  " AND status OPERATOR(pg_catalog.=) 'searching'"
					  " AND created_at OPERATOR(pg_catalog.<=) $2%s"
					  " ORDER BY created_at, id FOR UPDATE SKIP LOCKED", NotPending()),
			 2, queue_now, PendingClaimsPlan(CURSOR_OPT_GENERIC_PLAN));

	/*
	 * A queue with a low-priority pool (penalties): the active tickets of
	 * its players with low-priority games left in it.  Read from the players
	 * (mm.active_players) rather than from the tickets' jsonb.  Both tables
	 * are sharded by player on Citus, so this one stays a distributed
	 * statement, which Citus cannot plan generically with a parameter: the
	 * plan cache's choice (custom plans) is kept.
	 */
	KeepPlanWith(&MmTickPlan.penalised_tickets,
			 "SELECT DISTINCT a.ticket_id FROM mm.player_penalties p"
			 " JOIN mm.active_players a ON a.player_id OPERATOR(pg_catalog.=) p.player_id"
			 " WHERE p.queue OPERATOR(pg_catalog.=) $1"
			 " AND p.low_priority_games OPERATOR(pg_catalog.>) 0",
			 1, text1, 0);
}

/* Writing the matches, their players and tickets, and the rule counts. */
static void
PrepareWrites(void)
{
	Oid			int4_1[] = {INT4OID};
	Oid			matches_args[] = {TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID, FLOAT8ARRAYOID, TEXTARRAYOID,
	INT8ARRAYOID, TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID};
	Oid			players_args[] = {TEXTOID, INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TEXTARRAYOID,
	TEXTARRAYOID, BOOLARRAYOID, BOOLARRAYOID};
	Oid			protect_args[] = {TEXTOID, TEXTARRAYOID, INT4OID, TIMESTAMPTZOID};
	Oid			ended_args[] = {TIMESTAMPTZOID, TIDARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTOID};
	Oid			ended_from_arrays_args[] = {TIMESTAMPTZOID, INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTOID,
	JSONBARRAYOID, TIMESTAMPTZARRAYOID};
	Oid			propose_args[] = {TIMESTAMPTZOID, TIDARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTOID};
	Oid			tid_array_queue[] = {TIDARRAYOID, TEXTOID};
	Oid			int8_array_queue[] = {INT8ARRAYOID, TEXTOID};
	Oid			stats_args[] = {TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID, INT8ARRAYOID, INT8ARRAYOID};

	/* match ids are drawn first, so each is paired with its match by position */
	KeepPlan(&MmTickPlan.match_ids,
			 "SELECT pg_catalog.nextval(CAST('mm.matches_id_seq' AS pg_catalog.regclass))"
			 " FROM pg_catalog.generate_series(1, $1)",
			 1, int4_1);
	/*
	 * $7 and $8: the status (ready, or proposed) and the acceptance deadline;
	 * a ready match is ready from now on (ready_at, which its
	 * live_match_timeout_seconds counts from).  The arrays are unnested in
	 * the select list (ProjectSet), which streams them in step, a NULL array
	 * giving NULLs: ROWS FROM would first materialise every row in a
	 * tuplestore (about a third of the insert of 100,000 match players).
	 */
	KeepPlan(&MmTickPlan.insert_matches,
			 "INSERT INTO mm.matches (id, queue, status, created_at, updated_at, region, quality, rule_steps,"
			 " acceptance_deadline, properties, ready_at)"
			 " SELECT u.id, $1, $7, $2, $2, u.region, u.quality, CAST(u.steps AS pg_catalog.jsonb), $8,"
			 " CAST(COALESCE(u.props, '{}') AS pg_catalog.jsonb),"
			 " CASE WHEN $7 OPERATOR(pg_catalog.=) 'ready' THEN $2 END"
			 " FROM (SELECT pg_catalog.unnest($6) AS id, pg_catalog.unnest($3) AS region,"
			 " pg_catalog.unnest($4) AS quality, pg_catalog.unnest($5) AS steps,"
			 " pg_catalog.unnest($9) AS props) AS u",
			 9, matches_args);
	/*
	 * $6 and $7: the roles and autofills of a role queue, else NULL; $8
	 * whether each player's ticket was penalised, in a queue with a
	 * low-priority pool, else NULL
	 */
	KeepPlan(&MmTickPlan.insert_players,
			 "INSERT INTO mm.match_players (match_id, queue, player_id, ticket_id, team, role, autofilled,"
			 " low_priority)"
			 " SELECT u.match_id, $1, u.player_id, u.ticket_id, u.team, u.role, COALESCE(u.autofilled, false),"
			 " COALESCE(u.low_priority, false)"
			 " FROM (SELECT pg_catalog.unnest($2) AS match_id, pg_catalog.unnest($3) AS player_id,"
			 " pg_catalog.unnest($4) AS ticket_id, pg_catalog.unnest($5) AS team, pg_catalog.unnest($6) AS role,"
			 " pg_catalog.unnest($7) AS autofilled, pg_catalog.unnest($8) AS low_priority) AS u",
			 8, players_args);
	/* an autofilled player is not autofilled again for protect_games games */
	KeepPlan(&MmTickPlan.protect_autofilled,
			 "INSERT INTO mm.autofill_protection AS p (queue, player_id, games_left, updated_at)"
			 " SELECT $1, pg_catalog.unnest($2), $3, $4"
			 " ON CONFLICT (queue, player_id) DO UPDATE SET games_left = excluded.games_left,"
			 " updated_at = excluded.updated_at",
			 4, protect_args);

	/*
	 * A matched ticket leaves the active partition for the ended one: its
	 * row is copied and deleted by ctid, straight in the partitions (the
	 * parent's statement triggers are for other writers).  Its players stay
	 * claimed until the match ends (completed, cancelled, or the player
	 * left): nobody searches while in a live match.  A ticket of several
	 * queues ends under the queue that matched it ($5), its own queue joining
	 * its other queues.  This statement joins the rows by ctid in SQL; the
	 * next one takes them from arrays.
	 */
	KeepPlan(&MmTickPlan.end_tickets_by_ctid,
			 "INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at,"
			 " matched_at, match_id, team, queues)"
			 " SELECT t.id, $5, t.players, 'matched', t.created_at, $1, $1, u.match_id, u.team,"
			 " CASE WHEN t.queue OPERATOR(pg_catalog.=) $5 THEN t.queues"
			 " ELSE pg_catalog.array_append(pg_catalog.array_remove(t.queues, $5), t.queue) END"
			 " FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4))"
			 " AS u(row_id, match_id, team)"
			 " JOIN mm.tickets_active t ON t.ctid OPERATOR(pg_catalog.=) u.row_id"
			 " AND (t.queue OPERATOR(pg_catalog.=) $5 OR $5 OPERATOR(pg_catalog.=) ANY (t.queues))",
			 5, ended_args);
	/*
	 * The same rows from arrays the tick reads from the heap itself
	 * (ReadEndingTickets), for tickets of this queue alone.  The arrays are
	 * unnested in the select list, which streams them: no join, nothing
	 * materialised.
	 */
	KeepPlan(&MmTickPlan.end_tickets_from_arrays,
			 "INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at,"
			 " matched_at, match_id, team)"
			 " SELECT pg_catalog.unnest($2), $5, pg_catalog.unnest($6), 'matched', pg_catalog.unnest($7),"
			 " $1, $1, pg_catalog.unnest($3), pg_catalog.unnest($4)",
			 7, ended_from_arrays_args);
	KeepPlan(&MmTickPlan.delete_active,
			 "DELETE FROM mm.tickets_active WHERE ctid OPERATOR(pg_catalog.=) ANY ($1)"
			 " AND (queue OPERATOR(pg_catalog.=) $2 OR $2 OPERATOR(pg_catalog.=) ANY (queues))",
			 2, tid_array_queue);
	KeepPlan(&MmTickPlan.unlist_tickets,
			 "DELETE FROM mm.ticket_queues o USING mm.tickets_ended t"
			 " WHERE t.queue OPERATOR(pg_catalog.=) $2 AND t.id OPERATOR(pg_catalog.=) ANY ($1)"
			 " AND (o.queue OPERATOR(pg_catalog.=) $2 OR o.queue OPERATOR(pg_catalog.=) ANY (t.queues))"
			 " AND o.ticket_id OPERATOR(pg_catalog.=) t.id",
			 2, int8_array_queue);

	/*
	 * A queue that asks for acceptance: a proposed ticket stays in the
	 * active partition, waiting for its players' answers; the update changes
	 * no indexed column, so it is HOT.
	 */
	KeepPlan(&MmTickPlan.propose_tickets,
			 "UPDATE mm.tickets_active t SET status = 'proposed', updated_at = $1,"
			 " match_id = u.match_id, team = u.team"
			 " FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4))"
			 " AS u(row_id, match_id, team)"
			 " WHERE t.ctid OPERATOR(pg_catalog.=) u.row_id"
			 " AND (t.queue OPERATOR(pg_catalog.=) $5 OR $5 OPERATOR(pg_catalog.=) ANY (t.queues))",
			 5, propose_args);

	/* the search's per-rule counts, once per tick of the queue (mm.rule_stats) */
	KeepPlan(&MmTickPlan.rule_stats,
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
 * their open slots in the order of the team names given ($2).  A request or
 * match that a lifecycle step holds (cancel, complete, requeue, leave) is
 * left for the next tick.
 */
static void
PrepareBackfill(void)
{
	Oid			backfill_args[] = {TEXTOID, TEXTARRAYOID, TIMESTAMPTZOID};
	Oid			int8_text[] = {INT8OID, TEXTOID};
	Oid			update_args[] = {INT8OID, TEXTOID, BOOLOID, TIMESTAMPTZOID, TEXTOID};
	Oid			notify_args[] = {INT8OID, TEXTOID, TEXTOID};
	Oid			cancel_args[] = {INT8OID, INT8OID, TIMESTAMPTZOID, TEXTOID};

	KeepPlan(&MmTickPlan.load_backfills,
			 "SELECT b.id, b.match_id, m.region,"
			 " ARRAY(SELECT coalesce(CAST(b.open_slots OPERATOR(pg_catalog.->>) u.team AS integer), 0)"
			 " FROM pg_catalog.unnest($2) WITH ORDINALITY AS u(team, ord) ORDER BY u.ord),"
			 /*
			  * the match's leavers: their new tickets cannot join it again
			  * (read from the match alone, not from the players' claims,
			  * which Citus shards by player)
			  */
			 " ARRAY(SELECT mp.player_id FROM mm.match_players mp"
			 " WHERE mp.queue OPERATOR(pg_catalog.=) $1 AND mp.match_id OPERATOR(pg_catalog.=) b.match_id"
			 " AND mp.left_at IS NOT NULL),"
			 /* a role queue: the leavers' teams and roles, the seats to fill */
			 " ARRAY(SELECT mp.team FROM mm.match_players mp"
			 " WHERE mp.queue OPERATOR(pg_catalog.=) $1 AND mp.match_id OPERATOR(pg_catalog.=) b.match_id"
			 " AND mp.left_at IS NOT NULL AND mp.role IS NOT NULL ORDER BY mp.player_id),"
			 " ARRAY(SELECT mp.role FROM mm.match_players mp"
			 " WHERE mp.queue OPERATOR(pg_catalog.=) $1 AND mp.match_id OPERATOR(pg_catalog.=) b.match_id"
			 " AND mp.left_at IS NOT NULL AND mp.role IS NOT NULL ORDER BY mp.player_id)"
			 " FROM mm.backfill_requests b JOIN mm.matches m ON m.queue OPERATOR(pg_catalog.=) $1"
			 " AND m.id OPERATOR(pg_catalog.=) b.match_id"
			 " WHERE b.queue OPERATOR(pg_catalog.=) $1 AND b.status OPERATOR(pg_catalog.=) 'open'"
			 " AND m.status OPERATOR(pg_catalog.=) ANY (ARRAY['ready', 'assigned'])"
			 /* a tick dated before the request (or the match) does not serve it */
			 " AND b.created_at OPERATOR(pg_catalog.<=) $3 AND m.created_at OPERATOR(pg_catalog.<=) $3"
			 " ORDER BY b.created_at, b.id FOR UPDATE OF b, m SKIP LOCKED",
			 3, backfill_args);
	/* a match's tickets, each with its players still in the match */
	KeepPlan(&MmTickPlan.load_members,
			 "SELECT t.id, t.created_at,"
			 " pg_catalog.jsonb_agg(p.value ORDER BY p.ord), pg_catalog.min(mp.team),"
			 " pg_catalog.array_agg(mp.role ORDER BY p.ord)"
			 " FROM mm.match_players mp"
			 " JOIN mm.tickets_ended t ON t.id OPERATOR(pg_catalog.=) mp.ticket_id"
			 " CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(t.players) WITH ORDINALITY AS p(value, ord)"
			 " WHERE mp.queue OPERATOR(pg_catalog.=) $2 AND mp.match_id OPERATOR(pg_catalog.=) $1"
			 " AND t.queue OPERATOR(pg_catalog.=) $2 AND mp.left_at IS NULL"
			 " AND p.value OPERATOR(pg_catalog.->>) 'id' OPERATOR(pg_catalog.=) mp.player_id"
			 " GROUP BY t.id, t.created_at ORDER BY t.created_at, t.id",
			 2, int8_text);
	KeepPlan(&MmTickPlan.update_backfill,
			 "UPDATE mm.backfill_requests SET open_slots = CAST($2 AS pg_catalog.jsonb),"
			 " status = CASE WHEN $3 THEN 'filled' ELSE 'open' END, updated_at = $4"
			 " WHERE id OPERATOR(pg_catalog.=) $1 AND queue OPERATOR(pg_catalog.=) $5",
			 5, update_args);
	KeepPlan(&MmTickPlan.notify_match,
			 "SELECT mm.notify_match_event('backfill_filled', $3, $1, CAST($2 AS pg_catalog.jsonb))",
			 3, notify_args);
	/* a request the queue's current teams cannot serve */
	KeepPlan(&MmTickPlan.cancel_backfill,
			 "WITH cancelled AS (UPDATE mm.backfill_requests SET status = 'cancelled', updated_at = $3"
			 " WHERE id OPERATOR(pg_catalog.=) $1 AND queue OPERATOR(pg_catalog.=) $4 RETURNING id)"
			 " SELECT mm.notify_match_event('backfill_cancelled', $4, $2,"
			 " pg_catalog.jsonb_build_object('request_id', c.id, 'reason', 'queue_teams_changed'))"
			 " FROM cancelled c",
			 4, cancel_args);
}

/*
 * Prepares every statement of the tick not prepared yet in this backend
 * (all of them on its first tick).  The caller checked the schema version.
 */
void
MmTickPreparePlans(void)
{
	/* the last one prepared: all are there */
	if (MmTickPlan.cancel_backfill != NULL)
		return;
	PrepareReadsAndExpiry();
	PrepareLiveMatchExpiry();
	PrepareLoad();
	PrepareWrites();
	PrepareBackfill();
}
