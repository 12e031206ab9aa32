/*
 * sim_db.c
 *	  Thin libpq wrappers for the simulator: every failure is fatal, with the
 *	  server's message, because a simulation that silently skipped a step
 *	  would print wrong figures.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

/* Prints a message and exits with status 1. */
void
SimFatal(const char *fmt,...)
{
	va_list		args;

	fflush(stdout);
	/* on a terminal, leave the progress line first */
	fprintf(stderr, "%smm_sim: ", isatty(fileno(stderr)) ? "\n" : "");
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fputc('\n', stderr);
	exit(1);
}

/* Opens a connection (conninfo may be empty: the PG* environment decides). */
PGconn *
SimConnect(const char *conninfo)
{
	PGconn	   *conn = PQconnectdb(conninfo ? conninfo : "");

	if (PQstatus(conn) != CONNECTION_OK)
		SimFatal("cannot connect: %s", PQerrorMessage(conn));
	PQsetNoticeProcessor(conn, NULL, NULL);
	return conn;
}

/* Runs a parameterised statement (all parameters text); dies unless it returns `expected`. */
PGresult *
SimExec(PGconn *conn, const char *sql, int nparams, const char *const *params,
		ExecStatusType expected)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != expected)
		SimFatal("query failed: %s\nquery: %s", PQresultErrorMessage(res), sql);
	return res;
}

/* Runs a statement without parameters or result rows. */
void
SimExecCommand(PGconn *conn, const char *sql)
{
	PQclear(SimExec(conn, sql, 0, NULL, PGRES_COMMAND_OK));
}

/* True when a function with this exact signature exists (to_regprocedure). */
bool
SimFunctionExists(PGconn *conn, const char *signature)
{
	const char *params[1] = {signature};
	PGresult   *res = SimExec(conn, "SELECT pg_catalog.to_regprocedure($1) IS NOT NULL",
							  1, params, PGRES_TUPLES_OK);
	bool		exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;

	PQclear(res);
	return exists;
}

/* True when a table or view with this (qualified) name exists. */
bool
SimRelationExists(PGconn *conn, const char *name)
{
	const char *params[1] = {name};
	PGresult   *res = SimExec(conn, "SELECT pg_catalog.to_regclass($1) IS NOT NULL",
							  1, params, PGRES_TUPLES_OK);
	bool		exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;

	PQclear(res);
	return exists;
}

/* Formats ids as a bigint[] literal, e.g. "{1,2,3}"; the caller frees it. */
char *
SimIdArray(const long long *ids, int n)
{
	size_t		cap = 3 + (size_t) n * 21;
	char	   *out = malloc(cap);
	size_t		len = 0;
	int			i;

	if (out == NULL)
		SimFatal("out of memory");
	out[len++] = '{';
	for (i = 0; i < n; i++)
		len += snprintf(out + len, cap - len, "%s%lld", i > 0 ? "," : "", ids[i]);
	out[len++] = '}';
	out[len] = '\0';
	return out;
}
