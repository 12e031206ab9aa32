/*
 * schema_version.c
 *	  Which versions of schema mm this library serves (the one list), and the
 *	  check the entry points that run the schema's SQL make.
 *
 * Like Citus, which refuses to run when its library and its extension
 * version differ, the library serves its own schema version only: each
 * release's SQL is written for one layout, with no per-version arms inside
 * the statements, and a database installed with an older release is updated
 * (ALTER EXTENSION matchmaking UPDATE runs the chain of upgrade scripts)
 * before it ticks with a newer library.  Serving another version means
 * adding it here and writing its statements; none is.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "lib/stringinfo.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "schema_version.h"

/* The schema versions this library serves: its own. */
static const char *const ServedVersions[] = {"0.4"};

/*
 * The transaction in which the installed version was last found served:
 * checked again in the next one, so an ALTER EXTENSION, DROP or CREATE
 * EXTENSION committed by any session is seen.  A version found not served
 * is not remembered (the error ends the statement; an update in the same
 * transaction is seen by the next check).
 */
static LocalTransactionId ServedInTransaction = InvalidLocalTransactionId;

/* extversion of extension matchmaking in this database, or NULL. */
static char *
InstalledVersion(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("matchmaking"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, Anum_pg_extension_extversion,
										 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = TextDatumGetCString(value);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/* The served versions as a list for a message: "0.4" or "0.4, 0.5". */
static char *
ServedList(void)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < lengthof(ServedVersions); i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", ServedVersions[i]);
	return buf.data;
}

void
MmRequireServedSchema(const char *what)
{
	char	   *installed;
	int			i;

	if (ServedInTransaction == MyProc->lxid && ServedInTransaction != InvalidLocalTransactionId)
		return;
	installed = InstalledVersion();
	if (installed == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s needs extension \"matchmaking\" version %s, which is not installed in this database",
						what, ServedList()),
				 errhint("Run CREATE EXTENSION matchmaking.")));
	for (i = 0; i < lengthof(ServedVersions); i++)
	{
		if (strcmp(installed, ServedVersions[i]) == 0)
		{
			ServedInTransaction = MyProc->lxid;
			pfree(installed);
			return;
		}
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s needs extension \"matchmaking\" version %s, but this database has version %s",
					what, ServedList(), installed),
			 errdetail("The installed library runs the SQL of schema version %s only.", ServedList()),
			 errhint("Run ALTER EXTENSION matchmaking UPDATE.")));
}

bool
MmSchemaIsServed(void)
{
	char	   *installed = InstalledVersion();
	bool		served = false;
	int			i;

	for (i = 0; installed != NULL && i < lengthof(ServedVersions); i++)
		served = served || strcmp(installed, ServedVersions[i]) == 0;
	if (installed != NULL)
		pfree(installed);
	return served;
}

void
MmRetiredEntryPoint(const char *what)
{
	MmRequireServedSchema(what);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s belongs to an older version of extension \"matchmaking\" and is retired", what)));
}
