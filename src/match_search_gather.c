/*
 * match_search_gather.c
 *	  The greedy gathering of a candidate match and its teams (pure C, no
 *	  SPI): rule by rule fits, parties placed on teams, team sizes filled as
 *	  evenly as their bounds allow, teams balanced (MmBalanceTeams) and the
 *	  team rules checked, the match written to the search's result.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "match_search_internal.h"
#include "team_balance.h"

/* Whether a ticket can join the candidate match, rule by rule. */
bool
MmSearchTicketFits(SearchState *s, MmRuleState *states, const MmTicket *t)
{
	/*
	 * The low-priority pool's tickets match each other only; no rule failed
	 * (the anchor is of its own class)
	 */
	if (t->low_priority != s->tickets[s->anchor].low_priority)
		return false;
	for (int k = 0; k < s->nfit; k++)
	{
		int			r = s->fit_rule[k];

		if (t->values[r].kind == MM_VALUE_MISSING ||
			(s->fit_can_add[k] != NULL &&
			 !s->fit_can_add[k] (s->context, &states[r], &t->values[r],
								 s->rule_threshold[r])))
		{
			if (s->counting)
				s->rule_failed[r]++;
			return false;
		}
		if (s->fit_can_add[k] != NULL && s->counting && !s->checking_anchor)
			s->rule_passed[r]++;
	}
	for (int k = 0; k < s->ncompound; k++)
	{
		int			r = s->compound_rule[k];

		if (!MmCompoundCanAdd(s->context, &s->config->rules[r], states,
							  t->values, s->rule_on, s->rule_threshold))
		{
			if (s->counting)
				s->rule_failed[r]++;
			return false;
		}
		if (s->counting && !s->checking_anchor)
			s->rule_passed[r]++;
	}
	return true;
}

/* Adds a ticket to the candidate match and every ticket rule's state. */
void
MmSearchTicketJoin(SearchState *s, MmRuleState *states, int i)
{
	const MmTicket *t = &s->tickets[i];

	for (int k = 0; k < s->nticket_rules; k++)
	{
		int			r = s->ticket_rule[k];

		if (s->ticket_add[k] != NULL)
			s->ticket_add[k] (s->context, &states[r], &t->values[r]);
		else
			MmLeafJoin(s->context, &states[r], &t->values[r], s->rule_threshold[r]);
	}
	s->chosen[s->nchosen++] = i;
	s->chosen_players += t->nplayers;
}

/* Search nodes allowed to PlaceParties before it gives the benefit of the doubt. */
#define MM_PARTY_PLACEMENT_BUDGET 10000

/*
 * Places parties[i..n-1] (largest first) into the rooms left on each team.
 * Teams with the same room left are interchangeable, so only the first of
 * them is tried.
 */
static bool
PlaceParties(const int *parties, int n, int i, int *room, int nteams, int *budget)
{
	int			t,
				u;

	if (i == n || --(*budget) <= 0)
		return true;
	for (t = 0; t < nteams; t++)
	{
		bool		tried = false;

		if (room[t] < parties[i])
			continue;
		for (u = 0; u < t && !tried; u++)
			tried = room[u] == room[t];
		if (tried)
			continue;
		room[t] -= parties[i];
		if (PlaceParties(parties, n, i + 1, room, nteams, budget))
		{
			room[t] += parties[i];
			return true;
		}
		room[t] += parties[i];
	}
	return false;
}

/*
 * Whether the parties gathered so far, with one more of extra players, can
 * each sit on one team of the given sizes.  Solo players fill whatever room
 * is left, so only parties matter.
 */
bool
MmSearchPartiesFit(const SearchState *s, const int *sizes, int extra)
{
	int			parties[MM_MAX_MATCH_SIZE];
	int			room[MM_MAX_TEAMS];
	int			n = 0;
	int			k,
				t,
				budget = MM_PARTY_PLACEMENT_BUDGET;

	for (k = 0; k < s->nchosen; k++)
		if (s->tickets[s->chosen[k]].nplayers > 1)
			parties[n++] = s->tickets[s->chosen[k]].nplayers;
	parties[n++] = extra;
	/* largest first (insertion sort: a match holds few parties) */
	for (k = 1; k < n; k++)
	{
		int			p = parties[k];

		for (t = k; t > 0 && parties[t - 1] < p; t--)
			parties[t] = parties[t - 1];
		parties[t] = p;
	}
	for (t = 0; t < s->config->nteams; t++)
		room[t] = sizes[t];
	return PlaceParties(parties, n, 0, room, s->config->nteams, &budget);
}

