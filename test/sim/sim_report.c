/*
 * sim_report.c
 *	  The simulator's output: per-queue figures read back from the extension's
 *	  tables (tickets completed and failed, time to match, match quality) next
 *	  to FlexMatch's published ones, and an HTML page with inline SVG charts of
 *	  time to match and quality over time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define lengthof(array) (sizeof(array) / sizeof((array)[0]))

/* Second 0 of a run in simulated time (mm_sim.c's SIM_DEFAULT_EPOCH); a real-time run starts at the wall clock. */
#define SIMULATED_EPOCH 1767225600.0

/* Reads one queue's figures for the tickets this run created. */
void
SimQueueFiguresLoad(PGconn *conn, const SimQueue *queue, SimQueueFigures *f)
{
	char	   *ids = SimIdArray(queue->ticket_ids, queue->nticket_ids);
	const char *params[1] = {ids};
	PGresult   *res = SimExec(conn,
							  "WITH t AS ("
							  "  SELECT t.status, t.match_id,"
							  "         extract(epoch FROM t.matched_at OPERATOR(pg_catalog.-) t.created_at)::float8 AS wait"
							  "    FROM mm.tickets t WHERE t.id OPERATOR(pg_catalog.=) ANY ($1::bigint[]))"
							  "SELECT pg_catalog.count(*) FILTER (WHERE status OPERATOR(pg_catalog.=) 'matched'),"
							  "       pg_catalog.count(*) FILTER (WHERE status OPERATOR(pg_catalog.=) 'timed_out'),"
							  "       pg_catalog.count(*) FILTER (WHERE status OPERATOR(pg_catalog.=) 'cancelled'),"
							  "       pg_catalog.count(*) FILTER (WHERE status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed'])),"
							  "       coalesce(pg_catalog.avg(wait) FILTER (WHERE status OPERATOR(pg_catalog.=) 'matched'), 'NaN'),"
							  "       coalesce(pg_catalog.percentile_cont(0.95) WITHIN GROUP (ORDER BY wait)"
							  "                FILTER (WHERE status OPERATOR(pg_catalog.=) 'matched'), 'NaN'),"
							  "       coalesce((SELECT pg_catalog.avg(m.quality) FROM mm.matches m"
							  "                  WHERE m.id OPERATOR(pg_catalog.=) ANY (SELECT match_id FROM t)), 'NaN'),"
							  "       pg_catalog.count(DISTINCT match_id),"
							  "       (SELECT pg_catalog.count(*) FROM mm.matches m"
							  "         WHERE m.acceptance_deadline IS NOT NULL"
							  "           AND m.id OPERATOR(pg_catalog.=) ANY (SELECT mp.match_id FROM mm.match_players mp"
							  "                   WHERE mp.ticket_id OPERATOR(pg_catalog.=) ANY ($1::bigint[]))),"
							  "       (SELECT pg_catalog.count(*) FROM mm.matches m"
							  "         WHERE m.acceptance_deadline IS NOT NULL"
							  "           AND m.status OPERATOR(pg_catalog.=) 'cancelled'"
							  "           AND m.cancel_reason OPERATOR(pg_catalog.=) ANY (ARRAY['rejected', 'acceptance_timeout'])"
							  "           AND m.id OPERATOR(pg_catalog.=) ANY (SELECT mp.match_id FROM mm.match_players mp"
							  "                   WHERE mp.ticket_id OPERATOR(pg_catalog.=) ANY ($1::bigint[])))"
							  "  FROM t",
							  1, params, PGRES_TUPLES_OK);

	f->completed = atol(PQgetvalue(res, 0, 0));
	f->failed = atol(PQgetvalue(res, 0, 1));
	f->cancelled = atol(PQgetvalue(res, 0, 2));
	f->searching = atol(PQgetvalue(res, 0, 3));
	f->avg_wait = atof(PQgetvalue(res, 0, 4));
	f->p95_wait = atof(PQgetvalue(res, 0, 5));
	f->avg_quality = atof(PQgetvalue(res, 0, 6));
	f->matches = atol(PQgetvalue(res, 0, 7));
	f->proposals = atol(PQgetvalue(res, 0, 8));
	f->proposals_failed = atol(PQgetvalue(res, 0, 9));
	PQclear(res);
	free(ids);
}

/*
 * The acceptance step of the run, as SimPrintFigures was told it, for the
 * chart written after it (< 0: not known).
 */
static double report_accept_rate = -1;
static double report_acceptance_timeout = -1;

/* A time column: seconds with one decimal, or "-" when there is none. */
static void
PrintSeconds(double s)
{
	if (isnan(s))
		printf(" %9s", "-");
	else
		printf(" %7.1f s", s);
}

/*
 * The multi-mode queue: which mode each match was played in, and its
 * tickets' average time to match.  A match plays the first mode of the
 * compound (classic, survival, practice) that every ticket listed and whose
 * match size it has (8-12, 2-6, 4-16 players), as the compound reads it.
 */
