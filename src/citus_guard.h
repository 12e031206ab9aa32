/*
 * citus_guard.h
 *	  The hooks that keep a NULL queue away from Citus's function call
 *	  delegation (citus_guard.c).
 */
#ifndef MM_CITUS_GUARD_H
#define MM_CITUS_GUARD_H

extern void MmInstallCitusGuard(void);

#endif
