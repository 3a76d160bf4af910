-- PostgreSQL form of migrations/021_quotas.sql (same number, same meaning): BIGINT for
-- every integer, and the triggers as PL/pgSQL functions.
-- Schema version 21: per-principal quotas (daemon/quota/, docs/limits.md "Quotas").
--
-- quota_overrides: an admin's override of one principal's limits: a limit, -1 for none,
-- -2 for the role's default.
CREATE TABLE quota_overrides (
  principal TEXT PRIMARY KEY,  -- a token name, as builds.submitted_by holds it
  submissions BIGINT NOT NULL,
  queued_jobs BIGINT NOT NULL,
  stored_bytes BIGINT NOT NULL,
  updated_by TEXT NOT NULL,
  updated_ms BIGINT NOT NULL
);

-- principal_usage: what each principal holds, kept by triggers (see the SQLite form for
-- what counts, and why). Builds, jobs, attempts and artifacts are never deleted; a change
-- that deletes them, or rebuilds one of these tables, must keep these figures right.
CREATE TABLE principal_usage (
  principal TEXT PRIMARY KEY,
  queued_jobs BIGINT NOT NULL DEFAULT 0,
  stored_bytes BIGINT NOT NULL DEFAULT 0
);
INSERT INTO principal_usage(principal, queued_jobs, stored_bytes)
  SELECT p, SUM(q), SUM(n) FROM (
    SELECT submitted_by AS p, 0 AS q, OCTET_LENGTH(recipe) AS n FROM builds
    UNION ALL SELECT b.submitted_by, 1, 0 FROM jobs j JOIN builds b ON b.id = j.build_id
      WHERE j.state IN (1, 2)
    UNION ALL SELECT b.submitted_by, 0, a.log_bytes FROM attempts a
      JOIN jobs j ON j.id = a.job_id JOIN builds b ON b.id = j.build_id
    UNION ALL SELECT b.submitted_by, 0, f.size FROM artifacts f
      JOIN jobs j ON j.id = f.job_id JOIN builds b ON b.id = j.build_id WHERE f.attempt > 0
    UNION ALL SELECT uploaded_by, 0, size FROM source_archives
  ) AS u GROUP BY p;

-- Adds to a principal's figures (a row is made for a principal not seen yet).
CREATE FUNCTION farm_add_usage(p_who TEXT, p_queued BIGINT, p_bytes BIGINT) RETURNS void AS $$
BEGIN
  IF p_who IS NULL OR (p_queued = 0 AND p_bytes = 0) THEN
    RETURN;
  END IF;
  INSERT INTO principal_usage(principal, queued_jobs, stored_bytes)
    VALUES (p_who, p_queued, p_bytes)
    ON CONFLICT (principal) DO UPDATE
      SET queued_jobs = principal_usage.queued_jobs + p_queued,
          stored_bytes = principal_usage.stored_bytes + p_bytes;
END
$$ LANGUAGE plpgsql;

-- The principal whose build job `p_job` belongs to.
CREATE FUNCTION farm_job_principal(p_job BIGINT) RETURNS TEXT AS $$
  SELECT b.submitted_by FROM jobs j JOIN builds b ON b.id = j.build_id WHERE j.id = p_job
$$ LANGUAGE sql STABLE;

CREATE FUNCTION farm_usage_build() RETURNS trigger AS $$
BEGIN
  PERFORM farm_add_usage(NEW.submitted_by, 0, OCTET_LENGTH(NEW.recipe));
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER usage_build_insert AFTER INSERT ON builds
  FOR EACH ROW EXECUTE FUNCTION farm_usage_build();

CREATE FUNCTION farm_usage_job() RETURNS trigger AS $$
DECLARE
  was BIGINT := 0;
  now_queued BIGINT := 0;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF OLD.state IN (1, 2) THEN
      was := 1;
    END IF;
  END IF;
  IF NEW.state IN (1, 2) THEN
    now_queued := 1;
  END IF;
  IF now_queued != was THEN
    PERFORM farm_add_usage((SELECT submitted_by FROM builds WHERE id = NEW.build_id),
                           now_queued - was, 0);
  END IF;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER usage_job AFTER INSERT OR UPDATE OF state ON jobs
  FOR EACH ROW EXECUTE FUNCTION farm_usage_job();

CREATE FUNCTION farm_usage_log_bytes() RETURNS trigger AS $$
BEGIN
  PERFORM farm_add_usage(farm_job_principal(NEW.job_id), 0, NEW.log_bytes - OLD.log_bytes);
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER usage_log_bytes AFTER UPDATE OF log_bytes ON attempts
  FOR EACH ROW WHEN (NEW.log_bytes IS DISTINCT FROM OLD.log_bytes)
  EXECUTE FUNCTION farm_usage_log_bytes();

CREATE FUNCTION farm_usage_artifact() RETURNS trigger AS $$
BEGIN
  PERFORM farm_add_usage(farm_job_principal(NEW.job_id), 0, NEW.size);
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER usage_artifact_insert AFTER INSERT ON artifacts
  FOR EACH ROW WHEN (NEW.attempt > 0) EXECUTE FUNCTION farm_usage_artifact();

CREATE FUNCTION farm_usage_source() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM farm_add_usage(NEW.uploaded_by, 0, NEW.size);
  ELSE
    PERFORM farm_add_usage(OLD.uploaded_by, 0, -OLD.size);
  END IF;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER usage_source AFTER INSERT OR DELETE ON source_archives
  FOR EACH ROW EXECUTE FUNCTION farm_usage_source();
