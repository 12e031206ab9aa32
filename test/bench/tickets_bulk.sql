-- Bulk enqueue: 100,000 one-player tickets by COPY into mm.tickets (C
-- validation per row, set-based players/ticket_players per statement, the
-- schema's foreign keys), against a floor that writes the same rows
-- (tickets, players, ticket_players) into trigger-less, FK-less copies of the
-- tables with the same indexes.  Then a bulk status change of all of them
-- (what the tick's timeout does), against the same floor.
\set n 100000
SET client_min_messages = notice;

SELECT mm.create_queue('bench-bulk', '{"teams": [{"name": "a", "min": 5, "max": 5}, {"name": "b", "min": 5, "max": 5}],
  "rules": [{"name": "skill", "type": "difference", "attribute": "skill", "max": 100,
             "expansion": {"every_seconds": 10, "delta": 50, "limit": 400}},
            {"name": "ping", "type": "latency", "max_ms": 80}]}');

SELECT setseed(0.42);
CREATE TEMP TABLE bench_src AS
SELECT 'bench-bulk'::text AS queue,
	   jsonb_build_array(jsonb_build_object('id', 'bench-' || i,
			'attributes', jsonb_build_object('skill', round((1000 + 400 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::numeric, 1)),
			'latencies', jsonb_build_object('eu', round((70 + 20 * random())::numeric), 'us', round((70 + 20 * random())::numeric),
											'asia', round((70 + 20 * random())::numeric))))::jsonb AS players,
	   '2026-01-01 00:00:00+00'::timestamptz + i * interval '1 ms' AS created_at
  FROM generate_series(1, :n) i;
COPY bench_src TO '/tmp/mm_bench_tickets.tsv';

CREATE TABLE bench_tickets (LIKE mm.tickets INCLUDING ALL);
CREATE TABLE bench_players (LIKE mm.players INCLUDING ALL);
CREATE TABLE bench_ticket_players (LIKE mm.ticket_players INCLUDING ALL);
CHECKPOINT;

DO $$
DECLARE
	t0 timestamptz;
	real_s float8;
	floor_s float8;
	upd_s float8;
	upd_floor_s float8;
	n bigint;
BEGIN
	t0 := clock_timestamp();
	COPY bench_tickets (queue, players, created_at) FROM '/tmp/mm_bench_tickets.tsv';
	INSERT INTO bench_players (id)
	SELECT DISTINCT p.value ->> 'id' FROM bench_tickets t, jsonb_array_elements(t.players) p
	ON CONFLICT (id) DO NOTHING;
	INSERT INTO bench_ticket_players (ticket_id, player_id, queue, attributes, latencies, active)
	SELECT t.id, p.value ->> 'id', t.queue, coalesce(p.value -> 'attributes', '{}'),
		   coalesce(p.value -> 'latencies', '{}'), true
	  FROM bench_tickets t, jsonb_array_elements(t.players) p;
	floor_s := extract(epoch FROM clock_timestamp() - t0);

	t0 := clock_timestamp();
	COPY mm.tickets (queue, players, created_at) FROM '/tmp/mm_bench_tickets.tsv';
	real_s := extract(epoch FROM clock_timestamp() - t0);

	SELECT count(*) INTO n FROM mm.ticket_players WHERE queue = 'bench-bulk' AND active;
	RAISE NOTICE 'tickets_bulk: COPY of % tickets: % s (% tickets/s); floor % s; ratio %',
		n, round(real_s::numeric, 2), round(n / real_s), round(floor_s::numeric, 2),
		round((real_s / floor_s)::numeric, 2);

	t0 := clock_timestamp();
	UPDATE bench_tickets SET status = 'timed_out', updated_at = now();
	UPDATE bench_ticket_players SET active = false;
	upd_floor_s := extract(epoch FROM clock_timestamp() - t0);

	t0 := clock_timestamp();
	UPDATE mm.tickets SET status = 'timed_out', updated_at = now() WHERE queue = 'bench-bulk';
	upd_s := extract(epoch FROM clock_timestamp() - t0);
	SELECT count(*) INTO n FROM mm.ticket_players WHERE queue = 'bench-bulk' AND active;
	RAISE NOTICE 'tickets_bulk: status UPDATE of all tickets (% players still active): % s; floor % s; ratio %',
		n, round(upd_s::numeric, 2), round(upd_floor_s::numeric, 2), round((upd_s / upd_floor_s)::numeric, 2);
END
$$;

DROP TABLE bench_tickets, bench_players, bench_ticket_players;
SELECT mm.drop_queue('bench-bulk');
DELETE FROM mm.players WHERE id LIKE 'bench-%';
