/*
 * replay_ratings.c
 *	  The core of mm.replay_ratings (docs/fairness.md): recorded results
 *	  replayed with candidate Elo, Glicko-2 or OpenSkill settings.
 *
 * A result is replayed as mm.report_result rates it, in the same order of
 * operations, so that a replay with the live settings gives the live ratings
 * bit for bit: each side's strength is the mean rating of its players (and
 * for Glicko-2 their mean RD); a Glicko-2 player plays one rating period
 * against every opposing side's composite player; an Elo player moves by K
 * times the mean over the opponents of score minus expectation; OpenSkill
 * rates the whole match through the same C function as mm.openskill_rate
 * (a leaver scored as a loss takes a second run with their side last).
 *
 * What the live path does not have: an Elo K schedule by games played,
 * Glicko-2 rating periods (every result of a period rated at its end against
 * the ratings at its start, idle players' RD growing: Glickman's own use),
 * season resets between results (as mm.start_season: toward the pool's mean
 * by a share, RD or sigma raised), and seeds (a player's first rating).
 * The SQL wrapper (src/sql/82_fairness.sql) reads the results and settings
 * and turns the arrays back into figures.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "fairness.h"
#include "ratings.h"
#include "ratings_args.h"
#include "sql_arrays.h"

PG_FUNCTION_INFO_V1(mm_replay_ratings_core);

/* The largest replay: player rows of all its results. */
#define MM_REPLAY_MAX_ROWS 50000000

typedef enum ReplaySystem
{
	REPLAY_ELO,
	REPLAY_GLICKO2,
	REPLAY_OPENSKILL
} ReplaySystem;

typedef struct ReplaySettings
{
	ReplaySystem system;
	double		tau;			/* Glicko-2: system constant; OpenSkill: added
								 * to sigma before each game */
	double		k;				/* Elo: a fixed K, or <= 0 for the schedule */
	double		beta;			/* OpenSkill */
	double		initial_rating; /* OpenSkill: mu */
	double		initial_rd;		/* OpenSkill: sigma */
	double		initial_volatility;
	/* Elo: K = k_values[i] below k_games[i] games (none: mm.elo_k_factor) */
	int			n_schedule;
	const int32 *k_games;
	const double *k_values;
	/* season resets: share pulled toward the mean, RD raised to, target */
	int			n_resets;
	const double *reset_share;
	const double *reset_rd;
	const double *reset_target; /* NaN: the pool's mean */
} ReplaySettings;

/* Every player's state, by player number. */
typedef struct ReplayPlayers
{
	int			count;
	double	   *rating;			/* OpenSkill: mu */
	double	   *rd;				/* OpenSkill: sigma */
	double	   *volatility;
	int32	   *games;
	int32	   *pool;			/* 1.. (per-role pools), for the resets' means */
	bool	   *seen;			/* has played in the replay */
	Glicko2Sums *sums;			/* the running rating period's games */
} ReplayPlayers;

/* One match's rows: player numbers, sides 1..nsides, ranks, leavers. */
typedef struct ReplayMatch
{
	int			n;
	int			nsides;
	const int32 *player;
	const int32 *side;
	const int32 *rank;
	const int32 *loss;
} ReplayMatch;

/* Working arrays, sized for the largest match. */
typedef struct ReplayScratch
{
	double	   *side_rating;
	double	   *side_rd;
	double	   *side_sigma_sq;
	double	   *probability;
	double	   *opp_rating;
	double	   *opp_rd;
	double	   *opp_score;
	double	   *mu;
	double	   *sigma;
	double	   *new_rating;
	double	   *new_rd;
	double	   *new_volatility;
	double	   *leaver_mu;
	double	   *leaver_sigma;
	double	   *work;			/* n + 10 * sides */
	int		   *side_count;
	int		   *side_rank;
	int		   *dense_rank;
	int		   *leaver_rank;
	int		   *team_of;
	int		   *iwork;			/* 2 * sides */
} ReplayScratch;

/* The score of a side of rank own against one of rank other (0, 0.5, 1). */
static inline double
PairScore(int own, int other, bool loss)
{
	if (loss)
		return 0.0;
	if (own < other)
		return 1.0;
	if (own == other)
		return 0.5;
	return 0.0;
}

/* An Elo player's K: fixed, from the schedule, or mm.elo_k_factor's. */
static double
ReplayEloK(const ReplaySettings *s, int games, double rating)
{
	if (s->k > 0)
		return s->k;
	if (s->n_schedule > 0)
	{
		for (int i = 0; i < s->n_schedule; i++)
			if (games < s->k_games[i])
				return s->k_values[i];
		return s->k_values[s->n_schedule - 1];
	}
	return MmEloKFactor(games, rating);
}

