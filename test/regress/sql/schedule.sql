-- Scheduling without pg_cron (contrib_regression has none): how intervals map
-- to pg_cron schedules, argument validation, the error that says how to
-- enable pg_cron, the tick loop's lock, and retention with an explicit now.
-- The pg_cron paths themselves are tested in test/t/020_pg_cron.pl.
\set SHOW_CONTEXT never
SET timezone = 'UTC';

-- pg_cron 1.4 (Debian 12): sub-minute intervals run as a per-minute loop
SELECT every, (p).mode, (p).cron_schedule
  FROM (SELECT every, mm.schedule_plan(every, '1.4-1') AS p
		  FROM unnest(ARRAY['100 milliseconds', '0.5 seconds', '1 second', '7 seconds',
							'59.999999 seconds', '1 minute', '60 seconds', '5 minutes',
							'30 minutes', '1 hour', '2 hours', '12 hours', '1 day',
							'24 hours']::interval[]) every) s;
-- pg_cron 1.5 and later: whole seconds natively, fractions still loop
SELECT every, version, (p).mode, (p).cron_schedule
  FROM (SELECT every, version, mm.schedule_plan(every, version) AS p
		  FROM unnest(ARRAY['1 second', '0.5 seconds', '59 seconds', '59.5 seconds',
							'2 minutes']::interval[]) every,
			   unnest(ARRAY['1.5', '1.6-1', '2.0']) version) s
 ORDER BY version, every;
-- invalid intervals and versions
SELECT mm.schedule_plan(NULL, '1.4');
SELECT mm.schedule_plan('1 second', NULL);
SELECT mm.schedule_plan('0 seconds', '1.4');
SELECT mm.schedule_plan('-1 second', '1.4');
SELECT mm.schedule_plan('99 milliseconds', '1.4');
SELECT mm.schedule_plan('1 month', '1.4');
SELECT mm.schedule_plan('1 day 1 second', '1.4');
SELECT mm.schedule_plan('90 seconds', '1.4');
SELECT mm.schedule_plan('7 minutes', '1.4');
SELECT mm.schedule_plan('61.5 minutes', '1.4');
SELECT mm.schedule_plan('5 hours', '1.4');
SELECT mm.schedule_plan('1 second', 'latest');
SELECT mm.schedule_plan('1 second', '');

SELECT mm.create_queue('sched_duel', '{"match_size": {"min": 2, "max": 2},
	"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
	"ticket_timeout_seconds": 60}');

-- mm.schedule: arguments are checked before pg_cron is looked for
SELECT mm.schedule(NULL);
SELECT mm.schedule('no_such_queue');
SELECT mm.schedule('sched_duel', NULL);
SELECT mm.schedule('sched_duel', '0 seconds');
SELECT mm.schedule('sched_duel', '90 seconds');
-- valid arguments: pg_cron is missing, and the error says how to enable it
\set VERBOSITY verbose
SELECT mm.schedule('sched_duel');
SELECT mm.schedule('sched_duel', '5 minutes');
SELECT mm.unschedule('sched_duel');
SELECT mm.schedule_retention('30 days');
SELECT mm.unschedule_retention();
\set VERBOSITY default
SELECT mm.unschedule(NULL);
SELECT mm.require_pg_cron();
-- nothing was recorded by the failed calls
SELECT count(*) FROM mm.schedule_jobs;
SELECT * FROM mm.schedules;

-- mm.schedule_retention checks its arguments first too
SELECT mm.schedule_retention(NULL);
SELECT mm.schedule_retention('0 days');
SELECT mm.schedule_retention('-1 day');
SELECT mm.schedule_retention('30 days', NULL);
SELECT mm.schedule_retention('30 days', '10 seconds');
SELECT mm.schedule_retention('30 days', '90 minutes');
SELECT mm.schedule_retention('30 days', '1 hour', NULL);
SELECT mm.schedule_retention('30 days', '1 hour', false, 0);
SELECT mm.schedule_retention('30 days', '1 hour', false, NULL);
SELECT mm.schedule_retention('30 days', '1 hour', false, 1000001);

-- The tick loop returns at once when its queue is not scheduled (the loop
-- reads its interval from mm.schedule_jobs), releasing its advisory lock.
CALL mm.tick_loop('sched_duel');
SELECT mm.tick_loop_running('sched_duel');
CALL mm.tick_loop(NULL);
-- (that a second loop of a queue returns at once while the first runs needs
-- two sessions: test/t/020_pg_cron.pl)
INSERT INTO mm.schedule_jobs (job_name, kind, queue, every, mode, cron_schedule)
VALUES ('mm_tick:sched_duel', 'tick', 'sched_duel', '100 milliseconds', 'loop', '* * * * *');
-- The loop in this session, every 100 ms: a tick forms a match, whose insert
-- (by a test trigger) unschedules the queue; the loop commits, re-reads its
-- schedule and returns.
CREATE FUNCTION pg_temp.unschedule_on_match() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM mm.schedule_jobs WHERE queue = NEW.queue;
	RETURN NULL;
