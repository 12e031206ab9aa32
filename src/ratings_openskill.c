/*
 * ratings_openskill.c
 *	  Weng-Lin Bayesian rating with the Plackett-Luce model (as OpenSkill).
 *
 * mm.openskill_rate() updates the mu/sigma of every player after one game of
 * any number of teams of any size, ties allowed; mm.openskill_predict_win()
 * gives each team's chance of winning.  Defaults follow openskill.js 5:
 * mu 25, sigma 25/3, beta 25/6, kappa 1e-4 and tau 25/300, where tau is added
 * to every sigma (sigma' = sqrt(sigma^2 + tau^2)) before the update.
 *
 * The first half of this file is the pure math on C arrays (no palloc, no
 * fmgr); the second half validates the SQL arguments and calls it.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/tuplestore.h"

#include "sql_arrays.h"

#define OPENSKILL_BETA (25.0 / 6.0)
#define OPENSKILL_KAPPA 1e-4
#define OPENSKILL_TAU (25.0 / 300.0)

/* ------------------------------------------------------------------------
 * Pure math
 * ------------------------------------------------------------------------
 */

/*
 * One game of team_count teams.  Teams are given in ascending rank order
 * (rank_sorted[0] is the best; equal values are ties), each with its summed
 * mu and summed sigma^2 (after tau).  Writes per team:
 *	 omega[t]: the mean shift of the team (Omega in Weng & Lin),
 *	 delta[t]: the variance shrink factor (Delta).
 * Player updates follow from these in OpenSkillApply.  scratch needs
 * 2 * team_count doubles.
 *
 * Plackett-Luce: with c = sqrt(sum_t (sigma_t^2 + beta^2)), e_t =
 * exp(mu_t / c), S_q = sum of e over teams ranked at or below q, and a_q the
 * number of teams tied with q, team i gets
 *	 omega_i = sigma_i^2 / c * sum_{q ranked at or above i} (1[i=q] - e_i/S_q) / a_q
 *	 delta_i = gamma_i * sigma_i^2 / c^2 * sum_{same q} (e_i/S_q)(1 - e_i/S_q) / a_q
 * with gamma_i = sigma_i / c.  Since every tie group contributes a_q equal
 * terms, the sums reduce to running sums of 1/S and 1/S^2 over tie groups,
 * which makes a game O(teams).
 */
static void
OpenSkillTeamUpdates(int team_count, const int *rank_sorted,
					 const double *team_mu, const double *team_sigma_sq,
					 double beta, double *omega, double *delta, double *scratch)
{
	double	   *e = scratch;
	double	   *suffix = scratch + team_count;
	double		c_sq = 0.0;
	double		c;
	double		mu_max = team_mu[0];
	double		inv_s = 0.0;	/* sum over tie groups so far of 1/S */
	double		inv_s_sq = 0.0; /* ... of 1/S^2 */

	for (int t = 0; t < team_count; t++)
	{
		c_sq += team_sigma_sq[t] + beta * beta;
		mu_max = Max(mu_max, team_mu[t]);
	}
	c = sqrt(c_sq);

	/* exp((mu - max)/c): the same quotients without overflow */
	for (int t = 0; t < team_count; t++)
		e[t] = exp((team_mu[t] - mu_max) / c);
	suffix[team_count - 1] = e[team_count - 1];
	for (int t = team_count - 2; t >= 0; t--)
		suffix[t] = suffix[t + 1] + e[t];

	for (int start = 0; start < team_count;)
	{
		int			end = start;
		double		s;
		int			ties;

		while (end + 1 < team_count && rank_sorted[end + 1] == rank_sorted[start])
			end++;
		ties = end - start + 1;
		s = suffix[start];		/* the group and every team ranked below */
		inv_s += 1.0 / s;
		inv_s_sq += 1.0 / (s * s);

		for (int t = start; t <= end; t++)
		{
			double		sigma_sq = team_sigma_sq[t];
			double		gamma = sqrt(sigma_sq) / c;
			double		omega_sum = 1.0 / ties - e[t] * inv_s;
			double		delta_sum = e[t] * inv_s - e[t] * e[t] * inv_s_sq;

			omega[t] = omega_sum * sigma_sq / c;
			delta[t] = gamma * delta_sum * sigma_sq / c_sq;
		}
		start = end + 1;
	}
}

