/*
 * events.h
 *	  Notifications on the mm_events channel (sent at commit only).
 *
 * Every state change the extension announces goes through here, so the
 * payloads keep one shape: a JSON object with "event" and "queue", then the
 * event's fields, and last the signature "sig" (event_signing.h).  Payloads
 * are built to stay under PostgreSQL's 8000-byte NOTIFY limit: a match_found
 * that would be larger goes out compact (ids only, "truncated": true); a
 * ticket list that would be larger is split into several notifications of
 * the same event.
 */
#ifndef MM_EVENTS_H
#define MM_EVENTS_H

#include "postgres.h"

#include "lib/stringinfo.h"

#include "event_signing.h"

#define MM_EVENTS_CHANNEL "mm_events"
/* Async_Notify refuses payloads of 8000 bytes or more. */
#define MM_EVENT_PAYLOAD_MAX 7999
/* The most a payload may hold before it is signed. */
#define MM_EVENT_BODY_MAX (MM_EVENT_PAYLOAD_MAX - MM_EVENT_SIGNATURE_BYTES)

/*
 * matchmaking.max_notify_queue_usage: from this fill level of PostgreSQL's
 * notification queue on, mm.tick refuses to run (MmCheckNotifyQueue).
 */
extern double MmMaxNotifyQueueUsage;

/*
 * Raises an error when the notification queue is filled to
 * MmMaxNotifyQueueUsage: a tick would form matches whose commit then fails.
 */
extern void MmCheckNotifyQueue(void);

/* One team of a match, for the match_found payload. */
typedef struct MmEventTeam
{
	const char *name;			/* NULL: the single side of a free-for-all */
	int			nplayers;
	const char **player_ids;
	const char **roles;			/* each player's role; NULL: no roles */
	const bool *autofilled;		/* ... and whether autofilled */
} MmEventTeam;

/*
 * match_found (match_proposed when the queue asks for acceptance):
 * {"event", "queue", "match_id", "region", "quality",
 * "teams": [{"name", "players": [ids]}], "tickets": [ids]}; in a role
 * queue each team also has "roles": {id: role} and "autofilled": [ids].
 */
extern void MmNotifyMatchFound(const char *event, const char *queue, int64 match_id, const char *region,
							   double quality, int nteams, const MmEventTeam *teams,
							   int ntickets, const int64 *ticket_ids);

/*
 * A ticket event (ticket_timed_out, ticket_cancelled):
 * {"event", "queue", "tickets": [ids]}.  Nothing is sent for no tickets.
 */
extern void MmNotifyTickets(const char *event, const char *queue,
							int ntickets, const int64 *ticket_ids);

/*
 * The same with "reason" after "queue" (the tick's ticket_cancelled for a
 * missed heartbeat: "heartbeat_missed").
 */
extern void MmNotifyTicketsWithReason(const char *event, const char *queue, const char *reason,
									  int ntickets, const int64 *ticket_ids);

#endif							/* MM_EVENTS_H */
