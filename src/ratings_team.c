/*
 * ratings_team.c
 *	  Team ratings: the aggregate mm.team_rating (weighted mean) and
 *	  mm.win_probability (Elo between the mean ratings of two teams).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"

#include "ratings.h"
#include "ratings_args.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_team_rating_transition);
PG_FUNCTION_INFO_V1(mm_team_rating_combine);
PG_FUNCTION_INFO_V1(mm_team_rating_final);
PG_FUNCTION_INFO_V1(mm_win_probability);

/* The state of mm.team_rating is float8[2]: these two sums. */
#define TEAM_SUM_WEIGHTED 0		/* sum of rating * weight */
#define TEAM_SUM_WEIGHTS 1		/* sum of weight */
#define TEAM_STATE_LENGTH 2

/*
 * Mean of a non-empty team's ratings.
 */
static double
TeamMean(const double *ratings, int count)
{
	double		sum = 0.0;

	for (int i = 0; i < count; i++)
		sum += ratings[i];
	return sum / count;
}

/*
 * Elo expected score of team a's mean rating against team b's.  NaN when a
 * mean overflows (the wrapper reports it).
 */
double
MmTeamWinProbability(const double *team_a, int count_a,
				   const double *team_b, int count_b)
{
	double		mean_a = TeamMean(team_a, count_a);
	double		mean_b = TeamMean(team_b, count_b);

	if (!isfinite(mean_a) || !isfinite(mean_b))
		return NAN;
	return MmEloExpected(mean_a, mean_b);
}

/*
 * The state array's two sums, after checking it is one (the support
 * functions are callable from SQL, so the array may come from anywhere).
 */
static float8 *
TeamStateSums(ArrayType *state, const char *function)
{
	if (ARR_NDIM(state) != 1 || ARR_DIMS(state)[0] != TEAM_STATE_LENGTH ||
		ARR_HASNULL(state) || ARR_ELEMTYPE(state) != FLOAT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s expects a team_rating state of two float8 values", function)));
	return (float8 *) ARR_DATA_PTR(state);
}

/*
 * Returns the state to update: in place inside an aggregate (as float8_accum
 * does, saving a copy per row), otherwise a fresh copy.
 */
static ArrayType *
WritableTeamState(FunctionCallInfo fcinfo, const char *function)
{
	ArrayType  *state;

	if (AggCheckCallContext(fcinfo, NULL))
		state = PG_GETARG_ARRAYTYPE_P(0);
	else
		state = PG_GETARG_ARRAYTYPE_P_COPY(0);
	(void) TeamStateSums(state, function);
	return state;
}

/*
 * Transition of mm.team_rating(rating, weight): STRICT, so rows with a NULL
 * rating or weight are skipped like in every strict aggregate.
 */
Datum
mm_team_rating_transition(PG_FUNCTION_ARGS)
{
	ArrayType  *state = WritableTeamState(fcinfo, "team_rating_transition");
	float8	   *sums = (float8 *) ARR_DATA_PTR(state);
	double		rating = PG_GETARG_FLOAT8(1);
	double		weight = PG_GETARG_FLOAT8(2);

	MmCheckFinite(rating, "rating");
	MmCheckNonNegative(weight, "weight");
	sums[TEAM_SUM_WEIGHTED] += rating * weight;
	sums[TEAM_SUM_WEIGHTS] += weight;
	PG_RETURN_ARRAYTYPE_P(state);
}

/*
 * Combine: adds the sums of two partial states (parallel aggregation).
 */
Datum
mm_team_rating_combine(PG_FUNCTION_ARGS)
{
	ArrayType  *state = WritableTeamState(fcinfo, "team_rating_combine");
	float8	   *sums = (float8 *) ARR_DATA_PTR(state);
	float8	   *other = TeamStateSums(PG_GETARG_ARRAYTYPE_P(1), "team_rating_combine");

	sums[TEAM_SUM_WEIGHTED] += other[TEAM_SUM_WEIGHTED];
	sums[TEAM_SUM_WEIGHTS] += other[TEAM_SUM_WEIGHTS];
	PG_RETURN_ARRAYTYPE_P(state);
}

/*
 * Final: the weighted mean, or NULL when the weights sum to 0 (no rows, or
 * only rows of weight 0), as avg() gives NULL over no rows.
 */
Datum
mm_team_rating_final(PG_FUNCTION_ARGS)
{
	float8	   *sums = TeamStateSums(PG_GETARG_ARRAYTYPE_P(0), "team_rating_final");
	double		result;

	if (sums[TEAM_SUM_WEIGHTS] == 0.0)
		PG_RETURN_NULL();
	result = sums[TEAM_SUM_WEIGHTED] / sums[TEAM_SUM_WEIGHTS];
	if (!isfinite(result))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("team_rating result is out of range"),
				 errdetail("The sum of rating times weight exceeds the float8 range.")));
	PG_RETURN_FLOAT8(result);
}

/*
 * mm.win_probability(team_a float8[], team_b float8[]) -> float8
 */
Datum
mm_win_probability(PG_FUNCTION_ARGS)
{
	int			count_a;
	int			count_b;
	double	   *team_a = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(0), "team_a",
									   MM_MAX_ARRAY_ELEMENTS, true, &count_a);
	double	   *team_b = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(1), "team_b",
									   MM_MAX_ARRAY_ELEMENTS, true, &count_b);
	double		result;

	if (count_a == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("team_a must not be empty")));
	if (count_b == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("team_b must not be empty")));

	result = MmTeamWinProbability(team_a, count_a, team_b, count_b);
	if (isnan(result))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("win_probability result is out of range"),
				 errdetail("The sum of a team's ratings exceeds the float8 range.")));
	PG_RETURN_FLOAT8(result);
}
