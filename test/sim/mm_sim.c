/*
 * mm_sim.c
 *	  The matchmaking simulator: players arrive, queue, get matched by the
 *	  extension, accept their match where the queue asks for it, play (a game
 *	  server assigned, some quitting early), have the result reported and
 *	  their ratings updated from the outcome, and come back for another game.
 *	  A player in a live match cannot queue again: every game the simulator
 *	  plays ends with its result (mm.report_result) before its players return.
 *
 * Two clocks.  Simulated time (the default) calls mm.tick(queue, now) itself
 * with an explicit `now`, so an hour of traffic runs in seconds.  Real time
 * (--realtime) inserts tickets as the wall clock passes and leaves the
 * ticking to pg_cron (mm.schedule), or to itself with --self-tick.
 *
 * --flexmatch replays the benchmark of Amazon GameLift FlexMatch's article
 * (Radiant vs Dire in three modes, one queue each; with --rule-sets also
 * the multi-mode "All" rule set in a fourth queue) and prints our figures
 * beside the published ones.  Everything random comes from one seeded
 * generator, so a run is reproducible with --seed.
 *
 *   mm_sim --flexmatch --seed 1                      # the replay, simulated time
 *   mm_sim --flexmatch --rule-sets classic,survival,practice,all
 *   mm_sim --realtime --queues ranked_5v5,casual --seconds 60
 *   mm_sim --roles --acceptance-timeout 0            # a 5v5 role queue, with and without autofill
 *   mm_sim --penalties                               # dodgers, leavers and the low-priority pool
 *
 * All figures are read back from the extension's tables at the end; the
 * simulator's own state lives in schema mm_sim (players: true skill and
 * stored rating).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

const char *const sim_region_names[SIM_REGIONS] = {"eu-west", "us-east", "ap-south"};

/* 2026-01-01 00:00:00 UTC: simulated time starts here, so runs are repeatable. */
#define SIM_DEFAULT_EPOCH 1767225600.0

typedef enum SimClock
{
	SIM_CLOCK_SIMULATED,
	SIM_CLOCK_REAL
} SimClock;

typedef enum PlayerState
{
	PLAYER_IDLE,
	PLAYER_SEARCHING,
	PLAYER_PLAYING
} PlayerState;

typedef struct SimPlayer
{
	double		true_skill;		/* decides outcomes; never shown to the matchmaker */
	double		rating;			/* stored rating (mm_sim.players), sent as "skill" */
	double		rd;
	double		volatility;
	double		latency[SIM_REGIONS];
	double		ready_at;		/* idle players rejoin a queue from this time on */
	PlayerState state;
	bool		stored;			/* has its row in mm_sim.players (a refused ticket inserts none) */
	/* role queues: the roles the player lists, most preferred first (SIM_ROLE_*) */
	int			nroles;			/* 0: not drawn yet (drawn on their first role-queue ticket) */
	signed char roles[4];
} SimPlayer;

/* The roles of the role queues (--roles), and "fill" (any role) as the last element of a list. */
#define SIM_ROLE_TANK 0
#define SIM_ROLE_HEALER 1
#define SIM_ROLE_DPS 2
#define SIM_ROLE_FILL 3
static const char *const role_names[] = {"tank", "healer", "dps", "fill"};

/* A ticket still searching or proposed (as far as the simulator knows). */
typedef struct SimTicket
{
	long long	id;
	int			queue;
	int			nplayers;
	int			players[SIM_MAX_PARTY];
	long long	proposal;		/* the last proposed match it was seen in, 0 if none */
} SimTicket;

/*
 * A proposed match waiting for its players' answers (queues with
 * "acceptance_timeout_seconds").  Each of our players accepts with
 * probability --accept-rate, after 1 to 5 seconds (never after the
 * deadline); one who does not accept rejects at that time (half of them) or
 * never answers (the other half: the tick's timeout ends the proposal).
 * With --dodge-rate (--penalties) a player first rejects with that
 * probability (a dodge), else accepts with --accept-rate, else never answers.
 */
typedef struct SimProposal
{
	long long	match_id;
	double		deadline;
	int			n;
	int		   *player;			/* index into players */
	double	   *answer_at;		/* < 0: never answers */
	bool	   *accept;
	bool	   *answered;
} SimProposal;

/* A match being played; resolved at `end`. */
typedef struct SimGame
{
	long long	match_id;
	int			queue;
	double		start;
	double		end;
	double		quality;
	int			n;
	int		   *player;			/* index into players, -1 for someone not ours */
	int		   *team;			/* index into team_names */
	double	   *leave_at;		/* an early quit at this time (mm.leave_match), or < 0 */
	bool	   *left;
	int			nteams;
	char	  **team_names;
} SimGame;

typedef struct SimOptions
{
	const char *conninfo;
	SimClock	clock;
	bool		flexmatch;
	bool		roles;			/* the role queues: roles_5v5 and roles_5v5_autofill */
	bool		penalties;		/* the penalties queue: penalties_3v3 */
	double		dodge_rate;		/* a player rejects a proposal (a dodge); < 0: the old model */
	double		role_second;	/* --roles: share of players who name a second role */
	const char *rule_sets;		/* --flexmatch: which of classic,survival,practice,all */
	const char *queue_list;
	const char *prefix;
	double		seconds;		/* arrivals stop after this long (if > 0) */
	int			tickets;		/* or after this many tickets per queue (if > 0) */
	double		interval_min;
	double		interval_max;
	int			party_min;
	int			party_max;
	double		match_seconds;
	double		break_min;
	double		break_max;
	double		leave_rate;
	double		accept_rate;
	double		acceptance_timeout;	/* --flexmatch queues: seconds, 0 = no acceptance */
	double		tick_interval;
	double		drain_seconds;
	bool		self_tick;
	uint64_t	seed;
	const char *run;
	const char *chart;
	bool		quiet;
} SimOptions;

/* Which rating function feeds outcomes back (detected at start). */
typedef enum RatingMethod
{
	RATING_NONE,
	RATING_GLICKO2,
	RATING_ELO
} RatingMethod;

static SimOptions opt;
static PGconn *conn;
static SimQueue queues[SIM_MAX_QUEUES];
static int	nqueues;
static SimPlayer *players;
static int	nplayers;
static int	players_cap;
static int *idle;				/* indices of idle players, oldest first */
static int	nidle;
static SimTicket *tickets;
static int	ntickets;
static int	tickets_cap;
static SimGame *games;
static int	ngames;
static int	games_cap;
static SimProposal *proposals;
static int	nproposals;
static int	proposals_cap;
static RatingMethod rating_method;
static bool have_match_results;
static bool have_lifecycle;		/* 0.3: mm.complete_match, mm.leave_match, mm.accept_match, mm.assign */
static bool have_report_result; /* mm.report_result: completes the match and records the result */
static bool need_poll;			/* an answer settled a proposal: read the tickets back now */
static double epoch;			/* unix time of simulation second 0 */
static volatile sig_atomic_t interrupted;

/* running counters for the progress line */
static long stat_tickets;
static long stat_matched;
static long stat_timed_out;
static long stat_matches;
static long stat_results;
static double stat_wait_sum;
static long stat_leavers;
static long stat_proposals;
static long stat_proposals_failed;
static long stat_refused;
static double run_end;			/* simulation second the run ended at */

/* ---------------------------------------------------------------- random */

static uint64_t rng_state[4];

