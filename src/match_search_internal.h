/*
 * match_search_internal.h
 *	  The search's working state and what its phases share (match_search.c,
 *	  match_search_pool.c, match_search_gather.c, match_search_exhaustive.c).
 *	  Not for the rest of the extension, which sees match_search.h.
 */
#ifndef MM_MATCH_SEARCH_INTERNAL_H
#define MM_MATCH_SEARCH_INTERNAL_H

#include "postgres.h"

#include "match_search.h"

/* Nodes one anchor's exhaustive search may visit, and the whole search. */
#define MM_EXHAUSTIVE_ANCHOR_NODES 262144L
#define MM_EXHAUSTIVE_SEARCH_NODES 8000000L
/* a leaf that forms teams costs as much as this many nodes */
#define MM_EXHAUSTIVE_LEAF_COST 64
/* the first-choices pass of a role queue looks at this many candidates per seat */
#define MM_FIRST_CHOICE_CANDIDATES 8

/* A ticket rule's can_add and add (see MmRuleHandler), called per candidate. */
typedef bool (*CanAddFunction) (const MmRuleContext *context, const MmRuleState *state,
								const MmRuleValue *value, double threshold);
typedef void (*AddFunction) (const MmRuleContext *context, MmRuleState *state,
							 const MmRuleValue *value);

/* The search's working state over one queue's tickets. */
typedef struct SearchState
{
	const MmRuleContext *context;
	const MmQueueConfig *config;
	MmTicket   *tickets;
	int			ntickets;
	const MmRuleHandler **handlers;
	int		   *ticket_rule;	/* the MM_SCOPE_TICKETS rules, in order */
	AddFunction *ticket_add;	/* ... and their handlers' add (NULL: a rule
								 * named in a compound, MmLeafJoin) */
	int			nticket_rules;
	bool		has_final;		/* a rule with a whole-match condition, a
								 * compound, or min_tickets > 1 */

	/* the pool: alive tickets */
	bool	   *dead;
	int		   *next_age;		/* union-find: next alive ticket index >= i */

	/* main numeric rule: value-sorted array of tickets with a value */
	int			main_rule;		/* -1: none */
	double		main_widen;		/* its largest widen_by_rd widening of any ticket */
	int			nsorted;
	int		   *sorted;			/* ticket indexes by (value, index) */
	double	   *sorted_value;
	int		   *pos_of;			/* sorted position of each ticket, -1 */
	double	   *main_value;		/* each ticket's main value (contiguous: the */
	char	   *main_kind;		/* walk reads it for every ticket it passes) */
	int		   *next_sorted;	/* union-find: next alive position >= p */
	int		   *fenwick;		/* alive counts over sorted positions */
	int			alive_any;		/* alive tickets whose main value is ANY */
	int		   *any_list;		/* those tickets in age order */
	int			nany;

	/* the balancing attribute: first team_difference, else first difference */
	int			balance_rule;

	/* per anchor */
	int			anchor;
	bool	   *rule_on;
	int		   *fit_rule;		/* the rules on, in order (MmSearchTicketFits) */
	CanAddFunction *fit_can_add;	/* ... and can_add for a ticket rule, else
									 * NULL */
	int			nfit;
	int		   *compound_rule;	/* the compounds on (MmSearchTicketFits) */
	int			ncompound;
	double	   *rule_threshold;
	int		   *rule_step;
	MmRuleState *states;
	bool		windowed;
	double		window_lo;
	double		window_hi;
	int		   *cand;			/* candidates produced so far, in age order */
	int			ncand;
	bool		cand_done;
	bool		cand_walking;	/* still walking the pool in age order */
	int			walk_cursor;
	long		walk_budget;

	/* ranking: the first rank_limit candidates, by (cost, age) */
	int			rank_limit;
	int			latency_rule;	/* the first latency rule, -1: none */
	int		   *region_population;	/* largest_population: tickets per region */
	double	   *sort_keys;		/* sorted: rank_limit x nsort distances */
	int		   *rank_rule;		/* rules on that rank (weight > 0, distance) */
	int			nrank_rules;
	int		   *ranked;
	double	   *rank_cost;
	int			nranked;

	/* exhaustive fallback (MmSearchExhaustive) */
	MmRuleState **dfs_states;	/* per depth: every rule's state, or NULL */
	int			dfs_depths;
	int		   *dfs_suffix;		/* players of ranked[j..] */
	long		dfs_budget;		/* nodes left for this anchor */
	long		search_budget;	/* nodes left for the whole search */

	/* greedy scratch */
	int		   *chosen;
	int			nchosen;
	int			chosen_players;

	/* team scratch */
	double	   *ratings;
	int		   *party;
	bool		all_solo;		/* every gathered ticket has one player */
	int		   *team_of;
	int		   *team_size;
	int		   *team_max;		/* each team's max */
	int		   *team_min;		/* each team's min at the anchor's age */
	int			match_min;		/* the match's min players at the anchor's age */
	double		min_age;		/* newest: candidates younger than this wait */
	int		   *actual_size;
	int		   *ticket_team;
	const MmTicket **chosen_tickets;

	/* a role queue's (roles.h): the chosen players as a role problem */
	const MmRolesConfig *roles; /* NULL: no roles */
	MmRoleMask *role_accept;
	const uint8 **role_rank;
	int		   *role_ticket_of;
	int		   *role_ticket_size;
	int		   *player_role;	/* the seating: each chosen player's role */
	bool	   *player_autofilled;
	bool		first_choices_only; /* gathering: each player on a first choice */
	/* the alive players by the roles they may take, and by their first choices */
	int		   *pool_accept;	/* 1 << nroles counts */
	int		   *pool_first;

	MemoryContext result_context;	/* the caller's: the matches live there */
	MmSearchResult *result;
	int64	   *rule_passed;	/* = result's: per rule, candidate checks passed */
	int64	   *rule_failed;	/* ... and failed (mm.rule_stats) */
	/*
	 * The counts take one pass per anchor and age: the first greedy pass over
	 * its candidates (MmSearchGather) and the team check of what it gathered.  Later
	 * passes (other team sizes, the exhaustive search) try the same
	 * candidates again and are not counted, nor is the anchor's pass of its
	 * own check (it is no candidate; its failure, a missing value, is).
	 */
	bool		counting;
	bool		checking_anchor;
	int			alive;			/* tickets in the pool */
	int			window_excluded;	/* alive tickets outside the anchor's window */
	int			matches_allocated;
} SearchState;