static void
ReportOutOfRange(const char *system, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("replayed %s rating is out of range", system),
			 errhint("%s", hint)));
}

/*
 * Each side's mean rating and RD (Elo, Glicko-2), in row order as
 * mm.report_result sums them, and side 1's chance: the mean over its pairs
 * with every other side.
 */
static double
SideStrengths(const ReplaySettings *s, const ReplayMatch *m, const ReplayPlayers *pl,
			  ReplayScratch *x)
{
	double		prediction = 0.0;

	for (int t = 0; t < m->nsides; t++)
	{
		x->side_rating[t] = 0.0;
		x->side_rd[t] = 0.0;
		x->side_count[t] = 0;
		x->side_rank[t] = 0;
	}
	for (int i = 0; i < m->n; i++)
	{
		int			t = m->side[i] - 1;

		x->side_rating[t] += pl->rating[m->player[i]];
		x->side_rd[t] += pl->rd[m->player[i]];
		x->side_count[t]++;
		x->side_rank[t] = m->rank[i];
	}
	for (int t = 0; t < m->nsides; t++)
	{
		x->side_rating[t] /= (double) x->side_count[t];
		x->side_rd[t] /= (double) x->side_count[t];
	}
	for (int t = 1; t < m->nsides; t++)
	{
		if (s->system == REPLAY_GLICKO2)
			prediction += MmGlickoExpected(x->side_rating[0], x->side_rd[0],
										   x->side_rating[t], x->side_rd[t]);
		else
			prediction += MmEloExpected(x->side_rating[0], x->side_rating[t]);
	}
	return prediction / (double) (m->nsides - 1);
}

/*
 * A Glicko-2 player's games of the match: one against every opposing side's
 * composite player.  With periods, added to the period's sums; without, the
 * match is the period and the new values go to x->new_*.
 */
static void
ReplayGlicko2Rows(const ReplaySettings *s, const ReplayMatch *m, ReplayPlayers *pl,
				  ReplayScratch *x, bool periods)
{
	for (int i = 0; i < m->n; i++)
	{
		int			p = m->player[i];
		int			own = m->side[i] - 1;
		Glicko2Rating player = {pl->rating[p], pl->rd[p], pl->volatility[p]};
		Glicko2Rating result;
		int			g = 0;

		/* a player's games are the match's sides: many sides, long rows */
		CHECK_FOR_INTERRUPTS();
		for (int t = 0; t < m->nsides; t++)
		{
			if (t == own)
				continue;
			x->opp_rating[g] = x->side_rating[t];
			x->opp_rd[g] = x->side_rd[t];
			x->opp_score[g] = PairScore(m->rank[i], x->side_rank[t], m->loss[i] != 0);
			g++;
		}
		if (periods)
		{
			for (int j = 0; j < g; j++)
				MmGlicko2AddGame(&player, x->opp_rating[j], x->opp_rd[j], x->opp_score[j],
								 &pl->sums[p]);
			continue;
		}
		if (!MmGlicko2Update(&player, x->opp_rating, x->opp_rd, x->opp_score, g, s->tau, &result))
			ReportOutOfRange("Glicko-2", "Use a smaller tau or a smaller initial_rd.");
		x->new_rating[i] = result.rating;
		x->new_rd[i] = result.rd;
		x->new_volatility[i] = result.volatility;
	}
}

/* An Elo player's change: K times the mean of score minus expectation. */
static void
ReplayEloRows(const ReplaySettings *s, const ReplayMatch *m, ReplayPlayers *pl, ReplayScratch *x)
{
	for (int i = 0; i < m->n; i++)
	{
		int			p = m->player[i];
		int			own = m->side[i] - 1;
		double		change = 0.0;
		int			g = 0;

		CHECK_FOR_INTERRUPTS();
		for (int t = 0; t < m->nsides; t++)
		{
			if (t == own)
				continue;
			change += PairScore(m->rank[i], x->side_rank[t], m->loss[i] != 0) -
				MmEloExpected(x->side_rating[own], x->side_rating[t]);
			g++;
		}
		change /= (double) g;
		x->new_rating[i] = pl->rating[p] + ReplayEloK(s, pl->games[p], pl->rating[p]) * change;
		x->new_rd[i] = pl->rd[p];
		x->new_volatility[i] = pl->volatility[p];
	}
}

/* One OpenSkill run of the match with the given side ranks into mu, sigma. */
static void
OpenSkillRun(const ReplaySettings *s, const ReplayMatch *m, ReplayScratch *x,
			 const int *ranks, double *mu, double *sigma)
{
	if (MmOpenSkillRate(m->n, x->mu, x->sigma, x->team_of, m->nsides, ranks, s->beta,
						s->tau, OPENSKILL_KAPPA, mu, sigma, x->work, x->iwork) >= 0)
		ReportOutOfRange("OpenSkill", "Use a smaller initial_rating or initial_rd.");
}

