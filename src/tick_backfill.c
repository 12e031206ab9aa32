/*
 * tick_backfill.c
 *	  Serving the open backfill requests of a queue's live matches, before
 *	  the search forms new matches.
 *
 * Per request, oldest first: the match's players still in it (with the
 * team each plays on), the searching tickets that may join (not the new
 * tickets of players who left the match), and MmSearchBackfill
 * (match_search.c) picks tickets that satisfy the queue's rules together
 * with the players in the match.  The chosen tickets join the match and
 * end matched; their players are held by the live match.  A request the
 * queue's current teams cannot serve is cancelled.  In a role queue the
 * open slots ask for the leavers' roles (OpenSeats), and only a ticket
 * whose players can take them joins.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "events.h"
#include "player_sources.h"
#include "sql_arrays.h"
#include "ticket_parse.h"
#include "tick_internal.h"

/* Whether one of a ticket's players is the given one. */
static bool
TicketHasPlayer(const MmTicket *ticket, const char *player_id)
{
	for (int p = 0; p < ticket->nplayers; p++)
		if (strcmp(ticket->player_ids[p], player_id) == 0)
			return true;
	return false;
}

/* The index of a role name (a text datum), -1 when the queue has no such role. */
static int
RoleOf(const MmRolesConfig *roles, Datum name)
{
	text	   *t = DatumGetTextPP(name);

	return MmRoleIndex(roles, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

/*
 * A role queue's open seats (groups x MM_MAX_ROLES): per team, the
 * composition that holds the players still in the match and gives back
 * most of the leavers' roles, less those players; cut down to the slots the
 * request asks for, other roles than the leavers' going first.  False when
 * a player of the match has no role (it formed before the queue had roles):
 * then the backfill does without.
 */
static bool
OpenSeats(const MmQueueConfig *config, const MmTicket *members, int nmembers,
		  const int *member_team, const int *member_role, const Datum *leaver_team,
		  const Datum *leaver_role, int nleft, const int32 *slots, int *seats)
{
	const MmRolesConfig *roles = config->roles;
	int			occupied[MM_MAX_TEAMS * MM_MAX_ROLES];
	int			left[MM_MAX_TEAMS * MM_MAX_ROLES];
	int			p = 0;

	memset(occupied, 0, sizeof(int) * roles->ngroups * MM_MAX_ROLES);
	memset(left, 0, sizeof(int) * roles->ngroups * MM_MAX_ROLES);
	memset(seats, 0, sizeof(int) * roles->ngroups * MM_MAX_ROLES);
	for (int k = 0; k < nmembers; k++)
		for (int q = 0; q < members[k].nplayers; q++, p++)
		{
			if (member_role[p] < 0)
				return false;
			occupied[Max(member_team[k], 0) * MM_MAX_ROLES + member_role[p]]++;
		}
	for (int k = 0; k < nleft; k++)
	{
		int			r = RoleOf(roles, leaver_role[k]);
		int			g = 0;

		if (config->nteams > 0)
		{
			char	   *name = TextDatumGetCString(leaver_team[k]);

			for (g = 0; g < config->nteams && strcmp(config->teams[g].name, name) != 0; g++)
				;
		}
		if (r >= 0 && g < roles->ngroups)
			left[g * MM_MAX_ROLES + r]++;
	}
	for (int g = 0; g < roles->ngroups; g++)
	{
		int		   *open = &seats[g * MM_MAX_ROLES];
		int			best = -1,
					best_score = -1,
					total = 0;

		for (int c = 0; c < roles->ncompositions[g]; c++)
		{
			const int  *s = roles->compositions[g][c].seats;
			int			score = 0;
			int			r;

			for (r = 0; r < roles->nroles && s[r] >= occupied[g * MM_MAX_ROLES + r]; r++)
				score += Min(s[r] - occupied[g * MM_MAX_ROLES + r], left[g * MM_MAX_ROLES + r]);
			if (r == roles->nroles && score > best_score)
			{
				best = c;
				best_score = score;
			}
		}
		if (best < 0)
			continue;
		for (int r = 0; r < roles->nroles; r++)
		{
			open[r] = roles->compositions[g][best].seats[r] - occupied[g * MM_MAX_ROLES + r];
			total += open[r];
		}
		while (total > Max(slots[g], 0))
		{
			int			r;

			for (r = 0; r < roles->nroles && open[r] <= left[g * MM_MAX_ROLES + r]; r++)
				;
			if (r == roles->nroles)
				for (r = 0; open[r] == 0; r++)
					;
			open[r]--;
			total--;
		}
	}
	return true;
}

/*
 * Writes one backfill: the chosen candidate tickets join the match (its
 * match_players rows, the tickets moved to tickets_ended as matched with
 * the match's id and their team; their players stay held by the live
 * match), the request's open slots shrink (filled when none is left), and
 * backfill_filled is announced.  slots is updated in place.
 */
static void
WriteBackfill(MmTickQueue *q, int64 request_id, int64 match_id, int32 *slots,
			  const MmTicket *candidates, const int *candidate_index,
			  const MmBackfillResult *res)
{
	const MmQueueConfig *config = q->config;
	int			nteams = config->nteams > 0 ? config->nteams : 1;
	int64	   *mp_match = palloc(sizeof(int64) * res->nplayers);
	int64	   *mp_ticket = palloc(sizeof(int64) * res->nplayers);
	const char **mp_player = palloc(sizeof(char *) * res->nplayers);
	const char **mp_team = palloc(sizeof(char *) * res->nplayers);
	const char **mp_role = palloc0(sizeof(char *) * res->nplayers);
	bool	   *mp_autofilled = palloc0(sizeof(bool) * res->nplayers);
	const char **autofilled_ids = palloc(sizeof(char *) * res->nplayers);
	int			nautofilled = 0;
	bool	   *mp_low_priority = palloc0(sizeof(bool) * res->nplayers);
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', 'n', 'n', 'n'};
	int		   *t_index = palloc(sizeof(int) * res->ntickets);
	int64	   *t_match = palloc(sizeof(int64) * res->ntickets);
	int64	   *t_ids = palloc(sizeof(int64) * res->ntickets);
	const char **t_team = palloc(sizeof(char *) * res->ntickets);
	StringInfoData slots_json;
	StringInfoData details;
	Datum		values[8];
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
			if (res->player_role != NULL)
			{
				mp_role[np] = config->roles->names[res->player_role[np]];
				mp_autofilled[np] = res->player_autofilled[np];
				if (mp_autofilled[np])
					autofilled_ids[nautofilled++] = tk->player_ids[p];
			}
			/* penalised past the pool's bound: it may join */
			mp_low_priority[np] = tk->penalised;
			mp_team[np++] = team_name;
		}
	}
	values[0] = CStringGetTextDatum(q->queue);
	values[1] = PointerGetDatum(MmBuildInt8Array(mp_match, np));
	values[2] = PointerGetDatum(MmBuildTextArray(mp_player, np));
	values[3] = PointerGetDatum(MmBuildInt8Array(mp_ticket, np));
	values[4] = PointerGetDatum(MmBuildTextArray(mp_team, np));
	if (res->player_role != NULL)
	{
		values[5] = PointerGetDatum(MmBuildTextArray(mp_role, np));
		values[6] = PointerGetDatum(MmBuildBoolArray(mp_autofilled, np));
		nulls[5] = nulls[6] = ' ';
	}
	if (config->low_priority_max_wait >= 0)
	{
		values[7] = PointerGetDatum(MmBuildBoolArray(mp_low_priority, np));
		nulls[7] = ' ';
	}
	rc = SPI_execute_plan(MmTickPlan.insert_players, values, nulls, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_INSERT || SPI_processed != (uint64) np)
		elog(ERROR, "inserting backfilled match players failed: %s", SPI_result_code_string(rc));
	if (nautofilled > 0 && config->roles->protect_games > 0)
	{
		values[1] = PointerGetDatum(MmBuildTextArray(autofilled_ids, nautofilled));
		values[2] = Int32GetDatum(config->roles->protect_games);
		values[3] = TimestampTzGetDatum(q->now);
		MmTickRunWrite(q, MmTickPlan.protect_autofilled, values, SPI_OK_INSERT, nautofilled,
					   "protecting autofilled players");
	}
	MmTickMoveMatchedTickets(q, res->ntickets, t_index, t_ids, t_match, t_team);

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
	values[3] = TimestampTzGetDatum(q->now);
	values[4] = CStringGetTextDatum(q->queue);
	MmTickRunWrite(q, MmTickPlan.update_backfill, values, SPI_OK_UPDATE, 1, "updating a backfill request");

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
		if (mp_role[p] != NULL)
		{
			appendStringInfoString(&details, ", \"role\": ");
			escape_json(&details, mp_role[p]);
			appendStringInfo(&details, ", \"autofilled\": %s", mp_autofilled[p] ? "true" : "false");
		}
		appendStringInfoChar(&details, '}');
	}
	/* too many to list: the client reads them from mm.match_players */
	appendStringInfo(&details, "]%s}", p < np ? ", \"truncated\": true" : "");
	values[0] = Int64GetDatum(match_id);
	values[1] = CStringGetTextDatum(details.data);
	values[2] = CStringGetTextDatum(q->queue);
	rc = SPI_execute_plan(MmTickPlan.notify_match, values, NULL, false, 0);
	MmTickBackToQueue(q);
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
CancelBackfill(MmTickQueue *q, int64 request_id, int64 match_id)
{
	Datum		values[4];
	int			rc;

	values[0] = Int64GetDatum(request_id);
	values[1] = Int64GetDatum(match_id);
	values[2] = TimestampTzGetDatum(q->now);
	values[3] = CStringGetTextDatum(q->queue);
	rc = SPI_execute_plan(MmTickPlan.cancel_backfill, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "cancelling backfill request " INT64_FORMAT " failed: %s", request_id,
			 SPI_result_code_string(rc));
	SPI_freetuptable(SPI_tuptable);
}

