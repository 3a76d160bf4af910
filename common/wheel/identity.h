// Wheel identity: everything that changes what a wheel runs on is in its file name. The
// python, ABI and platform tags already are; the CUDA version, the torch version and the
// set of GPU code images (SASS and PTX targets actually in the wheel) go into the PEP 440
// local version label, so two wheels of one recipe and version never share a file name
// unless they are built for the same cell and the same GPUs.
//
//   attn_example-0.1.0+cu130.sm90.sm120a.sm121a-cp311-cp311-linux_x86_64.whl
//   sageattention-2.2.0+cu128torch2.8.sm90a-cp312-cp312-linux_x86_64.whl
//
// The worker labels a wheel right after checking it (so validation, the index, downloads
// and publishing all see the same bytes); farmd renders the label from its own manifest on
// arrival and refuses a wheel whose name disagrees, and at submit time predicts the
// labels of every cell from the arch lists to refuse a matrix that would give two
// different wheels one name. Pure functions; thread-safe.
#ifndef FARM_COMMON_WHEEL_IDENTITY_H_
#define FARM_COMMON_WHEEL_IDENTITY_H_

#include <map>
#include <string>
#include <vector>

#include "common/arch.h"
#include "common/status.h"
#include "farm/v1/types.pb.h"

namespace farm::wheel {

// The label template used when a recipe sets no publish.local_version: unique across any
// matrix, since python and platform are in the wheel's tags.
inline constexpr char kDefaultLabelTemplate[] = "{variant}";

// "sm90.sm120a.ptx120": the distinct images, ascending by compute capability, SASS ("sm")
// before PTX ("ptx") of the same capability, the a/f suffix kept. "" without images.
std::string ArchLabel(const std::vector<arch::Image>& images);

// The distinct images a stored manifest names. InvalidArgument for a malformed name.
Result<std::vector<arch::Image>> ManifestImages(const farm::v1::ArchManifest& manifest);

// The images the cell's TORCH_CUDA_ARCH_LIST asks for (none for an empty list).
// InvalidArgument when the list does not parse.
Result<std::vector<arch::Image>> ExpectedImages(const farm::v1::MatrixCell& cell);

// "cu130torch2.11.sm90.sm120a": "cu" and the CUDA version without dots, "torch" and the
// torch version, then the arch label; each part only when the cell (or the images) has it.
// With `family` ("sm80to89", SmFamily::Label) the family stands where the arch label would.
std::string VariantLabel(const farm::v1::MatrixCell& cell, const std::vector<arch::Image>& images,
                         const std::string& family = "");

// The placeholders a label template may use for this cell and image set: python,
// python_nodot, torch, torch_nodot, cuda, cuda_nodot, cuda_major, platform (as
// CellLabelVars), arch (ArchLabel), variant (VariantLabel), family (the SM family the
// images serve, "" when none) and commit (the first 8 hex digits of the source's git
// commit, "" for other sources: upstream versions such as SageAttention's 2.2.0 stay the
// same across fixes, the commit tells them apart).
std::map<std::string, std::string> LabelVars(const farm::v1::MatrixCell& cell,
                                             const std::vector<arch::Image>& images,
                                             const std::string& commit = "",
                                             const std::string& family = "");

// The local version label of a wheel of `cell` holding `images`: `label_template` (empty:
// kDefaultLabelTemplate) rendered with LabelVars, in PEP 440 normal form, with the empty
// segments an absent part leaves ("cu{cuda_nodot}.{arch}" without device code) dropped.
// InvalidArgument for an unknown placeholder or a result that is not a local label.
Result<std::string> WheelLabel(const std::string& label_template, const farm::v1::MatrixCell& cell,
                               const std::vector<arch::Image>& images,
                               const std::string& commit = "", const std::string& family = "");

// Whether the cells of torch `torch` ("2.12") of `recipe` build against a torch release
// candidate (environment.torch_candidates, which farmd fills at submit:
// recipe::MarkTorchCandidates).
bool IsTorchCandidate(const farm::v1::Recipe& recipe, const std::string& torch);

// WheelLabel with the template and git commit of `recipe`. A stable-ABI recipe's wheel
// (torch_abi.stable) serves every torch from its floor with any toolkit of the cell's CUDA
// major, and says so: torch is "<floor>andhigher", CUDA its major ("cu13torch2.9andhigher").
// A recipe with matrix.families names the family a wheel's images serve as a whole
// (FamilyServed: "cu130.sm80to89"); a wheel whose images do not is named by its images.
// A release candidate's torch is "<minor>rc" ("cu130torch2.12rc.sm90"), and a template
// that names no torch gets ".torch<minor>rc" appended: an RC wheel never takes the file
// name of the final release's wheel.
Result<std::string> RecipeWheelLabel(const farm::v1::Recipe& recipe,
                                     const farm::v1::MatrixCell& cell,
                                     const std::vector<arch::Image>& images);

// The local label of a wheel file name or version ("0.1.0+cu130.sm90" -> "cu130.sm90"),
// "" when it has none.
std::string LocalLabelOf(const std::string& version);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_IDENTITY_H_
