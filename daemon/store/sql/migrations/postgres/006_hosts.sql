-- PostgreSQL form of migrations/006_hosts.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- Schema version 6: hosts farmd provisions with the playbooks (daemon/hosts). One row per
-- host; the last run's counts, result and output (redacted before it is stored) stay with it.
CREATE TABLE hosts (
  name TEXT PRIMARY KEY,
  address TEXT NOT NULL,
  kind TEXT NOT NULL,
  vars BYTEA NOT NULL DEFAULT '',       -- serialized farm.v1.Host holding only vars
  state TEXT NOT NULL DEFAULT 'added', -- added, provisioning, provisioned, failed
  changed BIGINT NOT NULL DEFAULT 0,
  ok BIGINT NOT NULL DEFAULT 0,
  failed BIGINT NOT NULL DEFAULT 0,
  unreachable BIGINT NOT NULL DEFAULT 0,
  runs BIGINT NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  log TEXT NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL,
  started_ms BIGINT NOT NULL DEFAULT 0,
  finished_ms BIGINT NOT NULL DEFAULT 0
);
