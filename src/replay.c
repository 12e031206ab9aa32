/*
 * replay.c
 *	  What-if: a queue's recorded tickets replayed against a config in
 *	  simulated time (mm.replay_matches, mm.replay).
 *
 * The tickets that entered the queue in [from_time, to_time) are read back
 * with their players and arrival times, and how each one ended: a ticket
 * cancelled in reality is cancelled at the same age in the replay (unless
 * the replay matched it first, or a proposal it did not accept cancelled
 * it); timeouts follow the replayed config.  The real search
 * (MmSearchMatches) runs at from_time, from_time + tick_every, ... up to
 * to_time over the tickets present, each tick in its own memory context.
 *
 * With an acceptance step in the config a match is a proposal, answered
 * from the record when the same tickets were proposed together there, or
 * drawn (seeded) at the queue's recorded rates; with penalties, dodges,
 * acceptance timeouts and the recorded leaves are offences in simulated
 * time: cooldowns hold a player's later tickets, the low-priority pool is
 * marked as the tick's load marks it, good games count after the recorded
 * game length.  Between two ticks the arrivals, answers, game ends and
 * leaves are taken in time order.
 *
 * Nothing is written and nothing is sent: the function only reads, so it
 * runs in a read-only transaction and on a standby.  Two calls with the
 * same arguments over the same rows return the same result.
 *
 * Simplifications, documented in docs/metrics.md: the players' server-side
 * values and stored ratings are read as they are now, not as they were;
 * autofill protection is not replayed (no player is protected); penalty
 * standings start clean at from_time; a ticket that searched in several
 * queues is replayed in this queue alone.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/binaryheap.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "match_search.h"
#include "player_sources.h"
#include "queue_config.h"
#include "schema_version.h"
#include "sql_arrays.h"
#include "ticket_parse.h"

/* The most ticks one replay may run. */
#define MM_REPLAY_MAX_TICKS 10000000L

/*
 * The seed of the replay's draws (acceptance of a new grouping): each draw
 * hashes it with the player, the place of the proposal's first ticket among
 * the window's recorded tickets (not its id, which depends on what else the
 * database holds) and its time, so the same arguments over the same rows
 * draw the same answers.
 */
#define MM_REPLAY_SEED UINT64CONST(0x6d6d7265706c6179)

/*
 * A player's own answers weigh against the queue's rates as if the queue's
 * rates had been seen this many times: one dodge in three answers does not
 * make a player who dodges one proposal in three.
 */
#define MM_REPLAY_PRIOR_ANSWERS 20.0

/* How a proposal ended (or not yet). */
typedef enum ReplayOutcome
{
	REPLAY_PENDING,
	REPLAY_ACCEPTED,
	REPLAY_REJECTED,
	REPLAY_TIMED_OUT
} ReplayOutcome;

/* The offences the replay records (keys of penalties.cooldown_seconds). */
typedef enum ReplayReason
{
	REPLAY_DODGE,
	REPLAY_ACCEPTANCE_TIMEOUT,
	REPLAY_LEAVE,
	REPLAY_NREASONS
} ReplayReason;

/*
 * What a proposal's players did: the outcome, when (usecs after the
 * proposal), the tickets that end cancelled (those that did not accept) and
 * the players who offended.  Read from the record, or drawn.
 */
typedef struct ReplayAnswer
{
	ReplayOutcome outcome;
	int64		delay;
	int			ncancel;
	int		   *cancel;			/* ticket indexes */
	int			noffenders;
	int		   *offender;		/* player indexes */
	ReplayReason *reason;
} ReplayAnswer;

/* A recorded proposal of the window's tickets, keyed by its sorted ticket ids. */
typedef struct RecordedProposal
{
	int			ntickets;
	int64	   *ticket_ids;		/* sorted */
	ReplayAnswer answer;
} RecordedProposal;

/* A player's standing in the replay, and its recorded answers. */
typedef struct ReplayPlayer
{
	const char *id;
	int			offences;
	TimestampTz cooldown_until; /* DT_NOBEGIN: none */
	int			low_priority_games;
	int			good_games;
	/* recorded: proposals ended by answers, and those of them that could
	 * show a silence (accepted or timed out) */
	int			proposals;
	int			rejects;
	int			observed;
	int			silences;
} ReplayPlayer;

/* The queue's "penalties" (65_penalties.sql's mm.record_offences). */
typedef struct ReplayPenalties
{
	bool		on;
	double		cooldown[REPLAY_NREASONS];	/* seconds; < 0: no offence */
	double		growth;
	double		cap;
	int			low_priority_offences;	/* 0: no low-priority pool */
	int			low_priority_games;
	int			forgive_after_games;	/* 0: never */
	int64		game_length;	/* usecs: the recorded median, ready to completed */
	bool		game_recorded;	/* false: no game completed, good games count when ready */
} ReplayPenalties;

/* A recorded ticket and its fate. */
typedef struct ReplayTicket
{
	TimestampTz created_at;
	TimestampTz arrival;		/* created_at, or a cooldown's end */
	TimestampTz cancelled_at;	/* reality's cancel, DT_NOEND: never */
	TimestampTz ended_at;		/* the replay's end, DT_NOEND: still searching */
	int			match;			/* the replay's match index, -1: none */
	int			nplayers;
	int		   *player;			/* player indexes */
	bool		proposed;		/* in a proposal waiting for answers */
	bool		held;			/* arrived during a cooldown, waits for its end */
	bool		low_priority_seen;	/* searched in the low-priority pool */
	bool		timed_out;		/* in the replay */
	bool		cancelled;		/* in the replay */
} ReplayTicket;

/* A match (or proposal) the replay formed. */
typedef struct ReplayMatch
{
	TimestampTz formed_at;
	TimestampTz decided_at;		/* accepted or cancelled; formed_at without acceptance */
	double		quality;
	int			ntickets;
	int		   *tickets;		/* indexes into the recorded tickets */
	int		   *ticket_team;
	int			nplayers;
	int		   *player_role;	/* NULL without roles */
	ReplayAnswer answer;
} ReplayMatch;

typedef struct Replay
{
	MmQueueConfig *config;
	MmRuleContext context;
	int			ntickets;
	MmTicket   *tickets;
	ReplayTicket *fate;
	int			nmatches;
	int			matches_allocated;
	ReplayMatch *matches;
	int64	   *rule_passed;
	int64	   *rule_failed;
	long		nticks;

	/* the players of the window's tickets, sorted by id */
	int			nplayers;
	ReplayPlayer *players;

	/* the acceptance step, when the replayed config asks for one */
	bool		acceptance;
	int64		acceptance_timeout; /* usecs */
	int			nrecorded;
	RecordedProposal *recorded; /* sorted by ticket ids */
	int			naccept_delays;
	int64	   *accept_delays;	/* recorded delays of accepted proposals */
	int			nreject_delays;
	int64	   *reject_delays;	/* ... of rejected ones */
	int			queue_proposals;	/* recorded proposals that ended by answers */
	double		reject_rate;
	double		silence_rate;
	int			reused[REPLAY_TIMED_OUT + 1];	/* per outcome */
	int			drawn[REPLAY_TIMED_OUT + 1];

	ReplayPenalties penalties;
	int			offences[REPLAY_NREASONS];
	/* the recorded leaves, in time order (the replay plays no games) */
	int			nleaves;
	int			next_leave;
	int		   *leave_player;
	TimestampTz *leave_at;
	/* the matches being played: their good games count at the end */
	binaryheap *games;
	int			held_tickets;
	int			low_priority_tickets;
} Replay;

static TimestampTz
CheckedTime(FunctionCallInfo fcinfo, int arg, const char *name)
{
	TimestampTz t;

	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	t = PG_GETARG_TIMESTAMPTZ(arg);
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s must be a finite timestamp", name)));
	return t;
}

/* The roles a player may take at an age (autofill by the replay's clock). */
static void
RolesAt(const MmRolesConfig *roles, MmTicket *t)
{
	bool		autofill = roles->autofill && t->age_seconds >= roles->autofill_after_seconds;

	for (int p = 0; p < t->nplayers; p++)
	{
		MmRoleMask	listed = 0;

		for (int r = 0; r < roles->nroles; r++)
			if (t->role_rank[p * MM_MAX_ROLES + r] != MM_ROLE_UNLISTED)
				listed |= 1 << r;
		t->role_accept[p] = autofill ? MmAllRoles(roles) : listed;
	}
}

