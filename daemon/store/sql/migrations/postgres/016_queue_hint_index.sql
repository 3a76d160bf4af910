-- Schema version 16: the queue hint (Store::MayHaveLeasableJob) reads the earliest
-- not-before time of the pending jobs after every write that may make a job leasable. It
-- counted and scanned every pending job to do so: O(pending) per completion or submit,
-- under the store's mutex. With this index the read is one index lookup.
CREATE INDEX IF NOT EXISTS jobs_by_state_not_before ON jobs(state, not_before_ms);
