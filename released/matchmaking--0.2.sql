/* matchmaking--0.2.sql */

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

-- OpenSkill (Weng-Lin, Plackett-Luce), openskill.js 5 defaults; C in
-- src/ratings_openskill.c, declared here next to the balancer that uses team
-- strength (the ratings section belongs to the Elo/Glicko-2 work).
CREATE FUNCTION mm.openskill_rate(mu float8[], sigma float8[], team int[], rank int[])
RETURNS TABLE (mu float8, sigma float8)
AS 'MODULE_PATHNAME', 'mm_openskill_rate'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
ROWS 10;

COMMENT ON FUNCTION mm.openskill_rate(float8[], float8[], int[], int[]) IS
'OpenSkill (Weng-Lin Plackett-Luce) update after one game: new (mu, sigma) per player in input order; team groups players, lower rank is better, equal ranks tie';

CREATE FUNCTION mm.openskill_predict_win(mu float8[], sigma float8[], team int[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'mm_openskill_predict_win'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION mm.openskill_predict_win(float8[], float8[], int[]) IS
'OpenSkill win probability of each team, in ascending team-number order; sums to 1';


-- ===================================================================
-- Section: tables (the data model; see docs/data-model.md)
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
COMMENT ON TABLE mm.players IS 'Server-side player attributes (trusted: clients cannot write them); tickets do not need a row here';

CREATE TABLE mm.matches (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	queue text NOT NULL,
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
	properties jsonb NOT NULL DEFAULT '{}',
	-- when a proposed match stops waiting for acceptances
	acceptance_deadline timestamptz,
	-- why a match was cancelled (rejected, acceptance_timeout, requeued, ...)
	cancel_reason text
);
CREATE INDEX matches_queue_created ON mm.matches (queue, created_at);
COMMENT ON TABLE mm.matches IS 'Matches formed by the tick';

-- Tickets, partitioned by status: the active partition holds only what the
-- tick reads (searching and proposed tickets), so its cost never grows with
-- history; a ticket moves to the ended partition once, when it ends (the
-- move is a delete plus an insert, the same writes as a ticket history row).
CREATE SEQUENCE mm.tickets_id_seq;
CREATE TABLE mm.tickets (
	id bigint NOT NULL DEFAULT pg_catalog.nextval('mm.tickets_id_seq'::pg_catalog.regclass),
	queue text NOT NULL,
	players jsonb NOT NULL,
	status text NOT NULL DEFAULT 'searching'
		CONSTRAINT tickets_status CHECK (status OPERATOR(pg_catalog.=) ANY (
			ARRAY['searching', 'proposed', 'matched', 'cancelled', 'timed_out'])),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	-- when the status last changed; NULL while the ticket has only searched
	updated_at timestamptz,
	matched_at timestamptz,
	match_id bigint,
	-- the team of the match the ticket plays on (NULL in a free-for-all)
	team text,
	CONSTRAINT tickets_match_consistent CHECK (
		status OPERATOR(pg_catalog.<>) ALL (ARRAY['proposed', 'matched']) OR match_id IS NOT NULL)
) PARTITION BY LIST (status);
ALTER SEQUENCE mm.tickets_id_seq OWNED BY mm.tickets.id;
COMMENT ON TABLE mm.tickets IS 'Every ticket (one player or a party), partitioned into tickets_active and tickets_ended';

CREATE TABLE mm.tickets_active PARTITION OF mm.tickets
	FOR VALUES IN ('searching', 'proposed');
ALTER TABLE mm.tickets_active ADD PRIMARY KEY (id);
-- the tick's read: one queue's tickets, oldest first
CREATE INDEX tickets_active_queue_created ON mm.tickets_active (queue, created_at, id);
COMMENT ON TABLE mm.tickets_active IS 'Searching and proposed tickets: the tick''s working set';

CREATE TABLE mm.tickets_ended PARTITION OF mm.tickets
	FOR VALUES IN ('matched', 'cancelled', 'timed_out');
ALTER TABLE mm.tickets_ended ADD PRIMARY KEY (id);
-- metrics and retention read ended tickets by time windows (created,
-- ended, matched); rows arrive in time order, so a block range index serves
-- them at almost no cost to the tick
CREATE INDEX tickets_ended_times ON mm.tickets_ended USING brin (created_at, updated_at, matched_at);
COMMENT ON TABLE mm.tickets_ended IS 'Matched, cancelled and timed-out tickets: written once, when the ticket ends';

-- One active ticket per player: a player's row lives from the ticket's
-- creation until it leaves the active partition.  The primary key is the
-- guarantee under concurrency.
CREATE TABLE mm.active_players (
	player_id text PRIMARY KEY,
	ticket_id bigint NOT NULL,
	queue text NOT NULL
);
COMMENT ON TABLE mm.active_players IS 'The player of every searching or proposed ticket, one row each: one active ticket per player';

-- The players of every ticket, one row each, read from the tickets' players
-- (for queries; one active ticket per player is kept by mm.active_players).
CREATE VIEW mm.ticket_players AS
SELECT t.id AS ticket_id,
	   p.value OPERATOR(pg_catalog.->>) 'id' AS player_id,
	   t.queue,
	   coalesce(p.value OPERATOR(pg_catalog.->) 'attributes', '{}') AS attributes,
	   coalesce(p.value OPERATOR(pg_catalog.->) 'latencies', '{}') AS latencies,
	   t.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed']) AS active
  FROM mm.tickets t CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(t.players) p;
COMMENT ON VIEW mm.ticket_players IS 'The players of every ticket with their attributes and latencies, one row each';

CREATE TABLE mm.match_players (
	-- no foreign key: the tick writes these in bulk, and a key check per
	-- row would cost more than the row; matches are deleted with their players
	match_id bigint NOT NULL,
	queue text NOT NULL,
	player_id text NOT NULL,
	ticket_id bigint NOT NULL,
	team text,
	accepted boolean,
	left_at timestamptz,
	PRIMARY KEY (match_id, player_id)
);
COMMENT ON TABLE mm.match_players IS 'Who plays in each match, on which team';

-- Outcomes of matches, for the analysts' balance and early-quit figures.
CREATE TABLE mm.match_results (
	match_id bigint PRIMARY KEY REFERENCES mm.matches (id) ON DELETE CASCADE,
	-- copied from the match by a trigger, so every row carries its queue
	queue text NOT NULL,
	-- the winning team's name; NULL for a draw or when only ranks are given
	winner_team text,
	-- {"team name": rank, ...}, rank 1 = best; a unique rank 1 names the winner
	ranks jsonb
		CONSTRAINT match_results_ranks_object CHECK (
			ranks IS NULL OR pg_catalog.jsonb_typeof(ranks) OPERATOR(pg_catalog.=) 'object'),
	-- the team the ratings predicted to win, and with what probability
	predicted_favourite text,
	favourite_win_probability float8
		CONSTRAINT match_results_probability_range CHECK (
			favourite_win_probability OPERATOR(pg_catalog.>=) 0
			AND favourite_win_probability OPERATOR(pg_catalog.<=) 1),
	duration interval
		CONSTRAINT match_results_duration_positive CHECK (
			duration OPERATOR(pg_catalog.>=) '0'::interval),
	reported_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	CONSTRAINT match_results_prediction_pair CHECK (
		(predicted_favourite IS NULL) OPERATOR(pg_catalog.=) (favourite_win_probability IS NULL))
);
CREATE INDEX match_results_queue_reported ON mm.match_results (queue, reported_at);
COMMENT ON TABLE mm.match_results IS 'Outcomes of matches: winner or ranks, predicted favourite, duration';

-- Metrics and retention read finished matches by queue and time.
CREATE INDEX matches_queue_finished ON mm.matches (queue, updated_at)
	WHERE status OPERATOR(pg_catalog.=) ANY (ARRAY['completed', 'cancelled']);

-- Backfill: open slots of a running match that the tick fills from searching
-- tickets before it forms new matches.  At most one open request per match.
CREATE TABLE mm.backfill_requests (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	match_id bigint NOT NULL REFERENCES mm.matches (id) ON DELETE CASCADE,
	queue text NOT NULL,
	-- {"team name": slots, ...}
	open_slots jsonb NOT NULL,
	status text NOT NULL DEFAULT 'open'
		CONSTRAINT backfill_requests_status CHECK (status OPERATOR(pg_catalog.=) ANY (
			ARRAY['open', 'filled', 'cancelled'])),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	updated_at timestamptz
);
CREATE UNIQUE INDEX backfill_requests_one_open ON mm.backfill_requests (match_id)
	WHERE status OPERATOR(pg_catalog.=) 'open';
CREATE INDEX backfill_requests_queue_open ON mm.backfill_requests (queue, created_at)
	WHERE status OPERATOR(pg_catalog.=) 'open';
COMMENT ON TABLE mm.backfill_requests IS 'Requests to fill open slots of running matches';

-- Stored ratings per rating pool (several queues may share a pool).
CREATE TABLE mm.ratings (
	player_id text NOT NULL,
	pool text NOT NULL,
	rating float8,
	rd float8,
	volatility float8,
	mu float8,
	sigma float8,
	games integer NOT NULL DEFAULT 0,
	wins integer NOT NULL DEFAULT 0,
	updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	PRIMARY KEY (player_id, pool)
);
COMMENT ON TABLE mm.ratings IS 'Each player''s stored rating per rating pool';

CREATE TABLE mm.rating_history (
	id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	player_id text NOT NULL,
	pool text NOT NULL,
	match_id bigint,
	rating_before float8,
	rating_after float8,
	rd_before float8,
	rd_after float8,
	mu_before float8,
	mu_after float8,
	sigma_before float8,
	sigma_after float8,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX rating_history_player ON mm.rating_history (player_id, pool, created_at);
COMMENT ON TABLE mm.rating_history IS 'Every change of a stored rating, with the match that caused it';

-- The secret that signs every mm_events payload (src/event_signing.c): 32
-- random bytes made at install.  Readable by no role but the extension's
-- owner; the extension reads it internally to sign and to verify.  Not in
-- pg_dump's output: a restored database makes its own key.
CREATE TABLE mm.event_key (
	id integer PRIMARY KEY DEFAULT 1 CONSTRAINT event_key_single_row CHECK (id OPERATOR(pg_catalog.=) 1),
	key bytea NOT NULL
		CONSTRAINT event_key_length CHECK (pg_catalog.length(key) OPERATOR(pg_catalog.>=) 16
										   AND pg_catalog.length(key) OPERATOR(pg_catalog.<=) 256),
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
INSERT INTO mm.event_key (key)
SELECT pg_catalog.decode(pg_catalog.replace(
		   CAST(pg_catalog.gen_random_uuid() AS text) OPERATOR(pg_catalog.||)
		   CAST(pg_catalog.gen_random_uuid() AS text), '-', ''), 'hex');
REVOKE ALL ON mm.event_key FROM PUBLIC;
COMMENT ON TABLE mm.event_key IS 'The HMAC-SHA256 key that signs every mm_events payload; secret';

-- pg_dump keeps user data only for tables registered here (and sequences).
SELECT pg_catalog.pg_extension_config_dump('mm.queues', '');
SELECT pg_catalog.pg_extension_config_dump('mm.players', '');
SELECT pg_catalog.pg_extension_config_dump('mm.matches', '');
SELECT pg_catalog.pg_extension_config_dump('mm.matches_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_active', '');
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_ended', '');
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('mm.active_players', '');
SELECT pg_catalog.pg_extension_config_dump('mm.match_players', '');
SELECT pg_catalog.pg_extension_config_dump('mm.match_results', '');
SELECT pg_catalog.pg_extension_config_dump('mm.backfill_requests', '');
SELECT pg_catalog.pg_extension_config_dump('mm.backfill_requests_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('mm.ratings', '');
SELECT pg_catalog.pg_extension_config_dump('mm.rating_history', '');
SELECT pg_catalog.pg_extension_config_dump('mm.rating_history_id_seq', '');


-- ===================================================================
-- Section: queues (src/queue_config.c)
-- ===================================================================

CREATE FUNCTION mm.queues_validate() RETURNS trigger
	AS 'MODULE_PATHNAME', 'mm_queues_validate'
	LANGUAGE C;
COMMENT ON FUNCTION mm.queues_validate() IS
	'Trigger: validates the name and config of every write to mm.queues';

CREATE TRIGGER queues_validate BEFORE INSERT OR UPDATE ON mm.queues
	FOR EACH ROW EXECUTE FUNCTION mm.queues_validate();

-- Deleting a queue deletes its tickets and matches (and, through their
-- keys, results and backfill requests): the tick's tables carry no foreign
-- key to mm.queues, whose checks would cost a lookup per written row.
CREATE FUNCTION mm.queues_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.tickets t USING old_queues q WHERE t.queue = q.name;
	DELETE FROM mm.match_players mp USING old_queues q WHERE mp.queue = q.name;
	DELETE FROM mm.matches m USING old_queues q WHERE m.queue = q.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete() IS
	'Trigger: deletes the tickets and matches of deleted queues';

CREATE TRIGGER queues_after_delete AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete();

CREATE FUNCTION mm.validate_queue_config(config jsonb) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'mm_validate_queue_config'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION mm.validate_queue_config(jsonb) IS
	'Validates a queue config like a write to mm.queues would; returns it with every default filled in';

CREATE FUNCTION mm.rule_threshold(config jsonb, rule text, age_seconds float8) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'mm_rule_threshold'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION mm.rule_threshold(jsonb, text, float8) IS
	'Diagnostic: a rule''s expansion step and threshold when the oldest ticket is age_seconds old';

CREATE FUNCTION mm.create_queue(name text, config jsonb) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	-- the trigger validates name and config
	INSERT INTO mm.queues (name, config) VALUES (create_queue.name, create_queue.config);
END
$$;
COMMENT ON FUNCTION mm.create_queue(text, jsonb) IS
	'Creates a queue; the config is validated (errors name the JSON path)';

CREATE FUNCTION mm.alter_queue(name text, config jsonb) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	UPDATE mm.queues q SET config = alter_queue.config
	 WHERE q.name OPERATOR(pg_catalog.=) alter_queue.name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', alter_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.alter_queue(text, jsonb) IS
	'Replaces a queue''s config (validated); searching tickets stay and are matched under the new config';

CREATE FUNCTION mm.drop_queue(name text, force boolean DEFAULT false) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	active_count bigint;
	cancelled_ids bigint[];
BEGIN
	-- FOR UPDATE also blocks new tickets (their validation locks the row FOR KEY SHARE)
	PERFORM FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) drop_queue.name FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', drop_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;

	SELECT pg_catalog.count(*) INTO active_count FROM mm.tickets t
	 WHERE t.queue OPERATOR(pg_catalog.=) drop_queue.name
	   AND t.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed']);
	IF active_count OPERATOR(pg_catalog.>) 0 THEN
		IF NOT coalesce(drop_queue.force, false) THEN
			RAISE EXCEPTION 'queue "%" still has active tickets', drop_queue.name
				USING ERRCODE = 'object_in_use',
					  DETAIL = pg_catalog.format('%s searching or proposed ticket(s) block dropping the queue.',
												 active_count),
					  HINT = 'Cancel them first, or call mm.drop_queue(name, force => true) to cancel them.';
		END IF;
		-- cancel them all in one statement (the queue row lock keeps new
		-- tickets out; a ticket locked by a tick is waited for), then tell
		-- every client in ticket_cancelled events split under 8000 bytes
		SELECT pg_catalog.array_agg(c.id ORDER BY c.id) INTO cancelled_ids
		  FROM mm.end_tickets(ARRAY(SELECT t.id FROM mm.tickets_active t
									 WHERE t.queue OPERATOR(pg_catalog.=) drop_queue.name
									 ORDER BY t.id FOR UPDATE),
							  'cancelled', pg_catalog.now()) AS c(id);
		IF cancelled_ids IS NOT NULL THEN
			PERFORM mm.notify_ticket_event('ticket_cancelled', drop_queue.name, cancelled_ids);
		END IF;
	END IF;

	-- tickets, matches and everything hanging off them go with the queue
	-- (mm.queues_after_delete)
	DELETE FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) drop_queue.name;
END
$$;
COMMENT ON FUNCTION mm.drop_queue(text, boolean) IS
	'Drops a queue with its tickets and matches; refused while tickets are active unless force cancels them';


-- ===================================================================
-- Section: tickets (src/tickets.c)
-- ===================================================================

CREATE FUNCTION mm.validate_ticket(queue text, players jsonb, created_at timestamptz)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'mm_validate_ticket'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION mm.validate_ticket(text, jsonb, timestamptz) IS
	'Checks a new ticket''s players against its queue''s config (errors name the JSON path); returns the player count';

-- Takes one active ticket per player for the given (ticket, queue, players)
-- rows: one set-based insert into mm.active_players; a player who already
-- holds an active ticket (also one committed concurrently, or one earlier in
-- the same statement) is refused with 23505, naming the ticket that holds
-- the player.
CREATE FUNCTION mm.claim_players(ticket_ids bigint[], queues text[], players jsonb[])
	RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	-- the row estimate of jsonb_array_elements (100 per ticket) would
	-- otherwise make a bulk load pay for JIT compilation
	SET jit = off
	AS $$
DECLARE
	dup_player text;
	holder_ticket bigint;
	holder_status text;
BEGIN
	-- a plain insert in player order (no deadlock with a concurrent claim of
	-- the same players): the primary key refuses a taken player (waiting for
	-- a concurrent claim to commit or roll back), and the rare refusal is
	-- explained afterwards
	FOR attempt IN 1 .. 2 LOOP
		BEGIN
			INSERT INTO mm.active_players (player_id, ticket_id, queue)
			SELECT p.value ->> 'id', u.ticket_id, u.queue
			  FROM ROWS FROM (unnest(claim_players.ticket_ids), unnest(claim_players.queues),
							  unnest(claim_players.players)) AS u(ticket_id, queue, players),
				   jsonb_array_elements(u.players) p
			 ORDER BY 1;
			RETURN;
		EXCEPTION WHEN unique_violation THEN
			NULL;
		END;
		-- A claim whose ticket is gone (its partition written or truncated
		-- directly) is stale: drop it and try once more.  Only in READ
		-- COMMITTED, where a fresh snapshot sees the holder's commit that the
		-- refusal waited for.
		EXIT WHEN attempt = 2 OR current_setting('transaction_isolation') <> 'read committed';
		DELETE FROM mm.active_players a
		 USING unnest(claim_players.players) AS u(players), jsonb_array_elements(u.players) p
		 WHERE a.player_id = p.value ->> 'id'
		   AND NOT EXISTS (SELECT FROM mm.tickets_active t WHERE t.id = a.ticket_id);
		EXIT WHEN NOT FOUND;
	END LOOP;

	-- the first player, in ticket order, that is taken or repeated
	WITH new_players AS (
		SELECT u.ticket_id, p.value ->> 'id' AS player_id, u.ticket_ord, p.ord
		  FROM ROWS FROM (unnest(claim_players.ticket_ids), unnest(claim_players.players))
			   WITH ORDINALITY AS u(ticket_id, players, ticket_ord),
			   jsonb_array_elements(u.players) WITH ORDINALITY p(value, ord)
	)
	SELECT h.player_id, h.holder INTO dup_player, holder_ticket
	  FROM (SELECT np.player_id, np.ticket_ord, np.ord,
				   coalesce((SELECT ap.ticket_id FROM mm.active_players ap
							  WHERE ap.player_id = np.player_id),
							(SELECT e.ticket_id FROM new_players e
							  WHERE e.player_id = np.player_id
								AND (e.ticket_ord, e.ord) < (np.ticket_ord, np.ord)
							  ORDER BY e.ticket_ord, e.ord LIMIT 1)) AS holder
			  FROM new_players np) h
	 WHERE h.holder IS NOT NULL
	 ORDER BY h.ticket_ord, h.ord
	 LIMIT 1;
	SELECT t.status INTO holder_status FROM mm.tickets_active t WHERE t.id = holder_ticket;
	IF holder_status IS NULL THEN
		RAISE EXCEPTION 'player "%" already has an active ticket', coalesce(dup_player, '?')
			USING ERRCODE = 'unique_violation';
	END IF;
	RAISE EXCEPTION 'player "%" already has an active ticket', dup_player
		USING ERRCODE = 'unique_violation',
			  DETAIL = format('Ticket %s holds the player and is %s.', holder_ticket, holder_status),
			  HINT = 'A player can be in one searching or proposed ticket at a time; cancel that ticket first.';
END
$$;
COMMENT ON FUNCTION mm.claim_players(bigint[], text[], jsonb[]) IS
	'Internal: records the players of new active tickets in mm.active_players; one active ticket per player';

-- Once per statement (one INSERT, a multi-row INSERT or a COPY into
-- mm.tickets): validates every new ticket and claims its players.  pg_dump's
-- restore writes the partitions directly, which fires neither: the dump
-- carries mm.active_players itself.
CREATE FUNCTION mm.tickets_after_insert() RETURNS trigger
	LANGUAGE plpgsql
	-- the inserting role needs no privilege on mm.queues (a row lock) or
	-- mm.active_players: this trigger only checks and claims what it inserted
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	bad record;
BEGIN
	-- ids come from mm.tickets_id_seq: an explicit one must be one it has
	-- handed out (an id ahead of it would collide with a later default) and
	-- not an ended ticket's (the partitions' primary keys are separate)
	SELECT n.id, n.status, n.match_id IS NOT NULL AS has_match,
		   n.status = 'searching' AND n.match_id IS NULL AND n.matched_at IS NULL
		   AND n.updated_at IS NULL AND n.team IS NULL AS fresh,
		   n.id > (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
					 FROM mm.tickets_id_seq) AS ahead INTO bad
	  FROM new_tickets n
	 WHERE n.status <> 'searching' OR n.match_id IS NOT NULL OR n.matched_at IS NOT NULL
		OR n.updated_at IS NOT NULL OR n.team IS NOT NULL
		OR n.id > (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END
					 FROM mm.tickets_id_seq)
		OR (n.id <= (SELECT max(e.id) FROM mm.tickets_ended e)
			AND EXISTS (SELECT FROM mm.tickets_ended e WHERE e.id = n.id))
	 LIMIT 1;
	IF FOUND AND bad.fresh AND bad.ahead THEN
		RAISE EXCEPTION 'ticket id % was not drawn from mm.tickets_id_seq', bad.id
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Leave id to its default.';
	ELSIF FOUND AND bad.fresh THEN
		RAISE EXCEPTION 'ticket id % is already used', bad.id
			USING ERRCODE = 'unique_violation',
				  HINT = 'Leave id to its default (mm.tickets_id_seq).';
	ELSIF FOUND THEN
		RAISE EXCEPTION 'a new ticket must start searching, without a match'
			USING ERRCODE = 'check_violation',
				  DETAIL = format('Ticket %s was inserted with status %s%s.', bad.id, bad.status,
								  CASE WHEN bad.has_match THEN ' and a match' ELSE '' END),
				  HINT = 'Insert only queue, players and optionally created_at; the tick sets the rest.';
	END IF;
	-- KEY SHARE on the queues: mm.drop_queue (FOR UPDATE) waits for this
	-- insert, or this insert for the drop, whose queue is then gone
	PERFORM FROM mm.queues q WHERE q.name IN (SELECT n.queue FROM new_tickets n) FOR KEY SHARE OF q;
	-- in the order the rows came: the first invalid one is reported
	PERFORM mm.validate_ticket(n.queue, n.players, n.created_at) FROM new_tickets n;
	-- one active ticket per player: a plain insert, in player order, so that
	-- two statements claiming the same players in different orders queue up
	-- on the first one they share instead of deadlocking; the rare refusal
	-- is explained by claim_players, which tries again and names the holder
	BEGIN
		INSERT INTO mm.active_players (player_id, ticket_id, queue)
		SELECT p.value ->> 'id', n.id, n.queue
		  FROM new_tickets n, jsonb_array_elements(n.players) p
		 ORDER BY 1;
	EXCEPTION WHEN unique_violation THEN
		PERFORM mm.claim_players(array_agg(n.id ORDER BY n.id), array_agg(n.queue ORDER BY n.id),
								 array_agg(n.players ORDER BY n.id))
		  FROM new_tickets n;
	END;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_insert() IS
	'Trigger: validates the inserted tickets and claims their players (one active ticket per player)';

CREATE TRIGGER tickets_after_insert AFTER INSERT ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_insert();

-- Keeps mm.active_players in step with a status written by UPDATE (the tick
-- and the ticket functions move tickets themselves and keep it in step):
-- a ticket leaving searching/proposed releases its players, one entering
-- them claims its players again.
CREATE FUNCTION mm.tickets_after_update() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	final record;
BEGIN
	-- a matched ticket's status is final: it sits in its match's players
	SELECT o.id, n.status INTO final
	  FROM old_tickets o JOIN new_tickets n ON n.id = o.id
	 WHERE o.status = 'matched' AND n.status <> 'matched'
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'ticket % is matched: its status cannot become %', final.id, final.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'A matched ticket ends with its match.';
	END IF;
	DELETE FROM mm.active_players ap
	 USING old_tickets o JOIN new_tickets n ON n.id = o.id, jsonb_array_elements(o.players) p
	 WHERE ap.player_id = p.value ->> 'id' AND ap.ticket_id = o.id
	   AND o.status IN ('searching', 'proposed') AND n.status NOT IN ('searching', 'proposed');
	PERFORM mm.claim_players(array_agg(n.id ORDER BY n.id), array_agg(n.queue ORDER BY n.id),
							 array_agg(n.players ORDER BY n.id))
	  FROM old_tickets o JOIN new_tickets n ON n.id = o.id
	 WHERE o.status NOT IN ('searching', 'proposed') AND n.status IN ('searching', 'proposed')
	HAVING count(*) > 0;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_update() IS
	'Trigger: releases or claims players when an UPDATE moves tickets out of or into searching/proposed';

CREATE TRIGGER tickets_after_update AFTER UPDATE ON mm.tickets
	REFERENCING OLD TABLE AS old_tickets NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_update();

CREATE FUNCTION mm.tickets_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
BEGIN
	DELETE FROM mm.active_players ap USING old_tickets o, jsonb_array_elements(o.players) p
	 WHERE ap.player_id = p.value ->> 'id' AND ap.ticket_id = o.id;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_delete() IS
	'Trigger: releases the players of deleted tickets';

CREATE TRIGGER tickets_after_delete AFTER DELETE ON mm.tickets
	REFERENCING OLD TABLE AS old_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_delete();

-- TRUNCATE of the tickets (or of their active partition) releases every player.
CREATE FUNCTION mm.tickets_after_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.active_players;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_truncate() IS
	'Trigger: releases every player when the active tickets are truncated';

CREATE TRIGGER tickets_after_truncate AFTER TRUNCATE ON mm.tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_truncate();
CREATE TRIGGER tickets_active_after_truncate AFTER TRUNCATE ON mm.tickets_active
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_truncate();

-- The ticket triggers run as the extension's owner; nobody calls them.
REVOKE ALL ON FUNCTION mm.tickets_after_insert() FROM PUBLIC;
REVOKE ALL ON FUNCTION mm.tickets_after_update() FROM PUBLIC;
REVOKE ALL ON FUNCTION mm.tickets_after_delete() FROM PUBLIC;
REVOKE ALL ON FUNCTION mm.tickets_after_truncate() FROM PUBLIC;

-- A ticket's id, queue and players are fixed once it exists.
CREATE FUNCTION mm.tickets_refuse_change() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	RAISE EXCEPTION 'the queue and players of ticket % cannot be changed', OLD.id
		USING ERRCODE = 'feature_not_supported',
			  HINT = 'Cancel the ticket and create a new one.';
END
$$;
COMMENT ON FUNCTION mm.tickets_refuse_change() IS
	'Trigger: refuses changes to a ticket''s id, queue or players';

CREATE TRIGGER tickets_refuse_change BEFORE UPDATE OF id, queue, players ON mm.tickets
	FOR EACH ROW
	WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.queue IS DISTINCT FROM NEW.queue
		  OR OLD.players IS DISTINCT FROM NEW.players)
	EXECUTE FUNCTION mm.tickets_refuse_change();

-- Ends active tickets (cancelled or timed out): each moves from
-- tickets_active to tickets_ended, a delete and an insert, and its players
-- are released.  A delete, not an UPDATE of the status: a session waiting on
-- the row then sees it gone (and looks again) instead of failing on a row
-- moved to another partition.  Returns the ids of the tickets it ended.
CREATE FUNCTION mm.end_tickets(ticket_ids bigint[], new_status text, ended_at timestamptz)
	RETURNS SETOF bigint
	LANGUAGE sql
	SET search_path = pg_catalog, pg_temp
	AS $$
	WITH moved AS (
		DELETE FROM mm.tickets_active t WHERE t.id = ANY (end_tickets.ticket_ids)
		RETURNING t.id, t.queue, t.players, t.created_at
	), released AS (
		DELETE FROM mm.active_players a
		 USING moved m, jsonb_array_elements(m.players) p
		 WHERE a.player_id = p.value ->> 'id' AND a.ticket_id = m.id
	)
	INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at)
	SELECT m.id, m.queue, m.players, end_tickets.new_status, m.created_at, end_tickets.ended_at
	  FROM moved m
	RETURNING id
