/*
 * ratings_glicko2.c
 *	  Glicko-2 ratings: type mm.glicko2, mm.glicko2_update, the aggregate
 *	  mm.glicko2_period and mm.glicko2_decay.
 *
 * The math follows Mark Glickman, "Example of the Glicko-2 system" (steps 1
 * to 8, volatility by the Illinois variant of regula falsi, epsilon 1e-6).
 * A rating period needs only two sums over its games (see Glicko2Sums), so
 * the aggregate keeps those sums as its state; partial states from parallel
 * workers add up, and the final function runs the same MmGlicko2Finish as
 * mm.glicko2_update.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "utils/array.h"

#include "ratings.h"
#include "ratings_args.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_glicko2_update);
PG_FUNCTION_INFO_V1(mm_glicko2_decay);
PG_FUNCTION_INFO_V1(mm_glicko2_period_transition);
PG_FUNCTION_INFO_V1(mm_glicko2_period_combine);
PG_FUNCTION_INFO_V1(mm_glicko2_period_serialize);
PG_FUNCTION_INFO_V1(mm_glicko2_period_deserialize);
PG_FUNCTION_INFO_V1(mm_glicko2_period_final);

/* Bounds on the volatility iteration, so no input can loop forever. */
#define GLICKO2_MAX_BRACKET_STEPS 10000
#define GLICKO2_MAX_ILLINOIS_STEPS 1000


/* ----------------------------------------------------------------------
 * The math (no fmgr, no palloc, no ereport)
 * ----------------------------------------------------------------------
 */

/*
 * The math is written with multiplications by these constants rather than
 * divisions: divisions dominate the cost of a call after exp().
 */
#define GLICKO2_INVERSE_SCALE (1.0 / GLICKO2_SCALE)
#define GLICKO2_G_FACTOR (3.0 / (M_PI * M_PI))

/*
 * Adds one game to the period's sums (steps 3 and 4 before the division).
 * g(phi_j) damps the game by the opponent's uncertainty; the expected score
 * depends on mu - mu_j = (rating - opponent_rating) / 173.7178.
 */
void
MmGlicko2AddGame(const Glicko2Rating *player, double opponent_rating,
			   double opponent_rd, double score, Glicko2Sums *sums)
{
	double		opponent_phi = opponent_rd * GLICKO2_INVERSE_SCALE;
	double		g = 1.0 / sqrt(1.0 + GLICKO2_G_FACTOR * opponent_phi * opponent_phi);
	double		mu_difference = (player->rating - opponent_rating) * GLICKO2_INVERSE_SCALE;
	double		expected = 1.0 / (1.0 + exp(-g * mu_difference));

	sums->information += g * g * expected * (1.0 - expected);
	sums->improvement += g * (score - expected);
	sums->games++;
}

/* The constants of Glickman's f(x) for one player's period. */
typedef struct VolatilityProblem
{
	double		a;				/* ln(sigma^2) */
	double		delta_squared;
	double		phi_squared_plus_v;
	double		inverse_tau_squared;
} VolatilityProblem;

/*
 * Glickman's f(x), whose root is the log of the new volatility squared, given
 * ex = e^x (the callers often know it without calling exp()).
 */
static inline double
VolatilityObjectiveExp(const VolatilityProblem *problem, double x, double ex)
{
	double		denominator = problem->phi_squared_plus_v + ex;

	return ex * (problem->delta_squared - problem->phi_squared_plus_v - ex) /
		(2.0 * denominator * denominator) -
		(x - problem->a) * problem->inverse_tau_squared;
}

/* f(x) */
static inline double
VolatilityObjective(const VolatilityProblem *problem, double x)
{
	return VolatilityObjectiveExp(problem, x, exp(x));
}

/*
 * Step 5: the new volatility, by the Illinois algorithm (Glickman's A, B, C).
 * Returns NaN when the iteration does not settle (only for inputs far outside
 * any real use).
 */
