/*
 * json_walk.c
 *	  Strict reading of jsonb documents, naming the JSON path of every problem.
 *
 * Used by the queue config parser (queue_config.c) and the ticket validation
 * (tickets.c), so both report problems in one format:
 *		invalid queue config at rules[2].max: must be a number >= 0
 *		invalid ticket at players[0].id: must be a non-empty string
 */
#include "postgres.h"

#include <math.h>

#include "utils/builtins.h"
#include "mb/pg_wchar.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/numeric.h"

#include "json_walk.h"

/*
 * Starts a path at the document's root.
 */
void
MmJsonPathInit(MmJsonPath *path, const char *document)
{
	path->document = document;
	initStringInfo(&path->path);
}

/* True when a key can be printed as ".key" rather than ["key"]. */
static bool
KeyIsPlain(const char *key, int keylen)
{
	int			i;

	if (keylen == 0)
		return false;
	for (i = 0; i < keylen; i++)
	{
		char		c = key[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/*
 * Appends ".key" (or ["key"] for keys that are not plain words) to the path.
 */
int
MmJsonPathPushKey(MmJsonPath *path, const char *key, int keylen)
{
	int			old = path->path.len;

	if (KeyIsPlain(key, keylen))
	{
		if (path->path.len > 0)
			appendStringInfoChar(&path->path, '.');
		appendBinaryStringInfo(&path->path, key, keylen);
	}
	else
	{
		char	   *copy = pnstrdup(key, keylen);

		appendStringInfoChar(&path->path, '[');
		escape_json(&path->path, copy);
		appendStringInfoChar(&path->path, ']');
		pfree(copy);
	}
	return old;
}

/*
 * Appends "[index]" to the path.
 */
int
MmJsonPathPushIndex(MmJsonPath *path, int index)
{
	int			old = path->path.len;

	appendStringInfo(&path->path, "[%d]", index);
	return old;
}

/*
 * Goes back to a length returned by a push.
 */
void
MmJsonPathPop(MmJsonPath *path, int length)
{
	path->path.len = length;
	path->path.data[length] = '\0';
}

/* Shared body of MmJsonError and MmJsonErrorHint. */
static void
pg_attribute_noreturn()
JsonErrorInternal(MmJsonPath *path, const char *hint, const char *problem)
{
	if (path->path.len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid %s: %s", path->document, problem),
				 hint ? errhint("%s", hint) : 0));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid %s at %s: %s", path->document, path->path.data, problem),
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

/*
 * Formats a problem message; va_copy lets the buffer grow and retry.
 */
static char *FormatProblem(const char *fmt, va_list args) pg_attribute_printf(1, 0);

static char *
FormatProblem(const char *fmt, va_list args)
{
	StringInfoData problem;

	initStringInfo(&problem);
	for (;;)
	{
		va_list		copy;
		int			needed;

		va_copy(copy, args);
		needed = appendStringInfoVA(&problem, fmt, copy);
		va_end(copy);
		if (needed == 0)
			break;
		enlargeStringInfo(&problem, needed);
	}
	return problem.data;
}

/*
 * Raises the problem at the current path.
 */
void
MmJsonError(MmJsonPath *path, const char *fmt,...)
{
	va_list		args;
	char	   *problem;

	va_start(args, fmt);
	problem = FormatProblem(fmt, args);
	va_end(args);
	JsonErrorInternal(path, NULL, problem);
}

/*
 * Raises the problem at the current path, with a hint.
 */
void
MmJsonErrorHint(MmJsonPath *path, const char *hint, const char *fmt,...)
{
	va_list		args;
	char	   *problem;

	va_start(args, fmt);
	problem = FormatProblem(fmt, args);
	va_end(args);
	JsonErrorInternal(path, hint, problem);
}

bool
MmJsonIsObject(JsonbValue *value)
{
	return value->type == jbvBinary && JsonContainerIsObject(value->val.binary.data);
}

/* True when the value is a jbvBinary array. */
static bool
JsonIsArray(JsonbValue *value)
{
	return value->type == jbvBinary && JsonContainerIsArray(value->val.binary.data) &&
		!JsonContainerIsScalar(value->val.binary.data);
}

/*
 * The root of a jsonb as a value: scalars as themselves, containers as
 * jbvBinary.
 */
void
MmJsonRoot(Jsonb *jb, JsonbValue *value)
{
	if (JB_ROOT_IS_SCALAR(jb))
	{
		if (!JsonbExtractScalar(&jb->root, value))
			elog(ERROR, "could not extract the scalar of a jsonb");
		return;
	}
	value->type = jbvBinary;
	value->val.binary.data = &jb->root;
	value->val.binary.len = VARSIZE(jb) - VARHDRSZ;
}

/*
 * Reads the keys of an object into fields[], refusing any key not listed
 * (with the list of allowed keys as a hint).
 */
void
MmJsonReadObject(MmJsonPath *path, JsonbValue *value, MmJsonField *fields, int nfields)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			i;

	if (!MmJsonIsObject(value))
		MmJsonError(path, "must be an object");

	for (i = 0; i < nfields; i++)
		fields[i].present = false;

	it = JsonbIteratorInit(value->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		const char *key;
		int			keylen;
		int			found = -1;

		if (tok != WJB_KEY)
			continue;
		key = v.val.string.val;
		keylen = v.val.string.len;
		for (i = 0; i < nfields; i++)
		{
			if (strlen(fields[i].name) == (size_t) keylen &&
				memcmp(fields[i].name, key, keylen) == 0)
			{
				found = i;
				break;
			}
		}
		if (found < 0)
		{
			StringInfoData hint;

			initStringInfo(&hint);
			appendStringInfoString(&hint, "Allowed keys here are: ");
			for (i = 0; i < nfields; i++)
				appendStringInfo(&hint, "%s%s", i > 0 ? ", " : "", fields[i].name);
			appendStringInfoChar(&hint, '.');
			MmJsonPathPushKey(path, key, keylen);
			MmJsonErrorHint(path, hint.data, "unknown key");
		}
		tok = JsonbIteratorNext(&it, &v, true);
		Assert(tok == WJB_VALUE);
		fields[found].present = true;
		fields[found].value = v;
	}
}

/*
 * The value of a field read by MmJsonReadObject, or NULL when absent.
 */
JsonbValue *
MmJsonGet(MmJsonField *fields, int nfields, const char *name)
{
	int			i;

	for (i = 0; i < nfields; i++)
		if (strcmp(fields[i].name, name) == 0)
			return fields[i].present ? &fields[i].value : NULL;
	elog(ERROR, "field \"%s\" is not in the field list", name);
	return NULL;				/* keep compiler quiet */
}

/*
 * Requires an array with a bounded number of elements.
 */
JsonbContainer *
MmJsonArray(MmJsonPath *path, JsonbValue *value, int min_count, int max_count, int *count)
{
	int			n;

	if (!JsonIsArray(value))
		MmJsonError(path, "must be an array");
	n = JsonContainerSize(value->val.binary.data);
	if (n < min_count)
	{
		if (min_count == 1)
			MmJsonError(path, "must not be empty");
		MmJsonError(path, "must have at least %d elements", min_count);
	}
	if (n > max_count)
		MmJsonError(path, "has %d elements, more than the limit of %d", n, max_count);
	*count = n;
	return value->val.binary.data;
}

/*
 * A jsonb number as double; numbers beyond double's range give +-Infinity
 * instead of an error, so that callers report them with the path.
 */
double
MmJsonNumericToDouble(Numeric num)
{
	return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
											  NumericGetDatum(num)));
}

