/*
 * mm_listen.c
 *	  A real LISTEN client for the mm_events channel: what a game backend
 *	  does to learn that its players have a match.  Prints one line per event
 *	  as it is announced; for match_found it reads the match's teams back
 *	  with SQL (the payload may be compact when large).
 *
 *   mm_listen [--dsn CONNINFO] [--count N] [--seconds N] [--events A,B,...] [--raw]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "libpq-fe.h"

static PGconn *conn;
static bool on_tty;
static const char *events_filter;	/* ",a,b,": the events to print; NULL for all */

/* True when the payload's event is one to print (--events). */
static bool
Wanted(const char *payload)
{
	const char *key = strstr(payload, "\"event\"");
	const char *start;
	const char *end;
	char		name[80];

	if (events_filter == NULL)
		return true;
	/* the signed payload's "event" is a plain string: "event": "name" */
	if (key == NULL || (start = strchr(key + 7, '"')) == NULL ||
		(end = strchr(start + 1, '"')) == NULL || end - start + 1 >= (long) sizeof(name))
		return true;
	snprintf(name, sizeof(name), ",%.*s,", (int) (end - start - 1), start + 1);
	return strstr(events_filter, name) != NULL;
}

/* The server's goodbye at shutdown is expected: we say so ourselves. */
static void
QuietNotices(void *arg, const char *message)
{
	(void) arg;
	(void) message;
}

/* Reports a libpq failure and exits. */
static void
Die(const char *what)
{
	fprintf(stderr, "mm_listen: %s: %s", what, PQerrorMessage(conn));
	exit(1);
}

/* Starts an output line; on a terminal it first clears a progress line another program drew. */
static void
LinePrefix(void)
{
	time_t		now = time(NULL);
	struct tm	tm;
	char		stamp[16];

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	printf("%s[%s] ", on_tty ? "\r\033[K" : "", stamp);
}

/*
 * Prints one event.  The payload is parsed by the server (jsonb), and a
 * match_found or match_proposed is described from the tables: queue, region,
 * quality, and each team's players with their skill.  The other events of a
 * match's life get one short line: its status and what the event says (who
 * won, why it was cancelled, its game server, who left).
 */
static void
PrintEvent(const char *payload, bool raw)
{
	const char *params[1] = {payload};
	PGresult   *res;

	if (raw)
	{
		LinePrefix();
		printf("%s\n", payload);
		return;
	}
	res = PQexecParams(conn,
					   "WITH e AS (SELECT $1::jsonb AS p),"
					   " teams AS ("
					   "  SELECT mp.team,"
					   "         pg_catalog.string_agg(mp.player_id, ' ' ORDER BY mp.player_id) AS names,"
					   "         pg_catalog.count(*) AS n,"
					   "         pg_catalog.avg((tp.attributes->>'skill')::float8) AS skill"
					   "    FROM e, mm.match_players mp"
					   "    LEFT JOIN mm.ticket_players tp"
					   "           ON tp.ticket_id OPERATOR(pg_catalog.=) mp.ticket_id"
					   "          AND tp.player_id OPERATOR(pg_catalog.=) mp.player_id"
					   "   WHERE e.p->>'event' OPERATOR(pg_catalog.=) ANY (ARRAY['match_found', 'match_proposed'])"
					   "     AND mp.match_id OPERATOR(pg_catalog.=) (e.p->>'match_id')::bigint"
					   "   GROUP BY mp.team)"
					   "SELECT e.p->>'event', e.p->>'queue', e.p->>'match_id', m.region,"
					   "       pg_catalog.round(m.quality::numeric, 3),"
					   "       (SELECT pg_catalog.string_agg(pg_catalog.format('%s (%s, avg skill %s): %s',"
					   "                 coalesce(team, 'players'), n, pg_catalog.round(skill::numeric), names),"
					   "                 ' vs ' ORDER BY team) FROM teams),"
					   "       coalesce(e.p->>'tickets', e.p->>'ticket_id', ''),"
					   "       pg_catalog.concat_ws(', ',"
					   "         'winner ' OPERATOR(pg_catalog.||) (e.p->>'winner'),"
					   "         e.p->>'reason',"
					   "         CASE WHEN e.p->>'event' OPERATOR(pg_catalog.=) 'match_assigned'"
					   "              THEN 'server ' OPERATOR(pg_catalog.||) m.connection END,"
					   "         'player ' OPERATOR(pg_catalog.||) (e.p->>'player_id') OPERATOR(pg_catalog.||) ' left',"
					   "         CASE WHEN e.p->>'event' OPERATOR(pg_catalog.=) 'match_proposed'"
					   "              THEN 'accept by ' OPERATOR(pg_catalog.||) pg_catalog.to_char(m.acceptance_deadline, 'HH24:MI:SS') END)"
					   "  FROM e LEFT JOIN mm.matches m"
					   "    ON m.id OPERATOR(pg_catalog.=) (e.p->>'match_id')::bigint",
					   1, NULL, params, NULL, NULL, 0);
	LinePrefix();
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		printf("event (unreadable: %s): %s\n", PQresultErrorMessage(res), payload);
	else if (strcmp(PQgetvalue(res, 0, 0), "match_found") == 0 ||
			 strcmp(PQgetvalue(res, 0, 0), "match_proposed") == 0)
		printf("%s %s in %s, region %s, quality %s%s%s: %s\n",
			   PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 1),
			   PQgetisnull(res, 0, 3) ? "-" : PQgetvalue(res, 0, 3),
			   PQgetisnull(res, 0, 4) ? "-" : PQgetvalue(res, 0, 4),
			   PQgetvalue(res, 0, 7)[0] ? ", " : "", PQgetvalue(res, 0, 7),
			   PQgetisnull(res, 0, 5) ? "(teams not readable)" : PQgetvalue(res, 0, 5));
	else if (!PQgetisnull(res, 0, 2))
		printf("%s in %s, match %s%s%s\n", PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1),
			   PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 7)[0] ? ": " : "", PQgetvalue(res, 0, 7));
	else
		printf("%s in %s%s%s\n", PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1),
			   PQgetvalue(res, 0, 6)[0] ? ", tickets " : "", PQgetvalue(res, 0, 6));
	fflush(stdout);
	PQclear(res);
}