static int
ComparePlayerIds(const void *a, const void *b)
{
	return strcmp(((const ReplayPlayer *) a)->id, ((const ReplayPlayer *) b)->id);
}

static int
FindPlayer(const Replay *rp, const char *id)
{
	ReplayPlayer key;
	ReplayPlayer *hit;

	key.id = id;
	hit = bsearch(&key, rp->players, rp->nplayers, sizeof(ReplayPlayer), ComparePlayerIds);
	return hit == NULL ? -1 : (int) (hit - rp->players);
}

/* Ticket ids to indexes: the tickets sorted by id. */
typedef struct TicketKey
{
	int64		id;
	int			index;
} TicketKey;

static int
CompareTicketKeys(const void *a, const void *b)
{
	int64		x = ((const TicketKey *) a)->id,
				y = ((const TicketKey *) b)->id;

	return x < y ? -1 : x > y ? 1 : 0;
}

static int
CompareInt64s(const void *a, const void *b)
{
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

static int
CompareProposalKeys(const void *a, const void *b)
{
	const RecordedProposal *x = a,
			   *y = b;

	if (x->ntickets != y->ntickets)
		return x->ntickets < y->ntickets ? -1 : 1;
	for (int k = 0; k < x->ntickets; k++)
		if (x->ticket_ids[k] != y->ticket_ids[k])
			return x->ticket_ids[k] < y->ticket_ids[k] ? -1 : 1;
	return 0;
}

/*
 * The players of the window's tickets, each once, and every ticket's
 * players as indexes.
 */
static void
IndexPlayers(Replay *rp)
{
	int			total = 0,
				n = 0;

	for (int i = 0; i < rp->ntickets; i++)
		total += rp->tickets[i].nplayers;
	rp->players = palloc0(sizeof(ReplayPlayer) * Max(total, 1));
	for (int i = 0; i < rp->ntickets; i++)
		for (int p = 0; p < rp->tickets[i].nplayers; p++)
			rp->players[total > 0 ? n++ : 0].id = rp->tickets[i].player_ids[p];
	qsort(rp->players, n, sizeof(ReplayPlayer), ComparePlayerIds);
	rp->nplayers = 0;
	for (int k = 0; k < n; k++)
		if (rp->nplayers == 0 || strcmp(rp->players[rp->nplayers - 1].id, rp->players[k].id) != 0)
			rp->players[rp->nplayers++] = rp->players[k];
	for (int k = 0; k < rp->nplayers; k++)
		TIMESTAMP_NOBEGIN(rp->players[k].cooldown_until);
	for (int i = 0; i < rp->ntickets; i++)
	{
		ReplayTicket *f = &rp->fate[i];

		f->nplayers = rp->tickets[i].nplayers;
		f->player = palloc(sizeof(int) * Max(f->nplayers, 1));
		for (int p = 0; p < f->nplayers; p++)
			f->player[p] = FindPlayer(rp, rp->tickets[i].player_ids[p]);
	}
}

/* The queue's penalties, read from the config as mm.record_offences does. */
static void
ReadPenalties(Replay *rp, Jsonb *config)
{
	static const char *const keys[] = {
		"(($1 OPERATOR(pg_catalog.#>>) '{penalties,cooldown_seconds,dodge}'))::float8",
		"(($1 OPERATOR(pg_catalog.#>>) '{penalties,cooldown_seconds,acceptance_timeout}'))::float8",
		"(($1 OPERATOR(pg_catalog.#>>) '{penalties,cooldown_seconds,leave}'))::float8",
		"(($1 OPERATOR(pg_catalog.#>>) '{penalties,cooldown_growth}'))::float8",
		"(($1 OPERATOR(pg_catalog.#>>) '{penalties,max_cooldown_seconds}'))::float8",
		"(($1 OPERATOR(pg_catalog.#>>) '{penalties,low_priority,offences}'))::float8",
		"(($1 OPERATOR(pg_catalog.#>>) '{penalties,low_priority,games}'))::float8",
		"(($1 OPERATOR(pg_catalog.#>>) '{penalties,forgive_after_games}'))::float8"};
	double		v[lengthof(keys)];
	StringInfoData sql;
	Oid			argtypes[] = {JSONBOID};
	Datum		values[1];
	ReplayPenalties *pen = &rp->penalties;
	int			rc;

	values[0] = JsonbPGetDatum(config);
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT $1 OPERATOR(pg_catalog.?) 'penalties'");
	for (int k = 0; k < (int) lengthof(keys); k++)
		appendStringInfo(&sql, ", %s", keys[k]);
	rc = SPI_execute_with_args(sql.data, 1, argtypes, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "reading the penalties failed: %s", SPI_result_code_string(rc));
	{
		bool		isnull;

		pen->on = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		for (int k = 0; k < (int) lengthof(keys); k++)
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, k + 2, &isnull);

			v[k] = isnull ? NAN : DatumGetFloat8(d);
		}
	}
	SPI_freetuptable(SPI_tuptable);
	pen->cooldown[REPLAY_DODGE] = isnan(v[0]) ? -1 : v[0];
	pen->cooldown[REPLAY_ACCEPTANCE_TIMEOUT] = isnan(v[1]) ? -1 : v[1];
	pen->cooldown[REPLAY_LEAVE] = isnan(v[2]) ? -1 : v[2];
	pen->growth = isnan(v[3]) ? 1 : v[3];
	pen->cap = isnan(v[4]) ? 86400 : v[4];
	pen->low_priority_offences = isnan(v[5]) ? 0 : (int) v[5];
	pen->low_priority_games = isnan(v[6]) ? 0 : (int) v[6];
	pen->forgive_after_games = isnan(v[7]) ? 0 : (int) v[7];
}

/*
 * The recorded proposals of the window's tickets (matches formed with an
 * acceptance deadline), one row per player: how each ended and who did not
 * accept; and every player's answers, for the rates.  A ticket cancelled in
 * reality by a proposal it did not accept is not cancelled by the replay
 * at that time: the replay's own acceptance step decides.
 */