/*
 * Greedy: the anchor, then compatible candidates oldest first, until the
 * match holds target players.  With teams (sizes not NULL) a party joins only
 * if every party can still sit on one team.  Returns the players gathered;
 * *packing_skipped tells whether a party was left out for that reason.
 */
int
MmSearchGather(SearchState *s, int target, const int *sizes, bool *packing_skipped)
{
	int			k;
	int			interrupt_mask = s->roles != NULL ? 63 : 4095;

	*packing_skipped = false;
	for (k = 0; k < s->nticket_rules; k++)
	{
		int			r = s->ticket_rule[k];

		MmRuleStateInit(s->context, &s->config->rules[r], &s->states[r]);
	}
	s->nchosen = 0;
	s->chosen_players = 0;
	if (s->tickets[s->anchor].nplayers > target)
		return 0;
	s->checking_anchor = true;
	if (!MmSearchTicketFits(s, s->states, &s->tickets[s->anchor]))
	{
		s->checking_anchor = false;
		return 0;
	}
	s->checking_anchor = false;
	if (s->roles != NULL ? !MmSearchRolesFit(s, s->anchor) :
		sizes != NULL && s->tickets[s->anchor].nplayers > 1 &&
		!MmSearchPartiesFit(s, sizes, s->tickets[s->anchor].nplayers))
		return 0;
	MmSearchTicketJoin(s, s->states, s->anchor);
	for (k = 0; s->chosen_players < target; k++)
	{
		int			i;
		int			np;

		/*
		 * First choices only: among the nearest candidates, a few times the
		 * match's size; beyond them the pass would walk the whole window
		 * for every anchor once a role's first choices are scarce.
		 */
		if (s->first_choices_only && k >= MM_FIRST_CHOICE_CANDIDATES * target)
			break;
		i = MmSearchRankedCandidateAt(s, k);
		if (i < 0)
		{
			/*
			 * Every candidate was considered: the tickets outside the main
			 * rule's window were rejected by that rule without a check.
			 */
			if (s->counting && s->window_excluded > 0)
				s->rule_failed[s->main_rule] += s->window_excluded;
			break;
		}
		/*
		 * one anchor may scan a large pool, for each target size; in a role
		 * queue each candidate's seating check can take a millisecond
		 */
		if ((k & interrupt_mask) == interrupt_mask)
			CHECK_FOR_INTERRUPTS();
		np = s->tickets[i].nplayers;
		if (s->chosen_players + np > target || s->tickets[i].age_seconds < s->min_age)
			continue;
		if (!MmSearchTicketFits(s, s->states, &s->tickets[i]))
			continue;
		if (s->roles != NULL)
		{
			/* the roles place the parties too */
			if (!MmSearchRolesFit(s, i))
			{
				*packing_skipped = true;
				continue;
			}
		}
		else if (sizes != NULL && np > 1 && !MmSearchPartiesFit(s, sizes, np))
		{
			*packing_skipped = true;
			continue;
		}
		MmSearchTicketJoin(s, s->states, i);
	}
	return s->chosen_players;
}

/* The chosen tickets (and extra, -1: none) as a role problem. */
static void
RoleProblemOf(SearchState *s, int extra, MmRolePlayers *players)
{
	int			n = 0,
				ntickets = 0;

	for (int k = 0; k <= s->nchosen; k++)
	{
		const MmTicket *t;

		if (k == s->nchosen && extra < 0)
			break;
		t = &s->tickets[k < s->nchosen ? s->chosen[k] : extra];
		for (int p = 0; p < t->nplayers; p++)
		{
			s->role_accept[n] = s->first_choices_only ? MmSearchFirstChoices(s, t, p) :
				t->role_accept[p];
			s->role_rank[n] = &t->role_rank[p * MM_MAX_ROLES];
			s->role_ticket_of[n] = ntickets;
			n++;
		}
		s->role_ticket_size[ntickets++] = t->nplayers;
	}
	players->nplayers = n;
	players->accept = s->role_accept;
	players->rank = s->role_rank;
	players->ticket_of = s->role_ticket_of;
	players->ntickets = ntickets;
	players->ticket_size = s->role_ticket_size;
	players->ticket_group = NULL;
}

bool
MmSearchRolesFit(SearchState *s, int extra)
{
	MmRolePlayers players;

	RoleProblemOf(s, extra, &players);
	return MmRolesFit(s->roles, &players, NULL);
}

