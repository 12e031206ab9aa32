/*
 * rules.h
 *	  The one rule mechanism of the tick: a handler per rule type (pure C, no SPI).
 *
 * A queue's rules (MmRuleConfig, parsed by queue_config.c) are evaluated here
 * and nowhere else.  Each rule type has one handler in rules.c that knows how
 * to
 *	 - extract a ticket's value from its players (once, when the tick loads it),
 *	 - say whether a ticket may join a candidate match at a threshold
 *	   (ticket rules, checked incrementally as tickets join), or whether formed
 *	   teams satisfy the rule (team rules, checked once teams exist),
 *	 - rate how close the match is, in [0,1], for the match quality.
 * A new rule type (set_intersection, match_total, comparison, blocklist,
 * compound) or value source (player, rating) is a new handler or a new case
 * in MmLookupPlayerValue; the search (match_search.c) and the tick (tick.c)
 * do not change.
 */
#ifndef MM_RULES_H
#define MM_RULES_H

#include "postgres.h"
#include "utils/jsonb.h"

#include "queue_config.h"

/* One player of a ticket, as the tick parsed it from the players jsonb. */
typedef struct MmPlayerInput
{
	const char *id;
	JsonbContainer *attributes; /* NULL when the player sent none */
	JsonbContainer *latencies;	/* NULL when the player sent none */
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
} MmRegionLatency;

/* A ticket's value for one rule, extracted once when the ticket is loaded. */
typedef struct MmRuleValue
{
	MmValueKind kind;
	double		number;			/* difference: the party's merged value */
	const char *string;			/* string_equality */
	/* latency: regions every player can play in, with the worst latency */
	int			nregions;
	MmRegionLatency *regions;
	bool		all_regions;	/* latency: no player reported latencies but a
								 * default or match_any applies everywhere */
	double		floor_ms;		/* latency: the default applying to every region */
	/* numeric rules: each player's own value (NaN: matches anything) */
	double	   *player_values;
} MmRuleValue;

/* A loaded ticket: what the search needs, nothing of SPI. */
typedef struct MmTicket
{
	int64		id;
	double		age_seconds;	/* now - created_at, never negative */
	int			nplayers;
	const char **player_ids;
	MmRuleValue *values;		/* one per rule of the queue, in config order */
} MmTicket;

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
} MmRuleContext;

/*
 * The state of one ticket rule over the tickets of a candidate match so far.
 * One struct for every type keeps the search free of per-type code; each
 * handler uses the fields it needs.
 */
typedef struct MmRuleState
{
	bool		has_value;		/* a PRESENT value has joined */
	double		min;			/* difference */
	double		max;
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
} MmRuleState;

/* The teams of a formed candidate match, for team rules. */
typedef struct MmTeamsView
{
	int			nteams;
	const int  *team_size;		/* players per team */
	int			ntickets;
	const MmTicket *const *tickets;
	const int  *ticket_team;	/* team of each ticket (parties stay together) */
} MmTeamsView;

typedef enum MmRuleScope
{
	MM_SCOPE_TICKETS,			/* checked as each ticket joins */
	MM_SCOPE_TEAMS				/* checked once the teams are formed */
} MmRuleScope;

/* What a rule type does.  One entry per type in rules.c. */
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
 * Extracts every rule's value of a ticket into ticket->values (palloc'd
 * array of config->nrules).
 */
extern void MmExtractTicketValues(MmRuleContext *context, MmTicket *ticket,
								  const MmPlayerInput *players, int nplayers);

/*
 * A player's value of a rule's attribute, from the rule's source: a jsonb
 * scalar, or NULL when the player lacks it.
 */
extern JsonbValue *MmLookupPlayerValue(const MmRuleConfig *rule,
									   const MmPlayerInput *player,
									   JsonbValue *result);

/*
 * Latency rules: the region index with the lowest worst latency in a state,
 * or -1 when no region is open to every player; *worst receives its latency.
 */
extern int	MmBestRegion(const MmRuleContext *context, const MmRuleState *state,
						 double *worst);

/*
 * Latency rules: the room (open_region, region_worst entries) a state of the
 * rule needs over these tickets.
 */
extern int	MmLatencyStateCapacity(const MmTicket *tickets, int ntickets,
								   int rule_index);

#endif							/* MM_RULES_H */
