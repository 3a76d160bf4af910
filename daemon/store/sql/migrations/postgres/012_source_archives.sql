-- PostgreSQL form of migrations/012_source_archives.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- Source archives clients uploaded (docs/recipes.md, "Local sources"). The blob store holds their
-- bytes; a row here says the blob is a source archive farmd checked, who uploaded it, and
-- when a build or schedule last named it, so that unused ones can be collected.
CREATE TABLE source_archives (
  sha256 TEXT PRIMARY KEY,
  size BIGINT NOT NULL,
  files BIGINT NOT NULL,
  origin TEXT NOT NULL DEFAULT '',
  uploaded_by TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  last_used_ms BIGINT NOT NULL
);
-- The archive a build or a schedule builds ('' for git sources): the collection never takes
-- one that a schedule or a queued or running build names.
ALTER TABLE builds ADD COLUMN source_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN source_sha256 TEXT NOT NULL DEFAULT '';
CREATE INDEX builds_by_source ON builds(source_sha256) WHERE source_sha256 != '';
CREATE INDEX schedules_by_source ON schedules(source_sha256) WHERE source_sha256 != '';
