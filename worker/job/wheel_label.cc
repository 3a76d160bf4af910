#include "worker/job/wheel_label.h"

#include <filesystem>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/identity.h"
#include "common/wheel/metadata/requires_dist.h"
#include "common/wheel/relabel.h"
#include "common/wheel/wheel_name.h"

namespace farm::agent {

namespace {

Status UpdateHeader(const std::string& path, farm::v1::ArtifactHeader* header) {
  header->set_filename(std::filesystem::path(path).filename().string());
  int64_t size = 0;
  FARM_ASSIGN_OR_RETURN(std::string sha, Sha256FileHex(path, &size));
  header->set_sha256(sha);
  header->set_size(size);
  return Status::Ok();
}

// The torch requirement goes in after the label, into `out_dir` (where a relabelled
// wheel already is, replaced in place).
Status PinTorch(const std::string& requirement, const std::string& out_dir, LabelledWheel* out) {
  if (requirement.empty()) return Status::Ok();
  FARM_RETURN_IF_ERROR(fs::MakeDirs(out_dir));
  FARM_ASSIGN_OR_RETURN(wheel::PinResult pinned,
                        wheel::PinRequirement(out->path, requirement, out_dir));
  out->requirement = pinned.requirement;
  if (!pinned.rewritten) return Status::Ok();
  out->path = pinned.path;
  out->rewritten = true;
  return UpdateHeader(pinned.path, &out->header);
}

}  // namespace

Result<LabelledWheel> LabelWheelForJob(const farm::v1::JobAssignment& job, const std::string& path,
                                       const farm::v1::ArtifactHeader& header,
                                       const std::string& out_dir,
                                       const std::string& torch_requirement) {
  FARM_ASSIGN_OR_RETURN(auto images, wheel::ManifestImages(header.manifest()));
  FARM_ASSIGN_OR_RETURN(std::string label,
                        wheel::RecipeWheelLabel(job.recipe(), job.cell(), images));
  FARM_ASSIGN_OR_RETURN(wheel::WheelFilename name, wheel::ParseWheelFilename(path));
  LabelledWheel out{path, header, false, ""};
  if (!label.empty() || !name.local_label.empty()) {
    FARM_RETURN_IF_ERROR(fs::MakeDirs(out_dir));
    FARM_ASSIGN_OR_RETURN(wheel::RelabelResult r, wheel::RelabelWheel(path, label, out_dir));
    out = LabelledWheel{r.path, header, r.rewritten, ""};
    if (r.rewritten) FARM_RETURN_IF_ERROR(UpdateHeader(r.path, &out.header));
  }
  FARM_RETURN_IF_ERROR(PinTorch(torch_requirement, out_dir, &out));
  return out;
}

}  // namespace farm::agent
