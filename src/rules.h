/*
 * rules.h
 *	  The one rule mechanism of the tick: a handler per rule type (pure C, no SPI).
 *
 * A queue's rules (MmRuleConfig, parsed by queue_config*.c) are evaluated
 * here and nowhere else.  Each rule type has one handler, in its file
 * rule_<type>.c and listed in the table of rules.c, that knows how to
 *	 - extract a ticket's value from its players (once, when the tick loads it),
 *	 - say whether a ticket may join a candidate match at a threshold
 *	   (ticket rules, checked incrementally as tickets join), or whether formed
 *	   teams satisfy the rule (team rules, checked once teams exist),
 *	 - rate how close the match is, in [0,1], for the match quality.
 * A new rule type (set_intersection, match_total, comparison, blocklist,
 * compound) or value source (player, rating) is a new handler or a new case
 * in MmLookupPlayerValue (rules.c); the search (match_search*.c) and the tick
 * (tick.c) do not change.
 */
#ifndef MM_RULES_H
#define MM_RULES_H

#include "postgres.h"
#include "utils/jsonb.h"

#include "queue_config.h"
#include "roles.h"

/* One player of a ticket, as the tick parsed it from the players jsonb. */
typedef struct MmPlayerInput
{
	const char *id;
	JsonbContainer *attributes; /* NULL when the player sent none */
	JsonbContainer *latencies;	/* NULL when the player sent none */
	JsonbContainer *server_attributes;	/* mm.players.attributes ("source": "player") */
	JsonbContainer *rating;		/* the stored rating in the queue's pool, defaults
								 * for the unrated: {"rating", "rd", "mu", "sigma"}
								 * ("source": "rating"); with per-role ratings, the
								 * rating of the player's first listed role */
	JsonbContainer *roles;		/* the player's "roles" list; NULL: any role */
	bool		autofill_protected; /* autofilled within protect_games games */
	JsonbContainer *role_rating[MM_MAX_ROLES];	/* per-role ratings: each role's */
} MmPlayerInput;

/* Whether a ticket has a value for a rule. */
typedef enum MmValueKind
{
	MM_VALUE_PRESENT,			/* a value the rule compares */
	MM_VALUE_ANY,				/* missing, "when_missing": "match_any": matches anything */
	MM_VALUE_MISSING			/* missing: the ticket cannot satisfy the rule while it is on */
} MmValueKind;

/* A ticket's latency to one region: the worst over its players. */
typedef struct MmRegionLatency
{
	int			region;			/* index into MmRuleContext.regions */
	double		ms;
	float		sum;			/* the players' latencies added up (averages) */
	float		dist;			/* the most a player is above their own best
								 * region (max_distance) */
} MmRegionLatency;

/* A ticket's value for one rule, extracted once when the ticket is loaded. */
typedef struct MmRuleValue
{
	/* (pointers and doubles first, then ints: a loaded ticket holds one per rule) */
	double		number;			/* difference: the party's merged value */
	double		widen;			/* difference with widen_by_rd: f x the party's
								 * largest rating deviation */
	const char *string;			/* string_equality */
	/* latency: regions every player can play in, with the worst latency */
	MmRegionLatency *regions;
	double		floor_ms;		/* latency: the default applying to every region */
	/* numeric rules: each player's own value (NaN: matches anything) */
	double	   *player_values;
	/*
	 * set_intersection: the party's common values; blocklist: the players
	 * its players block.  Interned (MmRuleContext strings), sorted, unique.
	 */
	int		   *set;
	int		   *ids;			/* blocklist: the party's own player ids, interned */
	int			nregions;
	int			nfloor;			/* latency: players at the default (their sums) */
	int			nvalues;		/* entries of player_values (the players) */
	int			nset;
	int			nids;
	uint8		kind;			/* an MmValueKind, in a byte beside the flag */
	bool		all_regions;	/* latency: no player reported latencies but a
								 * default or match_any applies everywhere */
} MmRuleValue;

/* A loaded ticket: what the search needs, nothing of SPI. */
typedef struct MmTicket
{
	int64		id;
	double		age_seconds;	/* now - created_at, never negative */
	const char **player_ids;
	MmRuleValue *values;		/* one per rule of the queue, in config order */
	/* a role queue's (NULL otherwise): per player, see roles.h */
	uint8	   *role_rank;		/* nplayers x MM_MAX_ROLES ranks */
	MmRoleMask *role_accept;	/* roles each player may take now */
	int			nplayers;		/* (beside the flags: 8 bytes less a ticket) */
	/*
	 * A queue with a low-priority pool (penalties): a player of the ticket
	 * has low-priority games left (penalised), and the ticket is younger
	 * than the pool's bound (low_priority): it then matches only tickets
	 * that are low_priority too.  Set by the tick's load, false elsewhere.
	 */
	bool		penalised;
	bool		low_priority;
} MmTicket;

/*
 * Where the extraction carves a loaded ticket's small pieces (rule values,
 * player ids, a party's numbers and regions): blocks of the memory context
 * MmRuleContextInit ran in, handed out back to back, with no chunk header or
 * power-of-two rounding per piece (a solo ticket of a difference and a
 * latency rule over 3 regions: 272 bytes instead of 488), so a load of
 * 100,000 tickets touches far fewer fresh pages.  Pieces are never freed one
 * by one: they go with that context, as the rule context does.
 */
