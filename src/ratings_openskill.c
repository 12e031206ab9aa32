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

#include "ratings.h"
#include "sql_arrays.h"

/* ------------------------------------------------------------------------
 * Pure math
 * ------------------------------------------------------------------------
 */

/* log(exp(x) + exp(y)) without overflow. */
static inline double
LogAddExp(double x, double y)
{
	double		hi = Max(x, y);

	return hi + log1p(exp(Min(x, y) - hi));
}

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
 * with gamma_i = sigma_i / c.  Every tie group contributes a_q equal terms,
 * so with G the group of i the sums are 1/a_i - (e_i/S_G) * A_G and
 * (e_i/S_G) * A_G - (e_i/S_G)^2 * B_G, where A_G = sum over groups H up to G
 * of S_G/S_H and B_G the same of (S_G/S_H)^2: running sums, so a game is
 * O(teams) after sorting.  Everything is kept as ratios in [0, 1] computed
 * from logarithms, so large mu differences neither overflow nor give 0/0.
 */
static void
OpenSkillTeamUpdates(int team_count, const int *rank_sorted,
					 const double *team_mu, const double *team_sigma_sq,
					 double beta, double *omega, double *delta, double *scratch)
{
	double	   *log_e = scratch;
	double	   *log_suffix = scratch + team_count;	/* log S from t down */
	double		c_sq = 0.0;
	double		c;
	double		a_sum = 0.0;	/* A_G */
	double		b_sum = 0.0;	/* B_G */
	double		prev_log_s = 0.0;

	for (int t = 0; t < team_count; t++)
		c_sq += team_sigma_sq[t] + beta * beta;
	c = sqrt(c_sq);

	for (int t = 0; t < team_count; t++)
		log_e[t] = team_mu[t] / c;
	log_suffix[team_count - 1] = log_e[team_count - 1];
	for (int t = team_count - 2; t >= 0; t--)
		log_suffix[t] = LogAddExp(log_suffix[t + 1], log_e[t]);

	for (int start = 0; start < team_count;)
	{
		int			end = start;
		int			ties;
		double		log_s;

		while (end + 1 < team_count && rank_sorted[end + 1] == rank_sorted[start])
			end++;
		ties = end - start + 1;
		log_s = log_suffix[start];	/* the group and every team below it */
		if (start == 0)
		{
			a_sum = 1.0;
			b_sum = 1.0;
		}
		else
		{
			double		ratio = exp(log_s - prev_log_s);	/* S_G / S_prev <= 1 */

			a_sum = 1.0 + a_sum * ratio;
			b_sum = 1.0 + b_sum * ratio * ratio;
		}
		prev_log_s = log_s;

		for (int t = start; t <= end; t++)
		{
			double		sigma_sq = team_sigma_sq[t];
			double		gamma = sqrt(sigma_sq) / c;
			double		share = exp(log_e[t] - log_s);	/* e_t / S_G */
			double		omega_sum = 1.0 / ties - share * a_sum;
			double		delta_sum = share * a_sum - share * share * b_sum;

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

/* Team indexes sorted by rank (ties: team index order). */
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

/*
 * One game (see ratings.h): tau added to every sigma, the teams' sums, the
 * teams in rank order through OpenSkillTeamUpdates, each player's share.
 * mm.openskill_rate and the rating replay (replay_ratings.c) both call it,
 * so a replay with the same parameters computes bit for bit the same.
 */
int
MmOpenSkillRate(int n, const double *mu, const double *sigma, const int *team_of,
				int teams, const int *team_rank, double beta, double tau,
				double kappa, double *new_mu, double *new_sigma, double *work,
				int *iwork)
{
	double	   *sigma_tau = work;
	double	   *team_mu = sigma_tau + n;
	double	   *team_sigma_sq = team_mu + teams;
	double	   *sorted_mu = team_sigma_sq + teams;
	double	   *sorted_sigma_sq = sorted_mu + teams;
	double	   *sorted_omega = sorted_sigma_sq + teams;
	double	   *sorted_delta = sorted_omega + teams;
	double	   *omega = sorted_delta + teams;
	double	   *delta = omega + teams;
	double	   *scratch = delta + teams;	/* 2 * teams */
	int		   *by_rank = iwork;
	int32	   *rank_sorted = (int32 *) (iwork + teams);
	bool		sorted = true;

	/* tau first: sigma' = sqrt(sigma^2 + tau^2) */
	for (int i = 0; i < n; i++)
		sigma_tau[i] = sqrt(sigma[i] * sigma[i] + tau * tau);
	for (int t = 0; t < teams; t++)
	{
		team_mu[t] = 0.0;
		team_sigma_sq[t] = 0.0;
	}
	for (int i = 0; i < n; i++)
	{
		team_mu[team_of[i]] += mu[i];
		team_sigma_sq[team_of[i]] += sigma_tau[i] * sigma_tau[i];
	}
	for (int t = 0; t < teams; t++)
		if (!isfinite(team_mu[t]) || !isfinite(team_sigma_sq[t] + teams))
			return t;

	/* the model wants the teams in rank order (often they already are) */
	for (int t = 0; t < teams; t++)
	{
		by_rank[t] = t;
		if (t > 0 && team_rank[t] < team_rank[t - 1])
			sorted = false;
	}
	if (!sorted)
		qsort_arg(by_rank, teams, sizeof(int), CompareTeamsByRank, (void *) team_rank);
	for (int r = 0; r < teams; r++)
	{
		rank_sorted[r] = team_rank[by_rank[r]];
		sorted_mu[r] = team_mu[by_rank[r]];
		sorted_sigma_sq[r] = team_sigma_sq[by_rank[r]];
	}
	OpenSkillTeamUpdates(teams, rank_sorted, sorted_mu, sorted_sigma_sq,
						 beta, sorted_omega, sorted_delta, scratch);
	for (int r = 0; r < teams; r++)
	{
		omega[by_rank[r]] = sorted_omega[r];
		delta[by_rank[r]] = sorted_delta[r];
	}
	for (int i = 0; i < n; i++)
	{
		int			t = team_of[i];

		OpenSkillApply(mu[i], sigma_tau[i], team_sigma_sq[t], omega[t], delta[t],
					   kappa, &new_mu[i], &new_sigma[i]);
	}
	return -1;
}

/* Each team's chance of winning from its summed mu and sigma^2 (ratings.h). */
void
MmOpenSkillPredictWin(int teams, const double *team_mu, const double *team_sigma_sq,
					  double beta, double *probability)
{
	/* quadratic in the teams (up to 10,000 of them): cancellable per team */
	for (int t = 0; t < teams; t++)
	{
		CHECK_FOR_INTERRUPTS();
		probability[t] = OpenSkillWinProbability(t, teams, team_mu, team_sigma_sq, beta);
	}
}

/* The standard normal quantile of p in (0, 1), by bisection (one call per game). */
static double
StandardNormalQuantile(double p)
{
	double		low = -40.0;
	double		high = 40.0;

	for (int i = 0; i < 200 && high - low > 0.0; i++)
	{
		double		middle = low + (high - low) / 2.0;

		if (middle <= low || middle >= high)
			break;
		if (StandardNormalCdf(middle) < p)
			low = middle;
		else
			high = middle;
	}
	return low + (high - low) / 2.0;
}

/*
 * The chance of a draw (openskill's predictDraw): with n players in all, a
 * draw margin of sqrt(n) beta Phi^-1((1 + 1/n) / 2), the mean over the pairs
 * of teams of the chance that their performances differ by less than it.
 */
double
MmOpenSkillPredictDraw(int teams, int players, const double *team_mu,
					   const double *team_sigma_sq, double beta)
{
	double		margin = sqrt((double) players) * beta *
		StandardNormalQuantile((1.0 + 1.0 / players) / 2.0);
	double		sum = 0.0;
	int			pairs = 0;

	for (int a = 0; a < teams; a++)
	{
		/* quadratic in the teams, as MmOpenSkillPredictWin */
		CHECK_FOR_INTERRUPTS();
		for (int b = a + 1; b < teams; b++)
		{
			double		denominator = sqrt(players * beta * beta + team_sigma_sq[a] + team_sigma_sq[b]);
			double		difference = team_mu[a] - team_mu[b];

			sum += StandardNormalCdf((margin - difference) / denominator) -
				StandardNormalCdf((-difference - margin) / denominator);
			pairs++;
		}
	}
	return pairs > 0 ? sum / pairs : 1.0;
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
								 * team-number order */
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

	/* group players by team number (often already in order: skip the sort) */
	order = (int *) palloc(sizeof(int) * 4 * Max(n, 1));
	game->team_of = order + n;
	game->team_number = (int32 *) (order + 2 * n);
	game->team_rank = (int32 *) (order + 3 * n);
	{
		bool		sorted = true;

		for (int i = 0; i < n; i++)
		{
			order[i] = i;
			if (i > 0 && game->team[i] < game->team[i - 1])
				sorted = false;
		}
		if (!sorted)
			qsort_arg(order, n, sizeof(int), CompareByTeam, game->team);
	}

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

/* A team whose sums are not finite numbers. */
static void
ReportTeamOutOfRange(int32 team_number)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("mu or sigma of team %d is out of range", team_number),
			 errdetail("The team's summed mu or summed sigma squared is not a finite number.")));
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
			ReportTeamOutOfRange(game->team_number[t]);
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
				teams,
				bad;
	double	   *new_mu,
			   *new_sigma,
			   *work;
	int		   *iwork;

	ReadOpenSkillGame(fcinfo, 3, &game);
	n = game.players;
	teams = game.team_count;

	/* one block for all the working arrays of this call */
	new_mu = (double *) palloc(sizeof(double) * (3 * n + 10 * teams));
	new_sigma = new_mu + n;
	work = new_sigma + n;		/* n + 10 * teams */
	iwork = (int *) palloc(sizeof(int) * 2 * teams);

	bad = MmOpenSkillRate(n, game.mu, game.sigma, game.team_of, teams, game.team_rank,
						  OPENSKILL_BETA, OPENSKILL_TAU, OPENSKILL_KAPPA,
						  new_mu, new_sigma, work, iwork);
	if (bad >= 0)
		ReportTeamOutOfRange(game.team_number[bad]);

	/*
	 * The expected descriptor (copied) is much cheaper than building one
	 * from the catalogs on every call; set-returning calls in the select
	 * list may not provide it.
	 */
	InitMaterializedSRF(fcinfo, rsinfo != NULL && IsA(rsinfo, ReturnSetInfo) &&
						rsinfo->expectedDesc != NULL ? MAT_SRF_USE_EXPECTED_DESC : 0);
	for (int i = 0; i < n; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Float8GetDatum(new_mu[i]);
		values[1] = Float8GetDatum(new_sigma[i]);
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

	CHECK_FOR_INTERRUPTS();
	MmOpenSkillPredictWin(game.team_count, team_mu, team_sigma_sq, OPENSKILL_BETA, probability);
	PG_RETURN_ARRAYTYPE_P(MmBuildFloat8Array(probability, game.team_count));
}

PG_FUNCTION_INFO_V1(mm_openskill_predict_draw);

/*
 * mm.openskill_predict_draw(mu float8[], sigma float8[], team int[])
 *	 RETURNS float8
 *
 * The chance that the game ends in a draw.  No tau, as predict_win.
 */
Datum
mm_openskill_predict_draw(PG_FUNCTION_ARGS)
{
	OpenSkillGame game;
	double	   *team_mu,
			   *team_sigma_sq;

	ReadOpenSkillGame(fcinfo, -1, &game);
	team_mu = (double *) palloc(sizeof(double) * game.team_count);
	team_sigma_sq = (double *) palloc(sizeof(double) * game.team_count);
	SumTeams(&game, game.sigma, team_mu, team_sigma_sq);
	PG_RETURN_FLOAT8(MmOpenSkillPredictDraw(game.team_count, game.players, team_mu,
											team_sigma_sq, OPENSKILL_BETA));
}
