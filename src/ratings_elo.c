/*
 * ratings_elo.c
 *	  Elo ratings: mm.elo_expected, mm.elo_update and mm.elo_k_factor.
 *
 * The math (MmEloExpected, MmEloUpdate, MmEloKFactor) is plain C; the mm_*
 * functions below it validate the SQL arguments and call it.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"

#include "ratings.h"
#include "ratings_args.h"

PG_FUNCTION_INFO_V1(mm_elo_expected);
PG_FUNCTION_INFO_V1(mm_elo_update);
PG_FUNCTION_INFO_V1(mm_elo_k_factor);

/*
 * 1 / (1 + 10^((b - a) / 400)).  For huge differences pow() overflows to
 * Infinity and the result is the exact limit 0 (or 1), never NaN.
 */
double
MmEloExpected(double rating_a, double rating_b)
{
	return 1.0 / (1.0 + pow(10.0, (rating_b - rating_a) / 400.0));
}

/*
 * rating + k (score - expected).
 */
double
MmEloUpdate(double rating, double opponent, double score, double k)
{
	return rating + k * (score - MmEloExpected(rating, opponent));
}

/*
 * FIDE-style K factor: new players move fast, masters slowly.  The
 * new-player rule comes first, so a new 2500 player still gets 40.
 */
double
MmEloKFactor(int games_played, double rating)
{
	if (games_played < 30)
		return 40.0;
	if (rating > 2400.0)
		return 16.0;
	return 32.0;
}

/*
 * mm.elo_expected(rating_a float8, rating_b float8) -> float8
 */
Datum
mm_elo_expected(PG_FUNCTION_ARGS)
{
	double		rating_a = PG_GETARG_FLOAT8(0);
	double		rating_b = PG_GETARG_FLOAT8(1);

	MmCheckFinite(rating_a, "rating_a");
	MmCheckFinite(rating_b, "rating_b");
	PG_RETURN_FLOAT8(MmEloExpected(rating_a, rating_b));
}

/*
 * mm.elo_update(rating float8, opponent float8, score float8, k float8) -> float8
 */
Datum
mm_elo_update(PG_FUNCTION_ARGS)
{
	double		rating = PG_GETARG_FLOAT8(0);
	double		opponent = PG_GETARG_FLOAT8(1);
	double		score = PG_GETARG_FLOAT8(2);
	double		k = PG_GETARG_FLOAT8(3);
	double		result;

	MmCheckFinite(rating, "rating");
	MmCheckFinite(opponent, "opponent");
	MmCheckUnitInterval(score, "score");
	MmCheckNonNegative(k, "k");

	result = MmEloUpdate(rating, opponent, score, k);
	if (!isfinite(result))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("elo_update result is out of range"),
				 errdetail("Rating %g and k %g give a result beyond the float8 range.", rating, k)));
	PG_RETURN_FLOAT8(result);
}

/*
 * mm.elo_k_factor(games_played int, rating float8) -> float8
 */
Datum
mm_elo_k_factor(PG_FUNCTION_ARGS)
{
	int32		games_played = PG_GETARG_INT32(0);
	double		rating = PG_GETARG_FLOAT8(1);

	MmCheckCount(games_played, "games_played");
	MmCheckFinite(rating, "rating");
	PG_RETURN_FLOAT8(MmEloKFactor(games_played, rating));
}
