-- Role queues (47_role_queues.sql): the trigger and the view over their
-- new functions (routines of the manifest).

CREATE TRIGGER queues_after_delete_autofill AFTER DELETE ON mm.queues
	REFERENCING OLD TABLE AS old_queues
	FOR EACH STATEMENT EXECUTE FUNCTION mm.queues_after_delete_autofill();

CREATE VIEW mm.role_stats AS
	SELECT * FROM mm.role_stats('1 hour'::interval, pg_catalog.now());
COMMENT ON VIEW mm.role_stats IS 'mm.role_stats(time_window) over the last hour';
GRANT SELECT ON TABLE mm.role_stats TO mm_analyst;
