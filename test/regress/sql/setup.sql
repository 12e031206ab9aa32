-- Creates the extension for every later regression file, and checks what it
-- installs: schema mm, not relocatable, and no hard dependency on pg_cron
-- (pg_cron can only be created in one database, so it is a soft dependency).
CREATE EXTENSION matchmaking;
SELECT extname, extversion, extrelocatable, n.nspname AS schema
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE extname = 'matchmaking';
SELECT name, version, superuser, trusted, relocatable, requires
  FROM pg_available_extension_versions WHERE name = 'matchmaking';