static void
ReadRecordedProposals(Replay *rp, text *queue, TimestampTz from_time, TimestampTz to_time,
					  MemoryContext caller)
{
	Oid			args[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	TicketKey  *by_id = palloc(sizeof(TicketKey) * Max(rp->ntickets, 1));
	int			rc;
	int			nrows;
	int			allocated = 16;
	int			row;
	int			outcomes[REPLAY_TIMED_OUT + 1] = {0};
	double		players_proposed = 0;

	for (int i = 0; i < rp->ntickets; i++)
	{
		by_id[i].id = rp->tickets[i].id;
		by_id[i].index = i;
	}
	qsort(by_id, rp->ntickets, sizeof(TicketKey), CompareTicketKeys);

	values[0] = PointerGetDatum(queue);
	values[1] = TimestampTzGetDatum(from_time);
	values[2] = TimestampTzGetDatum(to_time);
	rc = SPI_execute_with_args("SELECT m.id, m.created_at, m.ready_at, m.updated_at, m.status,"
							   " m.cancel_reason, mp.ticket_id, mp.player_id, mp.accepted"
							   " FROM mm.matches m JOIN mm.match_players mp"
							   " ON mp.queue OPERATOR(pg_catalog.=) m.queue"
							   " AND mp.match_id OPERATOR(pg_catalog.=) m.id"
							   " WHERE m.queue OPERATOR(pg_catalog.=) $1"
							   " AND m.created_at OPERATOR(pg_catalog.>=) $2"
							   " AND m.created_at OPERATOR(pg_catalog.<=) $3"
							   " AND m.acceptance_deadline IS NOT NULL"
							   " ORDER BY m.created_at, m.id, mp.ticket_id, mp.player_id",
							   3, args, values, NULL, true, 0);
	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the recorded proposals failed: %s", SPI_result_code_string(rc));
	nrows = (int) SPI_processed;
	rp->recorded = palloc(sizeof(RecordedProposal) * allocated);
	rp->accept_delays = palloc(sizeof(int64) * Max(nrows, 1));
	rp->reject_delays = palloc(sizeof(int64) * Max(nrows, 1));
	for (row = 0; row < nrows;)
	{
		TupleDesc	desc = SPI_tuptable->tupdesc;
		HeapTuple	first = SPI_tuptable->vals[row];
		bool		isnull;
		int64		match_id = DatumGetInt64(SPI_getbinval(first, desc, 1, &isnull));
		TimestampTz created = DatumGetTimestampTz(SPI_getbinval(first, desc, 2, &isnull));
		Datum		ready = SPI_getbinval(first, desc, 3, &isnull);
		bool		is_ready = !isnull;
		TimestampTz updated = DatumGetTimestampTz(SPI_getbinval(first, desc, 4, &isnull));
		char	   *status = TextDatumGetCString(SPI_getbinval(first, desc, 5, &isnull));
		Datum		reason_datum = SPI_getbinval(first, desc, 6, &isnull);
		char	   *reason = isnull ? NULL : TextDatumGetCString(reason_datum);
		int			end;
		int			nt = 0;
		bool		complete = true;
		ReplayOutcome outcome = REPLAY_PENDING;
		RecordedProposal *rec;

		for (end = row; end < nrows; end++)
			if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[end], desc, 1, &isnull)) != match_id)
				break;
		if (is_ready)
			outcome = REPLAY_ACCEPTED;
		else if (strcmp(status, "cancelled") == 0 && reason != NULL && strcmp(reason, "rejected") == 0)
			outcome = REPLAY_REJECTED;
		else if (strcmp(status, "cancelled") == 0 && reason != NULL && strcmp(reason, "acceptance_timeout") == 0)
			outcome = REPLAY_TIMED_OUT;

		if (rp->nrecorded == allocated)
		{
			allocated *= 2;
			rp->recorded = repalloc(rp->recorded, sizeof(RecordedProposal) * allocated);
		}
		rec = &rp->recorded[rp->nrecorded];
		memset(rec, 0, sizeof(RecordedProposal));
		rec->ticket_ids = palloc(sizeof(int64) * (end - row));
		rec->answer.cancel = palloc(sizeof(int) * (end - row));
		rec->answer.offender = palloc(sizeof(int) * (end - row));
		rec->answer.reason = palloc(sizeof(ReplayReason) * (end - row));
		rec->answer.outcome = outcome;
		rec->answer.delay = (is_ready ? DatumGetTimestampTz(ready) : updated) - created;
		for (int k = row; k < end; k++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[k];
			int64		ticket = DatumGetInt64(SPI_getbinval(tuple, desc, 7, &isnull));
			char	   *player_id = TextDatumGetCString(SPI_getbinval(tuple, desc, 8, &isnull));
			Datum		accepted = SPI_getbinval(tuple, desc, 9, &isnull);
			int			answer = isnull ? -1 : DatumGetBool(accepted) ? 1 : 0;
			int			player = FindPlayer(rp, player_id);
			TicketKey	key;
			TicketKey  *hit;

			key.id = ticket;
			hit = bsearch(&key, by_id, rp->ntickets, sizeof(TicketKey), CompareTicketKeys);
			if (hit == NULL)
				complete = false;	/* a ticket from before the window */
			if (nt == 0 || rec->ticket_ids[nt - 1] != ticket)
				rec->ticket_ids[nt++] = ticket;

			/*
			 * A player's rates are counted as the queue's: rejections
			 * against every proposal that ended by answers (only the first
			 * rejection is seen), silences against the proposals where one
			 * would show (accepted or timed out: where a rejection ended it
			 * first, a player not heard may have been slow or silent).
			 */
			if (outcome != REPLAY_PENDING)
			{
				players_proposed++;
				if (player >= 0)
				{
					ReplayPlayer *pl = &rp->players[player];

					pl->proposals++;
					pl->rejects += answer == 0;
					if (outcome != REPLAY_REJECTED)
					{
						pl->observed++;
						pl->silences += answer < 0;
					}
				}
			}

			/* who did not accept: their tickets end cancelled, they offend */
			if (hit != NULL && ((outcome == REPLAY_REJECTED && answer == 0) ||
								(outcome == REPLAY_TIMED_OUT && answer != 1)))
			{
				ReplayAnswer *a = &rec->answer;

				if (a->ncancel == 0 || a->cancel[a->ncancel - 1] != hit->index)
					a->cancel[a->ncancel++] = hit->index;
				/* reality's cancel was this proposal's */
				if (rp->fate[hit->index].cancelled_at == updated)
					TIMESTAMP_NOEND(rp->fate[hit->index].cancelled_at);
				if (player >= 0 && answer != 1)
				{
					a->offender[a->noffenders] = player;
					a->reason[a->noffenders++] = answer == 0 ? REPLAY_DODGE : REPLAY_ACCEPTANCE_TIMEOUT;
				}
			}
		}
		rec->ntickets = nt;
		outcomes[outcome]++;
		if (outcome == REPLAY_ACCEPTED)
			rp->accept_delays[rp->naccept_delays++] = rec->answer.delay;
		else if (outcome == REPLAY_REJECTED)
			rp->reject_delays[rp->nreject_delays++] = rec->answer.delay;
		/* a proposal still open, or ended otherwise, is no answer to reuse */
		if (complete && outcome != REPLAY_PENDING)
		{
			qsort(rec->ticket_ids, nt, sizeof(int64), CompareInt64s);
			rp->nrecorded++;
		}
		row = end;
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);
	qsort(rp->recorded, rp->nrecorded, sizeof(RecordedProposal), CompareProposalKeys);
	qsort(rp->accept_delays, rp->naccept_delays, sizeof(int64), CompareInt64s);
	qsort(rp->reject_delays, rp->nreject_delays, sizeof(int64), CompareInt64s);

	/*
	 * The queue's rates per player, r (reject) and s (silence), from how
	 * the proposals ended: with n players each answering alone, a proposal
	 * is accepted with (1 - r - s)^n and rejected with 1 - (1 - r)^n (the
	 * first rejection ends it, so a player's own count of rejections sees
	 * only the first); n is the proposals' mean size.
	 */
	rp->queue_proposals = outcomes[REPLAY_ACCEPTED] + outcomes[REPLAY_REJECTED] + outcomes[REPLAY_TIMED_OUT];
	if (rp->queue_proposals > 0)
	{
		double		n = players_proposed / rp->queue_proposals;
		double		not_rejected = (double) (outcomes[REPLAY_ACCEPTED] + outcomes[REPLAY_TIMED_OUT]) / rp->queue_proposals;
		double		accepted = (double) outcomes[REPLAY_ACCEPTED] / rp->queue_proposals;

		rp->reject_rate = 1 - pow(not_rejected, 1 / n);
		rp->silence_rate = Max(1 - rp->reject_rate - pow(accepted, 1 / n), 0);
	}
}

/*
 * What the replay cannot play, read from the record when the config has
 * penalties: the leaves of the window's players (offences at their time)
 * and how long a game lasts (the median from ready to completed), after
 * which a match's players count a good game.
 */