static void
PrintModeMix(PGconn *conn, const SimQueue *queue)
{
	char	   *ids = SimIdArray(queue->ticket_ids, queue->nticket_ids);
	const char *params[1] = {ids};
	PGresult   *res = SimExec(conn,
							  "WITH t AS ("
							  "  SELECT t.match_id, pg_catalog.jsonb_array_length(t.players) AS n,"
							  "         t.players -> 0 -> 'attributes' -> 'modes' AS modes,"
							  "         extract(epoch FROM t.matched_at OPERATOR(pg_catalog.-) t.created_at)::float8 AS wait"
							  "    FROM mm.tickets t WHERE t.id OPERATOR(pg_catalog.=) ANY ($1::bigint[])"
							  "     AND t.status OPERATOR(pg_catalog.=) 'matched'),"
							  " m AS ("
							  "  SELECT match_id, pg_catalog.sum(n) AS n,"
							  "         pg_catalog.bool_and(modes OPERATOR(pg_catalog.?) 'classic') AS c,"
							  "         pg_catalog.bool_and(modes OPERATOR(pg_catalog.?) 'survival') AS s,"
							  "         pg_catalog.bool_and(modes OPERATOR(pg_catalog.?) 'practice') AS p"
							  "    FROM t GROUP BY match_id),"
							  " k AS ("
							  "  SELECT match_id, CASE WHEN c AND n BETWEEN 8 AND 12 THEN 1"
							  "                        WHEN s AND n BETWEEN 2 AND 6 THEN 2"
							  "                        WHEN p AND n BETWEEN 4 AND 16 THEN 3 ELSE 4 END AS mode"
							  "    FROM m)"
							  "SELECT k.mode, pg_catalog.count(DISTINCT k.match_id), pg_catalog.count(*),"
							  "       pg_catalog.avg(t.wait)"
							  "  FROM k JOIN t USING (match_id) GROUP BY k.mode ORDER BY k.mode",
							  1, params, PGRES_TUPLES_OK);
	static const char *const names[] = {"", "classic", "survival", "practice", "none (a bug)"};
	int			row;

	printf("%s by the mode played:", queue->name);
	for (row = 0; row < PQntuples(res); row++)
	{
		int			mode = atoi(PQgetvalue(res, row, 0));

		printf("%s %s %s matches, %s tickets, avg wait %.1f s", row > 0 ? ";" : "",
			   names[mode >= 1 && mode <= 4 ? mode : 4], PQgetvalue(res, row, 1),
			   PQgetvalue(res, row, 2), atof(PQgetvalue(res, row, 3)));
	}
	printf("\n");
	PQclear(res);
	free(ids);
}

/*
 * Prints the per-queue table, FlexMatch's figures beside ours where
 * published.  "failed" is FlexMatch's sense: timed out, or cancelled because
 * a player did not accept (in simulated time nothing else cancels a ticket).
 */
void
SimPrintFigures(PGconn *conn, SimQueue *queues, int nqueues, bool flexmatch,
				double accept_rate, double acceptance_timeout, const char *command_line)
{
	int			i;
	bool		any_proposals = false;
	long		proposals_total = 0,
				proposals_failed = 0;
	int			largest = 0;

	report_accept_rate = accept_rate;
	report_acceptance_timeout = acceptance_timeout;
	printf("\n%s\n", command_line);
	if (flexmatch)
	{
		char		ours[128];

		/* what differs, over the columns it applies to */
		if (acceptance_timeout > 0)
			snprintf(ours, sizeof(ours),
					 "ours: acceptance per PLAYER (each accepts with probability %.2f within %.0f s)",
					 accept_rate, acceptance_timeout);
		else
			snprintf(ours, sizeof(ours), "ours: no acceptance step");
		printf("%-110s | %s\n", ours,
			   "FlexMatch, published: acceptance 0.9 within 10 s (its figures fit 0.9 per MATCH)");
	}
	printf("%-22s %7s %9s %9s %9s %9s %9s %7s %7s %13s", "queue", "tickets", "completed",
		   "timed out", "cancelled", "avg wait", "p95 wait", "matches", "quality",
		   "not accepted");
	if (flexmatch)
		printf(" | %s", "completed/failed, avg wait");
	printf("\n");
	for (i = 0; i < nqueues; i++)
	{
		SimQueueFigures f;
		SimQueue   *q = &queues[i];
		char		proposals[48];

		SimQueueFiguresLoad(conn, q, &f);
		printf("%-22s %7d %9ld %9ld %9ld", q->name, q->nticket_ids, f.completed, f.failed,
			   f.cancelled + f.searching);
		PrintSeconds(f.avg_wait);
		PrintSeconds(f.p95_wait);
		printf(" %7ld", f.matches);
		if (isnan(f.avg_quality))
			printf(" %7s", "-");
		else
			printf(" %7.3f", f.avg_quality);
		if (f.proposals > 0)
		{
			snprintf(proposals, sizeof(proposals), "%ld of %ld", f.proposals_failed, f.proposals);
			any_proposals = true;
		}
		else
			snprintf(proposals, sizeof(proposals), "-");
		printf(" %13s", proposals);
		proposals_total += f.proposals;
		proposals_failed += f.proposals_failed;
		if (q->max_team > largest)
			largest = q->max_team;
		if (flexmatch)
		{
			printf(" | ");
			if (q->published_completed >= 0)
				printf("%.0f/%.0f, ", q->published_completed, q->published_failed);
			else
				printf("-, ");
			if (q->published_avg_seconds >= 0)
				printf("%.1f s", q->published_avg_seconds);
			else
				printf("-");
		}
		printf("\n");
	}
	for (i = 0; i < nqueues; i++)
		if (queues[i].multi_mode)
			PrintModeMix(conn, &queues[i]);
	if (any_proposals)
		printf("not accepted: proposed matches that a player rejected or let time out (of all proposed);"
			   " players accept with probability %.2f\n", accept_rate);
	if (!flexmatch)
		return;
	printf("FlexMatch: Amazon GameLift FlexMatch's published simulation, the same rules and traffic;"
		   " its failed = our timed out + cancelled; it published no p95 and no quality.\n");
	if (acceptance_timeout > 0)
	{
		printf("Not like for like: ours asks every PLAYER (probability %.2f each), so a match of n players"
			   " is accepted by all of them %.2f^n of the time (%.0f%% for 10 players, %.0f%% for %d);"
			   " %ld of our %ld proposals (%.0f%%) were accepted.\n",
			   accept_rate, accept_rate, 100 * pow(accept_rate, 10), 100 * pow(accept_rate, 2 * largest),
			   2 * largest, proposals_total - proposals_failed, proposals_total,
			   proposals_total > 0 ? 100.0 * (proposals_total - proposals_failed) / proposals_total : 0);
		printf("FlexMatch's 829 completed / 11 failed fit about 0.9 per MATCH, so fewer of our tickets complete"
			   " by construction. Closer to it: --accept-rate 0.99 (about 0.9 per 10-player match), or"
			   " --acceptance-timeout 0 (docs/demo-and-simulator.md).\n");
	}
	else
		printf("Not like for like: FlexMatch's run had an acceptance step (0.9, 10 s), this one has none;"
			   " whether FlexMatch's times include the answers is not published.\n");
}

