/*
 * sql_arrays.c
 *	  Validated access to array arguments of SQL-callable functions.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "sql_arrays.h"

/*
 * Common shape checks: one dimension (or empty), no NULL elements, the
 * expected element type and a bounded length.
 */
static int
CheckArrayShape(ArrayType *array, Oid elemtype, const char *argname, int max_count)
{
	int			count;

	if (ARR_ELEMTYPE(array) != elemtype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s has the wrong element type", argname)));
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", argname),
				 errdetail("It has %d dimensions.", ARR_NDIM(array))));
	count = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	if (count > max_count)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s has too many elements", argname),
				 errdetail("It has %d elements; the limit is %d.", count, max_count)));
	if (array_contains_nulls(array))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain NULL elements", argname)));
	return count;
}

void
MmCheckFinite(double value, const char *argname)
{
	if (isnan(value) || isinf(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a finite number", argname),
				 errdetail("Got %s.", isnan(value) ? "NaN" : (value > 0 ? "Infinity" : "-Infinity"))));
}

double *
MmFloat8Array(ArrayType *array, const char *argname, int max_count,
			  bool require_finite, int *count)
{
	int			n = CheckArrayShape(array, FLOAT8OID, argname, max_count);
	double	   *values = (double *) palloc(sizeof(double) * Max(n, 1));
	const double *data = (const double *) ARR_DATA_PTR(array);

	for (int i = 0; i < n; i++)
	{
		values[i] = data[i];
		if (require_finite && (isnan(values[i]) || isinf(values[i])))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s[%d] must be a finite number", argname, i + 1),
					 errdetail("Got %s.", isnan(values[i]) ? "NaN" :
							   (values[i] > 0 ? "Infinity" : "-Infinity"))));
	}
	*count = n;
	return values;
}

/* The elements of a checked array without NULLs, copied (fixed-width types). */
static void *
CopyElements(ArrayType *array, Oid elemtype, Size elemsize, const char *argname,
			 int max_count, int *count)
{
	int			n = CheckArrayShape(array, elemtype, argname, max_count);
	void	   *values = palloc(elemsize * Max(n, 1));

	memcpy(values, ARR_DATA_PTR(array), elemsize * n);
	*count = n;
	return values;
}

int32 *
MmInt4Array(ArrayType *array, const char *argname, int max_count, int *count)
{
	return (int32 *) CopyElements(array, INT4OID, sizeof(int32), argname, max_count, count);
}

int64 *
MmInt8Array(ArrayType *array, const char *argname, int max_count, int *count)
{
	return (int64 *) CopyElements(array, INT8OID, sizeof(int64), argname, max_count, count);
}

/*
 * Array builders.  Each frees its scratch Datum array at once: the tick builds
 * arrays of one element per ticket or player (100k and more) in one context.
 */
