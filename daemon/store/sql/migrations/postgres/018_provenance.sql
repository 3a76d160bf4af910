-- PostgreSQL form of migrations/018_provenance.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- Signed provenance of wheels (docs/provenance.md): one row per DSSE envelope farmd signed
-- about the wheel with bytes `sha256`: its build (kind 'build', signed when the wheel
-- arrived) or a validation on a GPU (kind 'validation', signed when the report arrived),
-- for the job and attempt that made it. `envelope` is the envelope as one JSON line and
-- `keyid` the key that signed it (re-signed in place when that key is revoked). One row
-- per (sha256, kind, job, attempt): a repeated upload or report signs nothing twice.
CREATE TABLE provenance (
  id BIGSERIAL PRIMARY KEY,
  sha256 TEXT NOT NULL,
  kind TEXT NOT NULL,
  job_id BIGINT NOT NULL,
  attempt BIGINT NOT NULL,
  keyid TEXT NOT NULL,
  envelope BYTEA NOT NULL,
  created_ms BIGINT NOT NULL,
  UNIQUE (sha256, kind, job_id, attempt)
);
CREATE INDEX provenance_by_key ON provenance(keyid, id);
