/*
 * test_ratings: the pure rating math of src/ratings_*.c (ratings.h, and the
 * static OpenSkill functions, by including ratings_openskill.c).
 *
 *   ./test_ratings [cases] [seed]
 *
 * Random realistic inputs check documented invariants and known values;
 * extreme inputs (0, huge, tiny, NaN and Infinity where the SQL wrappers
 * would refuse them) must not trip a sanitizer and must keep each function's
 * contract (finite where it promises, false or NaN where it says so).
 */
#include "ratings_openskill.c"

#include <float.h>
#include <limits.h>

#include "ratings.h"
#include "sanitize_test.h"

static bool
Close(double a, double b, double rel, double abs)
{
	return fabs(a - b) <= abs + rel * Max(fabs(a), fabs(b));
}

/* A value from a distribution of extremes. */
static double
Extreme(void)
{
	static const double values[] = {
		0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e-12, 1.0, -1.0, 1e6, -1e6, 1e12, -1e12,
		1e150, -1e150, 1e300, -1e300, DBL_MAX, -DBL_MAX
	};

	return values[RandInt(lengthof(values))];
}

/* ------------------------------------------------------------------------
 * Elo
 * ------------------------------------------------------------------------
 */
static void
TestElo(long cases)
{
	CHECK(MmEloExpected(1500, 1500) == 0.5, "MmEloExpected(1500, 1500) = %.17g", MmEloExpected(1500, 1500));
	CHECK(Close(MmEloExpected(1900, 1500), 10.0 / 11.0, 1e-15, 0), "MmEloExpected(+400) = %.17g",
		  MmEloExpected(1900, 1500));
	CHECK(MmEloUpdate(1500, 1500, 1, 32) == 1516, "MmEloUpdate(1500, 1500, win, 32) = %.17g",
		  MmEloUpdate(1500, 1500, 1, 32));
	CHECK(MmEloKFactor(0, 2500) == 40 && MmEloKFactor(29, 1000) == 40 && MmEloKFactor(30, 2401) == 16 &&
		  MmEloKFactor(30, 2400) == 32 && MmEloKFactor(INT_MAX, -1e300) == 32 && MmEloKFactor(INT_MIN, 3000) == 40,
		  "MmEloKFactor rules");

	for (long c = 0; c < cases; c++)
	{
		double		a = Normal(1500, 400),
					b = Normal(1500, 400),
					k = Uniform() * 64,
					s = RandInt(3) / 2.0;
		double		ea = MmEloExpected(a, b),
					eb = MmEloExpected(b, a);
		double		na = MmEloUpdate(a, b, s, k),
					nb = MmEloUpdate(b, a, 1 - s, k);

		CHECK(ea >= 0 && ea <= 1 && Close(ea + eb, 1.0, 1e-15, 0),
			  "Elo: E(%g,%g)=%.17g + E(%g,%g)=%.17g != 1", a, b, ea, b, a, eb);
		CHECK((a >= b) == (ea >= 0.5) || Close(ea, 0.5, 1e-15, 0), "Elo: the stronger expects less: %g %g %.17g", a, b, ea);
		/* zero sum, a win never lowers, a loss never raises */
		CHECK(Close(na - a, -(nb - b), 1e-9, 1e-9), "Elo: not zero-sum: %g %g %g %g -> %.17g %.17g",
			  a, b, s, k, na, nb);
		CHECK((s == 1 && na >= a) || (s == 0 && na <= a) || s == 0.5, "Elo: %g vs %g score %g: %.17g", a, b, s, na);
		CHECK(fabs(na - a) <= k, "Elo: a change beyond k");

		/* extremes: finite in, expected score in [0, 1], never NaN */
		a = Extreme();
		b = Extreme();
		ea = MmEloExpected(a, b);
		CHECK(ea >= 0 && ea <= 1, "MmEloExpected(%g, %g) = %g", a, b, ea);
		CHECK(Close(ea + MmEloExpected(b, a), 1.0, 1e-15, 0), "MmEloExpected(%g, %g) + reverse = %.17g", a, b,
			  ea + MmEloExpected(b, a));
		na = MmEloUpdate(a, b, s, Extreme() >= 0 ? fabs(Extreme()) : 0);
		CHECK(!isnan(na), "MmEloUpdate with extremes gave NaN (%g, %g)", a, b);
	}
	/* NaN and Infinity (refused by the wrappers): no undefined behaviour */
	(void) MmEloExpected(NAN, 1500);
	(void) MmEloExpected(INFINITY, -INFINITY);
	(void) MmEloUpdate(NAN, INFINITY, 1, NAN);
}

