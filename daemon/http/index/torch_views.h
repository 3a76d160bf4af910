// Torch views of the package index: /<cu>/sm<cc>/torch<version>/simple/ lists, for a user
// whose torch is <version> built for CUDA <cu> ("cu128" = 12.8) on a GPU of capability
// <cc>, only the wheels that install next to that torch without changing it:
//   - the wheel's torch requirement (its METADATA's Requires-Dist, torch_requirement.h)
//     admits <version>, or the wheel requires no torch;
//   - the wheel was built for the same CUDA major, with a toolkit no newer than <cu> (CUDA
//     minor version compatibility; a stable-ABI wheel is built once per CUDA major with its
//     oldest toolkit); of wheels differing only in that CUDA, the newest CUDA is kept;
//   - its code loads on <cc>, one per (project, version, tags) by the GPU views' rule
//     (gpu_views.h), no pre-releases.
// The directory of views lists the torch views of the torch releases the farm knows wheels
// for (the cells' torch and the versions the requirements name); farmd answers any other
// release too. Thread-safe over an IndexCatalog.
#ifndef FARM_DAEMON_HTTP_INDEX_TORCH_VIEWS_H_
#define FARM_DAEMON_HTTP_INDEX_TORCH_VIEWS_H_

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/arch.h"
#include "common/status.h"
#include "common/upstream/release_version.h"
#include "daemon/http/index/index_catalog.h"

namespace farm::http {

// "cu128" for CUDA "12.8"; "" for an empty or malformed CUDA.
std::string CudaSegment(std::string_view cuda);
// 12.8 for "cu128", 13.0 for "cu130"; nullopt unless "cu" and 2 to 4 digits.
std::optional<arch::Version> ParseCudaSegment(std::string_view segment);

// The release of a torch segment, "torch2.8.0" -> 2.8.0. nullopt unless the text after
// "torch" is a PEP 440 public version (no local label) of at most 32 characters written as
// ReleaseVersion::Public() writes it, so each release has one URL.
std::optional<upstream::ReleaseVersion> ParseTorchSegment(std::string_view segment);
std::string TorchSegment(const upstream::ReleaseVersion& torch);

// Whether a wheel built for CUDA `file_cuda` ("12.8") runs with a torch built for `cuda`.
bool CudaServes(std::string_view file_cuda, const arch::Version& cuda);

// The files of `files` (every variant's) that install next to torch `torch` built for
// `cuda`, before the GPU rule (FilesForGpu) is applied. A file whose METADATA cannot be
// read is left out: its requirement is unknown.
std::vector<IndexFile> FilesForTorch(IndexCatalog& catalog, const std::vector<IndexFile>& files,
                                     const arch::Version& cuda,
                                     const upstream::ReleaseVersion& torch);

// Why the torch view has no wheel of `project` on `cc`: what the project's wheels for
// that GPU require ("torch==2.8.* (cu128)", "no torch (cu130)"), so the user knows which
// torch the farm has wheels for.
std::string NoTorchWheelMessage(IndexCatalog& catalog, const std::vector<IndexFile>& files,
                                const std::string& project, const arch::Version& cuda,
                                const upstream::ReleaseVersion& torch, const arch::Version& cc);

struct TorchView {
  std::string cuda;   // "12.8"
  std::string torch;  // "2.8", as the farm names it
  arch::Version cc;
  std::vector<std::string> projects;  // normalized names, sorted
  std::string path() const;           // "/cu128/sm90/torch2.8/simple/"
};

// Every torch view with a wheel, for the torch releases the farm knows wheels for, sorted
// by CUDA, torch, then capability.
std::vector<TorchView> ListTorchViews(IndexCatalog& catalog, const std::vector<IndexFile>& files);

// One entry per view: cuda, gpu, compute_capability, gpus, torch, index_url, projects, pip.
boost::json::array TorchDirectoryJson(const std::vector<TorchView>& views, const std::string& base);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_TORCH_VIEWS_H_
