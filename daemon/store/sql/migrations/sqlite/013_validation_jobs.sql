-- Validation jobs: a job of kind 2 validates the wheels an earlier build job (target_job_id,
-- target_attempt) made, on a GPU they serve; its outcome is stored with those wheels. Jobs
-- stored before are builds (kind 1). `needs` is a serialized farm.v1.JobNeeds (a build on
-- its target GPU; the GPUs a validation needs and the workers that tried already).
ALTER TABLE jobs ADD COLUMN kind INTEGER NOT NULL DEFAULT 1;  -- farm.v1.JobKind
ALTER TABLE jobs ADD COLUMN target_job_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN target_attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN needs BLOB NOT NULL DEFAULT x'';
CREATE INDEX IF NOT EXISTS jobs_by_target ON jobs(target_job_id, target_attempt) WHERE kind = 2;
-- The state of each artifact's validation report (farm.v1.ValidationState), so that farmd
-- finds the wheels waiting for hardware without reading every report; -1: not known yet
-- (rows stored before this column; farmd reads their reports once).
ALTER TABLE artifacts ADD COLUMN validation_state INTEGER NOT NULL DEFAULT -1;
CREATE INDEX IF NOT EXISTS artifacts_by_validation_state ON artifacts(validation_state, id);