static void
ReadRecordedGames(Replay *rp, text *queue, TimestampTz from_time, TimestampTz to_time,
				  MemoryContext caller)
{
	Oid			args[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	bool		isnull;
	Datum		d;
	int			rc;

	values[0] = PointerGetDatum(queue);
	values[1] = TimestampTzGetDatum(from_time);
	values[2] = TimestampTzGetDatum(to_time);
	rc = SPI_execute_with_args("SELECT h.player_id, h.created_at FROM mm.penalty_history h"
							   " WHERE h.queue OPERATOR(pg_catalog.=) $1"
							   " AND h.reason OPERATOR(pg_catalog.=) 'leave'"
							   " AND h.created_at OPERATOR(pg_catalog.>=) $2"
							   " AND h.created_at OPERATOR(pg_catalog.<=) $3"
							   " ORDER BY h.created_at, h.id",
							   3, args, values, NULL, true, 0);
	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the recorded leaves failed: %s", SPI_result_code_string(rc));
	rp->leave_player = palloc(sizeof(int) * Max(SPI_processed, 1));
	rp->leave_at = palloc(sizeof(TimestampTz) * Max(SPI_processed, 1));
	for (uint64 k = 0; k < SPI_processed; k++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[k];
		int			player = FindPlayer(rp, TextDatumGetCString(SPI_getbinval(tuple, SPI_tuptable->tupdesc, 1,
																			  &isnull)));

		if (player < 0)
			continue;
		rp->leave_player[rp->nleaves] = player;
		rp->leave_at[rp->nleaves++] = DatumGetTimestampTz(SPI_getbinval(tuple, SPI_tuptable->tupdesc, 2, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);

	rc = SPI_execute_with_args("SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY m.updated_at OPERATOR(pg_catalog.-) m.ready_at)"
							   " FROM mm.matches m WHERE m.queue OPERATOR(pg_catalog.=) $1"
							   " AND m.created_at OPERATOR(pg_catalog.>=) $2"
							   " AND m.created_at OPERATOR(pg_catalog.<=) $3"
							   " AND m.status OPERATOR(pg_catalog.=) 'completed' AND m.ready_at IS NOT NULL",
							   3, args, values, NULL, true, 1);
	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "reading the recorded games failed: %s", SPI_result_code_string(rc));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
	{
		Interval   *length = DatumGetIntervalP(d);

		rp->penalties.game_length = length->time + (int64) length->day * USECS_PER_DAY;
		rp->penalties.game_recorded = true;
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);
}

/* A uniform draw in [0, 1) from the seed, a player, a ticket's place and a time. */
static double
Draw(const char *player, int64 place, TimestampTz at)
{
	uint64		h = hash_bytes_extended((const unsigned char *) player, (int) strlen(player),
										MM_REPLAY_SEED ^ (uint64) place ^ ((uint64) at << 17));

	return (double) (h >> 11) * (1.0 / 9007199254740992.0);
}

/*
 * An offence of a player at a time, as mm.record_offences gives it: the
 * cooldown grows with the offences (never shortening a running one), and
 * from low_priority.offences on the player owes games in the pool.
 */
static void
RecordOffence(Replay *rp, int player, ReplayReason reason, TimestampTz at)
{
	const ReplayPenalties *pen = &rp->penalties;
	ReplayPlayer *pl;
	double		base = pen->cooldown[reason];

	if (!pen->on || player < 0 || base < 0)
		return;
	pl = &rp->players[player];
	pl->offences++;
	pl->good_games = 0;
	rp->offences[reason]++;
	if (base > 0)
	{
		double		seconds = Min(base * pow(pen->growth, Min(pl->offences - 1, 60)), pen->cap);
		TimestampTz until = MmTimestampPlusSeconds(at, seconds, "a replayed cooldown's end");

		if (TIMESTAMP_IS_NOBEGIN(pl->cooldown_until) || until > pl->cooldown_until)
			pl->cooldown_until = until;
	}
	if (pen->low_priority_offences > 0 && pl->offences >= pen->low_priority_offences)
		pl->low_priority_games = Max(pl->low_priority_games, pen->low_priority_games);
}

/* A match played (ready): a good game for each player, as mm.count_good_games. */
static void
CountGoodGames(Replay *rp, const ReplayMatch *rm)
{
	int			forgive = rp->penalties.forgive_after_games;

	if (!rp->penalties.on)
		return;
	for (int k = 0; k < rm->ntickets; k++)
	{
		const ReplayTicket *f = &rp->fate[rm->tickets[k]];

		for (int p = 0; p < f->nplayers; p++)
		{
			ReplayPlayer *pl = &rp->players[f->player[p]];

			pl->low_priority_games = Max(pl->low_priority_games - 1, 0);
			if (forgive > 0 && pl->offences > 0 && pl->good_games + 1 >= forgive)
			{
				pl->good_games = 0;
				pl->offences--;
			}
			else
				pl->good_games++;
		}
	}
}

/* A ready match is played: its good games count at its end (game_length later). */
static void
StartGame(Replay *rp, int m)
{
	if (rp->penalties.on)
		binaryheap_add(rp->games, Int32GetDatum(m));
}

/* A recorded delay drawn from a sorted list (none: the fallback). */
static int64
DrawDelay(const int64 *delays, int n, double u, int64 fallback)
{
	if (n == 0)
		return fallback;
	return delays[Min((int) (u * n), n - 1)];
}

/*
 * The answer to a proposal the replay formed: the record's when the same
 * tickets were proposed together in it; otherwise each player rejects,
 * stays silent or accepts at the rates (the player's own answers weighed
 * with the queue's), the first rejection cancelling the proposal after a
 * recorded rejection's delay, a silence letting it time out, and every
 * acceptance making it ready after a recorded acceptance's delay.
 */
static void
AnswerProposal(Replay *rp, ReplayMatch *rm)
{
	RecordedProposal key;
	RecordedProposal *hit;
	ReplayAnswer *a = &rm->answer;
	int64		first_place = rm->tickets[0];	/* among the window's tickets */
	int			rejecter = -1,
				rejecter_ticket = -1;
	double		u;

	key.ntickets = rm->ntickets;
	key.ticket_ids = palloc(sizeof(int64) * rm->ntickets);
	for (int k = 0; k < rm->ntickets; k++)
		key.ticket_ids[k] = rp->tickets[rm->tickets[k]].id;
	qsort(key.ticket_ids, rm->ntickets, sizeof(int64), CompareInt64s);
	hit = bsearch(&key, rp->recorded, rp->nrecorded, sizeof(RecordedProposal), CompareProposalKeys);
	pfree(key.ticket_ids);
	if (hit != NULL)
	{
		*a = hit->answer;
		rp->reused[a->outcome]++;
		return;
	}

	memset(a, 0, sizeof(ReplayAnswer));
	a->cancel = palloc(sizeof(int) * rm->ntickets);
	a->offender = palloc(sizeof(int) * Max(rm->nplayers, 1));
	a->reason = palloc(sizeof(ReplayReason) * Max(rm->nplayers, 1));
	for (int k = 0; k < rm->ntickets; k++)
	{
		const ReplayTicket *f = &rp->fate[rm->tickets[k]];
		bool		silent_ticket = false;

		for (int p = 0; p < f->nplayers; p++)
		{
			const ReplayPlayer *pl = &rp->players[f->player[p]];
			double		reject = (pl->rejects + MM_REPLAY_PRIOR_ANSWERS * rp->reject_rate) /
				(pl->proposals + MM_REPLAY_PRIOR_ANSWERS);
			double		silence = (pl->silences + MM_REPLAY_PRIOR_ANSWERS * rp->silence_rate) /
				(pl->observed + MM_REPLAY_PRIOR_ANSWERS);

			u = Draw(pl->id, first_place, rm->formed_at);
			if (u < reject)
			{
				if (rejecter < 0)
				{
					rejecter = f->player[p];
					rejecter_ticket = rm->tickets[k];
				}
			}
			else if (u < reject + silence)
			{
				a->offender[a->noffenders] = f->player[p];
				a->reason[a->noffenders++] = REPLAY_ACCEPTANCE_TIMEOUT;
				silent_ticket = true;
			}
		}
		if (silent_ticket)
			a->cancel[a->ncancel++] = rm->tickets[k];
	}
	u = Draw("", first_place, rm->formed_at);
	if (rejecter >= 0)
	{
		a->outcome = REPLAY_REJECTED;
		a->delay = DrawDelay(rp->reject_delays, rp->nreject_delays, u, rp->acceptance_timeout / 2);
		a->ncancel = 1;
		a->cancel[0] = rejecter_ticket;
		a->noffenders = 1;
		a->offender[0] = rejecter;
		a->reason[0] = REPLAY_DODGE;
	}
	else if (a->noffenders > 0)
	{
		a->outcome = REPLAY_TIMED_OUT;
		/* the first tick past the deadline ends it */
		a->delay = rp->acceptance_timeout + 1;
	}
	else
	{
		a->outcome = REPLAY_ACCEPTED;
		a->delay = DrawDelay(rp->accept_delays, rp->naccept_delays, u, 0);
		a->ncancel = 0;
	}
	rp->drawn[a->outcome]++;
}

/*
 * Ends a proposal at its decision: every ticket matched, or those that did
 * not accept cancelled and the others searching again with their age (a
 * dodge or a timeout is an offence).
 */
static void
DecideProposal(Replay *rp, int m, int *searching, int *nsearching)
{
	ReplayMatch *rm = &rp->matches[m];
	const ReplayAnswer *a = &rm->answer;

	for (int k = 0; k < rm->ntickets; k++)
	{
		ReplayTicket *f = &rp->fate[rm->tickets[k]];

		f->proposed = false;
		if (a->outcome == REPLAY_ACCEPTED)
		{
			f->ended_at = rm->decided_at;
			f->match = m;
		}
		else
		{
			bool		cancel = false;

			for (int c = 0; c < a->ncancel; c++)
				cancel |= a->cancel[c] == rm->tickets[k];
			if (cancel)
			{
				f->cancelled = true;
				f->ended_at = rm->decided_at;
			}
			else
				searching[(*nsearching)++] = rm->tickets[k];
		}
	}
	if (a->outcome == REPLAY_ACCEPTED)
		StartGame(rp, m);
	else
		for (int o = 0; o < a->noffenders; o++)
			RecordOffence(rp, a->offender[o], a->reason[o], rm->decided_at);
}

/* The searching tickets by arrival (a requeued or held one goes back to its place). */
static const ReplayTicket *sort_fate;

static int
CompareArrivals(const void *a, const void *b)
{
	int			x = *(const int *) a,
				y = *(const int *) b;
	TimestampTz ax = sort_fate[x].arrival,
				ay = sort_fate[y].arrival;

	if (ax != ay)
		return ax < ay ? -1 : 1;
	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * The proposals waiting for answers, and the games being played, each a
 * heap of match indexes, the earliest decision first (a game ends
 * game_length after its match's decision, so the same order).
 */
static int
CompareDecisions(Datum a, Datum b, void *arg)
{
	const Replay *rp = arg;
	int			x = DatumGetInt32(a),
				y = DatumGetInt32(b);
	TimestampTz tx = rp->matches[x].decided_at,
				ty = rp->matches[y].decided_at;

	/* binaryheap keeps the greatest first: the earliest is the greatest */
	if (tx != ty)
		return tx < ty ? 1 : -1;
	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * The replay's clock between ticks: the tickets searching (arrived and not
 * ended, by arrival), those held (arrived during a cooldown) and the
 * proposals waiting for answers.
 */
typedef struct ReplayClock
{
	int		   *searching;
	int			nsearching;
	int		   *held;
	int			nheld;
	int			next_arrival;	/* the next recorded ticket to arrive */
	binaryheap *pending;		/* proposals waiting for answers */
} ReplayClock;

/*
 * The config replayed (the queue's, or the one given, validated), its rule
 * context and penalties.
 */
static void
ReadReplayConfig(Replay *rp, FunctionCallInfo fcinfo, text *queue_text, const char *queue,
				 MemoryContext caller)
{
	Jsonb	   *config_jsonb;
	Oid			args[] = {TEXTOID};
	Datum		values[1];
	bool		isnull;
	int			rc;

	if (PG_ARGISNULL(1))
	{
		values[0] = PointerGetDatum(queue_text);
		rc = SPI_execute_with_args("SELECT config FROM mm.queues WHERE name OPERATOR(pg_catalog.=) $1",
								   1, args, values, NULL, true, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "reading the queue failed: %s", SPI_result_code_string(rc));
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("queue \"%s\" does not exist", queue),
					 errhint("Give a config to replay a queue that is gone.")));
		config_jsonb = DatumGetJsonbPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		MemoryContextSwitchTo(caller);
	}
	else
		config_jsonb = PG_GETARG_JSONB_P_COPY(1);
	/* the caller's context: SPI_finish frees the procedure's */
	MemoryContextSwitchTo(caller);
	rp->config = MmParseQueueConfig(config_jsonb);
	if (MmQueueConfigMatchFunction(config_jsonb) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a config with a match_function cannot be replayed"),
				 errdetail("The replay runs the built-in search only.")));
	MmRuleContextInit(&rp->context, rp->config);
	rp->acceptance = rp->config->acceptance_timeout_seconds > 0;
	rp->acceptance_timeout = (int64) (rp->config->acceptance_timeout_seconds * USECS_PER_SEC);
	ReadPenalties(rp, config_jsonb);
	MemoryContextSwitchTo(caller);
}

/* The tickets that entered the queue in the window, and how they ended. */
static void
ReadRecordedTickets(Replay *rp, text *queue_text, const char *queue, TimestampTz from_time,
					TimestampTz to_time, MemoryContext caller)
{
	Oid			args[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	Jsonb	  **players;
	bool		isnull;
	int			rc,
				i;

	values[0] = PointerGetDatum(queue_text);
	values[1] = TimestampTzGetDatum(from_time);
	values[2] = TimestampTzGetDatum(to_time);
	rc = SPI_execute_with_args("SELECT t.id, t.created_at, t.players,"
							   " CASE WHEN t.status OPERATOR(pg_catalog.=) 'cancelled' THEN t.updated_at END"
							   " FROM mm.tickets t WHERE t.queue OPERATOR(pg_catalog.=) $1"
							   " AND t.created_at OPERATOR(pg_catalog.>=) $2"
							   " AND t.created_at OPERATOR(pg_catalog.<) $3"
							   " ORDER BY t.created_at, t.id",
							   3, args, values, NULL, true, 0);
	MemoryContextSwitchTo(caller);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the recorded tickets failed: %s", SPI_result_code_string(rc));
	rp->ntickets = (int) SPI_processed;
	rp->tickets = palloc0(sizeof(MmTicket) * Max(rp->ntickets, 1));
	rp->fate = palloc0(sizeof(ReplayTicket) * Max(rp->ntickets, 1));
	players = palloc(sizeof(Jsonb *) * Max(rp->ntickets, 1));
	for (i = 0; i < rp->ntickets; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum		d;

		rp->tickets[i].id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		rp->fate[i].created_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &isnull));
		rp->fate[i].arrival = rp->fate[i].created_at;
		players[i] = DatumGetJsonbPCopy(SPI_getbinval(tuple, desc, 3, &isnull));
		d = SPI_getbinval(tuple, desc, 4, &isnull);
		TIMESTAMP_NOEND(rp->fate[i].cancelled_at);
		if (!isnull)
			rp->fate[i].cancelled_at = DatumGetTimestampTz(d);
		TIMESTAMP_NOEND(rp->fate[i].ended_at);
		rp->fate[i].match = -1;
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);
	MmParseTicketsWithSources(&rp->context, queue, rp->tickets, players, rp->ntickets, true);
	MemoryContextSwitchTo(caller);
}

