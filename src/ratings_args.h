/*
 * ratings_args.h
 *	  Argument checks shared by the SQL wrappers of the rating functions.
 *
 * Each check raises 22023 (invalid_parameter_value) with the argument's name
 * in the message; NaN and +-Infinity are refused first, by MmCheckFinite.
 */
#ifndef MM_RATINGS_ARGS_H
#define MM_RATINGS_ARGS_H

#include "postgres.h"

#include "sql_arrays.h"

/* A finite value in [0, 1]: scores, rates, confidences. */
static inline void
MmCheckUnitInterval(double value, const char *argname)
{
	MmCheckFinite(value, argname);
	if (value < 0.0 || value > 1.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 0 and 1", argname),
				 errdetail("Got %g.", value)));
}

/* A finite value above 0: rating deviations, volatilities, tau. */
static inline void
MmCheckPositive(double value, const char *argname)
{
	MmCheckFinite(value, argname);
	if (value <= 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be greater than 0", argname),
				 errdetail("Got %g.", value)));
}

/* A finite value of at least 0: K factors, weights, KDA. */
static inline void
MmCheckNonNegative(double value, const char *argname)
{
	MmCheckFinite(value, argname);
	if (value < 0.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", argname),
				 errdetail("Got %g.", value)));
}

/* A count that cannot be negative: games played, periods. */
static inline void
MmCheckCount(int32 value, const char *argname)
{
	if (value < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", argname),
				 errdetail("Got %d.", value)));
}

#endif							/* MM_RATINGS_ARGS_H */