/*
 * A player's new (mu, sigma) from the team's omega and delta; sigma is the
 * player's sigma after tau, team_sigma_sq the team's summed sigma^2.
 */
static inline void
OpenSkillApply(double mu, double sigma, double team_sigma_sq,
			   double omega, double delta, double kappa,
			   double *new_mu, double *new_sigma)
{
	double		share = sigma * sigma / team_sigma_sq;

	*new_mu = mu + share * omega;
	*new_sigma = sigma * sqrt(Max(1.0 - share * delta, kappa));
}

/* Standard normal cumulative distribution. */
static inline double
StandardNormalCdf(double x)
{
	return 0.5 * erfc(-x / M_SQRT2);
}

/*
 * Probability that team i wins (openskill's predictWin): the mean over all
 * pairs of teams of Phi((mu_i - mu_q) / sqrt(n beta^2 + sigma_i^2 +
 * sigma_q^2)), so that the team_count answers sum to 1.
 */
static double
OpenSkillWinProbability(int i, int team_count, const double *team_mu,
						const double *team_sigma_sq, double beta)
{
	double		sum = 0.0;

	for (int q = 0; q < team_count; q++)
	{
		if (q == i)
			continue;
		sum += StandardNormalCdf((team_mu[i] - team_mu[q]) /
								 sqrt(team_count * beta * beta +
									  team_sigma_sq[i] + team_sigma_sq[q]));
	}
	return sum / (team_count * (team_count - 1) / 2.0);
}

/* ------------------------------------------------------------------------
 * SQL interface
 * ------------------------------------------------------------------------
 */

/* The players' arrays of one call, validated. */
typedef struct OpenSkillGame
{
	int			players;
	double	   *mu;
	double	   *sigma;
	int32	   *team;
	int32	   *rank;			/* NULL for predict_win */
	int			team_count;
	int		   *team_of;		/* player -> team index, teams in ascending
								 * team number (or rank) order */
	int32	   *team_number;	/* team index -> team number */
	int32	   *team_rank;		/* team index -> rank */
} OpenSkillGame;

/* Players sorted for grouping: by team number (ties: input order). */
static int
CompareByTeam(const void *a, const void *b, void *arg)
{
	const int32 *team = (const int32 *) arg;
	int			pa = *(const int *) a;
	int			pb = *(const int *) b;

	if (team[pa] != team[pb])
		return team[pa] < team[pb] ? -1 : 1;
	return pa - pb;
}

/* Team indexes sorted by rank (ties: team number order). */
static int
CompareTeamsByRank(const void *a, const void *b, void *arg)
{
	const int32 *rank = (const int32 *) arg;
	int			ta = *(const int *) a;
	int			tb = *(const int *) b;

	if (rank[ta] != rank[tb])
		return rank[ta] < rank[tb] ? -1 : 1;
	return ta - tb;
}

/* Refuses an int4[] of a different length than mu. */
static void
CheckSameLength(int count, int expected, const char *argname)
{
	if (count != expected)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must have as many elements as mu", argname),
				 errdetail("%s has %d elements and mu has %d.", argname, count, expected)));
}

/*
 * Reads and validates mu, sigma, team and (when rank_arg >= 0) rank, then
 * groups the players into teams numbered in ascending team-number order.
 */
