#include "daemon/http/index/torch_requirement.h"

#include "common/strings.h"
#include "common/wheel/metadata/dependency.h"
#include "common/wheel/wheel_name.h"

namespace farm::http {
namespace {

constexpr int kMaxRows = 32;

// The versions the clauses of `spec` name, for the directory's list of torch releases.
void NamedVersions(std::string_view spec, std::vector<upstream::ReleaseVersion>* out) {
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string clause = TrimSpace(spec.substr(pos, comma == spec.npos ? spec.npos : comma - pos));
    if (!clause.starts_with("!=") && !clause.starts_with("<")) {
      size_t start = clause.find_first_of("0123456789");
      std::string version = start == std::string::npos ? "" : clause.substr(start);
      if (version.ends_with(".*")) version.resize(version.size() - 2);
      if (auto v = upstream::ParseReleaseVersion(version)) out->push_back(*v);
    }
    if (comma == spec.npos) break;
    pos = comma + 1;
  }
}

// Reads one Requires-Dist value into `req`; false when it is not a row for torch.
bool AddRow(std::string_view value, TorchRequirement* req) {
  size_t semi = value.find(';');
  if (semi != value.npos && wheel::MarkerNamesExtra(value.substr(semi + 1))) return false;
  std::string requirement = TrimSpace(value.substr(0, semi));
  if (wheel::NormalizeProjectName(wheel::DependencyName(requirement)) != "torch") return false;
  req->present = true;
  Result<wheel::DependencySpec> dep = wheel::ParseDependency(requirement);
  if (!dep.ok() || dep->specifier.find("===") != std::string::npos) {
    req->valid = false;
    req->text += (req->text.empty() ? "" : ",") + requirement;
    return true;
  }
  const std::string& spec = dep->specifier;
  auto parsed = upstream::VersionSpec::Parse(spec);
  if (!parsed.ok()) {
    req->valid = false;
  } else {
    req->specs.push_back(std::move(*parsed));
    NamedVersions(spec, &req->named);
  }
  if (req->text.empty()) {
    req->text = "torch" + spec;
  } else if (!spec.empty()) {
    req->text += "," + spec;
  }
  return true;
}

}  // namespace

TorchRequirement TorchRequirementOf(std::string_view metadata) {
  TorchRequirement req;
  int rows = 0;
  size_t pos = 0;
  while (pos < metadata.size()) {
    size_t eol = metadata.find('\n', pos);
    std::string_view line = metadata.substr(pos, eol == metadata.npos ? metadata.npos : eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the headers end; the description follows
    constexpr std::string_view kKey = "requires-dist:";
    if (line.size() > kKey.size()) {
      if (AsciiLower(line.substr(0, kKey.size())) == kKey &&
          AddRow(line.substr(kKey.size()), &req) && ++rows >= kMaxRows) {
        req.valid = false;  // more torch rows than any real wheel has
        break;
      }
    }
    if (eol == metadata.npos) break;
    pos = eol + 1;
  }
  if (req.present && !req.valid) req.specs.clear();
  return req;
}

bool AdmitsTorch(const TorchRequirement& requirement, const upstream::ReleaseVersion& torch) {
  if (!requirement.present) return true;
  if (!requirement.valid) return false;
  for (const auto& spec : requirement.specs) {
    if (!spec.Matches(torch)) return false;
  }
  return true;
}

}  // namespace farm::http
