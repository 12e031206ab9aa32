/*
 * fairness.c
 *	  Fairness you can prove (docs/fairness.md): the tick's call that keeps
 *	  each rated match's prediction (mm.record_match_predictions), and the
 *	  core of mm.replay_ratings, which replays recorded results with
 *	  candidate Elo or Glicko-2 settings.
 *
 * The replay does in C what mm.report_result does in SQL for each result,
 * in the same order of operations, so that a replay with the live settings
 * gives the live ratings: each side's strength is the mean rating of its
 * players (and for Glicko-2 their mean RD), a Glicko-2 player plays one
 * rating period against every opposing side's composite player, an Elo
 * player moves by K times the mean over the opponents of score minus
 * expectation.  The SQL wrapper (src/sql/82_fairness.sql) gathers the
 * results and turns the arrays back into figures.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "fairness.h"
#include "ratings.h"
#include "ratings_args.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_replay_ratings_core);

/* The largest replay: player rows of all its results. */
#define MM_REPLAY_MAX_ROWS 50000000

/* ----------------------------------------------------------------------
 * The tick's call
 * ----------------------------------------------------------------------
 */

static SPIPlanPtr RecordPlan = NULL;

/*
 * Whether the queue config rates its matches: "rating": {"system": ...}
 * names one of the three systems.  Unrated queues cost the tick nothing.
 */
bool
MmFairnessQueueIsRated(Jsonb *config)
{
	JsonbValue	rating;
	JsonbValue	system;
	const char *name;
	int			len;

	if (getKeyJsonValueFromContainer(&config->root, "rating", 6, &rating) == NULL ||
		rating.type != jbvBinary)
		return false;
	if (getKeyJsonValueFromContainer(rating.val.binary.data, "system", 6, &system) == NULL ||
		system.type != jbvString)
		return false;
	name = system.val.string.val;
	len = system.val.string.len;
	return (len == 3 && strncmp(name, "elo", 3) == 0) ||
		(len == 7 && strncmp(name, "glicko2", 7) == 0) ||
		(len == 9 && strncmp(name, "openskill", 9) == 0);
}

/*
 * Records the predictions of the matches the tick just wrote (created at
 * now in the queue), in the tick's transaction and SPI connection.  The plan
 * is kept for the backend.
 */
