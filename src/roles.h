/*
 * roles.h
 *	  Role queues: a queue's role compositions (parsed by
 *	  queue_config_roles.c), each player's ranked role preferences, and the
 *	  assignment of roles to the players of a match (role_assignment.c, pure
 *	  C, no SPI).
 *
 * A team (or a free-for-all match) has one or more acceptable compositions:
 * a count of seats per role adding up to its size.  A player lists the roles
 * they accept, most preferred first ("fill": any role from there on); a
 * player of a ticket that waited autofill.after_seconds, and who was not
 * autofilled in their last protect_games games, may also take any other
 * role (autofill).  The assignment seats every player of a match on a
 * (team, role) seat so that each team meets one of its compositions and a
 * party stays on one team, choosing among all such seatings the one with
 * the fewest autofilled players, then the most first choices, then the most
 * second choices, and so on: an exact optimum (a min-cost flow for each
 * composition choice and placement of the parties), not a greedy pass.
 */
#ifndef MM_ROLES_H
#define MM_ROLES_H

#include "postgres.h"

#define MM_MAX_ROLES 8
#define MM_MAX_COMPOSITIONS 8		/* per team */
#define MM_MAX_COMPOSITION_CHOICES 256	/* the product over the teams */
#define MM_ROLE_UNLISTED 255		/* rank of a role outside a player's list */

typedef uint16 MmRoleMask;			/* bit r: role r */

/* One acceptable composition: seats per role. */
typedef struct MmComposition
{
	int			seats[MM_MAX_ROLES];
} MmComposition;

/*
 * A queue's roles.  Groups are the teams (config order), or one group for
 * a free-for-all.
 */
typedef struct MmRolesConfig
{
	int			nroles;
	char	   *names[MM_MAX_ROLES];
	int			ngroups;
	int		   *ncompositions;	/* per group */
	MmComposition **compositions;	/* per group */
	int		   *group_size;		/* per group: the seats of any of its
								 * compositions */

	/* "autofill": off unless given */
	bool		autofill;
	double		autofill_after_seconds;
	int			protect_games;	/* 0: no protection */

	/* "rating": {"per_role": true}: a rating per role, pool "<pool>.<role>" */
	bool		per_role_rating;
} MmRolesConfig;

/* The index of a role name, or -1. */
extern int	MmRoleIndex(const MmRolesConfig *roles, const char *name, int len);

/* All roles of a queue as a mask. */
static inline MmRoleMask
MmAllRoles(const MmRolesConfig *roles)
{
	return (MmRoleMask) ((1u << roles->nroles) - 1);
}

/*
 * The players of a role problem.  Player p belongs to ticket ticket_of[p];
 * the players of one ticket are consecutive and a ticket of several players
 * (a party) sits on one group.
 */
typedef struct MmRolePlayers
{
	int			nplayers;
	const MmRoleMask *accept;	/* roles each player may take (listed or
								 * autofill) */
	const uint8 *const *rank;	/* per player: rank of each role
								 * (MM_ROLE_UNLISTED outside the list) */
	const int  *ticket_of;
	int			ntickets;
	const int  *ticket_size;
	const int  *ticket_group;	/* per ticket: the group it sits on (a match
								 * function chose it), -1: any; NULL: all any */
} MmRolePlayers;

/* A seating: each player's group and role, and whether autofilled. */
typedef struct MmRoleSeating
{
	int		   *group_of;		/* per player */
	int		   *role_of;		/* per player */
	bool	   *autofilled;		/* per player */
	int			first_choices;	/* players on their first choice */
	int			autofills;
} MmRoleSeating;

/*
 * Whether players can all sit on seats of one composition per group (the
 * players of a partial match: each fits a seat, none is left over).  seats:
 * when not NULL, the open seats (ngroups x MM_MAX_ROLES) instead of the
 * compositions (backfill).  The party placements tried are bounded; when
 * the bound is reached the answer is yes (the final seating decides).
 */
extern bool MmRolesFit(const MmRolesConfig *roles, const MmRolePlayers *players,
					   const int *seats);

/*
 * The best seating of players on seats of one composition per group
 * (seats, when not NULL, the open seats instead); false when there is none.
 * ratings (per player, or NULL) even the teams out among the best
 * seatings: players of the same role on different teams swap while that
 * brings the teams' averages closer.  out's arrays are the caller's
 * (nplayers each).
 */
extern bool MmRolesSeat(const MmRolesConfig *roles, const MmRolePlayers *players,
						const int *seats, const double *ratings, MmRoleSeating *out);

#endif							/* MM_ROLES_H */
