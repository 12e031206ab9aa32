/*
 * sql_arrays.h
 *	  Validated access to the float8[] and int4[] arguments of SQL functions.
 *
 * Every SQL entry point that takes an array goes through these helpers, so
 * that NULL elements, multi-dimensional arrays, NaN/Infinity and oversized
 * arrays are refused the same way everywhere, with the argument's name in the
 * message.
 */
#ifndef MM_SQL_ARRAYS_H
#define MM_SQL_ARRAYS_H

#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/array.h"

/* The largest array any rating or balancing function accepts. */
#define MM_MAX_ARRAY_ELEMENTS 10000

/*
 * Returns the elements of a one-dimensional float8[] without NULLs as a
 * palloc'd C array and sets *count.  An empty array gives *count = 0.  When
 * require_finite, NaN and +-Infinity are refused.  max_count bounds the length.
 */
extern double *MmFloat8Array(ArrayType *array, const char *argname,
							 int max_count, bool require_finite, int *count);

/* Same for int4[] and int8[]. */
extern int32 *MmInt4Array(ArrayType *array, const char *argname,
						  int max_count, int *count);
extern int64 *MmInt8Array(ArrayType *array, const char *argname,
						  int max_count, int *count);

/* Build one-dimensional arrays from C values (NULL strings: NULL elements). */
extern ArrayType *MmBuildFloat8Array(const double *values, int count);
extern ArrayType *MmBuildInt4Array(const int32 *values, int count);
extern ArrayType *MmBuildBoolArray(const bool *values, int count);
extern ArrayType *MmBuildInt8Array(const int64 *values, int count);
extern ArrayType *MmBuildTextArray(const char **values, int count);

/* The distinct non-NULL strings of a text[], sorted bytewise (palloc'd). */
extern char **MmDistinctStrings(ArrayType *array, int *count);

/* qsort comparator of C strings (char *), bytewise. */
extern int	MmCompareCStrings(const void *a, const void *b);

/* Refuses (22004) a NULL argument arg of fcinfo, naming it. */
extern void MmRefuseNullArgument(FunctionCallInfo fcinfo, int arg, const char *argname);

/* Refuses NaN and +-Infinity in a scalar argument, naming it. */
extern void MmCheckFinite(double value, const char *argname);

/*
 * t plus usecs (or seconds; negative: before t); 22008 naming what (say
 * "now + acceptance_timeout_seconds") when the result is no finite timestamp.
 */
extern TimestampTz MmTimestampPlusUsecs(TimestampTz t, int64 usecs, const char *what);
extern TimestampTz MmTimestampPlusSeconds(TimestampTz t, double seconds, const char *what);

#endif							/* MM_SQL_ARRAYS_H */