static double
Glicko2Volatility(double sigma, double phi, double v, double delta, double tau)
{
	VolatilityProblem problem;
	double		big_a;
	double		big_b;
	double		f_a;
	double		f_b;
	int			steps = 0;

	/* 2 ln(sigma), not ln(sigma^2): sigma^2 underflows below about 1e-162 */
	problem.a = 2.0 * log(sigma);
	problem.delta_squared = delta * delta;
	problem.phi_squared_plus_v = phi * phi + v;
	problem.inverse_tau_squared = 1.0 / (tau * tau);

	/* A = a, where e^a is sigma^2 */
	big_a = problem.a;
	f_a = VolatilityObjectiveExp(&problem, big_a, sigma * sigma);
	if (problem.delta_squared > problem.phi_squared_plus_v)
	{
		/* B = ln(delta^2 - phi^2 - v), where e^B is that difference */
		double		difference = problem.delta_squared - problem.phi_squared_plus_v;

		big_b = log(difference);
		f_b = VolatilityObjectiveExp(&problem, big_b, difference);
	}
	else
	{
		/* B = a - k tau for the first k = 1, 2, ... with f(a - k tau) >= 0 */
		int			k = 1;

		while ((f_b = VolatilityObjective(&problem, problem.a - k * tau)) < 0.0)
		{
			if (++k > GLICKO2_MAX_BRACKET_STEPS)
				return NAN;
		}
		big_b = problem.a - k * tau;
	}

	while (fabs(big_b - big_a) > GLICKO2_EPSILON)
	{
		double		big_c;
		double		f_c;

		if (++steps > GLICKO2_MAX_ILLINOIS_STEPS)
			return NAN;
		big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a);
		f_c = VolatilityObjective(&problem, big_c);
		/* f(C) f(B) <= 0, written without the product so it cannot overflow */
		if ((f_c > 0.0 && f_b > 0.0) || (f_c < 0.0 && f_b < 0.0))
			f_a /= 2.0;
		else
		{
			big_a = big_b;
			f_a = f_b;
		}
		big_b = big_c;
		f_b = f_c;
	}
	return exp(big_a / 2.0);
}

/*
 * Steps 3 and 5 to 8 from the sums over the period's games (steps 1 and 2,
 * the conversion to the Glicko-2 scale, are folded into the formulas).
 */
bool
MmGlicko2Finish(const Glicko2Rating *player, const Glicko2Sums *sums,
			  double tau, Glicko2Rating *result)
{
	double		phi = player->rd * GLICKO2_INVERSE_SCALE;
	double		sigma = player->volatility;
	double		v;
	double		delta;
	double		new_sigma;
	double		phi_star_squared;
	double		new_phi_squared;

	if (sums->games == 0)
	{
		/* a period without games: only the deviation grows */
		result->rating = player->rating;
		result->rd = sqrt(phi * phi + sigma * sigma) * GLICKO2_SCALE;
		result->volatility = sigma;
		return isfinite(result->rd);
	}

	/* games whose expected score rounds to 0 or 1 carry no information */
	if (!(sums->information > 0.0))
		return false;
	v = 1.0 / sums->information;
	delta = v * sums->improvement;

	new_sigma = Glicko2Volatility(sigma, phi, v, delta, tau);
	/* steps 6 and 7: phi* = sqrt(phi^2 + sigma'^2), phi' = 1 / sqrt(1/phi*^2 + 1/v) */
	phi_star_squared = phi * phi + new_sigma * new_sigma;
	new_phi_squared = 1.0 / (1.0 / phi_star_squared + sums->information);

	/* step 8: mu' = mu + phi'^2 sum g (s - E), converted back to the Glicko scale */
	result->rating = player->rating +
		GLICKO2_SCALE * new_phi_squared * sums->improvement;
	result->rd = sqrt(new_phi_squared) * GLICKO2_SCALE;
	result->volatility = new_sigma;
	return isfinite(result->rating) && isfinite(result->rd) &&
		isfinite(result->volatility) &&
		result->rd > 0.0 && result->volatility > 0.0;
}

/*
 * The whole algorithm over arrays of n games (n = 0: a period without games).
 */
bool
MmGlicko2Update(const Glicko2Rating *player, const double *opponent_ratings,
			  const double *opponent_rds, const double *scores, int n,
			  double tau, Glicko2Rating *result)
{
	Glicko2Sums sums = {0.0, 0.0, 0};

	for (int i = 0; i < n; i++)
		MmGlicko2AddGame(player, opponent_ratings[i], opponent_rds[i], scores[i],
					   &sums);
	return MmGlicko2Finish(player, &sums, tau, result);
}

/*
 * periods idle periods: each adds volatility^2 to phi^2 (step 6 without
 * games), so the closed form needs no loop.  RD stops growing at
 * GLICKO2_MAX_RD, and an RD already above the cap is left as it is.
 */
