/*
 * ticket_shards.c
 *	  A ticket of one queue, or a batch of them, and the claims released in
 *	  a queue, written straight into the queue's shards, on the Citus node
 *	  that holds them.
 *
 * On Citus (docs/scale-out.md, "How a ticket is created") mm.create_ticket
 * and mm.create_tickets run on the queue's node and write there: the
 * players' pending claims and the tickets.  So do the calls that end a
 * ticket or a match with the claims they leave to the queue's tick
 * (mm.pending_releases).  On the queue's node the statements name its
 * shards, with kept plans (queue_shards.c, which takes the shard's metadata
 * lock); when the shards are elsewhere (a move ended, a call inside a
 * transaction block on the coordinator) the same statements name the
 * distributed tables and Citus routes them.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "queue_shards.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_create_ticket_on_queue_node);
PG_FUNCTION_INFO_V1(mm_create_tickets_on_queue_node);
PG_FUNCTION_INFO_V1(mm_release_claims_on_queue_node);

/* tickets.c */
extern Datum mm_validate_ticket(PG_FUNCTION_ARGS);

/*
 * The writes of tickets (claims held in the queue's pending claims, in
 * player order, the order every writer of them takes) and the read of a
 * batch's players already held there, each one statement for the whole
 * batch.
 */
static const MmQueueStatement InsertPending = {
	"INSERT INTO mm.pending_claims (queue, player_id, ticket_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
	3, {TEXTOID, TEXTOID, INT8OID}
};
static const MmQueueStatement InsertTicket = {
	"INSERT INTO mm.tickets_active (id, queue, players, created_at) VALUES ($1, $2, $3, $4)",
	4, {INT8OID, TEXTOID, JSONBOID, TIMESTAMPTZOID}
};
static const MmQueueStatement InsertPendingBatch = {
	"INSERT INTO mm.pending_claims (queue, player_id, ticket_id)"
	" SELECT $1, u.p, u.t FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS u(p, t)"
	" ORDER BY u.p COLLATE pg_catalog.\"C\", u.t ON CONFLICT DO NOTHING",
	3, {TEXTOID, TEXTARRAYOID, INT8ARRAYOID}
};
static const MmQueueStatement InsertTicketsBatch = {
	"INSERT INTO mm.tickets_active (id, queue, players, created_at)"
	" SELECT u.id, $2, u.p, $4 FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($3)) AS u(id, p)",
	4, {INT8ARRAYOID, TEXTOID, JSONBARRAYOID, TIMESTAMPTZOID}
};
static const MmQueueStatement HeldBatch = {
	"SELECT c.player_id, c.ticket_id FROM mm.pending_claims c"
	" WHERE c.queue OPERATOR(pg_catalog.=) $1 AND c.player_id OPERATOR(pg_catalog.=) ANY ($2)",
	2, {TEXTOID, TEXTARRAYOID}
};

static SPIPlanPtr RefusePending = NULL;

/*
 * Refuses a player already pending in the queue: 23505, naming the ticket
 * that holds the player (mm.refuse_pending_player).
 */
static void
RefusePendingPlayer(text *queue, const char *player)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2] = {PointerGetDatum(queue), CStringGetTextDatum(player)};

	if (RefusePending == NULL)
		RefusePending = MmKeepPlan("SELECT mm.refuse_pending_player($1, $2)", 2, argtypes);
	SPI_execute_plan(RefusePending, args, NULL, false, 0);
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("player \"%s\" already has an active ticket", player)));
}

/* The ids of a ticket's players (validated: strings), in their order. */
static char **
PlayerIds(Jsonb *players, int *count)
{
	int			n = JsonContainerSize(&players->root);
	char	  **ids = palloc(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		JsonbValue *player = getIthJsonbValueFromContainer(&players->root, i);
		JsonbValue *id = getKeyJsonValueFromContainer(player->val.binary.data, "id", 2, NULL);

		ids[i] = pnstrdup(id->val.string.val, id->val.string.len);
	}
	*count = n;
	return ids;
}

/* The same in player order (byte order: the batch's claims are in "C"). */
static char **
SortedPlayerIds(Jsonb *players, int *count)
{
	char	  **ids = PlayerIds(players, count);

	qsort(ids, *count, sizeof(char *), MmCompareCStrings);
	return ids;
}