/*
 * match_search_pool.c: the pool of alive tickets, the main rule's value
 * order, the candidates and their ranking.
 */

/* Takes a ticket out of the pool. */
extern void MmSearchRemoveTicket(SearchState *s, int i);

/* A player's first choices as a mask (the roles ranked first). */
extern MmRoleMask MmSearchFirstChoices(const SearchState *s, const MmTicket *t, int player);

/*
 * A role queue: whether the anchor and the alive pool hold players enough
 * for some composition's seats (Hall's condition on the seats, parties
 * and rules left aside): when not, no match can form around the anchor and
 * the search does not scan the pool for one.  first_only: counting only
 * first choices.
 */
extern bool MmSearchPoolCanSeat(const SearchState *s, bool first_only);

/* Builds the pool structures. */
extern void MmSearchInit(SearchState *s, const MmRuleContext *context, MmTicket *tickets, int ntickets,
						 MemoryContext result_context);

/*
 * match_search_pool.c: every rule's step at an age (the rules that are on,
 * their thresholds), and the team sizes' bounds then.  Returns the largest
 * team size spread team_size_balance allows (-1: no limit).
 */
extern int	MmSearchSetStepsAt(SearchState *s, double age);

/* Starts the candidate stream of an anchor. */
extern void MmSearchCandidatesStart(SearchState *s);

/* The k-th candidate of the anchor (age order), or -1 when there is none. */
extern int	MmSearchCandidateAt(SearchState *s, int k);

/*
 * Ranks the anchor's first rank_limit candidates (age order) by their cost
 * against the anchor (MmCandidateCost: each ranking rule's distance times
 * its weight), ties by age.  Without a ranking rule the order stays by age.
 */
extern void MmSearchRankCandidates(SearchState *s);

/*
 * match_search_gather.c: the greedy gathering, team sizes and teams, and the
 * match written to the result.
 */

