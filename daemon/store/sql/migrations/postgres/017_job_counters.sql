-- Schema version 17: /metrics and the dashboard's overview counted every job on each
-- request (jobs by state, and two histograms over every job's times): 442 ms at p99 for
-- /metrics at 100,000 jobs. These tables hold the same figures, kept by triggers on jobs
-- in the transaction of each change, so they are right whatever code path writes a job,
-- after a restart and after another farmd takes over the database. A migration that
-- rebuilds the jobs table must create these triggers again.
--
-- job_state_counts: jobs per state.
-- job_span_buckets: per span (0: queue wait = started_ms - created_ms of jobs that started
-- and were not reused; 1: run time = finished_ms - started_ms of finished jobs, state >= 3)
-- and upper bound le_ms (inclusive; 9223372036854775807 is +Inf), the number of jobs whose
-- span is at most le_ms and the sum of their spans: a cumulative histogram. The bounds are
-- store.h's kQueueWaitBoundsMs and kRunTimeBoundsMs.
CREATE TABLE job_state_counts (
  state BIGINT PRIMARY KEY,
  n BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE job_span_buckets (
  span BIGINT NOT NULL,
  le_ms BIGINT NOT NULL,
  n BIGINT NOT NULL DEFAULT 0,
  sum_ms BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (span, le_ms)
);

INSERT INTO job_span_buckets(span, le_ms) VALUES
  (0, 1000),
  (0, 5000),
  (0, 15000),
  (0, 30000),
  (0, 60000),
  (0, 300000),
  (0, 900000),
  (0, 3600000),
  (0, 14400000),
  (0, 9223372036854775807),
  (1, 30000),
  (1, 60000),
  (1, 120000),
  (1, 300000),
  (1, 600000),
  (1, 1200000),
  (1, 1800000),
  (1, 3600000),
  (1, 7200000),
  (1, 14400000),
  (1, 9223372036854775807);

INSERT INTO job_state_counts(state, n) SELECT state, COUNT(*) FROM jobs GROUP BY state;
UPDATE job_span_buckets SET
  n = (SELECT COUNT(*) FROM jobs WHERE started_ms > 0 AND reused_from = 0
       AND started_ms - created_ms <= job_span_buckets.le_ms),
  sum_ms = (SELECT COALESCE(SUM(started_ms - created_ms), 0) FROM jobs WHERE started_ms > 0
            AND reused_from = 0 AND started_ms - created_ms <= job_span_buckets.le_ms)
  WHERE span = 0;
UPDATE job_span_buckets SET
  n = (SELECT COUNT(*) FROM jobs WHERE started_ms > 0 AND finished_ms > 0 AND state >= 3
       AND finished_ms - started_ms <= job_span_buckets.le_ms),
  sum_ms = (SELECT COALESCE(SUM(finished_ms - started_ms), 0) FROM jobs WHERE started_ms > 0
            AND finished_ms > 0 AND state >= 3
            AND finished_ms - started_ms <= job_span_buckets.le_ms)
  WHERE span = 1;

-- Adds (delta 1) or removes (delta -1) one job's contribution.
CREATE FUNCTION farm_count_job(st BIGINT, created BIGINT, started BIGINT, finished BIGINT,
                               reused BIGINT, delta BIGINT) RETURNS void AS $$
BEGIN
  INSERT INTO job_state_counts(state, n) VALUES (st, delta)
    ON CONFLICT (state) DO UPDATE SET n = job_state_counts.n + delta;
  IF started > 0 AND reused = 0 THEN
    UPDATE job_span_buckets SET n = n + delta, sum_ms = sum_ms + delta * (started - created)
      WHERE span = 0 AND le_ms >= started - created;
  END IF;
  IF started > 0 AND finished > 0 AND st >= 3 THEN
    UPDATE job_span_buckets SET n = n + delta, sum_ms = sum_ms + delta * (finished - started)
      WHERE span = 1 AND le_ms >= finished - started;
  END IF;
END
$$ LANGUAGE plpgsql;

CREATE FUNCTION farm_jobs_counted() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.state IS NOT DISTINCT FROM NEW.state
     AND OLD.created_ms IS NOT DISTINCT FROM NEW.created_ms
     AND OLD.started_ms IS NOT DISTINCT FROM NEW.started_ms
     AND OLD.finished_ms IS NOT DISTINCT FROM NEW.finished_ms
     AND OLD.reused_from IS NOT DISTINCT FROM NEW.reused_from THEN
    RETURN NULL;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM farm_count_job(OLD.state, OLD.created_ms, OLD.started_ms, OLD.finished_ms,
                           OLD.reused_from, -1);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM farm_count_job(NEW.state, NEW.created_ms, NEW.started_ms, NEW.finished_ms,
                           NEW.reused_from, 1);
  END IF;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;

-- Only changes of the columns the figures read; a lease renewal or a heartbeat costs nothing.
CREATE TRIGGER jobs_counted
  AFTER INSERT OR DELETE OR UPDATE OF state, created_ms, started_ms, finished_ms, reused_from
  ON jobs FOR EACH ROW EXECUTE FUNCTION farm_jobs_counted();
