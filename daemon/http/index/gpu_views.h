// GPU views of the package index: for one variant (CUDA and torch, "cu130-torch2.11") and
// one GPU compute capability ("sm90" = cc 9.0), the wheels whose code images load on that
// GPU, one file per (project, version, python/abi/platform tags), so pip cannot pick a
// wheel without kernels for the user's chip. Also the directory of every view that has a
// wheel, for people and for the install script. Pure functions; thread-safe.
//
// The rule that picks one wheel for a GPU among several of the same version and tags
// (docs/index.md "GPU views"):
//   1. a wheel with SASS for exactly the GPU's capability (sm_121a or sm_121 on cc 12.1)
//      beats one whose SASS for an older capability of the family loads there (sm_120 on
//      12.1), which beats one that only JIT-compiles PTX;
//   2. then the wheel with fewer code images (built for this GPU rather than for many);
//   3. then the newest; then the file name, so the choice is stable.
#ifndef FARM_DAEMON_HTTP_INDEX_GPU_VIEWS_H_
#define FARM_DAEMON_HTTP_INDEX_GPU_VIEWS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/arch.h"
#include "daemon/http/index/index_catalog.h"

namespace farm::http {

// "sm90" for cc 9.0, "sm121" for 12.1: the path segment of a GPU view.
std::string GpuSegment(const arch::Version& cc);
// The capability of a GPU segment; nullopt unless it is "sm" and a known capability.
std::optional<arch::Version> ParseGpuSegment(std::string_view segment);

// How well `file` serves a GPU of capability `cc`: 3 exact SASS, 2 SASS of an older
// capability that loads, 1 PTX only, 0 does not load (or has no device code).
int GpuFit(const IndexFile& file, const arch::Version& cc);

// The files of `files` (one variant's) that load on `cc`, one per (project, version, tags)
// by the rule above, newest version first within a project.
std::vector<IndexFile> FilesForGpu(const std::vector<IndexFile>& files, const arch::Version& cc);

// One GPU view that lists at least one wheel.
struct GpuView {
  std::string variant;  // "cu130-torch2.11"
  std::string cuda;     // "13.0"
  std::string torch;    // "2.11" or ""
  arch::Version cc;
  std::vector<std::string> projects;  // normalized names, sorted
  std::string path() const { return "/" + variant + "/" + GpuSegment(cc) + "/simple/"; }
};

// Every view with a wheel: for each variant, each known capability some wheel loads on
// (wheels without device code list under every capability), sorted by variant then cc.
std::vector<GpuView> ListGpuViews(const std::vector<IndexFile>& files);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_GPU_VIEWS_H_