static void
ReadOpenSkillGame(FunctionCallInfo fcinfo, int rank_arg, OpenSkillGame *game)
{
	int			n,
				count;
	int		   *order;

	game->mu = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(0), "mu",
							 MM_MAX_ARRAY_ELEMENTS, true, &n);
	game->sigma = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(1), "sigma",
								MM_MAX_ARRAY_ELEMENTS, true, &count);
	CheckSameLength(count, n, "sigma");
	game->team = MmInt4Array(PG_GETARG_ARRAYTYPE_P(2), "team",
							 MM_MAX_ARRAY_ELEMENTS, &count);
	CheckSameLength(count, n, "team");
	game->rank = NULL;
	if (rank_arg >= 0)
	{
		game->rank = MmInt4Array(PG_GETARG_ARRAYTYPE_P(rank_arg), "rank",
								 MM_MAX_ARRAY_ELEMENTS, &count);
		CheckSameLength(count, n, "rank");
	}
	game->players = n;

	for (int i = 0; i < n; i++)
		if (game->sigma[i] <= 0.0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("sigma[%d] must be greater than zero", i + 1),
					 errdetail("Got %g.", game->sigma[i])));

	/* group players by team number */
	order = (int *) palloc(sizeof(int) * Max(n, 1));
	for (int i = 0; i < n; i++)
		order[i] = i;
	qsort_arg(order, n, sizeof(int), CompareByTeam, game->team);

	game->team_of = (int *) palloc(sizeof(int) * Max(n, 1));
	game->team_number = (int32 *) palloc(sizeof(int32) * Max(n, 1));
	game->team_rank = (int32 *) palloc(sizeof(int32) * Max(n, 1));
	game->team_count = 0;
	for (int j = 0; j < n; j++)
	{
		int			p = order[j];
		int			t;

		if (j == 0 || game->team[p] != game->team[order[j - 1]])
		{
			t = game->team_count++;
			game->team_number[t] = game->team[p];
			if (game->rank != NULL)
				game->team_rank[t] = game->rank[p];
		}
		else
		{
			t = game->team_count - 1;
			if (game->rank != NULL && game->rank[p] != game->team_rank[t])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("rank must be the same for every player of a team"),
						 errdetail("Team %d has players with ranks %d and %d.",
								   game->team_number[t], game->team_rank[t],
								   game->rank[p])));
		}
		game->team_of[p] = t;
	}
	if (game->team_count < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("team must name at least two teams"),
				 errdetail("Got %d.", game->team_count)));
}

/*
 * Summed mu and sigma^2 per team (sigma: the sigmas to use, after tau or
 * not).  Finite inputs can still add up to Infinity: refused.
 */
static void
SumTeams(const OpenSkillGame *game, const double *sigma,
		 double *team_mu, double *team_sigma_sq)
{
	for (int t = 0; t < game->team_count; t++)
	{
		team_mu[t] = 0.0;
		team_sigma_sq[t] = 0.0;
	}
	for (int i = 0; i < game->players; i++)
	{
		team_mu[game->team_of[i]] += game->mu[i];
		team_sigma_sq[game->team_of[i]] += sigma[i] * sigma[i];
	}
	for (int t = 0; t < game->team_count; t++)
		if (!isfinite(team_mu[t]) || !isfinite(team_sigma_sq[t] + game->team_count))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("mu or sigma of team %d is out of range",
							game->team_number[t]),
					 errdetail("The team's summed mu or summed sigma squared is not a finite number.")));
}

PG_FUNCTION_INFO_V1(mm_openskill_rate);

/*
 * mm.openskill_rate(mu float8[], sigma float8[], team int[], rank int[])
 *	 RETURNS TABLE (mu float8, sigma float8)
 *
 * One row per player, in input order.
 */
