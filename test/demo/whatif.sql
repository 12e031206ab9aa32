-- The demo's what-if (test/demo.sh runs this file after the live part):
-- the queue's tickets of the run replayed by mm.replay twice, with the
-- queue's own config and with a looser candidate (its first skill rule,
-- difference or team_difference, with a wider max), beside what really
-- happened; then a chart of time to match for the three, in the style of
-- the simulator's charts (HTML, inline SVG).
--
-- psql variables: queue (the queue replayed), max (the candidate's max),
-- chart (the HTML file written).
-- Everything here only reads: temporary tables and functions aside, the
-- database is as it was.

SET timezone = 'UTC';
\pset footer off

-- the window: the run's tickets of the queue (the report's last hour); the
-- ticks go on until every ticket has ended in a replay too (timed out at the
-- latest), which adds no ticket: the run's arrivals are over
CREATE TEMP TABLE wi_window AS
SELECT date_trunc('second', min(t.created_at)) AS from_time,
	   greatest(date_trunc('second', now()),
				date_trunc('second', max(t.created_at))
				  + make_interval(secs => coalesce((q.config ->> 'ticket_timeout_seconds')::float8, 0)))
		 + interval '2 seconds' AS to_time
  FROM mm.tickets t JOIN mm.queues q ON q.name = t.queue
 WHERE t.queue = :'queue' AND t.created_at > now() - interval '1 hour'
 GROUP BY q.config;

-- the candidate: the first skill rule (difference or team_difference) with
-- the given max; the rest of the config as it is live
CREATE TEMP TABLE wi_candidate AS
SELECT r.value ->> 'name' AS rule, r.value -> 'max' AS live_max,
	   jsonb_set(q.config, ARRAY['rules', (r.ord - 1)::text, 'max'],
				 to_jsonb(:max::numeric)) AS config
  FROM mm.queues q
 CROSS JOIN LATERAL jsonb_array_elements(q.config -> 'rules') WITH ORDINALITY AS r(value, ord)
 WHERE q.name = :'queue' AND r.value ->> 'type' IN ('difference', 'team_difference')
 ORDER BY r.ord
 LIMIT 1;

CREATE TEMP TABLE wi AS
SELECT mm.replay(:'queue', NULL, w.from_time, w.to_time) AS live,
	   mm.replay(:'queue', c.config, w.from_time, w.to_time) AS candidate
  FROM wi_window w, wi_candidate c;

-- what the table and the chart show, in words (both print them)
CREATE TEMP TABLE wi_text AS
SELECT format('What-if (mm.replay): the %s tickets of %s in this run (the first at %s UTC), replayed in simulated time, ticking once a second until each has ended, with the queue''s own config and with a looser candidate: rule "%s" with max %s instead of %s.',
			  wi.live -> 'recorded' ->> 'tickets', :'queue', to_char(w.from_time, 'HH24:MI:SS'),
			  c.rule, :max, c.live_max) AS heading,
	   'The live part ran on the wall clock: a ticket cancelled in it (the run''s end) is cancelled in a replay at the time recorded (its updated_at), unless the replay matched it first; timeouts follow the config, so a ticket the run matched and a replay does not searches on to its timeout.'
	   || CASE WHEN (q.config ->> 'acceptance_timeout_seconds')::float8 > 0
			   THEN ' The acceptance step is modelled: a proposal of the same tickets as a recorded one is answered as recorded, after the same delay; another is accepted or not at the rates recorded (seeded draws); a replayed match counts from its last acceptance, as a recorded one.'
			   ELSE '' END
	   || ' So few tickets make every figure noisy: another run moves them by seconds.' AS note
  FROM wi, wi_window w, wi_candidate c, mm.queues q
 WHERE q.name = :'queue';
\pset tuples_only on
SELECT heading FROM wi_text;
\pset tuples_only off

