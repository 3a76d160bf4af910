#include "worker/agent/wheel_label.h"

#include <filesystem>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/identity.h"
#include "common/wheel/relabel.h"
#include "common/wheel/wheel_name.h"

namespace farm::agent {

Result<LabelledWheel> LabelWheelForJob(const farm::v1::JobAssignment& job, const std::string& path,
                                       const farm::v1::ArtifactHeader& header,
                                       const std::string& out_dir) {
  FARM_ASSIGN_OR_RETURN(auto images, wheel::ManifestImages(header.manifest()));
  FARM_ASSIGN_OR_RETURN(std::string label,
                        wheel::RecipeWheelLabel(job.recipe(), job.cell(), images));
  FARM_ASSIGN_OR_RETURN(wheel::WheelFilename name, wheel::ParseWheelFilename(path));
  if (label.empty() && name.local_label.empty()) return LabelledWheel{path, header, false};
  FARM_RETURN_IF_ERROR(fs::MakeDirs(out_dir));
  FARM_ASSIGN_OR_RETURN(wheel::RelabelResult r, wheel::RelabelWheel(path, label, out_dir));
  LabelledWheel out{r.path, header, r.rewritten};
  if (!r.rewritten) return out;
  out.header.set_filename(r.filename);
  int64_t size = 0;
  FARM_ASSIGN_OR_RETURN(std::string sha, Sha256FileHex(r.path, &size));
  out.header.set_sha256(sha);
  out.header.set_size(size);
  return out;
}

}  // namespace farm::agent
