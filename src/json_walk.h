/*
 * json_walk.h
 *	  Strict reading of jsonb documents with the JSON path of every problem.
 *
 * The queue config parser and the ticket validation read user JSON the same
 * way: a path (e.g. "rules[2].expansion.steps[0]") is kept while walking, and
 * the first problem raises ERROR 22023 with the message
 *		invalid <document> at <path>: <problem>
 * Unknown keys are refused (typo protection), values of the wrong JSON type
 * are refused, and numbers must be finite and of a sane magnitude.
 */
#ifndef MM_JSON_WALK_H
#define MM_JSON_WALK_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

/* The largest magnitude any number in a config or ticket may have. */
#define MM_JSON_MAX_NUMBER 1e12

/* Where the walk is: the document's name ("queue config") and the path. */
typedef struct MmJsonPath
{
	const char *document;
	StringInfoData path;
} MmJsonPath;

/* One key of an object as read by MmJsonReadObject. */
typedef struct MmJsonField
{
	const char *name;
	bool		present;
	JsonbValue	value;			/* scalar, or jbvBinary for containers */
} MmJsonField;

extern void MmJsonPathInit(MmJsonPath *path, const char *document);
/* Push a key or an array index; both return the length to pop back to. */
extern int	MmJsonPathPushKey(MmJsonPath *path, const char *key, int keylen);
extern int	MmJsonPathPushIndex(MmJsonPath *path, int index);
extern void MmJsonPathPop(MmJsonPath *path, int length);

/* Raises "invalid <document> at <path>: <problem>" (22023). */
extern void MmJsonError(MmJsonPath *path, const char *fmt,...)
			pg_attribute_printf(2, 3) pg_attribute_noreturn();

/* The same with a hint (for example the list of allowed keys). */
extern void MmJsonErrorHint(MmJsonPath *path, const char *hint, const char *fmt,...)
			pg_attribute_printf(3, 4) pg_attribute_noreturn();

/*
 * Reads an object (value must be a jbvBinary object, else "must be an
 * object") into fields[]: each key must be one of fields[i].name, else
 * "unknown key" at that key's path.  Missing keys leave present = false.
 */
extern void MmJsonReadObject(MmJsonPath *path, JsonbValue *value,
							 MmJsonField *fields, int nfields);

/* Looks a field up by name in fields[] (NULL when absent). */
extern JsonbValue *MmJsonGet(MmJsonField *fields, int nfields, const char *name);

/* Requires an array of min_count..max_count elements; returns its container. */
extern JsonbContainer *MmJsonArray(MmJsonPath *path, JsonbValue *value,
								   int min_count, int max_count, int *count);

/* Typed scalars. */
extern double MmJsonNumber(MmJsonPath *path, JsonbValue *value,
						   double min, bool min_exclusive, double max);
extern int	MmJsonInteger(MmJsonPath *path, JsonbValue *value, int min, int max);
extern bool MmJsonBool(MmJsonPath *path, JsonbValue *value);
extern char *MmJsonString(MmJsonPath *path, JsonbValue *value,
						  int min_length, int max_length);

/* True when the value is a jbvBinary object. */
extern bool MmJsonIsObject(JsonbValue *value);

/* A jsonb's root as a JsonbValue (jbvBinary for objects and arrays). */
extern void MmJsonRoot(Jsonb *jb, JsonbValue *value);

/* Number as double without overflow errors (+-Infinity when too large). */
extern double MmJsonNumericToDouble(Numeric num);

#endif							/* MM_JSON_WALK_H */