CREATE TEMP TABLE wi_table AS
SELECT f.n, f.label AS figure,
	   coalesce(wi.live -> 'recorded' ->> f.key, '-') AS "recorded (live)",
	   coalesce(wi.live -> 'replay' ->> f.key, '-') AS "replay: live config",
	   coalesce(wi.candidate -> 'replay' ->> f.key, '-') AS "replay: candidate"
  FROM wi, (VALUES (1, 'tickets', 'tickets'), (2, 'matched_share', 'matched share'),
				   (3, 'time_to_match_p50', 'time to match p50 (s)'),
				   (4, 'time_to_match_p95', 'time to match p95 (s)'),
				   (5, 'time_to_match_max', 'time to match max (s)'),
				   (6, 'timed_out', 'timed out'), (7, 'cancelled', 'cancelled'),
				   (8, 'still_searching', 'still searching'), (9, 'matches', 'matches'),
				   (10, 'quality_mean', 'quality mean'), (11, 'quality_p10', 'quality p10'),
				   (12, 'skill_spread_mean', 'skill spread mean'),
				   (13, 'team_gap_mean', 'team gap mean'),
				   (14, 'proposals_cancelled', 'proposals cancelled')) AS f(n, key, label);
SELECT figure, "recorded (live)", "replay: live config", "replay: candidate" FROM wi_table ORDER BY n;
\pset tuples_only on
SELECT note FROM wi_text;
\pset tuples_only off

-- the times to match, one row per matched ticket: recorded (matched_at) and
-- replayed (the match's ready_at: its last acceptance, or when formed
-- without acceptance), each less the ticket's created_at
CREATE TEMP TABLE wi_waits AS
SELECT 1 AS series, t.matched_at AS at, extract(epoch FROM t.matched_at - t.created_at)::float8 AS wait
  FROM mm.tickets t, wi_window w
 WHERE t.queue = :'queue' AND t.created_at >= w.from_time AND t.created_at < w.to_time
   AND t.status = 'matched'
UNION ALL
SELECT 2, r.ready_at, extract(epoch FROM r.ready_at - t.created_at)::float8
  FROM wi_window w
 CROSS JOIN LATERAL mm.replay_matches(:'queue', NULL, w.from_time, w.to_time) r
 CROSS JOIN LATERAL unnest(r.tickets) AS k(id)
  JOIN mm.tickets t ON t.id = k.id
UNION ALL
SELECT 3, r.ready_at, extract(epoch FROM r.ready_at - t.created_at)::float8
  FROM wi_window w, wi_candidate c
 CROSS JOIN LATERAL mm.replay_matches(:'queue', c.config, w.from_time, w.to_time) r
 CROSS JOIN LATERAL unnest(r.tickets) AS k(id)
  JOIN mm.tickets t ON t.id = k.id;

-- A round step for axis ticks: 1, 2 or 5 times a power of ten (as mm_sim's).
CREATE FUNCTION pg_temp.wi_step(span float8, ticks int) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN n <= 1 THEN mag WHEN n <= 2 THEN 2 * mag WHEN n <= 5 THEN 5 * mag ELSE 10 * mag END
	  FROM (SELECT mag, (span / ticks) / mag AS n
			  FROM (SELECT power(10, floor(log(greatest(span / ticks, 1e-9)))) AS mag) m) s
$$;

-- One line chart as an SVG element, in mm_sim's layout (760 x 256, the same
-- margins, palette and legend in the top margin).  lines: [{"name",
-- "color", "dash", "points": [[x, y], ...]}, ...]
CREATE FUNCTION pg_temp.wi_svg(title text, xlabel text, ylabel text, lines jsonb, xmax float8, ymax float8)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	w CONSTANT int := 760;
	h CONSTANT int := 256;
	l CONSTANT int := 56;
	t CONSTANT int := 32;
	pw CONSTANT float8 := 760 - 56 - 16;
	ph CONSTANT float8 := 256 - 32 - 36;
	out text;
	step float8;
	v float8;
	y float8;
	s jsonb;
	i int := 0;
