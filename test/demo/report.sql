-- The analysts' report at the end of the demo: mm.health_report (the seed's
-- targets next to each figure) and the metrics views when the extension has
-- them, then the same questions asked with plain SQL over the tables.

SELECT to_regprocedure('mm.health_report(text,interval,timestamptz)') IS NOT NULL AS has_health_report,
       to_regclass('mm.queue_stats') IS NOT NULL AS has_queue_stats,
       to_regclass('mm.match_stats') IS NOT NULL AS has_match_stats,
       to_regprocedure('mm.queue_stats_by_minute(text,timestamptz,timestamptz)') IS NOT NULL AS has_by_minute,
       to_regprocedure('mm.queue_statistics(text,timestamptz)') IS NOT NULL AS has_queue_statistics
\gset

\if :has_health_report
\echo 'mm.health_report(): every queue of the last hour, each figure beside the seed''s target'
SELECT * FROM mm.health_report(NULL, '1 hour');
\endif

\if :has_queue_stats
\echo 'mm.queue_stats: per queue, the last hour'
SELECT * FROM mm.queue_stats ORDER BY queue;
\endif

\if :has_match_stats
\echo 'mm.match_stats'
SELECT * FROM mm.match_stats ORDER BY queue;
\endif

\if :has_by_minute
\echo 'mm.queue_stats_by_minute: ranked_5v5, minute by minute (for dashboards)'
SELECT minute, tickets_created, tickets_matched, round(time_to_match_avg_s::numeric, 1) AS avg_wait_s,
       matches, round(quality_avg::numeric, 3) AS quality, timeouts, cancellations
  FROM mm.queue_stats_by_minute('ranked_5v5', now() - interval '10 minutes', now())
 WHERE tickets_created > 0 OR tickets_matched > 0
 ORDER BY minute;
\endif

\if :has_queue_statistics
\echo 'mm.queue_statistics: what a player waiting in each queue may be shown'
SELECT q.name AS queue, s.*
  FROM mm.queues q, mm.queue_statistics(q.name) s
 ORDER BY q.name;
\endif

\echo 'Per queue, from the tables: tickets, time to match, quality'
SELECT t.queue,
       count(*) AS tickets,
       count(*) FILTER (WHERE t.status = 'matched') AS matched,
       count(*) FILTER (WHERE t.status = 'timed_out') AS timed_out,
       count(*) FILTER (WHERE t.status = 'cancelled') AS cancelled,
       round(avg(extract(epoch FROM t.matched_at - t.created_at)), 1) AS avg_wait_s,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM t.matched_at - t.created_at))::numeric, 1) AS p95_wait_s,
       round(100.0 * count(*) FILTER (WHERE t.matched_at - t.created_at <= interval '120 seconds')
             / nullif(count(*) FILTER (WHERE t.status IN ('matched', 'timed_out')), 0), 1) AS matched_2min_pct,
       round(avg(m.quality)::numeric, 3) AS avg_quality
  FROM mm.tickets t
  LEFT JOIN mm.matches m ON m.id = t.match_id
 GROUP BY t.queue
 ORDER BY t.queue;

\echo 'Matches: players, usual region, average latency in the chosen region, players who left early'
SELECT m.queue,
       count(DISTINCT m.id) AS matches,
       round(avg(n.players), 1) AS players_per_match,
       mode() WITHIN GROUP (ORDER BY m.region) AS usual_region,
       round(avg((tp.latencies ->> m.region)::float8)::numeric, 1) AS avg_latency_ms,
       round(100.0 * count(*) FILTER (WHERE mp.left_at IS NOT NULL) / count(*), 1) AS left_early_pct
  FROM mm.matches m
  JOIN mm.match_players mp ON mp.match_id = m.id
  JOIN mm.ticket_players tp ON tp.ticket_id = mp.ticket_id AND tp.player_id = mp.player_id
  JOIN LATERAL (SELECT count(*) AS players FROM mm.match_players x WHERE x.match_id = m.id) n ON true
 GROUP BY m.queue
 ORDER BY m.queue;