/* ------------------------------------------------------------------------
 * Glicko-2
 * ------------------------------------------------------------------------
 */
static void
TestGlicko2(long cases)
{
	/* Glickman's example (glicko2.pdf): 1500/200/0.06 vs three opponents */
	{
		Glicko2Rating p = {1500, 200, 0.06},
					r;
		double		opp[] = {1400, 1550, 1700},
					rd[] = {30, 100, 300},
					sc[] = {1, 0, 0};
		bool		ok = MmGlicko2Update(&p, opp, rd, sc, 3, 0.5, &r);

		CHECK(ok && fabs(r.rating - 1464.06) < 0.01 && fabs(r.rd - 151.52) < 0.01 &&
			  fabs(r.volatility - 0.05999) < 1e-5,
			  "Glickman's example: %d %.6f %.6f %.8f (want 1464.06 151.52 0.05999)",
			  ok, r.rating, r.rd, r.volatility);
	}

	for (long c = 0; c < cases; c++)
	{
		Glicko2Rating p,
					r,
					r2,
					d;
		int			n = RandInt(21);
		double		opp[20],
					rd[20],
					sc[20];
		double		tau = (double[]) {0.3, 0.5, 0.9, 1.2}[RandInt(4)];
		Glicko2Sums sums = {0, 0, 0},
					first = {0, 0, 0},
					second = {0, 0, 0};
		bool		all_win = n > 0,
					all_loss = n > 0,
					ok;
		int			periods = RandInt(4) == 0 ? 0 : RandInt(200);

		p.rating = Uniform() * 3000;
		p.rd = 30 + Uniform() * 320;
		p.volatility = 0.03 + Uniform() * 0.07;
		for (int i = 0; i < n; i++)
		{
			opp[i] = p.rating + Normal(0, 300);
			rd[i] = 30 + Uniform() * 320;
			sc[i] = RandInt(3) / 2.0;
			all_win = all_win && sc[i] == 1;
			all_loss = all_loss && sc[i] == 0;
			MmGlicko2AddGame(&p, opp[i], rd[i], sc[i], &sums);
			MmGlicko2AddGame(&p, opp[i], rd[i], sc[i], i % 2 ? &first : &second);
		}
		ok = MmGlicko2Update(&p, opp, rd, sc, n, tau, &r);
		CHECK(ok, "MmGlicko2Update refused realistic input %g/%g/%g, %d games", p.rating, p.rd, p.volatility, n);
		if (!ok)
			continue;
		CHECK(isfinite(r.rating) && r.rd > 0 && isfinite(r.rd) && r.volatility > 0 && isfinite(r.volatility),
			  "MmGlicko2Update: %g %g %g", r.rating, r.rd, r.volatility);
		/* RD after the period is at most phi* = sqrt(rd^2 + (sigma' scale)^2) */
		CHECK(r.rd <= sqrt(p.rd * p.rd + pow(r.volatility * GLICKO2_SCALE, 2)) * (1 + 1e-12),
			  "Glicko2: rd %g grew beyond phi* (rd %g, vol %g)", r.rd, p.rd, r.volatility);
		if (all_win)
			CHECK(r.rating >= p.rating, "Glicko2: all wins lowered %g to %g", p.rating, r.rating);
		if (all_loss)
			CHECK(r.rating <= p.rating, "Glicko2: all losses raised %g to %g", p.rating, r.rating);
		/* the sums game by game are the whole algorithm; partial sums combine */
		ok = MmGlicko2Finish(&p, &sums, tau, &r2);
		CHECK(ok && memcmp(&r, &r2, sizeof(r)) == 0, "MmGlicko2Finish(sums) differs from MmGlicko2Update");
		first.information += second.information;
		first.improvement += second.improvement;
		first.games += second.games;
		ok = MmGlicko2Finish(&p, &first, tau, &r2);
		/* the volatility is a root found to GLICKO2_EPSILON on its log scale */
		CHECK(ok && Close(r.rating, r2.rating, 1e-6, 1e-9) && Close(r.rd, r2.rd, 1e-6, 1e-9) &&
			  Close(r.volatility, r2.volatility, 10 * GLICKO2_EPSILON, 1e-12),
			  "Glicko2: combined partial sums give %.17g/%.17g/%.17g, not %.17g/%.17g/%.17g",
			  r2.rating, r2.rd, r2.volatility, r.rating, r.rd, r.volatility);
		if (n == 0)
			CHECK(r.rating == p.rating && r.volatility == p.volatility && r.rd >= p.rd,
				  "Glicko2: a period without games changed more than the rd");

		/* decay: rd grows, capped at GLICKO2_MAX_RD, never shrinks */
		ok = MmGlicko2Decay(&p, periods, &d);
		CHECK(ok && d.rating == p.rating && d.volatility == p.volatility && d.rd >= p.rd &&
			  d.rd <= Max(p.rd, GLICKO2_MAX_RD) && (periods > 0 || d.rd == p.rd),
			  "MmGlicko2Decay(%g/%g/%g, %d) = %d %g", p.rating, p.rd, p.volatility, periods, ok, d.rd);

		/* extremes: false, or finite with rd and volatility above 0 */
		{
			Glicko2Rating x = {Extreme(), fabs(Extreme()), fabs(Extreme())},
						y;
			int			m = RandInt(4);

			for (int i = 0; i < m; i++)
			{
				opp[i] = Extreme();
				rd[i] = fabs(Extreme());
				sc[i] = RandInt(3) / 2.0;
			}
			/*
			 * Without games only a finite rd is promised: rd and volatility
			 * near 1e-300 underflow to an rd of 0, which glicko2_update then
			 * returns although it refuses rd 0 as input (an inconsistency,
			 * not checked here).  With games MmGlicko2Finish promises rd and
			 * volatility above 0.
			 */
			if (x.rd > 0 && x.volatility > 0 && MmGlicko2Update(&x, opp, rd, sc, m, tau, &y))
				CHECK(isfinite(y.rating) && isfinite(y.rd) && isfinite(y.volatility) &&
					  (m == 0 || (y.rd > 0 && y.volatility > 0)),
					  "MmGlicko2Update(%g/%g/%g, %d games) accepted with %g/%g/%g",
					  x.rating, x.rd, x.volatility, m, y.rating, y.rd, y.volatility);
			if (MmGlicko2Decay(&x, RandInt(2) ? INT_MAX : RandInt(1000), &y))
				CHECK(isfinite(y.rd) && y.rd >= x.rd - 0.0, "MmGlicko2Decay(%g/%g/%g) = %g",
					  x.rating, x.rd, x.volatility, y.rd);
		}
	}
	/* NaN (refused by the wrappers): no undefined behaviour */
	{
		Glicko2Rating x = {NAN, NAN, NAN},
					y;
		double		o = NAN;

		(void) MmGlicko2Update(&x, &o, &o, &o, 1, NAN, &y);
		(void) MmGlicko2Decay(&x, INT_MAX, &y);
	}
}

