/*
 * event_signing.c
 *	  HMAC-SHA256 signatures on the mm_events payloads, and their check.
 *
 * Any role that can connect may NOTIFY mm_events, so a listener cannot tell
 * our payloads from forged ones by the channel alone.  Every payload the
 * extension sends ends with "sig": the hex HMAC-SHA256, keyed by the secret
 * in mm.event_key, of the payload as it reads without that last member:
 *
 *	 {"event": "match_found", ..., "tickets": [7, 9], "sig": "3f2a..."}
 *	 signed text: {"event": "match_found", ..., "tickets": [7, 9]}
 *
 * The key is read here without a privilege check, so that any role allowed
 * to tick or cancel gets its events signed while mm.event_key stays
 * unreadable to it; mm.verify_event checks a payload in the server, and a
 * backend given the key checks it itself (docs/events.md).
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lockdefs.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "event_signing.h"
#include "schema_version.h"

PG_FUNCTION_INFO_V1(mm_verify_event);

/* The member every signed payload ends with, before its closing brace. */
#define SIG_PREFIX ", \"sig\": \""
#define SIG_PREFIX_LEN (sizeof(SIG_PREFIX) - 1)
#define SIG_HEX_LEN (2 * PG_SHA256_DIGEST_LENGTH)

/*
 * The key, read once per command of a (sub)transaction: a change of the key
 * earlier in the transaction, or one a rollback to a savepoint undid, is
 * seen by the next statement, while a tick signs all its events with one
 * read.
 */
static LocalTransactionId key_lxid = InvalidLocalTransactionId;
static CommandId key_cid = InvalidCommandId;
static SubTransactionId key_subxid = InvalidSubTransactionId;
static bool key_present = false;
static bool key_table_present = false;
static uint8 key_bytes[256];
static int	key_length = 0;

/*
 * Reads the key from mm.event_key, without a privilege check (see the file
 * comment).  Returns false when the table does not exist (a database at a
 * version the library does not serve) or holds no usable key.
 */
