/*
 * ratings.h
 *	  The pure rating math behind the mm.elo_*, mm.glicko2_*, mm.team_rating,
 *	  mm.win_probability, mm.smurf_score and mm.rating_boost SQL functions.
 *
 * Nothing declared here touches fmgr, SPI, palloc or ereport: the functions
 * take and return plain C values, so they can be unit tested and benchmarked
 * alone.  The SQL wrappers (same files, mm_* functions) validate arguments
 * first and turn a false return into an ERROR.
 */
#ifndef MM_RATINGS_H
#define MM_RATINGS_H

#include <stdbool.h>

/* ratings_elo.c */

/* Expected score of a player rated rating_a against one rated rating_b. */
extern double MmEloExpected(double rating_a, double rating_b);

/* New rating after one game with the given score (0, 0.5, 1) and K factor. */
extern double MmEloUpdate(double rating, double opponent, double score, double k);

/* K factor: 40 under 30 games played, 16 above 2400, otherwise 32. */
extern double MmEloKFactor(int games_played, double rating);

/* ratings_glicko2.c */

/* Glickman's conversion factor between the Glicko and Glicko-2 scales. */
#define GLICKO2_SCALE 173.7178
/* Convergence tolerance of the volatility iteration (Glickman's epsilon). */
#define GLICKO2_EPSILON 1e-6
/* glicko2_decay never lets RD grow above the RD of an unrated player. */
#define GLICKO2_MAX_RD 350.0
/* The default system constant tau. */
#define GLICKO2_DEFAULT_TAU 0.5

typedef struct Glicko2Rating
{
	double		rating;			/* Glicko scale, e.g. 1500 */
	double		rd;				/* rating deviation, Glicko scale */
	double		volatility;		/* sigma */
} Glicko2Rating;

/*
 * The two sums a rating period needs from its games, on the Glicko-2 scale:
 * information = sum of g(phi_j)^2 E (1 - E) (= 1/v), and
 * improvement = sum of g(phi_j) (s_j - E) (= delta / v).
 * They add up game by game, which is what lets the aggregate combine partial
 * states from parallel workers.
 */
typedef struct Glicko2Sums
{
	double		information;
	double		improvement;
	long		games;
} Glicko2Sums;

/* Adds one game against (opponent_rating, opponent_rd) with score to sums. */
extern void MmGlicko2AddGame(const Glicko2Rating *player, double opponent_rating,
						   double opponent_rd, double score, Glicko2Sums *sums);

/*
 * Step 5 to 8 of Glickman's algorithm: the new rating from the player's
 * rating and the sums over the period's games (games = 0: only RD grows).
 * Returns false when the result is not finite (inputs too extreme).
 */
extern bool MmGlicko2Finish(const Glicko2Rating *player, const Glicko2Sums *sums,
						  double tau, Glicko2Rating *result);

/* The whole algorithm over arrays of n games. */
extern bool MmGlicko2Update(const Glicko2Rating *player,
						  const double *opponent_ratings,
						  const double *opponent_rds,
						  const double *scores, int n,
						  double tau, Glicko2Rating *result);

/* RD after periods idle rating periods, capped at GLICKO2_MAX_RD. */
extern bool MmGlicko2Decay(const Glicko2Rating *player, int periods,
						 Glicko2Rating *result);

/* ratings_team.c */

/* The Elo win probability of team a (mean rating) against team b. */
extern double MmTeamWinProbability(const double *team_a, int count_a,
								 const double *team_b, int count_b);

/* ratings_smurf.c */

/* Inputs of MmSmurfScore; has_headshot_rate false when it is unknown (NULL). */
typedef struct SmurfEvidence
{
	int			games_played;
	double		win_rate;
	double		avg_kda;
	double		mvp_rate;
	const double *recent_ratings;
	int			recent_count;
	bool		has_headshot_rate;
	double		headshot_rate;
} SmurfEvidence;

/* Suspicion points over the reference maximum (75 under 25 games, else 45), in [0, 1]. */
extern double MmSmurfScore(const SmurfEvidence *evidence);

/* Rating change multiplier for a smurf confidence and games played. */
extern double MmRatingBoost(double confidence, int games_played);

/* ratings_openskill.c (Weng-Lin, Plackett-Luce; openskill.js 5 defaults) */

#define OPENSKILL_MU 25.0
#define OPENSKILL_SIGMA (25.0 / 3.0)
#define OPENSKILL_BETA (25.0 / 6.0)
#define OPENSKILL_KAPPA 1e-4
#define OPENSKILL_TAU (25.0 / 300.0)

/*
 * One game of n players in teams 0..teams-1 (team_of[i]; team_rank[t]: lower
 * is better, equal ranks tie): tau added to every sigma, then the update.
 * Writes new_mu and new_sigma per player.  work holds n + 10 * teams
 * doubles, iwork 2 * teams ints.  Returns -1, or the index of a team whose
 * summed mu or sigma^2 is not finite (nothing written then).
 */
extern int	MmOpenSkillRate(int n, const double *mu, const double *sigma,
							const int *team_of, int teams, const int *team_rank,
							double beta, double tau, double kappa,
							double *new_mu, double *new_sigma, double *work,
							int *iwork);

/* Each team's chance of winning (predictWin) from its summed mu and sigma^2. */
extern void MmOpenSkillPredictWin(int teams, const double *team_mu,
								  const double *team_sigma_sq, double beta,
								  double *probability);

/* The chance of a draw (predictDraw) of players in all, from the team sums. */
extern double MmOpenSkillPredictDraw(int teams, int players, const double *team_mu,
									 const double *team_sigma_sq, double beta);

#endif							/* MM_RATINGS_H */
