-- PostgreSQL form of migrations/005_worker_drain.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- Schema version 5: an operator's drain request survives the worker's own state reports,
-- and each job carries its recipe's attempt limit so lease expiry honours it.
ALTER TABLE workers ADD COLUMN drain_requested BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN max_attempts BIGINT NOT NULL DEFAULT 3;
