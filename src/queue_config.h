/*
 * queue_config.h
 *	  A queue's configuration (mm.queues.config), parsed and validated.
 *
 * The parser (queue_config*.c) turns the jsonb into this struct, refusing
 * anything invalid with the JSON path of the first problem (e.g.
 * "rules[2].max").  The tick and the ticket validation read only this
 * struct, never the jsonb, so a rule type's options are parsed in exactly one
 * place.  The rule thresholds at an age are rule_expansion.c's.
 */
#ifndef MM_QUEUE_CONFIG_H
#define MM_QUEUE_CONFIG_H

#include "postgres.h"
#include "utils/jsonb.h"

#include "json_walk.h"

#define MM_MAX_MATCH_SIZE 200
#define MM_MAX_TEAMS 100
#define MM_MAX_RULES 64
#define MM_MAX_EXPANSION_STEPS 64
#define MM_MAX_NAME_LENGTH 64
#define MM_MAX_ATTRIBUTE_DEPTH 8	/* keys in a rule's dotted attribute path */
#define MM_MAX_ATTRIBUTE_LENGTH 256
#define MM_MAX_CONFIG_BYTES 65536	/* the jsonb's size */
/* live_match_timeout_seconds and heartbeat_timeout_seconds: at most a year */
#define MM_MAX_LIFETIME_SECONDS 31536000

typedef enum MmRuleType
{
	MM_RULE_STRING_EQUALITY,
	MM_RULE_DIFFERENCE,
	MM_RULE_LATENCY,
	MM_RULE_TEAM_DIFFERENCE,
	MM_RULE_TEAM_SIZE_BALANCE,
	MM_RULE_MATCH_TOTAL,
	MM_RULE_COMPARISON,
	MM_RULE_TEAM_TICKET_SIZE_SIMILARITY,
	MM_RULE_COMPOUND,
	MM_RULE_SET_INTERSECTION,
	MM_RULE_BLOCKLIST,
	MM_RULE_ROLE_DIFFERENCE
} MmRuleType;

/* A comparison rule's operator. */
typedef enum MmCompareOp
{
	MM_CMP_EQ,
	MM_CMP_NE,
	MM_CMP_LT,
	MM_CMP_LE,
	MM_CMP_GT,
	MM_CMP_GE,
	MM_CMP_ALL_EQUAL,			/* across players, no reference */
	MM_CMP_ALL_DIFFERENT,
	MM_CMP_CONTAINS				/* a list attribute holds the reference string */
} MmCompareOp;

/* A latency rule's choice of region. */
typedef enum MmRegionChoice
{
	MM_REGION_LOWEST_WORST,		/* the lowest worst latency (default) */
	MM_REGION_LOWEST_AVERAGE	/* the lowest average latency */
} MmRegionChoice;

/* A node of a compound rule's statement. */
typedef enum MmCompoundOp
{
	MM_COMPOUND_RULE,			/* a named rule */
	MM_COMPOUND_AND,
	MM_COMPOUND_OR,
	MM_COMPOUND_NOT
} MmCompoundOp;

#define MM_MAX_COMPOUND_NODES 64

typedef struct MmCompoundNode
{
	MmCompoundOp op;
	int			rule;			/* MM_COMPOUND_RULE: index into the queue's rules */
	int			nchildren;
	int			first_child;	/* children are nodes first_child.. (listed in
								 * child_list) */
} MmCompoundNode;

/* Where a rule reads a player's value from. */
typedef enum MmRuleSource
{
	MM_SOURCE_TICKET,			/* the attributes sent with the ticket */
	MM_SOURCE_PLAYER,			/* mm.players.attributes, set by the server */
	MM_SOURCE_RATING			/* the stored rating in the queue's pool */
} MmRuleSource;

/* How a party's values combine into the ticket's value (difference rules). */
typedef enum MmMerge
{
	MM_MERGE_AVERAGE,
	MM_MERGE_MIN,
	MM_MERGE_MAX
} MmMerge;

typedef enum MmExpansionKind
{
	MM_EXPANSION_NONE,
	MM_EXPANSION_LINEAR,		/* threshold + delta per every_seconds, capped at limit */
	MM_EXPANSION_CUSTOM			/* steps[k] from k+1 periods of every_seconds on */
} MmExpansionKind;