/*
 * OpenSkill over the whole match, as mm.report_result: the prediction from
 * the ratings as they are (predict_win, no tau), the update on dense ranks,
 * and for each side with a leaver scored as a loss a second run with that
 * side last, of which only its leavers keep the result.
 */
static double
ReplayOpenSkill(const ReplaySettings *s, const ReplayMatch *m, ReplayPlayers *pl, ReplayScratch *x)
{
	for (int t = 0; t < m->nsides; t++)
	{
		x->side_rating[t] = 0.0;
		x->side_sigma_sq[t] = 0.0;
	}
	for (int i = 0; i < m->n; i++)
	{
		int			t = m->side[i] - 1;

		x->mu[i] = pl->rating[m->player[i]];
		x->sigma[i] = pl->rd[m->player[i]];
		x->team_of[i] = t;
		x->side_rank[t] = m->rank[i];
		x->side_rating[t] += x->mu[i];
		x->side_sigma_sq[t] += x->sigma[i] * x->sigma[i];
	}
	MmOpenSkillPredictWin(m->nsides, x->side_rating, x->side_sigma_sq, s->beta, x->probability);
	for (int t = 0; t < m->nsides; t++)
	{
		CHECK_FOR_INTERRUPTS();
		x->dense_rank[t] = 0;
		for (int q = 0; q < m->nsides; q++)
		{
			bool		first = true;

			/* each distinct rank at or above this side's once */
			for (int r = 0; r < q && first; r++)
				first = x->side_rank[r] != x->side_rank[q];
			if (first && x->side_rank[q] <= x->side_rank[t])
				x->dense_rank[t]++;
		}
	}
	OpenSkillRun(s, m, x, x->dense_rank, x->new_rating, x->new_rd);
	for (int t = 0; t < m->nsides; t++)
	{
		bool		leaver = false;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < m->n; i++)
			leaver |= m->side[i] - 1 == t && m->loss[i] != 0;
		if (!leaver)
			continue;
		for (int q = 0; q < m->nsides; q++)
			x->leaver_rank[q] = q == t ? m->nsides + 1 : x->dense_rank[q];
		OpenSkillRun(s, m, x, x->leaver_rank, x->leaver_mu, x->leaver_sigma);
		for (int i = 0; i < m->n; i++)
			if (m->side[i] - 1 == t && m->loss[i] != 0)
			{
				x->new_rating[i] = x->leaver_mu[i];
				x->new_rd[i] = x->leaver_sigma[i];
			}
	}
	for (int i = 0; i < m->n; i++)
		x->new_volatility[i] = pl->volatility[m->player[i]];
	return x->probability[0];
}

/*
 * Replays one match; returns side 1's win probability before it.  Every
 * player's update reads the ratings before the game: written after.  With
 * Glicko-2 periods only the period's sums change (ClosePeriod writes).
 */
static double
ReplayOneMatch(const ReplaySettings *s, const ReplayMatch *m, ReplayPlayers *pl,
			   ReplayScratch *x, bool periods)
{
	double		prediction;

	if (s->system == REPLAY_OPENSKILL)
		prediction = ReplayOpenSkill(s, m, pl, x);
	else
	{
		prediction = SideStrengths(s, m, pl, x);
		if (s->system == REPLAY_GLICKO2)
			ReplayGlicko2Rows(s, m, pl, x, periods);
		else
			ReplayEloRows(s, m, pl, x);
	}
	for (int i = 0; i < m->n; i++)
	{
		int			p = m->player[i];

		if (!(s->system == REPLAY_GLICKO2 && periods))
		{
			pl->rating[p] = x->new_rating[i];
			pl->rd[p] = x->new_rd[i];
			pl->volatility[p] = x->new_volatility[i];
		}
		pl->games[p]++;
		pl->seen[p] = true;
	}
	return prediction;
}

/*
 * The end of a Glicko-2 rating period: every player who played in it rated
 * on its games, every other player already seen idle for the period (RD
 * grows), then idle_after empty periods for everyone seen.
 */