/* splitmix64: expands the seed into the xoshiro state. */
static uint64_t
SplitMix64(uint64_t *x)
{
	uint64_t	z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Seeds the generator: the whole run follows from this one number. */
static void
RandomSeed(uint64_t seed)
{
	int			i;

	for (i = 0; i < 4; i++)
		rng_state[i] = SplitMix64(&seed);
}

/* Rotates left (xoshiro's mixing step). */
static uint64_t
Rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256**: the same sequence on every platform for a given seed. */
static uint64_t
RandomNext(void)
{
	uint64_t	result = Rotl(rng_state[1] * 5, 7) * 9;
	uint64_t	t = rng_state[1] << 17;

	rng_state[2] ^= rng_state[0];
	rng_state[3] ^= rng_state[1];
	rng_state[1] ^= rng_state[2];
	rng_state[0] ^= rng_state[3];
	rng_state[2] ^= t;
	rng_state[3] = Rotl(rng_state[3], 45);
	return result;
}

/* Uniform in [0, 1). */
static double
RandomUniform(void)
{
	return (RandomNext() >> 11) * 0x1.0p-53;
}

/* Uniform in [lo, hi). */
static double
RandomBetween(double lo, double hi)
{
	return lo + (hi - lo) * RandomUniform();
}

/* Uniform integer in [lo, hi]. */
static int
RandomInt(int lo, int hi)
{
	return lo + (int) (RandomUniform() * (hi - lo + 1));
}

/* Normal by Box-Muller (one value per call keeps the sequence simple). */
static double
RandomNormal(double mean, double sd)
{
	double		u1 = 1.0 - RandomUniform();
	double		u2 = RandomUniform();

	return mean + sd * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* ----------------------------------------------------------------- clock */

/* Seconds since the epoch, with microseconds. */
static double
WallClock(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* Sleeps, resuming after signals unless Ctrl-C asked to stop. */
static void
SleepSeconds(double seconds)
{
	struct timespec ts;

	if (seconds <= 0)
		return;
	ts.tv_sec = (time_t) seconds;
	ts.tv_nsec = (long) ((seconds - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !interrupted)
		;
}

/* Ctrl-C or SIGTERM: stop arrivals, finish the games, print the figures. */
static void
OnSignal(int signo)
{
	(void) signo;
	interrupted = 1;
}

/* -------------------------------------------------------------- helpers */

/* Makes room for `need` elements, doubling the capacity. */
static void *
GrowArray(void *array, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return array;
	*cap = need < 16 ? 16 : need * 2;
	array = realloc(array, (size_t) *cap * elem);
	if (array == NULL)
		SimFatal("out of memory");
	return array;
}

/* strdup that cannot return NULL. */
static char *
StrDup(const char *s)
{
	char	   *copy = strdup(s);

	if (copy == NULL)
		SimFatal("out of memory");
	return copy;
}

/* Formats a simulation time as the unix epoch text the SQL turns into timestamptz. */
static void
FormatTime(char *buf, size_t size, double t)
{
	snprintf(buf, size, "%.6f", epoch + t);
}

/* The simulator's player ids are "<run>-<index>"; returns -1 for anyone else's. */
static int
PlayerIndexFromId(const char *id)
{
	size_t		runlen = strlen(opt.run);
	char	   *end;
	long		index;

	if (strncmp(id, opt.run, runlen) != 0 || id[runlen] != '-')
		return -1;
	index = strtol(id + runlen + 1, &end, 10);
	if (*end != '\0' || index < 0 || index >= nplayers)
		return -1;
	return (int) index;
}

/* ---------------------------------------------------------------- queues */

/*
 * The FlexMatch article's rule set, one queue per mode.  FlexMatch's
 * "distance" rule keeps each team's average skill within 20 of the match
 * average; with two teams of equal size that is the same as the two team
 * averages being within 40 of each other, which is what our
 * team_difference rule measures (and 200 -> 400, 1000 -> 2000).  Expansion
 * steps apply once the oldest ticket is (k+1) * every_seconds old: skill at
 * 20 s and 40 s, latency 120 from 30 s and 2000 from 120 s.  The benchmark
 * asks the players to accept their match (10 s, --acceptance-timeout).  With
 * mm.report_result the queues rate their players (Glicko-2, one pool), so
 * each result carries the stored ratings' predicted favourite.
 */
static const char *
FlexMatchConfig(int team_min, int team_max)
{
	static char config[2048];
	char		acceptance[64] = "";
	char		rating[160] = "";

	/* results (mm.report_result) rate the players in one pool, which predicts the favourite */
	if (have_report_result)
		snprintf(rating, sizeof(rating), " \"rating\": {\"system\": \"glicko2\", \"pool\": \"%sranked\"},",
				 opt.prefix);
	if (opt.acceptance_timeout > 0)
		snprintf(acceptance, sizeof(acceptance), " \"acceptance_timeout_seconds\": %g,",
				 opt.acceptance_timeout);
	snprintf(config, sizeof(config),
			 "{\"match_size\": {\"min\": %d, \"max\": %d},%s"
			 " \"teams\": [{\"name\": \"radiant\", \"min\": %d, \"max\": %d},"
			 "             {\"name\": \"dire\", \"min\": %d, \"max\": %d}],"
			 " \"ticket_timeout_seconds\": 120,%s"
			 " \"rules\": ["
			 "  {\"name\": \"equal_teams\", \"type\": \"team_size_balance\", \"max_difference\": 0},"
			 "  {\"name\": \"fair_teams\", \"type\": \"team_difference\", \"attribute\": \"skill\","
			 "   \"max\": 40, \"expansion\": {\"every_seconds\": 20, \"steps\": [400, 2000]}},"
			 "  {\"name\": \"fast_connection\", \"type\": \"latency\", \"max_ms\": 80,"
			 "   \"expansion\": {\"every_seconds\": 30, \"steps\": [120, 120, 120, 2000]}}]}",
			 2 * team_min, 2 * team_max, acceptance, team_min, team_max, team_min, team_max,
			 rating);
	return config;
}

/*
 * FlexMatch's "All" multi-mode rule set, in one queue: every ticket lists the
 * game modes its party will play ("modes": ["classic", "practice"], a list
 * of strings), and a compound rule accepts a match when it is a valid match
 * of one mode that every player listed:
 *
 *   or(and(mode_classic, size_classic), and(mode_survival, size_survival),
 *      and(mode_practice, size_practice))
 *
 * mode_<m> is a comparison "contains" on the list (FlexMatch's collection
 * "contains"): every player listed the mode; size_<m> is a match_total of one per
 * player (attribute headcount, never sent: default 1) within the mode's
 * match size, 2 x the team bounds.  The rules that are the same in the three
 * single-mode queues (equal teams, fair teams with their expansion, latency
 * with its expansion, the 120 s timeout) apply to every mode as they are;
 * team_difference and team_size_balance cannot sit in a compound anyway.
 * shared_mode, a set_intersection on the list (at least one mode in common),
 * is implied by the compound and lets the search drop a candidate that
 * shares no mode with the match as soon as it is tried.  Teams: 1 to 8 a
 * side (the union of the modes).
 */
static const char *
FlexMatchAllConfig(void)
{
	static char config[4096];
	char		acceptance[64] = "";
	char		rating[160] = "";

	if (have_report_result)
		snprintf(rating, sizeof(rating), " \"rating\": {\"system\": \"glicko2\", \"pool\": \"%sranked\"},",
				 opt.prefix);
	if (opt.acceptance_timeout > 0)
		snprintf(acceptance, sizeof(acceptance), " \"acceptance_timeout_seconds\": %g,",
				 opt.acceptance_timeout);
	snprintf(config, sizeof(config),
			 "{\"match_size\": {\"min\": 2, \"max\": 16},%s"
			 " \"teams\": [{\"name\": \"radiant\", \"min\": 1, \"max\": 8},"
			 "             {\"name\": \"dire\", \"min\": 1, \"max\": 8}],"
			 " \"ticket_timeout_seconds\": 120,%s"
			 " \"rules\": ["
			 "  {\"name\": \"equal_teams\", \"type\": \"team_size_balance\", \"max_difference\": 0},"
			 "  {\"name\": \"fair_teams\", \"type\": \"team_difference\", \"attribute\": \"skill\","
			 "   \"max\": 40, \"expansion\": {\"every_seconds\": 20, \"steps\": [400, 2000]}},"
			 "  {\"name\": \"fast_connection\", \"type\": \"latency\", \"max_ms\": 80,"
			 "   \"expansion\": {\"every_seconds\": 30, \"steps\": [120, 120, 120, 2000]}},"
			 "  {\"name\": \"shared_mode\", \"type\": \"set_intersection\", \"attribute\": \"modes\", \"min_size\": 1},"
			 "  {\"name\": \"mode_classic\", \"type\": \"comparison\", \"attribute\": \"modes\","
			 "   \"operator\": \"contains\", \"reference\": \"classic\"},"
			 "  {\"name\": \"mode_survival\", \"type\": \"comparison\", \"attribute\": \"modes\","
			 "   \"operator\": \"contains\", \"reference\": \"survival\"},"
			 "  {\"name\": \"mode_practice\", \"type\": \"comparison\", \"attribute\": \"modes\","
			 "   \"operator\": \"contains\", \"reference\": \"practice\"},"
			 "  {\"name\": \"size_classic\", \"type\": \"match_total\", \"attribute\": \"headcount\","
			 "   \"default\": 1, \"min\": 8, \"max\": 12},"
			 "  {\"name\": \"size_survival\", \"type\": \"match_total\", \"attribute\": \"headcount\","
			 "   \"default\": 1, \"min\": 2, \"max\": 6},"
			 "  {\"name\": \"size_practice\", \"type\": \"match_total\", \"attribute\": \"headcount\","
			 "   \"default\": 1, \"min\": 4, \"max\": 16},"
			 "  {\"name\": \"modes\", \"type\": \"compound\", \"statement\":"
			 "   \"or(and(mode_classic, size_classic), and(mode_survival, size_survival),"
			 " and(mode_practice, size_practice))\"}]}",
			 acceptance, rating);
	return config;
}

/* Adds a queue to feed, with no published figures. */
static SimQueue *
AddQueue(const char *name)
{
	SimQueue   *q;

	if (nqueues >= SIM_MAX_QUEUES)
		SimFatal("too many queues (at most %d)", SIM_MAX_QUEUES);
	if (strlen(name) == 0 || strlen(name) > 64)
		SimFatal("bad queue name \"%s\"", name);
	q = &queues[nqueues++];
	memset(q, 0, sizeof(*q));
	strcpy(q->name, name);
	q->published_completed = q->published_failed = q->published_avg_seconds = -1;
	return q;
}

/*
 * Creates (or re-creates) the FlexMatch queues of --rule-sets: one per mode
 * (classic, survival, practice) and the multi-mode "all".  The published
 * figures are those the repository cites (docs/demo-and-simulator.md);
 * none for "all".
 */
static void
CreateFlexMatchQueues(void)
{
	static const struct
	{
		const char *mode;
		int			team_min;	/* 0: the multi-mode queue */
		int			team_max;
		double		completed;
		double		failed;
		double		avg_seconds;
	}			modes[] = {
		{"classic", 4, 6, 829, 11, 17.1},
		{"survival", 1, 3, -1, -1, 14.1},
		{"practice", 2, 8, -1, -1, 16.7},
		{"all", 0, 0, -1, -1, -1},
	};
	char	   *list = StrDup(opt.rule_sets);
	char	   *save = NULL;
	char	   *set;
	int			i,
				k;

	for (set = strtok_r(list, ",", &save); set; set = strtok_r(NULL, ",", &save))
	{
		char		name[160];
		const char *params[2];
		SimQueue   *q;

		for (i = 0; i < (int) (sizeof(modes) / sizeof(modes[0])); i++)
			if (strcmp(set, modes[i].mode) == 0)
				break;
		if (i == (int) (sizeof(modes) / sizeof(modes[0])))
			SimFatal("--rule-sets: unknown rule set \"%s\" (classic, survival, practice, all)", set);
		if (strlen(opt.prefix) + strlen(modes[i].mode) > 64)
			SimFatal("--prefix: \"%s\" is too long (queue names have at most 64 characters)",
					 opt.prefix);
		snprintf(name, sizeof(name), "%s%s", opt.prefix, modes[i].mode);
		for (k = 0; k < nqueues; k++)
			if (strcmp(queues[k].name, name) == 0)
				SimFatal("--rule-sets: \"%s\" is listed twice", set);
		params[0] = name;
		params[1] = modes[i].team_min > 0 ? FlexMatchConfig(modes[i].team_min, modes[i].team_max)
			: FlexMatchAllConfig();
		/* a fresh queue each run: earlier runs' tickets would skew the figures */
		PQclear(SimExec(conn, "SELECT mm.drop_queue(q.name, force => true)"
						"  FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) $1",
						1, params, PGRES_TUPLES_OK));
		PQclear(SimExec(conn, "SELECT mm.create_queue($1, $2::jsonb)", 2, params,
						PGRES_TUPLES_OK));
		q = AddQueue(name);
		q->multi_mode = modes[i].team_min == 0;
		q->published_completed = modes[i].completed;
		q->published_failed = modes[i].failed;
		q->published_avg_seconds = modes[i].avg_seconds;
	}
	free(list);
}

/*
 * The role queue (--roles): FlexMatch's Classic rules at 5v5 (fair teams and
 * latency with their expansions, 120 s timeout, acceptance as
 * --acceptance-timeout says), each team one tank, one healer and three dps.
 * With `autofill`, a ticket that waited 60 s may be given a role outside its
 * list, and a player autofilled is not autofilled again within 3 games.
 */
static const char *
RoleQueueConfig(bool autofill)
{
	static char config[2048];
	char		acceptance[64] = "";
	char		rating[160] = "";

	if (have_report_result)
		snprintf(rating, sizeof(rating), " \"rating\": {\"system\": \"glicko2\", \"pool\": \"roles_ranked\"},");
	if (opt.acceptance_timeout > 0)
		snprintf(acceptance, sizeof(acceptance), " \"acceptance_timeout_seconds\": %g,",
				 opt.acceptance_timeout);
	snprintf(config, sizeof(config),
			 "{\"match_size\": {\"min\": 10, \"max\": 10},%s"
			 " \"teams\": [{\"name\": \"radiant\", \"min\": 5, \"max\": 5,"
			 "              \"roles\": {\"tank\": 1, \"healer\": 1, \"dps\": 3}},"
			 "             {\"name\": \"dire\", \"min\": 5, \"max\": 5,"
			 "              \"roles\": {\"tank\": 1, \"healer\": 1, \"dps\": 3}}],"
			 " \"ticket_timeout_seconds\": 120,%s%s"
			 " \"rules\": ["
			 "  {\"name\": \"fair_teams\", \"type\": \"team_difference\", \"attribute\": \"skill\","
			 "   \"max\": 40, \"expansion\": {\"every_seconds\": 20, \"steps\": [400, 2000]}},"
			 "  {\"name\": \"fast_connection\", \"type\": \"latency\", \"max_ms\": 80,"
			 "   \"expansion\": {\"every_seconds\": 30, \"steps\": [120, 120, 120, 2000]}}]}",
			 acceptance, rating,
			 autofill ? " \"autofill\": {\"after_seconds\": 60, \"protect_games\": 3}," : "");
	return config;
}

/*
 * Creates (or re-creates) the two role queues: roles_5v5 without autofill,
 * roles_5v5_autofill with it.  Each gets its own arrivals; the players are
 * shared, and keep their role preferences from ticket to ticket.
 */
static void
CreateRoleQueues(void)
{
	static const char *const names[] = {"roles_5v5", "roles_5v5_autofill"};
	int			i;

	for (i = 0; i < 2; i++)
	{
		const char *params[2];
		SimQueue   *q;

		params[0] = names[i];
		params[1] = RoleQueueConfig(i == 1);
		PQclear(SimExec(conn, "SELECT mm.drop_queue(q.name, force => true)"
						"  FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) $1",
						1, params, PGRES_TUPLES_OK));
		PQclear(SimExec(conn, "SELECT mm.create_queue($1, $2::jsonb)", 2, params,
						PGRES_TUPLES_OK));
		q = AddQueue(names[i]);
		q->roles = true;
	}
}

/*
 * The penalties queue (--penalties): FlexMatch's Classic rules at 3v3, fed
 * solo players unless --party says otherwise (parties that need others to
 * fill a team pile up, and their waits would hide the pool's), with
 * acceptance (--acceptance-timeout), Glicko-2 ratings (mm.report_result
 * counts the good games) and the penalties of docs/penalties.md: a dodge
 * costs 60 s, an acceptance timeout 30 s, a leave 300 s, doubled at each
 * offence up to an hour; from the second offence 3 games in the
 * low-priority pool, which holds a ticket for at most 120 s; 5 good games
 * forgive an offence.  Tickets time out after 300 s, well past that bound,
 * so a starving penalised ticket would show as a long wait, not vanish.
 */
static const char *
PenaltiesQueueConfig(void)
{
	static char config[2048];
	char		acceptance[64] = "";
	char		rating[160] = "";

	if (have_report_result)
		snprintf(rating, sizeof(rating), " \"rating\": {\"system\": \"glicko2\", \"pool\": \"penalties_ranked\"},");
	if (opt.acceptance_timeout > 0)
		snprintf(acceptance, sizeof(acceptance), " \"acceptance_timeout_seconds\": %g,",
				 opt.acceptance_timeout);
	snprintf(config, sizeof(config),
			 "{\"match_size\": {\"min\": 6, \"max\": 6},%s"
			 " \"teams\": [{\"name\": \"radiant\", \"min\": 3, \"max\": 3},"
			 "             {\"name\": \"dire\", \"min\": 3, \"max\": 3}],"
			 " \"ticket_timeout_seconds\": 300,%s"
			 " \"penalties\": {\"cooldown_seconds\": {\"dodge\": 60, \"acceptance_timeout\": 30, \"leave\": 300},"
			 "               \"cooldown_growth\": 2, \"max_cooldown_seconds\": 3600,"
			 "               \"low_priority\": {\"offences\": 2, \"games\": 3, \"max_wait_seconds\": 120},"
			 "               \"forgive_after_games\": 5},"
			 " \"rules\": ["
			 "  {\"name\": \"fair_teams\", \"type\": \"team_difference\", \"attribute\": \"skill\","
			 "   \"max\": 40, \"expansion\": {\"every_seconds\": 20, \"steps\": [400, 2000]}},"
			 "  {\"name\": \"fast_connection\", \"type\": \"latency\", \"max_ms\": 80,"
			 "   \"expansion\": {\"every_seconds\": 30, \"steps\": [120, 120, 120, 2000]}}]}",
			 acceptance, rating);
	return config;
}

/*
 * Creates (or re-creates) the penalties queue, penalties_3v3.  The players'
 * standing in a queue of that name outlives the queue (mm.drop_queue keeps
 * mm.player_penalties), so it goes too: each run starts with a clean slate.
 */
static void
CreatePenaltiesQueue(void)
{
	const char *params[2];
	SimQueue   *q;

	if (!SimFunctionExists(conn, "mm.get_penalties(text,timestamptz)"))
		SimFatal("--penalties: this version of the extension has no penalties (mm.get_penalties)");
	params[0] = "penalties_3v3";
	params[1] = PenaltiesQueueConfig();
	PQclear(SimExec(conn, "SELECT mm.drop_queue(q.name, force => true)"
					"  FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) $1",
					1, params, PGRES_TUPLES_OK));
	PQclear(SimExec(conn, "DELETE FROM mm.player_penalties WHERE queue OPERATOR(pg_catalog.=) $1",
					1, params, PGRES_COMMAND_OK));
	PQclear(SimExec(conn, "DELETE FROM mm.penalty_history WHERE queue OPERATOR(pg_catalog.=) $1",
					1, params, PGRES_COMMAND_OK));
	PQclear(SimExec(conn, "SELECT mm.create_queue($1, $2::jsonb)", 2, params, PGRES_TUPLES_OK));
	q = AddQueue(params[0]);
	q->penalties = true;
}

/* Reads the largest team of each queue (parties must fit in one team). */
static void
LoadQueueShapes(void)
{
	int			i;

	for (i = 0; i < nqueues; i++)
	{
		const char *params[1] = {queues[i].name};
		PGresult   *res = SimExec(conn,
								  "SELECT coalesce((SELECT max((t->>'max')::int)"
								  "                   FROM pg_catalog.jsonb_array_elements(q.config->'teams') t),"
								  "                 (q.config->'match_size'->>'max')::int),"
								  "       q.config OPERATOR(pg_catalog.?) 'penalties'"
								  "  FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) $1",
								  1, params, PGRES_TUPLES_OK);

		if (PQntuples(res) != 1)
			SimFatal("queue \"%s\" does not exist (create it first, or use --flexmatch)",
					 queues[i].name);
		queues[i].max_team = atoi(PQgetvalue(res, 0, 0));
		/* a queue with penalties may refuse a ticket (cooldown) */
		queues[i].penalties = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
		queues[i].max_party = queues[i].max_team < opt.party_max ? queues[i].max_team : opt.party_max;
		if (queues[i].max_party > SIM_MAX_PARTY)
			queues[i].max_party = SIM_MAX_PARTY;
		if (queues[i].max_party < 1)
			SimFatal("queue \"%s\" has no room for a party", queues[i].name);
		PQclear(res);
	}
}

/* --------------------------------------------------------------- players */

/*
 * A newcomer: true skill N(1000, 400); a placement estimate of it as the
 * stored rating (true skill plus N(0, 200) noise, rating deviation 200), so
 * matchmaking starts from an imperfect picture that outcomes then correct;
 * latency N(70, 20) ms to each region.
 */
static int
NewPlayer(void)
{
	SimPlayer  *p;
	int			r;

	players = GrowArray(players, &players_cap, nplayers + 1, sizeof(SimPlayer));
	p = &players[nplayers];
	p->true_skill = RandomNormal(1000, 400);
	p->rating = p->true_skill + RandomNormal(0, 200);
	p->rd = 200;
	p->volatility = 0.06;
	for (r = 0; r < SIM_REGIONS; r++)
	{
		double		ms = RandomNormal(70, 20);

		p->latency[r] = ms < 5 ? 5 : round(ms);
	}
	p->ready_at = 0;
	p->state = PLAYER_IDLE;
	p->stored = false;
	p->nroles = 0;
	return nplayers++;
}

/* A player is free again; they may queue from `ready_at` on. */
static void
MakeIdle(int player, double ready_at)
{
	players[player].state = PLAYER_IDLE;
	players[player].ready_at = ready_at;
	idle = realloc(idle, (size_t) (nidle + 1) * sizeof(int));
	if (idle == NULL)
		SimFatal("out of memory");
	idle[nidle++] = player;
}

/* Takes the first idle player who is ready, or -1. */
static int
TakeIdlePlayer(double now)
{
	int			i;

	for (i = 0; i < nidle; i++)
	{
		int			player = idle[i];

		if (players[player].ready_at <= now)
		{
			memmove(&idle[i], &idle[i + 1], (size_t) (nidle - i - 1) * sizeof(int));
			nidle--;
			return player;
		}
	}
	return -1;
}

/* ------------------------------------------------------------- arrivals */

static size_t Append(char **buf, size_t *cap, size_t len, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

/* Appends formatted text to a growing buffer; returns the new length. */
static size_t
Append(char **buf, size_t *cap, size_t len, const char *fmt,...)
{
	for (;;)
	{
		va_list		args;
		int			n;

		va_start(args, fmt);
		n = vsnprintf(*buf + len, *cap - len, fmt, args);
		va_end(args);
		if (n < 0)
			SimFatal("formatting failed");
		if ((size_t) n < *cap - len)
			return len + n;
		*cap = (*cap + n) * 2;
		*buf = realloc(*buf, *cap);
		if (*buf == NULL)
			SimFatal("out of memory");
	}
}

/*
 * The game modes a party picks in the multi-mode queue, as the attributes
 * text its players send: the list ("modes").  Each mode the party fits in
 * (its size at most the mode's team maximum: survival 3, classic 6,
 * practice 8) is picked with probability 1/2; a party that picked none takes
 * one of them at random.
 */
static void
MultiModeChoice(int party, char *buf, size_t size)
{
	static const struct
	{
		const char *name;
		int			team_max;
	}			modes[] = {{"classic", 6}, {"survival", 3}, {"practice", 8}};
	bool		pick[3] = {false, false, false};
	int			fits[3];
	int			nfits = 0;
	int			npicked = 0;
	int			i;
	size_t		len;

	for (i = 0; i < 3; i++)
		if (party <= modes[i].team_max)
		{
			fits[nfits++] = i;
			pick[i] = RandomUniform() < 0.5;
			npicked += pick[i];
		}
	if (npicked == 0)
		pick[fits[RandomInt(0, nfits - 1)]] = true;
	len = snprintf(buf, size, ", \"modes\": [");
	for (i = 0, npicked = 0; i < 3; i++)
		if (pick[i])
			len += snprintf(buf + len, size - len, "%s\"%s\"", npicked++ > 0 ? ", " : "",
							modes[i].name);
	snprintf(buf + len, size - len, "]");
}

/*
 * A player's role preferences, drawn on their first role-queue ticket and
 * kept: supports are scarce, as in the games that queue by role.  First
 * choice tank 20 %, healer 15 %, dps 65 % (a match needs 20 / 20 / 60 %);
 * --role-second (60 %) of the players name a second role (a tank's or a healer's: dps 70 %,
 * the other 30 %; a dps player's: tank or healer, even odds); 10 % end
 * their list with "fill" (any role).
 */
static void
DrawRoles(SimPlayer *p)
{
	double		u = RandomUniform();
	int			first = u < 0.20 ? SIM_ROLE_TANK : u < 0.35 ? SIM_ROLE_HEALER : SIM_ROLE_DPS;

	p->nroles = 0;
	p->roles[p->nroles++] = first;
	if (RandomUniform() < opt.role_second)
	{
		double		v = RandomUniform();

		if (first == SIM_ROLE_DPS)
			p->roles[p->nroles++] = v < 0.5 ? SIM_ROLE_TANK : SIM_ROLE_HEALER;
		else if (v < 0.7)
			p->roles[p->nroles++] = SIM_ROLE_DPS;
		else
			p->roles[p->nroles++] = first == SIM_ROLE_TANK ? SIM_ROLE_HEALER : SIM_ROLE_TANK;
	}
	if (RandomUniform() < 0.1)
		p->roles[p->nroles++] = SIM_ROLE_FILL;
}

/*
 * A ticket refused because a player is cooling down (55000 from
 * mm.create_ticket): the party breaks up, and each player cooling down in
 * the queue (mm.get_penalties) comes back 1 to 10 s after their cooldown
 * ends; the others are ready again at once.  At least one must be cooling
 * down, or the arrival would be retried forever.
 */
static void
RefuseTicket(SimTicket *t, const char *message, double at)
{
	SimQueue   *q = &queues[t->queue];
	size_t		cap = 256;
	size_t		len = 0;
	char	   *ids = malloc(cap);
	char		when[32];
	const char *params[3];
	PGresult   *res;
	int			ncooling = 0;
	int			i,
				row;

	if (ids == NULL)
		SimFatal("out of memory");
	len = Append(&ids, &cap, len, "{");
	for (i = 0; i < t->nplayers; i++)
		len = Append(&ids, &cap, len, "%s\"%s-%d\"", i > 0 ? "," : "", opt.run, t->players[i]);
	Append(&ids, &cap, len, "}");
	FormatTime(when, sizeof(when), at);
	params[0] = ids;
	params[1] = q->name;
	params[2] = when;
	res = SimExec(conn,
				  "SELECT u.id, extract(epoch FROM p.cooldown_until)::float8"
				  "  FROM pg_catalog.unnest($1::text[]) AS u(id)"
				  " CROSS JOIN LATERAL mm.get_penalties(u.id, pg_catalog.to_timestamp($3::float8)) p"
				  " WHERE p.queue OPERATOR(pg_catalog.=) $2 AND p.cooling_down",
				  3, params, PGRES_TUPLES_OK);
	for (i = 0; i < t->nplayers; i++)
	{
		for (row = 0; row < PQntuples(res); row++)
			if (PlayerIndexFromId(PQgetvalue(res, row, 0)) == t->players[i])
				break;
		if (row < PQntuples(res))
		{
			ncooling++;
			MakeIdle(t->players[i], atof(PQgetvalue(res, row, 1)) - epoch + RandomBetween(1, 10));
		}
		else
			MakeIdle(t->players[i], at);
	}
	if (ncooling == 0)
		SimFatal("a ticket of %s was refused, but none of its players is cooling down: %s",
				 ids, message);
	PQclear(res);
	free(ids);
	q->refused++;
	stat_refused++;
}

/*
 * One ticket arrives in a queue at time `at`: a party of returning players
 * (or newcomers when too few are ready), with a chosen game mode for the
 * queues whose rules read one.  New players are stored in mm_sim.players in
 * the same statement.  In a queue with penalties a ticket is refused while
 * one of its players is cooling down (55000): returns false, and the
 * players who are cooling down stay away until their cooldown ends.
 */
static bool
ArriveTicket(int qi, double at)
{
	SimQueue   *q = &queues[qi];
	static const char *const modes[] = {"deathmatch", "deathmatch", "capture"};
	const char *mode = modes[RandomInt(0, 2)];
	int			size = RandomInt(opt.party_min < q->max_party ? opt.party_min : q->max_party,
								 q->max_party);
	size_t		pcap = 1024, ncap = 256;
	size_t		plen = 0, nlen = 0;
	char	   *pjson = malloc(pcap);
	char	   *njson = malloc(ncap);
	char		when[32];
	char		mode_attrs[160] = "";
	const char *params[5];
	PGresult   *res;
	SimTicket  *t;
	int			i;

	if (pjson == NULL || njson == NULL)
		SimFatal("out of memory");
	if (q->multi_mode)
		MultiModeChoice(size, mode_attrs, sizeof(mode_attrs));
	/* a refused ticket leaves tickets[ntickets] unused */
	tickets = GrowArray(tickets, &tickets_cap, ntickets + 1, sizeof(SimTicket));
	t = &tickets[ntickets];
	t->queue = qi;
	t->nplayers = size;
	t->proposal = 0;
	plen = Append(&pjson, &pcap, plen, "[");
	nlen = Append(&njson, &ncap, nlen, "[");
	for (i = 0; i < size; i++)
	{
		int			player = TakeIdlePlayer(at);
		SimPlayer  *p;
		int			r;

		if (player < 0)
			player = NewPlayer();
		/* newcomers, and players whose first ticket was refused */
		if (!players[player].stored)
		{
			nlen = Append(&njson, &ncap, nlen,
						  "%s{\"id\": \"%s-%d\", \"true_skill\": %.3f, \"rating\": %.3f,"
						  " \"rd\": %.3f, \"volatility\": %.6f}",
						  nlen > 1 ? ", " : "", opt.run, player, players[player].true_skill,
						  players[player].rating, players[player].rd, players[player].volatility);
		}
		p = &players[player];
		p->state = PLAYER_SEARCHING;
		t->players[i] = player;
		plen = Append(&pjson, &pcap, plen,
					  "%s{\"id\": \"%s-%d\", \"attributes\": {\"skill\": %.1f, \"mode\": \"%s\"%s},"
					  " \"latencies\": {",
					  i > 0 ? ", " : "", opt.run, player, p->rating, mode, mode_attrs);
		for (r = 0; r < SIM_REGIONS; r++)
			plen = Append(&pjson, &pcap, plen, "%s\"%s\": %.0f", r > 0 ? ", " : "",
						  sim_region_names[r], p->latency[r]);
		plen = Append(&pjson, &pcap, plen, "}");
		if (q->roles)
		{
			if (p->nroles == 0)
				DrawRoles(p);
			plen = Append(&pjson, &pcap, plen, ", \"roles\": [");
			for (r = 0; r < p->nroles; r++)
				plen = Append(&pjson, &pcap, plen, "%s\"%s\"", r > 0 ? ", " : "",
							  role_names[(int) p->roles[r]]);
			plen = Append(&pjson, &pcap, plen, "]");
		}
		plen = Append(&pjson, &pcap, plen, "}");
	}
	Append(&pjson, &pcap, plen, "]");
	Append(&njson, &ncap, nlen, "]");

	FormatTime(when, sizeof(when), at);
	params[0] = q->name;
	params[1] = pjson;
	params[2] = njson;
	params[3] = opt.run;
	params[4] = opt.clock == SIM_CLOCK_SIMULATED ? when : NULL;
	if (!q->penalties)
		res = SimExec(conn,
					  "WITH newcomers AS ("
					  "  INSERT INTO mm_sim.players (id, run, true_skill, initial_rating, rating, rd, volatility)"
					  "  SELECT n.id, $4, n.true_skill, n.rating, n.rating, n.rd, n.volatility"
					  "    FROM pg_catalog.jsonb_to_recordset($3::jsonb)"
					  "         AS n(id text, true_skill float8, rating float8, rd float8, volatility float8))"
					  "SELECT mm.create_ticket($1, $2::jsonb,"
					  "       coalesce(pg_catalog.to_timestamp($5::float8), pg_catalog.now()))",
					  5, params, PGRES_TUPLES_OK);
	else
	{
		/*
		 * Whether a player is in the low-priority pool, read with the
		 * ticket: it cannot change while the ticket searches (its players
		 * play no game and answer no proposal of another ticket).
		 */
		res = PQexecParams(conn,
						   "WITH newcomers AS ("
						   "  INSERT INTO mm_sim.players (id, run, true_skill, initial_rating, rating, rd, volatility)"
						   "  SELECT n.id, $4, n.true_skill, n.rating, n.rating, n.rd, n.volatility"
						   "    FROM pg_catalog.jsonb_to_recordset($3::jsonb)"
						   "         AS n(id text, true_skill float8, rating float8, rd float8, volatility float8))"
						   "SELECT mm.create_ticket($1, $2::jsonb,"
						   "       coalesce(pg_catalog.to_timestamp($5::float8), pg_catalog.now())),"
						   "       EXISTS (SELECT FROM mm.player_penalties pp"
						   "                WHERE pp.queue OPERATOR(pg_catalog.=) $1"
						   "                  AND pp.low_priority_games OPERATOR(pg_catalog.>) 0"
						   "                  AND pp.player_id OPERATOR(pg_catalog.=) ANY"
						   "                      (SELECT x OPERATOR(pg_catalog.->>) 'id'"
						   "                         FROM pg_catalog.jsonb_array_elements($2::jsonb) x))",
						   5, NULL, params, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
			const char *message = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

			if (state == NULL || strcmp(state, "55000") != 0 || message == NULL ||
				strstr(message, "may not queue") == NULL)
				SimFatal("query failed: %s", PQresultErrorMessage(res));
			RefuseTicket(t, message, at);
			PQclear(res);
			free(pjson);
			free(njson);
			return false;
		}
		if (strcmp(PQgetvalue(res, 0, 1), "t") == 0)
		{
			q->penalised_ids = GrowArray(q->penalised_ids, &q->penalised_ids_cap,
										 q->npenalised_ids + 1, sizeof(long long));
			q->penalised_ids[q->npenalised_ids++] = atoll(PQgetvalue(res, 0, 0));
		}
	}
	t->id = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	free(pjson);
	free(njson);
	for (i = 0; i < size; i++)
		players[t->players[i]].stored = true;
	ntickets++;

	q->ticket_ids = GrowArray(q->ticket_ids, &q->ticket_ids_cap, q->nticket_ids + 1,
							  sizeof(long long));
	q->ticket_ids[q->nticket_ids++] = t->id;
	q->tickets_made++;
	stat_tickets++;
	return true;
}

/* True once a queue has had all its arrivals. */
static bool
ArrivalsDone(const SimQueue *q, double now)
{
	if (interrupted)
		return true;
	if (opt.tickets > 0 && q->tickets_made >= opt.tickets)
		return true;
	if (opt.seconds > 0 && now >= opt.seconds)
		return true;
	return false;
}

/* Creates every ticket due by `now`, each at its own arrival time. */
static void
RunArrivals(double now)
{
	int			qi;

	for (qi = 0; qi < nqueues; qi++)
	{
		SimQueue   *q = &queues[qi];

		while (q->next_arrival <= now && !ArrivalsDone(q, q->next_arrival))
		{
			/* refused (a player cooling down): another party arrives in its place */
			if (ArriveTicket(qi, q->next_arrival))
				q->next_arrival += RandomBetween(opt.interval_min, opt.interval_max);
		}
	}
}

/* ---------------------------------------------------------------- ticks */

/*
 * Ticks every queue that has tickets of ours searching, in one statement;
 * returns the number of matches formed.
 */
static long
TickQueues(double now)
{
	char		when[32];
	size_t		cap = 256,
				len = 0;
	char	   *names = malloc(cap);
	const char *params[2];
	PGresult   *res;
	long		formed;
	int			qi,
				i;

	if (names == NULL)
		SimFatal("out of memory");
	len = Append(&names, &cap, len, "{");
	for (qi = 0; qi < nqueues; qi++)
	{
		for (i = 0; i < ntickets && tickets[i].queue != qi; i++)
			;
		if (i < ntickets)
			len = Append(&names, &cap, len, "%s\"%s\"", len > 1 ? "," : "", queues[qi].name);
	}
	Append(&names, &cap, len, "}");
	if (len == 1)
	{
		free(names);
		return 0;
	}
	FormatTime(when, sizeof(when), now);
	params[0] = names;
	params[1] = when;
	res = SimExec(conn,
				  "SELECT coalesce(pg_catalog.sum(mm.tick(q, pg_catalog.to_timestamp($2::float8))), 0)"
				  "  FROM pg_catalog.unnest($1::text[]) AS u(q)",
				  2, params, PGRES_TUPLES_OK);
	formed = atol(PQgetvalue(res, 0, 0));
	PQclear(res);
	free(names);
	return formed;
}

/* ---------------------------------------------------------------- games */

/*
 * Loads the players and teams of newly formed (or accepted) matches, hands
 * each a game server (mm.assign) and starts their games; a game starts when
 * its tickets were matched (the last acceptance, or the tick).  A share
 * --leave-rate of our players will quit early, somewhere in the first 60% of
 * the game.
 */
static void
StartGames(const long long *match_ids, int n, double now)
{
	char	   *ids = SimIdArray(match_ids, n);
	const char *params[1] = {ids};
	PGresult   *res = SimExec(conn,
							  "SELECT mp.match_id, mp.player_id, coalesce(mp.team, ''), m.quality,"
							  "       extract(epoch FROM coalesce((SELECT pg_catalog.max(t.matched_at)"
							  "                                      FROM mm.tickets t"
							  "                                     WHERE t.match_id OPERATOR(pg_catalog.=) m.id),"
							  "                                   m.created_at))::float8"
							  "  FROM mm.match_players mp"
							  "  JOIN mm.matches m ON m.id OPERATOR(pg_catalog.=) mp.match_id"
							  " WHERE mp.match_id OPERATOR(pg_catalog.=) ANY ($1::bigint[])"
							  " ORDER BY mp.match_id, mp.team, mp.player_id",
							  1, params, PGRES_TUPLES_OK);
	int			rows = PQntuples(res);
	int			row = 0;

	while (row < rows)
	{
		long long	match_id = atoll(PQgetvalue(res, row, 0));
		int			first = row;
		SimGame    *g;
		int			i;

		while (row < rows && atoll(PQgetvalue(res, row, 0)) == match_id)
			row++;
		games = GrowArray(games, &games_cap, ngames + 1, sizeof(SimGame));
		g = &games[ngames++];
		memset(g, 0, sizeof(*g));
		g->match_id = match_id;
		g->quality = atof(PQgetvalue(res, first, 3));
		g->start = atof(PQgetvalue(res, first, 4)) - epoch;
		if (g->start > now)
			g->start = now;
		g->end = g->start + opt.match_seconds * RandomBetween(0.7, 1.3);
		g->n = row - first;
		g->player = malloc(sizeof(int) * g->n);
		g->team = malloc(sizeof(int) * g->n);
		g->leave_at = malloc(sizeof(double) * g->n);
		g->left = calloc(g->n, sizeof(bool));
		g->team_names = malloc(sizeof(char *) * g->n);
		if (g->player == NULL || g->team == NULL || g->leave_at == NULL || g->left == NULL ||
			g->team_names == NULL)
			SimFatal("out of memory");
		for (i = 0; i < g->n; i++)
		{
			const char *team = PQgetvalue(res, first + i, 2);
			int			player = PlayerIndexFromId(PQgetvalue(res, first + i, 1));

			g->player[i] = player;
			g->leave_at[i] = -1;
			if (player >= 0)
			{
				players[player].state = PLAYER_PLAYING;
				if (RandomUniform() < opt.leave_rate)
					g->leave_at[i] = g->start + (g->end - g->start) * RandomBetween(0.02, 0.6);
			}
			if (g->nteams == 0 || strcmp(g->team_names[g->nteams - 1], team) != 0)
				g->team_names[g->nteams++] = StrDup(team);
			g->team[i] = g->nteams - 1;
		}
		stat_matches++;
	}
	PQclear(res);
	/* the director's part: a game server for every match that is ready */
	if (have_lifecycle)
		PQclear(SimExec(conn,
						"SELECT mm.assign(m.id, 'game-' OPERATOR(pg_catalog.||) m.id OPERATOR(pg_catalog.||) '.sim.invalid:7777',"
						"                 pg_catalog.jsonb_build_object('simulated', true))"
						"  FROM mm.matches m"
						" WHERE m.id OPERATOR(pg_catalog.=) ANY ($1::bigint[])"
						"   AND m.status OPERATOR(pg_catalog.=) 'ready'"
						" ORDER BY m.id",
						1, params, PGRES_TUPLES_OK));
	free(ids);
}

/* The player id text of one of our players. */
static const char *
PlayerId(int player)
{
	static char id[64];

	snprintf(id, sizeof(id), "%s-%d", opt.run, player);
	return id;
}

/*
 * Early quits whose time has come: mm.leave_match records the leaver (at the
 * time they left) and releases them; they rest and queue again.
 */
static void
LeaveGames(double now)
{
	int			i,
				k;

	if (!have_lifecycle)
		return;
	for (k = 0; k < ngames; k++)
	{
		SimGame    *g = &games[k];

		for (i = 0; i < g->n; i++)
		{
			char		match_id[24],
						at[32];
			const char *params[3];

			if (g->left[i] || g->leave_at[i] < 0 || g->leave_at[i] > now || g->leave_at[i] >= g->end)
				continue;
			snprintf(match_id, sizeof(match_id), "%lld", g->match_id);
			FormatTime(at, sizeof(at), g->leave_at[i]);
			params[0] = match_id;
			params[1] = PlayerId(g->player[i]);
			params[2] = at;
			PQclear(SimExec(conn, "SELECT mm.leave_match($1::bigint, $2, pg_catalog.to_timestamp($3::float8))",
							3, params, PGRES_TUPLES_OK));
			g->left[i] = true;
			stat_leavers++;
			MakeIdle(g->player[i], g->leave_at[i] + RandomBetween(opt.break_min, opt.break_max));
		}
	}
}

/* A growing text buffer for the array literals sent with a game's result. */
typedef struct TextBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} TextBuf;

/* Starts a buffer with the given text. */
static void
BufInit(TextBuf *b, const char *text)
{
	b->cap = 256;
	b->len = 0;
	b->data = malloc(b->cap);
	if (b->data == NULL)
		SimFatal("out of memory");
	b->len = Append(&b->data, &b->cap, 0, "%s", text);
}

/* Appends one element of an array literal, with a comma unless it is the first. */
static void
BufElement(TextBuf *b, const char *fmt, double value)
{
	if (b->len > 1)
		b->len = Append(&b->data, &b->cap, b->len, ",");
	b->len = Append(&b->data, &b->cap, b->len, fmt, value);
}

/* Appends a quoted float8[] literal as one element of a text[] literal. */
static void
BufArray(TextBuf *b, const double *values, int n)
{
	int			i;

	if (b->len > 1)
		b->len = Append(&b->data, &b->cap, b->len, ",");
	b->len = Append(&b->data, &b->cap, b->len, "\"{");
	for (i = 0; i < n; i++)
		b->len = Append(&b->data, &b->cap, b->len, "%s%.6f", i > 0 ? "," : "", values[i]);
	b->len = Append(&b->data, &b->cap, b->len, "}\"");
}

#define SIM_MAX_TEAMS 64

/*
 * A game ends: the winning team is drawn from the players' true skills
 * (logistic in the difference of team averages, 400 points = 10:1), a few
 * players have left early, the result goes to mm.match_results with the
 * favourite predicted from the stored ratings, and the stored ratings are
 * updated with mm.glicko2_update at team level.
 *
 * Team level: a team's rating is the mean of its players' ratings, with
 * deviation sqrt(sum rd^2) / n (the deviation of a mean).  The team's Glicko-2
 * update against the other teams' means gives its change; each player takes
 * the share of it that a Gaussian model gives them, n * rd_i^2 / sum rd^2
 * (equal shares for equal deviations), and their deviation shrinks by the
 * same model.  Rating each player by their own rating against the opposing
 * team instead would expect a strong player on a weak team to win, and drag
 * every rating towards its match average.
 */
static void
FinishGame(SimGame *g)
{
	double		true_avg[SIM_MAX_TEAMS];
	double		rating_avg[SIM_MAX_TEAMS];
	double		rd_sq_sum[SIM_MAX_TEAMS];
	int			count[SIM_MAX_TEAMS];
	double		strength_sum = 0;
	double		favourite_sum = 0;
	double		favourite_p;
	double		draw;
	int			winner = -1;
	int			favourite = -1;
	int			nteams = g->nteams < SIM_MAX_TEAMS ? g->nteams : SIM_MAX_TEAMS;
	int			i,
				k;
	char		start[32],
				end[32],
				match_id[24],
				favourite_text[32];
	TextBuf		ids,
				team_rating,
				team_rd,
				share,
				shrink,
				opp,
				opp_rd,
				score,
				won,
				left,
				ranks;
	bool		ffa;
	const char *params[11];
	PGresult   *res;

	memset(true_avg, 0, sizeof(true_avg));
	memset(rating_avg, 0, sizeof(rating_avg));
	memset(rd_sq_sum, 0, sizeof(rd_sq_sum));
	memset(count, 0, sizeof(count));
	for (i = 0; i < g->n; i++)
	{
		int			t = g->team[i] < SIM_MAX_TEAMS ? g->team[i] : SIM_MAX_TEAMS - 1;
		int			p = g->player[i];

		/* someone else's player: taken as an average, unknown one */
		true_avg[t] += p >= 0 ? players[p].true_skill : 1000;
		rating_avg[t] += p >= 0 ? players[p].rating : 1000;
		rd_sq_sum[t] += p >= 0 ? players[p].rd * players[p].rd : 350 * 350;
		count[t]++;
	}
	for (k = 0; k < nteams; k++)
	{
		if (count[k] == 0)
			continue;
		true_avg[k] /= count[k];
		rating_avg[k] /= count[k];
		strength_sum += pow(10, true_avg[k] / 400);
		favourite_sum += pow(10, rating_avg[k] / 400);
		if (favourite < 0 || rating_avg[k] > rating_avg[favourite])
			favourite = k;
	}
	if (favourite < 0)
		return;					/* no players: nothing to report */
	draw = RandomUniform() * strength_sum;
	for (k = 0; k < nteams; k++)
	{
		if (count[k] == 0)
			continue;
		winner = k;
		draw -= pow(10, true_avg[k] / 400);
		if (draw < 0)
			break;
	}
	favourite_p = pow(10, rating_avg[favourite] / 400) / favourite_sum;

	/*
	 * The ranks the game server reports: by team (the winner 1, the others
	 * 2), or in a free-for-all (one unnamed team) by player, the winner drawn
	 * from the true skills.
	 */
	ffa = nteams == 1 && g->team_names[0][0] == '\0';
	BufInit(&ranks, "{");
	if (ffa)
	{
		double		total = 0;
		int			first_winner = -1;

		for (i = 0; i < g->n; i++)
			total += pow(10, (g->player[i] >= 0 ? players[g->player[i]].true_skill : 1000) / 400);
		draw = RandomUniform() * total;
		for (i = 0; i < g->n && first_winner < 0; i++)
		{
			draw -= pow(10, (g->player[i] >= 0 ? players[g->player[i]].true_skill : 1000) / 400);
			if (draw < 0 || i == g->n - 1)
				first_winner = i;
		}
		for (i = 0; i < g->n; i++)
			ranks.len = Append(&ranks.data, &ranks.cap, ranks.len, "%s\"%s\": %d", i > 0 ? ", " : "",
							   g->player[i] >= 0 ? PlayerId(g->player[i]) : "?", i == first_winner ? 1 : 2);
	}
	else
		for (k = 0; k < nteams; k++)
			ranks.len = Append(&ranks.data, &ranks.cap, ranks.len, "%s\"%s\": %d", k > 0 ? ", " : "",
							   g->team_names[k], k == winner ? 1 : 2);
	ranks.len = Append(&ranks.data, &ranks.cap, ranks.len, "}");

	BufInit(&ids, "{");
	BufInit(&team_rating, "{");
	BufInit(&team_rd, "{");
	BufInit(&share, "{");
	BufInit(&shrink, "{");
	BufInit(&opp, "{");
	BufInit(&opp_rd, "{");
	BufInit(&score, "{");
	BufInit(&won, "{");
	BufInit(&left, "{");
	for (i = 0; i < g->n; i++)
	{
		int			p = g->player[i];
		int			t = g->team[i] < SIM_MAX_TEAMS ? g->team[i] : SIM_MAX_TEAMS - 1;
		double		o[SIM_MAX_TEAMS],
					ord[SIM_MAX_TEAMS],
					sc[SIM_MAX_TEAMS];
		double		rd_t,
					rd_sq;
		int			no = 0;

		if (p < 0)
			continue;
		/* without mm.leave_match (0.2): the early quits are written here */
		if (!have_lifecycle && g->leave_at[i] >= 0 && g->leave_at[i] < g->end)
		{
			char		at[32];

			FormatTime(at, sizeof(at), g->leave_at[i]);
			if (left.len > 1)
				left.len = Append(&left.data, &left.cap, left.len, ",");
			left.len = Append(&left.data, &left.cap, left.len, "\"%s-%d=%s\"", opt.run, p, at);
			g->left[i] = true;
			stat_leavers++;
		}
		for (k = 0; k < nteams; k++)
		{
			if (k == t || count[k] == 0)
				continue;
			o[no] = rating_avg[k];
			ord[no] = sqrt(rd_sq_sum[k]) / count[k];
			sc[no] = t == winner ? 1.0 : (k == winner ? 0.0 : 0.5);
			no++;
		}
		if (no == 0)
			continue;
		rd_sq = players[p].rd * players[p].rd;
		rd_t = sqrt(rd_sq_sum[t]) / count[t];
		if (ids.len > 1)
			ids.len = Append(&ids.data, &ids.cap, ids.len, ",");
		ids.len = Append(&ids.data, &ids.cap, ids.len, "\"%s-%d\"", opt.run, p);
		BufElement(&team_rating, "%.6f", rating_avg[t]);
		BufElement(&team_rd, "%.6f", rd_t);
		BufElement(&share, "%.9f", count[t] * rd_sq / rd_sq_sum[t]);
		/* (Cov(r_i, team) / Var(team))^2: how much of the team's variance drop is the player's */
		BufElement(&shrink, "%.9f", pow(rd_sq / (count[t] * rd_t * rd_t), 2));
		BufArray(&opp, o, no);
		BufArray(&opp_rd, ord, no);
		BufArray(&score, sc, no);
		BufElement(&won, "%.0f", t == winner ? 1 : 0);
	}
	ids.len = Append(&ids.data, &ids.cap, ids.len, "}");
	team_rating.len = Append(&team_rating.data, &team_rating.cap, team_rating.len, "}");
	team_rd.len = Append(&team_rd.data, &team_rd.cap, team_rd.len, "}");
	share.len = Append(&share.data, &share.cap, share.len, "}");
	shrink.len = Append(&shrink.data, &shrink.cap, shrink.len, "}");
	opp.len = Append(&opp.data, &opp.cap, opp.len, "}");
	opp_rd.len = Append(&opp_rd.data, &opp_rd.cap, opp_rd.len, "}");
	score.len = Append(&score.data, &score.cap, score.len, "}");
	won.len = Append(&won.data, &won.cap, won.len, "}");
	left.len = Append(&left.data, &left.cap, left.len, "}");

	FormatTime(start, sizeof(start), g->start);
	FormatTime(end, sizeof(end), g->end);
	snprintf(match_id, sizeof(match_id), "%lld", g->match_id);
	snprintf(favourite_text, sizeof(favourite_text), "%.6f", favourite_p);

	SimExecCommand(conn, "BEGIN");
	params[0] = match_id;
	if (have_report_result)
	{
		/* the game server's report: completes the match, records the result */
		params[1] = ranks.data;
		params[2] = end;
		PQclear(SimExec(conn,
						"SELECT mm.report_result($1::bigint, $2::jsonb, pg_catalog.to_timestamp($3::float8))",
						3, params, PGRES_TUPLES_OK));
	}
	else
	{
		if (have_lifecycle)
		{
			params[1] = end;
			PQclear(SimExec(conn,
							"SELECT mm.complete_match($1::bigint, pg_catalog.to_timestamp($2::float8))",
							2, params, PGRES_TUPLES_OK));
		}
		else
		{
			/* 0.2: leavers as "<player>=<unix time>" pairs, the status by hand */
			params[1] = left.data;
			PQclear(SimExec(conn,
							"UPDATE mm.match_players mp"
							"   SET left_at = pg_catalog.to_timestamp(pg_catalog.split_part(l, '=', 2)::float8)"
							"  FROM pg_catalog.unnest($2::text[]) AS l"
							" WHERE mp.match_id OPERATOR(pg_catalog.=) $1::bigint"
							"   AND mp.player_id OPERATOR(pg_catalog.=) pg_catalog.split_part(l, '=', 1)",
							2, params, PGRES_COMMAND_OK));
			params[1] = end;
			PQclear(SimExec(conn,
							"UPDATE mm.matches SET status = 'completed',"
							"       updated_at = pg_catalog.to_timestamp($2::float8)"
							" WHERE id OPERATOR(pg_catalog.=) $1::bigint",
							2, params, PGRES_COMMAND_OK));
		}
		if (have_match_results)
		{
			params[1] = ffa ? NULL : g->team_names[winner];
			params[2] = ffa ? NULL : g->team_names[favourite];
			params[3] = ffa ? NULL : favourite_text;
			params[4] = start;
			params[5] = end;
			params[6] = ranks.data;
			/* the queue is copied from the match by mm.match_results' trigger */
			PQclear(SimExec(conn,
							"INSERT INTO mm.match_results"
							"  (match_id, winner_team, ranks, predicted_favourite, favourite_win_probability,"
							"   duration, reported_at)"
							" VALUES ($1::bigint, $2, $7::jsonb, $3, $4::float8,"
							"         pg_catalog.to_timestamp($6::float8) OPERATOR(pg_catalog.-) pg_catalog.to_timestamp($5::float8),"
							"         pg_catalog.to_timestamp($6::float8))",
							7, params, PGRES_COMMAND_OK));
		}
	}
	params[0] = ids.data;
	params[1] = opp.data;
	params[2] = opp_rd.data;
	params[3] = score.data;
	params[4] = won.data;
	params[5] = end;
	params[6] = team_rating.data;
	params[7] = team_rd.data;
	params[8] = share.data;
	params[9] = shrink.data;
	if (rating_method == RATING_GLICKO2)
		res = SimExec(conn,
					  "UPDATE mm_sim.players p"
					  "   SET rating = p.rating OPERATOR(pg_catalog.+)"
					  "                (x.share OPERATOR(pg_catalog.*) ((x.g).rating OPERATOR(pg_catalog.-) x.team_rating)),"
					  "       rd = LEAST(350, GREATEST(30, pg_catalog.sqrt(GREATEST(0,"
					  "              (p.rd OPERATOR(pg_catalog.*) p.rd) OPERATOR(pg_catalog.-) (x.shrink OPERATOR(pg_catalog.*)"
					  "              ((x.team_rd OPERATOR(pg_catalog.*) x.team_rd)"
					  "               OPERATOR(pg_catalog.-) ((x.g).rd OPERATOR(pg_catalog.*) (x.g).rd))))))),"
					  "       volatility = (x.g).volatility,"
					  "       games = p.games + 1, wins = p.wins + x.won,"
					  "       updated_at = pg_catalog.to_timestamp($6::float8)"
					  "  FROM (SELECT u.*,"
					  "               mm.glicko2_update(u.team_rating, u.team_rd, p0.volatility,"
					  "                                 u.opp::float8[], u.opp_rd::float8[], u.score::float8[]) AS g"
					  "          FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[],"
					  "                      $7::float8[], $8::float8[], $9::float8[], $10::float8[])"
					  "               AS u(id, opp, opp_rd, score, won, team_rating, team_rd, share, shrink)"
					  "          JOIN mm_sim.players p0 ON p0.id OPERATOR(pg_catalog.=) u.id) x"
					  " WHERE p.id OPERATOR(pg_catalog.=) x.id"
					  " RETURNING p.id, p.rating, p.rd, p.volatility",
					  10, params, PGRES_TUPLES_OK);
	else if (rating_method == RATING_ELO)
		/* Elo: the team mean against the other teams' mean, the change shared the same way */
		res = SimExec(conn,
					  "UPDATE mm_sim.players p"
					  "   SET rating = p.rating OPERATOR(pg_catalog.+)"
					  "                (x.share OPERATOR(pg_catalog.*) (x.r OPERATOR(pg_catalog.-) x.team_rating)),"
					  "       games = p.games + 1, wins = p.wins + x.won,"
					  "       updated_at = pg_catalog.to_timestamp($6::float8)"
					  "  FROM (SELECT u.*,"
					  "               mm.elo_update(u.team_rating,"
					  "                 (SELECT pg_catalog.avg(v) FROM pg_catalog.unnest(u.opp::float8[]) v),"
					  "                 (SELECT pg_catalog.avg(v) FROM pg_catalog.unnest(u.score::float8[]) v),"
					  "                 32) AS r"
					  "          FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[],"
					  "                      $7::float8[], $8::float8[], $9::float8[], $10::float8[])"
					  "               AS u(id, opp, opp_rd, score, won, team_rating, team_rd, share, shrink)) x"
					  " WHERE p.id OPERATOR(pg_catalog.=) x.id"
					  " RETURNING p.id, p.rating, p.rd, p.volatility",
					  10, params, PGRES_TUPLES_OK);
	else
		res = SimExec(conn,
					  "UPDATE mm_sim.players p"
					  "   SET games = p.games + 1, wins = p.wins + u.won,"
					  "       updated_at = pg_catalog.to_timestamp($6::float8)"
					  "  FROM unnest($1::text[], $5::int[]) AS u(id, won)"
					  " WHERE p.id OPERATOR(pg_catalog.=) u.id"
					  "   AND $2::text IS NOT NULL AND $3::text IS NOT NULL AND $4::text IS NOT NULL"
					  "   AND $7::text IS NOT NULL AND $8::text IS NOT NULL AND $9::text IS NOT NULL"
					  "   AND $10::text IS NOT NULL"
					  " RETURNING p.id, p.rating, p.rd, p.volatility",
					  10, params, PGRES_TUPLES_OK);
	for (i = 0; i < PQntuples(res); i++)
	{
		int			p = PlayerIndexFromId(PQgetvalue(res, i, 0));

		if (p < 0)
			continue;
		players[p].rating = atof(PQgetvalue(res, i, 1));
		players[p].rd = atof(PQgetvalue(res, i, 2));
		players[p].volatility = atof(PQgetvalue(res, i, 3));
	}
	PQclear(res);
	SimExecCommand(conn, "COMMIT");
	stat_results++;

	/* everyone who stayed takes a break, then queues again */
	for (i = 0; i < g->n; i++)
		if (g->player[i] >= 0 && !g->left[i])
			MakeIdle(g->player[i], g->end + RandomBetween(opt.break_min, opt.break_max));

	free(ids.data);
	free(team_rating.data);
	free(team_rd.data);
	free(share.data);
	free(shrink.data);
	free(opp.data);
	free(opp_rd.data);
	free(score.data);
	free(won.data);
	free(left.data);
	free(ranks.data);
}

/* Ends every game whose time has come (all of them when `all`). */
static void
FinishGames(double now, bool all)
{
	int			i = 0;

	while (i < ngames)
	{
		SimGame    *g = &games[i];
		int			k;

		if (!all && g->end > now)
		{
			i++;
			continue;
		}
		if (all && g->end > now)
			g->end = now > g->start ? now : g->start;
		FinishGame(g);
		for (k = 0; k < g->nteams; k++)
			free(g->team_names[k]);
		free(g->team_names);
		free(g->player);
		free(g->team);
		free(g->leave_at);
		free(g->left);
		games[i] = games[--ngames];
	}
}

/* ---------------------------------------------------------------- polls */

/*
 * A new proposal: reads its players and deadline and draws each of our
 * players' answer (--accept-rate).
 */
static void
StartProposal(long long match_id)
{
	char		id[24];
	const char *params[1] = {id};
	PGresult   *res;
	SimProposal *pr;
	double		created;
	int			i;

	snprintf(id, sizeof(id), "%lld", match_id);
	res = SimExec(conn,
				  "SELECT mp.player_id, extract(epoch FROM m.created_at)::float8,"
				  "       extract(epoch FROM m.acceptance_deadline)::float8"
				  "  FROM mm.match_players mp"
				  "  JOIN mm.matches m ON m.id OPERATOR(pg_catalog.=) mp.match_id"
				  " WHERE mp.match_id OPERATOR(pg_catalog.=) $1::bigint"
				  "   AND m.status OPERATOR(pg_catalog.=) 'proposed'"
				  " ORDER BY mp.player_id",
				  1, params, PGRES_TUPLES_OK);
	if (PQntuples(res) == 0)
	{
		/* settled already (a concurrent tick ended it): the next poll tells */
		PQclear(res);
		return;
	}
	proposals = GrowArray(proposals, &proposals_cap, nproposals + 1, sizeof(SimProposal));
	pr = &proposals[nproposals++];
	memset(pr, 0, sizeof(*pr));
	pr->match_id = match_id;
	created = atof(PQgetvalue(res, 0, 1)) - epoch;
	pr->deadline = atof(PQgetvalue(res, 0, 2)) - epoch;
	pr->n = PQntuples(res);
	pr->player = malloc(sizeof(int) * pr->n);
	pr->answer_at = malloc(sizeof(double) * pr->n);
	pr->accept = malloc(sizeof(bool) * pr->n);
	pr->answered = calloc(pr->n, sizeof(bool));
	if (pr->player == NULL || pr->answer_at == NULL || pr->accept == NULL || pr->answered == NULL)
		SimFatal("out of memory");
	for (i = 0; i < pr->n; i++)
	{
		/* answers come 1 to 5 s after the proposal, and before the deadline */
		double		latest = pr->deadline - created - 0.5;
		double		delay = RandomBetween(1, 5);

		if (delay > latest)
			delay = latest > 0 ? latest : 0;
		pr->player[i] = PlayerIndexFromId(PQgetvalue(res, i, 0));
		pr->answer_at[i] = created + delay;
		if (opt.dodge_rate >= 0)
		{
			/* a dodge (reject), else accept or never answer (an acceptance timeout) */
			pr->accept[i] = RandomUniform() >= opt.dodge_rate;
			if (pr->accept[i] && RandomUniform() >= opt.accept_rate)
			{
				pr->accept[i] = false;
				pr->answer_at[i] = -1;
			}
		}
		else
		{
			pr->accept[i] = RandomUniform() < opt.accept_rate;
			/* half of those who do not accept say so; the others never answer */
			if (!pr->accept[i] && RandomUniform() < 0.5)
				pr->answer_at[i] = -1;
		}
		if (pr->player[i] < 0)
			pr->answer_at[i] = -1;	/* not ours: someone else answers */
	}
	PQclear(res);
	stat_proposals++;
}

/* Frees a proposal's arrays and removes it from the list. */
static void
EndProposal(int k)
{
	free(proposals[k].player);
	free(proposals[k].answer_at);
	free(proposals[k].accept);
	free(proposals[k].answered);
	proposals[k] = proposals[--nproposals];
}

/*
 * The answers whose time has come, through mm.accept_match at that time (all
 * of them in one call of mm_sim.answer_proposals, which skips an answer to a
 * match that is no longer proposed).  A proposal ends when an answer settles
 * it (ready or cancelled), or at its deadline (the tick cancels it).
 */
static void
AnswerProposals(double now)
{
	TextBuf		match_ids,
				player_ids,
				accepts,
				times;
	int			nanswers = 0;
	int			k,
				i;

	if (nproposals == 0)
		return;
	BufInit(&match_ids, "{");
	BufInit(&player_ids, "{");
	BufInit(&accepts, "{");
	BufInit(&times, "{");
	for (k = 0; k < nproposals; k++)
	{
		SimProposal *pr = &proposals[k];

		for (i = 0; i < pr->n; i++)
		{
			if (pr->answered[i] || pr->answer_at[i] < 0 || pr->answer_at[i] > now)
				continue;
			pr->answered[i] = true;
			BufElement(&match_ids, "%.0f", (double) pr->match_id);
			if (player_ids.len > 1)
				player_ids.len = Append(&player_ids.data, &player_ids.cap, player_ids.len, ",");
			player_ids.len = Append(&player_ids.data, &player_ids.cap, player_ids.len, "\"%s\"",
									PlayerId(pr->player[i]));
			if (accepts.len > 1)
				accepts.len = Append(&accepts.data, &accepts.cap, accepts.len, ",");
			accepts.len = Append(&accepts.data, &accepts.cap, accepts.len, "%s",
								 pr->accept[i] ? "t" : "f");
			BufElement(&times, "%.6f", epoch + pr->answer_at[i]);
			nanswers++;
		}
	}
	if (nanswers > 0)
	{
		const char *params[4];
		PGresult   *res;

		match_ids.len = Append(&match_ids.data, &match_ids.cap, match_ids.len, "}");
		player_ids.len = Append(&player_ids.data, &player_ids.cap, player_ids.len, "}");
		accepts.len = Append(&accepts.data, &accepts.cap, accepts.len, "}");
		times.len = Append(&times.data, &times.cap, times.len, "}");
		params[0] = match_ids.data;
		params[1] = player_ids.data;
		params[2] = accepts.data;
		params[3] = times.data;
		res = SimExec(conn,
					  "SELECT match_id, outcome FROM mm_sim.answer_proposals($1::bigint[], $2::text[],"
					  "                                                       $3::boolean[], $4::float8[])",
					  4, params, PGRES_TUPLES_OK);
		for (i = 0; i < PQntuples(res); i++)
		{
			long long	match_id = atoll(PQgetvalue(res, i, 0));
			const char *outcome = PQgetvalue(res, i, 1);

			if (strcmp(outcome, "proposed") == 0)
				continue;
			for (k = 0; k < nproposals && proposals[k].match_id != match_id; k++)
				;
			if (k == nproposals)
				continue;
			if (strcmp(outcome, "cancelled") == 0)
				stat_proposals_failed++;
			need_poll = true;
			EndProposal(k);
		}
		PQclear(res);
	}
	free(match_ids.data);
	free(player_ids.data);
	free(accepts.data);
	free(times.data);

	/* past its deadline and not settled by an answer: the tick times it out */
	k = 0;
	while (k < nproposals)
	{
		if (now > proposals[k].deadline)
		{
			stat_proposals_failed++;
			EndProposal(k);
		}
		else
			k++;
	}
}

/*
 * Reads what became of the tickets still searching: matched ones start a
 * game, timed-out or cancelled ones send their players back to idle, and a
 * newly proposed one starts its players' answers.
 */
static void
PollTickets(double now)
{
	long long  *ids;
	long long  *new_matches;
	int			nnew = 0;
	char	   *idarray;
	const char *params[1];
	PGresult   *res;
	int			i;

	if (ntickets == 0)
		return;
	ids = malloc(sizeof(long long) * ntickets);
	new_matches = malloc(sizeof(long long) * ntickets);
	if (ids == NULL || new_matches == NULL)
		SimFatal("out of memory");
	for (i = 0; i < ntickets; i++)
		ids[i] = tickets[i].id;
	idarray = SimIdArray(ids, ntickets);
	params[0] = idarray;
	res = SimExec(conn,
				  "SELECT t.id, t.status, coalesce(t.match_id, 0),"
				  "       coalesce(extract(epoch FROM t.matched_at OPERATOR(pg_catalog.-) t.created_at)::float8, 0)"
				  "  FROM mm.tickets t"
				  " WHERE t.id OPERATOR(pg_catalog.=) ANY ($1::bigint[])"
				  "   AND t.status OPERATOR(pg_catalog.<>) 'searching'"
				  " ORDER BY t.id",
				  1, params, PGRES_TUPLES_OK);
	for (i = 0; i < PQntuples(res); i++)
	{
		long long	id = atoll(PQgetvalue(res, i, 0));
		const char *status = PQgetvalue(res, i, 1);
		long long	match_id = atoll(PQgetvalue(res, i, 2));
		int			k,
					j;

		for (k = 0; k < ntickets && tickets[k].id != id; k++)
			;
		if (k == ntickets)
			continue;
		if (strcmp(status, "proposed") == 0)
		{
			/* the first of the match's tickets seen starts the proposal */
			if (tickets[k].proposal != match_id)
			{
				int			other;

				for (other = 0; other < ntickets && tickets[other].proposal != match_id; other++)
					;
				if (other == ntickets)
					StartProposal(match_id);
				tickets[k].proposal = match_id;
			}
			continue;
		}
		if (strcmp(status, "matched") == 0)
		{
			stat_matched++;
			stat_wait_sum += atof(PQgetvalue(res, i, 3));
			for (j = 0; j < nnew && new_matches[j] != match_id; j++)
				;
			if (j == nnew)
				new_matches[nnew++] = match_id;
		}
		else
		{
			if (strcmp(status, "timed_out") == 0)
				stat_timed_out++;
			for (j = 0; j < tickets[k].nplayers; j++)
				MakeIdle(tickets[k].players[j], now + RandomBetween(opt.break_min, opt.break_max));
		}
		tickets[k] = tickets[--ntickets];
	}
	PQclear(res);
	if (nnew > 0)
		StartGames(new_matches, nnew, now);
	free(idarray);
	free(ids);
	free(new_matches);
}

/*
 * Cancels what is still searching at the end of a real-time run.  A ticket
 * in a proposed match is first put back to searching with the match
 * requeued, so that no proposal is left with a cancelled ticket in it.
 */
static void
CancelRemaining(void)
{
	int			i;

	if (have_lifecycle && ntickets > 0)
	{
		long long  *ids = malloc(sizeof(long long) * ntickets);
		char	   *idarray;
		const char *params[1];

		if (ids == NULL)
			SimFatal("out of memory");
		for (i = 0; i < ntickets; i++)
			ids[i] = tickets[i].id;
		idarray = SimIdArray(ids, ntickets);
		params[0] = idarray;
		PQclear(SimExec(conn,
						"SELECT mm.requeue_match(m.id, 'simulation ended')"
						"  FROM mm.matches m"
						" WHERE m.status OPERATOR(pg_catalog.=) 'proposed'"
						"   AND m.id OPERATOR(pg_catalog.=) ANY (SELECT t.match_id FROM mm.tickets_active t"
						"                                         WHERE t.id OPERATOR(pg_catalog.=) ANY ($1::bigint[]))"
						" ORDER BY m.id",
						1, params, PGRES_TUPLES_OK));
		free(idarray);
		free(ids);
		while (nproposals > 0)
			EndProposal(nproposals - 1);
	}

	for (i = 0; i < ntickets; i++)
	{
		char		id[24];
		const char *params[1] = {id};

		snprintf(id, sizeof(id), "%lld", tickets[i].id);
		PQclear(SimExec(conn, "SELECT mm.cancel_ticket($1::bigint)", 1, params, PGRES_TUPLES_OK));
	}
}

/* ------------------------------------------------------------- progress */

/* The progress line: tickets, matches, games in progress, average wait. */
static void
Progress(double now, bool final)
{
	static double last_wall = -1e9;
	static double last_now = -1e9;
	static int	tty = -1;
	char		refused[48];

	if (opt.quiet)
		return;
	if (tty < 0)
		tty = isatty(fileno(stderr));
	/* on a terminal a line redrawn in place 5 times a second; in a log a line a minute */
	if (!final)
	{
		if (tty && WallClock() - last_wall < 0.2)
			return;
		if (!tty && now - last_now < (opt.clock == SIM_CLOCK_SIMULATED ? 60 : 10))
			return;
	}
	last_wall = WallClock();
	last_now = now;
	snprintf(refused, sizeof(refused), " | refused %ld", stat_refused);
	fprintf(stderr, "%s[%s %2d:%02d] tickets %ld, waiting %d, matched %ld, timed out %ld | "
			"proposals %ld, not accepted %ld | games %ld, playing %d, results %ld, quits %ld | "
			"avg wait %.1f s%s%s",
			tty ? "\r\033[K" : "",
			opt.clock == SIM_CLOCK_SIMULATED ? "sim" : "live",
			(int) (now / 60), (int) fmod(now, 60), stat_tickets, ntickets, stat_matched,
			stat_timed_out, stat_proposals, stat_proposals_failed, stat_matches, ngames,
			stat_results, stat_leavers,
			stat_matched > 0 ? stat_wait_sum / stat_matched : 0.0,
			opt.penalties || stat_refused > 0 ? refused : "", tty && !final ? "" : "\n");
	fflush(stderr);
}

/* ------------------------------------------------------------------ run */

/* Creates mm_sim.players, forgets an earlier run of the same tag, and finds the rating function. */
static void
PrepareSchema(void)
{
	SimExecCommand(conn, "SET client_min_messages = warning");
	/* two simulators may start at once (the demo's live run and replay) */
	SimExecCommand(conn, "BEGIN");
	PQclear(SimExec(conn, "SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('mm_sim schema'))",
					0, NULL, PGRES_TUPLES_OK));
	SimExecCommand(conn, "CREATE SCHEMA IF NOT EXISTS mm_sim");
	SimExecCommand(conn,
				   "CREATE TABLE IF NOT EXISTS mm_sim.players ("
				   " id text PRIMARY KEY,"
				   " run text NOT NULL,"
				   " true_skill float8 NOT NULL,"
				   " initial_rating float8 NOT NULL,"
				   " rating float8 NOT NULL,"
				   " rd float8 NOT NULL,"
				   " volatility float8 NOT NULL,"
				   " games integer NOT NULL DEFAULT 0,"
				   " wins integer NOT NULL DEFAULT 0,"
				   " updated_at timestamptz)");
	SimExecCommand(conn,
				   "COMMENT ON TABLE mm_sim.players IS"
				   " 'The simulator''s players: hidden true skill and the stored rating outcomes update'");
	/*
	 * Answers to proposed matches, several in one call, in order; an answer
	 * to a match that is no longer proposed, or after its deadline, is not
	 * sent.  Returns each match's status after its answers.
	 */
	if (SimFunctionExists(conn, "mm.accept_match(bigint,text,boolean,timestamptz)"))
		SimExecCommand(conn,
					   "CREATE OR REPLACE FUNCTION mm_sim.answer_proposals("
					   "   match_ids bigint[], player_ids text[], accepts boolean[], times float8[])"
					   " RETURNS TABLE (match_id bigint, outcome text)"
					   " LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $f$\n"
					   "DECLARE\n"
					   "  st text;\n"
					   "  deadline timestamptz;\n"
					   "  outcomes jsonb := '{}';\n"
					   "BEGIN\n"
					   "  FOR i IN 1 .. coalesce(cardinality(match_ids), 0) LOOP\n"
					   "    SELECT m.status, m.acceptance_deadline INTO st, deadline\n"
					   "      FROM mm.matches m WHERE m.id = match_ids[i];\n"
					   "    IF st = 'proposed' AND to_timestamp(times[i]) <= deadline THEN\n"
					   "      st := mm.accept_match(match_ids[i], player_ids[i], accepts[i], to_timestamp(times[i]));\n"
					   "    END IF;\n"
					   "    outcomes := outcomes || jsonb_build_object(match_ids[i]::text, coalesce(st, 'cancelled'));\n"
					   "  END LOOP;\n"
					   "  RETURN QUERY SELECT o.key::bigint, o.value FROM jsonb_each_text(outcomes) o ORDER BY 1;\n"
					   "END\n"
					   "$f$");
	SimExecCommand(conn, "COMMIT");
	have_lifecycle = SimFunctionExists(conn, "mm.complete_match(bigint,timestamptz)")
		&& SimFunctionExists(conn, "mm.leave_match(bigint,text,timestamptz)")
		&& SimFunctionExists(conn, "mm.accept_match(bigint,text,boolean,timestamptz)")
		&& SimFunctionExists(conn, "mm.assign(bigint,text,jsonb)");
	have_report_result = SimFunctionExists(conn, "mm.report_result(bigint,jsonb,timestamptz)");
	{
		const char *params[1] = {opt.run};

		/*
		 * A run tag is reused from scratch: its old players, tickets and
		 * matches go.  A player in a live match cannot queue again, so the
		 * earlier run's live matches end first: proposed ones are requeued
		 * (their tickets are cancelled below), the others completed.
		 */
		if (have_lifecycle)
		{
			PQclear(SimExec(conn,
							"SELECT CASE WHEN m.status OPERATOR(pg_catalog.=) 'proposed'"
							"            THEN mm.requeue_match(m.id, 'simulator run restarted')::text"
							"            ELSE mm.complete_match(m.id)::text END"
							"  FROM mm.matches m"
							" WHERE m.status OPERATOR(pg_catalog.=) ANY (ARRAY['proposed', 'ready', 'assigned'])"
							"   AND EXISTS (SELECT FROM mm.match_players mp"
							"                WHERE mp.match_id OPERATOR(pg_catalog.=) m.id"
							"                  AND pg_catalog.starts_with(mp.player_id, $1 OPERATOR(pg_catalog.||) '-'))"
							" ORDER BY m.id",
							1, params, PGRES_TUPLES_OK));
		}
		PQclear(SimExec(conn,
						"SELECT mm.cancel_ticket(t.ticket_id)"
						"  FROM (SELECT DISTINCT tp.ticket_id FROM mm.ticket_players tp"
						"         WHERE tp.active AND pg_catalog.starts_with(tp.player_id,"
						"                                 $1 OPERATOR(pg_catalog.||) '-')) t",
						1, params, PGRES_TUPLES_OK));
		PQclear(SimExec(conn, "DELETE FROM mm_sim.players WHERE run OPERATOR(pg_catalog.=) $1",
						1, params, PGRES_COMMAND_OK));
	}
	if (SimFunctionExists(conn, "mm.glicko2_update(float8,float8,float8,float8[],float8[],float8[])")
		|| SimFunctionExists(conn, "mm.glicko2_update(float8,float8,float8,float8[],float8[],float8[],float8)"))
		rating_method = RATING_GLICKO2;
	else if (SimFunctionExists(conn, "mm.elo_update(float8,float8,float8,float8)"))
		rating_method = RATING_ELO;
	else
	{
		rating_method = RATING_NONE;
		fprintf(stderr, "mm_sim: no rating function (mm.glicko2_update, mm.elo_update): ratings stay as placed\n");
	}
	have_match_results = SimRelationExists(conn, "mm.match_results");
	if (!have_match_results)
		fprintf(stderr, "mm_sim: mm.match_results does not exist: outcomes update ratings only\n");
}

/* The main loop, for both clocks: arrivals, ticks, what became of the tickets, game ends. */
static void
Run(void)
{
	double		now = 0;
	double		wall_start = WallClock();
	double		last_tick = -1e9;
	double		last_poll = -1e9;
	double		drain_started = -1;
	int			qi;

	epoch = opt.clock == SIM_CLOCK_SIMULATED ? SIM_DEFAULT_EPOCH : wall_start;
	for (qi = 0; qi < nqueues; qi++)
		queues[qi].next_arrival = RandomBetween(0, opt.interval_max);

	for (;;)
	{
		bool		arrivals_done = true;
		long		formed;

		if (opt.clock == SIM_CLOCK_REAL)
			now = WallClock() - epoch;
		RunArrivals(now);
		for (qi = 0; qi < nqueues; qi++)
			if (!ArrivalsDone(&queues[qi], now))
				arrivals_done = false;

		formed = 0;
		if (opt.clock == SIM_CLOCK_SIMULATED || (opt.self_tick && now - last_tick >= opt.tick_interval))
		{
			formed = TickQueues(now);
			last_tick = now;
		}
		/*
		 * Simulated time reads the tickets back when a tick formed matches,
		 * and every 5 s for timeouts; real time twice a second.
		 */
		if (opt.clock == SIM_CLOCK_SIMULATED ? (formed > 0 || need_poll || now - last_poll >= 5)
			: (need_poll || now - last_poll >= 0.5))
		{
			need_poll = false;
			PollTickets(now);
			last_poll = now;
		}
		AnswerProposals(now);
		LeaveGames(now);
		FinishGames(now, false);
		Progress(now, false);

		if (arrivals_done)
		{
			if (ntickets == 0 && ngames == 0)
				break;
			if (opt.clock == SIM_CLOCK_REAL)
			{
				if (drain_started < 0)
					drain_started = now;
				/* searching tickets get `drain` seconds, then are cancelled */
				if (ntickets > 0 && (now - drain_started >= opt.drain_seconds || interrupted))
				{
					CancelRemaining();
					PollTickets(now);
				}
				if (interrupted)
				{
					FinishGames(now, true);
					break;
				}
			}
			else if (interrupted)
			{
				FinishGames(now, true);
				break;
			}
		}

		if (opt.clock == SIM_CLOCK_SIMULATED)
		{
			now += opt.tick_interval;
			/* nothing left to match: skip ahead to the next game's end */
			if (arrivals_done && ntickets == 0 && ngames > 0)
			{
				double		next_end = games[0].end;
				int			i;

				for (i = 1; i < ngames; i++)
					if (games[i].end < next_end)
						next_end = games[i].end;
				if (next_end > now)
					now += ceil((next_end - now) / opt.tick_interval) * opt.tick_interval;
			}
		}
		else
			SleepSeconds(0.2);
	}
	run_end = now;
	Progress(now, true);
	if (opt.clock == SIM_CLOCK_SIMULATED)
		fprintf(stderr, "simulated %.0f s of matchmaking in %.1f s of wall time\n",
				now, WallClock() - wall_start);
}

/* ---------------------------------------------------------------- options */

/* Prints the options. */
static void
Usage(FILE *out)
{
	fprintf(out,
			"mm_sim: a matchmaking simulator for the matchmaking extension\n"
			"\n"
			"Usage: mm_sim [options]\n"
			"  --flexmatch             create the FlexMatch benchmark's queues (Radiant vs Dire:\n"
			"                          <prefix>classic, <prefix>survival, <prefix>practice,\n"
			"                          <prefix>all as --rule-sets says) and\n"
			"                          print our figures beside the published ones\n"
			"  --rule-sets A,B,...     --flexmatch: which rule sets get a queue, of classic,\n"
			"                          survival, practice and all (FlexMatch's multi-mode set:\n"
			"                          a list of modes per ticket and a compound rule; queue\n"
			"                          <prefix>all); default classic,survival,practice\n"
			"  --prefix TEXT           queue name prefix for --flexmatch (default flexmatch_)\n"
			"  --roles                 create two 5v5 role queues (one tank, one healer, three dps\n"
			"                          a team; FlexMatch's Classic rules): roles_5v5, and\n"
			"                          roles_5v5_autofill with autofill after 60 s (protect 3\n"
			"                          games); print time to match per role\n"
			"  --role-second P         --roles: share of players who name a second role\n"
			"                          (default 0.6)\n"
			"  --penalties             create a 3v3 queue with penalties (penalties_3v3: cooldowns\n"
			"                          for dodges, acceptance timeouts and leaves, a low-priority\n"
			"                          pool of at most 120 s); print the offences and the\n"
			"                          pool's waits, and fail if a penalised ticket starved\n"
			"  --dodge-rate P          the chance that a player rejects a proposed match (a dodge);\n"
			"                          the others accept with --accept-rate or never answer\n"
			"                          (default 0.05 with --penalties; without: --accept-rate\n"
			"                          alone, half of the others rejecting)\n"
			"  --queues A,B,...        feed these existing queues instead\n"
			"  --realtime              real clock: tickets arrive as time passes and pg_cron\n"
			"                          ticks the queues (mm.schedule); default: simulated time,\n"
			"                          mm_sim calls mm.tick(queue, now) itself\n"
			"  --self-tick             with --realtime: call mm.tick itself every tick interval\n"
			"  --seconds N             arrivals stop after N seconds (default: simulated 0 =\n"
			"                          unlimited with --tickets, real time 60)\n"
			"  --tickets N             arrivals stop after N tickets per queue (default 840 with\n"
			"                          --flexmatch, --roles or --penalties: the article's 829 + 11\n"
			"                          Classic tickets)\n"
			"  --interval MIN-MAX      seconds between two tickets of a queue (default 2-6)\n"
			"  --party MIN-MAX         party size, capped by the queue's largest team (default 1-5;\n"
			"                          1-1 with --penalties)\n"
			"  --match-seconds N       average game length (default 600 simulated, 20 real time)\n"
			"  --break MIN-MAX         rest between a game and the next ticket (default 10-60\n"
			"                          simulated, 2-8 real time)\n"
			"  --leave-rate P          share of players who leave a game early (default 0.04;\n"
			"                          mm.leave_match)\n"
			"  --accept-rate P         in queues that ask for acceptance: the chance that a player\n"
			"                          accepts a proposed match (default 0.9; 0.98 with\n"
			"                          --penalties, of the players who do not dodge)\n"
			"  --acceptance-timeout S  --flexmatch, --roles and --penalties queues: seconds to\n"
			"                          accept (default 10; 0 = no acceptance step)\n"
			"  --tick-interval S       seconds between ticks (default 1)\n"
			"  --drain N               real time: seconds the last tickets may still wait before\n"
			"                          they are cancelled (default 30)\n"
			"  --seed N                random seed (default 1)\n"
			"  --run TAG               player id prefix, \"TAG-<n>\" (default sim)\n"
			"  --chart FILE            write time to match and quality over time as HTML + SVG\n"
			"  --dsn CONNINFO          libpq connection string (default: PG* environment)\n"
			"  --quiet                 no progress line\n"
			"  --help\n");
}

/* Parses a number in [min, max] or exits with a message naming the option. */
static double
ParseNumber(const char *option, const char *value, double min, double max)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(value, &end);
	if (errno != 0 || end == value || *end != '\0' || !(v >= min && v <= max))
		SimFatal("%s: \"%s\" is not a number between %g and %g", option, value, min, max);
	return v;
}

/* Parses "MIN-MAX" (each in [min, max], MIN <= MAX). */
static void
ParseRange(const char *option, const char *value, double min, double max,
		   double *lo, double *hi)
{
	char		buf[64];
	char	   *dash;

	if (strlen(value) >= sizeof(buf) || (dash = strchr(value, '-')) == NULL || dash == value)
		SimFatal("%s: \"%s\" is not a range MIN-MAX", option, value);
	memcpy(buf, value, dash - value);
	buf[dash - value] = '\0';
	*lo = ParseNumber(option, buf, min, max);
	*hi = ParseNumber(option, dash + 1, min, max);
	if (*hi < *lo)
		SimFatal("%s: \"%s\" has MAX below MIN", option, value);
}

/* True for the options that take a value. */
static bool
TakesValue(const char *option)
{
	static const char *const with_value[] = {
		"--prefix", "--rule-sets", "--queues", "--seconds", "--tickets", "--interval", "--party",
		"--match-seconds", "--break", "--leave-rate", "--accept-rate", "--acceptance-timeout",
		"--tick-interval", "--drain", "--seed", "--role-second", "--dodge-rate",
		"--run", "--chart", "--dsn"
	};
	size_t		i;

	for (i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
		if (strcmp(option, with_value[i]) == 0)
			return true;
	return false;
}

/* Reads the command line into opt, with the defaults that depend on the clock. */
static void
ParseOptions(int argc, char **argv)
{
	int			i;
	double		match_seconds = -1,
				break_min = -1,
				break_max = -1,
				seconds = -1,
				tickets = -1,
				accept_rate = -1;
	bool		party_given = false;

	opt.prefix = "flexmatch_";
	opt.rule_sets = "classic,survival,practice";
	opt.clock = SIM_CLOCK_SIMULATED;
	opt.interval_min = 2;
	opt.interval_max = 6;
	opt.party_min = 1;
	opt.party_max = 5;
	opt.leave_rate = 0.04;
	opt.role_second = 0.6;
	opt.dodge_rate = -1;
	opt.acceptance_timeout = 10;
	opt.tick_interval = 1;
	opt.drain_seconds = 30;
	opt.seed = 1;
	opt.run = "sim";

	for (i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool		takes_value = true;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
		{
			Usage(stdout);
			exit(0);
		}
		else if (strcmp(a, "--flexmatch") == 0)
			opt.flexmatch = true, takes_value = false;
		else if (strcmp(a, "--roles") == 0)
			opt.roles = true, takes_value = false;
		else if (strcmp(a, "--penalties") == 0)
			opt.penalties = true, takes_value = false;
		else if (strcmp(a, "--realtime") == 0)
			opt.clock = SIM_CLOCK_REAL, takes_value = false;
		else if (strcmp(a, "--self-tick") == 0)
			opt.self_tick = true, takes_value = false;
		else if (strcmp(a, "--quiet") == 0)
			opt.quiet = true, takes_value = false;
		else if (!TakesValue(a))
			SimFatal("unknown option \"%s\" (see --help)", a);
		else if (v == NULL)
			SimFatal("%s needs a value (see --help)", a);
		else if (strcmp(a, "--prefix") == 0)
			opt.prefix = v;
		else if (strcmp(a, "--rule-sets") == 0)
			opt.rule_sets = v;
		else if (strcmp(a, "--queues") == 0)
			opt.queue_list = v;
		else if (strcmp(a, "--seconds") == 0)
			seconds = ParseNumber(a, v, 0, 1e7);
		else if (strcmp(a, "--tickets") == 0)
			tickets = ParseNumber(a, v, 0, 1e7);
		else if (strcmp(a, "--interval") == 0)
			ParseRange(a, v, 0.001, 86400, &opt.interval_min, &opt.interval_max);
		else if (strcmp(a, "--party") == 0)
		{
			double		lo,
						hi;

			ParseRange(a, v, 1, SIM_MAX_PARTY, &lo, &hi);
			if (lo != floor(lo) || hi != floor(hi))
				SimFatal("%s: \"%s\" is not a range of whole numbers", a, v);
			opt.party_min = (int) lo;
			opt.party_max = (int) hi;
			party_given = true;
		}
		else if (strcmp(a, "--match-seconds") == 0)
			match_seconds = ParseNumber(a, v, 0, 1e6);
		else if (strcmp(a, "--break") == 0)
			ParseRange(a, v, 0, 1e6, &break_min, &break_max);
		else if (strcmp(a, "--role-second") == 0)
			opt.role_second = ParseNumber(a, v, 0, 1);
		else if (strcmp(a, "--leave-rate") == 0)
			opt.leave_rate = ParseNumber(a, v, 0, 1);
		else if (strcmp(a, "--accept-rate") == 0)
			accept_rate = ParseNumber(a, v, 0, 1);
		else if (strcmp(a, "--dodge-rate") == 0)
			opt.dodge_rate = ParseNumber(a, v, 0, 1);
		else if (strcmp(a, "--acceptance-timeout") == 0)
			opt.acceptance_timeout = ParseNumber(a, v, 0, 86400);
		else if (strcmp(a, "--tick-interval") == 0)
			opt.tick_interval = ParseNumber(a, v, 0.01, 3600);
		else if (strcmp(a, "--drain") == 0)
			opt.drain_seconds = ParseNumber(a, v, 0, 1e6);
		else if (strcmp(a, "--seed") == 0)
			opt.seed = (uint64_t) ParseNumber(a, v, 0, 1e15);
		else if (strcmp(a, "--run") == 0)
			opt.run = v;
		else if (strcmp(a, "--chart") == 0)
			opt.chart = v;
		else if (strcmp(a, "--dsn") == 0)
			opt.conninfo = v;
		else
			SimFatal("unknown option \"%s\" (see --help)", a);
		if (takes_value)
			i++;
	}

	if (!opt.flexmatch && !opt.roles && !opt.penalties && opt.queue_list == NULL)
		SimFatal("say which queues to feed: --flexmatch, --roles, --penalties or --queues A,B,... (see --help)");
	/* with penalties, players dodge; most of the others answer */
	if (opt.penalties && opt.dodge_rate < 0)
		opt.dodge_rate = 0.05;
	opt.accept_rate = accept_rate >= 0 ? accept_rate : (opt.penalties ? 0.98 : 0.9);
	/*
	 * Solo players with penalties: in 3v3 a party of two needs a solo, and
	 * the pool holding penalised solos apart tips the twos into piling up,
	 * a wait that is the traffic's, not the pool's (--party 1-2 shows it)
	 */
	if (opt.penalties && !party_given)
		opt.party_min = opt.party_max = 1;
	if (strlen(opt.run) == 0 || strlen(opt.run) > 40 || strchr(opt.run, '"') || strchr(opt.run, '\\'))
		SimFatal("--run: a tag of 1 to 40 characters without quotes or backslashes");
	opt.match_seconds = match_seconds >= 0 ? match_seconds : (opt.clock == SIM_CLOCK_SIMULATED ? 600 : 20);
	opt.break_min = break_min >= 0 ? break_min : (opt.clock == SIM_CLOCK_SIMULATED ? 10 : 2);
	opt.break_max = break_max >= 0 ? break_max : (opt.clock == SIM_CLOCK_SIMULATED ? 60 : 8);
	opt.seconds = seconds >= 0 ? seconds : (opt.clock == SIM_CLOCK_REAL ? 60 : 0);
	opt.tickets = tickets >= 0 ? (int) tickets
		: ((opt.flexmatch || opt.roles || opt.penalties) && seconds < 0 ? 840 : 0);
	if (opt.seconds <= 0 && opt.tickets <= 0)
		SimFatal("the run would never end: give --seconds or --tickets");
	if (opt.clock == SIM_CLOCK_SIMULATED && opt.self_tick)
		SimFatal("--self-tick goes with --realtime (simulated time always ticks itself)");
}

/* How far outcomes moved the stored ratings towards the hidden true skills. */
static void
PrintRatingSummary(void)
{
	const char *params[1] = {opt.run};
	PGresult   *res = SimExec(conn,
							  "SELECT pg_catalog.count(*),"
							  "       coalesce(pg_catalog.avg(pg_catalog.abs(initial_rating OPERATOR(pg_catalog.-) true_skill)), 0),"
							  "       coalesce(pg_catalog.avg(pg_catalog.abs(rating OPERATOR(pg_catalog.-) true_skill)), 0),"
							  "       coalesce(pg_catalog.avg(games), 0), coalesce(pg_catalog.sum(games), 0)"
							  "  FROM mm_sim.players WHERE run OPERATOR(pg_catalog.=) $1",
							  1, params, PGRES_TUPLES_OK);

	printf("players %s, player-games %s, early leavers %ld; ratings (%s): mean |rating - true skill| "
		   "%.0f when placed, %.0f now, after %.1f games on average\n",
		   PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 4), stat_leavers,
		   rating_method == RATING_GLICKO2 ? "Glicko-2, mm.glicko2_update" :
		   rating_method == RATING_ELO ? "Elo, mm.elo_update" : "no rating function",
		   atof(PQgetvalue(res, 0, 1)), atof(PQgetvalue(res, 0, 2)), atof(PQgetvalue(res, 0, 3)));
	PQclear(res);
}

/* The command line, echoed above the figures so they say how they were made. */
static char *
CommandLine(int argc, char **argv)
{
	size_t		cap = 256,
				len = 0;
	char	   *line = malloc(cap);
	int			i;

	if (line == NULL)
		SimFatal("out of memory");
	line[0] = '\0';
	for (i = 0; i < argc; i++)
		len = Append(&line, &cap, len, "%s%s", i > 0 ? " " : "",
					 i == 0 ? "mm_sim" : argv[i]);
	return line;
}

int
main(int argc, char **argv)
{
	char	   *command_line;
	bool		starved;

	ParseOptions(argc, argv);
	command_line = CommandLine(argc, argv);
	RandomSeed(opt.seed);
	signal(SIGINT, OnSignal);
	signal(SIGTERM, OnSignal);
	setvbuf(stdout, NULL, _IOLBF, 0);

	conn = SimConnect(opt.conninfo);
	PrepareSchema();
	if (opt.flexmatch)
		CreateFlexMatchQueues();
	if (opt.roles)
		CreateRoleQueues();
	if (opt.penalties)
		CreatePenaltiesQueue();
	if (opt.queue_list)
	{
		char	   *list = StrDup(opt.queue_list);
		char	   *save = NULL;
		char	   *name;

		for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save))
			AddQueue(name);
		free(list);
	}
	LoadQueueShapes();

	Run();

	SimPrintFigures(conn, queues, nqueues, opt.flexmatch, opt.accept_rate,
					opt.flexmatch ? opt.acceptance_timeout : 0, command_line);
	SimPrintRoleFigures(conn, queues, nqueues);
	starved = !SimPrintPenaltyFigures(conn, queues, nqueues, opt.tick_interval, epoch, run_end);
	PrintRatingSummary();
	if (opt.chart)
		SimWriteChart(conn, queues, nqueues, epoch, 0, opt.chart);
	PQfinish(conn);
	free(command_line);
	if (starved)
		fprintf(stderr, "mm_sim: a penalised ticket waited past the low-priority pool's bound (see above)\n");
	return interrupted ? 130 : starved ? 3 : 0;
}