/*
 * mm.create_ticket_on_queue_node(queue text, players jsonb, now timestamptz)
 *   RETURNS bigint
 *
 * mm.create_ticket on Citus, for a ticket of one queue: validates it, holds
 * its players in the queue's pending claims (a player already pending in
 * the queue is refused by mm.refuse_pending_player, 23505) and writes the
 * ticket, into the queue's shards when they are on this node; returns its
 * id.
 */
Datum
mm_create_ticket_on_queue_node(PG_FUNCTION_ARGS)
{
	text	   *queue_text = PG_GETARG_TEXT_PP(0);
	Jsonb	   *players = PG_GETARG_JSONB_P(1);
	TimestampTz now = PG_GETARG_TIMESTAMPTZ(2);
	char	   *queue = text_to_cstring(queue_text);
	MmQueueRelations *relations;
	char	  **ids;
	int			nids;
	int64		ticket_id;
	int			rc;

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	relations = MmQueueRelationsOf(queue);
	/* the queue's config (42704 for a queue that does not exist) */
	DirectFunctionCall3(mm_validate_ticket, PointerGetDatum(queue_text), PointerGetDatum(players),
						TimestampTzGetDatum(now));
	ticket_id = nextval_internal(get_relname_relid("tickets_id_seq", get_namespace_oid("mm", false)), true);
	ids = SortedPlayerIds(players, &nids);
	for (int i = 0; i < nids; i++)
	{
		Datum		args[3] = {PointerGetDatum(queue_text), CStringGetTextDatum(ids[i]), Int64GetDatum(ticket_id)};

		rc = SPI_execute_plan(MmQueuePlan(relations, &InsertPending), args, NULL, false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "holding player \"%s\" failed: %s", ids[i], SPI_result_code_string(rc));
		if (SPI_processed == 0)
			RefusePendingPlayer(queue_text, ids[i]);
	}
	{
		Datum		args[4] = {Int64GetDatum(ticket_id), PointerGetDatum(queue_text), PointerGetDatum(players),
		TimestampTzGetDatum(now)};

		rc = SPI_execute_plan(MmQueuePlan(relations, &InsertTicket), args, NULL, false, 0);
		if (rc != SPI_OK_INSERT || SPI_processed != 1)
			elog(ERROR, "writing ticket " INT64_FORMAT " failed: %s", ticket_id, SPI_result_code_string(rc));
	}
	SPI_finish();
	PG_RETURN_INT64(ticket_id);
}

/*
 * Validates each ticket of a batch (a jsonb[] whose first subscript is
 * lower) as mm.validate_tickets does on one node: an invalid ticket's error
 * names its place in the batch, players[3][0].attributes.skill for the
 * first player of the ticket at subscript 3.
 */
static void
ValidateBatch(text *queue, Datum *tickets, int n, int lower, TimestampTz now)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext each = AllocSetContextCreate(caller, "ticket validation", ALLOCSET_DEFAULT_SIZES);

	for (int i = 0; i < n; i++)
	{
		MemoryContextSwitchTo(each);
		PG_TRY();
		{
			DirectFunctionCall3(mm_validate_ticket, PointerGetDatum(queue), tickets[i], TimestampTzGetDatum(now));
		}
		PG_CATCH();
		{
			ErrorData  *edata;
			const char *prefix = "invalid ticket at players";

			MemoryContextSwitchTo(caller);
			edata = CopyErrorData();
			if (edata->sqlerrcode != ERRCODE_INVALID_PARAMETER_VALUE &&
				edata->sqlerrcode != ERRCODE_PROGRAM_LIMIT_EXCEEDED &&
				edata->sqlerrcode != ERRCODE_NULL_VALUE_NOT_ALLOWED)
				PG_RE_THROW();
			FlushErrorState();
			ereport(ERROR,
					(errcode(edata->sqlerrcode),
					 strncmp(edata->message, prefix, strlen(prefix)) == 0
					 ? errmsg_internal("%s[%d]%s", prefix, lower + i, edata->message + strlen(prefix))
					 : errmsg_internal("players[%d]: %s", lower + i, edata->message),
					 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
					 edata->hint ? errhint("%s", edata->hint) : 0));
		}
		PG_END_TRY();
		MemoryContextSwitchTo(caller);
		MemoryContextReset(each);
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextDelete(each);
}

/* A (player, ticket) pair of a batch, for finding the first one not held. */
typedef struct HeldPair
{
	char	   *player;
	int64		ticket;
} HeldPair;

static int
CompareHeldPairs(const void *a, const void *b)
{
	return strcmp(((const HeldPair *) a)->player, ((const HeldPair *) b)->player);
}

