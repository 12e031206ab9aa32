-- Rating math (src/ratings_elo.c, ratings_glicko2.c, ratings_team.c,
-- ratings_smurf.c; docs/ratings.md): Elo, Glicko-2 (the type mm.glicko2, one
-- update, decay, and the rating-period aggregate mm.glicko2_period), team
-- ratings and win probability, smurf score and rating boost.
--
-- Pure functions of their arguments, in C: open to PUBLIC (the default for
-- a function) and granted to mm_admin like every routine.

-- Elo (src/ratings_elo.c)
CREATE FUNCTION mm.elo_expected(rating_a float8, rating_b float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_elo_expected'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.elo_expected(float8, float8) IS
'Elo expected score of rating_a against rating_b: 1 / (1 + 10^((rating_b - rating_a) / 400))';
GRANT EXECUTE ON FUNCTION mm.elo_expected(float8, float8) TO mm_admin;

CREATE FUNCTION mm.elo_update(rating float8, opponent float8, score float8, k float8 DEFAULT 32)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_elo_update'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.elo_update(float8, float8, float8, float8) IS
'New Elo rating after one game: rating + k * (score - elo_expected(rating, opponent)); score in [0, 1]';
GRANT EXECUTE ON FUNCTION mm.elo_update(float8, float8, float8, float8) TO mm_admin;

CREATE FUNCTION mm.elo_k_factor(games_played integer, rating float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_elo_k_factor'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.elo_k_factor(integer, float8) IS
'Elo K factor: 40 under 30 games played, otherwise 16 above rating 2400, otherwise 32';
GRANT EXECUTE ON FUNCTION mm.elo_k_factor(integer, float8) TO mm_admin;

-- Glicko-2 (src/ratings_glicko2.c)
CREATE TYPE mm.glicko2 AS (rating float8, rd float8, volatility float8);
COMMENT ON TYPE mm.glicko2 IS 'A Glicko-2 rating: rating and rating deviation on the Glicko scale, and volatility';

CREATE FUNCTION mm.glicko2_update(rating float8, rd float8, volatility float8,
								  opponent_ratings float8[], opponent_rds float8[],
								  scores float8[], tau float8 DEFAULT 0.5)
RETURNS mm.glicko2
AS 'MODULE_PATHNAME', 'mm_glicko2_update'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_update(float8, float8, float8, float8[], float8[], float8[], float8) IS
'Glicko-2 rating after one rating period (Glickman''s algorithm, Illinois iteration, epsilon 1e-6); empty arrays: a period without games, only rd grows';
GRANT EXECUTE ON FUNCTION mm.glicko2_update(float8, float8, float8, float8[], float8[], float8[], float8) TO mm_admin;

CREATE FUNCTION mm.glicko2_decay(rating float8, rd float8, volatility float8, periods integer DEFAULT 1)
RETURNS mm.glicko2
AS 'MODULE_PATHNAME', 'mm_glicko2_decay'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_decay(float8, float8, float8, integer) IS
'Glicko-2 rating after idle rating periods: rd grows by the volatility each period, up to 350';
GRANT EXECUTE ON FUNCTION mm.glicko2_decay(float8, float8, float8, integer) TO mm_admin;

-- Support functions of the aggregate mm.glicko2_period.  Not STRICT: the state
-- is internal, and the transition function handles NULL rows itself.
CREATE FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'mm_glicko2_period_transition'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8) IS
'Transition function of mm.glicko2_period: adds one game to the period''s sums';
GRANT EXECUTE ON FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8) TO mm_admin;

CREATE FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'mm_glicko2_period_transition'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8, float8) IS
'Transition function of mm.glicko2_period with tau: adds one game to the period''s sums';
GRANT EXECUTE ON FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8, float8) TO mm_admin;

CREATE FUNCTION mm.glicko2_period_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'mm_glicko2_period_combine'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_combine(internal, internal) IS
'Combine function of mm.glicko2_period: adds the sums of two partial states';
GRANT EXECUTE ON FUNCTION mm.glicko2_period_combine(internal, internal) TO mm_admin;

CREATE FUNCTION mm.glicko2_period_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'mm_glicko2_period_serialize'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_serialize(internal) IS
'Serialization function of mm.glicko2_period (state to bytea, for parallel workers)';
GRANT EXECUTE ON FUNCTION mm.glicko2_period_serialize(internal) TO mm_admin;

CREATE FUNCTION mm.glicko2_period_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'mm_glicko2_period_deserialize'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_deserialize(bytea, internal) IS
'Deserialization function of mm.glicko2_period';
GRANT EXECUTE ON FUNCTION mm.glicko2_period_deserialize(bytea, internal) TO mm_admin;

CREATE FUNCTION mm.glicko2_period_final(internal)
RETURNS mm.glicko2
AS 'MODULE_PATHNAME', 'mm_glicko2_period_final'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_final(internal) IS
'Final function of mm.glicko2_period: the rating after the period';
GRANT EXECUTE ON FUNCTION mm.glicko2_period_final(internal) TO mm_admin;

