/* matchmaking--0.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION matchmaking" to load this file. \quit

-- Everything below is schema-qualified (operators too, as OPERATOR(pg_catalog.=))
-- so that no object a user creates in another schema can hijack a call.
-- Sections are owned by one concern each; keep additions inside their section.


-- ===================================================================
-- Section: ratings (src/ratings_*.c)
-- ===================================================================

-- Elo (src/ratings_elo.c)

CREATE FUNCTION mm.elo_expected(rating_a float8, rating_b float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_elo_expected'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.elo_expected(float8, float8) IS
'Elo expected score of rating_a against rating_b: 1 / (1 + 10^((rating_b - rating_a) / 400))';

CREATE FUNCTION mm.elo_update(rating float8, opponent float8, score float8, k float8 DEFAULT 32)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_elo_update'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.elo_update(float8, float8, float8, float8) IS
'New Elo rating after one game: rating + k * (score - elo_expected(rating, opponent)); score in [0, 1]';

CREATE FUNCTION mm.elo_k_factor(games_played integer, rating float8)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_elo_k_factor'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.elo_k_factor(integer, float8) IS
'Elo K factor: 40 under 30 games played, otherwise 16 above rating 2400, otherwise 32';

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

CREATE FUNCTION mm.glicko2_decay(rating float8, rd float8, volatility float8, periods integer DEFAULT 1)
RETURNS mm.glicko2
AS 'MODULE_PATHNAME', 'mm_glicko2_decay'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_decay(float8, float8, float8, integer) IS
'Glicko-2 rating after idle rating periods: rd grows by the volatility each period, up to 350';

-- Support functions of the aggregate mm.glicko2_period.  Not STRICT: the state
-- is internal, and the transition function handles NULL rows itself.
CREATE FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'mm_glicko2_period_transition'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8) IS
'Transition function of mm.glicko2_period: adds one game to the period''s sums';

CREATE FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8, float8)
RETURNS internal
AS 'MODULE_PATHNAME', 'mm_glicko2_period_transition'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8, float8) IS
'Transition function of mm.glicko2_period with tau: adds one game to the period''s sums';

CREATE FUNCTION mm.glicko2_period_combine(internal, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'mm_glicko2_period_combine'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_combine(internal, internal) IS
'Combine function of mm.glicko2_period: adds the sums of two partial states';

CREATE FUNCTION mm.glicko2_period_serialize(internal)
RETURNS bytea
AS 'MODULE_PATHNAME', 'mm_glicko2_period_serialize'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_serialize(internal) IS
'Serialization function of mm.glicko2_period (state to bytea, for parallel workers)';

CREATE FUNCTION mm.glicko2_period_deserialize(bytea, internal)
RETURNS internal
AS 'MODULE_PATHNAME', 'mm_glicko2_period_deserialize'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_deserialize(bytea, internal) IS
'Deserialization function of mm.glicko2_period';

CREATE FUNCTION mm.glicko2_period_final(internal)
RETURNS mm.glicko2
AS 'MODULE_PATHNAME', 'mm_glicko2_period_final'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.glicko2_period_final(internal) IS
'Final function of mm.glicko2_period: the rating after the period';

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

-- Teams (src/ratings_team.c)

CREATE FUNCTION mm.team_rating_transition(float8[], float8, float8)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'mm_team_rating_transition'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.team_rating_transition(float8[], float8, float8) IS
'Transition function of mm.team_rating: state {sum of rating * weight, sum of weight}';

CREATE FUNCTION mm.team_rating_combine(float8[], float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'mm_team_rating_combine'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.team_rating_combine(float8[], float8[]) IS
'Combine function of mm.team_rating: adds two partial states';

CREATE FUNCTION mm.team_rating_final(float8[])
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_team_rating_final'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.team_rating_final(float8[]) IS
'Final function of mm.team_rating: the weighted mean, NULL when the weights sum to 0';

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

CREATE FUNCTION mm.win_probability(team_a float8[], team_b float8[])
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_win_probability'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.win_probability(float8[], float8[]) IS
'Probability that team_a beats team_b: elo_expected of the mean ratings of the two teams';

-- Smurf detection and placement (src/ratings_smurf.c)

-- Not STRICT: a NULL headshot_rate means unknown (its points leave the
-- maximum); a NULL in any other argument gives NULL.
CREATE FUNCTION mm.smurf_score(games_played integer, win_rate float8, avg_kda float8,
							   mvp_rate float8, recent_ratings float8[],
							   headshot_rate float8 DEFAULT NULL)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_smurf_score'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.smurf_score(integer, float8, float8, float8, float8[], float8) IS
'Smurf suspicion in [0, 1]: suspicion points over the points that apply (new account, outlier performance, no learning curve)';

CREATE FUNCTION mm.rating_boost(confidence float8, games_played integer)
RETURNS float8
AS 'MODULE_PATHNAME', 'mm_rating_boost'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.rating_boost(float8, integer) IS
'Rating change multiplier: 4.0 above smurf confidence 0.8, 2.5 above 0.6, 2.0 in the first 10 games, else 1.0';


-- ===================================================================
-- Section: team balancing (src/team_balance*.c)
-- ===================================================================


-- ===================================================================
-- Section: tables (the data model; see README "Data model")
-- ===================================================================

CREATE TABLE mm.queues (
	name text PRIMARY KEY
		CONSTRAINT queues_name_format CHECK (
			pg_catalog.length(name) OPERATOR(pg_catalog.<=) 64
			AND name OPERATOR(pg_catalog.~) '^[A-Za-z0-9][A-Za-z0-9_-]*$'),
	config jsonb NOT NULL,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	updated_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE mm.queues IS 'Matchmaking queues; config is validated in C on every write';

CREATE TABLE mm.players (
	id text PRIMARY KEY
		CONSTRAINT players_id_length CHECK (pg_catalog.length(id) OPERATOR(pg_catalog.<=) 128
											AND id OPERATOR(pg_catalog.<>) ''),
	attributes jsonb NOT NULL DEFAULT '{}',
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE mm.players IS 'Players, created on their first ticket; server-side attributes';

CREATE TABLE mm.matches (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	queue text NOT NULL REFERENCES mm.queues (name) ON DELETE CASCADE,
	status text NOT NULL DEFAULT 'ready'
		CONSTRAINT matches_status CHECK (status OPERATOR(pg_catalog.=) ANY (
			ARRAY['proposed', 'ready', 'assigned', 'completed', 'cancelled'])),
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	region text,
	quality float8 NOT NULL
		CONSTRAINT matches_quality_range CHECK (quality OPERATOR(pg_catalog.>=) 0
												AND quality OPERATOR(pg_catalog.<=) 1),
	-- the expansion step of each rule when the match was formed:
	-- {"rule name": {"step": 1, "threshold": 150} or {"step": 2, "off": true}}
	rule_steps jsonb NOT NULL DEFAULT '{}',
	connection text,
	properties jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX matches_queue_created ON mm.matches (queue, created_at);
COMMENT ON TABLE mm.matches IS 'Matches formed by the tick';

CREATE TABLE mm.tickets (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	queue text NOT NULL REFERENCES mm.queues (name) ON DELETE CASCADE,
	players jsonb NOT NULL,
	status text NOT NULL DEFAULT 'searching'
		CONSTRAINT tickets_status CHECK (status OPERATOR(pg_catalog.=) ANY (
			ARRAY['searching', 'proposed', 'matched', 'cancelled', 'timed_out'])),
	-- filled by the validation trigger from players
	player_count integer NOT NULL DEFAULT 0,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	matched_at timestamptz,
	match_id bigint REFERENCES mm.matches (id) ON DELETE SET NULL,
	CONSTRAINT tickets_match_consistent CHECK (
		status OPERATOR(pg_catalog.<>) ALL (ARRAY['proposed', 'matched']) OR match_id IS NOT NULL)
);
-- The tick's read: searching tickets of one queue, oldest first, a range scan.
CREATE INDEX tickets_searching ON mm.tickets (queue, created_at, id)
	WHERE status OPERATOR(pg_catalog.=) 'searching';
CREATE INDEX tickets_match ON mm.tickets (match_id) WHERE match_id IS NOT NULL;
CREATE INDEX tickets_queue_created ON mm.tickets (queue, created_at);
COMMENT ON TABLE mm.tickets IS 'Matchmaking tickets: one player or a party searching in a queue';

CREATE TABLE mm.ticket_players (
	ticket_id bigint NOT NULL REFERENCES mm.tickets (id) ON DELETE CASCADE,
	player_id text NOT NULL REFERENCES mm.players (id),
	queue text NOT NULL,
	attributes jsonb NOT NULL DEFAULT '{}',
	latencies jsonb NOT NULL DEFAULT '{}',
	-- true while the ticket is searching or proposed
	active boolean NOT NULL DEFAULT true,
	PRIMARY KEY (ticket_id, player_id)
);
-- A player has at most one active ticket; this index is the backstop under concurrency.
CREATE UNIQUE INDEX ticket_players_one_active ON mm.ticket_players (player_id) WHERE active;
COMMENT ON TABLE mm.ticket_players IS 'The players of each ticket, one row each';

CREATE TABLE mm.match_players (
	match_id bigint NOT NULL REFERENCES mm.matches (id) ON DELETE CASCADE,
	queue text NOT NULL,
	player_id text NOT NULL,
	ticket_id bigint NOT NULL,
	team text,
	accepted boolean,
	left_at timestamptz,
	PRIMARY KEY (match_id, player_id)
);
-- Backstop: a ticket's players sit in one match only, whatever the tick does.
CREATE UNIQUE INDEX match_players_ticket_once ON mm.match_players (ticket_id, player_id);
COMMENT ON TABLE mm.match_players IS 'Who plays in each match, on which team';


-- ===================================================================
-- Section: queues (src/queue_config.c)
-- ===================================================================


-- ===================================================================
-- Section: tickets (src/tickets.c)
-- ===================================================================


-- ===================================================================
-- Section: tick and events (src/tick.c, src/rules.c, src/events.c)
-- ===================================================================


-- ===================================================================
-- Section: scheduling (pg_cron; src/schedule*.c or SQL)
-- ===================================================================


-- ===================================================================
-- Section: metrics (views and functions for analysts)
-- ===================================================================


-- ===================================================================
-- Section: privileges
-- ===================================================================
