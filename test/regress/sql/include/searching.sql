-- pg_temp.searching(q) (\i sql/include/searching.sql, from the tree's top,
-- where pg_regress runs): the first players of a queue's searching tickets,
-- oldest first, in one line.
CREATE FUNCTION pg_temp.searching(q text) RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(t.players -> 0 ->> 'id', ' ' ORDER BY t.created_at, t.id), '')
	  FROM mm.tickets t WHERE t.queue = q AND t.status = 'searching'
$$;
