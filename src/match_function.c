/*
 * match_function.c
 *	  Custom match functions: a queue whose config names "match_function"
 *	  lets a SQL or PL/pgSQL function propose its matches, and this file is
 *	  the evaluator (Open Match's MMF and evaluator, inside the database).
 *
 * The function is called once per tick of the queue as
 *	  schema.func(queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb
 * with the queue's searching tickets, locked by the tick, oldest first:
 *	  [{"id", "created_at", "players": [{"id", "attributes", "latencies"}]}]
 * Each returned row is a proposal:
 *	  {"tickets": [ids], "teams": {"red": [ids], ...}, "score": n, "properties": {...}}
 * Every proposal is checked (well formed; its tickets among those passed in;
 * the teams and sizes of the queue, parties whole; the queue's rules at
 * their current expansion step unless "rules_apply_to_proposals" is false);
 * overlapping proposals are resolved by the higher score (ties: the earlier
 * row); the winners become the tick's matches.  Rejected proposals are never
 * written, only counted by reason (mm.match_function_stats()).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "catalog/namespace.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "match_function.h"

/* Why a proposal was not committed (the columns of mm.match_function_stats). */
typedef enum MmRejection
{
	MM_REJECT_MALFORMED,		/* not the documented shape */
	MM_REJECT_STALE,			/* a ticket not among those passed in */
	MM_REJECT_TEAMS,			/* teams, sizes or parties do not fit the queue */
	MM_REJECT_RULES,			/* the queue's rules do not hold */
	MM_REJECT_OVERLAP,			/* a ticket already in a higher-scored proposal */
	MM_REJECT_COUNT
} MmRejection;

/* Per queue, what the last tick's match function proposed. */
typedef struct MmProposalStats
{
	char		queue[NAMEDATALEN * 2];
	int			proposals;
	int			accepted;
	int			rejected[MM_REJECT_COUNT];
} MmProposalStats;

static MmProposalStats *LastProposalStats = NULL;
static int	LastProposalCount = 0;
static int	LastProposalAllocated = 0;

/* A checked proposal. */
typedef struct Proposal
{
	int			row;			/* order returned, for ties */
	double		score;
	int			ntickets;
	int		   *tickets;		/* indexes into the tick's tickets */
	int		   *team;			/* team index per ticket, -1 without teams */
	char	   *properties;		/* JSON text of the properties object */
	MmFoundMatch match;			/* quality, region, rule steps */
} Proposal;

/* The largest JSON array of tickets a tick passes is bounded by its queue. */
#define MM_MAX_PROPOSALS 100000

/* Starts this tick's stats row for a queue. */
static MmProposalStats *
NewProposalStats(const char *queue)
{
	MmProposalStats *stats;

	/* the capacity changes only once the memory is there (an out of memory error) */
	if (LastProposalStats == NULL)
	{
		LastProposalStats = MemoryContextAllocZero(TopMemoryContext, sizeof(MmProposalStats) * 8);
		LastProposalAllocated = 8;
	}
	if (LastProposalCount == LastProposalAllocated)
	{
		LastProposalStats = repalloc(LastProposalStats,
									 sizeof(MmProposalStats) * LastProposalAllocated * 2);
		LastProposalAllocated *= 2;
	}
	stats = &LastProposalStats[LastProposalCount++];
	memset(stats, 0, sizeof(*stats));
	strlcpy(stats->queue, queue, sizeof(stats->queue));
	return stats;
}

void
MmMatchFunctionStatsReset(void)
{
	LastProposalCount = 0;
}

int
MmMatchFunctionStatsCount(void)
{
	return LastProposalCount;
}

void
MmMatchFunctionStatsTruncate(int count)
{
	LastProposalCount = Min(LastProposalCount, count);
}

/*
 * A problem with the function a queue names: 22023 at the config's path while
 * the config is checked; at tick time (no path) the given SQLSTATE.
 */
static void
pg_attribute_noreturn()
MatchFunctionError(MmJsonPath *path, int sqlstate, const char *problem)
{
	if (path)
		MmJsonError(path, "%s", problem);
	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg("match_function: %s", problem)));
}

/*
 * The function a queue names, checked: schema-qualified, existing, taking
 * (text, jsonb, timestamptz) and returning SETOF jsonb.  Returns its oid.
 * With a path (the config being written) every problem is 22023 at that
 * path; without (the tick), the function's SQLSTATE (42883 once dropped).
 */