static void
ClosePeriod(const ReplaySettings *s, ReplayPlayers *pl, int64 idle_after)
{
	for (int p = 0; p < pl->count; p++)
	{
		Glicko2Rating player = {pl->rating[p], pl->rd[p], pl->volatility[p]};
		Glicko2Rating result = player;
		int64		idle = idle_after;

		if (!pl->seen[p])
			continue;
		if (pl->sums[p].games > 0)
		{
			if (!MmGlicko2Finish(&player, &pl->sums[p], s->tau, &result))
				ReportOutOfRange("Glicko-2", "Use a smaller tau or a smaller initial_rd.");
		}
		else
			idle++;
		if (idle > 0)
		{
			player = result;
			if (!MmGlicko2Decay(&player, (int) Min(idle, 1000000), &result))
				ReportOutOfRange("Glicko-2", "Use a longer rating_period.");
		}
		pl->rating[p] = result.rating;
		pl->rd[p] = result.rd;
		pl->volatility[p] = result.volatility;
		pl->sums[p].information = 0.0;
		pl->sums[p].improvement = 0.0;
		pl->sums[p].games = 0;
	}
}

/*
 * Season reset number r, as mm.start_season: every player seen so far
 * pulled toward their pool's mean (or the target) by the share; Glicko-2 RD
 * raised to the reset RD (not above 350 unless already), OpenSkill sigma
 * moved toward the initial sigma by the share.
 */
static void
ApplyReset(const ReplaySettings *s, ReplayPlayers *pl, int r, double *pool_sum, int *pool_count,
		   int npools)
{
	double		share = s->reset_share[r];

	for (int q = 0; q < npools; q++)
	{
		pool_sum[q] = 0.0;
		pool_count[q] = 0;
	}
	for (int p = 0; p < pl->count; p++)
		if (pl->seen[p])
		{
			pool_sum[pl->pool[p] - 1] += pl->rating[p];
			pool_count[pl->pool[p] - 1]++;
		}
	for (int p = 0; p < pl->count; p++)
	{
		int			q = pl->pool[p] - 1;
		double		mean = isnan(s->reset_target[r]) ? pool_sum[q] / pool_count[q] : s->reset_target[r];

		if (!pl->seen[p])
			continue;
		pl->rating[p] = mean + (pl->rating[p] - mean) * (1 - share);
		if (s->system == REPLAY_GLICKO2)
			pl->rd[p] = Min(Max(pl->rd[p], s->reset_rd[r]), Max(pl->rd[p], GLICKO2_MAX_RD));
		else if (s->system == REPLAY_OPENSKILL)
			pl->rd[p] = pl->rd[p] + Max(s->initial_rd - pl->rd[p], 0.0) * share;
	}
}

/* ----------------------------------------------------------------------
 * Reading the rows
 * ----------------------------------------------------------------------
 */

/* The replay's per-row input, each match's rows together. */
typedef struct ReplayRows
{
	int			count;
	int64	   *match_ids;
	char	  **player_ids;
	char	  **side_names;
	int32	   *ranks;
	int32	   *losses;
	int64	   *periods;		/* NULL: no rating periods */
	int32	   *resets;			/* NULL: no resets; else resets before the row */
	int32	   *pools;			/* NULL: one pool */
	double	   *seed_rating;	/* NULL: no seeds; NaN: none for the row */
	double	   *seed_rd;
	double	   *seed_volatility;
} ReplayRows;

/* A text[] argument's elements as C strings (no NULLs). */
static char **
TextArrayStrings(ArrayType *array, const char *argname, int *count)
{
	Datum	   *elements;
	bool	   *nulls;
	char	  **strings;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", argname)));
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls, count);
	strings = palloc(sizeof(char *) * Max(*count, 1));
	for (int i = 0; i < *count; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", argname)));
		strings[i] = TextDatumGetCString(elements[i]);
	}
	return strings;
}

/* An optional per-row array: empty gives NULL, else one element per row. */
static void
CheckRowCount(int count, int rows, const char *argname)
{
	if (count != rows)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be empty or have one element per row", argname),
				 errdetail("%s has %d elements for %d rows.", argname, count, rows)));
}

static int32 *
OptionalInt4Rows(ArrayType *array, const char *argname, int rows)
{
	int			count;
	int32	   *values = MmInt4Array(array, argname, MM_REPLAY_MAX_ROWS, &count);

	if (count == 0)
		return NULL;
	CheckRowCount(count, rows, argname);
	return values;
}

static double *
OptionalFloat8Rows(ArrayType *array, const char *argname, int rows)
{
	int			count;
	double	   *values = MmFloat8Array(array, argname, MM_REPLAY_MAX_ROWS, false, &count);

	if (count == 0)
		return NULL;
	CheckRowCount(count, rows, argname);
	return values;
}

typedef struct PlayerRow
{
	const char *id;
	int			row;
} PlayerRow;

static int
ComparePlayerRows(const void *a, const void *b)
{
	const PlayerRow *x = (const PlayerRow *) a;
	const PlayerRow *y = (const PlayerRow *) b;
	int			c = strcmp(x->id, y->id);

	return c != 0 ? c : (x->row > y->row) - (x->row < y->row);
}

