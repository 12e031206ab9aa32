/* Minimal stand-ins for the backend functions the pure C files use. */
#include "postgres.h"
#include "utils/memutils.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "fmgr.h"
#include <stdlib.h>
#include <stdio.h>
#include <signal.h>

MemoryContext CurrentMemoryContext = NULL;
static MemoryContextData dummy_ctx;

void *palloc(Size s) { void *p = malloc(s ? s : 1); if (!p) abort(); return p; }
void *palloc0(Size s) { void *p = calloc(1, s ? s : 1); if (!p) abort(); return p; }
void pfree(void *p) { free(p); }
void *repalloc(void *p, Size s) { p = realloc(p, s); if (!p) abort(); return p; }
void *MemoryContextAlloc(MemoryContext c, Size s) { return palloc(s); }
void *MemoryContextAllocZero(MemoryContext c, Size s) { return palloc0(s); }
void *MemoryContextAllocZeroAligned(MemoryContext c, Size s) { return palloc0(s); }
MemoryContext AllocSetContextCreateInternal(MemoryContext parent, const char *name, Size a, Size b, Size c) { return &dummy_ctx; }
void MemoryContextDelete(MemoryContext c) {}
Size MemoryContextMemAllocated(MemoryContext c, bool r) { return 0; }
char *pnstrdup(const char *in, Size len) { char *o = palloc(len + 1); memcpy(o, in, len); o[len] = 0; return o; }
bool errstart(int elevel, const char *domain) { return elevel >= ERROR; }
bool errstart_cold(int elevel, const char *domain) { return elevel >= ERROR; }
void errfinish(const char *f, int l, const char *fn) { fprintf(stderr, "ereport at %s:%d\n", f, l); abort(); }
int errcode(int c) { return 0; }
int errmsg(const char *fmt,...) { return 0; }
int errmsg_internal(const char *fmt,...) { return 0; }
/* jsonb/numeric: never reached by the drivers */
JsonbValue *getKeyJsonValueFromContainer(JsonbContainer *c, const char *k, int l, JsonbValue *r) { abort(); }
JsonbIterator *JsonbIteratorInit(JsonbContainer *c) { abort(); }
JsonbIteratorToken JsonbIteratorNext(JsonbIterator **it, JsonbValue *v, bool s) { abort(); }
JsonbValue *findJsonbValueFromContainer(JsonbContainer *c, uint32 f, JsonbValue *k) { abort(); }
Datum numeric_scale(PG_FUNCTION_ARGS) { abort(); }
Datum numeric_float8_no_overflow(PG_FUNCTION_ARGS) { abort(); }
int32 numeric_int4_opt_error(Numeric n, bool *e) { abort(); }
Datum DirectFunctionCall1Coll(PGFunction f, Oid c, Datum a) { abort(); }
/* CHECK_FOR_INTERRUPTS() in the search and the balancer: never pending here */
volatile sig_atomic_t InterruptPending = false;
void ProcessInterrupts(void) {}