/*
 * After the batch's claims were written: refuses (23505, as
 * mm.refuse_pending_player) the first player, in batch order, whose pending
 * claim in the queue is not its ticket's (held by a ticket pending before,
 * or by an earlier ticket of the batch).  held is the read of the batch's
 * players' claims.
 */
static void
RefuseFirstUnheld(text *queue, SPIPlanPtr held, Datum player_array, char **players, int64 *tickets, int npairs)
{
	Datum		args[2] = {PointerGetDatum(queue), player_array};
	HeldPair   *found;
	uint64		nfound;
	int			rc;

	rc = SPI_execute_plan(held, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "reading the batch's pending claims failed: %s", SPI_result_code_string(rc));
	nfound = SPI_processed;
	found = palloc(sizeof(HeldPair) * Max(nfound, 1));
	for (uint64 i = 0; i < nfound; i++)
	{
		bool		isnull;

		found[i].player = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		found[i].ticket = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
	}
	qsort(found, nfound, sizeof(HeldPair), CompareHeldPairs);
	for (int i = 0; i < npairs; i++)
	{
		HeldPair	key = {players[i], 0};
		HeldPair   *hit = bsearch(&key, found, nfound, sizeof(HeldPair), CompareHeldPairs);

		if (hit == NULL || hit->ticket != tickets[i])
			RefusePendingPlayer(queue, players[i]);
	}
}

/*
 * mm.create_tickets_on_queue_node(queue text, players jsonb[], now timestamptz)
 *   RETURNS bigint[]
 *
 * mm.create_tickets on Citus, for a batch of one queue: validates every
 * ticket, holds the players in the queue's pending claims (a player already
 * pending in the queue, or twice in the batch, is refused with 23505) and
 * writes the tickets, each in one statement for the whole batch, into the
 * queue's shards when they are on this node; returns the ids in the order
 * of players.  As for one ticket, the players' claims and cooldowns are
 * the queue's next tick's to read.
 */
Datum
mm_create_tickets_on_queue_node(PG_FUNCTION_ARGS)
{
	text	   *queue_text = PG_GETARG_TEXT_PP(0);
	ArrayType  *batch = PG_GETARG_ARRAYTYPE_P(1);
	TimestampTz now = PG_GETARG_TIMESTAMPTZ(2);
	char	   *queue = text_to_cstring(queue_text);
	MmQueueRelations *relations;
	bool		here;
	Datum	   *tickets;
	bool	   *nulls;
	int			n;
	int			lower;
	int			npairs = 0;
	int			capacity;
	Datum	   *ids;
	char	  **pair_players;
	Datum	   *pair_player_datums;
	int64	   *pair_tickets;
	Datum	   *pair_ticket_datums;
	Oid			sequence = get_relname_relid("tickets_id_seq", get_namespace_oid("mm", false));
	Datum		player_array;
	Datum		ticket_array;
	ArrayType  *result;
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext spi_context;
	int			rc;

	if (ARR_NDIM(batch) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("players must be a one-dimensional array")));
	deconstruct_array(batch, JSONBOID, -1, false, TYPALIGN_INT, &tickets, &nulls, &n);
	lower = ARR_NDIM(batch) == 1 ? ARR_LBOUND(batch)[0] : 1;
	for (int i = 0; i < n; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("players[%d] must not be null", lower + i)));

	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	relations = MmQueueRelationsOf(queue);
	here = MmQueueOnShards(relations);
	/* the queue's config (42704 for a queue that does not exist) */
	ValidateBatch(queue_text, tickets, n, lower, now);

	/* the ids, and the (player, ticket) pairs in batch order */
	ids = palloc(sizeof(Datum) * Max(n, 1));
	capacity = Max(n, 1);
	pair_players = palloc(sizeof(char *) * capacity);
	pair_tickets = palloc(sizeof(int64) * capacity);
	for (int i = 0; i < n; i++)
	{
		int64		id = nextval_internal(sequence, true);
		int			count;
		char	  **players = PlayerIds(DatumGetJsonbP(tickets[i]), &count);

		ids[i] = Int64GetDatum(id);
		if (npairs + count > capacity)
		{
			capacity = Max(capacity * 2, npairs + count);
			pair_players = repalloc(pair_players, sizeof(char *) * capacity);
			pair_tickets = repalloc(pair_tickets, sizeof(int64) * capacity);
		}
		for (int j = 0; j < count; j++)
		{
			pair_players[npairs] = players[j];
			pair_tickets[npairs++] = id;
		}
	}
	pair_player_datums = palloc(sizeof(Datum) * Max(npairs, 1));
	pair_ticket_datums = palloc(sizeof(Datum) * Max(npairs, 1));
	for (int i = 0; i < npairs; i++)
	{
		pair_player_datums[i] = CStringGetTextDatum(pair_players[i]);
		pair_ticket_datums[i] = Int64GetDatum(pair_tickets[i]);
	}
	player_array = PointerGetDatum(construct_array(pair_player_datums, npairs, TEXTOID, -1, false, TYPALIGN_INT));
	ticket_array = PointerGetDatum(construct_array(pair_ticket_datums, npairs, INT8OID, 8, FLOAT8PASSBYVAL,
												   TYPALIGN_DOUBLE));
	/* in the caller's context: SPI_finish frees SPI's */
	spi_context = MemoryContextSwitchTo(caller);
	result = construct_array(ids, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	MemoryContextSwitchTo(spi_context);

	{
		Datum		args[3] = {PointerGetDatum(queue_text), player_array, ticket_array};

		rc = SPI_execute_plan(MmQueuePlan(relations, &InsertPendingBatch), args, NULL, false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "holding the batch's players failed: %s", SPI_result_code_string(rc));
		/*
		 * A conflict skipped a row.  Citus counts the rows of an INSERT ...
		 * SELECT it sent, the skipped ones too: through it, read them.
		 */
		if (!here || SPI_processed < (uint64) npairs)
			RefuseFirstUnheld(queue_text, MmQueuePlan(relations, &HeldBatch), player_array, pair_players, pair_tickets, npairs);
	}
	{
		Datum		args[4] = {PointerGetDatum(result), PointerGetDatum(queue_text), PointerGetDatum(batch),
		TimestampTzGetDatum(now)};

		rc = SPI_execute_plan(MmQueuePlan(relations, &InsertTicketsBatch), args, NULL, false, 0);
		if (rc != SPI_OK_INSERT || (here && SPI_processed != (uint64) n))
			elog(ERROR, "writing the batch's tickets failed: %s", SPI_result_code_string(rc));
	}
	SPI_finish();
	PG_RETURN_ARRAYTYPE_P(result);
}

