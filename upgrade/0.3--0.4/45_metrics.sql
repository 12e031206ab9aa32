
-- ===================================================================
-- Metrics that tell the truth (docs/metrics.md)
-- ===================================================================
--
-- - The win-rate balance leaves out coin flips: a result whose predicted
--   favourite had a 0.5 chance (equal ratings, as in a new pool) predicted
--   no favourite, so it cannot be "missed"; coin_flip_results counts them.
-- - Leaves and early quits are two figures: `leaves` counts every player
--   who left a reported match (mm.leave_match, at any time), `early_quits`
--   the documented subset who left in its first 20%.
-- - The match figures count the proposals rejected and expired and the
--   matches requeued in the window.
-- - Every non-integer figure is rounded to 3 decimals (the health report's
--   values always were), so 1.533333333333303 shows as 1.533.
-- - mm.rule_stats' pass rate is rounded the same way; what its counts mean
--   is in docs/metrics.md ("Rule statistics").

-- The cancelled matches of a queue by the time they were cancelled (a
-- cancelled match is never updated again): the proposals rejected and
-- expired and the matches requeued in a window.  Few rows: only
-- cancellations are indexed.
CREATE INDEX matches_queue_cancelled ON mm.matches (queue, updated_at)
	WHERE status OPERATOR(pg_catalog.=) 'cancelled';

-- The match figures gain columns: the view goes before its function is
-- re-created (50_routines.txt), and comes back in 70_metrics_views.sql.
DROP VIEW mm.match_stats;

-- The metrics read one queue's window of ended tickets (created, matched,
-- cancelled or timed out) through a (queue, time) index each, so the cost
-- follows the window whatever the statistics say: the BRIN reads every
-- queue's rows of the window, and with statistics taken before a bulk load
-- the planner preferred a scan of the whole primary key.
CREATE INDEX tickets_ended_queue_created ON mm.tickets_ended (queue, created_at);
CREATE INDEX tickets_ended_queue_matched ON mm.tickets_ended (queue, matched_at)
	WHERE matched_at IS NOT NULL;
CREATE INDEX tickets_ended_queue_gone ON mm.tickets_ended (queue, updated_at)
	WHERE status OPERATOR(pg_catalog.=) ANY (ARRAY['cancelled', 'timed_out']);

-- Every read of a window of ended tickets names its queue: the block range
-- index over every queue's times served none better than the indexes
-- above, and cost each matched ticket of a tick an entry (about 4 % of a
-- 100,000-ticket tick).
DROP INDEX mm.tickets_ended_times;