bool
MmGlicko2Decay(const Glicko2Rating *player, int periods, Glicko2Rating *result)
{
	double		sigma_rd = player->volatility * GLICKO2_SCALE;
	double		grown = sqrt(player->rd * player->rd +
							 (double) periods * sigma_rd * sigma_rd);

	*result = *player;
	if (grown > player->rd)
		result->rd = fmin(grown, fmax(player->rd, GLICKO2_MAX_RD));
	return isfinite(result->rd);
}


/* ----------------------------------------------------------------------
 * SQL wrappers
 * ----------------------------------------------------------------------
 */

/*
 * Checks the player's own rating triple.
 */
static void
CheckGlicko2Player(const Glicko2Rating *player)
{
	MmCheckFinite(player->rating, "rating");
	MmCheckPositive(player->rd, "rd");
	MmCheckPositive(player->volatility, "volatility");
}

/*
 * Checks one game (used by the aggregate, whose arguments are scalars).
 */
static void
CheckGlicko2Game(double opponent_rating, double opponent_rd, double score)
{
	MmCheckFinite(opponent_rating, "opponent_rating");
	MmCheckPositive(opponent_rd, "opponent_rd");
	MmCheckUnitInterval(score, "score");
}

/*
 * Raises 22003 when the math could not produce a finite result.
 */
static void
ReportGlicko2OutOfRange(const char *function)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("%s result is out of range", function),
			 errdetail("The ratings and deviations are too far apart for the Glicko-2 formulas to give a finite result.")));
}

/*
 * Builds an mm.glicko2 value; the blessed tuple descriptor is cached in
 * fn_extra, since glicko2_update is called once per row.
 */
static Datum
Glicko2GetDatum(FunctionCallInfo fcinfo, const Glicko2Rating *rating)
{
	TupleDesc	tupdesc = (TupleDesc) fcinfo->flinfo->fn_extra;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (tupdesc == NULL)
	{
		MemoryContext oldcontext = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("function returning record called in context that cannot accept type record")));
		tupdesc = BlessTupleDesc(tupdesc);
		MemoryContextSwitchTo(oldcontext);
		fcinfo->flinfo->fn_extra = tupdesc;
	}
	values[0] = Float8GetDatum(rating->rating);
	values[1] = Float8GetDatum(rating->rd);
	values[2] = Float8GetDatum(rating->volatility);
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

/*
 * mm.glicko2_update(rating, rd, volatility, opponent_ratings float8[],
 *					 opponent_rds float8[], scores float8[], tau) -> mm.glicko2
 */
Datum
mm_glicko2_update(PG_FUNCTION_ARGS)
{
	Glicko2Rating player;
	Glicko2Rating result;
	double		tau = PG_GETARG_FLOAT8(6);
	double	   *opponent_ratings;
	double	   *opponent_rds;
	double	   *scores;
	int			n_ratings;
	int			n_rds;
	int			n_scores;

	player.rating = PG_GETARG_FLOAT8(0);
	player.rd = PG_GETARG_FLOAT8(1);
	player.volatility = PG_GETARG_FLOAT8(2);
	CheckGlicko2Player(&player);
	MmCheckPositive(tau, "tau");

	opponent_ratings = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(3), "opponent_ratings",
									 MM_MAX_ARRAY_ELEMENTS, true, &n_ratings);
	opponent_rds = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(4), "opponent_rds",
								 MM_MAX_ARRAY_ELEMENTS, true, &n_rds);
	scores = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(5), "scores",
						   MM_MAX_ARRAY_ELEMENTS, true, &n_scores);
	if (n_rds != n_ratings || n_scores != n_ratings)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("opponent_ratings, opponent_rds and scores must have the same length"),
				 errdetail("They have %d, %d and %d elements.",
						   n_ratings, n_rds, n_scores)));
	for (int i = 0; i < n_ratings; i++)
	{
		/* names built only on the error path */
		if (!(opponent_rds[i] > 0.0))
			MmCheckPositive(opponent_rds[i], psprintf("opponent_rds[%d]", i + 1));
		if (!(scores[i] >= 0.0 && scores[i] <= 1.0))
			MmCheckUnitInterval(scores[i], psprintf("scores[%d]", i + 1));
	}

	if (!MmGlicko2Update(&player, opponent_ratings, opponent_rds, scores,
					   n_ratings, tau, &result))
		ReportGlicko2OutOfRange("glicko2_update");
	PG_RETURN_DATUM(Glicko2GetDatum(fcinfo, &result));
}

