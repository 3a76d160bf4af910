-- Schema version 1: tokens, workers, builds, jobs, attempts, log lines, artifacts.
CREATE TABLE tokens (
  hash TEXT PRIMARY KEY,            -- sha256 of the token; the token itself is never stored
  name TEXT NOT NULL,
  role TEXT NOT NULL,               -- viewer, submitter, admin, enroll, worker
  worker_id TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL
);

CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  capabilities BLOB NOT NULL,       -- serialized farm.v1.Capabilities
  state TEXT NOT NULL,              -- idle, busy, draining, quarantined, lost
  registered_ms INTEGER NOT NULL,
  last_heartbeat_ms INTEGER NOT NULL
);

CREATE TABLE builds (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  recipe_name TEXT NOT NULL,
  recipe BLOB NOT NULL,             -- serialized farm.v1.Recipe
  state INTEGER NOT NULL,           -- farm.v1.BuildState
  priority INTEGER NOT NULL DEFAULT 0,
  submitted_by TEXT NOT NULL,
  rejected_cells TEXT NOT NULL DEFAULT '',  -- one reason per line
  created_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  build_id INTEGER NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  cell BLOB NOT NULL,               -- serialized farm.v1.MatrixCell
  state INTEGER NOT NULL,           -- farm.v1.JobState
  priority INTEGER NOT NULL DEFAULT 0,
  attempt INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '',
  lease_expiry_ms INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  not_before_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  build_key TEXT NOT NULL DEFAULT '',
  reused_from INTEGER NOT NULL DEFAULT 0,  -- job whose artifacts answered this one
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_by_build ON jobs(build_id);
CREATE INDEX jobs_by_state ON jobs(state, priority, id);
CREATE INDEX jobs_by_key ON jobs(build_key, state);

CREATE TABLE attempts (
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  number INTEGER NOT NULL,
  worker_id TEXT NOT NULL,
  cause INTEGER NOT NULL DEFAULT 0, -- farm.v1.AttemptCause; 0 while running
  detail TEXT NOT NULL DEFAULT '',
  exit_code INTEGER NOT NULL DEFAULT 0,
  peak_rss_bytes INTEGER NOT NULL DEFAULT 0,
  log_acked_seq INTEGER NOT NULL DEFAULT 0,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, number)
);

CREATE TABLE log_lines (
  job_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  text TEXT NOT NULL,
  time_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, seq),
  FOREIGN KEY (job_id, attempt) REFERENCES attempts(job_id, number) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE artifacts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  filename TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL,
  manifest BLOB NOT NULL DEFAULT x'',     -- serialized farm.v1.ArchManifest
  validation BLOB NOT NULL DEFAULT x'',   -- serialized farm.v1.ValidationReport
  created_ms INTEGER NOT NULL,
  UNIQUE (job_id, attempt, filename)
);
CREATE INDEX artifacts_by_sha ON artifacts(sha256);
