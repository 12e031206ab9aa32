-- Benchmark: mm.openskill_rate against the same Plackett-Luce formula in
-- PL/pgSQL, and mm.balance_teams for 10, 16, 32 and 200 players.
--   bash test/bench/run.sh ratings_openskill
-- Every figure comes from this one run on this one cluster; the PL/pgSQL
-- version runs on fewer rows (it is slow) and is compared per call.

\set ON_ERROR_STOP 1
SET max_parallel_workers_per_gather = 0;	-- one core: per-call cost, not parallelism

CREATE TEMP TABLE bench_result (
	seq serial,
	what text,
	calls bigint,
	ms_total numeric,
	ns_per_call numeric,
	ms_per_call_p99 numeric,
	ms_per_call_max numeric
);

-- 1M 1v1 games between random players.
SELECT setseed(0.61);
CREATE TEMP TABLE bench_game AS
SELECT g, 15 + random() * 20 AS mu1, 2 + random() * 6 AS s1,
	   15 + random() * 20 AS mu2, 2 + random() * 6 AS s2
  FROM generate_series(1, 1000000) g;
ANALYZE bench_game;

-- The same formula in PL/pgSQL: any number of teams of any size, ties, tau
-- first, the openskill.js 5 defaults.  Written for clarity like the C code's
-- definition (sums over teams ranked at or above), not tuned.
CREATE FUNCTION pg_temp.openskill_rate_plpgsql(p_mu float8[], p_sigma float8[],
											   p_team int[], p_rank int[])
RETURNS TABLE (new_mu float8, new_sigma float8)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	beta_sq constant float8 := (25.0 / 6.0) ^ 2;
	tau constant float8 := 25.0 / 300.0;
	kappa constant float8 := 1e-4;
	n int := cardinality(p_mu);
	teams int[] := ARRAY(SELECT DISTINCT t FROM unnest(p_team) t ORDER BY t);
	k int := cardinality(teams);
	t_mu float8[] := array_fill(0::float8, ARRAY[k]);
	t_sq float8[] := array_fill(0::float8, ARRAY[k]);
	t_rank int[] := array_fill(0, ARRAY[k]);
	t_sum_q float8[] := array_fill(0::float8, ARRAY[k]);
	t_a int[] := array_fill(0, ARRAY[k]);
	t_omega float8[] := array_fill(0::float8, ARRAY[k]);
	t_delta float8[] := array_fill(0::float8, ARRAY[k]);
	s float8[] := array_fill(0::float8, ARRAY[n]);
	c float8 := 0;
	idx int;
	quotient float8;
	omega float8;
	delta float8;
	share float8;
BEGIN
	FOR i IN 1..n LOOP
		idx := array_position(teams, p_team[i]);
		s[i] := sqrt(p_sigma[i] ^ 2 + tau ^ 2);
		t_mu[idx] := t_mu[idx] + p_mu[i];
		t_sq[idx] := t_sq[idx] + s[i] ^ 2;
		t_rank[idx] := p_rank[i];
	END LOOP;
	FOR t IN 1..k LOOP
		c := c + t_sq[t] + beta_sq;
	END LOOP;
	c := sqrt(c);
	FOR q IN 1..k LOOP
		FOR i IN 1..k LOOP
			IF t_rank[i] >= t_rank[q] THEN
				t_sum_q[q] := t_sum_q[q] + exp(t_mu[i] / c);
			END IF;
			IF t_rank[i] = t_rank[q] THEN
				t_a[q] := t_a[q] + 1;
			END IF;
		END LOOP;
	END LOOP;
	FOR i IN 1..k LOOP
		omega := 0;
		delta := 0;
		FOR q IN 1..k LOOP
			IF t_rank[q] <= t_rank[i] THEN
				quotient := exp(t_mu[i] / c) / t_sum_q[q];
				omega := omega + (CASE WHEN i = q THEN 1 - quotient ELSE -quotient END) / t_a[q];
				delta := delta + quotient * (1 - quotient) / t_a[q];
			END IF;
		END LOOP;
		t_omega[i] := omega * t_sq[i] / c;
		t_delta[i] := (sqrt(t_sq[i]) / c) * delta * t_sq[i] / c ^ 2;
	END LOOP;
	FOR p IN 1..n LOOP
		idx := array_position(teams, p_team[p]);
		share := s[p] ^ 2 / t_sq[idx];
		new_mu := p_mu[p] + share * t_omega[idx];
		new_sigma := s[p] * sqrt(greatest(1 - share * t_delta[idx], kappa));
		RETURN NEXT;
	END LOOP;
END
$$;

-- Both give the same answers (checked on 1000 games before timing).
SELECT count(*) / 2 AS games_compared,
	   max(abs(c.mu - p.new_mu)) < 1e-9 AND max(abs(c.sigma - p.new_sigma)) < 1e-9 AS same_results
  FROM (SELECT * FROM bench_game WHERE g <= 1000) m,
	   LATERAL mm.openskill_rate(ARRAY[m.mu1, m.mu2], ARRAY[m.s1, m.s2], '{1,2}', '{1,2}')
		   WITH ORDINALITY c(mu, sigma, o),
	   LATERAL pg_temp.openskill_rate_plpgsql(ARRAY[m.mu1, m.mu2], ARRAY[m.s1, m.s2], '{1,2}', '{1,2}')
		   WITH ORDINALITY p(new_mu, new_sigma, o)
 WHERE c.o = p.o;

