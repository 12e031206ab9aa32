-- pg_temp.try(stmt) (\i sql/include/try.sql, from the tree's top, where
-- pg_regress runs): runs a statement and returns 'ok' or "SQLSTATE:
-- message", so that a table of cases pins both the code and the message.
CREATE FUNCTION pg_temp.try(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
