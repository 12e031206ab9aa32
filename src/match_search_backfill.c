/*
 * match_search_backfill.c
 *	  Backfill and ticket compatibility (pure C, no SPI): MmSearchBackfill
 *	  fills a live match's open slots from candidate tickets (a bounded
 *	  depth-first search for the most players), MmTicketsFitTogether checks
 *	  tickets against the ticket rules (see match_search.h).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "match_search.h"

/* The backfill search's working state (see MmSearchBackfill). */
typedef struct BackfillState
{
	const MmRuleContext *context;
	const MmQueueConfig *config;
	const MmRuleHandler **handlers;
	const MmTicket *members;
	int			nmembers;
	const int  *member_team;
	const MmTicket *candidates;
	int			ncandidates;
	int			nteams;			/* 0: free-for-all (one room) */
	int		   *room;			/* open slots left per team (or [0]) */
	int			wanted;			/* open slots in all */

	bool	   *rule_on;
	double	   *threshold;
	int		   *step;
	MmRuleState **states;		/* per depth */
	int			capacity;		/* latency regions a state may hold */

	/* the current set and the best one */
	int		   *chosen;
	int		   *chosen_team;
	int			nchosen;
	int			players;
	int		   *best;
	int		   *best_team;
	int			nbest;
	int			best_players;
	long		budget;

	/* the teams view of the whole match */
	const MmTicket **view_tickets;
	int		   *view_team;
	int		   *team_size;

	/* a role queue's: the open seats, the members' roles, the seating */
	const MmRolesConfig *roles; /* NULL: no roles */
	const int  *open_seats;
	const int  *member_role;
	int			member_players;
	int		   *view_role;		/* members' roles, then the chosen players' */
	int		   *chosen_role;	/* the seating of the current set */
	bool	   *chosen_autofilled;
	int		   *best_role;
	bool	   *best_autofilled;
	MmRoleMask *role_accept;	/* the current set as a role problem */
	const uint8 **role_rank;
	int		   *role_ticket_of;
	int		   *role_ticket_size;
} BackfillState;

/* The current set (and candidate extra, -1: none) as a role problem. */
static void
BackfillRoleProblem(BackfillState *b, int extra, MmRolePlayers *players)
{
	int			n = 0,
				ntickets = 0;

	for (int k = 0; k <= b->nchosen; k++)
	{
		const MmTicket *t;

		if (k == b->nchosen && extra < 0)
			break;
		t = &b->candidates[k < b->nchosen ? b->chosen[k] : extra];
		for (int p = 0; p < t->nplayers; p++)
		{
			b->role_accept[n] = t->role_accept[p];
			b->role_rank[n] = &t->role_rank[p * MM_MAX_ROLES];
			b->role_ticket_of[n++] = ntickets;
		}
		b->role_ticket_size[ntickets++] = t->nplayers;
	}
	players->nplayers = n;
	players->accept = b->role_accept;
	players->rank = b->role_rank;
	players->ticket_of = b->role_ticket_of;
	players->ntickets = ntickets;
	players->ticket_size = b->role_ticket_size;
	players->ticket_group = NULL;
}

/* Whether candidate j can join the current set on the open seats. */
static bool
BackfillRolesFit(BackfillState *b, int j)
{
	MmRolePlayers players;

	BackfillRoleProblem(b, j, &players);
	return MmRolesFit(b->roles, &players, b->open_seats);
}

/* Seats the current set on the open seats: chosen_team and chosen_role. */
static bool
BackfillSeat(BackfillState *b)
{
	MmRolePlayers players;
	MmRoleSeating seating;
	int		   *group_of = palloc(sizeof(int) * Max(b->players, 1));
	int			p = 0;
	bool		seated;

	BackfillRoleProblem(b, -1, &players);
	seating.group_of = group_of;
	seating.role_of = b->chosen_role;
	seating.autofilled = b->chosen_autofilled;
	seated = MmRolesSeat(b->roles, &players, b->open_seats, NULL, &seating);
	for (int k = 0; seated && k < b->nchosen; k++)
	{
		b->chosen_team[k] = b->nteams > 0 ? group_of[p] : -1;
		p += b->candidates[b->chosen[k]].nplayers;
	}
	pfree(group_of);
	return seated;
}