Oid
MmLookupMatchFunction(const char *name, MmJsonPath *path)
{
	char	   *raw = pstrdup(name);
	List	   *parts;
	Oid			argtypes[3] = {TEXTOID, JSONBOID, TIMESTAMPTZOID};
	Oid			fn;
	HeapTuple	tuple;
	Form_pg_proc proc;
	bool		returns_set_of_jsonb;

	/* SplitIdentifierString reports bad quoting instead of raising 42602 */
	if (!SplitIdentifierString(raw, '.', &parts) || list_length(parts) != 2)
		MatchFunctionError(path, ERRCODE_INVALID_PARAMETER_VALUE,
						   psprintf("\"%s\" must be a schema-qualified function name (schema.function)",
									name));
	fn = LookupFuncName(list_make2(makeString(linitial(parts)), makeString(lsecond(parts))),
						3, argtypes, true);
	if (!OidIsValid(fn))
		MatchFunctionError(path, ERRCODE_UNDEFINED_FUNCTION,
						   psprintf("function %s(text, jsonb, timestamptz) does not exist", name));
	/* a session's temporary function would vanish, or stand in for another */
	if (isAnyTempNamespace(get_func_namespace(fn)))
		MatchFunctionError(path, ERRCODE_INVALID_PARAMETER_VALUE,
						   psprintf("function %s is in a temporary schema", name));
	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for function %u", fn);
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	returns_set_of_jsonb = proc->prorettype == JSONBOID && proc->proretset &&
		proc->prokind == PROKIND_FUNCTION;
	ReleaseSysCache(tuple);
	if (!returns_set_of_jsonb)
		MatchFunctionError(path, ERRCODE_INVALID_PARAMETER_VALUE,
						   psprintf("function %s must return SETOF jsonb", name));
	return fn;
}

/* The tickets argument: the searching tickets as JSON text. */
static char *
TicketsJson(const MmTicket *tickets, Jsonb *const *players, const TimestampTz *created, int ntickets)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (i = 0; i < ntickets; i++)
	{
		CHECK_FOR_INTERRUPTS();
		appendStringInfo(&buf, "%s{\"id\": " INT64_FORMAT ", \"created_at\": ",
						 i > 0 ? ", " : "", tickets[i].id);
		escape_json(&buf, timestamptz_to_str(created[i]));
		appendStringInfoString(&buf, ", \"players\": ");
		(void) JsonbToCString(&buf, &players[i]->root, VARSIZE(players[i]));
		appendStringInfoChar(&buf, '}');
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/* Index of a ticket id among the tick's tickets (open addressing), or -1. */
typedef struct IdIndex
{
	int			size;
	int64	   *ids;
	int		   *slot;
} IdIndex;

static void
IdIndexBuild(IdIndex *ix, const MmTicket *tickets, int ntickets)
{
	int			i;

	ix->size = 16;
	while (ix->size < ntickets * 2)
		ix->size *= 2;
	ix->ids = palloc(sizeof(int64) * ix->size);
	ix->slot = palloc(sizeof(int) * ix->size);
	for (i = 0; i < ix->size; i++)
		ix->slot[i] = -1;
	for (i = 0; i < ntickets; i++)
	{
		uint32		h = hash_bytes_uint32((uint32) (tickets[i].id ^ (tickets[i].id >> 32)));

		while (ix->slot[h & (ix->size - 1)] >= 0)
			h++;
		ix->ids[h & (ix->size - 1)] = tickets[i].id;
		ix->slot[h & (ix->size - 1)] = i;
	}
}

static int
IdIndexFind(const IdIndex *ix, int64 id)
{
	uint32		h = hash_bytes_uint32((uint32) (id ^ (id >> 32)));

	while (ix->slot[h & (ix->size - 1)] >= 0)
	{
		if (ix->ids[h & (ix->size - 1)] == id)
			return ix->slot[h & (ix->size - 1)];
		h++;
	}
	return -1;
}

/*
 * An integer ticket id from a JSON number, or false.  Through float8: ids
 * come from a sequence and stay far below 2^53, where a double is exact.
 */
static bool
JsonTicketId(const JsonbValue *v, int64 *id)
{
	double		d;

	if (v->type != jbvNumeric)
		return false;
	/* out of range for a double: +-Infinity or 0, refused or no ticket's id */
	d = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
										   NumericGetDatum(v->val.numeric)));
	if (isnan(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
		return false;
	*id = (int64) d;
	return true;
}

/*
 * Reads a JSON array of ticket ids into indexes (appended to out, team set
 * to team).  Returns the rejection, or -1 when fine.
 */
static int
ReadTicketList(JsonbValue *array, const IdIndex *ix, int team, int *out, int *team_of, int *n,
			   int max)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (array->type != jbvBinary || !JsonContainerIsArray(array->val.binary.data))
		return MM_REJECT_MALFORMED;
	it = JsonbIteratorInit(array->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		int64		id;
		int			k;

		if (tok != WJB_ELEM)
			continue;
		if (!JsonTicketId(&v, &id))
			return MM_REJECT_MALFORMED;
		if ((k = IdIndexFind(ix, id)) < 0)
			return MM_REJECT_STALE;
		if (*n >= max)
			return MM_REJECT_TEAMS;
		out[*n] = k;
		team_of[(*n)++] = team;
	}
	return -1;
}