bool
MmSearchSeatRoles(SearchState *s)
{
	MmRolePlayers players;
	MmRoleSeating seating;
	int			n = MmSearchPreparePlayers(s);
	int			p = 0;

	RoleProblemOf(s, -1, &players);
	seating.group_of = s->team_of;
	seating.role_of = s->player_role;
	seating.autofilled = s->player_autofilled;
	if (!MmRolesSeat(s->roles, &players, NULL, s->balance_rule >= 0 ? s->ratings : NULL, &seating))
		return false;
	for (int t = 0; t < s->config->nteams; t++)
		s->actual_size[t] = 0;
	for (int k = 0; k < s->nchosen; k++)
	{
		s->ticket_team[k] = s->team_of[p];
		p += s->chosen_tickets[k]->nplayers;
	}
	for (p = 0; p < n && s->config->nteams > 0; p++)
		s->actual_size[s->team_of[p]]++;
	return true;
}

/*
 * Team sizes for a total by water filling: from each team's minimum (and
 * `party` on team `widest`, when it is a team), each further player to the
 * smallest team with room.  False when the bounds cannot make the total.
 */
static bool
FillTeamSizes(const MmQueueConfig *config, const int *team_min, int total, int widest, int party,
			  int *sizes)
{
	int			rest = total;

	for (int t = 0; t < config->nteams; t++)
	{
		sizes[t] = t == widest ? Max(team_min[t], party) : team_min[t];
		rest -= sizes[t];
	}
	for (; rest > 0; rest--)
	{
		int			best = -1;

		for (int t = 0; t < config->nteams; t++)
			if (sizes[t] < config->teams[t].max && (best < 0 || sizes[t] < sizes[best]))
				best = t;
		if (best < 0)
			return false;
		sizes[best]++;
	}
	return rest == 0;
}

/*
 * Team sizes for a total, as even as the teams' bounds allow (water
 * filling: this minimises the largest team and maximises the smallest at
 * once), with one team of at least `party` players: the anchor's party sits
 * on one team, so when the even sizes have no room for it (a party of 5
 * with 7 players over two teams: 4 and 3) the team with the largest
 * maximum takes it first (5 and 2) and the rest is filled as evenly.  False
 * when the bounds cannot make the total or the spread exceeds max_spread
 * (< 0: no limit).
 */
bool
MmSearchEvenTeamSizes(const MmQueueConfig *config, const int *team_min, int total, int max_spread,
					  int party, int *sizes)
{
	int			t;
	int			lo,
				hi,
				widest = 0;

	if (!FillTeamSizes(config, team_min, total, -1, 0, sizes))
		return false;
	hi = 0;
	for (t = 0; t < config->nteams; t++)
	{
		hi = Max(hi, sizes[t]);
		if (config->teams[t].max > config->teams[widest].max)
			widest = t;
	}
	/* no team has room for the party: the widest one takes it first */
	if (hi < party && (party > config->teams[widest].max ||
					   !FillTeamSizes(config, team_min, total, widest, party, sizes)))
		return false;
	lo = hi = sizes[0];
	for (t = 1; t < config->nteams; t++)
	{
		lo = Min(lo, sizes[t]);
		hi = Max(hi, sizes[t]);
	}
	return max_spread < 0 || hi - lo <= max_spread;
}

/* Fills chosen_tickets and the balancing ratings of the gathered players. */
int
MmSearchPreparePlayers(SearchState *s)
{
	int			k,
				p,
				n = 0;
	double		sum = 0;
	int			known = 0;
	double		fill;

	s->all_solo = true;
	for (k = 0; k < s->nchosen; k++)
	{
		const MmTicket *t = &s->tickets[s->chosen[k]];

		s->chosen_tickets[k] = t;
		if (t->nplayers != 1)
			s->all_solo = false;
		for (p = 0; p < t->nplayers; p++)
		{
			double		v = NAN;

			if (s->balance_rule >= 0 && t->values[s->balance_rule].player_values != NULL)
				v = t->values[s->balance_rule].player_values[p];
			s->ratings[n] = v;
			s->party[n] = k;
			if (!isnan(v))
			{
				sum += v;
				known++;
			}
			n++;
		}
	}
	/* players without a value count as the match's average */
	fill = known > 0 ? sum / known : 0;
	for (p = 0; p < n; p++)
		if (isnan(s->ratings[p]))
			s->ratings[p] = fill;
	return n;
}

