/*
 * fairness.h
 *	  The tick's call that keeps each rated match's prediction, and the
 *	  Glicko expectation the replay shares with it (fairness.c).
 */
#ifndef MM_FAIRNESS_H
#define MM_FAIRNESS_H

#include "utils/jsonb.h"
#include "utils/timestamp.h"

/* Whether the queue config names a rating system (elo, glicko2, openskill). */
extern bool MmFairnessQueueIsRated(Jsonb *config);

/* mm.record_match_predictions(queue, now) for the matches the tick wrote. */
extern void MmFairnessRecordPredictions(const char *queue, TimestampTz now);

/* Glicko expectation of a against b, both deviations combined. */
extern double MmGlickoExpected(double rating_a, double rd_a, double rating_b, double rd_b);

#endif							/* MM_FAIRNESS_H */
