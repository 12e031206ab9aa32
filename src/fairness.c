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

/* A row's text element as a C string (the arrays have no NULLs). */
static char **
TextArrayStrings(ArrayType *array, const char *argname, int *count)
{
	Datum	   *elements;
	bool	   *nulls;
	char	  **strings;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", argname)));
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls, count);
	strings = palloc(sizeof(char *) * Max(*count, 1));
	for (int i = 0; i < *count; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", argname)));
		strings[i] = TextDatumGetCString(elements[i]);
	}
	return strings;
}

typedef struct PlayerRow
{
	const char *id;
	int			row;
} PlayerRow;

static int
ComparePlayerRows(const void *a, const void *b)
{
	const PlayerRow *x = (const PlayerRow *) a;
	const PlayerRow *y = (const PlayerRow *) b;
	int			c = strcmp(x->id, y->id);

	return c != 0 ? c : (x->row > y->row) - (x->row < y->row);
}

/*
 * Each match's rows in player id order, as mm.report_result reads them (the
 * order its sums run in); the SQL only groups a match's rows.  Insertion
 * sort: a match has few rows.
 */
static void
SortMatchRowsByPlayer(const int64 *match_ids, char **player_ids, char **side_names,
					  int32 *ranks, int32 *losses, int nrows)
{
	for (int first = 0; first < nrows;)
	{
		int			end = first;

		while (end < nrows && match_ids[end] == match_ids[first])
			end++;
		for (int i = first + 1; i < end; i++)
		{
			char	   *id = player_ids[i];
			char	   *side = side_names[i];
			int32		rank = ranks[i];
			int32		loss = losses[i];
			int			j = i - 1;

			while (j >= first && strcmp(player_ids[j], id) > 0)
			{
				player_ids[j + 1] = player_ids[j];
				side_names[j + 1] = side_names[j];
				ranks[j + 1] = ranks[j];
				losses[j + 1] = losses[j];
				j--;
			}
			player_ids[j + 1] = id;
			side_names[j + 1] = side;
			ranks[j + 1] = rank;
			losses[j + 1] = loss;
		}
		first = end;
	}
}

/*
 * Each row's side (side_of): 1 + the distinct side names of its match before
 * it in byte order.  Returns the largest match's row count.
 */
static int
NumberSides(const int64 *match_ids, char **side_names, int nrows, int32 *side_of)
{
	int			max_size = 1;

	for (int first = 0; first < nrows;)
	{
		int			end = first;

		while (end < nrows && match_ids[end] == match_ids[first])
			end++;
		max_size = Max(max_size, end - first);
		for (int i = first; i < end; i++)
		{
			int			before = 0;

			for (int j = first; j < end; j++)
			{
				bool		seen = false;

				if (strcmp(side_names[j], side_names[i]) >= 0)
					continue;
				/* count each smaller name once */
				for (int m = first; m < j && !seen; m++)
					seen = strcmp(side_names[m], side_names[j]) == 0;
				if (!seen)
					before++;
			}
			side_of[i] = before + 1;
		}
		first = end;
	}
	return max_size;
}


/*
 * mm.replay_ratings_core(system, tau, k, initial_rating, initial_rd,
 * initial_volatility, match_ids, player_ids, side_names, ranks, losses):
 * the replay of results given as player rows in replay order, each match's
 * rows consecutive (sorted here by player id); side_names is the row's team
 * (a player's own id in a free-for-all), ranks its side's rank (0 or less:
 * the match is skipped), losses 1 for a leaver scored as a loss.  Sides are
 * numbered in the byte order of their names.  Returns per replayed match its
 * id, side 1's prediction and outcome (1, 0.5, 0; NULL with more than two
 * sides), and per player (byte order of ids) the rating, rd and games after
 * the last.  Internal to mm.replay_ratings.
 */
