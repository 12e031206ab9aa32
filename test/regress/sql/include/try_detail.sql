-- pg_temp.try(query) of the ratings_*.sql files (\i sql/include/try_detail.sql,
-- from the tree's top, where pg_regress runs): catches an error and shows its
-- SQLSTATE, message and detail on one line.
CREATE FUNCTION pg_temp.try(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	detail text;
BEGIN
	EXECUTE query;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ': ' || SQLERRM
		|| CASE WHEN detail <> '' THEN ' (' || detail || ')' ELSE '' END;
END $$;
