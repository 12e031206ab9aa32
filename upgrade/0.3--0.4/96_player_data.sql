-- A player's data on request (issue 28; docs/players-data.md): the ticket
-- trigger that keeps a ticket's players fixed lets mm.forget_player's
-- anonymisation through.  mm.export_player, mm.forget_player and their
-- helpers are src/sql/77_player_data.sql, part of this upgrade as it is.

-- A ticket's id, queue and players are fixed once it exists; the one
-- change let through is mm.forget_player's: players anonymised in place.
CREATE OR REPLACE FUNCTION mm.tickets_refuse_change() RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF OLD.id = NEW.id AND OLD.queue = NEW.queue
	   AND mm.ticket_players_anonymised(OLD.players, NEW.players) THEN
		RETURN NEW;
	END IF;
	RAISE EXCEPTION 'the queue and players of ticket % cannot be changed', OLD.id
		USING ERRCODE = 'feature_not_supported',
			  HINT = 'Cancel the ticket and create a new one.';
END
$$;
