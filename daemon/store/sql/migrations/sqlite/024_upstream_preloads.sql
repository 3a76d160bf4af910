-- Schema version 25: files an admin preloaded into farmd's pull-through cache
-- (`farmctl cache add`, docs/environments.md "Preloading an offline farm").
--
-- upstream_preloads: one row per name an index or tree of farmd's upstreams serves from a
-- preloaded blob. `source` is the index or tree name, `path` the file name (an index) or
-- the path under the tree (a redist manifest or an archive it lists), `kind` one of
-- 'index-file', 'manifest', 'archive'. A name holds one content: adding another is
-- refused, adding the same again changes nothing.
CREATE TABLE upstream_preloads (
  source TEXT NOT NULL,
  path TEXT NOT NULL,
  kind TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL,
  added_by TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (source, path)
);
CREATE INDEX upstream_preloads_sha256 ON upstream_preloads(sha256);