/*
 * Each match's rows in player id order, as mm.report_result reads them (the
 * order its sums run in); the SQL only groups a match's rows.  Sorted by id,
 * then row (the rows of one id keep their order).  Every per-row array
 * follows.
 */
#define PERMUTE(array, type) \
	do { \
		if ((array) != NULL) \
		{ \
			type	   *copy = palloc(sizeof(type) * Max(r->count, 1)); \
			for (int i = 0; i < r->count; i++) \
				copy[i] = (array)[order[i]]; \
			(array) = copy; \
		} \
	} while (0)

static void
SortMatchRowsByPlayer(ReplayRows *r)
{
	int		   *order = palloc(sizeof(int) * Max(r->count, 1));
	PlayerRow  *sorted = palloc(sizeof(PlayerRow) * Max(r->count, 1));

	for (int first = 0; first < r->count;)
	{
		int			end = first;

		CHECK_FOR_INTERRUPTS();
		while (end < r->count && r->match_ids[end] == r->match_ids[first])
			end++;
		for (int i = first; i < end; i++)
		{
			sorted[i].id = r->player_ids[i];
			sorted[i].row = i;
		}
		qsort(sorted + first, end - first, sizeof(PlayerRow), ComparePlayerRows);
		for (int i = first; i < end; i++)
			order[i] = sorted[i].row;
		first = end;
	}
	pfree(sorted);
	PERMUTE(r->player_ids, char *);
	PERMUTE(r->side_names, char *);
	PERMUTE(r->ranks, int32);
	PERMUTE(r->losses, int32);
	PERMUTE(r->pools, int32);
	PERMUTE(r->seed_rating, double);
	PERMUTE(r->seed_rd, double);
	PERMUTE(r->seed_volatility, double);
}

/*
 * Each row's side (side_of): 1 + the distinct side names of its match before
 * it in byte order (the match's names sorted once).  Returns the largest
 * match's row count.
 */
static int
NumberSides(const ReplayRows *r, int32 *side_of)
{
	int			max_size = 1;
	PlayerRow  *sorted = palloc(sizeof(PlayerRow) * Max(r->count, 1));

	for (int first = 0; first < r->count;)
	{
		int			end = first;
		int			side = 0;

		CHECK_FOR_INTERRUPTS();
		while (end < r->count && r->match_ids[end] == r->match_ids[first])
			end++;
		max_size = Max(max_size, end - first);
		for (int i = first; i < end; i++)
		{
			sorted[i].id = r->side_names[i];
			sorted[i].row = i;
		}
		qsort(sorted + first, end - first, sizeof(PlayerRow), ComparePlayerRows);
		for (int i = first; i < end; i++)
		{
			if (i == first || strcmp(sorted[i].id, sorted[i - 1].id) != 0)
				side++;
			side_of[sorted[i].row] = side;
		}
		first = end;
	}
	pfree(sorted);
	return max_size;
}

/*
 * Players numbered in the byte order of their ids (player_of per row,
 * distinct ids out), each at the initial values or their seed, in their
 * pool.
 */
static void
NumberPlayers(const ReplaySettings *s, const ReplayRows *r, int32 *player_of,
			  const char ***distinct_ids, ReplayPlayers *pl)
{
	PlayerRow  *sorted = palloc(sizeof(PlayerRow) * Max(r->count, 1));
	const char **ids = palloc(sizeof(char *) * Max(r->count, 1));
	int			count = 0;
	int			size;

	for (int i = 0; i < r->count; i++)
	{
		sorted[i].id = r->player_ids[i];
		sorted[i].row = i;
	}
	qsort(sorted, r->count, sizeof(PlayerRow), ComparePlayerRows);
	for (int i = 0; i < r->count; i++)
	{
		if (i == 0 || strcmp(sorted[i].id, sorted[i - 1].id) != 0)
			ids[count++] = sorted[i].id;
		player_of[sorted[i].row] = count - 1;
	}
	size = Max(count, 1);
	pl->count = count;
	pl->rating = palloc(sizeof(double) * size);
	pl->rd = palloc(sizeof(double) * size);
	pl->volatility = palloc(sizeof(double) * size);
	pl->games = palloc0(sizeof(int32) * size);
	pl->pool = palloc(sizeof(int32) * size);
	pl->seen = palloc0(sizeof(bool) * size);
	pl->sums = palloc0(sizeof(Glicko2Sums) * size);
	for (int p = 0; p < count; p++)
	{
		pl->rating[p] = s->initial_rating;
		pl->rd[p] = s->initial_rd;
		pl->volatility[p] = s->initial_volatility;
		pl->pool[p] = 1;
	}
	/* a player's seed: that of their first row with one (rows in replay order) */
	for (int i = 0; i < r->count; i++)
	{
		int			p = player_of[i];

		if (r->pools != NULL)
			pl->pool[p] = r->pools[i];
		if (pl->seen[p] || r->seed_rating == NULL || isnan(r->seed_rating[i]))
			continue;
		pl->seen[p] = true;
		pl->rating[p] = r->seed_rating[i];
		if (r->seed_rd != NULL && !isnan(r->seed_rd[i]))
			pl->rd[p] = r->seed_rd[i];
		if (r->seed_volatility != NULL && !isnan(r->seed_volatility[i]))
			pl->volatility[p] = r->seed_volatility[i];
	}
	/* seen means played in the replay: the flag only marked the seeded */
	memset(pl->seen, 0, sizeof(bool) * size);
	*distinct_ids = ids;
}

