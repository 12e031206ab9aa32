-- Trusted rule values: "source": "rating" reads the stored rating in the
-- queue's pool (the system's defaults for the unrated), "source": "player"
-- reads mm.players.attributes (mm.set_player_attributes); a client's own
-- attributes are never read for those rules.  "widen_by_rd" widens a
-- Glicko-2 difference rule by f x the largest rating deviation.
SET timezone = 'UTC';
\set SHOW_CONTEXT never
CREATE FUNCTION pg_temp.matches(q text) RETURNS TABLE (players text, quality numeric)
LANGUAGE sql AS $$
	SELECT (SELECT string_agg(mp.player_id, ',' ORDER BY mp.player_id) FROM mm.match_players mp
			 WHERE mp.match_id = m.id), round(m.quality::numeric, 4)
	  FROM mm.matches m WHERE m.queue = q ORDER BY m.id
$$;

-- the config: the source, its attribute, the rating system it needs
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "s", "type": "difference", "source": "rating", "max": 100}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "elo"},
  "rules": [{"name": "s", "type": "string_equality", "source": "rating"}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "elo"},
  "rules": [{"name": "s", "type": "latency", "source": "player", "max_ms": 50}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "s", "type": "difference", "source": "moon", "attribute": "x", "max": 1}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "glicko2"},
  "rules": [{"name": "s", "type": "difference", "source": "rating", "attribute": "wins", "max": 100}]}');
-- a field the system does not store, a rating compared with a string: refused
-- (every player would miss it, and the queue would never match)
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "elo"},
  "rules": [{"name": "s", "type": "comparison", "source": "rating", "attribute": "rd", "operator": ">", "reference": 1}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "glicko2"},
  "rules": [{"name": "s", "type": "difference", "source": "rating", "attribute": "sigma", "max": 1}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "elo"},
  "rules": [{"name": "s", "type": "comparison", "source": "rating", "operator": "!=", "reference": "x"}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "elo"},
  "rules": [{"name": "s", "type": "comparison", "source": "rating", "operator": "contains", "reference": "x"}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "openskill"},
  "rules": [{"name": "s", "type": "difference", "source": "rating", "attribute": "sigma", "max": 1}]}') -> 'rules' -> 0 ->> 'attribute' AS openskill_sigma;
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "elo"},
  "rules": [{"name": "s", "type": "difference", "source": "rating", "max": 100, "widen_by_rd": 1}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "glicko2"},
  "rules": [{"name": "s", "type": "difference", "attribute": "skill", "max": 100, "widen_by_rd": 1}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "glicko2"},
  "rules": [{"name": "s", "type": "difference", "source": "rating", "max": 100, "widen_by_rd": -1}]}');
SELECT mm.validate_queue_config('{"match_size": {"min": 2, "max": 2}, "rating": {"system": "glicko2"},
  "rules": [{"name": "s", "type": "difference", "source": "rating", "max": 100, "widen_by_rd": 0.5}]}') -> 'rules';

-- Glicko-2, pool "rs_pool": a (1500, RD 50), b (1700, RD 50), c (1650, RD
-- 300), d unrated (1500, RD 350 by default).  b claims a rating of 1500 in
-- its ticket: the rule does not read it.
SELECT mm.create_queue('rs_glicko', '{"match_size": {"min": 2, "max": 2},
  "rating": {"system": "glicko2", "pool": "rs_pool"},
  "rules": [{"name": "skill", "type": "difference", "source": "rating", "max": 100}]}');