ArrayType *
MmBuildFloat8Array(const double *values, int count)
{
	Datum	   *datums = (Datum *) palloc(sizeof(Datum) * Max(count, 1));
	ArrayType  *result;

	for (int i = 0; i < count; i++)
		datums[i] = Float8GetDatum(values[i]);
	result = construct_array(datums, count, FLOAT8OID, sizeof(float8),
							 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	pfree(datums);
	return result;
}

ArrayType *
MmBuildBoolArray(const bool *values, int count)
{
	Datum	   *datums = (Datum *) palloc(sizeof(Datum) * Max(count, 1));
	ArrayType  *result;

	for (int i = 0; i < count; i++)
		datums[i] = BoolGetDatum(values[i]);
	result = construct_array(datums, count, BOOLOID, sizeof(bool), true, TYPALIGN_CHAR);
	pfree(datums);
	return result;
}

ArrayType *
MmBuildInt4Array(const int32 *values, int count)
{
	Datum	   *datums = (Datum *) palloc(sizeof(Datum) * Max(count, 1));
	ArrayType  *result;

	for (int i = 0; i < count; i++)
		datums[i] = Int32GetDatum(values[i]);
	result = construct_array(datums, count, INT4OID, sizeof(int32),
							 true, TYPALIGN_INT);
	pfree(datums);
	return result;
}

ArrayType *
MmBuildInt8Array(const int64 *values, int count)
{
	Datum	   *datums = (Datum *) palloc(sizeof(Datum) * Max(count, 1));
	ArrayType  *result;

	for (int i = 0; i < count; i++)
		datums[i] = Int64GetDatum(values[i]);
	result = construct_array(datums, count, INT8OID, sizeof(int64),
							 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	pfree(datums);
	return result;
}

/*
 * A text[] of C strings (NULL for a NULL element), written straight into
 * the array: no datum per element, so the tick's per-player arrays cost
 * their size and nothing more in its context.
 */
ArrayType *
MmBuildTextArray(const char **values, int count)
{
	bool		has_nulls = false;
	Size		data_bytes = 0;
	Size		overhead;
	ArrayType  *result;
	bits8	   *bitmap;
	char	   *p;

	if (count <= 0)
		return construct_empty_array(TEXTOID);
	for (int i = 0; i < count; i++)
	{
		if (values[i] == NULL)
			has_nulls = true;
		else
			data_bytes += INTALIGN(VARHDRSZ + strlen(values[i]));
		if (data_bytes > MaxAllocSize)
			break;
	}
	overhead = has_nulls ? ARR_OVERHEAD_WITHNULLS(1, count) : ARR_OVERHEAD_NONULLS(1);
	if (data_bytes > MaxAllocSize - overhead)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("array size exceeds the maximum allowed (%d)", (int) MaxAllocSize)));
	result = (ArrayType *) palloc0(overhead + data_bytes);
	SET_VARSIZE(result, overhead + data_bytes);
	result->ndim = 1;
	result->dataoffset = has_nulls ? (int32) overhead : 0;
	result->elemtype = TEXTOID;
	ARR_DIMS(result)[0] = count;
	ARR_LBOUND(result)[0] = 1;
	bitmap = ARR_NULLBITMAP(result);
	p = (char *) result + overhead;
	for (int i = 0; i < count; i++)
	{
		Size		length;

		if (values[i] == NULL)
			continue;			/* its null bitmap bit stays 0 */
		length = strlen(values[i]);
		SET_VARSIZE(p, VARHDRSZ + length);
		memcpy(VARDATA(p), values[i], length);
		p += INTALIGN(VARHDRSZ + length);
		if (bitmap)
			bitmap[i / 8] |= 1 << (i % 8);
	}
	return result;
}

int
MmCompareCStrings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

char	  **
MmDistinctStrings(ArrayType *array, int *count)
{
	Datum	   *items;
	bool	   *nulls;
	int			n;
	int			kept = 0;
	char	  **strings;

	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &items, &nulls, &n);
	strings = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			strings[kept++] = TextDatumGetCString(items[i]);
	qsort(strings, kept, sizeof(char *), MmCompareCStrings);
	n = kept;
	kept = 0;
	for (int i = 0; i < n; i++)
		if (kept == 0 || strcmp(strings[kept - 1], strings[i]) != 0)
			strings[kept++] = strings[i];
	*count = kept;
	return strings;
}

void
MmRefuseNullArgument(FunctionCallInfo fcinfo, int arg, const char *argname)
{
	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
}

TimestampTz
MmTimestampPlusUsecs(TimestampTz t, int64 usecs, const char *what)
{
	TimestampTz result;

	if (pg_add_s64_overflow(t, usecs, &result) || !IS_VALID_TIMESTAMP(result))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s is out of range for a timestamp", what)));
	return result;
}

TimestampTz
MmTimestampPlusSeconds(TimestampTz t, double seconds, const char *what)
{
	double		usecs = seconds * USECS_PER_SEC;

	/* beyond int64 is beyond every timestamp (and the cast would be undefined) */
	if (isnan(usecs) || usecs >= (double) PG_INT64_MAX || usecs <= (double) PG_INT64_MIN)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("%s is out of range for a timestamp", what)));
	return MmTimestampPlusUsecs(t, (int64) usecs, what);
}