Datum
mm_openskill_rate(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	OpenSkillGame game;
	int			n,
				teams;
	double	   *sigma_tau,
			   *team_mu,
			   *team_sigma_sq,
			   *omega,
			   *delta,
			   *scratch;
	int		   *by_rank;
	int32	   *rank_sorted;
	double	   *sorted_mu,
			   *sorted_sigma_sq,
			   *sorted_omega,
			   *sorted_delta;

	ReadOpenSkillGame(fcinfo, 3, &game);
	n = game.players;
	teams = game.team_count;

	/* tau first: sigma' = sqrt(sigma^2 + tau^2) */
	sigma_tau = (double *) palloc(sizeof(double) * n);
	for (int i = 0; i < n; i++)
		sigma_tau[i] = sqrt(game.sigma[i] * game.sigma[i] + OPENSKILL_TAU * OPENSKILL_TAU);

	team_mu = (double *) palloc(sizeof(double) * teams);
	team_sigma_sq = (double *) palloc(sizeof(double) * teams);
	SumTeams(&game, sigma_tau, team_mu, team_sigma_sq);

	/* the model wants the teams in rank order */
	by_rank = (int *) palloc(sizeof(int) * teams);
	for (int t = 0; t < teams; t++)
		by_rank[t] = t;
	qsort_arg(by_rank, teams, sizeof(int), CompareTeamsByRank, game.team_rank);
	rank_sorted = (int32 *) palloc(sizeof(int32) * teams);
	sorted_mu = (double *) palloc(sizeof(double) * teams);
	sorted_sigma_sq = (double *) palloc(sizeof(double) * teams);
	sorted_omega = (double *) palloc(sizeof(double) * teams);
	sorted_delta = (double *) palloc(sizeof(double) * teams);
	for (int s = 0; s < teams; s++)
	{
		rank_sorted[s] = game.team_rank[by_rank[s]];
		sorted_mu[s] = team_mu[by_rank[s]];
		sorted_sigma_sq[s] = team_sigma_sq[by_rank[s]];
	}
	scratch = (double *) palloc(sizeof(double) * 2 * teams);
	OpenSkillTeamUpdates(teams, rank_sorted, sorted_mu, sorted_sigma_sq,
						 OPENSKILL_BETA, sorted_omega, sorted_delta, scratch);
	omega = (double *) palloc(sizeof(double) * teams);
	delta = (double *) palloc(sizeof(double) * teams);
	for (int s = 0; s < teams; s++)
	{
		omega[by_rank[s]] = sorted_omega[s];
		delta[by_rank[s]] = sorted_delta[s];
	}

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < n; i++)
	{
		int			t = game.team_of[i];
		Datum		values[2];
		bool		nulls[2] = {false, false};
		double		new_mu,
					new_sigma;

		OpenSkillApply(game.mu[i], sigma_tau[i], team_sigma_sq[t],
					   omega[t], delta[t], OPENSKILL_KAPPA, &new_mu, &new_sigma);
		values[0] = Float8GetDatum(new_mu);
		values[1] = Float8GetDatum(new_sigma);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(mm_openskill_predict_win);

/*
 * mm.openskill_predict_win(mu float8[], sigma float8[], team int[])
 *	 RETURNS float8[]
 *
 * One probability per team, in ascending team-number order.  No tau: this
 * is a prediction from the ratings as they are.
 */
Datum
mm_openskill_predict_win(PG_FUNCTION_ARGS)
{
	OpenSkillGame game;
	double	   *team_mu,
			   *team_sigma_sq,
			   *probability;

	ReadOpenSkillGame(fcinfo, -1, &game);
	team_mu = (double *) palloc(sizeof(double) * game.team_count);
	team_sigma_sq = (double *) palloc(sizeof(double) * game.team_count);
	probability = (double *) palloc(sizeof(double) * game.team_count);
	SumTeams(&game, game.sigma, team_mu, team_sigma_sq);

	for (int t = 0; t < game.team_count; t++)
	{
		CHECK_FOR_INTERRUPTS();
		probability[t] = OpenSkillWinProbability(t, game.team_count, team_mu,
												 team_sigma_sq, OPENSKILL_BETA);
	}
	PG_RETURN_ARRAYTYPE_P(MmBuildFloat8Array(probability, game.team_count));
}
