-- How the simulated outcomes moved the stored ratings (mm_sim.players: the
-- simulator's players with their hidden true skill).  psql variable `run`:
-- the simulator's --run tag.

\echo 'Players who played most: placement rating, rating now, and the true skill it chases'
SELECT id, round(true_skill) AS true_skill, round(initial_rating) AS placed,
       round(rating) AS rating, round(rating - initial_rating) AS change,
       round(rd) AS rd, games, wins
  FROM mm_sim.players
 WHERE run = :'run' AND games > 0
 ORDER BY games DESC, id
 LIMIT 8;

\echo 'Do ratings get closer to the truth?  Mean distance |rating - true skill|'
SELECT count(*) AS players,
       round(avg(abs(initial_rating - true_skill))) AS placed_error,
       round(avg(abs(rating - true_skill))) AS error_now,
       round(avg(games), 1) AS avg_games
  FROM mm_sim.players
 WHERE run = :'run' AND games > 0;