-- Times one query (run as a whole) and records ns per call.
CREATE FUNCTION pg_temp.time_query(label text, query text, calls bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	started timestamptz;
	ms numeric;
BEGIN
	started := clock_timestamp();
	EXECUTE query;
	ms := extract(epoch FROM clock_timestamp() - started) * 1000;
	INSERT INTO bench_result (what, calls, ms_total, ns_per_call)
	VALUES (label, calls, round(ms, 1), round(ms * 1e6 / calls));
END
$$;

\o /dev/null
-- Baseline: the same scan building the same arrays, without the rating
-- call, so the function's own cost can be told apart from the executor's.
SELECT pg_temp.time_query('openskill 1v1: scan + arrays only (baseline)', $q$
	SELECT count(*), sum(cardinality(ARRAY[m.mu1, m.mu2]) + cardinality(ARRAY[m.s1, m.s2]))
	  FROM bench_game m
$q$, 1000000);
SELECT pg_temp.time_query('openskill 1v1: C mm.openskill_rate, 1M games', $q$
	SELECT count(*), sum(r.mu) FROM bench_game m,
		   LATERAL mm.openskill_rate(ARRAY[m.mu1, m.mu2], ARRAY[m.s1, m.s2], '{1,2}', '{1,2}') r
$q$, 1000000);
SELECT pg_temp.time_query('openskill 1v1: PL/pgSQL, first 50k games', $q$
	SELECT count(*), sum(r.new_mu) FROM bench_game m,
		   LATERAL pg_temp.openskill_rate_plpgsql(ARRAY[m.mu1, m.mu2], ARRAY[m.s1, m.s2], '{1,2}', '{1,2}') r
	 WHERE m.g <= 50000
$q$, 50000);
-- The usual matchmaking game, 5 v 5: 100k games (1M player rows) in C, 10k
-- games in PL/pgSQL.
CREATE TEMP TABLE bench_5v5 AS
SELECT g, array_agg(15 + random() * 20 ORDER BY i) AS mu,
	   array_agg(2 + random() * 6 ORDER BY i) AS sigma,
	   array_agg((i - 1) / 5 + 1 ORDER BY i) AS team
  FROM generate_series(1, 100000) g, generate_series(1, 10) i
 GROUP BY g;
SELECT pg_temp.time_query('openskill 5v5: C, 100k games (1M player rows)', $q$
	SELECT count(*), sum(r.mu) FROM bench_5v5 m, LATERAL mm.openskill_rate(m.mu, m.sigma, m.team, m.team) r
$q$, 100000);
SELECT pg_temp.time_query('openskill 5v5: PL/pgSQL, first 10k games', $q$
	SELECT count(*), sum(r.new_mu) FROM bench_5v5 m, LATERAL pg_temp.openskill_rate_plpgsql(m.mu, m.sigma, m.team, m.team) r
	 WHERE m.g <= 10000
$q$, 10000);

-- balance_teams: random ratings per call (1000..2000 with decimals), each
-- call timed on its own so that the worst call is known too.
CREATE TEMP TABLE balance_call (what text, ms numeric);
CREATE FUNCTION pg_temp.time_balance(players int, teams int, calls int)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	label text := format('balance_teams %s players, %s teams (%s)', players, teams,
						 CASE WHEN players <= 16 THEN 'exact' ELSE 'heuristic' END);
	ratings float8[];
	started timestamptz;
	result int[];
BEGIN
	FOR i IN 1..calls LOOP
		ratings := ARRAY(SELECT 1000 + random() * 1000 FROM generate_series(1, players));
		started := clock_timestamp();
		result := mm.balance_teams(ratings, teams);
		INSERT INTO balance_call
		VALUES (label, extract(epoch FROM clock_timestamp() - started) * 1000);
	END LOOP;
	INSERT INTO bench_result (what, calls, ms_total, ns_per_call, ms_per_call_p99, ms_per_call_max)
	SELECT label, count(*), round(sum(ms), 1), round(avg(ms) * 1e6),
		   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 3),
		   round(max(ms), 3)
	  FROM balance_call WHERE what = label;
END
$$;
SELECT setseed(0.62);
SELECT pg_temp.time_balance(10, 2, 1000);
SELECT pg_temp.time_balance(16, 2, 1000);
SELECT pg_temp.time_balance(16, 4, 300);
SELECT pg_temp.time_balance(16, 5, 300);
SELECT pg_temp.time_balance(32, 2, 1000);
SELECT pg_temp.time_balance(200, 2, 200);
SELECT pg_temp.time_balance(200, 10, 100);

\o
SELECT what, calls, ms_total, ns_per_call,
	   round(ns_per_call / 1e6, 3) AS ms_per_call, ms_per_call_p99, ms_per_call_max
  FROM bench_result ORDER BY seq;

-- Ratios: PL/pgSQL time per game over C time per game, raw and with the
-- scan baseline (the executor's share) taken off both.
WITH r AS (SELECT what, ns_per_call FROM bench_result)
SELECT round((SELECT ns_per_call FROM r WHERE what LIKE 'openskill 1v1: PL/pgSQL%')
			 / (SELECT ns_per_call FROM r WHERE what LIKE 'openskill 1v1: C%'), 1) AS ratio_1v1_raw,
	   round(((SELECT ns_per_call FROM r WHERE what LIKE 'openskill 1v1: PL/pgSQL%')
			  - (SELECT ns_per_call FROM r WHERE what LIKE '%baseline%'))
			 / nullif((SELECT ns_per_call FROM r WHERE what LIKE 'openskill 1v1: C%')
					  - (SELECT ns_per_call FROM r WHERE what LIKE '%baseline%'), 0), 1) AS ratio_1v1_net,
	   round((SELECT ns_per_call FROM r WHERE what LIKE 'openskill 5v5: PL/pgSQL%')
			 / (SELECT ns_per_call FROM r WHERE what LIKE 'openskill 5v5: C%'), 1) AS ratio_5v5_raw;