/*
 * mm.release_claims_on_queue_node(queue text, player_ids text[],
 *   ticket_ids bigint[]) RETURNS boolean
 *
 * The claims of (player, ticket) pairs that ended in a queue, left for the
 * queue's tick to release (mm.release_queue_claims on Citus): written into
 * the queue's shard of mm.pending_releases when it is on this node, in
 * player order, a pair already there skipped; true.  False, with nothing
 * written, when the shard is elsewhere: the caller writes through Citus.
 */
Datum
mm_release_claims_on_queue_node(PG_FUNCTION_ARGS)
{
	static const MmQueueStatement insert_releases = {
		"INSERT INTO mm.pending_releases (queue, player_id, ticket_id)"
		" SELECT $1, u.p, u.t FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS u(p, t)"
		" ORDER BY u.p COLLATE pg_catalog.\"C\", u.t ON CONFLICT DO NOTHING",
		3, {TEXTOID, TEXTARRAYOID, INT8ARRAYOID}
	};
	text	   *queue_text = PG_GETARG_TEXT_PP(0);
	ArrayType  *players = PG_GETARG_ARRAYTYPE_P(1);
	ArrayType  *tickets = PG_GETARG_ARRAYTYPE_P(2);
	char	   *queue = text_to_cstring(queue_text);
	MmQueueRelations *relations;
	int			rc;

	if (ARR_NDIM(players) > 1 || ARR_NDIM(tickets) > 1 ||
		ArrayGetNItems(ARR_NDIM(players), ARR_DIMS(players)) !=
		ArrayGetNItems(ARR_NDIM(tickets), ARR_DIMS(tickets)))
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("player_ids and ticket_ids must be one-dimensional arrays of the same length")));
	if ((rc = SPI_connect()) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	relations = MmQueueRelationsOf(queue);
	if (!MmQueueOnShards(relations))
	{
		SPI_finish();
		PG_RETURN_BOOL(false);
	}
	{
		Datum		args[3] = {PointerGetDatum(queue_text), PointerGetDatum(players), PointerGetDatum(tickets)};

		rc = SPI_execute_plan(MmQueuePlan(relations, &insert_releases), args, NULL, false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "leaving the claims released in queue \"%s\" to its tick failed: %s", queue,
				 SPI_result_code_string(rc));
	}
	SPI_finish();
	PG_RETURN_BOOL(true);
}
