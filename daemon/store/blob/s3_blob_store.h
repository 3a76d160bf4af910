// S3BlobStore: the blob store on an S3-compatible object store, one object per blob under
// "<prefix>/ab/<sha256>".
//
// Writes: BlobWriter verifies size and digest and runs the caller's check on the local
// temporary file first (blob_store.h); Place then uploads it (one PUT below
// multipart_threshold, else a multipart upload in part_bytes parts, aborted on failure)
// unless an object of that name and size is already there. Callers record a blob only
// after Commit returned, so a crash between the upload and the record leaves an object
// nobody names yet; the next upload of the same content finds it and uploads nothing.
//
// Reads: OpenRead streams from the cached copy when there is one, else from S3 in ranged
// GETs of read_chunk_bytes (memory per reader is one chunk), so a download through farmd
// neither waits for the whole object nor fills the disk. LocalPath, for callers that need
// a file (wheel inspection, publishing, the index without redirects), downloads into a
// cache under work_dir, verifies the sha256, and keeps at most cache_bytes there, evicting
// the least recently used copies. The cache is also filled by Place with the blob just
// written, which the index and the publisher read next.
//
// Presence: the store remembers the blobs it wrote or saw, and learns the bucket's at open
// from its listing (ListObjectsV2), so Contains asks S3 (HEAD) only about blobs it has not
// seen. At open it also aborts the multipart uploads under the prefix begun more than
// abandoned_upload_s ago (a crash during an upload leaves them).
//
// Thread-safety: all methods may be called concurrently.
#ifndef FARM_DAEMON_STORE_BLOB_S3_BLOB_STORE_H_
#define FARM_DAEMON_STORE_BLOB_S3_BLOB_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/httpc/http_client.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/blob/s3_client.h"

namespace farm::s3 {

struct S3BlobStoreOptions {
  std::string prefix;    // key prefix without leading or trailing '/', may be ""
  std::string work_dir;  // staging (tmp/) and cache (cache/) directories
  int64_t cache_bytes = int64_t{2} << 30;
  int64_t multipart_threshold = int64_t{64} << 20;
  int64_t part_bytes = int64_t{16} << 20;  // S3 wants >= 5 MiB for every part but the last
  int64_t read_chunk_bytes = int64_t{8} << 20;
  int64_t presigned_max_ttl_s = 7 * 24 * 3600;  // SigV4's limit
  // At open, multipart uploads under the prefix begun longer ago than this are aborted.
  int64_t abandoned_upload_s = 24 * 3600;
};

// `http`, owned by the store, carries the requests; `clock` and `sleeper` must outlive it.
Result<std::unique_ptr<store::BlobStore>> OpenS3BlobStore(
    S3Config config, S3BlobStoreOptions options, std::unique_ptr<httpc::HttpClient> http,
    const Clock& clock, httpc::Sleeper& sleeper, RetryLimits limits = {});

}  // namespace farm::s3

#endif  // FARM_DAEMON_STORE_BLOB_S3_BLOB_STORE_H_
