-- The demo's fairness report (docs/fairness.md): each queue's scorecard
-- and the calibration of the pool "demo" over the run (the last hour),
-- with the calibration chart in text.
\pset footer off
\echo 'Fairness scorecard per queue (mm.fairness_report over the run): shares of matches within 50 +- 2 and +- 5 %,'
\echo 'team rating gap and skill spread (Glicko-2 rating points), premade imbalance, latency p95'
SELECT q.name AS queue, (f ->> 'matches')::int AS matches, (f ->> 'predicted')::int AS predicted,
       round(100 * (f ->> 'fair_2')::numeric, 1) AS fair_2_pct, round(100 * (f ->> 'fair_5')::numeric, 1) AS fair_5_pct,
       round((f #>> '{rating_gap,p50}')::numeric, 1) AS gap_p50, round((f #>> '{rating_gap,p90}')::numeric, 1) AS gap_p90,
       round((f #>> '{skill_spread,p90}')::numeric, 1) AS spread_p90,
       round(100 * (f ->> 'premade_imbalance')::numeric, 1) AS premade_imbalance_pct,
       round((f ->> 'latency_p95_ms')::numeric, 1) AS latency_p95_ms
  FROM mm.queues q, mm.fairness_report(q.name, now() - interval '1 hour', now() + interval '1 second') f
 ORDER BY 1;

\echo 'Calibration of the pool "demo" (mm.prediction_quality): the predictions kept with the matches against the results'
WITH p AS (SELECT mm.prediction_quality('demo', now() - interval '1 hour', now() + interval '1 second') AS j)
SELECT x.figure, round((p.j ->> x.key)::numeric, 4) AS value, round((p.j #>> ARRAY['baseline', x.key])::numeric, 4) AS coin_flip
  FROM p, (VALUES (1, 'binomial deviance (log10)', 'deviance'), (2, 'Brier score', 'brier'),
                  (3, 'log loss', 'log_loss'), (4, 'accuracy (the favourite won)', 'accuracy')) x(n, figure, key)
 ORDER BY x.n;

\echo 'Calibration chart: per bin of the predicted win chance, the actual win share (#) and the mean prediction (|)'
WITH p AS (SELECT mm.prediction_quality('demo', now() - interval '1 hour', now() + interval '1 second') AS j),
     b AS (SELECT (b ->> 'from')::numeric AS lo, (b ->> 'to')::numeric AS hi, (b ->> 'teams')::int AS teams,
                  (b ->> 'predicted')::numeric AS predicted, (b ->> 'actual')::numeric AS actual
             FROM p, jsonb_array_elements(p.j -> 'bins') b)
SELECT format('%s-%s', lo, hi) AS predicted_range, teams, round(100 * predicted, 1) AS predicted_pct,
       round(100 * actual, 1) AS actual_pct,
       overlay(rpad(repeat('#', round(actual * 40)::int), 41) PLACING '|' FROM round(predicted * 40)::int + 1)
         AS "0% ........... actual # / predicted | ........... 100%"
  FROM b ORDER BY lo;
