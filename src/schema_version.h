/*
 * schema_version.h
 *	  The versions of schema mm this library serves, and the check of them.
 *
 * The library runs the SQL of the schema versions listed in
 * schema_version.c (its own version only), never an older layout: a
 * database whose extension is at another version (installed with an older
 * release and not yet updated) gets a clear error, with the hint to run
 * ALTER EXTENSION matchmaking UPDATE, from every entry point that runs the
 * schema's SQL (mm.tick, mm.explain_ticket, signing an event).  The pure
 * functions (ratings, team balancing, config validation) work at any
 * version.  A C function that only an older version's scripts create keeps
 * its symbol, so those scripts still install for an upgrade, and raises the
 * same error (MmRetiredEntryPoint).
 */
#ifndef MM_SCHEMA_VERSION_H
#define MM_SCHEMA_VERSION_H

/*
 * Raises ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE (55000) naming the
 * installed and the served versions unless this database's extension is at
 * a served version.  what names the caller in the error ("mm.tick").
 * Checked at most once per transaction: one index probe of pg_extension.
 */
extern void MmRequireServedSchema(const char *what);

/*
 * Whether this database's extension is installed at a served version, for a
 * caller that waits for it rather than fail (the loop keeper).  Needs a
 * transaction.
 */
extern bool MmSchemaIsServed(void);

/*
 * For an entry point only an older version's scripts reference: raises the
 * version error, or, should a served schema call it, an error saying it is
 * retired.
 */
extern void MmRetiredEntryPoint(const char *what) pg_attribute_noreturn();

#endif							/* MM_SCHEMA_VERSION_H */
