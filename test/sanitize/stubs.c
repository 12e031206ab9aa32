/*
 * Stand-ins for the backend functions the pure C files use, for the
 * sanitizer build (adapted from test/bench/standalone/stubs.c).
 *
 * Unlike the benchmark's stubs, memory contexts are real enough for
 * AddressSanitizer to see lifetime bugs: every chunk belongs to a context,
 * MemoryContextDelete() frees its chunks (and its children's), pfree() and
 * repalloc() free the old chunk, so a pointer kept past the end of the
 * search's scratch context, past a repalloc or a pfree is a use after free.
 * The chunk header sits before the chunk, poisoned, so a write just before a
 * chunk is caught too.  Requests above MaxAllocSize fail as palloc's do.
 *
 * ereport(ERROR) and elog(ERROR) print the message and abort: the pure code
 * is not supposed to raise errors on the inputs the tests give it.  The
 * functions only the SQL wrappers reach (fmgr, arrays, jsonb, numeric,
 * tuples) abort when called.
 */
#include "postgres.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <sanitizer/asan_interface.h>

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/tuplestore.h"

#include "sql_arrays.h"

/* Sanitizer run-time defaults (the environment can still add to them). */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

const char *
__asan_default_options(void)
{
	/*
	 * No leak check: the code under test allocates in memory contexts that
	 * the server frees wholesale, and LeakSanitizer needs ptrace, which
	 * containers often refuse.
	 */
	return "detect_leaks=0:abort_on_error=0:strict_string_checks=1:"
		"detect_stack_use_after_return=1:check_initialization_order=1";
}

const char *
__ubsan_default_options(void)
{
	return "print_stacktrace=1:halt_on_error=1";
}

/* ------------------------------------------------------------------------
 * Memory contexts
 * ------------------------------------------------------------------------
 */

typedef struct StubChunk
{
	struct StubChunk *prev;
	struct StubChunk *next;
	struct StubContext *context;
	Size		size;
} StubChunk;						/* 32 bytes: chunks stay MAXALIGNed */

typedef struct StubContext
{
	MemoryContextData base;		/* parent/children links live here */
	StubChunk	chunks;			/* circular list head */
	Size		allocated;
} StubContext;

static StubContext top_context = {
	.base = {.name = "stub top"},
	.chunks = {&top_context.chunks, &top_context.chunks, &top_context, 0},
};

MemoryContext CurrentMemoryContext = &top_context.base;

static void
StubFail(const char *what, Size size)
{
	fprintf(stderr, "stub: %s (%zu bytes)\n", what, (size_t) size);
	abort();
}

static StubChunk *
ChunkOf(void *pointer)
{
	StubChunk  *chunk = (StubChunk *) ((char *) pointer - sizeof(StubChunk));

	ASAN_UNPOISON_MEMORY_REGION(chunk, sizeof(StubChunk));
	return chunk;
}

static void
ChunkSeal(StubChunk *chunk)
{
	ASAN_POISON_MEMORY_REGION(chunk, sizeof(StubChunk));
}

static void
ChunkUnlink(StubChunk *chunk)
{
	StubChunk  *prev = chunk->prev;
	StubChunk  *next = chunk->next;
	bool		prev_head = prev == &chunk->context->chunks;
	bool		next_head = next == &chunk->context->chunks;

	if (!prev_head)
		ASAN_UNPOISON_MEMORY_REGION(prev, sizeof(StubChunk));
	if (!next_head)
		ASAN_UNPOISON_MEMORY_REGION(next, sizeof(StubChunk));
	prev->next = next;
	next->prev = prev;
	if (!prev_head)
		ChunkSeal(prev);
	if (!next_head)
		ChunkSeal(next);
	chunk->context->allocated -= chunk->size;
}

static void *
StubAlloc(MemoryContext context, Size size, bool zero)
{
	StubContext *c = (StubContext *) (context ? context : &top_context.base);
	StubChunk  *chunk;
	StubChunk  *first;

	if (!AllocSizeIsValid(size))
		StubFail("invalid memory alloc request size", size);
	chunk = malloc(sizeof(StubChunk) + size);
	if (chunk == NULL)
		StubFail("out of memory", size);
	if (zero)
		memset(chunk + 1, 0, size);
	chunk->context = c;
	chunk->size = size;
	chunk->prev = &c->chunks;
	first = c->chunks.next;
	if (first != &c->chunks)
		ASAN_UNPOISON_MEMORY_REGION(first, sizeof(StubChunk));
	chunk->next = first;
	first->prev = chunk;
	if (first != &c->chunks)
		ChunkSeal(first);
	c->chunks.next = chunk;
	c->allocated += size;
	ChunkSeal(chunk);
	return chunk + 1;
}

