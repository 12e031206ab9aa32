/*
 * match_search.h
 *	  The matching algorithm over a queue's loaded tickets (pure C, no SPI).
 *
 * Input: the searching tickets of one queue, oldest first, with their rule
 * values extracted (rules.h).  Output: the matches, each a set of tickets with
 * their teams, the chosen region, a quality in [0,1] and each rule's
 * expansion step.  The algorithm and its cost are described in doc/tick.md.
 */
#ifndef MM_MATCH_SEARCH_H
#define MM_MATCH_SEARCH_H

#include "rules.h"

/* One rule's state in a formed match: expansion step, threshold or off. */
typedef struct MmRuleStep
{
	int			step;
	double		threshold;
	bool		off;
} MmRuleStep;

/* A match the search formed. */
typedef struct MmFoundMatch
{
	int			ntickets;
	int		   *tickets;		/* indexes into the input ticket array */
	int		   *ticket_team;	/* team index per ticket, -1 without teams */
	int			nplayers;
	int			region;			/* MmRuleContext region index, -1: none */
	double		quality;
	MmRuleStep *rule_steps;		/* one per rule of the queue */
} MmFoundMatch;

typedef struct MmSearchResult
{
	int			nmatches;
	MmFoundMatch *matches;
	int64		scratch_bytes;	/* peak of the search's own structures (freed) */
} MmSearchResult;

/*
 * Forms matches among tickets[0..ntickets-1], which must be ordered oldest
 * first (created_at, id).  The result is allocated in CurrentMemoryContext;
 * the search's working structures live in a child context deleted on return.
 */
extern MmSearchResult *MmSearchMatches(const MmRuleContext *context,
									   MmTicket *tickets, int ntickets);

#endif							/* MM_MATCH_SEARCH_H */