/* A fresh state of every ticket rule, with the members joined. */
static MmRuleState *
BackfillLevel(BackfillState *b, int depth)
{
	int			nrules = b->config->nrules;

	if (b->states[depth] == NULL)
	{
		MmRuleState *level = palloc0(sizeof(MmRuleState) * Max(nrules, 1));

		for (int r = 0; r < nrules; r++)
		{
			level[r].rule = &b->config->rules[r];
			MmRuleStateAlloc(&level[r], b->capacity);
		}
		b->states[depth] = level;
	}
	return b->states[depth];
}

/* Copies the ticket rules' states from one depth to another. */
static void
BackfillCopy(BackfillState *b, MmRuleState *dst, const MmRuleState *src)
{
	for (int r = 0; r < b->config->nrules; r++)
		if (b->handlers[r]->scope == MM_SCOPE_TICKETS)
			MmRuleStateCopy(&dst[r], &src[r]);
}

/* Whether a ticket may join the states (every ticket rule that is on). */
static bool
BackfillFits(BackfillState *b, const MmRuleState *states, const MmTicket *t)
{
	for (int r = 0; r < b->config->nrules; r++)
	{
		const MmRuleConfig *rule = &b->config->rules[r];

		if (!b->rule_on[r] || rule->in_compound)
			continue;
		if (rule->type == MM_RULE_COMPOUND)
		{
			if (!MmCompoundCanAdd(b->context, rule, states, t->values, b->rule_on, b->threshold))
				return false;
			continue;
		}
		if (t->values[r].kind == MM_VALUE_MISSING)
			return false;
		if (b->handlers[r]->scope == MM_SCOPE_TICKETS &&
			!b->handlers[r]->can_add(b->context, &states[r], &t->values[r], b->threshold[r]))
			return false;
	}
	return true;
}

/* Adds a ticket to every ticket rule's state. */
static void
BackfillJoin(BackfillState *b, MmRuleState *states, const MmTicket *t)
{
	for (int r = 0; r < b->config->nrules; r++)
	{
		if (b->handlers[r]->scope != MM_SCOPE_TICKETS)
			continue;
		if (b->config->rules[r].in_compound)
			MmLeafJoin(b->context, &states[r], &t->values[r], b->threshold[r]);
		else
			b->handlers[r]->add(b->context, &states[r], &t->values[r]);
	}
}

/*
 * The team rules over the whole match (members and the current set); adds
 * their weighted closeness when the sums are given.
 */
static bool
BackfillTeamRules(BackfillState *b, double *closeness_sum, double *weight_sum)
{
	MmTeamsView view;
	int			n = 0;

	if (b->nteams == 0)
		return true;
	for (int t = 0; t < b->nteams; t++)
		b->team_size[t] = 0;
	for (int k = 0; k < b->nmembers; k++)
	{
		b->view_tickets[n] = &b->members[k];
		b->view_team[n] = b->member_team[k];
		b->team_size[b->member_team[k]] += b->members[k].nplayers;
		n++;
	}
	for (int k = 0; k < b->nchosen; k++)
	{
		b->view_tickets[n] = &b->candidates[b->chosen[k]];
		b->view_team[n] = b->chosen_team[k];
		b->team_size[b->chosen_team[k]] += b->candidates[b->chosen[k]].nplayers;
		n++;
	}
	view.nteams = b->nteams;
	view.team_size = b->team_size;
	view.ntickets = n;
	view.tickets = b->view_tickets;
	view.ticket_team = b->view_team;
	view.player_role = NULL;
	view.nroles = 0;
	if (b->roles != NULL)
	{
		memcpy(b->view_role, b->member_role, sizeof(int) * b->member_players);
		memcpy(b->view_role + b->member_players, b->chosen_role, sizeof(int) * b->players);
		view.player_role = b->view_role;
		view.nroles = b->roles->nroles;
	}
	for (int r = 0; r < b->config->nrules; r++)
	{
		double		c;

		if (!b->rule_on[r] || b->handlers[r]->scope != MM_SCOPE_TEAMS)
			continue;
		if (!b->handlers[r]->check_teams(&b->config->rules[r], r, &view, b->threshold[r], &c))
			return false;
		if (closeness_sum != NULL)
		{
			*closeness_sum += b->config->rules[r].weight * c;
			*weight_sum += b->config->rules[r].weight;
		}
	}
	return true;
}

