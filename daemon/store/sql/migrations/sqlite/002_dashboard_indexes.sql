-- Schema version 2: an index for the dashboard's lists of jobs by state, newest first
-- (running jobs, recent failures), which jobs_by_state (state, priority, id) cannot order.
CREATE INDEX jobs_by_state_id ON jobs(state, id);