BEGIN
	IF ymax <= 0 THEN ymax := 1; END IF;
	step := pg_temp.wi_step(ymax, 5);
	ymax := ceil(ymax / step) * step;
	IF xmax <= 0 THEN xmax := 1; END IF;
	out := format('<h2>%s</h2>' || E'\n' || '<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="11">' || E'\n',
				  title, w, h, w, h)
		|| format('<rect x="%s" y="%s" width="%s" height="%s" fill="#fafafa" stroke="#ccc"/>' || E'\n', l, t, pw, ph);
	v := 0;
	WHILE v <= ymax + step / 1000 LOOP
		y := t + ph - v / ymax * ph;
		out := out || format('<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="#e0e0e0"/><text x="%s" y="%s" text-anchor="end">%s</text>' || E'\n',
							 l, l + pw, round(y::numeric, 1), round(y::numeric, 1), l - 4, round((y + 4)::numeric, 1),
							 round(v::numeric, 2)::float8);
		v := v + step;
	END LOOP;
	step := pg_temp.wi_step(xmax, 8);
	xmax := ceil(xmax / step - 1e-9) * step;
	v := 0;
	WHILE v <= xmax + step / 1000 LOOP
		out := out || format('<text x="%s" y="%s" text-anchor="middle">%s</text>' || E'\n',
							 round((l + v / xmax * pw)::numeric, 1), t + ph::int + 14, round(v::numeric, 2)::float8);
		v := v + step;
	END LOOP;
	out := out || format('<text x="%s" y="%s" text-anchor="middle">%s</text>' || E'\n', round((l + pw / 2)::numeric), h - 4, xlabel)
		|| format('<text x="12" y="%s" transform="rotate(-90 12 %s)" text-anchor="middle">%s</text>' || E'\n',
				  round((t + ph / 2)::numeric), round((t + ph / 2)::numeric), ylabel);
	FOR s IN SELECT value FROM jsonb_array_elements(lines) LOOP
		IF jsonb_array_length(s -> 'points') > 0 THEN
			out := out || format('<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>' || E'\n',
								 s ->> 'color',
								 CASE WHEN s ->> 'dash' IS NOT NULL THEN format(' stroke-dasharray="%s"', s ->> 'dash') ELSE '' END,
								 (SELECT string_agg(format('%s,%s', round((l + (p ->> 0)::float8 / xmax * pw)::numeric, 1),
														   round((t + ph - (p ->> 1)::float8 / ymax * ph)::numeric, 1)), ' '
													ORDER BY o)
									FROM jsonb_array_elements(s -> 'points') WITH ORDINALITY AS e(p, o)));
		END IF;
		-- the legend sits in the top margin, above the plot
		out := out || format('<line x1="%s" x2="%s" y1="9" y2="9" stroke="%s" stroke-width="3"%s/><text x="%s" y="13">%s</text>' || E'\n',
							 l + i * 230, l + i * 230 + 18, s ->> 'color',
							 CASE WHEN s ->> 'dash' IS NOT NULL THEN format(' stroke-dasharray="%s"', s ->> 'dash') ELSE '' END,
							 l + i * 230 + 22, s ->> 'name');
		i := i + 1;
	END LOOP;
	RETURN out || '</svg>' || E'\n';
END
$$;

