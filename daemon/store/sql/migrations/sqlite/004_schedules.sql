-- Schema version 4: schedules (cron-fired builds), the record of each firing, and jobs
-- merged onto an identical job already in flight.
CREATE TABLE schedules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  recipe_name TEXT NOT NULL,
  request BLOB NOT NULL,            -- serialized farm.v1.SubmitBuildRequest, as submitted
  cron TEXT NOT NULL,
  time_zone TEXT NOT NULL,          -- IANA name
  missed_policy INTEGER NOT NULL,   -- farm.v1.MissedRunPolicy
  concurrency_policy INTEGER NOT NULL,  -- farm.v1.ConcurrencyPolicy
  paused INTEGER NOT NULL DEFAULT 0,
  next_fire_ms INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  deleted_ms INTEGER NOT NULL DEFAULT 0   -- > 0: deleted; kept so builds keep their link
);

CREATE TABLE schedule_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  schedule_id INTEGER NOT NULL REFERENCES schedules(id),
  trigger INTEGER NOT NULL,         -- farm.v1.ScheduleTrigger
  outcome INTEGER NOT NULL,         -- farm.v1.ScheduleRunOutcome
  fire_ms INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  build_id INTEGER NOT NULL DEFAULT 0,
  resolved_commit TEXT NOT NULL DEFAULT '',
  inputs_digest TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs(schedule_id, id);
CREATE INDEX schedule_runs_by_build ON schedule_runs(build_id);

-- A job waiting for an identical job (same build key) that was pending or running when
-- it was submitted; the row goes when the wait is settled.
CREATE TABLE job_merges (
  job_id INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  leader_job_id INTEGER NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE INDEX job_merges_by_leader ON job_merges(leader_job_id);