typedef struct MmRuleArena
{
	MemoryContext context;		/* the rule context's; NULL: palloc only */
	char	   *block;			/* the current block (NULL: none yet) */
	Size		used;			/* bytes of it handed out */
	Size		size;			/* its size */
} MmRuleArena;

/*
 * Per-tick context shared by the handlers: the region names seen so far
 * (latency rules intern them so a region is an int during the search).  A
 * region's index is its order of first appearance; region_hash (open
 * addressing, region index or -1, a power of two in size) finds a name in
 * O(1), since senders choose the names and may send many.
 */
typedef struct MmRuleContext
{
	const MmQueueConfig *config;
	int			nregions;
	int			regions_allocated;
	char	  **regions;
	int			region_hash_size;	/* 0: no table yet */
	int		   *region_hash;
	/* the same for the strings of list attributes and player ids (interned) */
	int			nstrings;
	int			strings_allocated;
	char	  **strings;
	int			string_hash_size;
	int		   *string_hash;
	MmRuleArena arena;
} MmRuleContext;

/*
 * The state of one ticket rule over the tickets of a candidate match so far.
 * One struct for every type keeps the search free of per-type code; each
 * handler uses the fields it needs.
 */
typedef struct MmRuleState
{
	const MmRuleConfig *rule;	/* set by MmRuleStateInit */
	bool		broken;			/* a rule named in a compound: a ticket that
								 * breaks it has joined (see MmLeafJoin) */
	bool		has_value;		/* a PRESENT value has joined */
	double		min;			/* difference */
	double		max;
	double		widen;			/* difference: the largest widen joined so far */
	const char *string;			/* string_equality */

	/*
	 * latency: until a ticket with its own regions joins (restricted false)
	 * every region is open with worst latency max.  Then the regions still
	 * open to every ticket so far, by region index, each with its worst
	 * latency: a subset of the first such ticket's regions, so the state
	 * never grows with the number of regions of the queue.  The arrays hold
	 * region_capacity entries (the most regions of one ticket).
	 */
	bool		restricted;
	int			nopen;
	int			region_capacity;
	int		   *open_region;
	double	   *region_worst;
	double	   *region_sum;		/* latency: sum of the players' latencies */
	double	   *region_dist;	/* latency: worst distance from a player's best */
	double		uniform_sum;	/* latency, not restricted: the sum every
								 * region has */
	int			nplayers;		/* latency: players joined (averages) */

	/*
	 * blocklist: the values of the tickets joined so far (region_capacity
	 * entries, like the arrays above; set_intersection keeps its common
	 * values in open_region, comparison all_different its values in
	 * region_worst).
	 */
	int			njoined;
	const MmRuleValue **joined;
} MmRuleState;

/* The teams of a formed candidate match, for team rules. */
typedef struct MmTeamsView
{
	int			nteams;
	const int  *team_size;		/* players per team */
	int			ntickets;
	const MmTicket *const *tickets;
	const int  *ticket_team;	/* team of each ticket (parties stay together) */
	/* a role queue's: each player's role, the tickets' players in order */
	const int  *player_role;	/* NULL: no roles */
	int			nroles;
} MmTeamsView;

typedef enum MmRuleScope
{
	MM_SCOPE_TICKETS,			/* checked as each ticket joins */
	MM_SCOPE_TEAMS				/* checked once the teams are formed */
} MmRuleScope;

/* What a rule type does.  One per type (rule_<type>.c), listed in rules.c. */
typedef struct MmRuleHandler
{
	MmRuleType	type;
	const char *type_name;
	MmRuleScope scope;

	/* Fills *value from the ticket's players. */
	void		(*extract) (MmRuleContext *context, const MmRuleConfig *rule,
							const MmPlayerInput *players, int nplayers,
							MmRuleValue *value);

	/* Ticket rules: start a state, test and add a ticket, rate the result. */
	void		(*state_init) (const MmRuleContext *context, MmRuleState *state);
	bool		(*can_add) (const MmRuleContext *context, const MmRuleState *state,
							const MmRuleValue *value, double threshold);
	void		(*add) (const MmRuleContext *context, MmRuleState *state,
						const MmRuleValue *value);
	double		(*closeness) (const MmRuleContext *context, const MmRuleState *state,
							  double threshold);

	/*
	 * How far a candidate ticket is from the anchor for this rule, in [0,1]
	 * (0: as close as can be), for ranking acceptable candidates; NULL: the
	 * rule does not rank (every candidate is at 0).  See MmCandidateCost.
	 */
	double		(*distance) (const MmRuleContext *context, const MmRuleConfig *rule,
							 const MmRuleValue *anchor, const MmRuleValue *candidate,
							 double threshold);

	/*
	 * Ticket rules with a condition only the whole match can meet (a sum's
	 * min, a spread's min): whether the state meets it; NULL: always.
	 */
	bool		(*check_final) (const MmRuleContext *context, const MmRuleState *state,
								double threshold);

	/* Team rules: whether the teams satisfy the rule, and how closely. */
	bool		(*check_teams) (const MmRuleConfig *rule, int rule_index,
								const MmTeamsView *teams, double threshold,
								double *closeness);
} MmRuleHandler;

