
-- mm.schedule_jobs.job_role names only a role its writer may act as
-- (src/sql/90_scheduling.sql, mm.schedule_jobs_check_role)
CREATE TRIGGER schedule_jobs_check_role BEFORE INSERT OR UPDATE OF job_role ON mm.schedule_jobs
	FOR EACH ROW EXECUTE FUNCTION mm.schedule_jobs_check_role();
