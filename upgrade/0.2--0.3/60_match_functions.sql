
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
