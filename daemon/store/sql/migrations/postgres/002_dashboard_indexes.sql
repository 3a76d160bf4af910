-- PostgreSQL form of migrations/002_dashboard_indexes.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- Schema version 2: an index for the dashboard's lists of jobs by state, newest first
-- (running jobs, recent failures), which jobs_by_state (state, priority, id) cannot order.
CREATE INDEX jobs_by_state_id ON jobs(state, id);
