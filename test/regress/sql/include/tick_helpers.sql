-- Helpers the tick_*.sql files share (\i sql/include/tick_helpers.sql, from
-- the tree's top, where pg_regress runs): the matches of a queue as text:
-- region, quality, rule steps and players (team:player, tickets in the
-- order the tick took them).
CREATE FUNCTION pg_temp.matches(q text)
RETURNS TABLE (n bigint, region text, quality numeric, rule_steps jsonb, players text)
LANGUAGE sql AS $$
	SELECT row_number() OVER (ORDER BY m.id), m.region, round(m.quality::numeric, 4), m.rule_steps,
		   (SELECT string_agg(coalesce(mp.team || ':', '') || mp.player_id, ' '
							  ORDER BY mp.team, mp.ticket_id, mp.player_id)
			  FROM mm.match_players mp WHERE mp.match_id = m.id)
	  FROM mm.matches m WHERE m.queue = q ORDER BY m.id
$$;