/* Whether a ticket can join the candidate match, rule by rule. */
extern bool MmSearchTicketFits(SearchState *s, MmRuleState *states, const MmTicket *t);

/* Adds a ticket to the candidate match and every ticket rule's state. */
extern void MmSearchTicketJoin(SearchState *s, MmRuleState *states, int i);

/*
 * Whether the parties gathered so far, with one more of extra players, can
 * each sit on one team of the given sizes.  Solo players fill whatever room
 * is left, so only parties matter.
 */
extern bool MmSearchPartiesFit(const SearchState *s, const int *sizes, int extra);

/*
 * Greedy: the anchor, then compatible candidates oldest first, until the
 * match holds target players.  With teams (sizes not NULL) a party joins only
 * if every party can still sit on one team.  Returns the players gathered;
 * *packing_skipped tells whether a party was left out for that reason.
 */
extern int	MmSearchGather(SearchState *s, int target, const int *sizes, bool *packing_skipped);

/*
 * A role queue: whether the chosen tickets, with ticket extra (-1: none),
 * can still be seated on roles (roles.h MmRolesFit).
 */
extern bool MmSearchRolesFit(SearchState *s, int extra);

/*
 * A role queue: seats the chosen tickets (MmRolesSeat): ticket_team,
 * team_of, actual_size, player_role and player_autofilled.  False when
 * they cannot be seated.
 */
extern bool MmSearchSeatRoles(SearchState *s);

/*
 * Team sizes for a total, as even as the teams' bounds allow (water
 * filling: this minimises the largest team and maximises the smallest at
 * once), with one team of at least `party` players (the anchor's, which
 * sits on one team).  False when the bounds cannot make the total or the
 * spread exceeds max_spread (< 0: no limit).
 */
extern bool MmSearchEvenTeamSizes(const MmQueueConfig *config, const int *team_min, int total, int max_spread,
								  int party, int *sizes);

/* Fills chosen_tickets and the balancing ratings of the gathered players. */
extern int	MmSearchPreparePlayers(SearchState *s);

/* Whether the team rules hold; adds their weighted closeness. */
extern bool MmSearchCheckTeamRules(SearchState *s, double *closeness_sum, double *weight_sum);

/* Records the gathered tickets as a match and takes them out of the pool. */
extern void MmSearchEmitMatch(SearchState *s, double closeness_sum, double weight_sum);

/*
 * Teams for the gathered tickets (FormTeams), then the team rules; adds the
 * team rules' weighted closeness, and the implicit team balance component,
 * to the sums.
 */
extern bool MmSearchTryTeams(SearchState *s, const int *sizes, double *closeness_sum, double *weight_sum);

/*
 * match_search_exhaustive.c: the bounded exhaustive fallback, and filling a
 * formed match up to its largest size.
 */

/*
 * The exhaustive fallback when the ranked greedy formed nothing: a
 * depth-first search over the ranked candidates (see Dfs).  On success the
 * chosen tickets are in s->chosen and their states in s->states.
 */
extern bool MmSearchExhaustive(SearchState *s, int lo, int hi, const int *sizes,
							   double *closeness_sum, double *weight_sum);

/*
 * Free-for-all after the exhaustive search found a match of at least
 * match_size.min: more candidates join, in search order, up to max.
 */
extern void MmSearchExtendMatch(SearchState *s);


/* Inline for the per-candidate loops. */

/*
 * The k-th candidate in search order: the ranked ones first, then the rest in
 * age order; -1 when there is none.
 */
static inline int
MmSearchRankedCandidateAt(SearchState *s, int k)
{
	if (k < s->nranked)
		return s->ranked[k];
	return MmSearchCandidateAt(s, k);
}

/* The whole-match conditions (rules.h MmFinalHolds) and min_tickets. */
static inline bool
MmSearchFinalHolds(SearchState *s, const MmRuleState *states)
{
	if (!s->has_final)
		return true;
	return s->nchosen >= s->config->min_tickets &&
		MmFinalHolds(s->context, states, s->rule_on, s->rule_threshold);
}

#endif							/* MM_MATCH_SEARCH_INTERNAL_H */