/*
 * Whether a proposed match satisfies the queue's rules at the expansion
 * step of its oldest ticket, and its quality, region and steps.  Built on
 * the backfill search (MmSearchBackfill), which checks every rule over a
 * match's members and the candidates it adds: every ticket but the last is a
 * member, the last is the one candidate, with room only on its own team.
 */
static bool
ProposalHolds(const MmRuleContext *context, const MmTicket *tickets, Proposal *p)
{
	const MmQueueConfig *config = context->config;
	int			nteams = Max(config->nteams, 1);
	MmTicket   *members = palloc(sizeof(MmTicket) * Max(p->ntickets - 1, 1));
	int		   *member_team = palloc(sizeof(int) * Max(p->ntickets - 1, 1));
	int		   *slots = palloc0(sizeof(int) * nteams);
	const MmTicket *last = &tickets[p->tickets[p->ntickets - 1]];
	MmBackfillResult *res;
	int			k;

	for (k = 0; k < p->ntickets - 1; k++)
	{
		members[k] = tickets[p->tickets[k]];
		member_team[k] = p->team[k];
	}
	/* the backfill search does not check the members against each other */
	{
		MmTicket   *all = palloc(sizeof(MmTicket) * p->ntickets);

		for (k = 0; k < p->ntickets; k++)
			all[k] = tickets[p->tickets[k]];
		if (!MmTicketsFitTogether(context, all, p->ntickets))
			return false;
	}
	slots[Max(p->team[p->ntickets - 1], 0)] = last->nplayers;
	res = MmSearchBackfill(context, members, p->ntickets - 1, member_team, slots, last, 1, NULL, NULL);
	if (res->ntickets != 1 || !res->filled ||
		(config->nteams > 0 && res->ticket_team[0] != p->team[p->ntickets - 1]))
		return false;
	p->match.quality = res->quality;
	p->match.region = res->region;
	p->match.rule_steps = res->rule_steps;
	return true;
}

/*
 * A role queue: seats a proposal's players on its teams' roles (each
 * ticket on the team the function chose).  False when they cannot be.
 */
static bool
SeatProposal(const MmRolesConfig *roles, const MmTicket *tickets, Proposal *p)
{
	int			n = p->match.nplayers;
	MmRoleMask *accept = palloc(sizeof(MmRoleMask) * n);
	const uint8 **rank = palloc(sizeof(uint8 *) * n);
	int		   *ticket_of = palloc(sizeof(int) * n);
	int		   *ticket_size = palloc(sizeof(int) * p->ntickets);
	int		   *group_of = palloc(sizeof(int) * n);
	MmRolePlayers players;
	MmRoleSeating seating;
	int			i = 0;

	for (int k = 0; k < p->ntickets; k++)
	{
		const MmTicket *t = &tickets[p->tickets[k]];

		for (int q = 0; q < t->nplayers; q++, i++)
		{
			accept[i] = t->role_accept[q];
			rank[i] = &t->role_rank[q * MM_MAX_ROLES];
			ticket_of[i] = k;
		}
		ticket_size[k] = t->nplayers;
	}
	players.nplayers = n;
	players.accept = accept;
	players.rank = rank;
	players.ticket_of = ticket_of;
	players.ntickets = p->ntickets;
	players.ticket_size = ticket_size;
	players.ticket_group = p->team;
	p->match.player_role = palloc(sizeof(int) * n);
	p->match.player_autofilled = palloc(sizeof(bool) * n);
	seating.group_of = group_of;
	seating.role_of = p->match.player_role;
	seating.autofilled = p->match.player_autofilled;
	return MmRolesSeat(roles, &players, NULL, NULL, &seating);
}