/*
 * Brings the replay up to a tick at now: drops the tickets no longer
 * searching, then plays what happened since the last tick.
 */
static void
AdvanceToTick(Replay *rp, ReplayClock *clk, TimestampTz now)
{
	int			ordered;
	int			i;

	/* the searching list keeps the tickets still searching */
	{
		int			kept = 0;

		for (int k = 0; k < clk->nsearching; k++)
		{
			i = clk->searching[k];
			if (TIMESTAMP_IS_NOEND(rp->fate[i].ended_at) && !rp->fate[i].proposed)
				clk->searching[kept++] = i;
		}
		clk->nsearching = kept;
	}
	ordered = clk->nsearching;

	/*
	 * Since the last tick, in time order: the arrivals, the answers due
	 * (a tick ends the proposals past their deadline first, answers come
	 * between ticks), the games ending and the recorded leaves; a ticket
	 * with a player cooling down waits for the cooldown's end, as a
	 * refused player comes back then.
	 */
	for (;;)
	{
		TimestampTz arrival_at,
					due_at,
					game_at,
					leave_at;

		TIMESTAMP_NOEND(arrival_at);
		TIMESTAMP_NOEND(due_at);
		TIMESTAMP_NOEND(game_at);
		TIMESTAMP_NOEND(leave_at);
		if (clk->next_arrival < rp->ntickets && rp->fate[clk->next_arrival].created_at <= now)
			arrival_at = rp->fate[clk->next_arrival].created_at;
		if (!binaryheap_empty(clk->pending) &&
			rp->matches[DatumGetInt32(binaryheap_first(clk->pending))].decided_at <= now)
			due_at = rp->matches[DatumGetInt32(binaryheap_first(clk->pending))].decided_at;
		if (!binaryheap_empty(rp->games))
		{
			TimestampTz game_end =
				MmTimestampPlusUsecs(rp->matches[DatumGetInt32(binaryheap_first(rp->games))].decided_at,
									 rp->penalties.game_length, "a replayed game's end");

			if (game_end <= now)
				game_at = game_end;
		}
		if (rp->next_leave < rp->nleaves && rp->leave_at[rp->next_leave] <= now)
			leave_at = rp->leave_at[rp->next_leave];

		if (!TIMESTAMP_IS_NOEND(arrival_at) &&
			arrival_at <= due_at && arrival_at <= game_at && arrival_at <= leave_at)
		{
			ReplayTicket *f = &rp->fate[clk->next_arrival];

			for (int p = 0; rp->penalties.on && p < f->nplayers; p++)
			{
				TimestampTz until = rp->players[f->player[p]].cooldown_until;

				if (!TIMESTAMP_IS_NOBEGIN(until) && until > f->arrival)
					f->arrival = until;
			}
			if (f->arrival > f->created_at)
			{
				f->held = true;
				rp->held_tickets++;
				clk->held[clk->nheld++] = clk->next_arrival;
			}
			else
			{
				/* the newest: the list stays in order */
				clk->searching[clk->nsearching++] = clk->next_arrival;
				if (ordered == clk->nsearching - 1)
					ordered = clk->nsearching;
			}
			clk->next_arrival++;
		}
		else if (!TIMESTAMP_IS_NOEND(due_at) && due_at <= game_at && due_at <= leave_at)
			DecideProposal(rp, DatumGetInt32(binaryheap_remove_first(clk->pending)), clk->searching, &clk->nsearching);
		else if (!TIMESTAMP_IS_NOEND(game_at) && game_at <= leave_at)
			CountGoodGames(rp, &rp->matches[DatumGetInt32(binaryheap_remove_first(rp->games))]);
		else if (!TIMESTAMP_IS_NOEND(leave_at))
		{
			RecordOffence(rp, rp->leave_player[rp->next_leave], REPLAY_LEAVE, leave_at);
			rp->next_leave++;
		}
		else
			break;
	}
	/* the held tickets whose cooldown has ended */
	{
		int			kept = 0;

		for (int k = 0; k < clk->nheld; k++)
			if (rp->fate[clk->held[k]].arrival <= now)
				clk->searching[clk->nsearching++] = clk->held[k];
			else
				clk->held[kept++] = clk->held[k];
		clk->nheld = kept;
	}
	/* the tickets back from a cancelled proposal or a cooldown: by arrival */
	if (ordered < clk->nsearching)
		qsort(clk->searching, clk->nsearching, sizeof(int), CompareArrivals);
}

