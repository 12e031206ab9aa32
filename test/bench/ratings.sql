-- Ratings benchmark (run by: bash test/bench/run.sh ratings)
--
-- 1. mm.glicko2_update over 1M rows (rating periods of 3 games, like
--    Glickman's example, then of 10 games), in ns per call, against the same
--    algorithm written in PL/pgSQL below, which runs over a 50k-row copy of
--    the first rows (per-call times are compared; PL/pgSQL over 1M rows would
--    take minutes).  Serial plans only.  See ratings_update.psql.
-- 2. The aggregate mm.glicko2_period over 1M games grouped by 10k players,
--    serial and with 2 parallel workers.
-- Every timing is the best of 5 interleaved runs; the scan-only baseline of
-- each table is reported so the function's own cost can be read off.

\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
SET jit = off;

-- ---------------------------------------------------------------------------
-- The PL/pgSQL version of mm.glicko2_update: the same steps, the same
-- Illinois iteration and epsilon.
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.plpgsql_glicko2_f(x float8, delta float8, phi float8, v float8,
										  a float8, tau float8)
RETURNS float8 LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	ex float8 := exp(x);
	d float8 := phi * phi + v + ex;
BEGIN
	RETURN ex * (delta * delta - phi * phi - v - ex) / (2 * d * d) - (x - a) / (tau * tau);
END $$;

CREATE FUNCTION pg_temp.plpgsql_glicko2_update(rating float8, rd float8, volatility float8,
											   opponent_ratings float8[], opponent_rds float8[],
											   scores float8[], tau float8 DEFAULT 0.5)
RETURNS mm.glicko2 LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
	scale constant float8 := 173.7178;
	mu float8 := (rating - 1500) / scale;
	phi float8 := rd / scale;
	sigma float8 := volatility;
	n int := coalesce(array_length(opponent_ratings, 1), 0);
	information float8 := 0;
	improvement float8 := 0;
	g float8;
	e float8;
	v float8;
	delta float8;
	a float8;
	big_a float8;
	big_b float8;
	f_a float8;
	f_b float8;
	c float8;
	f_c float8;
	k int;
	new_sigma float8;
	phi_star float8;
	new_phi float8;
	result mm.glicko2;
BEGIN
	IF n = 0 THEN
		result := (rating, sqrt(phi * phi + sigma * sigma) * scale, sigma);
		RETURN result;
	END IF;
	FOR i IN 1..n LOOP
		g := 1 / sqrt(1 + 3 * (opponent_rds[i] / scale) ^ 2 / (pi() * pi()));
		e := 1 / (1 + exp(-g * (mu - (opponent_ratings[i] - 1500) / scale)));
		information := information + g * g * e * (1 - e);
		improvement := improvement + g * (scores[i] - e);
	END LOOP;
	v := 1 / information;
	delta := v * improvement;
	a := ln(sigma * sigma);
	big_a := a;
	IF delta * delta > phi * phi + v THEN
		big_b := ln(delta * delta - phi * phi - v);
	ELSE
		k := 1;
		WHILE pg_temp.plpgsql_glicko2_f(a - k * tau, delta, phi, v, a, tau) < 0 LOOP
			k := k + 1;
		END LOOP;
		big_b := a - k * tau;
	END IF;
	f_a := pg_temp.plpgsql_glicko2_f(big_a, delta, phi, v, a, tau);
	f_b := pg_temp.plpgsql_glicko2_f(big_b, delta, phi, v, a, tau);
	WHILE abs(big_b - big_a) > 1e-6 LOOP
		c := big_a + (big_a - big_b) * f_a / (f_b - f_a);
		f_c := pg_temp.plpgsql_glicko2_f(c, delta, phi, v, a, tau);
		IF f_c * f_b <= 0 THEN
			big_a := big_b;
			f_a := f_b;
		ELSE
			f_a := f_a / 2;
		END IF;
		big_b := c;
		f_b := f_c;
	END LOOP;
	new_sigma := exp(big_a / 2);
	phi_star := sqrt(phi * phi + new_sigma * new_sigma);
	new_phi := 1 / sqrt(1 / (phi_star * phi_star) + 1 / v);
	result := ((mu + new_phi * new_phi * improvement) * scale + 1500, new_phi * scale, new_sigma);
	RETURN result;
END $$;

-- Times each query runs times, interleaved (q1, q2, ..., q1, q2, ...) so that
-- a burst of load from elsewhere on the machine hits them alike, and returns
-- the best wall time of each in ms.  workers[i] is the
-- max_parallel_workers_per_gather to run queries[i] with.
CREATE FUNCTION pg_temp.best_ms(queries text[], workers int[], runs int) RETURNS float8[]
LANGUAGE plpgsql AS $$
DECLARE
	best float8[] := array_fill(NULL::float8, ARRAY[cardinality(queries)]);
	started timestamptz;
	elapsed float8;
BEGIN
	FOR r IN 1..runs LOOP
		FOR i IN 1..cardinality(queries) LOOP
			PERFORM set_config('max_parallel_workers_per_gather', workers[i]::text, false);
			started := clock_timestamp();
			EXECUTE queries[i];
			elapsed := extract(epoch FROM clock_timestamp() - started) * 1000;
			best[i] := least(best[i], elapsed);
		END LOOP;
	END LOOP;
	PERFORM set_config('max_parallel_workers_per_gather', '0', false);
	RETURN best;
END $$;

-- The number of parallel workers EXPLAIN ANALYZE reports for query.
CREATE FUNCTION pg_temp.workers_launched(query text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || query INTO plan;
	RETURN coalesce((SELECT sum((m.value->>'Workers Launched')::int)
	                   FROM jsonb_path_query(plan::jsonb, 'strict $.**') AS m(value)
	                  WHERE jsonb_typeof(m.value) = 'object' AND m.value ? 'Workers Launched'), 0);
END $$;

CREATE TEMP TABLE bench_results (
	n int, benchmark text, calls bigint, ms float8, ns_per_call float8, note text);

-- ---------------------------------------------------------------------------
-- 1. glicko2_update: 1M rating periods of 3 games (Glickman's example), then
--    of 10 games (Glickman recommends 10 to 15 games per player and period)
-- ---------------------------------------------------------------------------
\set games 3
\set base 0
\ir ratings_update.psql
\set games 10
\set base 10
\ir ratings_update.psql

-- ---------------------------------------------------------------------------
-- 2. glicko2_period: 1M games of 10k players, GROUP BY player
-- ---------------------------------------------------------------------------
SELECT setseed(0.25) \g /dev/null
CREATE UNLOGGED TABLE bench_players AS
SELECT i AS player, 1200 + random() * 600 AS rating, 50 + random() * 250 AS rd,
       0.04 + random() * 0.04 AS volatility
  FROM generate_series(1, 10000) AS i;
CREATE UNLOGGED TABLE bench_games AS
SELECT g AS game, p.player, p.rating, p.rd, p.volatility,
       1100 + random() * 800 AS opponent_rating, 30 + random() * 300 AS opponent_rd,
       floor(random() * 3) / 2 AS score
  FROM generate_series(1, 1000000) AS g
  JOIN bench_players p ON p.player = 1 + (g::bigint * 7919) % 10000;
VACUUM ANALYZE bench_games;
SELECT count(*) FROM bench_games \g /dev/null

\set period_query 'SELECT count(*), sum((r).rating) FROM (SELECT player, mm.glicko2_period(rating, rd, volatility, opponent_rating, opponent_rd, score) AS r FROM bench_games GROUP BY player) s'

CREATE TEMP TABLE bench_period_serial AS
SELECT player, (mm.glicko2_period(rating, rd, volatility, opponent_rating, opponent_rd, score)).*
  FROM bench_games GROUP BY player;

-- Parallel plans are considered only when max_parallel_workers_per_gather > 0,
-- which best_ms sets per query.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT pg_temp.best_ms(ARRAY[:'period_query', :'period_query'], ARRAY[0, 2], 5) AS ms \gset
SET max_parallel_workers_per_gather = 0;
SELECT pg_temp.workers_launched(:'period_query') AS serial_workers \gset
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.workers_launched(:'period_query') AS parallel_workers \gset
INSERT INTO bench_results VALUES
	(25, 'glicko2_period, 1M games, 10k players, serial', 1000000, (:'ms'::float8[])[1], NULL,
	 'workers launched: ' || :serial_workers),
	(26, 'glicko2_period, 1M games, 10k players, parallel', 1000000, (:'ms'::float8[])[2], NULL,
	 'workers launched: ' || :parallel_workers);
\echo 'The parallel plan of glicko2_period:'
EXPLAIN (COSTS OFF) :period_query;
CREATE TEMP TABLE bench_period_parallel AS
SELECT player, (mm.glicko2_period(rating, rd, volatility, opponent_rating, opponent_rd, score)).*
  FROM bench_games GROUP BY player;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
UPDATE bench_results SET ns_per_call = ms * 1e6 / calls WHERE ns_per_call IS NULL;

\echo 'Serial and parallel glicko2_period agree:'
SELECT count(*) AS players, max(abs(s.rating - p.rating)) AS max_rating_diff,
       max(abs(s.rd - p.rd)) AS max_rd_diff
  FROM bench_period_serial s JOIN bench_period_parallel p USING (player);
DROP TABLE bench_games, bench_players;

-- ---------------------------------------------------------------------------
-- Results
-- ---------------------------------------------------------------------------
\echo
\echo 'Ratings benchmark (best of 5 interleaved runs each)'
SELECT benchmark, calls AS "rows", round(ms::numeric, 1) AS "total ms",
       round(ns_per_call::numeric) AS "ns per row", note
  FROM bench_results ORDER BY n;

\echo 'Summary'
SELECT 'glicko2_update, ' || g.games || ' games: C vs PL/pgSQL, ns per call (scan included)' AS measure,
       round(c.ns_per_call::numeric) || ' vs ' || round(p.ns_per_call::numeric) AS figures,
       round((p.ns_per_call / c.ns_per_call)::numeric, 1) || 'x' AS ratio
  FROM (VALUES (0, 3), (10, 10)) AS g(base, games), bench_results c, bench_results p
 WHERE c.n = g.base + 2 AND p.n = g.base + 4
UNION ALL
SELECT 'glicko2_update, ' || g.games || ' games: C vs PL/pgSQL, ns per call (scan subtracted)',
       round((c.ns_per_call - cb.ns_per_call)::numeric) || ' vs '
         || round((p.ns_per_call - pb.ns_per_call)::numeric),
       round(((p.ns_per_call - pb.ns_per_call) / (c.ns_per_call - cb.ns_per_call))::numeric, 1) || 'x'
  FROM (VALUES (0, 3), (10, 10)) AS g(base, games), bench_results c, bench_results cb,
       bench_results p, bench_results pb
 WHERE c.n = g.base + 2 AND cb.n = g.base + 1 AND p.n = g.base + 4 AND pb.n = g.base + 3
UNION ALL
SELECT 'glicko2_period: serial vs parallel, ms',
       round(s.ms::numeric) || ' vs ' || round(p.ms::numeric),
       round((s.ms / p.ms)::numeric, 2) || 'x faster in parallel'
  FROM bench_results s, bench_results p WHERE s.n = 25 AND p.n = 26;
