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

CREATE FUNCTION mm.queues_validate() RETURNS trigger
	AS 'MODULE_PATHNAME', 'mm_queues_validate'
	LANGUAGE C;
COMMENT ON FUNCTION mm.queues_validate() IS
	'Trigger: validates the name and config of every write to mm.queues';

CREATE TRIGGER queues_validate BEFORE INSERT OR UPDATE ON mm.queues
	FOR EACH ROW EXECUTE FUNCTION mm.queues_validate();

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
	ticket_id bigint;
BEGIN
	-- FOR UPDATE also blocks new tickets (their foreign key check locks the row)
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
		-- cancel each like mm.cancel_ticket, so every client hears of it
		FOR ticket_id IN
			SELECT t.id FROM mm.tickets t
			 WHERE t.queue OPERATOR(pg_catalog.=) drop_queue.name
			   AND t.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed'])
			 ORDER BY t.id
		LOOP
			PERFORM mm.cancel_ticket(ticket_id);
		END LOOP;
	END IF;

	-- tickets, their players, matches and match players go with the queue
	DELETE FROM mm.queues q WHERE q.name OPERATOR(pg_catalog.=) drop_queue.name;
END
$$;
COMMENT ON FUNCTION mm.drop_queue(text, boolean) IS
	'Drops a queue with its tickets and matches; refused while tickets are active unless force cancels them';


-- ===================================================================
-- Section: tickets (src/tickets.c)
-- ===================================================================

CREATE FUNCTION mm.tickets_validate() RETURNS trigger
	AS 'MODULE_PATHNAME', 'mm_tickets_validate'
	LANGUAGE C;
COMMENT ON FUNCTION mm.tickets_validate() IS
	'Trigger: validates a new ticket''s players against its queue and sets status searching and player_count';

CREATE TRIGGER tickets_validate BEFORE INSERT ON mm.tickets
	FOR EACH ROW EXECUTE FUNCTION mm.tickets_validate();

-- Set-based, once per statement: creates the players and the ticket_players
-- rows of every ticket the statement inserted (one INSERT, a multi-row INSERT
-- or a COPY).  ON CONFLICT on the partial unique index skips a player who
-- already has an active ticket (also one committed concurrently, or one
-- earlier in the same statement); the anti-join finds who was skipped.
CREATE FUNCTION mm.tickets_after_insert() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	dup_ticket bigint;
	dup_player text;
	holder_ticket bigint;
	holder_status text;
BEGIN
	INSERT INTO mm.players (id)
	SELECT DISTINCT p.value OPERATOR(pg_catalog.->>) 'id'
	  FROM new_tickets t, pg_catalog.jsonb_array_elements(t.players) p
	ON CONFLICT (id) DO NOTHING;

	WITH new_players AS (
		SELECT t.id AS ticket_id, p.value OPERATOR(pg_catalog.->>) 'id' AS player_id, t.queue,
			   coalesce(p.value OPERATOR(pg_catalog.->) 'attributes', '{}') AS attributes,
			   coalesce(p.value OPERATOR(pg_catalog.->) 'latencies', '{}') AS latencies,
			   t.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed']) AS active,
			   p.ord
		  FROM new_tickets t, pg_catalog.jsonb_array_elements(t.players) WITH ORDINALITY p(value, ord)
	), inserted AS (
		INSERT INTO mm.ticket_players (ticket_id, player_id, queue, attributes, latencies, active)
		SELECT np.ticket_id, np.player_id, np.queue, np.attributes, np.latencies, np.active
		  FROM new_players np
		ON CONFLICT (player_id) WHERE active DO NOTHING
		RETURNING ticket_id, player_id
	)
	SELECT np.ticket_id, np.player_id INTO dup_ticket, dup_player
	  FROM new_players np
	 WHERE NOT EXISTS (SELECT FROM inserted i
						WHERE i.ticket_id OPERATOR(pg_catalog.=) np.ticket_id
						  AND i.player_id OPERATOR(pg_catalog.=) np.player_id)
	 ORDER BY np.ticket_id, np.ord
	 LIMIT 1;

	IF dup_player IS NOT NULL THEN
		SELECT tp.ticket_id, t.status INTO holder_ticket, holder_status
		  FROM mm.ticket_players tp JOIN mm.tickets t ON t.id OPERATOR(pg_catalog.=) tp.ticket_id
		 WHERE tp.player_id OPERATOR(pg_catalog.=) dup_player AND tp.active
		   AND tp.ticket_id OPERATOR(pg_catalog.<>) dup_ticket
		 ORDER BY tp.ticket_id LIMIT 1;
		IF holder_ticket IS NULL THEN
			RAISE EXCEPTION 'player "%" already has an active ticket', dup_player
				USING ERRCODE = 'unique_violation';
		END IF;
		RAISE EXCEPTION 'player "%" already has an active ticket', dup_player
			USING ERRCODE = 'unique_violation',
				  DETAIL = pg_catalog.format('Ticket %s holds the player and is %s.',
											 holder_ticket, holder_status),
				  HINT = 'A player can be in one searching or proposed ticket at a time; cancel that ticket first.';
	END IF;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_insert() IS
	'Trigger: creates the players and ticket_players rows of the inserted tickets; one active ticket per player';

