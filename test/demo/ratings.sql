-- The demo's showcase of the rating functions (run by test/demo.sh).
\pset footer off

\echo
\echo '== Elo: 1500 against 1200 (K 32) =='
SELECT round(mm.elo_expected(1500, 1200)::numeric, 3) AS "1500 expected to score",
       round(mm.elo_update(1500, 1200, 1)::numeric, 2) AS "1500 after a win",
       round(mm.elo_update(1200, 1500, 0)::numeric, 2) AS "1200 after that loss",
       round(mm.elo_update(1500, 1200, 0)::numeric, 2) AS "1500 after a loss",
       mm.elo_k_factor(12, 1500) AS "K, 12 games played";

\echo '== Glicko-2: Glickman''s example (1500/200/0.06 beats 1400/30, loses to 1550/100 and 1700/300) =='
\echo '(the paper rounds to 1464.06, 151.52, 0.05999)'
SELECT round(rating::numeric, 2) AS rating, round(rd::numeric, 2) AS rd,
       round(volatility::numeric, 6) AS volatility
  FROM mm.glicko2_update(1500, 200, 0.06,
                         opponent_ratings => ARRAY[1400, 1550, 1700],
                         opponent_rds => ARRAY[30, 100, 300],
                         scores => ARRAY[1, 0, 0]);

\echo '== Glicko-2: a rating period as an aggregate over rows of games (GROUP BY player) =='
WITH players(player, rating, rd, volatility) AS (
	VALUES ('ada', 1500, 200, 0.06), ('bo', 1650, 80, 0.06), ('cy', 1400, 120, 0.06),
	       ('di', 1580, 60, 0.06)),
games(player, opponent, score) AS (
	VALUES ('ada', 'bo', 1.0), ('bo', 'ada', 0.0),
	       ('ada', 'cy', 0.5), ('cy', 'ada', 0.5),
	       ('bo', 'cy', 1.0), ('cy', 'bo', 0.0))
SELECT p.player, p.rating AS before, round((r).rating::numeric, 1) AS after,
       p.rd AS rd_before, round((r).rd::numeric, 1) AS rd_after
  FROM (SELECT p.player, mm.glicko2_period(p.rating, p.rd, p.volatility,
                                           o.rating, o.rd, g.score) AS r
          FROM players p
          LEFT JOIN games g ON g.player = p.player
          LEFT JOIN players o ON o.player = g.opponent
         GROUP BY p.player) s
  JOIN players p USING (player)
 ORDER BY p.player;
\echo '(di played no game: only the rating deviation grows)'

\echo '== Glicko-2: RD after idle periods (capped at 350) =='
SELECT periods, round(rd::numeric, 1) AS rd
  FROM unnest(ARRAY[1, 12, 100, 1000]) AS periods, mm.glicko2_decay(1500, 200, 0.06, periods)
 ORDER BY periods;

\echo '== Teams: weighted team rating and win probability =='
WITH members(team, player, rating, weight) AS (
	VALUES ('red', 'ada', 1500, 1.0), ('red', 'bo', 1650, 1.0), ('red', 'eve', 1800, 0.5),
	       ('blue', 'cy', 1400, 1.0), ('blue', 'di', 1580, 1.0), ('blue', 'fu', 1620, 1.0))
SELECT team, round(mm.team_rating(rating, weight)::numeric, 1) AS team_rating
  FROM members GROUP BY team ORDER BY team;
SELECT round(mm.win_probability(ARRAY[1500, 1650, 1800], ARRAY[1400, 1580, 1620])::numeric, 3)
       AS "P(red beats blue)";

\echo '== Smurf detection: suspicion in [0, 1] and the rating change multiplier =='
SELECT account, round(score::numeric, 2) AS smurf_score, mm.rating_boost(score, games) AS boost
  FROM (VALUES
	('fresh_pro', 8, mm.smurf_score(8, 0.85, 4.2, 0.5, ARRAY[1500, 1502, 1499, 1501, 1500], 0.65)),
	('new_player', 8, mm.smurf_score(8, 0.45, 1.1, 0.05, ARRAY[1500, 1380, 1290, 1350, 1240])),
	('veteran', 400, mm.smurf_score(400, 0.52, 2.0, 0.1, ARRAY[1710, 1690, 1705, 1720, 1700])))
       AS a(account, games, score)
 ORDER BY score DESC;
