/*
 * sim.h
 *	  The matchmaking simulator (mm_sim): shared types and helpers.
 *
 * mm_sim.c drives players, tickets, ticks and game outcomes; sim_db.c wraps
 * libpq; sim_report.c prints the per-queue figures and writes the HTML chart.
 */
#ifndef MM_SIM_H
#define MM_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "libpq-fe.h"

#define SIM_REGIONS 3
#define SIM_MAX_PARTY 8
#define SIM_MAX_QUEUES 16

extern const char *const sim_region_names[SIM_REGIONS];

/* A queue the simulator feeds, with the figures published for it (if any). */
typedef struct SimQueue
{
	char		name[65];
	int			max_party;		/* the largest team of the queue caps the party */
	int			max_team;
	bool		multi_mode;		/* FlexMatch's "All" queue: tickets list their game modes */
	bool		roles;			/* a role queue: each player lists the roles they will play */
	bool		penalties;		/* its config has "penalties" (dodgers, leavers, low-priority pool) */
	double		next_arrival;	/* simulation seconds */
	int			tickets_made;
	/* every ticket this run created in the queue (for the final figures) */
	long long  *ticket_ids;
	int			nticket_ids;
	int			ticket_ids_cap;
	/* penalties: the tickets whose players were in the low-priority pool when created */
	long long  *penalised_ids;
	int			npenalised_ids;
	int			penalised_ids_cap;
	long		refused;		/* tickets refused: a player was cooling down (55000) */
	/* FlexMatch's published figures; < 0 when not published */
	double		published_completed;
	double		published_failed;
	double		published_avg_seconds;
} SimQueue;

/* The figures of one queue, computed from the tables at the end of a run. */
typedef struct SimQueueFigures
{
	long		completed;
	long		failed;
	long		cancelled;
	long		searching;
	double		avg_wait;		/* seconds, matched tickets; NaN when none */
	double		p95_wait;
	double		avg_quality;
	long		matches;
	long		proposals;		/* proposed matches of this run's tickets (acceptance) */
	long		proposals_failed;	/* of those: rejected or not answered in time */
} SimQueueFigures;

/* sim_db.c */
extern PGconn *SimConnect(const char *conninfo);
extern PGresult *SimExec(PGconn *conn, const char *sql, int nparams,
						 const char *const *params, ExecStatusType expected);
extern void SimExecCommand(PGconn *conn, const char *sql);
extern bool SimFunctionExists(PGconn *conn, const char *signature);
extern bool SimRelationExists(PGconn *conn, const char *name);
extern char *SimIdArray(const long long *ids, int n);
extern void SimFatal(const char *fmt,...) __attribute__((format(printf, 1, 2), noreturn));

/* sim_report.c */
extern void SimQueueFiguresLoad(PGconn *conn, const SimQueue *queue, SimQueueFigures *figures);
extern void SimPrintFigures(PGconn *conn, SimQueue *queues, int nqueues, bool flexmatch,
							double accept_rate, double acceptance_timeout,
							const char *command_line);
extern void SimPrintRoleFigures(PGconn *conn, SimQueue *queues, int nqueues);
extern bool SimPrintPenaltyFigures(PGconn *conn, SimQueue *queues, int nqueues,
								   double tick_interval, double epoch, double run_seconds);
extern void SimWriteChart(PGconn *conn, SimQueue *queues, int nqueues, double epoch,
						  double run_seconds, const char *path);

#endif							/* MM_SIM_H */
