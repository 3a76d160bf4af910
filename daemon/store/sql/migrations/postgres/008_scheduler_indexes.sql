-- PostgreSQL form of migrations/008_scheduler_indexes.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- Schema version 8: indexes for the scheduler's hot queries (measured in docs/benchmarks.md).
-- IF NOT EXISTS: a store made while this file was the 7th migration already has them.
-- AcquireJob reads pending jobs by priority DESC, id ASC. jobs_by_state holds priority
-- ascending, so SQLite sorted every pending job on each lease ("USE TEMP B-TREE FOR RIGHT
-- PART OF ORDER BY"): leasing a backlog cost O(pending) per job. This index gives the order
-- directly. (jobs_by_state stays: a migration cannot drop it while the migration runner
-- holds a statement on the schema.)
CREATE INDEX IF NOT EXISTS jobs_by_state_priority ON jobs(state, priority DESC, id);
-- Every heartbeat (RenewLeases) and every AcquireJob (CountRunningJobs) looks up one
-- worker's running jobs; without this they scanned all running jobs.
CREATE INDEX IF NOT EXISTS jobs_by_worker ON jobs(worker_id, state);
