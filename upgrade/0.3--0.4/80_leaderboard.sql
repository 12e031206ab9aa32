-- Ranked play (48_ranked_play.sql): the leaderboard's new columns, over
-- mm.rating_pools and the standing columns of mm.ratings.

-- Per pool, every rated player by a conservative rating, the value the
-- player is very likely above: Glicko-2 rating - 2 RD, Elo the rating,
-- OpenSkill mu - 3 sigma.  Equal values share a rank.  A provisional
-- player (placement games left) is listed without a rank: the placed
-- players are ranked among themselves.  The season is the pool's running
-- one (a role pool's: its base pool's).  Analysts read it; a frontend does
-- not (it would show every player's rating).
CREATE OR REPLACE VIEW mm.leaderboard AS
SELECT s.pool, s.player_id, s.system, s.conservative_rating,
	   CASE WHEN NOT s.provisional
			THEN pg_catalog.rank() OVER (PARTITION BY s.pool, s.provisional
										 ORDER BY s.conservative_rating DESC NULLS LAST) END AS rank,
	   s.rating, s.rd, s.mu, s.sigma, s.games, s.wins, s.updated_at,
	   s.provisional, s.placement_games_left, s.tier, s.division, s.tier_progress, s.season, s.season_games
  FROM (SELECT r.pool, r.player_id, r.rating, r.rd, r.mu, r.sigma, r.games, r.wins, r.updated_at,
			   r.placement_games_left OPERATOR(pg_catalog.>) 0 AS provisional, r.placement_games_left,
			   r.tier, r.division, r.tier_progress, r.season_games,
			   coalesce(own.season, base.season) AS season,
			   CASE WHEN r.rating IS NOT NULL AND r.rd IS NOT NULL THEN 'glicko2'
					WHEN r.rating IS NOT NULL THEN 'elo'
					WHEN r.mu IS NOT NULL AND r.sigma IS NOT NULL THEN 'openskill' END AS system,
			   mm.conservative_rating(r.rating, r.rd, r.mu, r.sigma) AS conservative_rating
		  FROM mm.ratings r
		  LEFT JOIN mm.rating_pools own ON own.pool OPERATOR(pg_catalog.=) r.pool
		  LEFT JOIN mm.rating_pools base
				 ON base.pool OPERATOR(pg_catalog.=) pg_catalog.split_part(r.pool, '.', 1)) s;
COMMENT ON VIEW mm.leaderboard IS
'Per rating pool, every rated player by conservative rating (Glicko-2 rating - 2 RD, Elo rating, OpenSkill mu - 3 sigma), with rank among the placed players (ties share), games, wins, placement, tier, division and progress';