/* ------------------------------------------------------------------------
 * Team win probability, smurf score, rating boost
 * ------------------------------------------------------------------------
 */
static void
TestTeamsAndSmurf(long cases)
{
	double		huge[2] = {DBL_MAX, DBL_MAX},
				one[1] = {1500};

	CHECK(isnan(MmTeamWinProbability(huge, 2, one, 1)), "MmTeamWinProbability: an overflowed mean is not NaN");

	for (long c = 0; c < cases; c++)
	{
		double		a[10],
					b[10];
		int			na = RandRange(1, 10),
					nb = RandRange(1, 10);
		double		p,
					q;

		for (int i = 0; i < na; i++)
			a[i] = RandInt(8) ? Normal(1500, 300) : Extreme() / 16;
		for (int i = 0; i < nb; i++)
			b[i] = RandInt(8) ? Normal(1500, 300) : Extreme() / 16;
		p = MmTeamWinProbability(a, na, b, nb);
		q = MmTeamWinProbability(b, nb, a, na);
		CHECK(p >= 0 && p <= 1 && Close(p + q, 1, 1e-15, 0), "MmTeamWinProbability %.17g + %.17g", p, q);
	}

	{
		double		flat[6] = {1500, 1501, 1499, 1500, 1502, 1500};
		SmurfEvidence all = {3, 0.9, 5.0, 0.6, flat, 6, true, 0.8};
		SmurfEvidence none = {100, 0.5, 1.0, 0.1, NULL, 0, false, 0};

		CHECK(MmSmurfScore(&all) == 1.0, "MmSmurfScore of every sign = %.17g", MmSmurfScore(&all));
		CHECK(MmSmurfScore(&none) == 0.0, "MmSmurfScore of no sign = %.17g", MmSmurfScore(&none));
	}
	for (long c = 0; c < cases; c++)
	{
		double		recent[40];
		SmurfEvidence e;
		double		s,
					s2;
		int			count = RandInt(41);
		double		base = RandInt(6) ? Normal(1500, 300) : Extreme();

		for (int i = 0; i < count; i++)
			recent[i] = RandInt(3) ? base + Normal(0, RandInt(2) ? 5 : 200) : base;
		e.games_played = RandInt(10) ? RandInt(60) : (RandInt(2) ? INT_MAX : 0);
		e.win_rate = Uniform();
		e.avg_kda = RandInt(10) ? Uniform() * 6 : fabs(Extreme());
		e.mvp_rate = Uniform();
		e.recent_ratings = count ? recent : NULL;
		e.recent_count = count;
		e.has_headshot_rate = RandInt(2);
		e.headshot_rate = e.has_headshot_rate ? Uniform() : 0;
		s = MmSmurfScore(&e);
		CHECK(s >= 0 && s <= 1, "MmSmurfScore %.17g outside [0, 1]", s);
		/* more suspicious evidence never lowers the score */
		e.win_rate = 1;
		e.mvp_rate = 1;
		e.avg_kda += 10;
		if (e.has_headshot_rate)
			e.headshot_rate = 1;
		s2 = MmSmurfScore(&e);
		CHECK(s2 >= s && s2 <= 1, "MmSmurfScore fell from %.17g to %.17g with stronger evidence", s, s2);

		{
			double		conf = Uniform();
			int			games = RandInt(20);
			double		boost = MmRatingBoost(conf, games);

			CHECK(boost == (conf > 0.8 ? 4.0 : conf > 0.6 ? 2.5 : games < 10 ? 2.0 : 1.0),
				  "MmRatingBoost(%g, %d) = %g", conf, games, boost);
			CHECK(MmRatingBoost(Min(1.0, conf + 0.1), games) >= boost, "MmRatingBoost not monotone");
		}
	}
}

