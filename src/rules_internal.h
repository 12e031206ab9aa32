/*
 * rules_internal.h
 *	  What rules.c shares with the rule types' files (rule_<type>.c): each
 *	  type's handler, and the helpers several types use.  Not for the search
 *	  or the tick, which see only rules.h.
 *
 * Adding a rule type: a rule_<type>.c defining its MmRuleHandler, declared
 * here and listed in the table of rules.c (see rules.h for the mechanism).
 */
#ifndef MM_RULES_INTERNAL_H
#define MM_RULES_INTERNAL_H

#include "postgres.h"

#include "common/hashfn.h"
#include "utils/jsonb.h"

#include "json_walk.h"
#include "rules.h"

/* The handlers, one per rule type (rule_<type>.c). */
extern const MmRuleHandler MmRuleStringEquality;
extern const MmRuleHandler MmRuleDifference;
extern const MmRuleHandler MmRuleLatency;
extern const MmRuleHandler MmRuleTeamDifference;
extern const MmRuleHandler MmRuleTeamSizeBalance;
extern const MmRuleHandler MmRuleMatchTotal;
extern const MmRuleHandler MmRuleComparison;
extern const MmRuleHandler MmRuleTeamTicketSizeSimilarity;
extern const MmRuleHandler MmRuleCompound;
extern const MmRuleHandler MmRuleSetIntersection;
extern const MmRuleHandler MmRuleBlocklist;
extern const MmRuleHandler MmRuleRoleDifference;

/*
 * 1 - used/allowed, in [0,1]; a zero threshold met exactly is a perfect 1,
 * a NaN counts as 0 (rules.c).
 */
extern double MmClosenessOf(double used, double allowed);

/*
 * A jsonb number as a double; false when it is not a finite number or its
 * magnitude exceeds MM_JSON_MAX_NUMBER (rules.c).
 */
extern bool MmJsonbNumberValue(const JsonbValue *v, double *result);

/* A player's value of the rule's attribute (from the rule's source), or NULL. */
extern JsonbValue *MmLookupPlayerValue(const MmRuleConfig *rule, const MmPlayerInput *player,
									   JsonbValue *result);

/*
 * Each player's number (NaN: matches anything) into value->player_values
 * (from the arena); sets the ticket's kind.  MmReadPlayerNumbers: the same
 * into the caller's array, returning the kind.
 */
extern void MmExtractPlayerNumbers(MmRuleContext *context, const MmRuleConfig *rule,
								   const MmPlayerInput *players, int nplayers,
								   MmRuleValue *value);
extern MmValueKind MmReadPlayerNumbers(const MmRuleConfig *rule, const MmPlayerInput *players,
									   int nplayers, double *numbers);

/* extract of the rules that read no value (team_size_balance, compound). */
extern void MmNoValueExtract(MmRuleContext *context, const MmRuleConfig *rule,
							 const MmPlayerInput *players, int nplayers, MmRuleValue *value);

/* closeness of the rules that either hold or not: always 1. */
extern double MmPerfectCloseness(const MmRuleContext *context, const MmRuleState *state,
								 double threshold);

/* List attributes (set_intersection, blocklist): interned strings (rules.c). */
extern int	MmInternString(MmRuleContext *context, const char *name, int len);
extern int	MmSortUnique(int *a, int n);
extern bool MmPlayerList(MmRuleContext *context, const MmRuleConfig *rule,
						 const MmPlayerInput *player, int **ids, int *nids);
extern int	MmIntersectSorted(const int *a, int na, const int *b, int nb, int *out);

/* The hash of a region or string name (up to a NUL, as the stored copy). */
static inline uint32
MmRegionNameHash(const char *name, int len)
{
	return hash_bytes((const unsigned char *) name, strnlen(name, len));
}

/* The room a latency state needs for a rule (rule_latency.c). */
extern int	MmLatencyStateCapacity(const MmTicket *tickets, int ntickets, int rule_index);

/* Whether a compound rule holds for the whole match (rule_compound.c). */
extern bool MmCompoundHolds(const MmRuleContext *context, const MmRuleConfig *compound,
							const MmRuleState *states, const bool *rule_on,
							const double *threshold);

#endif							/* MM_RULES_INTERNAL_H */