END $$;
CREATE TRIGGER test_unschedule_on_match AFTER INSERT ON mm.matches
	FOR EACH ROW EXECUTE FUNCTION pg_temp.unschedule_on_match();
SELECT mm.create_ticket('sched_duel', '[{"id": "duel_1"}]') > 0 AS t1,
	   mm.create_ticket('sched_duel', '[{"id": "duel_2"}]') > 0 AS t2;
CALL mm.tick_loop('sched_duel');
SELECT status, count(*) FROM mm.tickets WHERE queue = 'sched_duel' GROUP BY status;
SELECT count(*) AS schedule_rows, mm.tick_loop_running('sched_duel') AS running FROM mm.schedule_jobs;
DROP TRIGGER test_unschedule_on_match ON mm.matches;
-- A failing tick is a warning and the loop goes on; five failures in a row
-- end the run with the error (and release the lock).
INSERT INTO mm.schedule_jobs (job_name, kind, queue, every, mode, cron_schedule)
VALUES ('mm_tick:sched_duel', 'tick', 'sched_duel', '100 milliseconds', 'loop', '* * * * *');
CREATE FUNCTION pg_temp.refuse_match() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'no matches today' USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER test_refuse_match BEFORE INSERT ON mm.matches
	FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse_match();
SELECT mm.create_ticket('sched_duel', '[{"id": "duel_3"}]') > 0 AS t3,
	   mm.create_ticket('sched_duel', '[{"id": "duel_4"}]') > 0 AS t4;
CALL mm.tick_loop('sched_duel');
SELECT mm.tick_loop_running('sched_duel');
DROP TRIGGER test_refuse_match ON mm.matches;
-- the loop recorded each tick it ran for the operators' figures: the one
-- that matched, then the five that failed (docs/monitoring.md)
SELECT ticks_total, failures_total, consecutive_failures, last_error_sqlstate,
	   last_success_at IS NOT NULL AS succeeded_once, last_duration_seconds >= 0 AS timed
  FROM mm.tick_runs WHERE queue = 'sched_duel';
-- the view lists the row even without pg_cron (no pg_cron state)
SELECT job_name, kind, queue, every, mode, cron_schedule, job_id, active, loop_running
  FROM mm.schedules;
-- dropping the queue removes its schedule row
SELECT mm.drop_queue('sched_duel', force => true);
SELECT count(*) FROM mm.schedule_jobs;

-- Retention.  Tickets and matches at explicit times in 2031: ticks at 10:00
-- form two matches; one match is completed at 10:30, one stays ready (in
-- play); a ticket times out at 10:05, one is cancelled at 10:40 and one is
-- still searching.
SELECT mm.create_queue('sched_keep', '{"match_size": {"min": 2, "max": 2},
	"teams": [{"name": "red", "min": 1, "max": 1}, {"name": "blue", "min": 1, "max": 1}],
	"ticket_timeout_seconds": 240}');
SELECT mm.create_ticket('sched_keep', '[{"id": "keep_1", "attributes": {"skill": 1}}]', '2031-03-01 09:59:00+00') AS t1 \gset
SELECT mm.create_ticket('sched_keep', '[{"id": "keep_2", "attributes": {"skill": 2}}]', '2031-03-01 09:59:01+00') AS t2 \gset
SELECT mm.create_ticket('sched_keep', '[{"id": "keep_3", "attributes": {"skill": 3}}]', '2031-03-01 09:59:02+00') AS t3 \gset
SELECT mm.create_ticket('sched_keep', '[{"id": "keep_4", "attributes": {"skill": 4}}]', '2031-03-01 09:59:03+00') AS t4 \gset
SELECT mm.tick('sched_keep', '2031-03-01 10:00:00+00');
SELECT mm.create_ticket('sched_keep', '[{"id": "keep_5", "attributes": {"skill": 5}}]', '2031-03-01 10:00:30+00') AS t5 \gset
SELECT mm.tick('sched_keep', '2031-03-01 10:05:00+00');
SELECT mm.create_ticket('sched_keep', '[{"id": "keep_6", "attributes": {"skill": 6}}]', '2031-03-01 10:30:00+00') AS t6 \gset
SELECT mm.create_ticket('sched_keep', '[{"id": "keep_7", "attributes": {"skill": 7}}]', '2031-03-01 10:31:00+00') AS t7 \gset
UPDATE mm.tickets SET status = 'cancelled', updated_at = '2031-03-01 10:40:00+00' WHERE id = :t6;
SELECT mm.complete_match(match_id, '2031-03-01 10:30:00+00') FROM mm.tickets WHERE id = :t1;
INSERT INTO mm.match_results (match_id, winner_team, duration, reported_at)
SELECT match_id, 'red', '25 minutes', '2031-03-01 10:30:00+00' FROM mm.tickets WHERE id = :t1;
SELECT t.id - :t1 AS ticket, t.status, t.updated_at, t.match_id IS NOT NULL AS has_match, m.status AS match_status
  FROM mm.tickets t LEFT JOIN mm.matches m ON m.id = t.match_id
 WHERE t.queue = 'sched_keep' ORDER BY t.id;