/* The open backfill requests of a queue, as ReadBackfillRequests read them. */
typedef struct BackfillRequests
{
	int			n;
	int64	   *request_ids;
	int64	   *match_ids;
	char	  **match_regions;	/* NULL: the match has no region */
	int32	  **slots;			/* open slots per team, updated as they fill */
	Datum	  **leavers;		/* the players who left, text datums */
	int		   *nleavers;
	/* a role queue's only: each leaver's team and role */
	Datum	  **leaver_teams;
	Datum	  **leaver_roles;
	int		   *nleft_roles;
} BackfillRequests;

/*
 * Reads the queue's open backfill requests, oldest first, into reqs; false
 * when there is none.
 */
static bool
ReadBackfillRequests(MmTickQueue *q, BackfillRequests *reqs)
{
	const MmQueueConfig *config = q->config;
	int			nteams = config->nteams > 0 ? config->nteams : 1;
	const char **team_names = palloc(sizeof(char *) * nteams);
	Datum		values[3];
	int			n,
				r,
				t,
				rc;

	for (t = 0; t < nteams; t++)
		team_names[t] = config->nteams > 0 ? config->teams[t].name : "players";
	values[0] = CStringGetTextDatum(q->queue);
	values[1] = PointerGetDatum(MmBuildTextArray(team_names, nteams));
	values[2] = TimestampTzGetDatum(q->now);
	rc = SPI_execute_plan(MmTickPlan.load_backfills, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading backfill requests failed: %s", SPI_result_code_string(rc));
	n = (int) SPI_processed;
	memset(reqs, 0, sizeof(*reqs));
	reqs->n = n;
	if (n == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		return false;
	}
	reqs->request_ids = palloc(sizeof(int64) * n);
	reqs->match_ids = palloc(sizeof(int64) * n);
	reqs->match_regions = palloc(sizeof(char *) * n);
	reqs->slots = palloc(sizeof(int32 *) * n);
	reqs->leavers = palloc(sizeof(Datum *) * n);
	reqs->nleavers = palloc(sizeof(int) * n);
	if (config->roles != NULL)
	{
		reqs->leaver_teams = palloc(sizeof(Datum *) * n);
		reqs->leaver_roles = palloc(sizeof(Datum *) * n);
		reqs->nleft_roles = palloc(sizeof(int) * n);
	}
	for (r = 0; r < n; r++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		region;
		int			count;

		reqs->request_ids[r] = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		reqs->match_ids[r] = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
		region = SPI_getbinval(tuple, desc, 3, &isnull);
		reqs->match_regions[r] = isnull ? NULL : TextDatumGetCString(region);
		reqs->slots[r] = MmInt4Array(DatumGetArrayTypeP(SPI_getbinval(tuple, desc, 4, &isnull)),
									 "open_slots", nteams, &count);
		if (count != nteams)
			elog(ERROR, "backfill request " INT64_FORMAT " has %d open slot counts for %d teams",
				 reqs->request_ids[r], count, nteams);
		/*
		 * Copies: the elements point into their array, which an untoasted
		 * value leaves in the SPI result freed below.
		 */
		deconstruct_array(DatumGetArrayTypePCopy(SPI_getbinval(tuple, desc, 5, &isnull)), TEXTOID, -1,
						  false, TYPALIGN_INT, &reqs->leavers[r], NULL, &reqs->nleavers[r]);
		if (config->roles != NULL)
		{
			int			nteams_left,
						nroles_left;
			bool	   *team_nulls;

			/* a free-for-all's leavers have no team (NULLs, not read) */
			deconstruct_array(DatumGetArrayTypePCopy(SPI_getbinval(tuple, desc, 6, &isnull)), TEXTOID, -1,
							  false, TYPALIGN_INT, &reqs->leaver_teams[r], &team_nulls, &nteams_left);
			deconstruct_array(DatumGetArrayTypePCopy(SPI_getbinval(tuple, desc, 7, &isnull)), TEXTOID, -1,
							  false, TYPALIGN_INT, &reqs->leaver_roles[r], NULL, &nroles_left);
			if (nteams_left != nroles_left)
				elog(ERROR, "backfill request " INT64_FORMAT " lists %d leaver teams for %d roles",
					 reqs->request_ids[r], nteams_left, nroles_left);
			reqs->nleft_roles[r] = nroles_left;
		}
	}
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/*
 * The loaded tickets that may join request r's match: not taken by an
 * earlier request, not in the low-priority pool (its tickets do not join a
 * normal match), not a leaver's new ticket.  Returns how many, with each
 * one's position among the loaded tickets in candidate_index.
 */
static int
GatherCandidates(const MmTickQueue *q, const BackfillRequests *reqs, int r, const bool *taken,
				 MmTicket *candidates, int *candidate_index)
{
	int			ncandidates = 0;
	int			nleavers = reqs->nleavers[r];
	/* the leavers' ids as strings once, not once per ticket */
	char	  **leavers = palloc(sizeof(char *) * Max(nleavers, 1));

	for (int k = 0; k < nleavers; k++)
		leavers[k] = TextDatumGetCString(reqs->leavers[r][k]);
	for (int i = 0; i < q->ntickets; i++)
	{
		const MmTicket *ticket = &q->tickets[i];
		int			k;

		if ((i & 4095) == 4095)
			CHECK_FOR_INTERRUPTS();
		if (taken[i] || ticket->low_priority)
			continue;
		for (k = 0; k < nleavers && !TicketHasPlayer(ticket, leavers[k]); k++)
			;
		if (k < nleavers)
			continue;
		candidates[ncandidates] = *ticket;
		candidate_index[ncandidates++] = i;
	}
	for (int k = 0; k < nleavers; k++)
		pfree(leavers[k]);
	pfree(leavers);
	return ncandidates;
}

/* The tickets still in a live match, as ReadMatchMembers read them. */
typedef struct BackfillMembers
{
	MmTicket   *tickets;
	int			n;
	int		   *team;			/* per ticket: the team's index, -1 for none */
	int		   *role;			/* a role queue's, per player: the role's index, -1 for none */
	/* a player on a team the queue no longer has (or none where it has teams) */
	bool		unservable;
} BackfillMembers;

/*
 * Reads and parses the tickets still in the match match_id, with their
 * teams and, in a role queue, their players' roles.
 */
static void
ReadMatchMembers(MmTickQueue *q, int64 match_id, BackfillMembers *m)
{
	const MmQueueConfig *config = q->config;
	MmRuleContext *context = &q->rules;
	MmPlayerInput players[MM_MAX_MATCH_SIZE];
	Jsonb	  **member_players;
	int			nroles = 0;
	Datum		values[2];
	int			n,
				i,
				rc;

	values[0] = Int64GetDatum(match_id);
	values[1] = CStringGetTextDatum(q->queue);
	rc = SPI_execute_plan(MmTickPlan.load_members, values, NULL, false, 0);
	MmTickBackToQueue(q);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the players of match " INT64_FORMAT " failed: %s",
			 match_id, SPI_result_code_string(rc));
	n = (int) SPI_processed;
	m->n = n;
	m->unservable = false;
	m->tickets = palloc(sizeof(MmTicket) * Max(n, 1));
	m->team = palloc(sizeof(int) * Max(n, 1));
	m->role = config->roles != NULL ? palloc(sizeof(int) * MM_MAX_MATCH_SIZE) : NULL;
	member_players = palloc(sizeof(Jsonb *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		TimestampTz created_at;
		Datum		team;

		m->tickets[i].id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		created_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &isnull));
		m->tickets[i].age_seconds = Max(0.0, ((double) q->now - (double) created_at) / USECS_PER_SEC);
		member_players[i] = DatumGetJsonbPCopy(SPI_getbinval(tuple, desc, 3, &isnull));
		if (!MmConfigReadsPlayerSources(config))
			MmParseTicket(context, &m->tickets[i], member_players[i], players, NULL);
		team = SPI_getbinval(tuple, desc, 4, &isnull);
		m->team[i] = -1;
		if (!isnull)
		{
			char	   *name = TextDatumGetCString(team);

			for (int t = 0; t < config->nteams; t++)
				if (strcmp(config->teams[t].name, name) == 0)
					m->team[i] = t;
		}

		/*
		 * The queue's teams changed since the match formed: a team it no
		 * longer has, a team in what is now a free-for-all, or no team where
		 * the queue now has teams.
		 */
		if (isnull ? config->nteams > 0 : m->team[i] < 0)
			m->unservable = true;
		if (m->role != NULL)
		{
			Datum	   *roles;
			bool	   *role_nulls;
			int			count;

			/* a copy, as ReadBackfillRequests copies the leavers */
			deconstruct_array(DatumGetArrayTypePCopy(SPI_getbinval(tuple, desc, 5, &isnull)), TEXTOID, -1,
							  false, TYPALIGN_INT, &roles, &role_nulls, &count);
			for (int k = 0; k < count && nroles < MM_MAX_MATCH_SIZE; k++)
				m->role[nroles++] = role_nulls[k] ? -1 : RoleOf(config->roles, roles[k]);
		}
	}
	SPI_freetuptable(SPI_tuptable);
	if (!m->unservable && MmConfigReadsPlayerSources(config))
		MmParseTicketsWithSources(context, q->queue, m->tickets, member_players, n, true);
}

