// UpstreamPreloadStore: files an admin preloaded into the pull-through cache.
#ifndef FARM_DAEMON_STORE_PORTS_UPSTREAM_PRELOAD_STORE_H_
#define FARM_DAEMON_STORE_PORTS_UPSTREAM_PRELOAD_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

// A file an admin preloaded into the pull-through cache (`farmctl cache add`): the name
// `path` of index or tree `source` is the blob `sha256`. `kind` is "index-file",
// "manifest" or "archive" (daemon/mirror/preload.h names them).
struct UpstreamPreloadRow {
  std::string source;
  std::string path;
  std::string kind;
  std::string sha256;
  int64_t size = 0;
  std::string added_by;  // the token's name
  int64_t created_ms = 0;
};

class UpstreamPreloadStore {
 public:
  virtual ~UpstreamPreloadStore() = default;

  // Records the preload; true when recorded now, false when the same name already holds
  // the same sha256 (nothing changes); AlreadyExists when it holds other content.
  virtual Result<bool> RecordUpstreamPreload(const UpstreamPreloadRow& row) = 0;
  // The preload at `path` of `source`; nullopt when there is none.
  virtual Result<std::optional<UpstreamPreloadRow>> GetUpstreamPreload(const std::string& source,
                                                                       const std::string& path) = 0;
  // Every preload, by source and path.
  virtual Result<std::vector<UpstreamPreloadRow>> ListUpstreamPreloads() = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_UPSTREAM_PRELOAD_STORE_H_
