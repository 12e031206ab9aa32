-- pg_temp.config_error(config) (\i sql/include/config_error.sql, from the
-- tree's top, where pg_regress runs): a queue config's error as a client
-- sees it ("SQLSTATE: message"), or 'ok'.
CREATE FUNCTION pg_temp.config_error(config jsonb) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM mm.validate_queue_config(config);
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
