
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
	INSERT INTO mm.players AS p (id, attributes)
	VALUES (set_player_attributes.player_id, set_player_attributes.attributes)
	ON CONFLICT (id) DO UPDATE SET attributes = EXCLUDED.attributes;
END
$$;
COMMENT ON FUNCTION mm.set_player_attributes(text, jsonb) IS
'Sets a player''s server-side attributes, read by rules with "source": "player" (replaces the previous ones)';
GRANT EXECUTE ON FUNCTION mm.set_player_attributes(text, jsonb) TO mm_director;
