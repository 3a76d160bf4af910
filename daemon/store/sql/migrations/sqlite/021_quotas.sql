-- Schema version 21: per-principal quotas (daemon/quota/, docs/limits.md "Quotas").
--
-- quota_overrides: an admin's override of one principal's limits: a limit, -1 for none,
-- -2 for the role's default.
CREATE TABLE quota_overrides (
  principal TEXT PRIMARY KEY,  -- a token name, as builds.submitted_by holds it
  submissions INTEGER NOT NULL,
  queued_jobs INTEGER NOT NULL,
  stored_bytes INTEGER NOT NULL,
  updated_by TEXT NOT NULL,
  updated_ms INTEGER NOT NULL
);

-- principal_usage: what each principal holds, read at each submission. Summing it from the
-- builds took a third of a second under the store's lock for a principal of 10,000 builds,
-- so triggers keep it in the transaction of each change, whatever code path makes it:
-- queued_jobs, the pending and running jobs of its builds; stored_bytes, its builds'
-- recipes, their log text (attempts.log_bytes) and the wheels uploaded for them (artifacts
-- of an attempt > 0: copies for reused and merged jobs are attempt 0 and cost no new
-- bytes), and the source archives it uploaded. Builds, jobs, attempts and artifacts are
-- never deleted; a change that deletes them, or rebuilds one of these tables, must keep
-- these triggers and figures right.
CREATE TABLE principal_usage (
  principal TEXT PRIMARY KEY,
  queued_jobs INTEGER NOT NULL DEFAULT 0,
  stored_bytes INTEGER NOT NULL DEFAULT 0
);
INSERT INTO principal_usage(principal, queued_jobs, stored_bytes)
  SELECT p, SUM(q), SUM(n) FROM (
    SELECT submitted_by AS p, 0 AS q, LENGTH(recipe) AS n FROM builds
    UNION ALL SELECT b.submitted_by, 1, 0 FROM jobs j JOIN builds b ON b.id = j.build_id
      WHERE j.state IN (1, 2)
    UNION ALL SELECT b.submitted_by, 0, a.log_bytes FROM attempts a
      JOIN jobs j ON j.id = a.job_id JOIN builds b ON b.id = j.build_id
    UNION ALL SELECT b.submitted_by, 0, f.size FROM artifacts f
      JOIN jobs j ON j.id = f.job_id JOIN builds b ON b.id = j.build_id WHERE f.attempt > 0
    UNION ALL SELECT uploaded_by, 0, size FROM source_archives
  ) AS u GROUP BY p;

-- A build's row comes before its jobs', so the principal has a row by then.
CREATE TRIGGER usage_build_insert AFTER INSERT ON builds BEGIN
  INSERT INTO principal_usage(principal, stored_bytes) VALUES (NEW.submitted_by, LENGTH(NEW.recipe))
    ON CONFLICT(principal) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
END;
CREATE TRIGGER usage_job_insert AFTER INSERT ON jobs WHEN NEW.state IN (1, 2) BEGIN
  UPDATE principal_usage SET queued_jobs = queued_jobs + 1
    WHERE principal = (SELECT submitted_by FROM builds WHERE id = NEW.build_id);
END;
CREATE TRIGGER usage_job_state AFTER UPDATE OF state ON jobs
  WHEN (OLD.state IN (1, 2)) != (NEW.state IN (1, 2))
BEGIN
  UPDATE principal_usage
    SET queued_jobs = queued_jobs + (NEW.state IN (1, 2)) - (OLD.state IN (1, 2))
    WHERE principal = (SELECT submitted_by FROM builds WHERE id = NEW.build_id);
END;
CREATE TRIGGER usage_log_bytes AFTER UPDATE OF log_bytes ON attempts
  WHEN NEW.log_bytes != OLD.log_bytes
BEGIN
  UPDATE principal_usage SET stored_bytes = stored_bytes + NEW.log_bytes - OLD.log_bytes
    WHERE principal = (SELECT b.submitted_by FROM jobs j JOIN builds b ON b.id = j.build_id
                       WHERE j.id = NEW.job_id);
END;
CREATE TRIGGER usage_artifact_insert AFTER INSERT ON artifacts WHEN NEW.attempt > 0 BEGIN
  UPDATE principal_usage SET stored_bytes = stored_bytes + NEW.size
    WHERE principal = (SELECT b.submitted_by FROM jobs j JOIN builds b ON b.id = j.build_id
                       WHERE j.id = NEW.job_id);
END;
CREATE TRIGGER usage_source_insert AFTER INSERT ON source_archives BEGIN
  INSERT INTO principal_usage(principal, stored_bytes) VALUES (NEW.uploaded_by, NEW.size)
    ON CONFLICT(principal) DO UPDATE SET stored_bytes = stored_bytes + excluded.stored_bytes;
END;
CREATE TRIGGER usage_source_delete AFTER DELETE ON source_archives BEGIN
  UPDATE principal_usage SET stored_bytes = stored_bytes - OLD.size
    WHERE principal = OLD.uploaded_by;
END;