void *MemoryContextAlloc(MemoryContext c, Size s) { return StubAlloc(c, s, false); }
void *MemoryContextAllocZero(MemoryContext c, Size s) { return StubAlloc(c, s, true); }
void *MemoryContextAllocZeroAligned(MemoryContext c, Size s) { return StubAlloc(c, s, true); }
void *palloc(Size s) { return StubAlloc(CurrentMemoryContext, s, false); }
void *palloc0(Size s) { return StubAlloc(CurrentMemoryContext, s, true); }

void
pfree(void *pointer)
{
	StubChunk  *chunk = ChunkOf(pointer);

	ChunkUnlink(chunk);
	free(chunk);
}

void *
repalloc(void *pointer, Size size)
{
	StubChunk  *chunk = ChunkOf(pointer);
	StubContext *c = chunk->context;
	Size		old = chunk->size;
	void	   *fresh;

	ChunkSeal(chunk);
	fresh = StubAlloc(&c->base, size, false);
	memcpy(fresh, pointer, Min(old, size));
	pfree(pointer);
	return fresh;
}

char *
pnstrdup(const char *in, Size len)
{
	Size		n = strnlen(in, len);
	char	   *out = palloc(n + 1);

	memcpy(out, in, n);
	out[n] = '\0';
	return out;
}

char *
pstrdup(const char *in)
{
	return pnstrdup(in, strlen(in));
}

MemoryContext
AllocSetContextCreateInternal(MemoryContext parent, const char *name,
							  Size minContextSize, Size initBlockSize, Size maxBlockSize)
{
	StubContext *c = calloc(1, sizeof(StubContext));

	if (c == NULL)
		StubFail("out of memory", sizeof(StubContext));
	c->base.type = T_AllocSetContext;
	c->base.name = name;
	c->base.parent = parent;
	c->chunks.next = c->chunks.prev = &c->chunks;
	c->chunks.context = c;
	if (parent != NULL)
	{
		c->base.nextchild = parent->firstchild;
		if (parent->firstchild != NULL)
			parent->firstchild->prevchild = &c->base;
		parent->firstchild = &c->base;
	}
	return &c->base;
}

static void
FreeChunks(StubContext *c)
{
	StubChunk  *chunk = c->chunks.next;

	while (chunk != &c->chunks)
	{
		StubChunk  *next;

		ASAN_UNPOISON_MEMORY_REGION(chunk, sizeof(StubChunk));
		next = chunk->next;
		free(chunk);
		chunk = next;
	}
	c->chunks.next = c->chunks.prev = &c->chunks;
	c->allocated = 0;
}

void
MemoryContextDelete(MemoryContext context)
{
	StubContext *c = (StubContext *) context;

	if (context == &top_context.base)
		StubFail("MemoryContextDelete of the top context", 0);
	if (CurrentMemoryContext == context)
		StubFail("MemoryContextDelete of the current context", 0);
	while (context->firstchild != NULL)
		MemoryContextDelete(context->firstchild);
	FreeChunks(c);
	if (context->prevchild != NULL)
		context->prevchild->nextchild = context->nextchild;
	else if (context->parent != NULL)
		context->parent->firstchild = context->nextchild;
	if (context->nextchild != NULL)
		context->nextchild->prevchild = context->prevchild;
	free(c);
}

void
MemoryContextReset(MemoryContext context)
{
	while (context->firstchild != NULL)
		MemoryContextDelete(context->firstchild);
	FreeChunks((StubContext *) context);
}

Size
MemoryContextMemAllocated(MemoryContext context, bool recurse)
{
	Size		total = ((StubContext *) context)->allocated;

	if (recurse)
		for (MemoryContext child = context->firstchild; child != NULL; child = child->nextchild)
			total += MemoryContextMemAllocated(child, true);
	return total;
}

/* ------------------------------------------------------------------------
 * Errors: print and abort
 * ------------------------------------------------------------------------
 */

static int	pending_elevel;

bool
errstart(int elevel, const char *domain)
{
	pending_elevel = elevel;
	return elevel >= ERROR;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	fprintf(stderr, "ereport(%d) at %s:%d (%s): the pure code raised an error\n",
			pending_elevel, filename, lineno, funcname ? funcname : "?");
	abort();
}

int errcode(int sqlerrcode) { return 0; }

static int
PrintMessage(const char *label, const char *fmt, va_list args)
{
	fprintf(stderr, "  %s: ", label);
	vfprintf(stderr, fmt, args);
	fputc('\n', stderr);
	return 0;
}