/* Checks one proposal; returns the rejection, or -1 when it may be committed. */
static int
CheckProposal(const MmRuleContext *context, const MmTicket *tickets, const IdIndex *ix,
			  Jsonb *jb, bool rules_apply, Proposal *p)
{
	const MmQueueConfig *config = context->config;
	JsonbValue *v;
	int			max = config->match_max;
	int		   *players_on;
	int			total = 0,
				k,
				t,
				reason;

	if (!JB_ROOT_IS_OBJECT(jb))
		return MM_REJECT_MALFORMED;
	p->tickets = palloc(sizeof(int) * (max + 1));
	p->team = palloc(sizeof(int) * (max + 1));
	p->ntickets = 0;

	/* score: a number (default 0) */
	p->score = 0;
	if ((v = getKeyJsonValueFromContainer(&jb->root, "score", 5, NULL)) != NULL)
	{
		if (v->type != jbvNumeric)
			return MM_REJECT_MALFORMED;
		/* beyond a double's range it is +-Infinity (refused); below, 0 */
		p->score = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
													  NumericGetDatum(v->val.numeric)));
		if (isnan(p->score) || isinf(p->score))
			return MM_REJECT_MALFORMED;
	}
	/* properties: an object (default {}) */
	p->properties = "{}";
	if ((v = getKeyJsonValueFromContainer(&jb->root, "properties", 10, NULL)) != NULL)
	{
		if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
			return MM_REJECT_MALFORMED;
		p->properties = JsonbToCString(NULL, v->val.binary.data, -1);
	}

	if (config->nteams > 0)
	{
		/* teams: every team of the queue, each with its tickets */
		JsonbValue *teams = getKeyJsonValueFromContainer(&jb->root, "teams", 5, NULL);

		if (teams == NULL || teams->type != jbvBinary || !JsonContainerIsObject(teams->val.binary.data))
			return MM_REJECT_MALFORMED;
		if (JsonContainerSize(teams->val.binary.data) != (uint32) config->nteams)
			return MM_REJECT_TEAMS;
		for (t = 0; t < config->nteams; t++)
		{
			const char *name = config->teams[t].name;
			JsonbValue *list = getKeyJsonValueFromContainer(teams->val.binary.data, name,
															strlen(name), NULL);

			if (list == NULL)
				return MM_REJECT_TEAMS;
			if ((reason = ReadTicketList(list, ix, t, p->tickets, p->team, &p->ntickets, max)) >= 0)
				return reason;
		}
	}
	else
	{
		/* a free-for-all: the tickets */
		JsonbValue *list = getKeyJsonValueFromContainer(&jb->root, "tickets", 7, NULL);

		if (list == NULL)
			return MM_REJECT_MALFORMED;
		if ((reason = ReadTicketList(list, ix, -1, p->tickets, p->team, &p->ntickets, max)) >= 0)
			return reason;
	}

	/* "tickets", when given with teams, must list the same tickets */
	if (config->nteams > 0 && (v = getKeyJsonValueFromContainer(&jb->root, "tickets", 7, NULL)) != NULL)
	{
		int		   *listed = palloc(sizeof(int) * (max + 1));
		int		   *ignored = palloc(sizeof(int) * (max + 1));
		int			n = 0;

		if ((reason = ReadTicketList(v, ix, -1, listed, ignored, &n, max)) >= 0)
			return reason;
		if (n != p->ntickets)
			return MM_REJECT_TEAMS;
		for (k = 0; k < n; k++)
		{
			int			j;

			for (j = 0; j < k; j++)
				if (listed[j] == listed[k])
					return MM_REJECT_TEAMS;
			for (j = 0; j < p->ntickets && p->tickets[j] != listed[k]; j++)
				;
			if (j == p->ntickets)
				return MM_REJECT_TEAMS;
		}
	}
	if (p->ntickets == 0)
		return MM_REJECT_MALFORMED;

	/* each ticket once; sizes within the queue's bounds */
	players_on = palloc0(sizeof(int) * Max(config->nteams, 1));
	for (k = 0; k < p->ntickets; k++)
	{
		int			j;

		for (j = 0; j < k; j++)
			if (p->tickets[j] == p->tickets[k])
				return MM_REJECT_TEAMS;
		total += tickets[p->tickets[k]].nplayers;
		players_on[Max(p->team[k], 0)] += tickets[p->tickets[k]].nplayers;
	}
	if (total < config->match_min || total > config->match_max)
		return MM_REJECT_TEAMS;
	for (t = 0; t < config->nteams; t++)
		if (players_on[t] < config->teams[t].min || players_on[t] > config->teams[t].max)
			return MM_REJECT_TEAMS;

	/* tickets oldest first, as the search's matches list them */
	for (k = 1; k < p->ntickets; k++)
	{
		int			ti = p->tickets[k],
					tt = p->team[k],
					j = k - 1;

		while (j >= 0 && p->tickets[j] > ti)
		{
			p->tickets[j + 1] = p->tickets[j];
			p->team[j + 1] = p->team[j];
			j--;
		}
		p->tickets[j + 1] = ti;
		p->team[j + 1] = tt;
	}

	p->match.nplayers = total;
	p->match.quality = 1.0;
	p->match.region = -1;
	p->match.player_role = NULL;
	p->match.player_autofilled = NULL;
	if (config->roles != NULL && !SeatProposal(config->roles, tickets, p))
		return MM_REJECT_TEAMS;
	p->match.rule_steps = palloc0(sizeof(MmRuleStep) * Max(config->nrules, 1));
	if (rules_apply && config->nrules > 0 && !ProposalHolds(context, tickets, p))
		return MM_REJECT_RULES;
	return -1;
}

