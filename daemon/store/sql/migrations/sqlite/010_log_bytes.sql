-- Bytes of log text stored per attempt, so that a build printing gigabytes is cut at the
-- farm's limit instead of filling the database (docs/limits.md).
ALTER TABLE attempts ADD COLUMN log_bytes INTEGER NOT NULL DEFAULT 0;