/* Formats a bound for messages: integers without a fraction. */
static char *
FormatBound(double bound)
{
	return float8out_internal(bound);
}

/*
 * A finite number in [min, max] (or (min, max] when min_exclusive).  When max
 * is MM_JSON_MAX_NUMBER the message only states the lower bound.
 */
double
MmJsonNumber(MmJsonPath *path, JsonbValue *value, double min, bool min_exclusive, double max)
{
	double		x;
	bool		ok;

	if (value->type != jbvNumeric)
		MmJsonError(path, "must be a number");
	x = MmJsonNumericToDouble(value->val.numeric);
	ok = isfinite(x) && (min_exclusive ? x > min : x >= min) && x <= max;
	if (!ok)
	{
		bool		above_min = min_exclusive ? x > min : x >= min; /* +Infinity too */

		if (max < MM_JSON_MAX_NUMBER)
			MmJsonError(path, "must be a number %s %s and at most %s",
						min_exclusive ? ">" : ">=", FormatBound(min), FormatBound(max));
		if (above_min)
			MmJsonError(path, "must be a number at most %s", FormatBound(max));
		MmJsonError(path, "must be a number %s %s",
					min_exclusive ? ">" : ">=", FormatBound(min));
	}
	return x;
}

/*
 * An integral number in [min, max].
 */
int
MmJsonInteger(MmJsonPath *path, JsonbValue *value, int min, int max)
{
	double		x;

	if (value->type != jbvNumeric)
		MmJsonError(path, "must be an integer");
	x = MmJsonNumericToDouble(value->val.numeric);
	if (!isfinite(x) || x != floor(x) || x < min || x > max)
	{
		if (max == PG_INT32_MAX)
			MmJsonError(path, "must be an integer >= %d", min);
		MmJsonError(path, "must be an integer between %d and %d", min, max);
	}
	return (int) x;
}

/*
 * A JSON boolean.
 */
bool
MmJsonBool(MmJsonPath *path, JsonbValue *value)
{
	if (value->type != jbvBool)
		MmJsonError(path, "must be a boolean");
	return value->val.boolean;
}

/*
 * A JSON string of min_length..max_length characters, palloc'd and
 * NUL-terminated.  Strings with a NUL character cannot occur (jsonb refuses
 * \u0000).
 */
char *
MmJsonString(MmJsonPath *path, JsonbValue *value, int min_length, int max_length)
{
	char	   *s;
	int			nchars;

	if (value->type != jbvString)
		MmJsonError(path, "must be a string");
	s = pnstrdup(value->val.string.val, value->val.string.len);
	nchars = pg_mbstrlen_with_len(s, value->val.string.len);
	if (nchars < min_length || nchars > max_length)
	{
		if (min_length == 1 && nchars == 0)
			MmJsonError(path, "must be a non-empty string");
		MmJsonError(path, "must be a string of %d to %d characters", min_length, max_length);
	}
	return s;
}