int errmsg(const char *fmt,...) { va_list a; va_start(a, fmt); PrintMessage("message", fmt, a); va_end(a); return 0; }
int errmsg_internal(const char *fmt,...) { va_list a; va_start(a, fmt); PrintMessage("message", fmt, a); va_end(a); return 0; }
int errdetail(const char *fmt,...) { va_list a; va_start(a, fmt); PrintMessage("detail", fmt, a); va_end(a); return 0; }
int errhint(const char *fmt,...) { va_list a; va_start(a, fmt); PrintMessage("hint", fmt, a); va_end(a); return 0; }

/* CHECK_FOR_INTERRUPTS() in the search and the balancer: never pending here */
volatile sig_atomic_t InterruptPending = false;
void ProcessInterrupts(void) {}

/* ------------------------------------------------------------------------
 * Reached only from the SQL wrappers and the jsonb extraction, which the
 * tests do not call.
 * ------------------------------------------------------------------------
 */

static void
NotReached(const char *function)
{
	fprintf(stderr, "stub: %s is not available outside the server\n", function);
	abort();
}

#define NOT_REACHED() do { NotReached(__func__); pg_unreachable(); } while (0)

JsonbValue *getKeyJsonValueFromContainer(JsonbContainer *c, const char *k, int l, JsonbValue *r) { NOT_REACHED(); }
JsonbIterator *JsonbIteratorInit(JsonbContainer *c) { NOT_REACHED(); }
JsonbIteratorToken JsonbIteratorNext(JsonbIterator **it, JsonbValue *v, bool s) { NOT_REACHED(); }
JsonbValue *findJsonbValueFromContainer(JsonbContainer *c, uint32 f, JsonbValue *k) { NOT_REACHED(); }
Datum numeric_scale(PG_FUNCTION_ARGS) { NOT_REACHED(); }
Datum numeric_float8_no_overflow(PG_FUNCTION_ARGS) { NOT_REACHED(); }
int32 numeric_int4_opt_error(Numeric n, bool *e) { NOT_REACHED(); }
Datum DirectFunctionCall1Coll(PGFunction f, Oid c, Datum a) { NOT_REACHED(); }

/* sql_arrays.c (needs the array functions of the backend) */
double *MmFloat8Array(ArrayType *array, const char *argname, int max_count, bool require_finite, int *count) { NOT_REACHED(); }
int32 *MmInt4Array(ArrayType *array, const char *argname, int max_count, int *count) { NOT_REACHED(); }
ArrayType *MmBuildFloat8Array(const double *values, int count) { NOT_REACHED(); }
void MmCheckFinite(double value, const char *argname) { NOT_REACHED(); }

/* fmgr, tuples, the binary send/receive of the glicko2 aggregate */
int AggCheckCallContext(FunctionCallInfo fcinfo, MemoryContext *aggcontext) { NOT_REACHED(); }
struct varlena *pg_detoast_datum(struct varlena *datum) { NOT_REACHED(); }
struct varlena *pg_detoast_datum_copy(struct varlena *datum) { NOT_REACHED(); }
struct varlena *pg_detoast_datum_packed(struct varlena *datum) { NOT_REACHED(); }
TypeFuncClass get_call_result_type(FunctionCallInfo fcinfo, Oid *resultTypeId, TupleDesc *resultTupleDesc) { NOT_REACHED(); }
TupleDesc BlessTupleDesc(TupleDesc tupdesc) { NOT_REACHED(); }
Datum HeapTupleHeaderGetDatum(HeapTupleHeader tuple) { NOT_REACHED(); }
HeapTuple heap_form_tuple(TupleDesc tupleDescriptor, Datum *values, bool *isnull) { NOT_REACHED(); }
void InitMaterializedSRF(FunctionCallInfo fcinfo, bits32 flags) { NOT_REACHED(); }
void tuplestore_putvalues(Tuplestorestate *state, TupleDesc tdesc, Datum *values, bool *isnull) { NOT_REACHED(); }
void enlargeStringInfo(StringInfo str, int needed) { NOT_REACHED(); }
void pq_begintypsend(StringInfo buf) { NOT_REACHED(); }
bytea *pq_endtypsend(StringInfo buf) { NOT_REACHED(); }
void pq_sendfloat8(StringInfo buf, float8 f) { NOT_REACHED(); }
float8 pq_getmsgfloat8(StringInfo msg) { NOT_REACHED(); }
int64 pq_getmsgint64(StringInfo msg) { NOT_REACHED(); }
void pq_getmsgend(StringInfo msg) { NOT_REACHED(); }
char *psprintf(const char *fmt,...) { NOT_REACHED(); }