/*
 * The role queues: time to match of this run's players by the role they
 * played (median and p90 of their tickets' waits) and by their first choice
 * (how many were matched or timed out, on which of their choices, and their
 * waits).  A player's first choice is the first element of the list the
 * ticket sent ("fill" when it sent none).
 */
static void
PrintRoleQueue(PGconn *conn, const SimQueue *queue)
{
	char	   *ids = SimIdArray(queue->ticket_ids, queue->nticket_ids);
	const char *params[1] = {ids};
	static const char *const players_sql =
		"WITH p AS ("
		"  SELECT t.status, extract(epoch FROM t.matched_at OPERATOR(pg_catalog.-) t.created_at)::float8 AS wait,"
		"         coalesce(pl.value OPERATOR(pg_catalog.->) 'roles', '[\"fill\"]') AS prefs,"
		"         coalesce(pl.value OPERATOR(pg_catalog.->) 'roles' OPERATOR(pg_catalog.->>) 0, 'fill') AS first,"
		"         mp.role, coalesce(mp.autofilled, false) AS autofilled"
		"    FROM mm.tickets t"
		"   CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(t.players) pl"
		"    LEFT JOIN mm.match_players mp ON t.status OPERATOR(pg_catalog.=) 'matched'"
		"         AND mp.match_id OPERATOR(pg_catalog.=) t.match_id"
		"         AND mp.player_id OPERATOR(pg_catalog.=) (pl.value OPERATOR(pg_catalog.->>) 'id')"
		"   WHERE t.id OPERATOR(pg_catalog.=) ANY ($1::bigint[]))";
	PGresult   *res;
	char	   *sql;
	size_t		len;
	int			row;

	printf("\n%s: time to match by role (this run's players; %s)\n", queue->name,
		   strstr(queue->name, "autofill") ? "autofill after 60 s, protection 3 games" : "no autofill");
	len = strlen(players_sql) + 2048;
	sql = malloc(len);
	if (sql == NULL)
		SimFatal("out of memory");

	/* by the role played */
	snprintf(sql, len, "%s"
			 "SELECT role, pg_catalog.count(*),"
			 "       pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY wait),"
			 "       pg_catalog.percentile_cont(0.9) WITHIN GROUP (ORDER BY wait),"
			 "       pg_catalog.count(*) FILTER (WHERE autofilled),"
			 "       pg_catalog.count(*) FILTER (WHERE role OPERATOR(pg_catalog.=) first)"
			 "  FROM p WHERE status OPERATOR(pg_catalog.=) 'matched' AND role IS NOT NULL"
			 " GROUP BY role"
			 " ORDER BY pg_catalog.array_position(ARRAY['tank', 'healer', 'dps'], role), role",
			 players_sql);
	res = SimExec(conn, sql, 1, params, PGRES_TUPLES_OK);
	printf("  %-14s %8s %9s %9s %12s %10s\n", "role played", "players", "median", "p90",
		   "first choice", "autofilled");
	for (row = 0; row < PQntuples(res); row++)
	{
		long		n = atol(PQgetvalue(res, row, 1));

		printf("  %-14s %8ld", PQgetvalue(res, row, 0), n);
		PrintSeconds(atof(PQgetvalue(res, row, 2)));
		PrintSeconds(atof(PQgetvalue(res, row, 3)));
		printf(" %11.0f%% %10s\n", 100.0 * atol(PQgetvalue(res, row, 5)) / n, PQgetvalue(res, row, 4));
	}
	PQclear(res);

	/* by the first choice */
	snprintf(sql, len, "%s"
			 "SELECT first, pg_catalog.count(*),"
			 "       pg_catalog.count(*) FILTER (WHERE status OPERATOR(pg_catalog.=) 'matched'),"
			 "       pg_catalog.count(*) FILTER (WHERE status OPERATOR(pg_catalog.=) 'timed_out'),"
			 "       pg_catalog.count(*) FILTER (WHERE role OPERATOR(pg_catalog.=) first),"
			 "       pg_catalog.count(*) FILTER (WHERE role OPERATOR(pg_catalog.<>) first"
			 "                                  AND role OPERATOR(pg_catalog.=) (prefs OPERATOR(pg_catalog.->>) 1)),"
			 "       pg_catalog.count(*) FILTER (WHERE NOT autofilled AND role IS NOT NULL"
			 "                                  AND NOT prefs OPERATOR(pg_catalog.?) role),"
			 "       pg_catalog.count(*) FILTER (WHERE autofilled),"
			 "       coalesce(pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY wait)"
			 "                FILTER (WHERE status OPERATOR(pg_catalog.=) 'matched'), 'NaN'),"
			 "       coalesce(pg_catalog.percentile_cont(0.9) WITHIN GROUP (ORDER BY wait)"
			 "                FILTER (WHERE status OPERATOR(pg_catalog.=) 'matched'), 'NaN')"
			 "  FROM p GROUP BY first"
			 " ORDER BY pg_catalog.array_position(ARRAY['tank', 'healer', 'dps', 'fill'], first), first",
			 players_sql);
	res = SimExec(conn, sql, 1, params, PGRES_TUPLES_OK);
	printf("  %-14s %8s %8s %9s %9s %9s %9s %10s %9s %9s\n", "first choice", "players", "matched",
		   "timed out", "on 1st", "on 2nd", "via fill", "autofilled", "median", "p90");
	for (row = 0; row < PQntuples(res); row++)
	{
		long		matched = atol(PQgetvalue(res, row, 2));
		int			col;

		printf("  %-14s %8s %8ld %9s", PQgetvalue(res, row, 0), PQgetvalue(res, row, 1), matched,
			   PQgetvalue(res, row, 3));
		for (col = 4; col <= 7; col++)
		{
			if (col == 7)
				printf(" %10s", PQgetvalue(res, row, col));
			else if (matched > 0)
				printf(" %8.0f%%", 100.0 * atol(PQgetvalue(res, row, col)) / matched);
			else
				printf(" %9s", "-");
		}
		PrintSeconds(atof(PQgetvalue(res, row, 8)));
		PrintSeconds(atof(PQgetvalue(res, row, 9)));
		printf("\n");
	}
	PQclear(res);
	printf("  (waits: matched tickets, created to matched; on 1st / on 2nd / via fill: of the matched;"
		   " via fill: a role outside the list that its \"fill\" allowed)\n");
	free(sql);
	free(ids);
}