/*
 * Splits the gathered tickets into teams of the given sizes (or, failing
 * that, any sizes within the teams' bounds) and checks the team rules.
 * Sets ticket_team, actual_size and *team_spread, the spread between the
 * teams' averages of the balancing attribute.
 */
static bool
FormTeams(SearchState *s, const int *sizes, double *team_spread)
{
	const MmQueueConfig *config = s->config;
	MmBalanceInput input;
	int			n = MmSearchPreparePlayers(s);
	int			k,
				t,
				p;
	double		lo_avg = 0,
				hi_avg = 0;
	double		team_sum[MM_MAX_TEAMS];

	/* a role queue: the seating forms the teams */
	if (s->roles != NULL)
	{
		if (!MmSearchSeatRoles(s))
			return false;
	}
	else
	{
		input.n = n;
		input.ratings = s->ratings;
		/* every player alone on a ticket: the party ids all differ, as with none */
		input.party = s->all_solo ? NULL : s->party;
		input.team_count = config->nteams;
		input.team_size = sizes;
		if (!MmBalanceTeams(&input, s->team_of, NULL))
		{
			input.team_size = NULL;
			if (!MmBalanceTeams(&input, s->team_of, NULL))
				return false;
		}
	}

	for (t = 0; t < config->nteams; t++)
	{
		s->actual_size[t] = 0;
		team_sum[t] = 0;
	}
	p = 0;
	for (k = 0; k < s->nchosen; k++)
	{
		s->ticket_team[k] = s->team_of[p];
		p += s->chosen_tickets[k]->nplayers;
	}
	for (p = 0; p < n; p++)
	{
		s->actual_size[s->team_of[p]]++;
		team_sum[s->team_of[p]] += s->ratings[p];
	}
	for (t = 0; t < config->nteams; t++)
	{
		double		avg;

		if (s->actual_size[t] < s->team_min[t] || s->actual_size[t] > config->teams[t].max)
			return false;
		avg = team_sum[t] / s->actual_size[t];
		if (t == 0)
			lo_avg = hi_avg = avg;
		lo_avg = Min(lo_avg, avg);
		hi_avg = Max(hi_avg, avg);
	}
	*team_spread = hi_avg - lo_avg;
	return true;
}

/* Whether the team rules hold; adds their weighted closeness. */
bool
MmSearchCheckTeamRules(SearchState *s, double *closeness_sum, double *weight_sum)
{
	MmTeamsView view;
	int			r;

	view.nteams = s->config->nteams;
	view.team_size = s->actual_size;
	view.ntickets = s->nchosen;
	view.tickets = s->chosen_tickets;
	view.ticket_team = s->ticket_team;
	view.player_role = s->roles != NULL ? s->player_role : NULL;
	view.nroles = s->roles != NULL ? s->roles->nroles : 0;
	for (r = 0; r < s->config->nrules; r++)
	{
		const MmRuleConfig *rule = &s->config->rules[r];
		double		c;

		if (!s->rule_on[r] || s->handlers[r]->scope != MM_SCOPE_TEAMS)
			continue;
		if (!s->handlers[r]->check_teams(rule, r, &view, s->rule_threshold[r], &c))
		{
			if (s->counting)
				s->rule_failed[r]++;
			return false;
		}
		if (s->counting)
			s->rule_passed[r]++;
		*closeness_sum += rule->weight * c;
		*weight_sum += rule->weight;
	}
	return true;
}