void
MmFairnessRecordPredictions(const char *queue, TimestampTz now)
{
	Datum		values[2];
	int			rc;

	if (RecordPlan == NULL)
	{
		Oid			types[2] = {TEXTOID, TIMESTAMPTZOID};
		SPIPlanPtr	plan = SPI_prepare("SELECT mm.record_match_predictions($1, $2)", 2, types);

		if (plan == NULL)
			elog(ERROR, "preparing the prediction statement failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "keeping the prediction statement failed");
		RecordPlan = plan;
	}
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(RecordPlan, values, NULL, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "recording predictions failed: %s", SPI_result_code_string(rc));
}

/* ----------------------------------------------------------------------
 * The replay (pure C over arrays)
 * ----------------------------------------------------------------------
 */

typedef enum ReplaySystem
{
	REPLAY_ELO,
	REPLAY_GLICKO2
} ReplaySystem;

typedef struct ReplaySettings
{
	ReplaySystem system;
	double		tau;			/* Glicko-2 */
	double		k;				/* Elo: a fixed K, or <= 0 for mm.elo_k_factor */
} ReplaySettings;

/* The Glicko expectation of a against b with both deviations (Glicko-1 scale). */
double
MmGlickoExpected(double rating_a, double rd_a, double rating_b, double rd_b)
{
	double		phi = sqrt(rd_a * rd_a + rd_b * rd_b) / GLICKO2_SCALE;
	double		g = 1.0 / sqrt(1.0 + 3.0 * phi * phi / (M_PI * M_PI));

	return 1.0 / (1.0 + exp(-g * (rating_a - rating_b) / GLICKO2_SCALE));
}

/* The score of a side of rank own against one of rank other (0, 0.5, 1). */
static inline double
PairScore(int own, int other, bool loss)
{
	if (loss)
		return 0.0;
	if (own < other)
		return 1.0;
	if (own == other)
		return 0.5;
	return 0.0;
}

/*
 * Replays one match of n player rows (row[i] indexes the player arrays;
 * side[i] in 1..nsides, sides numbered in the order of their names; rank[i]
 * the side's rank; loss[i] a leaver scored as a loss), updating rating, rd,
 * volatility and games in place.  Returns side 1's win probability before
 * the update (the mean over its pairs, as mm.report_result predicts).
 * Scratch arrays hold at least n + 1 doubles each.
 */
static double
ReplayMatch(const ReplaySettings *s, int n, const int32 *row, const int32 *side,
			const int32 *rank, const int32 *loss, double *rating, double *rd,
			double *volatility, int32 *games, int nsides, double *side_sum,
			double *side_rd_sum, int *side_count, int *side_rank, double *side_rating,
			double *side_rd, double *opp_rating, double *opp_rd, double *opp_score,
			double *new_rating, double *new_rd, double *new_volatility)
{
	double		prediction = 0.0;

	for (int t = 0; t < nsides; t++)
	{
		side_sum[t] = 0.0;
		side_rd_sum[t] = 0.0;
		side_count[t] = 0;
		side_rank[t] = 0;
	}
	for (int i = 0; i < n; i++)
	{
		int			t = side[i] - 1;

		side_sum[t] += rating[row[i]] * 1.0;
		side_rd_sum[t] += rd[row[i]];
		side_count[t]++;
		side_rank[t] = rank[i];
	}
	for (int t = 0; t < nsides; t++)
	{
		side_rating[t] = side_sum[t] / (double) side_count[t];
		side_rd[t] = side_rd_sum[t] / (double) side_count[t];
	}

	/* side 1's chance: the mean over its pairs with every other side */
	for (int t = 1; t < nsides; t++)
	{
		if (s->system == REPLAY_GLICKO2)
			prediction += MmGlickoExpected(side_rating[0], side_rd[0], side_rating[t], side_rd[t]);
		else
			prediction += MmEloExpected(side_rating[0], side_rating[t]);
	}
	prediction /= (double) (nsides - 1);

	for (int i = 0; i < n; i++)
	{
		int			p = row[i];
		int			own = side[i] - 1;

		if (s->system == REPLAY_GLICKO2)
		{
			Glicko2Rating player = {rating[p], rd[p], volatility[p]};
			Glicko2Rating result;
			int			m = 0;

			for (int t = 0; t < nsides; t++)
			{
				if (t == own)
					continue;
				opp_rating[m] = side_rating[t];
				opp_rd[m] = side_rd[t];
				opp_score[m] = PairScore(rank[i], side_rank[t], loss[i] != 0);
				m++;
			}
			if (!MmGlicko2Update(&player, opp_rating, opp_rd, opp_score, m, s->tau, &result))
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("replayed Glicko-2 rating is out of range"),
						 errhint("Use a smaller tau or a smaller initial_rd.")));
			new_rating[i] = rating[p] + 1.0 * (result.rating - rating[p]);
			new_rd[i] = result.rd;
			new_volatility[i] = result.volatility;
		}
		else
		{
			double		change = 0.0;
			double		k;
			int			m = 0;

			for (int t = 0; t < nsides; t++)
			{
				if (t == own)
					continue;
				change += PairScore(rank[i], side_rank[t], loss[i] != 0) -
					MmEloExpected(side_rating[own], side_rating[t]);
				m++;
			}
			change /= (double) m;
			k = s->k > 0 ? s->k : MmEloKFactor(games[p], rating[p]);
			new_rating[i] = rating[p] + 1.0 * k * change;
			new_rd[i] = rd[p];
			new_volatility[i] = volatility[p];
		}
	}
	/* every player's update reads the ratings before the game: write after */
	for (int i = 0; i < n; i++)
	{
		rating[row[i]] = new_rating[i];
		rd[row[i]] = new_rd[i];
		volatility[row[i]] = new_volatility[i];
		games[row[i]]++;
	}
	return prediction;
}

/*
 * mm.replay_ratings_core(system, tau, k, initial_rating, initial_rd,
 * initial_volatility, player_count, match_sizes, players, sides, ranks,
 * losses): the replay of matches given as consecutive player rows; returns
 * side 1's prediction per match and every player's rating, rd, volatility
 * and games after the last.  Internal to mm.replay_ratings, which checks
 * the settings and builds the arrays.
 */
