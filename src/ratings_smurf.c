/*
 * ratings_smurf.c
 *	  Smurf detection and placement: mm.smurf_score and mm.rating_boost.
 *
 * mm.smurf_score adds suspicion points from three groups of evidence and
 * divides them by the maximum of the reference formula: the new-account
 * group's 30 points for accounts under 25 games, and always the outlier
 * group's 25 and the learning-curve group's 20.  Evidence that is missing (an
 * unknown headshot rate, fewer than 5 recent ratings) earns no points but
 * stays in the maximum: a veteran whose only sign is a high KDA scores
 * 15 / 45, not 15 / 15.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/array.h"

#include "ratings.h"
#include "ratings_args.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_smurf_score);
PG_FUNCTION_INFO_V1(mm_rating_boost);

/* New account: under this many games, 20 + 10 points possible. */
#define SMURF_NEW_ACCOUNT_GAMES 25
#define SMURF_WIN_RATE_LIMIT 0.70
#define SMURF_WIN_RATE_POINTS 20.0
#define SMURF_MVP_RATE_LIMIT 0.40
#define SMURF_MVP_RATE_POINTS 10.0
/* Outlier performance: 15 + 10 points, always in the maximum. */
#define SMURF_KDA_LIMIT 3.5
#define SMURF_KDA_POINTS 15.0
#define SMURF_HEADSHOT_LIMIT 0.60
#define SMURF_HEADSHOT_POINTS 10.0
/*
 * No learning curve: 20 points, always in the maximum; earned only with at
 * least 5 recent ratings.
 */
#define SMURF_MIN_RECENT_RATINGS 5
#define SMURF_FLAT_CV_LIMIT 0.05
#define SMURF_FLAT_GAMES 20
#define SMURF_FLAT_POINTS 20.0

/*
 * Whether the recent ratings stay flat: coefficient of variation (population
 * standard deviation over the absolute mean) under 0.05.  Written as
 * stddev < 0.05 |mean|, so a zero mean needs no division.
 */
static bool
RatingsAreFlat(const double *ratings, int count)
{
	double		scale = 0.0;
	double		mean = 0.0;
	double		squares = 0.0;

	/*
	 * The ratio does not change with the scale: divided by the largest
	 * magnitude, the sums cannot overflow (five ratings of 1e308 are flat).
	 */
	for (int i = 0; i < count; i++)
		scale = Max(scale, fabs(ratings[i]));
	if (scale == 0.0)
		return false;
	for (int i = 0; i < count; i++)
		mean += ratings[i] / scale;
	mean /= count;
	for (int i = 0; i < count; i++)
		squares += (ratings[i] / scale - mean) * (ratings[i] / scale - mean);
	return sqrt(squares / count) < SMURF_FLAT_CV_LIMIT * fabs(mean);
}

/*
 * Suspicion points over the reference maximum (75 under 25 games, else 45),
 * in [0, 1].
 */
double
MmSmurfScore(const SmurfEvidence *evidence)
{
	double		points = 0.0;
	double		possible = 0.0;

	if (evidence->games_played < SMURF_NEW_ACCOUNT_GAMES)
	{
		possible += SMURF_WIN_RATE_POINTS + SMURF_MVP_RATE_POINTS;
		if (evidence->win_rate > SMURF_WIN_RATE_LIMIT)
			points += SMURF_WIN_RATE_POINTS;
		if (evidence->mvp_rate > SMURF_MVP_RATE_LIMIT)
			points += SMURF_MVP_RATE_POINTS;
	}

	possible += SMURF_KDA_POINTS + SMURF_HEADSHOT_POINTS;
	if (evidence->avg_kda > SMURF_KDA_LIMIT)
		points += SMURF_KDA_POINTS;
	if (evidence->has_headshot_rate &&
		evidence->headshot_rate > SMURF_HEADSHOT_LIMIT)
		points += SMURF_HEADSHOT_POINTS;

	possible += SMURF_FLAT_POINTS;
	if (evidence->recent_count >= SMURF_MIN_RECENT_RATINGS &&
		evidence->games_played < SMURF_FLAT_GAMES &&
		RatingsAreFlat(evidence->recent_ratings, evidence->recent_count))
		points += SMURF_FLAT_POINTS;

	return points / possible;
}

/*
 * Multiplier for rating changes: suspected smurfs climb fast to where they
 * belong, new accounts move faster during their 10 placement games.
 */
double
MmRatingBoost(double confidence, int games_played)
{
	if (confidence > 0.8)
		return 4.0;
	if (confidence > 0.6)
		return 2.5;
	if (games_played < 10)
		return 2.0;
	return 1.0;
}

/*
 * mm.smurf_score(games_played int, win_rate float8, avg_kda float8,
 *				  mvp_rate float8, recent_ratings float8[],
 *				  headshot_rate float8 DEFAULT NULL) -> float8
 *
 * Not STRICT, because a NULL headshot_rate means "unknown": it earns no
 * points (its 10 stay in the maximum).  A NULL in any other argument gives
 * NULL, as STRICT would.
 */
Datum
mm_smurf_score(PG_FUNCTION_ARGS)
{
	SmurfEvidence evidence;

	for (int i = 0; i < 5; i++)
		if (PG_ARGISNULL(i))
			PG_RETURN_NULL();

	evidence.games_played = PG_GETARG_INT32(0);
	evidence.win_rate = PG_GETARG_FLOAT8(1);
	evidence.avg_kda = PG_GETARG_FLOAT8(2);
	evidence.mvp_rate = PG_GETARG_FLOAT8(3);
	evidence.has_headshot_rate = !PG_ARGISNULL(5);
	evidence.headshot_rate = evidence.has_headshot_rate ? PG_GETARG_FLOAT8(5) : 0.0;

	MmCheckCount(evidence.games_played, "games_played");
	MmCheckUnitInterval(evidence.win_rate, "win_rate");
	MmCheckNonNegative(evidence.avg_kda, "avg_kda");
	MmCheckUnitInterval(evidence.mvp_rate, "mvp_rate");
	evidence.recent_ratings = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(4),
											"recent_ratings",
											MM_MAX_ARRAY_ELEMENTS, true,
											&evidence.recent_count);
	if (evidence.has_headshot_rate)
		MmCheckUnitInterval(evidence.headshot_rate, "headshot_rate");

	PG_RETURN_FLOAT8(MmSmurfScore(&evidence));
}

/*
 * mm.rating_boost(confidence float8, games_played int) -> float8
 */
Datum
mm_rating_boost(PG_FUNCTION_ARGS)
{
	double		confidence = PG_GETARG_FLOAT8(0);
	int32		games_played = PG_GETARG_INT32(1);

	MmCheckUnitInterval(confidence, "confidence");
	MmCheckCount(games_played, "games_played");
	PG_RETURN_FLOAT8(MmRatingBoost(confidence, games_played));
}
