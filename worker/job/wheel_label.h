// Labels a checked wheel with its identity before validation and upload: the recipe's
// local version template (publish.local_version, default {variant}) rendered for the
// job's cell and the images the wheel really holds (farm::wheel::WheelLabel), written into
// the wheel with farm::wheel::RelabelWheel, and the torch it needs (torch_pin.h) written
// into its METADATA with farm::wheel::PinRequirement. The labelled bytes are what validation
// installs, what farmd stores and indexes and what is published, so every user gets the
// exact file that was proven. Stateless; thread-safe.
#ifndef FARM_WORKER_JOB_WHEEL_LABEL_H_
#define FARM_WORKER_JOB_WHEEL_LABEL_H_

#include <string>

#include "common/status.h"
#include "farm/v1/worker.pb.h"

namespace farm::agent {

struct LabelledWheel {
  std::string path;                 // the wheel to validate and upload
  farm::v1::ArtifactHeader header;  // its name, size and sha256; the manifest kept
  bool rewritten = false;           // false: the wheel already carried the label
  std::string requirement;          // the torch requirement written, "" for none
};

// Labels the wheel at `path` whose checks filled `header` and, when `torch_requirement` is
// not empty, makes its METADATA require that torch. A rewritten wheel is written into
// `out_dir` (created when missing). Fails with InvalidArgument when the template does not
// render for this cell (farmd refuses such recipes at submit) or the wheel cannot be
// rewritten.
Result<LabelledWheel> LabelWheelForJob(const farm::v1::JobAssignment& job, const std::string& path,
                                       const farm::v1::ArtifactHeader& header,
                                       const std::string& out_dir,
                                       const std::string& torch_requirement = "");

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_WHEEL_LABEL_H_
