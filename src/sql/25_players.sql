-- Trusted player attributes (src/player_sources.c; docs/queues-and-tickets.md):
-- rules with "source": "player" read mm.players.attributes, which only the
-- game's servers write (mm_director, through mm.set_player_attributes), so a
-- client cannot choose them.  Tickets do not need a row here.

CREATE TABLE mm.players (
	id text PRIMARY KEY
		CONSTRAINT players_id_length CHECK (pg_catalog.length(id) OPERATOR(pg_catalog.<=) 128
											AND id OPERATOR(pg_catalog.<>) ''),
	attributes jsonb NOT NULL DEFAULT '{}',
	created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE mm.players IS 'Server-side player attributes (trusted: clients cannot write them); tickets do not need a row here';
GRANT SELECT ON TABLE mm.players TO mm_analyst;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE mm.players TO mm_admin;
SELECT pg_catalog.pg_extension_config_dump('mm.players', '');

CREATE FUNCTION mm.set_player_attributes(player_id text, attributes jsonb)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	bad_path text;
BEGIN
	IF set_player_attributes.player_id IS NULL THEN
		RAISE EXCEPTION 'player_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF set_player_attributes.player_id = ''
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
REVOKE ALL ON FUNCTION mm.set_player_attributes(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mm.set_player_attributes(text, jsonb) TO mm_director, mm_admin;