-- argument checks
SELECT mm.purge_finished(NULL);
SELECT mm.purge_finished('-1 second');
SELECT mm.purge_finished('178000000 years');
SELECT mm.purge_finished('1 day', NULL);
SELECT mm.purge_finished('1 day', 0);
SELECT mm.purge_finished('1 day', 1000001);
SELECT mm.purge_finished('1 day', 100, NULL);
SELECT mm.purge_finished('1 day', 100, false, NULL);
SELECT mm.purge_finished('1 day', 100, false, 'infinity');
-- at 11:00 keeping 1 hour: nothing is old enough (cutoff 10:00, strict)
SELECT * FROM mm.purge_finished('1 hour', now => '2031-03-01 11:00:00+00');
-- at 11:00 keeping 20 minutes (cutoff 10:40): the completed match with its two
-- tickets, and the timed-out ticket; the cancelled one (10:40) is not older
-- than the cutoff, the ready match and the searching ticket never go.
-- Batches of one: one match (with both its tickets) and one other ticket per
-- call, then nothing is left to purge.
SELECT * FROM mm.purge_finished('20 minutes', 1, false, '2031-03-01 11:00:00+00');
SELECT * FROM mm.purge_finished('20 minutes', 1, false, '2031-03-01 11:00:00+00');
SELECT t.id - :t1 AS ticket, t.status FROM mm.tickets t WHERE t.queue = 'sched_keep' ORDER BY t.id;
SELECT count(*) AS results_left FROM mm.match_results WHERE queue = 'sched_keep';
SELECT count(*) AS players_of_purged_tickets FROM mm.active_players
 WHERE ticket_id IN (:t1, :t2, :t5);
-- the archive tables were not touched
SELECT (SELECT count(*) FROM mm.matches_archive) AS matches, (SELECT count(*) FROM mm.tickets_archive) AS tickets;

-- archive: complete the other match and purge it with everything finished
UPDATE mm.matches SET status = 'completed', updated_at = '2031-03-01 10:35:00+00'
 WHERE id = (SELECT match_id FROM mm.tickets WHERE id = :t3);
INSERT INTO mm.match_results (match_id, ranks, predicted_favourite, favourite_win_probability, reported_at)
SELECT match_id, '{"red": 1, "blue": 2}', 'blue', 0.6, '2031-03-01 10:35:00+00' FROM mm.tickets WHERE id = :t3;
UPDATE mm.match_players SET left_at = '2031-03-01 10:01:00+00'
 WHERE ticket_id = :t3;
SELECT * FROM mm.purge_finished('0 seconds', 10000, true, '2031-03-01 12:00:00+00');
SELECT * FROM mm.purge_finished('0 seconds', 10000, true, '2031-03-01 12:00:00+00');
SELECT t.id - :t1 AS ticket, t.status FROM mm.tickets t WHERE t.queue = 'sched_keep' ORDER BY t.id;
SELECT id - :t1 AS ticket, status, match_id IS NOT NULL AS has_match, archived_at
  FROM mm.tickets_archive WHERE queue = 'sched_keep' ORDER BY id;
SELECT id - :t1 AS ticket, players, archived_at
  FROM mm.tickets_archive WHERE queue = 'sched_keep' ORDER BY id;
SELECT status, updated_at, archived_at FROM mm.matches_archive WHERE queue = 'sched_keep';
SELECT player_id, team IS NOT NULL AS has_team, left_at FROM mm.match_players_archive
 WHERE queue = 'sched_keep' ORDER BY player_id;
SELECT winner_team, ranks, predicted_favourite, favourite_win_probability, reported_at
  FROM mm.match_results_archive WHERE queue = 'sched_keep';
-- a fresh ticket of an archived player is accepted (one active ticket each)
SELECT mm.create_ticket('sched_keep', '[{"id": "keep_3"}]', '2031-03-01 12:00:00+00') > 0 AS queued_again;

-- retention procedure without a retention job: returns at once
CALL mm.run_retention();

SELECT mm.drop_queue('sched_keep', force => true);
DELETE FROM mm.tickets_archive WHERE queue = 'sched_keep';
DELETE FROM mm.matches_archive WHERE queue = 'sched_keep';
DELETE FROM mm.match_players_archive WHERE queue = 'sched_keep';
DELETE FROM mm.match_results_archive WHERE queue = 'sched_keep';

-- mm.schedule_jobs checks what the loop and the retention job read from it
\set VERBOSITY terse
INSERT INTO mm.schedule_jobs (job_name, kind, queue, every, mode, cron_schedule)
VALUES ('mm_tick:sched_nowhere', 'tick', NULL, '-1 hour', 'loop', '* * * * *');
INSERT INTO mm.schedule_jobs (job_name, kind, every, mode, cron_schedule, keep, archive, batch_size)
VALUES ('mm_retention', 'retention', '1 hour', 'cron', '0 * * * *', '300000 years', true, 1000);
\set VERBOSITY default