Datum
mm_replay_ratings_core(PG_FUNCTION_ARGS)
{
	char	   *system;
	ReplaySettings s;
	double		initial_rating = PG_GETARG_FLOAT8(3);
	double		initial_rd = PG_GETARG_FLOAT8(4);
	double		initial_volatility = PG_GETARG_FLOAT8(5);
	int32		player_count = PG_GETARG_INT32(6);
	int32	   *sizes,
			   *players,
			   *sides,
			   *ranks,
			   *losses;
	int			nmatches,
				nrows,
				n_sides,
				n_ranks,
				n_losses;
	double	   *rating,
			   *rd,
			   *volatility,
			   *prediction;
	int32	   *games;
	int			max_size = 1;
	double	   *scratch;
	int		   *iscratch;
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	int			offset = 0;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3) ||
		PG_ARGISNULL(4) || PG_ARGISNULL(5) || PG_ARGISNULL(6) || PG_ARGISNULL(7) ||
		PG_ARGISNULL(8) || PG_ARGISNULL(9) || PG_ARGISNULL(10) || PG_ARGISNULL(11))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("replay_ratings_core arguments must not be null")));
	system = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (strcmp(system, "glicko2") == 0)
		s.system = REPLAY_GLICKO2;
	else if (strcmp(system, "elo") == 0)
		s.system = REPLAY_ELO;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("system must be \"elo\" or \"glicko2\"")));
	s.tau = PG_GETARG_FLOAT8(1);
	s.k = PG_GETARG_FLOAT8(2);
	MmCheckPositive(s.tau, "tau");
	MmCheckFinite(s.k, "k");
	MmCheckFinite(initial_rating, "initial_rating");
	MmCheckPositive(initial_rd, "initial_rd");
	MmCheckPositive(initial_volatility, "initial_volatility");
	if (player_count < 0 || player_count > MM_REPLAY_MAX_ROWS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("player_count must be between 0 and %d", MM_REPLAY_MAX_ROWS)));

	sizes = MmInt4Array(PG_GETARG_ARRAYTYPE_P(7), "match_sizes", MM_REPLAY_MAX_ROWS, &nmatches);
	players = MmInt4Array(PG_GETARG_ARRAYTYPE_P(8), "players", MM_REPLAY_MAX_ROWS, &nrows);
	sides = MmInt4Array(PG_GETARG_ARRAYTYPE_P(9), "sides", MM_REPLAY_MAX_ROWS, &n_sides);
	ranks = MmInt4Array(PG_GETARG_ARRAYTYPE_P(10), "ranks", MM_REPLAY_MAX_ROWS, &n_ranks);
	losses = MmInt4Array(PG_GETARG_ARRAYTYPE_P(11), "losses", MM_REPLAY_MAX_ROWS, &n_losses);
	if (n_sides != nrows || n_ranks != nrows || n_losses != nrows)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("players, sides, ranks and losses must have the same length")));

	/* every match at least two rows, players in range, sides 1..n dense */
	{
		int64		total = 0;

		for (int m = 0; m < nmatches; m++)
		{
			if (sizes[m] < 2)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("match_sizes[%d] must be at least 2", m + 1)));
			total += sizes[m];
			max_size = Max(max_size, sizes[m]);
		}
		if (total != nrows)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("match_sizes must add up to the length of players")));
	}
	for (int i = 0; i < nrows; i++)
	{
		if (players[i] < 1 || players[i] > player_count)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("players[%d] must be between 1 and player_count", i + 1)));
		if (sides[i] < 1 || sides[i] > max_size)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("sides[%d] must be between 1 and the size of its match", i + 1)));
		players[i]--;			/* 0-based from here on */
	}

	rating = palloc(sizeof(double) * Max(player_count, 1));
	rd = palloc(sizeof(double) * Max(player_count, 1));
	volatility = palloc(sizeof(double) * Max(player_count, 1));
	games = palloc0(sizeof(int32) * Max(player_count, 1));
	for (int p = 0; p < player_count; p++)
	{
		rating[p] = initial_rating;
		rd[p] = initial_rd;
		volatility[p] = initial_volatility;
	}
	prediction = palloc(sizeof(double) * Max(nmatches, 1));
	scratch = palloc(sizeof(double) * (max_size + 1) * 11);
	iscratch = palloc(sizeof(int) * (max_size + 1) * 2);

	for (int m = 0; m < nmatches; m++)
	{
		int			n = sizes[m];
		int			nsides = 0;
		int			stride = max_size + 1;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < n; i++)
			nsides = Max(nsides, sides[offset + i]);
		if (nsides < 2)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("match %d of the replay has fewer than two sides", m + 1)));
		prediction[m] = ReplayMatch(&s, n, players + offset, sides + offset, ranks + offset,
									losses + offset, rating, rd, volatility, games, nsides,
									scratch, scratch + stride, iscratch, iscratch + stride,
									scratch + 2 * stride, scratch + 3 * stride,
									scratch + 4 * stride, scratch + 5 * stride,
									scratch + 6 * stride, scratch + 7 * stride,
									scratch + 8 * stride, scratch + 9 * stride);
		offset += n;
	}

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("replay_ratings_core must be called in a context that accepts a record")));
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = PointerGetDatum(MmBuildFloat8Array(prediction, nmatches));
	values[1] = PointerGetDatum(MmBuildFloat8Array(rating, player_count));
	values[2] = PointerGetDatum(MmBuildFloat8Array(rd, player_count));
	values[3] = PointerGetDatum(MmBuildFloat8Array(volatility, player_count));
	values[4] = PointerGetDatum(MmBuildInt4Array(games, player_count));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