/*
 * Depth-first, oldest candidates first: returns true once every open slot
 * is filled (the set is then the best); otherwise keeps the largest valid set
 * seen in best.
 */
static bool
BackfillDfs(BackfillState *b, int depth, int from)
{
	MmRuleState *states = b->states[depth];

	if (b->nchosen > 0 && b->players > b->best_players &&
		MmFinalHolds(b->context, states, b->rule_on, b->threshold) &&
		(b->roles == NULL || BackfillSeat(b)) &&
		BackfillTeamRules(b, NULL, NULL))
	{
		memcpy(b->best, b->chosen, sizeof(int) * b->nchosen);
		memcpy(b->best_team, b->chosen_team, sizeof(int) * b->nchosen);
		if (b->roles != NULL)
		{
			memcpy(b->best_role, b->chosen_role, sizeof(int) * b->players);
			memcpy(b->best_autofilled, b->chosen_autofilled, sizeof(bool) * b->players);
		}
		b->nbest = b->nchosen;
		b->best_players = b->players;
		if (b->players == b->wanted)
			return true;
	}
	for (int j = from; j < b->ncandidates; j++)
	{
		const MmTicket *t = &b->candidates[j];
		int			nrooms = Max(b->nteams, 1);

		if (--b->budget < 0)
			return false;
		if ((b->budget & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (t->nplayers > b->wanted - b->players || !BackfillFits(b, states, t))
			continue;
		/* a role queue: the seats decide the team (BackfillSeat), one room */
		if (b->roles != NULL)
		{
			if (!BackfillRolesFit(b, j))
				continue;
			nrooms = 1;
		}
		for (int team = 0; team < nrooms; team++)
		{
			MmRuleState *next;

			if (b->roles == NULL && b->room[team] < t->nplayers)
				continue;
			next = BackfillLevel(b, depth + 1);
			BackfillCopy(b, next, states);
			BackfillJoin(b, next, t);
			b->room[team] -= t->nplayers;
			b->chosen[b->nchosen] = j;
			b->chosen_team[b->nchosen] = b->nteams > 0 && b->roles == NULL ? team : -1;
			b->nchosen++;
			b->players += t->nplayers;
			if (BackfillDfs(b, depth + 1, j + 1))
				return true;
			b->nchosen--;
			b->players -= t->nplayers;
			b->room[team] += t->nplayers;
			if (b->budget < 0)
				return false;
		}
	}
	return false;
}

/* Sets every rule's step and threshold at an age. */
static void
BackfillThresholds(BackfillState *b, double age)
{
	for (int r = 0; r < b->config->nrules; r++)
	{
		b->rule_on[r] = MmRuleThresholdAt(&b->config->rules[r], age, &b->threshold[r], &b->step[r]);
		if (!b->rule_on[r])
			b->threshold[r] = 0;
	}
}

/* The rule arrays of a backfill state: each rule's handler, on/off, threshold, step. */
static void
BackfillRulesInit(BackfillState *b, const MmRuleContext *context)
{
	int			nrules = context->config->nrules;

	b->context = context;
	b->config = context->config;
	b->handlers = palloc(sizeof(MmRuleHandler *) * Max(nrules, 1));
	for (int r = 0; r < nrules; r++)
		b->handlers[r] = MmRuleHandlerFor(b->config->rules[r].type);
	b->rule_on = palloc(sizeof(bool) * Max(nrules, 1));
	b->threshold = palloc(sizeof(double) * Max(nrules, 1));
	b->step = palloc(sizeof(int) * Max(nrules, 1));
}

/* Depth 0's states, empty, with every rule at its step for an age. */
static MmRuleState *
BackfillStartAt(BackfillState *b, double age)
{
	MmRuleState *level;

	BackfillThresholds(b, age);
	level = BackfillLevel(b, 0);
	for (int r = 0; r < b->config->nrules; r++)
		if (b->handlers[r]->scope == MM_SCOPE_TICKETS)
			MmRuleStateInit(b->context, &b->config->rules[r], &level[r]);
	return level;
}

/*
 * The result of a backfill that found a set (the best one, chosen at
 * best_age): its rules' steps, region and quality, and its tickets, teams
 * and roles, allocated in result_context.
 */
static void
BackfillResultOf(BackfillState *b, const MmRuleContext *context, MmBackfillResult *result,
				 double best_age, MemoryContext result_context)
{
	const MmQueueConfig *config = context->config;
	double		closeness_sum = 0,
				weight_sum = 0;
	double		quality;
	MmRuleState *final;

	/* the best set's states and team rules again, for quality and region */
	final = BackfillStartAt(b, best_age);
	for (int k = 0; k < b->nmembers; k++)
		BackfillJoin(b, final, &b->members[k]);
	for (int k = 0; k < b->nbest; k++)
		BackfillJoin(b, final, &b->candidates[b->best[k]]);
	memcpy(b->chosen, b->best, sizeof(int) * b->nbest);
	memcpy(b->chosen_team, b->best_team, sizeof(int) * b->nbest);
	b->nchosen = b->nbest;
	b->players = b->best_players;
	if (b->roles != NULL)
	{
		memcpy(b->chosen_role, b->best_role, sizeof(int) * b->best_players);
		memcpy(b->chosen_autofilled, b->best_autofilled, sizeof(bool) * b->best_players);
	}
	(void) BackfillTeamRules(b, &closeness_sum, &weight_sum);
	for (int r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];

		result->rule_steps[r].step = b->step[r];
		result->rule_steps[r].threshold = b->threshold[r];
		result->rule_steps[r].off = !b->rule_on[r];
		if (rule->type == MM_RULE_LATENCY && result->region < 0)
			result->region = MmChooseRegion(context, &final[r], b->threshold[r], NULL);
		if (!b->rule_on[r] || b->handlers[r]->scope != MM_SCOPE_TICKETS || rule->in_compound)
			continue;
		closeness_sum += rule->weight *
			b->handlers[r]->closeness(context, &final[r], b->threshold[r]);
		weight_sum += rule->weight;
	}
	quality = weight_sum > 0 ? closeness_sum / weight_sum : 1.0;
	if (!(quality >= 0.0))
		quality = 0.0;
	result->quality = Min(quality, 1.0);

	result->ntickets = b->nbest;
	result->nplayers = b->best_players;
	result->filled = b->best_players == b->wanted;
	result->tickets = MemoryContextAlloc(result_context, sizeof(int) * b->nbest);
	result->ticket_team = MemoryContextAlloc(result_context, sizeof(int) * b->nbest);
	/* chosen in ascending candidate order already (DFS goes forward) */
	memcpy(result->tickets, b->best, sizeof(int) * b->nbest);
	memcpy(result->ticket_team, b->best_team, sizeof(int) * b->nbest);
	if (b->roles != NULL)
	{
		result->player_role = MemoryContextAlloc(result_context, sizeof(int) * b->best_players);
		result->player_autofilled = MemoryContextAlloc(result_context, sizeof(bool) * b->best_players);
		memcpy(result->player_role, b->best_role, sizeof(int) * b->best_players);
		memcpy(result->player_autofilled, b->best_autofilled, sizeof(bool) * b->best_players);
	}
}

/* Fills open slots of a running match; see match_search.h. */
MmBackfillResult *
MmSearchBackfill(const MmRuleContext *context, const MmTicket *members, int nmembers,
				 const int *member_team, const int *open_slots,
				 const MmTicket *candidates, int ncandidates,
				 const int *open_seats, const int *member_role)
{
	const MmQueueConfig *config = context->config;
	int			nrules = config->nrules;
	MemoryContext result_context = CurrentMemoryContext;
	MemoryContext scratch;
	MmBackfillResult *result;
	BackfillState b;
	double		member_age = 0;
	int			maxp = MM_MAX_MATCH_SIZE;
	int			best_first = -1;
	double		best_age = 0;
	int			present = 0;
	MmRuleState *level0 = NULL;
	double		level0_age = 0;

	result = palloc0(sizeof(MmBackfillResult));
	result->region = -1;
	result->rule_steps = palloc0(sizeof(MmRuleStep) * Max(nrules, 1));

	scratch = AllocSetContextCreate(result_context, "mm backfill search", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(scratch);

	memset(&b, 0, sizeof(b));
	BackfillRulesInit(&b, context);
	b.members = members;
	b.nmembers = nmembers;
	b.member_team = member_team;
	b.candidates = candidates;
	b.ncandidates = ncandidates;
	b.nteams = config->nteams;
	b.room = palloc(sizeof(int) * Max(b.nteams, 1));
	for (int t = 0; t < Max(b.nteams, 1); t++)
	{
		b.room[t] = Max(open_slots[t], 0);
		/* nor a team past its max (the config may have changed since the request) */
		if (b.nteams > 0)
		{
			int			on_team = 0;

			for (int k = 0; k < nmembers; k++)
				if (member_team[k] == t)
					on_team += members[k].nplayers;
			b.room[t] = Min(b.room[t], Max(config->teams[t].max - on_team, 0));
		}
		b.wanted += b.room[t];
	}
	/* the match never grows past match_size.max, whatever the request asks */
	for (int k = 0; k < nmembers; k++)
		present += members[k].nplayers;
	b.wanted = Min(b.wanted, Min(maxp, Max(config->match_max - present, 0)));
	b.states = palloc0(sizeof(MmRuleState *) * (maxp + 2));
	for (int r = 0; r < nrules; r++)
	{
		b.capacity = Max(b.capacity, MmRuleStateCapacity(config, r, members, nmembers));
		b.capacity = Max(b.capacity, MmRuleStateCapacity(config, r, candidates, ncandidates));
	}
	b.chosen = palloc(sizeof(int) * (maxp + 1));
	b.chosen_team = palloc(sizeof(int) * (maxp + 1));
	b.best = palloc(sizeof(int) * (maxp + 1));
	b.best_team = palloc(sizeof(int) * (maxp + 1));
	b.view_tickets = palloc(sizeof(MmTicket *) * (nmembers + maxp + 1));
	b.view_team = palloc(sizeof(int) * (nmembers + maxp + 1));
	b.team_size = palloc(sizeof(int) * Max(b.nteams, 1));
	if (open_seats != NULL && config->roles != NULL)
	{
		int			seats = 0;

		b.roles = config->roles;
		b.open_seats = open_seats;
		b.member_role = member_role;
		for (int k = 0; k < nmembers; k++)
			b.member_players += members[k].nplayers;
		b.view_role = palloc(sizeof(int) * (b.member_players + maxp + 1));
		b.chosen_role = palloc(sizeof(int) * (maxp + 1));
		b.chosen_autofilled = palloc(sizeof(bool) * (maxp + 1));
		b.best_role = palloc(sizeof(int) * (maxp + 1));
		b.best_autofilled = palloc(sizeof(bool) * (maxp + 1));
		b.role_accept = palloc(sizeof(MmRoleMask) * (maxp + 1));
		b.role_rank = palloc(sizeof(uint8 *) * (maxp + 1));
		b.role_ticket_of = palloc(sizeof(int) * (maxp + 1));
		b.role_ticket_size = palloc(sizeof(int) * (maxp + 1));
		/* only the roles the open slots ask for */
		for (int g = 0; g < b.roles->ngroups; g++)
			for (int r = 0; r < b.roles->nroles; r++)
				seats += open_seats[g * MM_MAX_ROLES + r];
		b.wanted = Min(b.wanted, seats);
	}
	b.budget = MM_BACKFILL_NODES;
	for (int k = 0; k < nmembers; k++)
		member_age = Max(member_age, members[k].age_seconds);

	/*
	 * The oldest chosen candidate sets the step when it is older than every
	 * member: each first candidate (oldest first) is tried with the
	 * thresholds at that age, the rest of the set coming after it.
	 */
	for (int first = 0; first < ncandidates && b.wanted > 0 && b.budget > 0; first++)
	{
		double		age = Max(member_age, candidates[first].age_seconds);
		int			before = b.best_players;

		/* a first candidate that fits no set costs no node of the budget */
		if ((first & 1023) == 1023)
			CHECK_FOR_INTERRUPTS();
		/*
		 * Depth 0, the members at the age's steps, only when the age
		 * changes: once the candidates are younger than every member it is
		 * the members' age for all the rest (the search reads depth 0 and
		 * writes only the depths below it).
		 */
		if (level0 == NULL || age != level0_age)
		{
			level0 = BackfillStartAt(&b, age);
			for (int k = 0; k < nmembers; k++)
				BackfillJoin(&b, level0, &members[k]);
			level0_age = age;
		}
		b.nchosen = 0;
		b.players = 0;
		/* the set starts with candidate first: BackfillDfs from first, one level down */
		{
			const MmTicket *t = &candidates[first];
			bool		done = false;

			if (t->nplayers > b.wanted || !BackfillFits(&b, level0, t) ||
				(b.roles != NULL && !BackfillRolesFit(&b, first)))
				continue;
			for (int team = 0; team < (b.roles != NULL ? 1 : Max(b.nteams, 1)) && !done && b.budget > 0; team++)
			{
				MmRuleState *next;

				if (b.roles == NULL && b.room[team] < t->nplayers)
					continue;
				next = BackfillLevel(&b, 1);
				BackfillCopy(&b, next, level0);
				BackfillJoin(&b, next, t);
				b.room[team] -= t->nplayers;
				b.chosen[0] = first;
				b.chosen_team[0] = b.nteams > 0 && b.roles == NULL ? team : -1;
				b.nchosen = 1;
				b.players = t->nplayers;
				done = BackfillDfs(&b, 1, first + 1);
				b.room[team] += t->nplayers;
			}
			if (b.best_players > before)
			{
				best_first = first;
				best_age = age;
			}
			if (done)
				break;
		}
	}

	if (b.nbest > 0)
		BackfillResultOf(&b, context, result, best_age, result_context);
	(void) best_first;

	MemoryContextSwitchTo(result_context);
	MemoryContextDelete(scratch);
	return result;
}

/* Whether tickets may share a match by the ticket rules; see match_search.h. */
bool
MmTicketsFitTogether(const MmRuleContext *context, const MmTicket *tickets, int ntickets)
{
	const MmQueueConfig *config = context->config;
	MemoryContext old_context = CurrentMemoryContext;
	MemoryContext scratch;
	BackfillState b;
	MmRuleState *states;
	double		age = 0;
	bool		fit = true;

	scratch = AllocSetContextCreate(old_context, "mm tickets fit", ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(scratch);
	memset(&b, 0, sizeof(b));
	BackfillRulesInit(&b, context);
	b.states = palloc0(sizeof(MmRuleState *));
	for (int r = 0; r < config->nrules; r++)
		b.capacity = Max(b.capacity, MmRuleStateCapacity(config, r, tickets, ntickets));
	for (int k = 0; k < ntickets; k++)
		age = Max(age, tickets[k].age_seconds);
	states = BackfillStartAt(&b, age);
	for (int k = 0; k < ntickets && fit; k++)
	{
		fit = BackfillFits(&b, states, &tickets[k]);
		if (fit)
			BackfillJoin(&b, states, &tickets[k]);
	}
	MemoryContextSwitchTo(old_context);
	MemoryContextDelete(scratch);
	return fit;
}