CREATE TRIGGER tickets_after_insert AFTER INSERT ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_insert();

-- Keeps ticket_players.active in step with the ticket's status, for any
-- writer (the tick writes statuses in bulk): active while searching or
-- proposed.  One statement per UPDATE, whatever the number of rows.
CREATE FUNCTION mm.tickets_after_update() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	UPDATE mm.ticket_players tp
	   SET active = n.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed'])
	  FROM new_tickets n
	 WHERE tp.ticket_id OPERATOR(pg_catalog.=) n.id
	   AND tp.active IS DISTINCT FROM (n.status OPERATOR(pg_catalog.=) ANY (ARRAY['searching', 'proposed']));
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION mm.tickets_after_update() IS
	'Trigger: sets ticket_players.active from the new status of the updated tickets';

CREATE TRIGGER tickets_after_update AFTER UPDATE ON mm.tickets
	REFERENCING NEW TABLE AS new_tickets
	FOR EACH STATEMENT EXECUTE FUNCTION mm.tickets_after_update();

-- A ticket's queue and players are fixed once it exists (ticket_players
-- mirrors them); the WHEN clause keeps the tick's status updates free of it.
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
	'Trigger: refuses changes to a ticket''s queue or players';

CREATE TRIGGER tickets_refuse_change BEFORE UPDATE OF queue, players ON mm.tickets
	FOR EACH ROW
	WHEN (OLD.queue IS DISTINCT FROM NEW.queue OR OLD.players IS DISTINCT FROM NEW.players)
	EXECUTE FUNCTION mm.tickets_refuse_change();

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
	-- the triggers validate and create the players, as for a plain INSERT
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
	-- waits for a tick that holds the ticket, then sees its outcome
	SELECT t.status, t.queue INTO ticket_status, ticket_queue
	  FROM mm.tickets t WHERE t.id OPERATOR(pg_catalog.=) cancel_ticket.ticket_id
	   FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ticket % does not exist', cancel_ticket.ticket_id
			USING ERRCODE = 'undefined_object';
	END IF;
	IF ticket_status OPERATOR(pg_catalog.<>) ALL (ARRAY['searching', 'proposed']) THEN
		RETURN false;
	END IF;

	UPDATE mm.tickets t SET status = 'cancelled', updated_at = pg_catalog.now()
	 WHERE t.id OPERATOR(pg_catalog.=) cancel_ticket.ticket_id;
	-- delivered at commit only
	PERFORM pg_catalog.pg_notify('mm_events', pg_catalog.jsonb_build_object(
		'event', 'ticket_cancelled',
		'queue', ticket_queue,
		'tickets', pg_catalog.jsonb_build_array(cancel_ticket.ticket_id))::text);
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


-- ===================================================================
-- Section: scheduling (pg_cron; src/schedule*.c or SQL)
-- ===================================================================


-- ===================================================================
-- Section: metrics (views and functions for analysts)
-- ===================================================================


-- ===================================================================
-- Section: privileges
-- ===================================================================
