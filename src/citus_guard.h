/*
 * citus_guard.h
 *	  The hooks that keep a NULL queue away from Citus's function call
 *	  delegation (citus_guard.c), which also answers
 *	  mm.tables_are_distributed.
 */
#ifndef MM_CITUS_GUARD_H
#define MM_CITUS_GUARD_H

extern void MmInstallCitusGuard(void);
extern bool MmTablesAreDistributed(void);

#endif
