-- Schema version 20: log lines packed into chunks (daemon/store/log_chunk.h). A row per
-- line in the WITHOUT ROWID table log_lines cost up to nine times the text: a row of about
-- 1000 bytes spills to an overflow page of its own. A chunk holds the lines a worker sent
-- together, compressed with zstd when that is smaller, in a rowid table whose large rows
-- fill their overflow pages. log_lines keeps what was stored before and is only read.
CREATE TABLE log_chunks (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  lines INTEGER NOT NULL,
  codec INTEGER NOT NULL,      -- 0: packed records, 1: zstd frame of them
  raw_bytes INTEGER NOT NULL,  -- size of the packed records
  data BLOB NOT NULL,
  FOREIGN KEY (job_id, attempt) REFERENCES attempts(job_id, number) ON DELETE CASCADE
);
CREATE INDEX log_chunks_by_attempt ON log_chunks(job_id, attempt, last_seq);