/* ----------------------------------------------------------------------
 * The SQL entry point
 * ----------------------------------------------------------------------
 */

/* The settings arguments (0 to 11), validated. */
static void
ReadSettings(FunctionCallInfo fcinfo, ReplaySettings *s)
{
	char	   *system = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int			count;

	if (strcmp(system, "glicko2") == 0)
		s->system = REPLAY_GLICKO2;
	else if (strcmp(system, "elo") == 0)
		s->system = REPLAY_ELO;
	else if (strcmp(system, "openskill") == 0)
		s->system = REPLAY_OPENSKILL;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("system must be \"elo\", \"glicko2\" or \"openskill\"")));
	s->tau = PG_GETARG_FLOAT8(1);
	s->k = PG_GETARG_FLOAT8(2);
	s->initial_rating = PG_GETARG_FLOAT8(3);
	s->initial_rd = PG_GETARG_FLOAT8(4);
	s->initial_volatility = PG_GETARG_FLOAT8(5);
	s->beta = PG_GETARG_FLOAT8(6);
	MmCheckPositive(s->tau, "tau");
	MmCheckFinite(s->k, "k");
	MmCheckFinite(s->initial_rating, "initial_rating");
	MmCheckPositive(s->initial_rd, "initial_rd");
	MmCheckPositive(s->initial_volatility, "initial_volatility");
	MmCheckPositive(s->beta, "beta");

	s->k_games = MmInt4Array(PG_GETARG_ARRAYTYPE_P(7), "k_games", 1000, &s->n_schedule);
	s->k_values = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(8), "k_values", 1000, true, &count);
	if (count != s->n_schedule)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("k_games and k_values must have the same length")));
	for (int i = 0; i < s->n_schedule; i++)
		MmCheckPositive(s->k_values[i], "k_values");

	s->reset_share = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(9), "reset_share", 100000, true, &s->n_resets);
	s->reset_rd = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(10), "reset_rd", 100000, true, &count);
	if (count != s->n_resets)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("reset_share, reset_rd and reset_target must have the same length")));
	s->reset_target = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(11), "reset_target", 100000, false, &count);
	if (count != s->n_resets)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("reset_share, reset_rd and reset_target must have the same length")));
	for (int i = 0; i < s->n_resets; i++)
		MmCheckUnitInterval(s->reset_share[i], "reset_share");
}

