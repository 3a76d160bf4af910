-- PostgreSQL form of migrations/020_log_chunks.sql (same number, same meaning): BIGINT for
-- every integer, BYTEA for BLOB. A chunk of more than about 2 KB is kept out of line by
-- TOAST; the data is compressed already (or not compressible), so TOAST is told not to try
-- again (STORAGE EXTERNAL).
CREATE TABLE log_chunks (
  id BIGSERIAL PRIMARY KEY,
  job_id BIGINT NOT NULL,
  attempt BIGINT NOT NULL,
  first_seq BIGINT NOT NULL,
  last_seq BIGINT NOT NULL,
  lines BIGINT NOT NULL,
  codec BIGINT NOT NULL,      -- 0: packed records, 1: zstd frame of them
  raw_bytes BIGINT NOT NULL,  -- size of the packed records
  data BYTEA NOT NULL,
  FOREIGN KEY (job_id, attempt) REFERENCES attempts(job_id, number) ON DELETE CASCADE
);
ALTER TABLE log_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE INDEX log_chunks_by_attempt ON log_chunks(job_id, attempt, last_seq);
