-- PostgreSQL form of migrations/010_log_bytes.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- Bytes of log text stored per attempt, so that a build printing gigabytes is cut at the
-- farm's limit instead of filling the database (docs/limits.md).
ALTER TABLE attempts ADD COLUMN log_bytes BIGINT NOT NULL DEFAULT 0;
