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
-- matchmaking 0.2 -> 0.3: the match lifecycle (acceptance, assignment,
-- backfill, results that update stored ratings), least-privilege roles, and
-- scheduling that repairs itself.
--
-- This upgrade is built from the files of upgrade/0.2--0.3, one per concern,
-- in name order; the fresh 0.3 install script is matchmaking--0.2.sql
-- followed by this upgrade (see the Makefile), so a fresh install and an
-- upgraded database run the same statements.

\echo Use "ALTER EXTENSION matchmaking UPDATE TO '0.3'" to load this file. \quit

-- ===================================================================
-- Section: roles (least privilege; docs/security.md)
-- ===================================================================

-- Group roles (NOLOGIN): grant them to your login roles.  Roles belong to the
-- cluster, not to a database: a second database's install, or a reinstall,
-- finds them already there and keeps them.
--   mm_frontend  the game's client-facing backend: create and cancel
--                tickets, answer proposed matches, read a ticket's status
--                and assignment
--   mm_director  the game-server allocator: assign, requeue, complete,
--                backfill, report results, read matches
--   mm_analyst   read-only metrics and statistics
--   mm_admin     queues, schedules, rating pools; member of the other three
-- The grants of each function are next to it; 90_privileges.sql revokes
-- everything else from PUBLIC.
DO $roles$
DECLARE
	role_name text;
BEGIN
	FOREACH role_name IN ARRAY ARRAY['mm_frontend', 'mm_director', 'mm_analyst', 'mm_admin']
	LOOP
		IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) role_name) THEN
			EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', role_name);
		END IF;
	END LOOP;
END
$roles$;
GRANT mm_frontend, mm_director, mm_analyst TO mm_admin;
GRANT USAGE ON SCHEMA mm TO mm_frontend, mm_director, mm_analyst, mm_admin;

-- ===================================================================
-- Section: the match lifecycle (docs/lifecycle.md)
-- ===================================================================
--
-- proposed --accept all--> ready --assign--> assigned --complete/result--> completed
--    |                       |                   |
--    +--reject/timeout--+    +------requeue / cancel------+--> cancelled
--
-- A match is live while proposed, ready or assigned.  Its players stay
-- claimed in mm.active_players (by the ticket that brought them) until it
-- ends or they leave it, so a player in a live match cannot search again.

-- The tick reads a queue's expired proposals on every tick: a small index of
-- the proposed matches only.
CREATE INDEX matches_proposed_deadline ON mm.matches (queue, acceptance_deadline)
	WHERE status OPERATOR(pg_catalog.=) 'proposed';

CREATE FUNCTION mm.notify_match_event(event text, match_id bigint, details jsonb)
RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'mm_notify_match_event';
COMMENT ON FUNCTION mm.notify_match_event(text, bigint, jsonb) IS
'Internal: queues a signed match event {"event", "queue", "match_id", "status", <details>} on mm_events, sent at commit';
REVOKE ALL ON FUNCTION mm.notify_match_event(text, bigint, jsonb) FROM PUBLIC;

-- A claim is stale when its ticket is neither active nor in a live match
-- that the player has not left: 0.2's check looked at active tickets only.
CREATE FUNCTION mm.claim_is_live(player_id text, ticket_id bigint)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT EXISTS (SELECT FROM mm.tickets_active t WHERE t.id = claim_is_live.ticket_id)
		OR EXISTS (SELECT FROM mm.tickets_ended t
					 JOIN mm.matches m ON m.id = t.match_id
					 JOIN mm.match_players mp ON mp.match_id = m.id
						  AND mp.player_id = claim_is_live.player_id
					WHERE t.id = claim_is_live.ticket_id
					  AND m.status IN ('proposed', 'ready', 'assigned')
					  AND mp.left_at IS NULL)
$$;
COMMENT ON FUNCTION mm.claim_is_live(text, bigint) IS
'Internal: whether a player''s claim still holds (its ticket is active, or in a live match the player has not left)';
REVOKE ALL ON FUNCTION mm.claim_is_live(text, bigint) FROM PUBLIC;

