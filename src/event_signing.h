/*
 * event_signing.h
 *	  Signing the payloads of the mm_events channel, and the secrets derived
 *	  from the same key (event_signing.c).
 *
 * Every payload the extension sends ends with "sig", the HMAC-SHA256 of the
 * payload under the database's key in mm.event_key, so a listener can tell
 * the extension's events from any other NOTIFY on the channel
 * (mm.verify_event).
 */
#ifndef MM_EVENT_SIGNING_H
#define MM_EVENT_SIGNING_H

#include "postgres.h"

#include "lib/stringinfo.h"

/* What the signature adds: , "sig": "<64 hex digits>" */
#define MM_EVENT_SIGNATURE_BYTES 75

/*
 * Appends "sig", the HMAC-SHA256 of the payload (a JSON object) under the
 * database's event key.  Every payload goes through it.
 */
extern void MmSignPayload(StringInfo payload);

/*
 * HMAC-SHA256 (PG_SHA256_DIGEST_LENGTH bytes into digest) of data under the
 * event key, for secrets derived from it; false when there is no key.
 */
extern bool MmEventKeyHmac(const char *data, int length, uint8 *digest);

#endif							/* MM_EVENT_SIGNING_H */