INSERT INTO mm.ratings (player_id, pool, rating, rd, volatility) VALUES
  ('rs_a', 'rs_pool', 1500, 50, 0.06), ('rs_b', 'rs_pool', 1700, 50, 0.06), ('rs_c', 'rs_pool', 1650, 300, 0.06);
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('rs_glicko', '[{"id": "rs_a"}]', '2026-01-01 00:00:00+00'),
  ('rs_glicko', '[{"id": "rs_b", "attributes": {"rating": 1500}}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('rs_glicko', '2026-01-01 00:00:05+00');
-- the unrated d plays at the default 1500: with a
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('rs_glicko', '[{"id": "rs_d"}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('rs_glicko', '2026-01-01 00:00:06+00');
SELECT * FROM pg_temp.matches('rs_glicko');

-- widen_by_rd 0.5: c (1650, RD 300) and e (1800, RD 50) are 150 apart,
-- within 100 + 0.5 x 300 = 250: they match; f and g, the same ratings in a
-- queue without widening, do not
SELECT mm.create_queue('rs_widen', '{"match_size": {"min": 2, "max": 2},
  "rating": {"system": "glicko2", "pool": "rs_pool"},
  "rules": [{"name": "skill", "type": "difference", "source": "rating", "max": 100, "widen_by_rd": 0.5}]}');
SELECT mm.create_queue('rs_narrow', '{"match_size": {"min": 2, "max": 2},
  "rating": {"system": "glicko2", "pool": "rs_pool"},
  "rules": [{"name": "skill", "type": "difference", "source": "rating", "max": 100}]}');
INSERT INTO mm.ratings (player_id, pool, rating, rd, volatility) VALUES
  ('rs_e', 'rs_pool', 1800, 50, 0.06), ('rs_f', 'rs_pool', 1650, 300, 0.06), ('rs_g', 'rs_pool', 1800, 50, 0.06);
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('rs_widen', '[{"id": "rs_c"}]', '2026-01-01 00:00:00+00'),
  ('rs_widen', '[{"id": "rs_e"}]', '2026-01-01 00:00:01+00'),
  ('rs_narrow', '[{"id": "rs_f"}]', '2026-01-01 00:00:00+00'),
  ('rs_narrow', '[{"id": "rs_g"}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('rs_widen', '2026-01-01 00:00:05+00') AS widened, mm.tick('rs_narrow', '2026-01-01 00:00:05+00') AS narrow;
SELECT * FROM pg_temp.matches('rs_widen');

-- OpenSkill: the rating is mu (unrated: 25)
SELECT mm.create_queue('rs_open', '{"match_size": {"min": 2, "max": 2},
  "rating": {"system": "openskill", "pool": "rs_open"},
  "rules": [{"name": "skill", "type": "difference", "source": "rating", "max": 2}]}');
INSERT INTO mm.ratings (player_id, pool, mu, sigma) VALUES ('rs_o1', 'rs_open', 30, 2), ('rs_o2', 'rs_open', 26, 2);
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('rs_open', '[{"id": "rs_o1"}]', '2026-01-01 00:00:00+00'),
  ('rs_open', '[{"id": "rs_o2"}]', '2026-01-01 00:00:01+00'),
  ('rs_open', '[{"id": "rs_o3"}]', '2026-01-01 00:00:02+00');
SELECT mm.tick('rs_open', '2026-01-01 00:00:05+00');
SELECT * FROM pg_temp.matches('rs_open');

-- "source": "player": the server's attributes; a player without them is
-- missing (the default stands in when the rule has one)
SELECT mm.set_player_attributes('rs_x', '{"level": 10}');
SELECT mm.set_player_attributes('rs_y', '{"level": 30}');
SELECT mm.set_player_attributes('rs_z', '{"level": 12}');
SELECT mm.set_player_attributes('rs_y', '{"level": 31}');
SELECT id, attributes FROM mm.players WHERE id LIKE 'rs\_%' ORDER BY id;
SELECT mm.create_queue('rs_level', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "lvl", "type": "difference", "source": "player", "attribute": "level", "max": 5}]}');
SELECT mm.create_queue('rs_level_default', '{"match_size": {"min": 2, "max": 2},
  "rules": [{"name": "lvl", "type": "difference", "source": "player", "attribute": "level", "max": 5,
             "default": 31}]}');
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('rs_level', '[{"id": "rs_x", "attributes": {"level": 30}}]', '2026-01-01 00:00:00+00'),
  ('rs_level', '[{"id": "rs_w"}]', '2026-01-01 00:00:01+00'),
  ('rs_level', '[{"id": "rs_z"}]', '2026-01-01 00:00:02+00'),
  ('rs_level_default', '[{"id": "rs_y"}]', '2026-01-01 00:00:00+00'),
  ('rs_level_default', '[{"id": "rs_v"}]', '2026-01-01 00:00:01+00');
SELECT mm.tick('rs_level', '2026-01-01 00:00:05+00') AS level, mm.tick('rs_level_default', '2026-01-01 00:00:05+00') AS level_default;
SELECT * FROM pg_temp.matches('rs_level');
SELECT * FROM pg_temp.matches('rs_level_default');
SELECT t.players -> 0 ->> 'id' AS still_searching FROM mm.tickets t WHERE t.queue = 'rs_level' AND t.status = 'searching';

-- ids that share their first 128 bytes (64 two-byte characters) are two
-- players: each is read with their own rating (one took the other's)
SELECT mm.create_queue('rs_long_ids', '{"match_size": {"min": 2, "max": 2},
  "rating": {"system": "elo", "pool": "rs_long_pool"},
  "rules": [{"name": "skill", "type": "difference", "source": "rating", "max": 100}]}');
INSERT INTO mm.ratings (player_id, pool, rating) VALUES
  (repeat('é', 64) || 'a', 'rs_long_pool', 1500), (repeat('é', 64) || 'b', 'rs_long_pool', 3000);
INSERT INTO mm.tickets (queue, players, created_at) VALUES
  ('rs_long_ids', jsonb_build_array(jsonb_build_object('id', repeat('é', 64) || 'a')), '2026-01-01 00:00:00+00'),
  ('rs_long_ids', jsonb_build_array(jsonb_build_object('id', repeat('é', 64) || 'b')), '2026-01-01 00:00:01+00');
SELECT mm.tick('rs_long_ids', '2026-01-01 00:00:05+00') AS matches;
SELECT mm.drop_queue('rs_long_ids', force => true);
DELETE FROM mm.ratings WHERE pool = 'rs_long_pool';

-- mm.set_player_attributes checks its arguments
SELECT mm.set_player_attributes('rs_x', '[1]');
SELECT mm.set_player_attributes('', '{}');
SELECT mm.set_player_attributes(repeat('p', 129), '{}');
SELECT mm.set_player_attributes('rs_x', NULL);
SELECT mm.set_player_attributes('rs_x', '{"stats": {"xp": [1, 2e12]}}');
SELECT mm.set_player_attributes('rs_x', '{"level": -1e400}');

SELECT mm.drop_queue(q, force => true)
  FROM unnest(ARRAY['rs_glicko', 'rs_widen', 'rs_narrow', 'rs_open', 'rs_level', 'rs_level_default']) q;
DELETE FROM mm.ratings WHERE pool IN ('rs_pool', 'rs_open');
DELETE FROM mm.players WHERE id LIKE 'rs\_%';