/*
 * The tick's pool: the searching tickets at their age, past reality's
 * cancels and the ticket timeout, with their roles and low priority;
 * pool_index[k] the recorded ticket of pool[k].  Allocated in the current
 * (the tick's) context.
 */
static MmTicket *
TickPool(Replay *rp, ReplayClock *clk, TimestampTz now, int **pool_index_out, int *n_out)
{
	MmTicket   *pool;
	int		   *pool_index;
	int			n = 0;
	int			i;

	pool = palloc(sizeof(MmTicket) * Max(clk->nsearching, 1));
	pool_index = palloc(sizeof(int) * Max(clk->nsearching, 1));
	for (int k = 0; k < clk->nsearching; k++)
	{
		ReplayTicket *f;
		double		age;

		i = clk->searching[k];
		f = &rp->fate[i];
		/* reality's cancel, at the same time */
		if (f->cancelled_at <= now)
		{
			f->cancelled = true;
			f->ended_at = Max(f->cancelled_at, f->arrival);
			continue;
		}
		age = ((double) now - (double) f->arrival) / USECS_PER_SEC;
		if (rp->config->ticket_timeout_seconds > 0 && age > rp->config->ticket_timeout_seconds)
		{
			f->timed_out = true;
			f->ended_at = now;
			continue;
		}
		pool[n] = rp->tickets[i];
		pool[n].age_seconds = age;
		if (rp->config->roles != NULL)
		{
			pool[n].role_accept = palloc(sizeof(MmRoleMask) * pool[n].nplayers);
			RolesAt(rp->config->roles, &pool[n]);
		}
		/* the low-priority pool, as the tick's load marks it */
		if (rp->penalties.on && rp->config->low_priority_max_wait >= 0)
			for (int p = 0; p < f->nplayers; p++)
				if (rp->players[f->player[p]].low_priority_games > 0)
				{
					pool[n].penalised = true;
					pool[n].low_priority = age < rp->config->low_priority_max_wait;
					if (!f->low_priority_seen)
						rp->low_priority_tickets++;
					f->low_priority_seen = true;
					break;
				}
		pool_index[n++] = i;
	}
	*pool_index_out = pool_index;
	*n_out = n;
	return pool;
}

/*
 * Records the matches a tick found: proposed (out of the search until
 * answered) or, without acceptance, started.  In the caller's context; the
 * tick's context is current again on return.
 */
static void
RecordFoundMatches(Replay *rp, ReplayClock *clk, const MmSearchResult *result,
				   const int *pool_index, TimestampTz now, MemoryContext caller,
				   MemoryContext tick_context)
{
	for (int m = 0; m < result->nmatches; m++)
	{
		const MmFoundMatch *fm = &result->matches[m];
		ReplayMatch *rm;

		MemoryContextSwitchTo(caller);
		if (rp->nmatches == rp->matches_allocated)
		{
			rp->matches_allocated *= 2;
			rp->matches = repalloc(rp->matches, sizeof(ReplayMatch) * rp->matches_allocated);
		}
		rm = &rp->matches[rp->nmatches];
		memset(rm, 0, sizeof(ReplayMatch));
		rm->formed_at = now;
		rm->decided_at = now;
		rm->quality = fm->quality;
		rm->ntickets = fm->ntickets;
		rm->nplayers = fm->nplayers;
		rm->tickets = palloc(sizeof(int) * fm->ntickets);
		rm->ticket_team = palloc(sizeof(int) * fm->ntickets);
		rm->player_role = NULL;
		if (fm->player_role != NULL)
		{
			rm->player_role = palloc(sizeof(int) * fm->nplayers);
			memcpy(rm->player_role, fm->player_role, sizeof(int) * fm->nplayers);
		}
		for (int k = 0; k < fm->ntickets; k++)
		{
			rm->tickets[k] = pool_index[fm->tickets[k]];
			rm->ticket_team[k] = fm->ticket_team[k];
		}
		if (rp->acceptance)
		{
			/* proposed: out of the search until answered */
			AnswerProposal(rp, rm);
			rm->decided_at = MmTimestampPlusUsecs(now, rm->answer.delay, "a replayed proposal's answer");
			for (int k = 0; k < rm->ntickets; k++)
				rp->fate[rm->tickets[k]].proposed = true;
			binaryheap_add(clk->pending, Int32GetDatum(rp->nmatches));
		}
		else
		{
			rm->answer.outcome = REPLAY_ACCEPTED;
			for (int k = 0; k < rm->ntickets; k++)
			{
				rp->fate[rm->tickets[k]].ended_at = now;
				rp->fate[rm->tickets[k]].match = rp->nmatches;
			}
			StartGame(rp, rp->nmatches);
		}
		rp->nmatches++;
		MemoryContextSwitchTo(tick_context);
	}
}

/*
 * Reads the queue's config (or the given one, validated), its recorded
 * tickets in the window, and replays them.
 */