/* The per-role figures of every role queue of the run. */
void
SimPrintRoleFigures(PGconn *conn, SimQueue *queues, int nqueues)
{
	int			i;

	for (i = 0; i < nqueues; i++)
		if (queues[i].roles)
			PrintRoleQueue(conn, &queues[i]);
}

/*
 * A queue with penalties: the offences of the run by reason
 * (mm.penalty_stats), the waits of the players matched from the
 * low-priority pool and of the others (mm.low_priority_waits), and the
 * check that the pool never starves: no penalised ticket waited longer than
 * the bound + 60 s, and none timed out.  After max_wait_seconds a penalised
 * ticket matches anyone, so the bound is max_wait_seconds + a tick + the
 * time a match takes to fill among everyone (the others' p95 wait stands
 * for it, an overestimate: past max_wait_seconds the ticket is at its
 * widest rule steps); the 60 s leave room for failed proposals.
 * The check leaves out the tickets created within that limit of the last
 * arrival: once arrivals stop, the last tickets may lack players to fill a
 * match (and time out) whatever their class.
 * Also checks the tick's mark (mm.match_players.low_priority) against what
 * the simulator read when each ticket was created.  Returns false when a
 * check failed.
 */
static bool
PrintPenaltyQueue(PGconn *conn, const SimQueue *queue, double tick_interval, double epoch,
				  double run_seconds)
{
	char		now[32],
				window[32];
	char	   *ids = SimIdArray(queue->ticket_ids, queue->nticket_ids);
	char	   *penalised = SimIdArray(queue->penalised_ids, queue->npenalised_ids);
	const char *params[4];
	PGresult   *res;
	int			row;
	double		bound = NAN,
				low_max = NAN,
				others_p95 = NAN;
	long		cooling = 0,
				low_now = 0;
	long		created,
				matched,
				timed_out,
				cancelled,
				mismatched,
				in_pool,
				checked,
				checked_timed_out;
	double		checked_max;
	double		fill,
				limit;
	bool		ok = true;

	/* the whole run (and an hour before it: the queue is new) */
	snprintf(now, sizeof(now), "%.6f", epoch + run_seconds);
	snprintf(window, sizeof(window), "%.0f seconds", run_seconds + 3600);
	params[0] = window;
	params[1] = now;
	params[2] = queue->name;

	res = SimExec(conn,
				  "SELECT coalesce(s.reason, '-'), s.offences, s.players, s.cooldowns, s.sent_to_low_priority,"
				  "       s.cooling_down_now, s.low_priority_now"
				  "  FROM mm.penalty_stats($1::interval, pg_catalog.to_timestamp($2::float8)) s"
				  " WHERE s.queue OPERATOR(pg_catalog.=) $3"
				  " ORDER BY s.reason",
				  3, params, PGRES_TUPLES_OK);
	printf("\n%s: offences (mm.penalty_stats over the run)\n", queue->name);
	printf("  %-20s %8s %8s %9s %21s\n", "reason", "offences", "players", "cooldowns",
		   "sent to low priority");
	for (row = 0; row < PQntuples(res); row++)
	{
		cooling = atol(PQgetvalue(res, row, 5));
		low_now = atol(PQgetvalue(res, row, 6));
		if (strcmp(PQgetvalue(res, row, 0), "-") == 0)
			continue;
		printf("  %-20s %8s %8s %9s %21s\n", PQgetvalue(res, row, 0), PQgetvalue(res, row, 1),
			   PQgetvalue(res, row, 2), PQgetvalue(res, row, 3), PQgetvalue(res, row, 4));
	}
	PQclear(res);
	printf("  at the end: %ld players cooling down, %ld in the low-priority pool;"
		   " tickets refused (a player cooling down): %ld\n", cooling, low_now, queue->refused);

	res = SimExec(conn,
				  "SELECT w.low_priority, w.players, coalesce(w.avg_wait_seconds, 'NaN'),"
				  "       coalesce(w.p95_wait_seconds, 'NaN'), coalesce(w.max_wait_seconds, 'NaN'),"
				  "       coalesce(w.wait_bound_seconds, 'NaN')"
				  "  FROM mm.low_priority_waits($1::interval, pg_catalog.to_timestamp($2::float8)) w"
				  " WHERE w.queue OPERATOR(pg_catalog.=) $3"
				  " ORDER BY w.low_priority DESC",
				  3, params, PGRES_TUPLES_OK);
	printf("%s: waits (mm.low_priority_waits over the run: matched players, ticket created to matched)\n",
		   queue->name);
	printf("  %-20s %8s %9s %9s %9s\n", "players", "count", "avg wait", "p95 wait", "max wait");
	for (row = 0; row < PQntuples(res); row++)
	{
		bool		low = strcmp(PQgetvalue(res, row, 0), "t") == 0;

		printf("  %-20s %8s", low ? "low priority" : "others", PQgetvalue(res, row, 1));
		PrintSeconds(atof(PQgetvalue(res, row, 2)));
		PrintSeconds(atof(PQgetvalue(res, row, 3)));
		PrintSeconds(atof(PQgetvalue(res, row, 4)));
		printf("\n");
		bound = atof(PQgetvalue(res, row, 5));
		if (low)
			low_max = atof(PQgetvalue(res, row, 4));
		else
			others_p95 = atof(PQgetvalue(res, row, 3));
	}
	PQclear(res);

	/* this run's penalised tickets, as the simulator read them at creation */
	params[0] = ids;
	params[1] = penalised;
	fill = isnan(others_p95) ? 0 : others_p95;
	limit = isnan(bound) ? 0 : bound + tick_interval + fill + 60;
	snprintf(window, sizeof(window), "%.6f", limit);
	params[2] = window;
	res = SimExec(conn,
				  "WITH t AS ("
				  "  SELECT t.status, t.created_at,"
				  "         extract(epoch FROM t.matched_at OPERATOR(pg_catalog.-) t.created_at)::float8 AS wait"
				  "    FROM mm.tickets t WHERE t.id OPERATOR(pg_catalog.=) ANY ($2::bigint[])"
				  "     AND t.created_at OPERATOR(pg_catalog.<=)"
				  "         ((SELECT pg_catalog.max(a.created_at) FROM mm.tickets a"
				  "            WHERE a.id OPERATOR(pg_catalog.=) ANY ($1::bigint[]))"
				  "          OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $3::float8)))"
				  "SELECT pg_catalog.count(*),"
				  "       pg_catalog.count(*) FILTER (WHERE status OPERATOR(pg_catalog.=) 'timed_out'),"
				  "       coalesce(pg_catalog.max(wait) FILTER (WHERE status OPERATOR(pg_catalog.=) 'matched'), 'NaN')"
				  "  FROM t",
				  3, params, PGRES_TUPLES_OK);
	checked = atol(PQgetvalue(res, 0, 0));
	checked_timed_out = atol(PQgetvalue(res, 0, 1));
	checked_max = atof(PQgetvalue(res, 0, 2));
	PQclear(res);
	snprintf(window, sizeof(window), "%.6f", isnan(bound) ? 0 : bound);
	res = SimExec(conn,
				  "SELECT pg_catalog.count(*) FILTER (WHERE t.id OPERATOR(pg_catalog.=) ANY ($2::bigint[])),"
				  "       pg_catalog.count(*) FILTER (WHERE t.id OPERATOR(pg_catalog.=) ANY ($2::bigint[])"
				  "                                  AND t.status OPERATOR(pg_catalog.=) 'matched'),"
				  "       pg_catalog.count(*) FILTER (WHERE t.id OPERATOR(pg_catalog.=) ANY ($2::bigint[])"
				  "                                  AND t.status OPERATOR(pg_catalog.=) 'timed_out'),"
				  "       pg_catalog.count(*) FILTER (WHERE t.id OPERATOR(pg_catalog.=) ANY ($2::bigint[])"
				  "                                  AND t.status OPERATOR(pg_catalog.=) 'cancelled'),"
				  "       (SELECT pg_catalog.count(*) FROM mm.tickets t2"
				  "          JOIN mm.match_players mp ON mp.match_id OPERATOR(pg_catalog.=) t2.match_id"
				  "                                  AND mp.ticket_id OPERATOR(pg_catalog.=) t2.id"
				  "         WHERE t2.id OPERATOR(pg_catalog.=) ANY ($1::bigint[])"
				  "           AND t2.status OPERATOR(pg_catalog.=) 'matched'"
				  "           AND mp.low_priority OPERATOR(pg_catalog.<>)"
				  "               (t2.id OPERATOR(pg_catalog.=) ANY ($2::bigint[]))),"
				  "       (SELECT pg_catalog.count(*) FROM mm.tickets t3"
				  "          JOIN mm.matches m ON m.id OPERATOR(pg_catalog.=) t3.match_id"
				  "         WHERE t3.id OPERATOR(pg_catalog.=) ANY ($2::bigint[])"
				  "           AND t3.status OPERATOR(pg_catalog.=) 'matched'"
				  "           AND m.created_at OPERATOR(pg_catalog.<)"
				  "               (t3.created_at OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $3::float8)))"
				  "  FROM mm.tickets t WHERE t.id OPERATOR(pg_catalog.=) ANY ($1::bigint[])",
				  3, params, PGRES_TUPLES_OK);
	created = atol(PQgetvalue(res, 0, 0));
	matched = atol(PQgetvalue(res, 0, 1));
	timed_out = atol(PQgetvalue(res, 0, 2));
	cancelled = atol(PQgetvalue(res, 0, 3));
	mismatched = atol(PQgetvalue(res, 0, 4));
	in_pool = atol(PQgetvalue(res, 0, 5));
	PQclear(res);
	printf("  penalised tickets (a player in the pool when it was created): %ld, matched %ld (%ld within the pool,"
		   " %ld with anyone past max_wait_seconds), timed out %ld, cancelled %ld;"
		   " mm.match_players.low_priority %s\n", created, matched, in_pool, matched - in_pool, timed_out,
		   cancelled, mismatched == 0 ? "agrees for every matched player" : "DISAGREES");
	if (mismatched > 0)
	{
		printf("  FAILED: %ld matched players marked otherwise than their ticket was\n", mismatched);
		ok = false;
	}

	if (isnan(bound))
		printf("  no bound: the queue has no low-priority pool\n");
	else
	{
		printf("  bound: max_wait_seconds %.0f s + a tick %.0f s + a match filling among everyone"
			   " (the others' p95 wait %.1f s) = %.1f s; the longest low-priority wait ",
			   bound, tick_interval, fill, bound + tick_interval + fill);
		if (isnan(low_max))
			printf("- (none matched)\n");
		else
			printf("%.1f s\n", low_max);
		printf("  checked: the %ld penalised tickets created at least %.0f s (the bound + 60 s) before"
			   " the last arrival: longest wait ", checked, limit);
		if (isnan(checked_max))
			printf("-");
		else
			printf("%.1f s", checked_max);
		printf(", timed out %ld\n", checked_timed_out);
		if (!isnan(checked_max) && checked_max > limit)
		{
			printf("  FAILED (starved): a penalised ticket waited %.1f s > the bound + 60 s = %.0f s\n",
				   checked_max, limit);
			ok = false;
		}
		else if (checked_timed_out > 0)
		{
			printf("  FAILED (starved): %ld penalised tickets timed out\n", checked_timed_out);
			ok = false;
		}
		else
			printf("  never starves: no penalised ticket waited past the bound + 60 s = %.0f s,"
				   " none timed out\n", limit);
	}
	free(ids);
	free(penalised);
	return ok;
}