/* The handler of a rule type; ERROR for a type without one. */
extern const MmRuleHandler *MmRuleHandlerFor(MmRuleType type);

/* Starts a per-tick rule context (allocates in CurrentMemoryContext). */
extern void MmRuleContextInit(MmRuleContext *context, const MmQueueConfig *config);

/*
 * A piece of a loaded ticket, from the rule context's arena: like palloc
 * (MAXALIGNed, not zeroed), never to be pfree'd or repalloc'd.  Called in
 * another memory context than the arena's, or for a large piece, it is
 * palloc.  MmRuleStrdup: pnstrdup into the arena (no alignment).
 */
extern void *MmRuleAlloc(MmRuleContext *context, Size size);
extern char *MmRuleStrdup(MmRuleContext *context, const char *in, Size len);

/*
 * Extracts every rule's value of a ticket into ticket->values (an array of
 * config->nrules and more, from MmRuleAlloc).
 */
extern void MmExtractTicketValues(MmRuleContext *context, MmTicket *ticket,
								  const MmPlayerInput *players, int nplayers);

/*
 * A party's value for a difference rule: the average, min or max (merge) of
 * its players' values, NaN (a player who matches anything) skipped.  At least
 * one value must be a number (rule_difference.c; the sanitizer's data
 * generator calls it too).
 */
extern double MmMergePartyValues(MmMerge merge, const double *values, int nvalues);

/*
 * Latency rules: the region index with the lowest worst latency in a state,
 * or -1 when no region is open to every player; *worst receives its latency.
 */
extern int	MmBestRegion(const MmRuleContext *context, const MmRuleState *state,
						 double *worst);

/*
 * Latency rules: the match's region by the rule's region_choice among the
 * open regions within the threshold (and max_distance): lowest_worst picks
 * the lowest worst latency, lowest_average the lowest average (ties: the
 * lower worst, then the region seen first); -1 when none.  *worst receives
 * the region's worst latency.
 */
extern int	MmChooseRegion(const MmRuleContext *context, const MmRuleState *state,
						   double threshold, double *worst);

/*
 * Starts a rule's state for a candidate match (state->rule = rule, then the
 * handler's state_init).  The state's arrays (open_region, region_worst,
 * region_capacity) are the caller's: MmRuleStateCapacity says how large.
 */
extern void MmRuleStateInit(const MmRuleContext *context, const MmRuleConfig *rule,
							MmRuleState *state);

/*
 * The capacity of a state's arrays for a rule over these tickets (latency:
 * the most regions of one ticket; comparison all_different: the largest
 * match), 0 when the rule needs none.
 */
extern int	MmRuleStateCapacity(const MmQueueConfig *config, int rule_index,
								const MmTicket *tickets, int ntickets);

/* Allocates a state's arrays for a capacity (at least one entry each). */
extern void MmRuleStateAlloc(MmRuleState *state, int capacity);

/* Copies a state into another of the same capacity (dst keeps its arrays). */
extern void MmRuleStateCopy(MmRuleState *dst, const MmRuleState *src);

/*
 * Compound rules.  A rule named in a compound (rule->in_compound) is not
 * checked on its own: every ticket joins its state through MmLeafJoin, which
 * marks the state broken once a ticket breaks the rule.  The compound is
 * checked through these, given every rule's state and the ticket's values:
 *	 MmCompoundCanAdd: false when no set containing the candidate match and
 *	   the ticket can satisfy the statement (three-valued: a leaf that holds
 *	   may still break; not() of a broken leaf holds for good);
 * A leaf that is off (optional, null step) counts as true.
 */
extern bool MmCompoundCanAdd(const MmRuleContext *context, const MmRuleConfig *compound,
							 const MmRuleState *states, const MmRuleValue *values,
							 const bool *rule_on, const double *threshold);
extern void MmLeafJoin(const MmRuleContext *context, MmRuleState *state,
					   const MmRuleValue *value, double threshold);

/*
 * The conditions only a whole match can meet, over every rule that is on:
 * each ticket rule's check_final (a sum's min, a spread's min) and each
 * compound's statement.  Rules named in a compound count only through it.
 */
extern bool MmFinalHolds(const MmRuleContext *context, const MmRuleState *states,
						 const bool *rule_on, const double *threshold);

/*
 * The ranking cost of a candidate ticket against the anchor of a candidate
 * match: the sum over the rules that are on (rule_on[r]) of
 *		weight_r * distance_r(anchor, candidate)
 * each distance in [0,1] (see docs/queues-and-tickets.md, "How candidates
 * are ranked").  Lower is better; the search breaks ties by age.
 */
extern double MmCandidateCost(const MmRuleContext *context, const MmTicket *anchor,
							  const MmTicket *candidate, const bool *rule_on,
							  const double *threshold);

#endif							/* MM_RULES_H */