/*
 * Serves request r from the candidates: cancels it when the queue's teams
 * no longer fit its match, else writes the tickets MmSearchBackfill picks
 * (none when the fill would move the match to another region) and marks
 * them taken.
 */
static void
ServeBackfillRequest(MmTickQueue *q, const BackfillRequests *reqs, int r,
					 MmTicket *candidates, int *candidate_index, int ncandidates, bool *taken)
{
	const MmQueueConfig *config = q->config;
	MmRuleContext *context = &q->rules;
	BackfillMembers members;
	int		   *open_seats = NULL;
	MmBackfillResult *res;

	ReadMatchMembers(q, reqs->match_ids[r], &members);
	if (members.unservable)
	{
		CancelBackfill(q, reqs->request_ids[r], reqs->match_ids[r]);
		return;
	}
	/* everybody left: nothing to fill around */
	if (members.n == 0)
		return;
	if (members.role != NULL)
	{
		open_seats = palloc(sizeof(int) * config->roles->ngroups * MM_MAX_ROLES);
		if (!OpenSeats(config, members.tickets, members.n, members.team, members.role,
					   reqs->leaver_teams[r], reqs->leaver_roles[r], reqs->nleft_roles[r],
					   reqs->slots[r], open_seats))
			open_seats = NULL;
	}
	res = MmSearchBackfill(context, members.tickets, members.n, members.team, reqs->slots[r],
						   candidates, ncandidates, open_seats, members.role);
	if (res->ntickets == 0)
		return;
	if (reqs->match_regions[r] != NULL && res->region >= 0 &&
		strcmp(context->regions[res->region], reqs->match_regions[r]) != 0)
		return;
	WriteBackfill(q, reqs->request_ids[r], reqs->match_ids[r], reqs->slots[r], candidates,
				  candidate_index, res);
	for (int i = 0; i < res->ntickets; i++)
		taken[candidate_index[res->tickets[i]]] = true;
}