/*
 * mm.glicko2_decay(rating, rd, volatility, periods int) -> mm.glicko2
 */
Datum
mm_glicko2_decay(PG_FUNCTION_ARGS)
{
	Glicko2Rating player;
	Glicko2Rating result;
	int32		periods = PG_GETARG_INT32(3);

	player.rating = PG_GETARG_FLOAT8(0);
	player.rd = PG_GETARG_FLOAT8(1);
	player.volatility = PG_GETARG_FLOAT8(2);
	CheckGlicko2Player(&player);
	MmCheckCount(periods, "periods");

	if (!MmGlicko2Decay(&player, periods, &result))
		ReportGlicko2OutOfRange("glicko2_decay");
	PG_RETURN_DATUM(Glicko2GetDatum(fcinfo, &result));
}

/*
 * State of mm.glicko2_period: the player (equal in every row of a group),
 * tau and the sums over the games seen so far.  Lives in the aggregate
 * context.
 */
typedef struct Glicko2PeriodState
{
	Glicko2Rating player;
	double		tau;
	Glicko2Sums sums;
} Glicko2PeriodState;

/*
 * Refuses rows of one group that disagree about the player's rating: the
 * result would depend on which row came first.
 */
static void
CheckSamePlayer(const Glicko2PeriodState *state, const Glicko2Rating *player,
				double tau)
{
	if (state->player.rating != player->rating ||
		state->player.rd != player->rd ||
		state->player.volatility != player->volatility)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("glicko2_period needs the same rating, rd and volatility in every row of a group"),
				 errdetail("One row has (%g, %g, %g), another (%g, %g, %g).",
						   state->player.rating, state->player.rd,
						   state->player.volatility, player->rating,
						   player->rd, player->volatility),
				 errhint("Group the games by player, and pass the player's rating before the period.")));
	if (state->tau != tau)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("glicko2_period needs the same tau in every row of a group"),
				 errdetail("One row has %g, another %g.", state->tau, tau)));
}

/*
 * Transition: (state, rating, rd, volatility, opponent_rating, opponent_rd,
 * score [, tau]).  Not STRICT (the state is internal), so NULLs are handled
 * here: a row whose player columns are NULL is skipped, as a strict
 * aggregate would; a row whose three game columns are all NULL contributes
 * the player without a game (a LEFT JOIN of players to their games); a row
 * with only some game columns NULL is an error rather than a silently lost
 * game.
 */
Datum
mm_glicko2_period_transition(PG_FUNCTION_ARGS)
{
	static const char *const game_argnames[] = {"opponent_rating", "opponent_rd", "score"};
	MemoryContext aggcontext;
	Glicko2PeriodState *state;
	Glicko2Rating player;
	double		tau = GLICKO2_DEFAULT_TAU;
	int			game_nulls = 0;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "mm_glicko2_period_transition called in non-aggregate context");

	state = PG_ARGISNULL(0) ? NULL : (Glicko2PeriodState *) PG_GETARG_POINTER(0);

	if (PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3) ||
		(PG_NARGS() > 7 && PG_ARGISNULL(7)))
	{
		if (state == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(state);
	}
	for (int i = 4; i <= 6; i++)
		game_nulls += PG_ARGISNULL(i) ? 1 : 0;
	if (game_nulls != 0 && game_nulls != 3)
	{
		const char *null_arg = NULL;

		for (int i = 4; i <= 6 && null_arg == NULL; i++)
			if (PG_ARGISNULL(i))
				null_arg = game_argnames[i - 4];
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("glicko2_period got a partial game: %s is NULL", null_arg),
				 errdetail("opponent_rating, opponent_rd and score must be all set (a game) or all NULL (a player without a game).")));
	}

	player.rating = PG_GETARG_FLOAT8(1);
	player.rd = PG_GETARG_FLOAT8(2);
	player.volatility = PG_GETARG_FLOAT8(3);
	if (PG_NARGS() > 7)
		tau = PG_GETARG_FLOAT8(7);

	CheckGlicko2Player(&player);
	MmCheckPositive(tau, "tau");
	if (state == NULL)
	{
		state = (Glicko2PeriodState *) MemoryContextAllocZero(aggcontext,
															  sizeof(Glicko2PeriodState));
		state->player = player;
		state->tau = tau;
	}
	else
		CheckSamePlayer(state, &player, tau);

	if (game_nulls == 0)
	{
		double		opponent_rating = PG_GETARG_FLOAT8(4);
		double		opponent_rd = PG_GETARG_FLOAT8(5);
		double		score = PG_GETARG_FLOAT8(6);

		CheckGlicko2Game(opponent_rating, opponent_rd, score);
		MmGlicko2AddGame(&state->player, opponent_rating, opponent_rd, score,
					   &state->sums);
	}
	PG_RETURN_POINTER(state);
}