$$;
COMMENT ON FUNCTION mm.end_tickets(bigint[], text, timestamptz) IS
	'Internal: moves active tickets to tickets_ended as cancelled or timed_out and releases their players';

CREATE FUNCTION mm.create_ticket(queue text, players jsonb,
								 now timestamptz DEFAULT pg_catalog.now()) RETURNS bigint
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_id bigint;
BEGIN
	IF create_ticket.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- the trigger validates and claims the players, as for a plain INSERT
	INSERT INTO mm.tickets (queue, players, created_at)
	VALUES (create_ticket.queue, create_ticket.players, create_ticket.now)
	RETURNING id INTO ticket_id;
	RETURN ticket_id;
END
$$;
COMMENT ON FUNCTION mm.create_ticket(text, jsonb, timestamptz) IS
	'Puts a ticket (one player or a party) into a queue; returns its id. Same as INSERT INTO mm.tickets';

CREATE FUNCTION mm.cancel_ticket(ticket_id bigint) RETURNS boolean
	LANGUAGE plpgsql STRICT
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_status text;
	ticket_queue text;
BEGIN
	-- waits for a tick that holds the ticket; if the tick ended it, the
	-- active row is gone and the ended one tells the outcome
	SELECT t.status, t.queue INTO ticket_status, ticket_queue
	  FROM mm.tickets_active t WHERE t.id = cancel_ticket.ticket_id
	   FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM FROM mm.tickets_ended t WHERE t.id = cancel_ticket.ticket_id;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ticket % does not exist', cancel_ticket.ticket_id
				USING ERRCODE = 'undefined_object';
		END IF;
		RETURN false;
	END IF;

	PERFORM mm.end_tickets(ARRAY[cancel_ticket.ticket_id], 'cancelled', now());
	-- signed, delivered at commit only
	PERFORM mm.notify_ticket_event('ticket_cancelled', ticket_queue, ARRAY[cancel_ticket.ticket_id]);
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.cancel_ticket(bigint) IS
	'Cancels a searching or proposed ticket (true), or returns false when it was no longer active; NOTIFYs mm_events';