typedef struct MmExpansion
{
	MmExpansionKind kind;
	double		every_seconds;	/* > 0 */
	/* linear */
	double		delta;
	double		limit;			/* the threshold never passes it */
	/* custom: step k applies once the age reaches (k+1) * every_seconds */
	int			nsteps;
	double	   *steps;
	bool	   *step_off;		/* JSON null: the rule is off from that step on */
} MmExpansion;

typedef struct MmRuleConfig
{
	char	   *name;
	MmRuleType	type;
	double		weight;			/* default 1; ranks acceptable candidates */
	/*
	 * NULL for rules without one (latency, team_size_balance), and for the
	 * rules whose attribute is a list of strings (set_intersection,
	 * blocklist), which keep it in list_attribute: ticket validation checks
	 * `attribute` as a string or a number.  attribute_path holds the keys of
	 * either.
	 */
	char	   *attribute;
	char	   *list_attribute;
	int			attribute_depth; /* attribute is a dotted path: number of keys */
	char	  **attribute_path; /* the keys of the dotted path */
	MmRuleSource source;
	double		widen_by_rd;	/* difference, source rating (Glicko-2): the window
								 * grows by this many times the largest RD */

	/* when a player lacks the attribute */
	bool		has_default;
	bool		default_is_string;
	double		default_number;
	char	   *default_string;
	bool		missing_matches_any; /* "when_missing": "match_any" */
	int			ndefault_list;	/* set_intersection: default list (has_default) */
	char	  **default_list;

	double		seconds_until_optional; /* < 0: never optional */

	/*
	 * The rule's threshold at step 0: difference and team_difference "max",
	 * latency "max_ms", team_size_balance "max_difference".  Unused for
	 * string_equality.
	 */
	double		threshold;
	MmMerge		merge;			/* difference only */

	/*
	 * difference: "min", the least spread (final check); match_total: "min",
	 * the least sum.  has_min false: no lower bound.
	 */
	bool		has_min;
	double		min;
	/* match_total: "max" given (else no upper bound; threshold is the widening) */
	bool		has_max;
	double		max;

	/* latency */
	bool		has_max_distance;
	double		max_distance;	/* ms beyond the best region a region may be */
	MmRegionChoice region_choice;

	/*
	 * comparison: operator; a number reference is the threshold, a string
	 * reference (= and != only) is reference_string, and each player's value
	 * is then 1 when its string equals it, else 0, against a threshold of 1
	 */
	MmCompareOp compare_op;
	char	   *reference_string;

	/* compound: the parsed statement (nodes[0] is the root) */
	char	   *statement;
	int			nnodes;
	MmCompoundNode *nodes;
	int		   *child_list;
	/* a rule named in a compound is evaluated only through it */
	bool		in_compound;
	int			compound_owner; /* the compound's index, when in_compound */

	MmExpansion expansion;
} MmRuleConfig;

/* algorithm.batching_preference: how the search ranks a anchor's candidates */
typedef enum MmBatching
{
	MM_BATCHING_RULES,			/* not given: the rules' weighted closeness */
	MM_BATCHING_SORTED,			/* closeness on sort_by_attributes, in order */
	MM_BATCHING_LARGEST_POPULATION, /* the most populated shared region first */
	MM_BATCHING_FASTEST_REGION, /* the lowest latency of the pair first */
	MM_BATCHING_RANDOM			/* a fixed pseudo-random order */
} MmBatching;

#define MM_MAX_SORT_ATTRIBUTES 8

typedef struct MmTeamConfig
{
	char	   *name;
	int			min;
	int			max;
	/* "expansion": custom steps lowering min as the oldest ticket waits */
	MmExpansion min_expansion;	/* kind MM_EXPANSION_NONE: min stays */
} MmTeamConfig;

