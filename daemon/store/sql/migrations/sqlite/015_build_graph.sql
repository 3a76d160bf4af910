-- Builds that depend on builds (a recipe's `requires:`): a job names the jobs whose wheels it
-- consumes, is held (pending, never leased) until they succeed, and records the wheels it
-- was given, with their sha256, for the worker and for provenance.
CREATE TABLE job_requirements (
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  required_job_id INTEGER NOT NULL REFERENCES jobs(id),
  recipe_name TEXT NOT NULL,              -- the required job's recipe, for messages
  for_build INTEGER NOT NULL,             -- installed into the build venv
  for_validation INTEGER NOT NULL,        -- installed into the clean validation venv
  PRIMARY KEY (job_id, required_job_id)
);
CREATE INDEX job_requirements_by_required ON job_requirements(required_job_id);

CREATE TABLE job_inputs (
  job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  artifact_id INTEGER NOT NULL REFERENCES artifacts(id),
  required_job_id INTEGER NOT NULL,
  PRIMARY KEY (job_id, artifact_id)
);

-- 1: waits for its required jobs; 2: the same, and is built even when its key succeeded
-- before (a forced submission). 0 once its inputs are settled.
ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
-- The build key without the consumed wheels; the key proper is set on release.
ALTER TABLE jobs ADD COLUMN key_base TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS jobs_held ON jobs(state) WHERE held > 0;