/* Higher score first; ties: the earlier row. */
static int
CompareProposals(const void *a, const void *b)
{
	const Proposal *pa = *(Proposal *const *) a;
	const Proposal *pb = *(Proposal *const *) b;

	if (pa->score != pb->score)
		return pa->score > pb->score ? -1 : 1;
	return pa->row - pb->row;
}

/*
 * The oid of the function a config names, or InvalidOid when the name does
 * not resolve now (the function of a row written earlier may be gone).
 */
static Oid
ResolveMatchFunction(const char *name)
{
	char	   *raw = pstrdup(name);
	List	   *parts;
	Oid			argtypes[3] = {TEXTOID, JSONBOID, TIMESTAMPTZOID};

	if (!SplitIdentifierString(raw, '.', &parts) || list_length(parts) != 2)
		return InvalidOid;
	return LookupFuncName(list_make2(makeString(linitial(parts)), makeString(lsecond(parts))),
						  3, argtypes, true);
}

static Oid
FunctionOwner(Oid fn)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for function %u", fn);
	owner = ((Form_pg_proc) GETSTRUCT(tuple))->proowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * The role a function runs as for a role that names it (or was recorded as
 * its role): never one with more rights than either the function's owner,
 * who can rewrite it, or that role.  The owner when the role has the owner's
 * privileges (a superuser has everyone's); the role itself when the owner
 * has the role's (a superuser's function run by an admin); otherwise none
 * (InvalidOid): a function owned by a role that is neither above nor below
 * the one naming it would run one's code with the other's rights.
 */
static Oid
RunAsRole(Oid role, Oid fn)
{
	Oid			owner = FunctionOwner(fn);

	if (has_privs_of_role(role, owner))
		return owner;
	if (has_privs_of_role(owner, role))
		return role;
	return InvalidOid;
}

/* A recorded role as RunAsRole caps it; kept as it is when none fits (the tick refuses it). */
static Oid
RecordedRunAsRole(Oid role, Oid fn)
{
	Oid			run_as = RunAsRole(role, fn);

	return OidIsValid(run_as) ? run_as : role;
}

