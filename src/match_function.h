/*
 * match_function.h
 *	  A queue's custom match function and the evaluator of its proposals
 *	  (match_function.c; docs/queues-and-tickets.md, "Custom match functions").
 */
#ifndef MM_MATCH_FUNCTION_H
#define MM_MATCH_FUNCTION_H

#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "json_walk.h"
#include "match_search.h"

/*
 * The oid of the function a config names ("schema.function"), taking (text,
 * jsonb, timestamptz) and returning SETOF jsonb; ERROR otherwise (22023 at
 * path when the config is being checked, path NULL at tick time).
 */
extern Oid	MmLookupMatchFunction(const char *name, MmJsonPath *path);

/*
 * The role a queue's match function runs as, for the row being written to
 * mm.queues (the queues_validate trigger): NULL without a match function; the
 * role kept when the function (by oid) and the role column stay the same and
 * the role exists; a role named in the row that the writer has the privileges
 * of (a restore), or NULL with a WARNING when it does not exist; else the
 * writer, or the function's owner when the writer has the owner's privileges,
 * who must be able to execute it.  Never a superuser for a function a
 * non-superuser owns.
 */
extern char *MmMatchFunctionRoleForWrite(const char *queue, const char *function,
										 const char *old_function, const char *given_role,
										 const char *old_role);

/*
 * Calls the queue's match function, as role (the one that named it; the
 * function's owner instead when role is a superuser and the owner is not) in
 * a restricted security context with a safe search_path, with its searching tickets (their
 * players' jsonb and creation times alongside), checks every proposal and
 * resolves overlaps by score.  Returns the matches to write, in the shape of
 * the search's result (SPI must be connected); *properties receives each
 * match's properties as JSON text.  Counts what it rejected, by reason, for
 * mm.match_function_stats().
 */
extern MmSearchResult *MmRunMatchFunction(const MmRuleContext *context, const char *queue,
										  const char *function, const char *role, bool rules_apply,
										  const MmTicket *tickets, Jsonb *const *players,
										  const TimestampTz *created, int ntickets,
										  TimestampTz now, char ***properties);

/* Forgets the previous tick's proposal counts (start of mm.tick). */
extern void MmMatchFunctionStatsReset(void);

/*
 * How many queues the stats hold, and forgetting those after a count (the
 * queues whose tick was rolled back).
 */
extern int	MmMatchFunctionStatsCount(void);
extern void MmMatchFunctionStatsTruncate(int count);

#endif							/* MM_MATCH_FUNCTION_H */
