/*
 * fairness.c
 *	  Fairness you can prove (docs/fairness.md): the tick's call that keeps
 *	  each rated match's prediction (mm.record_match_predictions), and the
 *	  Glicko expectation the predictions and the rating replay
 *	  (replay_ratings.c) share.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "fairness.h"
#include "ratings.h"
#include "ratings_args.h"
#include "sql_arrays.h"

/* ----------------------------------------------------------------------
 * The tick's call
 * ----------------------------------------------------------------------
 */

static SPIPlanPtr RecordPlan = NULL;

/*
 * Whether the queue config rates its matches: "rating": {"system": ...}
 * names one of the three systems.  Unrated queues cost the tick nothing.
 */
bool
MmFairnessQueueIsRated(Jsonb *config)
{
	JsonbValue	rating;
	JsonbValue	system;
	const char *name;
	int			len;

	if (getKeyJsonValueFromContainer(&config->root, "rating", 6, &rating) == NULL ||
		rating.type != jbvBinary)
		return false;
	if (getKeyJsonValueFromContainer(rating.val.binary.data, "system", 6, &system) == NULL ||
		system.type != jbvString)
		return false;
	name = system.val.string.val;
	len = system.val.string.len;
	return (len == 3 && strncmp(name, "elo", 3) == 0) ||
		(len == 7 && strncmp(name, "glicko2", 7) == 0) ||
		(len == 9 && strncmp(name, "openskill", 9) == 0);
}

/*
 * Records the predictions of the matches the tick just wrote (created at
 * now in the queue), in the tick's transaction and SPI connection.  The plan
 * is kept for the backend.
 */
void
MmFairnessRecordPredictions(const char *queue, TimestampTz now)
{
	Datum		values[2];
	int			rc;

	if (RecordPlan == NULL)
	{
		Oid			types[2] = {TEXTOID, TIMESTAMPTZOID};
		SPIPlanPtr	plan = SPI_prepare("SELECT mm.record_match_predictions($1, $2)", 2, types);

		if (plan == NULL)
			elog(ERROR, "preparing the prediction statement failed: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "keeping the prediction statement failed");
		RecordPlan = plan;
	}
	values[0] = CStringGetTextDatum(queue);
	values[1] = TimestampTzGetDatum(now);
	rc = SPI_execute_plan(RecordPlan, values, NULL, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "recording predictions failed: %s", SPI_result_code_string(rc));
}

/* ----------------------------------------------------------------------
 * Shared with the replay (replay_ratings.c)
 * ----------------------------------------------------------------------
 */

/* The Glicko expectation of a against b with both deviations (Glicko-1 scale). */
double
MmGlickoExpected(double rating_a, double rd_a, double rating_b, double rd_b)
{
	double		phi = sqrt(rd_a * rd_a + rd_b * rd_b) / GLICKO2_SCALE;
	double		g = 1.0 / sqrt(1.0 + 3.0 * phi * phi / (M_PI * M_PI));

	return 1.0 / (1.0 + exp(-g * (rating_a - rating_b) / GLICKO2_SCALE));
}