int
main(int argc, char **argv)
{
	const char *conninfo = "";
	long		count = 0;
	double		seconds = 0;
	bool		raw = false;
	long		seen = 0;
	struct timeval start;
	PGresult   *res;
	int			i;

	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--raw") == 0)
			raw = true;
		else if (strcmp(argv[i], "--dsn") == 0 && i + 1 < argc)
			conninfo = argv[++i];
		else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			count = atol(argv[++i]);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
		{
			size_t		len = strlen(argv[++i]);
			char	   *filter = malloc(len + 3);

			if (filter == NULL)
				return 1;
			snprintf(filter, len + 3, ",%s,", argv[i]);
			events_filter = filter;
		}
		else
		{
			fprintf(stderr,
					"Usage: mm_listen [--dsn CONNINFO] [--count N] [--seconds N] [--events A,B,...] [--raw]\n"
					"  LISTENs on mm_events and prints each event as it arrives (only the named\n"
					"  events with --events); stops after N events printed or N seconds\n"
					"  (default: until the server goes away).\n");
			return strcmp(argv[i], "--help") == 0 ? 0 : 2;
		}
	}
	on_tty = isatty(fileno(stdout));
	gettimeofday(&start, NULL);

	conn = PQconnectdb(conninfo);
	if (PQstatus(conn) != CONNECTION_OK)
		Die("cannot connect");
	PQsetNoticeProcessor(conn, QuietNotices, NULL);
	res = PQexec(conn, "LISTEN mm_events");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		Die("LISTEN failed");
	PQclear(res);

	for (;;)
	{
		int			sock = PQsocket(conn);
		fd_set		input;
		struct timeval timeout = {0, 500000};
		PGnotify   *notify;

		if (sock < 0)
			break;
		FD_ZERO(&input);
		FD_SET(sock, &input);
		if (select(sock + 1, &input, NULL, NULL, &timeout) < 0 && errno != EINTR)
		{
			perror("mm_listen: select");
			return 1;
		}
		if (!PQconsumeInput(conn))
		{
			/* the demo stops the cluster at the end: that is how we finish */
			fprintf(stderr, "mm_listen: connection closed\n");
			break;
		}
		while ((notify = PQnotifies(conn)) != NULL)
		{
			if (!Wanted(notify->extra))
			{
				PQfreemem(notify);
				continue;
			}
			PrintEvent(notify->extra, raw);
			PQfreemem(notify);
			if (count > 0 && ++seen >= count)
			{
				PQfinish(conn);
				return 0;
			}
		}
		if (seconds > 0)
		{
			struct timeval now;

			gettimeofday(&now, NULL);
			if ((now.tv_sec - start.tv_sec) + (now.tv_usec - start.tv_usec) / 1e6 >= seconds)
				break;
		}
	}
	PQfinish(conn);
	return 0;
}