static Replay *
RunReplay(FunctionCallInfo fcinfo)
{
	Replay	   *rp = palloc0(sizeof(Replay));
	text	   *queue_text;
	char	   *queue;
	TimestampTz from_time = CheckedTime(fcinfo, 2, "from_time");
	TimestampTz to_time = CheckedTime(fcinfo, 3, "to_time");
	Interval   *every;
	int64		step;
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext tick_context;
	ReplayClock clk;
	int			rc;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("queue must not be null")));
	queue_text = PG_GETARG_TEXT_PP(0);
	queue = text_to_cstring(queue_text);
	if (PG_ARGISNULL(4))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("tick_every must not be null")));
	every = PG_GETARG_INTERVAL_P(4);
	if (every->month != 0 || every->day != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tick_every must be given in hours, minutes and seconds"),
				 errhint("Write '1 second' or '00:00:05', not days or months.")));
	step = every->time;
	if (step <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tick_every must be positive")));
	if (to_time < from_time)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("to_time must not be before from_time")));
	if (((double) to_time - (double) from_time) / (double) step > MM_REPLAY_MAX_TICKS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the replay would run more than %ld ticks", MM_REPLAY_MAX_TICKS),
				 errhint("Shorten the window or tick less often.")));
	MmRequireServedSchema("mm.replay");

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	MemoryContextSwitchTo(caller);
	ReadReplayConfig(rp, fcinfo, queue_text, queue, caller);
	ReadRecordedTickets(rp, queue_text, queue, from_time, to_time, caller);
	IndexPlayers(rp);
	ReadRecordedProposals(rp, queue_text, from_time, to_time, caller);
	if (rp->penalties.on)
		ReadRecordedGames(rp, queue_text, from_time, to_time, caller);
	if ((rc = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));

	rp->rule_passed = palloc0(sizeof(int64) * Max(rp->config->nrules, 1));
	rp->rule_failed = palloc0(sizeof(int64) * Max(rp->config->nrules, 1));
	rp->matches_allocated = 64;
	rp->matches = palloc(sizeof(ReplayMatch) * rp->matches_allocated);

	/* the ticks */
	clk.searching = palloc(sizeof(int) * Max(rp->ntickets, 1));
	clk.nsearching = 0;
	clk.held = palloc(sizeof(int) * Max(rp->ntickets, 1));
	clk.nheld = 0;
	clk.next_arrival = 0;
	clk.pending = binaryheap_allocate(Max(rp->ntickets, 1), CompareDecisions, rp);
	rp->games = binaryheap_allocate(Max(rp->ntickets, 1), CompareDecisions, rp);
	sort_fate = rp->fate;
	tick_context = AllocSetContextCreate(caller, "mm replay tick", ALLOCSET_DEFAULT_SIZES);
	for (TimestampTz now = from_time; now <= to_time; now += step)
	{
		MmTicket   *pool;
		int		   *pool_index;
		int			n;
		TimestampTz last_tick;

		CHECK_FOR_INTERRUPTS();
		rp->nticks++;
		AdvanceToTick(rp, &clk, now);
		MemoryContextSwitchTo(tick_context);
		pool = TickPool(rp, &clk, now, &pool_index, &n);
		if (n >= 1)
		{
			MmSearchResult *result = MmSearchMatches(&rp->context, pool, n);

			for (int r = 0; r < rp->config->nrules; r++)
			{
				rp->rule_passed[r] += result->rule_passed[r];
				rp->rule_failed[r] += result->rule_failed[r];
			}
			RecordFoundMatches(rp, &clk, result, pool_index, now, caller, tick_context);
		}
		MemoryContextSwitchTo(caller);
		MemoryContextReset(tick_context);
		if (pg_sub_s64_overflow(to_time, step, &last_tick) || now > last_tick)
			break;
	}
	MemoryContextDelete(tick_context);
	return rp;
}

PG_FUNCTION_INFO_V1(mm_replay_matches);

/*
 * mm.replay_matches(queue, config, from_time, to_time, tick_every) RETURNS
 * TABLE (match_number, formed_at, quality, tickets, players, ready_at): the
 * matches the replay formed and its acceptance step did not cancel, in order.
 */