CREATE AGGREGATE mm.glicko2_period(rating float8, rd float8, volatility float8,
								   opponent_rating float8, opponent_rd float8, score float8) (
	SFUNC = mm.glicko2_period_transition,
	STYPE = internal,
	SSPACE = 64,
	FINALFUNC = mm.glicko2_period_final,
	COMBINEFUNC = mm.glicko2_period_combine,
	SERIALFUNC = mm.glicko2_period_serialize,
	DESERIALFUNC = mm.glicko2_period_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE mm.glicko2_period(float8, float8, float8, float8, float8, float8) IS
'One player''s Glicko-2 rating period over rows of games (GROUP BY player), tau 0.5; equal to glicko2_update over the same games';
GRANT EXECUTE ON FUNCTION mm.glicko2_period(float8, float8, float8, float8, float8, float8) TO mm_admin;

CREATE AGGREGATE mm.glicko2_period(rating float8, rd float8, volatility float8,
								   opponent_rating float8, opponent_rd float8, score float8,
								   tau float8) (
	SFUNC = mm.glicko2_period_transition,
	STYPE = internal,
	SSPACE = 64,
	FINALFUNC = mm.glicko2_period_final,
	COMBINEFUNC = mm.glicko2_period_combine,
	SERIALFUNC = mm.glicko2_period_serialize,
	DESERIALFUNC = mm.glicko2_period_deserialize,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE mm.glicko2_period(float8, float8, float8, float8, float8, float8, float8) IS
'One player''s Glicko-2 rating period over rows of games (GROUP BY player) with the system constant tau';
GRANT EXECUTE ON FUNCTION mm.glicko2_period(float8, float8, float8, float8, float8, float8, float8) TO mm_admin;

-- Teams (src/ratings_team.c)
CREATE FUNCTION mm.team_rating_transition(float8[], float8, float8)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'mm_team_rating_transition'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.team_rating_transition(float8[], float8, float8) IS
'Transition function of mm.team_rating: state {sum of rating * weight, sum of weight}';
GRANT EXECUTE ON FUNCTION mm.team_rating_transition(float8[], float8, float8) TO mm_admin;

CREATE FUNCTION mm.team_rating_combine(float8[], float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'mm_team_rating_combine'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.team_rating_combine(float8[], float8[]) IS
'Combine function of mm.team_rating: adds two partial states';
GRANT EXECUTE ON FUNCTION mm.team_rating_combine(float8[], float8[]) TO mm_admin;

CREATE FUNCTION mm.team_rating_final(float8[])
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_team_rating_final'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.team_rating_final(float8[]) IS
'Final function of mm.team_rating: the weighted mean, NULL when the weights sum to 0';
GRANT EXECUTE ON FUNCTION mm.team_rating_final(float8[]) TO mm_admin;

CREATE AGGREGATE mm.team_rating(rating float8, weight float8) (
	SFUNC = mm.team_rating_transition,
	STYPE = float8[],
	INITCOND = '{0,0}',
	FINALFUNC = mm.team_rating_final,
	COMBINEFUNC = mm.team_rating_combine,
	PARALLEL = SAFE
);
COMMENT ON AGGREGATE mm.team_rating(float8, float8) IS
'Weighted mean rating of a team; rows with a NULL rating or weight are skipped, weights must not be negative';
GRANT EXECUTE ON FUNCTION mm.team_rating(float8, float8) TO mm_admin;

CREATE FUNCTION mm.win_probability(team_a float8[], team_b float8[])
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_win_probability'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.win_probability(float8[], float8[]) IS
'Probability that team_a beats team_b: elo_expected of the mean ratings of the two teams';
GRANT EXECUTE ON FUNCTION mm.win_probability(float8[], float8[]) TO mm_admin;

-- Smurf detection and placement (src/ratings_smurf.c)

-- Not STRICT: a NULL headshot_rate means unknown (its points leave the
-- maximum); a NULL in any other argument gives NULL.
CREATE FUNCTION mm.smurf_score(games_played integer, win_rate float8, avg_kda float8,
							   mvp_rate float8, recent_ratings float8[],
							   headshot_rate float8 DEFAULT NULL)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_smurf_score'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
-- The reference maximum now always counts the outlier and learning-curve
-- points (src/ratings_smurf.c).
COMMENT ON FUNCTION mm.smurf_score(integer, float8, float8, float8, float8[], float8) IS
'Smurf suspicion in [0, 1]: suspicion points over the reference maximum (75 under 25 games, else 45: new account 30, outlier performance 25, no learning curve 20)';
GRANT EXECUTE ON FUNCTION mm.smurf_score(integer, float8, float8, float8, float8[], float8) TO mm_admin;

CREATE FUNCTION mm.rating_boost(confidence float8, games_played integer)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_rating_boost'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.rating_boost(float8, integer) IS
'Rating change multiplier: 4.0 above smurf confidence 0.8, 2.5 above 0.6, 2.0 in the first 10 games, else 1.0';
GRANT EXECUTE ON FUNCTION mm.rating_boost(float8, integer) TO mm_admin;
