/*
 * team_balance_sql.c
 *	  SQL entry point mm.balance_teams(ratings, team_count, parties).
 *
 * Validates the arguments and hands them to MmBalanceTeams (team_balance.c).
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/array.h"

#include "sql_arrays.h"
#include "team_balance.h"

PG_FUNCTION_INFO_V1(mm_balance_teams);

/*
 * mm.balance_teams(ratings float8[], team_count int DEFAULT 2,
 *					parties int[] DEFAULT NULL) RETURNS int[]
 *
 * Not STRICT so that parties may be NULL (everybody plays solo); NULL ratings
 * or team_count give NULL like a STRICT function would.
 */
Datum
mm_balance_teams(PG_FUNCTION_ARGS)
{
	double	   *ratings;
	int32	   *parties = NULL;
	int32		team_count;
	int			n;
	int		   *team_of;
	int32	   *result;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();

	ratings = MmFloat8Array(PG_GETARG_ARRAYTYPE_P(0), "ratings",
							MM_BALANCE_MAX_PLAYERS, true, &n);
	team_count = PG_GETARG_INT32(1);

	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ratings must not be empty")));
	/* team totals are sums of ratings: they must stay finite to be compared */
	{
		double		magnitude = 0.0;

		for (int i = 0; i < n; i++)
			magnitude += fabs(ratings[i]);
		if (!isfinite(magnitude))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("ratings are too large to balance: their sum overflows a double"),
					 errdetail("The sum of their absolute values must be below about 1.8e308.")));
	}
	if (team_count < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("team_count must be at least 2"),
				 errdetail("Got %d.", team_count)));
	if (team_count > n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("team_count must not exceed the number of players"),
				 errdetail("Got %d teams for %d players.", team_count, n)));

	if (!PG_ARGISNULL(2))
	{
		int			party_count;

		parties = MmInt4Array(PG_GETARG_ARRAYTYPE_P(2), "parties",
							  MM_MAX_ARRAY_ELEMENTS, &party_count);
		if (party_count != n)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("parties must have one element per rating"),
					 errdetail("parties has %d elements and ratings has %d.",
							   party_count, n)));
	}

	team_of = (int *) palloc(sizeof(int) * n);
	{
		MmBalanceInput input;

		input.n = n;
		input.ratings = ratings;
		input.party = parties;
		input.team_count = team_count;
		input.team_size = NULL;
		if (!MmBalanceTeams(&input, team_of, NULL))
		{
			int			groups = 0;

			/*
			 * With free sizes the only layout that cannot be placed is one
			 * with fewer parties (solo players counting as one each) than
			 * teams.
			 */
			for (int i = 0; i < n; i++)
			{
				bool		seen = false;

				for (int j = 0; j < i && !seen; j++)
					seen = parties != NULL && parties[j] == parties[i];
				if (!seen)
					groups++;
			}
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("parties cannot be placed into %d non-empty teams",
							team_count),
					 errdetail_plural("The %d players form only %d group (a party or a solo player), fewer than the teams.",
									  "The %d players form only %d groups (parties or solo players), fewer than the teams.",
									  groups, n, groups)));
		}
	}

	result = (int32 *) palloc(sizeof(int32) * n);
	for (int i = 0; i < n; i++)
		result[i] = team_of[i] + 1;
	PG_RETURN_ARRAYTYPE_P(MmBuildInt4Array(result, n));
}