/* The penalties figures of every queue with penalties; false when a check failed. */
bool
SimPrintPenaltyFigures(PGconn *conn, SimQueue *queues, int nqueues, double tick_interval,
					   double epoch, double run_seconds)
{
	bool		ok = true;
	int			i;

	for (i = 0; i < nqueues; i++)
		if (queues[i].penalties && !PrintPenaltyQueue(conn, &queues[i], tick_interval, epoch, run_seconds))
			ok = false;
	return ok;
}

/* ------------------------------------------------------------------ chart */

#define CHART_W 760
#define CHART_H 256
#define CHART_LEFT 56
#define CHART_RIGHT 16
#define CHART_TOP 32
#define CHART_BOTTOM 36

static const char *const palette[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"
};

typedef struct Series
{
	int			n;
	double	   *x;				/* minutes since the start */
	double	   *wait;
	double	   *quality;
} Series;

/* A round step for axis ticks: 1, 2 or 5 times a power of ten. */
static double
NiceStep(double span, int ticks)
{
	double		raw = span / ticks;
	double		mag = pow(10, floor(log10(raw)));
	double		norm = raw / mag;

	if (norm <= 1)
		return mag;
	if (norm <= 2)
		return 2 * mag;
	if (norm <= 5)
		return 5 * mag;
	return 10 * mag;
}