Datum
mm_replay_matches(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Replay	   *rp;

	int			number = 0;

	InitMaterializedSRF(fcinfo, 0);
	rp = RunReplay(fcinfo);
	for (int m = 0; m < rp->nmatches; m++)
	{
		const ReplayMatch *rm = &rp->matches[m];
		Datum		values[6];
		bool		nulls[6] = {false};
		int64	   *ids;
		StringInfoData teams;
		int			player = 0;

		if (rm->answer.outcome != REPLAY_ACCEPTED)
			continue;
		ids = palloc(sizeof(int64) * rm->ntickets);

		initStringInfo(&teams);
		appendStringInfoChar(&teams, '[');
		for (int k = 0; k < rm->ntickets; k++)
		{
			const MmTicket *t = &rp->tickets[rm->tickets[k]];
			int			team = rm->ticket_team[k];

			ids[k] = t->id;
			for (int p = 0; p < t->nplayers; p++, player++)
			{
				if (player > 0)
					appendStringInfoString(&teams, ", ");
				appendStringInfoString(&teams, "{\"player\": ");
				escape_json(&teams, t->player_ids[p]);
				appendStringInfo(&teams, ", \"ticket\": " INT64_FORMAT ", \"team\": ", t->id);
				if (team >= 0)
					escape_json(&teams, rp->config->teams[team].name);
				else
					appendStringInfoString(&teams, "null");
				if (rm->player_role != NULL)
				{
					appendStringInfoString(&teams, ", \"role\": ");
					escape_json(&teams, rp->config->roles->names[rm->player_role[player]]);
				}
				appendStringInfoChar(&teams, '}');
			}
		}
		appendStringInfoChar(&teams, ']');
		values[0] = Int32GetDatum(++number);
		values[1] = TimestampTzGetDatum(rm->formed_at);
		values[2] = Float8GetDatum(rm->quality);
		values[3] = PointerGetDatum(MmBuildInt8Array(ids, rm->ntickets));
		values[4] = DirectFunctionCall1(jsonb_in, CStringGetDatum(teams.data));
		values[5] = TimestampTzGetDatum(rm->decided_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* A percentile (0..1) of sorted values, by linear interpolation; NaN for none. */
static double
Percentile(const double *sorted, int n, double q)
{
	double		pos;
	int			lo;

	if (n == 0)
		return NAN;
	pos = q * (n - 1);
	lo = (int) floor(pos);
	if (lo >= n - 1)
		return sorted[n - 1];
	return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

static int
CompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

static void
AppendNumberOrNull(StringInfo out, const char *key, double v)
{
	appendStringInfo(out, ", \"%s\": ", key);
	if (isnan(v))
		appendStringInfoString(out, "null");
	else
		appendStringInfo(out, "%.3f", v);
}

/*
 * The skill spread (the match's highest value less its lowest) and the team
 * gap (the teams' highest average less their lowest) of the first
 * difference or team_difference rule's attribute, averaged over the matches
 * (players without a value left out); null without such a rule.
 */
static void
AppendSkillFigures(StringInfo out, const Replay *rp)
{
	const MmQueueConfig *config = rp->config;
	int			rule = -1;
	double		spread_sum = 0,
				gap_sum = 0;
	int			nspread = 0,
				ngap = 0;

	for (int r = 0; r < config->nrules && rule < 0; r++)
		if (config->rules[r].type == MM_RULE_DIFFERENCE || config->rules[r].type == MM_RULE_TEAM_DIFFERENCE)
			rule = r;
	for (int m = 0; rule >= 0 && m < rp->nmatches; m++)
	{
		const ReplayMatch *rm = &rp->matches[m];
		double		lo = INFINITY,
					hi = -INFINITY;
		double		team_sum[MM_MAX_TEAMS] = {0};
		int			team_count[MM_MAX_TEAMS] = {0};

		if (rm->answer.outcome != REPLAY_ACCEPTED)
			continue;
		for (int k = 0; k < rm->ntickets; k++)
		{
			const MmTicket *t = &rp->tickets[rm->tickets[k]];
			const MmRuleValue *v = &t->values[rule];

			for (int p = 0; p < t->nplayers && v->player_values != NULL && p < v->nvalues; p++)
			{
				double		x = v->player_values[p];

				if (isnan(x))
					continue;
				lo = Min(lo, x);
				hi = Max(hi, x);
				if (rm->ticket_team[k] >= 0)
				{
					team_sum[rm->ticket_team[k]] += x;
					team_count[rm->ticket_team[k]]++;
				}
			}
		}
		if (hi >= lo)
		{
			spread_sum += hi - lo;
			nspread++;
		}
		if (config->nteams > 1)
		{
			double		tlo = INFINITY,
						thi = -INFINITY;

			for (int t = 0; t < config->nteams; t++)
				if (team_count[t] > 0)
				{
					tlo = Min(tlo, team_sum[t] / team_count[t]);
					thi = Max(thi, team_sum[t] / team_count[t]);
				}
			if (thi >= tlo)
			{
				gap_sum += thi - tlo;
				ngap++;
			}
		}
	}
	appendStringInfoString(out, ", \"skill_attribute\": ");
	if (rule >= 0 && config->rules[rule].attribute != NULL)
		escape_json(out, config->rules[rule].attribute);
	else
		appendStringInfoString(out, "null");
	AppendNumberOrNull(out, "skill_spread_mean", nspread > 0 ? spread_sum / nspread : NAN);
	AppendNumberOrNull(out, "team_gap_mean", ngap > 0 ? gap_sum / ngap : NAN);
}

/*
 * What the replay modelled beyond the search: the acceptance step (recorded
 * answers reused, new groupings drawn at the recorded rates) and the
 * penalties in simulated time; null for a part the config does not have.
 */
static void
AppendModelled(StringInfo out, const Replay *rp)
{
	appendStringInfoString(out, ", \"modelled\": {\"acceptance\": ");
	if (rp->acceptance)
	{
		appendStringInfo(out, "{\"recorded_answers_reused\": %d, \"reused_accepted\": %d"
						 ", \"reused_rejected\": %d, \"reused_timed_out\": %d"
						 ", \"new_groupings_drawn\": %d, \"drawn_accepted\": %d"
						 ", \"drawn_rejected\": %d, \"drawn_timed_out\": %d"
						 ", \"recorded_proposals\": %d",
						 rp->reused[REPLAY_ACCEPTED] + rp->reused[REPLAY_REJECTED] + rp->reused[REPLAY_TIMED_OUT],
						 rp->reused[REPLAY_ACCEPTED], rp->reused[REPLAY_REJECTED], rp->reused[REPLAY_TIMED_OUT],
						 rp->drawn[REPLAY_ACCEPTED] + rp->drawn[REPLAY_REJECTED] + rp->drawn[REPLAY_TIMED_OUT],
						 rp->drawn[REPLAY_ACCEPTED], rp->drawn[REPLAY_REJECTED], rp->drawn[REPLAY_TIMED_OUT],
						 rp->queue_proposals);
		AppendNumberOrNull(out, "reject_rate", rp->reject_rate);
		AppendNumberOrNull(out, "silence_rate", rp->silence_rate);
		appendStringInfoChar(out, '}');
	}
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ", \"penalties\": ");
	if (rp->penalties.on)
	{
		appendStringInfo(out, "{\"dodges\": %d, \"acceptance_timeouts\": %d, \"recorded_leaves\": %d"
						 ", \"tickets_held_by_cooldown\": %d, \"tickets_in_low_priority_pool\": %d",
						 rp->offences[REPLAY_DODGE], rp->offences[REPLAY_ACCEPTANCE_TIMEOUT],
						 rp->offences[REPLAY_LEAVE], rp->held_tickets, rp->low_priority_tickets);
		AppendNumberOrNull(out, "game_seconds", rp->penalties.game_recorded ?
						   (double) rp->penalties.game_length / USECS_PER_SEC : NAN);
		appendStringInfoChar(out, '}');
	}
	else
		appendStringInfoString(out, "null");
	appendStringInfoChar(out, '}');
}

PG_FUNCTION_INFO_V1(mm_replay_summary);

/*
 * The replay's side of mm.replay: tickets, matched share, time to match,
 * timed out and cancelled, matches and their quality, the rules' checks,
 * and per role in a role queue.  mm.replay (SQL) sets it beside what was
 * recorded.
 */
Datum
mm_replay_summary(PG_FUNCTION_ARGS)
{
	Replay	   *rp = RunReplay(fcinfo);
	const MmQueueConfig *config = rp->config;
	double	   *waits = palloc(sizeof(double) * Max(rp->ntickets, 1));
	double	   *qualities = palloc(sizeof(double) * Max(rp->nmatches, 1));
	int			nmatched = 0,
				timed_out = 0,
				cancelled = 0,
				nformed = 0,
				proposals_cancelled = 0;
	double		quality_sum = 0;
	StringInfoData out;

	for (int i = 0; i < rp->ntickets; i++)
	{
		const ReplayTicket *f = &rp->fate[i];

		if (f->match >= 0)
			waits[nmatched++] = ((double) f->ended_at - (double) f->arrival) / USECS_PER_SEC;
		timed_out += f->timed_out;
		cancelled += f->cancelled;
	}
	qsort(waits, nmatched, sizeof(double), CompareDoubles);
	/* matches: formed and not cancelled while proposed (match_stats' meaning) */
	for (int m = 0; m < rp->nmatches; m++)
	{
		if (rp->matches[m].answer.outcome == REPLAY_ACCEPTED)
		{
			qualities[nformed] = rp->matches[m].quality;
			quality_sum += qualities[nformed++];
		}
		else if (rp->matches[m].answer.outcome != REPLAY_PENDING)
			proposals_cancelled++;
	}
	qsort(qualities, nformed, sizeof(double), CompareDoubles);

	initStringInfo(&out);
	appendStringInfo(&out, "{\"ticks\": %ld, \"tickets\": %d, \"matched\": %d", rp->nticks,
					 rp->ntickets, nmatched);
	AppendNumberOrNull(&out, "matched_share", rp->ntickets > 0 ? (double) nmatched / rp->ntickets : NAN);
	AppendNumberOrNull(&out, "time_to_match_p50", Percentile(waits, nmatched, 0.5));
	AppendNumberOrNull(&out, "time_to_match_p95", Percentile(waits, nmatched, 0.95));
	AppendNumberOrNull(&out, "time_to_match_max", nmatched > 0 ? waits[nmatched - 1] : NAN);
	appendStringInfo(&out, ", \"timed_out\": %d, \"cancelled\": %d, \"still_searching\": %d, \"matches\": %d"
					 ", \"proposals_cancelled\": %d",
					 timed_out, cancelled, rp->ntickets - nmatched - timed_out - cancelled, nformed,
					 proposals_cancelled);
	AppendNumberOrNull(&out, "quality_mean", nformed > 0 ? quality_sum / nformed : NAN);
	AppendNumberOrNull(&out, "quality_p10", Percentile(qualities, nformed, 0.1));
	AppendSkillFigures(&out, rp);
	appendStringInfoString(&out, ", \"rules\": {");
	for (int r = 0; r < config->nrules; r++)
	{
		if (r > 0)
			appendStringInfoString(&out, ", ");
		escape_json(&out, config->rules[r].name);
		appendStringInfo(&out, ": {\"passed\": " INT64_FORMAT ", \"failed\": " INT64_FORMAT "}",
						 rp->rule_passed[r], rp->rule_failed[r]);
	}
	appendStringInfoChar(&out, '}');
	if (config->roles != NULL)
	{
		const MmRolesConfig *roles = config->roles;

		appendStringInfoString(&out, ", \"roles\": {");
		for (int r = 0; r < roles->nroles; r++)
		{
			int			players = 0;
			int			first = 0;

			for (int m = 0; m < rp->nmatches; m++)
			{
				const ReplayMatch *rm = &rp->matches[m];
				int			player = 0;

				if (rm->answer.outcome != REPLAY_ACCEPTED)
					continue;
				for (int k = 0; k < rm->ntickets; k++)
				{
					const MmTicket *t = &rp->tickets[rm->tickets[k]];

					for (int p = 0; p < t->nplayers; p++, player++)
						if (rm->player_role[player] == r)
						{
							players++;
							first += t->role_rank[p * MM_MAX_ROLES + r] == 0;
						}
				}
			}
			if (r > 0)
				appendStringInfoString(&out, ", ");
			escape_json(&out, roles->names[r]);
			appendStringInfo(&out, ": {\"players\": %d", players);
			AppendNumberOrNull(&out, "first_choice_share", players > 0 ? (double) first / players : NAN);
			appendStringInfoChar(&out, '}');
		}
		appendStringInfoChar(&out, '}');
	}
	AppendModelled(&out, rp);
	appendStringInfoChar(&out, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(out.data)));
}
