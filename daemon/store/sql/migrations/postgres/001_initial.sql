-- PostgreSQL form of migrations/001_initial.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- Schema version 1: tokens, workers, builds, jobs, attempts, log lines, artifacts.
CREATE TABLE tokens (
  hash TEXT PRIMARY KEY,            -- sha256 of the token; the token itself is never stored
  name TEXT NOT NULL,
  role TEXT NOT NULL,               -- viewer, submitter, admin, enroll, worker
  worker_id TEXT NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL
);

CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  capabilities BYTEA NOT NULL,       -- serialized farm.v1.Capabilities
  state TEXT NOT NULL,              -- idle, busy, draining, quarantined, lost
  registered_ms BIGINT NOT NULL,
  last_heartbeat_ms BIGINT NOT NULL
);

CREATE TABLE builds (
  id BIGSERIAL PRIMARY KEY,
  recipe_name TEXT NOT NULL,
  recipe BYTEA NOT NULL,             -- serialized farm.v1.Recipe
  state BIGINT NOT NULL,           -- farm.v1.BuildState
  priority BIGINT NOT NULL DEFAULT 0,
  submitted_by TEXT NOT NULL,
  rejected_cells TEXT NOT NULL DEFAULT '',  -- one reason per line
  created_ms BIGINT NOT NULL,
  finished_ms BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE jobs (
  id BIGSERIAL PRIMARY KEY,
  build_id BIGINT NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  cell BYTEA NOT NULL,               -- serialized farm.v1.MatrixCell
  state BIGINT NOT NULL,           -- farm.v1.JobState
  priority BIGINT NOT NULL DEFAULT 0,
  attempt BIGINT NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '',
  lease_expiry_ms BIGINT NOT NULL DEFAULT 0,
  cancel_requested BIGINT NOT NULL DEFAULT 0,
  not_before_ms BIGINT NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  build_key TEXT NOT NULL DEFAULT '',
  reused_from BIGINT NOT NULL DEFAULT 0,  -- job whose artifacts answered this one
  created_ms BIGINT NOT NULL,
  started_ms BIGINT NOT NULL DEFAULT 0,
  finished_ms BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX jobs_by_build ON jobs(build_id);
CREATE INDEX jobs_by_state ON jobs(state, priority, id);
CREATE INDEX jobs_by_key ON jobs(build_key, state);

CREATE TABLE attempts (
  job_id BIGINT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  number BIGINT NOT NULL,
  worker_id TEXT NOT NULL,
  cause BIGINT NOT NULL DEFAULT 0, -- farm.v1.AttemptCause; 0 while running
  detail TEXT NOT NULL DEFAULT '',
  exit_code BIGINT NOT NULL DEFAULT 0,
  peak_rss_bytes BIGINT NOT NULL DEFAULT 0,
  log_acked_seq BIGINT NOT NULL DEFAULT 0,
  started_ms BIGINT NOT NULL,
  finished_ms BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, number)
);

CREATE TABLE log_lines (
  job_id BIGINT NOT NULL,
  attempt BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  stream BIGINT NOT NULL,
  text BYTEA NOT NULL,               -- a build's output may hold NUL, which TEXT refuses
  time_ms BIGINT NOT NULL,
  PRIMARY KEY (job_id, attempt, seq),
  FOREIGN KEY (job_id, attempt) REFERENCES attempts(job_id, number) ON DELETE CASCADE
);

CREATE TABLE artifacts (
  id BIGSERIAL PRIMARY KEY,
  job_id BIGINT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt BIGINT NOT NULL,
  filename TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size BIGINT NOT NULL,
  manifest BYTEA NOT NULL DEFAULT '',     -- serialized farm.v1.ArchManifest
  validation BYTEA NOT NULL DEFAULT '',   -- serialized farm.v1.ValidationReport
  created_ms BIGINT NOT NULL,
  UNIQUE (job_id, attempt, filename)
);
CREATE INDEX artifacts_by_sha ON artifacts(sha256);
