// CheckJobWheel: the checks a wheel built for one matrix cell must pass before the farm
// keeps it. The worker runs them before uploading and farmd runs them again on arrival,
// so a worker with a broken checker (or a hostile one) cannot store a wheel that lacks
// its kernels. It is InspectWheel (structure, RECORD, tags, hostile archives, arch
// manifest, host ELF CPU and glibc) with the expectations taken from the cell: the python
// tag, the platform (CellPlatform: its CPU architecture, and its glibc for a manylinux
// platform), every target of the cell's TORCH_CUDA_ARCH_LIST, and the cell's CUDA, which
// the toolkit that compiled each module must be (CudaMismatches). Stateless; safe from
// any thread.
#ifndef FARM_COMMON_WHEEL_JOB_CHECK_H_
#define FARM_COMMON_WHEEL_JOB_CHECK_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "common/wheel/inspect.h"
#include "farm/v1/types.pb.h"

namespace farm::wheel {

struct JobWheelCheck {
  farm::v1::ArchManifest manifest;    // images, runs-on and missing targets
  std::vector<Problem> problems;      // empty when the wheel may be kept
  bool requires_device_code = false;  // the cell named arch targets

  bool ok() const { return problems.empty(); }
  // The first few problems on one line, "arch-missing: pkg/_C.so: ... lacks sm_121a; ...".
  std::string Summary() const;
};

// "3.12" -> "cp312"; "" for an empty or malformed version.
std::string CpythonTag(const std::string& python_version);

// The platform a cell is built for: its platform axis value, or linux_x86_64 for a cell
// without one (recipes name no platform when x86_64 was the only one). Placement gives the
// cell only to workers of that CPU, and its wheels are checked against it.
inline constexpr char kDefaultPlatform[] = "linux_x86_64";
std::string CellPlatform(const farm::v1::MatrixCell& cell);

// The options a job's wheel is checked with under `recipe`: images it did not ask for
// refused when it says so (unrequested_archs: fail), and its size_budget.
InspectOptions JobCheckOptions(const farm::v1::Recipe& recipe);

// Checks the wheel at `path` for `cell`. Images the cell's arch list does not ask for are
// listed in the manifest (`unrequested`) and become problems only with
// base.refuse_unrequested. A wheel over base.size_budget_bytes has the problem
// "size-budget", naming the largest parts. `filename` is the wheel's name when the file sits
// under another one ("" = last path component). On success returns the manifest and the
// problems (a wheel that breaks a rule is still a success of the check, with problems).
// Fails when the file cannot be read as a zip archive or the cell's arch list does not
// parse.
Result<JobWheelCheck> CheckJobWheel(const std::string& path, const std::string& filename,
                                    const farm::v1::MatrixCell& cell,
                                    const InspectOptions& base = {});

// One "cuda-mismatch" problem per module whose cubins' toolkit info names a CUDA release
// other than `cuda` (the cell's "12.8"), naming both versions: such a wheel would be
// labelled and installed for a CUDA it was not built with. None when `cuda` is empty (a
// cell without CUDA) or a module's cubins name no release.
std::vector<Problem> CudaMismatches(const ArchManifest& manifest, const std::string& cuda);

// The proto form of a manifest, as stored with the artifact and shown by farmctl.
farm::v1::ArchManifest ManifestToProto(const ArchManifest& manifest);

// The warning shown in the job log, by farmctl and on the dashboard when a wheel holds
// images its cell's arch list did not ask for, e.g. "this package ignored
// TORCH_CUDA_ARCH_LIST: asked 9.0, built sm_75, sm_90, sm_121 (not asked for: sm_75,
// sm_121)". Image lists are ascending by compute capability; more than eight names are
// shortened to the first three, "...", and the last three. "" when nothing was unrequested.
std::string ArchListIgnoredMessage(const std::string& arch_list,
                                   const farm::v1::ArchManifest& manifest);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_JOB_CHECK_H_