/* ------------------------------------------------------------------------
 * OpenSkill (static functions of ratings_openskill.c)
 * ------------------------------------------------------------------------
 */

/* Omega and delta straight from the formula in OpenSkillTeamUpdates' comment: O(teams^2). */
static void
ReferenceUpdates(int teams, const int *rank, const double *mu, const double *sigma_sq,
				 double beta, double *omega, double *delta)
{
	double		c_sq = 0,
				c,
				top = -INFINITY;
	double		e[16];

	for (int t = 0; t < teams; t++)
		c_sq += sigma_sq[t] + beta * beta;
	c = sqrt(c_sq);
	for (int t = 0; t < teams; t++)
		top = Max(top, mu[t] / c);
	for (int t = 0; t < teams; t++)
		e[t] = exp(mu[t] / c - top);
	for (int i = 0; i < teams; i++)
	{
		double		om = 0,
					de = 0;

		for (int q = 0; q < teams; q++)
		{
			double		s = 0,
						share;
			int			a = 0;

			if (rank[q] > rank[i])
				continue;		/* only q ranked at or above i */
			for (int j = 0; j < teams; j++)
			{
				if (rank[j] >= rank[q])
					s += e[j];
				if (rank[j] == rank[q])
					a++;
			}
			share = e[i] / s;
			om += ((i == q ? 1.0 : 0.0) - share) / a;
			de += share * (1 - share) / a;
		}
		omega[i] = sigma_sq[i] / c * om;
		delta[i] = sqrt(sigma_sq[i]) / c * sigma_sq[i] / c_sq * de;
	}
}