Datum
mm_replay_ratings_core(PG_FUNCTION_ARGS)
{
	char	   *system;
	ReplaySettings s;
	double		initial_rating = PG_GETARG_FLOAT8(3);
	double		initial_rd = PG_GETARG_FLOAT8(4);
	double		initial_volatility = PG_GETARG_FLOAT8(5);
	int64	   *match_ids;
	char	  **player_ids;
	char	  **side_names;
	int32	   *ranks,
			   *losses;
	int			nrows,
				n_players,
				n_sides,
				n_ranks,
				n_losses;
	int32	   *player_of;
	int32	   *side_of;
	PlayerRow  *sorted;
	const char **distinct_ids;
	int			player_count = 0;
	double	   *rating,
			   *rd,
			   *volatility;
	int32	   *games;
	int64	   *replayed_ids;
	double	   *prediction,
			   *outcome;
	bool	   *outcome_null;
	int			nreplayed = 0;
	int			max_size;
	double	   *scratch;
	int		   *iscratch;
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};

	for (int a = 0; a < 11; a++)
		if (PG_ARGISNULL(a))
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

	match_ids = MmInt8Array(PG_GETARG_ARRAYTYPE_P(6), "match_ids", MM_REPLAY_MAX_ROWS, &nrows);
	player_ids = TextArrayStrings(PG_GETARG_ARRAYTYPE_P(7), "player_ids", &n_players);
	side_names = TextArrayStrings(PG_GETARG_ARRAYTYPE_P(8), "side_names", &n_sides);
	ranks = MmInt4Array(PG_GETARG_ARRAYTYPE_P(9), "ranks", MM_REPLAY_MAX_ROWS, &n_ranks);
	losses = MmInt4Array(PG_GETARG_ARRAYTYPE_P(10), "losses", MM_REPLAY_MAX_ROWS, &n_losses);
	if (n_players != nrows || n_sides != nrows || n_ranks != nrows || n_losses != nrows)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("match_ids, player_ids, side_names, ranks and losses must have the same length")));

	SortMatchRowsByPlayer(match_ids, player_ids, side_names, ranks, losses, nrows);

	/* players numbered in the byte order of their ids */
	sorted = palloc(sizeof(PlayerRow) * Max(nrows, 1));
	for (int i = 0; i < nrows; i++)
	{
		sorted[i].id = player_ids[i];
		sorted[i].row = i;
	}
	qsort(sorted, nrows, sizeof(PlayerRow), ComparePlayerRows);
	player_of = palloc(sizeof(int32) * Max(nrows, 1));
	distinct_ids = palloc(sizeof(char *) * Max(nrows, 1));
	for (int i = 0; i < nrows; i++)
	{
		if (i == 0 || strcmp(sorted[i].id, sorted[i - 1].id) != 0)
			distinct_ids[player_count++] = sorted[i].id;
		player_of[sorted[i].row] = player_count - 1;
	}

	side_of = palloc(sizeof(int32) * Max(nrows, 1));
	max_size = NumberSides(match_ids, side_names, nrows, side_of);

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
	replayed_ids = palloc(sizeof(int64) * Max(nrows, 1));
	prediction = palloc(sizeof(double) * Max(nrows, 1));
	outcome = palloc(sizeof(double) * Max(nrows, 1));
	outcome_null = palloc(sizeof(bool) * Max(nrows, 1));
	scratch = palloc(sizeof(double) * (max_size + 1) * 11);
	iscratch = palloc(sizeof(int) * (max_size + 1) * 2);

	for (int first = 0; first < nrows;)
	{
		int			end = first;
		int			n;
		int			nsides = 0;
		bool		skip = false;
		int			stride = max_size + 1;
		int			rank1 = 0,
					rank2 = 0;

		CHECK_FOR_INTERRUPTS();
		while (end < nrows && match_ids[end] == match_ids[first])
			end++;
		n = end - first;
		for (int i = first; i < end; i++)
		{
			nsides = Max(nsides, side_of[i]);
			skip |= ranks[i] <= 0;
			if (side_of[i] == 1)
				rank1 = ranks[i];
			else if (side_of[i] == 2)
				rank2 = ranks[i];
		}
		/* as mm.report_result: no rating change with fewer than two sides */
		if (!skip && nsides >= 2)
		{
			replayed_ids[nreplayed] = match_ids[first];
			prediction[nreplayed] =
				ReplayMatch(&s, n, player_of + first, side_of + first, ranks + first,
							losses + first, rating, rd, volatility, games, nsides,
							scratch, scratch + stride, iscratch, iscratch + stride,
							scratch + 2 * stride, scratch + 3 * stride,
							scratch + 4 * stride, scratch + 5 * stride,
							scratch + 6 * stride, scratch + 7 * stride,
							scratch + 8 * stride, scratch + 9 * stride);
			outcome_null[nreplayed] = nsides != 2;
			outcome[nreplayed] = rank1 < rank2 ? 1.0 : rank1 == rank2 ? 0.5 : 0.0;
			nreplayed++;
		}
		first = end;
	}

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("replay_ratings_core must be called in a context that accepts a record")));
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = PointerGetDatum(MmBuildInt8Array(replayed_ids, nreplayed));
	values[1] = PointerGetDatum(MmBuildFloat8Array(prediction, nreplayed));
	{
		Datum	   *o = palloc(sizeof(Datum) * Max(nreplayed, 1));
		int			dims[1] = {nreplayed};
		int			lbs[1] = {1};

		for (int i = 0; i < nreplayed; i++)
			o[i] = Float8GetDatum(outcome[i]);
		values[2] = PointerGetDatum(construct_md_array(o, outcome_null, 1, dims, lbs, FLOAT8OID,
													   sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	}
	values[3] = PointerGetDatum(MmBuildTextArray(distinct_ids, player_count));
	values[4] = PointerGetDatum(MmBuildFloat8Array(rating, player_count));
	values[5] = PointerGetDatum(MmBuildFloat8Array(rd, player_count));
	values[6] = PointerGetDatum(MmBuildInt4Array(games, player_count));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