/* Writes one line chart (one polyline per queue) as an SVG element. */
static void
WriteSvg(FILE *out, const char *title, const char *unit, Series *series, int nseries,
		 SimQueue *queues, bool quality, double xmax)
{
	double		ymax = quality ? 1.0 : 0;
	double		ymin = 0;
	double		pw = CHART_W - CHART_LEFT - CHART_RIGHT;
	double		ph = CHART_H - CHART_TOP - CHART_BOTTOM;
	double		step,
				v;
	int			s,
				i;

	if (!quality)
	{
		for (s = 0; s < nseries; s++)
		{
			for (i = 0; i < series[s].n; i++)
				if (series[s].wait[i] > ymax)
					ymax = series[s].wait[i];
			if (queues[s].published_avg_seconds > ymax)
				ymax = queues[s].published_avg_seconds;
		}
		if (ymax <= 0)
			ymax = 1;
		step = NiceStep(ymax, 5);
		ymax = ceil(ymax / step) * step;
	}
	else
	{
		/* quality lives near 1: zoom onto the range the data uses */
		ymin = 1.0;
		for (s = 0; s < nseries; s++)
			for (i = 0; i < series[s].n; i++)
				if (series[s].quality[i] < ymin)
					ymin = series[s].quality[i];
		ymin = floor(ymin * 10) / 10;
		if (ymin > 0.9)
			ymin = 0.9;
		step = NiceStep(ymax - ymin, 5);
	}
	if (xmax <= 0)
		xmax = 1;

	fprintf(out, "<h2>%s</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
			" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n",
			title, CHART_W, CHART_H, CHART_W, CHART_H);
	fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
			CHART_LEFT, CHART_TOP, pw, ph);
	for (v = ymin; v <= ymax + step / 1000; v += step)
	{
		double		y = CHART_TOP + ph - (v - ymin) / (ymax - ymin) * ph;

		fprintf(out, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>"
				"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
				CHART_LEFT, CHART_LEFT + pw, y, y, CHART_LEFT - 4, y + 4, round(v * 100) / 100);
	}
	step = NiceStep(xmax, 8);
	for (v = 0; v <= xmax + step / 1000; v += step)
	{
		double		x = CHART_LEFT + v / xmax * pw;

		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
				x, CHART_TOP + (int) ph + 14, v);
	}
	fprintf(out, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">minutes since the start (each point: the tickets matched in one window)</text>\n",
			CHART_LEFT + pw / 2, CHART_H - 4);
	fprintf(out, "<text x=\"12\" y=\"%.0f\" transform=\"rotate(-90 12 %.0f)\" text-anchor=\"middle\">%s</text>\n",
			CHART_TOP + ph / 2, CHART_TOP + ph / 2, unit);
	for (s = 0; s < nseries; s++)
	{
		const char *color = palette[s % (sizeof(palette) / sizeof(palette[0]))];

		if (series[s].n == 0)
			continue;
		fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" points=\"", color);
		for (i = 0; i < series[s].n; i++)
		{
			double		y = quality ? series[s].quality[i] : series[s].wait[i];

			fprintf(out, "%.1f,%.1f ", CHART_LEFT + series[s].x[i] / xmax * pw,
					CHART_TOP + ph - (y - ymin) / (ymax - ymin) * ph);
		}
		fprintf(out, "\"/>\n");
		/* FlexMatch's published average time to match: a dashed line of the queue's colour */
		if (!quality && queues[s].published_avg_seconds >= 0)
		{
			double		y = CHART_TOP + ph - (queues[s].published_avg_seconds - ymin) / (ymax - ymin) * ph;

			fprintf(out, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\""
					" stroke-width=\"1.4\" stroke-dasharray=\"6 4\"/>"
					"<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">FlexMatch %.1f s</text>\n",
					CHART_LEFT, CHART_LEFT + pw, y, y, color,
					CHART_LEFT + pw - 4 - (double) (s % 4) * 110, y - 3, color,
					queues[s].published_avg_seconds);
		}
		/* the legend sits in the top margin, above the plot */
		fprintf(out, "<rect x=\"%.0f\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
				"<text x=\"%.0f\" y=\"%d\">%s</text>\n",
				CHART_LEFT + (double) (s % 4) * 170, 4 + (s / 4) * 13, color,
				CHART_LEFT + 14 + (double) (s % 4) * 170, 13 + (s / 4) * 13,
				queues[s].name);
	}
	/* the dashed lines' legend entry, after the queues' */
	for (i = 0; i < nseries && !quality; i++)
		if (queues[i].published_avg_seconds >= 0)
		{
			fprintf(out, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%d\" y2=\"%d\" stroke=\"#555\" stroke-width=\"1.4\""
					" stroke-dasharray=\"6 4\"/><text x=\"%.0f\" y=\"%d\">FlexMatch's published average</text>\n",
					CHART_LEFT + (double) (nseries % 4) * 170, CHART_LEFT + (double) (nseries % 4) * 170 + 18,
					9 + (nseries / 4) * 13, 9 + (nseries / 4) * 13,
					CHART_LEFT + 22 + (double) (nseries % 4) * 170, 13 + (nseries / 4) * 13);
			break;
		}
	fprintf(out, "</svg>\n");
}

