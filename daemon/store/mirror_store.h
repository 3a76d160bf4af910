// MirrorStore: what farmd's pull-through cache downloaded from its upstreams (migration
// 025, daemon/mirror/): the blobs it holds for them with their sizes and last use, for
// the bound on its share of the blob store, and the names each index or tree listed them
// under, which are what it serves them as. A narrow interface of its own beside Store: the
// SQL store (SQLite and PostgreSQL) implements both, and farmd finds it with
// AsMirrorStore. Preloaded files (`farmctl cache add`) are not here: they are
// upstream_preloads rows, never evicted. Thread-safe as the Store is.
#ifndef FARM_DAEMON_STORE_MIRROR_STORE_H_
#define FARM_DAEMON_STORE_MIRROR_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace farm::store {

class Store;

// One blob an upstream gave.
struct MirrorBlobRow {
  std::string sha256;
  int64_t size = 0;
  std::string source;  // the index or tree it was first downloaded for
  int64_t fetched_ms = 0;
  int64_t last_used_ms = 0;
  std::string metadata_sha256;  // of its .dist-info/METADATA; "" when none is kept
};

// A name under which `source` listed a blob (an index's file name, a tree's path).
struct MirrorFileRow {
  std::string source;
  std::string sha256;
  std::string filename;
  int64_t size = 0;
  std::string metadata_sha256;
};

class MirrorStore {
 public:
  virtual ~MirrorStore() = default;

  // Records that `blob.source` listed blob `blob.sha256` as `filename` and it is stored:
  // the blob's row when it has none (with `metadata`, the text whose sha256 is
  // blob.metadata_sha256), else only its last use (the later of the two), and the name.
  // Returns whether the blob's row is new (its bytes count against the bound from now).
  virtual Result<bool> RecordMirrorFile(const MirrorBlobRow& blob, const std::string& filename,
                                        const std::string& metadata) = 0;
  // Marks each blob of `uses` (sha256, time) used at its time, never earlier than it was,
  // in one transaction; digests without a row are skipped.
  virtual Status TouchMirrorBlobs(const std::vector<std::pair<std::string, int64_t>>& uses) = 0;
  // Every name of every blob, by source, sha256 and name.
  virtual Result<std::vector<MirrorFileRow>> ListMirrorFiles() = 0;
  // The bytes of every blob together.
  virtual Result<int64_t> MirrorBytes() = 0;
  // The least recently used blobs first, at most `limit`.
  virtual Result<std::vector<MirrorBlobRow>> ListMirrorBlobsByUse(int limit) = 0;
  // The METADATA text kept with a blob; nullopt when its row has none or there is no row.
  virtual Result<std::optional<std::string>> GetMirrorMetadata(const std::string& sha256) = 0;
  // Forgets the blob and all its names. Returns whether the farm still names those bytes
  // otherwise (a wheel it built, a publication, a source archive, a preloaded file: the
  // blob store is shared and content-addressed), in which case the caller must not remove
  // the blob. NotFound when no row has it.
  virtual Result<bool> ForgetMirrorBlob(const std::string& sha256) = 0;
};

// The store's MirrorStore, or null for a store without one.
MirrorStore* AsMirrorStore(Store* store);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_MIRROR_STORE_H_
