/*
 * replay.c
 *	  What-if: a queue's recorded tickets replayed against a config in
 *	  simulated time (mm.replay_matches, mm.replay).
 *
 * The tickets that entered the queue in [from_time, to_time) are read back
 * with their players and arrival times, and how each one ended: a ticket
 * cancelled in reality is cancelled at the same age in the replay (unless
 * the replay matched it first); timeouts follow the replayed config.  The
 * real search (MmSearchMatches) runs at from_time, from_time + tick_every,
 * ... up to to_time over the tickets present, each tick in its own memory
 * context.  Nothing is written and nothing is sent: the function only reads,
 * so it runs in a read-only transaction and on a standby.  Two calls with
 * the same arguments over the same rows return the same result.
 *
 * Simplifications, documented in docs/metrics.md: the players' server-side
 * values and stored ratings are read as they are now, not as they were;
 * autofill protection is not replayed (no player is protected); a ticket
 * that searched in several queues is replayed in this queue alone.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
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

/* A recorded ticket and its fate. */
typedef struct ReplayTicket
{
	TimestampTz created_at;
	TimestampTz cancelled_at;	/* reality's cancel, DT_NOEND: never */
	TimestampTz ended_at;		/* the replay's end, DT_NOEND: still searching */
	int			match;			/* the replay's match index, -1: none */
	bool		timed_out;		/* in the replay */
	bool		cancelled;		/* in the replay */
} ReplayTicket;

/* A match the replay formed. */
typedef struct ReplayMatch
{
	TimestampTz formed_at;
	double		quality;
	int			ntickets;
	int		   *tickets;		/* indexes into the recorded tickets */
	int		   *ticket_team;
	int			nplayers;
	int		   *player_role;	/* NULL without roles */
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
	Jsonb	   *config_jsonb;
	Jsonb	  **players;
	Oid			args[] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};
	Datum		values[3];
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext tick_context;
	int		   *searching;		/* the tickets arrived and not ended, in order */
	int			nsearching = 0,
				next_arrival = 0;
	int			rc,
				i;
	bool		isnull;

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

	/* the tickets that entered the queue in the window, and how they ended */
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
	if ((rc = SPI_finish()) != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));

	rp->rule_passed = palloc0(sizeof(int64) * Max(rp->config->nrules, 1));
	rp->rule_failed = palloc0(sizeof(int64) * Max(rp->config->nrules, 1));
	rp->matches_allocated = 64;
	rp->matches = palloc(sizeof(ReplayMatch) * rp->matches_allocated);

	/* the ticks */
	searching = palloc(sizeof(int) * Max(rp->ntickets, 1));
	tick_context = AllocSetContextCreate(caller, "mm replay tick", ALLOCSET_DEFAULT_SIZES);
	for (TimestampTz now = from_time; now <= to_time; now += step)
	{
		MmTicket   *pool;
		int		   *pool_index;
		int			n = 0;
		MmSearchResult *result;

		CHECK_FOR_INTERRUPTS();
		rp->nticks++;
		MemoryContextSwitchTo(tick_context);
		while (next_arrival < rp->ntickets && rp->fate[next_arrival].created_at <= now)
			searching[nsearching++] = next_arrival++;
		pool = palloc(sizeof(MmTicket) * Max(nsearching, 1));
		pool_index = palloc(sizeof(int) * Max(nsearching, 1));
		/* the searching list keeps the tickets still searching, in order */
		{
			int			kept = 0;

			for (int k = 0; k < nsearching; k++)
			{
				i = searching[k];
				if (TIMESTAMP_IS_NOEND(rp->fate[i].ended_at))
					searching[kept++] = i;
			}
			nsearching = kept;
		}
		for (int k = 0; k < nsearching; k++)
		{
			ReplayTicket *f;
			double		age;

			i = searching[k];
			f = &rp->fate[i];
			/* reality's cancel, at the same time */
			if (f->cancelled_at <= now)
			{
				f->cancelled = true;
				f->ended_at = f->cancelled_at;
				continue;
			}
			age = ((double) now - (double) f->created_at) / USECS_PER_SEC;
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
			pool_index[n++] = i;
		}
		if (n >= 1)
		{
			result = MmSearchMatches(&rp->context, pool, n);
			for (int r = 0; r < rp->config->nrules; r++)
			{
				rp->rule_passed[r] += result->rule_passed[r];
				rp->rule_failed[r] += result->rule_failed[r];
			}
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
				rm->formed_at = now;
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
					int			ti = pool_index[fm->tickets[k]];

					rm->tickets[k] = ti;
					rm->ticket_team[k] = fm->ticket_team[k];
					rp->fate[ti].ended_at = now;
					rp->fate[ti].match = rp->nmatches;
				}
				rp->nmatches++;
				MemoryContextSwitchTo(tick_context);
			}
		}
		MemoryContextSwitchTo(caller);
		MemoryContextReset(tick_context);
		if (now > to_time - step)
			break;
	}
	MemoryContextDelete(tick_context);
	return rp;
}