/*
 * Writes a self-contained HTML page: average time to match and average match
 * quality of the tickets matched in each time bucket, one line per queue,
 * and the final figures as a table.
 */
void
SimWriteChart(PGconn *conn, SimQueue *queues, int nqueues, double epoch,
			  double run_seconds, const char *path)
{
	Series	   *series = calloc(nqueues, sizeof(Series));
	FILE	   *out;
	bool		published = false;
	const char *title;
	double		span = run_seconds;
	double		bucket;
	int			q,
				i;

	if (series == NULL)
		SimFatal("out of memory");

	/* the span of the run: the last ticket matched */
	for (q = 0; q < nqueues; q++)
	{
		char	   *ids = SimIdArray(queues[q].ticket_ids, queues[q].nticket_ids);
		char		epoch_text[32];
		const char *params[2] = {ids, epoch_text};
		PGresult   *res;

		snprintf(epoch_text, sizeof(epoch_text), "%.6f", epoch);
		res = SimExec(conn,
					  "SELECT coalesce(pg_catalog.max(extract(epoch FROM matched_at)::float8"
					  "                 OPERATOR(pg_catalog.-) $2::float8), 0)"
					  "  FROM mm.tickets WHERE id OPERATOR(pg_catalog.=) ANY ($1::bigint[])",
					  2, params, PGRES_TUPLES_OK);
		if (atof(PQgetvalue(res, 0, 0)) > span)
			span = atof(PQgetvalue(res, 0, 0));
		PQclear(res);
		free(ids);
	}
	/* about 40 points a line, each a round number of seconds */
	{
		static const double round_buckets[] = {5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600};

		for (i = 0; i < (int) lengthof(round_buckets); i++)
		{
			bucket = round_buckets[i];
			if (span / bucket <= 40)
				break;
		}
	}

	for (q = 0; q < nqueues; q++)
	{
		char	   *ids = SimIdArray(queues[q].ticket_ids, queues[q].nticket_ids);
		char		epoch_text[32],
					bucket_text[32];
		const char *params[3] = {ids, epoch_text, bucket_text};
		PGresult   *res;
		int			n;

		snprintf(epoch_text, sizeof(epoch_text), "%.6f", epoch);
		snprintf(bucket_text, sizeof(bucket_text), "%.0f", bucket);
		res = SimExec(conn,
					  "SELECT pg_catalog.floor((extract(epoch FROM t.matched_at)::float8"
					  "                         OPERATOR(pg_catalog.-) $2::float8) OPERATOR(pg_catalog./) $3::float8) AS b,"
					  "       pg_catalog.avg(extract(epoch FROM t.matched_at OPERATOR(pg_catalog.-) t.created_at))::float8,"
					  "       pg_catalog.avg(m.quality)::float8"
					  "  FROM mm.tickets t JOIN mm.matches m ON m.id OPERATOR(pg_catalog.=) t.match_id"
					  " WHERE t.id OPERATOR(pg_catalog.=) ANY ($1::bigint[])"
					  "   AND t.status OPERATOR(pg_catalog.=) 'matched'"
					  " GROUP BY 1 ORDER BY 1",
					  3, params, PGRES_TUPLES_OK);
		n = PQntuples(res);
		series[q].n = n;
		series[q].x = malloc(sizeof(double) * (n + 1));
		series[q].wait = malloc(sizeof(double) * (n + 1));
		series[q].quality = malloc(sizeof(double) * (n + 1));
		if (!series[q].x || !series[q].wait || !series[q].quality)
			SimFatal("out of memory");
		for (i = 0; i < n; i++)
		{
			/* plotted at the middle of its bucket */
			series[q].x[i] = (atof(PQgetvalue(res, i, 0)) + 0.5) * bucket / 60.0;
			series[q].wait[i] = atof(PQgetvalue(res, i, 1));
			series[q].quality[i] = atof(PQgetvalue(res, i, 2));
		}
		PQclear(res);
		free(ids);
	}

	for (q = 0; q < nqueues; q++)
		if (queues[q].published_avg_seconds >= 0 || queues[q].published_completed >= 0)
			published = true;
	/* what the page shows, in its title: the replay, or a run of its own */
	if (published)
		title = "FlexMatch's benchmark replayed in simulated time, against FlexMatch's published times";
	else if (epoch == SIMULATED_EPOCH)
		title = "Matchmaking simulation in simulated time";
	else
		title = "Live matchmaking in real time (pg_cron ticks every queue once a second)";

	out = fopen(path, "w");
	if (out == NULL)
		SimFatal("cannot write %s", path);
	fprintf(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n"
			"<style>body{font-family:sans-serif;margin:2em;color:#222}"
			"table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
			"td:first-child,th:first-child{text-align:left}</style></head><body>\n"
			"<h1>%s</h1>\n<p>Queues:",
			title, title);
	for (q = 0; q < nqueues; q++)
		fprintf(out, "%s %s", q > 0 ? "," : "", queues[q].name);
	fprintf(out, ". Each point: the tickets matched in a %.0f-second window, plotted at the middle of the window%s.</p>\n",
			bucket, published ? "; a dashed line: FlexMatch's published average time to match of the queue's rule set" : "");
	if (published)
	{
		if (report_acceptance_timeout > 0)
			fprintf(out, "<p><b>Not like for like:</b> here every player accepts a proposed match with probability %.2f"
					" (within %.0f s), so a match of n players is accepted by all of them %.2f<sup>n</sup> of the time"
					" (%.0f%% for 10 players); FlexMatch's published figures (acceptance 0.9, 10 s) fit about 0.9 per match."
					" Our times include the answers and the proposals that failed before; fewer of our tickets complete."
					" See docs/demo-and-simulator.md.</p>\n",
					report_accept_rate, report_acceptance_timeout, report_accept_rate,
					100 * pow(report_accept_rate, 10));
		else if (report_acceptance_timeout == 0)
			fprintf(out, "<p><b>Not like for like:</b> this run has no acceptance step; FlexMatch's published run had one"
					" (0.9, 10 s), and whether its times include the answers is not published.</p>\n");
	}
	/* the axis ends with the last window */
	span = ceil(span / bucket) * bucket;
	WriteSvg(out, published ? "Time to match: ours (lines) and FlexMatch's published average (dashed)" : "Time to match",
			 "average seconds in the queue", series, nqueues, queues, false, span / 60.0);
	WriteSvg(out, published ? "Match quality (ours; FlexMatch published none)" : "Match quality",
			 "average quality (0..1)", series, nqueues, queues, true, span / 60.0);
	fprintf(out, "<h2>Per queue</h2>\n<table><tr><th>queue</th><th>tickets</th><th>completed</th>"
			"<th>failed</th><th>cancelled or searching</th><th>avg wait (s)</th><th>p95 wait (s)</th>"
			"<th>matches</th><th>quality</th><th>proposals not accepted</th>%s</tr>\n",
			published ? "<th>FlexMatch published: completed / failed</th><th>FlexMatch published: avg wait (s)</th>" : "");
	for (q = 0; q < nqueues; q++)
	{
		SimQueueFigures f;

		SimQueueFiguresLoad(conn, &queues[q], &f);
		fprintf(out, "<tr><td>%s</td><td>%d</td><td>%ld</td><td>%ld</td><td>%ld</td>"
				"<td>%.1f</td><td>%.1f</td><td>%ld</td><td>%.3f</td>",
				queues[q].name, queues[q].nticket_ids, f.completed, f.failed,
				f.cancelled + f.searching, f.avg_wait, f.p95_wait, f.matches, f.avg_quality);
		if (f.proposals > 0)
			fprintf(out, "<td>%ld of %ld</td>", f.proposals_failed, f.proposals);
		else
			fprintf(out, "<td>-</td>");
		if (published)
		{
			if (queues[q].published_completed >= 0)
				fprintf(out, "<td>%.0f / %.0f</td>", queues[q].published_completed, queues[q].published_failed);
			else
				fprintf(out, "<td>-</td>");
			if (queues[q].published_avg_seconds >= 0)
				fprintf(out, "<td>%.1f</td>", queues[q].published_avg_seconds);
			else
				fprintf(out, "<td>-</td>");
		}
		fprintf(out, "</tr>\n");
	}
	fprintf(out, "</table>\n</body></html>\n");
	fclose(out);
	for (q = 0; q < nqueues; q++)
	{
		free(series[q].x);
		free(series[q].wait);
		free(series[q].quality);
	}
	free(series);
	printf("chart: %s\n", path);
}
