
-- ===================================================================
-- Section: the schema mm belongs to the installing role or a superuser
-- ===================================================================
--
-- CREATE EXTENSION adopted a schema mm that already existed (0.4 refuses
-- one): its owner could rename it and put look-alike objects under the name
-- mm, which the extension's owner-rights functions would call.  The update
-- refuses such a schema until a superuser takes it over.
DO $schema$
DECLARE
	mm_owner pg_catalog.name;
	owner_is_superuser boolean;
BEGIN
	SELECT r.rolname, r.rolsuper INTO mm_owner, owner_is_superuser
	  FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
	 WHERE n.nspname OPERATOR(pg_catalog.=) 'mm';
	IF mm_owner OPERATOR(pg_catalog.<>) CURRENT_USER AND NOT owner_is_superuser THEN
		RAISE EXCEPTION 'schema "mm" is owned by role "%", which is neither the role updating the extension nor a superuser',
			mm_owner
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Its owner could replace the extension''s objects: check them, then ALTER SCHEMA mm OWNER TO a superuser and update again.';
	END IF;
END
$schema$;