/* The row arguments (12 to 22), validated. */
static void
ReadRows(FunctionCallInfo fcinfo, const ReplaySettings *s, ReplayRows *r)
{
	int			n_players,
				n_sides,
				n_ranks,
				n_losses,
				count;

	r->match_ids = MmInt8Array(PG_GETARG_ARRAYTYPE_P(12), "match_ids", MM_REPLAY_MAX_ROWS, &r->count);
	r->player_ids = TextArrayStrings(PG_GETARG_ARRAYTYPE_P(13), "player_ids", &n_players);
	r->side_names = TextArrayStrings(PG_GETARG_ARRAYTYPE_P(14), "side_names", &n_sides);
	r->ranks = MmInt4Array(PG_GETARG_ARRAYTYPE_P(15), "ranks", MM_REPLAY_MAX_ROWS, &n_ranks);
	r->losses = MmInt4Array(PG_GETARG_ARRAYTYPE_P(16), "losses", MM_REPLAY_MAX_ROWS, &n_losses);
	if (n_players != r->count || n_sides != r->count || n_ranks != r->count || n_losses != r->count)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("match_ids, player_ids, side_names, ranks and losses must have the same length")));
	r->periods = MmInt8Array(PG_GETARG_ARRAYTYPE_P(17), "periods", MM_REPLAY_MAX_ROWS, &count);
	if (count == 0)
		r->periods = NULL;
	else
		CheckRowCount(count, r->count, "periods");
	if (r->periods != NULL && s->system != REPLAY_GLICKO2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rating periods are a Glicko-2 setting")));
	r->resets = OptionalInt4Rows(PG_GETARG_ARRAYTYPE_P(18), "resets", r->count);
	r->pools = OptionalInt4Rows(PG_GETARG_ARRAYTYPE_P(19), "pools", r->count);
	for (int i = 0; r->resets != NULL && i < r->count; i++)
		if (r->resets[i] < 0 || r->resets[i] > s->n_resets || (i > 0 && r->resets[i] < r->resets[i - 1]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("resets must rise from 0 to the number of resets")));
	for (int i = 0; r->pools != NULL && i < r->count; i++)
		if (r->pools[i] < 1 || r->pools[i] > r->count)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("pools must be numbered from 1")));
	r->seed_rating = OptionalFloat8Rows(PG_GETARG_ARRAYTYPE_P(20), "seed_ratings", r->count);
	r->seed_rd = OptionalFloat8Rows(PG_GETARG_ARRAYTYPE_P(21), "seed_rds", r->count);
	r->seed_volatility = OptionalFloat8Rows(PG_GETARG_ARRAYTYPE_P(22), "seed_volatilities", r->count);
	for (int i = 0; i < r->count; i++)
		if ((r->seed_rating != NULL && isinf(r->seed_rating[i])) ||
			(r->seed_rd != NULL && !isnan(r->seed_rd[i]) && !(r->seed_rd[i] > 0 && !isinf(r->seed_rd[i]))) ||
			(r->seed_volatility != NULL && !isnan(r->seed_volatility[i]) &&
			 !(r->seed_volatility[i] > 0 && !isinf(r->seed_volatility[i]))))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("seeds must be finite, deviations and volatilities above 0")));
}

/* Working arrays for matches of up to size rows. */
static void
AllocScratch(ReplayScratch *x, int size)
{
	int			n = size + 1;
	double	   *d = palloc(sizeof(double) * n * 25);
	int		   *k = palloc(sizeof(int) * n * 8);

	x->side_rating = d;
	x->side_rd = d + n;
	x->side_sigma_sq = d + 2 * n;
	x->probability = d + 3 * n;
	x->opp_rating = d + 4 * n;
	x->opp_rd = d + 5 * n;
	x->opp_score = d + 6 * n;
	x->mu = d + 7 * n;
	x->sigma = d + 8 * n;
	x->new_rating = d + 9 * n;
	x->new_rd = d + 10 * n;
	x->new_volatility = d + 11 * n;
	x->leaver_mu = d + 12 * n;
	x->leaver_sigma = d + 13 * n;
	x->work = d + 14 * n;		/* n + 10 * sides <= 11 n */
	x->side_count = k;
	x->side_rank = k + n;
	x->dense_rank = k + 2 * n;
	x->leaver_rank = k + 3 * n;
	x->team_of = k + 4 * n;
	x->iwork = k + 5 * n;		/* 2 * sides */
}

/* The replay's output arrays. */
typedef struct ReplayOutput
{
	int			count;
	int64	   *ids;
	double	   *prediction;
	double	   *outcome;
	bool	   *outcome_null;
} ReplayOutput;

/*
 * The replay proper: match after match in the given order, a rating period
 * closed when the next match belongs to a later one, the season resets due
 * before a match applied first.
 */
static void
ReplayAll(const ReplaySettings *s, const ReplayRows *r, const int32 *player_of,
		  const int32 *side_of, ReplayPlayers *pl, ReplayScratch *x, ReplayOutput *out)
{
	int			applied = 0;
	int64		period = r->periods != NULL && r->count > 0 ? r->periods[0] : 0;
	double	   *pool_sum = palloc(sizeof(double) * Max(r->count, 1));
	int		   *pool_count = palloc(sizeof(int) * Max(r->count, 1));

	for (int first = 0; first < r->count;)
	{
		int			end = first;
		ReplayMatch m;
		bool		skip = false;
		int			rank1 = 0,
					rank2 = 0;

		CHECK_FOR_INTERRUPTS();
		while (end < r->count && r->match_ids[end] == r->match_ids[first])
			end++;
		if (r->periods != NULL && r->periods[first] != period)
		{
			int64		gap;

			/* any bigints: a gap past the int64 range is as long as it can be */
			if (pg_sub_s64_overflow(r->periods[first], period, &gap))
				gap = r->periods[first] > period ? PG_INT64_MAX : PG_INT64_MIN + 1;
			ClosePeriod(s, pl, gap - 1);
			period = r->periods[first];
		}
		if (r->resets != NULL && r->resets[first] > applied)
		{
			/* a reset closes the running rating period */
			if (r->periods != NULL)
				ClosePeriod(s, pl, 0);
			while (applied < r->resets[first])
			{
				CHECK_FOR_INTERRUPTS();
				ApplyReset(s, pl, applied++, pool_sum, pool_count, r->count);
			}
		}
		m.n = end - first;
		m.nsides = 0;
		m.player = player_of + first;
		m.side = side_of + first;
		m.rank = r->ranks + first;
		m.loss = r->losses + first;
		for (int i = first; i < end; i++)
		{
			m.nsides = Max(m.nsides, side_of[i]);
			skip |= r->ranks[i] <= 0;
			if (side_of[i] == 1)
				rank1 = r->ranks[i];
			else if (side_of[i] == 2)
				rank2 = r->ranks[i];
		}
		/* as mm.report_result: no rating change with fewer than two sides */
		if (!skip && m.nsides >= 2)
		{
			out->ids[out->count] = r->match_ids[first];
			out->prediction[out->count] = ReplayOneMatch(s, &m, pl, x, r->periods != NULL);
			out->outcome_null[out->count] = m.nsides != 2;
			out->outcome[out->count] = rank1 < rank2 ? 1.0 : rank1 == rank2 ? 0.5 : 0.0;
			out->count++;
		}
		first = end;
	}
	if (r->periods != NULL)
		ClosePeriod(s, pl, 0);
}

