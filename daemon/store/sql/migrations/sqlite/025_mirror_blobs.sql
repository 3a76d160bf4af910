-- Schema version 25: what farmd's pull-through cache downloaded from its upstreams
-- (daemon/mirror/, docs/environments.md "farmd's pull-through cache"), so that its share
-- of the blob store is bounded (least recently used first) and a restarted farmd serves
-- each stored file for the index or tree that listed it, and only for that one.
--
-- mirror_blobs: one row per blob an upstream gave: its size, the index or tree it was
-- first downloaded for, when, when it was last served, and for a wheel the sha256 and
-- text of its .dist-info/METADATA ('' when it has none: an sdist, an archive, a wheel
-- whose METADATA is unreadable), served as its PEP 658 metadata file.
CREATE TABLE mirror_blobs (
  sha256 TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  source TEXT NOT NULL,
  fetched_ms INTEGER NOT NULL,
  last_used_ms INTEGER NOT NULL,
  metadata_sha256 TEXT NOT NULL DEFAULT '',
  metadata TEXT NOT NULL DEFAULT ''
);
CREATE INDEX mirror_blobs_by_use ON mirror_blobs(last_used_ms);
-- mirror_files: the names under which an index (a file name) or a tree (a path under it)
-- listed a blob of mirror_blobs: what it may be served as.
CREATE TABLE mirror_files (
  source TEXT NOT NULL,
  sha256 TEXT NOT NULL REFERENCES mirror_blobs(sha256) ON DELETE CASCADE,
  filename TEXT NOT NULL,
  PRIMARY KEY (source, sha256, filename)
);
CREATE INDEX mirror_files_by_sha256 ON mirror_files(sha256);
