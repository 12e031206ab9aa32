
-- ===================================================================
-- Section: a match function runs as the role that named it
-- ===================================================================
--
-- User code never runs with the ticker's rights: the tick calls a queue's
-- match function as the role stored here, in a security-restricted
-- operation with search_path pg_catalog, pg_temp.  The queues_validate
-- trigger keeps it: the writer who names (or changes) the function becomes
-- its role and must be able to call it; a role named in the row is kept only
-- when the writer has its privileges (a pg_dump restore).

ALTER TABLE mm.queues ADD COLUMN match_function_role text;
COMMENT ON COLUMN mm.queues.match_function_role IS
	'The role the queue''s match_function runs as: the role that named it (set by the queues_validate trigger)';

-- A match function named before 0.4 runs as the function's owner: who named
-- it was not recorded, and the owner could always run it with its own rights.
-- (Without the trigger: the configs are not changed, updated_at stays.)
ALTER TABLE mm.queues DISABLE TRIGGER queues_validate;
UPDATE mm.queues q
   SET match_function_role = pg_catalog.pg_get_userbyid(p.proowner)
  FROM pg_catalog.pg_proc p
 WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure(
		   (q.config OPERATOR(pg_catalog.->>) 'match_function')
		   OPERATOR(pg_catalog.||) '(text, jsonb, timestamptz)');
ALTER TABLE mm.queues ENABLE TRIGGER queues_validate;