/*
 * mm.replay_ratings_core(system, tau, k, initial_rating, initial_rd,
 * initial_volatility, beta, k_games, k_values, reset_share, reset_rd,
 * reset_target, match_ids, player_ids, side_names, ranks, losses, periods,
 * resets, pools, seed_ratings, seed_rds, seed_volatilities): the replay of
 * results given as player rows in replay order, each match's rows
 * consecutive (sorted here by player id); side_names is the row's team (a
 * player's own id in a free-for-all), ranks its side's rank (0 or less: the
 * match is skipped), losses 1 for a leaver scored as a loss.  The optional
 * per-row arrays (empty: none): the row's rating period (Glicko-2), the
 * number of season resets due before it, its pool number (the resets'
 * means), the player's seed (NaN: none).  Returns per replayed match its
 * id, side 1's prediction and outcome (1, 0.5, 0; NULL with more than two
 * sides), and per player (byte order of ids) the rating (OpenSkill: mu), rd
 * (sigma) and games after the last.  Internal to mm.replay_ratings.
 */
Datum
mm_replay_ratings_core(PG_FUNCTION_ARGS)
{
	ReplaySettings s;
	ReplayRows	r;
	ReplayPlayers pl;
	ReplayScratch x;
	ReplayOutput out;
	int32	   *player_of;
	int32	   *side_of;
	const char **distinct_ids;
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};
	int			dims[1];
	int			lbs[1] = {1};
	Datum	   *o;

	for (int a = 0; a < 23; a++)
		if (PG_ARGISNULL(a))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("replay_ratings_core arguments must not be null")));
	ReadSettings(fcinfo, &s);
	ReadRows(fcinfo, &s, &r);
	SortMatchRowsByPlayer(&r);

	player_of = palloc(sizeof(int32) * Max(r.count, 1));
	NumberPlayers(&s, &r, player_of, &distinct_ids, &pl);
	side_of = palloc(sizeof(int32) * Max(r.count, 1));
	AllocScratch(&x, NumberSides(&r, side_of));

	out.count = 0;
	out.ids = palloc(sizeof(int64) * Max(r.count, 1));
	out.prediction = palloc(sizeof(double) * Max(r.count, 1));
	out.outcome = palloc(sizeof(double) * Max(r.count, 1));
	out.outcome_null = palloc(sizeof(bool) * Max(r.count, 1));
	ReplayAll(&s, &r, player_of, side_of, &pl, &x, &out);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("replay_ratings_core must be called in a context that accepts a record")));
	tupdesc = BlessTupleDesc(tupdesc);
	values[0] = PointerGetDatum(MmBuildInt8Array(out.ids, out.count));
	values[1] = PointerGetDatum(MmBuildFloat8Array(out.prediction, out.count));
	o = palloc(sizeof(Datum) * Max(out.count, 1));
	for (int i = 0; i < out.count; i++)
		o[i] = Float8GetDatum(out.outcome[i]);
	dims[0] = out.count;
	values[2] = PointerGetDatum(construct_md_array(o, out.outcome_null, 1, dims, lbs, FLOAT8OID,
												   sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[3] = PointerGetDatum(MmBuildTextArray(distinct_ids, pl.count));
	values[4] = PointerGetDatum(MmBuildFloat8Array(pl.rating, pl.count));
	values[5] = PointerGetDatum(MmBuildFloat8Array(pl.rd, pl.count));
	values[6] = PointerGetDatum(MmBuildInt4Array(pl.games, pl.count));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