-- ===================================================================
-- Section: tick and events (src/tick.c, src/rules.c, src/events.c)
-- ===================================================================

CREATE FUNCTION mm.tick(queue text DEFAULT NULL,
						now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE C VOLATILE CALLED ON NULL INPUT
AS 'MODULE_PATHNAME', 'mm_tick';
COMMENT ON FUNCTION mm.tick(text, timestamptz) IS
'Forms matches in a queue (all queues when NULL) as of now; returns the number of matches formed';

CREATE FUNCTION mm.last_tick_stats(
	OUT queue text,
	OUT locked_out boolean,
	OUT tickets_loaded integer,
	OUT tickets_timed_out integer,
	OUT matches integer,
	OUT players_matched integer,
	OUT load_ms float8,
	OUT compute_ms float8,
	OUT write_ms float8,
	OUT memory_bytes bigint)
RETURNS SETOF record
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'mm_last_tick_stats';
COMMENT ON FUNCTION mm.last_tick_stats() IS
'Per queue, what the last mm.tick() of this session did: tickets, matches, phase timings and peak memory';

CREATE FUNCTION mm.verify_event(payload text)
RETURNS boolean
LANGUAGE C STABLE STRICT
AS 'MODULE_PATHNAME', 'mm_verify_event';
COMMENT ON FUNCTION mm.verify_event(text) IS
'True when an mm_events payload carries this database''s signature ("sig"), so the extension sent it unchanged';

CREATE FUNCTION mm.notify_ticket_event(event text, queue text, tickets bigint[])
RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'mm_notify_ticket_event';
COMMENT ON FUNCTION mm.notify_ticket_event(text, text, bigint[]) IS
'Queues signed ticket_cancelled or ticket_timed_out events for tickets in that state, split under 8000 bytes; sent at commit';


-- ===================================================================
-- Section: scheduling (pg_cron; src/schedule*.c or SQL)
-- ===================================================================

-- matchmaking's pg_cron jobs: one row per queue tick job, and one for the
-- retention job.  The per-minute tick loop reads its interval here on every
-- round, so re-scheduling takes effect at once and unscheduling stops it.
CREATE TABLE mm.schedule_jobs (
	job_name text PRIMARY KEY,
	kind text NOT NULL
		CONSTRAINT schedule_jobs_kind CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['tick', 'retention'])),
	queue text UNIQUE REFERENCES mm.queues (name) ON DELETE CASCADE,
	every interval NOT NULL,
	-- loop: a per-minute job whose procedure ticks every `every` (pg_cron < 1.5);
	-- native: pg_cron's own 'N seconds' schedule; cron: a cron expression
	mode text NOT NULL
		CONSTRAINT schedule_jobs_mode CHECK (mode OPERATOR(pg_catalog.=) ANY (ARRAY['loop', 'native', 'cron'])),
	cron_schedule text NOT NULL,
	cron_job_id bigint,
	-- retention only
	keep interval,
	archive boolean,
	batch_size integer,
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	CONSTRAINT schedule_jobs_queue_for_ticks CHECK (
		(kind OPERATOR(pg_catalog.=) 'tick') OPERATOR(pg_catalog.=) (queue IS NOT NULL)),
	CONSTRAINT schedule_jobs_retention_settings CHECK (
		kind OPERATOR(pg_catalog.=) 'tick'
		OR (keep IS NOT NULL AND archive IS NOT NULL AND batch_size IS NOT NULL))
);
COMMENT ON TABLE mm.schedule_jobs IS 'The pg_cron jobs matchmaking created (queue ticks, retention)';
SELECT pg_catalog.pg_extension_config_dump('mm.schedule_jobs', '');

