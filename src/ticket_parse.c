/*
 * ticket_parse.c
 *	  Reads a stored ticket's players into the rules' values: the tick's
 *	  load, backfill and mm.explain_ticket share it.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "player_sources.h"
#include "queue_config.h"
#include "ticket_parse.h"

/* Reports a ticket whose players jsonb the tick cannot read. */
static void
BadPlayers(int64 ticket_id, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("ticket " INT64_FORMAT " has invalid players: %s", ticket_id, why),
			 errhint("Tickets are validated on INSERT; was the validation trigger disabled?")));
}

/*
 * A role queue's ticket: each player's rank of every role (the "roles"
 * list, most preferred first; "fill" ranks every role not listed before
 * it; no list: every role first) and the roles they may take now, those
 * ranked, or every role once the ticket waited autofill.after_seconds and
 * the player is not protected.  Roles of other queues (a ticket searching
 * in several) are skipped.
 */
static void
ParseRoles(MmRuleContext *context, const MmRolesConfig *roles, MmTicket *ticket,
		   const MmPlayerInput *players)
{
	int			n = ticket->nplayers;
	bool		autofill_now = roles->autofill &&
		ticket->age_seconds >= roles->autofill_after_seconds;

	ticket->role_rank = MmRuleAlloc(context, sizeof(uint8) * n * MM_MAX_ROLES);
	ticket->role_accept = MmRuleAlloc(context, sizeof(MmRoleMask) * n);
	for (int i = 0; i < n; i++)
	{
		uint8	   *rank = &ticket->role_rank[i * MM_MAX_ROLES];
		MmRoleMask	listed = 0;

		memset(rank, MM_ROLE_UNLISTED, MM_MAX_ROLES);
		if (players[i].roles == NULL)
		{
			memset(rank, 0, roles->nroles);
			listed = MmAllRoles(roles);
		}
		else
		{
			int			count = JsonContainerSize(players[i].roles);
			int			position = 0;

			for (int k = 0; k < count; k++)
			{
				JsonbValue *v = getIthJsonbValueFromContainer(players[i].roles, k);
				int			r;

				if (v == NULL || v->type != jbvString)
					continue;
				if (v->val.string.len == 4 && memcmp(v->val.string.val, "fill", 4) == 0)
				{
					for (r = 0; r < roles->nroles; r++)
						if (rank[r] == MM_ROLE_UNLISTED)
							rank[r] = position;
					listed = MmAllRoles(roles);
					break;
				}
				r = MmRoleIndex(roles, v->val.string.val, v->val.string.len);
				if (r < 0 || rank[r] != MM_ROLE_UNLISTED)
					continue;
				rank[r] = position++;
				listed |= 1 << r;
			}
		}
		ticket->role_accept[i] = listed;
		if (autofill_now && !players[i].autofill_protected)
			ticket->role_accept[i] = MmAllRoles(roles);
	}
}

/*
 * Parses a ticket's players jsonb into MmPlayerInput (the containers point
 * into the jsonb, which must outlive the use of players) and extracts the
 * rule values, with each player's server-side attributes and stored rating
 * when the queue's rules read them (sources, else NULL).  Player ids are
 * copied.  The ticket's pieces are carved from the rule context's arena
 * (MmRuleAlloc): they live as long as the rule context.
 */