typedef struct MmQueueConfig
{
	int			match_min;		/* players, >= 2 (with the teams' base min) */
	int			match_size_min; /* match_size.min as given (0: not given) */
	int			match_max;		/* players, <= MM_MAX_MATCH_SIZE */
	int			nteams;			/* 0: free-for-all of match_size */
	MmTeamConfig *teams;
	double		ticket_timeout_seconds; /* <= 0: tickets never time out */
	double		acceptance_timeout_seconds; /* later; parsed and kept; <= 0: none */
	double		live_match_timeout_seconds; /* a ready or assigned match expires this
											 * long after it became ready; <= 0: never */
	double		heartbeat_timeout_seconds;	/* a searching ticket without a beat for
											 * this long is cancelled; <= 0: never */
	char	   *rating_system;	/* "elo", "glicko2", "openskill"; NULL: no rating */
	char	   *rating_pool;	/* NULL when not given */
	bool		show_player_count;
	bool		show_time_to_match;
	int			nrules;
	MmRuleConfig *rules;
	int			max_party_size; /* the largest party a ticket may hold */
	int			min_tickets;	/* a match holds at least this many tickets (>= 1) */

	/* "algorithm" */
	bool		newest_age;		/* expansion_age_selection newest */
	bool		balanced;		/* strategy balanced */
	char	   *balanced_attribute; /* with balanced: a dotted path */
	int			balanced_depth;
	char	  **balanced_path;
	MmRuleConfig *balanced_rule;	/* how its values are read (rules.c) */
	MmBatching	batching;		/* batching_preference: how candidates rank */
	int			nsort;			/* sorted: sort_by_attributes */
	MmRuleConfig *sort_rules;	/* ... each read like a difference rule's */
	int			latency_rule;	/* the first latency rule, -1: none */

	/* teams[].roles (or a free-for-all's "roles") and "autofill"; NULL: none */
	struct MmRolesConfig *roles;

	/*
	 * "penalties": the rest of it is read by the SQL side (65_penalties.sql).
	 * The low-priority pool's bound: a penalised ticket this old matches
	 * anyone.  -1: the queue has no low-priority pool.
	 */
	double		low_priority_max_wait;
} MmQueueConfig;

/*
 * Checks the function a config's "match_function" names (already of the
 * shape schema.function); raises an error at path when it does not fit.
 */
typedef void (*MmMatchFunctionCheck) (const char *name, MmJsonPath *path);

/*
 * Parses and validates a queue config (queue_config.c).  Allocates in
 * CurrentMemoryContext.  On any problem raises ERROR 22023
 * (invalid_parameter_value) with the message "invalid queue config at
 * <path>: <problem>", e.g. "invalid queue config at rules[2].max: must be a
 * number >= 0".  The parser reads no catalog: check, when not NULL, judges
 * the function "match_function" names, at its place in the walk.
 *
 * match_min/match_max are the effective bounds: with teams, match_size is
 * narrowed to what the teams can hold (and taken from the teams when absent).
 */
extern MmQueueConfig *MmParseQueueConfigWith(Jsonb *config, MmMatchFunctionCheck check);

/*
 * The same with the match function checked against the catalog
 * (MmLookupMatchFunction: it exists, takes (text, jsonb, timestamptz),
 * returns SETOF jsonb, is in no temporary schema), as every write to
 * mm.queues is checked (queue_config_sql.c).
 */
extern MmQueueConfig *MmParseQueueConfig(Jsonb *config);

/*
 * The function a stored config's "match_function" names, as written, or NULL
 * (queue_config_json.c): what the tick calls and the queues trigger keeps a
 * role for.
 */
extern char *MmQueueConfigMatchFunction(Jsonb *config);

/* The rule named name in a parsed config, or NULL (queue_config_json.c). */
extern const MmRuleConfig *MmQueueConfigFindRule(const MmQueueConfig *config, const char *name);



/*
 * A rule's threshold at a given age of the oldest ticket in a candidate match.
 * Returns false when the rule is off at that age (optional after
 * seconds_until_optional, or a null expansion step).  *step receives the
 * expansion step (0 = the base threshold).
 */
extern bool MmRuleThresholdAt(const MmRuleConfig *rule, double age_seconds,
							  double *threshold, int *step);

/*
 * A team's min at an age of the oldest ticket (its expansion's step), and
 * the match's min players then: the larger of match_size.min (as given) and
 * the teams' mins.  Without teams, match_min.
 */
extern int	MmTeamMinAt(const MmTeamConfig *team, double age_seconds);
extern int	MmMatchMinAt(const MmQueueConfig *config, double age_seconds);

/*
 * Whether a rule has a threshold of its own to show in rule_steps (false
 * for string_equality, team_ticket_size_similarity, compound, blocklist and
 * the comparisons all_equal / all_different).
 */
extern bool MmRuleHasThreshold(const MmRuleConfig *rule);

#endif							/* MM_QUEUE_CONFIG_H */
