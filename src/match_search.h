/*
 * match_search.h
 *	  The matching algorithm over a queue's loaded tickets (pure C, no SPI).
 *
 * Input: the searching tickets of one queue, oldest first, with their rule
 * values extracted (rules.h).  Output: the matches, each a set of tickets with
 * their teams, the chosen region, a quality in [0,1] and each rule's
 * expansion step.  The algorithm and its cost are described in docs/tick.md
 * and docs/queues-and-tickets.md ("How the search chooses").  Also the
 * backfill search (MmSearchBackfill) for matches with open slots.
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
	/* a role queue's: each player's role and autofill, the tickets' players in order */
	int		   *player_role;	/* NULL: no roles */
	bool	   *player_autofilled;
} MmFoundMatch;

typedef struct MmSearchResult
{
	int			nmatches;
	MmFoundMatch *matches;
	int64		scratch_bytes;	/* peak of the search's own structures (freed) */
	/*
	 * Per rule of the queue (nrules entries): how many times a candidate
	 * ticket (ticket rules) or a candidate match's teams (team rules) passed
	 * and failed the rule's check; a candidate is checked rule by rule and
	 * stops at the first rule it fails.  Each anchor's first pass over its
	 * candidates counts (docs/metrics.md, "Rule statistics"); the tickets the
	 * main difference rule's window leaves out count as its failures.  For
	 * mm.rule_stats.
	 */
	int			nrules;
	int64	   *rule_passed;
	int64	   *rule_failed;
} MmSearchResult;

/*
 * Forms matches among tickets[0..ntickets-1], which must be ordered oldest
 * first (created_at, id).  The result is allocated in CurrentMemoryContext;
 * the search's working structures live in a child context deleted on return.
 */
extern MmSearchResult *MmSearchMatches(const MmRuleContext *context,
									   MmTicket *tickets, int ntickets);

/*
 * Backfill: tickets to fill the open slots of a match that is already
 * playing.
 *
 * Input
 *	 context		the queue's rule context (the same one the candidates'
 *					values were extracted with: region indexes are shared).
 *	 members		the match's current tickets, one MmTicket per ticket whose
 *					players are still in the match (a caller whose ticket lost
 *					players passes only the remaining ones, with their values
 *					extracted from them), ages relative to now.
 *	 member_team	the team index of each member ticket (config->teams
 *					order); ignored in a free-for-all.
 *	 open_slots		players wanted per team (config->nteams entries), or in
 *					a free-for-all one entry: players that may join.
 *	 candidates		searching tickets of the queue, oldest first (created_at,
 *					id), values extracted, age_seconds = now - created_at:
 *					`now` enters only through the ages.
 *
 * Result (allocated in CurrentMemoryContext; scratch freed on return): the
 * candidate tickets chosen, each whole party on one team with room for it,
 * such that the whole match (members and chosen) satisfies every rule that
 * is on at the expansion step of its oldest ticket (members included), the
 * team rules over the resulting teams.  Older candidates are preferred: the
 * search tries candidates oldest first and takes the first set that fills
 * every open slot; when no set fills them all it returns the set, found
 * within its budget, that brings the most players (ties: the first found,
 * i.e. the older).  ntickets = 0 when no candidate can join.  match_size and
 * team minimums are not checked (the match exists already), team maximums
 * are (through open_slots).  The region is that of the first latency rule
 * over the whole match (-1 without one); the caller decides whether a
 * change of region is acceptable.  Cost: bounded by a node budget
 * (MM_BACKFILL_NODES), no more than O(candidates x open slots) in the usual
 * case where the oldest candidates fit.
 *
 * A role queue passes open_seats (nteams, or 1, x MM_MAX_ROLES): the roles
 * the open slots ask for, the leavers' (the caller works them out); the
 * chosen players are seated on them (roles.h: only a ticket whose players
 * can take those roles joins; the team follows from the seat) and
 * member_role gives each member player's role (members' players in order).
 * NULL for both otherwise.
 */
typedef struct MmBackfillResult
{
	int			ntickets;		/* chosen candidate tickets; 0: none */
	int		   *tickets;		/* indexes into candidates[], ascending */
	int		   *ticket_team;	/* team of each chosen ticket, -1 without teams */
	int			nplayers;		/* players they bring */
	bool		filled;			/* every open slot is filled */
	int			region;			/* MmRuleContext region index, -1: none */
	double		quality;		/* of the whole match, as MmFoundMatch's */
	MmRuleStep *rule_steps;		/* one per rule of the queue */
	/* a role queue's: each chosen player's role and autofill, in ticket order */
	int		   *player_role;	/* NULL: no roles */
	bool	   *player_autofilled;
} MmBackfillResult;

#define MM_BACKFILL_NODES 200000L

extern MmBackfillResult *MmSearchBackfill(const MmRuleContext *context,
										  const MmTicket *members, int nmembers,
										  const int *member_team,
										  const int *open_slots,
										  const MmTicket *candidates, int ncandidates,
										  const int *open_seats, const int *member_role);

/*
 * Whether tickets may all be in one match by the ticket rules, at the
 * thresholds of the oldest: each fits the ones before it, as every ticket of
 * a match the search forms does.  The backfill search takes a match's
 * members as given, so a proposed match (match_function.c) is checked with
 * this too.
 */
extern bool MmTicketsFitTogether(const MmRuleContext *context, const MmTicket *tickets,
								 int ntickets);

#endif							/* MM_MATCH_SEARCH_H */
