/*
 * sql_arrays.c
 *	  Validated access to array arguments of SQL-callable functions.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

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

int32 *
MmInt4Array(ArrayType *array, const char *argname, int max_count, int *count)
{
	int			n = CheckArrayShape(array, INT4OID, argname, max_count);
	int32	   *values = (int32 *) palloc(sizeof(int32) * Max(n, 1));

	memcpy(values, ARR_DATA_PTR(array), sizeof(int32) * n);
	*count = n;
	return values;
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

ArrayType *
MmBuildTextArray(const char **values, int count)
{
	Datum	   *datums = (Datum *) palloc(sizeof(Datum) * Max(count, 1));
	bool	   *nulls = (bool *) palloc(sizeof(bool) * Max(count, 1));
	int			dims[1] = {count};
	int			lbs[1] = {1};
	ArrayType  *result;

	for (int i = 0; i < count; i++)
	{
		nulls[i] = values[i] == NULL;
		datums[i] = nulls[i] ? (Datum) 0 : CStringGetTextDatum(values[i]);
	}
	result = construct_md_array(datums, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
	/* the array holds copies: free the elements too */
	for (int i = 0; i < count; i++)
		if (!nulls[i])
			pfree(DatumGetPointer(datums[i]));
	pfree(datums);
	pfree(nulls);
	return result;
}
