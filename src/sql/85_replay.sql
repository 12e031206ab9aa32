-- ===================================================================
-- What-if: a queue's recorded tickets replayed against a config (src/replay.c)
-- ===================================================================
--
-- mm.replay and mm.replay_matches only read: they write nothing, send no
-- event and take no lock a tick waits on, so they run in a read-only
-- transaction and on a standby.  docs/metrics.md, "What-if: replay".

CREATE FUNCTION mm.replay_matches(queue text, config jsonb, from_time timestamptz, to_time timestamptz,
								  tick_every interval DEFAULT '1 second')
RETURNS TABLE (match_number integer, formed_at timestamptz, quality float8, tickets bigint[], players jsonb,
			   ready_at timestamptz)
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'mm_replay_matches';
COMMENT ON FUNCTION mm.replay_matches(text, jsonb, timestamptz, timestamptz, interval) IS
	'The matches a replay of the queue''s tickets recorded in [from_time, to_time) forms with config (NULL: the queue''s own), ticking every tick_every: one row per match (a proposal its acceptance step cancelled is none) with its tickets, players (team, role) and when it was ready';
REVOKE ALL ON FUNCTION mm.replay_matches(text, jsonb, timestamptz, timestamptz, interval) FROM PUBLIC;
-- A replay reads every recorded ticket (a rule can test any attribute):
-- only the roles that may read the tickets may run one.
GRANT EXECUTE ON FUNCTION mm.replay_matches(text, jsonb, timestamptz, timestamptz, interval)
	TO mm_analyst, mm_admin;

-- The replay's figures (mm.replay sets them beside the recorded ones).
CREATE FUNCTION mm.replay_figures(queue text, config jsonb, from_time timestamptz, to_time timestamptz,
								  tick_every interval)
RETURNS jsonb
LANGUAGE C VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'mm_replay_summary';
COMMENT ON FUNCTION mm.replay_figures(text, jsonb, timestamptz, timestamptz, interval) IS
	'Internal: the figures of a replay, for mm.replay';