/*
 * Combine: adds the sums of two partial states of the same player.
 */
Datum
mm_glicko2_period_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	Glicko2PeriodState *state1;
	Glicko2PeriodState *state2;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "mm_glicko2_period_combine called in non-aggregate context");

	state1 = PG_ARGISNULL(0) ? NULL : (Glicko2PeriodState *) PG_GETARG_POINTER(0);
	state2 = PG_ARGISNULL(1) ? NULL : (Glicko2PeriodState *) PG_GETARG_POINTER(1);

	if (state2 == NULL)
	{
		if (state1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(state1);
	}
	if (state1 == NULL)
	{
		/* the state must live in the aggregate context, not state2's */
		state1 = (Glicko2PeriodState *) MemoryContextAlloc(aggcontext,
														   sizeof(Glicko2PeriodState));
		*state1 = *state2;
		PG_RETURN_POINTER(state1);
	}

	CheckSamePlayer(state1, &state2->player, state2->tau);
	state1->sums.information += state2->sums.information;
	state1->sums.improvement += state2->sums.improvement;
	state1->sums.games += state2->sums.games;
	PG_RETURN_POINTER(state1);
}

/*
 * Serialize: the state as bytea, to pass it from a parallel worker.
 */
Datum
mm_glicko2_period_serialize(PG_FUNCTION_ARGS)
{
	Glicko2PeriodState *state;
	StringInfoData buf;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "mm_glicko2_period_serialize called in non-aggregate context");
	state = (Glicko2PeriodState *) PG_GETARG_POINTER(0);

	pq_begintypsend(&buf);
	pq_sendfloat8(&buf, state->player.rating);
	pq_sendfloat8(&buf, state->player.rd);
	pq_sendfloat8(&buf, state->player.volatility);
	pq_sendfloat8(&buf, state->tau);
	pq_sendfloat8(&buf, state->sums.information);
	pq_sendfloat8(&buf, state->sums.improvement);
	pq_sendint64(&buf, state->sums.games);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/*
 * Deserialize: the inverse of mm_glicko2_period_serialize.
 */
Datum
mm_glicko2_period_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *serialized;
	Glicko2PeriodState *state;
	StringInfoData buf;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "mm_glicko2_period_deserialize called in non-aggregate context");
	serialized = PG_GETARG_BYTEA_PP(0);

	/* read in place (PostgreSQL 15 has no initReadOnlyStringInfo) */
	buf.data = VARDATA_ANY(serialized);
	buf.len = VARSIZE_ANY_EXHDR(serialized);
	buf.maxlen = 0;
	buf.cursor = 0;
	state = (Glicko2PeriodState *) palloc(sizeof(Glicko2PeriodState));
	state->player.rating = pq_getmsgfloat8(&buf);
	state->player.rd = pq_getmsgfloat8(&buf);
	state->player.volatility = pq_getmsgfloat8(&buf);
	state->tau = pq_getmsgfloat8(&buf);
	state->sums.information = pq_getmsgfloat8(&buf);
	state->sums.improvement = pq_getmsgfloat8(&buf);
	state->sums.games = pq_getmsgint64(&buf);
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(state);
}

/*
 * Final: the player's rating after the period, or NULL when no row had a
 * player.
 */
Datum
mm_glicko2_period_final(PG_FUNCTION_ARGS)
{
	Glicko2PeriodState *state;
	Glicko2Rating result;

	if (!AggCheckCallContext(fcinfo, NULL))
		elog(ERROR, "mm_glicko2_period_final called in non-aggregate context");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	state = (Glicko2PeriodState *) PG_GETARG_POINTER(0);

	if (!MmGlicko2Finish(&state->player, &state->sums, state->tau, &result))
		ReportGlicko2OutOfRange("glicko2_period");
	PG_RETURN_DATUM(Glicko2GetDatum(fcinfo, &result));
}