-- Archive tables for mm.purge_finished(..., archive => true): the live
-- tables' columns (as they stand at this point of the script) plus archived_at.
CREATE TABLE mm.matches_archive (LIKE mm.matches);
ALTER TABLE mm.matches_archive ADD COLUMN archived_at timestamptz NOT NULL;
CREATE INDEX matches_archive_queue_created ON mm.matches_archive (queue, created_at);
CREATE TABLE mm.match_players_archive (LIKE mm.match_players);
ALTER TABLE mm.match_players_archive ADD COLUMN archived_at timestamptz NOT NULL;
CREATE INDEX match_players_archive_match ON mm.match_players_archive (match_id);
CREATE TABLE mm.match_results_archive (LIKE mm.match_results);
ALTER TABLE mm.match_results_archive ADD COLUMN archived_at timestamptz NOT NULL;
CREATE INDEX match_results_archive_match ON mm.match_results_archive (match_id);
CREATE TABLE mm.tickets_archive (LIKE mm.tickets);
ALTER TABLE mm.tickets_archive ADD COLUMN archived_at timestamptz NOT NULL;
CREATE INDEX tickets_archive_queue_created ON mm.tickets_archive (queue, created_at);
COMMENT ON TABLE mm.matches_archive IS 'Finished matches moved out by mm.purge_finished(archive => true)';
COMMENT ON TABLE mm.match_players_archive IS 'Players of archived matches';
COMMENT ON TABLE mm.match_results_archive IS 'Results of archived matches';
COMMENT ON TABLE mm.tickets_archive IS 'Finished tickets moved out by mm.purge_finished(archive => true)';
SELECT pg_catalog.pg_extension_config_dump('mm.matches_archive', '');
SELECT pg_catalog.pg_extension_config_dump('mm.match_players_archive', '');
SELECT pg_catalog.pg_extension_config_dump('mm.match_results_archive', '');
SELECT pg_catalog.pg_extension_config_dump('mm.tickets_archive', '');

-- How an interval becomes a pg_cron schedule.  Pure, so the rules can be
-- tested without pg_cron: sub-minute intervals use pg_cron's native
-- 'N seconds' schedules from 1.5 on (whole seconds only), otherwise a
-- per-minute job running mm.tick_loop; longer intervals become a cron
-- expression, which only exists for steps that divide an hour or a day.
CREATE FUNCTION mm.schedule_plan(every interval, pg_cron_version text DEFAULT '1.4',
								 OUT mode text, OUT cron_schedule text)
RETURNS record
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	seconds numeric;
	version_parts text[];
	native_seconds boolean;
BEGIN
	IF every IS NULL THEN
		RAISE EXCEPTION 'every must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF pg_cron_version IS NULL THEN
		RAISE EXCEPTION 'pg_cron_version must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF extract(month FROM every) <> 0 OR extract(year FROM every) <> 0 THEN
		RAISE EXCEPTION 'every must not contain months or years: %', every
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A month has no fixed length, so it cannot be a tick interval.';
	END IF;
	seconds := extract(epoch FROM every);
	IF seconds <= 0 THEN
		RAISE EXCEPTION 'every must be positive: %', every USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF seconds < 0.1 THEN
		RAISE EXCEPTION 'every must be at least 100 milliseconds: %', every
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'Each tick is its own transaction; more than ten a second only adds overhead.';
	END IF;
	IF seconds > 86400 THEN
		RAISE EXCEPTION 'every must be at most 1 day: %', every USING ERRCODE = 'invalid_parameter_value';
	END IF;

	version_parts := regexp_match(pg_cron_version, '^(\d{1,6})\.(\d{1,6})');
	IF version_parts IS NULL THEN
		RAISE EXCEPTION 'invalid pg_cron version: "%"', pg_cron_version
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A version looks like 1.4 or 1.6-1.';
	END IF;
	native_seconds := (version_parts[1]::integer, version_parts[2]::integer) >= (1, 5);

	IF seconds < 60 THEN
		IF native_seconds AND seconds = trunc(seconds) THEN
			mode := 'native';
			cron_schedule := format('%s seconds', seconds::integer);
		ELSE
			mode := 'loop';
			cron_schedule := '* * * * *';
		END IF;
	ELSIF seconds % 60 = 0 AND seconds < 3600 AND 60 % (seconds / 60) = 0 THEN
		mode := 'cron';
		cron_schedule := CASE WHEN seconds = 60 THEN '* * * * *'
							  ELSE format('*/%s * * * *', (seconds / 60)::integer) END;
	ELSIF seconds % 3600 = 0 AND 24 % (seconds / 3600) = 0 THEN
		mode := 'cron';
		cron_schedule := CASE WHEN seconds = 3600 THEN '0 * * * *'
							  WHEN seconds = 86400 THEN '0 0 * * *'
							  ELSE format('0 */%s * * *', (seconds / 3600)::integer) END;
	ELSE
		RAISE EXCEPTION 'every cannot be expressed as a cron schedule: %', every
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Use an interval under one minute, a whole number of minutes that divides an hour '
						 '(1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30), a whole number of hours that divides a day '
						 '(1, 2, 3, 4, 6, 8, 12), or 1 day.';
	END IF;
END;
$$;
COMMENT ON FUNCTION mm.schedule_plan(interval, text) IS
'How mm.schedule runs a tick every `every` with a given pg_cron version: mode loop, native or cron, and the pg_cron schedule';

-- pg_cron's version and schema in this database; fails with a hint on how to
-- enable it when it is missing.  The only place that decides "is pg_cron here".
-- The schema is that of pg_cron's table "job" (pg_cron creates its own schema,
-- "cron", whatever the extension's recorded namespace says).
CREATE FUNCTION mm.require_pg_cron(OUT version text, OUT schema name)
RETURNS record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	SELECT e.extversion, n.nspname INTO version, schema
	  FROM pg_extension e
	  JOIN pg_depend d ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
					  AND d.classid = 'pg_class'::regclass AND d.deptype = 'e'
	  JOIN pg_class c ON c.oid = d.objid AND c.relname = 'job' AND c.relkind = 'r'
	  JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE e.extname = 'pg_cron';
	IF NOT FOUND THEN
		RAISE EXCEPTION 'pg_cron is not installed in database "%"', current_database()
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'matchmaking schedules its ticks and housekeeping as pg_cron jobs.',
				  HINT = format('In postgresql.conf set shared_preload_libraries = ''pg_cron'' and '
								'cron.database_name = %L, restart the server, then run CREATE EXTENSION '
								'pg_cron in this database.', current_database());
	END IF;
END;
$$;
COMMENT ON FUNCTION mm.require_pg_cron() IS
'pg_cron''s version and schema in this database, or an error saying how to enable pg_cron';