char *
MmMatchFunctionRoleForWrite(const char *queue, const char *function, const char *old_function,
							const char *given_role, const char *old_role)
{
	Oid			writer = GetUserId();
	Oid			given;
	Oid			fn;
	Oid			owner;
	Oid			run_as;
	AclResult	aclresult;

	if (function == NULL)
		return NULL;
	fn = MmLookupMatchFunction(function, NULL);

	/*
	 * The same function (by oid: a respelling is no new choice), the role
	 * column untouched, that role still there: its author stays.  A queue
	 * without a role (or whose role was dropped) gets the writer below, which
	 * is how an admin repairs it.
	 */
	if (old_function != NULL && old_role != NULL && ResolveMatchFunction(old_function) == fn &&
		given_role != NULL && strcmp(given_role, old_role) == 0 &&
		OidIsValid(given = get_role_oid(old_role, true)))
		return GetUserNameFromId(RecordedRunAsRole(given, fn), false);

	/* a role named in the row (a restore): only one the writer could act as */
	if (given_role != NULL && (old_role == NULL || strcmp(given_role, old_role) != 0))
	{
		given = get_role_oid(given_role, true);
		if (!OidIsValid(given))
		{
			/* never the restoring superuser: no role until an admin names it */
			ereport(WARNING,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("match_function_role \"%s\" of queue \"%s\" does not exist: the queue's match function has no role to run as",
							given_role, queue),
					 errhint("An admin names the function again with mm.alter_queue; it then runs as that admin, or as the function's owner if the admin has the owner's rights.")));
			return NULL;
		}
		if (has_privs_of_role(writer, given))
			return GetUserNameFromId(RecordedRunAsRole(given, fn), false);
	}

	/*
	 * The writer names the function: it runs as its owner when the writer
	 * holds the owner's privileges (a superuser holds everyone's), as the
	 * writer when the owner holds the writer's, and is refused otherwise.
	 */
	run_as = RunAsRole(writer, fn);
	if (!OidIsValid(run_as))
	{
		owner = FunctionOwner(fn);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("match_function: function %s is owned by role \"%s\", whose privileges \"%s\" does not have",
						function, GetUserNameFromId(owner, false), GetUserNameFromId(writer, false)),
				 errdetail("Its owner can rewrite it: it would run with the rights of a role its owner does not have."),
				 errhint("Name a function owned by a role you are a member of, or by a superuser, or have its owner name it.")));
	}
	aclresult = pg_namespace_aclcheck(get_func_namespace(fn), run_as, ACL_USAGE);
	if (aclresult == ACLCHECK_OK)
		aclresult = pg_proc_aclcheck(fn, run_as, ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("match_function: permission denied for function %s", function),
				 errdetail("The match function would run as \"%s\", which may not call it.",
						   GetUserNameFromId(run_as, false))));
	return GetUserNameFromId(run_as, false);
}