/* Records the gathered tickets as a match and takes them out of the pool. */
void
MmSearchEmitMatch(SearchState *s, double closeness_sum, double weight_sum)
{
	const MmQueueConfig *config = s->config;
	MmFoundMatch *m;
	int			r,
				k;
	double		quality;

	/* newest: the steps are those of the match's youngest ticket */
	if (config->newest_age)
	{
		double		youngest = s->tickets[s->chosen[0]].age_seconds;

		for (k = 1; k < s->nchosen; k++)
			youngest = Min(youngest, s->tickets[s->chosen[k]].age_seconds);
		(void) MmSearchSetStepsAt(s, youngest);
	}
	if (s->result->nmatches == s->matches_allocated)
	{
		s->matches_allocated *= 2;
		s->result->matches = repalloc(s->result->matches,
									  sizeof(MmFoundMatch) * s->matches_allocated);
	}
	/* role queues: each ticket's first player in the seating */
	for (k = 0; s->roles != NULL && k < s->nchosen; k++)
		s->party[k] = k == 0 ? 0 : s->party[k - 1] + s->tickets[s->chosen[k - 1]].nplayers;
	/* the tickets in age order (the search chose them in ranked order) */
	for (k = 1; k < s->nchosen; k++)
	{
		int			i = s->chosen[k];
		int			team = s->ticket_team[k];
		int			first = s->party[k];
		int			j = k;

		while (j > 0 && s->chosen[j - 1] > i)
		{
			s->chosen[j] = s->chosen[j - 1];
			s->ticket_team[j] = s->ticket_team[j - 1];
			s->party[j] = s->party[j - 1];
			j--;
		}
		s->chosen[j] = i;
		s->ticket_team[j] = team;
		s->party[j] = first;
	}
	m = &s->result->matches[s->result->nmatches++];
	m->player_role = NULL;
	m->player_autofilled = NULL;
	if (s->roles != NULL)
	{
		int			p = 0;

		m->player_role = MemoryContextAlloc(s->result_context, sizeof(int) * s->chosen_players);
		m->player_autofilled = MemoryContextAlloc(s->result_context, sizeof(bool) * s->chosen_players);
		for (k = 0; k < s->nchosen; k++)
			for (int q = 0; q < s->tickets[s->chosen[k]].nplayers; q++, p++)
			{
				m->player_role[p] = s->player_role[s->party[k] + q];
				m->player_autofilled[p] = s->player_autofilled[s->party[k] + q];
			}
	}
	m->ntickets = s->nchosen;
	m->nplayers = s->chosen_players;
	m->tickets = MemoryContextAlloc(s->result_context, sizeof(int) * 2 * s->nchosen);
	m->ticket_team = m->tickets + s->nchosen;
	for (k = 0; k < s->nchosen; k++)
	{
		m->tickets[k] = s->chosen[k];
		m->ticket_team[k] = config->nteams > 0 ? s->ticket_team[k] : -1;
		if (s->chosen[k] != s->anchor)
			MmSearchRemoveTicket(s, s->chosen[k]);
	}

	/* ticket rules: weighted closeness; region from the first latency rule */
	m->region = -1;
	m->rule_steps = MemoryContextAlloc(s->result_context,
									   sizeof(MmRuleStep) * Max(config->nrules, 1));
	for (r = 0; r < config->nrules; r++)
	{
		const MmRuleConfig *rule = &config->rules[r];

		m->rule_steps[r].step = s->rule_step[r];
		m->rule_steps[r].threshold = s->rule_threshold[r];
		m->rule_steps[r].off = !s->rule_on[r];
		if (rule->type == MM_RULE_LATENCY && m->region < 0)
			m->region = MmChooseRegion(s->context, &s->states[r], s->rule_threshold[r], NULL);
		if (!s->rule_on[r] || s->handlers[r]->scope != MM_SCOPE_TICKETS || rule->in_compound)
			continue;
		closeness_sum += rule->weight *
			s->handlers[r]->closeness(s->context, &s->states[r], s->rule_threshold[r]);
		weight_sum += rule->weight;
	}
	quality = weight_sum > 0 ? closeness_sum / weight_sum : 1.0;
	/* NaN-safe clamp: matches_quality_range must hold whatever the inputs */
	if (!(quality >= 0.0))
		quality = 0.0;
	if (quality > 1.0)
		quality = 1.0;
	m->quality = quality;
}

/*
 * Teams for the gathered tickets (FormTeams), then the team rules; adds the
 * team rules' weighted closeness, and the implicit team balance component,
 * to the sums.
 */
bool
MmSearchTryTeams(SearchState *s, const int *sizes, double *closeness_sum, double *weight_sum)
{
	double		team_spread = 0;

	*closeness_sum = 0;
	*weight_sum = 0;
	if (!FormTeams(s, sizes, &team_spread))
		return false;
	if (!MmSearchCheckTeamRules(s, closeness_sum, weight_sum))
		return false;

	/*
	 * Team balance in the quality: without a team_difference rule to measure
	 * it, an implicit component of weight 1, the spread of the team averages
	 * against the main difference rule's threshold.
	 */
	if (s->balance_rule >= 0 && s->balance_rule == s->main_rule && s->rule_on[s->main_rule])
	{
		double		allowed = s->rule_threshold[s->main_rule];
		double		c = allowed > 0 ? 1.0 - team_spread / allowed : 1.0;

		*closeness_sum += c >= 0.0 ? c : 0.0;	/* NaN counts as 0 */
		*weight_sum += 1.0;
	}
	return true;
}
