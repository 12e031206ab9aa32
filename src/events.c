/*
 * events.c
 *	  Builds the mm_events payloads and queues them with Async_Notify.
 *
 * Async_Notify only queues the notification: PostgreSQL delivers it when the
 * transaction commits and drops it on rollback, so nothing rolled back is
 * ever announced.
 */
#include "postgres.h"

#include "commands/async.h"
#include "lib/stringinfo.h"
#include "utils/float.h"
#include "utils/json.h"

#include "events.h"

/* Appends "key": [ids]. */
static void
AppendIdArray(StringInfo buf, const char *key, int n, const int64 *ids)
{
	int			i;

	appendStringInfo(buf, ", \"%s\": [", key);
	for (i = 0; i < n; i++)
		appendStringInfo(buf, "%s" INT64_FORMAT, i > 0 ? ", " : "", ids[i]);
	appendStringInfoChar(buf, ']');
}

/* Appends a JSON string, or null. */
static void
AppendJsonString(StringInfo buf, const char *s)
{
	if (s == NULL)
		appendStringInfoString(buf, "null");
	else
		escape_json(buf, s);
}

/* Opens {"event": ..., "queue": ... */
static void
AppendHead(StringInfo buf, const char *event, const char *queue)
{
	appendStringInfoString(buf, "{\"event\": ");
	escape_json(buf, event);
	appendStringInfoString(buf, ", \"queue\": ");
	escape_json(buf, queue);
}

/* The match_found payload, compact when the full one is too large. */
char *
MmMatchFoundPayload(const char *queue, int64 match_id, const char *region,
					double quality, int nteams, const MmEventTeam *teams,
					int ntickets, const int64 *ticket_ids)
{
	StringInfoData buf;
	char	   *quality_text;
	int			t,
				p;

	initStringInfo(&buf);
	AppendHead(&buf, "match_found", queue);
	appendStringInfo(&buf, ", \"match_id\": " INT64_FORMAT ", \"region\": ", match_id);
	AppendJsonString(&buf, region);
	quality_text = float8out_internal(quality);
	appendStringInfo(&buf, ", \"quality\": %s, \"teams\": [", quality_text);
	pfree(quality_text);
	for (t = 0; t < nteams; t++)
	{
		appendStringInfoString(&buf, t > 0 ? ", {\"name\": " : "{\"name\": ");
		AppendJsonString(&buf, teams[t].name);
		appendStringInfoString(&buf, ", \"players\": [");
		for (p = 0; p < teams[t].nplayers; p++)
		{
			if (p > 0)
				appendStringInfoString(&buf, ", ");
			escape_json(&buf, teams[t].player_ids[p]);
		}
		appendStringInfoString(&buf, "]}");
	}
	appendStringInfoChar(&buf, ']');
	AppendIdArray(&buf, "tickets", ntickets, ticket_ids);
	appendStringInfoChar(&buf, '}');
	if (buf.len <= MM_EVENT_PAYLOAD_MAX)
		return buf.data;

	/* too large: ids only; the client reads the rest from mm.match_players */
	resetStringInfo(&buf);
	AppendHead(&buf, "match_found", queue);
	appendStringInfo(&buf, ", \"match_id\": " INT64_FORMAT, match_id);
	AppendIdArray(&buf, "tickets", ntickets, ticket_ids);
	appendStringInfoString(&buf, ", \"truncated\": true}");
	if (buf.len <= MM_EVENT_PAYLOAD_MAX)
		return buf.data;
	resetStringInfo(&buf);
	AppendHead(&buf, "match_found", queue);
	appendStringInfo(&buf, ", \"match_id\": " INT64_FORMAT ", \"truncated\": true}", match_id);
	return buf.data;
}

/* Queues a match_found notification (sent at commit). */
void
MmNotifyMatchFound(const char *queue, int64 match_id, const char *region,
				   double quality, int nteams, const MmEventTeam *teams,
				   int ntickets, const int64 *ticket_ids)
{
	char	   *payload = MmMatchFoundPayload(queue, match_id, region, quality,
											  nteams, teams, ntickets, ticket_ids);

	Async_Notify(MM_EVENTS_CHANNEL, payload);
	pfree(payload);
}

/* Queues ticket events, split so each payload stays under the limit. */
void
MmNotifyTickets(const char *event, const char *queue, int ntickets, const int64 *ticket_ids)
{
	StringInfoData buf;
	int			i = 0;

	initStringInfo(&buf);
	while (i < ntickets)
	{
		int			first = i;

		resetStringInfo(&buf);
		AppendHead(&buf, event, queue);
		appendStringInfoString(&buf, ", \"tickets\": [");
		/* 24 bytes: the longest id, its separator and the closing "]}" */
		for (; i < ntickets && (i == first || buf.len + 24 <= MM_EVENT_PAYLOAD_MAX); i++)
			appendStringInfo(&buf, "%s" INT64_FORMAT, i > first ? ", " : "", ticket_ids[i]);
		appendStringInfoString(&buf, "]}");
		Async_Notify(MM_EVENTS_CHANNEL, buf.data);
	}
	pfree(buf.data);
}
