-- Schema version 6: hosts farmd provisions with the playbooks (daemon/hosts). One row per
-- host; the last run's counts, result and output (redacted before it is stored) stay with it.
CREATE TABLE hosts (
  name TEXT PRIMARY KEY,
  address TEXT NOT NULL,
  kind TEXT NOT NULL,
  vars BLOB NOT NULL DEFAULT '',       -- serialized farm.v1.Host holding only vars
  state TEXT NOT NULL DEFAULT 'added', -- added, provisioning, provisioned, failed
  changed INTEGER NOT NULL DEFAULT 0,
  ok INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  unreachable INTEGER NOT NULL DEFAULT 0,
  runs INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  log TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0
);