PG_FUNCTION_INFO_V1(mm_replay_matches);

/*
 * mm.replay_matches(queue, config, from_time, to_time, tick_every) RETURNS
 * TABLE (match_number, formed_at, quality, tickets, teams): the matches the
 * replay formed, in order.
 */
Datum
mm_replay_matches(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Replay	   *rp;

	InitMaterializedSRF(fcinfo, 0);
	rp = RunReplay(fcinfo);
	for (int m = 0; m < rp->nmatches; m++)
	{
		const ReplayMatch *rm = &rp->matches[m];
		Datum		values[5];
		bool		nulls[5] = {false};
		int64	   *ids = palloc(sizeof(int64) * rm->ntickets);
		StringInfoData teams;
		int			player = 0;

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
		values[0] = Int32GetDatum(m + 1);
		values[1] = TimestampTzGetDatum(rm->formed_at);
		values[2] = Float8GetDatum(rm->quality);
		values[3] = PointerGetDatum(MmBuildInt8Array(ids, rm->ntickets));
		values[4] = DirectFunctionCall1(jsonb_in, CStringGetDatum(teams.data));
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
				cancelled = 0;
	double		quality_sum = 0;
	StringInfoData out;

	for (int i = 0; i < rp->ntickets; i++)
	{
		const ReplayTicket *f = &rp->fate[i];

		if (f->match >= 0)
			waits[nmatched++] = ((double) f->ended_at - (double) f->created_at) / USECS_PER_SEC;
		timed_out += f->timed_out;
		cancelled += f->cancelled;
	}
	qsort(waits, nmatched, sizeof(double), CompareDoubles);
	for (int m = 0; m < rp->nmatches; m++)
	{
		qualities[m] = rp->matches[m].quality;
		quality_sum += qualities[m];
	}
	qsort(qualities, rp->nmatches, sizeof(double), CompareDoubles);

	initStringInfo(&out);
	appendStringInfo(&out, "{\"ticks\": %ld, \"tickets\": %d, \"matched\": %d", rp->nticks,
					 rp->ntickets, nmatched);
	AppendNumberOrNull(&out, "matched_share", rp->ntickets > 0 ? (double) nmatched / rp->ntickets : NAN);
	AppendNumberOrNull(&out, "time_to_match_p50", Percentile(waits, nmatched, 0.5));
	AppendNumberOrNull(&out, "time_to_match_p95", Percentile(waits, nmatched, 0.95));
	AppendNumberOrNull(&out, "time_to_match_max", nmatched > 0 ? waits[nmatched - 1] : NAN);
	appendStringInfo(&out, ", \"timed_out\": %d, \"cancelled\": %d, \"still_searching\": %d, \"matches\": %d",
					 timed_out, cancelled, rp->ntickets - nmatched - timed_out - cancelled, rp->nmatches);
	AppendNumberOrNull(&out, "quality_mean", rp->nmatches > 0 ? quality_sum / rp->nmatches : NAN);
	AppendNumberOrNull(&out, "quality_p10", Percentile(qualities, rp->nmatches, 0.1));
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
	appendStringInfoChar(&out, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(out.data)));
}