/*
 * Removes the taken tickets from tickets[] and ctids[] (and the raw players
 * and creation times kept for a match function), their order kept.
 */
static void
KeepUntakenTickets(MmTickQueue *q, const bool *taken)
{
	int			i,
				t;

	for (i = 0, t = 0; i < q->ntickets; i++)
	{
		if (taken[i])
			continue;
		q->tickets[t] = q->tickets[i];
		if (q->raw_players)
		{
			q->raw_players[t] = q->raw_players[i];
			q->raw_created[t] = q->raw_created[i];
		}
		q->ctids[t++] = q->ctids[i];
	}
	q->ntickets = t;
}

/*
 * Serves the queue's open backfill requests, oldest first, from the loaded
 * searching tickets, before the search forms new matches
 * (MmSearchBackfill: the chosen tickets satisfy the queue's rules together
 * with the players still in the match).  A fill that would move a match to
 * another region is not made.  The tickets placed are removed from tickets[]
 * and ctids[] (their order kept, and so are the raw players and creation
 * times kept for a match function), and q->ntickets shrinks.
 */
void
MmTickServeBackfills(MmTickQueue *q)
{
	BackfillRequests reqs;
	MmTicket   *candidates;
	int		   *candidate_index;
	bool	   *taken;

	if (q->ntickets == 0 || !ReadBackfillRequests(q, &reqs))
		return;
	candidates = palloc(sizeof(MmTicket) * q->ntickets);
	candidate_index = palloc(sizeof(int) * q->ntickets);
	taken = palloc0(sizeof(bool) * q->ntickets);
	for (int r = 0; r < reqs.n; r++)
	{
		int			ncandidates;

		CHECK_FOR_INTERRUPTS();
		ncandidates = GatherCandidates(q, &reqs, r, taken, candidates, candidate_index);
		if (ncandidates == 0)
			break;
		ServeBackfillRequest(q, &reqs, r, candidates, candidate_index, ncandidates, taken);
	}
	KeepUntakenTickets(q, taken);
}
