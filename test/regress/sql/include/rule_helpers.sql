-- Helpers the rule_*.sql files share (\i sql/include/rule_helpers.sql, from
-- the tree's top, where pg_regress runs):
-- a queue's matches (quality, steps, players by team), its searching
-- tickets oldest first, and a config's error as a client sees it.
CREATE FUNCTION pg_temp.matches(q text)
RETURNS TABLE (n bigint, quality numeric, rule_steps jsonb, players text)
LANGUAGE sql AS $$
	SELECT row_number() OVER (ORDER BY m.id), round(m.quality::numeric, 4), m.rule_steps,
		   (SELECT string_agg(coalesce(mp.team || ':', '') || mp.player_id, ' '
							  ORDER BY mp.team, mp.player_id)
			  FROM mm.match_players mp WHERE mp.match_id = m.id)
	  FROM mm.matches m WHERE m.queue = q ORDER BY m.id
$$;
\i sql/include/searching.sql
\i sql/include/config_error.sql
