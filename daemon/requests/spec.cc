#include "daemon/requests/spec.h"

#include <cctype>

#include "common/arch.h"
#include "common/recipe/matrix.h"
#include "common/sha256.h"
#include "common/wheel/wheel_name.h"

namespace farm::requests {
namespace {

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A PEP 508 name: letters and digits, with '.', '_' and '-' inside.
bool IsProjectName(const std::string& s) {
  if (s.empty() || !Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// What a PEP 440 version may be written with; it starts with a digit.
bool IsVersionText(const std::string& s) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '.' && c != '!' && c != '+' && c != '_' && c != '-') return false;
  }
  return true;
}

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("request field " + field + ": " + why);
}

// The length and presence rules every field shares.
Status CheckShape(const std::string& field, const std::string& value, bool required) {
  if (value.size() > kMaxFieldBytes) {
    return Bad(field, "longer than " + std::to_string(kMaxFieldBytes) + " bytes");
  }
  if (required && value.empty()) return Bad(field, "required");
  return Status::Ok();
}

// The recipe check's rule for `axis`; the refusal says what the field must be, never the
// value it got (the caller may be hostile, and answers are shown).
Status CheckAxis(const std::string& field, std::string_view axis, const std::string& value,
                 const std::string& shape) {
  if (value.empty() || recipe::CheckAxisValue(axis, value).ok()) return Status::Ok();
  return Bad(field, "must be " + shape);
}

Status CheckComputeCapability(const std::string& cc) {
  auto v = arch::ParseVersion(cc);
  if (!v.ok() || v->ToString() != cc) return Bad("compute_capability", "not MAJOR.MINOR");
  if (arch::GpusOf(*v).empty()) return Bad("compute_capability", "not one the farm knows");
  return Status::Ok();
}

}  // namespace

Status CheckSpec(Spec* spec) {
  FARM_RETURN_IF_ERROR(CheckShape("package", spec->package, true));
  FARM_RETURN_IF_ERROR(CheckShape("version", spec->version, false));
  FARM_RETURN_IF_ERROR(CheckShape("python", spec->python, true));
  FARM_RETURN_IF_ERROR(CheckShape("torch", spec->torch, false));
  FARM_RETURN_IF_ERROR(CheckShape("cuda", spec->cuda, false));
  FARM_RETURN_IF_ERROR(CheckShape("compute_capability", spec->compute_capability, true));
  FARM_RETURN_IF_ERROR(CheckShape("platform", spec->platform, true));
  if (!IsProjectName(spec->package)) return Bad("package", "not a project name");
  spec->package = wheel::NormalizeProjectName(spec->package);
  if (!spec->version.empty() && !IsVersionText(spec->version)) {
    return Bad("version", "not a version");
  }
  spec->torch = spec->torch.substr(0, spec->torch.find('+'));
  FARM_RETURN_IF_ERROR(CheckAxis("python", "python", spec->python, "MAJOR.MINOR"));
  FARM_RETURN_IF_ERROR(CheckAxis("torch", "torch", spec->torch, "MAJOR.MINOR[.PATCH]"));
  FARM_RETURN_IF_ERROR(CheckAxis("cuda", "cuda", spec->cuda, "MAJOR.MINOR"));
  FARM_RETURN_IF_ERROR(CheckAxis("platform", "platform", spec->platform,
                                 "a wheel platform tag (lower-case letters, digits, _)"));
  if (!spec->torch.empty() && spec->cuda.empty()) {
    return Bad("cuda", "required with a torch (the farm's wheels are built for CUDA)");
  }
  return CheckComputeCapability(spec->compute_capability);
}

std::string SpecKey(const Spec& spec) {
  Sha256 h;
  for (const std::string* v : {&spec.package, &spec.version, &spec.python, &spec.torch, &spec.cuda,
                               &spec.compute_capability, &spec.platform}) {
    h.Update(std::to_string(v->size()));
    h.Update(":");
    h.Update(*v);
  }
  return h.HexDigest();
}

}  // namespace farm::requests
