-- Schema version 3: the publication outbox. One row per (build, artifact, target): a
-- wheel asset on a GitHub release, a file on the Hugging Face Hub, or (artifact_id 0) the
-- GitHub release of a build that is published once all its assets are up. The publisher
-- loop in farmd works the rows; a row survives restarts, and a row found "uploading"
-- after a crash is handed to the same idempotent client call again.
CREATE TABLE IF NOT EXISTS publications (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  build_id INTEGER NOT NULL REFERENCES builds(id) ON DELETE CASCADE,
  artifact_id INTEGER NOT NULL DEFAULT 0,   -- 0: the build's GitHub release row
  target TEXT NOT NULL,                     -- github, hf
  kind TEXT NOT NULL,                       -- asset, release, file
  repo TEXT NOT NULL,
  ref TEXT NOT NULL DEFAULT '',             -- GitHub tag or Hub revision
  path TEXT NOT NULL DEFAULT '',            -- path in the Hub repository
  label TEXT NOT NULL DEFAULT '',           -- local version label applied to the wheel
  filename TEXT NOT NULL DEFAULT '',        -- the published file name (set once prepared)
  sha256 TEXT NOT NULL DEFAULT '',          -- blob of the published bytes
  size INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL,                      -- pending, uploading, uploaded, published, failed
  attempts INTEGER NOT NULL DEFAULT 0,
  not_before_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',           -- redacted
  remote_id TEXT NOT NULL DEFAULT '',       -- asset id, release id or commit oid
  remote_url TEXT NOT NULL DEFAULT '',
  replace_remote INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  UNIQUE (build_id, artifact_id, target)
);
CREATE INDEX IF NOT EXISTS publications_by_state ON publications(state, not_before_ms);

-- Artifacts the publisher has decided on (rows queued, or nothing to publish), so the
-- scan for new wheels looks only at the rest.
CREATE TABLE IF NOT EXISTS publish_scanned (
  artifact_id INTEGER PRIMARY KEY,
  outcome TEXT NOT NULL,
  scanned_ms INTEGER NOT NULL
);
