/*
 * team_balance.h
 *	  Splitting players into teams of fair total strength (pure C, no SPI).
 *
 * Used by mm.balance_teams() and by the tick.  Exact (branch and bound, provably
 * optimal) up to MM_BALANCE_EXACT_MAX players; above that a deterministic
 * heuristic (greedy, then pairwise swaps) up to MM_BALANCE_MAX_PLAYERS.
 */
#ifndef MM_TEAM_BALANCE_H
#define MM_TEAM_BALANCE_H

#include <stdbool.h>

#define MM_BALANCE_EXACT_MAX 16
#define MM_BALANCE_MAX_PLAYERS 200

typedef struct MmBalanceInput
{
	int			n;				/* players, 1..MM_BALANCE_MAX_PLAYERS */
	const double *ratings;		/* n finite ratings */
	const int  *party;			/* n party ids (equal id: same team), or NULL: all solo */
	int			team_count;		/* >= 2 */
	const int  *team_size;		/* team_count exact sizes summing to n, or NULL:
								 * sizes as equal as the parties allow */
} MmBalanceInput;

/*
 * Writes the 0-based team of each player into team_of[n] and the spread
 * between the strongest and the weakest team total into *spread (may be
 * NULL).  Returns false, leaving team_of undefined, when the parties cannot be
 * placed (a party larger than its team, or no way to reach the wanted sizes).
 * Deterministic: the same input always gives the same answer.  With free
 * sizes the sizes differ as little as the parties allow (at most one with
 * solo players), and teams are numbered in order of their lowest-numbered
 * player; with team_size given only teams of equal size are renumbered among
 * themselves.  Does not allocate (about 20 kB of stack); no palloc, no SPI.
 */
extern bool MmBalanceTeams(const MmBalanceInput *input, int *team_of, double *spread);

#endif							/* MM_TEAM_BALANCE_H */