MmSearchResult *
MmRunMatchFunction(const MmRuleContext *context, const char *queue, const char *function,
				   const char *role, bool rules_apply, const MmTicket *tickets, Jsonb *const *players,
				   const TimestampTz *created, int ntickets, TimestampTz now,
				   char ***properties)
{
	MmProposalStats *stats = NewProposalStats(queue);
	MmSearchResult *result = palloc0(sizeof(MmSearchResult));
	MemoryContext caller = CurrentMemoryContext;
	Oid			fn = MmLookupMatchFunction(function, NULL);
	Oid			argtypes[3] = {TEXTOID, JSONBOID, TIMESTAMPTZOID};
	Datum		values[3];
	char	   *sql;
	Oid			role_id;
	Oid			run_as;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	Proposal  **proposals;
	Proposal  **valid;
	bool	   *used;
	IdIndex		ix;
	int			nvalid = 0,
				nrows,
				i,
				rc;

	*properties = NULL;
	if (ntickets == 0)
		return result;

	/* the name from the catalog, quoted: no text of the config reaches the SQL */
	sql = psprintf("SELECT p FROM %s($1, $2, $3) AS p",
				   quote_qualified_identifier(get_namespace_name(get_func_namespace(fn)),
											  get_func_name(fn)));
	values[0] = CStringGetTextDatum(queue);
	values[1] = DirectFunctionCall1(jsonb_in, CStringGetDatum(TicketsJson(tickets, players, created,
																		  ntickets)));
	values[2] = TimestampTzGetDatum(now);

	/*
	 * User code runs with its author's rights, never the ticker's: as the
	 * role that named it, in a security-restricted operation (no SET ROLE,
	 * no temporary objects) with a search_path of its own, as PostgreSQL
	 * runs index expressions and REFRESH MATERIALIZED VIEW as the owner.  An
	 * error aborts the (sub)transaction, which restores both.
	 */
	if (role == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("match_function of queue \"%s\" has no role to run as", queue),
				 errhint("An admin names the function again with mm.alter_queue; it then runs as that admin, or as the function's owner if the admin has the owner's rights.")));
	role_id = get_role_oid(role, true);
	if (!OidIsValid(role_id))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("match_function of queue \"%s\" runs as role \"%s\", which no longer exists",
						queue, role),
				 errhint("An admin names the function again with mm.alter_queue; it then runs as that admin, or as the function's owner if the admin has the owner's rights.")));
	/* the function may have been given away since it was named */
	run_as = RunAsRole(role_id, fn);
	if (!OidIsValid(run_as))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("match_function of queue \"%s\" runs as role \"%s\", which does not have the privileges of the function's owner \"%s\"",
						queue, role, GetUserNameFromId(FunctionOwner(fn), false)),
				 errdetail("Its owner can rewrite it: it would run with the rights of a role its owner does not have."),
				 errhint("An admin names the function again with mm.alter_queue; it then runs as that admin, or as the function's owner if the admin has the owner's rights.")));
	role_id = run_as;
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(role_id, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	rc = SPI_execute_with_args(sql, 3, argtypes, values, NULL, false, MM_MAX_PROPOSALS + 1);
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "running match_function %s failed: %s", function, SPI_result_code_string(rc));
	nrows = (int) SPI_processed;
	if (nrows > MM_MAX_PROPOSALS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("match_function %s returned more than %d proposals", function, MM_MAX_PROPOSALS)));

	IdIndexBuild(&ix, tickets, ntickets);
	proposals = palloc(sizeof(Proposal *) * Max(nrows, 1));
	valid = palloc(sizeof(Proposal *) * Max(nrows, 1));
	stats->proposals = nrows;
	for (i = 0; i < nrows; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		Proposal   *p = palloc0(sizeof(Proposal));
		int			reason;

		CHECK_FOR_INTERRUPTS();
		p->row = i;
		proposals[i] = p;
		reason = isnull ? MM_REJECT_MALFORMED :
			CheckProposal(context, tickets, &ix, DatumGetJsonbPCopy(d), rules_apply, p);
		if (reason >= 0)
			stats->rejected[reason]++;
		else
			valid[nvalid++] = p;
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);

	/* the evaluator: higher scores first, a ticket in one match only */
	qsort(valid, nvalid, sizeof(Proposal *), CompareProposals);
	used = palloc0(sizeof(bool) * ntickets);
	result->matches = palloc0(sizeof(MmFoundMatch) * Max(nvalid, 1));
	*properties = palloc(sizeof(char *) * Max(nvalid, 1));
	for (i = 0; i < nvalid; i++)
	{
		Proposal   *p = valid[i];
		MmFoundMatch *m;
		int			k;
		bool		overlap = false;

		for (k = 0; k < p->ntickets; k++)
			overlap |= used[p->tickets[k]];
		if (overlap)
		{
			stats->rejected[MM_REJECT_OVERLAP]++;
			continue;
		}
		for (k = 0; k < p->ntickets; k++)
			used[p->tickets[k]] = true;
		m = &result->matches[result->nmatches];
		*m = p->match;
		m->ntickets = p->ntickets;
		m->tickets = p->tickets;
		m->ticket_team = p->team;
		(*properties)[result->nmatches++] = p->properties;
	}
	stats->accepted = result->nmatches;
	return result;
}

PG_FUNCTION_INFO_V1(mm_match_function_stats);

/*
 * mm.match_function_stats() RETURNS TABLE (queue, proposals, accepted,
 * rejected_malformed, rejected_stale, rejected_teams, rejected_rules,
 * rejected_overlap): what the match functions of this session's last
 * mm.tick() proposed, and why proposals were not committed.
 */
Datum
mm_match_function_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < LastProposalCount; i++)
	{
		const MmProposalStats *s = &LastProposalStats[i];
		Datum		values[8];
		bool		nulls[8] = {false};

		values[0] = CStringGetTextDatum(s->queue);
		values[1] = Int32GetDatum(s->proposals);
		values[2] = Int32GetDatum(s->accepted);
		values[3] = Int32GetDatum(s->rejected[MM_REJECT_MALFORMED]);
		values[4] = Int32GetDatum(s->rejected[MM_REJECT_STALE]);
		values[5] = Int32GetDatum(s->rejected[MM_REJECT_TEAMS]);
		values[6] = Int32GetDatum(s->rejected[MM_REJECT_RULES]);
		values[7] = Int32GetDatum(s->rejected[MM_REJECT_OVERLAP]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