static void
TestOpenSkill(long cases)
{
	for (long c = 0; c < cases; c++)
	{
		int			teams = RandRange(2, 8);
		int			rank[16];
		double		mu[16],
					sigma_sq[16],
					omega[16],
					delta[16],
					scratch[32],
					ref_omega[16],
					ref_delta[16];
		bool		extreme = RandInt(5) == 0;
		int			r = 1;

		/* ranks ascending with ties */
		for (int t = 0; t < teams; t++)
		{
			if (t > 0 && RandInt(4) != 0)
				r += RandRange(1, 2);
			rank[t] = r;
		}
		for (int t = 0; t < teams; t++)
		{
			int			players = RandRange(1, 5);

			mu[t] = 0;
			sigma_sq[t] = 0;
			for (int p = 0; p < players; p++)
			{
				double		m = extreme ? Extreme() / 8 : Normal(25, 8);
				double		s = extreme ? Max(1e-6, fabs(Extreme()) / 1e160) : 0.5 + Uniform() * 8;

				mu[t] += m;
				/* tau first, as mm_openskill_rate does */
				s = sqrt(s * s + OPENSKILL_TAU * OPENSKILL_TAU);
				sigma_sq[t] += s * s;
			}
			/* SumTeams refuses these: leave them out here too */
			if (!isfinite(mu[t]) || !isfinite(sigma_sq[t] + teams))
			{
				mu[t] = 25;
				sigma_sq[t] = 70;
			}
		}
		OpenSkillTeamUpdates(teams, rank, mu, sigma_sq, OPENSKILL_BETA, omega, delta, scratch);

		for (int t = 0; t < teams; t++)
		{
			double		new_mu,
						new_sigma,
						sigma = sqrt(sigma_sq[t]);

			CHECK(isfinite(omega[t]) && isfinite(delta[t]),
				  "OpenSkill: team %d of %d (mu %g, sigma^2 %g) gets omega %g delta %g",
				  t, teams, mu[t], sigma_sq[t], omega[t], delta[t]);
			CHECK(delta[t] >= -1e-12 * fabs(sigma_sq[t]), "OpenSkill: negative delta %g", delta[t]);
			OpenSkillApply(mu[t], sigma, sigma_sq[t], omega[t], delta[t], OPENSKILL_KAPPA,
						   &new_mu, &new_sigma);
			CHECK(isfinite(new_mu) && new_sigma > 0 && new_sigma <= sigma * (1 + 1e-15) &&
				  new_sigma >= sigma * sqrt(OPENSKILL_KAPPA) * (1 - 1e-15),
				  "OpenSkillApply(%g, %g): %g %g", mu[t], sigma, new_mu, new_sigma);
		}
		/*
		 * An outright winner never loses, an outright loser never gains
		 * (strictly, unless an extreme mu makes the result certain).
		 */
		if (rank[1] != rank[0])
			CHECK(extreme ? omega[0] >= 0 : omega[0] > 0, "OpenSkill: the winner's omega %g", omega[0]);
		if (rank[teams - 2] != rank[teams - 1])
			CHECK(extreme ? omega[teams - 1] <= 0 : omega[teams - 1] < 0,
				  "OpenSkill: the last team's omega %g", omega[teams - 1]);

		if (!extreme)
		{
			ReferenceUpdates(teams, rank, mu, sigma_sq, OPENSKILL_BETA, ref_omega, ref_delta);
			for (int t = 0; t < teams; t++)
				CHECK(Close(omega[t], ref_omega[t], 1e-9, 1e-12) && Close(delta[t], ref_delta[t], 1e-9, 1e-12),
					  "OpenSkill: team %d of %d: omega %.17g delta %.17g, the formula gives %.17g %.17g",
					  t, teams, omega[t], delta[t], ref_omega[t], ref_delta[t]);
		}

		/* predict_win: probabilities in [0, 1] summing to 1 */
		{
			double		sum = 0;

			for (int t = 0; t < teams; t++)
			{
				double		p = OpenSkillWinProbability(t, teams, mu, sigma_sq, OPENSKILL_BETA);

				CHECK(p >= 0 && p <= 1, "OpenSkillWinProbability %g", p);
				sum += p;
			}
			CHECK(Close(sum, 1, 1e-12, 0), "OpenSkillWinProbability: the teams sum to %.17g", sum);
		}
	}
	CHECK(Close(LogAddExp(1e300, 1e300), 1e300, 1e-15, 0) && LogAddExp(-1e300, 0) == 0 &&
		  Close(LogAddExp(0, 0), M_LN2, 1e-15, 0), "LogAddExp");
}

int
main(int argc, char **argv)
{
	long		cases = 20000;
	uint64_t	seed = 1;
	double		started = CpuSeconds();
	char		summary[200];

	TestStart("test_ratings", argc, argv, &cases, &seed);
	TestElo(cases);
	TestGlicko2(cases / 4);
	TestTeamsAndSmurf(cases);
	TestOpenSkill(cases);
	snprintf(summary, sizeof(summary), "Elo, Glicko-2, team, smurf and OpenSkill math, %ld cases each", cases);
	return TestFinish(seed, started, summary);
}