REVOKE ALL ON FUNCTION mm.replay_figures(text, jsonb, timestamptz, timestamptz, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.replay_figures(text, jsonb, timestamptz, timestamptz, interval) TO mm_admin;

-- What was recorded for the same tickets, in the replay's figures' shape;
-- skill_attribute: the dotted path the skill figures read (the replay's
-- first difference or team_difference rule's), NULL: none.
CREATE FUNCTION mm.recorded_figures(queue text, from_time timestamptz, to_time timestamptz,
									skill_attribute text)
RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	WITH t AS (
		SELECT t.id, t.status, t.match_id, t.players,
			   EXTRACT(epoch FROM t.matched_at - t.created_at) AS wait
		  FROM mm.tickets t
		 WHERE t.queue = recorded_figures.queue
		   AND t.created_at >= recorded_figures.from_time AND t.created_at < recorded_figures.to_time),
	-- the matches: formed and not cancelled while proposed (a matched
	-- ticket's match passed acceptance, or had none), as mm.match_stats
	-- counts them
	m AS (
		SELECT m.id, m.quality FROM mm.matches m
		 WHERE m.queue = recorded_figures.queue
		   AND m.id IN (SELECT t.match_id FROM t WHERE t.status = 'matched')),
	-- the proposals of these tickets cancelled before every player accepted
	-- (a cancelled ticket keeps no match id: found by its match players)
	pc AS (
		SELECT m.id FROM mm.matches m
		 WHERE m.queue = recorded_figures.queue AND m.status = 'cancelled' AND m.ready_at IS NULL
		   AND m.updated_at >= recorded_figures.from_time
		   AND EXISTS (SELECT FROM mm.match_players mp
						WHERE mp.queue = m.queue AND mp.match_id = m.id
						  AND mp.ticket_id IN (SELECT t.id FROM t))),
	-- the matches' players, with their skill value and their list's first role
	p AS (
		SELECT mp.match_id, mp.team, mp.role,
			   -- as the metrics read it
			   mm.metrics_number(e.value -> 'attributes' #> string_to_array(recorded_figures.skill_attribute, '.'))
				   AS skill,
			   coalesce(e.value -> 'roles' ->> 0, 'fill') AS first_role
		  FROM mm.match_players mp
		  JOIN mm.tickets tk ON tk.id = mp.ticket_id
		  CROSS JOIN LATERAL jsonb_array_elements(tk.players) e
		 WHERE mp.queue = recorded_figures.queue AND mp.match_id IN (SELECT m.id FROM m)
		   AND e.value ->> 'id' = mp.player_id),
	spread AS (
		SELECT max(p.skill) - min(p.skill) AS spread FROM p GROUP BY p.match_id HAVING count(p.skill) > 0),
	gap AS (
		SELECT max(a.avg) - min(a.avg) AS gap
		  FROM (SELECT p.match_id, avg(p.skill) AS avg FROM p WHERE p.team IS NOT NULL AND p.skill IS NOT NULL
				 GROUP BY p.match_id, p.team) a
		 GROUP BY a.match_id HAVING count(*) > 1)
	SELECT jsonb_build_object(
		'tickets', (SELECT count(*) FROM t),
		'matched', (SELECT count(*) FROM t WHERE t.status = 'matched'),
		'matched_share', (SELECT round(avg((t.status = 'matched')::int)::numeric, 3) FROM t),
		'time_to_match_p50', (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t.wait)::numeric, 3)
								FROM t WHERE t.status = 'matched'),
		'time_to_match_p95', (SELECT round(percentile_cont(0.95) WITHIN GROUP (ORDER BY t.wait)::numeric, 3)
								FROM t WHERE t.status = 'matched'),
		'time_to_match_max', (SELECT round(max(t.wait)::numeric, 3) FROM t WHERE t.status = 'matched'),
		'timed_out', (SELECT count(*) FROM t WHERE t.status = 'timed_out'),
		'cancelled', (SELECT count(*) FROM t WHERE t.status = 'cancelled'),
		'still_searching', (SELECT count(*) FROM t WHERE t.status IN ('searching', 'proposed')),
		'matches', (SELECT count(*) FROM m),
		'proposals_cancelled', (SELECT count(*) FROM pc),
		'quality_mean', (SELECT round(avg(m.quality)::numeric, 3) FROM m),
		'quality_p10', (SELECT round(percentile_cont(0.1) WITHIN GROUP (ORDER BY m.quality)::numeric, 3) FROM m),
		'skill_attribute', recorded_figures.skill_attribute,
		'skill_spread_mean', (SELECT round(avg(spread.spread)::numeric, 3) FROM spread),
		'team_gap_mean', (SELECT round(avg(gap.gap)::numeric, 3) FROM gap))
	|| coalesce((SELECT jsonb_build_object('roles', jsonb_object_agg(r.role, jsonb_build_object(
					'players', r.players, 'first_choice_share', r.first_share)))
				   FROM (SELECT p.role, count(*) AS players,
								round(avg((p.first_role IN (p.role, 'fill'))::int)::numeric, 3) AS first_share
						   FROM p WHERE p.role IS NOT NULL GROUP BY p.role) r
				  HAVING count(*) > 0), '{}')
$$;
COMMENT ON FUNCTION mm.recorded_figures(text, timestamptz, timestamptz, text) IS
	'Internal: what happened to the queue''s tickets recorded in [from_time, to_time), for mm.replay';
REVOKE ALL ON FUNCTION mm.recorded_figures(text, timestamptz, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.recorded_figures(text, timestamptz, timestamptz, text) TO mm_admin;

CREATE FUNCTION mm.replay(queue text, config jsonb, from_time timestamptz, to_time timestamptz,
						  tick_every interval DEFAULT '1 second')
RETURNS jsonb
LANGUAGE sql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT jsonb_build_object(
		'queue', replay.queue, 'from_time', replay.from_time, 'to_time', replay.to_time,
		'tick_every', replay.tick_every, 'config', CASE WHEN replay.config IS NULL THEN 'current' ELSE 'given' END,
		'replay', mm.replay_figures(replay.queue, replay.config, replay.from_time, replay.to_time,
									replay.tick_every),
		'recorded', mm.recorded_figures(replay.queue, replay.from_time, replay.to_time,
			(SELECT r.value ->> 'attribute'
			   FROM jsonb_array_elements(coalesce(replay.config,
						(SELECT q.config FROM mm.queues q WHERE q.name = replay.queue)) -> 'rules')
					WITH ORDINALITY AS r(value, ord)
			  WHERE r.value ->> 'type' IN ('difference', 'team_difference')
			  ORDER BY r.ord LIMIT 1)))
$$;
COMMENT ON FUNCTION mm.replay(text, jsonb, timestamptz, timestamptz, interval) IS
	'What-if: the queue''s tickets recorded in [from_time, to_time) replayed against config (NULL: the queue''s own) in simulated time, ticking every tick_every, beside what really happened to them; writes nothing';
REVOKE ALL ON FUNCTION mm.replay(text, jsonb, timestamptz, timestamptz, interval) FROM PUBLIC;
-- as mm.replay_matches: the roles that may read the tickets
GRANT EXECUTE ON FUNCTION mm.replay(text, jsonb, timestamptz, timestamptz, interval)
	TO mm_analyst, mm_admin;
