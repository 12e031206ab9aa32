-- Team balancing and OpenSkill (src/team_balance*.c, src/ratings_openskill.c;
-- docs/team-balancing.md): mm.balance_teams, and the OpenSkill update and
-- win prediction.
--
-- Pure functions of their arguments, in C: open to PUBLIC (the default for
-- a function) and granted to mm_admin like every routine.

-- Team numbers 1..team_count per rating; parties (equal numbers) share a team.
-- Not STRICT because parties may be NULL; the C code returns NULL for NULL
-- ratings or team_count.
CREATE FUNCTION mm.balance_teams(ratings float8[], team_count int DEFAULT 2,
								 parties int[] DEFAULT NULL)
RETURNS int[]
AS 'MODULE_PATHNAME', 'mm_balance_teams'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.balance_teams(float8[], int, int[]) IS
'team number (1..team_count) of each rating, minimising the spread between the strongest and the weakest team total; sizes as even as the parties allow; exact up to 16 players, heuristic up to 200';
GRANT EXECUTE ON FUNCTION mm.balance_teams(float8[], integer, integer[]) TO mm_admin;

-- OpenSkill (Weng-Lin, Plackett-Luce), openskill.js 5 defaults; C in
-- src/ratings_openskill.c, declared next to the balancer that uses team
-- strength.
CREATE FUNCTION mm.openskill_rate(mu float8[], sigma float8[], team int[], rank int[])
RETURNS TABLE (mu float8, sigma float8)
AS 'MODULE_PATHNAME', 'mm_openskill_rate'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
ROWS 10;
COMMENT ON FUNCTION mm.openskill_rate(float8[], float8[], int[], int[]) IS
'OpenSkill (Weng-Lin Plackett-Luce) update after one game: new (mu, sigma) per player in input order; team groups players, lower rank is better, equal ranks tie';
GRANT EXECUTE ON FUNCTION mm.openskill_rate(float8[], float8[], integer[], integer[]) TO mm_admin;

CREATE FUNCTION mm.openskill_predict_win(mu float8[], sigma float8[], team int[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'mm_openskill_predict_win'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.openskill_predict_win(float8[], float8[], int[]) IS
'OpenSkill win probability of each team, in ascending team-number order; sums to 1';
GRANT EXECUTE ON FUNCTION mm.openskill_predict_win(float8[], float8[], integer[]) TO mm_admin;