-- The live match a player is in, if any (for the refusal of a new ticket).
CREATE FUNCTION mm.player_live_match(player_id text, OUT match_id bigint, OUT status text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT m.id, m.status
	  FROM mm.active_players a
	  JOIN mm.tickets_ended t ON t.id = a.ticket_id
	  JOIN mm.matches m ON m.id = t.match_id
	  JOIN mm.match_players mp ON mp.match_id = m.id AND mp.player_id = a.player_id
	 WHERE a.player_id = player_live_match.player_id
	   AND m.status IN ('proposed', 'ready', 'assigned')
	   AND mp.left_at IS NULL
$$;
COMMENT ON FUNCTION mm.player_live_match(text) IS
'Internal: the live match (proposed, ready or assigned, not left) that holds a player, if any';
REVOKE ALL ON FUNCTION mm.player_live_match(text) FROM PUBLIC;

-- 0.3: a player in a live match is refused too, and a claim is stale only
-- when claim_is_live says so.
CREATE OR REPLACE FUNCTION mm.claim_players(ticket_ids bigint[], queues text[], players jsonb[])
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
	live record;
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
		-- A claim whose ticket is neither active nor in a live match (its
		-- partition written directly, a match ended without releasing it)
		-- is stale: drop it and try once more.  Only in READ COMMITTED,
		-- where a fresh snapshot sees the holder's commit that the refusal
		-- waited for.
		EXIT WHEN attempt = 2 OR current_setting('transaction_isolation') <> 'read committed';
		DELETE FROM mm.active_players a
		 USING unnest(claim_players.players) AS u(players), jsonb_array_elements(u.players) p
		 WHERE a.player_id = p.value ->> 'id'
		   AND NOT mm.claim_is_live(a.player_id, a.ticket_id);
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
	SELECT * INTO live FROM mm.player_live_match(dup_player);
	IF live.match_id IS NOT NULL THEN
		RAISE EXCEPTION 'player "%" is in match %, which is %', dup_player, live.match_id, live.status
			USING ERRCODE = 'unique_violation',
				  DETAIL = format('Ticket %s brought the player into the match.', holder_ticket),
				  HINT = 'A player in a live match cannot search until the match is completed or cancelled, or the player leaves it (mm.leave_match).';
	END IF;
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

-- Releases the claims a match's tickets hold (the match ended).
CREATE FUNCTION mm.release_match_players(match_id bigint)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	DELETE FROM mm.active_players a
	 USING mm.match_players mp
	 WHERE mp.match_id = release_match_players.match_id
	   AND a.player_id = mp.player_id AND a.ticket_id = mp.ticket_id
$$;
COMMENT ON FUNCTION mm.release_match_players(bigint) IS
'Internal: releases the players of an ended match so they may search again';
REVOKE ALL ON FUNCTION mm.release_match_players(bigint) FROM PUBLIC;

-- Locks a match for a lifecycle step and returns it; errors for a missing
-- match, one not in an allowed status, or a step dated before the match
-- was formed (now, when given).
CREATE FUNCTION mm.lock_match(match_id bigint, allowed text[], action text,
							  now timestamptz DEFAULT NULL)
RETURNS mm.matches
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
BEGIN
	IF lock_match.match_id IS NULL THEN
		RAISE EXCEPTION 'match_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	SELECT * INTO m FROM mm.matches WHERE id = lock_match.match_id FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'match % does not exist', lock_match.match_id
			USING ERRCODE = 'undefined_object';
	END IF;
	IF NOT m.status = ANY (allowed) THEN
		RAISE EXCEPTION 'cannot % match %: it is %', action, m.id, m.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('Only a match that is %s can be %s.',
								array_to_string(allowed, ' or '),
								CASE action WHEN 'leave' THEN 'left'
											WHEN 'complete' THEN 'completed'
											WHEN 'requeue' THEN 'requeued'
											ELSE action || 'ed' END);
	END IF;
	IF lock_match.now < m.created_at THEN
		RAISE EXCEPTION 'now (%) is before match % was formed (%)', lock_match.now, m.id, m.created_at
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	RETURN m;
END
$$;
COMMENT ON FUNCTION mm.lock_match(bigint, text[], text, timestamptz) IS
'Internal: locks a match row for a lifecycle step, refusing a missing match, one in another status, or a now before it was formed';
REVOKE ALL ON FUNCTION mm.lock_match(bigint, text[], text, timestamptz) FROM PUBLIC;

CREATE FUNCTION mm.check_now(now timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF check_now.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(check_now.now) THEN
		RAISE EXCEPTION 'now must be a finite time, not %', check_now.now
			USING ERRCODE = 'datetime_field_overflow';
	END IF;
END
$$;
COMMENT ON FUNCTION mm.check_now(timestamptz) IS 'Internal: refuses a NULL or infinite now';
REVOKE ALL ON FUNCTION mm.check_now(timestamptz) FROM PUBLIC;

-- Cancels a proposed match: the tickets in cancel_tickets end as cancelled
-- (their players released); every other ticket of the match searches again
-- with its original creation time.
CREATE FUNCTION mm.cancel_proposed_match(match_id bigint, reason text, cancel_tickets bigint[],
										 now timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	requeued bigint[];
	cancelled bigint[];
BEGIN
	UPDATE mm.matches SET status = 'cancelled', cancel_reason = cancel_proposed_match.reason,
		   updated_at = cancel_proposed_match.now
	 WHERE id = cancel_proposed_match.match_id;
	SELECT coalesce(array_agg(e ORDER BY e), '{}') INTO cancelled
	  FROM mm.end_tickets(ARRAY(SELECT t.id FROM mm.tickets_active t
								 WHERE t.match_id = cancel_proposed_match.match_id
								   AND t.id = ANY (cancel_tickets)),
						  'cancelled', cancel_proposed_match.now) e;
	WITH back AS (
		UPDATE mm.tickets_active t
		   SET status = 'searching', match_id = NULL, team = NULL, updated_at = cancel_proposed_match.now
		 WHERE t.match_id = cancel_proposed_match.match_id AND t.status = 'proposed'
		RETURNING t.id)
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO requeued FROM back;
	PERFORM mm.notify_match_event('match_cancelled', cancel_proposed_match.match_id,
		jsonb_build_object('reason', cancel_proposed_match.reason,
						   'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', to_jsonb(cancelled)));
END
$$;
COMMENT ON FUNCTION mm.cancel_proposed_match(bigint, text, bigint[], timestamptz) IS
'Internal: cancels a proposed match; the given tickets end as cancelled, the others search again with their age';
REVOKE ALL ON FUNCTION mm.cancel_proposed_match(bigint, text, bigint[], timestamptz) FROM PUBLIC;

-- A proposed ticket that is cancelled rejects its match, as its player's
-- "no" would: the match is cancelled and its other tickets search again.
-- The match is locked before the ticket, in the order of mm.accept_match.
CREATE OR REPLACE FUNCTION mm.cancel_ticket(ticket_id bigint) RETURNS boolean
	LANGUAGE plpgsql STRICT
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_status text;
	ticket_queue text;
	ticket_match bigint;
	m mm.matches;
BEGIN
	SELECT t.match_id INTO ticket_match
	  FROM mm.tickets_active t WHERE t.id = cancel_ticket.ticket_id AND t.status = 'proposed';
	IF ticket_match IS NOT NULL THEN
		SELECT * INTO m FROM mm.matches x WHERE x.id = ticket_match FOR UPDATE;
	END IF;
	-- waits for a tick that holds the ticket; if the tick ended it, the
	-- active row is gone and the ended one tells the outcome
	SELECT t.status, t.queue, t.match_id INTO ticket_status, ticket_queue, ticket_match
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

	IF ticket_status = 'proposed' THEN
		IF m.id IS DISTINCT FROM ticket_match THEN
			-- proposed since the first look (a tick in between): lock its match
			-- now; nothing else can change the ticket while it is locked
			SELECT * INTO m FROM mm.matches x WHERE x.id = ticket_match FOR UPDATE;
		END IF;
		PERFORM mm.cancel_proposed_match(m.id, 'ticket_cancelled', ARRAY[cancel_ticket.ticket_id],
										 greatest(now(), m.created_at));
	ELSE
		PERFORM mm.end_tickets(ARRAY[cancel_ticket.ticket_id], 'cancelled', now());
	END IF;
	-- signed, delivered at commit only
	PERFORM mm.notify_ticket_event('ticket_cancelled', ticket_queue, ARRAY[cancel_ticket.ticket_id]);
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.cancel_ticket(bigint) IS
	'Cancels a searching or proposed ticket (true; a proposed one rejects its match), or returns false when it was no longer active; NOTIFYs mm_events';

-- Keeps mm.active_players in step with a status written by UPDATE (the tick
-- and the ticket functions move tickets themselves and keep it in step):
-- a ticket leaving searching/proposed releases its players, one entering
-- them claims its players again.  A proposed ticket moved out of its match
-- by hand (cancelled, timed out, searching again) rejects the match, as
-- mm.cancel_ticket does, and keeps no match.
CREATE OR REPLACE FUNCTION mm.tickets_after_update() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	final record;
	left_match record;
	m mm.matches;
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
	FOR left_match IN
		SELECT o.match_id, array_agg(o.id) AS ticket_ids
		  FROM old_tickets o JOIN new_tickets n ON n.id = o.id
		 WHERE o.status = 'proposed' AND n.status IN ('searching', 'cancelled', 'timed_out')
		   AND o.match_id IS NOT NULL
		 GROUP BY o.match_id ORDER BY o.match_id
	LOOP
		UPDATE mm.tickets_active t SET match_id = NULL, team = NULL WHERE t.id = ANY (left_match.ticket_ids);
		UPDATE mm.tickets_ended t SET match_id = NULL, team = NULL WHERE t.id = ANY (left_match.ticket_ids);
		SELECT * INTO m FROM mm.matches x WHERE x.id = left_match.match_id FOR UPDATE;
		IF m.status = 'proposed' THEN
			PERFORM mm.cancel_proposed_match(m.id, 'ticket_cancelled', '{}', greatest(now(), m.created_at));
		END IF;
	END LOOP;
	RETURN NULL;
END
$$;

CREATE FUNCTION mm.accept_match(match_id bigint, player_id text, accept boolean,
								now timestamptz DEFAULT pg_catalog.now())
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	answer boolean;
	player_ticket bigint;
	moved bigint[];
BEGIN
	PERFORM mm.check_now(accept_match.now);
	IF accept_match.player_id IS NULL OR accept_match.accept IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN accept_match.player_id IS NULL
												  THEN 'player_id' ELSE 'accept' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	m := mm.lock_match(accept_match.match_id, ARRAY['proposed', 'ready', 'assigned', 'completed', 'cancelled'],
					   'answer', accept_match.now);
	SELECT mp.accepted, mp.ticket_id INTO answer, player_ticket
	  FROM mm.match_players mp
	 WHERE mp.match_id = m.id AND mp.player_id = accept_match.player_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'player "%" is not in match %', accept_match.player_id, m.id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF m.status <> 'proposed' THEN
		-- the same answer again is harmless: it returns the outcome
		IF answer IS NOT DISTINCT FROM accept_match.accept THEN
			RETURN m.status;
		END IF;
		RAISE EXCEPTION 'match % is %, no longer waiting for answers', m.id, m.status
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	IF accept_match.now > m.acceptance_deadline THEN
		RAISE EXCEPTION 'the answer came after match %''s acceptance deadline', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('The deadline was %s; the answer came at %s.',
								  m.acceptance_deadline, accept_match.now);
	END IF;
	IF answer IS NOT NULL THEN
		IF answer = accept_match.accept THEN
			RETURN m.status;
		END IF;
		RAISE EXCEPTION 'player "%" already answered match % (%)', accept_match.player_id, m.id,
			  CASE WHEN answer THEN 'accepted' ELSE 'rejected' END
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;

	UPDATE mm.match_players mp SET accepted = accept_match.accept
	 WHERE mp.match_id = m.id AND mp.player_id = accept_match.player_id;

	IF NOT accept_match.accept THEN
		-- the rejecting player's ticket (the whole party) is cancelled
		PERFORM mm.cancel_proposed_match(m.id, 'rejected', ARRAY[player_ticket], accept_match.now);
		RETURN 'cancelled';
	END IF;

	IF EXISTS (SELECT FROM mm.match_players mp
				WHERE mp.match_id = m.id AND mp.accepted IS NOT TRUE) THEN
		RETURN 'proposed';
	END IF;

	-- everyone accepted: the tickets end as matched (under the match's
	-- queue, for a ticket of several queues), the players stay claimed by
	-- the live match
	UPDATE mm.matches SET status = 'ready', updated_at = accept_match.now WHERE id = m.id;
	WITH gone AS (
		DELETE FROM mm.tickets_active t WHERE t.match_id = m.id
		RETURNING t.*
	), unlisted AS (
		DELETE FROM mm.ticket_queues q USING gone g WHERE q.ticket_id = g.id AND g.queues IS NOT NULL
	)
	INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, matched_at,
								  match_id, team, queues)
	SELECT g.id, m.queue, g.players, 'matched', g.created_at, accept_match.now, accept_match.now,
		   g.match_id, g.team,
		   CASE WHEN g.queue = m.queue THEN g.queues
				ELSE array_append(array_remove(g.queues, m.queue), g.queue) END
	  FROM gone g;
	PERFORM mm.notify_match_event('match_ready', m.id, '{}');
	RETURN 'ready';
END
$$;
COMMENT ON FUNCTION mm.accept_match(bigint, text, boolean, timestamptz) IS
'A player''s answer to a proposed match; returns the match status: proposed (waiting), ready (all accepted) or cancelled (rejected)';

-- Called by the tick before it searches: for its queue, or for every queue
-- (queue NULL) once at the start of mm.tick(NULL), so a tick of many queues
-- does not probe mm.matches once per queue while it fills it.
CREATE FUNCTION mm.expire_proposed_matches(queue text, now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	expired integer := 0;
	m record;
	due bigint[];
BEGIN
	-- a match being answered right now is left for the next tick
	IF expire_proposed_matches.queue IS NULL THEN
		due := ARRAY(SELECT x.id FROM mm.matches x
					  WHERE x.status = 'proposed' AND x.acceptance_deadline < expire_proposed_matches.now
					  ORDER BY x.acceptance_deadline, x.id
					  FOR UPDATE SKIP LOCKED);
	ELSE
		due := ARRAY(SELECT x.id FROM mm.matches x
					  WHERE x.queue = expire_proposed_matches.queue AND x.status = 'proposed'
						AND x.acceptance_deadline < expire_proposed_matches.now
					  ORDER BY x.acceptance_deadline, x.id
					  FOR UPDATE SKIP LOCKED);
	END IF;
	FOR m IN SELECT u.id FROM unnest(due) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord LOOP
		-- the tickets with a player who did not answer are cancelled
		PERFORM mm.cancel_proposed_match(m.id, 'acceptance_timeout',
			ARRAY(SELECT DISTINCT mp.ticket_id FROM mm.match_players mp
				   WHERE mp.match_id = m.id AND mp.accepted IS NOT TRUE),
			expire_proposed_matches.now);
		expired := expired + 1;
	END LOOP;
	RETURN expired;
END
$$;
COMMENT ON FUNCTION mm.expire_proposed_matches(text, timestamptz) IS
'Internal (the tick): cancels proposed matches of a queue (every queue for NULL) past their acceptance deadline; tickets that accepted search again';
REVOKE ALL ON FUNCTION mm.expire_proposed_matches(text, timestamptz) FROM PUBLIC;

CREATE FUNCTION mm.assign(match_id bigint, connection text, properties jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
BEGIN
	IF assign.connection IS NULL OR assign.connection = '' THEN
		RAISE EXCEPTION 'connection must not be empty' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF length(assign.connection) > 1024 THEN
		RAISE EXCEPTION 'connection is longer than 1024 characters' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF assign.properties IS NULL OR jsonb_typeof(assign.properties) <> 'object' THEN
		RAISE EXCEPTION 'properties must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF octet_length(assign.properties::text) > 4096 THEN
		RAISE EXCEPTION 'properties are larger than 4096 bytes'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'They travel in the match_assigned event; keep large data in your own tables.';
	END IF;
	m := mm.lock_match(assign.match_id, ARRAY['ready'], 'assign');
	UPDATE mm.matches SET status = 'assigned', connection = assign.connection,
		   properties = assign.properties, updated_at = pg_catalog.now()
	 WHERE id = m.id;
	PERFORM mm.notify_match_event('match_assigned', m.id,
		jsonb_build_object('connection', assign.connection, 'properties', assign.properties));
END
$$;
COMMENT ON FUNCTION mm.assign(bigint, text, jsonb) IS
'Hands a ready match its game server: status assigned, event match_assigned with the connection';

CREATE FUNCTION mm.get_assignment(ticket_id bigint)
RETURNS TABLE (ticket_id bigint, ticket_status text, match_id bigint, match_status text,
			   team text, connection text, properties jsonb)
LANGUAGE sql STABLE STRICT
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.id, t.status, m.id, m.status, t.team, m.connection, m.properties
	  FROM mm.tickets t
	  LEFT JOIN mm.matches m ON m.id = t.match_id
	 WHERE t.id = get_assignment.ticket_id
$$;
COMMENT ON FUNCTION mm.get_assignment(bigint) IS
'For a polling client: a ticket''s status, its match and the match''s status, team, connection and properties';

CREATE FUNCTION mm.requeue_match(match_id bigint, reason text,
								 now timestamptz DEFAULT pg_catalog.now())
RETURNS bigint[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	requeued bigint[];
BEGIN
	PERFORM mm.check_now(requeue_match.now);
	IF requeue_match.reason IS NULL OR requeue_match.reason = '' OR length(requeue_match.reason) > 256 THEN
		RAISE EXCEPTION 'reason must be 1 to 256 characters' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	m := mm.lock_match(requeue_match.match_id, ARRAY['proposed', 'ready', 'assigned'], 'requeue',
					   requeue_match.now);
	IF m.status = 'proposed' THEN
		-- nobody is cancelled: every ticket searches again
		PERFORM mm.cancel_proposed_match(m.id, requeue_match.reason, '{}', requeue_match.now);
		SELECT coalesce(array_agg(DISTINCT mp.ticket_id ORDER BY mp.ticket_id), '{}') INTO requeued
		  FROM mm.match_players mp WHERE mp.match_id = m.id;
		RETURN requeued;
	END IF;

	UPDATE mm.matches SET status = 'cancelled', cancel_reason = requeue_match.reason,
		   updated_at = requeue_match.now
	 WHERE id = m.id;
	UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = requeue_match.now
	 WHERE b.match_id = m.id AND b.status = 'open';
	-- the tickets of players still in the match go back to searching with
	-- their id and creation time (their priority); a ticket with a player
	-- who left stays ended
	WITH back AS (
		DELETE FROM mm.tickets_ended t
		 WHERE t.match_id = m.id AND t.status = 'matched'
		   AND NOT EXISTS (SELECT FROM mm.match_players mp
							WHERE mp.match_id = m.id AND mp.ticket_id = t.id
							  AND mp.left_at IS NOT NULL)
		RETURNING t.*
	), ins AS (
		INSERT INTO mm.tickets_active (id, queue, players, status, created_at, updated_at, queues)
		SELECT b.id, b.queue, b.players, 'searching', b.created_at, requeue_match.now, b.queues FROM back b
		RETURNING id, created_at, queues
	), listed AS (
		-- a ticket of several queues searches in all of them again
		INSERT INTO mm.ticket_queues (queue, ticket_id, created_at)
		SELECT u.queue, i.id, i.created_at FROM ins i, unnest(i.queues) u(queue)
		 WHERE EXISTS (SELECT FROM mm.queues q WHERE q.name = u.queue)
	)
	SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO requeued FROM ins;
	-- their players stay claimed, by the same tickets, now searching; the
	-- players of tickets that stay ended are released
	DELETE FROM mm.active_players a
	 USING mm.match_players mp
	 WHERE mp.match_id = m.id AND a.player_id = mp.player_id AND a.ticket_id = mp.ticket_id
	   AND NOT mp.ticket_id = ANY (requeued);
	PERFORM mm.notify_match_event('match_cancelled', m.id,
		jsonb_build_object('reason', requeue_match.reason, 'requeued_tickets', to_jsonb(requeued),
						   'cancelled_tickets', '[]'::jsonb));
	RETURN requeued;
END
$$;
COMMENT ON FUNCTION mm.requeue_match(bigint, text, timestamptz) IS
'Cancels a live match whose allocation failed; its tickets search again with their original age; returns their ids';

CREATE FUNCTION mm.complete_match(match_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
BEGIN
	PERFORM mm.check_now(complete_match.now);
	m := mm.lock_match(complete_match.match_id, ARRAY['ready', 'assigned'], 'complete', complete_match.now);
	UPDATE mm.matches SET status = 'completed', updated_at = complete_match.now WHERE id = m.id;
	UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = complete_match.now
	 WHERE b.match_id = m.id AND b.status = 'open';
	PERFORM mm.release_match_players(m.id);
	PERFORM mm.notify_match_event('match_completed', m.id, '{}');
END
$$;
COMMENT ON FUNCTION mm.complete_match(bigint, timestamptz) IS
'Ends a played match (ready or assigned): status completed, its players may search again';

CREATE FUNCTION mm.leave_match(match_id bigint, player_id text,
							   now timestamptz DEFAULT pg_catalog.now())
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	left_already timestamptz;
	player_ticket bigint;
	player_team text;
	request_id bigint;
	slots jsonb;
BEGIN
	PERFORM mm.check_now(leave_match.now);
	IF leave_match.player_id IS NULL THEN
		RAISE EXCEPTION 'player_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	m := mm.lock_match(leave_match.match_id, ARRAY['ready', 'assigned'], 'leave', leave_match.now);
	SELECT mp.left_at, mp.ticket_id, mp.team INTO left_already, player_ticket, player_team
	  FROM mm.match_players mp
	 WHERE mp.match_id = m.id AND mp.player_id = leave_match.player_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'player "%" is not in match %', leave_match.player_id, m.id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF left_already IS NOT NULL THEN
		RETURN;
	END IF;
	UPDATE mm.match_players mp SET left_at = leave_match.now
	 WHERE mp.match_id = m.id AND mp.player_id = leave_match.player_id;
	DELETE FROM mm.active_players a
	 WHERE a.player_id = leave_match.player_id AND a.ticket_id = player_ticket;
	PERFORM mm.notify_match_event('player_left', m.id,
		jsonb_build_object('player_id', leave_match.player_id));
	IF (SELECT coalesce(q.config -> 'auto_backfill' = 'true', false) FROM mm.queues q WHERE q.name = m.queue) THEN
		-- an open request gains the leaver's slot (its team's, or a
		-- free-for-all's "players"); without one, a request is opened
		UPDATE mm.backfill_requests b
		   SET open_slots = jsonb_set(b.open_slots, ARRAY[coalesce(player_team, 'players')],
									  to_jsonb(coalesce((b.open_slots ->> coalesce(player_team, 'players'))::integer, 0) + 1)),
			   updated_at = leave_match.now
		 WHERE b.match_id = m.id AND b.status = 'open'
		RETURNING b.id, b.open_slots INTO request_id, slots;
		IF request_id IS NOT NULL THEN
			PERFORM mm.notify_match_event('backfill_requested', m.id,
				jsonb_build_object('request_id', request_id, 'open_slots', slots));
		ELSE
			BEGIN
				PERFORM mm.request_backfill(m.id, NULL, leave_match.now);
			EXCEPTION WHEN invalid_parameter_value THEN
				-- "no open slot to fill": the queue's config shrank since the
				-- match formed and leaves no room; the player leaves all the same
				NULL;
			END;
		END IF;
	END IF;
END
$$;
COMMENT ON FUNCTION mm.leave_match(bigint, text, timestamptz) IS
'Records a player who left a running match (early quit) and releases them; requests backfill when the queue says auto_backfill';

-- Backfill: open slots of a running match, served by the tick before it
-- forms new matches (src/tick.c).  The request carries the match's current
-- players: those of mm.match_players who have not left.
CREATE FUNCTION mm.request_backfill(match_id bigint, open_slots jsonb DEFAULT NULL,
									now timestamptz DEFAULT pg_catalog.now())
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m mm.matches;
	config jsonb;
	slots jsonb := '{}';
	team jsonb;
	team_name text;
	team_max integer;
	present integer;
	match_max integer;
	match_present integer;
	wanted jsonb;
	total integer := 0;
	request_id bigint;
BEGIN
	PERFORM mm.check_now(request_backfill.now);
	m := mm.lock_match(request_backfill.match_id, ARRAY['ready', 'assigned'], 'backfill', request_backfill.now);
	IF EXISTS (SELECT FROM mm.backfill_requests b WHERE b.match_id = m.id AND b.status = 'open') THEN
		RAISE EXCEPTION 'match % already has an open backfill request', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Cancel it first with mm.cancel_backfill.';
	END IF;
	SELECT q.config INTO config FROM mm.queues q WHERE q.name = m.queue;
	IF request_backfill.open_slots IS NOT NULL AND jsonb_typeof(request_backfill.open_slots) <> 'object' THEN
		RAISE EXCEPTION 'open_slots must be a JSON object of slots per team'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	IF config ? 'teams' THEN
		-- the match never grows past match_size.max: the default fills the
		-- teams in order up to it, and more slots than it leaves are refused
		match_max := (mm.validate_queue_config(config) #>> '{match_size,max}')::integer;
		SELECT count(*) INTO match_present FROM mm.match_players mp
		 WHERE mp.match_id = m.id AND mp.left_at IS NULL;
		FOR team IN SELECT value FROM jsonb_array_elements(config -> 'teams') LOOP
			team_name := team ->> 'name';
			team_max := (team ->> 'max')::integer;
			SELECT count(*) INTO present FROM mm.match_players mp
			 WHERE mp.match_id = m.id AND mp.team = team_name AND mp.left_at IS NULL;
			wanted := coalesce(request_backfill.open_slots -> team_name,
							   CASE WHEN request_backfill.open_slots IS NULL
									THEN to_jsonb(greatest(least(team_max - present, match_max - match_present - total), 0))
									ELSE '0' END);
			IF jsonb_typeof(wanted) <> 'number' OR wanted::numeric <> trunc(wanted::numeric)
			   OR wanted::numeric < 0 OR wanted::numeric > greatest(team_max - present, 0) THEN
				RAISE EXCEPTION 'open_slots.% must be a whole number from 0 to %', team_name,
					greatest(team_max - present, 0)
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('Team %s has %s of at most %s players.', team_name, present, team_max);
			END IF;
			slots := slots || jsonb_build_object(team_name, wanted::integer);
			total := total + wanted::integer;
		END LOOP;
		IF total > match_max - match_present THEN
			RAISE EXCEPTION 'open_slots ask for % players, more than the % the match has room for', total,
				greatest(match_max - match_present, 0)
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The match has %s of at most %s players (match_size.max).', match_present, match_max);
		END IF;
		SELECT k INTO team_name FROM jsonb_object_keys(coalesce(request_backfill.open_slots, '{}')) k
		 WHERE NOT slots ? k LIMIT 1;
		IF team_name IS NOT NULL THEN
			RAISE EXCEPTION 'open_slots.% is not a team of queue "%"', team_name, m.queue
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
	ELSE
		-- a free-for-all: {"players": n}
		team_max := coalesce((config #>> '{match_size,max}')::integer, (config ->> 'match_size')::integer);
		SELECT count(*) INTO present FROM mm.match_players mp
		 WHERE mp.match_id = m.id AND mp.left_at IS NULL;
		wanted := coalesce(request_backfill.open_slots -> 'players', to_jsonb(greatest(team_max - present, 0)));
		IF jsonb_typeof(wanted) <> 'number' OR wanted::numeric <> trunc(wanted::numeric)
		   OR wanted::numeric < 0 OR wanted::numeric > greatest(team_max - present, 0) THEN
			RAISE EXCEPTION 'open_slots.players must be a whole number from 0 to %', greatest(team_max - present, 0)
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		SELECT k INTO team_name FROM jsonb_object_keys(coalesce(request_backfill.open_slots, '{}')) k
		 WHERE k <> 'players' LIMIT 1;
		IF team_name IS NOT NULL THEN
			RAISE EXCEPTION 'open_slots.% is not allowed in a free-for-all (use "players")', team_name
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		slots := jsonb_build_object('players', wanted::integer);
		total := wanted::integer;
	END IF;
	IF total = 0 THEN
		RAISE EXCEPTION 'match % has no open slot to fill', m.id
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	INSERT INTO mm.backfill_requests (match_id, queue, open_slots, created_at)
	VALUES (m.id, m.queue, slots, request_backfill.now)
	RETURNING id INTO request_id;
	PERFORM mm.notify_match_event('backfill_requested', m.id,
		jsonb_build_object('request_id', request_id, 'open_slots', slots));
	RETURN request_id;
END
$$;
COMMENT ON FUNCTION mm.request_backfill(bigint, jsonb, timestamptz) IS
'Asks the tick to fill open slots of a running match (default: each team up to its max); returns the request id';

CREATE FUNCTION mm.cancel_backfill(match_id bigint, now timestamptz DEFAULT pg_catalog.now())
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	request_id bigint;
BEGIN
	PERFORM mm.check_now(cancel_backfill.now);
	PERFORM mm.lock_match(cancel_backfill.match_id,
						  ARRAY['proposed', 'ready', 'assigned', 'completed', 'cancelled'], 'backfill');
	UPDATE mm.backfill_requests b SET status = 'cancelled', updated_at = cancel_backfill.now
	 WHERE b.match_id = cancel_backfill.match_id AND b.status = 'open'
	RETURNING b.id INTO request_id;
	IF request_id IS NULL THEN
		RETURN false;
	END IF;
	PERFORM mm.notify_match_event('backfill_cancelled', cancel_backfill.match_id,
		jsonb_build_object('request_id', request_id));
	RETURN true;
END
$$;
COMMENT ON FUNCTION mm.cancel_backfill(bigint, timestamptz) IS
'Cancels a match''s open backfill request (true), or returns false when it had none';

GRANT EXECUTE ON FUNCTION mm.accept_match(bigint, text, boolean, timestamptz),
	mm.get_assignment(bigint)
	TO mm_frontend, mm_director;
GRANT EXECUTE ON FUNCTION mm.assign(bigint, text, jsonb),
	mm.requeue_match(bigint, text, timestamptz),
	mm.complete_match(bigint, timestamptz),
	mm.leave_match(bigint, text, timestamptz),
	mm.request_backfill(bigint, jsonb, timestamptz),
	mm.cancel_backfill(bigint, timestamptz)
	TO mm_director;

-- ===================================================================
-- Section: one ticket in several queues (docs/queues-and-tickets.md)
-- ===================================================================
--
-- A ticket searches in its queue and in the other queues of its `queues`
-- array, each with that queue's config.  It keeps one row in
-- mm.tickets_active, which the tick of whichever queue takes it first locks
-- (FOR UPDATE SKIP LOCKED) and moves, so two queues never both match it.
-- mm.ticket_queues lists the tickets each other queue's tick also reads.

ALTER TABLE mm.tickets ADD COLUMN queues text[];
COMMENT ON COLUMN mm.tickets.queues IS
	'The other queues the ticket also searches in (NULL: only its queue); once matched, its queue is the one that matched it';

CREATE TABLE mm.ticket_queues (
	queue text NOT NULL,
	ticket_id bigint NOT NULL,
	-- the ticket's creation time: a queue's tick reads its extra tickets
	-- oldest first, like its own
	created_at timestamptz NOT NULL,
	PRIMARY KEY (queue, created_at, ticket_id)
);
CREATE INDEX ticket_queues_ticket ON mm.ticket_queues (ticket_id);
COMMENT ON TABLE mm.ticket_queues IS
	'The active tickets that also search in a queue other than their own, one row per (queue, ticket)';
SELECT pg_catalog.pg_extension_config_dump('mm.ticket_queues', '');

-- Once per INSERT/COPY statement, after tickets_after_insert (triggers fire
-- in name order): checks the tickets' other queues, validates the players
-- against each of those queues' configs and lists the tickets there.
CREATE FUNCTION mm.tickets_after_insert_queues() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
DECLARE
	bad record;
BEGIN
	IF NOT EXISTS (SELECT FROM new_tickets n WHERE n.queues IS NOT NULL) THEN
		RETURN NULL;
	END IF;
	SELECT n.id, u.queue, u.ord, cardinality(n.queues) AS n_queues,
		   CASE WHEN cardinality(n.queues) = 0 THEN 'must not be empty (leave queues NULL)'
				WHEN cardinality(n.queues) > 16 THEN 'has more than 16 queues'
				WHEN array_ndims(n.queues) > 1 THEN 'must be a one-dimensional array'
				WHEN u.queue IS NULL THEN 'must not be null'
				WHEN u.queue = n.queue THEN 'repeats the ticket''s queue'
				WHEN u.ord > (SELECT min(v.ord) FROM unnest(n.queues) WITH ORDINALITY v(queue, ord)
							   WHERE v.queue = u.queue) THEN 'is listed twice'
				WHEN NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = u.queue) THEN 'does not exist'
		   END AS problem
	  INTO bad
	  FROM new_tickets n
	  LEFT JOIN LATERAL unnest(n.queues) WITH ORDINALITY AS u(queue, ord) ON true
	 WHERE n.queues IS NOT NULL
	   AND (cardinality(n.queues) = 0 OR cardinality(n.queues) > 16 OR array_ndims(n.queues) > 1
			OR u.queue IS NULL OR u.queue = n.queue
			OR u.ord > (SELECT min(v.ord) FROM unnest(n.queues) WITH ORDINALITY v(queue, ord)
						 WHERE v.queue = u.queue)
			OR NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = u.queue))
	 ORDER BY n.id, u.ord
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'invalid ticket at queues%: %',
			  CASE WHEN bad.ord IS NULL OR bad.problem LIKE 'has more%' OR bad.problem LIKE 'must be a one%'
						OR bad.n_queues = 0
				   THEN '' ELSE '[' || bad.ord || ']' END,
			  CASE WHEN bad.problem = 'does not exist' THEN format('queue "%s" does not exist', bad.queue)
				   WHEN bad.queue IS NULL OR bad.problem LIKE 'has more%' OR bad.problem LIKE 'must be a one%'
					 OR bad.n_queues = 0 THEN bad.problem
				   ELSE format('"%s" %s', bad.queue, bad.problem) END
			USING ERRCODE = CASE WHEN bad.problem = 'does not exist' THEN 'undefined_object'
								 ELSE 'invalid_parameter_value' END,
				  DETAIL = format('Ticket %s.', bad.id);
	END IF;
	-- the same lock as on the ticket's own queue: a drop waits for this insert
	PERFORM FROM mm.queues q
	 WHERE q.name IN (SELECT u.queue FROM new_tickets n, unnest(n.queues) u(queue))
	   FOR KEY SHARE OF q;
	-- each queue's config validates the players (party sizes, attributes)
	PERFORM mm.validate_ticket(u.queue, n.players, n.created_at)
	   FROM new_tickets n, unnest(n.queues) WITH ORDINALITY u(queue, ord)
	  ORDER BY n.id, u.ord;
	INSERT INTO mm.ticket_queues (queue, ticket_id, created_at)
	SELECT u.queue, n.id, n.created_at FROM new_tickets n, unnest(n.queues) u(queue);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_insert_queues() IS
	'Trigger: checks the other queues of inserted tickets, validates the players there and lists the tickets in mm.ticket_queues';
REVOKE ALL ON FUNCTION mm.tickets_after_insert_queues() FROM PUBLIC;

CREATE TRIGGER tickets_after_insert_queues AFTER INSERT ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_insert_queues();

-- 0.3: an ended ticket leaves the other queues too.
CREATE OR REPLACE FUNCTION mm.end_tickets(ticket_ids bigint[], new_status text, ended_at timestamptz)
	RETURNS SETOF bigint
	LANGUAGE sql
	SET search_path = pg_catalog, pg_temp
	AS $$
	WITH moved AS (
		DELETE FROM mm.tickets_active t WHERE t.id = ANY (end_tickets.ticket_ids)
		RETURNING t.id, t.queue, t.players, t.created_at, t.queues
	), released AS (
		DELETE FROM mm.active_players a
		 USING moved m, jsonb_array_elements(m.players) p
		 WHERE a.player_id = p.value ->> 'id' AND a.ticket_id = m.id
	), unlisted AS (
		DELETE FROM mm.ticket_queues q USING moved m
		 WHERE q.ticket_id = m.id AND m.queues IS NOT NULL
	)
	INSERT INTO mm.tickets_ended (id, queue, players, status, created_at, updated_at, queues)
	SELECT m.id, m.queue, m.players, end_tickets.new_status, m.created_at, end_tickets.ended_at, m.queues
	  FROM moved m
	RETURNING id
$$;

-- The archive keeps a ticket's other queues too: the column comes after
-- archived_at, so the archiving insert names its columns.
ALTER TABLE mm.tickets_archive ADD COLUMN queues text[];
CREATE OR REPLACE FUNCTION mm.purge_finished(older_than interval, batch_size integer DEFAULT 10000,
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
		INSERT INTO mm.tickets_archive (id, queue, players, status, created_at, updated_at, matched_at,
										match_id, team, archived_at, queues)
		SELECT t.id, t.queue, t.players, t.status, t.created_at, t.updated_at, t.matched_at,
			   t.match_id, t.team, now, t.queues
		  FROM mm.tickets_ended t WHERE t.id = ANY (ticket_ids);
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

-- A deleted queue leaves the tickets that also searched in it.
CREATE FUNCTION mm.queues_after_delete_unlist() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.ticket_queues q USING old_queues o WHERE q.queue = o.name;
	-- the deleted queues' own tickets are gone (queues_after_delete ran first)
	DELETE FROM mm.ticket_queues q
	 WHERE NOT EXISTS (SELECT FROM mm.tickets_active t WHERE t.id = q.ticket_id);
	UPDATE mm.tickets_active t
	   SET queues = nullif(ARRAY(SELECT u.queue FROM unnest(t.queues) WITH ORDINALITY u(queue, ord)
								  WHERE u.queue NOT IN (SELECT o.name FROM old_queues o)
								  ORDER BY u.ord), '{}')
	 WHERE t.queues && ARRAY(SELECT o.name FROM old_queues o);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete_unlist() IS
	'Trigger: removes deleted queues from the other queues of active tickets';
REVOKE ALL ON FUNCTION mm.queues_after_delete_unlist() FROM PUBLIC;
CREATE TRIGGER queues_after_delete_unlist AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_unlist();

-- 0.3: deleting or truncating tickets unlists them from the other queues.
CREATE OR REPLACE FUNCTION mm.tickets_after_delete() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	SET jit = off
	AS $$
BEGIN
	DELETE FROM mm.active_players ap USING old_tickets o, jsonb_array_elements(o.players) p
	 WHERE ap.player_id = p.value ->> 'id' AND ap.ticket_id = o.id;
	DELETE FROM mm.ticket_queues q USING old_tickets o
	 WHERE q.ticket_id = o.id AND o.queues IS NOT NULL;
	RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION mm.tickets_after_truncate() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.active_players;
	DELETE FROM mm.ticket_queues;
	RETURN NULL;
END
$$;

CREATE FUNCTION mm.create_ticket(queues text[], players jsonb,
								 now timestamptz DEFAULT pg_catalog.now()) RETURNS bigint
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	ticket_id bigint;
BEGIN
	IF create_ticket.now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF create_ticket.queues IS NULL OR cardinality(create_ticket.queues) = 0 THEN
		RAISE EXCEPTION 'queues must name at least one queue' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the first queue is the ticket's own; the triggers check the others
	INSERT INTO mm.tickets (queue, queues, players, created_at)
	VALUES (create_ticket.queues[array_lower(create_ticket.queues, 1)],
			nullif(create_ticket.queues[array_lower(create_ticket.queues, 1) + 1:], '{}'),
			create_ticket.players, create_ticket.now)
	RETURNING id INTO ticket_id;
	RETURN ticket_id;
END
$$;
COMMENT ON FUNCTION mm.create_ticket(text[], jsonb, timestamptz) IS
	'Puts a ticket into several queues at once: the first queue that matches it wins; returns its id';
GRANT EXECUTE ON FUNCTION mm.create_ticket(text[], jsonb, timestamptz) TO mm_frontend;

-- ===================================================================
-- Section: trusted player attributes (src/player_sources.c)
-- ===================================================================
--
-- Rules with "source": "player" read mm.players.attributes, which only the
-- game's servers write (mm_director), so a client cannot choose them.

CREATE FUNCTION mm.set_player_attributes(player_id text, attributes jsonb)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	bad_path text;
BEGIN
	IF set_player_attributes.player_id IS NULL OR set_player_attributes.player_id = ''
	   OR length(set_player_attributes.player_id) > 128 THEN
		RAISE EXCEPTION 'player_id must be 1 to 128 characters' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF set_player_attributes.attributes IS NULL OR jsonb_typeof(set_player_attributes.attributes) <> 'object' THEN
		RAISE EXCEPTION 'attributes must be a JSON object' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF octet_length(set_player_attributes.attributes::text) > 65536 THEN
		RAISE EXCEPTION 'attributes are larger than 64 kB' USING ERRCODE = 'program_limit_exceeded';
	END IF;
	-- the bound of every number of a ticket's attributes (rule arithmetic is
	-- safe within it); beyond it a rule would read the value as missing
	SELECT w.path INTO bad_path
	  FROM (WITH RECURSIVE walk(path, value) AS (
			  SELECT 'attributes', set_player_attributes.attributes
			  UNION ALL
			  SELECT w.path || c.path, c.value
				FROM walk w
				CROSS JOIN LATERAL (
					SELECT '.' || e.key AS path, e.value FROM jsonb_each(w.value) e
					 WHERE jsonb_typeof(w.value) = 'object'
					UNION ALL
					SELECT '[' || (e.n - 1) || ']', e.value
					  FROM jsonb_array_elements(w.value) WITH ORDINALITY e(value, n)
					 WHERE jsonb_typeof(w.value) = 'array') c)
			SELECT * FROM walk) w
	 WHERE jsonb_typeof(w.value) = 'number' AND abs(w.value::text::numeric) > 1e12
	 ORDER BY w.path LIMIT 1;
	IF bad_path IS NOT NULL THEN
		RAISE EXCEPTION 'invalid player attributes at %: must be a number between -1e12 and 1e12', bad_path
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	INSERT INTO mm.players AS p (id, attributes)
	VALUES (set_player_attributes.player_id, set_player_attributes.attributes)
	ON CONFLICT (id) DO UPDATE SET attributes = EXCLUDED.attributes;
END
$$;
COMMENT ON FUNCTION mm.set_player_attributes(text, jsonb) IS
'Sets a player''s server-side attributes, read by rules with "source": "player" (replaces the previous ones)';
GRANT EXECUTE ON FUNCTION mm.set_player_attributes(text, jsonb) TO mm_director;

-- ===================================================================
-- Section: results and stored ratings (docs/ratings.md)
-- ===================================================================
--
-- mm.report_result ends a played match with its ranks, writes mm.match_results
-- and, in the same transaction, updates the stored rating of every player in
-- the queue's rating pool (Glicko-2, Elo or OpenSkill), one mm.rating_history
-- row each.  mm.decay_ratings grows the uncertainty of idle players;
-- mm.leaderboard ranks a pool by a conservative rating.

-- Glicko-2 volatility changes with every game: keep it in the history too.
ALTER TABLE mm.rating_history
	ADD COLUMN volatility_before float8,
	ADD COLUMN volatility_after float8;
-- A match changes a player's rating once: the guarantee under concurrency,
-- beside the lock report_result takes on the match.
CREATE UNIQUE INDEX rating_history_match_player ON mm.rating_history (match_id, player_id)
	WHERE match_id IS NOT NULL;
COMMENT ON TABLE mm.rating_history IS
'Every change of a stored rating: one row per player per rated match (match_id), and one per decay step (match_id NULL)';

-- How a rank key is named in an error: ranks.red, or ranks["a.b"] for a key
-- that is not a plain word (the queue config's paths do the same).
CREATE FUNCTION mm.ranks_path(key text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN key ~ '^[A-Za-z0-9_-]+$' THEN 'ranks.' || key
				ELSE 'ranks[' || to_json(key)::text || ']' END
$$;
COMMENT ON FUNCTION mm.ranks_path(text) IS
'Internal: the path of a rank key in error messages (ranks.red, ranks["a b"])';
REVOKE ALL ON FUNCTION mm.ranks_path(text) FROM PUBLIC;

-- A numeric player attribute in [low, high], or NULL when it is absent, not a
-- number or out of range (attributes are free-form JSON).
CREATE FUNCTION mm.attribute_number(attributes jsonb, key text, low float8, high float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	-- rounded first: a number too small for a float8 (1e-400) reads as 0
	SELECT CASE WHEN jsonb_typeof(attributes -> key) = 'number'
				THEN CASE WHEN (attributes ->> key)::numeric BETWEEN low::numeric AND high::numeric
						  THEN round((attributes ->> key)::numeric, 15)::float8 END END
$$;
COMMENT ON FUNCTION mm.attribute_number(jsonb, text, float8, float8) IS
'Internal: a numeric attribute within [low, high], else NULL';
REVOKE ALL ON FUNCTION mm.attribute_number(jsonb, text, float8, float8) FROM PUBLIC;

-- A boolean in the queue config's "rating" object, false when absent.
CREATE FUNCTION mm.rating_option(config jsonb, key text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(CASE WHEN jsonb_typeof(config -> 'rating' -> key) = 'boolean'
						 THEN (config -> 'rating' ->> key)::boolean END, false)
$$;
COMMENT ON FUNCTION mm.rating_option(jsonb, text) IS
'Internal: a boolean option of a queue config''s rating object (boost, leavers_lose), false when absent';
REVOKE ALL ON FUNCTION mm.rating_option(jsonb, text) FROM PUBLIC;

-- Reports the outcome of a ready or assigned match.  See docs/ratings.md for
-- the methods; in short, per side (a team, or a player in a free-for-all):
--   glicko2    each player is one Glicko-2 period against every opposing
--              side's composite player (mean rating, mean RD): Williams's
--              "composite opponent" method
--   elo        team Elo: the side's mean rating against each opposing side's,
--              K = mm.elo_k_factor of the player, averaged over the opponents
--   openskill  mm.openskill_rate over the whole match
-- Concurrency: the match row is locked first, so a second report waits and
-- then finds the match completed; rating rows are locked in player order.
CREATE FUNCTION mm.report_result(match_id bigint, ranks jsonb,
								 now timestamptz DEFAULT pg_catalog.now())
RETURNS TABLE (player_id text, team text, rank integer, rating_before float8, rating_after float8)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	m mm.matches;
	config jsonb;
	rating_system text;
	pool_name text;
	leavers_lose boolean;
	boost_on boolean;
	free_for_all boolean;
	some_without_team boolean;
	-- per player, in player_id order
	ids text[];
	teams text[];
	sides text[];
	player_ranks integer[];
	dense_ranks integer[];
	side_numbers integer[];
	scored_loss boolean[];
	old_rating float8[];
	old_rd float8[];
	old_volatility float8[];
	old_mu float8[];
	old_sigma float8[];
	cur_rating float8[];
	cur_rd float8[];
	cur_volatility float8[];
	cur_mu float8[];
	cur_sigma float8[];
	new_rating float8[];
	new_rd float8[];
	new_volatility float8[];
	new_mu float8[];
	new_sigma float8[];
	games integer[];
	boosts float8[];
	win_counts integer[];
	-- per side, in side order
	side_list text[];
	side_ranks integer[];
	side_rating float8[];
	side_rd float8[];
	side_count integer;
	best_rank integer;
	winner text;
	favourite text;
	favourite_probability float8;
	probabilities float8[];
	rank_key text;
	rank_value jsonb;
	missing text;
	leaver_side text;
	leaver_ranks integer[];
	leaver_mu float8[];
	leaver_sigma float8[];
	event_details jsonb;
BEGIN
	IF report_result.match_id IS NULL THEN
		RAISE EXCEPTION 'match_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF report_result.ranks IS NULL THEN
		RAISE EXCEPTION 'ranks must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(report_result.now);

	-- The match first: a concurrent report waits here, then sees it completed.
	SELECT * INTO m FROM mm.matches mt WHERE mt.id = report_result.match_id FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'match % does not exist', report_result.match_id
			USING ERRCODE = 'undefined_object';
	END IF;
	IF EXISTS (SELECT FROM mm.match_results r WHERE r.match_id = m.id) THEN
		RAISE EXCEPTION 'match % already has a result', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'A match gets one result; the first report stands.';
	END IF;
	IF m.status NOT IN ('ready', 'assigned') THEN
		RAISE EXCEPTION 'cannot report a result for match %: it is %', m.id, m.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Only a ready or assigned match can get a result.';
	END IF;
	IF report_result.now < m.created_at THEN
		RAISE EXCEPTION 'now (%) is before match % was created (%)', report_result.now, m.id, m.created_at
			USING ERRCODE = 'invalid_parameter_value';
	END IF;

	-- The players and their sides: teams, or the players themselves in a
	-- free-for-all (a match whose players have no team).
	SELECT array_agg(mp.player_id ORDER BY mp.player_id),
		   array_agg(mp.team ORDER BY mp.player_id),
		   array_agg(coalesce(mp.team, mp.player_id) ORDER BY mp.player_id),
		   array_agg(mp.left_at IS NOT NULL ORDER BY mp.player_id),
		   bool_and(mp.team IS NULL), bool_or(mp.team IS NULL)
	  INTO ids, teams, sides, scored_loss, free_for_all, some_without_team
	  FROM mm.match_players mp WHERE mp.match_id = m.id;
	IF ids IS NULL THEN
		RAISE EXCEPTION 'match % has no players', m.id USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	IF NOT free_for_all AND some_without_team THEN
		RAISE EXCEPTION 'match % has players with and without a team', m.id
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	side_list := ARRAY(SELECT DISTINCT s FROM unnest(sides) s ORDER BY s);
	side_count := cardinality(side_list);

	-- ranks: one positive integer per side, nothing else.
	IF jsonb_typeof(report_result.ranks) <> 'object' THEN
		RAISE EXCEPTION 'ranks must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = CASE WHEN free_for_all
								THEN 'Give each player of the free-for-all a rank, e.g. {"p1": 1, "p2": 2}.'
								ELSE 'Give each team a rank, e.g. {"red": 1, "blue": 2}.' END;
	END IF;
	FOR rank_key, rank_value IN SELECT e.key, e.value FROM jsonb_each(report_result.ranks) e ORDER BY e.key
	LOOP
		IF NOT rank_key = ANY (side_list) THEN
			RAISE EXCEPTION '% is not a % of match %', mm.ranks_path(rank_key),
				CASE WHEN free_for_all THEN 'player' ELSE 'team' END, m.id
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The %s of match %s: %s.',
									  CASE WHEN free_for_all THEN 'players' ELSE 'teams' END, m.id,
									  array_to_string(side_list, ', '));
		END IF;
		IF NOT (CASE WHEN jsonb_typeof(rank_value) = 'number'
					 THEN rank_value::text::numeric = trunc(rank_value::text::numeric)
						  AND rank_value::text::numeric BETWEEN 1 AND 2147483647
					 ELSE false END) THEN
			RAISE EXCEPTION '% must be a positive integer', mm.ranks_path(rank_key)
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Got %s.', left(rank_value::text, 100)),
					  HINT = 'Rank 1 is the best; equal ranks are a tie.';
		END IF;
	END LOOP;
	SELECT min(s) INTO missing FROM unnest(side_list) s WHERE NOT report_result.ranks ? s;
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION '% is missing', mm.ranks_path(missing)
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('Every %s of match %s needs a rank: %s.',
								  CASE WHEN free_for_all THEN 'player' ELSE 'team' END, m.id,
								  array_to_string(side_list, ', '));
	END IF;

	side_ranks := ARRAY(SELECT (report_result.ranks ->> s)::numeric::integer FROM unnest(side_list) WITH ORDINALITY u(s, i)
						 ORDER BY u.i);
	player_ranks := ARRAY(SELECT (report_result.ranks ->> s)::numeric::integer FROM unnest(sides) WITH ORDINALITY u(s, i)
						   ORDER BY u.i);
	side_numbers := ARRAY(SELECT array_position(side_list, s) FROM unnest(sides) WITH ORDINALITY u(s, i)
						   ORDER BY u.i);
	-- the winner: the side with the best rank, when no other side shares it
	best_rank := (SELECT min(r) FROM unnest(side_ranks) r);
	IF (SELECT count(*) FROM unnest(side_ranks) r WHERE r = best_rank) = 1 THEN
		winner := side_list[array_position(side_ranks, best_rank)];
	END IF;

	-- The queue's rating system and pool (the pool defaults to the queue's name).
	SELECT q.config INTO config FROM mm.queues q WHERE q.name = m.queue;
	rating_system := config #>> '{rating,system}';
	pool_name := coalesce(config #>> '{rating,pool}', m.queue);
	leavers_lose := mm.rating_option(config, 'leavers_lose');
	boost_on := mm.rating_option(config, 'boost');
	IF rating_system NOT IN ('glicko2', 'elo', 'openskill') OR side_count < 2 THEN
		rating_system := NULL;
	END IF;
	IF NOT leavers_lose THEN
		scored_loss := array_fill(false, ARRAY[cardinality(ids)]);
	END IF;

	IF rating_system IS NOT NULL THEN
		-- unrated players start at the system's defaults
		INSERT INTO mm.ratings AS r (player_id, pool, rating, rd, volatility, mu, sigma, games, wins, updated_at)
		SELECT u.id, pool_name,
			   CASE WHEN rating_system IN ('glicko2', 'elo') THEN 1500 END,
			   CASE WHEN rating_system = 'glicko2' THEN 350 END,
			   CASE WHEN rating_system = 'glicko2' THEN 0.06 END,
			   CASE WHEN rating_system = 'openskill' THEN 25 END,
			   CASE WHEN rating_system = 'openskill' THEN 25 / 3.0 END,
			   0, 0, report_result.now
		  FROM unnest(ids) u(id)
		 ORDER BY u.id
		ON CONFLICT ON CONSTRAINT ratings_pkey DO NOTHING;
		-- lock the rows in player order (as mm.decay_ratings does)
		SELECT array_agg(r.rating ORDER BY r.player_id), array_agg(r.rd ORDER BY r.player_id),
			   array_agg(r.volatility ORDER BY r.player_id), array_agg(r.mu ORDER BY r.player_id),
			   array_agg(r.sigma ORDER BY r.player_id), array_agg(r.games ORDER BY r.player_id)
		  INTO old_rating, old_rd, old_volatility, old_mu, old_sigma, games
		  FROM (SELECT rt.* FROM mm.ratings rt
				 WHERE rt.pool = pool_name AND rt.player_id = ANY (ids)
				 ORDER BY rt.player_id FOR UPDATE) r;
		-- a row another system wrote in the same pool lacks fields: defaults
		cur_rating := ARRAY(SELECT coalesce(x, 1500) FROM unnest(old_rating) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_rd := ARRAY(SELECT coalesce(x, 350) FROM unnest(old_rd) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_volatility := ARRAY(SELECT coalesce(x, 0.06) FROM unnest(old_volatility) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_mu := ARRAY(SELECT coalesce(x, 25) FROM unnest(old_mu) WITH ORDINALITY u(x, i) ORDER BY u.i);
		cur_sigma := ARRAY(SELECT coalesce(x, 25 / 3.0) FROM unnest(old_sigma) WITH ORDINALITY u(x, i) ORDER BY u.i);
		new_rating := old_rating;
		new_rd := old_rd;
		new_volatility := old_volatility;
		new_mu := old_mu;
		new_sigma := old_sigma;

		-- The rating boost (placement, smurf suspicion) multiplies each
		-- player's change.  Suspicion: mm.smurf_score from the pool's games and
		-- wins, the last 10 ratings, and avg_kda, mvp_rate, headshot_rate in
		-- mm.players.attributes (no suspicion without avg_kda and mvp_rate).
		IF boost_on THEN
			boosts := ARRAY(
				SELECT mm.rating_boost(coalesce(mm.smurf_score(
						   u.g, CASE WHEN u.g > 0 THEN least(rt.wins::float8 / u.g, 1) ELSE 0 END,
						   mm.attribute_number(pl.attributes, 'avg_kda', 0, 1e6),
						   mm.attribute_number(pl.attributes, 'mvp_rate', 0, 1),
						   h.recent,
						   mm.attribute_number(pl.attributes, 'headshot_rate', 0, 1)), 0), u.g)
				  FROM unnest(ids, games) WITH ORDINALITY u(id, g, i)
				  JOIN mm.ratings rt ON rt.pool = pool_name AND rt.player_id = u.id
				  LEFT JOIN mm.players pl ON pl.id = u.id
				 CROSS JOIN LATERAL (
					SELECT coalesce(array_agg(x.v ORDER BY x.created_at, x.id), '{}') AS recent
					  FROM (SELECT coalesce(rh.rating_after, rh.mu_after) AS v, rh.created_at, rh.id
							  FROM mm.rating_history rh
							 WHERE rh.player_id = u.id AND rh.pool = pool_name AND rh.match_id IS NOT NULL
							 ORDER BY rh.created_at DESC, rh.id DESC LIMIT 10) x
					 WHERE x.v IS NOT NULL) h
				 ORDER BY u.i);
		ELSE
			boosts := array_fill(1.0::float8, ARRAY[cardinality(ids)]);
		END IF;

		-- Each side's strength before the game: the mean rating (Glicko-2 and
		-- Elo), and for Glicko-2 the mean RD.
		SELECT array_agg(s.rating ORDER BY s.side), array_agg(s.rd ORDER BY s.side)
		  INTO side_rating, side_rd
		  FROM (SELECT x.side, mm.team_rating(x.rating, 1) AS rating, avg(x.rd) AS rd
				  FROM unnest(sides, cur_rating, cur_rd) x(side, rating, rd)
				 GROUP BY x.side) s;

		-- The prediction, from the ratings before the update.
		IF rating_system = 'openskill' THEN
			probabilities := mm.openskill_predict_win(cur_mu, cur_sigma, side_numbers);
		ELSE
			-- each side's mean of mm.win_probability against every other side
			-- over the n(n-1)/2 pairs (the two-side case is win_probability)
			probabilities := ARRAY(
				SELECT sum(mm.win_probability(a.r, b.r)) / (side_count * (side_count - 1) / 2.0)
				  FROM (SELECT x.side, array_agg(x.rating) AS r FROM unnest(sides, cur_rating) x(side, rating)
						 GROUP BY x.side) a
				  JOIN (SELECT x.side, array_agg(x.rating) AS r FROM unnest(sides, cur_rating) x(side, rating)
						 GROUP BY x.side) b ON a.side <> b.side
				 GROUP BY a.side ORDER BY a.side);
		END IF;
		SELECT p.side, least(greatest(p.probability, 0), 1) INTO favourite, favourite_probability
		  FROM unnest(side_list, probabilities) p(side, probability)
		 ORDER BY p.probability DESC, p.side LIMIT 1;

		IF rating_system = 'glicko2' THEN
			-- One rating period per game: a player against the composite
			-- player of every opposing side (1 for a better rank, 0.5 for a
			-- tie, 0 for a worse one; a leaver scored as a loss gets 0 against
			-- every side).
			SELECT array_agg(p.rating + p.boost * ((g.u).rating - p.rating) ORDER BY p.i),
				   array_agg((g.u).rd ORDER BY p.i), array_agg((g.u).volatility ORDER BY p.i)
			  INTO new_rating, new_rd, new_volatility
			  FROM unnest(sides, player_ranks, scored_loss, cur_rating, cur_rd, cur_volatility, boosts)
				   WITH ORDINALITY p(side, rank, loss, rating, rd, volatility, boost, i)
			 CROSS JOIN LATERAL (
				SELECT mm.glicko2_update(p.rating, p.rd, p.volatility,
										 array_agg(o.rating ORDER BY o.side), array_agg(o.rd ORDER BY o.side),
										 array_agg(CASE WHEN p.loss THEN 0 WHEN p.rank < o.rank THEN 1
														WHEN p.rank = o.rank THEN 0.5 ELSE 0 END::float8
												   ORDER BY o.side)) AS u
				  FROM unnest(side_list, side_ranks, side_rating, side_rd) o(side, rank, rating, rd)
				 WHERE o.side <> p.side) g;
		ELSIF rating_system = 'elo' THEN
			-- Team Elo: the side's mean against each opposing side's mean,
			-- K of the player (mm.elo_k_factor), averaged over the opponents.
			SELECT array_agg(p.rating + p.boost * mm.elo_k_factor(p.games, p.rating) * d.change ORDER BY p.i)
			  INTO new_rating
			  FROM unnest(sides, player_ranks, scored_loss, cur_rating, games, boosts)
				   WITH ORDINALITY p(side, rank, loss, rating, games, boost, i)
			 CROSS JOIN LATERAL (
				SELECT avg(CASE WHEN p.loss THEN 0 WHEN p.rank < o.rank THEN 1
								WHEN p.rank = o.rank THEN 0.5 ELSE 0 END
						   - mm.elo_expected(side_rating[array_position(side_list, p.side)], o.rating)) AS change
				  FROM unnest(side_list, side_ranks, side_rating) o(side, rank, rating)
				 WHERE o.side <> p.side) d;
		ELSE
			-- OpenSkill over the whole match; only the order of the ranks counts.
			dense_ranks := ARRAY(SELECT (SELECT count(DISTINCT r2) FROM unnest(side_ranks) r2 WHERE r2 <= u.r)::integer
								   FROM unnest(player_ranks) WITH ORDINALITY u(r, i) ORDER BY u.i);
			SELECT array_agg(r.mu ORDER BY r.i), array_agg(r.sigma ORDER BY r.i) INTO new_mu, new_sigma
			  FROM mm.openskill_rate(cur_mu, cur_sigma, side_numbers, dense_ranks) WITH ORDINALITY r(mu, sigma, i);
			-- A leaver scored as a loss: its side ranked below every other in a
			-- second run, of which only the leavers of that side keep the result.
			FOR leaver_side IN SELECT DISTINCT x.side FROM unnest(sides, scored_loss) x(side, loss)
								WHERE x.loss ORDER BY x.side
			LOOP
				leaver_ranks := ARRAY(SELECT CASE WHEN x.side = leaver_side THEN side_count + 1 ELSE x.r END
										FROM unnest(sides, dense_ranks) WITH ORDINALITY x(side, r, i) ORDER BY x.i);
				SELECT array_agg(r.mu ORDER BY r.i), array_agg(r.sigma ORDER BY r.i) INTO leaver_mu, leaver_sigma
				  FROM mm.openskill_rate(cur_mu, cur_sigma, side_numbers, leaver_ranks)
					   WITH ORDINALITY r(mu, sigma, i);
				SELECT array_agg(CASE WHEN x.side = leaver_side AND x.loss THEN x.lmu ELSE x.mu END ORDER BY x.i),
					   array_agg(CASE WHEN x.side = leaver_side AND x.loss THEN x.lsigma ELSE x.sigma END ORDER BY x.i)
				  INTO new_mu, new_sigma
				  FROM unnest(sides, scored_loss, new_mu, new_sigma, leaver_mu, leaver_sigma)
					   WITH ORDINALITY x(side, loss, mu, sigma, lmu, lsigma, i);
			END LOOP;
			new_mu := ARRAY(SELECT x.mu + x.boost * (x.new_mu - x.mu)
							  FROM unnest(cur_mu, new_mu, boosts) WITH ORDINALITY x(mu, new_mu, boost, i)
							 ORDER BY x.i);
		END IF;

		win_counts := ARRAY(SELECT (x.side IS NOT DISTINCT FROM winner AND NOT x.loss)::integer
							  FROM unnest(sides, scored_loss) WITH ORDINALITY x(side, loss, i) ORDER BY x.i);
		UPDATE mm.ratings r
		   SET rating = u.rating, rd = u.rd, volatility = u.volatility, mu = u.mu, sigma = u.sigma,
			   games = r.games + 1, wins = r.wins + u.win, updated_at = report_result.now
		  FROM unnest(ids, new_rating, new_rd, new_volatility, new_mu, new_sigma, win_counts)
			   u(id, rating, rd, volatility, mu, sigma, win)
		 WHERE r.pool = pool_name AND r.player_id = u.id;
		INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
									   mu_before, mu_after, sigma_before, sigma_after,
									   volatility_before, volatility_after, created_at)
		SELECT u.id, pool_name, m.id, u.rating_before, u.rating_after, u.rd_before, u.rd_after,
			   u.mu_before, u.mu_after, u.sigma_before, u.sigma_after, u.volatility_before, u.volatility_after,
			   report_result.now
		  FROM unnest(ids, old_rating, new_rating, old_rd, new_rd, old_mu, new_mu, old_sigma, new_sigma,
					  old_volatility, new_volatility)
			   u(id, rating_before, rating_after, rd_before, rd_after, mu_before, mu_after, sigma_before,
				 sigma_after, volatility_before, volatility_after);
	END IF;

	INSERT INTO mm.match_results (match_id, queue, winner_team, ranks, predicted_favourite,
								  favourite_win_probability, duration, reported_at)
	VALUES (m.id, m.queue, winner, report_result.ranks, favourite, favourite_probability,
			report_result.now - m.created_at, report_result.now);

	-- completed, players released, match_completed; then the result's event
	PERFORM mm.complete_match(m.id, report_result.now);
	event_details := jsonb_build_object('winner', winner, 'ranks', report_result.ranks);
	IF length(event_details::text) > 6000 THEN
		-- a big free-for-all: the compact form (the ranks are in mm.match_results)
		event_details := jsonb_build_object('winner', winner, 'truncated', true);
	END IF;
	PERFORM mm.notify_match_event('match_result', m.id, event_details);

	RETURN QUERY
	SELECT u.id, u.team, u.rank,
		   CASE rating_system WHEN 'openskill' THEN u.mu_before ELSE u.rating_before END,
		   CASE rating_system WHEN 'openskill' THEN u.mu_after ELSE u.rating_after END
	  FROM unnest(ids, teams, player_ranks, old_rating, new_rating, old_mu, new_mu)
		   WITH ORDINALITY u(id, team, rank, rating_before, rating_after, mu_before, mu_after, i)
	 ORDER BY u.i;
END
$$;
COMMENT ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) IS
'Reports the ranks of a ready or assigned match (by team, or by player in a free-for-all): completes it, writes mm.match_results and updates every player''s stored rating in the queue''s pool; returns each player''s rating before and after';
REVOKE ALL ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.report_result(bigint, jsonb, timestamptz) TO mm_director;

-- Whether a rating pool exists: a queue rates into it, or a player has a
-- rating in it.
CREATE FUNCTION mm.rating_pool_exists(pool text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT EXISTS (SELECT FROM mm.ratings r WHERE r.pool = rating_pool_exists.pool)
		OR EXISTS (SELECT FROM mm.queues q
					WHERE q.config ? 'rating'
					  AND coalesce(q.config #>> '{rating,pool}', q.name) = rating_pool_exists.pool)
$$;
COMMENT ON FUNCTION mm.rating_pool_exists(text) IS
'Internal: true when a queue rates into the pool or a player has a rating in it';
REVOKE ALL ON FUNCTION mm.rating_pool_exists(text) FROM PUBLIC;

-- Grows the uncertainty of idle players: every rating whose last change is
-- at least `idle` before now gets one rating period without games per whole
-- `idle` elapsed: Glicko-2 RD through mm.glicko2_decay (capped at 350),
-- OpenSkill sigma by its per-game dynamics tau = 25/300 per period,
-- sqrt(sigma^2 + periods * tau^2), capped at 25/3.  Elo has nothing to grow.
CREATE FUNCTION mm.decay_ratings(pool text, idle interval, now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	idle_seconds float8;
	since timestamptz;
	changed integer;
BEGIN
	IF decay_ratings.pool IS NULL THEN
		RAISE EXCEPTION 'pool must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF decay_ratings.idle IS NULL THEN
		RAISE EXCEPTION 'idle must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.check_now(decay_ratings.now);
	idle_seconds := extract(epoch FROM decay_ratings.idle);
	IF idle_seconds <= 0 THEN
		RAISE EXCEPTION 'idle must be positive: %', decay_ratings.idle USING ERRCODE = 'invalid_parameter_value';
	END IF;
	BEGIN
		since := decay_ratings.now - decay_ratings.idle;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'idle reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'now - idle is out of range.';
	END;
	IF NOT mm.rating_pool_exists(decay_ratings.pool) THEN
		RAISE EXCEPTION 'rating pool "%" does not exist', decay_ratings.pool
			USING ERRCODE = 'undefined_object',
				  DETAIL = 'No queue rates into it and no player has a rating in it.';
	END IF;

	WITH idle_players AS (
		-- locked in player order, as mm.report_result locks them
		SELECT r.player_id, r.rating, r.rd, r.volatility, r.sigma,
			   -- at least one: selected by calendar time, counted in seconds
			   -- (a month is 30 days there, and February has fewer)
			   greatest(least(floor(extract(epoch FROM decay_ratings.now - r.updated_at) / idle_seconds),
							  1000000), 1)::integer AS periods
		  FROM mm.ratings r
		 WHERE r.pool = decay_ratings.pool AND r.updated_at <= since
		 ORDER BY r.player_id
		   FOR UPDATE
	), decayed AS (
		SELECT i.*,
			   CASE WHEN i.rd IS NOT NULL
					THEN (mm.glicko2_decay(coalesce(i.rating, 1500), i.rd, coalesce(i.volatility, 0.06),
										   i.periods)).rd END AS new_rd,
			   CASE WHEN i.sigma IS NOT NULL
					THEN greatest(i.sigma, least(sqrt(i.sigma * i.sigma + i.periods * (25 / 300.0) ^ 2),
												 25 / 3.0)) END AS new_sigma
		  FROM idle_players i
	), updated AS (
		UPDATE mm.ratings r
		   SET rd = d.new_rd, sigma = d.new_sigma, updated_at = decay_ratings.now
		  FROM decayed d
		 WHERE r.pool = decay_ratings.pool AND r.player_id = d.player_id
		   AND (d.new_rd IS DISTINCT FROM d.rd OR d.new_sigma IS DISTINCT FROM d.sigma)
		RETURNING r.player_id, r.rating, r.mu, r.volatility, d.rd AS rd_before, r.rd AS rd_after,
				  d.sigma AS sigma_before, r.sigma AS sigma_after
	)
	INSERT INTO mm.rating_history (player_id, pool, match_id, rating_before, rating_after, rd_before, rd_after,
								   mu_before, mu_after, sigma_before, sigma_after,
								   volatility_before, volatility_after, created_at)
	SELECT u.player_id, decay_ratings.pool, NULL, u.rating, u.rating, u.rd_before, u.rd_after,
		   u.mu, u.mu, u.sigma_before, u.sigma_after, u.volatility, u.volatility, decay_ratings.now
	  FROM updated u;
	GET DIAGNOSTICS changed = ROW_COUNT;
	RETURN changed;
END
$$;
COMMENT ON FUNCTION mm.decay_ratings(text, interval, timestamptz) IS
'Grows the Glicko-2 RD or OpenSkill sigma of the pool''s players idle for at least idle (one period per whole idle); returns how many ratings changed';
REVOKE ALL ON FUNCTION mm.decay_ratings(text, interval, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.decay_ratings(text, interval, timestamptz) TO mm_admin;

-- Makes pg_cron run mm.decay_ratings(pool, idle) every `every` (job
-- "mm_rating_decay:<pool>"; scheduling again replaces it).
CREATE FUNCTION mm.schedule_rating_decay(pool text, idle interval, every interval DEFAULT '1 day')
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict error
DECLARE
	plan record;
BEGIN
	IF schedule_rating_decay.pool IS NULL OR schedule_rating_decay.idle IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN schedule_rating_decay.pool IS NULL THEN 'pool' ELSE 'idle' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF extract(epoch FROM schedule_rating_decay.idle) <= 0 THEN
		RAISE EXCEPTION 'idle must be positive: %', schedule_rating_decay.idle
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT * INTO plan FROM mm.schedule_plan(schedule_rating_decay.every);
	IF plan.mode <> 'cron' THEN
		RAISE EXCEPTION 'every must be at least 1 minute for the rating decay job: %', schedule_rating_decay.every
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT mm.rating_pool_exists(schedule_rating_decay.pool) THEN
		RAISE EXCEPTION 'rating pool "%" does not exist', schedule_rating_decay.pool
			USING ERRCODE = 'undefined_object',
				  DETAIL = 'No queue rates into it and no player has a rating in it.';
	END IF;
	PERFORM mm.require_pg_cron();
	RETURN mm.cron_job_upsert('mm_rating_decay:' || schedule_rating_decay.pool, plan.cron_schedule,
							  format('SELECT mm.decay_ratings(%L, %L::interval)',
									 schedule_rating_decay.pool, schedule_rating_decay.idle));
END
$$;
COMMENT ON FUNCTION mm.schedule_rating_decay(text, interval, interval) IS
'Makes pg_cron run mm.decay_ratings(pool, idle) every interval (at least 1 minute); returns the pg_cron job id';
REVOKE ALL ON FUNCTION mm.schedule_rating_decay(text, interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.schedule_rating_decay(text, interval, interval) TO mm_admin;

CREATE FUNCTION mm.unschedule_rating_decay(pool text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF unschedule_rating_decay.pool IS NULL THEN
		RAISE EXCEPTION 'pool must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM mm.require_pg_cron();
	RETURN mm.cron_job_remove('mm_rating_decay:' || unschedule_rating_decay.pool);
END
$$;
COMMENT ON FUNCTION mm.unschedule_rating_decay(text) IS
'Stops the pool''s rating decay job; returns false when there was none';
REVOKE ALL ON FUNCTION mm.unschedule_rating_decay(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.unschedule_rating_decay(text) TO mm_admin;

-- Per pool, every rated player by a conservative rating, the value the
-- player is very likely above: Glicko-2 rating - 2 RD, Elo the rating,
-- OpenSkill mu - 3 sigma.  Equal values share a rank.  Analysts read it; a
-- frontend does not (it would show every player's rating).
CREATE VIEW mm.leaderboard AS
SELECT s.pool, s.player_id, s.system, s.conservative_rating,
	   pg_catalog.rank() OVER (PARTITION BY s.pool ORDER BY s.conservative_rating DESC NULLS LAST) AS rank,
	   s.rating, s.rd, s.mu, s.sigma, s.games, s.wins, s.updated_at
  FROM (SELECT r.pool, r.player_id, r.rating, r.rd, r.mu, r.sigma, r.games, r.wins, r.updated_at,
			   CASE WHEN r.rating IS NOT NULL AND r.rd IS NOT NULL THEN 'glicko2'
					WHEN r.rating IS NOT NULL THEN 'elo'
					WHEN r.mu IS NOT NULL AND r.sigma IS NOT NULL THEN 'openskill' END AS system,
			   CASE WHEN r.rating IS NOT NULL
					THEN r.rating OPERATOR(pg_catalog.-)
						 (2::pg_catalog.float8 OPERATOR(pg_catalog.*) coalesce(r.rd, 0::pg_catalog.float8))
					ELSE r.mu OPERATOR(pg_catalog.-) (3::pg_catalog.float8 OPERATOR(pg_catalog.*) r.sigma)
			   END AS conservative_rating
		  FROM mm.ratings r) s;
COMMENT ON VIEW mm.leaderboard IS
'Per rating pool, every rated player by conservative rating (Glicko-2 rating - 2 RD, Elo rating, OpenSkill mu - 3 sigma), with rank (ties share), games and wins';
GRANT SELECT ON mm.leaderboard TO mm_analyst;
GRANT SELECT ON mm.ratings, mm.rating_history TO mm_analyst;

-- The reference maximum now always counts the outlier and learning-curve
-- points (src/ratings_smurf.c).
COMMENT ON FUNCTION mm.smurf_score(integer, float8, float8, float8, float8[], float8) IS
'Smurf suspicion in [0, 1]: suspicion points over the reference maximum (75 under 25 games, else 45: new account 30, outlier performance 25, no learning curve 20)';

-- ===================================================================
-- Section: scheduling that repairs itself and starts at once
-- (src/schedule_starter.c; docs/scheduling.md)
-- ===================================================================

-- Starts a dynamic background worker that runs CALL mm.tick_loop(queue) as
-- the current role once the current transaction has ended: the queue ticks
-- at once instead of at the next minute boundary.  False, with a NOTICE,
-- when no background worker slot is free.
CREATE FUNCTION mm.schedule_start_loop(queue text)
RETURNS boolean
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'mm_schedule_start_loop';
COMMENT ON FUNCTION mm.schedule_start_loop(text) IS
'Runs the queue''s tick loop in a background worker from the end of this transaction to the next minute boundary (internal to mm.schedule)';

-- The settings pg_cron connects with, as this server has them; NULL where
-- they cannot be read (they are superuser-only settings, hence SECURITY
-- DEFINER: the extension's owner reads them for mm.schedule's checks).
CREATE FUNCTION mm.cron_connection(OUT background_workers boolean, OUT host text, OUT port integer,
								   OUT socket_directories text, OUT listen_addresses text)
RETURNS record
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	port := current_setting('port')::integer;
	socket_directories := current_setting('unix_socket_directories');
	listen_addresses := current_setting('listen_addresses');
	BEGIN
		background_workers := current_setting('cron.use_background_workers', true)::boolean;
		host := current_setting('cron.host', true);
	EXCEPTION WHEN insufficient_privilege THEN
		background_workers := NULL;
		host := NULL;
	END;
END;
$$;
COMMENT ON FUNCTION mm.cron_connection() IS
'How pg_cron connects to run jobs on this server (cron.use_background_workers, cron.host, port); NULL where unreadable';

-- Why pg_cron cannot run a job of role job_role on this server, as it is set
-- up now: one row per problem found, none when nothing is known to be wrong.
-- Checks the role's LOGIN, and, when jobs connect over libpq, cron.host
-- against the server's sockets and TCP addresses and the first pg_hba.conf
-- line that applies (read as the extension's owner, hence SECURITY DEFINER).
CREATE FUNCTION mm.cron_problems(job_role name)
RETURNS TABLE (problem text, hint text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	conn record;
	dirs text[];
	host_address inet;
	rule record;
	os_role name;
BEGIN
	IF job_role IS NULL THEN
		RAISE EXCEPTION 'job_role must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = job_role AND r.rolcanlogin) THEN
		problem := format('pg_cron runs the job as role "%s", which cannot log in', job_role);
		hint := 'Schedule as a role with LOGIN (not after SET ROLE to a group role such as mm_admin).';
		RETURN NEXT;
	END IF;

	SELECT * INTO conn FROM mm.cron_connection();
	IF conn.background_workers IS NULL OR conn.background_workers THEN
		RETURN;		-- unknown, or jobs run in background workers: no connection to check
	END IF;

	dirs := ARRAY(SELECT btrim(d) FROM unnest(string_to_array(conn.socket_directories, ',')) d
				   WHERE btrim(d) <> '');
	IF conn.host LIKE '/%' THEN
		IF NOT rtrim(conn.host, '/') = ANY (ARRAY(SELECT rtrim(d, '/') FROM unnest(dirs) d)) THEN
			problem := format('cron.host is "%s", which is not a socket directory of this server '
							  '(unix_socket_directories is "%s")', conn.host, conn.socket_directories);
			hint := 'Set cron.host to one of the socket directories and restart the server.';
			RETURN NEXT;
			RETURN;
		END IF;
	ELSIF btrim(conn.listen_addresses) = '' THEN
		problem := format('cron.host is "%s", but this server listens on no TCP address '
						  '(listen_addresses is empty)', conn.host);
		hint := CASE WHEN cardinality(dirs) > 0
					 THEN format('Set cron.host = %L (the socket directory) or cron.use_background_workers = on, '
								 'and restart the server.', dirs[1])
					 ELSE 'Set cron.use_background_workers = on and restart the server.' END;
		RETURN NEXT;
		RETURN;
	END IF;

	-- the first pg_hba.conf line for pg_cron's connection (superusers only;
	-- a line with a host name is not resolved, so it is passed over)
	IF conn.host NOT LIKE '/%' THEN
		BEGIN
			host_address := CASE WHEN conn.host IN ('localhost', '') THEN '127.0.0.1'::inet
								 ELSE conn.host::inet END;
		EXCEPTION WHEN invalid_text_representation THEN
			RETURN;		-- a host name: which lines apply depends on its address
		END;
	END IF;
	BEGIN
		SELECT r.line_number, r.type, r.auth_method, r.options INTO rule
		  FROM pg_hba_file_rules r
		 WHERE r.error IS NULL
		   AND CASE WHEN conn.host LIKE '/%' THEN r.type = 'local'
					ELSE r.type IN ('host', 'hostssl', 'hostnossl', 'hostgssenc', 'hostnogssenc')
						 AND (r.address IN ('all', 'samehost', 'samenet')
							  OR (r.netmask IS NOT NULL
								  AND family(host_address) = family(r.netmask::inet)
								  AND family(host_address) = family(r.address::inet)
								  AND (host_address & r.netmask::inet) = (r.address::inet & r.netmask::inet))) END
		   AND (r.database && ARRAY['all', current_database()]::text[]
				OR ('sameuser' = ANY (r.database) AND current_database() = job_role)
				OR ('samerole' = ANY (r.database) AND pg_has_role(job_role, current_database(), 'MEMBER')))
		   AND (r.user_name && ARRAY['all', job_role]::text[]
				OR EXISTS (SELECT 1 FROM unnest(r.user_name) u
							WHERE u LIKE '+%' AND pg_has_role(job_role, substr(u, 2)::name, 'MEMBER')))
		 ORDER BY r.line_number
		 LIMIT 1;
	EXCEPTION WHEN insufficient_privilege OR undefined_object OR invalid_text_representation THEN
		RETURN;
	END;
	IF NOT FOUND THEN
		problem := format('no line of pg_hba.conf lets pg_cron connect as role "%s" to database "%s" through %s',
						  job_role, current_database(),
						  CASE WHEN conn.host LIKE '/%' THEN 'the socket ' || conn.host ELSE 'host ' || conn.host END);
		hint := 'Add a line for it to pg_hba.conf, or set cron.use_background_workers = on.';
		RETURN NEXT;
	ELSIF rule.auth_method = 'reject' THEN
		problem := format('line %s of pg_hba.conf rejects pg_cron''s connection as role "%s"', rule.line_number, job_role);
		hint := 'Let that connection in before the reject line, or set cron.use_background_workers = on.';
		RETURN NEXT;
	ELSIF rule.auth_method IN ('password', 'md5', 'scram-sha-256', 'ldap', 'radius', 'pam', 'bsd') THEN
		problem := format('line %s of pg_hba.conf asks for a password (%s), which pg_cron does not give '
						  'unless the server''s operating-system user has it in ~/.pgpass',
						  rule.line_number, rule.auth_method);
		hint := 'Use trust or peer for pg_cron''s connection, add a ~/.pgpass entry, or set cron.use_background_workers = on.';
		RETURN NEXT;
	ELSIF rule.auth_method = 'peer' AND rule.options IS NULL THEN
		-- peer maps the client's operating-system user (the server's own) to a
		-- role of the same name, which is the bootstrap superuser's as a rule
		SELECT r.rolname INTO os_role FROM pg_roles r WHERE r.oid = 10;
		IF os_role <> job_role THEN
			problem := format('line %s of pg_hba.conf uses peer authentication: pg_cron connects as the server''s '
							  'operating-system user (usually "%s"), which peer accepts only as the role of that name, '
							  'not "%s"', rule.line_number, os_role, job_role);
			hint := 'Use trust for pg_cron''s connection, a peer map, or set cron.use_background_workers = on.';
			RETURN NEXT;
		END IF;
	END IF;
END;
$$;
COMMENT ON FUNCTION mm.cron_problems(name) IS
'Why pg_cron could not run a job of that role on this server as it is set up (no rows: nothing known to be wrong)';

-- A failed pg_cron run's message in words: what went wrong and what to do.
CREATE FUNCTION mm.cron_error_in_words(message text, nodename text DEFAULT NULL, nodeport integer DEFAULT NULL)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN message IS NULL THEN NULL
		WHEN btrim(message) = 'connection failed' THEN
			format('pg_cron could not connect to the server%s to run the job: check cron.host, '
				   'listen_addresses and pg_hba.conf, or set cron.use_background_workers = on',
				   CASE WHEN nodename IS NOT NULL
						THEN format(' (host %s, port %s)', nodename, coalesce(nodeport::text, '?')) ELSE '' END)
		WHEN btrim(message) = 'job startup timeout' THEN
			'the job did not start in time: every pg_cron connection or background worker was busy '
			'(cron.max_running_jobs, max_connections, max_worker_processes)'
		WHEN btrim(message) = 'job canceled' THEN
			'the job was unscheduled or deactivated while it ran'
		WHEN message ~ 'is not permitted to log in' THEN
			'pg_cron runs the job as a role that cannot log in: ' || btrim(message, E' \n')
		WHEN message ~* 'password' THEN
			'pg_cron''s connection was refused for want of a password: ' || btrim(message, E' \n')
		ELSE 'the run failed: ' || btrim(message, E' \n')
	END
$$;
COMMENT ON FUNCTION mm.cron_error_in_words(text, text, integer) IS
'A failed pg_cron run''s message explained (for mm.schedules.last_error)';

-- Creates or replaces one of matchmaking's pg_cron jobs so that it runs with
-- the current settings.  cron.schedule(name, ...) on an existing name
-- updates only the schedule and the command: the connection it was created
-- with (cron.host, port), its database, role and active flag stay.  A job
-- whose settings differ from those a new job would get, or cannot be
-- checked, is removed and created afresh (a new job id); one that matches
-- keeps its id.
CREATE OR REPLACE FUNCTION mm.cron_job_upsert(job_name text, cron_schedule text, command text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
	conn record;
	job record;
	stale text;
	job_id bigint;
BEGIN
	SELECT * INTO cron FROM mm.require_pg_cron();
	SELECT * INTO conn FROM mm.cron_connection();
	-- the jobs of that name this role may see (pg_cron's row security: its own)
	FOR job IN EXECUTE format('SELECT jobid, nodename, nodeport, database, username, active
								 FROM %I.job WHERE jobname = $1 ORDER BY jobid', cron.schema)
				 USING job_name
	LOOP
		stale := CASE
			WHEN job.username <> current_user THEN format('it ran as role "%s"', job.username)
			WHEN job.database <> current_database() THEN format('it ran in database "%s"', job.database)
			WHEN NOT job.active THEN 'it was inactive'
			WHEN conn.background_workers THEN NULL
			WHEN conn.host IS NULL THEN NULL	-- cron.host unreadable: checked below
			WHEN job.nodename <> conn.host OR job.nodeport <> conn.port THEN
				format('it connected to host %s port %s, and cron.host and port are now %s and %s',
					   job.nodename, job.nodeport, conn.host, conn.port)
			END;
		IF stale IS NULL AND conn.background_workers IS NULL THEN
			stale := 'its connection settings could not be checked (cron.host is not readable)';
		END IF;
		IF stale IS NOT NULL THEN
			EXECUTE format('SELECT %I.unschedule($1)', cron.schema) USING job.jobid;
			RAISE NOTICE 'pg_cron job % ("%") was re-created: %', job.jobid, job_name, stale;
		END IF;
	END LOOP;
	-- cron.schedule(name, ...) updates the job of that name of this role, or creates it
	EXECUTE format('SELECT %I.schedule($1, $2, $3)', cron.schema)
	   INTO job_id USING job_name, cron_schedule, command;
	RETURN job_id;
END;
$$;
COMMENT ON FUNCTION mm.cron_job_upsert(text, text, text) IS
'Creates the pg_cron job of that name, or brings it in line with the current settings (internal to mm.schedule)';

-- The body of a queue's per-minute job for sub-minute intervals: ticks,
-- commits, sleeps until the next tick, and returns before the next minute's
-- run starts.  A session advisory lock keeps a second loop of the same queue
-- from running (it returns at once), even when a tick runs long.  A loop that
-- finds itself past the end of its minute (a tick ran long, or waited for a
-- lock, across the boundary) carries on through the next minute: that
-- minute's run found the lock taken and returned, and nothing else would tick
-- the queue until the minute after.  A procedure (not a function) so that
-- each tick commits on its own; it therefore has no SET clause, and
-- qualifies every operator instead.
CREATE OR REPLACE PROCEDURE mm.tick_loop(queue text)
LANGUAGE plpgsql
AS $$
DECLARE
	loop_job_name constant text := pg_catalog.concat('mm_tick:', queue);
	lock_key constant bigint := pg_catalog.hashtextextended(pg_catalog.concat('mm_tick_loop:', queue), 0);
	started constant timestamptz := pg_catalog.clock_timestamp();
	-- the run belongs to the minute it starts in (or the next one when pg_cron
	-- starts it a moment early) and ends before that minute's successor starts
	deadline timestamptz := pg_catalog.date_trunc('minute', started OPERATOR(pg_catalog.+) '2 seconds'::interval)
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
		IF next_tick OPERATOR(pg_catalog.>=) deadline THEN
			-- on time: the next minute's run takes over
			EXIT WHEN pg_catalog.clock_timestamp() OPERATOR(pg_catalog.<) deadline;
			-- late: that run has returned (or will, finding the lock taken)
			deadline := pg_catalog.date_trunc('minute', pg_catalog.clock_timestamp()
											  OPERATOR(pg_catalog.+) '2 seconds'::interval)
						OPERATOR(pg_catalog.+) '1 minute'::interval;
		END IF;
		PERFORM pg_catalog.pg_sleep(pg_catalog.date_part('epoch',
								next_tick OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp()));
		-- a fresh transaction, so the next tick's now() is the time it runs
		COMMIT;
	END LOOP;

	PERFORM pg_catalog.pg_advisory_unlock(lock_key);
END;
$$;
COMMENT ON PROCEDURE mm.tick_loop(text) IS
'Body of a queue''s per-minute pg_cron job: ticks every scheduled interval until just before the next minute (through it when a tick ran past the boundary)';

-- Makes pg_cron tick a queue every `every`.  Re-scheduling brings the job in
-- line with the current settings (mm.cron_job_upsert).  A queue on the
-- per-minute loop starts ticking at once: a background worker runs the loop
-- until the next minute boundary, when pg_cron takes over.  Warns when
-- pg_cron cannot run the job: settings that cannot work here
-- (mm.cron_problems), or a last run that failed.
CREATE OR REPLACE FUNCTION mm.schedule(queue text, every interval DEFAULT '1 second')
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
	plan record;
	tick_job_name text;
	command text;
	tick_job_id bigint;
	previous record;
	problem record;
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
	SELECT s.job_id, s.last_error, s.last_error_at, s.last_run_status INTO previous
	  FROM mm.schedule_status() s WHERE s.job_name = tick_job_name;
	command := CASE plan.mode WHEN 'loop' THEN format('CALL mm.tick_loop(%L)', queue)
							  ELSE format('SELECT mm.tick(%L)', queue) END;
	tick_job_id := mm.cron_job_upsert(tick_job_name, plan.cron_schedule, command);

	INSERT INTO mm.schedule_jobs AS s (job_name, kind, queue, every, mode, cron_schedule, cron_job_id)
	VALUES (tick_job_name, 'tick', queue, every, plan.mode, plan.cron_schedule, tick_job_id)
	ON CONFLICT ON CONSTRAINT schedule_jobs_pkey DO UPDATE
	   SET every = EXCLUDED.every, mode = EXCLUDED.mode, cron_schedule = EXCLUDED.cron_schedule,
		   cron_job_id = EXCLUDED.cron_job_id, updated_at = now();

	-- a job of that name of another role (pg_cron shows each role its own
	-- jobs only, so cron.schedule could not replace it) runs the loop too
	FOR problem IN SELECT s.job_id FROM mm.schedule_status() s
					WHERE s.job_name = tick_job_name AND s.job_id <> tick_job_id LOOP
		RAISE WARNING 'queue "%" has another pg_cron job, %, of another role', queue, problem.job_id
			USING DETAIL = 'Both tick the queue; one tick of a queue runs at a time (a second one meanwhile forms nothing).',
				  HINT = format('Have a superuser run SELECT cron.unschedule(%s).', problem.job_id);
	END LOOP;
	-- what would keep pg_cron from running the job
	FOR problem IN SELECT * FROM mm.cron_problems(current_user) LOOP
		RAISE WARNING 'pg_cron cannot run the job of queue "%": %', queue, problem.problem
			USING HINT = problem.hint;
	END LOOP;
	IF previous.last_run_status = 'failed' AND previous.last_error IS NOT NULL THEN
		IF previous.job_id = tick_job_id THEN
			RAISE WARNING 'the last run of the pg_cron job of queue "%" failed: %', queue, previous.last_error
				USING DETAIL = CASE WHEN previous.last_error_at IS NULL
									THEN 'pg_cron recorded no time for the run: it never started.'
									ELSE format('The run started at %s.', previous.last_error_at) END,
					  HINT = 'See mm.schedules and cron.job_run_details.';
		ELSE
			RAISE NOTICE 'the last run of the replaced pg_cron job of queue "%" had failed: %', queue, previous.last_error;
		END IF;
	END IF;

	-- tick now rather than at the next minute boundary (the loop's own lock
	-- keeps it from running beside pg_cron's, or beside a loop already running)
	IF plan.mode = 'loop' AND NOT mm.tick_loop_running(queue)
	   AND EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = current_user AND r.rolcanlogin) THEN
		PERFORM mm.schedule_start_loop(queue);
	END IF;
	RETURN tick_job_id;
END;
$$;
COMMENT ON FUNCTION mm.schedule(text, interval) IS
'Makes pg_cron tick the queue every interval (sub-minute included), ticking at once; re-scheduling repairs the job; returns the pg_cron job id';

-- matchmaking's jobs with pg_cron's view of them (when pg_cron is here):
-- active flag, whether a tick loop is running now, the last run, and the
-- last failed run in words.  Jobs named like ours that have no row of
-- mm.schedule_jobs show with kind NULL.  SECURITY DEFINER: pg_cron shows
-- each role only its own jobs, and analysts and other admins read this too.
DROP VIEW mm.schedules;
DROP FUNCTION mm.schedule_status();
CREATE FUNCTION mm.schedule_status()
RETURNS TABLE (job_name text, kind text, queue text, every interval, mode text,
			   cron_schedule text, job_id bigint, active boolean, loop_running boolean,
			   last_run_status text, last_run_start timestamptz, last_run_message text,
			   last_error text, last_error_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cron record;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_extension e WHERE e.extname = 'pg_cron') THEN
		RETURN QUERY
		SELECT s.job_name, s.kind, s.queue, s.every, s.mode, s.cron_schedule, s.cron_job_id,
			   NULL::boolean, mm.tick_loop_running(s.queue), NULL::text, NULL::timestamptz, NULL::text,
			   NULL::text, NULL::timestamptz
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
			   r.status, r.start_time, r.return_message,
			   mm.cron_error_in_words(f.return_message, j.nodename, j.nodeport),
			   coalesce(f.start_time, f.end_time)
		  FROM mm.schedule_jobs s
		  FULL JOIN (SELECT * FROM %1$I.job
					  WHERE jobname LIKE 'mm\_tick:%%' OR jobname = 'mm_retention') j
			ON j.jobname = s.job_name
		  LEFT JOIN LATERAL (SELECT d.status, d.start_time, d.return_message
							   FROM %1$I.job_run_details d
							  WHERE d.jobid = j.jobid
							  ORDER BY d.runid DESC LIMIT 1) r ON true
		  LEFT JOIN LATERAL (SELECT d.start_time, d.end_time, d.return_message
							   FROM %1$I.job_run_details d
							  WHERE d.jobid = j.jobid AND d.status = 'failed'
							  ORDER BY d.runid DESC LIMIT 1) f ON true
		 ORDER BY 1$q$, cron.schema);
END;
$$;
COMMENT ON FUNCTION mm.schedule_status() IS
'matchmaking''s pg_cron jobs with their state and last error (the body of view mm.schedules)';

CREATE VIEW mm.schedules AS
	SELECT * FROM mm.schedule_status();
COMMENT ON VIEW mm.schedules IS
'matchmaking''s pg_cron jobs: queue ticks and retention, with their state and last error in words';

-- Privileges: scheduling and housekeeping are mm_admin's; the jobs' state is
-- mm_analyst's to read too (the tables: 90_privileges.sql).  The role that
-- schedules also needs USAGE on schema cron, pg_cron's grant, not ours.
GRANT EXECUTE ON FUNCTION mm.schedule(text, interval), mm.unschedule(text),
	mm.schedule_plan(interval, text), mm.require_pg_cron(), mm.cron_job_upsert(text, text, text),
	mm.cron_job_remove(text), mm.schedule_start_loop(text), mm.cron_connection(),
	mm.cron_problems(name), mm.cron_error_in_words(text, text, integer),
	mm.schedule_retention(interval, interval, boolean, integer), mm.unschedule_retention(),
	mm.purge_finished(interval, integer, boolean, timestamptz)
	TO mm_admin;
GRANT EXECUTE ON PROCEDURE mm.tick_loop(text), mm.run_retention() TO mm_admin;
GRANT EXECUTE ON FUNCTION mm.schedule_status(), mm.tick_loop_running(text) TO mm_admin, mm_analyst;
GRANT SELECT ON mm.schedules TO mm_admin, mm_analyst;

-- What the tick loop and the retention job read from mm.schedule_jobs is
-- checked by the table too (mm_admin may write it, and pg_dump restores it):
-- a loop that never sleeps, a keep no run can subtract.
ALTER TABLE mm.schedule_jobs
	ADD CONSTRAINT schedule_jobs_every CHECK (every OPERATOR(pg_catalog.>) '0'::interval),
	ADD CONSTRAINT schedule_jobs_keep CHECK (keep IS NULL OR (keep OPERATOR(pg_catalog.>) '0'::interval
															  AND keep OPERATOR(pg_catalog.<=) '1000 years'::interval)),
	ADD CONSTRAINT schedule_jobs_batch_size CHECK (batch_size IS NULL OR batch_size OPERATOR(pg_catalog.>) 0);

-- ===================================================================
-- Section: metrics (views and functions for analysts; docs/metrics.md)
-- ===================================================================

-- 0.3: every figure says what it measures.  The one headline match quality
-- is mm.matches.quality, the tick's (docs/metrics.md#match-quality): the
-- 0.2 "seed quality" (1 - gap of the team averages / global average skill,
-- near 1 whatever the skill spread inside a match) is gone; in its place
-- the plain figures skill_spread (highest minus lowest player skill in a
-- match), team_skill_gap (highest minus lowest team average) and
-- worst_latency_ms.  mm.health_report takes its targets as arguments.  The
-- metrics that are one query are LANGUAGE sql; their argument checks live
-- in mm.metrics_scope, mm.metrics_minutes and mm.metrics_check_target.

-- Dropped first: the functions whose columns or arguments change, and the
-- view over one of them (the 0.2 argument-check helpers go below, once their
-- replacements exist).
DROP VIEW mm.match_stats;
DROP FUNCTION mm.match_stats(interval, timestamptz);
DROP FUNCTION mm.match_metrics(text, interval, timestamptz);
DROP FUNCTION mm.match_details(text, interval, timestamptz, text);
DROP FUNCTION mm.health_report(text, interval, timestamptz);

-- The argument checks of every metrics function over a time window, in one
-- place: a positive time_window ending at a finite `now` whose start is a
-- timestamp, a skill_attribute that is not NULL, and the queue, which must
-- exist (NULL: every queue, unless queue_required).  Returns the queues
-- covered, sorted: an array, so the queries use the (queue, ...) indexes.
CREATE FUNCTION mm.metrics_scope(queue text, time_window interval, now timestamptz,
								 queue_required boolean DEFAULT false,
								 skill_attribute text DEFAULT 'skill')
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
	IF queue IS NULL AND queue_required THEN
		RAISE EXCEPTION 'queue must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF time_window IS NULL THEN
		RAISE EXCEPTION 'time_window must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF time_window <= '0'::interval THEN
		RAISE EXCEPTION 'time_window must be positive: %', time_window USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF now IS NULL THEN
		RAISE EXCEPTION 'now must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT isfinite(now) THEN
		RAISE EXCEPTION 'now must be finite' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- the window's start must be a timestamp
	BEGIN
		PERFORM now - time_window;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'now minus the time window reaches before the earliest timestamp'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'now - time_window is out of range.';
	END;
	IF skill_attribute IS NULL THEN
		RAISE EXCEPTION 'skill_attribute must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF queue IS NULL THEN
		RETURN ARRAY(SELECT q.name FROM mm.queues q ORDER BY q.name);
	END IF;
	IF NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = queue) THEN
		RAISE EXCEPTION 'queue "%" does not exist', queue USING ERRCODE = 'undefined_object';
	END IF;
	RETURN ARRAY[queue];
END;
$$;
COMMENT ON FUNCTION mm.metrics_scope(text, interval, timestamptz, boolean, text) IS
'Checks the arguments of a metrics function (window, now, queue, skill attribute) and returns the queues it covers: the given one, or all for NULL';

-- The argument checks of mm.queue_stats_by_minute: a queue, a finite
-- from_time before a finite to_time, at most 7 days apart; the queue is
-- checked by mm.metrics_scope like every other metric's.  Returns the
-- first minute and the end of the last minute that starts before to_time.
CREATE FUNCTION mm.metrics_minutes(queue text, from_time timestamptz, to_time timestamptz,
								   OUT first_minute timestamptz, OUT last_end timestamptz)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
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
	-- the queue: the same checks as every metrics function (a window ending at to_time)
	PERFORM mm.metrics_scope(queue, to_time - from_time, to_time, true);
	first_minute := date_trunc('minute', from_time);
	BEGIN
		last_end := date_trunc('minute', to_time - '1 microsecond'::interval) + '1 minute'::interval;
	EXCEPTION WHEN datetime_field_overflow THEN
		RAISE EXCEPTION 'to_time is in the last minute of the timestamp range'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The end of its minute is out of range.';
	END;
END;
$$;
COMMENT ON FUNCTION mm.metrics_minutes(text, timestamptz, timestamptz) IS
'Checks the arguments of mm.queue_stats_by_minute and returns its first minute and the end of its last';

-- A target of mm.health_report: NULL (no target) or a finite number from 0
-- up to upper (no upper bound for NULL); returns it.
CREATE FUNCTION mm.metrics_check_target(name text, target float8, upper float8 DEFAULT NULL)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF target IS NOT NULL
	   AND NOT (target >= 0 AND target < 'Infinity'::float8 AND (upper IS NULL OR target <= upper)) THEN
		RAISE EXCEPTION '% must be %', name,
			CASE WHEN upper IS NULL THEN 'a finite number of at least 0'
				 ELSE pg_catalog.format('between 0 and %s', upper) END
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = pg_catalog.format('Got %s.', target),
				  HINT = 'NULL leaves the figure without a target.';
	END IF;
	RETURN target;
END;
$$;
COMMENT ON FUNCTION mm.metrics_check_target(text, float8, float8) IS
'Checks a target of mm.health_report: NULL, or finite from 0 up to upper (NULL: no upper bound)';

-- The 0.2 helpers, replaced by mm.metrics_scope.
DROP FUNCTION mm.metrics_check_window(interval, timestamptz);
DROP FUNCTION mm.metrics_queues(text);

-- Ticket figures of one queue (or all queues pooled, for NULL) over the
-- time_window (now - time_window, now]: who is searching at `now`, time to
-- match of the tickets matched in the window, the share of the window's
-- tickets matched within 120 s, timeouts and cancellations in the window.
-- Each part is an aggregate LATERAL to the checked scope, so the checks run
-- first and always.
-- The tickets of some queues that were searching at a time: created by then
-- and still searching (or proposed: an accepted ticket is matched when the
-- last answer comes), or ended (matched, cancelled, timed out) after it, so
-- that a past now sees the queue as it was.  Each part is read through an
-- index (the ended ones through the BRIN of their times).
CREATE FUNCTION mm.tickets_searching_at(queues text[], at timestamptz)
RETURNS TABLE (players jsonb, created_at timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.players, t.created_at FROM mm.tickets t
	 WHERE t.queue = ANY (tickets_searching_at.queues) AND t.status IN ('searching', 'proposed')
	   AND t.created_at <= tickets_searching_at.at
	UNION ALL
	SELECT t.players, t.created_at FROM mm.tickets t
	 WHERE t.queue = ANY (tickets_searching_at.queues) AND t.matched_at > tickets_searching_at.at AND t.created_at <= tickets_searching_at.at
	UNION ALL
	SELECT t.players, t.created_at FROM mm.tickets t
	 WHERE t.queue = ANY (tickets_searching_at.queues) AND t.status IN ('cancelled', 'timed_out')
	   AND t.updated_at > tickets_searching_at.at AND t.created_at <= tickets_searching_at.at
$$;
COMMENT ON FUNCTION mm.tickets_searching_at(text[], timestamptz) IS
'Internal: the tickets of the queues that were searching at a time (created by then, not ended by then)';
REVOKE ALL ON FUNCTION mm.tickets_searching_at(text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.tickets_searching_at(text[], timestamptz) TO mm_analyst;

CREATE OR REPLACE FUNCTION mm.ticket_metrics(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
											 now timestamptz DEFAULT now())
RETURNS TABLE (searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT s.n, s.players, s.oldest, w.n, w.average, w.p50, w.p95, w.p99, f.rate, f.n, e.timeouts,
		   e.cancellations
	  FROM mm.metrics_scope(ticket_metrics.queue, time_window, now) AS scope(queues)
	 CROSS JOIN LATERAL (
		SELECT count(*) AS n, coalesce(sum(jsonb_array_length(a.players)), 0) AS players,
			   (extract(epoch FROM now) - extract(epoch FROM min(a.created_at)))::float8 AS oldest
		  FROM mm.tickets_searching_at(scope.queues, now) a) s
	 CROSS JOIN LATERAL (
		SELECT count(*) AS n, avg(x.seconds) AS average,
			   percentile_cont(0.5) WITHIN GROUP (ORDER BY x.seconds) AS p50,
			   percentile_cont(0.95) WITHIN GROUP (ORDER BY x.seconds) AS p95,
			   percentile_cont(0.99) WITHIN GROUP (ORDER BY x.seconds) AS p99
		  FROM (SELECT (extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8 AS seconds
				  FROM mm.tickets t
				 WHERE t.queue = ANY (scope.queues)
				   AND t.matched_at > now - time_window AND t.matched_at <= now) x) w
	 CROSS JOIN LATERAL (
		-- The window's tickets whose 120 s verdict was in at now: matched in
		-- time, or timed out, or older than 120 s; a cancellation within 120 s
		-- was the player's choice and is left out, and so is a ticket still
		-- younger.  What happened after now does not count.
		SELECT count(*) FILTER (WHERE v.in_time)::float8 / nullif(count(*), 0) AS rate, count(*) AS n
		  FROM (SELECT coalesce(t.matched_at <= now AND t.matched_at - t.created_at <= '120 s'::interval,
								false) AS in_time,
					   coalesce(CASE t.status WHEN 'matched' THEN t.matched_at
											  WHEN 'cancelled' THEN t.updated_at
											  WHEN 'timed_out' THEN t.updated_at END <= now,
								false) AS ended,
					   t.status, t.created_at, t.updated_at
				  FROM mm.tickets t
				 WHERE t.queue = ANY (scope.queues)
				   AND t.created_at > now - time_window AND t.created_at <= now) v
		 WHERE v.in_time
			OR (v.ended AND v.status IN ('matched', 'timed_out'))
			OR (v.ended AND v.status = 'cancelled' AND v.updated_at - v.created_at >= '120 s'::interval)
			OR (NOT v.ended AND now - v.created_at >= '120 s'::interval)) f
	 CROSS JOIN LATERAL (
		SELECT count(*) FILTER (WHERE t.status = 'timed_out') AS timeouts,
			   count(*) FILTER (WHERE t.status = 'cancelled') AS cancellations
		  FROM mm.tickets t
		 WHERE t.queue = ANY (scope.queues) AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at > now - time_window AND t.updated_at <= now) e
$$;
COMMENT ON FUNCTION mm.ticket_metrics(text, interval, timestamptz) IS
'Ticket figures of a queue (all queues pooled for NULL) over (now - time_window, now]: searching, time to match, fill rate, timeouts';

-- Per queue ticket figures over a time_window (the view mm.queue_stats is the last hour).
CREATE OR REPLACE FUNCTION mm.queue_stats(time_window interval, now timestamptz DEFAULT now())
RETURNS TABLE (queue text, searching_tickets bigint, searching_players bigint, oldest_wait_s float8,
			   tickets_matched bigint, time_to_match_avg_s float8, time_to_match_p50_s float8,
			   time_to_match_p95_s float8, time_to_match_p99_s float8,
			   fill_rate float8, fill_rate_tickets bigint, timeouts bigint, cancellations bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT q.name, m.*
	  FROM mm.metrics_scope(NULL, time_window, now) AS scope(queues)
	 CROSS JOIN LATERAL unnest(scope.queues) AS q(name)
	 CROSS JOIN LATERAL mm.ticket_metrics(q.name, time_window, now) AS m
	 ORDER BY q.name
$$;
COMMENT ON FUNCTION mm.queue_stats(interval, timestamptz) IS
'Per queue: searching tickets and players, oldest wait, time to match avg/p50/p95/p99, fill rate within 120 s, timeouts, cancellations';

-- The players of a match: team, skill attribute and latency to the region.
-- A jsonb number can be too small for a float8 (1e-400): it reads as 0, and
-- one beyond the tick's range of ±1e12 (stored before a validation) as
-- missing, so one stored value cannot make a metric fail.  No SET clause, so
-- that it is inlined into its caller's query: hence the schema-qualified
-- operators.
CREATE OR REPLACE FUNCTION mm.match_player_values(match_id bigint, region text, skill_attribute text,
												  OUT team text, OUT skill float8, OUT latency float8)
RETURNS SETOF record
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
	SELECT mp.team,
		   CASE WHEN pg_catalog.jsonb_typeof(tp.attributes OPERATOR(pg_catalog.->) skill_attribute)
					 OPERATOR(pg_catalog.=) 'number'
				 AND pg_catalog.abs(CAST(tp.attributes OPERATOR(pg_catalog.->>) skill_attribute AS pg_catalog.numeric))
					 OPERATOR(pg_catalog.<=) 1e12
				THEN CAST(pg_catalog.round(CAST(tp.attributes OPERATOR(pg_catalog.->>) skill_attribute
												AS pg_catalog.numeric), 12) AS pg_catalog.float8) END,
		   CASE WHEN pg_catalog.jsonb_typeof(tp.latencies OPERATOR(pg_catalog.->) region)
					 OPERATOR(pg_catalog.=) 'number'
				 AND pg_catalog.abs(CAST(tp.latencies OPERATOR(pg_catalog.->>) region AS pg_catalog.numeric))
					 OPERATOR(pg_catalog.<=) 1e12
				THEN CAST(pg_catalog.round(CAST(tp.latencies OPERATOR(pg_catalog.->>) region
												AS pg_catalog.numeric), 12) AS pg_catalog.float8) END
	  FROM mm.match_players mp
	  LEFT JOIN mm.ticket_players tp ON tp.ticket_id OPERATOR(pg_catalog.=) mp.ticket_id
									AND tp.player_id OPERATOR(pg_catalog.=) mp.player_id
	 WHERE mp.match_id OPERATOR(pg_catalog.=) match_player_values.match_id
$$;

-- Per match figures of the matches formed in (now - time_window, now]:
-- the tick's quality (the headline), the skill spread (highest minus lowest
-- player skill), the team skill gap (highest minus lowest team average
-- skill), and the players' latency to the match's region: average and
-- worst.  Skill is a numeric ticket attribute (skill_attribute).
CREATE FUNCTION mm.match_details(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now(), skill_attribute text DEFAULT 'skill')
RETURNS TABLE (match_id bigint, queue_name text, created_at timestamptz, region text, players integer,
			   teams integer, quality float8, skill_spread float8, team_skill_gap float8,
			   latency_avg_ms float8, worst_latency_ms float8)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT d.*
	  FROM mm.metrics_scope(match_details.queue, time_window, now, false, skill_attribute) AS scope(queues)
	 CROSS JOIN LATERAL (
		-- Per match lookups (LATERAL, by the match_players and tickets
		-- primary keys), so the cost follows the window's matches, not the
		-- tables.  OFFSET 0 keeps the subquery lateral to the checked scope.
		SELECT m.id, m.queue, m.created_at, m.region, pl.players, pl.teams, m.quality,
			   pl.skill_spread, pl.team_skill_gap, pl.latency_avg_ms, pl.worst_latency_ms
		  FROM mm.matches m
		 CROSS JOIN LATERAL (
			-- one row per team (and one for players without a team)
			SELECT coalesce(sum(t.players), 0)::integer AS players,
				   count(*) FILTER (WHERE t.team IS NOT NULL)::integer AS teams,
				   max(t.skill_max) - min(t.skill_min) AS skill_spread,
				   CASE WHEN count(t.skill_avg) FILTER (WHERE t.team IS NOT NULL) >= 2
						THEN max(t.skill_avg) FILTER (WHERE t.team IS NOT NULL)
							 - min(t.skill_avg) FILTER (WHERE t.team IS NOT NULL) END AS team_skill_gap,
				   sum(t.latency_sum) / nullif(sum(t.latency_count), 0) AS latency_avg_ms,
				   max(t.latency_max) AS worst_latency_ms
			  FROM (SELECT x.team, count(*) AS players, avg(x.skill) AS skill_avg,
						   min(x.skill) AS skill_min, max(x.skill) AS skill_max,
						   sum(x.latency) AS latency_sum, count(x.latency) AS latency_count,
						   max(x.latency) AS latency_max
					  FROM mm.match_player_values(m.id, m.region, skill_attribute) x
					 GROUP BY x.team) t) pl
		 WHERE m.queue = ANY (scope.queues) AND m.created_at > now - time_window AND m.created_at <= now
		OFFSET 0) d
	 ORDER BY d.created_at, d.id
$$;
COMMENT ON FUNCTION mm.match_details(text, interval, timestamptz, text) IS
'Per match formed in the window: players, teams, match quality, skill spread, team skill gap, average and worst latency';

-- Match and outcome figures of one queue (or all pooled, for NULL): averages
-- of mm.match_details over the matches formed in the window, and from the
-- results reported in the window: how often the predicted favourite won
-- against the average predicted probability, and the share of players who
-- left in the first 20% of the match (start: the match's created_at).
CREATE FUNCTION mm.match_metrics(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now())
RETURNS TABLE (matches bigint, players_per_match float8, quality_avg float8, skill_spread_avg float8,
			   team_skill_gap_avg float8, latency_avg_ms float8, worst_latency_avg_ms float8,
			   results bigint, favourite_win_rate float8, favourite_predicted_rate float8,
			   win_rate_balance_points float8, early_quits bigint, early_quit_rate float8)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT d.matches, d.players, d.quality, d.spread, d.gap, d.latency, d.worst,
		   o.results, o.won, o.predicted, 100 * abs(o.won - o.predicted),
		   e.early, e.rate
	  FROM mm.metrics_scope(match_metrics.queue, time_window, now) AS scope(queues)
	 CROSS JOIN LATERAL (
		SELECT count(*) AS matches, avg(x.players::float8) AS players, avg(x.quality) AS quality,
			   avg(x.skill_spread) AS spread, avg(x.team_skill_gap) AS gap,
			   avg(x.latency_avg_ms) AS latency, avg(x.worst_latency_ms) AS worst
		  FROM mm.match_details(match_metrics.queue, time_window, now) x) d
	 CROSS JOIN LATERAL (
		SELECT count(*) AS results,
			   avg((w.winner = w.predicted_favourite)::integer::float8)
				   FILTER (WHERE w.predicted_favourite IS NOT NULL AND w.winner IS NOT NULL) AS won,
			   avg(w.favourite_win_probability)
				   FILTER (WHERE w.predicted_favourite IS NOT NULL AND w.winner IS NOT NULL) AS predicted
		  FROM (SELECT mm.result_winner(r.winner_team, r.ranks) AS winner, r.predicted_favourite,
					   r.favourite_win_probability
				  FROM mm.match_results r
				 WHERE r.queue = ANY (scope.queues)
				   AND r.reported_at > now - time_window AND r.reported_at <= now
				OFFSET 0) w) o	-- OFFSET 0: the winner is worked out once per result
	 CROSS JOIN LATERAL (
		-- per result lookups by primary key (an aggregate LATERAL is not flattened)
		SELECT coalesce(sum(q.early), 0)::bigint AS early,
			   sum(q.early)::float8 / nullif(sum(q.players), 0) AS rate
		  FROM mm.match_results r
		 CROSS JOIN LATERAL (
			SELECT count(*) AS players,
				   count(*) FILTER (WHERE extract(epoch FROM mp.left_at) - extract(epoch FROM m.created_at)
									   < 0.2 * extract(epoch FROM r.duration)) AS early
			  FROM mm.matches m JOIN mm.match_players mp ON mp.match_id = m.id
			 WHERE m.id = r.match_id) q
		 WHERE r.queue = ANY (scope.queues)
		   AND r.reported_at > now - time_window AND r.reported_at <= now
		   AND r.duration IS NOT NULL) e
$$;
COMMENT ON FUNCTION mm.match_metrics(text, interval, timestamptz) IS
'Match figures of a queue (all pooled for NULL): match quality, skill spread, team skill gap, latency, players per match, win-rate balance, early quits';

-- Per queue match figures over a time_window (the view mm.match_stats is the last hour).
CREATE FUNCTION mm.match_stats(time_window interval, now timestamptz DEFAULT now())
RETURNS TABLE (queue text, matches bigint, players_per_match float8, quality_avg float8,
			   skill_spread_avg float8, team_skill_gap_avg float8, latency_avg_ms float8,
			   worst_latency_avg_ms float8, results bigint, favourite_win_rate float8,
			   favourite_predicted_rate float8, win_rate_balance_points float8, early_quits bigint,
			   early_quit_rate float8)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT q.name, m.*
	  FROM mm.metrics_scope(NULL, time_window, now) AS scope(queues)
	 CROSS JOIN LATERAL unnest(scope.queues) AS q(name)
	 CROSS JOIN LATERAL mm.match_metrics(q.name, time_window, now) AS m
	 ORDER BY q.name
$$;
COMMENT ON FUNCTION mm.match_stats(interval, timestamptz) IS
'Per queue: matches, players per match, match quality, skill spread, team skill gap, latency, win-rate balance, early quits';

CREATE VIEW mm.match_stats AS
	SELECT * FROM mm.match_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.match_stats IS 'mm.match_stats(time_window) over the last hour';

-- One row per minute [minute, minute + 1 min) from from_time's minute up to
-- to_time, for dashboards: tickets created and matched, time to match of the
-- tickets matched in that minute, matches formed and their quality, timeouts,
-- cancellations, and the tickets still searching at the end of the minute.
CREATE OR REPLACE FUNCTION mm.queue_stats_by_minute(queue text, from_time timestamptz, to_time timestamptz)
RETURNS TABLE (minute timestamptz, tickets_created bigint, tickets_matched bigint,
			   time_to_match_avg_s float8, time_to_match_p95_s float8, matches bigint,
			   quality_avg float8, timeouts bigint, cancellations bigint, searching_at_end bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	WITH r AS MATERIALIZED (
		SELECT * FROM mm.metrics_minutes(queue_stats_by_minute.queue, from_time, to_time)
	), minutes AS (
		SELECT g AS minute
		  FROM r CROSS JOIN LATERAL generate_series(r.first_minute, r.last_end - '1 minute'::interval,
													'1 minute'::interval) g
	), created AS (
		SELECT date_trunc('minute', t.created_at) AS minute, count(*) AS n
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue
		   AND t.created_at >= r.first_minute AND t.created_at < r.last_end
		 GROUP BY 1
	), matched AS (
		SELECT date_trunc('minute', t.matched_at) AS minute, count(*) AS n,
			   avg((extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8) AS wait_avg,
			   percentile_cont(0.95) WITHIN GROUP (ORDER BY (extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8) AS wait_p95
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue
		   AND t.matched_at >= r.first_minute AND t.matched_at < r.last_end
		 GROUP BY 1
	), formed AS (
		SELECT date_trunc('minute', m.created_at) AS minute, count(*) AS n, avg(m.quality) AS quality
		  FROM r, mm.matches m
		 WHERE m.queue = queue_stats_by_minute.queue
		   AND m.created_at >= r.first_minute AND m.created_at < r.last_end
		 GROUP BY 1
	), ended AS (
		SELECT date_trunc('minute', t.updated_at) AS minute,
			   count(*) FILTER (WHERE t.status = 'timed_out') AS timeouts,
			   count(*) FILTER (WHERE t.status = 'cancelled') AS cancellations
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at >= r.first_minute AND t.updated_at < r.last_end
		 GROUP BY 1
	), alive AS (
		-- tickets searching at the end of some minute of the range: created
		-- before its end, ended (matched, cancelled, timed out) after the first
		-- minute's end or not at all; each read through an index
		SELECT t.created_at, NULL::timestamptz AS ended_at
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('searching', 'proposed')
		   AND t.created_at < r.last_end
		UNION ALL
		SELECT t.created_at, t.matched_at
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.matched_at IS NOT NULL
		   AND t.matched_at >= r.first_minute + '1 minute'::interval AND t.created_at < r.last_end
		UNION ALL
		SELECT t.created_at, t.updated_at
		  FROM r, mm.tickets t
		 WHERE t.queue = queue_stats_by_minute.queue AND t.status IN ('cancelled', 'timed_out')
		   AND t.updated_at >= r.first_minute + '1 minute'::interval AND t.created_at < r.last_end
	), depth_change AS (
		-- +1 in the minute a ticket arrives (or the first minute), -1 in the one it leaves
		SELECT d.minute, sum(d.change) AS change
		  FROM (SELECT greatest(r.first_minute, date_trunc('minute', a.created_at)) AS minute, 1 AS change
				  FROM r, alive a
				UNION ALL
				SELECT date_trunc('minute', a.ended_at), -1
				  FROM r, alive a WHERE a.ended_at < r.last_end) d
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
	 ORDER BY mi.minute
$$;
COMMENT ON FUNCTION mm.queue_stats_by_minute(text, timestamptz, timestamptz) IS
'Per minute of a queue, for dashboards: tickets created and matched, time to match, matches, match quality, timeouts, cancellations, queue depth';

-- What players may see about a queue: the searching players (when the
-- queue's statistics.show_player_count is true) and an estimated wait for a
-- new ticket (when statistics.show_time_to_match is true): the median time to
-- match of the tickets matched in the last 15 minutes, in whole seconds.
CREATE OR REPLACE FUNCTION mm.queue_statistics(queue text, now timestamptz DEFAULT now())
RETURNS TABLE (players_searching bigint, estimated_wait_s float8)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT CASE WHEN f.show_player_count THEN
				(SELECT coalesce(sum(jsonb_array_length(a.players)), 0)
				   FROM mm.tickets_searching_at(ARRAY[queue_statistics.queue], now) a) END,
		   CASE WHEN f.show_time_to_match THEN
				(SELECT round(percentile_cont(0.5) WITHIN GROUP (
							  ORDER BY (extract(epoch FROM t.matched_at) - extract(epoch FROM t.created_at))::float8))
				   FROM mm.tickets t
				  WHERE t.queue = queue_statistics.queue
					AND t.matched_at > now - '15 minutes'::interval AND t.matched_at <= now) END
	  FROM mm.metrics_scope(queue_statistics.queue, '15 minutes', now, true) AS scope(queues)
	 CROSS JOIN LATERAL (
		SELECT coalesce((q.config #>> '{statistics,show_player_count}')::boolean, false) AS show_player_count,
			   coalesce((q.config #>> '{statistics,show_time_to_match}')::boolean, false) AS show_time_to_match
		  FROM mm.queues q
		 WHERE q.name = ANY (scope.queues)
		OFFSET 0) f
$$;
COMMENT ON FUNCTION mm.queue_statistics(text, timestamptz) IS
'What players may see about a queue: searching players and estimated wait, as the queue''s statistics flags allow';

-- The analysts' report: one row per figure with what it measures, its value
-- (rounded to 3 decimals), the target and whether it is met.  The targets
-- are arguments (NULL: no target); meets_target is NULL when the figure has
-- no data or no target.  Targets are inclusive: "at least" (>=) for the
-- match quality and the share matched within 2 minutes, "at most" (<=) for
-- the others.
CREATE FUNCTION mm.health_report(queue text DEFAULT NULL, time_window interval DEFAULT '1 hour',
								 now timestamptz DEFAULT now(),
								 min_quality float8 DEFAULT 0.5,
								 max_time_to_match_p95_s float8 DEFAULT 60,
								 min_matched_within_2_min_pct float8 DEFAULT 95,
								 max_latency_avg_ms float8 DEFAULT 60,
								 max_early_quit_pct float8 DEFAULT 5,
								 max_win_rate_gap_points float8 DEFAULT 5)
RETURNS TABLE (metric text, measures text, value numeric, target text, meets_target boolean)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
	SELECT r.metric, r.measures, round(r.value::numeric, 3),
		   r.op || ' ' || r.bound::text,
		   -- judged on the value shown: 0.4996 shows as 0.500 and meets ">= 0.5"
		   CASE r.op WHEN '>=' THEN round(r.value::numeric, 3) >= r.bound
					 WHEN '<=' THEN round(r.value::numeric, 3) <= r.bound END
	  FROM mm.ticket_metrics(health_report.queue, time_window, now) t
	 CROSS JOIN mm.match_metrics(health_report.queue, time_window, now) m
	 CROSS JOIN LATERAL (VALUES
		(1, 'match quality', 'the tick''s match quality (0..1), average over the matches formed',
		 m.quality_avg, '>=', mm.metrics_check_target('min_quality', min_quality, 1)),
		(2, 'time to match p95 (s)', '95th percentile of created-to-matched time of the tickets matched',
		 t.time_to_match_p95_s, '<=',
		 mm.metrics_check_target('max_time_to_match_p95_s', max_time_to_match_p95_s)),
		(3, 'matched within 2 minutes (%)', 'share of the tickets created that were matched within 120 s',
		 100 * t.fill_rate, '>=',
		 mm.metrics_check_target('min_matched_within_2_min_pct', min_matched_within_2_min_pct, 100)),
		(4, 'average latency (ms)', 'players'' latency to their match''s region, average over the matches',
		 m.latency_avg_ms, '<=', mm.metrics_check_target('max_latency_avg_ms', max_latency_avg_ms)),
		(5, 'early quits (%)', 'share of the players of reported matches who left in the first 20% of the match',
		 100 * m.early_quit_rate, '<=', mm.metrics_check_target('max_early_quit_pct', max_early_quit_pct, 100)),
		(6, 'win-rate balance (points)', 'gap between how often the predicted favourite won and its predicted chance',
		 m.win_rate_balance_points, '<=',
		 mm.metrics_check_target('max_win_rate_gap_points', max_win_rate_gap_points, 100)),
		(7, 'skill spread', 'highest minus lowest player skill in a match, average over the matches',
		 m.skill_spread_avg, NULL, NULL),
		(8, 'team skill gap', 'highest minus lowest team average skill in a match, average over the matches',
		 m.team_skill_gap_avg, NULL, NULL),
		(9, 'worst latency (ms)', 'highest player latency to the match''s region, average over the matches',
		 m.worst_latency_avg_ms, NULL, NULL),
		(10, 'matches formed', 'matches formed in the window', m.matches::float8, NULL, NULL),
		(11, 'tickets matched', 'tickets matched in the window', t.tickets_matched::float8, NULL, NULL),
		(12, 'time to match average (s)', 'average created-to-matched time of the tickets matched',
		 t.time_to_match_avg_s, NULL, NULL),
		(13, 'players searching', 'players in searching tickets at now', t.searching_players::float8, NULL, NULL),
		(14, 'timeouts', 'tickets timed out in the window', t.timeouts::float8, NULL, NULL),
		(15, 'cancellations', 'tickets cancelled in the window', t.cancellations::float8, NULL, NULL),
		(16, 'results reported', 'match results reported in the window', m.results::float8, NULL, NULL))
		AS r (n, metric, measures, value, op, bound)
	 ORDER BY r.n
$$;
COMMENT ON FUNCTION mm.health_report(text, interval, timestamptz, float8, float8, float8, float8, float8, float8) IS
'The analysts'' report: each matchmaking health figure, what it measures, its target (arguments with defaults) and whether it is met';

-- Analysts read the metrics (mm_admin through membership); 90_privileges.sql
-- revokes the rest from PUBLIC.  The argument-check helpers run as part of
-- the metrics, so the same role may call them.
GRANT EXECUTE ON FUNCTION
	mm.metrics_scope(text, interval, timestamptz, boolean, text),
	mm.metrics_minutes(text, timestamptz, timestamptz),
	mm.metrics_check_target(text, float8, float8),
	mm.match_player_values(bigint, text, text),
	mm.result_winner(text, jsonb),
	mm.ticket_metrics(text, interval, timestamptz),
	mm.queue_stats(interval, timestamptz),
	mm.match_details(text, interval, timestamptz, text),
	mm.match_metrics(text, interval, timestamptz),
	mm.match_stats(interval, timestamptz),
	mm.queue_stats_by_minute(text, timestamptz, timestamptz),
	mm.queue_statistics(text, timestamptz),
	mm.health_report(text, interval, timestamptz, float8, float8, float8, float8, float8, float8)
	TO mm_analyst;
GRANT SELECT ON mm.queue_stats, mm.match_stats TO mm_analyst;
-- The metrics are not SECURITY DEFINER: they read as the caller, so the
-- role needs SELECT on the tables they read (granted in 90_privileges.sql).

-- ===================================================================
-- Section: custom match functions (src/match_function.c)
-- ===================================================================
--
-- A queue's config may name "match_function": "schema.function", a function
-- (queue text, tickets jsonb, now timestamptz) RETURNS SETOF jsonb that
-- proposes the queue's matches; the C evaluator checks the proposals and
-- commits the best non-overlapping ones.  Only mm_admin writes queues.

CREATE FUNCTION mm.match_function_stats()
RETURNS TABLE (queue text, proposals integer, accepted integer, rejected_malformed integer,
			   rejected_stale integer, rejected_teams integer, rejected_rules integer,
			   rejected_overlap integer)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'mm_match_function_stats';
COMMENT ON FUNCTION mm.match_function_stats() IS
'Per queue with a match function, what this session''s last mm.tick() got: proposals, accepted, and rejected by reason';
GRANT EXECUTE ON FUNCTION mm.match_function_stats() TO mm_admin, mm_analyst;
-- A config naming a match function is checked against the catalog: the
-- functions that parse a config read it, so they are not immutable.
ALTER FUNCTION mm.validate_queue_config(jsonb) STABLE;
ALTER FUNCTION mm.rule_threshold(jsonb, text, float8) STABLE;

-- ===================================================================
-- Section: why is my ticket waiting (docs/tick.md, "Rule statistics")
-- ===================================================================

-- The search counts, per rule, the candidate checks that passed and failed;
-- the tick adds them here once per tick of a queue (one statement).
CREATE TABLE mm.rule_evaluations (
	queue text NOT NULL,
	rule text NOT NULL,
	last_tick_at timestamptz NOT NULL,
	last_passed bigint NOT NULL,
	last_failed bigint NOT NULL,
	total_passed bigint NOT NULL,
	total_failed bigint NOT NULL,
	-- the totals count since this time (the first tick counted, or mm.reset_rule_stats)
	counting_since timestamptz NOT NULL,
	PRIMARY KEY (queue, rule)
);
COMMENT ON TABLE mm.rule_evaluations IS
	'Per queue and rule: candidate checks passed and failed in the last tick and since a reset';
SELECT pg_catalog.pg_extension_config_dump('mm.rule_evaluations', '');

-- A dropped queue's counts go with it (a queue created again under the name
-- starts from none).
CREATE FUNCTION mm.queues_after_delete_rule_stats() RETURNS trigger
	LANGUAGE plpgsql
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	DELETE FROM mm.rule_evaluations e USING old_queues o WHERE e.queue = o.name;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.queues_after_delete_rule_stats() IS
	'Trigger: deletes the rule statistics of deleted queues';
REVOKE ALL ON FUNCTION mm.queues_after_delete_rule_stats() FROM PUBLIC;
CREATE TRIGGER queues_after_delete_rule_stats AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_rule_stats();

-- The counts of the queues' current rules.
CREATE VIEW mm.rule_stats AS
SELECT e.queue, e.rule, r.value OPERATOR(pg_catalog.->>) 'type' AS type,
	   e.last_tick_at, e.last_passed, e.last_failed,
	   CASE WHEN e.last_passed OPERATOR(pg_catalog.+) e.last_failed OPERATOR(pg_catalog.>) 0
			THEN pg_catalog.round(e.last_passed::numeric OPERATOR(pg_catalog./)
								  (e.last_passed OPERATOR(pg_catalog.+) e.last_failed), 4) END AS last_pass_rate,
	   e.total_passed, e.total_failed, e.counting_since
  FROM mm.rule_evaluations e
  JOIN mm.queues q ON q.name OPERATOR(pg_catalog.=) e.queue
 CROSS JOIN LATERAL pg_catalog.jsonb_array_elements(q.config OPERATOR(pg_catalog.->) 'rules') r
 WHERE r.value OPERATOR(pg_catalog.->>) 'name' OPERATOR(pg_catalog.=) e.rule;
COMMENT ON VIEW mm.rule_stats IS
	'Per queue and rule: how many candidate checks passed and failed in the last tick and since the last reset';

CREATE FUNCTION mm.reset_rule_stats(queue text, now timestamptz DEFAULT pg_catalog.now())
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n integer;
BEGIN
	PERFORM mm.check_now(reset_rule_stats.now);
	IF NOT EXISTS (SELECT FROM mm.queues q WHERE q.name = reset_rule_stats.queue) THEN
		RAISE EXCEPTION 'queue "%" does not exist', reset_rule_stats.queue USING ERRCODE = 'undefined_object';
	END IF;
	UPDATE mm.rule_evaluations e SET total_passed = 0, total_failed = 0, counting_since = reset_rule_stats.now
	 WHERE e.queue = reset_rule_stats.queue;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END
$$;
COMMENT ON FUNCTION mm.reset_rule_stats(text, timestamptz) IS
	'Starts a queue''s rule totals (mm.rule_stats) from zero; returns the rules reset';

CREATE FUNCTION mm.explain_ticket(ticket_id bigint, now timestamptz DEFAULT pg_catalog.now(),
								   queue text DEFAULT NULL)
RETURNS jsonb
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'mm_explain_ticket';
COMMENT ON FUNCTION mm.explain_ticket(bigint, timestamptz, text) IS
	'Why a searching ticket waits in its queue (or in another queue it searches in): each rule''s threshold now and when it widens, how many searching tickets pass it, what blocks the nearest candidates, the estimated wait';

GRANT SELECT ON mm.rule_stats TO mm_analyst;
GRANT EXECUTE ON FUNCTION mm.reset_rule_stats(text, timestamptz) TO mm_admin;
GRANT EXECUTE ON FUNCTION mm.explain_ticket(bigint, timestamptz, text) TO mm_frontend, mm_director, mm_analyst;

-- ===================================================================
-- Section: queue functions in one style
-- ===================================================================
--
-- The install script's style: a function that sets its search_path writes
-- plain operators and functions; only what runs without one (views, index
-- predicates, constraints, DO blocks) qualifies them.  These two 0.2
-- functions qualified both; same behaviour.

CREATE OR REPLACE FUNCTION mm.alter_queue(name text, config jsonb) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF alter_queue.name IS NULL THEN
		RAISE EXCEPTION 'queue name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	UPDATE mm.queues q SET config = alter_queue.config
	 WHERE q.name = alter_queue.name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', alter_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;
END
$$;
CREATE OR REPLACE FUNCTION mm.drop_queue(name text, force boolean DEFAULT false) RETURNS void
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	active_count bigint;
	cancelled_ids bigint[];
	proposed_match bigint;
BEGIN
	IF drop_queue.name IS NULL THEN
		RAISE EXCEPTION 'queue name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- FOR UPDATE also blocks new tickets (their validation locks the row FOR KEY SHARE)
	PERFORM FROM mm.queues q WHERE q.name = drop_queue.name FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'queue "%" does not exist', drop_queue.name
			USING ERRCODE = 'undefined_object';
	END IF;
	-- and waits for the running ticks of the other queues its tickets search
	-- in (a tick holds its queue FOR SHARE): one of them may be proposing one
	-- of its tickets, and the statements below must see that match
	PERFORM FROM mm.queues q
	 WHERE q.name IN (SELECT l.queue FROM mm.ticket_queues l
					   JOIN mm.tickets_active t ON t.id = l.ticket_id
					  WHERE t.queue = drop_queue.name)
	 ORDER BY q.name FOR UPDATE;

	-- a proposed match of the queue may hold tickets of other queues (and
	-- the queue's tickets may be proposed in other queues' matches)
	SELECT count(*) INTO active_count FROM mm.tickets_active t
	 WHERE t.queue = drop_queue.name
		OR t.match_id IN (SELECT m.id FROM mm.matches m
						   WHERE m.queue = drop_queue.name AND m.status = 'proposed');
	IF active_count > 0 THEN
		IF NOT coalesce(drop_queue.force, false) THEN
			RAISE EXCEPTION 'queue "%" still has active tickets', drop_queue.name
				USING ERRCODE = 'object_in_use',
					  DETAIL = format('%s searching or proposed ticket(s) block dropping the queue.',
									  active_count),
					  HINT = 'Cancel them first, or call mm.drop_queue(name, force => true) to cancel them.';
		END IF;
		-- the proposed matches the queue takes part in are cancelled first:
		-- the queue's tickets in them are cancelled, the others search again
		-- in their own queues (none is left proposed in a match that goes
		-- away, no match goes on without its tickets)
		FOR proposed_match IN
			SELECT m.id FROM mm.matches m
			 WHERE m.status = 'proposed'
			   AND (m.queue = drop_queue.name
					OR m.id IN (SELECT t.match_id FROM mm.tickets_active t
								 WHERE t.queue = drop_queue.name AND t.status = 'proposed'))
			 ORDER BY m.id FOR UPDATE
		LOOP
			PERFORM mm.cancel_proposed_match(proposed_match, 'queue_dropped',
				ARRAY(SELECT t.id FROM mm.tickets_active t
					   WHERE t.match_id = proposed_match AND t.queue = drop_queue.name),
				now());
		END LOOP;
		-- cancel them all in one statement (the queue row lock keeps new
		-- tickets out; a ticket locked by a tick is waited for), then tell
		-- every client in ticket_cancelled events split under 8000 bytes
		SELECT array_agg(c.id ORDER BY c.id) INTO cancelled_ids
		  FROM mm.end_tickets(ARRAY(SELECT t.id FROM mm.tickets_active t
									 WHERE t.queue = drop_queue.name
									 ORDER BY t.id FOR UPDATE),
							  'cancelled', now()) AS c(id);
		IF cancelled_ids IS NOT NULL THEN
			PERFORM mm.notify_ticket_event('ticket_cancelled', drop_queue.name, cancelled_ids);
		END IF;
	END IF;

	-- tickets, matches and everything hanging off them go with the queue
	-- (mm.queues_after_delete)
	DELETE FROM mm.queues q WHERE q.name = drop_queue.name;
END
$$;

-- ===================================================================
-- Section: privileges (last: covers every function made above)
-- ===================================================================
--
-- Nothing is open to PUBLIC but the pure rating functions and the event
-- signature check.  The roles of 05_roles.sql get what their work needs;
-- the functions of each fragment carry their own grants next to them.

REVOKE ALL ON ALL ROUTINES IN SCHEMA mm FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA mm FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA mm FROM PUBLIC;
-- The schema itself is open, so that any role can call the pure functions
-- granted to PUBLIC below (mm.verify_event for every listener); every other
-- object in it is closed.
GRANT USAGE ON SCHEMA mm TO PUBLIC;

-- mm_frontend: tickets through functions only.  create_ticket and
-- cancel_ticket run as the extension's owner, so the role needs no privilege
-- on the tables (the validation and claim triggers run as the owner too).
ALTER FUNCTION mm.create_ticket(text, jsonb, timestamptz) SECURITY DEFINER;
ALTER FUNCTION mm.cancel_ticket(bigint) SECURITY DEFINER;
GRANT EXECUTE ON FUNCTION mm.create_ticket(text, jsonb, timestamptz), mm.cancel_ticket(bigint)
	TO mm_frontend;

-- mm_director: reads matches; its writes go through the lifecycle functions.
GRANT SELECT ON mm.matches, mm.match_players, mm.match_results, mm.backfill_requests TO mm_director;

-- mm_analyst: reads everything but the event key, writes nothing.
GRANT SELECT ON ALL TABLES IN SCHEMA mm TO mm_analyst;
REVOKE ALL ON mm.event_key FROM mm_analyst;

-- mm_admin: runs the matchmaker (queues, ticks, schedules, retention,
-- rating pools) and may bulk-load tickets with INSERT or COPY: every table
-- but the event key, every routine (the tick and the scheduled jobs run as
-- the role that scheduled them, and call the internal ones).
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA mm TO mm_admin;
REVOKE ALL ON mm.event_key FROM mm_admin;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA mm TO mm_admin;
GRANT EXECUTE ON ALL ROUTINES IN SCHEMA mm TO mm_admin;

-- The functions of 0.2 kept by 0.3 for PUBLIC (the pure functions of their
-- arguments: ratings, balancing, event verification) and the analysts; a
-- function a fragment replaced under another signature is granted there.
DO $grants$
DECLARE
	g record;
BEGIN
	FOR g IN
		SELECT f.signature, f.role_name
		  FROM (VALUES
			('mm.elo_expected(float8, float8)', 'PUBLIC'),
			('mm.elo_update(float8, float8, float8, float8)', 'PUBLIC'),
			('mm.elo_k_factor(integer, float8)', 'PUBLIC'),
			('mm.glicko2_update(float8, float8, float8, float8[], float8[], float8[], float8)', 'PUBLIC'),
			('mm.glicko2_decay(float8, float8, float8, integer)', 'PUBLIC'),
			('mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8)', 'PUBLIC'),
			('mm.glicko2_period_transition(internal, float8, float8, float8, float8, float8, float8, float8)', 'PUBLIC'),
			('mm.glicko2_period_combine(internal, internal)', 'PUBLIC'),
			('mm.glicko2_period_serialize(internal)', 'PUBLIC'),
			('mm.glicko2_period_deserialize(bytea, internal)', 'PUBLIC'),
			('mm.glicko2_period_final(internal)', 'PUBLIC'),
			('mm.glicko2_period(float8, float8, float8, float8, float8, float8)', 'PUBLIC'),
			('mm.glicko2_period(float8, float8, float8, float8, float8, float8, float8)', 'PUBLIC'),
			('mm.team_rating_transition(float8[], float8, float8)', 'PUBLIC'),
			('mm.team_rating_combine(float8[], float8[])', 'PUBLIC'),
			('mm.team_rating_final(float8[])', 'PUBLIC'),
			('mm.team_rating(float8, float8)', 'PUBLIC'),
			('mm.win_probability(float8[], float8[])', 'PUBLIC'),
			('mm.smurf_score(integer, float8, float8, float8, float8[], float8)', 'PUBLIC'),
			('mm.rating_boost(float8, integer)', 'PUBLIC'),
			('mm.balance_teams(float8[], integer, integer[])', 'PUBLIC'),
			('mm.openskill_rate(float8[], float8[], integer[], integer[])', 'PUBLIC'),
			('mm.openskill_predict_win(float8[], float8[], integer[])', 'PUBLIC'),
			('mm.verify_event(text)', 'PUBLIC'),
			('mm.ticket_metrics(text, interval, timestamptz)', 'mm_analyst'),
			('mm.queue_stats(interval, timestamptz)', 'mm_analyst'),
			('mm.match_details(text, interval, timestamptz)', 'mm_analyst'),
			('mm.match_metrics(text, interval, timestamptz)', 'mm_analyst'),
			('mm.match_stats(interval, timestamptz)', 'mm_analyst'),
			('mm.queue_stats_by_minute(text, timestamptz, timestamptz)', 'mm_analyst'),
			('mm.queue_statistics(text, timestamptz)', 'mm_analyst'),
			('mm.health_report(text, interval, timestamptz)', 'mm_analyst'),
			('mm.metrics_check_window(interval, timestamptz)', 'mm_analyst'),
			('mm.metrics_queues(text)', 'mm_analyst'),
			('mm.result_winner(text, jsonb)', 'mm_analyst'),
			('mm.match_player_values(bigint, text, text)', 'mm_analyst')
		  ) AS f(signature, role_name)
		 WHERE pg_catalog.to_regprocedure(f.signature) IS NOT NULL
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON ROUTINE %s TO %s',
								  pg_catalog.to_regprocedure(g.signature),
								  CASE g.role_name WHEN 'PUBLIC' THEN 'PUBLIC'
												   ELSE pg_catalog.quote_ident(g.role_name) END);
	END LOOP;
END
$grants$;
GRANT SELECT ON mm.queue_stats, mm.match_stats, mm.schedules TO mm_analyst;

