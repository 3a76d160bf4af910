-- PostgreSQL form of migrations/026_env_locks.sql (same number, same meaning):
-- BIGINT for every integer.
-- Schema version 26: the environment locks farmd resolved (docs/environments.md, "Locks").
--
-- env_locks: one row per lock (a pylock.toml, PEP 751) by the sha256 of its text. Jobs
-- name theirs in their needs (JobNeeds.lock_digest), so a lock outlives nothing it serves:
-- rows are never deleted while a job may lease.
CREATE TABLE env_locks (
  digest TEXT PRIMARY KEY,
  text TEXT NOT NULL,
  packages BIGINT NOT NULL,
  bytes BIGINT NOT NULL,
  created_ms BIGINT NOT NULL
);
