// The package index's view of the store: which wheels are listed in which variant, and
// their core metadata (METADATA read out of the wheel with libarchive). The listing is
// rebuilt only when the store's generation moved; metadata is cached per sha256 because a
// blob never changes. Thread-safe: one mutex guards both caches.
#ifndef FARM_DAEMON_HTTP_INDEX_INDEX_CATALOG_H_
#define FARM_DAEMON_HTTP_INDEX_INDEX_CATALOG_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/arch.h"
#include "common/status.h"
#include "daemon/http/index/torch_requirement.h"
#include "daemon/http/server/dashboard_options.h"

namespace farm::http {

// The distribution name and version of a wheel file name ("attn_example-1.0+cu130-cp311-
// cp311-linux_x86_64.whl" -> "attn_example", "1.0+cu130"); InvalidArgument when it is not
// a wheel name.
Result<std::pair<std::string, std::string>> WheelNameVersion(std::string_view filename);

// Whether the index lists a wheel with this serialized farm.v1.ValidationReport: passed,
// or waiting for hardware when the index includes those.
bool IndexListable(const std::string& validation_blob, bool include_pending);

// The Requires-Python header of a METADATA text, "" when absent.
std::string RequiresPython(std::string_view metadata);

// Reads "<name>.dist-info/METADATA" out of the wheel at `path` (at most 4 MiB).
// NotFound when the wheel has none; DataLoss when it is not a readable zip.
Result<std::string> ReadWheelMetadata(const std::string& path);

struct IndexFile {
  std::string project;  // normalized
  std::string version;
  std::string filename;
  std::string sha256;
  int64_t size = 0;
  int64_t created_ms = 0;
  std::string variant;  // "cu130-torch2.11" (VariantOf the cell)
  int64_t job_id = 0;
  std::string cuda;  // the cell's
  std::string torch;
  std::string tags;                    // "cp311-cp311-linux_x86_64", as in the file name
  std::vector<arch::Image> images;     // the code images farmd found in the wheel
  std::vector<arch::Version> runs_on;  // capabilities every module loads on
  // Torches this stable-ABI wheel failed its validation-only proof with, released after
  // its build (builds/new_torch.h): the release ("2.12.0") and why. Their views leave it out.
  std::vector<std::pair<std::string, std::string>> refused_torches;
  // Built against a torch release candidate (its job's mark): listed only in the views
  // under /rc/, and there only until the final release's wheel of the same project,
  // version, tags, CUDA and torch is listed (docs/index.md, "Release candidates").
  bool release_candidate = false;
};

// Which files a view lists besides the finals.
enum class Candidates {
  kLeftOut,     // the default views: no release-candidate wheel
  kUnlessFinal  // the /rc/ views: a candidate's wheel until its final release's is there
};

// Where the bytes of a listed file come from: a presigned URL of the blob store when the
// index redirects downloads, else a local file (the blob, or a remote store's cached copy).
struct FileSource {
  std::string url;
  std::string path;
};

struct CoreMetadata {
  std::string text;
  std::string sha256;
  std::string requires_python;
  TorchRequirement torch;  // what torch the wheel needs (torch_requirement.h)
};

class IndexCatalog {
 public:
  // With `redirect_ttl_s` > 0 file downloads go to presigned URLs valid that long; with
  // `max_wheel_bytes` > 0 larger wheels are not listed (--index-max-wheel-bytes).
  IndexCatalog(const DashboardDeps& deps, bool include_pending, int64_t redirect_ttl_s = 0,
               int64_t max_wheel_bytes = 0)
      : deps_(deps),
        include_pending_(include_pending),
        redirect_ttl_s_(redirect_ttl_s),
        max_wheel_bytes_(max_wheel_bytes) {}

  // The files of `variant` ("" for every variant), sorted by project then file name.
  // Only wheels of succeeded jobs whose validation passed (or waits for hardware when
  // include_pending), whose blob is present and that are within max_wheel_bytes; one file
  // per name (the newest; a final's never replaced by a candidate's). Release-candidate
  // wheels as `candidates` says.
  Result<std::vector<IndexFile>> Files(const std::string& variant,
                                       Candidates candidates = Candidates::kLeftOut);
  // The listed file with this sha256 and file name, a release candidate's too; NotFound
  // otherwise.
  Result<IndexFile> Find(const std::string& sha256, const std::string& filename);
  // Where a listed file is downloaded from.
  Result<FileSource> Source(const IndexFile& file);
  // Core metadata of a listed file, read once per sha256.
  Result<CoreMetadata> Metadata(const IndexFile& file);
  const DashboardDeps& deps() const { return deps_; }

 private:
  Status RefreshLocked();

  DashboardDeps deps_;
  bool include_pending_;
  int64_t redirect_ttl_s_;
  int64_t max_wheel_bytes_;
  std::mutex mu_;
  int64_t generation_ = -1;
  std::vector<IndexFile> files_;
  std::map<std::string, std::shared_ptr<const CoreMetadata>> metadata_;
};

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_INDEX_CATALOG_H_