-- the lines: the average time to match of the tickets matched in each
-- 5-second window (as mm_sim's chart), and the share of the window's
-- tickets matched within x seconds
CREATE TEMP TABLE wi_lines AS
-- drawn in the order of draw: the dashed line last, visible where it meets another
WITH names(series, name, color, dash, draw) AS (
	VALUES (1, 'recorded (live config, live ticks)', '#1f77b4', NULL, 1),
		   (2, 'replay: live config', '#7f7f7f', '5 4', 3),
		   (3, 'replay: candidate', '#d62728', NULL, 2)),
buckets AS (
	SELECT x.series, floor(extract(epoch FROM x.at - w.from_time) / 5) AS b, avg(x.wait) AS wait
	  FROM wi_waits x, wi_window w GROUP BY 1, 2),
shares AS (
	SELECT x.series, x.wait,
		   (row_number() OVER (PARTITION BY x.series ORDER BY x.wait))::float8
			 / (SELECT (wi.live -> 'recorded' ->> 'tickets')::float8 FROM wi) AS share
	  FROM wi_waits x)
SELECT n.series, n.draw, n.name, n.color, n.dash,
	   coalesce((SELECT jsonb_agg(jsonb_build_array((b.b + 0.5) * 5 / 60.0, b.wait) ORDER BY b.b)
				   FROM buckets b WHERE b.series = n.series), '[]') AS over_time,
	   -- a step line from (0, 0): flat at the share reached, up at each match
	   coalesce((SELECT jsonb_agg(p ORDER BY o1, o2)
				   FROM (SELECT 0::float8 AS o1, -1 AS o2, '[0, 0]'::jsonb AS p
						 UNION ALL
						 SELECT s.wait, 0,
								jsonb_build_array(s.wait, s.share - 1 / (SELECT (wi.live -> 'recorded' ->> 'tickets')::float8 FROM wi)) AS p
						   FROM shares s WHERE s.series = n.series
						 UNION ALL
						 SELECT s.wait, 1, jsonb_build_array(s.wait, s.share) FROM shares s WHERE s.series = n.series) z),
				'[]') AS within
  FROM names n;

\pset tuples_only on
\pset format unaligned
\o :chart
SELECT '<!DOCTYPE html>' || E'\n' || '<html><head><meta charset="utf-8"><title>What-if: ' || :'queue' || ' replayed with a looser config</title>' || E'\n'
	|| '<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}</style></head><body>' || E'\n'
	|| format('<h1>What-if: %s replayed with a looser config (mm.replay)</h1>', :'queue') || E'\n'
	|| format('<p>%s Recorded (blue): what happened, matched_at less created_at; replayed: the match''s ready_at (mm.replay_matches) less the ticket''s created_at, with the queue''s own config (grey, dashed) and with the candidate (red).</p>' || E'\n' || '<p>%s</p>',
			  tx.heading, tx.note) || E'\n'
	|| pg_temp.wi_svg('Time to match', 'minutes since the first ticket (each point: the tickets matched in one 5-second window)',
					  'average seconds in the queue',
					  (SELECT jsonb_agg(jsonb_build_object('name', l.name, 'color', l.color, 'dash', l.dash, 'points', l.over_time) ORDER BY l.draw) FROM wi_lines l),
					  (SELECT (floor(max(extract(epoch FROM x.at - w.from_time)) / 5) + 1) * 5 / 60.0 FROM wi_waits x, wi_window w),
					  (SELECT max(x.wait) FROM wi_waits x))
	|| pg_temp.wi_svg('Share of the tickets matched within a time', 'seconds in the queue',
					  'share of the tickets (0..1)',
					  (SELECT jsonb_agg(jsonb_build_object('name', l.name, 'color', l.color, 'dash', l.dash, 'points', l.within) ORDER BY l.draw) FROM wi_lines l),
					  (SELECT max(x.wait) FROM wi_waits x), 1)
	|| '<h2>Side by side (mm.replay)</h2>' || E'\n'
	|| '<table><tr><th>figure</th><th>recorded (live)</th><th>replay: live config</th><th>replay: candidate</th></tr>' || E'\n'
	|| (SELECT string_agg(format('<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>', x.figure,
								x."recorded (live)", x."replay: live config", x."replay: candidate"), E'\n' ORDER BY x.n)
		  FROM wi_table x)
	|| E'\n</table>\n</body></html>'
  FROM wi_text tx;
\o
\pset format aligned
\pset tuples_only off
