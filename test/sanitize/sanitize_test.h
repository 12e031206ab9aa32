/*
 * Helpers shared by the sanitizer test programs: a seeded random generator,
 * failure reporting, and the command line (cases, seed).
 */
#ifndef MM_SANITIZE_TEST_H
#define MM_SANITIZE_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* xorshift64*: small, fast, the same everywhere */
static uint64_t test_rng = 0x9E3779B97F4A7C15ULL;

static inline void
TestSeed(uint64_t seed)
{
	test_rng = seed ? seed * 0x9E3779B97F4A7C15ULL : 0x9E3779B97F4A7C15ULL;
	if (test_rng == 0)
		test_rng = 1;
}

static inline uint64_t
Next64(void)
{
	test_rng ^= test_rng >> 12;
	test_rng ^= test_rng << 25;
	test_rng ^= test_rng >> 27;
	return test_rng * 0x2545F4914F6CDD1DULL;
}

/* 0 .. n-1 */
static inline int
RandInt(int n)
{
	return n <= 1 ? 0 : (int) (Next64() % (uint64_t) n);
}

/* lo .. hi inclusive */
static inline int
RandRange(int lo, int hi)
{
	return lo + RandInt(hi - lo + 1);
}

/* (0, 1) */
static inline double
Uniform(void)
{
	return ((Next64() >> 11) + 0.5) / 9007199254740992.0;
}

static inline double
Normal(double mu, double sd)
{
	return mu + sd * sqrt(-2 * log(Uniform())) * cos(2 * M_PI * Uniform());
}

static inline int
Chance(int one_in)
{
	return RandInt(one_in) == 0;
}

static long test_failures = 0;
static long test_checks = 0;
static const char *test_name = "test";

/* Reports a failed check with its context; stops after 20 failures. */
static void
TestFail(const char *file, int line, const char *fmt,...)
{
	va_list		args;

	test_failures++;
	if (test_failures <= 20)
	{
		fprintf(stdout, "FAIL %s:%d: ", file, line);
		va_start(args, fmt);
		vfprintf(stdout, fmt, args);
		va_end(args);
		fputc('\n', stdout);
	}
	if (test_failures == 20)
	{
		printf("%s: too many failures, stopping\n", test_name);
		fflush(stdout);
		exit(1);
	}
}

#define CHECK(cond, ...) \
	do { \
		test_checks++; \
		if (!(cond)) \
			TestFail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* argv: [cases] [seed]; MM_SANITIZE_SEED also sets the seed. */
static inline void
TestStart(const char *name, int argc, char **argv, long *cases, uint64_t *seed)
{
	const char *env = getenv("MM_SANITIZE_SEED");

	test_name = name;
	if (argc > 1)
		*cases = atol(argv[1]);
	if (argc > 2)
		*seed = strtoull(argv[2], NULL, 0);
	else if (env != NULL && *env != '\0')
		*seed = strtoull(env, NULL, 0);
	TestSeed(*seed);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline int
TestFinish(uint64_t seed, double started, const char *summary)
{
	double		seconds = (double) clock() / CLOCKS_PER_SEC - started;

	printf("%s: %s, %ld checks, %ld failed (seed %llu, %.1f s cpu)\n",
		   test_name, summary, test_checks, test_failures,
		   (unsigned long long) seed, seconds);
	return test_failures == 0 ? 0 : 1;
}

static inline double
CpuSeconds(void)
{
	return (double) clock() / CLOCKS_PER_SEC;
}

#endif							/* MM_SANITIZE_TEST_H */