static bool
LoadKey(void)
{
	Oid			namespace;
	Oid			relid;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;

	if (key_lxid == MyProc->lxid && key_cid == GetCurrentCommandId(false) &&
		key_subxid == GetCurrentSubTransactionId())
		return key_present;
	key_lxid = MyProc->lxid;
	key_cid = GetCurrentCommandId(false);
	key_subxid = GetCurrentSubTransactionId();
	key_present = false;
	key_table_present = false;
	key_length = 0;

	namespace = get_namespace_oid("mm", true);
	relid = OidIsValid(namespace) ? get_relname_relid("event_key", namespace) : InvalidOid;
	if (!OidIsValid(relid))
		return false;
	key_table_present = true;

	rel = table_open(relid, AccessShareLock);
	scan = table_beginscan(rel, ActiveSnapshotSet() ? GetActiveSnapshot() : GetTransactionSnapshot(),
						   0, NULL);
	tuple = heap_getnext(scan, ForwardScanDirection);
	if (tuple != NULL)
	{
		TupleDesc	desc = RelationGetDescr(rel);
		int			attnum = SPI_fnumber(desc, "key");
		bool		isnull = true;
		Datum		value = (Datum) 0;

		if (attnum > 0)
			value = heap_getattr(tuple, attnum, desc, &isnull);

		if (!isnull)
		{
			bytea	   *key = DatumGetByteaPP(value);
			int			length = VARSIZE_ANY_EXHDR(key);

			if (length >= 16 && length <= (int) sizeof(key_bytes))
			{
				memcpy(key_bytes, VARDATA_ANY(key), length);
				key_length = length;
				key_present = true;
			}
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return key_present;
}

/* HMAC-SHA256 of data under the key (loaded). */
static void
ComputeDigest(const char *data, int length, uint8 *digest)
{
	pg_hmac_ctx *ctx = pg_hmac_create(PG_SHA256);

	if (ctx == NULL ||
		pg_hmac_init(ctx, key_bytes, key_length) < 0 ||
		pg_hmac_update(ctx, (const uint8 *) data, length) < 0 ||
		pg_hmac_final(ctx, digest, PG_SHA256_DIGEST_LENGTH) < 0)
	{
		const char *why = ctx ? pg_hmac_error(ctx) : "out of memory";

		if (ctx)
			pg_hmac_free(ctx);
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute an HMAC-SHA256 under the event key: %s", why)));
	}
	pg_hmac_free(ctx);
}

/* HMAC-SHA256 of data under the key, as 64 lower-case hex digits plus NUL. */
static void
ComputeSignature(const char *data, int length, char *hex)
{
	uint8		digest[PG_SHA256_DIGEST_LENGTH];

	ComputeDigest(data, length, digest);
	hex_encode((const char *) digest, sizeof(digest), hex);
	hex[SIG_HEX_LEN] = '\0';
}

/*
 * HMAC-SHA256 of data under the event key, for the other secrets derived
 * from it (the tickets' tokens, tickets.c): their data starts with a label
 * of their own, so that none is the signature of an event (a payload starts
 * with '{').  False when there is no usable key.
 */
bool
MmEventKeyHmac(const char *data, int length, uint8 *digest)
{
	if (!LoadKey())
		return false;
	ComputeDigest(data, length, digest);
	return true;
}

/*
 * Appends the "sig" member to a payload that ends with its closing brace.
 * Every event is signed: a listener must never get an unsigned event it
 * would reject, so an emptied key table fails the event's transaction, and
 * so does a database at a version the library does not serve.
 */
void
MmSignPayload(StringInfo payload)
{
	char		hex[SIG_HEX_LEN + 1];

	Assert(payload->len > 0 && payload->data[payload->len - 1] == '}');
	if (!LoadKey())
	{
		if (!key_table_present)
		{
			MmRequireServedSchema("signing an event");
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("mm.event_key does not exist: the event cannot be signed")));
		}
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mm.event_key holds no signing key: the event cannot be signed"),
				 errhint("Insert a key of 16 to 256 random bytes into mm.event_key (docs/events.md).")));
	}
	ComputeSignature(payload->data, payload->len, hex);
	payload->len--;				/* the closing brace */
	payload->data[payload->len] = '\0';
	appendStringInfo(payload, SIG_PREFIX "%s\"}", hex);
}

/*
 * mm.verify_event(payload text) RETURNS boolean
 *
 * True when the payload ends with a "sig" member that is the HMAC of the
 * rest under this database's key; false for anything else (no signature, a
 * wrong one, a changed payload).  STRICT.
 */
Datum
mm_verify_event(PG_FUNCTION_ARGS)
{
	text	   *payload = PG_GETARG_TEXT_PP(0);
	const char *data = VARDATA_ANY(payload);
	int			length = VARSIZE_ANY_EXHDR(payload);
	int			sig_start;
	char		expected[SIG_HEX_LEN + 1];
	StringInfoData signed_text;
	int			diff = 0;
	int			i;

	/* ..., "sig": "<64 hex>"} */
	sig_start = length - (int) (SIG_PREFIX_LEN + SIG_HEX_LEN + 2);
	if (sig_start < 1 ||
		memcmp(data + sig_start, SIG_PREFIX, SIG_PREFIX_LEN) != 0 ||
		memcmp(data + length - 2, "\"}", 2) != 0)
		PG_RETURN_BOOL(false);
	if (!LoadKey())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mm.event_key holds no signing key"),
				 errhint("ALTER EXTENSION matchmaking UPDATE creates one.")));

	initStringInfo(&signed_text);
	appendBinaryStringInfo(&signed_text, data, sig_start);
	appendStringInfoChar(&signed_text, '}');
	ComputeSignature(signed_text.data, signed_text.len, expected);
	pfree(signed_text.data);

	/* constant time: the comparison does not tell how much of it matched */
	for (i = 0; i < SIG_HEX_LEN; i++)
		diff |= expected[i] ^ data[sig_start + SIG_PREFIX_LEN + i];
	PG_RETURN_BOOL(diff == 0);
}
