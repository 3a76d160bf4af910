-- PostgreSQL form of migrations/019_quotas.sql (same number, same meaning): BIGINT for
-- every integer.
-- Schema version 19: per-principal quotas (daemon/quota/, docs/limits.md "Quotas"). An admin's
-- override of one principal's limits: a limit, -1 for none, -2 for the role's default.
CREATE TABLE quota_overrides (
  principal TEXT PRIMARY KEY,  -- a token name, as builds.submitted_by holds it
  submissions BIGINT NOT NULL,
  queued_jobs BIGINT NOT NULL,
  stored_bytes BIGINT NOT NULL,
  updated_by TEXT NOT NULL,
  updated_ms BIGINT NOT NULL
);
-- What a principal holds is read at each submission: its builds by submitter, its source
-- archives by uploader.
CREATE INDEX builds_by_submitter ON builds(submitted_by);
CREATE INDEX source_archives_by_uploader ON source_archives(uploaded_by);