void
MmParseTicket(MmRuleContext *context, MmTicket *ticket, Jsonb *players_jsonb,
			MmPlayerInput *players, const MmPlayerSources *sources)
{
	JsonbContainer *root = &players_jsonb->root;
	int			n,
				i;

	if (!JsonContainerIsArray(root) || JsonContainerIsScalar(root))
		BadPlayers(ticket->id, "not an array");
	n = JsonContainerSize(root);
	if (n < 1 || n > MM_MAX_MATCH_SIZE)
		BadPlayers(ticket->id, "wrong number of players");
	ticket->nplayers = n;
	ticket->player_ids = MmRuleAlloc(context, sizeof(char *) * n);
	for (i = 0; i < n; i++)
	{
		JsonbValue *elem = getIthJsonbValueFromContainer(root, i);
		JsonbContainer *obj;
		JsonbValue	v;

		if (elem->type != jbvBinary || !JsonContainerIsObject(elem->val.binary.data))
			BadPlayers(ticket->id, "a player is not an object");
		obj = elem->val.binary.data;
		if (getKeyJsonValueFromContainer(obj, "id", 2, &v) == NULL || v.type != jbvString)
			BadPlayers(ticket->id, "a player has no string id");
		ticket->player_ids[i] = MmRuleStrdup(context, v.val.string.val, v.val.string.len);
		players[i].id = ticket->player_ids[i];
		players[i].attributes = NULL;
		players[i].latencies = NULL;
		if (getKeyJsonValueFromContainer(obj, "attributes", 10, &v) != NULL &&
			v.type == jbvBinary)
			players[i].attributes = v.val.binary.data;
		if (getKeyJsonValueFromContainer(obj, "latencies", 9, &v) != NULL &&
			v.type == jbvBinary)
			players[i].latencies = v.val.binary.data;
		players[i].roles = NULL;
		if (getKeyJsonValueFromContainer(obj, "roles", 5, &v) != NULL &&
			v.type == jbvBinary && JsonContainerIsArray(v.val.binary.data))
			players[i].roles = v.val.binary.data;
		players[i].server_attributes = NULL;
		players[i].rating = NULL;
		players[i].autofill_protected = false;
		memset(players[i].role_rating, 0, sizeof(players[i].role_rating));
		if (sources)
			MmApplyPlayerSources(sources, &players[i]);
		pfree(elem);
	}
	MmExtractTicketValues(context, ticket, players, n);
	/* the tick's load marks the penalised tickets after parsing */
	ticket->penalised = false;
	ticket->low_priority = false;
	ticket->role_rank = NULL;
	ticket->role_accept = NULL;
	if (context->config->roles != NULL)
		ParseRoles(context, context->config->roles, ticket, players);
}

/* The id of each player of these tickets, in order. */
static const char **
PlayerIdsOf(Jsonb *const *players, int ntickets, int *count)
{
	int			allocated = Max(ntickets, 16);
	const char **ids = palloc(sizeof(char *) * allocated);
	int			n = 0,
				i;

	for (i = 0; i < ntickets; i++)
	{
		JsonbContainer *root = &players[i]->root;
		int			k,
					np = JsonContainerIsArray(root) ? JsonContainerSize(root) : 0;

		for (k = 0; k < np; k++)
		{
			JsonbValue *elem = getIthJsonbValueFromContainer(root, k);
			JsonbValue	v;

			if (elem->type != jbvBinary ||
				getKeyJsonValueFromContainer(elem->val.binary.data, "id", 2, &v) == NULL ||
				v.type != jbvString)
				continue;
			if (n == allocated)
			{
				allocated *= 2;
				ids = repalloc_huge(ids, sizeof(char *) * allocated);
			}
			ids[n++] = pnstrdup(v.val.string.val, v.val.string.len);
		}
	}
	*count = n;
	return ids;
}

/*
 * Parses tickets whose rules read server-side values: loads those values
 * for all their players in one go, then parses each ticket with them.
 * free_players: the jsonb copies were kept for this only.
 */
void
MmParseTicketsWithSources(MmRuleContext *context, const char *queue, MmTicket *tickets,
				 Jsonb **players_jsonb, int ntickets, bool free_players)
{
	MmPlayerInput players[MM_MAX_MATCH_SIZE];
	MemoryContext caller = CurrentMemoryContext;
	MmPlayerSources *sources;
	const char **ids;
	int			nids,
				i;

	ids = PlayerIdsOf(players_jsonb, ntickets, &nids);
	sources = MmLoadPlayerSources(context->config, queue, ids, nids);
	/* SPI returns in its own context: back to the caller's */
	MemoryContextSwitchTo(caller);
	for (i = 0; i < ntickets; i++)
	{
		CHECK_FOR_INTERRUPTS();
		MmParseTicket(context, &tickets[i], players_jsonb[i], players, sources);
		if (free_players)
			pfree(players_jsonb[i]);
	}
}

