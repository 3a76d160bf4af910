// Verified downloads into the cache's content-addressed store (cache_store.h, kind
// "downloads"): a file is fetched at most once per worker, checked against the sha256 (and
// size, when known) it was promised under, and kept as downloads/<sha256>/blob. A file
// whose bytes do not match is refused with DataLoss naming both digests, and nothing of it
// stays in the cache. Thread-safe as CacheStore is.
#ifndef FARM_WORKER_ENV_DOWNLOADS_H_
#define FARM_WORKER_ENV_DOWNLOADS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "common/upstream/fetcher.h"
#include "worker/env/cache_store.h"

namespace farm::env {

struct DownloadRequest {
  std::string url;
  std::string sha256;  // 64 lowercase hex digits: required
  int64_t size = -1;   // expected bytes; -1 when the upstream did not say
  std::string what;    // for messages: "torch-2.8.0+cu128-...whl"
};

// Bytes received so far and the expected total (-1: unknown).
using ProgressFn = std::function<void(int64_t done, int64_t total)>;

// Returns the path of the verified file, downloading it unless the cache has it. The
// caller holds a pin on (kDownloads, request.sha256) while it uses the path.
Result<std::string> FetchVerified(CacheStore& cache, upstream::Fetcher& fetcher,
                                  const DownloadRequest& request, const ProgressFn& progress);

// Copies a local file into the store (preloading an offline cache); returns its sha256.
Result<std::string> AddLocalFile(CacheStore& cache, const std::string& path);

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_DOWNLOADS_H_