-- Creates or replaces one of matchmaking's pg_cron jobs (through dynamic SQL,
-- so the extension installs where the cron schema does not exist).
CREATE FUNCTION mm.cron_job_upsert(job_name text, cron_schedule text, command text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
	job_id bigint;
BEGIN
	SELECT * INTO cron FROM mm.require_pg_cron();
	-- cron.schedule(name, ...) replaces the job of that name of the current user
	EXECUTE format('SELECT %I.schedule($1, $2, $3)', cron.schema)
	   INTO job_id USING job_name, cron_schedule, command;
	RETURN job_id;
END;
$$;
COMMENT ON FUNCTION mm.cron_job_upsert(text, text, text) IS
'Creates or replaces the pg_cron job of that name (internal to mm.schedule)';

-- Removes a pg_cron job by name if it exists; true when one was removed.
CREATE FUNCTION mm.cron_job_remove(job_name text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
	job_id bigint;
	removed boolean := false;
BEGIN
	SELECT * INTO cron FROM mm.require_pg_cron();
	FOR job_id IN EXECUTE format('SELECT jobid FROM %I.job WHERE jobname = $1 ORDER BY jobid', cron.schema)
				   USING job_name
	LOOP
		EXECUTE format('SELECT %I.unschedule($1)', cron.schema) USING job_id;
		removed := true;
	END LOOP;
	RETURN removed;
END;
$$;
COMMENT ON FUNCTION mm.cron_job_remove(text) IS
'Removes the pg_cron job of that name if there is one (internal to mm.unschedule)';

-- Deleting a row of mm.schedule_jobs (mm.unschedule, or dropping its queue)
-- removes its pg_cron job too.
CREATE FUNCTION mm.schedule_jobs_after_delete()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_cron') THEN
		PERFORM mm.cron_job_remove(OLD.job_name);
	END IF;
	RETURN NULL;
END;
$$;
COMMENT ON FUNCTION mm.schedule_jobs_after_delete() IS
'Trigger: removes the pg_cron job of a deleted mm.schedule_jobs row';
CREATE TRIGGER schedule_jobs_remove_cron_job AFTER DELETE ON mm.schedule_jobs
	FOR EACH ROW EXECUTE FUNCTION mm.schedule_jobs_after_delete();

-- The body of a queue's per-minute job for sub-minute intervals: ticks,
-- commits, sleeps until the next tick, and returns before the next minute's
-- run starts.  A session advisory lock keeps a second loop of the same queue
-- from running (it returns at once), even when a tick runs long.  A procedure
-- (not a function) so that each tick commits on its own; it therefore has no
-- SET clause, and qualifies every operator instead.
CREATE PROCEDURE mm.tick_loop(queue text)
LANGUAGE plpgsql
AS $$
DECLARE
	loop_job_name constant text := pg_catalog.concat('mm_tick:', queue);
	lock_key constant bigint := pg_catalog.hashtextextended(pg_catalog.concat('mm_tick_loop:', queue), 0);
	started constant timestamptz := pg_catalog.clock_timestamp();
	-- the run belongs to the minute it starts in (or the next one when pg_cron
	-- starts it a moment early) and ends before that minute's successor starts
	deadline constant timestamptz := pg_catalog.date_trunc('minute', started OPERATOR(pg_catalog.+) '2 seconds'::interval)
									 OPERATOR(pg_catalog.+) '1 minute'::interval;
	next_tick timestamptz := started;
	tick_every interval;
	failures integer := 0;
	last_state text;
	last_message text;
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT pg_catalog.pg_try_advisory_lock(lock_key) THEN
		RETURN;					-- another loop of this queue is running
	END IF;

	LOOP
		-- re-read on every round: mm.schedule / mm.unschedule take effect at once
		SELECT s.every INTO tick_every
		  FROM mm.schedule_jobs s
		 WHERE s.job_name OPERATOR(pg_catalog.=) loop_job_name
		   AND s.mode OPERATOR(pg_catalog.=) 'loop';
		EXIT WHEN NOT FOUND;

		BEGIN
			PERFORM mm.tick(queue);
			failures := 0;
		EXCEPTION WHEN OTHERS THEN
			-- one failed tick (a deadlock, a serialization failure) must not stop
			-- the queue for the rest of the minute; five in a row fail the job
			GET STACKED DIAGNOSTICS last_state = RETURNED_SQLSTATE, last_message = MESSAGE_TEXT;
			failures := failures OPERATOR(pg_catalog.+) 1;
			RAISE WARNING 'tick of queue "%" failed: %', queue, last_message;
		END;
		COMMIT;

		IF failures OPERATOR(pg_catalog.>=) 5 THEN
			PERFORM pg_catalog.pg_advisory_unlock(lock_key);
			RAISE EXCEPTION 'tick of queue "%" failed % times in a row: %', queue, failures, last_message
				USING ERRCODE = last_state;
		END IF;

		next_tick := next_tick OPERATOR(pg_catalog.+) tick_every;
		IF next_tick OPERATOR(pg_catalog.<) pg_catalog.clock_timestamp() THEN
			next_tick := pg_catalog.clock_timestamp();	-- a tick ran long: skip the missed ones
		END IF;
		EXIT WHEN next_tick OPERATOR(pg_catalog.>=) deadline;
		PERFORM pg_catalog.pg_sleep(pg_catalog.date_part('epoch',
								next_tick OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp()));
		-- a fresh transaction, so the next tick's now() is the time it runs
		COMMIT;
	END LOOP;

	PERFORM pg_catalog.pg_advisory_unlock(lock_key);
END;
$$;
COMMENT ON PROCEDURE mm.tick_loop(text) IS
'Body of a queue''s per-minute pg_cron job: ticks every scheduled interval until just before the next minute';

-- Makes pg_cron tick a queue every `every`; re-scheduling replaces the job.
CREATE FUNCTION mm.schedule(queue text, every interval DEFAULT '1 second')
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
	plan record;
	tick_job_name text;
	command text;
	job_id bigint;
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- lock the queue row so a concurrent drop waits for us
	PERFORM 1 FROM mm.queues q WHERE q.name = schedule.queue FOR KEY SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue USING ERRCODE = 'undefined_object';
	END IF;
	PERFORM mm.schedule_plan(every);	-- validates every before asking for pg_cron
	SELECT * INTO cron FROM mm.require_pg_cron();
	SELECT * INTO plan FROM mm.schedule_plan(every, cron.version);

	tick_job_name := 'mm_tick:' || queue;
	command := CASE plan.mode WHEN 'loop' THEN format('CALL mm.tick_loop(%L)', queue)
							  ELSE format('SELECT mm.tick(%L)', queue) END;
	job_id := mm.cron_job_upsert(tick_job_name, plan.cron_schedule, command);

	INSERT INTO mm.schedule_jobs AS s (job_name, kind, queue, every, mode, cron_schedule, cron_job_id)
	VALUES (tick_job_name, 'tick', queue, every, plan.mode, plan.cron_schedule, job_id)
	ON CONFLICT ON CONSTRAINT schedule_jobs_pkey DO UPDATE
	   SET every = EXCLUDED.every, mode = EXCLUDED.mode, cron_schedule = EXCLUDED.cron_schedule,
		   cron_job_id = EXCLUDED.cron_job_id, updated_at = now();
	RETURN job_id;
END;
$$;
COMMENT ON FUNCTION mm.schedule(text, interval) IS
'Makes pg_cron tick the queue every interval (sub-minute intervals included); returns the pg_cron job id';

-- Stops pg_cron ticking a queue; false when it was not scheduled.
CREATE FUNCTION mm.unschedule(queue text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	tick_job_name text;
	row_removed boolean;
	job_removed boolean;
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.require_pg_cron();
	tick_job_name := 'mm_tick:' || queue;
	-- the row's delete trigger removes the pg_cron job; a job left without a
	-- row (restored from a dump, say) is removed by name
	DELETE FROM mm.schedule_jobs s WHERE s.job_name = tick_job_name;
	row_removed := FOUND;
	job_removed := mm.cron_job_remove(tick_job_name);
	RETURN row_removed OR job_removed;
END;
$$;
COMMENT ON FUNCTION mm.unschedule(text) IS
'Stops pg_cron ticking the queue; returns false when it was not scheduled';

-- One batch of retention: deletes (or archives, then deletes) finished
-- matches (completed or cancelled) last changed before now - older_than, with
-- their players, results and tickets, and finished tickets (cancelled or
-- timed out) likewise.  At most batch_size matches and batch_size other
-- tickets per call, oldest first; call it until it returns zeros
-- (mm.run_retention does, committing between batches).
CREATE FUNCTION mm.purge_finished(older_than interval, batch_size integer DEFAULT 10000,
								  archive boolean DEFAULT false, now timestamptz DEFAULT now(),
								  OUT matches_purged bigint, OUT tickets_purged bigint)
RETURNS record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cutoff timestamptz;
	match_ids bigint[];
	ticket_ids bigint[];
	q text;
	n bigint;
BEGIN
	IF older_than IS NULL THEN
		RAISE EXCEPTION 'older_than must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF older_than < '0'::interval THEN
		RAISE EXCEPTION 'older_than must not be negative: %', older_than USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF batch_size IS NULL OR archive IS NULL OR now IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN batch_size IS NULL THEN 'batch_size' WHEN archive IS NULL THEN 'archive' ELSE 'now' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF batch_size < 1 OR batch_size > 1000000 THEN
		RAISE EXCEPTION 'batch_size must be between 1 and 1000000: %', batch_size
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF now IN ('infinity', '-infinity') THEN
		RAISE EXCEPTION 'now must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	BEGIN
		cutoff := now - older_than;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'older_than reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'now - older_than is out of range.';
	END;

	-- the oldest finished matches, queue by queue (the indexes lead with queue)
	match_ids := '{}';
	FOR q IN SELECT name FROM mm.queues ORDER BY name LOOP
		EXIT WHEN cardinality(match_ids) >= batch_size;
		match_ids := match_ids || ARRAY(
			SELECT m.id FROM mm.matches m
			 WHERE m.queue = q AND m.status IN ('completed', 'cancelled') AND m.updated_at < cutoff
			 ORDER BY m.updated_at, m.id
			 LIMIT batch_size - cardinality(match_ids)
			   FOR UPDATE SKIP LOCKED);
	END LOOP;
	ticket_ids := '{}';
	FOR q IN SELECT name FROM mm.queues ORDER BY name LOOP
		EXIT WHEN cardinality(ticket_ids) >= batch_size;
		ticket_ids := ticket_ids || ARRAY(
			SELECT t.id FROM mm.tickets t
			 WHERE t.queue = q AND t.status IN ('cancelled', 'timed_out') AND t.updated_at < cutoff
			 ORDER BY t.updated_at, t.id
			 LIMIT batch_size - cardinality(ticket_ids)
			   FOR UPDATE SKIP LOCKED);
	END LOOP;
	-- a purged match takes its ended tickets along (a matched ticket needs
	-- its match), found through its players; a ticket back in the active
	-- partition (searching again) stays
	ticket_ids := ticket_ids || ARRAY(
		SELECT t.id FROM mm.tickets_ended t
		 WHERE t.id IN (SELECT mp.ticket_id FROM mm.match_players mp WHERE mp.match_id = ANY (match_ids))
		   AND t.match_id = ANY (match_ids) AND t.id <> ALL (ticket_ids)
		 ORDER BY t.id FOR UPDATE);

	IF archive THEN
		INSERT INTO mm.matches_archive SELECT m.*, now FROM mm.matches m WHERE m.id = ANY (match_ids);
		INSERT INTO mm.match_players_archive
			SELECT mp.*, now FROM mm.match_players mp WHERE mp.match_id = ANY (match_ids);
		INSERT INTO mm.match_results_archive
			SELECT r.*, now FROM mm.match_results r WHERE r.match_id = ANY (match_ids);
		INSERT INTO mm.tickets_archive SELECT t.*, now FROM mm.tickets_ended t WHERE t.id = ANY (ticket_ids);
	END IF;

	-- match_results go by ON DELETE CASCADE; match players are deleted here
	DELETE FROM mm.match_players mp WHERE mp.match_id = ANY (match_ids);
	DELETE FROM mm.tickets_ended t WHERE t.id = ANY (ticket_ids);
	GET DIAGNOSTICS n = ROW_COUNT;
	tickets_purged := n;
	DELETE FROM mm.matches m WHERE m.id = ANY (match_ids);
	GET DIAGNOSTICS n = ROW_COUNT;
	matches_purged := n;
END;
$$;
COMMENT ON FUNCTION mm.purge_finished(interval, integer, boolean, timestamptz) IS
'One retention batch: deletes or archives finished matches and tickets last changed before now - older_than';

-- The body of the retention job: purges in batches, each its own transaction.
CREATE PROCEDURE mm.run_retention()
LANGUAGE plpgsql
AS $$
DECLARE
	settings record;
	purged record;
BEGIN
	SELECT s.keep, s.batch_size, s.archive INTO settings
	  FROM mm.schedule_jobs s WHERE s.job_name OPERATOR(pg_catalog.=) 'mm_retention';
	IF NOT FOUND THEN
		RETURN;
	END IF;
	LOOP
		SELECT * INTO purged FROM mm.purge_finished(settings.keep, settings.batch_size, settings.archive);
		COMMIT;
		EXIT WHEN purged.matches_purged OPERATOR(pg_catalog.=) 0
			  AND purged.tickets_purged OPERATOR(pg_catalog.=) 0;
	END LOOP;
END;
$$;
COMMENT ON PROCEDURE mm.run_retention() IS
'Body of the retention pg_cron job: mm.purge_finished in batches with the settings of mm.schedule_retention';

-- Makes pg_cron purge finished tickets and matches older than `keep` every
-- `every`; re-scheduling replaces the job and its settings.
CREATE FUNCTION mm.schedule_retention(keep interval, every interval DEFAULT '1 hour',
									  archive boolean DEFAULT false, batch_size integer DEFAULT 10000)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	plan record;
	job_id bigint;
BEGIN
	IF keep IS NULL OR archive IS NULL OR batch_size IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN keep IS NULL THEN 'keep' WHEN archive IS NULL THEN 'archive' ELSE 'batch_size' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF keep <= '0'::interval THEN
		RAISE EXCEPTION 'keep must be positive: %', keep USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF batch_size < 1 OR batch_size > 1000000 THEN
		RAISE EXCEPTION 'batch_size must be between 1 and 1000000: %', batch_size
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT * INTO plan FROM mm.schedule_plan(every);
	IF plan.mode <> 'cron' THEN
		RAISE EXCEPTION 'every must be at least 1 minute for the retention job: %', every
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	PERFORM mm.require_pg_cron();

	job_id := mm.cron_job_upsert('mm_retention', plan.cron_schedule, 'CALL mm.run_retention()');
	INSERT INTO mm.schedule_jobs AS s (job_name, kind, every, mode, cron_schedule, cron_job_id,
									   keep, archive, batch_size)
	VALUES ('mm_retention', 'retention', every, plan.mode, plan.cron_schedule, job_id,
			keep, archive, batch_size)
	ON CONFLICT ON CONSTRAINT schedule_jobs_pkey DO UPDATE
	   SET every = EXCLUDED.every, mode = EXCLUDED.mode, cron_schedule = EXCLUDED.cron_schedule,
		   cron_job_id = EXCLUDED.cron_job_id, keep = EXCLUDED.keep, archive = EXCLUDED.archive,
		   batch_size = EXCLUDED.batch_size, updated_at = now();
	RETURN job_id;
END;
$$;
COMMENT ON FUNCTION mm.schedule_retention(interval, interval, boolean, integer) IS
'Makes pg_cron purge (or archive) finished tickets and matches older than keep; returns the pg_cron job id';

-- Stops the retention job; false when there was none.
CREATE FUNCTION mm.unschedule_retention()
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	row_removed boolean;
	job_removed boolean;
BEGIN
	PERFORM mm.require_pg_cron();
	DELETE FROM mm.schedule_jobs s WHERE s.job_name = 'mm_retention';
	row_removed := FOUND;
	job_removed := mm.cron_job_remove('mm_retention');
	RETURN row_removed OR job_removed;
END;
$$;
COMMENT ON FUNCTION mm.unschedule_retention() IS
'Stops the retention job; returns false when there was none';

-- matchmaking's jobs with pg_cron's view of them (when pg_cron is here):
-- active flag, whether a tick loop is running now, and the last run.  Jobs
-- named like ours that have no row of mm.schedule_jobs show with kind NULL.
CREATE FUNCTION mm.schedule_status()
RETURNS TABLE (job_name text, kind text, queue text, every interval, mode text,
			   cron_schedule text, job_id bigint, active boolean, loop_running boolean,
			   last_run_status text, last_run_start timestamptz, last_run_message text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_extension e WHERE e.extname = 'pg_cron') THEN
		RETURN QUERY
		SELECT s.job_name, s.kind, s.queue, s.every, s.mode, s.cron_schedule, s.cron_job_id,
			   NULL::boolean, mm.tick_loop_running(s.queue), NULL::text, NULL::timestamptz, NULL::text
		  FROM mm.schedule_jobs s
		 ORDER BY s.job_name;
		RETURN;
	END IF;
	SELECT * INTO cron FROM mm.require_pg_cron();
	RETURN QUERY EXECUTE format($q$
		SELECT coalesce(s.job_name, j.jobname::text), s.kind, s.queue, s.every, s.mode,
			   coalesce(s.cron_schedule, j.schedule), coalesce(j.jobid, s.cron_job_id), j.active,
			   mm.tick_loop_running(coalesce(s.queue, CASE WHEN j.jobname LIKE 'mm\_tick:%%'
														   THEN substr(j.jobname, 9) END)),
			   r.status, r.start_time, r.return_message
		  FROM mm.schedule_jobs s
		  FULL JOIN (SELECT * FROM %1$I.job
					  WHERE jobname LIKE 'mm\_tick:%%' OR jobname = 'mm_retention') j
			ON j.jobname = s.job_name
		  LEFT JOIN LATERAL (SELECT d.status, d.start_time, d.return_message
							   FROM %1$I.job_run_details d
							  WHERE d.jobid = j.jobid
							  ORDER BY d.runid DESC LIMIT 1) r ON true
		 ORDER BY 1$q$, cron.schema);
END;
$$;
COMMENT ON FUNCTION mm.schedule_status() IS
'matchmaking''s pg_cron jobs with their state (the body of view mm.schedules)';

-- Whether a tick loop of the queue holds its advisory lock right now.
CREATE FUNCTION mm.tick_loop_running(queue text)
RETURNS boolean
LANGUAGE sql STABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT EXISTS (
		SELECT 1 FROM pg_locks l
		 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		   AND (l.classid::bigint << 32 | l.objid::bigint)
			   = hashtextextended(concat('mm_tick_loop:', queue), 0))
$$;
COMMENT ON FUNCTION mm.tick_loop_running(text) IS
'True while a tick loop of the queue (mm.tick_loop) is running';

CREATE VIEW mm.schedules AS
	SELECT * FROM mm.schedule_status();
COMMENT ON VIEW mm.schedules IS 'matchmaking''s pg_cron jobs: queue ticks and retention, with their state';



-- ===================================================================
-- Section: metrics (views and functions for analysts)
-- ===================================================================

-- Every result row carries its match's queue (metrics read results by queue).
CREATE FUNCTION mm.match_results_set_queue()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	SELECT m.queue INTO NEW.queue FROM mm.matches m WHERE m.id = NEW.match_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'match % does not exist', NEW.match_id USING ERRCODE = 'foreign_key_violation';
	END IF;
	RETURN NEW;
END;
$$;
COMMENT ON FUNCTION mm.match_results_set_queue() IS
'Trigger: copies the match''s queue into a result row (refuses a match that does not exist)';
CREATE TRIGGER match_results_queue BEFORE INSERT OR UPDATE OF match_id, queue ON mm.match_results
	FOR EACH ROW EXECUTE FUNCTION mm.match_results_set_queue();

-- Argument checks shared by the metrics functions: a positive time_window ending
-- at a finite `now`.
CREATE FUNCTION mm.metrics_check_window(time_window interval, now timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF time_window IS NULL THEN
		RAISE EXCEPTION 'time_window must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF time_window <= '0'::interval THEN
		RAISE EXCEPTION 'time_window must be positive: %', time_window USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF now IN ('infinity', '-infinity') THEN
		RAISE EXCEPTION 'now must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the window's start must be a timestamp
	BEGIN
		PERFORM now - time_window;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'time_window reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'now - time_window is out of range.';
	END;
END;
$$;
COMMENT ON FUNCTION mm.metrics_check_window(interval, timestamptz) IS
'Raises an error unless time_window is positive, now finite and now - time_window a timestamp (shared by the metrics functions)';

-- The queues a metrics function covers: the named one (which must exist), or
-- every queue for NULL.  An array, so the queries use the (queue, ...) indexes.
CREATE FUNCTION mm.metrics_queues(queue text)
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
	IF queue IS NULL THEN
		RETURN ARRAY(SELECT q.name FROM mm.queues q ORDER BY q.name);
	END IF;
	IF NOT EXISTS (SELECT 1 FROM mm.queues q WHERE q.name = queue) THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue USING ERRCODE = 'undefined_object';
	END IF;
	RETURN ARRAY[queue];
END;
$$;
COMMENT ON FUNCTION mm.metrics_queues(text) IS
'The queue names a metrics function covers: the given queue, or all queues for NULL';

-- Ticket figures of one queue (or all queues pooled, for NULL) over the
-- time_window (now - time_window, now]: who is searching at `now`, time to match of the
-- tickets matched in the window, the share of the window's tickets matched
-- within 120 s, timeouts and cancellations in the window.
CREATE FUNCTION mm.ticket_metrics(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								  now timestamptz DEFAULT now())
RETURNS TABLE (searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	queues text[];
	since timestamptz;
	fill_within constant interval := '120 seconds';
BEGIN
	PERFORM mm.metrics_check_window(time_window, now);
	queues := mm.metrics_queues(queue);
	since := now - time_window;

	SELECT count(*), coalesce(sum(jsonb_array_length(t.players)), 0),
		   extract(epoch FROM now - min(t.created_at))::float8
	  INTO searching_tickets, searching_players, oldest_wait_s
	  FROM mm.tickets t
	 WHERE t.queue = ANY (queues) AND t.status = 'searching' AND t.created_at <= now;

	SELECT count(*), avg(w.seconds), percentile_cont(0.5) WITHIN GROUP (ORDER BY w.seconds),
		   percentile_cont(0.95) WITHIN GROUP (ORDER BY w.seconds),
		   percentile_cont(0.99) WITHIN GROUP (ORDER BY w.seconds)
	  INTO tickets_matched, time_to_match_avg_s, time_to_match_p50_s, time_to_match_p95_s,
		   time_to_match_p99_s
	  FROM (SELECT extract(epoch FROM t.matched_at - t.created_at)::float8 AS seconds
			  FROM mm.tickets t
			 WHERE t.queue = ANY (queues) AND t.matched_at > since AND t.matched_at <= now) w;

	-- The window's tickets whose 120 s verdict is in: matched in time, or
	-- timed out, or older than 120 s; a cancellation within 120 s was the
	-- player's choice and is left out, and so is a ticket still younger.
	SELECT count(*) FILTER (WHERE f.in_time)::float8 / nullif(count(*), 0), count(*)
	  INTO fill_rate, fill_rate_tickets
	  FROM (SELECT coalesce(t.matched_at <= now AND t.matched_at - t.created_at <= fill_within, false) AS in_time,
				   t.status, t.created_at, t.updated_at
			  FROM mm.tickets t
			 WHERE t.queue = ANY (queues) AND t.created_at > since AND t.created_at <= now) f
	 WHERE f.in_time
		OR f.status = 'timed_out'
		OR (f.status = 'cancelled' AND f.updated_at - f.created_at >= fill_within)
		OR (f.status <> 'cancelled' AND now - f.created_at >= fill_within);

	SELECT count(*) FILTER (WHERE t.status = 'timed_out'), count(*) FILTER (WHERE t.status = 'cancelled')
	  INTO timeouts, cancellations
	  FROM mm.tickets t
	 WHERE t.queue = ANY (queues) AND t.status IN ('cancelled', 'timed_out')
	   AND t.updated_at > since AND t.updated_at <= now;

	RETURN NEXT;
END;
$$;
COMMENT ON FUNCTION mm.ticket_metrics(text, interval, timestamptz) IS
'Ticket figures of a queue (all queues pooled for NULL) over (now - time_window, now]: searching, time to match, fill rate, timeouts';

-- Per queue ticket figures over a time_window (the view mm.queue_stats is the last hour).
CREATE FUNCTION mm.queue_stats(time_window interval, now timestamptz DEFAULT now())
RETURNS TABLE (queue text, searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
	PERFORM mm.metrics_check_window(time_window, now);
	RETURN QUERY
	SELECT q.name, s.*
	  FROM mm.queues q CROSS JOIN LATERAL mm.ticket_metrics(q.name, time_window, now) s
	 ORDER BY q.name;
END;
$$;
COMMENT ON FUNCTION mm.queue_stats(interval, timestamptz) IS
'Per queue: searching tickets and players, oldest wait, time to match avg/p50/p95/p99, fill rate within 120 s, timeouts, cancellations';

CREATE VIEW mm.queue_stats AS
	SELECT * FROM mm.queue_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.queue_stats IS 'mm.queue_stats(time_window) over the last hour';

-- The winner of a result: winner_team, else the team holding a unique rank 1.
CREATE FUNCTION mm.result_winner(winner_team text, ranks jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(winner_team,
					(SELECT min(r.key) FROM jsonb_each(ranks) r
					  WHERE r.value = '1'::jsonb HAVING count(*) = 1))
$$;
COMMENT ON FUNCTION mm.result_winner(text, jsonb) IS
'The winning team of a result: winner_team, else the team with a unique rank 1 in ranks';

-- The players of one match with their team, skill (a numeric ticket
-- attribute) and latency to the match's region; read by primary keys.
CREATE FUNCTION mm.match_player_values(match_id bigint, region text, skill_attribute text,
									   OUT team text, OUT skill float8, OUT latency float8)
RETURNS SETOF record
LANGUAGE sql STABLE PARALLEL SAFE
-- no SET clause, so that it is inlined into its caller's query: hence the
-- schema-qualified operators
AS $$
	SELECT mp.team,
		   CASE WHEN pg_catalog.jsonb_typeof(tp.attributes OPERATOR(pg_catalog.->) skill_attribute)
					 OPERATOR(pg_catalog.=) 'number'
				THEN CAST(tp.attributes OPERATOR(pg_catalog.->>) skill_attribute AS pg_catalog.float8) END,
		   CASE WHEN pg_catalog.jsonb_typeof(tp.latencies OPERATOR(pg_catalog.->) region)
					 OPERATOR(pg_catalog.=) 'number'
				THEN CAST(tp.latencies OPERATOR(pg_catalog.->>) region AS pg_catalog.float8) END
	  FROM mm.match_players mp
	  LEFT JOIN mm.ticket_players tp ON tp.ticket_id OPERATOR(pg_catalog.=) mp.ticket_id
									AND tp.player_id OPERATOR(pg_catalog.=) mp.player_id
	 WHERE mp.match_id OPERATOR(pg_catalog.=) match_player_values.match_id
$$;
COMMENT ON FUNCTION mm.match_player_values(bigint, text, text) IS
'The players of a match: team, skill attribute and latency to the region (used by mm.match_details)';

-- Per match figures of matches formed in (now - time_window, now]: our stored
-- quality; the seed's score 1 - |avg team 1 - avg team 2| / global average
-- skill (teams apart: highest minus lowest team average; global: every player
-- of the queue's matches in the window); average latency in the chosen region.
CREATE FUNCTION mm.match_details(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now(), skill_attribute text DEFAULT 'skill')
RETURNS TABLE (match_id bigint, queue_name text, created_at timestamptz, region text, players integer,
			   teams integer, quality float8, seed_quality float8, team_skill_gap float8,
			   latency_avg_ms float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	queues text[];
BEGIN
	PERFORM mm.metrics_check_window(time_window, now);
	IF skill_attribute IS NULL THEN
		RAISE EXCEPTION 'skill_attribute must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	queues := mm.metrics_queues(queue);
	-- Per match lookups (LATERAL, by the match_players and tickets
	-- primary keys), so the cost follows the window's matches, not the tables.
	RETURN QUERY
	WITH m AS (
		SELECT mt.id, mt.queue, mt.created_at, mt.region, mt.quality
		  FROM mm.matches mt
		 WHERE mt.queue = ANY (queues) AND mt.created_at > now - time_window AND mt.created_at <= now
	), per_match AS (
		SELECT m.*, pl.players, pl.latency, pl.skill_sum, pl.skill_count,
			   pl.teams, pl.teams_with_skill, pl.skill_gap
		  FROM m
		 CROSS JOIN LATERAL (
			-- one row per team (and one for players without a team)
			SELECT coalesce(sum(t.players), 0)::integer AS players,
				   sum(t.latency_sum) / nullif(sum(t.latency_count), 0) AS latency,
				   sum(t.skill_sum) AS skill_sum, sum(t.skill_count) AS skill_count,
				   count(*) FILTER (WHERE t.team IS NOT NULL)::integer AS teams,
				   count(t.skill) FILTER (WHERE t.team IS NOT NULL) AS teams_with_skill,
				   max(t.skill) FILTER (WHERE t.team IS NOT NULL)
				   - min(t.skill) FILTER (WHERE t.team IS NOT NULL) AS skill_gap
			  FROM (SELECT x.team, count(*) AS players, avg(x.skill) AS skill,
						   sum(x.skill) AS skill_sum, count(x.skill) AS skill_count,
						   sum(x.latency) AS latency_sum, count(x.latency) AS latency_count
					  FROM mm.match_player_values(m.id, m.region, skill_attribute) x
					 GROUP BY x.team) t) pl
	), with_global AS (
		-- the queue's average skill over every player of its matches in the window
		SELECT pm.*, sum(pm.skill_sum) OVER (PARTITION BY pm.queue)
					 / nullif(sum(pm.skill_count) OVER (PARTITION BY pm.queue), 0) AS global_skill
		  FROM per_match pm
	)
	SELECT g.id, g.queue, g.created_at, g.region, g.players, g.teams, g.quality,
		   CASE WHEN g.teams_with_skill >= 2 AND g.global_skill > 0
				THEN 1 - g.skill_gap / g.global_skill END,
		   CASE WHEN g.teams_with_skill >= 2 THEN g.skill_gap END,
		   g.latency
	  FROM with_global g
	 ORDER BY g.created_at, g.id;
END;
$$;
COMMENT ON FUNCTION mm.match_details(text, interval, timestamptz, text) IS
'Per match formed in the window: players, teams, stored quality, the seed''s skill quality score, average latency';

-- Match and outcome figures of one queue (or all pooled, for NULL): averages
-- of mm.match_details over the matches formed in the window, and from the
-- results reported in the window: how often the predicted favourite won
-- against the average predicted probability, and the share of players who
-- left in the first 20% of the match (start: the match's created_at).
CREATE FUNCTION mm.match_metrics(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now())
RETURNS TABLE (matches bigint, players_per_match float8, quality_avg float8, seed_quality_avg float8,
			   latency_avg_ms float8, results bigint, favourite_win_rate float8,
			   favourite_predicted_rate float8, win_rate_balance_points float8,
			   early_quits bigint, early_quit_rate float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	queues text[];
	since timestamptz;
BEGIN
	PERFORM mm.metrics_check_window(time_window, now);
	queues := mm.metrics_queues(queue);
	since := now - time_window;

	SELECT count(*), avg(d.players), avg(d.quality), avg(d.seed_quality), avg(d.latency_avg_ms)
	  INTO matches, players_per_match, quality_avg, seed_quality_avg, latency_avg_ms
	  FROM mm.match_details(queue, time_window, now) d;

	SELECT count(*),
		   avg((o.winner = o.predicted_favourite)::integer) FILTER (WHERE o.predicted),
		   avg(o.favourite_win_probability) FILTER (WHERE o.predicted)
	  INTO results, favourite_win_rate, favourite_predicted_rate
	  FROM (SELECT w.winner, w.predicted_favourite, w.favourite_win_probability,
				   w.predicted_favourite IS NOT NULL AND w.winner IS NOT NULL AS predicted
			  FROM (SELECT mm.result_winner(r.winner_team, r.ranks) AS winner, r.predicted_favourite,
						   r.favourite_win_probability
					  FROM mm.match_results r
					 WHERE r.queue = ANY (queues) AND r.reported_at > since AND r.reported_at <= now
					OFFSET 0) w) o;	-- OFFSET 0: the winner is worked out once per result
	win_rate_balance_points := 100 * abs(favourite_win_rate - favourite_predicted_rate);

	-- per result lookups by primary key (an aggregate LATERAL is not flattened)
	SELECT coalesce(sum(q.early), 0)::bigint, sum(q.early)::float8 / nullif(sum(q.players), 0)
	  INTO early_quits, early_quit_rate
	  FROM mm.match_results r
	 CROSS JOIN LATERAL (
		SELECT count(*) AS players,
			   count(*) FILTER (WHERE mp.left_at < m.created_at + r.duration * 0.2) AS early
		  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
		 WHERE m.id = r.match_id) q
	 WHERE r.queue = ANY (queues) AND r.reported_at > since AND r.reported_at <= now
	   AND r.duration IS NOT NULL;

	RETURN NEXT;
END;
$$;
COMMENT ON FUNCTION mm.match_metrics(text, interval, timestamptz) IS
'Match figures of a queue (all pooled for NULL): quality, seed quality, latency, players per match, win-rate balance, early quits';

-- Per queue match figures over a time_window (the view mm.match_stats is the last hour).
CREATE FUNCTION mm.match_stats(time_window interval, now timestamptz DEFAULT now())
RETURNS TABLE (queue text, matches bigint, players_per_match float8, quality_avg float8,
			   seed_quality_avg float8, latency_avg_ms float8, results bigint,
			   favourite_win_rate float8, favourite_predicted_rate float8,
			   win_rate_balance_points float8, early_quits bigint, early_quit_rate float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
	PERFORM mm.metrics_check_window(time_window, now);
	RETURN QUERY
	SELECT q.name, s.*
	  FROM mm.queues q CROSS JOIN LATERAL mm.match_metrics(q.name, time_window, now) s
	 ORDER BY q.name;
END;
$$;
COMMENT ON FUNCTION mm.match_stats(interval, timestamptz) IS
'Per queue: matches, players per match, stored and seed quality, latency, win-rate balance, early quits';

CREATE VIEW mm.match_stats AS
	SELECT * FROM mm.match_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.match_stats IS 'mm.match_stats(time_window) over the last hour';

-- One row per minute [minute, minute + 1 min) from from_time's minute up to
-- to_time, for dashboards: tickets created and matched, time to match of the
-- tickets matched in that minute, matches formed and their quality, timeouts,
-- cancellations, and the tickets still searching at the end of the minute.
CREATE FUNCTION mm.queue_stats_by_minute(queue text, from_time timestamptz, to_time timestamptz)
RETURNS TABLE (minute timestamptz, tickets_created bigint, tickets_matched bigint,
			   time_to_match_avg_s float8, time_to_match_p95_s float8, matches bigint,
			   quality_avg float8, timeouts bigint, cancellations bigint, searching_at_end bigint)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	first_minute timestamptz;
	last_end timestamptz;
BEGIN
	IF queue IS NULL OR from_time IS NULL OR to_time IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN queue IS NULL THEN 'queue' WHEN from_time IS NULL THEN 'from_time' ELSE 'to_time' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(from_time) OR NOT isfinite(to_time) THEN
		RAISE EXCEPTION 'from_time and to_time must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF to_time <= from_time THEN
		RAISE EXCEPTION 'to_time must be after from_time' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- in seconds: to_time - from_time as an interval overflows for far-apart times
	IF extract(epoch FROM to_time) - extract(epoch FROM from_time) > 7 * 86400 THEN
		RAISE EXCEPTION 'from_time and to_time must be at most 7 days apart'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Use mm.queue_stats(time_window, now) for longer spans.';
	END IF;
	PERFORM mm.metrics_queues(queue);
	first_minute := date_trunc('minute', from_time);
	-- the end of the last minute that starts before to_time
	last_end := date_trunc('minute', to_time - '1 microsecond'::interval) + '1 minute'::interval;

	RETURN QUERY
	WITH minutes AS (
		SELECT g AS minute FROM generate_series(first_minute, last_end - '1 minute'::interval,
												'1 minute'::interval) g
	), created AS (
		SELECT date_trunc('minute', t.created_at) AS minute, count(*) AS n
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue
		   AND t.created_at >= first_minute AND t.created_at < last_end
		 GROUP BY 1
	), matched AS (
		SELECT date_trunc('minute', t.matched_at) AS minute, count(*) AS n,
			   avg(extract(epoch FROM t.matched_at - t.created_at)::float8) AS wait_avg,
			   percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM t.matched_at - t.created_at)::float8) AS wait_p95
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue
		   AND t.matched_at >= first_minute AND t.matched_at < last_end
		 GROUP BY 1
	), formed AS (
		SELECT date_trunc('minute', m.created_at) AS minute, count(*) AS n, avg(m.quality) AS quality
		  FROM mm.matches m
		 WHERE m.queue = queue_stats_by_minute.queue
		   AND m.created_at >= first_minute AND m.created_at < last_end
		 GROUP BY 1
	), ended AS (
		SELECT date_trunc('minute', t.updated_at) AS minute,
			   count(*) FILTER (WHERE t.status = 'timed_out') AS timeouts,
			   count(*) FILTER (WHERE t.status = 'cancelled') AS cancellations
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at >= first_minute AND t.updated_at < last_end
		 GROUP BY 1
	), alive AS (
		-- tickets searching at the end of some minute of the range: created
		-- before its end, ended (matched, cancelled, timed out) after the first
		-- minute's end or not at all; each read through an index
		SELECT t.created_at, NULL::timestamptz AS ended_at
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status = 'searching' AND t.created_at < last_end
		UNION ALL
		SELECT t.created_at, t.matched_at
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.matched_at IS NOT NULL
		   AND t.matched_at >= first_minute + '1 minute'::interval AND t.created_at < last_end
		UNION ALL
		SELECT t.created_at, t.updated_at
		  FROM mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at >= first_minute + '1 minute'::interval AND t.created_at < last_end
	), depth_change AS (
		-- +1 in the minute a ticket arrives (or the first minute), -1 in the one it leaves
		SELECT d.minute, sum(d.change) AS change
		  FROM (SELECT greatest(first_minute, date_trunc('minute', a.created_at)) AS minute, 1 AS change
				  FROM alive a
				UNION ALL
				SELECT date_trunc('minute', a.ended_at), -1
				  FROM alive a WHERE a.ended_at < last_end) d
		 GROUP BY d.minute
	)
	SELECT mi.minute, coalesce(c.n, 0), coalesce(ma.n, 0), ma.wait_avg, ma.wait_p95,
		   coalesce(f.n, 0), f.quality, coalesce(e.timeouts, 0), coalesce(e.cancellations, 0),
		   (sum(coalesce(dc.change, 0)) OVER (ORDER BY mi.minute))::bigint
	  FROM minutes mi
	  LEFT JOIN created c ON c.minute = mi.minute
	  LEFT JOIN matched ma ON ma.minute = mi.minute
	  LEFT JOIN formed f ON f.minute = mi.minute
	  LEFT JOIN ended e ON e.minute = mi.minute
	  LEFT JOIN depth_change dc ON dc.minute = mi.minute
	 ORDER BY mi.minute;
END;
$$;
COMMENT ON FUNCTION mm.queue_stats_by_minute(text, timestamptz, timestamptz) IS
'Per minute of a queue, for dashboards: tickets created and matched, time to match, matches, quality, timeouts, cancellations, queue depth';

-- What players may see about a queue: the searching players (when the
-- queue's statistics.show_player_count is true) and an estimated wait for a
-- new ticket (when statistics.show_time_to_match is true): the median time to
-- match of the tickets matched in the last 15 minutes, in whole seconds.
CREATE FUNCTION mm.queue_statistics(queue text, now timestamptz DEFAULT now())
RETURNS TABLE (players_searching bigint, estimated_wait_s float8)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	config jsonb;
	show_player_count boolean;
	show_time_to_match boolean;
BEGIN
	IF queue_statistics.queue IS NULL THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.metrics_check_window('15 minutes', now);
	SELECT q.config INTO config FROM mm.queues q WHERE q.name = queue_statistics.queue;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue_statistics.queue USING ERRCODE = 'undefined_object';
	END IF;
	show_player_count := coalesce((config #>> '{statistics,show_player_count}')::boolean, false);
	show_time_to_match := coalesce((config #>> '{statistics,show_time_to_match}')::boolean, false);

	players_searching := NULL;
	estimated_wait_s := NULL;
	IF show_player_count THEN
		SELECT coalesce(sum(jsonb_array_length(t.players)), 0) INTO players_searching
		  FROM mm.tickets t
		 WHERE t.queue = queue_statistics.queue AND t.status = 'searching' AND t.created_at <= now;
	END IF;
	IF show_time_to_match THEN
		SELECT round(percentile_cont(0.5) WITHIN GROUP (
					 ORDER BY extract(epoch FROM t.matched_at - t.created_at)::float8))
		  INTO estimated_wait_s
		  FROM mm.tickets t
		 WHERE t.queue = queue_statistics.queue
		   AND t.matched_at > now - '15 minutes'::interval AND t.matched_at <= now;
	END IF;
	RETURN NEXT;
END;
$$;
COMMENT ON FUNCTION mm.queue_statistics(text, timestamptz) IS
'What players may see about a queue: searching players and estimated wait, as the queue''s statistics flags allow';

-- The analysts' report: each figure beside the seed's target.  meets_target
-- is NULL when there is no data for the figure (or it has no target).
CREATE FUNCTION mm.health_report(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now())
RETURNS TABLE (metric text, value numeric, target text, meets_target boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	t record;
	m record;
BEGIN
	SELECT * INTO t FROM mm.ticket_metrics(queue, time_window, now);
	SELECT * INTO m FROM mm.match_metrics(queue, time_window, now);
	RETURN QUERY
	SELECT r.metric, round(r.value::numeric, 3), r.target,
		   CASE r.op WHEN '>' THEN r.value > r.bound WHEN '<' THEN r.value < r.bound
					 WHEN '<=' THEN r.value <= r.bound END
	  FROM (VALUES
			(1, 'match quality (seed score)', m.seed_quality_avg, '> 0.85', '>', 0.85::float8),
			(2, 'time to match p95 (s)', t.time_to_match_p95_s, '< 60', '<', 60),
			(3, 'matched within 2 minutes (%)', 100 * t.fill_rate, '> 95', '>', 95),
			(4, 'average latency (ms)', m.latency_avg_ms, '< 60', '<', 60),
			(5, 'early quits (%)', 100 * m.early_quit_rate, '< 5', '<', 5),
			(6, 'win-rate balance (points)', m.win_rate_balance_points, '<= 5', '<=', 5),
			(7, 'stored match quality', m.quality_avg, NULL, NULL, NULL),
			(8, 'matches formed', m.matches::float8, NULL, NULL, NULL),
			(9, 'tickets matched', t.tickets_matched::float8, NULL, NULL, NULL),
			(10, 'time to match average (s)', t.time_to_match_avg_s, NULL, NULL, NULL),
			(11, 'players searching', t.searching_players::float8, NULL, NULL, NULL),
			(12, 'timeouts', t.timeouts::float8, NULL, NULL, NULL),
			(13, 'cancellations', t.cancellations::float8, NULL, NULL, NULL),
			(14, 'results reported', m.results::float8, NULL, NULL, NULL))
		   AS r (n, metric, value, target, op, bound)
	 ORDER BY r.n;
END;
$$;
COMMENT ON FUNCTION mm.health_report(text, interval, timestamptz) IS
'The analysts'' report: each matchmaking health figure beside the seed''s target';



-- ===================================================================
-- Section: privileges
-- ===================================================================
